//! Waking the phone's cellular radio before it is needed (issue 32).
//!
//! A cellular radio idle for its tail (11.6 s in LTE) sends its next packet only after a
//! promotion (0.26 s); break-before-make opens cellular exactly when it is idle, so the
//! promotion is the largest part of a failover. When a regular path is first *suspected*
//! (the oracle's test of its losses, or its delay, [`oracle::Oracle::suspected_at`]; or the
//! app's [`LinkHint`] says the OS finds the network
//! degraded, the signal weak or the link slow), the endpoint sends one WARM datagram on every
//! cellular path (PROTOCOL.md §3.3: one byte, discarded by the receiver): the promotion then
//! overlaps the rest of the detection, and the subflow is opened only on the verdict, as
//! before. While the suspicion lasts it warms again every [`crate::Prewarm::every`] (inside the
//! radio's tail), for at most [`crate::Prewarm::hold`] after the last suspicion. Each warm-up of an
//! idle LTE radio costs a promotion and a tail, about 13 J: the setting is the trade-off.

use super::Endpoint;
use crate::radio::{LinkHint, WARM};
use crate::{Iface, PathId, Time};

/// The endpoint's pre-warming state.
#[derive(Debug, Default)]
pub(super) struct Warmer {
    /// Per local path: the last WARM sent on it.
    warmed: Vec<Option<Time>>,
    /// Per local path: the app's last hint, and when a suspicious one came.
    hints: Vec<(LinkHint, Option<Time>)>,
    /// WARM datagrams sent and received.
    pub(super) sent: u64,
    pub(super) received: u64,
}

impl Endpoint {
    /// The app's word on local path `path`'s link (see [`LinkHint`]). A suspicious hint on
    /// a regular path wakes the cellular radio at once, where pre-warming is on.
    pub fn path_hint(&mut self, now: Time, path: PathId, hint: LinkHint) {
        self.now = self.now.max(now);
        self.wake_oracle(now);
        let p = usize::from(path.0);
        if p >= self.paths.len() {
            return;
        }
        let w = &mut self.warmer;
        if w.hints.len() <= p {
            w.hints.resize(p + 1, (LinkHint::default(), None));
        }
        w.hints[p].0 = hint;
        if hint.suspicious() {
            w.hints[p].1 = Some(now);
            self.prewarm(now);
        }
    }

    /// WARM datagrams sent and received so far.
    pub fn warmups(&self) -> (u64, u64) {
        (self.warmer.sent, self.warmer.received)
    }

    /// The latest suspicion of a regular, non-cellular path, from the oracle or a hint.
    fn last_suspicion(&self) -> Option<Time> {
        let warmable = |p: usize| self.path(PathId(p as u8)).is_some_and(|lp| lp.iface != Iface::Cellular);
        let hinted = (self.warmer.hints.iter().enumerate())
            .filter(|(p, h)| h.0.suspicious() && warmable(*p))
            .filter_map(|(_, h)| h.1);
        let oracle = self.oracle.iter().flat_map(|o| o.suspicions());
        let measured = oracle.filter(|(np, _)| warmable(usize::from(np.iface))).map(|(_, t)| t);
        hinted.chain(measured).max()
    }

    /// Whether a suspicion within `Prewarm::hold` keeps the cellular radios warm (the
    /// periods that warm them must go on).
    pub(super) fn prewarm_holding(&self, now: Time) -> bool {
        let cfg = self.config.prewarm;
        cfg.every != 0 && !self.server && self.last_suspicion().is_some_and(|l| now <= l.saturating_add(cfg.hold))
    }

    /// Warms every cellular path not warmed for `Prewarm::every`, while a regular path has
    /// been suspected within `Prewarm::hold` (client endpoints only).
    pub(super) fn prewarm(&mut self, now: Time) {
        if !self.prewarm_holding(now) {
            return;
        }
        let cfg = self.config.prewarm;
        // Where to: the server of a live connection (any packet wakes the radio).
        let Some(remote) = self.conns.values().find_map(|c| (!c.is_closed()).then(|| c.peer_address()).flatten())
        else {
            return;
        };
        for p in 0..self.paths.len() {
            let path = PathId(p as u8);
            let cellular = self.path(path).is_some_and(|lp| lp.iface == Iface::Cellular);
            if !cellular || self.path_down[p] || self.unwritable.contains(path) {
                continue;
            }
            if self.warmer.warmed.len() <= p {
                self.warmer.warmed.resize(p + 1, None);
            }
            if self.warmer.warmed[p].is_some_and(|t| now < t.saturating_add(cfg.every)) {
                continue;
            }
            // A path carrying a connection's traffic has its radio awake already.
            let since = now.saturating_sub(cfg.every);
            if self.conns.values().any(|c| c.path_active_since(path, since)) {
                continue;
            }
            self.warmer.warmed[p] = Some(now);
            self.warmer.sent += 1;
            self.stateless.push_back((path, remote, WARM.to_vec(), crate::Carrier::Udp));
            tracing::debug!(path = p, "pre-warming the cellular radio");
        }
    }

    /// A WARM datagram arrived: discarded (counted).
    pub(super) fn on_warm(&mut self) {
        self.warmer.received += 1;
    }
}
