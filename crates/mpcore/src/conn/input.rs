//! The receive path: a sealed packet is opened, checked and its frames applied; the
//! connection-level data frames (DSS: mappings, DATA_ACK, DATA_FIN).

use super::*;

impl Connection {
    /// A sealed packet for this connection: a short header, a CONFIRM (server, subflow 0) or a
    /// JOIN. `scratch` holds a copy of the datagram that may be modified in place.
    pub(crate) fn handle_sealed(
        &mut self,
        now: Time,
        path: PathId,
        remote: SocketAddr,
        p: &Packet<'_>,
        scratch: &mut [u8],
        drops: &mut Drops,
    ) {
        if self.drained || self.keys.is_none() {
            drops.unexpected += 1;
            return;
        }
        let dgram_len = scratch.len() as u64;
        let (i, pn, hl, is_join) = match p.header {
            Header::Short(s) => {
                let Some(i) = self.subflows.by_cid(&s.dcid) else {
                    drops.unknown_cid += 1;
                    return;
                };
                let Some(keys) = self.keys.as_ref() else { return };
                let Ok((len, trunc)) = keys.recv.unprotect_short(scratch) else {
                    drops.malformed += 1;
                    return;
                };
                let pn = decode_pn(self.subflows[i].acks.largest, trunc, len);
                (i, pn, Short::PN_OFFSET + len, false)
            }
            Header::Confirm(c) => {
                if self.side != Side::Server {
                    drops.unexpected += 1;
                    return;
                }
                let Some(i) = self.subflows.by_cid(&c.dcid) else {
                    drops.unknown_cid += 1;
                    return;
                };
                (i, u64::from(c.pn), p.header_len, false)
            }
            Header::Join(j) => match self.subflows.by_number(j.subflow) {
                Some(i) => (i, u64::from(j.pn), p.header_len, true),
                None => {
                    self.handle_new_join(now, path, remote, p, scratch, drops);
                    return;
                }
            },
            _ => return,
        };
        let Some(keys) = self.keys.as_ref() else { return };
        let id = self.subflows[i].id;
        let Ok(plain) = keys.recv.open(id, pn, scratch, hl) else {
            drops.decrypt_failed += 1;
            return;
        };
        if Frames::validate(plain).is_err() {
            drops.malformed += 1;
            return;
        }
        // One look at the frames before acting on them: is an ACK owed, and at once?
        // Handshake and join packets are acknowledged at once (as QUIC acknowledges its
        // handshake): their RTT samples then start the estimator without a delayed-ACK bias.
        let (mut eliciting, mut urgent, mut answers_join) = (false, false, false);
        let mut new_ranges = 0usize;
        for f in Frames::new(plain).flatten() {
            if let Frame::Dss(Dss { mapping: Some((dsn, data)), .. }) = f {
                new_ranges += usize::from(self.recv.check(Dsn(dsn), data.len()).unwrap_or(false));
            }
            eliciting |= f.is_ack_eliciting();
            urgent |= matches!(
                f,
                Frame::HandshakeDone | Frame::MpJoinSynAck(_) | Frame::MpJoinAck { .. } | Frame::FastJoinReply(_)
            );
            answers_join |= matches!(f, Frame::FastJoinReply(_) | Frame::SubflowReset { .. });
        }
        if new_ranges > self.recv.ranges_free() {
            // The reassembly cannot track another hole (far more holes than segments of 256
            // bytes fit in the window). The packet is dropped before it is acknowledged, so the
            // sender declares it lost and sends its data again: a stored segment is never given
            // up, and a refused one is never lost. Data that fills a hole is always taken.
            self.counters.reassembly_refused += 1;
            return;
        }
        let max_ack_delay = self.config.max_ack_delay;
        let sf = &mut self.subflows[i];
        if sf.state == SubflowState::JoinSent && sf.join.kind == JoinKind::FastInitiator && !answers_join {
            // Nothing on a fast join is usable before the reply: not acknowledged, so the peer
            // sends it again (its reply rides in every packet until we acknowledge one).
            drops.unexpected += 1;
            return;
        }
        if !sf.on_packet_received(now, pn, eliciting, max_ack_delay) {
            if is_join {
                drops.replayed_join += 1;
            } else {
                drops.duplicate += 1;
            }
            return;
        }
        if is_join {
            // A repeated JOIN (new packet number) from the same address: answer it again, with
            // the SYNACK, the fast-join reply, or the refusal. Anything else is a replay.
            let same = sf.remote == remote && !sf.local_opener;
            match sf.state {
                SubflowState::JoinReceived if same => sf.ctrl_pending |= ctrl::SYNACK,
                SubflowState::Established if same && sf.join.reply_unacked => sf.ctrl_pending |= ctrl::FJ_REPLY,
                SubflowState::Closed if same && sf.reset_reason == reason::FAST_JOIN_REJECTED => {
                    sf.ctrl_pending |= ctrl::RESET;
                }
                _ => drops.replayed_join += 1,
            }
            return;
        }
        sf.counters.packets_received += 1;
        sf.counters.bytes_received += dgram_len;
        sf.val.amp_rx += dgram_len;
        self.last_rx = now;
        // NAT rebinding (§7): an authenticated packet, the newest on the subflow, from a new
        // address moves the subflow there, pending validation of the new address.
        if (sf.remote != remote || sf.local_path != path) && sf.acks.largest == Some(pn) {
            sf.remote = remote;
            sf.local_path = path;
            sf.val.validated = false;
            sf.val.amp_rx = dgram_len;
            sf.val.amp_tx = 0;
            let mut ch = [0u8; 8];
            let _ = crypto::random_fill(&mut ch);
            sf.val.challenge = Some(ch);
            sf.ctrl_pending |= ctrl::CHALLENGE;
            self.emit(Event::SubflowMigrated { id, remote });
        }
        if self.side == Side::Client && self.state == State::Confirm && matches!(p.header, Header::Short(_)) {
            self.state = State::Established;
            self.hs = None;
            self.emit(Event::Connected);
            self.emit(Event::SubflowEstablished { id: 0, path: self.subflows[0].local_path, backup: false });
        }
        if urgent {
            self.subflows[i].acks.immediate = true;
        }
        for f in Frames::new(plain).flatten() {
            self.on_frame(now, i, f, drops);
        }
        self.after_receive(now);
    }

    pub(super) fn after_receive(&mut self, now: Time) {
        if self.state == State::Established && !self.pm_ran && self.side == Side::Client {
            self.pm_ran = true;
            self.run_path_manager(now);
        }
        self.check_fail_back(now);
        self.check_close(now);
    }

    pub(super) fn on_frame(&mut self, now: Time, i: usize, f: Frame<'_>, drops: &mut Drops) {
        match f {
            Frame::Padding { .. } | Frame::Ping | Frame::Extension { .. } => {}
            Frame::Ack(a) => self.on_ack(now, i, &a),
            Frame::PathChallenge(d) => {
                self.subflows[i].val.response = Some(d);
                self.subflows[i].ctrl_pending |= ctrl::RESPONSE;
            }
            Frame::PathResponse(d) => {
                let sf = &mut self.subflows[i];
                if sf.val.challenge.is_some_and(|c| ct_eq(&c, &d)) {
                    sf.val.validated = true;
                    sf.val.challenge = None;
                    sf.ctrl_pending &= !ctrl::CHALLENGE;
                }
            }
            Frame::Dss(d) => self.on_dss(now, i, &d, drops),
            Frame::MpJoinSynAck(sa) => self.on_synack(now, i, &sa, drops),
            Frame::MpJoinAck { hmac } => self.on_join_ack(now, i, &hmac, drops),
            Frame::AddAddr(a) => self.on_add_addr(i, a, drops),
            Frame::RemoveAddr(ids) => {
                for id in ids {
                    for k in 0..self.subflows.slot_bound() {
                        let on_addr = self.subflows.get(k).is_some_and(|s| s.remote_addr_id == *id && s.id != 0);
                        if on_addr {
                            self.shut_subflow(now, k, reason::UNSPECIFIED, false);
                        }
                    }
                    self.remote_addrs.retain(|a| a.0 != *id);
                }
            }
            Frame::MpPrio { backup } => self.subflows[i].backup = backup,
            Frame::FastClose { key, .. } => {
                if self.keys.as_ref().is_some_and(|k| k.local_key == key) {
                    self.enter_closed(now, CloseReason::PeerAborted);
                    self.drained = true;
                } else {
                    drops.bad_hmac += 1;
                }
            }
            Frame::SubflowReset { reason, .. } => {
                let sf = &self.subflows[i];
                if !sf.is_open() {
                    return;
                }
                let refused_fast = sf.state == SubflowState::JoinSent
                    && sf.join.kind == JoinKind::FastInitiator
                    && reason == reason::FAST_JOIN_REJECTED;
                let (path, remote, backup) = (sf.local_path, sf.remote, sf.backup);
                self.shut_subflow(now, i, reason, false);
                if refused_fast {
                    // The peer's window refused our DSN: join again, FAST_JOIN_IN this time
                    // (one FAST_JOIN_OUT per DATA_ACK edge).
                    self.open_subflow(now, path, remote, backup);
                }
            }
            Frame::Rto { request, rto_ms } => {
                if request {
                    self.subflows[i].ctrl_pending |= ctrl::RTO_VAL;
                }
                if let Some(v) = rto_ms {
                    self.subflows[i].peer_rto_ms = Some(v);
                }
            }
            Frame::HandshakeDone | Frame::TransportParams(_) | Frame::Cookie(_) => {}
            Frame::FastJoinReply(r) => self.on_fast_join_reply(now, i, &r, drops),
            Frame::MpJoin(_) | Frame::FastJoinOut(_) | Frame::FastJoinIn(_) => drops.unexpected += 1,
        }
    }

    pub(super) fn on_dss(&mut self, now: Time, i: usize, d: &Dss<'_>, drops: &mut Drops) {
        if let Some((ack, wnd)) = d.ack {
            self.on_data_ack(now, i, Dsn(ack), wnd, drops);
        }
        let Some((dsn, data)) = d.mapping else { return };
        if !(self.subflows[i].established() || self.side == Side::Server && i == 0) {
            // RFC 8684 §3.2: no data before the fourth ACK.
            drops.unexpected += 1;
            return;
        }
        let Ok(m) = self.recv.on_mapping(Dsn(dsn), data, d.fin, d.idle, i) else {
            // Not reached from `handle_sealed`, which refuses such a packet before
            // acknowledging it; nor by a fast join's data, which starts at the sender's
            // DATA_ACK edge (§5.9), at or below our EDSN, and so needs no new range. A guard.
            self.counters.reassembly_refused += 1;
            tracing::debug!(dsn, len = data.len(), "reassembly full: segment refused");
            return;
        };
        if m.new > 0 {
            self.subflows[i].last_original_rx = now;
            if self.idle_timer_applies() {
                let rto = self.peer_rto();
                self.idle_timer.on_data(now, d.idle, rto);
            }
        }
        if m.readable {
            self.emit(Event::Readable);
        }
        if m.finished {
            self.subflows[i].acks.immediate = true;
            self.emit(Event::Finished);
        }
    }

    pub(super) fn on_data_ack(&mut self, now: Time, i: usize, ack: Dsn, wnd: u64, drops: &mut Drops) {
        let Ok(a) = self.send.on_data_ack(ack, wnd) else {
            // Above what we sent, or outside the stream: ignored.
            drops.protocol += 1;
            return;
        };
        if a.advanced {
            self.counters.bytes_acked += a.bytes;
            self.subflows[i].last_original_rx = now;
            let rto = self.peer_rto();
            self.idle_timer.on_data_ack(now, rto);
        }
    }

    pub(super) fn check_close(&mut self, now: Time) {
        if self.state == State::Established && self.send.fin_acked() && self.recv.is_finished() {
            self.enter_closed(now, CloseReason::Graceful);
        }
    }
}
