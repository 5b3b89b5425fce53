//! A subflow's loss recovery: the RTT estimator (RFC 6298), the packets in flight, their
//! acknowledgement, loss detection (RFC 9002 §6.1), the tail loss probe (RFC 8985) and the
//! retransmission timeout with backoff, and congestion control (`cc`).
//!
//! The subflow decides; what concerns the connection (data to send again, a subflow that
//! recovered or completed its join) comes back as values or through a callback, and the
//! connection applies it.

use super::{DataRef, FrameSet, Subflow, SubflowState};
use crate::conn::cc::{Cc, Coupling};
use crate::wire::Ack;
use crate::Time;
use std::collections::VecDeque;

/// The clock granularity G of RFC 6298 (and the floor of every loss timer).
const GRANULARITY_US: u64 = 1_000;

/// An RTT estimate with no sample for this long is stale (see [`Rtt::sample_at`]).
pub const RTT_STALE: Time = 3_000_000;

/// RFC 6298 §2 estimator.
#[derive(Clone, Copy, Debug)]
pub struct Rtt {
    pub srtt: u64,
    pub rttvar: u64,
    pub latest: u64,
    pub min: u64,
    pub has_sample: bool,
    /// When the last sample came.
    pub sampled_at: Time,
    initial_rto: u64,
    min_rto: u64,
    max_rto: u64,
}

impl Rtt {
    pub fn new(initial_rto: u64, min_rto: u64, max_rto: u64) -> Self {
        Self {
            srtt: 0,
            rttvar: 0,
            latest: 0,
            min: u64::MAX,
            has_sample: false,
            sampled_at: 0,
            initial_rto,
            min_rto,
            max_rto,
        }
    }

    /// A sample taken at `now`. When the estimate is stale (no sample for [`RTT_STALE`]) and
    /// the sample is below two thirds of it, the sample replaces the smoothed RTT instead of
    /// moving it by an eighth: the estimate is of the path as it was seconds ago (a mobile
    /// path's bad spell, over since), and averaging it with the present would keep a scheduler
    /// that compares RTTs off a path that recovered for many more round trips. The variation is
    /// updated as usual, so the RTO keeps the surprise in mind. Otherwise (a fresh estimate, a
    /// sample close to it or above it) the sample is averaged in as RFC 6298 has it.
    pub fn sample_at(&mut self, now: Time, sample: u64, ack_delay: u64) {
        let stale = self.has_sample && now.saturating_sub(self.sampled_at) > RTT_STALE;
        let old = self.srtt;
        let adjusted = self.update(sample, ack_delay);
        if stale && adjusted.saturating_mul(3) < old.saturating_mul(2) {
            self.srtt = adjusted;
        }
        self.sampled_at = now;
    }

    /// The estimate is half as large again as the path's least RTT: if no sample comes to
    /// correct it (an unused subflow after a bad spell), a scheduler comparing RTTs keeps off a
    /// path that may well have recovered.
    pub fn inflated(&self) -> bool {
        self.has_sample && self.srtt > self.min.saturating_mul(3) / 2
    }

    /// RFC 6298 §2.2/§2.3, with the ACK delay removed as RFC 9002 §5.3 does when that does
    /// not go below the minimum RTT. Returns the sample with the ACK delay so removed.
    pub fn update(&mut self, sample: u64, ack_delay: u64) -> u64 {
        self.latest = sample;
        self.min = self.min.min(sample);
        let adjusted = if sample >= self.min.saturating_add(ack_delay) { sample - ack_delay } else { sample };
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
        adjusted
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

    pub fn max_rto(&self) -> u64 {
        self.max_rto
    }
}

/// A packet sent on the subflow, kept until acknowledged or declared lost.
#[derive(Clone, Copy, Debug)]
pub struct SentPacket {
    pub pn: u64,
    pub time: Time,
    pub size: u32,
    pub ack_eliciting: bool,
    pub data: Option<DataRef>,
    /// Control frames it carried (`ctrl` bits), sent again if it is lost.
    pub ctrl: FrameSet,
    /// It carried an ACK frame: if it is lost, the next data packet carries one again
    /// (`AckState::news`), as a data packet otherwise repeats no unchanged ACK.
    pub carried_ack: bool,
    /// A path MTU probe (`size` is the size tried): its loss is no congestion signal.
    pub mtu_probe: bool,
}

/// The packets in flight, by packet number. A subflow's packet numbers are consecutive, so
/// entry `k` is packet `base + k`: an ACK range is a slice of the ring, found without a scan.
/// An entry is emptied when its packet is acknowledged or declared lost, and the front is
/// trimmed as it empties.
#[derive(Debug, Default)]
pub struct SentRing {
    base: u64,
    slots: VecDeque<Option<SentPacket>>,
    live: usize,
}

impl SentRing {
    /// Gives back the ring's memory when no packet is in flight (an idle subflow's); the ring
    /// grows again with the flight, by doubling, and keeps its size while packets flow. The
    /// records of packets that carried only acknowledgements (never acknowledged themselves,
    /// never retransmitted, outside the flight) are forgotten with it.
    pub fn shrink(&mut self) {
        let bare = |p: &SentPacket| !p.ack_eliciting && p.ctrl.is_empty() && p.data.is_none();
        if self.slots.iter().flatten().all(bare) {
            self.slots = VecDeque::new();
            self.live = 0;
        }
    }

    /// Bytes of memory held.
    pub fn capacity_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Option<SentPacket>>()
    }

    /// Makes room for `n` packets, if the ring has less.
    pub fn reserve(&mut self, n: usize) {
        if self.slots.capacity() < n {
            self.slots.reserve(n - self.slots.len());
        }
    }

    /// Records packet `p`, the next packet number after the last one recorded.
    pub fn push(&mut self, p: SentPacket) {
        if self.slots.is_empty() {
            self.base = p.pn;
        }
        debug_assert_eq!(p.pn, self.base + self.slots.len() as u64, "packet numbers are consecutive");
        self.slots.push_back(Some(p));
        self.live += 1;
    }

    /// Takes the packet at ring index `k` (see [`SentRing::span`]) out, if it is held. The
    /// front is trimmed by the caller ([`SentRing::trim`]) once it has taken what it wants.
    fn take_at(&mut self, k: usize) -> Option<SentPacket> {
        let p = self.slots.get_mut(k)?.take()?;
        self.live -= 1;
        Some(p)
    }

    /// Takes the oldest packet held.
    pub fn pop_oldest(&mut self) -> Option<SentPacket> {
        self.trim();
        let p = self.slots.pop_front()??;
        self.base += 1;
        self.live -= 1;
        self.trim();
        Some(p)
    }

    fn trim(&mut self) {
        while let Some(None) = self.slots.front() {
            self.slots.pop_front();
            self.base += 1;
        }
    }

    /// The packets held, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &SentPacket> + '_ {
        self.slots.iter().flatten()
    }

    /// The packet numbers held that lie in `[lo, hi]`, as ring indices.
    fn span(&self, lo: u64, hi: u64) -> std::ops::Range<usize> {
        let end = self.base + self.slots.len() as u64;
        let (lo, hi) = (lo.max(self.base), hi.saturating_add(1).min(end));
        if lo >= hi {
            return 0..0;
        }
        (lo - self.base) as usize..(hi - self.base) as usize
    }
}

/// Why a probe is due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// Tail loss probe (RFC 8985 §7): one packet, new data if any, else the last segment.
    Tail,
    /// Retransmission timeout: one packet with the oldest unacknowledged data.
    Rto,
}

/// The sending half of a subflow: packet numbers, packets in flight, RTT, congestion window,
/// the retransmission timer and the potentially-failed state.
#[derive(Debug)]
pub struct Recovery {
    pub next_pn: u64,
    pub largest_acked: Option<u64>,
    pub sent: SentRing,
    /// Bytes of ack-eliciting packets in flight, and their count.
    pub in_flight: u64,
    pub eliciting_in_flight: u32,
    /// The last ack-eliciting packet sent carried a PING (its answer is not delayed).
    pub tail_ping: bool,
    /// The last time a packet sent filled the congestion window (no room for another of its
    /// size): the subflow was window-limited, not application-limited.
    pub window_full_at: Option<Time>,
    /// The largest flight (bytes in flight after a packet was sent) in the current round
    /// trip, which began at `flight_epoch`, and in the one before: how much of the window
    /// is in use (RFC 7661's pipeACK; Linux's `max_packets_out`).
    pub flight_high: u64,
    pub flight_high_prev: u64,
    pub flight_epoch: Time,
    pub rtt: Rtt,
    pub cc: Cc,
    /// Start of the current retransmission timer (RFC 6298 §5: restarted by new ACKs).
    pub rto_start: Time,
    pub rto_backoff: u32,
    pub tlp_sent: bool,
    /// When the next packet would be declared lost by time (RFC 9002 §6.1.2).
    pub loss_time: Option<Time>,
    pub probe: Option<Probe>,
    /// Potentially failed (RTO expired, no new acknowledgement since).
    pub pf: bool,
    /// Packets declared lost since the last packet sent after a loss was acknowledged: the
    /// "retransmissions outstanding" the priority scheduler looks at.
    pub recent_losses: u32,
    pub last_loss_at: Time,
    /// The newest packet number in flight when a tail loss probe fired, until a packet up to
    /// it is declared lost: the probe counted that loss for the oracle already.
    pub tlp_marked: Option<u64>,
}

/// Most `(send time, bytes)` pairs an ACK hands to congestion control one by one; beyond,
/// the last pair absorbs the rest.
const CC_EVENTS: usize = 64;

/// What an ACK frame did (the first half of its processing: the connection then computes the
/// coupling over its subflows and calls [`Subflow::finish_ack`]).
#[derive(Debug)]
pub struct Acked {
    /// The subflow was potentially failed and is not any more.
    pub recovered: bool,
    /// The acknowledgement of our MP_JOIN_ACK (the fourth packet) completed the join.
    pub established: bool,
    cc_events: [(Time, u64); CC_EVENTS],
    ncc: usize,
}

impl Recovery {
    pub fn new(rtt: Rtt, cc: Cc, now: Time) -> Self {
        Self {
            next_pn: 0,
            largest_acked: None,
            sent: SentRing::default(),
            in_flight: 0,
            eliciting_in_flight: 0,
            tail_ping: false,
            window_full_at: None,
            flight_high: 0,
            flight_high_prev: 0,
            flight_epoch: 0,
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
            tlp_marked: None,
        }
    }

    /// Whether the window was full within the last RTO (Linux's `tcp_is_cwnd_limited`, in
    /// time rather than in packets): only such a subflow takes part in the coupled increase.
    pub fn cwnd_limited(&self, now: Time) -> bool {
        self.window_full_at.is_some_and(|t| now.saturating_sub(t) <= self.rtt.rto())
    }

    /// Whether the flight reached half the window in this round trip or the last: the window
    /// is in use and may grow (RFC 7661's validated phase, pipeACK >= cwnd/2; Linux grows in
    /// slow start while cwnd < 2 * max_packets_out). Below that it is kept as it is.
    pub fn cwnd_validated(&self) -> bool {
        2 * self.flight_high.max(self.flight_high_prev) >= self.cc.cwnd
    }

    /// Room left in the congestion window.
    pub fn cwnd_room(&self) -> u64 {
        self.cc.cwnd.saturating_sub(self.in_flight)
    }

    /// A packet of this subflow was declared lost at `now`.
    pub fn note_loss(&mut self, now: Time) {
        self.recent_losses = self.recent_losses.saturating_add(1);
        self.last_loss_at = now;
    }

    /// A packet left the network without an acknowledgement (lost, or reinjected elsewhere).
    pub fn remove_from_flight(&mut self, p: &SentPacket) {
        if p.ack_eliciting {
            self.in_flight -= u64::from(p.size);
            self.eliciting_in_flight -= 1;
        }
    }

    /// When the retransmission timer (TLP or RTO) fires, if armed; `max_ack_delay` is the
    /// peer's.
    pub fn rto_deadline(&self, max_ack_delay: u64) -> Option<Time> {
        if self.eliciting_in_flight == 0 {
            return None;
        }
        let rto = self.rtt.rto();
        let full = self.rto_start.saturating_add((rto << self.rto_backoff.min(10)).min(self.rtt.max_rto()));
        if !self.tlp_sent && self.rto_backoff == 0 && self.rtt.has_sample {
            // RFC 8985 §7.2: PTO = 2 * SRTT, plus the peer's delayed-ACK allowance when only
            // one packet is outstanding. When the last packet carried a PING, which the peer
            // acknowledges at once (§5.2), no ACK is delayed: RFC 9002 §6.2.1's PTO without
            // its max_ack_delay term, SRTT + max(4 * RTTVAR, granularity).
            let pto = if self.tail_ping {
                self.rtt.srtt + (4 * self.rtt.rttvar).max(GRANULARITY_US)
            } else if self.eliciting_in_flight == 1 {
                2 * self.rtt.srtt + max_ack_delay
            } else {
                2 * self.rtt.srtt
            };
            return Some(full.min(self.rto_start.saturating_add(pto.max(GRANULARITY_US))));
        }
        Some(full)
    }
}

/// What the retransmission timer did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// A tail loss probe is due (RFC 8985 §7.3); the timer restarts.
    TailProbe,
    /// A join went unanswered `max_handshake_attempts` times: give it up.
    JoinGivenUp,
    /// A retransmission timeout: the window collapses, an RTO probe is due, and the data in
    /// flight is presumed lost. `newly_failed`: the subflow just became potentially failed.
    Timeout { newly_failed: bool },
}

impl Subflow {
    /// Records a sent packet and arms the retransmission timer.
    pub fn on_packet_sent(&mut self, p: SentPacket) {
        self.counters.packets_sent += 1;
        self.counters.bytes_sent += u64::from(p.size);
        self.val.amp_tx += u64::from(p.size);
        let r = &mut self.rec;
        if p.ack_eliciting {
            if r.eliciting_in_flight == 0 {
                r.rto_start = p.time;
            }
            r.eliciting_in_flight += 1;
            r.in_flight += u64::from(p.size);
            if r.in_flight + u64::from(p.size) > r.cc.cwnd {
                r.window_full_at = Some(p.time);
            }
            let round = r.rtt.smoothed_or_default();
            if p.time >= r.flight_epoch.saturating_add(round) {
                r.flight_high_prev = r.flight_high;
                r.flight_high = 0;
                r.flight_epoch = p.time;
            }
            r.flight_high = r.flight_high.max(r.in_flight);
            self.last_activity = p.time;
            r.tail_ping = p.ctrl.intersects(FrameSet::PING);
        }
        r.next_pn = p.pn + 1;
        r.sent.push(p);
    }

    /// An ACK frame (§5.3): the packets it acknowledges leave the flight, the RTT is sampled,
    /// and a new acknowledgement ends the potentially-failed state. `None` if it acknowledges
    /// nothing new. Congestion control and loss detection follow in [`Subflow::finish_ack`].
    pub fn on_ack(&mut self, now: Time, a: &Ack<'_>, max_ack_delay: u64) -> Option<Acked> {
        let r = &mut self.rec;
        if a.largest >= r.next_pn {
            return None; // acknowledges a packet never sent
        }
        let mut ranges = [(0u64, 0u64); 16];
        let mut n = 0;
        for rg in a.ranges().take(16) {
            ranges[n] = rg;
            n += 1;
        }
        let mut out = Acked { recovered: false, established: false, cc_events: [(0, 0); CC_EVENTS], ncc: 0 };
        let mut newly_acked = 0u64;
        let mut largest_newly: Option<SentPacket> = None;
        let mut acked_ctrl = FrameSet::EMPTY;
        let (mut freed_bytes, mut freed_packets) = (0u64, 0u32);
        let mut probe_acked = None;
        // Lowest range first, so congestion control sees the packets in the order they left.
        for &(lo, hi) in ranges[..n].iter().rev() {
            for k in r.sent.span(lo, hi) {
                let Some(p) = r.sent.take_at(k) else { continue };
                if p.ack_eliciting {
                    freed_bytes += u64::from(p.size);
                    freed_packets += 1;
                    if out.ncc < CC_EVENTS {
                        out.cc_events[out.ncc] = (p.time, u64::from(p.size));
                        out.ncc += 1;
                    } else {
                        out.cc_events[CC_EVENTS - 1].1 += u64::from(p.size);
                    }
                }
                newly_acked += 1;
                acked_ctrl |= p.ctrl;
                if p.mtu_probe {
                    probe_acked = Some(p.size as usize);
                }
                largest_newly = Some(p);
            }
        }
        r.sent.trim();
        r.in_flight -= freed_bytes;
        r.eliciting_in_flight -= freed_packets;
        if let Some(size) = probe_acked {
            self.pmtu.on_probe_acked(size, now);
        }
        let r = &mut self.rec;
        let progress = newly_acked > 0 || r.largest_acked.is_none_or(|l| a.largest > l);
        if r.largest_acked.is_none_or(|l| a.largest > l) {
            r.largest_acked = Some(a.largest);
        }
        if !progress {
            return None;
        }
        if largest_newly.is_some_and(|p| p.time > r.last_loss_at) {
            // A packet sent after the last loss arrived: the losses are repaired.
            r.recent_losses = 0;
        }
        if let Some(p) = largest_newly.filter(|p| p.pn == a.largest && p.ack_eliciting) {
            r.rtt.sample_at(now, now.saturating_sub(p.time), a.ack_delay.min(max_ack_delay));
        }
        // A new acknowledgement: the path works, and the peer has our fast-join reply.
        self.val.validated = true;
        self.join.reply_unacked = false;
        r.rto_backoff = 0;
        r.tlp_sent = false;
        r.rto_start = now;
        if r.probe == Some(Probe::Rto) {
            r.probe = None;
        }
        out.recovered = std::mem::take(&mut r.pf);
        if acked_ctrl.intersects(FrameSet::JOIN_ACK) && self.state == SubflowState::JoinAckSent {
            // The fourth ACK (RFC 8684 §3.2): established.
            self.on_join_ack_acked(now);
            out.established = true;
        }
        if acked_ctrl.intersects(FrameSet::HS_DONE) {
            self.signals.remove(FrameSet::HS_DONE);
        }
        Some(out)
    }

    /// The rest of an ACK: congestion control with the connection's RFC 6356 `coupling`,
    /// then loss detection; the data of each packet declared lost goes to `lost`.
    pub fn finish_ack(&mut self, now: Time, acked: &Acked, coupling: Coupling, lost: &mut impl FnMut(DataRef)) {
        let srtt = self.rec.rtt.smoothed_or_default();
        // Congestion window validation (RFC 7661): only a window the subflow used at least
        // half of lately grows. Without it, a subflow held back by the application or by a
        // full socket grew its window with every acknowledgement (64 MB after 5 s of
        // backpressure), to send a burst of that size later.
        let validated = self.rec.cwnd_validated();
        for &(t, bytes) in &acked.cc_events[..acked.ncc] {
            if validated {
                self.rec.cc.on_ack(now, t, bytes, srtt, coupling);
            } else {
                self.rec.cc.on_ack_not_limited(now, bytes);
            }
        }
        self.detect_lost(now, lost);
    }

    /// RFC 9002 §6.1: a packet is lost when a later one was acknowledged and it is three
    /// packets older, or older than 9/8 of the RTT. Its control frames are sent again here;
    /// its data goes to `lost`.
    pub fn detect_lost(&mut self, now: Time, lost: &mut impl FnMut(DataRef)) {
        self.rec.loss_time = None;
        let Some(largest) = self.rec.largest_acked else { return };
        let delay = (self.rec.rtt.latest.max(self.rec.rtt.srtt) * 9 / 8).max(GRANULARITY_US);
        let mut lost_latest: Option<Time> = None;
        for k in self.rec.sent.span(0, largest) {
            let Some(p) = self.rec.sent.slots[k] else { continue };
            if p.pn + 3 <= largest || p.time + delay <= now {
                self.rec.sent.take_at(k);
                self.rec.remove_from_flight(&p);
                if p.mtu_probe {
                    // Too large for the path, most likely: no loss, no congestion (RFC 8899 §4.4).
                    self.pmtu.on_probe_lost(p.size as usize, now);
                    continue;
                }
                lost_latest = Some(lost_latest.map_or(p.time, |t| t.max(p.time)));
                self.count_loss(now, p.pn);
                self.pend_again(p.ctrl);
                self.acks.news |= p.carried_ack;
                if let Some(d) = p.data {
                    lost(d);
                }
            } else {
                let t = p.time + delay;
                self.rec.loss_time = Some(self.rec.loss_time.map_or(t, |x| x.min(t)));
            }
        }
        self.rec.sent.trim();
        if let Some(t) = lost_latest {
            self.rec.cc.on_congestion(now, t);
        }
    }

    /// Packet `pn` is declared lost. The oracle's count takes it unless a tail loss probe
    /// marked it lost already (the first packet up to the probe's mark).
    fn count_loss(&mut self, now: Time, pn: u64) {
        self.counters.packets_lost += 1;
        self.rec.note_loss(now);
        if self.rec.tlp_marked.is_some_and(|m| pn <= m) {
            self.rec.tlp_marked = None;
        } else {
            self.counters.oracle_losses += 1;
        }
    }

    /// The retransmission timer expired: a tail loss probe first (RFC 8985 §7.3), then RTOs
    /// with exponential backoff. A join that goes unanswered `max_attempts` times is given up.
    pub fn on_retransmission_timer(&mut self, now: Time, max_attempts: u32) -> Expiry {
        let r = &mut self.rec;
        if !r.tlp_sent && r.rto_backoff == 0 && r.rtt.has_sample && self.state == SubflowState::Established {
            r.tlp_sent = true;
            r.probe = Some(Probe::Tail);
            r.rto_start = now;
            self.counters.tlp_count += 1;
            // MultiMob counts a tail loss probe as a loss: "When the TLP timer fires, we enter
            // FACK mode and the packet at the head of the write queue is marked as lost"
            // (§III-B). That packet, declared lost later, is not counted again.
            self.counters.oracle_losses += 1;
            r.tlp_marked = r.next_pn.checked_sub(1);
            r.last_loss_at = now;
            return Expiry::TailProbe;
        }
        self.counters.rto_count += 1;
        r.rto_backoff += 1;
        r.rto_start = now;
        let joining =
            matches!(self.state, SubflowState::JoinSent | SubflowState::JoinAckSent | SubflowState::JoinReceived);
        if joining && r.rto_backoff >= max_attempts {
            return Expiry::JoinGivenUp;
        }
        r.cc.on_rto(now, r.in_flight);
        self.pmtu.on_timeout(now);
        let r = &mut self.rec;
        let established = self.state == SubflowState::Established;
        let newly_failed = established && !r.pf;
        r.pf |= established;
        r.probe = Some(Probe::Rto);
        Expiry::Timeout { newly_failed }
    }

    /// Nothing came back on this subflow since the oldest ack-eliciting packet in flight left,
    /// and at least two are in flight: the whole flight went unanswered. Independent losses
    /// of rate p explain it with probability p^n (1e-4 for two packets at 1%); a path that
    /// went silent explains it always.
    pub fn flight_unanswered(&self) -> bool {
        let r = &self.rec;
        r.eliciting_in_flight >= 2 && r.sent.iter().find(|p| p.ack_eliciting).is_some_and(|p| self.last_rx < p.time)
    }

    /// Takes every packet in flight out, oldest first (the subflow failed or closed): `each`
    /// gets its data, and its control frames are pended again while the subflow is open.
    /// Returns the connection's address frames carried by packets of a closed subflow, which
    /// must go on another one.
    pub fn drain_flight(&mut self, now: Time, count_lost: bool, each: &mut impl FnMut(DataRef)) -> FrameSet {
        let mut orphaned = FrameSet::EMPTY;
        while let Some(p) = self.rec.sent.pop_oldest() {
            if p.mtu_probe {
                self.rec.remove_from_flight(&p);
                self.pmtu.on_probe_lost(p.size as usize, now);
                continue;
            }
            if count_lost {
                self.count_loss(now, p.pn);
            }
            self.rec.remove_from_flight(&p);
            if self.is_open() {
                self.pend_again(p.ctrl);
                self.acks.news |= p.carried_ack;
            } else {
                orphaned |= p.ctrl.intersection(FrameSet::ADDRESSES);
            }
            if let Some(d) = p.data {
                each(d);
            }
        }
        orphaned
    }

    /// The last data range sent on this subflow that is still in flight.
    pub fn last_data_in_flight(&self) -> Option<DataRef> {
        self.rec.sent.iter().rev().find_map(|p| p.data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(pn: u64) -> SentPacket {
        SentPacket {
            pn,
            time: pn * 10,
            size: 100,
            ack_eliciting: true,
            data: None,
            ctrl: FrameSet::EMPTY,
            carried_ack: false,
            mtu_probe: false,
        }
    }

    #[test]
    fn the_ring_is_indexed_by_packet_number() {
        let mut r = SentRing::default();
        for pn in 5..15 {
            r.push(packet(pn));
        }
        assert_eq!(r.live, 10);
        assert_eq!(r.span(0, 7), 0..3, "packets 5, 6, 7");
        assert_eq!(r.span(12, u64::MAX), 7..10, "a range beyond the last packet is clipped");
        assert_eq!(r.span(20, 30), 0..0);
        assert_eq!(r.span(0, 4), 0..0, "never sent");
        assert_eq!(r.take_at(1).map(|p| p.pn), Some(6));
        assert!(r.take_at(1).is_none(), "taken once");
        assert_eq!(r.take_at(0).map(|p| p.pn), Some(5));
        r.trim();
        assert_eq!(r.base, 7, "the front was trimmed past both");
        assert_eq!(r.pop_oldest().map(|p| p.pn), Some(7));
        assert_eq!(r.iter().map(|p| p.pn).collect::<Vec<_>>(), (8..15).collect::<Vec<_>>());
        while r.pop_oldest().is_some() {}
        assert_eq!(r.live, 0);
        r.push(packet(15));
        assert_eq!(r.span(15, 15), 0..1, "numbering goes on after the ring empties");
    }

    #[test]
    fn a_reserved_ring_holds_its_flight_without_growing() {
        let mut r = SentRing::default();
        r.reserve(1000);
        let cap = r.slots.capacity();
        assert!(cap >= 1000);
        for pn in 0..1000 {
            r.push(packet(pn));
        }
        r.reserve(10);
        assert_eq!(r.slots.capacity(), cap, "a smaller reservation changes nothing");
    }

    #[test]
    fn rto_follows_rfc_6298_and_backs_off() {
        let mut rtt = Rtt::new(1_000_000, 200_000, 60_000_000);
        assert_eq!(rtt.rto(), 1_000_000, "before any sample");
        rtt.update(100_000, 0);
        assert_eq!((rtt.srtt, rtt.rttvar), (100_000, 50_000));
        assert_eq!(rtt.rto(), 300_000);
        rtt.update(10_000_000, u64::MAX);
        assert_eq!(rtt.srtt, (7 * 100_000 + 10_000_000) / 8, "an absurd ACK delay is not subtracted");
    }
}
