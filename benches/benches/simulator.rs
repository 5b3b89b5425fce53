//! Wall time to simulate 60 s of the Siri workload over the two MultiMob paths, and 10 s of a
//! bulk download over two 10 Mbit/s paths (the goodput figures themselves come from
//! `cargo run --release -p mpsim --example sim_bench`).
//!
//! Run: `cargo bench -p mp-benches --bench simulator`

use criterion::{criterion_group, criterion_main, Criterion};
use mpcore::{Config, PathManager};
use mpsim::apps::{pattern, Bulk, Siri, SiriConfig};
use mpsim::{ms, multimob_paths, Flow, Sim};

fn siri_60s() -> usize {
    let client = Config::default().with(|c| c.multipath.path_manager = PathManager::Fullmesh);
    let server = Config::default().with(|c| c.multipath.scheduler = "last-received".into());
    let mut sim = Sim::new(7, client, server, multimob_paths()).expect("config");
    let mut app = Siri::new(SiriConfig { requests: 100, ..SiriConfig::default() }, 7);
    sim.run(ms(60_000), |s| app.drive(s));
    app.results.len()
}

fn bulk_10s() -> usize {
    let cfg = Config::default().with(|c| c.multipath.path_manager = PathManager::Fullmesh);
    let mut sim = Sim::new(42, cfg.clone(), cfg, multimob_paths()).expect("config");
    sim.logging = false;
    let mut app = Bulk::new(pattern(40 << 20, 1), true);
    sim.run(ms(10_000), |s| {
        app.step(s);
        Flow::Wake(None)
    });
    app.received.len()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("simulator");
    g.sample_size(10);
    g.bench_function("siri_60s_two_paths", |b| b.iter(siri_60s));
    g.bench_function("bulk_10s_two_10mbit_paths", |b| b.iter(bulk_10s));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
