//! The connection's event log in qlog's streaming form (PROTOCOL.md §13): JSON-SEQ records
//! (RFC 7464: each record starts with RS, 0x1E, and ends with a newline), a header record and
//! then one event per record, with the main schema's `time`, `name` and `data`.
//!
//! Event names are those of draft-ietf-quic-qlog-quic-events-03, which qvis and quic-go read
//! (`transport:packet_sent`, `transport:packet_received`, `recovery:packet_lost`,
//! `recovery:metrics_updated`, `connectivity:connection_state_updated`), with the multipath
//! extension's `path_id` on every event that concerns a subflow (our subflow number). What
//! QUIC has no event for is ours, prefixed `mpudp:` (`subflow_updated`, `oracle_verdict`,
//! `fail_back`, `scheduler_pick`, `receive_idle_timer`); DSS mappings, DATA_ACKs, MP_IDLE,
//! joins and fast joins are frames of the packets that carry them.
//!
//! The log is text formatted as events happen into one buffer the driver takes
//! ([`Connection::take_qlog`]); no I/O, no clock (times are the `now` of the input). It holds
//! no key, HMAC, token or payload byte: frames are named with their numbers and lengths only.
//! Off (the default), a connection has no log and each event site costs one test of an
//! `Option`.

use super::events::{CloseReason, Event, Side};
use super::subflow::recovery::LossTrigger;
use super::subflow::FrameSet;
use crate::wire::{Frame, FrameList};
use crate::Time;
use core::fmt::Write as _;

/// Text a log holds before the driver takes it; beyond, events are counted and dropped.
const MAX_PENDING: usize = 16 << 20;

/// The kind of a packet's header (PROTOCOL.md §4), as its `packet_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PacketKind {
    /// A short header (qlog's `1RTT`).
    Short,
    /// The client's CONFIRM.
    Confirm,
    /// A JOIN (an MP_JOIN or a fast join's first flight).
    Join,
    /// A resuming client's EARLY packet (qlog's `0RTT`).
    Early,
}

impl PacketKind {
    fn name(self) -> &'static str {
        match self {
            PacketKind::Short => "1RTT",
            PacketKind::Confirm => "confirm",
            PacketKind::Join => "join",
            PacketKind::Early => "0RTT",
        }
    }
}

impl LossTrigger {
    fn name(self) -> &'static str {
        match self {
            LossTrigger::Reordering => "reordering_threshold",
            LossTrigger::Time => "time_threshold",
            LossTrigger::Timeout => "pto_expired",
        }
    }
}

/// What every packet event says of its packet: the subflow, the header's kind, the packet
/// number, the datagram's length.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PacketHead {
    pub subflow: u32,
    pub kind: PacketKind,
    pub pn: u64,
    pub len: usize,
}

/// The DSS a sent packet carried.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SentDss {
    /// `(dsn, length, data_fin, mp_idle)` of its mapping.
    pub map: Option<(u64, u32, bool, bool)>,
    /// The DATA_ACK.
    pub data_ack: Option<u64>,
    /// The data went in a FAST_JOIN_OUT.
    pub fast_join: bool,
}

/// A subflow's recovery metrics, logged when one changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Metrics {
    pub srtt: u64,
    pub min_rtt: u64,
    pub latest_rtt: u64,
    pub rttvar: u64,
    pub cwnd: u64,
    pub in_flight: u64,
}

/// One connection's log (see the module's documentation).
#[derive(Debug)]
pub(crate) struct Qlog {
    out: String,
    start: Time,
    dropped: u64,
    /// The metrics last logged, per subflow number.
    metrics: Vec<(u32, Metrics)>,
    last_pick: Option<u32>,
    /// The latest time logged: a driver may hand in an application's call at a later `now`
    /// than the rest of its round, and the log's times never go back (§13).
    last: Time,
}

impl Qlog {
    /// Bytes on the heap: the record itself (boxed), its text not yet taken, its metrics.
    pub(crate) fn heap_bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.out.capacity()
            + self.metrics.capacity() * std::mem::size_of::<(u32, Metrics)>()
    }
}

/// Names of the control frames of a [`FrameSet`], in its bits' order.
const FRAME_NAMES: [(FrameSet, &str); 18] = [
    (FrameSet::HS_DONE, "handshake_done"),
    (FrameSet::SYNACK, "mp_join_synack"),
    (FrameSet::JOIN_ACK, "mp_join_ack"),
    (FrameSet::PRIO, "mp_prio"),
    (FrameSet::RTO_REQ, "rto_request"),
    (FrameSet::RTO_VAL, "rto"),
    (FrameSet::PING, "ping"),
    (FrameSet::RESET, "subflow_reset"),
    (FrameSet::CHALLENGE, "path_challenge"),
    (FrameSet::RESPONSE, "path_response"),
    (FrameSet::JOIN, "mp_join"),
    (FrameSet::ADD_ADDR, "add_addr"),
    (FrameSet::ADDR_ECHO, "add_addr_echo"),
    (FrameSet::REMOVE_ADDR, "remove_addr"),
    (FrameSet::FASTCLOSE, "mp_fastclose"),
    (FrameSet::FJ_REPLY, "fast_join_reply"),
    (FrameSet::TICKET, "new_ticket"),
    (FrameSet::REMOVE_SUBFLOW, "remove_subflow"),
];

fn ms(us: u64) -> f64 {
    us as f64 / 1_000.0
}

impl Qlog {
    /// A log whose times count from `start`, with its header record.
    pub fn new(start: Time, side: Side) -> Self {
        let mut q = Self {
            out: String::with_capacity(4096),
            start,
            dropped: 0,
            metrics: Vec::new(),
            last_pick: None,
            last: start,
        };
        let vantage = if side == Side::Client { "client" } else { "server" };
        let _ = writeln!(
            q.out,
            "\x1e{{\"qlog_version\":\"0.3\",\"qlog_format\":\"JSON-SEQ\",\"title\":\"mpudp connection\",\
             \"trace\":{{\"vantage_point\":{{\"type\":\"{vantage}\"}},\"common_fields\":{{\"time_format\":\"relative\",\
             \"reference_time\":{:.3},\"protocol_type\":[\"MPUDP\"]}}}}}}",
            ms(start)
        );
        q
    }

    /// Events dropped because the driver did not take the log.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Appends the records logged since the last call to `out`.
    pub fn take(&mut self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.out.as_bytes());
        self.out.clear();
    }

    /// Opens a record: `"time"`, `"name"` and the start of `"data"`. False (and the event
    /// counted as dropped) when the log is full.
    fn begin(&mut self, now: Time, name: &str) -> bool {
        if self.out.len() >= MAX_PENDING {
            self.dropped += 1;
            return false;
        }
        self.last = self.last.max(now);
        self.out.push_str("\x1e{\"time\":");
        push_ms(&mut self.out, self.last - self.start);
        self.out.push_str(",\"name\":\"");
        self.out.push_str(name);
        self.out.push_str("\",\"data\":{");
        true
    }

    fn end(&mut self) {
        self.out.push_str("}}\n");
    }

    fn frame(&mut self, first: &mut bool, name: &str) {
        if !*first {
            self.out.push(',');
        }
        *first = false;
        self.out.push_str("{\"frame_type\":\"");
        self.out.push_str(name);
        self.out.push('"');
    }

    fn header(&mut self, h: PacketHead) {
        push_field(&mut self.out, "\"path_id\":", u64::from(h.subflow));
        self.out.push_str(",\"header\":{\"packet_type\":\"");
        self.out.push_str(h.kind.name());
        push_field(&mut self.out, "\",\"packet_number\":", h.pn);
        push_field(&mut self.out, "},\"raw\":{\"length\":", h.len as u64);
        self.out.push_str("},\"frames\":[");
    }

    /// `transport:packet_sent`: what a sealed packet carried.
    pub fn packet_sent(&mut self, now: Time, head: PacketHead, ctrl: FrameSet, ack: bool, dss: SentDss) {
        if !self.begin(now, "transport:packet_sent") {
            return;
        }
        self.header(head);
        let mut first = true;
        if ack {
            self.frame(&mut first, "ack");
            self.out.push('}');
        }
        for (bit, name) in FRAME_NAMES {
            if ctrl.intersects(bit) {
                self.frame(&mut first, name);
                self.out.push('}');
            }
        }
        if dss.map.is_some() || dss.data_ack.is_some() {
            self.frame(&mut first, if dss.fast_join { "fast_join_out" } else { "dss" });
            self.dss_fields(dss.map, dss.data_ack);
        }
        self.out.push(']');
        self.end();
    }

    fn dss_fields(&mut self, map: Option<(u64, u32, bool, bool)>, data_ack: Option<u64>) {
        if let Some((dsn, len, fin, idle)) = map {
            push_field(&mut self.out, ",\"data_sequence\":", dsn);
            push_field(&mut self.out, ",\"length\":", u64::from(len));
            if fin {
                self.out.push_str(",\"data_fin\":true");
            }
            if idle {
                self.out.push_str(",\"mp_idle\":true");
            }
        }
        if let Some(a) = data_ack {
            push_field(&mut self.out, ",\"data_ack\":", a);
        }
        self.out.push('}');
    }

    /// `transport:packet_received`: an authenticated packet's frames. `edsn`: the DSN the
    /// receiver expects, to place a short DSN (PROTOCOL.md §5.5).
    pub fn packet_received(&mut self, now: Time, head: PacketHead, frames: &FrameList<'_>, edsn: u64) {
        if !self.begin(now, "transport:packet_received") {
            return;
        }
        self.header(head);
        let mut first = true;
        for f in frames.iter() {
            match f {
                Frame::Padding { .. } => continue,
                Frame::Ack(a) => {
                    self.frame(&mut first, "ack");
                    push_field(&mut self.out, ",\"largest_acknowledged\":", a.largest);
                    self.out.push('}');
                }
                Frame::Dss(d) => {
                    self.frame(&mut first, "dss");
                    let map = d.mapping_near(edsn).map(|(dsn, data)| (dsn, data.len() as u32, d.fin, d.idle));
                    self.dss_fields(map, d.ack.map(|a| a.0));
                }
                Frame::FastJoinOut(j) => {
                    self.frame(&mut first, "fast_join_out");
                    self.dss_fields(Some((j.dsn, j.data.len() as u32, false, false)), None);
                }
                f => {
                    self.frame(&mut first, frame_name(&f));
                    self.out.push('}');
                }
            }
        }
        self.out.push(']');
        self.end();
    }

    /// `recovery:packet_lost`.
    pub fn packet_lost(&mut self, now: Time, sf: u32, pn: u64, trigger: LossTrigger) {
        if self.begin(now, "recovery:packet_lost") {
            let _ = write!(
                self.out,
                "\"path_id\":{sf},\"header\":{{\"packet_number\":{pn}}},\"trigger\":\"{}\"",
                trigger.name()
            );
            self.end();
        }
    }

    /// `recovery:metrics_updated` with the metrics of subflow `sf` that changed since its
    /// last one (all of them the first time).
    pub fn metrics(&mut self, now: Time, sf: u32, m: Metrics) {
        let k = self.metrics.iter().position(|(id, _)| *id == sf);
        let was = k.map(|k| self.metrics[k].1);
        if was == Some(m) || !self.begin(now, "recovery:metrics_updated") {
            return;
        }
        match k {
            Some(k) => self.metrics[k].1 = m,
            None => self.metrics.push((sf, m)),
        }
        let _ = write!(self.out, "\"path_id\":{sf}");
        let fields = [
            ("smoothed_rtt", m.srtt, was.map(|w| w.srtt), true),
            ("min_rtt", m.min_rtt, was.map(|w| w.min_rtt), true),
            ("latest_rtt", m.latest_rtt, was.map(|w| w.latest_rtt), true),
            ("rtt_variance", m.rttvar, was.map(|w| w.rttvar), true),
            ("congestion_window", m.cwnd, was.map(|w| w.cwnd), false),
            ("bytes_in_flight", m.in_flight, was.map(|w| w.in_flight), false),
        ];
        for (name, v, old, time) in fields {
            if old != Some(v) {
                self.out.push_str(",\"");
                self.out.push_str(name);
                self.out.push_str("\":");
                if time {
                    push_ms(&mut self.out, v);
                } else {
                    push_u64(&mut self.out, v);
                }
            }
        }
        self.end();
    }

    /// The subflow the scheduler picked for new data, when it differs from its last pick
    /// (`mpudp:scheduler_pick`; every packet's subflow is in its `packet_sent`).
    pub fn pick(&mut self, now: Time, sf: u32) {
        if self.last_pick != Some(sf) && self.begin(now, "mpudp:scheduler_pick") {
            self.last_pick = Some(sf);
            let _ = write!(self.out, "\"path_id\":{sf}");
            self.end();
        }
    }

    /// MultiMob's receive idle timer fired: the paths in use are declared bad.
    pub fn receive_idle_timer(&mut self, now: Time) {
        if self.begin(now, "mpudp:receive_idle_timer") {
            self.end();
        }
    }

    /// An application event, as the qlog event that says the same.
    pub fn event(&mut self, now: Time, e: &Event) {
        let name = match e {
            Event::Connected | Event::Closed { .. } => "connectivity:connection_state_updated",
            Event::Verdict { .. } => "mpudp:oracle_verdict",
            Event::FailBack => "mpudp:fail_back",
            Event::Readable
            | Event::Finished
            | Event::Forgotten
            | Event::AddressAnnounced { .. }
            | Event::TicketReceived => return,
            _ => "mpudp:subflow_updated",
        };
        if !self.begin(now, name) {
            return;
        }
        let _ = match *e {
            Event::Connected => write!(self.out, "\"new\":\"handshake_confirmed\""),
            Event::Closed { reason } => write!(self.out, "\"new\":\"closed\",\"reason\":\"{}\"", close_name(reason)),
            Event::Verdict { path, verdict } => {
                write!(self.out, "\"local_path\":{},\"verdict\":\"{verdict:?}\"", path.0)
            }
            Event::SubflowEstablished { id, path, backup } => write!(
                self.out,
                "\"path_id\":{id},\"new\":\"established\",\"local_path\":{},\"backup\":{backup}",
                path.0
            ),
            Event::SubflowFailed { id } => write!(self.out, "\"path_id\":{id},\"new\":\"potentially_failed\""),
            Event::SubflowRecovered { id } => write!(self.out, "\"path_id\":{id},\"new\":\"recovered\""),
            Event::SubflowClosed { id, reason } => {
                write!(self.out, "\"path_id\":{id},\"new\":\"closed\",\"reason\":{reason}")
            }
            Event::SubflowMigrated { id, .. } => write!(self.out, "\"path_id\":{id},\"new\":\"migrated\""),
            _ => Ok(()),
        };
        self.end();
    }
}

/// Appends `v` in decimal (the log's numbers, without the formatting machinery: a bulk
/// transfer logs a few hundred thousand of them a second).
fn push_u64(out: &mut String, mut v: u64) {
    let mut b = [0u8; 20];
    let mut i = b.len();
    loop {
        i -= 1;
        b[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.push_str(core::str::from_utf8(&b[i..]).unwrap_or("0"));
}

/// Appends microseconds as milliseconds with three decimals.
fn push_ms(out: &mut String, us: u64) {
    push_u64(out, us / 1_000);
    let r = us % 1_000;
    out.push('.');
    out.push(char::from(b'0' + (r / 100) as u8));
    out.push(char::from(b'0' + (r / 10 % 10) as u8));
    out.push(char::from(b'0' + (r % 10) as u8));
}

fn push_field(out: &mut String, key: &str, v: u64) {
    out.push_str(key);
    push_u64(out, v);
}

/// A received frame's `frame_type` (numbers, not contents: no HMAC or key is logged).
fn frame_name(f: &Frame<'_>) -> &'static str {
    match f {
        Frame::Padding { .. } => "padding",
        Frame::Ping => "ping",
        Frame::Ack(_) => "ack",
        Frame::PathChallenge(_) => "path_challenge",
        Frame::PathResponse(_) => "path_response",
        Frame::Dss(_) => "dss",
        Frame::MpJoin(_) => "mp_join",
        Frame::MpJoinSynAck(_) => "mp_join_synack",
        Frame::MpJoinAck { .. } => "mp_join_ack",
        Frame::FastJoinOut(_) => "fast_join_out",
        Frame::FastJoinIn(_) => "fast_join_in",
        Frame::FastJoinReply(_) => "fast_join_reply",
        Frame::AddAddr(_) => "add_addr",
        Frame::RemoveAddr(_) => "remove_addr",
        Frame::MpPrio { .. } => "mp_prio",
        Frame::FastClose { .. } => "mp_fastclose",
        Frame::SubflowReset { .. } => "subflow_reset",
        Frame::Rto { .. } => "rto",
        Frame::ResetToken(_) => "reset_token",
        Frame::TransportParams(_) => "transport_parameters",
        Frame::Cookie(_) => "cookie",
        Frame::HandshakeDone => "handshake_done",
        Frame::NewTicket(_) => "new_ticket",
        Frame::RemoveSubflow(_) => "remove_subflow",
        Frame::Extension { .. } => "unknown",
    }
}

/// A close reason's name in the log (its variant, without the details of `Display`).
fn close_name(r: CloseReason) -> &'static str {
    match r {
        CloseReason::Graceful => "graceful",
        CloseReason::Aborted => "aborted",
        CloseReason::PeerAborted => "peer_aborted",
        CloseReason::IdleTimeout => "idle_timeout",
        CloseReason::PeerUnresponsive { .. } => "peer_unresponsive",
        CloseReason::HandshakeTimeout => "handshake_timeout",
        CloseReason::ServerAuthFailed => "server_auth_failed",
        CloseReason::VersionMismatch => "version_mismatch",
        CloseReason::TokenCollision => "token_collision",
        CloseReason::NoSubflow => "no_subflow",
        CloseReason::Reset => "stateless_reset",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_the_formatter_would() {
        for v in [0, 7, 10, 999, 1_000, 1_234_567, u64::MAX] {
            let mut s = String::new();
            push_u64(&mut s, v);
            assert_eq!(s, v.to_string());
            let mut m = String::new();
            push_ms(&mut m, v);
            assert_eq!(m, format!("{}.{:03}", v / 1_000, v % 1_000));
        }
    }
}
