//! Issue 37's figures, in the simulator (virtual time: every number is a function of the
//! seed): the time to a connection when a network drops UDP, and what a path costs when it
//! runs over TCP (PROTOCOL.md §4.10-4.11) against UDP on the same path.
//!
//! Run: `cargo run --release -p mpsim --example carrier`
#![allow(clippy::unwrap_used)]

use mpcore::{Carrier, CloseReason, Config, Event};
use mpsim::apps::{pattern, Bulk, Siri, SiriConfig};
use mpsim::{ms, multimob_client, multimob_paths, multimob_server, PathConfig, PathEvent, Sim};

const SEEDS: u64 = 5;

fn client(tcp: bool) -> Config {
    multimob_client(oracle::Config::default()).with(|c| c.multipath.tcp_after = tcp.then_some(ms(1_000)))
}

/// When the client connects (or how it ends) with UDP blocked on `blocked` paths.
fn connect_time(seed: u64, blocked: &[usize], other_paths_after: Option<u64>, tcp: bool) -> String {
    let c = client(tcp).with(|c| c.multipath.other_paths_after = other_paths_after);
    let mut sim = Sim::new(seed, c, multimob_server(), multimob_paths()).unwrap();
    for &p in blocked {
        sim.at(0, p, PathEvent::Firewall(true));
    }
    let mut app = Siri::new(SiriConfig { requests: 1, ..SiriConfig::default() }, seed);
    sim.run(ms(120_000), |s| app.drive(s));
    for (t, client, e) in &app.events {
        match e {
            Event::Connected if *client => {
                let st = sim.client.stats(app.client.unwrap()).unwrap();
                let sf0 = st.subflows.iter().find(|s| s.id == 0).unwrap();
                return format!("{:.0} ms (path {}, {:?})", *t as f64 / 1e3, sf0.path.0, sf0.carrier);
            }
            Event::Closed { reason: CloseReason::HandshakeTimeout } if *client => {
                return format!("fails: handshake timeout at {:.1} s", *t as f64 / 1e6);
            }
            _ => {}
        }
    }
    "no outcome".into()
}

/// One path (WiFi's: 15 ms, 10 Mbit/s) with `loss`, UDP blocked if `tcp` (the connection
/// then runs over TCP).
fn one_path(seed: u64, loss: f64, tcp: bool) -> Sim {
    let paths: Vec<PathConfig> = multimob_paths().into_iter().take(1).collect();
    let mut sim = Sim::new(seed, client(true), multimob_server(), paths).unwrap();
    sim.at(0, 0, PathEvent::Loss(loss));
    if tcp {
        sim.at(0, 0, PathEvent::Firewall(true));
    }
    sim
}

/// The Siri delays (each request's worst burst, ms) after the connection is up: median, max.
fn siri(loss: f64, tcp: bool) -> (f64, f64) {
    let mut all = Vec::new();
    for seed in 1..=SEEDS {
        let mut sim = one_path(seed, loss, tcp);
        let mut app = Siri::new(SiriConfig { requests: 10, start: ms(2_000), ..SiriConfig::default() }, seed);
        assert!(sim.run(ms(300_000), |s| app.drive(s)));
        let st = sim.client.stats(app.client.unwrap()).unwrap();
        let want = if tcp { Carrier::Tcp } else { Carrier::Udp };
        assert!(st.subflows.iter().all(|s| s.carrier == want));
        all.extend(app.results.iter().map(|r| r.max_burst_delay().unwrap() as f64 / 1e3));
    }
    all.sort_by(f64::total_cmp);
    (all[all.len() / 2], all[all.len() - 1])
}

/// 10 MB uploaded: goodput in Mbit/s from the connection to the last byte read (median).
fn bulk(loss: f64, tcp: bool) -> f64 {
    let mut all = Vec::new();
    for seed in 1..=SEEDS {
        let mut sim = one_path(seed, loss, tcp);
        let data = pattern(10 << 20, seed);
        let mut app = Bulk::new(data.clone(), false);
        assert!(sim.run(ms(600_000), |s| app.drive(s)));
        assert!(app.received == data);
        let start = app.events.iter().find(|e| e.1 && e.2 == Event::Connected).unwrap().0;
        let secs = (app.finished_at.unwrap() - start) as f64 / 1e6;
        all.push(data.len() as f64 * 8.0 / secs / 1e6);
    }
    all.sort_by(f64::total_cmp);
    all[all.len() / 2]
}

fn main() {
    println!("Time to a connection (MultiMob phone: WiFi 15 ms, cellular 25 ms; seed 1)");
    let rows: [(&str, &[usize], Option<u64>, bool); 5] = [
        ("UDP passes everywhere", &[], Some(ms(250)), true),
        ("UDP dropped on WiFi, first path only (before)", &[0], None, false),
        ("UDP dropped on WiFi, every path after 250 ms", &[0], Some(ms(250)), false),
        ("UDP dropped everywhere, no TCP", &[0, 1], Some(ms(250)), false),
        ("UDP dropped everywhere, TCP after 1 s", &[0, 1], Some(ms(250)), true),
    ];
    for (name, blocked, after, tcp) in rows {
        println!("  {name:<48} {}", connect_time(1, blocked, after, tcp));
    }
    println!();
    println!("One path (15 ms, 10 Mbit/s), UDP against TCP on the same path ({SEEDS} seeds)");
    println!(
        "  {:<10} {:>22} {:>22} {:>16} {:>16}",
        "loss", "Siri UDP p50/max ms", "Siri TCP p50/max ms", "10 MB UDP Mbit/s", "10 MB TCP Mbit/s"
    );
    for loss in [0.0, 0.01, 0.03] {
        let (u50, umax) = siri(loss, false);
        let (t50, tmax) = siri(loss, true);
        println!(
            "  {:<10} {:>22} {:>22} {:>16.2} {:>16.2}",
            format!("{:.0} %", loss * 100.0),
            format!("{u50:.1} / {umax:.1}"),
            format!("{t50:.1} / {tmax:.1}"),
            bulk(loss, false),
            bulk(loss, true)
        );
    }
}
