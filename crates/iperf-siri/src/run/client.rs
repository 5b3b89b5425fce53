//! The client's side of a test: the workload (Siri-like requests or bulk), a reader that
//! stamps each response's arrival, then END and the results both ways.

use super::intervals::spawn_intervals;
use super::{lock, side_results, Failure, Shared, CHUNK, EXCHANGE_TIMEOUT};
use crate::context::Context;
use crate::proto::{self, Mode, Params, ProtoError};
use crate::report::{self, Report, RequestRecord, Role, SideResults};
use linkemu::Rng;
use mpudp::{MpStream, OwnedReadHalf, OwnedWriteHalf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, watch};
use tokio::time::sleep_until;

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
    let server_version = read_answer(&mut r, protocol).await?;
    after_hello(r, w, params, server_version, ctx, answered).await
}

/// The server's answer to the test request.
pub(crate) async fn read_answer(r: &mut OwnedReadHalf, protocol: u16) -> Result<String, Failure> {
    Ok(tokio::time::timeout(EXCHANGE_TIMEOUT, proto::read_answer(r, protocol))
        .await
        .map_err(|_| Failure::new("the server accepted the connection but did not answer the test request"))??)
}

/// The test, once the server took its request.
pub(crate) async fn after_hello(
    r: OwnedReadHalf,
    mut w: OwnedWriteHalf,
    params: Params,
    server_version: String,
    ctx: Context,
    answered: Option<watch::Sender<u32>>,
) -> Result<Report, Failure> {
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

/// How often a client in its wait between requests asks whether the server is still there:
/// a PING and its ACK each second on the primary path.
const PROBE_EVERY: Duration = Duration::from_secs(1);

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
                self.wait(Instant::now() + wait).await?;
            }
        }
        Ok(())
    }

    /// The user's wait between requests, until `until`: the reader's events are handled, and
    /// each `PROBE_EVERY` the transport is asked whether the server is still there
    /// (`probe_peer`), so that a server that died in the wait is noticed within the peer
    /// timeout, as during a request; idle, the connection would learn of it only at its idle
    /// timeout (28 s, issue 52).
    async fn wait(&mut self, until: Instant) -> Result<(), String> {
        let mut next = Instant::now() + PROBE_EVERY;
        while next < until {
            self.pump_until(next).await?;
            self.w.probe_peer();
            next += PROBE_EVERY;
        }
        self.pump_until(until).await
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
            proto::STOP if len <= proto::MAX_STOP => {
                proto::read_into(r, len, buf).await?;
                Ev::Failed(format!("the server ended the test: {}", String::from_utf8_lossy(buf)))
            }
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
