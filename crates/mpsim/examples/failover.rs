//! A self-contained demo: Siri-like requests over WiFi (15 ms) and cellular (25 ms), WiFi
//! blacked out while the client is between two requests, once per server scheduler. Prints
//! every burst's response delay and the worst one.
//!
//! Run: `cargo run --release -p mpsim --example failover`

use mpcore::{Config, PathManager};
use mpsim::apps::{Siri, SiriConfig};
use mpsim::{ms, multimob_paths, PathEvent, Sim};

fn main() {
    println!("WiFi 15 ms + cellular 25 ms, 10 Mbit/s each; WiFi fails 1 s before request 2.");
    println!(
        "{:<14} {:>9} {:>9} {:>11}  delays of request 2 (ms, per burst)",
        "server", "req 1 max", "req 2 max", "cell pkts"
    );
    for sched in ["lowest-rtt", "last-received", "round-robin", "redundant", "ecf"] {
        let client = Config { path_manager: PathManager::Fullmesh, keep_alive: 0, ..Config::default() };
        let server = Config { scheduler: sched.into(), keep_alive: 0, ..Config::default() };
        let Ok(mut sim) = Sim::new(1, client, server, multimob_paths()) else {
            eprintln!("bad configuration");
            std::process::exit(1);
        };
        let mut app = Siri::new(SiriConfig { requests: 2, ..SiriConfig::default() }, 1);
        sim.run(ms(7_000), |s| app.drive(s));
        let second = app.results[0].start + ms(8 * 300) + ms(5_000);
        sim.at(second - ms(1_000), 0, PathEvent::Down);
        if !sim.run(ms(60_000), |s| app.drive(s)) {
            println!("{sched:<14} did not finish");
            continue;
        }
        let r = &app.results;
        let delays: Vec<String> = r[1]
            .ir_delays
            .iter()
            .map(|d| d.map_or("-".into(), |d| (d / 1000).to_string()))
            .chain(r[1].delay.map(|d| format!("final {}", d / 1000)))
            .collect();
        println!(
            "{sched:<14} {:>9} {:>9} {:>11}  {}",
            r[0].max_burst_delay().unwrap_or(0) / 1000,
            r[1].max_burst_delay().unwrap_or(0) / 1000,
            sim.packets_on(1, None, 0),
            delays.join(" ")
        );
    }
}
