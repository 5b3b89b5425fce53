//! Loss recovery at connection level: subflow ACKs, losses, the retransmission queue,
//! reinjection, and closing a subflow.

use super::*;

impl Connection {
    /// Closes one subflow (SUBFLOW_RESET with `reason`); its data is reinjected elsewhere.
    pub fn close_subflow(&mut self, now: Time, id: u32, reason: u8) -> bool {
        let Some(i) = self.subflows.iter().position(|s| s.id == id && s.is_open()) else { return false };
        self.subflows[i].reset_reason = reason;
        self.subflows[i].ctrl_pending = ctrl::RESET;
        self.shut_subflow(now, i, reason);
        true
    }

    /// Queues a copy of everything in flight on subflow `k` for reinjection, leaving it in
    /// flight there (it may still arrive).
    pub(super) fn copy_in_flight_for_reinjection(&mut self, k: usize) {
        for p in 0..self.subflows[k].sent.len() {
            if let Some(d) = self.subflows[k].sent[p].data {
                self.queue_retransmission(k, d, true);
            }
        }
    }

    /// Subflow-level ACK (§5.3): RTT, congestion control, loss detection, pf exit.
    pub(super) fn on_ack(&mut self, now: Time, i: usize, a: &Ack<'_>) {
        let max_ack_delay = self.config.max_ack_delay;
        let mut ranges = [(0u64, 0u64); 16];
        let mut n = 0;
        for r in a.ranges().take(16) {
            ranges[n] = r;
            n += 1;
        }
        let ranges = &ranges[..n];
        let sf = &mut self.subflows[i];
        if a.largest >= sf.next_pn {
            return; // acknowledges a packet never sent
        }
        let mut newly_acked = 0u64;
        let mut largest_newly: Option<SentPacket> = None;
        let mut acked_ctrl = 0u16;
        // (send time, bytes) of acknowledged ack-eliciting packets, for congestion control; past
        // 64 the last entry absorbs the rest. One pass over the sent packets, no allocation.
        let mut cc_events: [(u64, u64); 64] = [(0, 0); 64];
        let mut ncc = 0usize;
        let (mut freed_bytes, mut freed_packets) = (0u64, 0u32);
        sf.sent.retain(|p| {
            if !ranges.iter().any(|&(lo, hi)| lo <= p.pn && p.pn <= hi) {
                return true;
            }
            if p.ack_eliciting {
                freed_bytes += u64::from(p.size);
                freed_packets += 1;
                if ncc < cc_events.len() {
                    cc_events[ncc] = (p.time, u64::from(p.size));
                    ncc += 1;
                } else {
                    cc_events[ncc - 1].1 += u64::from(p.size);
                }
            }
            newly_acked += 1;
            acked_ctrl |= p.ctrl;
            if largest_newly.is_none_or(|l| p.pn > l.pn) {
                largest_newly = Some(*p);
            }
            false
        });
        sf.in_flight -= freed_bytes;
        sf.ack_eliciting_in_flight -= freed_packets;
        let progress = newly_acked > 0 || sf.largest_acked.is_none_or(|l| a.largest > l);
        if sf.largest_acked.is_none_or(|l| a.largest > l) {
            sf.largest_acked = Some(a.largest);
        }
        if !progress {
            return;
        }
        if largest_newly.is_some_and(|p| p.time > sf.last_loss_at) {
            // A packet sent after the last loss arrived: the losses are repaired.
            sf.recent_losses = 0;
        }
        if let Some(p) = largest_newly.filter(|p| p.pn == a.largest && p.ack_eliciting) {
            sf.rtt.update(now.saturating_sub(p.time), a.ack_delay.min(max_ack_delay));
        }
        // A new acknowledgement: the path works, and the peer has our fast-join reply.
        sf.validated = true;
        sf.reply_unacked = false;
        sf.rto_backoff = 0;
        sf.tlp_sent = false;
        sf.rto_start = now;
        if sf.probe == Some(Probe::Rto) {
            sf.probe = None;
        }
        if sf.pf {
            sf.pf = false;
            let id = sf.id;
            self.emit(Event::SubflowRecovered { id });
        }
        let sf = &mut self.subflows[i];
        if acked_ctrl & ctrl::JOIN_ACK != 0 && sf.state == SubflowState::JoinAckSent {
            // The fourth ACK (RFC 8684 §3.2): established.
            sf.state = SubflowState::Established;
            sf.ctrl_pending &= !ctrl::JOIN_ACK;
            sf.last_original_rx = now;
            let ev = Event::SubflowEstablished { id: sf.id, path: sf.local_path, backup: sf.backup };
            self.emit(ev);
        }
        let sf = &mut self.subflows[i];
        if acked_ctrl & ctrl::HS_DONE != 0 {
            sf.ctrl_pending &= !ctrl::HS_DONE;
        }
        // Congestion control, with the RFC 6356 coupling computed over the open subflows.
        let coupling = Coupling::compute(
            self.subflows.iter().filter(|s| s.established() && !s.pf).map(|s| (s.cc.cwnd, s.rtt.smoothed_or_default())),
        );
        let sf = &mut self.subflows[i];
        let srtt = sf.rtt.smoothed_or_default();
        for &(t, bytes) in &cc_events[..ncc] {
            sf.cc.on_ack(now, t, bytes, srtt, coupling);
        }
        self.detect_lost(now, i);
    }

    /// RFC 9002 §6.1: a packet is lost when a later one was acknowledged and it is three
    /// packets older, or older than 9/8 of the RTT.
    pub(super) fn detect_lost(&mut self, now: Time, i: usize) {
        let (largest, delay) = {
            let sf = &mut self.subflows[i];
            sf.loss_time = None;
            let Some(largest) = sf.largest_acked else { return };
            (largest, (sf.rtt.latest.max(sf.rtt.srtt) * 9 / 8).max(1_000))
        };
        let mut lost_latest: Option<Time> = None;
        let mut k = 0;
        while let Some(&p) = self.subflows[i].sent.get(k) {
            if p.pn > largest {
                break;
            }
            if p.pn + 3 <= largest || p.time + delay <= now {
                let _ = self.subflows[i].sent.remove(k);
                lost_latest = Some(lost_latest.map_or(p.time, |t| t.max(p.time)));
                self.on_packet_lost(now, i, p);
            } else {
                let sf = &mut self.subflows[i];
                let t = p.time + delay;
                sf.loss_time = Some(sf.loss_time.map_or(t, |x| x.min(t)));
                k += 1;
            }
        }
        if let Some(t) = lost_latest {
            self.subflows[i].cc.on_congestion(now, t);
        }
    }

    /// A packet declared lost: its data and retransmittable frames are sent again.
    pub(super) fn on_packet_lost(&mut self, now: Time, i: usize, p: SentPacket) {
        let sf = &mut self.subflows[i];
        sf.note_loss(now);
        sf.remove_from_flight(&p);
        sf.ctrl_pending |= sf.state.frames_to_resend(p.ctrl);
        if let Some(d) = p.data {
            self.queue_retransmission(i, d, false);
        }
    }

    /// Queues data for sending again. A `reinject`ion (the subflow failed or closed) marks the
    /// subflow so the scheduler prefers another one; a loss on a working subflow does not, so
    /// the retransmission goes where the scheduler sends new data (RFC 8684 §3.3.6 keeps the
    /// two apart the same way: subflow retransmission versus reinjection).
    pub(super) fn queue_retransmission(&mut self, i: usize, d: DataRef, reinject: bool) {
        let mask = if reinject { 1u64 << (i % 64) } else { 0 };
        self.send.queue_retransmission(d, mask);
    }

    /// Moves everything in flight on subflow `i` to the retransmission queue.
    pub(super) fn reinject_in_flight(&mut self, now: Time, i: usize, count_lost: bool) {
        while let Some(p) = self.subflows[i].sent.pop_front() {
            if count_lost {
                self.subflows[i].note_loss(now);
            }
            let sf = &mut self.subflows[i];
            sf.remove_from_flight(&p);
            let conn_level = p.ctrl & (ctrl::ADD_ADDR | ctrl::REMOVE_ADDR | ctrl::ADDR_ECHO);
            if sf.is_open() {
                sf.ctrl_pending |= sf.state.frames_to_resend(p.ctrl);
            } else if conn_level != 0 {
                self.pend_on_any(conn_level);
            }
            if let Some(d) = p.data {
                self.queue_retransmission(i, d, true);
                self.counters.reinjections += 1;
            }
        }
    }

    /// Closes subflow `i` locally and reinjects its data.
    pub(super) fn shut_subflow(&mut self, now: Time, i: usize, reason: u8) {
        if !self.subflows[i].is_open() {
            return;
        }
        let id = self.subflows[i].id;
        self.reinject_in_flight(now, i, false);
        let sf = &mut self.subflows[i];
        sf.state = SubflowState::Closed;
        sf.ctrl_pending &= ctrl::RESET | ctrl::FASTCLOSE;
        sf.probe = None;
        sf.copy = None;
        self.emit(Event::SubflowClosed { id, reason });
        self.recv.forget_slot(i);
        if self.state == State::Established && !self.subflows.iter().any(|s| s.is_open()) {
            self.enter_closed(now, CloseReason::NoSubflow);
        }
    }
}
