//! The connection's timers: what is due when, and the work done when it is.

use super::*;

impl Connection {
    /// The earliest time `handle_timeout` has work to do.
    pub fn poll_timeout(&self) -> Option<Time> {
        if self.drained {
            return None;
        }
        let mut t: Option<Time> = None;
        let mut min = |x: Option<Time>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |t| t.min(x)));
            }
        };
        if let Some(d) = self.drain_until {
            min(Some(d));
        }
        if let Some(hs) = self.hs.as_ref().filter(|_| self.state == State::Initial) {
            min(Some(hs.next_send));
        }
        if self.config.idle_timeout > 0 && !self.is_closed() {
            min(Some(self.last_rx + self.config.idle_timeout));
        }
        if self.idle_timer_applies() && !self.is_closed() {
            min(self.idle_timer.deadline());
        }
        if let Some(t) = self.healthy_since {
            min(Some(t + self.config.fail_back_hold));
        }
        for sf in &self.subflows {
            if !sf.is_open() {
                continue;
            }
            min(sf.ack_deadline);
            min(sf.loss_time);
            min(sf.rto_deadline(self.peer_max_ack_delay()));
            if self.config.keep_alive > 0 && sf.established() && !self.is_closed() {
                min(Some(sf.last_activity + self.config.keep_alive));
            }
        }
        t
    }

    pub(super) fn peer_max_ack_delay(&self) -> u64 {
        self.peer_params.max_ack_delay_ms * 1000
    }

    pub fn handle_timeout(&mut self, now: Time) {
        if self.drained {
            return;
        }
        if self.drain_until.is_some_and(|d| d <= now) {
            self.drained = true;
            return;
        }
        if self.state == State::Initial {
            let max = self.config.max_handshake_attempts;
            if let Some(hs) = self.hs.as_mut() {
                if hs.next_send <= now {
                    if hs.attempts >= max {
                        self.enter_closed(now, CloseReason::HandshakeTimeout);
                        self.drained = true;
                        return;
                    }
                    hs.send_now = true;
                }
            }
        }
        if self.config.idle_timeout > 0 && !self.is_closed() && self.last_rx + self.config.idle_timeout <= now {
            self.enter_closed(now, CloseReason::IdleTimeout);
            self.drained = true;
            return;
        }
        if self.idle_timer.expired(now) && self.idle_timer_applies() {
            // Nothing arrived for an idle-timer period while the server had more to send
            // (its last data did not carry MP_IDLE): the paths in use are declared bad.
            self.fail_over(now, true, |_, s| !s.failover);
        }
        self.check_fail_back(now);
        if self.config.path_manager == PathManager::MultiMob && self.side == Side::Client && !self.is_closed() {
            // A failed path with nothing in flight gets a PING, so that its retransmission
            // timer probes it (with backoff) until it answers.
            for sf in self.subflows.iter_mut() {
                if sf.pf && sf.established() && !sf.backup && sf.ack_eliciting_in_flight == 0 && sf.probe.is_none() {
                    sf.ctrl_pending |= ctrl::PING;
                }
            }
        }
        let pmad = self.peer_max_ack_delay();
        for i in 0..self.subflows.len() {
            if !self.subflows[i].is_open() {
                continue;
            }
            let sf = &mut self.subflows[i];
            if sf.ack_deadline.is_some_and(|d| d <= now) {
                sf.ack_now = true;
            }
            if self.config.keep_alive > 0
                && sf.established()
                && sf.last_activity + self.config.keep_alive <= now
                && !matches!(self.state, State::Closed(_))
            {
                sf.ctrl_pending |= ctrl::PING;
                sf.last_activity = now;
            }
            if sf.loss_time.is_some_and(|t| t <= now) {
                self.detect_lost(now, i);
            }
            let sf = &mut self.subflows[i];
            if sf.rto_deadline(pmad).is_some_and(|t| t <= now) {
                self.on_retransmission_timeout(now, i);
            }
        }
    }

    pub(super) fn on_retransmission_timeout(&mut self, now: Time, i: usize) {
        let max_attempts = self.config.max_handshake_attempts;
        let sf = &mut self.subflows[i];
        if !sf.tlp_sent && sf.rto_backoff == 0 && sf.rtt.has_sample && sf.state == SubflowState::Established {
            // RFC 8985 §7.3: send one probe, restart the timer.
            sf.tlp_sent = true;
            sf.probe = Some(Probe::Tail);
            sf.counters.tlp_count += 1;
            sf.rto_start = now;
            // MultiMob counts a tail loss probe as a loss.
            sf.last_loss_at = now;
            // multimob: the primary's first timeout with data pending and nothing else to fall
            // back on opens the other paths at once, without waiting for the oracle's period.
            let id = sf.id;
            let alone = !self.subflows.iter().any(|s| s.id != id && s.is_open() && !s.pf);
            if self.config.path_manager == PathManager::MultiMob
                && self.config.failover_on_timeout
                && self.side == Side::Client
                && !self.subflows[i].backup
                && alone
                && self.has_unused_path()
            {
                // The endpoint's oracle hears of it too, and declares the netpath bad for
                // every connection on it ("one connection experiences issues, others react").
                self.alert = self.netpath(i);
                self.fail_over(now, true, |_, s| s.id == id);
            }
            return;
        }
        sf.counters.rto_count += 1;
        sf.rto_backoff += 1;
        sf.rto_start = now;
        let joining =
            matches!(sf.state, SubflowState::JoinSent | SubflowState::JoinAckSent | SubflowState::JoinReceived);
        if joining && sf.rto_backoff >= max_attempts {
            self.shut_subflow(now, i, crate::wire::frame::reason::UNSPECIFIED);
            return;
        }
        let in_flight = sf.in_flight;
        sf.cc.on_rto(now, in_flight);
        let newly_pf = !sf.pf && sf.state == SubflowState::Established;
        if sf.state == SubflowState::Established {
            sf.pf = true;
        }
        sf.probe = Some(Probe::Rto);
        let id = sf.id;
        if newly_pf {
            self.emit(Event::SubflowFailed { id });
            self.open_on_demand(now);
        }
        // Everything in flight is presumed lost and goes to the retransmission queue, from
        // where the scheduler reinjects it on another subflow (RFC 8684 §3.3.6).
        self.reinject_in_flight(now, i, true);
        if self.side == Side::Client && self.state == State::Confirm && i == 0 {
            self.subflows[0].ctrl_pending |= ctrl::PING;
        }
    }
}
