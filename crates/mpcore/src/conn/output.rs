//! The way out: the send loop (control frames first, then data through the scheduler, 0-RTT
//! data before the handshake completes) and the packet builder (one datagram on one subflow,
//! with everything due there; every owner of pending frames writes its own into the
//! `PacketBuilder`).

use super::early::MAX_EARLY_DATA;
use super::events::{CloseReason, ReadError, Side, WriteError};
use super::packet_builder::{DataWritten, PacketBuilder, PacketBuilt};
use super::qlog::{PacketHead, PacketKind, SentDss};
use super::send::{Seg, Sent};
use super::state::State;
use super::subflow::recovery::{Probe, SentPacket};
use super::subflow::{DataRef, FrameSet};
use super::Connection;
use crate::wire::packet::{Confirm, Join, Short};
use crate::wire::{packet, Dss, Frame, MapHeader, Writer};
use crate::{crypto, PathId, PathSet, Time, Transmit};

/// The most ack-eliciting packets a subflow may have in flight (the repair included) for a
/// repair to go twice: an interactive flight, a request or an answer of a few packets.
const SPARE_FLIGHT: u32 = 4;

impl Connection {
    /// The next datagram to send, written into `buf`.
    pub fn poll_transmit(&mut self, now: Time, buf: &mut [u8]) -> Option<Transmit> {
        self.poll_transmit_with(now, buf, PathSet::default()).0
    }

    /// [`Connection::poll_transmit`] with the endpoint's word on which local paths' sockets
    /// are full (`unwritable`: nothing is written for them); also the first of them a datagram
    /// was held back for (the connection then waits for that socket to drain).
    pub(crate) fn poll_transmit_with(
        &mut self,
        now: Time,
        buf: &mut [u8],
        unwritable: PathSet,
    ) -> (Option<Transmit>, Option<PathId>) {
        self.paths.local.unwritable = unwritable;
        let t = self.transmit(now, buf);
        if t.is_some() {
            self.arm_trim(now);
        }
        (t, std::mem::take(&mut self.paths.local.held_back))
    }

    fn transmit(&mut self, now: Time, buf: &mut [u8]) -> Option<Transmit> {
        if self.live.drained {
            return None;
        }
        if self.state == State::Initial {
            let Some(len) = self.session.hs.as_mut()?.poll_initial(now, self.config.transport.initial_rto, buf) else {
                // After the INITIAL, its copies on the other paths once they are due (§4.10),
                // then its 0-RTT data (§4.9).
                if let Some(t) = self.with_paths(|p, cx| p.poll_initial_copy(cx, buf)) {
                    return Some(t);
                }
                return self.build_early(now, buf);
            };
            self.with_paths(|p, cx| p.on_initial_sent(cx, now));
            let sf = &self.paths.subflows[0];
            return Some(Transmit { path: sf.local_path(), remote: sf.remote(), len, carrier: sf.carrier() });
        }
        let orphans = self.paths.local.addrs.take_orphans();
        if !orphans.is_empty() {
            self.paths.pend_on_any(orphans);
        }
        let n = self.paths.subflows.slot_bound();
        if self.recv.take_window_update() {
            // A DSS without data elicits no acknowledgement (§5), so a lost window update would
            // never be repaired and a sender waiting on the window would wait for good: the
            // update goes with a PING, which the retransmission timer repeats until answered.
            let best = self.paths.subflows.enumerate().filter(|(_, s)| s.established() && !s.pf());
            if let Some((i, _)) = best.max_by_key(|(_, s)| s.last_original_rx()) {
                self.paths.subflows[i].ack_now();
                self.paths.subflows[i].ping();
            }
        }
        // Control first: ACKs due, pending frames, probes, redundant copies.
        for k in 0..n {
            let i = (self.sched.rr + k) % n;
            let Some(sf) = self.paths.subflows.get(i) else { continue };
            let closing_only = !sf.is_open() && sf.pending().intersects(FrameSet::CLOSING);
            if !sf.is_open() && !closing_only {
                continue;
            }
            let urgent =
                sf.acks().due(now) || !sf.pending().is_empty() || sf.rec().probe.is_some() || sf.copy().is_some();
            if urgent && self.paths.local.unwritable.contains(sf.local_path()) {
                // Its socket is full: this waits until the endpoint says it is writable.
                self.paths.local.held_back.get_or_insert(sf.local_path());
                continue;
            }
            if urgent {
                // A first fast-join packet carries data when there is some (FAST_JOIN_OUT);
                // its repeats are FAST_JOIN_IN.
                let first_fast_join = sf.fast_opening() && sf.join_unsent() && sf.rec().rto_backoff == 0;
                let repeat = self.config.faults().repeat_fast_join_dsn;
                let seg = if first_fast_join { self.send.fast_join_segment(repeat) } else { None };
                if let Some(t) = self.build(now, i, seg, buf) {
                    self.sched.rr = (i + 1) % n;
                    return Some(t);
                }
            }
        }
        if self.is_closed() {
            return None;
        }
        // A path MTU probe, on a subflow busy with data (its loss is then told by the packets
        // after it, and an idle path costs nothing) with room for it in its window.
        for i in 0..n {
            let Some(sf) = self.paths.subflows.get(i) else { continue };
            let busy = sf.rec().eliciting_in_flight > 0 && self.send.queued() > 0;
            let usable = self.state == State::Established && sf.established() && !sf.rec().pf && sf.val().validated;
            // Not while it loses packets: a lost probe would then say nothing of its size.
            let calm = sf.rec().recent_losses == 0;
            if !busy || !usable || !calm || self.paths.local.unwritable.contains(sf.local_path()) {
                continue;
            }
            if let Some(size) = sf.pmtu().probe_due(now).filter(|&s| sf.rec().window_room() >= s as u64) {
                if let Some(t) = self.build_mtu_probe(now, i, size, buf) {
                    return Some(t);
                }
            }
        }
        // Data, through the scheduler.
        let (i, seg) = self.schedule(now)?;
        self.build(now, i, Some(seg), buf)
    }

    /// The subflow the scheduler picks for the next segment of the stream, if any.
    pub(super) fn schedule(&mut self, now: Time) -> Option<(usize, Seg)> {
        let seg = self.send.peek()?;
        let payload = self.max_payload() as u64;
        let qlog = self.out.qlog.as_deref_mut();
        self.sched.pick(now, (seg, payload), &mut self.paths, (&self.send, &self.recv), &self.config, qlog)
    }

    /// What a probe carries: for an RTO the oldest data to retransmit; for a tail loss probe
    /// new data if any, else the last segment sent on the subflow (RFC 8985 §7.3).
    pub(super) fn probe_data(&mut self, i: usize, p: Probe) -> Option<(DataRef, bool, bool)> {
        let s = match p {
            // A copy of the oldest data awaiting retransmission; the queue keeps it, so the
            // scheduler also reinjects it on a working subflow.
            Probe::Rto => self.send.peek().filter(|s| s.retrans)?,
            Probe::Tail => {
                // New data only on a subflow already carrying data (never on a backup subflow
                // the scheduler keeps idle); else the last segment it sent, else a bare PING.
                let last = self.paths.subflows[i].last_data_in_flight();
                let may_take_new = last.is_some() && !self.paths.subflows[i].backup();
                match (self.send.peek().filter(|s| !s.retrans && may_take_new), last) {
                    (Some(s), _) => s,
                    (None, Some(d)) => Seg { off: d.off, len: u64::from(d.len), fin: d.fin, mask: 0, retrans: true },
                    (None, None) => return None,
                }
            }
        };
        let d = DataRef { off: s.off, len: s.len.min(u64::from(u32::MAX)) as u32, fin: s.fin };
        Some((d, s.retrans, !s.retrans))
    }
}

impl Connection {
    // 0-RTT data, the client's side of what goes early (`early::Early` keeps its state).

    /// Queues bytes that may go before the handshake completes, as 0-RTT data (PROTOCOL.md
    /// §4.9), on a connection opened with `Endpoint::connect_resuming`. Early data can be
    /// replayed by an attacker who captured it (the server refuses a replay it sees, §4.9):
    /// write early only what is safe to act on twice, such as a request without side
    /// effects. Only a prefix of the stream goes early: after a plain `write`, or once the
    /// handshake is done, this is a plain `write`. Whatever the server did not take is sent
    /// again under the 1-RTT keys; nothing is lost and no error follows.
    pub fn write_early(&mut self, data: &[u8]) -> Result<usize, WriteError> {
        let open = self.side == Side::Client && self.state == State::Initial && self.early.prefix_open();
        let n = self.write_stream(data)?;
        if open && self.session.hs.as_ref().is_some_and(|hs| hs.offers_early()) {
            self.early.extend_prefix(self.send.end());
            // The server's window is not known before its HANDSHAKE; it holds the early
            // data's most (§4.9). Its own window replaces this at the HANDSHAKE.
            if self.send.peer_window() < MAX_EARLY_DATA {
                self.send.set_peer_window(MAX_EARLY_DATA);
            }
            if let Some(hs) = self.session.hs.as_mut() {
                hs.want_early(&self.config);
            }
        }
        Ok(n)
    }

    /// Server: how many of the stream's first bytes came as 0-RTT data (replayable by
    /// whoever captured them, PROTOCOL.md §4.9; the server refused any replay it saw).
    /// Client: how many of them went in EARLY packets to a server that takes early data (0 if
    /// it did not; those of them lost were sent again after the handshake).
    pub fn early_data(&self) -> u64 {
        self.early.bytes(self.side)
    }
}

impl Connection {
    /// Payload bytes available for stream data in a short-header packet of a one-way
    /// transfer, at most: the header (its byte, the peer's CID length, a packet number of at
    /// most 4), the tag, a DATA frame (a short DSN, no length). A full packet's plaintext ends
    /// on a whole AES block (`PacketBuilder::whole_blocks`), so it may carry up to 15 bytes
    /// less: the scheduler takes this as a segment's length, and the packet as much of the
    /// segment as fits.
    pub(super) fn max_payload(&self) -> usize {
        let map = MapHeader { dsn: 0, len: 0, short_dsn: true, to_end: true };
        let header = Short::pn_offset(usize::from(self.session.peer_params.cid_len)) + 4;
        self.mss().saturating_sub(header + crypto::TAG_LEN + Dss::header_len(None, Some(map)))
    }

    /// Builds one packet on subflow `i` with everything due there and, if given, `seg`: each
    /// owner writes what it has pending, in the order of PROTOCOL.md §5 (the subflow's ACK,
    /// the join, the subflow's signals and validation, the connection's addresses, the
    /// closing frames and PING, then the data), and is told what left when it is sealed.
    pub(super) fn build(&mut self, now: Time, i: usize, seg: Option<Seg>, buf: &mut [u8]) -> Option<Transmit> {
        if self.paths.local.addrs.nothing_withdrawn() {
            // The addresses came back before a pending REMOVE_ADDR left: nothing to withdraw.
            self.paths.subflows[i].drop_carried(FrameSet::REMOVE_ADDR);
        }
        // A copy whose data the peer acknowledged meanwhile carries nothing: dropped before a
        // pending probe's turn is decided (a copy goes before a probe).
        if self.paths.subflows[i].copy().is_some_and(|c| self.send.unacked_part(c).is_none()) {
            self.paths.subflows[i].drop_copy();
        }
        let mss = self.subflow_mss(i).min(buf.len());
        let probe_data = match self.paths.subflows[i].rec().probe {
            Some(p) if seg.is_none() && self.paths.subflows[i].copy().is_none() => self.probe_data(i, p),
            _ => None,
        };
        let keys = self.session.keys.as_ref()?;
        let sf = &self.paths.subflows[i];
        let joining = sf.opening();
        let confirm = self.side == Side::Client && self.state == State::Confirm && i == 0;
        if !joining && sf.remote_cid().is_none() {
            return None;
        }
        let pn = sf.rec().next_pn;
        let mut b = PacketBuilder::new(&mut buf[..mss], |w| self.write_header(i, joining, confirm, w))?;
        b.whole_blocks();
        // ACK: when due, when owed, beside control frames, and in a data packet when a packet
        // arrived since the last one, or one that carried an ACK was lost (§5.3).
        sf.write_ack(now, !sf.pending().is_empty() || (seg.is_some() && sf.acks().news), &mut b);
        let fj_data =
            self.paths.write_join(i, seg, (&self.send, &self.recv), &self.session, &self.config, keys, &mut b)?;
        let remote_key = keys.remote_key;
        sf.write_signals(FrameSet::HS_DONE | FrameSet::PRIO, false, remote_key, &mut b);
        sf.val().write(&mut b);
        sf.write_signals(FrameSet::RTO_REQ | FrameSet::RTO_VAL, false, remote_key, &mut b);
        self.paths.local.addrs.write(sf.carried(), keys.local_key, remote_key, &mut b);
        self.tickets.write(sf.carried(), &mut b);
        sf.write_reset_token(self.config.server.fleet.as_ref(), &mut b);
        // A probe (tail loss probe, RTO) carries a PING, which the peer acknowledges at once
        // (§5.2): its answer, or its silence, is what the probe is for.
        let probing = sf.rec().probe.is_some() && seg.is_none() && sf.copy().is_none() && sf.established();
        sf.write_signals(FrameSet::CLOSING | FrameSet::PING, probing, remote_key, &mut b);
        let injected =
            !self.injected.is_empty() && usize::from(self.injected_on) == i && self.injected.len() < b.room();
        let injected = injected && b.writer().bytes(&self.injected).is_ok();
        b.eliciting = injected || !b.sent.without(FrameSet::CLOSING).is_empty();
        let data = self.write_data(i, seg, probe_data, confirm, fj_data, &mut b)?;
        let (sent, eliciting, ack_sent) = (b.sent, b.eliciting, b.ack_sent);
        if !eliciting && !ack_sent && !sent.intersects(FrameSet::CLOSING) {
            // Nothing worth a packet (an ACK-only DSS with no subflow ACK is not sent alone).
            self.paths.subflows[i].nothing_to_send();
            return None;
        }
        let (hl, pt_len, short) = b.finish()?;
        // Anti-amplification (§10).
        if ((hl + pt_len + crypto::TAG_LEN) as u64) > self.paths.subflows[i].val().room() {
            return None;
        }
        let sf_id = self.paths.subflows[i].id();
        let sealed = if short {
            keys.send.seal_short(sf_id, pn, buf, hl, pt_len)
        } else {
            keys.send.seal(sf_id, pn, buf, hl, pt_len)
        };
        let len = sealed.ok()?;
        let kind = match (joining, confirm) {
            (true, _) => PacketKind::Join,
            (false, true) => PacketKind::Confirm,
            (false, false) => PacketKind::Short,
        };
        self.on_built(now, i, seg, len, PacketBuilt { pn, sent, eliciting, ack_sent, injected, kind, data });
        let sf = &self.paths.subflows[i];
        Some(Transmit { path: sf.local_path(), remote: sf.remote(), len, carrier: sf.carrier() })
    }

    /// Subflow `i`'s packet header: a JOIN while our join is unanswered, a CONFIRM while the
    /// client confirms the handshake, else a short one. Returns its length and its short
    /// packet number's (0 for a long header).
    fn write_header(&self, i: usize, joining: bool, confirm: bool, w: &mut Writer<'_>) -> Option<(usize, usize)> {
        let sf = &self.paths.subflows[i];
        let pn = sf.rec().next_pn;
        if joining {
            let j = Join {
                version: packet::VERSION_2,
                token: self.session.remote_token,
                scid: sf.local_cid(),
                subflow: sf.id(),
                pn: pn as u32,
            };
            return Some((j.emit(w).ok()?, 0));
        }
        if confirm {
            let cookie = self.session.hs.as_ref()?.cookie();
            let c = Confirm {
                version: packet::VERSION_2,
                dcid: sf.remote_cid()?,
                scid: sf.local_cid(),
                cookie,
                pn: pn as u32,
            };
            return Some((c.emit(w).ok()?, 0));
        }
        let len = packet::pn_len(pn, sf.rec().largest_acked);
        Some((Short::emit(sf.remote_cid()?, usize::from(self.session.peer_params.cid_len), pn, len, w).ok()?, len))
    }

    /// The data, or the DATA_ACK alone, on subflow `i` (§5.5): the scheduled segment, a probe,
    /// or a redundant copy, after the data a FAST_JOIN_OUT carried (`fj_data`). Returns what
    /// went (range, retransmission, new data) and the DATA_ACK advertised, if any; `None`
    /// if the packet cannot be written.
    fn write_data(
        &self,
        i: usize,
        seg: Option<Seg>,
        probe_data: Option<(DataRef, bool, bool)>,
        confirm: bool,
        fj_data: Option<(DataRef, bool, bool)>,
        b: &mut PacketBuilder<'_>,
    ) -> Option<DataWritten> {
        let sf = &self.paths.subflows[i];
        let fast_joining = sf.fast_opening();
        let flight = fast_joining && sf.fast_join_flight();
        let data_ok = ((sf.established() || flight) && !self.is_closed()) || confirm;
        let mut data: Option<(DataRef, bool, bool)> = None;
        if data_ok {
            if let Some(s) = seg {
                let d = DataRef { off: s.off, len: s.len.min(u64::from(u32::MAX)) as u32, fin: s.fin };
                data = Some((d, s.retrans, !s.retrans));
            } else if let Some(c) = sf.copy() {
                data = Some((c, true, false));
            } else if sf.rec().probe.is_some() {
                data = probe_data;
            }
        }
        // A probe's or a copy's range was chosen before the latest DATA_ACK: what the peer
        // has since acknowledged is not sent (a tail probe whose data was acknowledged at the
        // connection level only goes out as a bare PING).
        let data = data.and_then(|(d, r, n)| Some((self.send.unacked_part(d)?, r, n)));
        let fast_join_data = fj_data.is_some();
        let mut out = DataWritten {
            sent: fj_data.map(|d| d.0),
            data: data.or(fj_data),
            fast_join_data,
            data_ack: None,
            idle: false,
        };
        // The DATA_ACK rides in every packet of a subflow that is up, even after the
        // connection closed (the peer's DATA_FIN still needs acknowledging); a mapping needs
        // `data_ok`.
        if !(sf.established() || confirm || fast_joining) {
            return Some(out);
        }
        // The DATA_ACK rides with every subflow ACK, in every packet without data, and in a
        // data packet when it or the window moved since we last sent one (§5.5): the data
        // packets of a one-way transfer do not repeat an unchanged one.
        let with_ack = b.ack_sent || data.is_none() || self.recv.ack_news();
        let data_ack = (self.recv.edsn().0, self.recv.window());
        let ack = with_ack.then_some(data_ack);
        if let Some((d, _, _)) = data {
            let dsn = self.send.dsn(d.off).0;
            // A short DSN when every DSN the peer may expect is within 2^38 of it (the
            // unacknowledged data spans less; §5.5 allows 2^39); the data runs to the end.
            let short_dsn = self.send.end() + 1 - self.send.una() < 1 << 38;
            let map = |len| MapHeader { dsn, len, short_dsn, to_end: true };
            let room = b.room().saturating_sub(Dss::header_len(ack, Some(map(0))));
            let mut take = u64::from(d.len).min(room as u64);
            // The packet that empties the send queue ends a flight (a request, an answer): a
            // PING, written before the data, has it acknowledged at once, so its tail loss
            // probe needs no delayed-ACK allowance.
            let flight_end = |take: u64| d.off + take == self.send.end() && self.send.retrans_len() <= 1;
            // The packet that starts a flight on an idle subflow carries one too: its answer
            // within a round trip tells a path that went silent (nothing answers the flight)
            // from a lost tail (the start is acknowledged), before any delayed ACK could blur
            // the two (PROTOCOL.md §7).
            let flight_start = sf.rec().eliciting_in_flight == 0;
            if (flight_start || flight_end(take)) && !b.sent.intersects(FrameSet::PING) && room > 0 {
                // The PING's byte comes off the data: a last byte that no longer fits goes in
                // the next packet (with a PING of its own).
                take = take.min(room as u64 - 1);
                if Frame::Ping.emit(b.writer()).is_ok() {
                    b.sent |= FrameSet::PING;
                }
            }
            let fin = d.fin && take == u64::from(d.len);
            // MP_IDLE (MultiMob): set on the segment that empties the send queue.
            let idle_flag = self.config.multipath.mp_idle && self.side == Side::Server && flight_end(take);
            if take > 0 || fin {
                // The room was measured: the header and the data fit. A range the send buffer
                // no longer holds would be a bug; no packet goes out.
                Dss::emit_header(b.writer(), ack, Some(map(take as usize)), fin, idle_flag).ok()?;
                if !self.send.copy_out(d.off, b.writer().reserve(take as usize).ok()?) {
                    return None;
                }
                out.data_ack = ack.map(|a| a.0);
                out.idle = idle_flag;
                out.sent = Some(DataRef { off: d.off, len: take as u32, fin });
                b.eliciting = true;
                return Some(out);
            }
        }
        if b.ack_sent || b.eliciting {
            // No data went in (none due, or no room): a DATA_ACK alone.
            let sent = Dss::emit_header(b.writer(), Some(data_ack), None, false, false).is_ok();
            out.data_ack = sent.then_some(data_ack.0);
        }
        Some(out)
    }

    /// Packet `pn` left on subflow `i`, `len` bytes: its owners learn what it carried, and
    /// the subflow records it for its acknowledgement or loss.
    pub(super) fn on_built(&mut self, now: Time, i: usize, seg: Option<Seg>, len: usize, p: PacketBuilt) {
        let DataWritten { sent: sent_data, data, data_ack, .. } = p.data;
        if let Some(q) = self.out.qlog.as_deref_mut() {
            let dss = SentDss {
                map: sent_data.map(|d| (self.send.dsn(d.off).0, d.len, d.fin, p.data.idle)),
                data_ack,
                fast_join: p.data.fast_join_data,
            };
            let head = PacketHead { subflow: self.paths.subflows[i].id(), kind: p.kind, pn: p.pn, len };
            q.packet_sent(now, head, p.sent, p.ack_sent, dss);
        }
        if sent_data.is_some() && self.live.peer_wait.is_none() {
            // The first data sent since the peer had all of ours: we wait for it from now.
            self.live.peer_wait = Some(now);
        }
        let sf_bit = 1u64 << (i % 64);
        let sf = &mut self.paths.subflows[i];
        if p.ack_sent {
            sf.on_ack_sent();
        }
        sf.on_frames_sent(p.sent);
        self.paths.local.addrs.on_sent(p.sent);
        if p.data.fast_join_data {
            self.send.on_fast_join_sent();
        }
        if p.injected {
            self.injected.clear();
        }
        if data_ack.is_some() {
            self.recv.on_window_advertised();
        }
        let sf = &mut self.paths.subflows[i];
        // What went instead of the scheduler's segment: a pending copy (it goes first: a
        // repair's, `spare`, or the redundant scheduler's), or else a probe.
        let spare = seg.is_none() && sf.copy_is_spare();
        let probed = seg.is_none() && sf.copy().is_none() && sf.rec().probe.is_some();
        sf.on_unscheduled_sent(seg.is_some());
        sf.on_packet_sent(SentPacket {
            pn: p.pn,
            time: now,
            size: len as u32,
            ack_eliciting: p.eliciting,
            data: sent_data,
            ctrl: p.sent,
            carried_ack: p.ack_sent,
            mtu_probe: false,
        });
        // The ring takes its working size at once, not by doubling whenever this subflow's
        // flight reaches a new high: a slot per packet the send buffer can have in flight
        // when it sends data, a slot per acknowledgement the receive window calls for when it
        // only acknowledges data (its receive buffer is in use). A steady transfer then
        // allocates nothing per packet even as the subflows' shares of it shift or the peer is
        // slow to acknowledge. The trim gives it back with the buffers. An acknowledgement of
        // a keep-alive takes its own slot only: a server keeping thousands of phones alive
        // would otherwise hold the working size of each for 3 s after every keep-alive.
        if sent_data.is_some() {
            sf.reserve_flight(self.send.packets_bound());
        } else if !p.eliciting && self.recv.buffer_bytes() > 0 {
            sf.reserve_flight(self.recv.acks_bound());
        }
        if let Some(d) = sent_data {
            let retrans = data.is_some_and(|x| x.1);
            let how = if data.is_some_and(|x| x.2) {
                Sent::New
            } else if seg.is_some_and(|s| s.retrans) {
                // Taken from the retransmission queue: that much of its front is consumed.
                Sent::FromQueue
            } else {
                Sent::Copy
            };
            let reinjected = self.send.on_sent(d, how, sf_bit);
            self.counters.bytes_reinjected += reinjected;
            // A retransmission of this subflow, not data reinjected here from another one (a
            // failover's copies are this path's first sending of them: the oracle must not
            // take the path that rescues the data for a path that loses it).
            let sf = &mut self.paths.subflows[i];
            sf.on_data_sent(now, d.len, retrans && reinjected == 0 && !spare);
            sf.count_reinjected(reinjected);
            // A repair (a retransmission, or a probe's data) that ends what the connection has
            // to send goes twice, the copy at once (PROTOCOL.md §7, *Repairs sent twice*): a
            // flight that already waited a round trip for a loss does not wait another if the
            // repair is lost too. Only for a small flight with nothing else waiting (an
            // interactive one: a bulk transfer's repairs go once), on a regular subflow that
            // works, and not for a reinjection (data first sent on another path: a failover's
            // first try on this one). A retransmission split over two packets (its packet
            // carries an ACK the lost one did not) is copied whole with its first part, and its
            // second part, which starts inside that copy, not again.
            let repair = match seg {
                Some(s) if s.retrans && s.off == d.off && reinjected == 0 => {
                    Some(DataRef { off: s.off, len: s.len.min(u64::from(u32::MAX)) as u32, fin: s.fin })
                }
                None if probed && retrans => Some(d),
                _ => None,
            };
            if let Some(r) = repair {
                let end = r.off + u64::from(r.len);
                let last = self.send.queued() == 0 && !self.send.retrans_beyond(end);
                let small = sf.rec().eliciting_in_flight <= SPARE_FLIGHT;
                let usable = sf.established() && !sf.pf() && !sf.backup();
                let (from, to) = sf.spared();
                let piece = from < r.off && r.off < to;
                if last && small && usable && sf.copy().is_none() && !piece {
                    sf.send_spare(r);
                }
            }
        }
    }

    /// A path MTU probe of `size` bytes on subflow `i` (§10): a PING padded to the size. Its
    /// acknowledgement raises the subflow's datagram size; its loss is no congestion signal.
    pub(super) fn build_mtu_probe(&mut self, now: Time, i: usize, size: usize, buf: &mut [u8]) -> Option<Transmit> {
        let keys = self.session.keys.as_ref()?;
        let sf = &self.paths.subflows[i];
        let pn = sf.rec().next_pn;
        let pn_len = packet::pn_len(pn, sf.rec().largest_acked);
        let (cid, cid_len) = (sf.remote_cid()?, usize::from(self.session.peer_params.cid_len));
        let mut b = PacketBuilder::new(buf.get_mut(..size)?, |w| {
            Some((Short::emit(cid, cid_len, pn, pn_len, w).ok()?, pn_len))
        })?;
        // A PING, and PADDING to the size probed.
        if !b.control(FrameSet::PING, Frame::Ping) {
            return None;
        }
        b.pad_to_end()?;
        let (hl, pt_len, _) = b.finish()?;
        let len = keys.send.seal_short(sf.id(), pn, buf, hl, pt_len).ok()?;
        if let Some(q) = self.out.qlog.as_deref_mut() {
            let head = PacketHead { subflow: sf.id(), kind: PacketKind::Short, pn, len };
            q.packet_sent(now, head, FrameSet::PING, false, SentDss::default());
        }
        let sf = &mut self.paths.subflows[i];
        sf.on_packet_sent(SentPacket {
            pn,
            time: now,
            size: len as u32,
            ack_eliciting: true,
            data: None,
            ctrl: FrameSet::PING,
            carried_ack: false,
            mtu_probe: true,
        });
        Some(Transmit { path: sf.local_path(), remote: sf.remote(), len, carrier: sf.carrier() })
    }
}

impl Connection {
    /// Client, after the INITIAL: an EARLY packet on subflow 0 with the next early bytes
    /// (`Early::write_packet`).
    pub(super) fn build_early(&mut self, now: Time, buf: &mut [u8]) -> Option<Transmit> {
        let hs = self.session.hs.as_ref()?;
        let generation = hs.generation();
        hs.early_key()?;
        if self.early.new_generation(generation) {
            // The INITIAL went again or was rebuilt: the early data goes again after it.
            self.with_paths(|p, cx| p.reinject_in_flight(cx, now, 0, false));
        }
        let mss = self.subflow_mss(0).min(buf.len());
        let hs = self.session.hs.as_deref()?;
        let (len, seg, built) = self.early.write_packet(hs, &mut self.send, &self.paths.subflows[0], mss, buf)?;
        self.on_built(now, 0, Some(seg), len, built);
        let sf = &self.paths.subflows[0];
        Some(Transmit { path: sf.local_path(), remote: sf.remote(), len, carrier: sf.carrier() })
    }
}

/// The application's stream: what it writes and reads.
impl Connection {
    /// Queues bytes for sending; returns how many were taken.
    pub fn write(&mut self, data: &[u8]) -> Result<usize, WriteError> {
        self.early.close_prefix();
        self.write_stream(data)
    }

    /// Queues the front of `data` by reference, as much as the send buffer has room for, and
    /// splits it off `data`; returns how many bytes were taken. The bytes stay in the
    /// application's buffer until the peer acknowledges them and are copied once, into the
    /// packet that seals them (`write` copies them into the send buffer first).
    pub fn write_bytes(&mut self, data: &mut bytes::Bytes) -> Result<usize, WriteError> {
        self.early.close_prefix();
        self.check_writable()?;
        let n = self.send.write_bytes(data);
        self.wrote(n, data.is_empty())
    }

    fn write_stream(&mut self, data: &[u8]) -> Result<usize, WriteError> {
        self.check_writable()?;
        let n = self.send.write(data);
        self.wrote(n, n == data.len())
    }

    fn check_writable(&self) -> Result<(), WriteError> {
        if let State::Closed(r) = self.state {
            return Err(WriteError::Closed(r));
        }
        if self.send.is_finished() {
            return Err(WriteError::Finished);
        }
        Ok(())
    }

    /// `n` bytes were taken; `all` if nothing of the write is left.
    fn wrote(&mut self, n: usize, all: bool) -> Result<usize, WriteError> {
        if n == 0 && !all {
            return Err(WriteError::Blocked);
        }
        self.counters.bytes_written += n as u64;
        Ok(n)
    }

    /// Room in the send buffer.
    pub fn write_room(&self) -> usize {
        self.send.room()
    }

    /// Whether a writer blocked on a full send buffer should be woken: the free room is at
    /// least half of what the buffer holds (the rule of Linux's `sk_stream_wspace`), so that
    /// it writes a good share of the buffer at once instead of a packet's worth per
    /// acknowledgement. An empty buffer always qualifies, whatever its size.
    pub fn write_space(&self) -> bool {
        let room = self.send.room();
        room > 0 && room >= self.send.unacked() / 2
    }

    /// Bytes written and never sent yet. A driver need not be woken for a write made while
    /// some are: it is already sending them, or waits for what lets it (an acknowledgement, a
    /// timer, a socket's room), and the new bytes go after them.
    pub fn unsent(&self) -> u64 {
        self.send.queued()
    }

    /// Bytes written and not yet acknowledged at data level.
    pub fn unacked(&self) -> usize {
        self.send.unacked()
    }

    /// Reads received bytes in order. `Ok(0)` means the peer finished (DATA_FIN) and
    /// everything was read.
    pub fn read(&mut self, out: &mut [u8]) -> Result<usize, ReadError> {
        let n = self.recv.read(out);
        if n > 0 {
            self.counters.bytes_read += n as u64;
            return Ok(n);
        }
        self.nothing_read().map(|()| 0)
    }

    /// Reads in place: up to `max` bytes, the next of the stream, as they lie in the receive
    /// buffer (no copy into the caller's), taken as `read` takes them. A chunk ends where the
    /// buffer wraps: the bytes after come with the next call. An empty chunk is the end of the
    /// stream; `Blocked` and `Closed` as for `read` (and, as `read` into no room, `max == 0`
    /// gets `Blocked` while the stream goes on).
    pub fn read_chunk(&mut self, max: usize) -> Result<&[u8], ReadError> {
        if max > 0 && self.recv.readable() > 0 {
            let chunk = self.recv.read_chunk(max);
            self.counters.bytes_read += chunk.len() as u64;
            return Ok(chunk);
        }
        self.nothing_read().map(|()| &[][..])
    }

    /// Why a read took nothing: `Ok` at the end of the stream, else the error.
    fn nothing_read(&self) -> Result<(), ReadError> {
        if self.recv.is_finished() {
            return Ok(());
        }
        match self.state {
            State::Closed(r) if r != CloseReason::Graceful => Err(ReadError::Closed(r)),
            _ => Err(ReadError::Blocked),
        }
    }

    /// Bytes ready to read.
    pub fn readable(&self) -> usize {
        self.recv.readable()
    }

    /// The application's reads opened the receive window enough that the peer should be told
    /// (a quarter of the buffer): the next `poll_transmit` sends a packet for it. Smaller
    /// openings travel on the next acknowledgement, so a driver need not be woken for them.
    pub fn window_update_due(&self) -> bool {
        self.recv.window_update_due()
    }
}
