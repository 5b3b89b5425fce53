//! Paths that degrade without dying (issues 18 and 32), as one table: the Siri workload on
//! the MultiMob configuration while WiFi gets slow, flaps, turns lossy or fails and returns,
//! seeds 1 to 3 (see `mpsim::scenarios`), without a model of the phone's cellular radio and
//! with an LTE radio (promotion 0.26 s, paging 1.28 s, tail 11.6 s). Kernel MPTCP's figures,
//! where the issue measured them on the emulated testbed, beside ours.
//!
//! Run: `cargo run --release -p mpsim --example scenarios`
//!
//! Or one scenario over many seeds on the LTE radio, as a line of summary figures:
//! `cargo run --release -p mpsim --example scenarios -- loss 100` (the names of
//! `Scenario::named`).

use mpsim::scenarios::{run_in, Scenario, Setup};

/// One scenario over seeds 1 to `seeds` on the LTE radio: the worst response's mean, median,
/// 90th percentile and maximum, the runs with any cellular packet, and the mean energy.
fn sweep(name: &str, seeds: u64) {
    let Some(s) = Scenario::named(name) else {
        eprintln!("scenarios: unknown scenario {name:?}");
        std::process::exit(2);
    };
    // `RADIO=none`: no model of the phone's radio (cellular always connected).
    let setup = if std::env::var("RADIO").is_ok_and(|r| r == "none") { Setup::plain() } else { Setup::lte() };
    // `TRACE=lte-drive`: the cellular path's capacity from the LTE drive's traces.
    let setup = if std::env::var("TRACE").is_ok_and(|t| t == "lte-drive") { setup.on_lte_drive() } else { setup };
    let outs: Vec<_> = (1..=seeds).map(|seed| run_in(s, seed, &setup)).collect();
    let mut worst: Vec<f64> = outs.iter().map(|o| o.worst_ms).collect();
    worst.sort_by(f64::total_cmp);
    let at = |q: f64| worst[((worst.len() - 1) as f64 * q).round() as usize];
    let mean = worst.iter().sum::<f64>() / worst.len() as f64;
    let cell = outs.iter().filter(|o| o.cell_packets > o.cell_warms).count();
    let cell_data = outs.iter().filter(|o| o.cell_data_bytes > 0).count();
    let warmed = outs.iter().filter(|o| o.cell_warms > 0).count();
    let wifi = outs.iter().map(|o| o.wifi_packets).sum::<usize>() as f64 / outs.len() as f64;
    let joules = outs.iter().map(|o| o.cell_joules).sum::<f64>() / outs.len() as f64;
    let data = outs.iter().map(|o| o.cell_data_bytes).sum::<u64>() as f64 / outs.len() as f64;
    let wasted = outs.iter().map(|o| o.cell_wasted_bytes).sum::<u64>() as f64 / outs.len() as f64;
    let mut by_worst: Vec<(u64, &mpsim::scenarios::Outcome)> = (1..).zip(outs.iter()).collect();
    by_worst.sort_by(|a, b| b.1.worst_ms.total_cmp(&a.1.worst_ms));
    let slowest: Vec<String> = by_worst
        .iter()
        .take(std::env::var("SLOWEST").ok().and_then(|v| v.parse().ok()).unwrap_or(5))
        .map(|(seed, o)| {
            format!("seed {seed} {:.1} ms, {} cellular ({} WARM)", o.worst_ms, o.cell_packets, o.cell_warms)
        })
        .collect();
    let promotions = outs.iter().map(|o| f64::from(o.promotions)).sum::<f64>() / outs.len() as f64;
    let answered: usize = outs.iter().map(|o| o.answered).sum();
    let requests: usize = outs.iter().map(|o| o.requests).sum();
    println!(
        "{} ({}), {seeds} seeds: worst response mean {mean:.1} / median {:.1} / p90 {:.1} / max {:.1} ms; \
         {cell_data} runs with data on cellular, {cell} with cellular packets other than WARMs, {warmed} with WARMs; {wifi:.0} WiFi datagrams; {joules:.2} J of cellular energy, {promotions:.2} promotions, {data:.0} bytes of data on cellular ({wasted:.0} wasted: received already) on average; {answered}/{requests} answered",
        s.name(),
        match (setup.radio.is_some(), setup.cell_trace.is_some()) {
            (true, false) => "LTE",
            (true, true) => "LTE, the LTE drive's capacity",
            (false, true) => "no radio model, the LTE drive's capacity",
            (false, false) => "no radio model",
        },
        at(0.5),
        at(0.9),
        at(1.0)
    );
    println!("slowest: {}", slowest.join("; "));
    let on_cell: Vec<String> =
        (1..).zip(outs.iter()).filter(|(_, o)| o.cell_data_bytes > 0).map(|(s, _)| s.to_string()).collect();
    println!("seeds with data on cellular: {}", on_cell.join(" "));
}

fn main() {
    let mut args = std::env::args().skip(1);
    if let Some(name) = args.next() {
        let seeds = args.next().map_or(Ok(20), |a| a.parse()).unwrap_or_else(|_| {
            eprintln!("scenarios: the number of seeds must be a number");
            std::process::exit(2);
        });
        sweep(&name, seeds.max(1));
        return;
    }
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
