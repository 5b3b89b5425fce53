//! The receive path: the client's handshake packets, then every sealed packet: opened,
//! inspected as a whole (a value no correct peer sends drops it before anything acts), then
//! its frames applied; the connection-level data frames (DSS: mappings, DATA_ACK, DATA_FIN).

use super::dsn::Dsn;
use super::early::EarlyStart;
use super::events::{CloseReason, EndpointEvent, Event, Side};
use super::inspect::inspect;
use super::multimob::MultiMob;
use super::paths::Paths;
use super::qlog::{PacketHead, PacketKind};
use super::state::State;
use super::subflow::{Subflow, SubflowState};
use super::timers::{self, timer};
use super::Connection;
use crate::drops::DropReason;
use crate::wire::frame::reason;
use crate::wire::packet::{decode_pn, Join};
use crate::wire::{Cid, Dss, Frame, FrameList, Header, Packet};
use crate::{Carrier, LocalPath, PathId, Time};
use std::net::SocketAddr;

impl Connection {
    /// RETRY for the client (§4.5).
    pub(crate) fn handle_retry(
        &mut self,
        now: Time,
        (path, carrier): (PathId, Carrier),
        remote: SocketAddr,
        p: &Packet<'_>,
        dgram: &[u8],
    ) -> Result<(), DropReason> {
        let hs = self.session.hs.as_mut().filter(|_| self.state == State::Initial).ok_or(DropReason::Unexpected)?;
        hs.on_retry(now, remote, p, dgram, &self.config)?;
        // The token binds the address the RETRY answered: over TCP, the carrier's. The INITIAL
        // with it goes back the same way (§4.11).
        self.paths.spread.initial_again_on(path, carrier);
        Ok(())
    }

    /// HANDSHAKE for the client (§4.1-4.2): the keys are agreed, subflow 0 is up, and the
    /// client confirms (CONFIRM packets) until the server's first short packet.
    pub(crate) fn handle_handshake(
        &mut self,
        now: Time,
        (path, carrier): (PathId, Carrier),
        remote: SocketAddr,
        p: &Packet<'_>,
        scratch: &mut [u8],
    ) -> Result<(), DropReason> {
        let hs = self.session.hs.as_mut().filter(|_| self.state == State::Initial).ok_or(DropReason::Unexpected)?;
        let agreed = hs.on_handshake(now, remote, p, scratch, &self.config, &mut self.rng)?;
        // An answer on the first path to its only INITIAL times the round trip; one through
        // another path answers a copy sent later (§4.10).
        let first = self.paths.subflows[0].local_path() == path && carrier == Carrier::Udp;
        let rtt_sample = agreed.rtt_sample.filter(|_| first);
        self.with_paths(|p, cx| p.handshake_via(cx, path, carrier));
        self.install_keys(agreed.secrets);
        self.set_peer_params(agreed.params);
        self.tickets.set_resumed(agreed.resumed);
        self.tickets.set_server_key(agreed.server_key);
        self.on_early_answer(now, agreed.resumed, agreed.early_accepted);
        let sf = &mut self.paths.subflows[0];
        sf.on_handshake(agreed.server_cid, rtt_sample, now);
        self.state = State::Confirm;
        self.live.last_rx = now;
        Ok(())
    }

    /// A sealed packet for this connection: a short header, a CONFIRM (server, subflow 0) or a
    /// JOIN, parsed by the endpoint (`header`, `header_len` bytes); `scratch` holds the
    /// datagram and may be modified in place.
    pub(crate) fn handle_sealed(
        &mut self,
        now: Time,
        (path, carrier): (PathId, Carrier),
        remote: SocketAddr,
        header: Header<'_>,
        header_len: usize,
        scratch: &mut [u8],
    ) -> Result<(), DropReason> {
        if self.live.drained {
            return Err(DropReason::Unexpected);
        }
        // Any packet for us arms the trim timer (a forged one too: one pending timer at most).
        self.arm_trim(now);
        if let Header::Early(e) = header {
            return self.handle_early(now, u64::from(e.pn), header_len, scratch);
        }
        let keys = self.session.keys.as_ref().ok_or(DropReason::Unexpected)?;
        let dgram_len = scratch.len() as u64;
        let (i, pn, hl, is_join) = match header {
            Header::Short(s) => {
                let i = self.paths.subflows.by_cid(&s.dcid).ok_or(DropReason::UnknownCid)?;
                // The endpoint parsed the header with our CID length.
                let pn_offset = header_len;
                let (len, trunc) = keys.recv.unprotect_short(scratch, pn_offset).map_err(|_| DropReason::Malformed)?;
                let pn = decode_pn(self.paths.subflows[i].acks().largest, trunc, len);
                (i, pn, pn_offset + len, false)
            }
            Header::Confirm(c) if self.side == Side::Server => {
                let i = self.paths.subflows.by_cid(&c.dcid).ok_or(DropReason::UnknownCid)?;
                (i, u64::from(c.pn), header_len, false)
            }
            Header::Join(j) => match self.paths.subflows.by_number(j.subflow) {
                Some(i) => (i, u64::from(j.pn), header_len, true),
                None => return self.handle_new_join(now, (path, carrier), remote, j, header_len, scratch),
            },
            _ => return Err(DropReason::Unexpected),
        };
        // A subflow's carrier is fixed when it opens (§4.11): a packet of it over the other
        // carrier is no migration.
        if self.paths.subflows[i].carrier() != carrier {
            return Err(DropReason::Unexpected);
        }
        let id = self.paths.subflows[i].id();
        let plain = keys.recv.open(id, pn, scratch, hl).map_err(|_| DropReason::DecryptFailed)?;
        let mut frames = FrameList::new();
        frames.fill(plain).map_err(|_| DropReason::Malformed)?;
        let look = inspect(&self.send, &self.recv, self.paths.subflows[i].rec().next_pn, &frames)?;
        if look.new_ranges > self.recv.ranges_free() {
            // The reassembly cannot track another hole (far more holes than segments of 256
            // bytes fit in the window). The packet is dropped before it is acknowledged, so the
            // sender declares it lost and sends its data again: a stored segment is never given
            // up, and a refused one is never lost. Data that fills a hole is always taken.
            self.counters.reassembly_refused += 1;
            return Ok(());
        }
        let max_ack_delay = self.config.transport.max_ack_delay;
        let sf = &mut self.paths.subflows[i];
        if sf.fast_opening() && !look.answers_join {
            // Nothing on a fast join is usable before the reply: not acknowledged, so the peer
            // sends it again (its reply rides in every packet until we acknowledge one).
            return Err(DropReason::Unexpected);
        }
        if !sf.on_packet_received(now, pn, look.eliciting, max_ack_delay) {
            return Err(if is_join { DropReason::ReplayedJoin } else { DropReason::Duplicate });
        }
        if !sf.is_open() {
            sf.on_packet_after_close(look.carries_reset);
        }
        if is_join {
            // A repeated JOIN (new packet number) from the same address: answer it again, with
            // the SYNACK, the fast-join reply, or the refusal. A JOIN on a fast join we
            // accepted is a packet of its first flight (§5.9): its data is taken below. Anything
            // else is a replay.
            let same = sf.remote() == remote && !sf.local_opener();
            if !sf.on_join_again(same) {
                return Err(DropReason::ReplayedJoin);
            }
            if sf.state() != SubflowState::Established {
                return Ok(());
            }
        }
        sf.count_received(dgram_len);
        self.live.last_rx = now;
        // A CONFIRM under the 1-RTT keys proves the address of a connection made at its 0-RTT
        // INITIAL (§4.9): only who got our HANDSHAKE there could send it.
        let proves = matches!(header, Header::Confirm(_)) && !sf.val().validated && sf.remote() == remote;
        if proves && i == 0 {
            self.on_address_proven();
        }
        // The peer is there: the application's probe is answered.
        if self.live.probe.take().is_some() && !self.clock().awaits_peer() {
            self.live.peer_wait = None;
        }
        let sf = &mut self.paths.subflows[i];
        if let Some(q) = self.out.qlog.as_deref_mut() {
            let kind = match header {
                Header::Confirm(_) => PacketKind::Confirm,
                Header::Join(_) => PacketKind::Join,
                _ => PacketKind::Short,
            };
            let head = PacketHead { subflow: id, kind, pn, len: dgram_len as usize };
            q.packet_received(now, head, &frames, self.recv.edsn().0);
        }
        // NAT rebinding (§7): an authenticated packet, the newest on the subflow, from a new
        // address moves the subflow there, pending validation of the new address.
        if (sf.remote() != remote || sf.local_path() != path) && sf.acks().largest == Some(pn) {
            let mut ch = [0u8; 8];
            let _ = self.rng.fill(&mut ch);
            sf.migrate(remote, path, dgram_len, ch);
            self.emit(now, Event::SubflowMigrated { id, remote });
        }
        if self.side == Side::Client && self.state == State::Confirm && matches!(header, Header::Short(_)) {
            self.state = State::Established;
            self.session.hs = None;
            self.emit(now, Event::Connected);
            self.emit(
                now,
                Event::SubflowEstablished { id: 0, path: self.paths.subflows[0].local_path(), backup: false },
            );
        }
        if look.urgent {
            self.paths.subflows[i].ack_now();
        }
        let mut frames = frames.iter();
        if is_join {
            // The join frame that leads a JOIN packet: a FAST_JOIN_OUT overtaken by a later
            // packet of its flight (which made the subflow) still delivers its data; the
            // packet is authenticated for this subflow and its number is new, so it is no
            // replay. A FAST_JOIN_IN carries nothing more.
            if let Some(Frame::FastJoinOut(f)) = frames.next() {
                if self.recv.check(Dsn(f.dsn), f.data.len()).is_ok() {
                    self.on_dss(now, i, &Dss::data(f.dsn, f.data, false));
                }
            }
        }
        for f in frames {
            self.on_frame(now, i, f);
        }
        self.out.log_losses(&mut self.paths.subflows);
        self.after_receive(now);
        Ok(())
    }

    /// The application asks whether the peer is still there (a client in a long pause
    /// between requests, which would otherwise learn of a dead server only at the idle
    /// timeout): a PING goes on the primary subflow now, and the peer timeout runs as if data
    /// awaited the peer, until anything is heard from it; unanswered, the connection closes
    /// with `CloseReason::PeerUnresponsive`. False (nothing sent) unless the connection is
    /// established and has a peer timeout. Each probe is one PING and its ACK: the app
    /// chooses how often (a phone's radio pays for each).
    pub fn probe_peer(&mut self, now: Time) -> bool {
        if self.state != State::Established || self.config.transport.peer_timeout == 0 {
            return false;
        }
        let Some(id) = self.clock().keep_alive_subflow().map(|s| s.id()) else { return false };
        let Some(i) = self.paths.subflows.by_number(id) else { return false };
        self.paths.subflows[i].ping();
        self.live.start_probe(now);
        true
    }

    /// A datagram went out or came in at `now`: arms the trim timer if the connection holds
    /// buffers and it is not armed.
    pub(super) fn arm_trim(&mut self, now: Time) {
        if self.live.trim_at.is_none() && self.buffer_bytes() > 0 {
            self.live.trim_at = Some(now.saturating_add(timers::TRIM_AFTER));
        }
    }

    /// Acts on every timer due at `now` (call at `poll_timeout`'s deadline).
    pub fn handle_timeout(&mut self, now: Time) {
        if self.live.drained {
            return;
        }
        let t = self.clock().timers();
        if t.expired(timer::DRAIN, now) {
            self.set_drained();
            return;
        }
        if t.expired(timer::CARRIER, now) {
            // The bound for the other paths or for TCP (§4.10, §4.11).
            self.with_paths(|p, cx| p.on_spread_timeout(cx, now));
        }
        if t.expired(timer::HANDSHAKE, now) {
            let max = self.config.transport.max_handshake_attempts;
            if !self.session.hs.as_mut().is_some_and(|hs| hs.on_timeout(max)) {
                let auth = self.session.hs.as_ref().is_some_and(|hs| hs.auth_failed());
                self.enter_closed(
                    now,
                    if auth { CloseReason::ServerAuthFailed } else { CloseReason::HandshakeTimeout },
                );
                self.set_drained();
                return;
            }
        }
        if t.expired(timer::IDLE, now) {
            self.enter_closed(now, CloseReason::IdleTimeout);
            self.set_drained();
            return;
        }
        if t.expired(timer::PEER, now) {
            let reason = self.clock().peer_unresponsive(now);
            tracing::debug!(side = ?self.side, ?reason, "the peer stopped answering");
            self.enter_closed(now, reason);
            self.set_drained();
            return;
        }
        let fail_over_to = self.paths.has_unused_path();
        if t.expired(timer::RECEIVE_IDLE, now) && fail_over_to && self.paths.multimob.idle_timer.expired(now) {
            // Nothing arrived for an idle-timer period while the server had more to send
            // (its last data did not carry MP_IDLE): the paths in use are declared bad.
            if let Some(q) = self.out.qlog.as_deref_mut() {
                q.receive_idle_timer(now);
            }
            self.with_paths(|p, cx| p.fail_over(cx, now, true, |_, s| !s.failover()));
        }
        if t.expired(timer::RECEIVE_IDLE, now) {
            // A stream the server paces is overdue (`oracle::PacedStream`): a PING asks its
            // path, whose silence then fails it over as any unanswered tail's does.
            // Only while a path is left to fail over to; the watch is used up either way.
            if let Some(id) = self.paths.multimob.pace_overdue(now).filter(|_| fail_over_to) {
                if let Some(i) = self.paths.subflows.by_number(id).filter(|&i| {
                    let s = &self.paths.subflows[i];
                    s.established() && !s.pf()
                }) {
                    self.paths.subflows[i].ping();
                }
            }
        }
        if t.expired(timer::TRIM, now) {
            timers::trim(now, &mut self.live, &mut self.send, &mut self.recv, &mut self.paths.subflows);
            self.paths.multimob.trim_pace();
        }
        self.with_paths(|p, cx| p.on_timers(cx, now));
    }

    /// A JOIN naming a subflow number not seen before: the path layer takes or refuses it. A
    /// fast join is complete at once (§5.9): its data is delivered, the rest of its packet
    /// acted on, and what we have in flight elsewhere is queued again, for the new subflow
    /// first (the peer moved to a new path, presumably because the old one went bad).
    fn handle_new_join(
        &mut self,
        now: Time,
        via: (PathId, Carrier),
        remote: SocketAddr,
        j: Join,
        header_len: usize,
        scratch: &mut [u8],
    ) -> Result<(), DropReason> {
        let (paths, mut cx) = self.split();
        let Some(fj) = paths.accept_join(&mut cx, now, via, remote, j, header_len, scratch)? else { return Ok(()) };
        let i = fj.slot;
        if let Some((dsn, data)) = fj.data {
            self.on_dss(now, i, &Dss::data(dsn, data, false));
        }
        // The rest of the JOIN packet: its DATA_ACK, ACK, RTO frames.
        for f in fj.frames.iter().skip(1) {
            self.on_frame(now, i, f);
        }
        for k in 0..self.paths.subflows.slot_bound() {
            if k != i && self.paths.subflows.get(k).is_some_and(|s| s.is_open()) {
                self.paths.copy_in_flight_for_reinjection(&mut self.send, k);
            }
        }
        self.after_receive(now);
        Ok(())
    }

    pub(super) fn after_receive(&mut self, now: Time) {
        self.settle_early();
        self.tune_window(now);
        if self.state == State::Established && !self.paths.local.pm_ran && self.side == Side::Client {
            self.paths.local.pm_ran = true;
            // The first path first: with MP_JOIN (§4.10), before a path manager that joins
            // every path opens it with FAST_JOIN.
            self.with_paths(|p, cx| p.join_first_path(cx, now));
            self.with_paths(|p, cx| p.run_path_manager(cx, now));
        }
        self.with_paths(|p, cx| p.check_fail_back(cx, now));
        self.check_close(now);
    }

    /// The receive window grows with the reader (`RecvSide::autotune`), measured over the
    /// slowest working subflow's RTT: data spread over the paths arrives in order only as the
    /// slowest delivers it, and the window holds what the faster ones bring meanwhile.
    fn tune_window(&mut self, now: Time) {
        if !self.recv.can_grow() {
            return;
        }
        let works = |s: &&Subflow| s.established() && !s.rec().pf && s.rec().rtt.has_sample;
        if let Some(rtt) = self.paths.subflows.iter().filter(works).map(|s| s.rec().rtt.srtt).max() {
            self.recv.autotune(now, rtt);
        }
    }

    pub(super) fn on_frame(&mut self, now: Time, i: usize, f: Frame<'_>) {
        match f {
            Frame::NewTicket(t) => {
                // A server ignores one; a short packet has keys.
                let Some(keys) = self.session.keys.as_ref().filter(|_| self.side == Side::Client) else { return };
                if self.tickets.on_new_ticket(now, &t, &keys.resumption, keys.send.suite().id()) {
                    self.emit(now, Event::TicketReceived);
                }
            }
            Frame::Padding { .. } | Frame::Ping | Frame::Extension { .. } => {}
            Frame::Ack(a) => self.with_paths(|p, cx| p.on_ack(cx, now, i, &a)),
            // A client keeps it; a server ignores one (PROTOCOL.md §5.20).
            Frame::ResetToken(t) if self.side == Side::Client => self.paths.subflows[i].set_peer_reset(t),
            Frame::ResetToken(_) => {}
            Frame::PathChallenge(d) => self.paths.subflows[i].on_path_challenge(d),
            Frame::PathResponse(d) => self.paths.subflows[i].on_path_response(&d),
            Frame::Dss(d) => self.on_dss(now, i, &d),
            Frame::MpJoinSynAck(sa) => self.with_paths(|p, cx| p.on_synack(cx, now, i, &sa)),
            Frame::MpJoinAck { hmac } => self.with_paths(|p, cx| p.on_join_ack(cx, now, i, &hmac)),
            Frame::AddAddr(a) => {
                // An address of the other family lets paths of that family join (fullmesh and
                // backup open them now; multimob and ondemand when they fail over).
                let family = self.session.peer_addr.is_ipv6() != a.ip.is_ipv6();
                if self.with_paths(|p, cx| p.on_add_addr(cx, now, i, a))
                    && family
                    && Paths::rejoins_silent_paths(self.side, &self.config)
                {
                    self.paths.local.pm_ran = false;
                }
            }
            Frame::RemoveAddr(ids) => self.with_paths(|p, cx| p.on_remove_addr(cx, now, ids)),
            Frame::RemoveSubflow(r) => self.with_paths(|p, cx| p.on_remove_subflow(cx, now, &r)),
            Frame::MpPrio { backup } => self.paths.subflows[i].on_peer_prio(backup),
            Frame::FastClose { key, .. } => {
                if self.session.keys.as_ref().is_some_and(|k| k.local_key == key) {
                    self.enter_closed(now, CloseReason::PeerAborted);
                    self.set_drained();
                } else {
                    self.reject(DropReason::BadHmac);
                }
            }
            Frame::SubflowReset { reason, .. } => {
                let sf = &self.paths.subflows[i];
                if !sf.is_open() {
                    return;
                }
                let refused_fast = sf.fast_opening() && reason == reason::FAST_JOIN_REJECTED;
                let (path, remote, backup) = (sf.local_path(), sf.remote(), sf.backup());
                self.with_paths(|p, cx| p.shut_subflow(cx, now, i, reason, false));
                if reason == reason::IDLE_TIMEOUT {
                    // The server found it silent and forgot it (§7): a client that keeps a
                    // subflow on every path joins there again.
                    self.with_paths(|p, cx| p.rejoin(cx, now, i));
                }
                if refused_fast {
                    // The peer's window refused our DSN: join again, FAST_JOIN_IN this time
                    // (one FAST_JOIN_OUT per DATA_ACK edge).
                    self.with_paths(|p, cx| p.open(cx, now, path, remote, backup));
                }
            }
            Frame::Rto { request, rto_ms } => {
                if request {
                    self.paths.subflows[i].send_rto();
                }
                if let Some(v) = rto_ms {
                    self.paths.subflows[i].on_peer_rto(v);
                }
            }
            Frame::HandshakeDone | Frame::TransportParams(_) | Frame::Cookie(_) => {}
            Frame::FastJoinReply(r) => self.with_paths(|p, cx| p.on_fast_join_reply(cx, now, i, &r)),
            Frame::MpJoin(_) | Frame::FastJoinOut(_) | Frame::FastJoinIn(_) => self.reject(DropReason::Unexpected),
        }
    }

    pub(super) fn on_dss(&mut self, now: Time, i: usize, d: &Dss<'_>) {
        if let Some((ack, wnd)) = d.ack {
            self.on_data_ack(now, i, Dsn(ack), wnd);
        }
        // A short DSN (§5.5) is the one nearest to what we expect: `inspect` took it the
        // same way and found it inside the window.
        let Some((dsn, data)) = d.mapping_near(self.recv.edsn().0) else { return };
        if !(self.paths.subflows[i].established() || self.side == Side::Server && i == 0) {
            // RFC 8684 §3.2: no data before the fourth ACK.
            self.reject(DropReason::Unexpected);
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
        let duplicate = (data.len() as u64).saturating_sub(m.new);
        if duplicate > 0 {
            self.paths.subflows[i].on_duplicate_data(duplicate);
        }
        if m.new > 0 {
            self.paths.subflows[i].on_new_data(now);
            // Tracked whether or not the timer applies now (it does not while failover
            // subflows are open): at a fail-back it must count from the last data, not from
            // the data before the failover, whose deadline has passed.
            if self.paths.multimob.tracks_receive_idle() {
                let rto = MultiMob::peer_rto(&self.paths.subflows, self.config.transport.max_rto);
                self.paths.multimob.idle_timer.on_data(now, d.idle, rto);
                // A stream the server paces is watched where its silence can fail a path over
                // at once (the timeout trigger's choice; MultiMob's module has no such watch).
                if d.idle && self.config.multipath.failover_on_timeout {
                    let ours = self.paths.subflows.iter().map(|s| s.last_data_tx()).max().unwrap_or(0);
                    let id = self.paths.subflows[i].id();
                    self.paths.multimob.on_idle_data(now, oracle::idle::idle_timeout(rto), id, ours);
                }
            }
        }
        if m.readable {
            self.emit(now, Event::Readable);
        }
        if m.finished {
            self.paths.subflows[i].ack_now();
            self.emit(now, Event::Finished);
        }
    }

    pub(super) fn on_data_ack(&mut self, now: Time, i: usize, ack: Dsn, wnd: u64) {
        let Ok(a) = self.send.on_data_ack(ack, wnd) else {
            // Checked before the packet was accepted; a guard.
            self.reject(DropReason::Protocol);
            return;
        };
        if a.advanced {
            self.counters.bytes_acked += a.bytes;
            // The peer took some: what still awaits it waits from now.
            self.live.peer_wait = self.clock().awaits_peer().then_some(now);
            self.paths.subflows[i].on_original_data(now);
            let rto = MultiMob::peer_rto(&self.paths.subflows, self.config.transport.max_rto);
            self.paths.multimob.idle_timer.on_data_ack(now, rto);
        }
    }

    pub(super) fn check_close(&mut self, now: Time) {
        if self.state == State::Established && self.send.fin_acked() && self.recv.is_finished() {
            self.enter_closed(now, CloseReason::Graceful);
        }
    }
}

impl Connection {
    // 0-RTT data as it arrives: the client's answer, the server's EARLY packets and the
    // address they come from (`early::Early` keeps the state).

    /// Client: the HANDSHAKE came; `accepted`: the server took the early data. If it did
    /// not, everything the EARLY packets carried goes again at once under the 1-RTT keys.
    pub(super) fn on_early_answer(&mut self, now: Time, resumed: bool, accepted: bool) {
        if self.early.answered(resumed, accepted) {
            self.with_paths(|p, cx| p.reinject_in_flight(cx, now, 0, false));
        }
    }

    /// Server: the connection was made at a 0-RTT INITIAL (see `Early::start_on`).
    pub(crate) fn start_early(&mut self, e: EarlyStart) {
        self.early.start_on(self.paths.subflows.get_mut(0), e);
    }

    /// Server: the client repeated its INITIAL (see `Early::handshake_again`).
    pub(crate) fn handshake_again(
        &mut self,
        remote: SocketAddr,
        initial: (&Cid, &[u8; 32]),
        len: u64,
    ) -> Option<Vec<u8>> {
        self.early.handshake_again(self.paths.subflows.get_mut(0), remote, initial, len)
    }

    /// Server: a CONFIRM authenticated under the 1-RTT keys came from subflow 0's address:
    /// the address is proven.
    pub(super) fn on_address_proven(&mut self) {
        if let Some(sf) = self.paths.subflows.get_mut(0) {
            sf.prove_address();
        }
        self.settle_early();
    }

    /// Server: EARLY packets are done once subflow 0's address is proven or the subflow is
    /// gone (see `Early::settle_if_done`).
    pub(super) fn settle_early(&mut self) {
        if let Some(odcid) = self.early.settle_if_done(self.paths.subflows.get(0)) {
            self.out.endpoint(EndpointEvent::RetireCid(odcid));
        }
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
        let len = scratch.len() as u64;
        let sf0 = self.paths.subflows.get(0);
        let (frames, eliciting) = self.early.open_packet(self.side, sf0, &self.recv, (pn, header_len), scratch)?;
        let start = self.recv.start().0;
        let max_ack_delay = self.config.transport.max_ack_delay;
        let sf = self.paths.subflows.get_mut(0).ok_or(DropReason::Unexpected)?;
        if !sf.on_packet_received(now, pn, eliciting, max_ack_delay) {
            return Err(DropReason::Duplicate);
        }
        sf.count_received(len);
        sf.ack_now();
        self.live.last_rx = now;
        for f in frames.iter() {
            if let Frame::Dss(d) = f {
                if let Some((rel, data)) = d.mapping_near(0) {
                    let dss = Dss::data(Dsn(start).add(rel).0, data, d.fin);
                    self.on_dss(now, 0, &dss);
                    self.early.on_received(rel + data.len() as u64);
                }
            }
        }
        self.after_receive(now);
        Ok(())
    }
}

/// The application's and the operating system's calls about paths and subflows, carried out
/// by the path layer (see `Paths`); the timers' deadline.
impl Connection {
    /// Opens an additional subflow from `path` to `remote` (MP_JOIN). Returns its number.
    pub fn open_subflow(&mut self, now: Time, path: PathId, remote: SocketAddr, backup: bool) -> Option<u32> {
        let i = self.with_paths(|p, cx| p.open(cx, now, path, remote, backup))?;
        Some(self.paths.subflows[i].id())
    }

    /// The earliest time `handle_timeout` has work to do.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.clock().poll_timeout()
    }

    /// Bytes of the buffers that grow with use: the stream's two sides, each subflow's
    /// sent-packet ring and received packet numbers.
    pub fn buffer_bytes(&self) -> usize {
        timers::buffer_bytes(&self.send, &self.recv, &self.paths.subflows)
    }

    /// Local path `path` has a new address, `lp` (a new interface, or a new address on one):
    /// the endpoint reused a removed path's slot or added one. The address gets an address
    /// id no live address of the connection has, never one just withdrawn (a REMOVE_ADDR
    /// still in flight for the old address must not close the new address's subflows). A
    /// client joins from it at once under `fullmesh` and `backup`, and under `multimob` and
    /// `ondemand` when the connection has no usable regular subflow left (the phone moved to
    /// a network whose address replaces the lost one).
    pub fn path_added(&mut self, now: Time, path: PathId, lp: LocalPath) {
        self.with_paths(|p, cx| p.path_added(cx, now, path, lp))
    }

    /// Local path `path`'s address is gone for good (the interface went away, or lost this
    /// address): unlike `path_down`, its subflows are closed even where nothing else could
    /// carry the connection, and nothing reopens them there. A client first joins from a path
    /// of the same kind that has no subflow (the address that replaced this one), or, when
    /// no regular subflow is left and there is none, from every other path (a failover).
    /// The peer is told with SUBFLOW_RESETs (if they still get out) and a REMOVE_ADDR.
    pub fn path_removed(&mut self, now: Time, path: PathId) {
        self.with_paths(|p, cx| p.path_removed(cx, now, path))
    }

    /// The interface of local path `path` went down (the driver watches the links). A client
    /// first joins from every other path that is up and has no subflow (make-before-break
    /// made instant: the link is gone), then closes its subflows on `path`, reinjecting their
    /// data, and tells the peer: a SUBFLOW_RESET on each (if the interface still sends) and a
    /// REMOVE_ADDR on another subflow, so the server does not keep them; `path_up` opens them
    /// again. Where no other subflow could carry the connection, and on the server (which
    /// cannot open subflows), the subflows stay open, marked potentially failed, and their
    /// retransmission timers probe the path.
    pub fn path_down(&mut self, now: Time, path: PathId) {
        self.with_paths(|p, cx| p.path_down(cx, now, path))
    }

    /// The interface of local path `path` is up again: a client opens a subflow there again
    /// if `path_down` closed one (a path that had none, such as an unused cellular backup
    /// under `multimob`, stays unused).
    pub fn path_up(&mut self, now: Time, path: PathId) {
        self.with_paths(|p, cx| p.path_up(cx, now, path))
    }

    /// Announces a local path's address to the peer (ADD_ADDR).
    pub fn announce_address(&mut self, path: PathId) -> bool {
        self.paths.announce_address(path)
    }

    /// Withdraws a local path's address (REMOVE_ADDR) and closes our subflows on it, each
    /// with a SUBFLOW_RESET.
    pub fn remove_address(&mut self, now: Time, path: PathId) {
        self.with_paths(|p, cx| p.remove_address(cx, now, path))
    }

    /// Marks a subflow potentially failed (an oracle's verdict), reinjecting its data.
    pub fn mark_potentially_failed(&mut self, now: Time, id: u32) {
        self.with_paths(|p, cx| p.mark_potentially_failed(cx, now, id))
    }

    /// Closes one subflow (SUBFLOW_RESET with `reason`); its data is reinjected elsewhere.
    pub fn close_subflow(&mut self, now: Time, id: u32, reason: u8) -> bool {
        self.with_paths(|p, cx| p.close_subflow(cx, now, id, reason))
    }

    /// The addresses the peer announced.
    pub fn remote_addresses(&self) -> &[(u8, SocketAddr)] {
        self.paths.remote_addresses()
    }

    /// The peer's address: that of its first open subflow (the one the connection started
    /// on, while it lives), else of any subflow still recorded.
    pub fn peer_address(&self) -> Option<SocketAddr> {
        self.paths.peer_address()
    }

    /// Whether an open subflow on local path `path` sent or received anything at `since` or
    /// later: the path's radio is awake.
    pub fn path_active_since(&self, path: PathId, since: Time) -> bool {
        self.paths.path_active_since(path, since)
    }

    /// The local path of subflow `id`, if it is one of ours.
    pub fn subflow_path(&self, id: u32) -> Option<PathId> {
        self.paths.subflow_path(id)
    }

    /// Asks the peer for its RTO on subflow `id` (MultiMob RTO option).
    pub fn request_peer_rto(&mut self, id: u32) {
        self.paths.request_peer_rto(id)
    }

    /// Sets the oracle's flags on a subflow.
    pub fn set_subflow_flags(&mut self, id: u32, was_bad: bool, high_rto: bool) {
        self.paths.set_subflow_flags(id, was_bad, high_rto)
    }

    /// Changes the backup flag of a subflow and tells the peer (MP_PRIO).
    pub fn set_backup(&mut self, id: u32, backup: bool) -> bool {
        self.paths.set_backup(id, backup)
    }
}
