//! `iperf-siri`: Siri-like request/response delay (and bulk throughput) over the multipath
//! transport, in iperf3's conventions. The binary is `src/main.rs`; this library holds its
//! parts so that tests and the demo run the same code.
//!
//! - [`cli`]: the command line and its translation into [`proto::Params`] and
//!   `mpudp::Options`.
//! - [`proto`]: the test protocol on the stream (HELLO with a version check, frames, results).
//! - [`run`]: the client's workload and measurements, the server's answers.
//! - [`report`]: the human summary and `-J` JSON; [`plot`]: the delay CDF as SVG.
//! - The demo's link emulator is the `linkemu` crate (delay, rate, queue, loss, outages).
//! - [`demo`]: `iperf-siri demo`.

pub mod check;
pub mod cli;
pub mod context;
pub mod demo;
pub mod demo_resume;
pub mod events;
pub mod fleet;
pub mod out;
pub mod plot;
pub mod proto;
pub mod report;
pub mod run;
pub mod slots;
pub mod timeline;

use cli::RunArgs;
use context::Context;
use mpudp::{MpEndpoint, MpListener, MpStream};
use out::Out;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use proto::VERSION;

fn output(args: &RunArgs) -> Result<Out, String> {
    match &args.logfile {
        Some(p) => Out::file(p).map_err(|e| format!("--logfile {}: {e}", p.display())),
        None => Ok(Out::stdout()),
    }
}

/// Prints a finished (or failed) test the way the flags ask.
fn emit(out: &Out, args: &RunArgs, report: &report::Report) -> Result<(), String> {
    if args.json {
        out.line(&serde_json::to_string_pretty(&report::json(report)).map_err(|e| e.to_string())?);
    } else {
        out.line(report::summary(report).trim_end());
    }
    if let Some(path) = &args.plot {
        let title = format!("{} request-response delay", report.params.test_id.as_deref().unwrap_or("iperf-siri"));
        let svg = plot::cdf_svg(
            &title,
            "request-response delay: end of the last burst to the final response (ms)",
            &[(report.params.scheduler.clone(), report.delays())],
        );
        std::fs::write(path, svg).map_err(|e| format!("--plot {}: {e}", path.display()))?;
    }
    if let (Some(path), Some(dir)) = (&args.timeline, args.qlog_dir()) {
        let drawn = timeline::draw(&dir, report, Some(oracle::radio::Profile::LTE), path);
        if args.qlog.is_none() {
            // The log was only for the picture.
            let _ = std::fs::remove_dir_all(&dir);
        }
        match drawn {
            // A test that failed says why; a picture that could not be drawn only warns.
            Err(e) if report.error.is_some() => eprintln!("iperf-siri: warning: --timeline: {e}"),
            other => other?,
        }
    }
    Ok(())
}

/// `iperf-siri timeline LOG SVG`.
pub fn timeline_command(t: &cli::TimelineArgs) -> Result<(), String> {
    let text = std::fs::read_to_string(&t.log).map_err(|e| format!("{}: {e}", t.log.display()))?;
    let records = timeline::parse(&text).map_err(|e| format!("{}: {e}", t.log.display()))?;
    let extras = timeline::Extras {
        title: t.log.display().to_string(),
        cellular: t.cellular.clone(),
        radio: t.radio.0,
        ..timeline::Extras::default()
    };
    std::fs::write(&t.svg, timeline::svg(&records, &extras)).map_err(|e| format!("{}: {e}", t.svg.display()))
}

/// `iperf-siri keygen FILE`: a key pair to FILE (created, mode 0600), its public key printed.
pub fn keygen(file: &std::path::Path) -> Result<(), String> {
    use std::io::Write;
    let id = mpudp::ServerIdentity::generate().map_err(|e| format!("cannot make a key pair: {e}"))?;
    let mut f = open_private(file).map_err(|e| format!("{}: {e}", file.display()))?;
    f.write_all(id.to_pem().as_bytes()).map_err(|e| format!("{}: {e}", file.display()))?;
    println!("{}", id.public_key());
    Ok(())
}

/// A new file only its owner can read (an existing one is not overwritten).
fn open_private(file: &std::path::Path) -> std::io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o.open(file)
}

/// `iperf-siri -c HOST`.
pub async fn client(args: &RunArgs) -> Result<(), String> {
    let host = args.client.as_deref().unwrap_or_default();
    let protocol = args.protocol_version.unwrap_or(proto::PROTOCOL);
    let params = args.params(protocol)?;
    if args.port == 0 {
        return Err("port 0: give the server's port with -p (iperf-siri's default is 5201)".into());
    }
    let remote = resolve(host, args.port).await?;
    // Addresses given with -m must be of the server's family: say so now, not after a timeout.
    let given: Vec<std::net::IpAddr> = args.subflows.iter().filter_map(|m| cli::interface_ip(m)).collect();
    if !given.is_empty() && given.iter().all(|ip| ip.is_ipv6() != remote.is_ipv6()) {
        let (theirs, ours) = if remote.is_ipv6() { ("IPv6", "IPv4") } else { ("IPv4", "IPv6") };
        return Err(format!(
            "address family mismatch: {host} is {theirs} ({remote}) but -m gives {ours} addresses only"
        ));
    }
    let opts = args.options(true)?.ipv6(remote.is_ipv6());
    let out = output(args)?;
    if args.insecure {
        eprintln!("iperf-siri: warning: the server is not authenticated (--insecure)");
    }
    if !args.json {
        out.line(&format!("Connecting to host {host}, port {}", args.port));
    }
    if args.resume {
        let n = params.requests.unwrap_or(10);
        let live = (!args.json).then(|| out.clone());
        let r = run::resume::run(opts, remote, params, protocol, n, &args.scheduler(true), live).await?;
        if args.json {
            let doc = serde_json::json!({ "resume": r });
            out.line(&serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?);
        } else {
            for l in r.lines() {
                out.line(&l);
            }
        }
        return Ok(());
    }
    let started = std::time::Instant::now();
    let ep = Arc::new(MpEndpoint::client(opts).map_err(|e| e.to_string())?);
    let stream = ep.connect(remote).await.map_err(|e| e.to_string())?;
    let events = events::collect(stream.events(), started, (args.verbose && !args.json).then(|| out.clone()));
    let paths_ep = ep.clone();
    let ctx = Context {
        interval: args.interval,
        live: (!args.json).then(|| out.clone()),
        verbose: args.verbose,
        started,
        ..Context::new(Arc::new(move || paths_ep.paths()), ep.local_addr(), remote, &args.scheduler(true))
    };
    let result = run::client(stream, params, protocol, ctx, None).await;
    // Let the closing handshake finish, briefly.
    let _ = tokio::time::timeout(Duration::from_secs(2), ep.wait_idle()).await;
    match result {
        Ok(mut report) => {
            report.events = events.snapshot();
            emit(&out, args, &report)
        }
        Err(mut f) => {
            if let Some(partial) = &mut f.partial {
                partial.events = events.snapshot();
                emit(&out, args, partial)?;
            }
            Err(f.message)
        }
    }
}

async fn resolve(host: &str, port: u16) -> Result<SocketAddr, String> {
    let addrs: Vec<SocketAddr> =
        tokio::net::lookup_host((host, port)).await.map_err(|e| format!("cannot resolve '{host}': {e}"))?.collect();
    // IPv4 first, as the interfaces' addresses default to IPv4.
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| format!("cannot resolve '{host}': no address"))
}

/// `iperf-siri -s`: up to `--max-tests` tests at once, shared as [`slots`] says (at most half
/// from one address, three quarters from one network; the longest-silent test ended for a
/// client that waits); a client beyond is told the server is busy. With `-1`, one test, then
/// exits (non-zero if it failed).
pub async fn server(args: &RunArgs) -> Result<(), String> {
    let ip = args.bind.unwrap_or(std::net::Ipv4Addr::UNSPECIFIED.into());
    let addr = SocketAddr::new(ip, args.port);
    let out = output(args)?;
    let (identity, made) = args.identity()?;
    let key = identity.public_key();
    // Tickets for every client that takes them, and a resuming client's 0-RTT test request
    // taken (`--resume`; the test request is safe to replay: it starts a test).
    let opts = args.options(false)?.identity(identity).issue_tickets(true);
    let listener = Arc::new(MpListener::bind(addr, opts).map_err(|e| e.to_string())?);
    let rule = "-----------------------------------------------------------";
    if !args.json {
        out.line(&format!(
            "{rule}\nServer listening on {} (mpudp; scheduler {})\n{rule}",
            listener.local_addr().port(),
            args.scheduler(false)
        ));
    }
    // The key clients need, on stderr so that -J's standard output stays one JSON document.
    if made {
        eprintln!("server key: {key} (made at start; `iperf-siri keygen FILE` and --key FILE keep one)");
    } else {
        eprintln!("server key: {key}");
    }
    let slots = Arc::new(Mutex::new(slots::Slots::default()));
    let max = if args.one_off { 1 } else { args.max_tests as usize };
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<Result<(), String>>();
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => accepted.map_err(|e| e.to_string())?,
            Some(result) = done_rx.recv() => {
                if args.one_off {
                    return result;
                }
                continue;
            }
        };
        let Some(slot) = slots.lock().unwrap_or_else(|e| e.into_inner()).take(peer.ip(), max) else {
            tokio::spawn(refuse_busy(stream));
            continue;
        };
        let events = events::collect(
            stream.events(),
            std::time::Instant::now(),
            (args.verbose && !args.json).then(|| out.clone()),
        );
        let paths_l = listener.clone();
        let paths = Arc::new(move || paths_l.endpoint().paths());
        let ctx = Context {
            interval: args.interval,
            live: (!args.json).then(|| out.clone()),
            verbose: args.verbose,
            max_silence: args.max_silence,
            activity: Some(slot.activity.clone()),
            ..Context::new(paths, listener.local_addr(), peer, &args.scheduler(false))
        };
        let (args, out, slots, done) = (args.clone(), out.clone(), slots.clone(), done_tx.clone());
        let drops_l = listener.clone();
        tokio::spawn(async move {
            let result = match run::server(stream, ctx, VERSION).await {
                Ok(mut report) => {
                    report.events = events.snapshot();
                    emit(&out, &args, &report)
                }
                Err(f) => {
                    if let Some(partial) = &f.partial {
                        let _ = emit(&out, &args, partial);
                    }
                    // A server keeps serving after a failed test; it reports and goes on.
                    eprintln!("iperf-siri: {}", f.message);
                    Err(f.message)
                }
            };
            // Hostile or broken traffic leaves a line: what the server dropped, by reason.
            let d = drops_l.drops();
            if d.total() > 0 {
                tracing::warn!(total = d.total(), "datagrams dropped since start: {}", d.summary());
                if !args.json {
                    out.line(&format!("Dropped since start: {} datagrams ({})", d.total(), d.summary()));
                }
            }
            if !args.json {
                out.line(&format!("{rule}\nServer listening on {}\n{rule}", args.port));
            }
            slots.lock().unwrap_or_else(|e| e.into_inner()).give_back(slot.id);
            let _ = done.send(result);
        });
    }
}

async fn refuse_busy(stream: MpStream) {
    let (mut r, mut w) = stream.into_split();
    let _ = proto::write_answer(&mut w, proto::BUSY, "busy").await;
    let _ = tokio::io::AsyncWriteExt::shutdown(&mut w).await;
    run::linger(&mut r).await;
}

/// The first line of a clap error, without its "error: " prefix.
pub fn one_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("invalid arguments");
    let mut line = first.strip_prefix("error: ").unwrap_or(first).to_string();
    // What clap lists under it (the required arguments not given) belongs to the line.
    for more in lines.take_while(|l| l.starts_with("  ")) {
        line.push(' ');
        line.push_str(more.trim());
    }
    line
}
