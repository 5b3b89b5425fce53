//! Interval reports: a task that snapshots the application's and the paths' counters every
//! `Context::interval`, prints each interval line as it goes, and keeps the records.

use super::{lock, Shared};
use crate::context::Context;
use crate::report::{self, IntervalRecord};
use mpudp::PathInfo;
use std::sync::{Arc, Mutex};
use std::time::Instant;
use tokio::time::sleep_until;

/// The interval reporter: a task that snapshots the counters every `ctx.interval`.
pub(super) struct Ticker {
    task: Option<tokio::task::JoinHandle<()>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    out: Arc<Mutex<Vec<IntervalRecord>>>,
}

impl Ticker {
    pub(super) async fn stop(mut self) -> Vec<IntervalRecord> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
        std::mem::take(&mut *self.out.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

pub(super) fn spawn_intervals(ctx: &Context, t0: Instant, progress: Shared) -> Ticker {
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
