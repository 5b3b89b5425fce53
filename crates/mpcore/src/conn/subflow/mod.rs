//! One subflow, from its JOIN (or the first handshake) until its record is reclaimed: its
//! packet-number space each way, the ACKs it owes ([`AckState`]), its loss recovery
//! ([`recovery`]), its peer address's validation ([`Validation`]), its join ([`JoinState`]),
//! its timers and its close procedure. [`table`] holds a connection's subflows.

mod control;
mod data_ref;
mod fields;
mod frame_set;
mod joining;
mod life;
pub mod loss;
pub mod pmtu;
pub mod recovery;
pub mod table;

pub use data_ref::DataRef;
pub use frame_set::FrameSet;

use super::cc::Cc;
use super::timer_table::TimerTable;
use crate::ranges::RangeSet;
use crate::wire::Cid;
use crate::{Carrier, PathId, Time};
use recovery::{Recovery, Rtt};
use std::net::SocketAddr;

/// Where a subflow is in its life (RFC 8684 §3.2 for joins).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubflowState {
    /// We sent the JOIN and wait for the SYNACK.
    JoinSent,
    /// We sent the third packet (HMAC-A) and wait for its acknowledgement (the fourth).
    JoinAckSent,
    /// We answered a JOIN and wait for the third packet.
    JoinReceived,
    /// Data may flow.
    Established,
    /// Closed by a reset, REMOVE_ADDR, an idle timeout or a failed join. The record drains
    /// (answering late packets with a SUBFLOW_RESET) and is then reclaimed.
    Closed,
}

/// How a subflow was (or is being) joined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinKind {
    /// Subflow 0, or RFC 8684's four-packet MP_JOIN.
    Regular,
    /// We opened it with FAST_JOIN_OUT or FAST_JOIN_IN (§5.9, §5.10).
    FastInitiator,
    /// We accepted the peer's FAST_JOIN_OUT: the reply carries our DATA_ACK.
    FastOut,
    /// We accepted the peer's FAST_JOIN_IN: the reply carries the DSN we send from.
    FastIn,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
/// A subflow's counters.
pub struct SubflowCounters {
    /// Packets sent.
    pub packets_sent: u64,
    /// Their bytes.
    pub bytes_sent: u64,
    /// Packets received (authenticated).
    pub packets_received: u64,
    /// Their bytes.
    pub bytes_received: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// Data bytes sent again (after loss, on a probe, or as a reinjection).
    pub bytes_retransmitted: u64,
    /// Packets that carried data sent again.
    pub packets_retransmitted: u64,
    /// Data bytes first sent on another subflow and sent here too.
    pub bytes_reinjected: u64,
    /// Stream bytes sent (first sendings, retransmissions and reinjections).
    pub data_bytes_sent: u64,
    /// Retransmission timeouts.
    pub rto_count: u64,
    /// Tail loss probes sent.
    pub tlp_count: u64,
    /// Losses as MultiMob's oracle counts them: a tail loss probe marks a packet lost when it
    /// fires, and a packet then declared lost counts unless it is the first of those the probe
    /// covered (it was counted already). `packets_lost` plus `tlp_count` would count one lost
    /// tail twice.
    pub oracle_losses: u64,
    /// Stream bytes that arrived here already received: another subflow brought them first
    /// (a failover's copy, a reinjection, a redundant scheduler's), or a repair's second copy
    /// (PROTOCOL.md §7). The peer's bytes sent for nothing, as this end saw them arrive; on a
    /// failover's cellular subflow, what the hedge wasted.
    pub data_bytes_duplicate: u64,
}

/// The join's state: how it is made and the values its HMACs bind.
#[derive(Clone, Copy, Debug)]
pub struct JoinState {
    pub kind: JoinKind,
    /// R-A / R-B of RFC 8684 §3.2, ours and the peer's.
    pub nonce_local: u32,
    pub nonce_remote: u32,
    /// Responder of a fast join: the FAST_JOIN_REPLY rides in every packet until the peer
    /// acknowledges one, so that no packet of ours arrives before the peer can use it.
    pub reply_unacked: bool,
    /// Initiator of a fast join: its first JOIN has left, so the rest of the flight may
    /// follow in JOIN packets before the reply (PROTOCOL.md §5.9).
    pub first_sent: bool,
    /// The join's frames to send (`FrameSet::JOINING`).
    pending: FrameSet,
}

/// The peer address's validation and the anti-amplification limit (§10).
#[derive(Clone, Copy, Debug, Default)]
pub struct Validation {
    pub validated: bool,
    /// Bytes received from and sent to the address since it became the subflow's.
    pub amp_rx: u64,
    pub amp_tx: u64,
    /// PATH_CHALLENGE data we sent (NAT rebinding), and a PATH_RESPONSE we owe.
    pub challenge: Option<[u8; 8]>,
    pub response: Option<[u8; 8]>,
    /// Its frames to send (`FrameSet::VALIDATION`).
    pending: FrameSet,
}

impl Validation {
    /// The bytes we may still send to an unvalidated address (three times what it sent
    /// us), or `u64::MAX` once it is validated.
    pub fn room(&self) -> u64 {
        if self.validated {
            u64::MAX
        } else {
            (3 * self.amp_rx).saturating_sub(self.amp_tx)
        }
    }
}

/// A snapshot of one subflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubflowStats {
    /// The subflow's number.
    pub id: u32,
    /// The local path it runs on.
    pub path: PathId,
    /// The peer's address.
    pub remote: SocketAddr,
    /// UDP, or a TCP connection where the path's network drops UDP (PROTOCOL.md §4.11).
    pub carrier: Carrier,
    /// Where it is in its life.
    pub state: SubflowState,
    /// A backup subflow.
    pub backup: bool,
    /// Its RTO expired and no new acknowledgement came since.
    pub potentially_failed: bool,
    /// Smoothed RTT, µs.
    pub srtt_us: u64,
    /// RTT variation, µs.
    pub rttvar_us: u64,
    /// Retransmission timeout, µs.
    pub rto_us: u64,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Bytes in flight.
    pub in_flight: u64,
    /// The largest datagram its path is known to carry (path MTU discovery), bytes of UDP
    /// payload.
    pub max_datagram: usize,
    /// Its counters.
    pub counters: SubflowCounters,
}

/// What the receiving half owes the peer: the packet numbers received, and when to ACK them.
#[derive(Debug)]
pub struct AckState {
    pub received: RangeSet,
    pub largest: Option<u64>,
    /// When the largest packet number arrived (for the ACK delay).
    pub largest_at: Time,
    pub unacked_eliciting: u32,
    /// A packet arrived since the last ACK frame we sent: a data packet carries an ACK
    /// frame only then (a one-way sender does not repeat an unchanged one in every packet).
    pub news: bool,
    /// The latest time the next ACK may leave; `immediate`: it is due now.
    pub deadline: Option<Time>,
    pub immediate: bool,
}

impl AckState {
    fn new(now: Time) -> Self {
        Self {
            received: RangeSet::new(32),
            largest: None,
            largest_at: now,
            unacked_eliciting: 0,
            news: false,
            deadline: None,
            immediate: false,
        }
    }

    /// Whether an ACK frame should go out now.
    pub fn due(&self, now: Time) -> bool {
        self.immediate || self.deadline.is_some_and(|d| d <= now)
    }

    /// No ACK is owed any more (one was sent, or nothing was worth a packet).
    pub fn clear(&mut self) {
        self.immediate = false;
        self.deadline = None;
    }
}

/// The least time a subflow idle probe is given to be answered. A probe to a phone whose
/// cellular radio is idle waits for the phone's paging occasion (one per cycle: 1.28 s is
/// common in LTE, 2.56 s the longest) and then its promotion (0.26 s) before the phone hears
/// it; three RTOs of an idle subflow (600 ms at the least RTO) closed such a subflow while the
/// phone was still waking up (issue 32).
pub const IDLE_PROBE_MIN_WAIT: Time = 3_000_000;

/// The kinds of a subflow's timers (see `conn::timers`).
pub mod timer {
    /// The delayed ACK must leave.
    pub const ACK: usize = 0;
    /// A packet is declared lost by time.
    pub const LOSS: usize = 1;
    /// Tail loss probe or retransmission timeout.
    pub const RETRANSMIT: usize = 2;
    /// Nothing sent for the keep-alive interval: a PING.
    pub const KEEP_ALIVE: usize = 3;
    /// Server: nothing received for the subflow idle timeout while another subflow was heard.
    pub const IDLE: usize = 4;
    /// A closed subflow's drain is over: its record goes.
    pub const DRAIN: usize = 5;
    /// `multimob`: the tail loss probe went unanswered this long; the path is failed over.
    pub const TLP_CHECK: usize = 6;
    pub const COUNT: usize = 7;
}

/// What a subflow's timers depend on beyond the subflow.
#[derive(Clone, Copy, Debug)]
pub struct TimerContext {
    /// The peer's max_ack_delay.
    pub peer_max_ack_delay: u64,
    /// Keep-alive interval (0: none), applicable while the connection is open.
    pub keep_alive: u64,
    /// The subflow number keep-alives go on (one per connection).
    pub keep_alive_on: Option<u32>,
    /// `multimob` client during a failover: the interval of the probes each regular subflow
    /// gets (see `Subflow::timers`; 0: none).
    pub probe_bad: u64,
    /// The subflow idle timeout, for subflows quieter than the freshest one: a server's, and a
    /// `fullmesh`/`backup` client's.
    pub idle_timeout: Option<u64>,
    /// The client's idle timer waits twice as long on a subflow that is not potentially
    /// failed: a quiet healthy one is the server's to probe (the client hears the probe and
    /// waits again), so a live path is probed once per period, not twice; one the server
    /// forgot (its reset lost while the path was down) hears nothing and is probed, found
    /// dead, and joined again.
    pub idle_client: bool,
    /// When the connection last heard anything, on any of its subflows.
    pub freshest_rx: Time,
    /// The connection has data awaiting acknowledgement: a regular subflow whose RTT estimate
    /// is inflated and stale gets a PING, so that the estimate follows the path (see
    /// `Subflow::timers`).
    pub refresh_rtt: bool,
}

#[derive(Debug)]
pub struct Subflow {
    /// Subflow number (§2).
    id: u32,
    state: SubflowState,
    local_path: PathId,
    remote: SocketAddr,
    /// UDP, or a TCP connection on its path (§4.11): fixed when it opens.
    carrier: Carrier,
    local_addr_id: u8,
    remote_addr_id: u8,
    local_cid: Cid,
    remote_cid: Option<Cid>,
    /// Opened by this endpoint.
    local_opener: bool,
    backup: bool,
    join: JoinState,
    /// Opened by the path manager for a failover (closed again on fail-back).
    failover: bool,
    /// A client's join replacing a subflow of its path that went silent (PROTOCOL.md §7): given
    /// up unanswered, it is tried again, until the path answers or goes away.
    rejoin: bool,
    /// Counters already reported to the oracle: packets sent, lost (`oracle_losses`),
    /// retransmitted, received.
    reported: [u64; 4],
    rec: Recovery,
    acks: AckState,
    val: Validation,
    /// The subflow's own frames to send: PING, MP_PRIO, the RTO option, HANDSHAKE_DONE,
    /// SUBFLOW_RESET, MP_FASTCLOSE (see `control`).
    signals: FrameSet,
    /// The connection's address frames this subflow is to carry (`FrameSet::ADDRESSES`).
    carry: FrameSet,
    /// A copy of a segment the redundant scheduler put on this subflow too, or of a repair
    /// just sent here (`spare`).
    copy: Option<DataRef>,
    /// `copy` is a repair sent twice: not a retransmission of its own.
    spare: bool,
    /// The data the last repair sent twice here covered (start, end): a later piece of the
    /// same retransmission, which starts inside it, is not sent twice again.
    spared: (u64, u64),
    reset_reason: u8,
    /// Client: the stateless reset token the server gave for the CID we send to (§3.4).
    peer_reset: Option<[u8; crate::wire::packet::RESET_TOKEN_LEN]>,
    /// We closed it and told the peer: late packets are answered with the reset again.
    sent_reset: bool,
    /// When a packet last arrived on it (authenticated), for the subflow idle timeout.
    last_rx: Time,
    /// The server's idle probe went out at this time; the subflow closes if it stays silent.
    idle_probe: Option<Time>,
    /// `multimob`: when an unanswered tail loss probe fails the path over (see
    /// `Paths::on_retransmission_timeout`).
    tlp_check: Option<Time>,
    /// Closed: the record is reclaimed at this time.
    drain_until: Option<Time>,
    // For the schedulers and the oracle.
    last_original_rx: Time,
    /// When new stream data last arrived on this subflow (a DATA_ACK does not count).
    last_data_rx: Time,
    /// When this subflow last sent data (for the choice of the keep-alive subflow).
    last_data_tx: Time,
    was_bad: bool,
    high_rto: bool,
    last_activity: Time,
    peer_rto_ms: Option<u64>,
    counters: SubflowCounters,
    /// Path MTU discovery: the largest datagram the path carries.
    pmtu: pmtu::Pmtu,
}

impl SubflowState {
    /// Of the control frames `ctrl` a lost packet carried, those still worth sending in this
    /// state: the join frames only while the join they belong to is incomplete.
    pub fn frames_to_resend(self, ctrl: FrameSet) -> FrameSet {
        let again = ctrl.intersection(FrameSet::RETRANSMITTABLE);
        match self {
            SubflowState::JoinSent => again.intersection(FrameSet::JOIN | FrameSet::PRIO),
            SubflowState::JoinAckSent => again.without(FrameSet::SYNACK | FrameSet::JOIN),
            SubflowState::JoinReceived => again.without(FrameSet::JOIN | FrameSet::JOIN_ACK),
            SubflowState::Established => again.without(FrameSet::JOIN | FrameSet::JOIN_ACK | FrameSet::SYNACK),
            SubflowState::Closed => FrameSet::EMPTY,
        }
    }
}

impl Subflow {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: u32,
        state: SubflowState,
        local_path: PathId,
        remote: SocketAddr,
        local_cid: Cid,
        local_opener: bool,
        backup: bool,
        rtt: Rtt,
        cc: Cc,
        now: Time,
    ) -> Self {
        Self {
            id,
            state,
            local_path,
            remote,
            carrier: Carrier::Udp,
            local_addr_id: local_path.0,
            remote_addr_id: 0,
            local_cid,
            remote_cid: None,
            local_opener,
            backup,
            join: JoinState {
                kind: JoinKind::Regular,
                nonce_local: 0,
                nonce_remote: 0,
                reply_unacked: false,
                first_sent: false,
                pending: FrameSet::EMPTY,
            },
            failover: false,
            rejoin: false,
            reported: [0; 4],
            rec: Recovery::new(rtt, cc, now),
            acks: AckState::new(now),
            val: Validation::default(),
            signals: FrameSet::EMPTY,
            carry: FrameSet::EMPTY,
            copy: None,
            spare: false,
            spared: (0, 0),
            reset_reason: 0,
            peer_reset: None,
            sent_reset: false,
            last_rx: now,
            idle_probe: None,
            tlp_check: None,
            drain_until: None,
            last_original_rx: 0,
            last_data_rx: 0,
            last_data_tx: 0,
            was_bad: false,
            high_rto: false,
            last_activity: now,
            peer_rto_ms: None,
            counters: SubflowCounters::default(),
            pmtu: pmtu::Pmtu::new(crate::wire::packet::DEFAULT_MAX_DATAGRAM, 0, now),
        }
    }

    pub fn is_open(&self) -> bool {
        self.state != SubflowState::Closed
    }

    /// A snapshot for the application.
    pub fn stats(&self) -> SubflowStats {
        SubflowStats {
            id: self.id,
            path: self.local_path,
            remote: self.remote,
            carrier: self.carrier,
            state: self.state,
            backup: self.backup,
            potentially_failed: self.pf(),
            srtt_us: self.rec.rtt.srtt,
            rttvar_us: self.rec.rtt.rttvar,
            rto_us: self.rec.rtt.rto(),
            cwnd: self.rec.cc.cwnd(),
            in_flight: self.rec.in_flight,
            max_datagram: self.pmtu.current(),
            counters: self.counters,
        }
    }

    pub fn established(&self) -> bool {
        self.state == SubflowState::Established
    }

    /// A fast join we opened whose first JOIN left and has not timed out: data may follow
    /// it in JOIN packets, within the congestion window, before the reply (§5.9).
    pub fn fast_join_flight(&self) -> bool {
        self.fast_opening() && self.join.first_sent && self.rec.rto_backoff == 0 && !self.join_unsent()
    }

    /// Potentially failed: its retransmission timer expired and nothing new was acknowledged
    /// since (or an oracle said so).
    /// A regular subflow that works (established, not potentially failed): where a `multimob`
    /// client fails back to.
    pub fn fail_back_candidate(&self) -> bool {
        self.established() && !self.backup && !self.failover && !self.rec.pf
    }

    pub fn pf(&self) -> bool {
        self.rec.pf
    }

    /// Records a received packet number; false for a duplicate (replay). Acknowledges every
    /// second ack-eliciting packet, and at once one that arrives out of order (RFC 9000
    /// §13.2.1-2); otherwise within `max_ack_delay`.
    pub fn on_packet_received(&mut self, now: Time, pn: u64, ack_eliciting: bool, max_ack_delay: u64) -> bool {
        let a = &mut self.acks;
        if a.received.contains(pn) {
            return false;
        }
        a.received.insert(pn, pn + 1);
        let out_of_order = a.largest.is_some_and(|l| pn < l || pn > l + 1);
        if a.largest.is_none_or(|l| pn > l) {
            a.largest = Some(pn);
            a.largest_at = now;
        }
        a.news = true;
        self.last_rx = now;
        self.idle_probe = None;
        if ack_eliciting {
            a.unacked_eliciting += 1;
            if a.unacked_eliciting >= 2 || out_of_order {
                a.immediate = true;
            } else if a.deadline.is_none() {
                a.deadline = Some(now + max_ack_delay);
            }
        }
        true
    }

    /// An ACK frame was sent.
    pub fn on_ack_sent(&mut self) {
        self.acks.clear();
        self.acks.unacked_eliciting = 0;
        self.acks.news = false;
    }

    /// Closes the subflow: nothing more is sent on it but, if `tell_peer`, a SUBFLOW_RESET
    /// with `reason` (a MP_FASTCLOSE already pending stays). The record stays for a drain
    /// period of three retransmission timeouts, answering late packets with the reset, and
    /// is then reclaimed. What is still in flight is the caller's to take out
    /// ([`Subflow::drain_flight`]), after the close.
    pub fn close(&mut self, now: Time, reason: u8, tell_peer: bool) {
        self.state = SubflowState::Closed;
        self.reset_reason = reason;
        // Nothing pending goes any more but an abort's MP_FASTCLOSE.
        self.signals = self.signals.intersection(FrameSet::FASTCLOSE);
        self.join.pending = FrameSet::EMPTY;
        self.val.pending = FrameSet::EMPTY;
        self.carry = FrameSet::EMPTY;
        self.sent_reset = tell_peer && self.remote_cid.is_some();
        if self.sent_reset {
            self.signals |= FrameSet::RESET;
        }
        self.rec.probe = None;
        self.rec.loss_time = None;
        self.rec.recovery_grant = 0;
        self.copy = None;
        self.acks.clear();
        self.drain_until = Some(now.saturating_add(3 * self.rec.rtt.rto()));
    }

    /// A packet arrived on the closed subflow: if we closed it and told the peer, the reset
    /// goes again (the first may have been lost), unless the packet was a reset itself.
    pub fn on_packet_after_close(&mut self, carries_reset: bool) {
        if self.sent_reset && !carries_reset {
            self.signals |= FrameSet::RESET;
        }
    }

    /// The server's subflow idle timer fired (see [`TimerContext::idle_timeout`]): the first
    /// time, a PING probes the subflow; if nothing has come back three RTOs later (at least
    /// [`IDLE_PROBE_MIN_WAIT`]), `true`: the subflow is dead.
    pub fn on_idle_timer(&mut self, now: Time) -> bool {
        if self.idle_probe.is_some() {
            return true;
        }
        self.idle_probe = Some(now);
        self.ping();
        false
    }

    /// The deadline of each of this subflow's timers (see [`timer`]).
    pub fn timers(&self, cx: &TimerContext) -> TimerTable<{ timer::COUNT }> {
        let mut t = TimerTable::default();
        if !self.is_open() {
            t.set(timer::DRAIN, self.drain_until);
            return t;
        }
        if !self.acks.immediate {
            t.set(timer::ACK, self.acks.deadline);
        }
        t.set(timer::TLP_CHECK, self.tlp_check);
        t.set(timer::LOSS, self.rec.loss_time);
        t.set(timer::RETRANSMIT, self.rec.rto_deadline(cx.peer_max_ack_delay));
        if cx.keep_alive > 0 && cx.keep_alive_on == Some(self.id) {
            t.set(timer::KEEP_ALIVE, Some(self.last_activity.saturating_add(cx.keep_alive)));
        }
        // While failover subflows are open, every regular subflow is probed: a failed one so
        // that its return is seen within a fifth of the oracle's period (its retransmission
        // timer, backed off, would wait seconds), a flagged one so that the oracle sees it
        // carry packets again, a healthy one so that it fails back only after carrying probes
        // cleanly for the hold time, and so that its failing again (a flapping link) is seen
        // before data is sent to it.
        let regular = !self.backup && !self.failover;
        if cx.probe_bad > 0 && regular && self.established() {
            t.set_earliest(timer::KEEP_ALIVE, self.last_activity.saturating_add(cx.probe_bad));
        }
        // A regular subflow left unused since a bad spell inflated its RTT estimate: while the
        // connection sends, a PING every `RTT_STALE` of the subflow's silence until a sample
        // (which replaces the stale estimate, `Rtt::sample_at`) shows the path as it is. Idle
        // connections stay silent; a healthy path's estimate is never inflated.
        if cx.refresh_rtt && !self.backup && self.established() && !self.rec.pf && self.rec.rtt.inflated() {
            let quiet_since = self.rec.rtt.sampled_at.max(self.last_activity);
            t.set_earliest(timer::KEEP_ALIVE, quiet_since.saturating_add(recovery::RTT_STALE));
        }
        // Only a subflow quieter than another one of the connection: the last one heard is
        // left to the connection's idle timeout.
        // Never a backup subflow: its quiet is by design, and a probe every period would keep
        // a phone's cellular radio awake.
        let quieter = self.established() && !self.backup && self.last_rx < cx.freshest_rx;
        if let Some(idle) = cx.idle_timeout.filter(|_| quieter) {
            let idle = if cx.idle_client && !self.rec.pf { idle.saturating_mul(2) } else { idle };
            t.set(
                timer::IDLE,
                Some(match self.idle_probe {
                    // The probe had three RTOs to be answered, and at least what a phone's
                    // idle radio takes to hear it (`IDLE_PROBE_MIN_WAIT`).
                    Some(at) => at.saturating_add((3 * self.rec.rtt.rto()).max(IDLE_PROBE_MIN_WAIT)),
                    None => self.last_rx.saturating_add(idle),
                }),
            );
        }
        t
    }
}
