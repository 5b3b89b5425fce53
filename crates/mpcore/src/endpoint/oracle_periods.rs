//! The `multimob` path manager's oracle over every connection of a client endpoint (MultiMob
//! §III-B): its periods, its decisions applied to every connection on a netpath, and its sleep
//! while nothing happens.

use super::Endpoint;
use crate::{PathId, Time};
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

/// When each netpath last brought an authenticated packet to a connection of this (`multimob`
/// client) endpoint: the evidence against one connection's report that it failed.
#[derive(Debug, Default)]
pub(super) struct Heard {
    /// (netpath, the last time), one entry per netpath the endpoint heard from (a few).
    last: Vec<(oracle::Netpath, Time)>,
    /// Reports of a failed netpath refuted by a packet from it.
    pub(super) refuted: u64,
}

impl Heard {
    fn note(&mut self, np: oracle::Netpath, now: Time) {
        match self.last.iter_mut().find(|(n, _)| *n == np) {
            Some((_, t)) => *t = now,
            None => self.last.push((np, now)),
        }
    }

    /// Whether `np` brought a packet after `since`.
    fn after(&self, np: oracle::Netpath, since: Time) -> bool {
        self.last.iter().any(|&(n, t)| n == np && t > since)
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

/// The probes of a failover, per endpoint: while a connection's failover subflows are open,
/// each of its regular subflows is probed (so that it sees its path return and fails back),
/// a fifth of the oracle's period apart. Thousands of connections failing over at once
/// (one verdict moves every connection on a netpath) would send thousands of probes every
/// 100 ms: at 10,000 connections, 100,000 PINGs a second and their ACKs, which overloaded the
/// host until its own delays made every path look bad (issue 52). The oracle needs a few
/// samples per period, not one per connection: the endpoint spreads `PROBES_PER_SECOND`
/// over the connections that probe, and each probes at that pace when it is slower.
pub(super) const PROBES_PER_SECOND: u64 = 1_000;

/// Which connections probe for a failover, and how many do.
#[derive(Debug, Default)]
pub(super) struct Probing {
    on: Vec<bool>,
    count: u64,
}

impl Endpoint {
    /// Brings the count of probing connections up to date with the connections changed since
    /// it last looked (those whose deadline is stale: every call into a connection makes it
    /// so), and returns the interval their probes keep (`multimob` clients only).
    pub(super) fn count_probing(&mut self) -> Option<Time> {
        self.oracle.as_ref()?;
        for &idx in self.activity.stale() {
            let on = self.conns.get(idx).is_some_and(|c| c.failover_open());
            let p = &mut self.probing;
            if p.on.len() <= idx {
                p.on.resize(idx + 1, false);
            }
            if p.on[idx] != on {
                p.on[idx] = on;
                p.count = if on { p.count + 1 } else { p.count.saturating_sub(1) };
            }
        }
        Some(self.probing.count * 1_000_000 / PROBES_PER_SECOND)
    }
}
