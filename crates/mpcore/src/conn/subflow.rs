//! One subflow: its packet-number space in each direction, ACK ranges, RTT estimation
//! (RFC 6298), tail loss probe (RFC 8985), loss detection, the potentially-failed state,
//! congestion control and anti-amplification.

use super::cc::Cc;
use crate::ranges::RangeSet;
use crate::wire::Cid;
use crate::{PathId, Time};
use std::collections::VecDeque;
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
    /// Closed by a reset, REMOVE_ADDR, or a failed join; kept only for its statistics.
    Closed,
}

/// Control frames a packet carries, tracked so that a lost one is sent again.
pub mod ctrl {
    pub const HS_DONE: u16 = 1 << 0;
    pub const SYNACK: u16 = 1 << 1;
    pub const JOIN_ACK: u16 = 1 << 2;
    pub const PRIO: u16 = 1 << 3;
    pub const RTO_REQ: u16 = 1 << 4;
    pub const RTO_VAL: u16 = 1 << 5;
    pub const PING: u16 = 1 << 6;
    pub const RESET: u16 = 1 << 7;
    pub const CHALLENGE: u16 = 1 << 8;
    pub const RESPONSE: u16 = 1 << 9;
    pub const JOIN: u16 = 1 << 10;
    pub const ADD_ADDR: u16 = 1 << 11;
    pub const ADDR_ECHO: u16 = 1 << 12;
    pub const REMOVE_ADDR: u16 = 1 << 13;
    pub const FASTCLOSE: u16 = 1 << 14;
    /// Send the FAST_JOIN_REPLY now (it also rides in every packet until acknowledged).
    pub const FJ_REPLY: u16 = 1 << 15;
    /// Frames that are sent again when the packet carrying them is lost.
    pub const RETRANSMITTABLE: u16 =
        HS_DONE | SYNACK | JOIN_ACK | PRIO | RTO_REQ | RTO_VAL | JOIN | ADD_ADDR | ADDR_ECHO | REMOVE_ADDR | CHALLENGE;
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

/// A range of the stream carried by a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataRef {
    /// Offset in the stream (see `conn::dsn`).
    pub off: u64,
    pub len: u32,
    pub fin: bool,
}

#[derive(Clone, Copy, Debug)]
pub struct SentPacket {
    pub pn: u64,
    pub time: Time,
    pub size: u32,
    pub ack_eliciting: bool,
    pub data: Option<DataRef>,
    pub ctrl: u16,
}

/// Why a probe is due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// Tail loss probe (RFC 8985 §7): one packet, new data if any, else the last segment.
    Tail,
    /// Retransmission timeout: one packet with the oldest unacknowledged data.
    Rto,
}

/// RFC 6298 §2 estimator (G, the clock granularity, taken as 1 ms).
#[derive(Clone, Copy, Debug)]
pub struct Rtt {
    pub srtt: u64,
    pub rttvar: u64,
    pub latest: u64,
    pub min: u64,
    pub has_sample: bool,
    initial_rto: u64,
    min_rto: u64,
    max_rto: u64,
}

const GRANULARITY_US: u64 = 1_000;

impl Rtt {
    pub fn new(initial_rto: u64, min_rto: u64, max_rto: u64) -> Self {
        Self { srtt: 0, rttvar: 0, latest: 0, min: u64::MAX, has_sample: false, initial_rto, min_rto, max_rto }
    }

    /// RFC 6298 §2.2/§2.3, with the ACK delay removed as RFC 9002 §5.3 does when that does
    /// not go below the minimum RTT.
    pub fn update(&mut self, sample: u64, ack_delay: u64) {
        self.latest = sample;
        self.min = self.min.min(sample);
        let adjusted = if sample >= self.min + ack_delay { sample - ack_delay } else { sample };
        if !self.has_sample {
            self.srtt = adjusted;
            self.rttvar = adjusted / 2;
            self.has_sample = true;
        } else {
            let err = self.srtt.abs_diff(adjusted);
            // RTTVAR <- (1 - beta) * RTTVAR + beta * |SRTT - R'|, beta = 1/4
            self.rttvar = (3 * self.rttvar + err) / 4;
            // SRTT <- (1 - alpha) * SRTT + alpha * R', alpha = 1/8
            self.srtt = (7 * self.srtt + adjusted) / 8;
        }
    }

    /// RTO = SRTT + max(G, 4 * RTTVAR) (§2.3), at least the configured minimum (§2.4 says
    /// 1 s; Linux and this crate default to 200 ms), at most the maximum (§2.5).
    pub fn rto(&self) -> u64 {
        if !self.has_sample {
            return self.initial_rto;
        }
        (self.srtt + GRANULARITY_US.max(4 * self.rttvar)).clamp(self.min_rto, self.max_rto)
    }

    /// The smoothed RTT, or the initial RTO's third before any sample (a stand-in the
    /// schedulers can compare).
    pub fn smoothed_or_default(&self) -> u64 {
        if self.has_sample {
            self.srtt
        } else {
            self.initial_rto / 3
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubflowCounters {
    pub packets_sent: u64,
    pub bytes_sent: u64,
    pub packets_received: u64,
    pub bytes_received: u64,
    pub packets_lost: u64,
    /// Data bytes sent again (after loss, on a probe, or as a reinjection).
    pub bytes_retransmitted: u64,
    /// Packets that carried data sent again.
    pub packets_retransmitted: u64,
    /// Data bytes first sent on another subflow and sent here too.
    pub bytes_reinjected: u64,
    pub data_bytes_sent: u64,
    pub rto_count: u64,
    pub tlp_count: u64,
}

#[derive(Debug)]
pub struct Subflow {
    /// Subflow number (§2).
    pub id: u32,
    pub state: SubflowState,
    pub local_path: PathId,
    pub remote: SocketAddr,
    pub local_addr_id: u8,
    pub remote_addr_id: u8,
    pub local_cid: Cid,
    pub remote_cid: Option<Cid>,
    /// Opened by this endpoint.
    pub local_opener: bool,
    pub backup: bool,
    pub nonce_local: u32,
    pub nonce_remote: u32,
    pub join: JoinKind,
    /// Opened by the path manager for a failover (closed again on fail-back).
    pub failover: bool,
    /// Counters already reported to the oracle: packets sent, lost (TLPs included),
    /// retransmitted.
    pub reported: [u64; 3],
    /// Responder of a fast join: the FAST_JOIN_REPLY rides in every packet until the peer
    /// acknowledges one, so that no packet of ours arrives before the peer can use it.
    pub reply_unacked: bool,

    // Sending.
    pub next_pn: u64,
    pub largest_acked: Option<u64>,
    pub sent: VecDeque<SentPacket>,
    pub in_flight: u64,
    pub ack_eliciting_in_flight: u32,
    pub rtt: Rtt,
    pub cc: Cc,
    /// Start of the current retransmission timer (RFC 6298 §5: restarted by new ACKs).
    pub rto_start: Time,
    pub rto_backoff: u32,
    pub tlp_sent: bool,
    pub loss_time: Option<Time>,
    pub probe: Option<Probe>,
    /// Potentially failed (RTO expired, no new acknowledgement since).
    pub pf: bool,
    /// Packets declared lost since the last packet sent after a loss was acknowledged: the
    /// "retransmissions outstanding" the priority scheduler looks at.
    pub recent_losses: u32,
    pub last_loss_at: Time,
    pub ctrl_pending: u16,
    /// A copy of a segment the redundant scheduler put on this subflow too.
    pub copy: Option<DataRef>,
    pub challenge: Option<[u8; 8]>,
    pub response: Option<[u8; 8]>,
    pub reset_reason: u8,

    // Receiving.
    pub rx: RangeSet,
    pub largest_rx: Option<u64>,
    pub largest_rx_time: Time,
    pub unacked_eliciting: u32,
    pub ack_deadline: Option<Time>,
    pub ack_now: bool,

    // Address validation (§10).
    pub validated: bool,
    pub amp_rx: u64,
    pub amp_tx: u64,

    // For the schedulers and the oracle.
    pub last_original_rx: Time,
    pub was_bad: bool,
    pub high_rto: bool,
    pub last_activity: Time,
    pub peer_rto_ms: Option<u64>,
    pub counters: SubflowCounters,
}

impl SubflowState {
    /// Of the control frames `ctrl` a lost packet carried, those still worth sending in this
    /// state: the join frames only while the join they belong to is incomplete.
    pub fn frames_to_resend(self, ctrl: u16) -> u16 {
        let again = ctrl & ctrl::RETRANSMITTABLE;
        match self {
            SubflowState::JoinSent => again & (ctrl::JOIN | ctrl::PRIO),
            SubflowState::JoinAckSent => again & !(ctrl::SYNACK | ctrl::JOIN),
            SubflowState::JoinReceived => again & !(ctrl::JOIN | ctrl::JOIN_ACK),
            SubflowState::Established => again & !(ctrl::JOIN | ctrl::JOIN_ACK | ctrl::SYNACK),
            SubflowState::Closed => 0,
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
            local_addr_id: local_path.0,
            remote_addr_id: 0,
            local_cid,
            remote_cid: None,
            local_opener,
            backup,
            nonce_local: 0,
            nonce_remote: 0,
            join: JoinKind::Regular,
            failover: false,
            reported: [0; 3],
            reply_unacked: false,
            next_pn: 0,
            largest_acked: None,
            sent: VecDeque::with_capacity(256),
            in_flight: 0,
            ack_eliciting_in_flight: 0,
            rtt,
            cc,
            rto_start: now,
            rto_backoff: 0,
            tlp_sent: false,
            loss_time: None,
            probe: None,
            pf: false,
            recent_losses: 0,
            last_loss_at: 0,
            ctrl_pending: 0,
            copy: None,
            challenge: None,
            response: None,
            reset_reason: 0,
            rx: RangeSet::new(32),
            largest_rx: None,
            largest_rx_time: now,
            unacked_eliciting: 0,
            ack_deadline: None,
            ack_now: false,
            validated: false,
            amp_rx: 0,
            amp_tx: 0,
            last_original_rx: 0,
            was_bad: false,
            high_rto: false,
            last_activity: now,
            peer_rto_ms: None,
            counters: SubflowCounters::default(),
        }
    }

    pub fn is_open(&self) -> bool {
        self.state != SubflowState::Closed
    }

    pub fn established(&self) -> bool {
        self.state == SubflowState::Established
    }

    /// Room left in the congestion window.
    pub fn cwnd_room(&self) -> u64 {
        self.cc.cwnd.saturating_sub(self.in_flight)
    }

    /// The bytes this subflow may still send to an unvalidated address (§10: three times
    /// what it received), or `u64::MAX` once validated.
    pub fn amplification_room(&self) -> u64 {
        if self.validated {
            u64::MAX
        } else {
            (3 * self.amp_rx).saturating_sub(self.amp_tx)
        }
    }

    /// Records a received packet number; false for a duplicate (replay).
    pub fn on_packet_received(&mut self, now: Time, pn: u64, ack_eliciting: bool, max_ack_delay: u64) -> bool {
        if self.rx.contains(pn) {
            return false;
        }
        self.rx.insert(pn, pn + 1);
        let out_of_order = self.largest_rx.is_some_and(|l| pn < l) || self.largest_rx.is_some_and(|l| pn > l + 1);
        if self.largest_rx.is_none_or(|l| pn > l) {
            self.largest_rx = Some(pn);
            self.largest_rx_time = now;
        }
        if ack_eliciting {
            self.unacked_eliciting += 1;
            // RFC 9000 §13.2.1-2: acknowledge every second packet, and at once when a packet
            // arrives out of order; otherwise within max_ack_delay.
            if self.unacked_eliciting >= 2 || out_of_order {
                self.ack_now = true;
            } else if self.ack_deadline.is_none() {
                self.ack_deadline = Some(now + max_ack_delay);
            }
        }
        true
    }

    /// Whether an ACK frame should go out now.
    pub fn ack_due(&self, now: Time) -> bool {
        self.ack_now || self.ack_deadline.is_some_and(|d| d <= now)
    }

    /// An ACK frame was sent.
    pub fn on_ack_sent(&mut self) {
        self.ack_now = false;
        self.ack_deadline = None;
        self.unacked_eliciting = 0;
    }

    /// Records a sent packet and arms the retransmission timer.
    pub fn on_packet_sent(&mut self, p: SentPacket) {
        self.counters.packets_sent += 1;
        self.counters.bytes_sent += u64::from(p.size);
        self.amp_tx += u64::from(p.size);
        if p.ack_eliciting {
            if self.ack_eliciting_in_flight == 0 {
                self.rto_start = p.time;
            }
            self.ack_eliciting_in_flight += 1;
            self.in_flight += u64::from(p.size);
            self.last_activity = p.time;
        }
        self.sent.push_back(p);
    }

    /// A packet of this subflow was declared lost at `now`.
    pub fn note_loss(&mut self, now: Time) {
        self.counters.packets_lost += 1;
        self.recent_losses = self.recent_losses.saturating_add(1);
        self.last_loss_at = now;
    }

    /// A packet left the network without an acknowledgement (lost, or reinjected elsewhere).
    pub fn remove_from_flight(&mut self, p: &SentPacket) {
        if p.ack_eliciting {
            self.in_flight -= u64::from(p.size);
            self.ack_eliciting_in_flight -= 1;
        }
    }

    /// When the retransmission timer (TLP or RTO) fires, if armed.
    pub fn rto_deadline(&self, max_ack_delay: u64) -> Option<Time> {
        if self.ack_eliciting_in_flight == 0 || self.state == SubflowState::Closed {
            return None;
        }
        let rto = self.rtt.rto();
        let full = self.rto_start + (rto << self.rto_backoff.min(10)).min(self.rtt.max_rto_us());
        if !self.tlp_sent && self.rto_backoff == 0 && self.rtt.has_sample {
            // RFC 8985 §7.2: PTO = 2 * SRTT, plus the peer's delayed-ACK allowance when only
            // one packet is outstanding.
            let mut pto = 2 * self.rtt.srtt;
            if self.ack_eliciting_in_flight == 1 {
                pto += max_ack_delay;
            }
            return Some(full.min(self.rto_start + pto.max(GRANULARITY_US)));
        }
        Some(full)
    }
}

impl Rtt {
    pub fn max_rto_us(&self) -> u64 {
        self.max_rto
    }
}
