//! The global allocator of the tests that watch allocations (`no_alloc`, `recv_ring`): it
//! forwards every call to the system's unchanged and reports the size each one asks for.

/// Installs, as this test binary's global allocator, one that calls `$note(size)` on every
/// allocation and reallocation (the new size), then forwards to the system's.
macro_rules! noting_allocator {
    ($note:path) => {
        struct Noting;

        // SAFETY: forwards every call to the system allocator unchanged; only reports sizes.
        unsafe impl std::alloc::GlobalAlloc for Noting {
            unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
                $note(l.size());
                unsafe { std::alloc::System.alloc(l) }
            }
            unsafe fn alloc_zeroed(&self, l: std::alloc::Layout) -> *mut u8 {
                $note(l.size());
                unsafe { std::alloc::System.alloc_zeroed(l) }
            }
            unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, n: usize) -> *mut u8 {
                $note(n);
                unsafe { std::alloc::System.realloc(p, l, n) }
            }
            unsafe fn dealloc(&self, p: *mut u8, l: std::alloc::Layout) {
                unsafe { std::alloc::System.dealloc(p, l) }
            }
        }

        #[global_allocator]
        static GLOBAL: Noting = Noting;
    };
}
