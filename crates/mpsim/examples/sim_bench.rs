//! Prints one table: simulated bulk goodput over two 10 Mbit/s paths per congestion control,
//! and the wall time to simulate 60 s of the Siri workload and of a bulk transfer.
//!
//! Run: `cargo run --release -p mpsim --example sim_bench`

use mpcore::{Config, CongestionControl, PathManager};
use mpsim::apps::{pattern, Bulk, Siri, SiriConfig};
use mpsim::{ms, multimob_paths, Flow, PathConfig, Sim};
use std::time::Instant;

fn two_ten_mbit() -> Vec<PathConfig> {
    // Two 10 Mbit/s paths, 15 and 25 ms RTT, one-BDP queues (the seeds' emulation).
    multimob_paths()
}

/// Goodput in Mbit/s of a 60 s download, over the whole run and after the first 5 s.
fn bulk(cc: CongestionControl, seconds: u64) -> (f64, f64, f64) {
    let cfg = Config::default().with(|c| {
        c.transport.congestion = cc;
        c.multipath.path_manager = PathManager::Fullmesh;
    });
    let mut sim = Sim::new(42, cfg.clone(), cfg, two_ten_mbit()).expect("config");
    sim.logging = false;
    // More than the paths can carry in the time.
    let mut app = Bulk::new(pattern(200 << 20, 1), true);
    let wall = Instant::now();
    sim.run(ms(seconds * 1000), |s| {
        app.step(s);
        Flow::Wake(None)
    });
    let wall = wall.elapsed().as_secs_f64();
    let at = |t: u64| app.progress.iter().take_while(|p| p.0 <= t).last().map_or(0, |p| p.1);
    let total = app.received.len() as f64 * 8.0 / seconds as f64 / 1e6;
    let steady = (at(ms(seconds * 1000)) - at(ms(5_000))) as f64 * 8.0 / (seconds - 5) as f64 / 1e6;
    (total, steady, wall)
}

fn siri(seconds: u64) -> (f64, usize) {
    let cfg = Config::default().with(|c| c.multipath.path_manager = PathManager::Fullmesh);
    let server = Config::default().with(|c| c.multipath.scheduler = "last-received".into());
    let mut sim = Sim::new(7, cfg, server, two_ten_mbit()).expect("config");
    let mut app = Siri::new(SiriConfig { requests: 100, ..SiriConfig::default() }, 7);
    let wall = Instant::now();
    sim.run(ms(seconds * 1000), |s| app.drive(s));
    (wall.elapsed().as_secs_f64(), app.results.iter().filter(|r| r.delay.is_some()).count())
}

fn main() {
    println!("| scenario | simulated | goodput (all) | goodput (after 5 s) | of 20 Mbit/s | wall time |");
    println!("|---|---|---|---|---|---|");
    for (name, cc) in
        [("LIA", CongestionControl::Lia), ("Reno", CongestionControl::Reno), ("CUBIC", CongestionControl::Cubic)]
    {
        let (total, steady, wall) = bulk(cc, 60);
        println!(
            "| bulk download, 2 x 10 Mbit/s, {name} | 60 s | {total:.2} Mbit/s | {steady:.2} Mbit/s | {:.1}% | {:.3} s |",
            steady / 20.0 * 100.0,
            wall
        );
    }
    let (wall, answered) = siri(60);
    println!("| Siri workload (last-received server) | 60 s | {answered} requests answered | | | {wall:.3} s |");
}
