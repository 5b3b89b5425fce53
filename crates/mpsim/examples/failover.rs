//! A self-contained demo: Siri-like requests over WiFi (15 ms) and cellular (25 ms), WiFi
//! blacked out while the client is between two requests, once per server scheduler with a
//! cellular subflow open from the start, then break-before-make (no cellular subflow until
//! WiFi's times out) with a four-packet MP_JOIN and with FAST_JOIN. Prints every burst's
//! response delay, the worst one, and the packets that crossed the cellular path.
//!
//! Run: `cargo run --release -p mpsim --example failover`

use mpcore::{Config, PathManager};
use mpsim::apps::{Siri, SiriConfig};
use mpsim::{ms, multimob_paths, PathEvent, Sim};

fn main() {
    println!("WiFi 15 ms + cellular 25 ms, 10 Mbit/s each; WiFi fails 1 s before request 2.");
    println!(
        "{:<17} {:>9} {:>9} {:>11}  delays of request 2 (ms, per burst)",
        "server", "req 1 max", "req 2 max", "cell pkts"
    );
    let runs = ["lowest-rtt", "last-received", "round-robin", "redundant", "ecf"]
        .map(|sched| (sched.to_string(), PathManager::Fullmesh, false, sched))
        .into_iter()
        .chain([
            ("on-demand+MP_JOIN".to_string(), PathManager::OnDemand, false, "last-received"),
            ("on-demand+FAST".to_string(), PathManager::OnDemand, true, "last-received"),
        ]);
    for (label, path_manager, fast_join, sched) in runs {
        let client = Config::default().with(|c| {
            c.multipath.path_manager = path_manager;
            c.transport.keep_alive = 0;
            c.multipath.fast_join = fast_join;
        });
        let server = Config::default().with(|c| {
            c.multipath.scheduler = sched.into();
            c.transport.keep_alive = 0;
            c.multipath.fast_join = fast_join;
        });
        let Ok(mut sim) = Sim::new(1, client, server, multimob_paths()) else {
            eprintln!("bad configuration");
            std::process::exit(1);
        };
        let mut app = Siri::new(SiriConfig { requests: 2, ..SiriConfig::default() }, 1);
        sim.run(ms(7_000), |s| app.drive(s));
        let second = app.results[0].start + ms(8 * 300) + ms(5_000);
        sim.at(second - ms(1_000), 0, PathEvent::Down);
        if !sim.run(ms(60_000), |s| app.drive(s)) {
            println!("{label:<14} did not finish");
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
            "{label:<17} {:>9} {:>9} {:>11}  {}",
            r[0].max_burst_delay().unwrap_or(0) / 1000,
            r[1].max_burst_delay().unwrap_or(0) / 1000,
            sim.packets_on(1, None, 0),
            delays.join(" ")
        );
    }
}
