//! ns per pick for every scheduler at 2, 4, 8 and 16 subflows. All subflows established and
//! healthy, so every pick scans the whole slice (`scheduler_pick`). `scheduler_pick_degraded`
//! measures the slow path of lowest-rtt and last-received: the first subflow potentially failed
//! and every other one flagged high-RTO with a full window, so neither lean scan answers and the
//! whole rule runs. `scheduler_pick_custom` is lowest-rtt run as an application's scheduler
//! (behind `AnyScheduler::Custom`: one dynamic call and the check of its answer).
//!
//! Run: `cargo bench -p mp-benches --bench scheduler`

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use scheduler::{AnyScheduler, Flags, Iface, Segment, SubflowInfo, NAMES};

fn subflows(n: usize) -> Vec<SubflowInfo> {
    (0..n)
        .map(|i| SubflowInfo {
            id: i as u32,
            flags: if i % 4 == 3 { Flags::ESTABLISHED | Flags::BACKUP } else { Flags::ESTABLISHED },
            srtt_us: 15_000 + ((i * 7_919) % 40) as u32 * 1_000,
            rttvar_us: 2_000,
            cwnd: 14_600,
            cwnd_room: if i == 0 { 0 } else { 14_600 },
            last_original_rx_us: ((i * 104_729) % 1_000) as u64,
            iface: if i % 2 == 0 { Iface::Wifi } else { Iface::Cellular },
            ..Default::default()
        })
        .collect()
}

fn picks(c: &mut Criterion) {
    let seg =
        Segment { len: 1200, queued_bytes: 30_000, send_window: 1 << 20, now_us: 1_000_000, ..Default::default() };
    let mut g = c.benchmark_group("scheduler_pick");
    for name in NAMES {
        for n in [2usize, 4, 8, 16] {
            let s = subflows(n);
            let mut sched = AnyScheduler::from_name(name).expect("known name");
            g.bench_with_input(BenchmarkId::new(name, n), &s, |b, s| b.iter(|| sched.pick(black_box(s), &seg)));
        }
    }
    g.finish();

    let mut g = c.benchmark_group("scheduler_pick_degraded");
    for name in ["lowest-rtt", "last-received"] {
        for n in [2usize, 16] {
            let mut s = subflows(n);
            for (i, sf) in s.iter_mut().enumerate() {
                if i == 0 {
                    sf.flags.set(Flags::POTENTIALLY_FAILED, true);
                } else {
                    sf.flags.set(Flags::HIGH_RTO, true);
                    sf.cwnd_room = 0;
                }
            }
            let mut sched = AnyScheduler::from_name(name).expect("known name");
            g.bench_with_input(BenchmarkId::new(name, n), &s, |b, s| b.iter(|| sched.pick(black_box(s), &seg)));
        }
    }
    g.finish();

    // The same rule as lowest-rtt, but as an application's scheduler: the price of the one
    // dynamic call behind `AnyScheduler::Custom` and of checking its answer.
    let mut g = c.benchmark_group("scheduler_pick_custom");
    for n in [2usize, 4, 8, 16] {
        let s = subflows(n);
        let mut sched = AnyScheduler::Custom(Box::new(scheduler::LowestRtt));
        g.bench_with_input(BenchmarkId::new("lowest-rtt-as-custom", n), &s, |b, s| {
            b.iter(|| sched.pick(black_box(s), &seg))
        });
    }
    g.finish();
}

criterion_group!(benches, picks);
criterion_main!(benches);
