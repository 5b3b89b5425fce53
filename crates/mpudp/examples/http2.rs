//! The Siri-like workload carried two ways over the same emulated phone, through a WiFi
//! failure: straight on an `MpStream` (as `iperf-siri` does), and as HTTP/2 with hyper (one
//! POST per request, its bursts streamed in the request body, the intermediate and final
//! answers streamed in the response body, as a voice assistant's HTTP/2 API does).
//!
//! ```text
//! cargo run --release -p mpudp --example http2
//! cargo run --release -p mpudp --example http2 -- --requests 6 --fail-after 3 --radio none
//! ```
//!
//! Each carrier gets a fresh server, emulator and phone: MultiMob's presets (`Options::phone`
//! with cellular a backup path, `Options::server`), WiFi 127.0.0.1 (RTT 15 ms) and cellular
//! 127.0.0.2 (RTT 25 ms, an LTE radio that takes 0.26 s to wake), 10 Mbit/s each. WiFi goes
//! silent halfway through the wait after request `--fail-after`. A request is `--bursts`
//! bursts of 9 writes of 50-500 bytes, 300 ms apart; each burst's delay is from its last
//! write to the first byte of its answer (the seeds' measure), and a request's is its worst.
//!
//! hyper drives the stream through `hyper_util::rt::TokioIo`; the stream's control handle,
//! taken before hyper owns it, reads the subflows afterwards.

use bytes::{BufMut, Bytes, BytesMut};
use clap::Parser;
use http_body_util::BodyExt;
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use linkemu::{Emulator, PathSpec, Rng};
use mpudp::{Iface, Interface, MpEndpoint, MpListener, MpStream, Options, ServerIdentity};
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

#[derive(Parser, Debug, Clone, Copy)]
struct Args {
    /// Requests per carrier.
    #[arg(long, default_value_t = 4)]
    requests: u32,
    /// Bursts per request.
    #[arg(long, default_value_t = 9)]
    bursts: u8,
    /// WiFi goes silent halfway through the wait after this request (0: never).
    #[arg(long, default_value_t = 2)]
    fail_after: u32,
    /// The user's wait after each answered request, in seconds.
    #[arg(long, default_value_t = 1.0)]
    wait: f64,
    /// The cellular radio: `lte` (wakes in 0.26 s) or `none` (always connected).
    #[arg(long, value_enum, default_value_t = Radio::Lte)]
    radio: Radio,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum Radio {
    Lte,
    None,
}

const GAP: Duration = Duration::from_millis(300);
const IR_BYTES: usize = 100;
const FINAL_BYTES: usize = 750;

/// A burst or an answer on the wire: length (u16), burst index, last flag, then the body.
fn chunk(idx: u8, last: bool, body_len: usize, fill: u8) -> Bytes {
    let mut b = BytesMut::with_capacity(4 + body_len);
    b.put_u16(body_len as u16);
    b.put_u8(idx);
    b.put_u8(u8::from(last));
    b.put_bytes(fill, body_len);
    b.freeze()
}

/// Splits a byte stream into chunks: `feed` returns the (index, last) of each chunk whose
/// header is complete, the moment its first bytes arrive.
#[derive(Default)]
struct Chunks {
    buf: Vec<u8>,
    skip: usize,
}

impl Chunks {
    fn feed(&mut self, mut data: &[u8], out: &mut Vec<(u8, bool)>) {
        while !data.is_empty() {
            if self.skip > 0 {
                let n = self.skip.min(data.len());
                (self.skip, data) = (self.skip - n, &data[n..]);
                continue;
            }
            let need = 4 - self.buf.len();
            let n = need.min(data.len());
            self.buf.extend_from_slice(&data[..n]);
            data = &data[n..];
            if self.buf.len() == 4 {
                self.skip = usize::from(u16::from_be_bytes([self.buf[0], self.buf[1]]));
                out.push((self.buf[2], self.buf[3] == 1));
                self.buf.clear();
            }
        }
    }
}

/// What the server answers to a burst: an intermediate answer, or the final one.
fn answer((idx, last): (u8, bool)) -> Bytes {
    chunk(idx, last, if last { FINAL_BYTES } else { IR_BYTES }, b'a')
}

/// A body fed by a channel (the request's bursts, the response's answers).
struct ChannelBody(mpsc::Receiver<Bytes>);

impl hyper::body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;
    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b))))
    }
}

/// The HTTP/2 server's one route: answers each burst of the request body as it completes.
async fn siri(req: Request<Incoming>) -> Result<Response<ChannelBody>, Infallible> {
    let (tx, rx) = mpsc::channel(16);
    let mut body = req.into_body();
    tokio::spawn(async move {
        let (mut parse, mut done) = (Chunks::default(), Vec::new());
        while let Some(Ok(frame)) = body.frame().await {
            if let Ok(data) = frame.into_data() {
                parse.feed(&data, &mut done);
                for b in done.drain(..) {
                    let _ = tx.send(answer(b)).await;
                }
            }
        }
    });
    Ok(Response::new(ChannelBody(rx)))
}

/// The raw server: the same answers straight on the stream.
async fn raw_server(s: MpStream) {
    let (mut r, mut w) = s.into_split();
    let (mut parse, mut done, mut buf) = (Chunks::default(), Vec::new(), vec![0u8; 4096]);
    while let Ok(n @ 1..) = r.read(&mut buf).await {
        parse.feed(&buf[..n], &mut done);
        for b in done.drain(..) {
            if w.write_all(&answer(b)).await.is_err() {
                return;
            }
        }
    }
    let _ = w.shutdown().await;
}

/// Where a request's bursts go, and where the first bytes of its answers are stamped.
enum Carrier {
    Raw(mpudp::OwnedWriteHalf, mpsc::UnboundedReceiver<Instant>),
    Http2(hyper::client::conn::http2::SendRequest<ChannelBody>),
}

/// Stamps the arrival of each answer's first bytes.
struct Stamper {
    parse: Chunks,
    got: Vec<(u8, bool)>,
    tx: mpsc::UnboundedSender<Instant>,
}

impl Stamper {
    fn new(tx: mpsc::UnboundedSender<Instant>) -> Self {
        Self { parse: Chunks::default(), got: Vec::new(), tx }
    }

    fn feed(&mut self, data: &[u8]) {
        self.parse.feed(data, &mut self.got);
        for _ in self.got.drain(..) {
            let _ = self.tx.send(Instant::now());
        }
    }
}

/// Runs the workload; each request's worst burst delay (None: unanswered within 30 s).
async fn requests(args: Args, mut carrier: Carrier, emu: &Emulator) -> Vec<Option<Duration>> {
    let mut rng = Rng::new(7);
    let mut worst = Vec::new();
    for r in 1..=args.requests {
        // This request's sink and stamps.
        let (sink, mut stamps) = match &mut carrier {
            Carrier::Raw(..) => (None, None),
            Carrier::Http2(send) => {
                let (tx, rx) = mpsc::channel(16);
                let (stx, srx) = mpsc::unbounded_channel();
                let req = Request::post("http://assistant.test/siri").body(ChannelBody(rx)).expect("a request");
                let resp = send.send_request(req);
                tokio::spawn(async move {
                    let Ok(resp) = resp.await else { return };
                    let (mut body, mut stamper) = (resp.into_body(), Stamper::new(stx));
                    while let Some(Ok(frame)) = body.frame().await {
                        if let Ok(data) = frame.into_data() {
                            stamper.feed(&data);
                        }
                    }
                });
                (Some(tx), Some(srx))
            }
        };
        let mut ends = Vec::new();
        for b in 0..args.bursts {
            let writes: Vec<usize> = (0..9).map(|_| rng.range(50, 500) as usize).collect();
            let burst = chunk(b, b + 1 == args.bursts, writes.iter().sum(), b'q');
            // Written as the app's nine writes: the header with the first.
            let mut at = 0;
            for (k, w) in writes.iter().enumerate() {
                let end = if k == 0 { 4 + w } else { at + w };
                let piece = burst.slice(at..end);
                at = end;
                match (&mut carrier, &sink) {
                    (Carrier::Raw(w, _), _) => w.write_all(&piece).await.expect("the raw stream"),
                    (Carrier::Http2(_), Some(tx)) => tx.send(piece).await.expect("the request body"),
                    _ => unreachable!("an HTTP/2 request has a sink"),
                }
            }
            ends.push(Instant::now());
            if b + 1 < args.bursts {
                tokio::time::sleep(GAP).await;
            }
        }
        drop(sink);
        let stamps = match (&mut carrier, &mut stamps) {
            (Carrier::Raw(_, rx), _) => rx,
            (_, Some(rx)) => rx,
            _ => unreachable!(),
        };
        let mut delays = Vec::new();
        for end in &ends {
            match tokio::time::timeout(Duration::from_secs(30), stamps.recv()).await {
                Ok(Some(at)) => delays.push(at.saturating_duration_since(*end)),
                _ => break,
            }
        }
        let answered = delays.len() == ends.len();
        worst.push(answered.then(|| delays.iter().copied().max().unwrap_or_default()));
        let wait = Duration::from_secs_f64(args.wait);
        if r == args.fail_after {
            tokio::time::sleep(wait / 2).await;
            emu.set_down(0, true);
            tokio::time::sleep(wait / 2).await;
        } else {
            tokio::time::sleep(wait).await;
        }
    }
    worst
}

/// One carrier on a fresh server, emulator and phone.
async fn run(args: Args, http2: bool) -> Result<(Vec<Option<Duration>>, String), Box<dyn std::error::Error>> {
    let ip = |s: &str| s.parse::<IpAddr>().expect("an address");
    let id = ServerIdentity::generate()?;
    let key = id.public_key();
    let l = MpListener::bind(SocketAddr::new(ip("127.0.0.1"), 0), Options::server().identity(id))?;
    let radio = (args.radio == Radio::Lte).then_some(oracle::radio::Profile::LTE);
    let cellular = PathSpec { radio, ..PathSpec::multimob(Duration::from_millis(25)) };
    let paths = [(ip("127.0.0.1"), PathSpec::multimob(Duration::from_millis(15))), (ip("127.0.0.2"), cellular)];
    let emu = Emulator::start(ip("127.0.0.1"), l.local_addr(), &paths).await?;
    tokio::spawn(async move {
        while let Ok((s, _)) = l.accept().await {
            if http2 {
                let io = TokioIo::new(s);
                let conn = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                    .serve_connection(io, hyper::service::service_fn(siri));
                tokio::spawn(conn);
            } else {
                tokio::spawn(raw_server(s));
            }
        }
    });
    let opts = Options::phone()
        .interface(Interface::unbound(SocketAddr::new(ip("127.0.0.1"), 0)).kind(Iface::Wifi))
        .interface(Interface::unbound(SocketAddr::new(ip("127.0.0.2"), 0)).kind(Iface::Cellular).backup(true))
        .server_key(key);
    let ep = MpEndpoint::client(opts)?;
    let stream = ep.connect(emu.addr()).await?;
    let control = stream.control();
    let carrier = if http2 {
        let (send, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream)).await?;
        tokio::spawn(conn);
        Carrier::Http2(send)
    } else {
        let (mut r, w) = stream.into_split();
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let (mut buf, mut stamper) = (vec![0u8; 4096], Stamper::new(tx));
            while let Ok(n @ 1..) = r.read(&mut buf).await {
                stamper.feed(&buf[..n]);
            }
        });
        Carrier::Raw(w, rx)
    };
    let worst = requests(args, carrier, &emu).await;
    let subflows = control.stats().map_or(String::new(), |st| {
        let open: Vec<String> = st.subflows.iter().map(|f| format!("path {} {:?}", f.path.0, f.state)).collect();
        open.join(", ")
    });
    let energy =
        emu.radio_energy(1).map_or(String::new(), |e| format!("; LTE {:.2} J, {} wakes", e.joules, e.promotions));
    Ok((worst, format!("{subflows}{energy}")))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    if args.bursts == 0 || args.requests == 0 || !args.wait.is_finite() || args.wait < 0.0 {
        return Err("--bursts and --requests must be at least 1, --wait not negative".into());
    }
    println!(
        "WiFi (RTT 15 ms) and cellular (RTT 25 ms, radio {:?}), 10 Mbit/s, emulated; MultiMob presets.\n\
         {} requests of {} bursts; WiFi silent after request {}. Worst burst delay per request (ms):\n",
        args.radio, args.requests, args.bursts, args.fail_after
    );
    let raw = run(args, false).await?;
    let h2 = run(args, true).await?;
    println!("{:>8} {:>10} {:>10}", "request", "raw", "HTTP/2");
    let ms = |d: Option<Duration>| d.map_or("unanswered".into(), |d| format!("{:.1}", d.as_secs_f64() * 1e3));
    for (k, (a, b)) in raw.0.iter().zip(&h2.0).enumerate() {
        let mark = if k as u32 == args.fail_after { "  <- the first after WiFi failed" } else { "" };
        println!("{:>8} {:>10} {:>10}{mark}", k + 1, ms(*a), ms(*b));
    }
    println!("\nraw:    {}\nHTTP/2: {}", raw.1, h2.1);
    Ok(())
}
