//! A Siri-like request beside a bulk upload, on emulated paths that have a round-trip time:
//! what `benches/net.sh`'s setup B cannot show, its veths having none (a Siri request there
//! takes 0.5 ms alone, less than four packets' time at 100 Mbit/s).
//!
//! ```text
//! cargo run --release -p mpudp --example beside
//! cargo run --release -p mpudp --example beside -- --rate-mbit 20 --queue-rtts 4
//! ```
//!
//! Two paths through the userspace emulator (`linkemu`; this kernel has no netem): WiFi
//! 127.0.0.1 and cellular 127.0.0.2, `--rate-mbit` each way, RTT 15 and 25 ms, each with a
//! drop-tail bottleneck queue of `--queue-rtts` of its RTT (the seeds' setups: one
//! bandwidth-delay product). Two client endpoints share those bottlenecks, as two apps of one
//! phone: one uploads (fullmesh, both paths), the other asks (`iperf-siri`'s defaults: lowest
//! RTT, fullmesh). Each request is 2 KB; its delay is from its write (one `write_all`, taken at
//! once by the send buffer) to its answer's first byte (the seeds' measure). The requests run
//! alone, then with the upload going for `--warmup` seconds first; the table gives their delays
//! in ms and in RTTs of the fastest path (WiFi, 15 ms; a request moved to cellular counts in
//! those too), and the upload's goodput beside them.

use bytes::Bytes;
use clap::Parser;
use linkemu::{Emulator, PathSpec};
use mpudp::{CongestionControl, Iface, Interface, MpEndpoint, MpListener, MpStream, Options, ServerIdentity};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Parser, Debug, Clone)]
pub struct Args {
    /// Each path's rate, both ways (Mbit/s).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub rate_mbit: u64,
    /// Each bottleneck queue, in multiples of its path's RTT.
    #[arg(long, default_value_t = 1.0)]
    pub queue_rtts: f64,
    /// Requests in each phase.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(5..))]
    pub requests: u32,
    /// The wait between requests (ms).
    #[arg(long, default_value_t = 100)]
    pub gap_ms: u64,
    /// Seconds the upload runs before the requests beside it start.
    #[arg(long, default_value_t = 2.0)]
    pub warmup: f64,
    /// A fixed receive window for the server (bytes; it does not grow). Without it, the
    /// library's: 1 MiB, grown with the reader up to 8 MiB (`Config::transport.max_recv_window`).
    #[arg(long, value_parser = clap::value_parser!(u64).range(4096..=1 << 30))]
    pub window: Option<u64>,
    /// The upload's congestion control: lia (the default, coupled), olia, cubic, reno, or ledbat
    /// (a background transfer: it keeps the queue near half the base RTT).
    #[arg(long, default_value = "lia")]
    pub cc: String,
}

/// The phone's two addresses: the emulator tells its paths apart by them.
const WIFI: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));
const CELLULAR: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
pub const WIFI_RTT: Duration = Duration::from_millis(15);
pub const CELL_RTT: Duration = Duration::from_millis(25);
/// A request's bytes, and its answer's.
const REQUEST: usize = 2000;
const ANSWER: usize = 500;

/// The server: a stream's first byte says what it is. `U`: an upload, read in place and
/// counted; `S`: requests of `REQUEST` bytes, each answered with `ANSWER` bytes.
async fn serve(mut s: MpStream, received: Arc<AtomicU64>) -> std::io::Result<()> {
    let mut kind = [0u8; 1];
    s.read_exact(&mut kind).await?;
    if kind[0] == b'U' {
        while let Some(n) = s.read_with(1 << 16, |b| b.len()).await? {
            received.fetch_add(n as u64, Ordering::Relaxed);
        }
        return Ok(());
    }
    let mut req = vec![0u8; REQUEST];
    let answer = vec![b'a'; ANSWER];
    while s.read_exact(&mut req).await.is_ok() {
        s.write_all(&answer).await?;
    }
    Ok(())
}

/// A client endpoint over both emulated paths (fullmesh, lowest RTT), with `cc`.
fn phone(key: mpudp::PublicKey, cc: CongestionControl) -> Result<MpEndpoint, Box<dyn std::error::Error>> {
    let mut opts = Options::new();
    opts.config_mut().transport.congestion = cc;
    let opts = opts
        .interface(Interface::unbound(SocketAddr::new(WIFI, 0)).kind(Iface::Wifi))
        .interface(Interface::unbound(SocketAddr::new(CELLULAR, 0)).kind(Iface::Cellular))
        .server_key(key);
    Ok(MpEndpoint::client(opts)?)
}

/// `n` requests on `s`, `gap` apart; each one's delay from its write to its answer's first
/// byte (stamped before the write: the answer cannot come sooner than a round trip after it).
async fn ask(s: &mut MpStream, n: u32, gap: Duration) -> std::io::Result<Vec<Duration>> {
    let request = vec![b'q'; REQUEST];
    let mut answer = vec![0u8; ANSWER];
    let mut delays = Vec::new();
    for _ in 0..n {
        let sent = Instant::now();
        s.write_all(&request).await?;
        s.read_exact(&mut answer[..1]).await?;
        delays.push(sent.elapsed());
        s.read_exact(&mut answer[1..]).await?;
        tokio::time::sleep(gap).await;
    }
    Ok(delays)
}

/// The `p`th percentile (nearest rank) of `v`, sorted.
pub fn percentile(v: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v[rank.min(v.len()) - 1]
}

/// What a run measured: the requests' delays alone and beside the upload, and the upload's
/// goodput (Mbit/s) while the requests beside it ran.
#[derive(Debug)]
pub struct Figures {
    pub alone: Vec<Duration>,
    pub beside: Vec<Duration>,
    pub goodput: f64,
}

/// One run: a server, the emulator, the asking phone's requests alone, then beside the upload.
pub async fn measure(args: &Args) -> Result<Figures, Box<dyn std::error::Error>> {
    if !args.queue_rtts.is_finite() || args.queue_rtts <= 0.0 || !args.warmup.is_finite() || args.warmup < 0.0 {
        return Err("--queue-rtts must be above 0 and --warmup not negative".into());
    }
    let cc = CongestionControl::from_name(&args.cc)
        .ok_or_else(|| format!("unknown congestion control {:?} ({})", args.cc, CongestionControl::NAMES.join(", ")))?;
    let id = ServerIdentity::generate()?;
    let key = id.public_key();
    let mut opts = Options::server().identity(id);
    if let Some(w) = args.window {
        opts.config_mut().transport.recv_window = w as usize;
        opts.config_mut().transport.max_recv_window = w as usize;
    }
    let l = MpListener::bind(SocketAddr::new(Ipv4Addr::LOCALHOST.into(), 0), opts)?;
    let path = |rtt: Duration| PathSpec {
        rate_bps: args.rate_mbit * 1_000_000,
        queue: rtt.mul_f64(args.queue_rtts),
        ..PathSpec::multimob(rtt)
    };
    let paths = [(WIFI, path(WIFI_RTT)), (CELLULAR, path(CELL_RTT))];
    let emu = Emulator::start(Ipv4Addr::LOCALHOST.into(), l.local_addr(), &paths).await?;
    let received = Arc::new(AtomicU64::new(0));
    let counter = received.clone();
    let server = tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            tokio::spawn(serve(s, counter.clone()));
        }
    });
    let gap = Duration::from_millis(args.gap_ms);
    let asker = phone(key, CongestionControl::Lia)?;
    let mut s = asker.connect(emu.addr()).await?;
    s.write_all(b"S").await?;
    let alone = ask(&mut s, args.requests, gap).await?;

    let uploader = phone(key, cc)?;
    let mut up = uploader.connect(emu.addr()).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let upload = tokio::spawn(async move {
        up.write_all(b"U").await?;
        let chunk = Bytes::from(vec![b'u'; 1 << 16]);
        while !stopped.load(Ordering::Relaxed) {
            up.write_chunk(chunk.clone()).await?;
        }
        up.shutdown().await
    });
    tokio::time::sleep(Duration::from_secs_f64(args.warmup)).await;
    let (start, at_start) = (Instant::now(), received.load(Ordering::Relaxed));
    let beside = ask(&mut s, args.requests, gap).await?;
    let goodput = (received.load(Ordering::Relaxed) - at_start) as f64 * 8.0 / start.elapsed().as_secs_f64() / 1e6;
    stop.store(true, Ordering::Relaxed);
    upload.await??;
    server.abort();
    Ok(Figures { alone, beside, goodput })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    println!(
        "Two emulated paths, {} Mbit/s each way: WiFi RTT {} ms, cellular {} ms, bottleneck queues of {} RTT.\n\
         {} requests of {REQUEST} bytes, {} ms apart, answered with {ANSWER} bytes; delay to the answer's first byte.\n\
         The upload: congestion control {}, {} s before the requests beside it; the server's window: {}.\n",
        args.rate_mbit,
        WIFI_RTT.as_millis(),
        CELL_RTT.as_millis(),
        args.queue_rtts,
        args.requests,
        args.gap_ms,
        args.cc,
        args.warmup,
        args.window.map_or("grows with the reader (1 to 8 MiB)".into(), |w| format!("{} KiB, fixed", w >> 10))
    );
    let f = measure(&args).await?;
    let rtt = WIFI_RTT.as_secs_f64();
    println!("| requests | p50 ms | p99 ms | p50 / RTT | p99 / RTT |\n|---|---|---|---|---|");
    for (name, mut d) in [("alone", f.alone), ("beside the upload", f.beside)] {
        d.sort();
        let (p50, p99) = (percentile(&d, 50.0).as_secs_f64(), percentile(&d, 99.0).as_secs_f64());
        println!("| {name} | {:.1} | {:.1} | {:.2} | {:.2} |", p50 * 1e3, p99 * 1e3, p50 / rtt, p99 / rtt);
    }
    println!(
        "\nThe upload beside them: {:.1} Mbit/s of goodput ({:.0} % of the two paths' {} Mbit/s).",
        f.goodput,
        f.goodput / (2.0 * args.rate_mbit as f64) * 100.0,
        2 * args.rate_mbit
    );
    Ok(())
}
