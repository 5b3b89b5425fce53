//! The endpoint's side of stateless reset (PROTOCOL.md §3.4; issue 38). A fleet's server that
//! gets a short header whose CID names no connection of its own answers with a
//! STATELESS_RESET carrying the CID's token, which every server of the fleet derives from the
//! shared secret; a client that gets one hands it to the connection holding that token.

use super::{Endpoint, STATELESS_QUEUE};
use crate::limiter::TokenBucket;
use crate::wire::packet::{self, Reset, RESET_TOKEN_LEN};
use crate::wire::{Cid, Writer};
use crate::{crypto, PathId, Time};
use std::net::SocketAddr;

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
}

impl Endpoint {
    /// A short header of `len` bytes for CID `dcid`, which no connection here has: a fleet's
    /// server resets it (within its budget, never larger than what came).
    pub(super) fn unknown_short(&mut self, now: Time, path: PathId, remote: SocketAddr, dcid: &Cid, len: usize) {
        self.drops.unknown_cid += 1;
        let Some(r) = self.resetter.as_mut().filter(|_| self.server) else { return };
        if len <= Reset::LEN
            || self.stateless.len() >= STATELESS_QUEUE
            || !r.bucket.refill(now, RESETS_PER_S, RESET_BURST)
        {
            return;
        }
        r.bucket.take();
        // The CID as the server issued it: `cid_len` bytes significant, the rest zero (§2).
        let token = crypto::reset_token(&r.key, &dcid.0);
        let mut out = vec![0u8; Reset::LEN];
        if (Reset { version: packet::VERSION_2, token }).emit(&mut Writer::new(&mut out)).is_ok() {
            self.handshakes.resets_sent += 1;
            self.stateless.push_back((path, remote, out, self.rx_carrier));
        }
    }

    /// A STATELESS_RESET with `token` arrived: the client's connection that holds the token
    /// loses the subflows it names (and ends if none is left). A server ignores resets.
    pub(super) fn on_reset(&mut self, now: Time, token: &[u8; RESET_TOKEN_LEN]) {
        // A client endpoint has few connections: a scan, on a packet that is never the
        // steady state (a forged one costs its receiver a scan and nothing else).
        let found = (!self.server)
            .then(|| self.conns.indexes().find(|&i| self.conns.get(i).is_some_and(|c| c.is_reset_by(token))))
            .flatten();
        let Some(idx) = found else {
            self.drops.unknown_cid += 1;
            return;
        };
        if let Some(c) = self.conns.get_mut(idx) {
            c.on_stateless_reset(now, token);
            self.handshakes.resets_received += 1;
        }
        self.apply_events(idx, now);
    }
}
