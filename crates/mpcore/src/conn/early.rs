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
//!   `Early::write_packet` writes them (for `build_early`, `conn::output`).
//! - Server: a connection made at the INITIAL (`Connection::new_server` with `start_early`) opens the
//!   EARLY packets its original DCID routes to it (`Early::open_packet`, for `handle_early` in
//!   `conn::input`), takes their
//!   data at once, and answers in its first flight, within three times what the client's
//!   address sent until that address is proven (the client's first CONFIRM).
//!
//! `Early` is the component: what was written early, sent and answered (client), the early
//! key, route and HANDSHAKE kept (server); the connection acts on what it says.

use super::events::Side;
use super::packet_builder::{DataWritten, PacketBuilder, PacketBuilt};
use super::qlog::PacketKind;
use super::recv::RecvSide;
use super::send::{Seg, SendSide};
use super::subflow::{DataRef, FrameSet, Subflow};
use crate::crypto::PacketKey;
use crate::drops::DropReason;
use crate::handshake;
use crate::wire::packet::{self, Early as EarlyHeader};
use crate::wire::{Cid, Dss, Frame, FrameList, MapHeader};
use std::net::SocketAddr;

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

impl Early {
    /// Server: the connection was made at a 0-RTT INITIAL: subflow 0's address is unproven
    /// (three times what it sent may go to it), EARLY packets for the original DCID come here.
    pub(super) fn start_on(&mut self, sf0: Option<&mut Subflow>, e: EarlyStart) {
        if let Some(sf) = sf0 {
            sf.await_proof(e.initial_len, e.handshake.len() as u64);
        }
        self.start(e);
    }

    /// Server: the client repeated its INITIAL (our HANDSHAKE was lost): the same HANDSHAKE,
    /// while the address is unproven and its budget allows. Only the very INITIAL the
    /// connection was made at (`dcid`, its bytes' hash), from subflow 0's address, gets it.
    pub(super) fn handshake_again(
        &self,
        sf0: Option<&mut Subflow>,
        remote: SocketAddr,
        (dcid, initial_hash): (&Cid, &[u8; 32]),
        len: u64,
    ) -> Option<Vec<u8>> {
        let sf = sf0?;
        if !self.is_initial(dcid, initial_hash)
            || sf.remote() != remote
            || sf.val().validated
            || self.handshake.is_empty()
        {
            return None;
        }
        sf.count_received(len);
        let hs = self.handshake.len() as u64;
        (sf.val().room() >= hs).then(|| {
            sf.count_sent_outside(hs);
            self.handshake.to_vec()
        })
    }

    /// Server: once subflow 0's address is proven (a CONFIRM, an acknowledgement of our
    /// packets, a PATH_RESPONSE) or the subflow is gone, EARLY packets are done (late ones are
    /// sent again by the client under the 1-RTT keys): the early key, the HANDSHAKE kept for
    /// a repeated INITIAL and the original DCID's route go. Returns the route to retire.
    pub(super) fn settle_if_done(&mut self, sf0: Option<&Subflow>) -> Option<Cid> {
        if self.key.is_none() || sf0.is_some_and(|sf| sf.is_open() && !sf.val().validated) {
            return None;
        }
        self.settle()
    }

    /// Server: opens an EARLY packet (§4.9) for subflow 0, `header_len` bytes of header in
    /// `scratch`, and checks its frames: only PADDING, PING and DSS mappings (without
    /// DATA_ACK) within the first [`MAX_EARLY_DATA`] bytes of the stream. Returns the frames
    /// and whether they elicit an acknowledgement.
    pub(super) fn open_packet<'s>(
        &self,
        side: Side,
        sf0: Option<&Subflow>,
        recv: &RecvSide,
        (pn, header_len): (u64, usize),
        scratch: &'s mut [u8],
    ) -> Result<(FrameList<'s>, bool), DropReason> {
        let key = self.key().ok_or(DropReason::Unexpected)?;
        let open = sf0.is_some_and(|sf| sf.is_open() && !sf.val().validated);
        if side != Side::Server || !open {
            return Err(DropReason::Unexpected);
        }
        let plain = key.open(0, pn, scratch, header_len).map_err(|_| DropReason::DecryptFailed)?;
        let frames = FrameList::parse(plain).map_err(|_| DropReason::Malformed)?;
        let start = recv.start();
        let mut eliciting = false;
        for f in frames.iter() {
            match f {
                Frame::Padding { .. } => {}
                Frame::Ping => eliciting = true,
                Frame::Dss(d) if d.ack.is_none() && d.mapping.is_some() => {
                    let (rel, data) = d.mapping_near(0).ok_or(DropReason::Protocol)?;
                    // §4.9: early data is at most MAX_EARLY_DATA bytes of the stream's start.
                    if rel.saturating_add(data.len() as u64) > MAX_EARLY_DATA {
                        return Err(DropReason::Protocol);
                    }
                    recv.check(start.add(rel), data.len()).map_err(|_| DropReason::Protocol)?;
                    eliciting = true;
                }
                _ => return Err(DropReason::Protocol),
            }
        }
        Ok((frames, eliciting))
    }

    /// Client, after the INITIAL: an EARLY packet on subflow 0 (`sf`) with the next early
    /// bytes of `send`, at most `mss` bytes, into `buf`. Returns its length, the segment it
    /// carried and what it holds, for the connection to record as sent.
    pub(super) fn write_packet(
        &mut self,
        hs: &handshake::Client,
        send: &mut SendSide,
        sf: &Subflow,
        mss: usize,
        buf: &mut [u8],
    ) -> Option<(usize, Seg, PacketBuilt)> {
        let seg = send.peek().filter(|s| s.off < self.limit)?;
        let pn = sf.rec().next_pn;
        if sf.rec().cwnd_room() < mss as u64 {
            return None;
        }
        let header = EarlyHeader { version: packet::VERSION_2, dcid: hs.odcid(), scid: sf.local_cid(), pn: pn as u32 };
        let mut b = PacketBuilder::new(&mut buf[..mss], |w| Some((header.emit(w).ok()?, 0)))?;
        let flight_start = sf.rec().eliciting_in_flight == 0;
        if flight_start && !b.control(FrameSet::PING, Frame::Ping) {
            return None;
        }
        // §4.9: the mapping's DSN is the offset from the stream's start, in full.
        let map = |len| MapHeader { dsn: seg.off, len, short_dsn: false, to_end: true };
        let room = b.room().saturating_sub(Dss::header_len(None, Some(map(0))));
        let take = seg.len.min(self.limit - seg.off).min(room as u64);
        if take == 0 {
            return None;
        }
        let fin = seg.fin && take == seg.len;
        Dss::emit_header(b.writer(), None, Some(map(take as usize)), fin, false).ok()?;
        if !send.copy_out(seg.off, b.writer().reserve(take as usize).ok()?) {
            return None;
        }
        let (hl, pt_len, _) = b.finish()?;
        let len = hs.early_key()?.seal(0, pn, buf, hl, pt_len).ok()?;
        self.on_sent(seg.off + take);
        let d = DataRef { off: seg.off, len: take as u32, fin };
        let sent = if flight_start { FrameSet::PING } else { FrameSet::EMPTY };
        let data = DataWritten {
            sent: Some(d),
            data: Some((d, seg.retrans, !seg.retrans)),
            fast_join_data: false,
            data_ack: None,
            idle: false,
        };
        let built =
            PacketBuilt { pn, sent, eliciting: true, ack_sent: false, injected: false, kind: PacketKind::Early, data };
        Some((len, Seg { len: take, ..seg }, built))
    }
}
