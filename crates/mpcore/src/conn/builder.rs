//! The packet builder: one datagram on one subflow, with everything due there.

use super::events::Side;
use super::packet_builder::PacketBuilder;
use super::qlog::{PacketHead, PacketKind, SentDss};
use super::send::{Seg, Sent};
use super::subflow::recovery::SentPacket;
use super::subflow::{DataRef, FrameSet};
use super::{Connection, State};
use crate::wire::packet::{Confirm, Early as EarlyHeader, Join, Short};
use crate::wire::{packet, Dss, Frame, MapHeader, Writer};
use crate::{crypto, Time, Transmit};

impl Connection {
    /// Payload bytes available for stream data in a short-header packet of a one-way
    /// transfer: the header (its byte, the peer's CID length, a packet number of at most 4),
    /// the tag, a DATA frame (a short DSN, no length).
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
        if self.local.addrs.nothing_withdrawn() {
            // The addresses came back before a pending REMOVE_ADDR left: nothing to withdraw.
            self.subflows[i].drop_carried(FrameSet::REMOVE_ADDR);
        }
        let mss = self.subflow_mss(i).min(buf.len());
        let probe_data = match self.subflows[i].rec().probe {
            Some(p) if seg.is_none() && self.subflows[i].copy().is_none() => self.probe_data(i, p),
            _ => None,
        };
        let keys = self.session.keys.as_ref()?;
        let sf = &self.subflows[i];
        let joining = sf.opening();
        let confirm = self.side == Side::Client && self.state == State::Confirm && i == 0;
        if !joining && sf.remote_cid().is_none() {
            return None;
        }
        let pn = sf.rec().next_pn;
        let mut b = PacketBuilder::new(&mut buf[..mss], |w| self.write_header(i, joining, confirm, w))?;
        // ACK: when due, when owed, beside control frames, and in a data packet when a packet
        // arrived since the last one, or one that carried an ACK was lost (§5.3).
        sf.write_ack(now, !sf.pending().is_empty() || (seg.is_some() && sf.acks().news), &mut b);
        let fj_data = self.write_join(i, seg, keys, &mut b)?;
        let remote_key = keys.remote_key;
        sf.write_signals(FrameSet::HS_DONE | FrameSet::PRIO, false, remote_key, &mut b);
        sf.val().write(&mut b);
        sf.write_signals(FrameSet::RTO_REQ | FrameSet::RTO_VAL, false, remote_key, &mut b);
        self.local.addrs.write(sf.carried(), keys.local_key, remote_key, &mut b);
        self.tickets.write(sf.carried(), &mut b);
        self.write_reset_token(i, &mut b);
        // A probe (tail loss probe, RTO) carries a PING, which the peer acknowledges at once
        // (§5.2): its answer, or its silence, is what the probe is for.
        let probing = sf.rec().probe.is_some() && seg.is_none() && sf.copy().is_none() && sf.established();
        sf.write_signals(FrameSet::CLOSING | FrameSet::PING, probing, remote_key, &mut b);
        let injected = !self.injected.is_empty() && self.injected.len() < b.room();
        let injected = injected && b.writer().bytes(&self.injected).is_ok();
        b.eliciting = injected || !b.sent.without(FrameSet::CLOSING).is_empty();
        let data = self.write_data(i, seg, probe_data, confirm, fj_data, &mut b)?;
        let (sent, eliciting, ack_sent) = (b.sent, b.eliciting, b.ack_sent);
        if !eliciting && !ack_sent && !sent.intersects(FrameSet::CLOSING) {
            // Nothing worth a packet (an ACK-only DSS with no subflow ACK is not sent alone).
            self.subflows[i].nothing_to_send();
            return None;
        }
        let (hl, pt_len, short) = b.finish()?;
        // Anti-amplification (§10).
        if ((hl + pt_len + crypto::TAG_LEN) as u64) > self.subflows[i].val().room() {
            return None;
        }
        let sf_id = self.subflows[i].id();
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
        let sf = &self.subflows[i];
        Some(Transmit { path: sf.local_path(), remote: sf.remote(), len, carrier: sf.carrier() })
    }

    /// Subflow `i`'s packet header: a JOIN while our join is unanswered, a CONFIRM while the
    /// client confirms the handshake, else a short one. Returns its length and its short
    /// packet number's (0 for a long header).
    fn write_header(&self, i: usize, joining: bool, confirm: bool, w: &mut Writer<'_>) -> Option<(usize, usize)> {
        let sf = &self.subflows[i];
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
        let sf = &self.subflows[i];
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
            let head = PacketHead { subflow: self.subflows[i].id(), kind: p.kind, pn: p.pn, len };
            q.packet_sent(now, head, p.sent, p.ack_sent, dss);
        }
        if sent_data.is_some() && self.live.peer_wait.is_none() {
            // The first data sent since the peer had all of ours: we wait for it from now.
            self.live.peer_wait = Some(now);
        }
        let sf_bit = 1u64 << (i % 64);
        let sf = &mut self.subflows[i];
        if p.ack_sent {
            sf.on_ack_sent();
        }
        sf.on_frames_sent(p.sent);
        self.local.addrs.on_sent(p.sent);
        if p.data.fast_join_data {
            self.send.on_fast_join_sent();
        }
        if p.injected {
            self.injected.clear();
        }
        if data_ack.is_some() {
            self.recv.on_window_advertised();
        }
        let sf = &mut self.subflows[i];
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
            let sf = &mut self.subflows[i];
            sf.on_data_sent(now, d.len, retrans && reinjected == 0);
            sf.count_reinjected(reinjected);
        }
    }

    /// A path MTU probe of `size` bytes on subflow `i` (§10): a PING padded to the size. Its
    /// acknowledgement raises the subflow's datagram size; its loss is no congestion signal.
    pub(super) fn build_mtu_probe(&mut self, now: Time, i: usize, size: usize, buf: &mut [u8]) -> Option<Transmit> {
        let keys = self.session.keys.as_ref()?;
        let sf = &self.subflows[i];
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
        let sf = &mut self.subflows[i];
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

/// What [`Connection::write_data`] put in a packet.
pub(super) struct DataWritten {
    /// The stream range it carries (a FAST_JOIN_OUT's, or the DSS's).
    pub sent: Option<DataRef>,
    /// That range as chosen: (range, retransmission, new data).
    pub data: Option<(DataRef, bool, bool)>,
    /// A FAST_JOIN_OUT carried data.
    pub fast_join_data: bool,
    /// The DATA_ACK (and the window) that went, if one did.
    pub data_ack: Option<u64>,
    /// The mapping carried MP_IDLE (for the log).
    pub idle: bool,
}

/// A sealed packet, for its owners (see [`Connection::on_built`]).
pub(super) struct PacketBuilt {
    pub pn: u64,
    pub sent: FrameSet,
    pub eliciting: bool,
    pub ack_sent: bool,
    pub injected: bool,
    pub kind: PacketKind,
    pub data: DataWritten,
}

impl Connection {
    /// Client, after the INITIAL: an EARLY packet on subflow 0 with the next early bytes.
    pub(super) fn build_early(&mut self, now: Time, buf: &mut [u8]) -> Option<Transmit> {
        let hs = self.session.hs.as_ref()?;
        let (generation, odcid) = (hs.generation(), hs.odcid());
        hs.early_key()?;
        if self.early.new_generation(generation) {
            // The INITIAL went again or was rebuilt: the early data goes again after it.
            self.reinject_in_flight(now, 0, false);
        }
        let seg = self.send.peek().filter(|s| s.off < self.early.limit())?;
        let sf = &self.subflows[0];
        let pn = sf.rec().next_pn;
        let mss = self.subflow_mss(0).min(buf.len());
        if sf.rec().cwnd_room() < mss as u64 {
            return None;
        }
        let header = EarlyHeader { version: packet::VERSION_2, dcid: odcid, scid: sf.local_cid(), pn: pn as u32 };
        let mut b = PacketBuilder::new(&mut buf[..mss], |w| Some((header.emit(w).ok()?, 0)))?;
        let flight_start = sf.rec().eliciting_in_flight == 0;
        if flight_start && !b.control(FrameSet::PING, Frame::Ping) {
            return None;
        }
        // §4.9: the mapping's DSN is the offset from the stream's start, in full.
        let map = |len| MapHeader { dsn: seg.off, len, short_dsn: false, to_end: true };
        let room = b.room().saturating_sub(Dss::header_len(None, Some(map(0))));
        let take = seg.len.min(self.early.limit() - seg.off).min(room as u64);
        if take == 0 {
            return None;
        }
        let fin = seg.fin && take == seg.len;
        Dss::emit_header(b.writer(), None, Some(map(take as usize)), fin, false).ok()?;
        if !self.send.copy_out(seg.off, b.writer().reserve(take as usize).ok()?) {
            return None;
        }
        let (hl, pt_len, _) = b.finish()?;
        let len = self.session.hs.as_ref()?.early_key()?.seal(0, pn, buf, hl, pt_len).ok()?;
        self.early.on_sent(seg.off + take);
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
}
