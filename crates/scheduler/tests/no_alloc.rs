//! A counting global allocator proves that picking allocates nothing: 1,000,000 picks over every
//! scheduler, with inputs prepared beforehand, and zero allocations on the picking thread.
#![allow(unsafe_code)]

use scheduler::*;

mod common;
use common::flags;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> u64 {
    ALLOCS.with(|c| c.get())
}

#[test]
fn one_million_picks_allocate_nothing() {
    // Prepare varied inputs up front (this allocates, before counting starts).
    let mut inputs: Vec<Vec<SubflowInfo>> = Vec::new();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for n in [1usize, 2, 4, 8, 16] {
        for _ in 0..20 {
            let s: Vec<SubflowInfo> = (0..n)
                .map(|i| {
                    let r = next();
                    SubflowInfo {
                        id: i as u32,
                        flags: flags(
                            r & 1 == 0 || i == 0,
                            r & 0x30 == 0x30,
                            r & 0x40 != 0,
                            r & 0x380 == 0x380,
                            r & 0x8000 != 0 && r & 0x10000 != 0,
                            r & 0x800 != 0 && r & 0x1000 != 0,
                            r & 0x2000 != 0 && r & 0x4000 != 0,
                        ),
                        srtt_us: (r >> 10) as u32 % 200_000 + 1_000,
                        rttvar_us: (r >> 30) as u32 % 20_000,
                        cwnd: 14_600,
                        cwnd_room: if r & 0x400 != 0 { 0 } else { 14_600 },
                        last_original_rx_us: (r >> 40) % 1_000,
                        iface: [Iface::Wifi, Iface::Cellular, Iface::Wired, Iface::Other][(r >> 50) as usize % 4],
                        retrans_outstanding: ((r >> 55) % 3) as u32 & 1,
                    }
                })
                .collect();
            inputs.push(s);
        }
    }
    let mut scheds: Vec<AnyScheduler> = NAMES.iter().map(|n| AnyScheduler::from_name(n).unwrap()).collect();
    let seg =
        Segment { len: 1200, queued_bytes: 50_000, send_window: 1 << 20, now_us: 1_000_000, ..Default::default() };
    let mut sends = 0u64;

    let before = allocs();
    for k in 0..1_000_000usize {
        let s = &inputs[k % inputs.len()];
        let sched = &mut scheds[k % 6];
        if let Pick::Send(_) | Pick::SendAll(_) = std::hint::black_box(sched.pick(std::hint::black_box(s), &seg)) {
            sends += 1;
        }
    }
    let after = allocs();

    assert_eq!(after - before, 0, "picking allocated");
    // The inputs exercise real decisions, not just refusals.
    assert!(sends > 300_000 && sends < 1_000_000, "sends = {sends}");
}
