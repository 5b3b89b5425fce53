//! The endpoint's routes: which connection a CID or a join token names, and the CIDs of
//! connections forgotten less than a cookie lifetime ago (§4.4: a replayed CONFIRM must not
//! open one again). Every operation costs O(1) (amortized): forgetting a connection removes
//! the routes it names, not a scan of every route, and closed CIDs expire from the front of a
//! queue kept in expiry order (issue 19: at 50,000 connections, a scan per closed connection
//! made closing them all take minutes).

use crate::wire::Cid;
use crate::Time;
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasher, Hasher};

/// The hash of the CID routes: every datagram's CID is looked up, and SipHash cost a bulk
/// receiver 2 % of its CPU (issue 57). The keys are nearly all the endpoint's own CIDs
/// (random, or random past a fleet's server number); a peer chooses the CIDs looked up, and
/// only the original DCID of a 0-RTT connection it opened (one full accept each). Against a
/// peer that would aim its keys at one bucket, the hash is keyed, with a key drawn per table
/// as std's is: a keyed multiply-and-fold of the 8 bytes and splitmix64's finalizer.
#[derive(Clone, Debug)]
pub(crate) struct CidHash {
    key: u64,
}

impl Default for CidHash {
    fn default() -> Self {
        Self { key: std::collections::hash_map::RandomState::new().hash_one(0x6d70_7564_7000_u64) }
    }
}

impl BuildHasher for CidHash {
    type Hasher = CidHasher;
    fn build_hasher(&self) -> CidHasher {
        CidHasher(self.key)
    }
}

/// See [`CidHash`].
#[derive(Clone, Debug)]
pub(crate) struct CidHasher(u64);

impl Hasher for CidHasher {
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            self.0 = (self.0 ^ u64::from_le_bytes(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(29);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.write(&(n as u64).to_le_bytes());
    }
    fn finish(&self) -> u64 {
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[derive(Debug, Default)]
pub(crate) struct Routes {
    by_cid: HashMap<Cid, usize, CidHash>,
    by_token: HashMap<u32, usize>,
    closed: HashMap<Cid, Time, CidHash>,
    /// The closed CIDs by expiry (non-decreasing: the endpoint's time only moves forward).
    expiry: VecDeque<(Time, Cid)>,
}

impl Routes {
    /// The connection a CID names.
    pub(crate) fn cid(&self, cid: &Cid) -> Option<usize> {
        self.by_cid.get(cid).copied()
    }

    /// The connection a token names.
    pub(crate) fn token(&self, token: u32) -> Option<usize> {
        self.by_token.get(&token).copied()
    }

    /// Whether a CID is in use, or was by a connection forgotten within the cookie lifetime.
    pub(crate) fn cid_taken(&self, cid: &Cid) -> bool {
        self.by_cid.contains_key(cid) || self.closed.contains_key(cid)
    }

    /// Whether a CID belonged to a connection forgotten within the cookie lifetime.
    pub(crate) fn closed(&self, cid: &Cid) -> bool {
        self.closed.contains_key(cid)
    }

    pub(crate) fn token_taken(&self, token: u32) -> bool {
        self.by_token.contains_key(&token)
    }

    pub(crate) fn add_cid(&mut self, cid: Cid, idx: usize) {
        self.by_cid.insert(cid, idx);
    }

    /// Removes a CID's route if it is connection `idx`'s.
    pub(crate) fn retire_cid(&mut self, cid: &Cid, idx: usize) {
        if self.by_cid.get(cid) == Some(&idx) {
            self.by_cid.remove(cid);
        }
    }

    /// Routes `token` to `idx`; false if another connection has it (§4.3: tokens are unique).
    pub(crate) fn add_token(&mut self, token: u32, idx: usize) -> bool {
        match self.by_token.get(&token) {
            Some(&o) if o != idx => false,
            _ => {
                self.by_token.insert(token, idx);
                true
            }
        }
    }

    /// Connection `idx` is forgotten: its CIDs (those it still holds) are remembered as closed
    /// until `expiry`, its token freed.
    pub(crate) fn forget(&mut self, idx: usize, cids: impl Iterator<Item = Cid>, token: Option<u32>, expiry: Time) {
        for cid in cids {
            if self.by_cid.get(&cid) == Some(&idx) {
                self.by_cid.remove(&cid);
                self.closed.insert(cid, expiry);
                self.expiry.push_back((expiry, cid));
            }
        }
        if let Some(t) = token {
            if self.by_token.get(&t) == Some(&idx) {
                self.by_token.remove(&t);
            }
        }
        debug_assert!(!self.by_cid.values().any(|&i| i == idx), "a forgotten connection left a CID route");
        debug_assert!(!self.by_token.values().any(|&i| i == idx), "a forgotten connection left its token");
    }

    /// Forgets the closed CIDs whose time is over.
    pub(crate) fn expire(&mut self, now: Time) {
        while self.expiry.front().is_some_and(|&(t, _)| t <= now) {
            if let Some((t, cid)) = self.expiry.pop_front() {
                // Only if not closed again since (a later expiry then stands).
                if self.closed.get(&cid) == Some(&t) {
                    self.closed.remove(&cid);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forgetting_moves_a_connections_routes_to_closed_until_they_expire() {
        let mut r = Routes::default();
        let (a, b, c) = (Cid([1; 8]), Cid([2; 8]), Cid([3; 8]));
        r.add_cid(a, 0);
        r.add_cid(b, 0);
        r.add_cid(c, 1);
        assert!(r.add_token(7, 0) && !r.add_token(7, 1) && r.add_token(7, 0));
        r.retire_cid(&c, 0);
        assert_eq!(r.cid(&c), Some(1), "only the owner retires a route");
        r.forget(0, [a, b].into_iter(), Some(7), 100);
        assert_eq!((r.cid(&a), r.token(7)), (None, None));
        assert!(r.closed(&a) && r.cid_taken(&b) && !r.token_taken(7));
        r.expire(99);
        assert!(r.closed(&a));
        r.expire(100);
        assert!(!r.closed(&a) && !r.closed(&b) && r.cid_taken(&c));
    }
}
