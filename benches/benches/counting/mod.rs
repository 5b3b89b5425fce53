//! A global allocator that counts the live heap of two sides (client 0, server 1), for the
//! benches that measure what connections hold (`idle`, `scale`). Each bench installs it
//! (`#[global_allocator] static GLOBAL: counting::Counting = counting::Counting;`) and says
//! which side is running: per call (`on`), per thread (`set_side`), or for the whole process
//! (`count_all`, a server in a process of its own).
#![allow(dead_code)] // each bench uses a part

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

pub const CLIENT: usize = 0;
pub const SERVER: usize = 1;

/// Live heap bytes allocated on each side's account, net of what it freed.
static LIVE: [AtomicI64; 2] = [AtomicI64::new(0), AtomicI64::new(0)];

/// Every thread's allocations are the server's (`count_all`).
static ALL_SERVER: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// The side running on this thread, if any.
    static SIDE: Cell<Option<usize>> = const { Cell::new(None) };
}

pub struct Counting;

/// Live allocations and their bytes by size class (the power of two at or above the size), for
/// the server process of `scale` (`hist`): which sizes an idle connection holds.
static CLASS_COUNT: [AtomicI64; 32] = [const { AtomicI64::new(0) }; 32];
static CLASS_BYTES: [AtomicI64; 32] = [const { AtomicI64::new(0) }; 32];

fn class(size: usize) -> usize {
    (size.max(1).next_power_of_two().trailing_zeros() as usize).min(31)
}

fn note_class(size: usize, sign: i64) {
    if ALL_SERVER.load(Ordering::Relaxed) {
        CLASS_COUNT[class(size)].fetch_add(sign, Ordering::Relaxed);
        CLASS_BYTES[class(size)].fetch_add(sign * size as i64, Ordering::Relaxed);
    }
}

/// The live allocations by size class: (class's upper bound, count, bytes), for the classes
/// that hold any.
pub fn classes() -> Vec<(usize, i64, i64)> {
    (0..32)
        .map(|c| (1usize << c, CLASS_COUNT[c].load(Ordering::Relaxed), CLASS_BYTES[c].load(Ordering::Relaxed)))
        .filter(|&(_, n, _)| n != 0)
        .collect()
}

fn note(delta: i64) {
    if ALL_SERVER.load(Ordering::Relaxed) {
        LIVE[SERVER].fetch_add(delta, Ordering::Relaxed);
    } else if let Ok(Some(side)) = SIDE.try_with(Cell::get) {
        LIVE[side].fetch_add(delta, Ordering::Relaxed);
    }
}

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note(l.size() as i64);
        note_class(l.size(), 1);
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        note(l.size() as i64);
        note_class(l.size(), 1);
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        note(n as i64 - l.size() as i64);
        note_class(l.size(), -1);
        note_class(n, 1);
        unsafe { System.realloc(p, l, n) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        note(-(l.size() as i64));
        note_class(l.size(), -1);
        unsafe { System.dealloc(p, l) }
    }
}

/// `side`'s live heap, bytes.
pub fn heap(side: usize) -> i64 {
    LIVE[side].load(Ordering::Relaxed)
}

/// Runs `f` counting its heap on `side`'s account.
pub fn on<T>(side: usize, f: impl FnOnce() -> T) -> T {
    SIDE.with(|s| s.set(Some(side)));
    let r = f();
    SIDE.with(|s| s.set(None));
    r
}

/// This thread's allocations are `side`'s from now on.
pub fn set_side(side: usize) {
    SIDE.with(|s| s.set(Some(side)));
}

/// Every allocation of the process is the server's from now on.
pub fn count_all() {
    ALL_SERVER.store(true, Ordering::Relaxed);
}
