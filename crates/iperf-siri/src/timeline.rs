//! `--timeline FILE.svg` and `iperf-siri timeline LOG.sqlog FILE.svg`: a connection's life
//! drawn from its qlog (PROTOCOL.md §13). Time runs left to right; one lane per subflow with
//! the packets it sent (ticks up), received (ticks down) and lost (red crosses) and what
//! happened to it (established, potentially failed, recovered, closed); a lane of the
//! connection's decisions (the oracle's verdicts, fail-back, the receive idle timer); the
//! cellular radio's state by the LTE model (`oracle::radio`) over the cellular packets; and,
//! when the report is at hand, the requests: each burst's wait for its answer as a bar.
//!
//! The qlog counts from the connection's creation, the report from just before it (the
//! endpoint's sockets are opened in between): the two are drawn on one axis as if they
//! started together, which puts the bars within about a millisecond of the packets.

use crate::plot::{escape, nice, tick};
use crate::report::RequestRecord;
use oracle::radio::{Profile, Radio, RrcState};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;

const W: f64 = 1200.0;
const LEFT: f64 = 150.0;
const RIGHT: f64 = 20.0;
const LANE: f64 = 56.0;
const TOP: f64 = 40.0;

/// The records of a JSON-SEQ qlog (RFC 7464); the header first.
pub fn parse(text: &str) -> Result<Vec<Value>, String> {
    if !text.starts_with('\x1e') {
        return Err("not a qlog JSON-SEQ file (it does not start with a record separator)".into());
    }
    let mut out: Vec<Value> = Vec::new();
    let records: Vec<&str> = text.split('\x1e').map(str::trim).filter(|r| !r.is_empty()).collect();
    for (k, r) in records.iter().enumerate() {
        match serde_json::from_str(r) {
            Ok(v) => out.push(v),
            // The last record of a log still being written may be cut short.
            Err(_) if k + 1 == records.len() && k > 0 => {}
            Err(e) => return Err(format!("qlog record {k}: {e}")),
        }
    }
    match out.first() {
        Some(h) if h.get("qlog_format").and_then(Value::as_str) == Some("JSON-SEQ") => Ok(out),
        _ => Err("not a qlog JSON-SEQ file (its first record has no qlog_format \"JSON-SEQ\")".into()),
    }
}

/// What the picture shows besides the log.
#[derive(Debug, Default)]
pub struct Extras<'a> {
    pub title: String,
    /// The requests (times from the start of the test).
    pub requests: &'a [RequestRecord],
    /// The gap between a request's bursts, in seconds (a burst's answer is drawn from
    /// `start + k * gap`).
    pub burst_gap_s: f64,
    /// Local paths that are cellular, and the radio model to run over their packets.
    pub cellular: Vec<u64>,
    pub radio: Option<Profile>,
}

/// One subflow's lane.
#[derive(Default)]
struct Lane {
    local_path: Option<u64>,
    sent: Vec<f64>,
    received: Vec<f64>,
    lost: Vec<f64>,
    marks: Vec<(f64, String, &'static str)>,
}

fn event_time(e: &Value) -> Option<f64> {
    e.get("time")?.as_f64().map(|ms| ms / 1e3)
}

/// The SVG document for one connection's log.
pub fn svg(log: &[Value], x: &Extras<'_>) -> String {
    let mut lanes: BTreeMap<u64, Lane> = BTreeMap::new();
    let mut decisions: Vec<(f64, String)> = Vec::new();
    let mut end: f64 = 0.0;
    for e in log.iter().skip(1) {
        let Some(t) = event_time(e) else { continue };
        end = end.max(t);
        let name = e["name"].as_str().unwrap_or_default();
        let d = &e["data"];
        let lane = d["path_id"].as_u64().map(|p| lanes.entry(p).or_default());
        match (name, lane) {
            ("transport:packet_sent", Some(l)) => l.sent.push(t),
            ("transport:packet_received", Some(l)) => l.received.push(t),
            ("recovery:packet_lost", Some(l)) => l.lost.push(t),
            ("mpudp:subflow_updated", Some(l)) => {
                let new = d["new"].as_str().unwrap_or_default();
                if new == "established" {
                    l.local_path = d["local_path"].as_u64();
                }
                let colour = match new {
                    "established" | "recovered" => "#2ca02c",
                    "potentially_failed" => "#d62728",
                    _ => "#555",
                };
                l.marks.push((t, new.replace('_', " "), colour));
            }
            ("mpudp:oracle_verdict", _) => decisions.push((
                t,
                format!("path {}: {}", d["local_path"], d["verdict"].as_str().unwrap_or_default().to_lowercase()),
            )),
            ("mpudp:fail_back", _) => decisions.push((t, "fail-back".into())),
            ("mpudp:receive_idle_timer", _) => decisions.push((t, "receive idle timer".into())),
            ("connectivity:connection_state_updated", _) => {
                decisions.push((t, format!("connection {}", d["new"].as_str().unwrap_or_default().replace('_', " "))))
            }
            _ => {}
        }
    }
    for r in x.requests {
        let last = r.ir_delays_ms.len() as f64 * x.burst_gap_s;
        end = end.max(r.start_s + last + r.delay_ms.unwrap_or(0.0) / 1e3);
    }
    // The axis: ten steps or fewer of a round size, to just past the end.
    let step = nice(end.max(0.001) / 10.0);
    let tmax = (end / step).ceil().max(1.0) * step;
    let radio_lane = x.radio.is_some() && lanes.values().any(|l| l.local_path.is_some_and(|p| x.cellular.contains(&p)));
    let rows = lanes.len() + 1 + usize::from(radio_lane) + usize::from(!x.requests.is_empty());
    let h = TOP + rows as f64 * LANE + 40.0;
    let px = |t: f64| LEFT + t / tmax * (W - LEFT - RIGHT);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{h}" fill="white"/>"#);
    let _ =
        writeln!(s, r#"<text x="{}" y="18" text-anchor="middle" font-size="14">{}</text>"#, W / 2.0, escape(&x.title));
    // Time grid.
    for k in 0..=((tmax / step).round() as u32) {
        let t = step * f64::from(k);
        let _ = writeln!(
            s,
            r##"<line x1="{0:.1}" y1="{TOP}" x2="{0:.1}" y2="{1:.1}" stroke="#eee"/><text x="{0:.1}" y="{2:.1}" text-anchor="middle">{3} s</text>"##,
            px(t),
            h - 30.0,
            h - 16.0,
            tick(t)
        );
    }
    let mut row = 0usize;
    let mut lane_top = |s: &mut String, label: &str, class: &str| {
        let y = TOP + row as f64 * LANE;
        row += 1;
        let _ = writeln!(
            s,
            r##"<g class="{class}"><line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#999"/><text x="8" y="{:.1}">{}</text></g>"##,
            y + LANE / 2.0,
            W - RIGHT,
            y + LANE / 2.0,
            y + LANE / 2.0 + 4.0,
            escape(label)
        );
        y
    };
    for (id, l) in &lanes {
        let kind = match l.local_path {
            Some(p) if x.cellular.contains(&p) => format!(" (path {p}, cellular)"),
            Some(p) => format!(" (path {p})"),
            None => String::new(),
        };
        let y = lane_top(&mut s, &format!("subflow {id}{kind}"), "lane");
        let mid = y + LANE / 2.0;
        ticks(&mut s, &l.sent, px, mid - 12.0, mid, "#1f77b4", "sent");
        ticks(&mut s, &l.received, px, mid, mid + 12.0, "#2ca02c", "received");
        for &t in &l.lost {
            let _ = writeln!(
                s,
                r##"<path class="lost" d="M{0:.1} {1:.1}l6 6m0 -6l-6 6" stroke="#d62728" stroke-width="1.5"/>"##,
                px(t) - 3.0,
                mid + 14.0
            );
        }
        for (t, what, colour) in &l.marks {
            let _ = writeln!(
                s,
                r##"<g class="mark"><circle cx="{0:.1}" cy="{1:.1}" r="4" fill="{colour}"/><text x="{2:.1}" y="{3:.1}" fill="{colour}">{4}</text></g>"##,
                px(*t),
                y + 8.0,
                px(*t) + 6.0,
                y + 11.0,
                escape(what)
            );
        }
    }
    let y = lane_top(&mut s, "decisions", "lane");
    // Each label (the oracle's verdicts: "path N: bad") in the first of four rows where it does not run into the one before.
    let mut row_end = [f64::MIN; 4];
    for (t, what) in &decisions {
        let x0 = px(*t) + 3.0;
        let k = (0..4)
            .find(|&k| row_end[k] < x0)
            .unwrap_or_else(|| (0..4).min_by(|&a, &b| row_end[a].total_cmp(&row_end[b])).unwrap_or(0));
        row_end[k] = x0 + what.len() as f64 * 6.2;
        let _ = writeln!(
            s,
            r##"<g class="decision"><line x1="{0:.1}" y1="{1:.1}" x2="{0:.1}" y2="{2:.1}" stroke="#9467bd"/><text x="{3:.1}" y="{4:.1}" fill="#9467bd">{5}</text></g>"##,
            px(*t),
            y + 4.0,
            y + LANE - 4.0,
            x0,
            y + 12.0 + k as f64 * 12.0,
            escape(what)
        );
    }
    if let (true, Some(profile)) = (radio_lane, x.radio) {
        let y = lane_top(&mut s, &format!("radio ({})", profile.name), "lane");
        radio(&mut s, &lanes, x, profile, tmax, px, y);
    }
    if !x.requests.is_empty() {
        let y = lane_top(&mut s, "requests (answer waits)", "lane");
        for r in x.requests {
            let waits = r.ir_delays_ms.iter().copied().chain(std::iter::once(r.delay_ms));
            for (k, d) in waits.enumerate() {
                let t = r.start_s + k as f64 * x.burst_gap_s;
                let (w, colour) = match d {
                    Some(ms) if ms < 100.0 => (ms, "#2ca02c"),
                    Some(ms) if ms < 300.0 => (ms, "#ff7f0e"),
                    Some(ms) => (ms, "#d62728"),
                    None => (0.0, "#000"),
                };
                let _ = writeln!(
                    s,
                    r#"<rect class="burst" x="{:.1}" y="{:.1}" width="{:.1}" height="16" fill="{colour}"><title>request {} burst {}: {}</title></rect>"#,
                    px(t),
                    y + LANE / 2.0 - 8.0,
                    (px(t + w / 1e3) - px(t)).max(1.5),
                    r.index,
                    k + 1,
                    d.map_or("no answer".into(), |ms| format!("{ms:.1} ms"))
                );
            }
        }
    }
    s.push_str("</svg>\n");
    s
}

fn ticks(s: &mut String, times: &[f64], px: impl Fn(f64) -> f64, y1: f64, y2: f64, colour: &str, class: &str) {
    if times.is_empty() {
        return;
    }
    let _ = write!(s, r#"<path class="{class}" stroke="{colour}" stroke-opacity="0.6" d=""#);
    for &t in times {
        let _ = write!(s, "M{:.1} {y1:.1}V{y2:.1}", px(t));
    }
    s.push_str("\"/>\n");
}

/// The radio's state over time, by the model, from every cellular packet in the log.
fn radio(
    s: &mut String,
    lanes: &BTreeMap<u64, Lane>,
    x: &Extras<'_>,
    profile: Profile,
    tmax: f64,
    px: impl Fn(f64) -> f64,
    y: f64,
) {
    let mut packets: Vec<(u64, bool)> = lanes
        .values()
        .filter(|l| l.local_path.is_some_and(|p| x.cellular.contains(&p)))
        .flat_map(|l| l.sent.iter().map(|&t| (t, true)).chain(l.received.iter().map(|&t| (t, false))))
        .map(|(t, up)| ((t * 1e6) as u64, up))
        .collect();
    packets.sort_unstable();
    let mut r = Radio::new(profile, 0, 0);
    let mut k = 0;
    // The promotions: a packet that found the radio idle waited for one, which ended as it
    // crossed (the meter's view, as `oracle::radio::Radio::observe` accounts it).
    let mut wakes = Vec::new();
    let steps = 1_000u64;
    let mut last: Option<(RrcState, f64)> = None;
    let segment = |s: &mut String, state: RrcState, from: f64, to: f64| {
        let colour = match state {
            RrcState::Idle | RrcState::Inactive => return,
            RrcState::Promoting | RrcState::Resuming => "#ff7f0e",
            RrcState::Active => "#d62728",
            RrcState::Tail => "#f4a6a6",
        };
        let _ = writeln!(
            s,
            r#"<rect class="radio" x="{:.1}" y="{:.1}" width="{:.1}" height="14" fill="{colour}"><title>{state:?}</title></rect>"#,
            px(from),
            y + LANE / 2.0 - 7.0,
            (px(to) - px(from)).max(0.5)
        );
    };
    for i in 0..=steps {
        let t = tmax * i as f64 / steps as f64;
        let at = (t * 1e6) as u64;
        while k < packets.len() && packets[k].0 <= at {
            let found = r.observe(packets[k].0, packets[k].1, 1200);
            if matches!(found, RrcState::Idle | RrcState::Inactive) {
                let len = if found == RrcState::Idle { profile.promotion } else { profile.resume };
                let end = packets[k].0 as f64 / 1e6;
                wakes.push((end - len as f64 / 1e6, end, found));
            }
            k += 1;
        }
        let state = r.state_at(at);
        match last {
            Some((st, _)) if st == state => {}
            Some((st, from)) => {
                segment(s, st, from, t);
                last = Some((state, t));
            }
            None => last = Some((state, t)),
        }
    }
    if let Some((st, from)) = last {
        segment(s, st, from, tmax);
    }
    for (from, to, found) in wakes {
        let state = if found == RrcState::Idle { RrcState::Promoting } else { RrcState::Resuming };
        segment(s, state, from.max(0.0), to);
    }
    let e = r.energy((tmax * 1e6) as u64);
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="end" fill="#555">wakes {}, {:.2} J by the model</text>"##,
        W - RIGHT,
        y + 12.0,
        e.promotions,
        e.joules
    );
}

/// The newest `<side>-*.sqlog` in `dir` (the connection just measured).
pub fn newest_log(dir: &std::path::Path, side: &str) -> Result<std::path::PathBuf, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("qlog directory {}: {e}", dir.display()))?;
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&format!("{side}-")))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .max()
        .map(|(_, p)| p)
        .ok_or_else(|| format!("no {side} qlog in {}", dir.display()))
}

/// Draws the timeline of `report`'s connection from its log in `dir` into `svg_path`.
pub fn draw(
    dir: &std::path::Path,
    report: &crate::report::Report,
    radio: Option<Profile>,
    svg_path: &std::path::Path,
) -> Result<(), String> {
    let side = if report.role == crate::report::Role::Client { "client" } else { "server" };
    let log = newest_log(dir, side)?;
    let text = std::fs::read_to_string(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let records = parse(&text)?;
    let cellular = report
        .side
        .interfaces
        .iter()
        .enumerate()
        .filter(|(_, i)| i.kind == "cellular")
        .map(|(k, _)| k as u64)
        .collect();
    let extras = Extras {
        title: format!("{} ({side}): the connection's qlog", report.params.test_id.as_deref().unwrap_or("iperf-siri")),
        requests: &report.requests,
        burst_gap_s: report.params.burst_gap_ms / 1e3,
        cellular,
        radio,
    };
    std::fs::write(svg_path, svg(&records, &extras)).map_err(|e| format!("--timeline {}: {e}", svg_path.display()))
}
