//! Paths that degrade without dying (issues 18 and 32), as one table: the Siri workload on
//! the MultiMob configuration while WiFi gets slow, flaps, turns lossy or fails and returns,
//! seeds 1 to 3 (see `mpsim::scenarios`), without a model of the phone's cellular radio and
//! with an LTE radio (promotion 0.26 s, paging 1.28 s, tail 11.6 s). Kernel MPTCP's figures,
//! where the issue measured them on the emulated testbed, beside ours.
//!
//! Run: `cargo run --release -p mpsim --example scenarios`

use mpsim::scenarios::{run_in, Scenario, Setup};

fn main() {
    println!("| scenario | radio | seed | answered | median final (ms) | worst response (ms) | cellular packets | promotions | cellular J above idle (0-30 s) | its floor (J) | last cellular packet (s) | kernel MPTCP (median / worst) |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for s in Scenario::EVERY.into_iter().chain(Scenario::WALKS).chain(Scenario::GLITCHES) {
        let kernel = match s {
            Scenario::Delay => "430 ms / 720 ms",
            _ => "",
        };
        for (radio, setup) in [("none", Setup::plain()), ("LTE", Setup::lte())] {
            for seed in 1..=3 {
                let o = run_in(s, seed, &setup);
                println!(
                    "| {} | {radio} | {seed} | {}/{} | {:.1} | {:.1} | {} | {} | {:.1} | {} | {} | {kernel} |",
                    s.name(),
                    o.answered,
                    o.requests,
                    o.median_ms,
                    o.worst_ms,
                    o.cell_packets,
                    o.promotions,
                    o.cell_joules,
                    o.cell_floor_joules.map_or("-".to_string(), |j| format!("{j:.1}")),
                    o.cell_last.map_or("-".to_string(), |t| format!("{:.1}", t as f64 / 1e6))
                );
            }
        }
    }
}
