//! A subflow's side of loss recovery: what it does when a packet leaves, when an ACK
//! arrives, when a packet is declared lost and when its retransmission timer expires. The
//! estimator, the packets in flight and the congestion window are its [`Recovery`]'s; the
//! frames a lost packet carried go back to their owners (`pend_again`), its data to the
//! connection through a callback.

use super::recovery::{Acked, LossTrigger, Probe, SentPacket, CC_EVENTS, GRANULARITY_US};
use super::{DataRef, FrameSet, Subflow, SubflowState};
use crate::conn::cc::Coupling;
use crate::wire::Ack;
use crate::Time;

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
            r.recovery_grant = 0;
            if r.eliciting_in_flight == 0 {
                r.rto_start = p.time;
            }
            r.eliciting_in_flight += 1;
            r.in_flight += u64::from(p.size);
            if r.in_flight + u64::from(p.size) > r.cc.cwnd() {
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
            r.last_eliciting = p.time;
        }
        r.next_pn = p.pn + 1;
        let mtu_probe = p.mtu_probe;
        r.sent.push(p);
        if mtu_probe {
            self.pmtu.on_probe_sent();
        }
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
            let (sample, ack_delay) = (now.saturating_sub(p.time), a.ack_delay.min(max_ack_delay));
            r.rtt.sample_at(now, sample, ack_delay);
            // LEDBAT's queue: the peer's ACK delay always off (never below the least RTT),
            // where the estimate keeps a sample whole when taking it off would go below.
            r.cc.on_rtt_sample(now, sample.saturating_sub(ack_delay).max(r.rtt.min));
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
        if acked.ncc > 0 {
            // The flight moves again: a grant left from a recovery that began earlier goes.
            self.rec.recovery_grant = 0;
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
        let mut lost_eliciting = false;
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
                lost_eliciting |= p.ack_eliciting;
                let trigger = if p.pn + 3 <= largest { LossTrigger::Reordering } else { LossTrigger::Time };
                self.count_loss(now, p.pn, trigger);
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
            self.rec.last_lost_sent = self.rec.last_lost_sent.max(t);
            // A new recovery period, a packet in flight lost: the window is cut now, and one
            // segment (the congestion controller's) may still go. A segment of the path's
            // largest datagram instead, where path MTU discovery raised it past the
            // controller's 1,200 bytes, moved the coupled uploads' throughput against Reno's
            // by 4 % over 12 seeds (`tests/coupled.rs`), for no interactive flight's gain.
            if lost_eliciting && !self.rec.cc.in_recovery(t) {
                self.rec.recovery_grant = (self.rec.cc.min_window() / 2).min(u64::from(u32::MAX)) as u32;
            }
            self.rec.cc.on_congestion(now, t);
        }
    }

    /// Packet `pn` is declared lost. The oracle's count takes it unless a tail loss probe
    /// marked it lost already (the first packet up to the probe's mark).
    fn count_loss(&mut self, now: Time, pn: u64, trigger: LossTrigger) {
        self.counters.packets_lost += 1;
        if let Some(log) = self.rec.lost_log.as_mut() {
            log.push((now, pn, trigger));
        }
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
        if !r.tlp_sent
            && r.rto_backoff == 0
            && r.rtt.has_sample
            && self.state == SubflowState::Established
            && !r.reliable
        {
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
        r.recovery_grant = 0;
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

    /// The connection logs events: from now on this subflow notes the packets it declares
    /// lost, for [`Subflow::take_losses`].
    pub fn log_losses(&mut self) {
        self.rec.lost_log.get_or_insert_with(Vec::new);
    }

    /// Hands each packet declared lost since the last call to `each` (time, number, why).
    pub fn take_losses(&mut self, mut each: impl FnMut(Time, u64, LossTrigger)) {
        if let Some(log) = self.rec.lost_log.as_mut() {
            for (t, pn, why) in log.drain(..) {
                each(t, pn, why);
            }
        }
    }

    /// How long this subflow has been silent with data in flight at `now`: since the later of
    /// the last packet received and the oldest ack-eliciting packet in flight (0 when nothing
    /// is in flight).
    pub fn silent_for(&self, now: Time) -> u64 {
        let oldest = self.rec.sent.iter().find(|p| p.ack_eliciting).map(|p| p.time);
        oldest.map_or(0, |t| now.saturating_sub(t.max(self.last_rx)))
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
                self.count_loss(now, p.pn, LossTrigger::Timeout);
            }
            self.rec.remove_from_flight(&p);
            if self.is_open() {
                self.pend_again(p.ctrl);
                self.acks.news |= p.carried_ack;
            } else {
                orphaned |= p.ctrl.intersection(FrameSet::CARRIED);
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
