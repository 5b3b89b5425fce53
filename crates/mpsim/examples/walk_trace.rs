//! Where a slow response's time goes: one seed of a degradation scenario on the LTE radio
//! model, its worst response found, and everything both paths carried around it (each
//! datagram's time, direction, size and fate), with both ends' qlog records of that window.
//!
//! Run: `cargo run --release -p mpsim --example walk_trace -- [SCENARIO] [SEED]`, the scenario
//! by name (`Scenario::named`: `walk`, `loss`, `ramp`, `glitch`, ...; default `walk`), the seed (default 2).
//! With `RADIO=none`, no radio model; with `TRACE=lte-drive`, the LTE drive's capacity on cellular. With `AT=cell` in the environment, the window is the half second before the first cellular
//! datagram other than a WARM and 0.3 s after it; with `FROM` and `TO` (seconds), the one given.

use mpsim::scenarios::{simulate, Scenario, Setup};
use mpsim::{ms, multimob_client, multimob_server, RadioProfile};

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "walk".into());
    let Some(s) = Scenario::named(&name) else {
        eprintln!("walk_trace: unknown scenario {name:?} (see mpsim::scenarios::Scenario::named)");
        std::process::exit(2);
    };
    let seed: u64 = match args.next().map(|a| a.parse()) {
        None => 2,
        Some(Ok(n)) => n,
        Some(Err(_)) => {
            eprintln!("walk_trace: the seed must be a number");
            std::process::exit(2);
        }
    };
    let setup = Setup {
        client: Some(multimob_client(oracle::Config::default()).with(|c| c.logging.qlog = true)),
        server: Some(multimob_server().with(|c| c.logging.qlog = true)),
        // `RADIO=none`: no model of the phone's radio (cellular always connected).
        radio: (!std::env::var("RADIO").is_ok_and(|r| r == "none")).then_some(RadioProfile::LTE),
        // `TRACE=lte-drive`: the cellular path's capacity from the LTE drive's traces.
        cell_trace: std::env::var("TRACE").is_ok_and(|t| t == "lte-drive").then(mpsim::trace::lte_drive),
    };
    let (sim, app) = simulate(s, seed, &setup);
    let Some((k, worst)) =
        app.results.iter().enumerate().filter_map(|(k, r)| r.max_burst_delay().map(|d| (k, d))).max_by_key(|x| x.1)
    else {
        eprintln!("walk_trace: no request answered");
        std::process::exit(1);
    };
    let r = &app.results[k];
    println!(
        "{} ({s:?}) seed {seed}: worst response {:.1} ms, request {} (started at {:.3} s)",
        s.name(),
        worst as f64 / 1e3,
        k + 1,
        r.start as f64 / 1e6
    );
    let delays: Vec<String> = r
        .ir_delays
        .iter()
        .chain(std::iter::once(&r.delay))
        .map(|d| d.map_or("-".into(), |d| format!("{:.1}", d as f64 / 1e3)))
        .collect();
    println!("its bursts' delays (ms): {}", delays.join(" "));
    // The first datagram on cellular other than a WARM (one byte), if any.
    let cell = sim.path_log(1).iter().find(|e| e.size > 1).map(|e| e.time);
    if let Some(t) = cell {
        println!("first cellular datagram other than a WARM at {:.3} s", t as f64 / 1e6);
    }
    // The window: the request's start to its last answer, and some margin; or, with
    // `AT=cell`, around that first cellular datagram.
    let next = app.results.get(k + 1).map_or(r.start + ms(6_000), |n| n.start);
    let (from, to) = match (std::env::var("AT").as_deref(), cell) {
        (Ok("cell"), Some(t)) => (t.saturating_sub(ms(500)), t + ms(300)),
        _ => (r.start.saturating_sub(ms(50)), next.min(r.start + ms(3_000))),
    };
    // `FROM=s TO=s`: a window of one's own, in seconds.
    let secs = |v: &str| std::env::var(v).ok().and_then(|s| s.parse::<f64>().ok()).map(|s| (s * 1e6) as u64);
    let (from, to) = (secs("FROM").unwrap_or(from), secs("TO").unwrap_or(to));
    println!(
        "\ndatagrams from {:.3} s to {:.3} s (path: WiFi 0, cellular 1; up = client to server):",
        from as f64 / 1e6,
        to as f64 / 1e6
    );
    let mut rows = Vec::new();
    for p in 0..sim.path_count() {
        for e in sim.path_log(p).iter().filter(|e| e.time >= from && e.time < to) {
            rows.push((e.time, p, format!("{:?}", e.dir), e.size, format!("{:?}", e.verdict)));
        }
    }
    rows.sort();
    for (t, p, dir, size, verdict) in rows {
        println!("{:>10.3} ms  path {p}  {dir:<4} {size:>5} B  {verdict}", t as f64 / 1e3);
    }
    for (client, _, text) in sim.qlogs.all() {
        println!(
            "\n{} qlog, {:.3}-{:.3} s:",
            if client { "client" } else { "server" },
            from as f64 / 1e6,
            to as f64 / 1e6
        );
        for rec in String::from_utf8_lossy(text).split('\x1e') {
            let Some(t) =
                rec.strip_prefix("{\"time\":").and_then(|r| r.split(',').next()).and_then(|t| t.parse::<f64>().ok())
            else {
                continue;
            };
            if (t * 1e3) as u64 >= from && ((t * 1e3) as u64) < to {
                print!("{rec}");
            }
        }
    }
}
