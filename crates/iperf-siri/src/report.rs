//! What a test measured, and its two renderings: the human summary and `-J` JSON in iperf3's
//! layout (`start`, `intervals`, `end`) with a filled `requests` array.

use crate::context::Context;
use crate::proto::{Mode, Params};
use mpudp::{ConnStats, Iface, PathInfo};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Client,
    Server,
}

/// One request: when it started (seconds since the test began) and its delays: the final
/// response's (end of the last burst to its first byte) and each intermediate response's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    pub index: u32,
    pub start_s: f64,
    pub delay_ms: Option<f64>,
    pub ir_delays_ms: Vec<Option<f64>>,
}

impl RequestRecord {
    /// The longest wait for any response of the request, intermediate or final: where a
    /// failover between requests shows (the first burst after it waits longest).
    pub fn worst_ms(&self) -> Option<f64> {
        let fin = self.delay_ms?;
        Some(self.ir_delays_ms.iter().flatten().copied().fold(fin, f64::max))
    }
}

/// One interface's traffic during an interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IfDelta {
    pub name: String,
    pub packets_sent: u64,
    pub bytes_sent: u64,
    pub packets_received: u64,
    pub bytes_received: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IntervalRecord {
    pub start: f64,
    pub end: f64,
    /// Application bytes.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Final responses received (client) or sent (server) in the interval.
    pub answered: u32,
    pub max_delay_ms: Option<f64>,
    pub interfaces: Vec<IfDelta>,
}

/// The LTE model's estimate for a cellular interface (Huang et al., MobiSys 2012).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RadioReport {
    pub energy_j: f64,
    pub above_idle_j: f64,
    pub mean_power_mw: f64,
    pub promotions: u32,
}

/// One local interface over the test.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InterfaceReport {
    pub name: String,
    pub address: String,
    pub kind: String,
    pub backup: bool,
    pub up: bool,
    pub packets_sent: u64,
    pub bytes_sent: u64,
    pub packets_received: u64,
    pub bytes_received: u64,
    /// Seconds from the start of the test to the first datagram either way (0 when it came
    /// earlier: a server's endpoint outlives its tests).
    pub first_packet_s: Option<f64>,
    pub radio: Option<RadioReport>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubflowReport {
    pub id: u32,
    pub path: u8,
    pub remote: String,
    pub state: String,
    pub backup: bool,
    pub potentially_failed: bool,
    pub srtt_ms: f64,
    pub rto_ms: f64,
    pub cwnd: u64,
    pub packets_sent: u64,
    pub bytes_sent: u64,
    pub packets_received: u64,
    pub bytes_received: u64,
    pub packets_lost: u64,
    pub bytes_retransmitted: u64,
    pub bytes_reinjected: u64,
    pub rto_count: u64,
    pub tlp_count: u64,
    /// Stream bytes this side sent on the subflow (first copies, retransmissions, reinjections).
    #[serde(default)]
    pub data_bytes_sent: u64,
    /// Stream bytes that arrived on the subflow already received (another subflow, or a
    /// repair's copy, brought them first): the peer's bytes sent there for nothing.
    #[serde(default)]
    pub data_bytes_duplicate: u64,
    /// `udp`, or `tcp` where the path's network drops UDP (PROTOCOL.md §4.11).
    #[serde(default = "udp")]
    pub carrier: String,
}

fn udp() -> String {
    "udp".into()
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConnectionReport {
    pub reinjections: u64,
    pub bytes_reinjected: u64,
    pub reassembly_refused: u64,
    /// Client: the local path (interface index) the first handshake came through when its
    /// first interface left the INITIAL unanswered (PROTOCOL.md §4.10: UDP blocked there).
    #[serde(default)]
    pub handshake_via_path: Option<u8>,
    pub subflows: Vec<SubflowReport>,
}

impl From<&ConnStats> for ConnectionReport {
    fn from(s: &ConnStats) -> Self {
        Self {
            reinjections: s.counters.reinjections,
            bytes_reinjected: s.counters.bytes_reinjected,
            reassembly_refused: s.counters.reassembly_refused,
            handshake_via_path: (s.counters.handshakes_elsewhere > 0)
                .then(|| s.subflows.iter().find(|f| f.id == 0).map(|f| f.path.0))
                .flatten(),
            subflows: s
                .subflows
                .iter()
                .map(|f| SubflowReport {
                    carrier: format!("{:?}", f.carrier).to_lowercase(),
                    id: f.id,
                    path: f.path.0,
                    remote: f.remote.to_string(),
                    state: format!("{:?}", f.state).to_lowercase(),
                    backup: f.backup,
                    potentially_failed: f.potentially_failed,
                    srtt_ms: f.srtt_us as f64 / 1e3,
                    rto_ms: f.rto_us as f64 / 1e3,
                    cwnd: f.cwnd,
                    packets_sent: f.counters.packets_sent,
                    bytes_sent: f.counters.bytes_sent,
                    packets_received: f.counters.packets_received,
                    bytes_received: f.counters.bytes_received,
                    packets_lost: f.counters.packets_lost,
                    bytes_retransmitted: f.counters.bytes_retransmitted,
                    bytes_reinjected: f.counters.bytes_reinjected,
                    rto_count: f.counters.rto_count,
                    tlp_count: f.counters.tlp_count,
                    data_bytes_sent: f.counters.data_bytes_sent,
                    data_bytes_duplicate: f.counters.data_bytes_duplicate,
                })
                .collect(),
        }
    }
}

/// One side's results, as exchanged at the end of a test.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SideResults {
    pub version: String,
    pub seconds: f64,
    /// Application bytes (frames included).
    pub bytes_sent: u64,
    pub bytes_received: u64,
    /// Final responses received (client) or sent (server).
    pub answered: u32,
    pub scheduler: String,
    pub connection: Option<ConnectionReport>,
    pub interfaces: Vec<InterfaceReport>,
}

/// Everything one side knows at the end of a test.
#[derive(Clone, Debug)]
pub struct Report {
    pub role: Role,
    pub params: Params,
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub timestamp: SystemTime,
    /// The test's length.
    pub seconds: f64,
    pub peer_version: Option<String>,
    pub intervals: Vec<IntervalRecord>,
    pub requests: Vec<RequestRecord>,
    pub side: SideResults,
    pub peer: Option<SideResults>,
    pub error: Option<String>,
    pub verbose: bool,
    /// The connection's events (subflows, verdicts, fail-back), for `-J`.
    pub events: Vec<crate::events::EventRecord>,
}

impl Report {
    pub fn new(role: Role, params: Params, ctx: &Context, timestamp: SystemTime) -> Self {
        Self {
            role,
            params,
            local: ctx.local,
            remote: ctx.remote,
            timestamp,
            seconds: 0.0,
            peer_version: None,
            intervals: Vec::new(),
            requests: Vec::new(),
            side: SideResults { scheduler: ctx.scheduler.clone(), ..SideResults::default() },
            peer: None,
            error: None,
            events: Vec::new(),
            verbose: ctx.verbose,
        }
    }

    /// The delays of the answered requests, in ms.
    pub fn delays(&self) -> Vec<f64> {
        self.requests.iter().filter_map(|r| r.delay_ms).collect()
    }

    pub fn delay_stats(&self) -> Option<DelayStats> {
        DelayStats::of(&self.delays())
    }

    /// Application bytes sent by the sending side and received by the other: client to
    /// server, or server to client with `-R`.
    pub fn transfer(&self) -> (u64, u64) {
        let (client, server) = match self.role {
            Role::Client => (Some(&self.side), self.peer.as_ref()),
            Role::Server => (self.peer.as_ref(), Some(&self.side)),
        };
        let (from, to) =
            if self.params.mode == Mode::Bulk && self.params.reverse { (server, client) } else { (client, server) };
        (from.map_or(0, |s| s.bytes_sent), to.map_or(0, |s| s.bytes_received))
    }

    /// The first cellular interface's report.
    pub fn cellular(&self) -> Option<&InterfaceReport> {
        self.side.interfaces.iter().find(|i| i.radio.is_some())
    }

    /// On the first cellular interface: this side's subflows there, the stream bytes they
    /// sent (0 for a backup that carried only its join and keep-alives), and those they
    /// received already received (the peer's bytes sent there for nothing: a failover's copies
    /// that WiFi delivered first, a repair's second copy).
    pub fn cellular_subflows(&self) -> Option<(usize, u64, u64)> {
        let on = self.cellular_side_subflows()?;
        Some(on.fold((0, 0, 0), |(n, b, d), f| (n + 1, b + f.data_bytes_sent, d + f.data_bytes_duplicate)))
    }

    /// Stream bytes sent over the first cellular interface for nothing, both ways: those this
    /// side's subflows there received already received, and those the peer's subflows of the
    /// same numbers did (when the peer reported its connection; both ends number a subflow
    /// alike, whatever NAT rewrote its address).
    pub fn cellular_wasted(&self) -> Option<u64> {
        let mine: Vec<&SubflowReport> = self.cellular_side_subflows()?.collect();
        let theirs = self.peer.as_ref().and_then(|p| p.connection.as_ref()).map_or(0, |c| {
            c.subflows.iter().filter(|f| mine.iter().any(|m| m.id == f.id)).map(|f| f.data_bytes_duplicate).sum()
        });
        Some(mine.iter().map(|f| f.data_bytes_duplicate).sum::<u64>() + theirs)
    }

    /// This side's subflows on the first cellular interface.
    fn cellular_side_subflows(&self) -> Option<impl Iterator<Item = &SubflowReport> + '_> {
        let path = self.side.interfaces.iter().position(|i| i.radio.is_some())?;
        Some(self.side.connection.as_ref()?.subflows.iter().filter(move |f| usize::from(f.path) == path))
    }
}

/// Percentiles by the nearest-rank method.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DelayStats {
    pub count: usize,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

impl DelayStats {
    pub fn of(values: &[f64]) -> Option<Self> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let rank = |p: f64| v[((p / 100.0 * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
        Some(Self {
            count: v.len(),
            p50: rank(50.0),
            p90: rank(90.0),
            p99: rank(99.0),
            max: v[v.len() - 1],
            mean: v.iter().sum::<f64>() / v.len() as f64,
        })
    }
}

fn path_name(p: &PathInfo) -> String {
    p.device.clone().unwrap_or_else(|| p.addr.ip().to_string())
}

fn kind_name(k: Iface) -> &'static str {
    match k {
        Iface::Wifi => "wifi",
        Iface::Cellular => "cellular",
        Iface::Wired => "wired",
        Iface::Other => "other",
    }
}

/// Interfaces over a test: counters between the `start` and `end` snapshots (a path absent
/// from `start` counts from zero), first packets relative to `t0`, radio energy as the
/// driver measured it since the endpoint started.
pub fn interfaces(start: &[PathInfo], end: &[PathInfo], t0: Instant) -> Vec<InterfaceReport> {
    end.iter()
        .enumerate()
        .map(|(k, p)| {
            let base = start.get(k).map(|s| s.io).unwrap_or_default();
            InterfaceReport {
                name: path_name(p),
                address: p.addr.to_string(),
                kind: kind_name(p.kind).into(),
                backup: p.backup,
                up: p.up,
                packets_sent: p.io.datagrams_sent - base.datagrams_sent,
                bytes_sent: p.io.bytes_sent - base.bytes_sent,
                packets_received: p.io.datagrams_received - base.datagrams_received,
                bytes_received: p.io.bytes_received - base.bytes_received,
                first_packet_s: p.first_packet.map(|f| f.saturating_duration_since(t0).as_secs_f64()),
                radio: p.radio.map(|e| RadioReport {
                    energy_j: e.joules,
                    above_idle_j: e.above_idle_joules,
                    mean_power_mw: e.mean_mw,
                    promotions: e.promotions,
                }),
            }
        })
        .collect()
}

pub fn interface_deltas(prev: &[PathInfo], cur: &[PathInfo]) -> Vec<IfDelta> {
    cur.iter()
        .enumerate()
        .map(|(k, p)| {
            let b = prev.get(k).map(|s| s.io).unwrap_or_default();
            IfDelta {
                name: path_name(p),
                packets_sent: p.io.datagrams_sent - b.datagrams_sent,
                bytes_sent: p.io.bytes_sent - b.bytes_sent,
                packets_received: p.io.datagrams_received - b.datagrams_received,
                bytes_received: p.io.bytes_received - b.bytes_received,
            }
        })
        .collect()
}

/// iperf3's units: KBytes, MBytes (powers of 1024) for transfers.
pub fn bytes(n: u64) -> String {
    let n = n as f64;
    if n >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} GBytes", n / (1024.0 * 1024.0 * 1024.0))
    } else if n >= 1024.0 * 1024.0 {
        format!("{:.2} MBytes", n / (1024.0 * 1024.0))
    } else if n >= 1024.0 {
        format!("{:.2} KBytes", n / 1024.0)
    } else {
        format!("{n:.0} Bytes")
    }
}

/// iperf3's units: bits per second in powers of 1000.
pub fn rate(bytes: u64, secs: f64) -> String {
    let bps = if secs > 0.0 { bytes as f64 * 8.0 / secs } else { 0.0 };
    if bps >= 1e9 {
        format!("{:.2} Gbits/sec", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{:.2} Mbits/sec", bps / 1e6)
    } else if bps >= 1e3 {
        format!("{:.2} Kbits/sec", bps / 1e3)
    } else {
        format!("{bps:.0} bits/sec")
    }
}

pub fn interval_header(paths: &[PathInfo]) -> String {
    let mut s =
        format!("[ ID] {:<18} {:>14} {:>14} {:>9} {:>10}", "Interval", "Sent", "Received", "Answered", "Max delay");
    for p in paths {
        let _ = write!(s, "  {:>22}", format!("{} pkts out/in", path_name(p)));
    }
    s
}

pub fn interval_line(r: &IntervalRecord) -> String {
    let mut s = format!(
        "[  5] {:>6.2}-{:<6.2} sec {:>14} {:>14} {:>9} {:>10}",
        r.start,
        r.end,
        bytes(r.bytes_sent),
        bytes(r.bytes_received),
        r.answered,
        r.max_delay_ms.map_or("-".into(), |d| format!("{d:.1} ms"))
    );
    for i in &r.interfaces {
        let _ = write!(s, "  {:>22}", format!("{}/{}", i.packets_sent, i.packets_received));
    }
    s
}

fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |d| format!("{d:.1}"))
}

/// The opening lines (human output), printed before the test runs.
pub fn start_lines(role: Role, p: &Params, local: SocketAddr, remote: SocketAddr, peer_version: &str) -> String {
    let mut s = String::new();
    let _ = match role {
        Role::Client => writeln!(
            s,
            "[  5] local {} port {} connected to {} port {} ({peer_version})",
            local.ip(),
            local.port(),
            remote.ip(),
            remote.port()
        ),
        Role::Server => {
            writeln!(s, "Accepted connection from {}, port {} ({peer_version})", remote.ip(), remote.port())
        }
    };
    match p.mode {
        Mode::Siri => {
            let burst = match p.burst_bytes {
                Some(b) => format!("{b} bytes in writes of {}..{}", p.write_min, p.write_max),
                None => format!("{} writes of {}..{} bytes", p.writes, p.write_min, p.write_max),
            };
            let n = p.requests.map_or_else(|| "requests".to_string(), |n| format!("{n} requests"));
            let t = p.duration_s.map_or(String::new(), |t| format!(" for up to {t} s"));
            let ir = if p.ir {
                format!("{} B intermediate responses", p.ir_bytes)
            } else {
                "no intermediate responses".into()
            };
            let _ = writeln!(
                s,
                "      siri mode: {n}{t} of {} bursts ({burst}, {} ms apart), {} ms wait; {} B final response, {ir}",
                p.bursts, p.burst_gap_ms, p.wait_ms, p.response_bytes
            );
        }
        Mode::Bulk => {
            let what = match (p.bytes, p.duration_s) {
                (Some(b), _) => bytes(b),
                (None, Some(t)) => format!("{t} s"),
                (None, None) => "-".into(),
            };
            let dir = if p.reverse { "server to client (-R)" } else { "client to server" };
            let _ = writeln!(s, "      bulk mode: {what}, {dir}");
        }
    }
    let subflows = if p.subflows.is_empty() { "default route".to_string() } else { p.subflows.join(", ") };
    let _ = write!(
        s,
        "      client: subflows {subflows}; scheduler {}, path manager {}, fast join {}",
        p.scheduler,
        p.path_manager,
        if p.fast_join { "on" } else { "off" }
    );
    if let Some(id) = &p.test_id {
        let _ = write!(s, "; test id {id}");
    }
    s
}

/// The human summary printed at the end.
pub fn summary(r: &Report) -> String {
    let mut s = String::from("- - - - - - - - - - - - - - - - - - - - - - - - -\n");
    let secs = r.seconds;
    match r.params.mode {
        Mode::Siri => {
            if r.role == Role::Client {
                let _ = writeln!(s, "Request  Start (s)  Delay (ms)  Intermediate responses (ms)");
                for q in &r.requests {
                    let irs: Vec<String> = q.ir_delays_ms.iter().map(|d| ms(*d)).collect();
                    let _ =
                        writeln!(s, "{:>7}  {:>9.3}  {:>10}  {}", q.index, q.start_s, ms(q.delay_ms), irs.join(" "));
                }
                let sent = r.requests.len();
                match r.delay_stats() {
                    Some(d) => {
                        let _ = writeln!(
                            s,
                            "Delay (ms): p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1}  mean {:.1}   ({} of {sent} requests answered)",
                            d.p50, d.p90, d.p99, d.max, d.mean, d.count
                        );
                    }
                    None => {
                        let _ = writeln!(s, "Delay: no request answered ({sent} sent)");
                    }
                }
            } else {
                let _ = writeln!(s, "Responses sent: {} final", r.side.answered);
            }
        }
        Mode::Bulk => {
            let (sent, got) = r.transfer();
            let _ = writeln!(s, "[ ID] Interval           Transfer        Bitrate");
            let _ = writeln!(s, "[  5]   0.00-{secs:<6.2} sec  {:>14}  {:>16}  sender", bytes(sent), rate(sent, secs));
            let _ = writeln!(s, "[  5]   0.00-{secs:<6.2} sec  {:>14}  {:>16}  receiver", bytes(got), rate(got, secs));
        }
    }
    let _ = writeln!(
        s,
        "{:<16} {:<9} {:>11} {:>14} {:>11} {:>14} {:>13}",
        "Interface", "Kind", "Packets out", "Bytes out", "Packets in", "Bytes in", "First packet"
    );
    for i in &r.side.interfaces {
        let _ = writeln!(
            s,
            "{:<16} {:<9} {:>11} {:>14} {:>11} {:>14} {:>13}",
            i.name,
            i.kind,
            i.packets_sent,
            bytes(i.bytes_sent),
            i.packets_received,
            bytes(i.bytes_received),
            i.first_packet_s.map_or("-".into(), |t| format!("{t:.3} s"))
        );
    }
    let name = |k: usize| r.side.interfaces.get(k).map_or(format!("path {k}"), |i| i.name.clone());
    if let Some(c) = r.side.connection.as_ref() {
        if let Some(p) = c.handshake_via_path {
            let tcp = c.subflows.iter().any(|f| f.id == 0 && f.carrier == "tcp");
            let _ = writeln!(
                s,
                "Handshake: connected through {}{}: UDP got no answer on the first interface (blocked or lost there)",
                name(usize::from(p)),
                if tcp { " over TCP" } else { "" }
            );
        }
        let mut tcp: Vec<String> =
            c.subflows.iter().filter(|f| f.carrier == "tcp").map(|f| name(usize::from(f.path))).collect();
        tcp.dedup();
        if !tcp.is_empty() {
            let _ = writeln!(s, "Over TCP (UDP dropped there): {}", tcp.join(", "));
        }
    }
    for i in r.side.interfaces.iter().filter(|i| i.radio.is_some()) {
        let e = i.radio.as_ref().expect("filtered");
        let first = i.first_packet_s.map_or("never used".into(), |t| format!("first packet at {t:.3} s"));
        let _ = writeln!(
            s,
            "Cellular energy ({}): {:.2} J, mean power {:.0} mW over {:.1} s, {} promotion{} ({first}; LTE model of Huang et al. 2012)",
            i.name,
            e.energy_j,
            e.mean_power_mw,
            secs,
            e.promotions,
            if e.promotions == 1 { "" } else { "s" }
        );
        if let Some((n, data, twice)) = r.cellular_subflows() {
            let what = if data == 0 { "no data: joins and keep-alives only" } else { "data" };
            let _ = writeln!(
                s,
                "Cellular path: {} packets out, {} in; {n} subflow{}, {data} stream bytes sent ({what}), \
                 {twice} received that had arrived already",
                i.packets_sent,
                i.packets_received,
                if n == 1 { "" } else { "s" }
            );
        }
    }
    if r.verbose {
        for (who, side) in [("this side", Some(&r.side)), ("peer", r.peer.as_ref())] {
            let Some(c) = side.and_then(|x| x.connection.as_ref()) else { continue };
            let _ = writeln!(
                s,
                "Subflows ({who}): {} reinjections, {} bytes reinjected",
                c.reinjections, c.bytes_reinjected
            );
            for f in &c.subflows {
                let _ = writeln!(
                    s,
                    "  #{} path {} -> {} {}{}{} srtt {:.1} ms rto {:.0} ms cwnd {} | {} pkts out, {} in, {} lost, {} B retransmitted, {} RTOs, {} TLPs",
                    f.id,
                    f.path,
                    f.remote,
                    f.state,
                    if f.backup { " backup" } else { "" },
                    if f.potentially_failed { " pf" } else { "" },
                    f.srtt_ms,
                    f.rto_ms,
                    f.cwnd,
                    f.packets_sent,
                    f.packets_received,
                    f.packets_lost,
                    f.bytes_retransmitted,
                    f.rto_count,
                    f.tlp_count
                );
            }
        }
    }
    if let Some(p) = &r.peer {
        let who = if r.role == Role::Client { "Server" } else { "Client" };
        let _ = writeln!(
            s,
            "{who} ({}): {} sent, {} received{}",
            p.version,
            bytes(p.bytes_sent),
            bytes(p.bytes_received),
            if p.scheduler.is_empty() { String::new() } else { format!(", scheduler {}", p.scheduler) }
        );
    }
    if let Some(e) = &r.error {
        let _ = writeln!(s, "iperf-siri: error - {e}");
    } else {
        let _ = writeln!(s, "\niperf-siri Done.");
    }
    s
}

fn sum(start: f64, end: f64, bytes: u64, sender: bool) -> Value {
    let secs = end - start;
    json!({
        "start": start, "end": end, "seconds": secs, "bytes": bytes,
        "bits_per_second": if secs > 0.0 { bytes as f64 * 8.0 / secs } else { 0.0 },
        "sender": sender,
    })
}

/// `-J`: iperf3's layout (`start`, `intervals`, `end`, `error` when the test failed) plus
/// `requests`, every request's delay and intermediate-response delays.
pub fn json(r: &Report) -> Value {
    let p = &r.params;
    let ts = r.timestamp.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let connected = json!([{
        "socket": 5,
        "local_host": r.local.ip().to_string(), "local_port": r.local.port(),
        "remote_host": r.remote.ip().to_string(), "remote_port": r.remote.port(),
    }]);
    let mut start = json!({
        "connected": connected,
        "version": crate::VERSION,
        "protocol_version": p.protocol,
        "system_info": system_info(),
        "timestamp": { "timesecs": ts },
        "test_start": {
            "protocol": "mpudp",
            "mode": p.mode,
            "num_streams": 1,
            "reverse": u8::from(p.reverse),
            "duration": p.duration_s.unwrap_or(0.0),
            "bytes": p.bytes.unwrap_or(0),
            "requests": p.requests,
            "bursts": p.bursts,
            "writes": p.writes,
            "write_min": p.write_min,
            "write_max": p.write_max,
            "burst_bytes": p.burst_bytes,
            "burst_gap_ms": p.burst_gap_ms,
            "wait_ms": p.wait_ms,
            "response_bytes": p.response_bytes,
            "ir_bytes": p.ir_bytes,
            "intermediate_responses": p.ir,
            "seed": p.seed,
        },
        "multipath": {
            "subflows": p.subflows,
            "scheduler": p.scheduler,
            "path_manager": p.path_manager,
            "fast_join": p.fast_join,
        },
        "test_id": p.test_id,
    });
    if r.role == Role::Client {
        start["connecting_to"] = json!({ "host": r.remote.ip().to_string(), "port": r.remote.port() });
    } else {
        start["accepted_connection"] = json!({ "host": r.remote.ip().to_string(), "port": r.remote.port() });
    }
    let intervals: Vec<Value> = r
        .intervals
        .iter()
        .map(|i| {
            let sender = r.role == Role::Client;
            let mut s = sum(i.start, i.end, if sender { i.bytes_sent } else { i.bytes_received }, sender);
            s["bytes_sent"] = json!(i.bytes_sent);
            s["bytes_received"] = json!(i.bytes_received);
            s["requests_answered"] = json!(i.answered);
            s["max_delay_ms"] = json!(i.max_delay_ms);
            let mut stream = s.clone();
            stream["socket"] = json!(5);
            json!({ "streams": [stream], "sum": s, "interfaces": i.interfaces })
        })
        .collect();
    let (sent, received) = r.transfer();
    let delay = r.delay_stats();
    let mut end = json!({
        "sum_sent": sum(0.0, r.seconds, sent, true),
        "sum_received": sum(0.0, r.seconds, received, false),
        "delay": {
            "requests_sent": r.requests.len(),
            "requests_answered": delay.map_or(0, |d| d.count),
            "p50_ms": delay.map(|d| d.p50),
            "p90_ms": delay.map(|d| d.p90),
            "p99_ms": delay.map(|d| d.p99),
            "max_ms": delay.map(|d| d.max),
            "mean_ms": delay.map(|d| d.mean),
        },
        "interfaces": r.side.interfaces,
        "connection": r.side.connection,
    });
    if let Some(c) = r.cellular() {
        let e = c.radio.as_ref().expect("a cellular report has a radio");
        let (subflows, data, twice) =
            r.cellular_subflows().map_or((None, None, None), |(n, b, d)| (Some(n), Some(b), Some(d)));
        end["cellular"] = json!({
            "interface": c.name,
            "first_packet_s": c.first_packet_s,
            "packets": c.packets_sent + c.packets_received,
            "packets_sent": c.packets_sent,
            "packets_received": c.packets_received,
            "subflows": subflows,
            "data_bytes_sent": data,
            "data_bytes_received_twice": twice,
            "energy_j": e.energy_j,
            "above_idle_j": e.above_idle_j,
            "mean_power_mw": e.mean_power_mw,
            "promotions": e.promotions,
            "model": "LTE, Huang et al. MobiSys 2012",
        });
    }
    let peer_key = if r.role == Role::Client { "server_output" } else { "client_output" };
    end[peer_key] = json!(r.peer);
    let mut v = json!({
        "start": start,
        "intervals": intervals,
        "requests": r.requests,
        "events": crate::events::json(&r.events),
        "end": end,
    });
    if let Some(e) = &r.error {
        v["error"] = json!(e);
    }
    v
}

fn system_info() -> String {
    let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_string()).unwrap_or_default();
    format!(
        "{} {} {}",
        read("/proc/sys/kernel/ostype"),
        read("/proc/sys/kernel/hostname"),
        read("/proc/sys/kernel/osrelease")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        let d = DelayStats::of(&v).expect("values");
        assert_eq!((d.p50, d.p90, d.p99, d.max, d.count), (50.0, 90.0, 99.0, 100.0, 100));
        assert!((d.mean - 50.5).abs() < 1e-9);
        let one = DelayStats::of(&[7.0]).expect("values");
        assert_eq!((one.p50, one.p99, one.max), (7.0, 7.0, 7.0));
        let few = DelayStats::of(&[30.0, 10.0, 20.0]).expect("values");
        assert_eq!((few.p50, few.p90), (20.0, 30.0));
        assert_eq!(DelayStats::of(&[]), None);
    }

    #[test]
    fn units_follow_iperf3() {
        assert_eq!(bytes(512), "512 Bytes");
        assert_eq!(bytes(2048), "2.00 KBytes");
        assert_eq!(bytes(3 << 20), "3.00 MBytes");
        assert_eq!(rate(125_000_000, 1.0), "1.00 Gbits/sec");
        assert_eq!(rate(1_250_000, 10.0), "1.00 Mbits/sec");
    }
}
