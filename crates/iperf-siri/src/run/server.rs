//! The server's side of a test: the HELLO and its checks, the answers to each burst (or the
//! bulk data of `-R`), then END and the results both ways.

use super::intervals::spawn_intervals;
use super::{lock, side_results, Failure, Shared, CHUNK, EXCHANGE_TIMEOUT, HELLO_TIMEOUT, LIVENESS_MARGIN};
use crate::context::Context;
use crate::proto::{self, Mode, Params, ProtoError};
use crate::report::{self, Report, Role, SideResults};
use crate::slots::TestActivity;
use mpudp::{MpStream, OwnedReadHalf, OwnedWriteHalf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use tokio::io::AsyncWriteExt;

/// Runs the server's side of a test on an accepted stream.
pub async fn server(stream: MpStream, ctx: Context, version: &str) -> Result<Report, Failure> {
    let (mut r, mut w) = stream.into_split();
    // A connection that holds the one-test server without asking for a test is let go soon.
    let params = match tokio::time::timeout(HELLO_TIMEOUT, proto::read_hello(&mut r)).await {
        Err(_) => {
            return Err(Failure::new(format!(
                "the client connected but sent no test request within {} s: dropped",
                HELLO_TIMEOUT.as_secs()
            )))
        }
        Ok(Err(e @ ProtoError::Version { .. })) => {
            refuse(&mut r, &mut w, &e.to_string()).await;
            return Err(e.into());
        }
        Ok(Err(e)) => return Err(e.into()),
        Ok(Ok(p)) => p,
    };
    // The protocol's limits, the same the client checked (a client of another build may not),
    // and this server's bound on a declared silence: a client may not hold a slot for an
    // hour with a `--wait` of an hour (issue 52).
    let declared = Duration::from_secs_f64(params.burst_gap_ms.max(params.wait_ms).max(0.0) / 1e3);
    let checked = params.validate().and_then(|()| {
        if params.mode == Mode::Siri && declared > ctx.max_silence {
            return Err(format!(
                "its workload is silent for up to {:.1} s (--burst-gap, --wait), more than this server allows ({:.0} s, --max-silence)",
                declared.as_secs_f64(),
                ctx.max_silence.as_secs_f64()
            ));
        }
        Ok(())
    });
    if let Err(why) = checked {
        refuse(&mut r, &mut w, &why).await;
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
    let outcome = serve(&mut r, &mut w, &params, &progress, t0, &mut report, ctx.activity.as_deref()).await;
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
async fn refuse(r: &mut OwnedReadHalf, w: &mut OwnedWriteHalf, why: &str) {
    let _ = proto::write_answer(w, proto::REFUSED, why).await;
    let _ = w.shutdown().await;
    linger(r).await;
}

/// Reads what the client still sends until it closes (at most 3 s): a stream dropped with
/// unread bytes resets the connection, which could overtake the answer just written.
pub(crate) async fn linger(r: &mut OwnedReadHalf) {
    let mut sink = [0u8; 4096];
    let drain = async {
        while let Ok(n) = tokio::io::AsyncReadExt::read(r, &mut sink).await {
            if n == 0 {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(3), drain).await;
}

async fn serve(
    r: &mut OwnedReadHalf,
    w: &mut OwnedWriteHalf,
    p: &Params,
    progress: &Shared,
    t0: Instant,
    report: &mut Report,
    activity: Option<&TestActivity>,
) -> Result<(), String> {
    let io = |e: std::io::Error| format!("connection lost: {e}");
    let sent = if p.mode == Mode::Bulk && p.reverse {
        send_bulk(r, w, p, progress, t0, activity).await
    } else {
        answer(r, w, p, progress, activity).await
    };
    if let Err(why) = sent {
        // Told to the client, which may still be there (another took its slot).
        let _ = proto::write_frame(w, proto::STOP, why.as_bytes()).await;
        let _ = w.shutdown().await;
        return Err(why);
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

/// Why a wait for the client's next frame ended without it.
enum Quiet {
    /// Silent for this long, in the time the server ran.
    Silent(Duration),
    /// The test was ended for a client that waited for its slot.
    Evicted,
}

/// Steps of the silence count (see `within`).
const STEP: Duration = Duration::from_millis(500);

/// Polls `fut` until it completes, the client has been silent for `bound` of the time this
/// process ran, or the test is ended for another client. The silence is counted in steps;
/// a step that took far longer than asked (the process was stopped: SIGSTOP, a suspended
/// machine, a debugger) counts as twice the step at most, so a server frozen for seconds
/// does not blame its client for them (issue 52: "the client sent nothing for 4.0 s" right
/// after a 5 s SIGSTOP). `fut` is polled in place, never dropped half-way.
async fn within<F: std::future::Future>(
    bound: Duration,
    fut: F,
    activity: Option<&TestActivity>,
) -> Result<F::Output, Quiet> {
    tokio::pin!(fut);
    let evicted = async {
        match activity {
            Some(a) => a.evicted().await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(evicted);
    let mut silent = Duration::ZERO;
    loop {
        let t = Instant::now();
        tokio::select! {
            out = &mut fut => return Ok(out),
            () = &mut evicted => return Err(Quiet::Evicted),
            () = tokio::time::sleep(STEP.min(bound.saturating_sub(silent))) => {}
        }
        silent += t.elapsed().min(2 * STEP);
        if silent >= bound {
            return Err(Quiet::Silent(silent));
        }
    }
}

/// What the client is told when its test is ended for another.
fn evicted(activity: Option<&TestActivity>) -> String {
    let idle = activity.map_or(0.0, |a| a.silent_for().as_secs_f64());
    format!(
        "the test was ended after {idle:.1} s without a frame from the client, for another client that waited for a slot (--max-tests)"
    )
}

/// Siri mode and bulk uploads: reads the client's frames, answers bursts, until its END.
async fn answer(
    r: &mut OwnedReadHalf,
    w: &mut OwnedWriteHalf,
    p: &Params,
    progress: &Shared,
    activity: Option<&TestActivity>,
) -> Result<(), String> {
    let io = |e: std::io::Error| format!("connection lost: {e}");
    let mut buf = Vec::new();
    let mut scratch = vec![0u8; CHUNK];
    // The client is silent at most for a burst gap or the user's wait (and the answer's trip
    // before it): beyond that and a margin, it is gone (killed, or its paths are), and the
    // test's slot is freed rather than held until the transport's idle timeout.
    let quiet = match p.mode {
        Mode::Siri => Duration::from_secs_f64(p.burst_gap_ms.max(p.wait_ms) / 1e3),
        Mode::Bulk => Duration::ZERO,
    };
    let bound = quiet + LIVENESS_MARGIN;
    loop {
        let header = within(bound, proto::read_header(r), activity).await.map_err(|q| match q {
            Quiet::Silent(s) => format!(
                "the client sent nothing for {:.1} s (its workload is silent for at most {:.1} s): it is gone",
                s.as_secs_f64(),
                quiet.as_secs_f64()
            ),
            Quiet::Evicted => evicted(activity),
        })?;
        if let Some(a) = activity {
            a.heard();
        }
        let Some((kind, len)) = header.map_err(|e| e.to_string())? else {
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
    activity: Option<&TestActivity>,
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
        // The client is silent by design here; its window opening is its activity.
        if let Some(a) = activity {
            a.heard();
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 52: a server frozen for 3 s (its thread blocked, as by SIGSTOP) while it waits
    /// up to 2 s for its client does not count the freeze as the client's silence; a plain
    /// timeout fired at the thaw.
    #[tokio::test(flavor = "current_thread")]
    async fn a_frozen_server_counts_only_the_time_it_ran() {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            std::thread::sleep(Duration::from_secs(3));
            tokio::time::sleep(Duration::from_millis(300)).await;
            let _ = tx.send(());
        });
        let t = Instant::now();
        let got = within(Duration::from_secs(2), rx, None).await;
        assert!(matches!(got, Ok(Ok(()))), "the frame came after the freeze");
        assert!(t.elapsed() > Duration::from_secs(3));
        // Unfrozen, the bound holds.
        let never = std::future::pending::<()>();
        let t = Instant::now();
        assert!(matches!(within(Duration::from_secs(1), never, None).await, Err(Quiet::Silent(_))));
        assert!(t.elapsed() < Duration::from_millis(1_500), "{:?}", t.elapsed());
    }

    #[tokio::test]
    async fn a_test_ended_for_another_client_stops_waiting_at_once() {
        let a = TestActivity::new();
        let mut slots = crate::slots::Slots::default();
        let s = slots.take("10.0.0.1".parse().unwrap(), 1).unwrap();
        let wait = within(Duration::from_secs(60), std::future::pending::<()>(), Some(&s.activity));
        tokio::time::sleep(crate::slots::EVICT_AFTER).await;
        assert!(slots.take("10.1.0.1".parse().unwrap(), 1).is_some());
        let t = Instant::now();
        assert!(matches!(wait.await, Err(Quiet::Evicted)));
        assert!(t.elapsed() < Duration::from_secs(1));
        assert!(evicted(Some(&a)).contains("for another client"));
    }
}
