//! MultiMob's connection-level state (its wiring is `multimob`).

use crate::Time;

/// MultiMob's state beyond the subflows' (which carry the oracle's flags): the client's
/// receive idle timer, the fail-back hold, and the endpoint's pace for the probes of a
/// failover.
#[derive(Debug, Default)]
pub(super) struct MultiMob {
    /// The receive idle timer (MultiMob §III-B).
    pub idle_timer: oracle::IdleTimer,
    /// Since when a regular subflow has been usable while failover subflows are open (the
    /// fail-back follows `Config::multipath.fail_back_hold` later).
    healthy_since: Option<Time>,
    /// While failover subflows are open, each regular subflow is probed this often (0: a
    /// fifth of the oracle's period). The endpoint sets it from how many of its connections
    /// probe (`Connection::set_probe_interval`).
    pub probe_every: Time,
}

impl MultiMob {
    /// A regular subflow works, its last loss at `last_loss`: the hold runs from the later of
    /// that loss and the hold's start. Returns where it starts.
    pub fn hold(&mut self, now: Time, last_loss: Time) -> Time {
        let since = (*self.healthy_since.get_or_insert(now)).max(last_loss);
        self.healthy_since = Some(since);
        since
    }

    /// No hold: no regular subflow works, no failover is open, or the fail-back happened.
    pub fn end_hold(&mut self) {
        self.healthy_since = None;
    }

    /// When the running hold started.
    pub fn hold_start(&self) -> Option<Time> {
        self.healthy_since
    }
}
