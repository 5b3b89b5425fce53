//! How many first packets a server answers per source address and second (issue 19). A flood
//! of replayed INITIALs from a few hundred addresses then costs the server a table lookup per
//! datagram instead of a RETRY (two HMACs and a datagram sent): it reads its socket faster than
//! the flood fills it, so the kernel no longer drops the packets of established connections
//! (nor the first packets of new clients) in a full receive queue.
//!
//! A fixed table of token buckets indexed by a keyed hash of the source (IP and port, so that the
//! clients behind one NAT address are counted apart); a source that lands on a slot held by
//! another takes it over with a fresh count, so a collision lets packets through rather than
//! locking a client out. Sources spread over more addresses than the table has slots (a
//! spoofed flood) are left to `Config::server.retry_above` and the bounded queue of stateless answers.

use crate::Time;
use std::hash::{Hash, Hasher};
use std::net::SocketAddr;

/// Slots in the table (a power of two): 384 KiB, allocated at the first INITIAL.
const SLOTS: usize = 1 << 14;

/// A token bucket: refilled at a rate, holding at most a burst (the endpoint's `retry_above`
/// budget of key agreements, and each source's budget here).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct TokenBucket {
    tokens: f64,
    at: Time,
}

impl TokenBucket {
    /// A full bucket at `now`.
    pub(crate) fn full(burst: f64, now: Time) -> Self {
        Self { tokens: burst, at: now }
    }

    /// Adds what `rate` per second gives since the last refill, up to `burst`; whether a
    /// token is there.
    pub(crate) fn refill(&mut self, now: Time, rate: f64, burst: f64) -> bool {
        let dt = now.saturating_sub(self.at) as f64 / 1e6;
        self.tokens = (self.tokens + dt * rate).min(burst);
        self.at = self.at.max(now);
        self.tokens >= 1.0
    }

    /// Takes a token (none below zero).
    pub(crate) fn take(&mut self) {
        self.tokens = (self.tokens - 1.0).max(0.0);
    }
}

/// A source's budget: a bucket refilled at `per_second`, holding half a second's worth, so
/// that the sources' answers spread over time instead of all coming at each second's start
/// (every source's budget refilled at once made the server do a burst of key agreements, and
/// established connections' packets waited behind it).
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    tag: u64,
    bucket: TokenBucket,
}

#[derive(Debug)]
pub(crate) struct SourceLimiter {
    per_second: u32,
    key: u64,
    slots: Vec<Slot>,
}

impl SourceLimiter {
    /// At most `per_second` answers per source and second (0: no limit); `key` keys the hash.
    pub(crate) fn new(per_second: u32, key: u64) -> Self {
        Self { per_second, key, slots: Vec::new() }
    }

    /// Whether an INITIAL from `from` at `now` may be answered (and counts it if so).
    pub(crate) fn allow(&mut self, now: Time, from: &SocketAddr) -> bool {
        if self.per_second == 0 {
            return true;
        }
        if self.slots.is_empty() {
            self.slots = vec![Slot::default(); SLOTS];
        }
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (self.key, from).hash(&mut h);
        let tag = h.finish() | 1;
        let rate = f64::from(self.per_second);
        let burst = (rate / 2.0).max(1.0);
        let slot = &mut self.slots[(tag >> 17) as usize & (SLOTS - 1)];
        if slot.tag != tag {
            *slot = Slot { tag, bucket: TokenBucket::full(burst, now) };
        }
        let allowed = slot.bucket.refill(now, rate, burst);
        if allowed {
            slot.bucket.take();
        }
        allowed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_source_gets_its_budget_each_second() {
        let mut l = SourceLimiter::new(8, 7);
        let a: SocketAddr = "198.51.100.1:4000".parse().unwrap();
        let b: SocketAddr = "198.51.100.1:4001".parse().unwrap();
        let n = |l: &mut SourceLimiter, t, s| (0..10).filter(|_| l.allow(t, s)).count();
        assert_eq!(n(&mut l, 0, &a), 4, "half a second's worth at once");
        assert_eq!(n(&mut l, 10, &b), 4, "another port of the same address counts apart");
        assert_eq!(n(&mut l, 100_000, &a), 0, "then one per 125 ms");
        assert_eq!(n(&mut l, 125_000, &a), 1);
        // Over ten seconds of asking every millisecond: 8 a second, spread evenly.
        let got: Vec<u64> = (0..10_000u64).filter(|ms| l.allow(200_000 + ms * 1000, &a)).collect();
        assert!((80..=84).contains(&got.len()), "{}", got.len());
        assert!(got.windows(2).all(|w| w[1] - w[0] >= 100), "no bursts: {got:?}");
        assert!((0..100).all(|_| SourceLimiter::new(0, 7).allow(5, &a)), "0: no limit");
    }
}
