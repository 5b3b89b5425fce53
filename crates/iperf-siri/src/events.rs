//! The connection's events (`MpStream::events`) as iperf-siri reports them: a line each under
//! `-V` as they happen, and the `events` array of `-J` (time, kind, subflow, path, detail).

use crate::out::Out;
use mpudp::{ConnEvent, Event, Events};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// One event, as reported.
#[derive(Clone, Debug, PartialEq)]
pub struct EventRecord {
    /// Seconds since the test started.
    pub t: f64,
    pub kind: &'static str,
    pub subflow: Option<u32>,
    pub path: Option<u8>,
    /// What else the event says (a close reason, a verdict, an address).
    pub detail: Option<String>,
}

impl EventRecord {
    fn of(e: &ConnEvent, started: Instant) -> Self {
        let detail = match e.event {
            Event::SubflowEstablished { backup, .. } => backup.then(|| "backup".to_string()),
            Event::SubflowClosed { reason, .. } => Some(format!("reason {reason}")),
            Event::SubflowMigrated { remote, .. } => Some(remote.to_string()),
            Event::AddressAnnounced { addr, .. } => Some(addr.to_string()),
            Event::Verdict { verdict, .. } => Some(format!("{verdict:?}").to_lowercase()),
            Event::Closed { reason } => Some(format!("{reason:?}")),
            _ => None,
        };
        Self {
            t: e.at.saturating_duration_since(started).as_secs_f64(),
            kind: e.kind(),
            subflow: e.subflow(),
            path: e.path.map(|p| p.0),
            detail,
        }
    }

    /// The `-V` line.
    pub fn line(&self) -> String {
        let mut s = format!("[{:8.3} s] {}", self.t, self.kind.replace('_', " "));
        if let Some(id) = self.subflow {
            s += &format!(", subflow {id}");
        }
        if let Some(p) = self.path {
            s += &format!(", path {p}");
        }
        if let Some(d) = &self.detail {
            s += &format!(" ({d})");
        }
        s
    }
}

/// The events collected so far, shared with the task that reads them.
#[derive(Clone, Debug, Default)]
pub struct Collected(Arc<Mutex<Vec<EventRecord>>>);

impl Collected {
    pub fn snapshot(&self) -> Vec<EventRecord> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// Reads `events` in a task until the connection closes, printing each under `-V` (`live`).
pub fn collect(mut events: Events, started: Instant, live: Option<Out>) -> Collected {
    let collected = Collected::default();
    let sink = collected.clone();
    tokio::spawn(async move {
        while let Some(e) = events.next().await {
            let r = EventRecord::of(&e, started);
            if let Some(out) = &live {
                out.line(&r.line());
            }
            sink.0.lock().unwrap_or_else(|e| e.into_inner()).push(r);
        }
    });
    collected
}

/// The `-J` array.
pub fn json(events: &[EventRecord]) -> Value {
    Value::Array(
        events
            .iter()
            .map(|e| {
                json!({
                    "time": (e.t * 1e6).round() / 1e6,
                    "kind": e.kind,
                    "subflow": e.subflow,
                    "path": e.path,
                    "detail": e.detail,
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_and_a_json_entry_per_event() {
        let t0 = Instant::now();
        let e = ConnEvent {
            at: t0 + std::time::Duration::from_millis(1500),
            event: Event::SubflowFailed { id: 0 },
            path: Some(mpudp::PathId(0)),
        };
        let r = EventRecord::of(&e, t0);
        assert_eq!(r.line(), "[   1.500 s] subflow failed, subflow 0, path 0");
        let j = json(&[r]);
        assert_eq!(j[0]["kind"], "subflow_failed");
        assert_eq!(j[0]["path"], 0);
        assert_eq!(j[0]["time"], 1.5);
    }
}
