//! 0-RTT data (PROTOCOL.md §4.9): a resuming client's first bytes, sent right after its
//! INITIAL in EARLY packets on subflow 0, sealed with the early key (from the ticket's PSK and
//! that INITIAL), their mappings' DSNs counted from the stream's start (the IDSN is not known
//! yet). They are subflow 0's first packets, so the server's ACKs of its short packets
//! acknowledge them and the client's loss recovery sends again, under the 1-RTT keys, what
//! did not arrive; a server that did not take them says so in its HANDSHAKE and the client
//! sends them again at once.
//!
//! - Client: [`Connection::write_early`](super::Connection::write_early) marks the stream's
//!   first bytes as allowed to go early (off by default: `write` never sends early);
//!   `build_early` (`conn::output`) sends them.
//! - Server: a connection made at the INITIAL (`Connection::new_server_early`) opens the
//!   EARLY packets its original DCID routes to it (`handle_early`, `conn::input`), takes their
//!   data at once, and answers in its first flight, within three times what the client's
//!   address sent until that address is proven (the client's first CONFIRM).
//!
//! `Early` is the component: what was written early, sent and answered (client), the early
//! key, route and HANDSHAKE kept (server); the connection acts on what it says.

use super::events::Side;
use crate::crypto::PacketKey;
use crate::wire::Cid;

/// The most 0-RTT data a client sends (bytes of the stream's start, §4.9). A server takes
/// early data only if its receive window holds this much.
pub const MAX_EARLY_DATA: u64 = 16_384;

/// A connection's 0-RTT state, either side.
#[derive(Default)]
pub(super) struct Early {
    /// Client: the end of the stream's prefix written with `write_early` (an offset).
    limit: u64,
    /// Client: `write_early` may still extend the prefix (no plain write came first).
    closed: bool,
    /// Client: the INITIAL (its generation, and its sendings) that the EARLY packets in
    /// flight followed.
    generation: (u32, u32),
    /// Client: EARLY packets were sent, and the end of the stream's bytes they carried.
    sent: bool,
    sent_end: u64,
    /// Client: the server's answer: whether it took them.
    accepted: Option<bool>,
    /// Server: the early key, the original DCID that routes EARLY packets here, the
    /// HANDSHAKE to send again to a repeated INITIAL, while the address is unproven.
    key: Option<Box<PacketKey>>,
    odcid: Option<Cid>,
    handshake: Vec<u8>,
    /// Server: SHA-256 of the INITIAL the connection was made at (its repeats are the same
    /// bytes, §4.1).
    initial: [u8; 32],
    /// Server: bytes of the stream's start that came in EARLY packets (an offset).
    received: u64,
}

impl std::fmt::Debug for Early {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Early")
            .field("limit", &self.limit)
            .field("accepted", &self.accepted)
            .field("received", &self.received)
            .finish_non_exhaustive()
    }
}

/// What the endpoint gives a server connection made at a 0-RTT INITIAL.
pub(crate) struct EarlyStart {
    pub key: PacketKey,
    /// The original DCID, if the endpoint routes it here (it was free).
    pub odcid: Option<Cid>,
    /// The HANDSHAKE the endpoint sends (counted against the address's budget).
    pub handshake: Vec<u8>,
    /// The INITIAL's length (the address's budget starts there).
    pub initial_len: u64,
    /// SHA-256 of the INITIAL.
    pub initial_hash: [u8; 32],
}

impl Early {
    /// Client: `write_early` may still extend the prefix (no plain write came first).
    pub(super) fn prefix_open(&self) -> bool {
        !self.closed
    }

    /// Client: a plain write, or the handshake's answer, closes the early prefix.
    pub(super) fn close_prefix(&mut self) {
        self.closed = true;
    }

    /// Client: the early prefix now ends at `end` (an offset), at most [`MAX_EARLY_DATA`].
    pub(super) fn extend_prefix(&mut self, end: u64) {
        self.limit = end.min(MAX_EARLY_DATA);
    }

    /// Client: the end of the prefix that may go early.
    pub(super) fn limit(&self) -> u64 {
        self.limit
    }

    /// Client: the INITIAL is at `generation` now. Whether the EARLY packets in flight
    /// followed an older one (the INITIAL went again, unanswered, so they may have found no
    /// connection; or a RETRY or a new key share rebuilt it, and what went under the old early
    /// key is void): their data goes again.
    pub(super) fn new_generation(&mut self, generation: (u32, u32)) -> bool {
        let stale = generation != self.generation && self.sent;
        self.generation = generation;
        stale
    }

    /// Client: an EARLY packet carried the stream up to `end`.
    pub(super) fn on_sent(&mut self, end: u64) {
        self.sent = true;
        self.sent_end = self.sent_end.max(end);
    }

    /// Client: the HANDSHAKE came, `resumed` and `accepted` (the server took the early
    /// data). Whether what the EARLY packets carried must go again under the 1-RTT keys.
    pub(super) fn answered(&mut self, resumed: bool, accepted: bool) -> bool {
        self.closed = true;
        if !self.sent {
            return false;
        }
        let accepted = resumed && accepted;
        self.accepted = Some(accepted);
        !accepted
    }

    /// How many of the stream's first bytes went as 0-RTT data: received (server); sent to
    /// a server that took them (client).
    pub(super) fn bytes(&self, side: Side) -> u64 {
        match side {
            Side::Server => self.received,
            Side::Client if self.accepted == Some(true) => self.sent_end,
            Side::Client => 0,
        }
    }

    /// Server: the early key, the original DCID routed here, the HANDSHAKE to send again and
    /// the INITIAL's hash, given by the endpoint.
    pub(super) fn start(&mut self, e: EarlyStart) {
        self.key = Some(Box::new(e.key));
        self.odcid = e.odcid;
        self.handshake = e.handshake;
        self.initial = e.initial_hash;
    }

    /// Server: whether an INITIAL for `dcid` hashing to `hash` is the one the connection was
    /// made at (its repeats are the same bytes, §4.1).
    pub(super) fn is_initial(&self, dcid: &Cid, hash: &[u8; 32]) -> bool {
        self.odcid.as_ref() == Some(dcid) && crate::crypto::ct_eq(&self.initial, hash)
    }

    /// Server: the HANDSHAKE kept for a repeated INITIAL (empty once settled).
    pub(super) fn handshake(&self) -> &[u8] {
        &self.handshake
    }

    /// Server: the early key, while EARLY packets may come.
    pub(super) fn key(&self) -> Option<&PacketKey> {
        self.key.as_deref()
    }

    /// Server: EARLY packets are done: the key and the HANDSHAKE go; the original DCID's
    /// route, if any, is returned for the endpoint to retire.
    pub(super) fn settle(&mut self) -> Option<Cid> {
        self.key = None;
        self.handshake = Vec::new();
        self.odcid.take()
    }

    /// The original DCID still routed here, if any.
    pub(super) fn route(&self) -> Option<Cid> {
        self.odcid
    }

    /// Server: the stream's bytes up to `end` (an offset) came in EARLY packets.
    pub(super) fn on_received(&mut self, end: u64) {
        self.received = self.received.max(end);
    }
}
