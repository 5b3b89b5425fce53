//! The oracle's trade-off between latency and cellular energy (MultiMob §IV-c, §IV-d), as a
//! table: Siri requests next to a light background connection (1,200 bytes every 100 ms) on
//! the MultiMob configuration; WiFi turns lossy (random loss, 15% by default) while the user is
//! between the first and second of four requests. For each loss threshold (Ts = 500 ms) and
//! each period Ts (threshold 25%): the worst response delay over the requests after the loss
//! starts, the cellular energy above idle, and how many subflows the Siri connection opened.
//! Means over seeds 1 to 3.
//!
//! A second table sweeps the delay rule (issue 18): WiFi's uplink gets slower by 100 or 500 ms
//! at the same moment, without loss, for each `rtt_ratio` and `rtt_margin` (off: a margin of 0).
//!
//! Run: `cargo run --release -p mpsim --example oracle_sweep [loss]`

use mpsim::apps::{Siri, SiriConfig, Trickle};
use mpsim::{ms, multimob_backup_paths, multimob_client, multimob_server, PathEvent, Sim};

fn run(seed: u64, event: PathEvent, oracle: oracle::Config, failover_on_timeout: bool) -> (f64, f64, f64) {
    let client = multimob_client(oracle).with(|c| c.multipath.failover_on_timeout = failover_on_timeout);
    let Ok(mut sim) = Sim::new(seed, client, multimob_server(), multimob_backup_paths()) else {
        eprintln!("bad configuration");
        std::process::exit(1);
    };
    let mut background = Trickle::new(&mut sim);
    let mut app = Siri::new(SiriConfig { requests: 4, ..SiriConfig::default() }, seed);
    // Loss starts 1 s after the first request's last burst.
    let loss_at = ms(200 + 8 * 300 + 1_000);
    sim.at(loss_at, 0, event);
    let done = background.beside(&mut sim, &mut app, ms(120_000));
    if !done {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let max = app.results.iter().filter(|r| r.start > loss_at).filter_map(|r| r.max_burst_delay()).max().unwrap_or(0);
    let e = sim.radio_energy(1, 0, sim.now);
    let opened = app.client.and_then(|h| sim.client.conn(h)).map_or(0, |c| c.stats().subflows.len() - 1);
    (max as f64 / 1e3, e.above_idle_joules, opened as f64)
}

fn mean(event: PathEvent, oracle: oracle::Config, on_timeout: bool) -> (f64, f64, f64) {
    let r: Vec<_> = (1..=3).map(|seed| run(seed, event, oracle, on_timeout)).collect();
    let n = r.len() as f64;
    (
        r.iter().map(|x| x.0).sum::<f64>() / n,
        r.iter().map(|x| x.1).sum::<f64>() / n,
        r.iter().map(|x| x.2).sum::<f64>() / n,
    )
}

fn main() {
    let loss = match std::env::args().nth(1).map(|a| a.parse::<f64>()) {
        None => 0.15,
        Some(Ok(l)) if (0.0..=1.0).contains(&l) => l,
        Some(_) => {
            eprintln!("usage: oracle_sweep [loss between 0 and 1]");
            std::process::exit(2);
        }
    };
    println!("WiFi loss {:.0}% from 3.6 s; 4 Siri requests + 12 KB/s background; means of 3 seeds", loss * 100.0);
    println!("Oracle alone (failover_on_timeout off, as MultiMob's module), then with it on (our default).");
    println!("| timeout trigger | loss threshold | Ts | max delay after loss | cellular energy above idle | Siri subflows opened |");
    println!("|---|---|---|---|---|---|");
    let base = oracle::Config::default();
    for on_timeout in [false, true] {
        let label = if on_timeout { "on" } else { "off" };
        for t in [0.10, 0.15, 0.20, 0.25, 0.30, 0.35, 0.40] {
            let (d, e, o) = mean(PathEvent::Loss(loss), oracle::Config { loss_threshold: t, ..base }, on_timeout);
            println!("| {label} | {:.0}% | 500 ms | {d:.1} ms | {e:.1} J | {o:.1} |", t * 100.0);
        }
        for ts in [1u64, 10, 50, 100, 250, 1_000] {
            let (d, e, o) = mean(PathEvent::Loss(loss), oracle::Config { period: ms(ts), ..base }, on_timeout);
            println!("| {label} | 25% | {ts} ms | {d:.1} ms | {e:.1} J | {o:.1} |");
        }
    }
    println!();
    println!("WiFi uplink slower by 100 or 500 ms from 3.6 s, no loss; the delay rule's thresholds (Ts = 500 ms)");
    println!("| uplink delay | rtt_ratio | rtt_margin | max delay after it | cellular energy above idle | Siri subflows opened |");
    println!("|---|---|---|---|---|---|");
    for extra in [100u64, 500] {
        for (ratio, margin) in [(4.0, 0u64), (2.0, 50), (4.0, 100), (4.0, 200), (8.0, 100)] {
            let oracle = oracle::Config { rtt_ratio: ratio, rtt_margin: ms(margin), ..base };
            let (d, e, o) = mean(PathEvent::UplinkDelay(ms(extra)), oracle, true);
            let rule = if margin == 0 { "off".to_string() } else { format!("{ratio}") };
            println!("| +{extra} ms | {rule} | {margin} ms | {d:.1} ms | {e:.1} J | {o:.1} |");
        }
    }
}
