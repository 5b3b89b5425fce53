//! The `multimob` path manager's oracle over every connection of a client endpoint (MultiMob
//! §III-B): its periods, its decisions applied to every connection on a netpath, and its sleep
//! while nothing happens.

use super::Endpoint;
use crate::Time;

impl Endpoint {
    /// The oracle's period (MultiMob §III-B): every subflow of every connection reports to
    /// its netpath, and each decision is applied to every connection on that netpath.
    pub(super) fn run_oracle(&mut self, now: Time) {
        let Some(o) = self.oracle.as_mut() else { return };
        if o.poll_timeout().is_none_or(|t| now < t) {
            return;
        }
        for c in self.conns.values_mut() {
            c.oracle_samples(&mut |np, s| o.record(np, s));
        }
        self.oracle_actions.clear();
        o.handle_timeout(now, &mut self.oracle_actions);
        for k in 0..self.oracle_actions.len() {
            let a = self.oracle_actions[k];
            tracing::debug!(?a, "oracle");
            self.apply_oracle(now, a);
        }
        self.prewarm(now);
        // The next period would change nothing unless something happens before it: the oracle
        // sleeps until a datagram or a connection's timer (`wake_oracle`), unless the
        // pre-warming, which runs on its periods, is holding a radio warm.
        if !self.prewarm_holding(now) {
            if let Some(o) = self.oracle.as_mut() {
                o.sleep();
            }
        }
    }

    /// Something that may change the oracle's samples happened at `now` (a datagram, a
    /// connection's timer, a new connection, the application's hint): its periods resume.
    pub(super) fn wake_oracle(&mut self, now: Time) {
        if let Some(o) = self.oracle.as_mut() {
            o.wake(now);
        }
    }

    /// A connection found `np` failed: the oracle declares it bad for every connection on it.
    pub(super) fn declare_bad(&mut self, now: Time, np: oracle::Netpath) {
        let Some(a) = self.oracle.as_mut().and_then(|o| o.declare_bad(np)) else { return };
        tracing::debug!(?a, "oracle: netpath declared bad by a timeout");
        self.apply_oracle(now, a);
    }

    fn apply_oracle(&mut self, now: Time, a: oracle::Action) {
        for idx in 0..self.conns.bound() {
            if let Some(c) = self.conns.get_mut(idx) {
                c.apply_oracle(now, a);
                self.apply_events(idx, now);
            }
        }
    }

    /// The oracle's view of a netpath (the `multimob` path manager's client only).
    pub fn oracle(&self) -> Option<&oracle::Oracle> {
        self.oracle.as_ref()
    }
}
