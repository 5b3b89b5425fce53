//! Every simulated datagram, hashed: one line per scenario, setup and seed, then one hash of
//! them all. A change that must not alter the protocol's behaviour (a restructuring, a driver
//! that sleeps) keeps every line identical; run it before and after and diff the two.
//!
//! Run: `cargo run --release -p mpsim --example wire_hash`

use mpsim::scenarios::{run_in, Scenario, Setup};
use std::hash::{Hash, Hasher};

fn main() {
    let mut all = std::collections::hash_map::DefaultHasher::new();
    for s in Scenario::EVERY {
        for (name, setup) in [("none", Setup::plain()), ("LTE", Setup::lte()), ("backup", Setup::backup())] {
            for seed in 1..=3 {
                let o = run_in(s, seed, &setup);
                println!("{} {name} {seed} {:016x}", s.name(), o.wire);
                o.wire.hash(&mut all);
            }
        }
    }
    println!("all {:016x}", all.finish());
}
