//! A fleet server's stateless resets (PROTOCOL.md §3.4; issue 38): a server that gets a short
//! header whose CID names no connection of its own answers with a STATELESS_RESET carrying the
//! CID's token, which every server of the fleet derives from the shared secret. The endpoint
//! (`accept.rs`) asks this component for one; a client that gets one hands it to the
//! connection holding that token.

use crate::limiter::TokenBucket;
use crate::wire::packet::{self, Reset};
use crate::wire::{Cid, Writer};
use crate::{crypto, Time};

/// Resets a server sends per second at most (a bucket holding a tenth of a second's worth):
/// each answers a datagram at least as large, so a flood of unknown CIDs is not amplified,
/// and the bound keeps it from filling the stateless queue.
const RESETS_PER_S: f64 = 1_000.0;
const RESET_BURST: f64 = 100.0;

/// A fleet server's reset key and budget.
pub(super) struct Resetter {
    key: [u8; 32],
    bucket: TokenBucket,
}

impl Resetter {
    pub(super) fn new(fleet: Option<&crate::Fleet>) -> Option<Self> {
        let key = crypto::fleet_key(&fleet?.secret, crypto::FleetKey::Reset);
        Some(Self { key, bucket: TokenBucket::full(RESET_BURST, 0) })
    }

    /// The STATELESS_RESET answering a short header of `len` bytes for CID `dcid`, within the
    /// budget and never larger than what came.
    pub(super) fn reset_for(&mut self, now: Time, dcid: &Cid, len: usize) -> Option<Vec<u8>> {
        if len <= Reset::LEN || !self.bucket.refill(now, RESETS_PER_S, RESET_BURST) {
            return None;
        }
        self.bucket.take();
        // The CID as the server issued it: `cid_len` bytes significant, the rest zero (§2).
        let token = crypto::reset_token(&self.key, &dcid.0);
        let mut out = vec![0u8; Reset::LEN];
        (Reset { version: packet::VERSION_2, token }).emit(&mut Writer::new(&mut out)).is_ok().then_some(out)
    }
}
