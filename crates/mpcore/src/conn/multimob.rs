//! MultiMob's wiring (§III-B of the paper): the oracle's samples and verdicts, the failover
//! and fail-back of the `multimob` path manager, the receive idle timer and the peer's RTO.

use super::events::{EndpointEvent, Event, Side};
use super::subflow::Subflow;
use super::Connection;
use crate::config::PathManager;
use crate::wire::frame::reason;
use crate::{PathId, Time};

impl Connection {
    /// Asks the peer for its RTO on subflow `id` (MultiMob RTO option).
    pub fn request_peer_rto(&mut self, id: u32) {
        if let Some(sf) = self.subflows.iter_mut().find(|s| s.id() == id && s.is_open()) {
            sf.request_rto();
        }
    }

    /// Sets the oracle's flags on a subflow.
    pub fn set_subflow_flags(&mut self, id: u32, was_bad: bool, high_rto: bool) {
        if let Some(sf) = self.subflows.iter_mut().find(|s| s.id() == id) {
            sf.set_oracle_flags(was_bad, high_rto);
        }
    }

    /// Marks a subflow potentially failed (an oracle's verdict), reinjecting its data.
    pub fn mark_potentially_failed(&mut self, now: Time, id: u32) {
        if let Some(i) = self.subflows.by_number(id).filter(|&i| self.subflows[i].is_open()) {
            if self.subflows[i].mark_potentially_failed() {
                self.emit(now, Event::SubflowFailed { id });
            }
            self.reinject_in_flight(now, i, false);
        }
    }

    /// `multimob`: the regular subflows `on` are declared potentially failed (and was-bad, on
    /// the oracle's or the idle timer's verdict), their data is queued for the other paths,
    /// and those are joined.
    pub(super) fn fail_over(&mut self, now: Time, was_bad: bool, on: impl Fn(usize, &Subflow) -> bool) {
        for i in 0..self.subflows.slot_bound() {
            let Some(sf) = self.subflows.get_mut(i) else { continue };
            if sf.is_open() && !sf.backup() && on(i, sf) {
                sf.set_oracle_flags(sf.was_bad() || was_bad, sf.high_rto());
                self.suspect(now, i);
            }
        }
        self.open_other_paths(now, false, true);
        tracing::debug!(side = ?self.side, "multimob failover");
    }

    /// Declares subflow `i` potentially failed and queues its data in flight again for the
    /// other subflows. The data stays in flight here: the retransmission timer keeps probing
    /// the path, and the first new ACK tells it works again.
    pub(super) fn suspect(&mut self, now: Time, i: usize) {
        if self.subflows[i].mark_potentially_failed() {
            let id = self.subflows[i].id();
            self.emit(now, Event::SubflowFailed { id });
        }
        self.copy_in_flight_for_reinjection(i);
    }

    /// `multimob` fail-back: once a regular subflow has worked (answered, no loss or timeout;
    /// while failover subflows are open it is probed) for the hold time, and the oracle no
    /// longer flags it, close the failover subflows (the radio may sleep) and clear the flags.
    /// The hold counts from the subflow's recovery, not from the oracle's verdict, which needs
    /// a period or two of evidence to clear: the two overlap.
    pub(super) fn check_fail_back(&mut self, now: Time) {
        if self.config.multipath.path_manager != PathManager::MultiMob || self.side != Side::Client || self.is_closed()
        {
            return;
        }
        let failover_open = self.failover_open();
        let last_loss = self.subflows.iter().filter(|s| s.fail_back_candidate()).map(|s| s.rec().last_loss_at).max();
        let (true, Some(last_loss)) = (failover_open, last_loss) else {
            self.multimob.end_hold();
            return;
        };
        let since = self.multimob.hold(now, last_loss);
        if now < since + self.config.multipath.fail_back_hold || !self.fail_back_cleared() {
            return;
        }
        self.multimob.end_hold();
        self.emit(now, Event::FailBack);
        for i in 0..self.subflows.slot_bound() {
            let Some(sf) = self.subflows.get_mut(i) else { continue };
            sf.set_oracle_flags(false, false);
            if sf.failover() && sf.is_open() {
                let id = sf.id();
                self.close_subflow(now, id, reason::UNSPECIFIED);
            }
        }
        tracing::debug!("multimob fail-back");
    }

    /// Whether a subflow the fail-back could go to is no longer flagged by the oracle.
    pub(super) fn fail_back_cleared(&self) -> bool {
        self.subflows.iter().any(|s| s.fail_back_candidate() && !s.was_bad())
    }

    /// While failover subflows are open, how often each regular subflow is probed: a fifth of
    /// the oracle's period, so that a path's return is seen within the period, unless the
    /// endpoint asks for less (`set_probe_interval`).
    pub(super) fn probe_interval(&self) -> Time {
        (self.config.multipath.oracle.period / 5).max(self.multimob.probe_every)
    }

    /// The endpoint's pace for failover probes (see `probe_interval`): it spreads a budget of
    /// probes over every connection that probes, so that a failover of thousands of
    /// connections at once does not send a probe per connection each 100 ms (issue 52).
    pub(crate) fn set_probe_interval(&mut self, every: Time) {
        self.multimob.probe_every = every;
    }

    /// `multimob` client: subflows opened for a failover are open, so a fail-back may follow.
    pub(crate) fn failover_open(&self) -> bool {
        self.config.multipath.path_manager == PathManager::MultiMob
            && self.side == Side::Client
            && self.subflows.iter().any(|s| s.failover() && s.is_open())
    }

    /// The peer's RTO as last reported on any subflow (MultiMob's RTO option).
    pub(super) fn peer_rto(&self) -> Option<Time> {
        self.subflows
            .iter()
            .filter_map(|s| s.peer_rto_ms())
            .max()
            .map(|ms| ms.saturating_mul(1000).min(self.config.transport.max_rto))
    }

    /// `multimob` client: the receive idle timer follows the data received.
    pub(super) fn tracks_receive_idle(&self) -> bool {
        self.config.multipath.path_manager == PathManager::MultiMob && self.side == Side::Client
    }

    /// `multimob` client: the idle timer runs only while a failover could follow.
    pub(super) fn idle_timer_applies(&self) -> bool {
        self.tracks_receive_idle() && self.has_unused_path()
    }

    /// The local path of a netpath.
    fn netpath_path(&self, np: &oracle::Netpath) -> Option<PathId> {
        self.local.paths.get(usize::from(np.iface)).map(|_| PathId(np.iface))
    }

    /// The local path of subflow `id`, if it is one of ours.
    pub fn subflow_path(&self, id: u32) -> Option<PathId> {
        self.subflows.by_number(id).and_then(|i| self.subflows.get(i)).map(|s| s.local_path())
    }

    /// The netpath of subflow `i`: (local address, remote address, local path).
    pub(super) fn netpath(&self, i: usize) -> Option<oracle::Netpath> {
        let sf = self.subflows.get(i)?;
        let lp = self.local.paths.get(usize::from(sf.local_path().0))?;
        let tcp = sf.carrier() == crate::Carrier::Tcp;
        Some(oracle::Netpath { src: lp.addr.ip(), dst: sf.remote().ip(), iface: sf.local_path().0, tcp })
    }

    /// What each subflow did since the last call, for the oracle: `(netpath, sample)`.
    pub(crate) fn oracle_samples(&mut self, out: &mut impl FnMut(oracle::Netpath, oracle::Sample)) {
        for i in 0..self.subflows.slot_bound() {
            let open = self.subflows.get(i).is_some_and(|s| s.is_open());
            let Some(np) = self.netpath(i).filter(|_| open) else { continue };
            let sf = &mut self.subflows[i];
            let d = sf.oracle_sample();
            let rtt = &sf.rec().rtt;
            // The RTO with its backoff, as Linux hands it to MultiMob's module.
            let rto = (rtt.rto() << sf.rec().rto_backoff.min(10)).min(rtt.max_rto());
            let (srtt, min_rtt) = if rtt.has_sample { (rtt.srtt, rtt.min) } else { (0, 0) };
            let received = d[3];
            out(np, oracle::Sample { sent: d[0], lost: d[1], retransmitted: d[2], rto, srtt, min_rtt, received });
        }
    }

    /// Applies an oracle decision to this connection's subflows on that netpath.
    pub(crate) fn apply_oracle(&mut self, now: Time, a: oracle::Action) {
        let on = (0..self.subflows.slot_bound().min(64))
            .filter(|&k| self.subflows.get(k).is_some_and(|s| s.is_open()) && self.netpath(k) == Some(a.netpath))
            .fold(0u64, |m, k| m | 1 << k);
        if on == 0 || self.is_closed() {
            return;
        }
        if let Some(path) = self.netpath_path(&a.netpath) {
            self.emit(now, Event::Verdict { path, verdict: a.verdict });
        }
        let mut set_flags = |bad: Option<bool>, high_rto: Option<bool>| {
            for (k, sf) in self.subflows.enumerate_mut() {
                if on & (1 << k) != 0 {
                    sf.set_oracle_flags(bad.unwrap_or(sf.was_bad()), high_rto.unwrap_or(sf.high_rto()));
                }
            }
        };
        match a.verdict {
            oracle::Verdict::Bad => self.fail_over(now, true, |k, _| on & (1 << k) != 0),
            oracle::Verdict::HighRto => {
                set_flags(None, Some(true));
                self.open_other_paths(now, false, true);
            }
            oracle::Verdict::Clear => {
                set_flags(Some(false), Some(false));
                // A regular subflow may be healthy from now on: the fail-back hold starts.
                self.check_fail_back(now);
            }
        }
    }

    // The failover policy of a silent path (the timers call it).

    /// The conditions under which a `multimob` client's tail loss probe may fail the path over:
    /// a regular subflow, no other usable one, a path left to open.
    pub(super) fn tlp_may_fail_over(&self, i: usize) -> bool {
        let sf = &self.subflows[i];
        let alone = !self.subflows.iter().any(|s| s.id() != sf.id() && s.is_open() && !s.pf());
        self.config.multipath.path_manager == PathManager::MultiMob
            && self.config.multipath.failover_on_timeout
            && self.side == Side::Client
            && !sf.backup()
            && alone
            && self.has_unused_path()
    }

    /// Whether subflow `i`'s unanswered tail loss probe should move its data to another
    /// subflow at once: one is established and not failed (a failover subflow still open, the
    /// server's side of it), and `i` is not already failed.
    pub(super) fn tlp_may_reinject(&self, i: usize) -> bool {
        let sf = &self.subflows[i];
        !sf.pf() && self.subflows.iter().any(|s| s.id() != sf.id() && s.established() && !s.pf())
    }

    /// Subflow `i`'s path answers nothing: its tail loss probe went unanswered, or a whole
    /// flight of two or more packets did. See the timers' `on_tlp_check`.
    pub(super) fn on_path_silent(&mut self, now: Time, i: usize) {
        if !self.tlp_may_fail_over(i) {
            if self.tlp_may_reinject(i) {
                self.suspect(now, i);
            }
            return;
        }
        if let Some(netpath) = self.netpath(i) {
            let since = now.saturating_sub(self.subflows[i].silent_for(now));
            self.out.endpoint(EndpointEvent::NetpathFailed { netpath, since });
        }
        let id = self.subflows[i].id();
        self.fail_over(now, true, |_, s| s.id() == id);
    }
}
