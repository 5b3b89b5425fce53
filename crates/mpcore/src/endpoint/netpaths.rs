//! What a `multimob` client endpoint watches of its netpaths for its oracle: when each last
//! brought a packet (the evidence against one connection's report that it failed), and which
//! connections probe for a failover (their pace). The endpoint (`oracle_periods.rs`) feeds them.

use crate::Time;

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
    pub(super) fn note(&mut self, np: oracle::Netpath, now: Time) {
        match self.last.iter_mut().find(|(n, _)| *n == np) {
            Some((_, t)) => *t = now,
            None => self.last.push((np, now)),
        }
    }

    /// Whether `np` brought a packet after `since`.
    pub(super) fn after(&self, np: oracle::Netpath, since: Time) -> bool {
        self.last.iter().any(|&(n, t)| n == np && t > since)
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

impl Probing {
    /// Connection `idx` probes (`on`) or not.
    pub(super) fn set(&mut self, idx: usize, on: bool) {
        if self.on.len() <= idx {
            self.on.resize(idx + 1, false);
        }
        if self.on[idx] != on {
            self.on[idx] = on;
            self.count = if on { self.count + 1 } else { self.count.saturating_sub(1) };
        }
    }

    /// The interval each probing connection's probes keep, µs.
    pub(super) fn interval(&self) -> Time {
        self.count * 1_000_000 / PROBES_PER_SECOND
    }
}
