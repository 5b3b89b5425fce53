//! The `multimob` path manager's oracle over every connection of a client endpoint (MultiMob
//! §III-B): its periods, its decisions applied to every connection on a netpath, and its sleep
//! while nothing happens; and the pre-warming of the cellular radio its suspicions start
//! (`prewarm.rs` keeps its state, `netpaths.rs` what the endpoint heard and who probes).

use super::Endpoint;
use crate::radio::{LinkHint, WARM};
use crate::{Iface, PathId, Time};
use std::net::SocketAddr;

impl Endpoint {
    /// The oracle's period (MultiMob §III-B): every subflow of every connection reports to
    /// its netpath, and each decision is applied to every connection on that netpath.
    pub(super) fn run_oracle(&mut self, now: Time) {
        let Some(o) = self.oracle.as_mut() else { return };
        if o.poll_timeout().is_none_or(|t| now < t) {
            return;
        }
        for c in self.conns.values_mut() {
            c.with_paths(|p, _| p.oracle_samples(&mut |np, s| o.record(np, s)));
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

    /// A connection found `np` failed, silent to it since `since`: the oracle declares it bad
    /// for every connection on it, unless the netpath brought another connection a packet
    /// after `since`. Then the path works and the silence was that connection's (a loss, or
    /// a stall of its own): it fails over alone. Without that test, one connection's silence
    /// moved every connection of an endpoint to the other path at once: at 10,000
    /// connections, a herd of joins and probes that overloaded the host, whose delays then
    /// looked like a failing network (issue 52).
    pub(super) fn declare_bad(&mut self, now: Time, np: oracle::Netpath, since: Time) {
        if self.heard.after(np, since) {
            self.heard.refuted += 1;
            tracing::debug!(?np, since, "oracle: a connection's silence on a netpath that others heard from");
            return;
        }
        let Some(a) = self.oracle.as_mut().and_then(|o| o.declare_bad(np)) else { return };
        tracing::debug!(?a, "oracle: netpath declared bad by a timeout");
        self.apply_oracle(now, a);
    }

    fn apply_oracle(&mut self, now: Time, a: oracle::Action) {
        for idx in 0..self.conns.bound() {
            if let Some(c) = self.conns.get_mut(idx) {
                c.with_paths(|p, cx| p.apply_oracle(cx, now, a));
                self.apply_events(idx, now);
            }
        }
    }

    /// The oracle's view of a netpath (the `multimob` path manager's client only).
    pub fn oracle(&self) -> Option<&oracle::Oracle> {
        self.oracle.as_ref()
    }
}

impl Endpoint {
    /// A packet from `remote` on local `path` was taken by a connection: the netpath works
    /// (noted only where an oracle judges netpaths).
    pub(super) fn heard_from(&mut self, now: Time, path: PathId, remote: SocketAddr) {
        if self.oracle.is_none() {
            return;
        }
        let Some(lp) = self.path(path) else { return };
        let tcp = self.rx_carrier == crate::Carrier::Tcp;
        let np = oracle::Netpath { src: lp.addr.ip(), dst: remote.ip(), iface: path.0, tcp };
        self.heard.note(np, now);
    }

    /// How many connections' reports of a failed netpath were refuted by a packet another
    /// connection took from it after their silence began (`multimob` clients).
    pub fn netpath_failures_refuted(&self) -> u64 {
        self.heard.refuted
    }
}

impl Endpoint {
    /// Brings the count of probing connections up to date with the connections changed since
    /// it last looked (those whose deadline is stale: every call into a connection makes it
    /// so), and returns the interval their probes keep (`multimob` clients only).
    pub(super) fn count_probing(&mut self) -> Option<Time> {
        self.oracle.as_ref()?;
        for &idx in self.activity.stale() {
            let on = self.conns.get(idx).is_some_and(|c| c.path_layer().failover_open());
            self.probing.set(idx, on);
        }
        Some(self.probing.interval())
    }
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
        if self.warmer.hint(p, hint, now) {
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
        let hinted = self.warmer.last_hinted(warmable);
        let oracle = self.oracle.iter().flat_map(|o| o.suspicions());
        let measured = oracle.filter(|(np, _)| warmable(usize::from(np.iface))).map(|(_, t)| t).max();
        hinted.max(measured)
    }

    /// Whether a suspicion within `Prewarm::hold` keeps the cellular radios warm (the
    /// periods that warm them must go on).
    pub(super) fn prewarm_holding(&self, now: Time) -> bool {
        let cfg = self.config.multipath.prewarm;
        cfg.every != 0 && !self.server && self.last_suspicion().is_some_and(|l| now <= l.saturating_add(cfg.hold))
    }

    /// Warms every cellular path not warmed for `Prewarm::every`, while a regular path has
    /// been suspected within `Prewarm::hold` (client endpoints only).
    pub(super) fn prewarm(&mut self, now: Time) {
        if !self.prewarm_holding(now) {
            return;
        }
        let cfg = self.config.multipath.prewarm;
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
            if self.warmer.warm_at(p, now, cfg.every) {
                continue;
            }
            // A path carrying a connection's traffic has its radio awake already.
            let since = now.saturating_sub(cfg.every);
            if self.conns.values().any(|c| c.path_active_since(path, since)) {
                continue;
            }
            self.warmer.warmed(p, now);
            self.stateless.push_back((path, remote, WARM.to_vec(), crate::Carrier::Udp));
            tracing::debug!(path = p, "pre-warming the cellular radio");
        }
    }

    /// A WARM datagram arrived: discarded (counted).
    pub(super) fn on_warm(&mut self) {
        self.warmer.received += 1;
    }
}
