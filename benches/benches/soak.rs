//! The soak (issue 52): every feature together, for minutes, through the real driver over
//! loopback. A server on both cores (`MpListener::bind_cores`, tickets and 0-RTT on) in a
//! process of its own; clients with the phone preset (MultiMob's oracle, two loopback paths)
//! asking a Siri-size request (2,500 bytes, answered with 750) each second, and at once:
//!
//! - **churn**: 1 % of the clients close and connect again each second, half of them resumed
//!   with 0-RTT (the request in the first packet), half with a full handshake;
//! - **a path lost**: a tenth of the clients (an endpoint of their own) lose their first path
//!   for 5 s half way (`set_path_down`, then `set_path_up`);
//! - **uploads beside them**: one on LEDBAT, one on the default controller, each paced at
//!   `--upload-mbit` (a phone's uplink, not loopback's gigabits, which would take the CPU the
//!   requests need on a 2-core machine).
//!
//! Prints a row a minute (requests answered and failed, p50 / p99 / max, connections live,
//! the server's resident memory and CPU, handshakes, resumptions and 0-RTT per second) and
//! the totals. A request fails when it is not answered within 5 s or its connection breaks;
//! its connection is then made again (and counted as lost).
//!
//! Run: `cargo bench -p mp-benches --bench soak` (10,000 clients, 10 minutes); `-- --conns
//! 2000 --minutes 2 --upload-mbit 50` to choose. Under `cargo test`, a smoke run of 100
//! clients for 10 s.

use mpcore::{CongestionControl, Iface};
use mpudp::{Interface, MpEndpoint, MpListener, MpStream, Options, ServerIdentity, TicketStore};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod procfs;

const REQUEST: usize = 2_500;
const ANSWER: usize = 750;
/// A stream's first byte: a request stream, or an upload.
const REQUESTS: u8 = b'R';
const UPLOAD: u8 = b'U';

fn identity() -> ServerIdentity {
    ServerIdentity::from_seed(&[5; 32]).expect("identity")
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

/// `--serve`: the server process. Prints its address; answers `stats` on its standard input
/// with its resident memory (KiB), live connections, and handshakes answered, resumed and
/// with 0-RTT taken so far.
fn serve() {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let mut opts = Options::server().identity(identity()).issue_tickets(true);
        // Thousands of phones behind one loopback address.
        opts.config_mut().server.initials_per_source = 0;
        let l = MpListener::bind_cores("127.0.0.1:0".parse().expect("address"), opts, 2).expect("bind");
        println!("{}", l.local_addr());
        let eps: Vec<MpEndpoint> = l.endpoints().to_vec();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for line in std::io::stdin().lock().lines() {
                if line.as_deref().ok() != Some("stats") {
                    break;
                }
                let (mut answered, mut resumed, mut early, mut live) = (0, 0, 0, 0);
                for e in &eps {
                    let h = e.handshake_counters();
                    answered += h.answered;
                    resumed += h.resumed;
                    early += h.early_accepted;
                    live += e.live_connections();
                }
                println!("{} {live} {answered} {resumed} {early}", procfs::rss_kib());
            }
            std::process::exit(0);
        });
        while let Ok((s, _)) = l.accept().await {
            tokio::spawn(answer(s));
        }
    });
}

/// The server's application: a request stream's requests answered, an upload read.
async fn answer(mut s: MpStream) {
    static ANS: [u8; ANSWER] = [0x5a; ANSWER];
    let mut kind = [0u8; 1];
    if s.read_exact(&mut kind).await.is_err() {
        return;
    }
    let mut got = 0;
    let mut chunk = vec![0u8; if kind[0] == UPLOAD { 65_536 } else { 1_024 }];
    loop {
        match s.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) if kind[0] == REQUESTS => got += n,
            Ok(_) => continue,
        }
        while got >= REQUEST {
            got -= REQUEST;
            if s.write_all(&ANS).await.is_err() {
                return;
            }
        }
    }
}

struct ServerProc {
    child: std::process::Child,
    addr: SocketAddr,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl ServerProc {
    fn start() -> Self {
        use std::io::BufRead;
        use std::process::{Command, Stdio};
        let exe = std::env::current_exe().expect("this bench's path");
        let mut child =
            Command::new(exe).arg("--serve").stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("server");
        let stdin = child.stdin.take().expect("stdin");
        let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("the server's address");
        Self { addr: line.trim().parse().expect("an address"), child, stdin, stdout }
    }

    /// Resident KiB, live connections, handshakes answered, resumed, with 0-RTT.
    fn stats(&mut self) -> [u64; 5] {
        use std::io::{BufRead, Write};
        writeln!(self.stdin, "stats").expect("ask");
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("answer");
        let v: Vec<u64> = line.split_whitespace().filter_map(|x| x.parse().ok()).collect();
        std::array::from_fn(|k| v.get(k).copied().unwrap_or(0))
    }

    /// CPU seconds of every thread.
    fn cpu(&self) -> f64 {
        procfs::process_cpu(self.child.id())
    }
}

impl Drop for ServerProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client endpoint with the phone preset on two loopback paths ("wifi", "cell").
fn phone(cc: CongestionControl, store: &TicketStore) -> MpEndpoint {
    let mut opts = Options::phone()
        .server_key(identity().public_key())
        .tickets(store.clone())
        .interface(Interface::unbound("127.0.0.1:0".parse().expect("address")).kind(Iface::Wifi).label("wifi"))
        .interface(Interface::unbound("127.0.0.2:0".parse().expect("address")).kind(Iface::Cellular).label("cell"));
    opts.config_mut().transport.congestion = cc;
    MpEndpoint::client(opts).expect("client endpoint")
}

/// What every client adds to, and each minute's row reads and resets.
#[derive(Default)]
struct Tally {
    delays: Mutex<Vec<Duration>>,
    failed: AtomicU64,
    lost: AtomicU64,
    churned: AtomicU64,
}

async fn exchange(s: &mut MpStream, req: &[u8], ans: &mut [u8], early: bool) -> Option<Duration> {
    let t = Instant::now();
    let go = async {
        if !early {
            s.write_all(req).await.ok()?;
        }
        s.read_exact(ans).await.ok()
    };
    tokio::time::timeout(Duration::from_secs(5), go).await.ok().flatten().map(|_| t.elapsed())
}

/// A new request stream: with `early`, its tag and first request go as 0-RTT data (the
/// endpoint's ticket, if it has one), and the returned flag says the first request is sent.
async fn open(ep: &MpEndpoint, addr: SocketAddr, early: bool) -> Option<(MpStream, bool)> {
    let mut first = vec![REQUESTS];
    first.resize(1 + REQUEST, 1);
    let connect = async {
        if early {
            ep.connect_early(addr, &first).await.ok().map(|s| (s, true))
        } else {
            let mut s = ep.connect(addr).await.ok()?;
            s.write_all(&[REQUESTS]).await.ok()?;
            Some((s, false))
        }
    };
    tokio::time::timeout(Duration::from_secs(10), connect).await.ok().flatten()
}

/// Client `i`: a request a second at its offset, until `end`; once every 100 s (at second
/// `i % 100` of each hundred) it closes and connects again, resumed with 0-RTT every other
/// time (half the clients start with 0-RTT, half with a full handshake).
async fn client(
    ep: MpEndpoint,
    addr: SocketAddr,
    i: usize,
    offset: Duration,
    end: tokio::time::Instant,
    t: Arc<Tally>,
) {
    let churn_at = (i % 100) as u64;
    let (req, mut ans) = (vec![2u8; REQUEST], vec![0u8; ANSWER]);
    let start = tokio::time::Instant::now() + offset;
    let mut conn: Option<MpStream> = None;
    let mut pending_early = false;
    for k in 0u64.. {
        let at = start + Duration::from_secs(k);
        if at >= end {
            break;
        }
        tokio::time::sleep_until(at).await;
        if k > 0 && k % 100 == churn_at {
            // Closed on purpose, and made again: resumed with 0-RTT every other time.
            if let Some(mut s) = conn.take() {
                let _ = s.shutdown().await;
            }
            t.churned.fetch_add(1, Ordering::Relaxed);
            let early = (i as u64 + k / 100) % 2 == 1;
            match open(&ep, addr, early).await {
                Some((s, sent)) => (conn, pending_early) = (Some(s), sent),
                None => {
                    t.failed.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            }
        }
        if conn.is_none() {
            match open(&ep, addr, false).await {
                Some((s, _)) => conn = Some(s),
                None => {
                    t.failed.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            }
        }
        let s = conn.as_mut().expect("open");
        match exchange(s, &req, &mut ans, std::mem::take(&mut pending_early)).await {
            Some(d) => t.delays.lock().expect("tally").push(d),
            None => {
                t.failed.fetch_add(1, Ordering::Relaxed);
                t.lost.fetch_add(1, Ordering::Relaxed);
                conn = None;
            }
        }
    }
}

/// An upload at `mbit` Mbit/s on its own endpoint (congestion control `cc`) until `end`;
/// returns its rate, Mbit/s.
async fn upload(cc: CongestionControl, addr: SocketAddr, mbit: u64, end: tokio::time::Instant) -> f64 {
    let t0 = Instant::now();
    let sent = upload_bytes(cc, addr, mbit, end).await;
    sent as f64 * 8.0 / t0.elapsed().as_secs_f64() / 1e6
}

async fn upload_bytes(cc: CongestionControl, addr: SocketAddr, mbit: u64, end: tokio::time::Instant) -> u64 {
    let ep = phone(cc, &TicketStore::new());
    let Ok(mut s) = ep.connect(addr).await else { return 0 };
    if s.write_all(&[UPLOAD]).await.is_err() {
        return 0;
    }
    let chunk = vec![0x33u8; 16_384];
    let per_tick = (mbit * 1_000_000 / 8 / 100) as usize;
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    let mut sent = 0u64;
    while tokio::time::Instant::now() < end {
        tick.tick().await;
        let mut left = per_tick;
        while left > 0 {
            let n = left.min(chunk.len());
            if s.write_all(&chunk[..n]).await.is_err() {
                return sent;
            }
            left -= n;
            sent += n as u64;
        }
    }
    sent
}

fn quantile(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e3
}

fn main() {
    if std::env::args().any(|a| a == "--serve") {
        return serve();
    }
    let full = std::env::args().any(|a| a == "--bench");
    let n: usize = arg("--conns").and_then(|s| s.parse().ok()).unwrap_or(if full { 10_000 } else { 100 });
    let secs: u64 =
        arg("--minutes").and_then(|s| s.parse::<u64>().ok()).map_or(if full { 600 } else { 10 }, |m| m * 60);
    let mbit: u64 = arg("--upload-mbit").and_then(|s| s.parse().ok()).unwrap_or(20);
    let row_every = if full { 60 } else { 5 };
    let mut server = ServerProc::start();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let _in = rt.enter();
    let (main_store, flaky_store) = (TicketStore::new(), TicketStore::new());
    let main_ep = phone(CongestionControl::default(), &main_store);
    let flaky = phone(CongestionControl::default(), &flaky_store);
    let tally = Arc::new(Tally::default());
    let addr = server.addr;
    let began = tokio::time::Instant::now();
    let end = began + Duration::from_secs(5 + secs);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..n {
        // A tenth on the endpoint that loses its first path; the clients start over 5 s.
        let ep = if i % 10 == 0 { flaky.clone() } else { main_ep.clone() };
        let offset = Duration::from_secs(5) * i as u32 / n as u32;
        tasks.spawn(client(ep, addr, i, offset, end, tally.clone()));
    }
    let uploads =
        [CongestionControl::Ledbat, CongestionControl::default()].map(|cc| rt.spawn(upload(cc, addr, mbit, end)));
    println!(
        "soak: {n} clients (a tenth losing WiFi for 5 s at {} s), 1 % churn a second (half 0-RTT), two uploads at {mbit} Mbit/s (LEDBAT, default), server on 2 cores",
        secs / 2
    );
    println!("| minute | answered | failed | p50 / p99 / max ms | live (server) | lost | server RSS MiB | server CPU | handshakes/s | resumed/s | 0-RTT/s | cellular datagrams/s |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    // The clients' datagrams sent on cellular (both request endpoints): a failover shows.
    let cellular = || -> u64 {
        [&main_ep, &flaky]
            .iter()
            .flat_map(|e| e.paths())
            .filter(|p| p.kind == Iface::Cellular)
            .map(|p| p.io.datagrams_sent)
            .sum()
    };
    let mut cell0 = cellular();
    let mut all = Vec::new();
    let (mut prev, mut cpu0, mut failed_total, mut rss) = (server.stats(), server.cpu(), 0, Vec::new());
    let mut path_down = false;
    for k in 1..=(secs / row_every) {
        rt.block_on(tokio::time::sleep_until(began + Duration::from_secs(5 + k * row_every)));
        if !path_down && k * row_every >= secs / 2 {
            path_down = true;
            let f = flaky.clone();
            rt.spawn(async move {
                let _ = f.set_path_down("wifi");
                tokio::time::sleep(Duration::from_secs(5)).await;
                let _ = f.set_path_up("wifi");
            });
        }
        let mut d = std::mem::take(&mut *tally.delays.lock().expect("tally"));
        d.sort();
        let failed = tally.failed.swap(0, Ordering::Relaxed);
        failed_total += failed;
        let st = server.stats();
        let cpu = server.cpu();
        let per_s = |i: usize| (st[i] - prev[i]) as f64 / row_every as f64;
        rss.push(st[0]);
        let cell = cellular();
        println!(
            "| {:.1} | {} | {failed} | {:.1} / {:.1} / {:.1} | {} | {} | {:.1} | {:.0} % | {:.1} | {:.1} | {:.1} | {:.0} |",
            (k * row_every) as f64 / 60.0,
            d.len(),
            quantile(&d, 0.5),
            quantile(&d, 0.99),
            quantile(&d, 1.0),
            st[1],
            tally.lost.load(Ordering::Relaxed),
            st[0] as f64 / 1024.0,
            (cpu - cpu0) / row_every as f64 * 100.0,
            per_s(2),
            per_s(3),
            per_s(4),
            (cell - cell0) as f64 / row_every as f64,
        );
        cell0 = cell;
        all.extend(d);
        (prev, cpu0) = (st, cpu);
    }
    rt.block_on(async { while tasks.join_next().await.is_some() {} });
    let rates: Vec<f64> = uploads.into_iter().map(|u| rt.block_on(u).unwrap_or(0.0)).collect();
    all.sort();
    let (lo, hi) = (rss.iter().skip(1).min().copied().unwrap_or(0), rss.iter().skip(1).max().copied().unwrap_or(0));
    println!(
        "total: {} answered, {failed_total} failed, p50 {:.1} / p99 {:.1} / max {:.1} ms; {} connections lost (made again); {} closed and reconnected on purpose; server RSS {:.1}-{:.1} MiB after the first row ({:+.1} %); uploads {:.1} / {:.1} Mbit/s (LEDBAT / default)",
        all.len(),
        quantile(&all, 0.5),
        quantile(&all, 0.99),
        quantile(&all, 1.0),
        tally.lost.load(Ordering::Relaxed),
        tally.churned.load(Ordering::Relaxed),
        lo as f64 / 1024.0,
        hi as f64 / 1024.0,
        if lo > 0 { (hi as f64 / lo as f64 - 1.0) * 100.0 } else { 0.0 },
        rates[0],
        rates[1],
    );
    if !full {
        println!("(smoke run: `cargo bench -p mp-benches --bench soak` soaks 10,000 clients for 10 minutes)");
    }
}
