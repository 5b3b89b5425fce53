//! 0-RTT data (PROTOCOL.md §4.9): a resuming client's first bytes, sent right after its
//! INITIAL in EARLY packets on subflow 0, sealed with the early key (from the ticket's PSK and
//! that INITIAL), their mappings' DSNs counted from the stream's start (the IDSN is not known
//! yet). They are subflow 0's first packets, so the server's ACKs of its short packets
//! acknowledge them and the client's loss recovery sends again, under the 1-RTT keys, what
//! did not arrive; a server that did not take them says so in its HANDSHAKE and the client
//! sends them again at once.
//!
//! - Client: [`Connection::write_early`] marks the stream's first bytes as allowed to go
//!   early (off by default: `write` never sends early); `build_early` sends them.
//! - Server: a connection made at the INITIAL (`Connection::new_server_early`) opens the
//!   EARLY packets its original DCID routes to it, takes their data at once, and answers in
//!   its first flight, within three times what the client's address sent until that address
//!   is proven (the client's first CONFIRM).

use super::builder::{DataWritten, PacketBuilt};
use super::dsn::Dsn;
use super::events::{EndpointEvent, Side, WriteError};
use super::qlog::PacketKind;
use super::subflow::{DataRef, FrameSet};
use super::{Connection, State};
use crate::crypto::{self, PacketKey};
use crate::drops::DropReason;
use crate::wire::packet::{self, Early as EarlyHeader};
use crate::wire::{Cid, Dss, Frame, FrameList, MapHeader, Writer};
use crate::{Time, Transmit};
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
    odcid: Option<crate::wire::Cid>,
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
    pub odcid: Option<crate::wire::Cid>,
    /// The HANDSHAKE the endpoint sends (counted against the address's budget).
    pub handshake: Vec<u8>,
    /// The INITIAL's length (the address's budget starts there).
    pub initial_len: u64,
    /// SHA-256 of the INITIAL.
    pub initial_hash: [u8; 32],
}

impl Connection {
    /// Queues bytes that may go before the handshake completes, as 0-RTT data (PROTOCOL.md
    /// §4.9), on a connection opened with `Endpoint::connect_resuming`. Early data can be
    /// replayed by an attacker who captured it (the server refuses a replay it sees, §4.9):
    /// write early only what is safe to act on twice, such as a request without side
    /// effects. Only a prefix of the stream goes early: after a plain `write`, or once the
    /// handshake is done, this is a plain `write`. Whatever the server did not take is sent
    /// again under the 1-RTT keys; nothing is lost and no error follows.
    pub fn write_early(&mut self, data: &[u8]) -> Result<usize, WriteError> {
        let open = self.side == Side::Client && self.state == State::Initial && !self.early.closed;
        let n = self.write_stream(data)?;
        if open && self.hs.as_ref().is_some_and(|hs| hs.offers_early()) {
            self.early.limit = self.send.end().min(MAX_EARLY_DATA);
            // The server's window is not known before its HANDSHAKE; it holds the early
            // data's most (§4.9). Its own window replaces this at the HANDSHAKE.
            if self.send.peer_window() < MAX_EARLY_DATA {
                self.send.set_peer_window(MAX_EARLY_DATA);
            }
            if let Some(hs) = self.hs.as_mut() {
                hs.want_early(&self.config);
            }
        }
        Ok(n)
    }

    /// A plain write closes the early prefix.
    pub(super) fn close_early_prefix(&mut self) {
        self.early.closed = true;
    }

    /// Server: how many of the stream's first bytes came as 0-RTT data (replayable by
    /// whoever captured them, PROTOCOL.md §4.9; the server refused any replay it saw).
    /// Client: how many of them went in EARLY packets to a server that takes early data (0 if
    /// it did not; those of them lost were sent again after the handshake).
    pub fn early_data(&self) -> u64 {
        match self.side {
            Side::Server => self.early.received,
            Side::Client if self.early.accepted == Some(true) => self.early.sent_end,
            Side::Client => 0,
        }
    }

    /// Client, after the INITIAL: an EARLY packet on subflow 0 with the next early bytes.
    pub(super) fn build_early(&mut self, now: Time, buf: &mut [u8]) -> Option<Transmit> {
        let hs = self.hs.as_ref()?;
        let (generation, odcid) = (hs.generation(), hs.odcid());
        hs.early_key()?;
        if generation != self.early.generation && self.early.sent {
            // The INITIAL went again (unanswered, so its EARLY packets may have found no
            // connection), or a RETRY or a new key share rebuilt it (what went under the old
            // early key is void): the early data goes again after it.
            self.early.generation = generation;
            self.reinject_in_flight(now, 0, false);
        }
        self.early.generation = generation;
        let seg = self.send.peek().filter(|s| s.off < self.early.limit)?;
        let sf = &self.subflows[0];
        let pn = sf.rec().next_pn;
        let mss = self.subflow_mss(0).min(buf.len());
        if sf.rec().cwnd_room() < mss as u64 {
            return None;
        }
        let header = EarlyHeader { version: packet::VERSION_2, dcid: odcid, scid: sf.local_cid(), pn: pn as u32 };
        let mut w = Writer::new(&mut buf[..mss]);
        let hl = header.emit(&mut w).ok()?;
        let flight_start = sf.rec().eliciting_in_flight == 0;
        if flight_start {
            Frame::Ping.emit(&mut w).ok()?;
        }
        // §4.9: the mapping's DSN is the offset from the stream's start, in full.
        let map = |len| MapHeader { dsn: seg.off, len, short_dsn: false, to_end: true };
        let room = (mss - crypto::TAG_LEN).saturating_sub(w.len() + Dss::header_len(None, Some(map(0))));
        let take = seg.len.min(self.early.limit - seg.off).min(room as u64);
        if take == 0 {
            return None;
        }
        let fin = seg.fin && take == seg.len;
        Dss::emit_header(&mut w, None, Some(map(take as usize)), fin, false).ok()?;
        if !self.send.copy_out(seg.off, w.reserve(take as usize).ok()?) {
            return None;
        }
        let pt_len = w.len() - hl;
        let len = self.hs.as_ref()?.early_key()?.seal(0, pn, buf, hl, pt_len).ok()?;
        self.early.sent = true;
        self.early.sent_end = self.early.sent_end.max(seg.off + take);
        let d = DataRef { off: seg.off, len: take as u32, fin };
        let sent = if flight_start { FrameSet::PING } else { FrameSet::EMPTY };
        let data = DataWritten {
            sent: Some(d),
            data: Some((d, seg.retrans, !seg.retrans)),
            fast_join_data: false,
            data_ack: None,
            idle: false,
        };
        let seg = Some(super::send::Seg { len: take, ..seg });
        let built =
            PacketBuilt { pn, sent, eliciting: true, ack_sent: false, injected: false, kind: PacketKind::Early, data };
        self.on_built(now, 0, seg, len, built);
        let sf = &self.subflows[0];
        Some(Transmit { path: sf.local_path(), remote: sf.remote(), len, carrier: sf.carrier() })
    }

    /// Client: the HANDSHAKE came; `accepted`: the server took the early data. If it did
    /// not, everything the EARLY packets carried goes again at once under the 1-RTT keys.
    pub(super) fn on_early_answer(&mut self, now: Time, resumed: bool, accepted: bool) {
        self.early.closed = true;
        if !self.early.sent {
            return;
        }
        let accepted = resumed && accepted;
        self.early.accepted = Some(accepted);
        if !accepted {
            self.reinject_in_flight(now, 0, false);
        }
    }

    /// Server: the connection was made at a 0-RTT INITIAL: subflow 0's address is unproven
    /// (three times what it sent may go to it), EARLY packets for `odcid` come here.
    pub(crate) fn start_early(&mut self, e: EarlyStart) {
        if let Some(sf) = self.subflows.get_mut(0) {
            sf.await_proof(e.initial_len, e.handshake.len() as u64);
        }
        self.early.key = Some(Box::new(e.key));
        self.early.odcid = e.odcid;
        self.early.handshake = e.handshake;
        self.early.initial = e.initial_hash;
    }

    /// Server: the client repeated its INITIAL (our HANDSHAKE was lost): the same HANDSHAKE,
    /// while the address is unproven and its budget allows. Only the very INITIAL the
    /// connection was made at (`dcid`, its bytes' hash), from subflow 0's address, gets it.
    pub(crate) fn handshake_again(
        &mut self,
        remote: SocketAddr,
        dcid: &Cid,
        initial_hash: &[u8; 32],
        len: u64,
    ) -> Option<Vec<u8>> {
        let same = self.early.odcid.as_ref() == Some(dcid) && crate::crypto::ct_eq(&self.early.initial, initial_hash);
        let sf = self.subflows.get_mut(0)?;
        if !same || sf.remote() != remote || sf.val().validated || self.early.handshake.is_empty() {
            return None;
        }
        sf.count_received(len);
        let hs = self.early.handshake.len() as u64;
        (sf.val().room() >= hs).then(|| {
            sf.count_sent_outside(hs);
            self.early.handshake.clone()
        })
    }

    /// Server: a CONFIRM authenticated under the 1-RTT keys came from subflow 0's address:
    /// the address is proven.
    pub(super) fn on_address_proven(&mut self) {
        if let Some(sf) = self.subflows.get_mut(0) {
            sf.prove_address();
        }
        self.settle_early();
    }

    /// Server: once subflow 0's address is proven (a CONFIRM, an acknowledgement of our
    /// packets, a PATH_RESPONSE) or the subflow is gone, EARLY packets are done (late ones are
    /// sent again by the client under the 1-RTT keys): the early key, the HANDSHAKE kept for
    /// a repeated INITIAL and the original DCID's route go.
    pub(super) fn settle_early(&mut self) {
        if self.early.key.is_none() {
            return;
        }
        if self.subflows.get(0).is_some_and(|sf| sf.is_open() && !sf.val().validated) {
            return;
        }
        self.early.key = None;
        self.early.handshake = Vec::new();
        if let Some(odcid) = self.early.odcid.take() {
            self.endpoint_events.push_back(EndpointEvent::RetireCid(odcid));
        }
    }

    /// The original DCID still routed here, if any.
    pub(super) fn early_route(&self) -> Option<crate::wire::Cid> {
        self.early.odcid
    }

    /// Server: an EARLY packet (§4.9) for subflow 0, `header_len` bytes of header in
    /// `scratch`. Only PADDING, PING and DSS mappings (without DATA_ACK) may be in it.
    pub(super) fn handle_early(
        &mut self,
        now: Time,
        pn: u64,
        header_len: usize,
        scratch: &mut [u8],
    ) -> Result<(), DropReason> {
        let key = self.early.key.as_ref().ok_or(DropReason::Unexpected)?;
        let open = self.subflows.get(0).is_some_and(|sf| sf.is_open() && !sf.val().validated);
        if self.side != Side::Server || !open {
            return Err(DropReason::Unexpected);
        }
        let len = scratch.len() as u64;
        let plain = key.open(0, pn, scratch, header_len).map_err(|_| DropReason::DecryptFailed)?;
        let frames = FrameList::parse(plain).map_err(|_| DropReason::Malformed)?;
        let start = self.recv.start().0;
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
                    self.recv.check(Dsn(start).add(rel), data.len()).map_err(|_| DropReason::Protocol)?;
                    eliciting = true;
                }
                _ => return Err(DropReason::Protocol),
            }
        }
        let max_ack_delay = self.config.max_ack_delay;
        let sf = self.subflows.get_mut(0).ok_or(DropReason::Unexpected)?;
        if !sf.on_packet_received(now, pn, eliciting, max_ack_delay) {
            return Err(DropReason::Duplicate);
        }
        sf.count_received(len);
        sf.ack_now();
        self.last_rx = now;
        for f in frames.iter() {
            if let Frame::Dss(d) = f {
                if let Some((rel, data)) = d.mapping_near(0) {
                    let dss = Dss::data(Dsn(start).add(rel).0, data, d.fin);
                    self.on_dss(now, 0, &dss);
                    self.early.received = self.early.received.max(rel + data.len() as u64);
                }
            }
        }
        self.after_receive(now);
        Ok(())
    }
}
