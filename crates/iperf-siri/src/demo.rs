//! `iperf-siri demo`: the measurement without a second host. Three client/server pairs run
//! at once in this process, each through its own userspace emulator of MultiMob's two paths
//! (WiFi: 127.0.0.1, RTT 15 ms; cellular: 127.0.0.2, RTT 25 ms; 10 Mbit/s each, queues of
//! one bandwidth-delay product). WiFi goes down halfway through the user's wait after
//! request `--fail-after` and comes back halfway through the wait after `--restore-after`.
//! The pairs differ only in how they use the paths:
//!
//! - lowest-RTT + fullmesh: the Linux out-of-tree defaults; both subflows from the start.
//! - backup: the cellular subflow opened at once as a backup (MP_PRIO), used when WiFi's
//!   subflow is potentially failed.
//! - MultiMob: break-before-make (no cellular subflow until the oracle or WiFi's first
//!   timeout says so), FAST_JOIN, and last-received on the server.

use crate::cli::DemoArgs;
use crate::context::Context;
use crate::proto::{Params, PROTOCOL};
use crate::report::{DelayStats, Report};
use crate::run;
use linkemu::{Emulator, PathSpec};
use mpudp::{Iface, Interface, MpEndpoint, MpListener, Options, PathManager};
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// One configuration of the comparison.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    pub label: &'static str,
    pub client_scheduler: &'static str,
    pub server_scheduler: &'static str,
    pub path_manager: PathManager,
    pub fast_join: bool,
}

pub const SETUPS: [Setup; 3] = [
    Setup {
        label: "lowest-rtt + fullmesh",
        client_scheduler: "lowest-rtt",
        server_scheduler: "lowest-rtt",
        path_manager: PathManager::Fullmesh,
        fast_join: false,
    },
    Setup {
        label: "backup",
        client_scheduler: "lowest-rtt",
        server_scheduler: "lowest-rtt",
        path_manager: PathManager::Backup,
        fast_join: false,
    },
    // The phone presets: Options::phone() on the client, Options::server() on the server.
    Setup {
        label: "MultiMob",
        client_scheduler: "priority",
        server_scheduler: "last-received",
        path_manager: PathManager::MultiMob,
        fast_join: true,
    },
];

pub(crate) const WIFI: &str = "127.0.0.1";
pub(crate) const CELLULAR: &str = "127.0.0.2";

pub(crate) fn ip(s: &str) -> IpAddr {
    s.parse().expect("a literal address")
}

/// The workload of the seeds, with the demo's number of requests and wait.
pub fn params(args: &DemoArgs, s: &Setup) -> Params {
    Params {
        requests: Some(args.requests),
        wait_ms: args.wait.as_secs_f64() * 1e3,
        test_id: Some(format!("demo {}", s.label)),
        scheduler: s.client_scheduler.into(),
        path_manager: format!("{:?}", s.path_manager).to_lowercase(),
        fast_join: s.fast_join,
        subflows: vec![format!("{WIFI}@wifi"), format!("{CELLULAR}@cellular")],
        ..Params::default()
    }
}

/// Where the MultiMob client's qlog goes for `--timeline` (this process's own directory).
fn qlog_dir(args: &DemoArgs) -> Option<std::path::PathBuf> {
    args.timeline.as_ref().map(|_| std::env::temp_dir().join(format!("iperf-siri-demo-{}", std::process::id())))
}

/// One pair through its emulator; the client's report.
pub async fn one(args: &DemoArgs, s: Setup) -> Result<Report, String> {
    let multimob = s.path_manager == PathManager::MultiMob;
    let server_opts =
        if multimob { Options::server() } else { Options::new().scheduler(s.server_scheduler).fast_join(true) };
    // The server proves a key pair made here; the client is given its public key, as an app
    // ships its server's.
    let identity = mpudp::ServerIdentity::generate().map_err(|e| format!("cannot make a key pair: {e}"))?;
    let key = identity.public_key();
    let server_opts = server_opts.identity(identity);
    let listener =
        MpListener::bind(SocketAddr::new(ip(WIFI), 0), server_opts).map_err(|e| format!("{}: {e}", s.label))?;
    let cellular = PathSpec { radio: args.radio.0, ..PathSpec::multimob(Duration::from_millis(25)) };
    let paths = [(ip(WIFI), PathSpec::multimob(Duration::from_millis(15))), (ip(CELLULAR), cellular)];
    let emu = Emulator::start(ip(WIFI), listener.local_addr(), &paths).await.map_err(|e| format!("emulator: {e}"))?;
    let emu = Arc::new(emu);
    let listener = Arc::new(listener);
    let server_ctx = {
        let l = listener.clone();
        Context::new(Arc::new(move || l.endpoint().paths()), listener.local_addr(), emu.addr(), s.server_scheduler)
    };
    let l = listener.clone();
    let server = tokio::spawn(async move {
        let (stream, _) = l.accept().await.map_err(|e| e.to_string())?;
        run::server(stream, server_ctx, crate::VERSION).await.map_err(|f| f.message)
    });

    // Cellular is a backup path for the backup path manager and for the phone preset.
    let backup = s.path_manager == PathManager::Backup || multimob;
    let mut base = if multimob { Options::phone() } else { Options::new().path_manager(s.path_manager) };
    if let (true, Some(dir)) = (multimob, qlog_dir(args)) {
        base = base.qlog_dir(dir);
    }
    let opts = base
        .interface(Interface::unbound(SocketAddr::new(ip(WIFI), 0)).kind(Iface::Wifi))
        .interface(Interface::unbound(SocketAddr::new(ip(CELLULAR), 0)).kind(Iface::Cellular).backup(backup))
        .scheduler(s.client_scheduler)
        .fast_join(s.fast_join)
        .server_key(key);
    let started = Instant::now();
    let ep = Arc::new(MpEndpoint::client(opts).map_err(|e| e.to_string())?);
    let stream = ep.connect(emu.addr()).await.map_err(|e| format!("{}: {e}", s.label))?;
    let events = crate::events::collect(stream.events(), started, None);
    let e = ep.clone();
    let ctx = Context {
        started,
        ..Context::new(Arc::new(move || e.paths()), ep.local_addr(), emu.addr(), s.client_scheduler)
    };
    // The outage script follows the client's progress: WiFi fails halfway through the wait
    // after request `fail_after`, and returns halfway through the wait after `restore_after`.
    let (answered_tx, mut answered) = watch::channel(0u32);
    let script = {
        let emu = emu.clone();
        let (fail, restore, half) = (args.fail_after, args.restore_after, args.wait / 2);
        tokio::spawn(async move {
            if answered.wait_for(|n| *n >= fail).await.is_err() {
                return;
            }
            tokio::time::sleep(half).await;
            emu.set_down(0, true);
            if restore == 0 || answered.wait_for(|n| *n >= restore).await.is_err() {
                return;
            }
            tokio::time::sleep(half).await;
            emu.set_down(0, false);
        })
    };
    let report = run::client(stream, params(args, &s), PROTOCOL, ctx, Some(answered_tx)).await;
    script.abort();
    let _ = tokio::time::timeout(Duration::from_secs(2), ep.wait_idle()).await;
    let mut report = report.map_err(|f| format!("{}: {}", s.label, f.message))?;
    report.events = events.snapshot();
    // The radio that delayed the cellular datagrams is the one whose energy is reported (the
    // driver's meter, which sees them only as they leave and arrive, agrees with it, but counts
    // from the endpoint's start).
    if let (Some(e), Some(i)) = (emu.radio_energy(1), report.side.interfaces.iter_mut().find(|i| i.radio.is_some())) {
        i.radio = Some(crate::report::RadioReport {
            energy_j: e.joules,
            above_idle_j: e.above_idle_joules,
            mean_power_mw: e.mean_mw,
            promotions: e.promotions,
        });
    }
    match tokio::time::timeout(Duration::from_secs(5), server).await {
        Ok(Ok(Ok(_))) => Ok(report),
        Ok(Ok(Err(e))) => Err(format!("{} (server): {e}", s.label)),
        Ok(Err(e)) => Err(format!("{} (server task): {e}", s.label)),
        Err(_) => Err(format!("{}: the server did not finish", s.label)),
    }
}

/// The side-by-side table.
pub fn table(args: &DemoArgs, reports: &[(Setup, Report)], took: Duration) -> String {
    let mut s = String::new();
    let restore = if args.restore_after == 0 {
        "never restored".to_string()
    } else {
        format!("back after request {}", args.restore_after)
    };
    let _ = writeln!(
        s,
        "WiFi ({WIFI}, RTT 15 ms) and cellular ({CELLULAR}, RTT 25 ms), 10 Mbit/s each, emulated in userspace.\n\
         {} requests of 9 bursts (300 ms apart), {:.1} s wait; WiFi down after request {}, {restore}.\n",
        args.requests,
        args.wait.as_secs_f64(),
        args.fail_after
    );
    let _ = writeln!(
        s,
        "{:<22} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>6} {:>8}",
        "run",
        "answered",
        "median ms",
        "max ms",
        "worst ms",
        "cell pkts",
        "cell from",
        "energy J",
        "power mW",
        "wakes",
        "wasted B"
    );
    for (setup, r) in reports {
        let d = DelayStats::of(&r.delays());
        let worst = r
            .requests
            .iter()
            .filter_map(|q| q.worst_ms())
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
        let cell = r.cellular();
        let f = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
        let _ = writeln!(
            s,
            "{:<22} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>6} {:>8}",
            setup.label,
            format!("{}/{}", d.map_or(0, |d| d.count), r.requests.len()),
            f(d.map(|d| d.p50)),
            f(d.map(|d| d.max)),
            f(worst),
            cell.map_or(0, |c| c.packets_sent + c.packets_received),
            cell.and_then(|c| c.first_packet_s).map_or("never".into(), |t| format!("{t:.1} s")),
            f(cell.and_then(|c| c.radio.as_ref()).map(|e| e.energy_j)),
            f(cell.and_then(|c| c.radio.as_ref()).map(|e| e.mean_power_mw)),
            cell.and_then(|c| c.radio.as_ref()).map_or("-".into(), |e| e.promotions.to_string()),
            r.cellular_wasted().map_or("-".into(), |b| b.to_string()),
        );
    }
    let _ = writeln!(
        s,
        "\nmedian, max: final-response delay (end of the last burst to the first byte of the answer);\n\
         worst: the longest wait for any response, intermediate ones included.\n\n\
         Each request, final / worst (ms; * = WiFi down when it started):"
    );
    let _ = write!(s, "{:>8}", "request");
    for (setup, _) in reports {
        let _ = write!(s, " {:>22}", setup.label);
    }
    let _ = writeln!(s);
    for k in 0..args.requests as usize {
        let down = k as u32 >= args.fail_after && (args.restore_after == 0 || (k as u32) < args.restore_after);
        let _ = write!(s, "{:>7}{}", k + 1, if down { "*" } else { " " });
        for (_, r) in reports {
            let q = r.requests.get(k);
            let cell = match (q.and_then(|q| q.delay_ms), q.and_then(|q| q.worst_ms())) {
                (Some(d), Some(w)) => format!("{d:.1} / {w:.1}"),
                _ => "no answer".into(),
            };
            let _ = write!(s, " {cell:>22}");
        }
        let _ = writeln!(s);
    }
    let radio = match args.radio.0 {
        Some(p) if p.name == "lte" => "the emulator's LTE radio (Huang et al., MobiSys 2012): a promotion of 0.26 s \
             delays the first packet of an idle phone, paging (1.28 s cycle) the first packet to it"
            .to_string(),
        Some(p) => format!("the emulator's {} radio (see oracle::radio)", p.name),
        None => "no radio delay in the emulator (--radio none); energy by the LTE model of Huang et al.".into(),
    };
    let _ = writeln!(
        s,
        "\nCellular: {radio}; energy over each run, wakes: promotions from idle;\n\
         cell from: first packet on cellular; wasted B: stream bytes that crossed cellular\n\
         (either way) to an end that had them already (a failover's copies, a repair's second copy).\nTook {:.1} s.",
        took.as_secs_f64()
    );
    s
}

/// `iperf-siri demo`.
pub async fn run(args: &DemoArgs) -> Result<(), String> {
    if args.restore_after != 0 && args.restore_after <= args.fail_after {
        return Err("--restore-after must be 0 (never) or greater than --fail-after".into());
    }
    if args.fail_after >= args.requests {
        return Err("--fail-after must be below --requests, or WiFi never fails during the run".into());
    }
    if let Some(p) = &args.timeline {
        crate::check::writable("--timeline", p)?;
    }
    if !args.json {
        println!("iperf-siri demo: three runs at once, about {:.0} s ...", estimate(args).as_secs_f64());
    }
    let t = Instant::now();
    let (a, b, c) = tokio::join!(one(args, SETUPS[0]), one(args, SETUPS[1]), one(args, SETUPS[2]));
    let took = t.elapsed();
    let reports: Vec<(Setup, Report)> = SETUPS.into_iter().zip([a?, b?, c?]).collect();
    if args.json {
        let runs: Vec<serde_json::Value> = reports
            .iter()
            .map(|(s, r)| serde_json::json!({ "run": s.label, "report": crate::report::json(r) }))
            .collect();
        let doc = serde_json::json!({ "demo": runs, "seconds": took.as_secs_f64() });
        println!("{}", serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?);
    } else {
        print!("{}", table(args, &reports, took));
    }
    if let Some(path) = &args.plot {
        // Every response, intermediate ones included: the failover shows in the first burst
        // after the failure, which the final responses do not see.
        let series: Vec<(String, Vec<f64>)> = reports
            .iter()
            .map(|(s, r)| {
                let all = r.requests.iter().flat_map(|q| q.ir_delays_ms.iter().flatten().copied().chain(q.delay_ms));
                (s.label.to_string(), all.collect())
            })
            .collect();
        let svg = crate::plot::cdf_svg(
            "iperf-siri demo: response delays, WiFi failing",
            "delay of every response, intermediate and final (ms)",
            &series,
        );
        std::fs::write(path, svg).map_err(|e| format!("--plot {}: {e}", path.display()))?;
    }
    if let (Some(path), Some(dir)) = (&args.timeline, qlog_dir(args)) {
        let multimob = reports.iter().find(|(s, _)| s.path_manager == PathManager::MultiMob).map(|(_, r)| r);
        let drawn = multimob
            .ok_or_else(|| "no MultiMob run".to_string())
            .and_then(|r| crate::timeline::draw(&dir, r, args.radio.0, path));
        let _ = std::fs::remove_dir_all(&dir);
        drawn?;
    }
    Ok(())
}

/// The run's length without failures: bursts, waits.
fn estimate(args: &DemoArgs) -> Duration {
    let per = Duration::from_millis(8 * 300) + args.wait;
    per * args.requests - args.wait
}
