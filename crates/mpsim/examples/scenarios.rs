//! Paths that degrade without dying (issue 18), as one table: the Siri workload on the
//! MultiMob configuration while WiFi gets slow, flaps, turns lossy or fails and returns, seeds
//! 1 to 3 (see `mpsim::scenarios`). Kernel MPTCP's figures, where the issue measured them on the
//! emulated testbed, beside ours.
//!
//! Run: `cargo run --release -p mpsim --example scenarios`

use mpsim::scenarios::{run, Scenario};

fn main() {
    println!("| scenario | seed | answered | median final (ms) | worst response (ms) | cellular packets | cellular J above idle | kernel MPTCP (median / worst) |");
    println!("|---|---|---|---|---|---|---|---|");
    for s in Scenario::ALL {
        let kernel = match s {
            Scenario::Delay => "430 ms / 720 ms",
            _ => "",
        };
        for seed in 1..=3 {
            let o = run(s, seed);
            println!(
                "| {} | {seed} | {}/{} | {:.1} | {:.1} | {} | {:.1} | {kernel} |",
                s.name(),
                o.answered,
                o.requests,
                o.median_ms,
                o.worst_ms,
                o.cell_packets,
                o.cell_joules
            );
        }
    }
}
