//! The server at scale (issue 19), through the real driver over loopback: one `MpListener`
//! (a current-thread runtime: everything the server does runs there) in a process of its own
//! for the idle and load runs, on a thread for the flood; clients from one `MpEndpoint` with two
//! paths (127.0.0.1 and 127.0.0.2, the phone preset with a backup subflow on the second) on the
//! main thread. Prints one table:
//!
//! - **idle**: N connections, each after one request and 4 s of quiet (the buffers' trim):
//!   the live heap per connection on each side (a counting allocator: connection state,
//!   buffers, driver slots, the application's tasks and streams), the resident memory per
//!   connection on each side (the server runs in a process of its own), as it is and after
//!   glibc's `malloc_trim` gives back the free pages it keeps (the 4 KiB buffers of the first
//!   request, given back by the connections, stay resident in glibc's free lists otherwise),
//!   and the server's CPU over 20 idle seconds
//!   (the phones' keep-alives every 15 s included);
//! - **load**: the largest N, each connection sending a Siri-size request (2,500 bytes, the
//!   BRIEF's burst) every second, staggered, the server answering 750 bytes: delay from the
//!   request's write to the answer's last byte (p50 / p99 / max), failures (an error, or no
//!   answer within 5 s), and the server thread's CPU;
//! - **flood**: a fresh server; one thread replays a captured INITIAL from 200 source
//!   addresses as fast as it can (up to `--flood` per second) while a legitimate client sends
//!   a request every 100 ms: its delays and failures, and what the server did with the
//!   INITIALs (answered with a key agreement, asked to retry, shed);
//! - **iperf-siri's refusals**: a 17 MiB burst (over the protocol's frame limit), refused by
//!   the client before connecting, and a connection that never sends its test request,
//!   dropped by the one-test server: the line each prints and how long each took.
//!
//! Run: `cargo bench -p mp-benches --bench scale` (1,000, 10,000 and 50,000 connections, 60 s
//! of load at 10,000, a 200k/s flood for 10 s; about 4 minutes); `-- --conns 1000,10000
//! --secs 20 --flood 100000` to choose. Under `cargo test`, a smoke run of 20 connections.
//!
//! `--handshake-only`: the idle connections make no request, so the idle row measures what
//! a connection costs from its handshake on (issue 52's setting: 10,000 clients idle before
//! their first request). With one request each, the resident memory also holds what glibc
//! keeps of the buffers the connections gave back (see the row's "after malloc_trim").
//! `SCALE_HIST=1` prints the server's live allocations by size class, before, after the
//! set-up and when idle (which allocations a connection keeps, which it gave back).
//!
//! Issue 52's setting (a regression seen in 2 runs of 3): `-- --bench --conns
//! 10000,10000,10000 --secs 30 --pm multimob --request 100` runs the load three times with the
//! phone preset's MultiMob oracle and 100-byte requests (`--idle S`: the quiet before the load,
//! 20 s by default). The load row gives the connections lost (fewer live at the end), the
//! server's drops, and in which second of the load the connections first failed (one moment
//! for all of them, or a decline).
#![allow(unsafe_code)] // a global allocator is an unsafe trait; this one only counts

use mpcore::{Config, Endpoint, Iface, LocalPath, PathId};
use mpudp::{Interface, MpEndpoint, MpListener, MpStream, Options, ServerIdentity};
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ANSWER: usize = 750;

/// The request's size (`--request`, both processes): 2,500 bytes, the BRIEF's burst.
static REQUEST: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(2_500);

/// `--pm multimob`: the clients keep the phone preset's path manager (the oracle).
static MULTIMOB: AtomicBool = AtomicBool::new(false);

/// `--handshake-only`: the idle connections have made no request (only their handshake).
static NO_FIRST_REQUEST: AtomicBool = AtomicBool::new(false);

fn request_size() -> usize {
    REQUEST.load(Ordering::Relaxed)
}

mod counting;
mod procfs;
use counting::{heap, CLIENT, SERVER};

#[global_allocator]
static GLOBAL: counting::Counting = counting::Counting;

/// Gives the allocator's free pages back to the system (glibc's `malloc_trim`): what stays
/// resident is then what is in use, not what an allocator that keeps freed memory (glibc does,
/// between live objects) still holds from the buffers idle connections gave back.
fn malloc_trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: glibc's malloc_trim takes a byte count and only returns free memory to the
        // system; it is safe to call at any time from any thread.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// This process's resident memory, KiB.
fn rss_kib() -> i64 {
    procfs::rss_kib() as i64
}

fn identity() -> ServerIdentity {
    ServerIdentity::from_seed(&[9; 32]).expect("identity")
}

/// A server on its own thread: answers every request of `REQUEST` bytes with `ANSWER` bytes.
struct Server {
    addr: SocketAddr,
    ep: MpEndpoint,
    /// The server thread's `/proc` directory (Linux), for its CPU time.
    task: Option<std::path::PathBuf>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    fn start() -> Self {
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            counting::set_side(SERVER);
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            rt.block_on(async move {
                let l =
                    MpListener::bind("127.0.0.1:0".parse().expect("address"), Options::server().identity(identity()))
                        .expect("bind");
                let task = procfs::this_thread();
                tx.send((l.local_addr(), l.endpoint().clone(), task)).expect("ready");
                loop {
                    tokio::select! {
                        r = l.accept() => {
                            let Ok((s, _)) = r else { break };
                            tokio::spawn(answer(s));
                        }
                        _ = &mut stopped => break,
                    }
                }
                l.endpoint().close();
                let _ = tokio::time::timeout(Duration::from_secs(10), l.endpoint().wait_idle()).await;
            });
        });
        let (addr, ep, task) = rx.recv().expect("server started");
        Self { addr, ep, task, stop: Some(stop), thread: Some(thread) }
    }

    /// The server thread's CPU time so far, seconds (0 where `/proc` has none).
    fn cpu(&self) -> f64 {
        self.task.as_deref().map_or(0.0, procfs::cpu_seconds)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The server of the idle and load runs, in a process of its own (this bench started with
/// `--serve`), so that its resident memory and CPU are its own and the parent's are the
/// clients': it prints its address, answers `stats` on its standard input with its live heap
/// and resident memory, and ends when its standard input closes.
struct ChildServer {
    child: std::process::Child,
    addr: SocketAddr,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl ChildServer {
    fn start() -> Self {
        use std::io::BufRead;
        use std::process::{Command, Stdio};
        let exe = std::env::current_exe().expect("this bench's path");
        let mut child = Command::new(exe)
            .arg("--serve")
            .args(["--request", &request_size().to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("server process");
        let stdin = child.stdin.take().expect("stdin");
        let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("the server's address");
        let addr = line.trim().parse().expect("an address");
        Self { child, addr, stdin, stdout }
    }

    /// The server process's live heap (bytes) and resident memory (KiB); with `trim`, after
    /// giving the allocator's free pages back.
    fn stats(&mut self, trim: bool) -> (i64, i64) {
        use std::io::{BufRead, Write};
        writeln!(self.stdin, "{}", if trim { "trim" } else { "stats" }).expect("ask");
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("answer");
        let mut it = line.split_whitespace().map(|x| x.parse::<i64>().unwrap_or(0));
        (it.next().unwrap_or(0), it.next().unwrap_or(0))
    }

    /// The server's answer to `what` (one line).
    fn ask(&mut self, what: &str) -> String {
        use std::io::{BufRead, Write};
        writeln!(self.stdin, "{what}").expect("ask");
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("answer");
        line.trim().to_string()
    }

    /// The server process's CPU time (every thread), seconds.
    fn cpu(&self) -> f64 {
        procfs::process_cpu(self.child.id())
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `--serve`: the child's side of `ChildServer`.
fn serve() {
    counting::count_all();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        // The clients here are thousands of phones behind one socket: the per-source limit on
        // first packets (made for floods from a few addresses) would count them as one.
        let mut opts = Options::server().identity(identity());
        opts.config_mut().server.initials_per_source = 0;
        let l = MpListener::bind("127.0.0.1:0".parse().expect("address"), opts).expect("bind");
        println!("{}", l.local_addr());
        let ep = l.endpoint().clone();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::stdin().lock().lines() {
                match line.as_deref() {
                    Ok("stats") => println!("{} {}", heap(SERVER), rss_kib()),
                    Ok("drops") => println!("{} live, drops: {}", ep.live_connections(), ep.drops().summary()),
                    Ok("hist") => println!("{:?}", counting::classes()),
                    Ok("trim") => {
                        malloc_trim();
                        println!("{} {}", heap(SERVER), rss_kib());
                    }
                    _ => break,
                }
            }
            std::process::exit(0);
        });
        while let Ok((s, _)) = l.accept().await {
            tokio::spawn(answer(s));
        }
    });
}

/// The server's application: its task holds no buffer while the connection is idle (what
/// the table measures is the connection's cost, not an application's choice of buffers).
async fn answer(mut s: MpStream) {
    static ANS: [u8; ANSWER] = [0x5a; ANSWER];
    let mut got = 0;
    loop {
        let mut chunk = [0u8; 512];
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => got += n,
        }
        while got >= request_size() {
            got -= request_size();
            if s.write_all(&ANS).await.is_err() {
                return;
            }
        }
    }
}

/// The clients: the phone preset with its cellular path as a backup subflow opened at once
/// (`backup`), not MultiMob's oracle: one endpoint stands for thousands of phones here, and
/// its one oracle would judge WiFi by all their RTTs together (under the load of thousands of
/// handshakes at once it declares the path bad and every connection fails over).
fn client_endpoint() -> MpEndpoint {
    let pm = if MULTIMOB.load(Ordering::Relaxed) { mpudp::PathManager::MultiMob } else { mpudp::PathManager::Backup };
    let opts = Options::phone()
        .path_manager(pm)
        .server_key(identity().public_key())
        .interface(Interface::unbound("127.0.0.1:0".parse().expect("address")).kind(Iface::Wifi))
        .interface(Interface::unbound("127.0.0.2:0".parse().expect("address")).kind(Iface::Cellular).backup(true));
    MpEndpoint::client(opts).expect("client endpoint")
}

/// One request and its answer; the delay, or `None` on an error or after 5 s.
async fn request(s: &mut MpStream, req: &[u8], ans: &mut [u8]) -> Option<Duration> {
    let t = Instant::now();
    let exchange = async {
        s.write_all(req).await.ok()?;
        s.read_exact(ans).await.ok()
    };
    tokio::time::timeout(Duration::from_secs(5), exchange).await.ok().flatten().map(|_| t.elapsed())
}

/// Opens `n` connections, 256 at a time, each making one request; also returns how many
/// attempts failed (each is tried again, up to three times).
async fn connect_all(ep: &MpEndpoint, addr: SocketAddr, n: usize) -> (Vec<MpStream>, usize, Vec<String>) {
    let mut streams = Vec::with_capacity(n);
    let mut set = tokio::task::JoinSet::new();
    let (mut started, mut failed, mut errors) = (0, 0, Vec::new());
    while streams.len() < n && failed < 3 * n {
        while started < n + failed && set.len() < 256 {
            let ep = ep.clone();
            set.spawn(async move {
                let mut s = ep.connect(addr).await.map_err(|e| e.to_string())?;
                if !NO_FIRST_REQUEST.load(Ordering::Relaxed) {
                    let mut ans = vec![0u8; ANSWER];
                    request(&mut s, &vec![1; request_size()], &mut ans).await.ok_or("first request failed")?;
                }
                Ok::<_, String>(s)
            });
            started += 1;
        }
        match set.join_next().await.expect("a task").expect("task") {
            Ok(s) => {
                streams.push(s);
                if streams.len() % 10_000 == 0 {
                    eprintln!("  {} connections up", streams.len());
                }
            }
            Err(e) => {
                failed += 1;
                if errors.len() < 3 {
                    errors.push(e);
                }
            }
        }
    }
    (streams, failed, errors)
}

fn quantile(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i].as_secs_f64() * 1e3
}

struct Row {
    what: String,
    cells: Vec<String>,
}

fn idle(rt: &tokio::runtime::Runtime, n: usize, idle_secs: u64, load_secs: Option<u64>, rows: &mut Vec<Row>) {
    let mut server = ChildServer::start();
    let ep = client_endpoint();
    let (s_heap0, s_rss0) = server.stats(false);
    let hist = std::env::var_os("SCALE_HIST").is_some();
    if hist {
        eprintln!("server's live allocations by size class, before: {}", server.ask("hist"));
    }
    let (c_heap0, c_rss0) = (heap(CLIENT), rss_kib());
    let t = Instant::now();
    let (mut streams, failed, errors) = rt.block_on(connect_all(&ep, server.addr, n));
    let setup = t.elapsed();
    let n = streams.len();
    if hist {
        eprintln!("server's live allocations by size class, set up: {}", server.ask("hist"));
    }
    // Quiet past the trim timer (3 s without data).
    rt.block_on(tokio::time::sleep(Duration::from_secs(4)));
    let (s_heap, s_rss) = server.stats(false);
    if hist {
        eprintln!("server's live allocations by size class, idle: {}", server.ask("hist"));
        eprintln!("server: {}", server.ask("drops"));
    }
    let per = |bytes: i64| bytes as f64 / n as f64 / 1024.0;
    let (s_kib, c_kib) = (per(s_heap - s_heap0), per(heap(CLIENT) - c_heap0));
    let (s_res, c_res) = (per((s_rss - s_rss0) * 1024), per((rss_kib() - c_rss0) * 1024));
    let (_, s_rss_t) = server.stats(true);
    malloc_trim();
    let (s_trim, c_trim) = (per((s_rss_t - s_rss0) * 1024), per((rss_kib() - c_rss0) * 1024));
    let cpu0 = server.cpu();
    rt.block_on(tokio::time::sleep(Duration::from_secs(idle_secs)));
    let idle_cpu = (server.cpu() - cpu0) / idle_secs as f64 * 100.0;
    rows.push(Row {
        what: format!(
            "idle, {n} connections{} (CPU over {idle_secs} s, keep-alives every 15 s)",
            if NO_FIRST_REQUEST.load(Ordering::Relaxed) { " that made no request" } else { "" }
        ),
        cells: vec![
            format!("{s_kib:.1} KiB heap, {s_res:.1} KiB resident ({s_trim:.1} after malloc_trim)"),
            format!("{c_kib:.1} KiB heap, {c_res:.1} KiB resident ({c_trim:.1} after malloc_trim)"),
            format!("{idle_cpu:.1} %"),
            format!("set up in {:.1} s; {failed} attempts failed {errors:?}", setup.as_secs_f64()),
        ],
    });
    if let Some(secs) = load_secs {
        let cpu0 = server.cpu();
        let l = rt.block_on(load(std::mem::take(&mut streams), secs));
        let cpu = (server.cpu() - cpu0) / secs as f64 * 100.0;
        let lost = n.saturating_sub(ep.live_connections());
        let first = if l.first_failures.is_empty() {
            String::new()
        } else {
            format!("; connections' first failure by second of the load {:?}", l.first_failures)
        };
        rows.push(Row {
            what: format!("load, {n} connections, a request each per second for {secs} s"),
            cells: vec![
                format!(
                    "p50 {:.1} / p99 {:.1} / max {:.1} ms",
                    quantile(&l.delays, 0.5),
                    quantile(&l.delays, 0.99),
                    quantile(&l.delays, 1.0)
                ),
                format!("{} requests, {} failed, {lost} connections lost", l.delays.len() + l.failed, l.failed),
                format!("{cpu:.0} %"),
                format!("server: {}{first}", server.ask("drops")),
            ],
        });
        streams = l.streams;
    }
    ep.close();
    drop(streams);
    let _ = rt.block_on(tokio::time::timeout(Duration::from_secs(10), ep.wait_idle()));
}

/// What the load did: each answer's delay, the requests that failed (a connection stops at its
/// first failure: the rest of its requests count as failed), how many connections first failed
/// in each second of the load, and the streams (kept open until the endpoint is looked at).
struct Load {
    delays: Vec<Duration>,
    failed: usize,
    first_failures: std::collections::BTreeMap<u64, usize>,
    streams: Vec<MpStream>,
}

/// Every stream sends a request each second, staggered over the second, for `secs`.
async fn load(streams: Vec<MpStream>, secs: u64) -> Load {
    let n = streams.len();
    let mut set = tokio::task::JoinSet::new();
    let start = tokio::time::Instant::now() + Duration::from_millis(100);
    for (i, mut s) in streams.into_iter().enumerate() {
        set.spawn(async move {
            let offset = Duration::from_secs(1) * i as u32 / n as u32;
            let (mut delays, mut failed, mut first_failure) = (Vec::with_capacity(secs as usize), 0, None);
            let (req, mut ans) = (vec![2u8; request_size()], [0u8; ANSWER]);
            for k in 0..secs {
                tokio::time::sleep_until(start + offset + Duration::from_secs(k)).await;
                match request(&mut s, &req, &mut ans).await {
                    Some(d) => delays.push(d),
                    None => {
                        failed += 1;
                        first_failure = Some(k);
                        break;
                    }
                }
            }
            let left = secs as usize - delays.len() - failed;
            (delays, failed + left, first_failure, s)
        });
    }
    let mut out = Load { delays: Vec::new(), failed: 0, first_failures: Default::default(), streams: Vec::new() };
    while let Some(r) = set.join_next().await {
        let (d, f, first, s) = r.expect("task");
        out.delays.extend(d);
        out.failed += f;
        if let Some(k) = first {
            *out.first_failures.entry(k).or_insert(0) += 1;
        }
        out.streams.push(s);
    }
    out.delays.sort();
    out
}

/// A client's INITIAL, as an attacker would capture it.
fn captured_initial(server: SocketAddr) -> Vec<u8> {
    let cfg = Config::default().with(|c| c.transport.server_keys = vec![identity().public_key()]);
    let path = LocalPath { addr: "127.0.0.1:40000".parse().expect("address"), iface: Iface::Wired, backup: false };
    let mut ep = Endpoint::new(cfg, vec![path], false).expect("endpoint");
    ep.connect(0, PathId(0), server).expect("connect");
    let mut buf = vec![0u8; 2048];
    let t = ep.poll_transmit(0, &mut buf).expect("an INITIAL");
    buf.truncate(t.len);
    buf
}

fn flood(rt: &tokio::runtime::Runtime, rate: u64, secs: u64, rows: &mut Vec<Row>) {
    let server = Server::start();
    let initial = captured_initial(server.addr);
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let (stop2, sent2, addr) = (stop.clone(), sent.clone(), server.addr);
    let flooded = Instant::now();
    let cpu0 = server.cpu();
    let flooder = std::thread::spawn(move || {
        let socks: Vec<UdpSocket> = (0..200)
            .map(|i| UdpSocket::bind(("127.0.0.3", 20_000 + i as u16)).or_else(|_| UdpSocket::bind("127.0.0.3:0")))
            .collect::<Result<_, _>>()
            .expect("flood sockets");
        let t = Instant::now();
        let mut k = 0u64;
        while !stop2.load(Ordering::Relaxed) {
            // Paced: no faster than `rate`.
            let due = (t.elapsed().as_secs_f64() * rate as f64) as u64;
            if k >= due {
                std::thread::yield_now();
                continue;
            }
            let _ = socks[(k % 200) as usize].send_to(&initial, addr);
            k += 1;
            sent2.store(k, Ordering::Relaxed);
        }
    });
    let ep = client_endpoint();
    let (delays, failed, connect) = rt.block_on(async {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let t = Instant::now();
        let mut s = match tokio::time::timeout(Duration::from_secs(10), ep.connect(server.addr)).await {
            Ok(Ok(s)) => s,
            _ => return (Vec::new(), (secs * 10) as usize, Duration::MAX),
        };
        let connect = t.elapsed();
        let (mut delays, mut failed) = (Vec::new(), 0);
        let (req, mut ans) = (vec![3u8; request_size()], [0u8; ANSWER]);
        let end = Instant::now() + Duration::from_secs(secs);
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        while Instant::now() < end {
            tick.tick().await;
            match request(&mut s, &req, &mut ans).await {
                Some(d) => delays.push(d),
                None => failed += 1,
            }
        }
        delays.sort();
        (delays, failed, connect)
    });
    stop.store(true, Ordering::Relaxed);
    let _ = flooder.join();
    let hs = server.ep.handshake_counters();
    let achieved = sent.load(Ordering::Relaxed) as f64 / flooded.elapsed().as_secs_f64();
    let cpu = (server.cpu() - cpu0) / flooded.elapsed().as_secs_f64() * 100.0;
    rows.push(Row {
        what: format!(
            "INITIAL flood, {:.0}k/s achieved (asked {}k/s), 200 sources, during the client's connect and {secs} s of requests",
            achieved / 1e3,
            rate / 1000
        ),
        cells: vec![
            format!(
                "legitimate client: connected in {:.0} ms; requests p50 {:.1} / p99 {:.1} / max {:.1} ms",
                connect.as_secs_f64() * 1e3,
                quantile(&delays, 0.5),
                quantile(&delays, 0.99),
                quantile(&delays, 1.0)
            ),
            format!("{} requests, {failed} failed", delays.len() + failed),
            format!("{cpu:.0} %"),
            format!(
                "INITIALs: {} answered, {} RETRY, {} shed, {} over the per-source limit",
                hs.answered, hs.retries, hs.shed, hs.over_source_limit
            ),
        ],
    });
    ep.close();
    let _ = rt.block_on(tokio::time::timeout(Duration::from_secs(10), ep.wait_idle()));
}

/// iperf-siri's refusals: what each says and how long it took.
fn refusals(rt: &tokio::runtime::Runtime, rows: &mut Vec<Row>) {
    use clap::Parser;
    let parse = |args: &[&str]| iperf_siri::cli::Cli::try_parse_from(args).expect("arguments").run;
    let t = Instant::now();
    let burst = rt.block_on(iperf_siri::client(&parse(&[
        "iperf-siri",
        "-c",
        "127.0.0.1",
        "--insecure",
        "--burst-bytes",
        "17M",
    ])));
    let burst_took = t.elapsed();
    let line = burst.err().unwrap_or_else(|| "accepted (!)".into());
    rows.push(Row {
        what: "iperf-siri client, --burst-bytes 17M".into(),
        cells: vec![
            format!("refused in {:.1} ms", burst_took.as_secs_f64() * 1e3),
            String::new(),
            String::new(),
            format!("`{line}`"),
        ],
    });
    // A one-test server on a free port; a client that connects and says nothing.
    let port = UdpSocket::bind("127.0.0.1:0").and_then(|s| s.local_addr()).map(|a| a.port()).expect("a free port");
    let server_args =
        parse(&["iperf-siri", "-s", "-1", "-B", "127.0.0.1", "-p", &port.to_string(), "--logfile", "/dev/null"]);
    let server = rt.spawn(async move { iperf_siri::server(&server_args).await });
    let silent = rt.block_on(async {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let opts = Options::new().insecure_unauthenticated_server();
        let mut s = MpStream::connect(("127.0.0.1", port), opts).await.expect("connect");
        let t = Instant::now();
        let mut b = [0u8; 16];
        let end = tokio::time::timeout(Duration::from_secs(10), s.read(&mut b)).await;
        let r = tokio::time::timeout(Duration::from_secs(5), server).await;
        (t.elapsed(), end.is_ok(), r)
    });
    let (took, ended, r) = silent;
    let said = match r {
        Ok(Ok(Err(e))) => e,
        other => format!("{other:?}"),
    };
    rows.push(Row {
        what: "iperf-siri one-test server, a client that never sends its test request".into(),
        cells: vec![
            format!(
                "dropped after {:.2} s{}",
                took.as_secs_f64(),
                if ended { "" } else { " (the stream did not end!)" }
            ),
            String::new(),
            String::new(),
            format!("`{said}`"),
        ],
    });
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

fn main() {
    if let Some(n) = arg("--request").and_then(|s| s.parse().ok()) {
        REQUEST.store(n, Ordering::Relaxed);
    }
    MULTIMOB.store(arg("--pm").as_deref() == Some("multimob"), Ordering::Relaxed);
    NO_FIRST_REQUEST.store(std::env::args().any(|a| a == "--handshake-only"), Ordering::Relaxed);
    if std::env::args().any(|a| a == "--serve") {
        return serve();
    }
    let full = std::env::args().any(|a| a == "--bench");
    let conns: Vec<usize> = match arg("--conns") {
        Some(s) => s.split(',').filter_map(|x| x.trim().parse().ok()).collect(),
        None if full => vec![1_000, 10_000, 50_000],
        None => vec![20],
    };
    let secs: u64 = arg("--secs").and_then(|s| s.parse().ok()).unwrap_or(if full { 60 } else { 2 });
    let rate: u64 = arg("--flood").and_then(|s| s.parse().ok()).unwrap_or(if full { 200_000 } else { 2_000 });
    let flood_secs = if full { 10 } else { 2 };
    counting::set_side(CLIENT);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let _in_runtime = rt.enter();
    let mut rows = Vec::new();
    let load_at = conns.iter().copied().filter(|&n| n <= 10_000).max();
    for &n in &conns {
        let idle_secs = arg("--idle").and_then(|s| s.parse().ok()).unwrap_or(if full { 20 } else { 1 });
        idle(&rt, n, idle_secs, (Some(n) == load_at).then_some(secs), &mut rows);
    }
    flood(&rt, rate, flood_secs, &mut rows);
    refusals(&rt, &mut rows);
    println!("| run | server (per connection) | client (per connection) | server CPU (of one core) | notes |");
    println!("|---|---|---|---|---|");
    for r in rows {
        println!("| {} | {} |", r.what, r.cells.join(" | "));
    }
    if !full {
        println!("(smoke run: `cargo bench -p mp-benches --bench scale` measures)");
    }
}
