//! The packet builder: one datagram on one subflow, with everything due there.

use super::*;

impl Connection {
    /// Payload bytes available for stream data in a short-header packet of a one-way
    /// transfer: the header (its byte, the peer's CID length, a packet number of at most 4),
    /// the tag, a DATA frame (a short DSN, no length).
    pub(super) fn max_payload(&self) -> usize {
        let map = MapHeader { dsn: 0, len: 0, short_dsn: true, to_end: true };
        let header = Short::pn_offset(usize::from(self.peer_params.cid_len)) + 4;
        self.mss().saturating_sub(header + crypto::TAG_LEN + Dss::header_len(None, Some(map)))
    }

    /// Builds one packet on subflow `i` with everything due there and, if given, `seg`.
    pub(super) fn build(&mut self, now: Time, i: usize, seg: Option<Seg>, buf: &mut [u8]) -> Option<Transmit> {
        if self.remove.is_empty() {
            // The addresses came back before a pending REMOVE_ADDR left: nothing to withdraw.
            self.subflows[i].ctrl_pending &= !ctrl::REMOVE_ADDR;
        }
        let mss = self.subflow_mss(i).min(buf.len());
        let probe_data = match self.subflows[i].rec.probe {
            Some(p) if seg.is_none() && self.subflows[i].copy.is_none() => self.probe_data(i, p),
            _ => None,
        };
        let keys = self.keys.as_ref()?;
        let sf = &self.subflows[i];
        let joining = sf.state == SubflowState::JoinSent && sf.local_opener;
        let confirm = self.side == Side::Client && self.state == State::Confirm && i == 0;
        if !joining && sf.remote_cid.is_none() {
            return None;
        }
        let pn = sf.rec.next_pn;
        let mut w = Writer::new(&mut buf[..mss]);
        let (hl, short_pn_len) = if joining {
            let j = Join {
                version: packet::VERSION_2,
                token: self.remote_token,
                scid: sf.local_cid,
                subflow: sf.id,
                pn: pn as u32,
            };
            (j.emit(&mut w).ok()?, 0)
        } else if confirm {
            let hs = self.hs.as_ref()?;
            let c = Confirm {
                version: packet::VERSION_2,
                dcid: sf.remote_cid?,
                scid: sf.local_cid,
                cookie: hs.cookie(),
                pn: pn as u32,
            };
            (c.emit(&mut w).ok()?, 0)
        } else {
            let len = packet::pn_len(pn, sf.rec.largest_acked);
            (Short::emit(sf.remote_cid?, usize::from(self.peer_params.cid_len), pn, len, &mut w).ok()?, len)
        };
        // Everything after the header must leave room for the tag.
        let limit = mss - crypto::TAG_LEN;
        let mut ctrl_sent = 0u16;
        let mut eliciting = false;
        let mut ack_sent = false;
        let sf = &self.subflows[i];
        // ACK: when due, when owed, beside control frames, and in a data packet when a packet
        // arrived since the last one, or one that carried an ACK was lost (§5.3).
        if !sf.acks.received.is_empty()
            && (sf.acks.due(now)
                || sf.acks.unacked_eliciting > 0
                || sf.ctrl_pending != 0
                || (seg.is_some() && sf.acks.news))
        {
            let delay = now.saturating_sub(sf.acks.largest_at);
            let ranges = sf.acks.received.iter_desc().take(8);
            if Ack::emit(&mut w, delay, ranges).is_ok() {
                ack_sent = true;
            }
        }
        // A probe (tail loss probe, RTO) carries a PING, which the peer acknowledges at once
        // (§5.2): its answer, or its silence, is what the probe is for.
        let probing = sf.rec.probe.is_some() && seg.is_none() && sf.copy.is_none() && sf.established();
        let pending = sf.ctrl_pending | if probing { ctrl::PING } else { 0 };
        let put = |w: &mut Writer<'_>, bit: u16, f: Frame<'_>, sent: &mut u16| {
            if pending & bit != 0 && w.len() + 64 < limit && f.emit(w).is_ok() {
                *sent |= bit;
            }
        };
        let fast_joining = joining && sf.join.kind == JoinKind::FastInitiator;
        // Data sent in a FAST_JOIN_OUT: (range, retransmission, new data).
        let mut fj_data: Option<(DataRef, bool, bool)> = None;
        if fast_joining {
            let first = pending & ctrl::JOIN != 0;
            let room = limit.saturating_sub(w.len() + FastJoinOut::HEADER_LEN + Dss::overhead(true, 0) + 16);
            let take = seg.map_or(0, |s| s.len.min(room as u64) as usize);
            match seg {
                Some(s) if first && take > 0 => {
                    let dsn = self.send.dsn(s.off).0;
                    let mut hmac = keys.fast.sign(fastjoin::Kind::Out, dsn, self.remote_token);
                    hmac[0] ^= u8::from(self.config.faults().forge_fast_join_hmac);
                    let (backup, addr_id) = (sf.backup, sf.local_addr_id);
                    w.varint(crate::wire::frame::ty::FAST_JOIN_OUT).ok()?;
                    w.view(FastJoinOut::HEADER_LEN, |out| {
                        FastJoinOut::emit_header(out, backup, addr_id, dsn, &hmac, take)
                    })
                    .ok()?;
                    if !self.send.copy_out(s.off, w.reserve(take).ok()?) {
                        return None;
                    }
                    ctrl_sent |= ctrl::JOIN;
                    let d = DataRef { off: s.off, len: take as u32, fin: false };
                    fj_data = Some((d, s.retrans, !s.retrans));
                }
                _ => {
                    let data_ack = self.recv.edsn().0;
                    let mut hmac = keys.fast.sign(fastjoin::Kind::In, data_ack, self.remote_token);
                    hmac[0] ^= u8::from(self.config.faults().forge_fast_join_hmac);
                    let f =
                        Frame::FastJoinIn(FastJoinIn { backup: sf.backup, addr_id: sf.local_addr_id, data_ack, hmac });
                    if first {
                        put(&mut w, ctrl::JOIN, f, &mut ctrl_sent);
                    } else {
                        // A later packet of the first flight (§5.9): a JOIN packet starts with
                        // a join frame, and its data follows in a DSS below.
                        f.emit(&mut w).ok()?;
                    }
                }
            }
        } else if joining && pending & ctrl::JOIN != 0 {
            let mj = MpJoin { backup: sf.backup, addr_id: sf.local_addr_id, nonce: sf.join.nonce_local };
            put(&mut w, ctrl::JOIN, Frame::MpJoin(mj), &mut ctrl_sent);
        }
        if pending & ctrl::FJ_REPLY != 0 || sf.join.reply_unacked {
            // The reply to a FAST_JOIN_OUT acknowledges its data; to a FAST_JOIN_IN it names
            // where we send from (§5.11). It rides in every packet until acknowledged.
            let value = match sf.join.kind {
                JoinKind::FastIn => ReplyValue::Dsn(self.send.dsn(self.send.una()).0),
                _ => ReplyValue::DataAck(self.recv.edsn().0),
            };
            let token = self.local_token.unwrap_or_default();
            let r = fastjoin::reply(&keys.fast, token, sf.backup, sf.local_addr_id, value, sf.local_cid.0);
            if w.len() + 64 < limit && Frame::FastJoinReply(r).emit(&mut w).is_ok() {
                ctrl_sent |= ctrl::FJ_REPLY;
            }
        }
        if pending & ctrl::SYNACK != 0 {
            let sa = MpJoinSynAck {
                backup: sf.backup,
                addr_id: sf.local_addr_id,
                nonce: sf.join.nonce_local,
                hmac: join_synack_hmac(keys.local_key, keys.remote_key, sf.join.nonce_local, sf.join.nonce_remote),
                cid: sf.local_cid,
            };
            put(&mut w, ctrl::SYNACK, Frame::MpJoinSynAck(sa), &mut ctrl_sent);
        }
        if pending & ctrl::JOIN_ACK != 0 {
            let hmac = join_ack_hmac(keys.local_key, keys.remote_key, sf.join.nonce_local, sf.join.nonce_remote);
            put(&mut w, ctrl::JOIN_ACK, Frame::MpJoinAck { hmac }, &mut ctrl_sent);
        }
        put(&mut w, ctrl::HS_DONE, Frame::HandshakeDone, &mut ctrl_sent);
        put(&mut w, ctrl::PRIO, Frame::MpPrio { backup: sf.backup }, &mut ctrl_sent);
        if let Some(c) = sf.val.challenge {
            put(&mut w, ctrl::CHALLENGE, Frame::PathChallenge(c), &mut ctrl_sent);
        }
        if let Some(r) = sf.val.response {
            put(&mut w, ctrl::RESPONSE, Frame::PathResponse(r), &mut ctrl_sent);
        }
        put(&mut w, ctrl::RTO_REQ, Frame::Rto { request: true, rto_ms: None }, &mut ctrl_sent);
        put(
            &mut w,
            ctrl::RTO_VAL,
            Frame::Rto { request: false, rto_ms: Some(sf.rec.rtt.rto() / 1000) },
            &mut ctrl_sent,
        );
        if pending & ctrl::ADD_ADDR != 0 {
            let mut any = false;
            for &(id, addr, acked) in &self.announce {
                if acked || w.len() + 64 >= limit {
                    continue;
                }
                let hmac = crypto::add_addr_hmac(keys.local_key, keys.remote_key, id, addr.ip(), addr.port());
                let f = Frame::AddAddr(AddAddr { addr_id: id, ip: addr.ip(), port: addr.port(), hmac: Some(hmac) });
                any |= f.emit(&mut w).is_ok();
            }
            if any {
                ctrl_sent |= ctrl::ADD_ADDR;
            }
        }
        if pending & ctrl::ADDR_ECHO != 0 {
            for e in &self.echo {
                if w.len() + 64 < limit && Frame::AddAddr(*e).emit(&mut w).is_ok() {
                    ctrl_sent |= ctrl::ADDR_ECHO;
                }
            }
        }
        if pending & ctrl::REMOVE_ADDR != 0 && !self.remove.is_empty() {
            let ids = &self.remove[..self.remove.len().min(255)];
            put(&mut w, ctrl::REMOVE_ADDR, Frame::RemoveAddr(ids), &mut ctrl_sent);
        }
        put(&mut w, ctrl::RESET, Frame::SubflowReset { transient: false, reason: sf.reset_reason }, &mut ctrl_sent);
        put(&mut w, ctrl::FASTCLOSE, Frame::FastClose { key: keys.remote_key, reason: 0 }, &mut ctrl_sent);
        put(&mut w, ctrl::PING, Frame::Ping, &mut ctrl_sent);
        let injected = !self.injected.is_empty() && w.len() + self.injected.len() < limit;
        if injected && w.bytes(&self.injected).is_ok() {
            eliciting = true;
        }
        if ctrl_sent & !(ctrl::RESET | ctrl::FASTCLOSE) != 0 {
            eliciting = true;
        }
        // Data: the scheduled segment, a probe, or a redundant copy.
        let probe = sf.rec.probe;
        let flight = fast_joining && sf.fast_join_flight();
        let data_ok = ((sf.established() || flight) && !self.is_closed()) || confirm;
        let mut data: Option<(DataRef, bool, bool)> = None; // (range, retransmission, new data)
        if data_ok {
            if let Some(s) = seg {
                data = Some((
                    DataRef { off: s.off, len: s.len.min(u64::from(u32::MAX)) as u32, fin: s.fin },
                    s.retrans,
                    !s.retrans,
                ));
            } else if let Some(c) = sf.copy {
                data = Some((c, true, false));
            } else if probe.is_some() {
                data = probe_data;
            }
        }
        // A probe's or a copy's range was chosen before the latest DATA_ACK: what the peer
        // has since acknowledged is not sent (a tail probe whose data was acknowledged at the
        // connection level only goes out as a bare PING).
        let data = data.and_then(|(d, r, n)| Some((self.send.unacked_part(d)?, r, n)));
        let sf = &self.subflows[i];
        let mut sent_data: Option<DataRef> = fj_data.map(|d| d.0);
        // The DATA_ACK rides in every packet of a subflow that is up, even after the
        // connection closed (the peer's DATA_FIN still needs acknowledging); a mapping needs
        // `data_ok`.
        let data = if data_ok { data } else { None };
        let mut advertised = false;
        if sf.established() || confirm || fast_joining {
            // The DATA_ACK rides with every subflow ACK, in every packet without data, and in
            // a data packet when it or the window moved since we last sent one (§5.5): the
            // data packets of a one-way transfer do not repeat an unchanged one.
            let with_ack = ack_sent || data.is_none() || self.recv.ack_news();
            let mut data_written = false;
            let data_ack = (self.recv.edsn().0, self.recv.window());
            let ack = with_ack.then_some(data_ack);
            if let Some((d, _, _)) = data {
                let dsn = self.send.dsn(d.off).0;
                // A short DSN when every DSN the peer may expect is within 2^38 of it
                // (the unacknowledged data spans less; §5.5 allows 2^39); the data runs
                // to the packet's end.
                let short_dsn = self.send.end() + 1 - self.send.una() < 1 << 38;
                let map = |len| MapHeader { dsn, len, short_dsn, to_end: true };
                let room = limit.saturating_sub(w.len() + Dss::header_len(ack, Some(map(0))));
                let mut take = u64::from(d.len).min(room as u64);
                // The packet that empties the send queue ends a flight (a request, an
                // answer): a PING, written before the data, has it acknowledged at once, so
                // its tail loss probe needs no delayed-ACK allowance.
                let flight_end = |take: u64| d.off + take == self.send.end() && self.send.retrans_len() <= 1;
                // The packet that starts a flight on an idle subflow carries one too: its
                // answer within a round trip tells a path that went silent (nothing answers
                // the flight) from a lost tail (the start is acknowledged), before any delayed
                // ACK could blur the two (PROTOCOL.md §7).
                let flight_start = sf.rec.eliciting_in_flight == 0;
                if (flight_start || flight_end(take)) && ctrl_sent & ctrl::PING == 0 && room > 0 {
                    // The PING's byte comes off the data: a last byte that no longer fits
                    // goes in the next packet (with a PING of its own).
                    take = take.min(room as u64 - 1);
                    if Frame::Ping.emit(&mut w).is_ok() {
                        ctrl_sent |= ctrl::PING;
                    }
                }
                let fin = d.fin && take == u64::from(d.len);
                let empties = flight_end(take);
                // MP_IDLE (MultiMob): set on the segment that empties the send queue.
                let idle_flag = self.config.mp_idle && self.side == Side::Server && empties;
                if take > 0 || fin {
                    // The room was measured: the header and the data fit. A range the
                    // send buffer no longer holds would be a bug; no packet goes out.
                    Dss::emit_header(&mut w, ack, Some(map(take as usize)), fin, idle_flag).ok()?;
                    if !self.send.copy_out(d.off, w.reserve(take as usize).ok()?) {
                        return None;
                    }
                    advertised = ack.is_some();
                    sent_data = Some(DataRef { off: d.off, len: take as u32, fin });
                    eliciting = true;
                    data_written = true;
                }
            }
            if !data_written && (ack_sent || eliciting) {
                // No data went in (none due, or no room): a DATA_ACK alone.
                advertised = Dss::emit_header(&mut w, Some(data_ack), None, false, false).is_ok();
            }
        }
        let data = data.or(fj_data);
        if !eliciting && !ack_sent && ctrl_sent & (ctrl::RESET | ctrl::FASTCLOSE) == 0 {
            // Nothing worth a packet (an ACK-only DSS with no subflow ACK is not sent alone).
            let sf = &mut self.subflows[i];
            sf.acks.immediate = false;
            sf.acks.deadline = None;
            if probe.is_some() {
                sf.ctrl_pending |= ctrl::PING;
            }
            return None;
        }
        // Header protection needs pn_len + payload >= 4 (§9.3).
        while short_pn_len > 0 && w.len() - hl + short_pn_len < 4 {
            w.u8(0).ok()?;
        }
        let pt_len = w.len() - hl;
        let total = hl + pt_len + crypto::TAG_LEN;
        // Anti-amplification (§10).
        if (total as u64) > self.subflows[i].val.room() {
            return None;
        }
        let sf_id = self.subflows[i].id;
        let sealed = if short_pn_len > 0 {
            keys.send.seal_short(sf_id, pn, buf, hl, pt_len)
        } else {
            keys.send.seal(sf_id, pn, buf, hl, pt_len)
        };
        let len = sealed.ok()?;
        // Commit: the packet goes out.
        let sf_bit = 1u64 << (i % 64);
        let sf = &mut self.subflows[i];
        if ack_sent {
            sf.on_ack_sent();
        }
        sf.ctrl_pending &= !(ctrl_sent & !(ctrl::ADD_ADDR | ctrl::ADDR_ECHO));
        if fj_data.is_some() {
            self.send.on_fast_join_sent();
        }
        if fast_joining && ctrl_sent & ctrl::JOIN != 0 {
            self.subflows[i].join.first_sent = true;
        }
        if injected {
            self.injected.clear();
        }
        if advertised {
            self.recv.on_window_advertised();
        }
        let sf = &mut self.subflows[i];
        if ctrl_sent & ctrl::ADD_ADDR != 0 {
            sf.ctrl_pending &= !ctrl::ADD_ADDR;
        }
        if ctrl_sent & ctrl::ADDR_ECHO != 0 {
            sf.ctrl_pending &= !ctrl::ADDR_ECHO;
            self.echo.clear();
        }
        let sf = &mut self.subflows[i];
        if ctrl_sent & ctrl::RESPONSE != 0 {
            sf.val.response = None;
        }
        if probe.is_some() && (seg.is_none() && sf.copy.is_none()) {
            sf.rec.probe = None;
        }
        let was_copy = seg.is_none() && sf.copy.is_some() && probe.is_none();
        if was_copy {
            sf.copy = None;
        }
        sf.on_packet_sent(SentPacket {
            pn,
            time: now,
            size: len as u32,
            ack_eliciting: eliciting,
            data: sent_data,
            ctrl: ctrl_sent,
            carried_ack: ack_sent,
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
            sf.rec.sent.reserve(self.send.packets_bound());
        } else if !eliciting && self.recv.buffer_bytes() > 0 {
            sf.rec.sent.reserve(self.recv.acks_bound());
        }
        if let Some(d) = sent_data {
            sf.last_data_tx = now;
            sf.counters.data_bytes_sent += u64::from(d.len);
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
            if retrans && reinjected == 0 {
                let sf = &mut self.subflows[i];
                sf.counters.bytes_retransmitted += u64::from(d.len);
                sf.counters.packets_retransmitted += 1;
            }
            self.subflows[i].counters.bytes_reinjected += reinjected;
        }
        let sf = &self.subflows[i];
        Some(Transmit { path: sf.local_path, remote: sf.remote, len })
    }

    /// A path MTU probe of `size` bytes on subflow `i` (§10): a PING padded to the size. Its
    /// acknowledgement raises the subflow's datagram size; its loss is no congestion signal.
    pub(super) fn build_mtu_probe(&mut self, now: Time, i: usize, size: usize, buf: &mut [u8]) -> Option<Transmit> {
        let keys = self.keys.as_ref()?;
        let sf = &self.subflows[i];
        let pn = sf.rec.next_pn;
        let mut w = Writer::new(buf.get_mut(..size)?);
        let pn_len = packet::pn_len(pn, sf.rec.largest_acked);
        let hl = Short::emit(sf.remote_cid?, usize::from(self.peer_params.cid_len), pn, pn_len, &mut w).ok()?;
        Frame::Ping.emit(&mut w).ok()?;
        w.zeros(size.checked_sub(w.len() + crypto::TAG_LEN)?).ok()?;
        let pt_len = w.len() - hl;
        let len = keys.send.seal_short(sf.id, pn, buf, hl, pt_len).ok()?;
        let sf = &mut self.subflows[i];
        sf.on_packet_sent(SentPacket {
            pn,
            time: now,
            size: len as u32,
            ack_eliciting: true,
            data: None,
            ctrl: ctrl::PING,
            carried_ack: false,
            mtu_probe: true,
        });
        sf.pmtu.on_probe_sent();
        Some(Transmit { path: sf.local_path, remote: sf.remote, len })
    }
}
