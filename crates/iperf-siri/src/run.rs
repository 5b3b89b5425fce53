//! The two ends of a test over one `MpStream`: the client runs the workload and measures,
//! the server follows the client's parameters and answers.

use crate::out::Out;
use crate::proto::{self, Mode, Params, ProtoError};
use crate::report::{self, IntervalRecord, Report, RequestRecord, Role, SideResults};
use crate::rng::Rng;
use mpudp::{MpStream, OwnedReadHalf, OwnedWriteHalf, PathInfo};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, watch};
use tokio::time::sleep_until;

/// The local paths' counters, from whichever handle owns the endpoint.
pub type PathsFn = Arc<dyn Fn() -> Vec<PathInfo> + Send + Sync>;

/// Bulk mode's frame body.
const CHUNK: usize = 64 * 1024;
/// How long a server waits for a HELLO, and either side for the peer's END and RESULTS once
/// its own part is done.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);

/// A test that did not complete: why, and what was measured until then.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub partial: Option<Box<Report>>,
}

impl Failure {
    fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), partial: None }
    }
}

impl From<ProtoError> for Failure {
    fn from(e: ProtoError) -> Self {
        Self::new(e.to_string())
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Self::new(e.to_string())
    }
}

/// What a side needs besides the stream.
#[derive(Clone)]
pub struct Context {
    pub paths: PathsFn,
    /// Interval reports every this long (zero: none).
    pub interval: Duration,
    /// Where interval lines go while the test runs (`None`: collect only, for JSON or the
    /// demo).
    pub live: Option<Out>,
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub verbose: bool,
    /// This side's scheduler, for the results.
    pub scheduler: String,
    /// When the test began: the client's connect, the server's accept. Times in reports
    /// count from here.
    pub started: Instant,
}

impl Context {
    /// A quiet context (no intervals, nothing live) starting now.
    pub fn new(paths: PathsFn, local: SocketAddr, remote: SocketAddr, scheduler: &str) -> Self {
        Self {
            paths,
            interval: Duration::ZERO,
            live: None,
            local,
            remote,
            verbose: false,
            scheduler: scheduler.to_string(),
            started: Instant::now(),
        }
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("interval", &self.interval).field("remote", &self.remote).finish()
    }
}

/// Counters shared by the workload, the reader and the interval reporter.
#[derive(Debug, Default)]
struct Progress {
    bytes_sent: u64,
    bytes_received: u64,
    answered: u32,
    /// The longest final-response delay since the last interval report.
    interval_max_delay: Option<f64>,
}

type Shared = Arc<Mutex<Progress>>;

fn lock(p: &Shared) -> std::sync::MutexGuard<'_, Progress> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the client's reader hands to the workload.
#[derive(Debug)]
enum Ev {
    Response { request: u32, burst: u8, last: bool, at: Instant },
    End,
    Results(Box<SideResults>),
    Failed(String),
}

/// The sizes of one burst's writes.
fn burst_writes(p: &Params, rng: &mut Rng, out: &mut Vec<usize>) {
    out.clear();
    match p.burst_bytes {
        Some(total) => {
            let mut left = total as usize;
            while left > 0 {
                let s = (rng.range(p.write_min, p.write_max) as usize).min(left);
                out.push(s);
                left -= s;
            }
        }
        None => out.extend((0..p.writes).map(|_| rng.range(p.write_min, p.write_max) as usize)),
    }
}

/// Runs the client's side of a test on a connected stream.
pub async fn client(
    stream: MpStream,
    params: Params,
    protocol: u16,
    ctx: Context,
    answered: Option<watch::Sender<u32>>,
) -> Result<Report, Failure> {
    let (mut r, mut w) = stream.into_split();
    proto::write_hello(&mut w, protocol, &params).await?;
    let server_version = tokio::time::timeout(EXCHANGE_TIMEOUT, proto::read_answer(&mut r, protocol))
        .await
        .map_err(|_| Failure::new("the server accepted the connection but did not answer the test request"))??;
    let t0 = ctx.started;
    let mut report = Report::new(Role::Client, params.clone(), &ctx, SystemTime::now());
    if let Some(live) = &ctx.live {
        live.line(&report::start_lines(Role::Client, &params, ctx.local, ctx.remote, &server_version));
    }
    report.peer_version = Some(server_version);
    let progress: Shared = Arc::default();
    let (tx, mut rx) = mpsc::unbounded_channel();
    let reader = tokio::spawn(client_reader(r, progress.clone(), tx));
    let ticker = spawn_intervals(&ctx, t0, progress.clone());

    let mut run = ClientRun { params: &params, w: &mut w, rx: &mut rx, progress: &progress, t0, records: Vec::new() };
    let outcome = match (params.mode, params.reverse) {
        (Mode::Siri, _) => run.siri(answered.as_ref()).await,
        (Mode::Bulk, false) => run.bulk().await,
        (Mode::Bulk, true) => Ok(()),
    };
    let records = std::mem::take(&mut run.records);
    let outcome = match outcome {
        Ok(()) => finish_client(&mut w, &mut rx, &progress, &mut report, t0).await,
        Err(e) => Err(e),
    };
    let intervals = ticker.stop().await;
    reader.abort();
    report.requests = records.iter().zip(1..).map(|(q, i)| q.record(i, t0)).collect();
    report.intervals = intervals;
    // The test's length: to the server's END, or to the failure.
    if report.seconds == 0.0 {
        report.seconds = t0.elapsed().as_secs_f64();
    }
    // The client's endpoint was built for this test: its counters from zero are the test's.
    report.side = side_results(&ctx.scheduler, &lock(&progress), w.stats(), &[], &(ctx.paths)(), t0);
    report.side.seconds = report.seconds;
    match outcome {
        Ok(()) => Ok(report),
        Err(message) => {
            report.error = Some(message.clone());
            Err(Failure { message, partial: Some(Box::new(report)) })
        }
    }
}

/// After the workload: END, the server's END, RESULTS both ways.
async fn finish_client(
    w: &mut OwnedWriteHalf,
    rx: &mut mpsc::UnboundedReceiver<Ev>,
    progress: &Shared,
    report: &mut Report,
    t0: Instant,
) -> Result<(), String> {
    let io = |e: std::io::Error| format!("connection lost: {e}");
    proto::write_frame(w, proto::END, &[]).await.map_err(io)?;
    w.flush().await.map_err(io)?;
    // With -R the server is still sending for as long as the test lasts: wait for its END
    // without a limit (a server that dies closes the connection at the idle timeout).
    let deadline = tokio::time::Instant::now() + EXCHANGE_TIMEOUT;
    let reverse = report.params.mode == Mode::Bulk && report.params.reverse;
    loop {
        let ev = if reverse { Ok(rx.recv().await) } else { tokio::time::timeout_at(deadline, rx.recv()).await };
        match ev {
            Ok(Some(Ev::End)) => break,
            Ok(Some(Ev::Response { .. })) => {}
            Ok(Some(Ev::Failed(m))) => return Err(m),
            Ok(Some(Ev::Results(_))) => return Err("protocol error: RESULTS before END".into()),
            Ok(None) => return Err("the server closed the connection before the end of the test".into()),
            Err(_) => return Err("the server did not end the test within 30 s".into()),
        }
    }
    report.seconds = t0.elapsed().as_secs_f64();
    let mine = side_results(&report.side.scheduler, &lock(progress), w.stats(), &[], &[], t0);
    let json = serde_json::to_vec(&mine).map_err(|e| e.to_string())?;
    proto::write_frame(w, proto::RESULTS, &json).await.map_err(io)?;
    w.flush().await.map_err(io)?;
    let deadline = tokio::time::Instant::now() + EXCHANGE_TIMEOUT;
    match tokio::time::timeout_at(deadline, rx.recv()).await {
        Ok(Some(Ev::Results(theirs))) => report.peer = Some(*theirs),
        Ok(Some(Ev::Failed(m))) => return Err(m),
        Ok(_) => return Err("the server closed the connection without its results".into()),
        Err(_) => return Err("the server did not send its results within 30 s".into()),
    }
    w.shutdown().await.map_err(io)?;
    Ok(())
}

/// One request as the client saw it.
#[derive(Debug)]
struct Request {
    start: Instant,
    burst_ends: Vec<Instant>,
    ir: Vec<Option<Duration>>,
    delay: Option<Duration>,
}

impl Request {
    fn record(&self, index: u32, t0: Instant) -> RequestRecord {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        RequestRecord {
            index,
            start_s: self.start.duration_since(t0).as_secs_f64(),
            delay_ms: self.delay.map(ms),
            ir_delays_ms: self.ir.iter().map(|d| d.map(ms)).collect(),
        }
    }
}

struct ClientRun<'a> {
    params: &'a Params,
    w: &'a mut OwnedWriteHalf,
    rx: &'a mut mpsc::UnboundedReceiver<Ev>,
    progress: &'a Shared,
    t0: Instant,
    records: Vec<Request>,
}

impl ClientRun<'_> {
    async fn siri(&mut self, answered: Option<&watch::Sender<u32>>) -> Result<(), String> {
        let p = self.params;
        let gap = Duration::from_secs_f64(p.burst_gap_ms / 1e3);
        let wait = Duration::from_secs_f64(p.wait_ms / 1e3);
        let until = p.duration_s.map(|s| self.t0 + Duration::from_secs_f64(s));
        let mut rng = Rng::new(p.seed);
        let mut sizes = Vec::new();
        let filler = vec![b'a'; p.write_max as usize];
        let io = |e: std::io::Error| format!("connection lost: {e}");
        for request in 0u32.. {
            if p.requests.is_some_and(|n| request >= n) || until.is_some_and(|u| Instant::now() >= u) {
                break;
            }
            self.records.push(Request { start: Instant::now(), burst_ends: Vec::new(), ir: Vec::new(), delay: None });
            let mut next = Instant::now();
            for burst in 0..p.bursts {
                self.pump_until(next).await?;
                let last = burst + 1 == p.bursts;
                burst_writes(p, &mut rng, &mut sizes);
                let body: usize = sizes.iter().sum();
                let mut head = [0u8; 5 + proto::BURST_PREFIX];
                head[..5].copy_from_slice(&proto::header(proto::BURST, proto::BURST_PREFIX + body));
                head[5..9].copy_from_slice(&request.to_be_bytes());
                head[9] = burst as u8;
                head[10] = u8::from(last);
                self.w.write_all(&head).await.map_err(io)?;
                // The seeds' client writes each piece with no delay: one write per piece.
                for &s in &sizes {
                    self.w.write_all(&filler[..s]).await.map_err(io)?;
                }
                self.w.flush().await.map_err(io)?;
                let end = Instant::now();
                lock(self.progress).bytes_sent += (head.len() + body) as u64;
                let r = self.records.last_mut().expect("pushed above");
                r.burst_ends.push(end);
                next = end + gap;
            }
            while self.records.last().is_some_and(|r| r.delay.is_none()) {
                match self.rx.recv().await {
                    Some(ev) => self.handle(ev)?,
                    None => return Err("the server closed the connection".into()),
                }
            }
            if let Some(a) = answered {
                let _ = a.send(request + 1);
            }
            let more = p.requests.is_none_or(|n| request + 1 < n);
            if more {
                self.pump_until(Instant::now() + wait).await?;
            }
        }
        Ok(())
    }

    /// Handles the reader's events until `at`.
    async fn pump_until(&mut self, at: Instant) -> Result<(), String> {
        let deadline = tokio::time::Instant::from_std(at);
        loop {
            tokio::select! {
                _ = sleep_until(deadline) => return Ok(()),
                ev = self.rx.recv() => match ev {
                    Some(ev) => self.handle(ev)?,
                    None => return Err("the server closed the connection".into()),
                },
            }
        }
    }

    fn handle(&mut self, ev: Ev) -> Result<(), String> {
        match ev {
            Ev::Response { request, burst, last, at } => {
                let Some(r) = self.records.get_mut(request as usize) else {
                    return Err(format!("protocol error: a response to request {request}, never sent"));
                };
                let Some(&end) = r.burst_ends.get(usize::from(burst)) else {
                    return Err(format!("protocol error: a response to burst {burst} of request {request}"));
                };
                let d = at.saturating_duration_since(end);
                if last {
                    r.delay.get_or_insert(d);
                    let mut p = lock(self.progress);
                    p.answered += 1;
                    let ms = d.as_secs_f64() * 1e3;
                    p.interval_max_delay = Some(p.interval_max_delay.map_or(ms, |m| m.max(ms)));
                } else {
                    let i = usize::from(burst);
                    if r.ir.len() <= i {
                        r.ir.resize(i + 1, None);
                    }
                    r.ir[i].get_or_insert(d);
                }
                Ok(())
            }
            Ev::Failed(m) => Err(m),
            Ev::End | Ev::Results(_) => Err("protocol error: the server ended the test early".into()),
        }
    }

    async fn bulk(&mut self) -> Result<(), String> {
        let io = |e: std::io::Error| format!("connection lost: {e}");
        let chunk = vec![0x5au8; CHUNK];
        let until = self.params.duration_s.map(|s| self.t0 + Duration::from_secs_f64(s));
        let mut left = self.params.bytes.unwrap_or(u64::MAX);
        while left > 0 && until.is_none_or(|u| Instant::now() < u) {
            // A server that fails shows here at once, not at the end.
            if let Ok(ev) = self.rx.try_recv() {
                self.handle(ev)?;
            }
            let n = (left as usize).min(CHUNK);
            proto::write_frame(self.w, proto::DATA, &chunk[..n]).await.map_err(io)?;
            left -= n as u64;
            lock(self.progress).bytes_sent += n as u64;
        }
        Ok(())
    }
}

/// Reads the server's frames, stamping the arrival of each response's first byte.
async fn client_reader(mut r: OwnedReadHalf, progress: Shared, tx: mpsc::UnboundedSender<Ev>) {
    let mut buf = Vec::new();
    let mut scratch = vec![0u8; CHUNK];
    loop {
        let ev = match next_event(&mut r, &progress, &mut buf, &mut scratch).await {
            Ok(Some(ev)) => ev,
            Ok(None) => return,
            Err(ProtoError::Io(e)) => Ev::Failed(format!("connection lost: {e}")),
            Err(e) => Ev::Failed(e.to_string()),
        };
        let failed = matches!(ev, Ev::Failed(_));
        if tx.send(ev).is_err() || failed {
            return;
        }
    }
}

/// The server's next frame as an event (`None` at the end of the stream); bulk data is
/// counted and skipped.
async fn next_event(
    r: &mut OwnedReadHalf,
    progress: &Shared,
    buf: &mut Vec<u8>,
    scratch: &mut [u8],
) -> Result<Option<Ev>, ProtoError> {
    loop {
        let Some((kind, len)) = proto::read_header(r).await? else { return Ok(None) };
        let at = Instant::now();
        let ev = match kind {
            proto::IR | proto::FINAL if len as usize >= proto::RESPONSE_PREFIX => {
                let mut pre = [0u8; proto::RESPONSE_PREFIX];
                tokio::io::AsyncReadExt::read_exact(r, &mut pre).await?;
                proto::skip(r, u64::from(len) - proto::RESPONSE_PREFIX as u64, scratch).await?;
                lock(progress).bytes_received += u64::from(len) + 5;
                let request = u32::from_be_bytes([pre[0], pre[1], pre[2], pre[3]]);
                Ev::Response { request, burst: pre[4], last: kind == proto::FINAL, at }
            }
            proto::DATA => {
                proto::skip(r, u64::from(len), scratch).await?;
                lock(progress).bytes_received += u64::from(len);
                continue;
            }
            proto::END => Ev::End,
            proto::RESULTS => {
                proto::read_into(r, len, buf).await?;
                match serde_json::from_slice(buf) {
                    Ok(s) => Ev::Results(Box::new(s)),
                    Err(e) => Ev::Failed(format!("protocol error: the server's results: {e}")),
                }
            }
            k => Ev::Failed(format!("protocol error: frame kind {k} from the server")),
        };
        return Ok(Some(ev));
    }
}

/// Runs the server's side of a test on an accepted stream.
pub async fn server(stream: MpStream, ctx: Context, version: &str) -> Result<Report, Failure> {
    let (mut r, mut w) = stream.into_split();
    let params = match tokio::time::timeout(EXCHANGE_TIMEOUT, proto::read_hello(&mut r)).await {
        Err(_) => return Err(Failure::new("the client connected but sent no test request")),
        Ok(Err(e @ ProtoError::Version { .. })) => {
            refuse(&mut w, &e.to_string()).await;
            return Err(e.into());
        }
        Ok(Err(e)) => return Err(e.into()),
        Ok(Ok(p)) => p,
    };
    if let Err(why) = check(&params) {
        refuse(&mut w, &why).await;
        return Err(Failure::new(format!("refused a test: {why}")));
    }
    proto::write_answer(&mut w, proto::ACCEPTED, version).await?;
    let t0 = ctx.started;
    if let Some(live) = &ctx.live {
        live.line(&report::start_lines(Role::Server, &params, ctx.local, ctx.remote, "client"));
    }
    let paths_at_start = (ctx.paths)();
    let mut report = Report::new(Role::Server, params.clone(), &ctx, SystemTime::now());
    let progress: Shared = Arc::default();
    let ticker = spawn_intervals(&ctx, t0, progress.clone());
    let outcome = serve(&mut r, &mut w, &params, &progress, t0, &mut report).await;
    report.intervals = ticker.stop().await;
    report.seconds = t0.elapsed().as_secs_f64();
    report.side = side_results(&ctx.scheduler, &lock(&progress), r.stats(), &paths_at_start, &(ctx.paths)(), t0);
    match outcome {
        Ok(()) => Ok(report),
        Err(message) => {
            report.error = Some(message.clone());
            Err(Failure { message, partial: Some(Box::new(report)) })
        }
    }
}

/// Tells the client why its test is refused, and ends our direction.
async fn refuse(w: &mut OwnedWriteHalf, why: &str) {
    let _ = proto::write_answer(w, proto::REFUSED, why).await;
    let _ = w.shutdown().await;
}

/// The limits a server puts on what a client may ask.
fn check(p: &Params) -> Result<(), String> {
    if p.bursts == 0 || p.bursts > 255 {
        return Err(format!("{} bursts per request (1 to 255)", p.bursts));
    }
    if p.response_bytes as usize + proto::RESPONSE_PREFIX > proto::MAX_FRAME as usize
        || p.ir_bytes as usize + proto::RESPONSE_PREFIX > proto::MAX_FRAME as usize
    {
        return Err("responses larger than 16 MiB".into());
    }
    if p.duration_s.is_some_and(|d| !(0.0..=86_400.0).contains(&d)) {
        return Err("a test longer than a day".into());
    }
    Ok(())
}

async fn serve(
    r: &mut OwnedReadHalf,
    w: &mut OwnedWriteHalf,
    p: &Params,
    progress: &Shared,
    t0: Instant,
    report: &mut Report,
) -> Result<(), String> {
    let io = |e: std::io::Error| format!("connection lost: {e}");
    if p.mode == Mode::Bulk && p.reverse {
        send_bulk(r, w, p, progress, t0).await?;
    } else {
        answer(r, w, p, progress).await?;
    }
    proto::write_frame(w, proto::END, &[]).await.map_err(io)?;
    w.flush().await.map_err(io)?;
    // The client's results, answered by ours.
    let header = tokio::time::timeout(EXCHANGE_TIMEOUT, proto::read_header(r))
        .await
        .map_err(|_| "the client did not send its results within 30 s".to_string())?;
    let len = match header.map_err(|e| e.to_string())? {
        Some((proto::RESULTS, len)) => len,
        Some((k, _)) => return Err(format!("protocol error: frame kind {k} after END")),
        None => return Err("the client left without its results".into()),
    };
    let mut buf = Vec::new();
    proto::read_into(r, len, &mut buf).await.map_err(io)?;
    let theirs: SideResults =
        serde_json::from_slice(&buf).map_err(|e| format!("protocol error: the client's results: {e}"))?;
    report.seconds = t0.elapsed().as_secs_f64();
    let mine = side_results(&report.side.scheduler, &lock(progress), r.stats(), &[], &[], t0);
    let json = serde_json::to_vec(&mine).map_err(|e| e.to_string())?;
    proto::write_frame(w, proto::RESULTS, &json).await.map_err(io)?;
    w.shutdown().await.map_err(io)?;
    report.peer = Some(theirs);
    // Until the client has everything (its own close ends the connection): a one-off server
    // exits next, and its results must not die with it.
    let _ = tokio::time::timeout(Duration::from_secs(5), w.closed()).await;
    Ok(())
}

/// Siri mode and bulk uploads: reads the client's frames, answers bursts, until its END.
async fn answer(r: &mut OwnedReadHalf, w: &mut OwnedWriteHalf, p: &Params, progress: &Shared) -> Result<(), String> {
    let io = |e: std::io::Error| format!("connection lost: {e}");
    let mut buf = Vec::new();
    let mut scratch = vec![0u8; CHUNK];
    loop {
        let Some((kind, len)) = proto::read_header(r).await.map_err(|e| e.to_string())? else {
            return Err("the client left before the end of the test".into());
        };
        match kind {
            proto::BURST if len as usize >= proto::BURST_PREFIX && p.mode == Mode::Siri => {
                proto::read_into(r, len, &mut buf).await.map_err(io)?;
                lock(progress).bytes_received += u64::from(len) + 5;
                let request = u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]);
                let (burst, last) = (buf[4], buf[5] != 0);
                let answer = if last {
                    Some(proto::response(proto::FINAL, request, burst, p.response_bytes as usize))
                } else if p.ir {
                    Some(proto::response(proto::IR, request, burst, p.ir_bytes as usize))
                } else {
                    None
                };
                if let Some(a) = answer {
                    w.write_all(&a).await.map_err(io)?;
                    w.flush().await.map_err(io)?;
                    let mut g = lock(progress);
                    g.bytes_sent += a.len() as u64;
                    g.answered += u32::from(last);
                }
            }
            proto::DATA if p.mode == Mode::Bulk => {
                proto::skip(r, u64::from(len), &mut scratch).await.map_err(io)?;
                lock(progress).bytes_received += u64::from(len);
            }
            proto::END => return Ok(()),
            k => return Err(format!("protocol error: frame kind {k} ({len} bytes) out of place")),
        }
    }
}

/// `-R`: sends until the time or the byte count is reached, then waits for the client's END
/// (which it may have sent long before).
async fn send_bulk(
    r: &mut OwnedReadHalf,
    w: &mut OwnedWriteHalf,
    p: &Params,
    progress: &Shared,
    t0: Instant,
) -> Result<(), String> {
    let io = |e: std::io::Error| format!("connection lost: {e}");
    let until = p.duration_s.map(|s| t0 + Duration::from_secs_f64(s));
    let mut left = p.bytes.unwrap_or(u64::MAX);
    let chunk = vec![0xa5u8; CHUNK];
    // One read of the client's next header lives across the whole loop and is only ever
    // polled, never dropped half-way, so no byte of the stream is lost.
    let next = proto::read_header(r);
    tokio::pin!(next);
    let mut got = None;
    while left > 0 && until.is_none_or(|u| Instant::now() < u) {
        let n = (left as usize).min(CHUNK);
        proto::write_frame(w, proto::DATA, &chunk[..n]).await.map_err(io)?;
        left -= n as u64;
        lock(progress).bytes_sent += n as u64;
        if got.is_none() {
            if let Ok(h) = tokio::time::timeout(Duration::ZERO, &mut next).await {
                // Anything but the client's END (a failure, a departure) stops the test.
                if !matches!(h, Ok(Some((proto::END, _)))) {
                    got = Some(h);
                    break;
                }
                got = Some(h);
            }
        }
    }
    let h = match got {
        Some(h) => h,
        None => tokio::time::timeout(EXCHANGE_TIMEOUT, &mut next)
            .await
            .map_err(|_| "the client did not end the test within 30 s".to_string())?,
    };
    match h.map_err(|e| e.to_string())? {
        Some((proto::END, _)) => Ok(()),
        Some((k, len)) => Err(format!("protocol error: frame kind {k} ({len} bytes) during -R")),
        None => Err("the client left before the end of the test".into()),
    }
}

/// This side's results: application bytes, the connection's subflows, the paths' counters
/// over the test (`start`/`end` snapshots; empty slices leave interfaces out).
fn side_results(
    scheduler: &str,
    g: &Progress,
    stats: Option<mpudp::ConnStats>,
    start: &[PathInfo],
    end: &[PathInfo],
    t0: Instant,
) -> SideResults {
    SideResults {
        version: crate::VERSION.to_string(),
        seconds: t0.elapsed().as_secs_f64(),
        bytes_sent: g.bytes_sent,
        bytes_received: g.bytes_received,
        answered: g.answered,
        scheduler: scheduler.to_string(),
        connection: stats.as_ref().map(report::ConnectionReport::from),
        interfaces: report::interfaces(start, end, t0),
    }
}

/// The interval reporter: a task that snapshots the counters every `ctx.interval`.
struct Ticker {
    task: Option<tokio::task::JoinHandle<()>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    out: Arc<Mutex<Vec<IntervalRecord>>>,
}

impl Ticker {
    async fn stop(mut self) -> Vec<IntervalRecord> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
        std::mem::take(&mut *self.out.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

fn spawn_intervals(ctx: &Context, t0: Instant, progress: Shared) -> Ticker {
    let out: Arc<Mutex<Vec<IntervalRecord>>> = Arc::default();
    if ctx.interval.is_zero() {
        return Ticker { task: None, stop: None, out };
    }
    let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel();
    let ctx = ctx.clone();
    let records = out.clone();
    let task = tokio::spawn(async move {
        let mut prev = IntervalState::take(&ctx, &progress, t0);
        if let Some(live) = &ctx.live {
            live.line(&report::interval_header(&prev.paths));
        }
        let mut next = tokio::time::Instant::from_std(t0) + ctx.interval;
        loop {
            let stopping = tokio::select! {
                _ = sleep_until(next) => false,
                _ = &mut stop_rx => true,
            };
            let cur = IntervalState::take(&ctx, &progress, t0);
            let rec = prev.diff(&cur);
            // A last interval shorter than a tenth of the period is folded away, as iperf3.
            if !stopping || rec.end - rec.start >= ctx.interval.as_secs_f64() / 10.0 {
                if let Some(live) = &ctx.live {
                    live.line(&report::interval_line(&rec));
                }
                records.lock().unwrap_or_else(|e| e.into_inner()).push(rec);
            }
            prev = cur;
            if stopping {
                return;
            }
            next += ctx.interval;
        }
    });
    Ticker { task: Some(task), stop: Some(stop_tx), out }
}

struct IntervalState {
    at: f64,
    sent: u64,
    received: u64,
    answered: u32,
    max_delay: Option<f64>,
    paths: Vec<PathInfo>,
}

impl IntervalState {
    fn take(ctx: &Context, progress: &Shared, t0: Instant) -> Self {
        let mut g = lock(progress);
        Self {
            at: t0.elapsed().as_secs_f64(),
            sent: g.bytes_sent,
            received: g.bytes_received,
            answered: g.answered,
            max_delay: g.interval_max_delay.take(),
            paths: (ctx.paths)(),
        }
    }

    fn diff(&self, cur: &Self) -> IntervalRecord {
        IntervalRecord {
            start: self.at,
            end: cur.at,
            bytes_sent: cur.sent - self.sent,
            bytes_received: cur.received - self.received,
            answered: cur.answered - self.answered,
            max_delay_ms: cur.max_delay,
            interfaces: report::interface_deltas(&self.paths, &cur.paths),
        }
    }
}
