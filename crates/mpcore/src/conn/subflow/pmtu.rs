//! Path MTU discovery for one subflow (PROTOCOL.md §10; RFC 8899's datagram packetization
//! layer PMTUD, as QUIC does it, RFC 9000 §14.3).
//!
//! A subflow starts at the base size, 1200 bytes, which every path that carries the protocol
//! carries (a cellular path may carry no more). It then probes upward with packets of a PING
//! and PADDING: first the largest size allowed (the configured maximum, and the peer's), which
//! a path with a 1500-byte MTU carries at once, then, after [`MAX_PROBES`] losses of one size,
//! halfway between what works and what failed, until the two are within [`MIN_STEP`] bytes.
//! A probe's loss says nothing about congestion: it is not counted as a loss and does not
//! shrink the window (RFC 8899 §4.4). A finished search starts again after [`RAISE_INTERVAL`]
//! (RFC 8899's PMTU_RAISE_TIMER), as the path may have changed. A retransmission timeout while
//! above the base size may be a black hole (a path whose MTU fell: every full packet lost,
//! RFC 8899 §4.3): the subflow falls back to the base size and searches again after
//! [`BLACK_HOLE_HOLD`].

use crate::Time;

/// A probe of one size is given up after this many losses (RFC 8899 MAX_PROBES).
pub const MAX_PROBES: u8 = 3;
/// The search ends when what works and what failed are this close.
pub const MIN_STEP: usize = 20;
/// A finished search starts again after this long (RFC 8899 PMTU_RAISE_TIMER: 600 s).
pub const RAISE_INTERVAL: Time = 600_000_000;
/// After a suspected black hole, the search waits this long before probing again.
pub const BLACK_HOLE_HOLD: Time = 60_000_000;

/// One subflow's path MTU state: sizes are UDP payload bytes.
#[derive(Clone, Copy, Debug)]
pub struct Pmtu {
    base: usize,
    max: usize,
    /// The largest datagram known to cross the path (at least `base`).
    current: usize,
    /// The largest size still worth trying: the maximum, or one below a size that failed.
    ceiling: usize,
    /// The size being probed and how many of its probes were lost.
    trying: usize,
    failures: u8,
    /// A probe is in flight.
    in_flight: bool,
    /// No probe before this time.
    next_at: Time,
}

impl Pmtu {
    /// Starts at `base`, searching up to `max` (no search when `max <= base`).
    pub fn new(base: usize, max: usize, now: Time) -> Self {
        let max = max.max(base);
        Self { base, max, current: base, ceiling: max, trying: max, failures: 0, in_flight: false, next_at: now }
    }

    /// The largest datagram to send on the path.
    pub fn current(&self) -> usize {
        self.current
    }

    /// The maximum changed (the peer's transport parameters arrived): the search aims there.
    pub fn set_max(&mut self, max: usize) {
        let max = max.max(self.base);
        if max > self.max && self.ceiling == self.max {
            // Nothing failed yet above the old maximum: aim at the new one.
            self.ceiling = max;
            self.trying = max;
        }
        self.max = max;
        self.ceiling = self.ceiling.min(max);
        self.current = self.current.min(max);
        self.trying = self.trying.min(self.ceiling);
    }

    /// A size above `current` is worth a probe: what failed is still `MIN_STEP` away, or
    /// nothing failed and the maximum is above.
    fn searching(&self) -> bool {
        self.ceiling > self.current && (self.ceiling - self.current >= MIN_STEP || self.ceiling == self.max)
    }

    /// The size of the probe to send now, if one is due (none in flight, the search not over).
    pub fn probe_due(&self, now: Time) -> Option<usize> {
        (!self.in_flight && now >= self.next_at && self.searching()).then_some(self.trying)
    }

    /// A probe left.
    pub fn on_probe_sent(&mut self) {
        self.in_flight = true;
    }

    /// The probe of `size` bytes was acknowledged: the path carries it.
    pub fn on_probe_acked(&mut self, size: usize, now: Time) {
        self.in_flight = false;
        self.current = self.current.max(size);
        self.failures = 0;
        self.next_step(now);
    }

    /// The probe of `size` bytes was declared lost (or its subflow timed out).
    pub fn on_probe_lost(&mut self, size: usize, now: Time) {
        self.in_flight = false;
        if size != self.trying {
            return;
        }
        self.failures += 1;
        if self.failures >= MAX_PROBES {
            self.failures = 0;
            self.ceiling = size - 1;
            self.next_step(now);
        }
    }

    /// The next size to try, halfway between what works and what failed; or, the search
    /// over, none until the raise timer (which tries the maximum again).
    fn next_step(&mut self, now: Time) {
        if self.searching() {
            self.trying = (self.current + self.ceiling).div_ceil(2).max(self.current + MIN_STEP).min(self.ceiling);
        } else {
            self.next_at = now + RAISE_INTERVAL;
            self.ceiling = self.max;
            self.trying = self.max;
        }
    }

    /// A retransmission timeout: above the base size it may be a black hole, so the subflow
    /// sends at the base size again and searches anew after [`BLACK_HOLE_HOLD`].
    pub fn on_timeout(&mut self, now: Time) {
        if self.current > self.base {
            *self = Self::new(self.base, self.max, now + BLACK_HOLE_HOLD);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search against a path that carries `mtu`; returns the sizes probed.
    fn search(p: &mut Pmtu, mtu: usize) -> Vec<usize> {
        let mut tried = Vec::new();
        while let Some(size) = p.probe_due(0) {
            tried.push(size);
            p.on_probe_sent();
            if size <= mtu {
                p.on_probe_acked(size, 0);
            } else {
                p.on_probe_lost(size, 0);
            }
            assert!(tried.len() < 100, "the search ends: {tried:?}");
        }
        tried
    }

    #[test]
    fn a_path_that_carries_the_maximum_takes_one_probe() {
        let mut p = Pmtu::new(1200, 1452, 0);
        assert_eq!(search(&mut p, 1500), [1452]);
        assert_eq!(p.current(), 1452);
        assert_eq!(p.probe_due(RAISE_INTERVAL), None, "at the maximum: nothing more to find");
    }

    #[test]
    fn a_finished_search_tries_the_maximum_again_after_the_raise_timer() {
        let mut p = Pmtu::new(1200, 1452, 0);
        search(&mut p, 1400);
        assert_eq!(p.probe_due(RAISE_INTERVAL - 1), None, "nothing until the raise timer");
        assert_eq!(p.probe_due(RAISE_INTERVAL), Some(1452), "then the maximum again");
    }

    #[test]
    fn a_smaller_path_mtu_is_found_within_the_step() {
        for mtu in [1200, 1280, 1350, 1400, 1451] {
            let mut p = Pmtu::new(1200, 1452, 0);
            let tried = search(&mut p, mtu);
            assert!(p.current() <= mtu && p.current() + MIN_STEP > mtu, "{mtu}: found {} via {tried:?}", p.current());
            // Each failed size costs MAX_PROBES probes; a binary search needs few sizes.
            assert!(tried.len() <= 3 * 8, "{mtu}: {tried:?}");
        }
    }

    #[test]
    fn no_search_without_room_and_a_timeout_falls_back_to_the_base() {
        assert_eq!(Pmtu::new(1200, 1200, 0).probe_due(0), None);
        let mut p = Pmtu::new(1200, 1452, 0);
        search(&mut p, 1500);
        p.on_timeout(5);
        assert_eq!(p.current(), 1200, "a black hole is suspected");
        assert_eq!(p.probe_due(5 + BLACK_HOLE_HOLD - 1), None);
        assert_eq!(p.probe_due(5 + BLACK_HOLE_HOLD), Some(1452));
        let mut q = Pmtu::new(1200, 1452, 0);
        q.on_timeout(5);
        assert_eq!(q.probe_due(5), Some(1452), "at the base already: nothing to suspect");
    }

    #[test]
    fn one_lost_probe_is_tried_again_and_the_peer_sets_the_maximum() {
        let mut p = Pmtu::new(1200, 1452, 0);
        p.on_probe_sent();
        p.on_probe_lost(1452, 0);
        assert_eq!(p.probe_due(0), Some(1452), "a loss may be chance: the same size again");
        p.set_max(1300);
        assert_eq!(p.probe_due(0), Some(1300));
        let mut q = Pmtu::new(1200, 1200, 0);
        assert_eq!(q.probe_due(0), None, "before the peer's parameters: nothing above the base");
        q.set_max(1452);
        assert_eq!(q.probe_due(0), Some(1452), "then the peer's maximum");
    }
}
