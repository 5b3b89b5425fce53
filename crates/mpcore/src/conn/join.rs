//! The path layer's subflows opened and closed: new subflows and their CIDs, MP_JOIN's four
//! packets (RFC 8684 §3.2) and MultiMob's fast joins (PROTOCOL.md §5.9-5.11) from both ends,
//! a subflow closed (its data reinjected) and reclaimed, a CID renamed on collision, and the
//! stateless reset (PROTOCOL.md §3.4).

use super::cc::Cc;
use super::cx::Cx;
use super::events::{CloseReason, EndpointEvent, Event, Side};
use super::inspect::inspect;
use super::packet_builder::PacketBuilder;
use super::paths::Paths;
use super::qlog::{PacketHead, PacketKind};
use super::recv::RecvSide;
use super::send::Seg;
use super::send::SendSide;
use super::session::Keys;
use super::session::Session;
use super::state::State;
use super::subflow::recovery::Rtt;
use super::subflow::table::MAX_SLOTS;
use super::subflow::Subflow;
use super::subflow::{DataRef, FrameSet, JoinKind, SubflowState};
use crate::config::Config;
use crate::config::PathManager;
use crate::crypto::{ct_eq, join_ack_hmac, join_synack_hmac};
use crate::drops::DropReason;
use crate::wire::frame::{reason, FastJoinIn, FastJoinOut, FastJoinReply, MpJoin, MpJoinSynAck, ReplyValue};
use crate::wire::packet::{Join, RESET_TOKEN_LEN};
use crate::wire::{Cid, Dss, Frame, FrameList};
use crate::{Carrier, PathId, Time};
use fastjoin::{Refusal, Verdict};
use std::net::SocketAddr;

/// A fast join taken (§5.9): its slot, the data of its first frame to deliver, and its
/// packet's frames (the first is the join's).
pub(super) struct FastJoined<'s> {
    pub(super) slot: usize,
    pub(super) data: Option<(u64, &'s [u8])>,
    pub(super) frames: FrameList<'s>,
}

impl Paths {
    /// A CID for the peer to send on: random, naming this core on a server spread over cores,
    /// `cid_len` bytes long. The endpoint checks it is unique when it routes it (`rename_cid`).
    pub(super) fn new_cid(&mut self, cx: &mut Cx<'_>) -> Cid {
        if cx.config.faults().same_join_cid {
            return Cid([0xee; 8]).truncated(usize::from(cx.config.transport.cid_len));
        }
        cx.config.issue_cid(cx.rng)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn new_subflow(
        &self,
        cx: &Cx<'_>,
        now: Time,
        id: u32,
        state: SubflowState,
        path: PathId,
        remote: SocketAddr,
        cid: Cid,
    ) -> Subflow {
        let rtt = Rtt::new(cx.config.transport.initial_rto, cx.config.transport.min_rto, cx.config.transport.max_rto);
        let cc = Cc::new(cx.config.transport.congestion, cx.session.mss(cx.config) as u64);
        let opener = match cx.side {
            Side::Client => id & 0x8000_0000 == 0,
            Side::Server => id & 0x8000_0000 != 0,
        };
        let backup = self.local.get(path).is_some_and(|p| p.backup);
        let mut sf = Subflow::new(id, state, path, remote, cid, opener, backup, rtt, cc, now);
        sf.set_up(self.local.addr_id(path), cx.session.mss(cx.config), now);
        if cx.side == Side::Server && cx.config.server.fleet.is_some() && state != SubflowState::Closed {
            sf.send_reset_token();
        }
        if cx.out.qlog.is_some() {
            sf.log_losses();
        }
        sf
    }

    /// Opens a subflow (see [`Connection::open_subflow`](super::Connection::open_subflow)) over the carrier its path takes
    /// (`join_carrier`); returns its slot.
    pub(super) fn open(
        &mut self,
        cx: &mut Cx<'_>,
        now: Time,
        path: PathId,
        remote: SocketAddr,
        backup: bool,
    ) -> Option<usize> {
        let carrier = self.spread.join_carrier(path);
        self.open_over(cx, now, (path, carrier), remote, backup)
    }

    /// Opens a subflow from `path` over `carrier`; returns its slot.
    pub(super) fn open_over(
        &mut self,
        cx: &mut Cx<'_>,
        now: Time,
        (path, carrier): (PathId, Carrier),
        remote: SocketAddr,
        backup: bool,
    ) -> Option<usize> {
        if *cx.state != State::Established || cx.session.keys.is_none() {
            return None;
        }
        if self.subflows.open_count() >= self.max_subflows(cx) || self.subflows.records() >= MAX_SLOTS {
            return None;
        }
        let id = match cx.side {
            Side::Client => self.opened,
            Side::Server => self.opened | 0x8000_0000,
        };
        self.opened += 1;
        let cid = self.new_cid(cx);
        // A fleet's server names the port at its balancer that leads to it alone: a TCP
        // carrier goes there (PROTOCOL.md §4.11), as the balancer cannot read its routing byte.
        let tcp_port = cx.session.peer_params.tcp_port;
        let remote = match carrier {
            Carrier::Tcp if tcp_port != 0 => SocketAddr::new(remote.ip(), tcp_port),
            _ => remote,
        };
        let mut sf = self.new_subflow(cx, now, id, SubflowState::JoinSent, path, remote, cid);
        sf.start_join(cx.rng.u32(), self.fast_join_negotiated(cx), backup);
        sf.set_carrier(carrier);
        let slot = self.subflows.insert(sf)?;
        cx.out.endpoint(EndpointEvent::NewCid(cid));
        if carrier == Carrier::Udp {
            self.on_udp_join_opened(cx, now, slot, path);
        }
        Some(slot)
    }

    /// A client under `fullmesh` or `backup` keeps a subflow on every path: it runs the subflow
    /// idle timer as a server does, and joins again where a subflow went silent.
    pub(super) fn rejoins_silent_paths(side: Side, config: &Config) -> bool {
        side == Side::Client && matches!(config.multipath.path_manager, PathManager::Fullmesh | PathManager::Backup)
    }

    /// Closed subflow `i` went silent (its idle timeout, or a join that replaced such a subflow
    /// given up unanswered): a client that keeps a subflow on every path joins from that path
    /// again, unless its interface is down (`path_up` reopens it) or another subflow is open
    /// there. The join is retried, each one backing off, until the path answers: the server
    /// forgot the old subflow after the same timeout, so probing it would never be answered.
    pub(super) fn rejoin(&mut self, cx: &mut Cx<'_>, now: Time, i: usize) {
        let Some(sf) = self.subflows.get(i) else { return };
        let (path, remote, backup) = (sf.local_path(), sf.remote(), sf.backup());
        let p = usize::from(path.0);
        if !Self::rejoins_silent_paths(cx.side, cx.config)
            || cx.is_closed()
            || self.local.is_down(path)
            || self.subflows.iter().any(|s| s.local_path() == path && s.is_open())
        {
            return;
        }
        if let Some(k) = self.open(cx, now, path, remote, backup) {
            self.subflows[k].mark_rejoin();
            tracing::debug!(path = p, "rejoining a silent path");
        }
    }

    /// Both ends offered FAST_JOIN (MultiMob), so our joins are fast ones.
    pub(super) fn fast_join_negotiated(&self, cx: &Cx<'_>) -> bool {
        cx.config.multipath.fast_join && cx.session.peer_params.fast_join
    }

    pub(super) fn max_subflows(&self, cx: &Cx<'_>) -> usize {
        cx.config.multipath.max_subflows.min(cx.session.peer_params.max_subflows.max(1) as usize)
    }

    /// A JOIN naming a subflow number not seen before (§3.1, §5.6): checked, and taken as a
    /// new subflow, or refused. A fast join, complete on our side at once, is returned for
    /// the connection to deliver its data and act on the rest of its packet.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn accept_join<'s>(
        &mut self,
        cx: &mut Cx<'_>,
        now: Time,
        (path, carrier): (PathId, Carrier),
        remote: SocketAddr,
        j: Join,
        header_len: usize,
        scratch: &'s mut [u8],
    ) -> Result<Option<FastJoined<'s>>, DropReason> {
        if *cx.state != State::Established || !cx.side.peer_opened(j.subflow) {
            return Err(DropReason::Unexpected);
        }
        if self.subflows.peer_number_used(j.subflow) {
            // A number the peer used before, for a subflow since closed (§2: never reused).
            return Err(DropReason::ReplayedJoin);
        }
        if self.subflows.open_count() >= cx.config.multipath.max_subflows || self.subflows.records() >= MAX_SLOTS {
            return Err(DropReason::Refused);
        }
        let len = scratch.len() as u64;
        let keys = cx.session.keys.as_ref().ok_or(DropReason::Unexpected)?;
        let plain = keys.recv.open(j.subflow, u64::from(j.pn), scratch, header_len);
        let plain = plain.map_err(|_| DropReason::DecryptFailed)?;
        // A new subflow has sent nothing: an ACK in its JOIN is a violation. A later packet
        // of a fast join's first flight (data in a DSS) makes no subflow: only the join's first
        // packet, or a repeat without data, does, so that the replay window judges every fast
        // join's data (§5.9). It is dropped unacknowledged; the data goes again once the
        // subflow is up.
        let list = FrameList::parse(plain).map_err(|_| DropReason::Malformed)?;
        if inspect(cx.send, cx.recv, 0, &list)?.data {
            return Err(DropReason::Unexpected);
        }
        let first = list.iter().next();
        let local_token = cx.session.local_token.unwrap_or_default();
        // What the first frame asks for: (backup, address id, how, the data to deliver, R-A).
        let (backup, addr_id, join, data, nonce) = match first {
            Some(Frame::MpJoin(mj)) => (mj.backup, mj.addr_id, JoinKind::Regular, None, mj.nonce),
            // §5.9: the HMAC, then the replay window, where EDSN is our next expected DSN and
            // W our receive buffer (a constant, so that the window's edge only moves forward).
            Some(Frame::FastJoinOut(f)) if cx.config.multipath.fast_join => {
                match cx.recv.accept_fast_join(&keys.fast(), local_token, &f) {
                    Verdict::Deliver => (f.backup, f.addr_id, JoinKind::FastOut, Some((f.dsn, f.data)), 0),
                    Verdict::AcceptDropData => (f.backup, f.addr_id, JoinKind::FastOut, None, 0),
                    Verdict::Refuse(Refusal::BadHmac) => return Err(DropReason::BadHmac),
                    // Silently: a replay gets no answer.
                    Verdict::Refuse(Refusal::Replay) => return Err(DropReason::ReplayedJoin),
                    Verdict::Refuse(r) => {
                        let reason =
                            if r == Refusal::NoData { reason::MPTCP_ERROR } else { reason::FAST_JOIN_REJECTED };
                        self.refuse_join(cx, now, (path, carrier), remote, (&j, len), reason);
                        return Err(DropReason::Refused);
                    }
                }
            }
            Some(Frame::FastJoinIn(f)) if cx.config.multipath.fast_join => {
                if !fastjoin::accept_in(&keys.fast(), local_token, &f) {
                    return Err(DropReason::BadHmac);
                }
                (f.backup, f.addr_id, JoinKind::FastIn, None, 0)
            }
            // Not a join, or a fast join we did not offer.
            _ => return Err(DropReason::Refused),
        };
        let cid = self.new_cid(cx);
        let fast = join != JoinKind::Regular;
        let state = if fast { SubflowState::Established } else { SubflowState::JoinReceived };
        let mut sf = self.new_subflow(cx, now, j.subflow, state, path, remote, cid);
        sf.set_carrier(carrier);
        sf.on_join_received(j.scid, backup, addr_id, len);
        sf.on_packet_received(now, u64::from(j.pn), true, cx.config.transport.max_ack_delay);
        // A fast join is complete on our side: it replies at once (§5.9, §5.10).
        let nonce_local = if fast { 0 } else { cx.rng.u32() };
        sf.accept_join(now, join, nonce, nonce_local);
        let id = sf.id();
        let i = self.subflows.insert(sf).ok_or(DropReason::Refused)?;
        cx.out.endpoint(EndpointEvent::NewCid(cid));
        cx.live.last_rx = now;
        if let Some(q) = cx.out.qlog.as_deref_mut() {
            let head = PacketHead { subflow: id, kind: PacketKind::Join, pn: u64::from(j.pn), len: len as usize };
            q.packet_received(now, head, &list, cx.recv.edsn().0);
        }
        if !fast {
            return Ok(None);
        }
        cx.emit(now, Event::SubflowEstablished { id, path, backup });
        Ok(Some(FastJoined { slot: i, data, frames: list }))
    }

    /// Answers a refused fast join with a SUBFLOW_RESET (§5.9), from a closed subflow that
    /// answers the JOIN's repeats while it drains. The JOIN is not acknowledged: its data was
    /// not taken, and an acknowledged packet's data is held (§6), so the initiator sends it
    /// again elsewhere.
    pub(super) fn refuse_join(
        &mut self,
        cx: &mut Cx<'_>,
        now: Time,
        (path, carrier): (PathId, Carrier),
        remote: SocketAddr,
        (j, len): (&Join, u64),
        reason: u8,
    ) {
        let cid = self.new_cid(cx);
        let mut sf = self.new_subflow(cx, now, j.subflow, SubflowState::Closed, path, remote, cid);
        sf.set_carrier(carrier);
        sf.refuse_join(now, reason, j.scid, len);
        self.subflows.insert(sf);
    }

    pub(super) fn on_synack(&mut self, cx: &mut Cx<'_>, now: Time, i: usize, sa: &MpJoinSynAck) {
        let Some(keys) = cx.session.keys.as_ref() else { return };
        let sf = &mut self.subflows[i];
        if sf.state() != SubflowState::JoinSent || !sf.local_opener() {
            return;
        }
        // RFC 8684 §3.2: HMAC-B = HMAC(Key-B || Key-A, R-B || R-A), B the responder.
        let expect = join_synack_hmac(keys.remote_key, keys.local_key, sa.nonce, sf.join().nonce_local);
        if !ct_eq(&expect, &sa.hmac) {
            sf.answer_to(sa.cid);
            cx.reject(DropReason::BadHmac);
            self.shut_subflow(cx, now, i, reason::MPTCP_ERROR, true);
            return;
        }
        sf.on_synack(sa.cid, sa.nonce, sa.addr_id, sa.backup);
    }

    /// FAST_JOIN_REPLY (§5.11): our fast join is accepted; the subflow is established.
    pub(super) fn on_fast_join_reply(&mut self, cx: &mut Cx<'_>, now: Time, i: usize, r: &FastJoinReply) {
        let Some(keys) = cx.session.keys.as_ref() else { return };
        let sf = &mut self.subflows[i];
        if sf.state() != SubflowState::JoinSent || sf.join().kind != JoinKind::FastInitiator {
            return; // a repeat, or not ours to receive
        }
        if !fastjoin::verify_reply(&keys.fast(), cx.session.remote_token, r) {
            sf.answer_to(Cid(r.cid));
            cx.reject(DropReason::BadHmac);
            self.shut_subflow(cx, now, i, reason::MPTCP_ERROR, true);
            return;
        }
        sf.on_fast_join_reply(now, Cid(r.cid), r.addr_id, r.backup);
        let ev = Event::SubflowEstablished { id: sf.id(), path: sf.local_path(), backup: sf.backup() };
        cx.emit(now, ev);
        self.on_carrier_established(cx, now, i);
    }

    pub(super) fn on_join_ack(&mut self, cx: &mut Cx<'_>, now: Time, i: usize, hmac: &[u8; 20]) {
        let Some(keys) = cx.session.keys.as_ref() else { return };
        let sf = &mut self.subflows[i];
        if sf.state() != SubflowState::JoinReceived {
            return;
        }
        // HMAC-A = HMAC(Key-A || Key-B, R-A || R-B), A the initiator (the peer here).
        let expect = join_ack_hmac(keys.remote_key, keys.local_key, sf.join().nonce_remote, sf.join().nonce_local);
        if !ct_eq(&expect, hmac) {
            cx.reject(DropReason::BadHmac);
            self.shut_subflow(cx, now, i, reason::MPTCP_ERROR, true);
            return;
        }
        sf.on_join_ack(now);
        let ev = Event::SubflowEstablished { id: sf.id(), path: sf.local_path(), backup: sf.backup() };
        cx.emit(now, ev);
    }
}

impl Paths {
    /// The join's frames on subflow `i` (its pending ones, and a fast join's reply in every
    /// packet until acknowledged), written with the connection's keys. A fast join's first
    /// JOIN carries `seg`'s data when there is some (FAST_JOIN_OUT); returns that data as
    /// (range, retransmission, new data). `None` if the packet cannot be written.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn write_join(
        &self,
        i: usize,
        seg: Option<Seg>,
        (send, recv): (&SendSide, &RecvSide),
        session: &Session,
        config: &Config,
        keys: &Keys,
        b: &mut PacketBuilder<'_>,
    ) -> Option<Option<(DataRef, bool, bool)>> {
        let sf = &self.subflows[i];
        let joining = sf.opening();
        let first = sf.join_unsent();
        let mut fj_data = None;
        if sf.fast_opening() {
            let room = b.room().saturating_sub(FastJoinOut::HEADER_LEN + Dss::overhead(true, 0) + 16);
            let take = seg.map_or(0, |s| s.len.min(room as u64) as usize);
            match seg {
                Some(s) if first && take > 0 => {
                    let dsn = send.dsn(s.off).0;
                    let mut hmac = keys.fast().sign(fastjoin::Kind::Out, dsn, session.remote_token);
                    hmac[0] ^= u8::from(config.faults().forge_fast_join_hmac);
                    let (backup, addr_id) = (sf.backup(), sf.local_addr_id());
                    let w = b.writer();
                    w.varint(crate::wire::frame::ty::FAST_JOIN_OUT).ok()?;
                    w.view(FastJoinOut::HEADER_LEN, |out| {
                        FastJoinOut::emit_header(out, backup, addr_id, dsn, &hmac, take)
                    })
                    .ok()?;
                    if !send.copy_out(s.off, w.reserve(take).ok()?) {
                        return None;
                    }
                    b.sent |= FrameSet::JOIN;
                    let d = DataRef { off: s.off, len: take as u32, fin: false };
                    fj_data = Some((d, s.retrans, !s.retrans));
                }
                _ => {
                    let data_ack = recv.edsn().0;
                    let mut hmac = keys.fast().sign(fastjoin::Kind::In, data_ack, session.remote_token);
                    hmac[0] ^= u8::from(config.faults().forge_fast_join_hmac);
                    let f = Frame::FastJoinIn(FastJoinIn {
                        backup: sf.backup(),
                        addr_id: sf.local_addr_id(),
                        data_ack,
                        hmac,
                    });
                    if first {
                        b.control(FrameSet::JOIN, f);
                    } else {
                        // A later packet of the first flight (§5.9): a JOIN packet starts with
                        // a join frame, and its data follows in a DSS.
                        f.emit(b.writer()).ok()?;
                    }
                }
            }
        } else if joining && first {
            let mj = MpJoin { backup: sf.backup(), addr_id: sf.local_addr_id(), nonce: sf.join().nonce_local };
            b.control(FrameSet::JOIN, Frame::MpJoin(mj));
        }
        if sf.join_pending(FrameSet::FJ_REPLY) || sf.join().reply_unacked {
            // The reply to a FAST_JOIN_OUT acknowledges its data; to a FAST_JOIN_IN it names
            // where we send from (§5.11). It rides in every packet until acknowledged.
            let value = match sf.join().kind {
                JoinKind::FastIn => ReplyValue::Dsn(send.dsn(send.una()).0),
                _ => ReplyValue::DataAck(recv.edsn().0),
            };
            let token = session.local_token.unwrap_or_default();
            let r = fastjoin::reply(&keys.fast(), token, sf.backup(), sf.local_addr_id(), value, sf.local_cid().0);
            b.control(FrameSet::FJ_REPLY, Frame::FastJoinReply(r));
        }
        let (nonce_local, nonce_remote) = (sf.join().nonce_local, sf.join().nonce_remote);
        if sf.join_pending(FrameSet::SYNACK) {
            let hmac = join_synack_hmac(keys.local_key, keys.remote_key, nonce_local, nonce_remote);
            let sa = MpJoinSynAck {
                backup: sf.backup(),
                addr_id: sf.local_addr_id(),
                nonce: nonce_local,
                hmac,
                cid: sf.local_cid(),
            };
            b.control(FrameSet::SYNACK, Frame::MpJoinSynAck(sa));
        }
        if sf.join_pending(FrameSet::JOIN_ACK) {
            let hmac = join_ack_hmac(keys.local_key, keys.remote_key, nonce_local, nonce_remote);
            b.control(FrameSet::JOIN_ACK, Frame::MpJoinAck { hmac });
        }
        Some(fj_data)
    }

    // Subflows closed: what a failing or closing subflow had in flight is reinjected, what it
    // was to carry for the connection goes on another, its record is reclaimed after its drain.

    /// See [`Connection::close_subflow`](super::Connection::close_subflow).
    pub(super) fn close_subflow(&mut self, cx: &mut Cx<'_>, now: Time, id: u32, reason: u8) -> bool {
        let Some(i) = self.subflows.by_number(id).filter(|&i| self.subflows[i].is_open()) else {
            return false;
        };
        self.shut_subflow(cx, now, i, reason, true);
        true
    }

    /// Queues a copy of everything in flight on subflow `k` for reinjection, leaving it in
    /// flight there (it may still arrive).
    pub(super) fn copy_in_flight_for_reinjection(&self, send: &mut SendSide, k: usize) {
        let mask = 1u64 << (k % 64);
        for p in self.subflows[k].rec().sent.iter() {
            if let Some(d) = p.data {
                send.queue_retransmission(d, mask);
            }
        }
    }

    /// Moves everything in flight on subflow `i` to the retransmission queue, marked as a
    /// reinjection; `count_lost`: each packet counts as lost on the subflow.
    pub(super) fn reinject_in_flight(&mut self, cx: &mut Cx<'_>, now: Time, i: usize, count_lost: bool) {
        let mask = 1u64 << (i % 64);
        let (send, counters) = (&mut cx.send, &mut cx.counters);
        let orphaned = self.subflows[i].drain_flight(now, count_lost, &mut |d| {
            send.queue_retransmission(d, mask);
            counters.reinjections += 1;
        });
        if !orphaned.is_empty() {
            self.pend_on_any(orphaned);
        }
    }

    /// Closes subflow `i` and reinjects its data; `tell_peer`: with a SUBFLOW_RESET carrying
    /// `reason`.
    pub(super) fn shut_subflow(&mut self, cx: &mut Cx<'_>, now: Time, i: usize, reason: u8, tell_peer: bool) {
        if !self.subflows[i].is_open() {
            return;
        }
        let id = self.subflows[i].id();
        // What it was still to carry for the connection (addresses, the ticket, closes of
        // other subflows), read before `close` forgets it, goes elsewhere.
        let pending = self.subflows[i].carried();
        // Closed first, so that connection-level frames in flight there go to another subflow.
        self.subflows[i].close(now, reason, tell_peer);
        self.reinject_in_flight(cx, now, i, false);
        if !pending.is_empty() {
            self.subflows[i].drop_carried(pending);
            self.pend_on_any(pending);
        }
        cx.emit(now, Event::SubflowClosed { id, reason });
        cx.recv.forget_slot(i);
        // The last subflow gone: the connection waits for a join (the client's new address
        // after a break-before-make move) until its idle timeout; without one, it ends now.
        if *cx.state == State::Established
            && self.subflows.open_count() == 0
            && super::timers::idle_timeout(cx.config, cx.session, &self.subflows) == 0
        {
            cx.enter_closed(&self.subflows, now, CloseReason::NoSubflow);
        }
    }

    /// The endpoint found that `old`, the CID a new subflow was given, is another
    /// connection's (CIDs of 4 bytes do collide, rarely). If no packet has revealed it yet the
    /// subflow takes `fresh` instead and this returns true; otherwise the subflow closes
    /// without a word (the peer's packets to it reach the other connection, which cannot open
    /// them) and the path manager may join again.
    pub(crate) fn rename_cid(&mut self, cx: &mut Cx<'_>, now: Time, old: Cid, fresh: Cid) -> bool {
        let Some(i) = self.subflows.by_cid(&old) else { return false };
        if self.subflows[i].rec().next_pn == 0 {
            self.subflows[i].rename_local_cid(fresh);
            return true;
        }
        self.shut_subflow(cx, now, i, reason::UNSPECIFIED, false);
        false
    }

    /// The drain of closed subflow `i` is over: its record goes, with its route; its
    /// statistics stay in the connection's history.
    pub(super) fn reclaim_subflow(&mut self, cx: &mut Cx<'_>, i: usize) {
        let stats = self.subflows[i].stats();
        if let Some(sf) = self.subflows.reclaim(i, stats) {
            cx.out.endpoint(EndpointEvent::RetireCid(sf.local_cid()));
            cx.send.forget_slot(1 << (i % 64));
            cx.recv.forget_slot(i);
            tracing::trace!(side = ?cx.side, id = sf.id(), "subflow record reclaimed");
        }
    }

    // Stateless reset (PROTOCOL.md §3.4, §5.20; issue 38): a fleet's server tells the client
    // the reset token of every CID it receives a subflow on (RESET_TOKEN, written by the
    // subflow), and a server of the fleet that gets a short header for a connection it does
    // not know answers with that token, which only the fleet's shared secret gives. The
    // client closes the subflow the token names and, once no subflow is left, the
    // connection: its server is gone, and it connects again (to another server) at once
    // rather than after its idle timeout.

    /// Whether a STATELESS_RESET carrying `token` is for this connection: one of its open
    /// subflows was given that token.
    pub(crate) fn is_reset_by(&self, side: Side, token: &[u8; RESET_TOKEN_LEN]) -> bool {
        side == Side::Client && self.subflows.iter().any(|s| s.is_reset_by(token))
    }

    /// A STATELESS_RESET with `token` arrived: the subflows it names close (nothing is sent
    /// on them any more), their data goes to the others; with no open subflow left, the
    /// connection ends at once (`CloseReason::Reset`). Not on the per-packet path: the
    /// endpoint calls it only for a reset whose token one of the connection's subflows holds.
    pub(crate) fn on_stateless_reset(&mut self, cx: &mut Cx<'_>, now: Time, token: &[u8; RESET_TOKEN_LEN]) {
        let hit: Vec<usize> = self.subflows.enumerate().filter(|(_, s)| s.is_reset_by(token)).map(|(i, _)| i).collect();
        for i in hit {
            self.shut_subflow(cx, now, i, reason::STATELESS_RESET, false);
        }
        // A join in progress does not keep it: it goes to the same fleet, which does not know
        // the connection either.
        if !cx.is_closed() && !self.subflows.iter().any(|s| s.is_open() && s.established()) {
            cx.enter_closed(&self.subflows, now, CloseReason::Reset);
            cx.set_drained();
        }
    }
}
