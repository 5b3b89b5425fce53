//! The path layer, `Paths` (its other methods are in `join` and `timers`): path managers
//! (which subflows a client opens, and when), interface events, the addresses announced and
//! withdrawn (ADD_ADDR, REMOVE_ADDR), the first handshake over every path and TCP where UDP
//! gets no answer (the `spread` component's state, acted on here), and MultiMob's failover,
//! oracle verdicts and fail-back (the `multimob` component's decisions, acted on here).

use super::cx::Cx;
use super::events::{EndpointEvent, Event, Side};
use super::local_paths::LocalPaths;
use super::multimob::{FailBack, MultiMob};
use super::spread::Spread;
use super::state::State;
use super::subflow::table::SubflowTable;
use super::subflow::{FrameSet, Subflow, SubflowState};
use crate::config::Config;
use crate::config::PathManager;
use crate::crypto::ct_eq;
use crate::drops::DropReason;
use crate::wire::frame::{reason, AddAddr};
use crate::wire::remove_subflow::RemoveSubflow;
use crate::{crypto, Carrier, LocalPath, PathId, PathSet, Time, Transmit};
use std::net::SocketAddr;

/// A failover subflow on which no new data arrived for this long is closed at the fail-back
/// without a packet on it (REMOVE_SUBFLOW elsewhere); one that brought data more recently is
/// reset on its path too. An LTE radio receives continuously for 0.1 s after a packet, then
/// sits in its tail, which any later packet restarts: within half a second of the peer's data,
/// a reset there costs at most that half second of tail (about 0.5 J).
const QUIET_BEFORE_CLOSE: Time = 500_000;

/// The connection's path layer: its subflows, the local paths they run on, and what the path
/// managers keep (the first handshake's race over every path, MultiMob's timers). It owns
/// that state; the rest of the connection reaches it through `Connection::split` and `Connection::with_paths`.
pub(crate) struct Paths {
    pub(super) subflows: SubflowTable,
    /// Subflows this side opened so far (their numbers count from it).
    pub(super) opened: u32,
    /// The local paths: their addresses, ids, interfaces up or down, sockets full or not.
    pub(super) local: LocalPaths,
    /// `multimob`: the receive idle timer and the fail-back hold.
    pub(super) multimob: MultiMob,
    /// Client: the first handshake's INITIAL on the other paths (§4.10).
    pub(super) spread: Spread,
}

impl Paths {
    /// See [`Connection::path_added`](super::Connection::path_added).
    pub(super) fn path_added(&mut self, cx: &mut Cx<'_>, now: Time, path: PathId, lp: LocalPath) {
        let p = usize::from(path.0);
        if !self.local.readdress(p, lp) {
            return;
        }
        if cx.side != Side::Client || *cx.state != State::Established || cx.is_closed() {
            return;
        }
        let usable_regular = self.subflows.iter().any(|s| s.is_open() && !s.pf() && !s.backup());
        let open = match cx.config.multipath.path_manager {
            PathManager::Fullmesh | PathManager::Backup => true,
            PathManager::MultiMob | PathManager::OnDemand => !usable_regular,
        };
        if open && !self.subflows.iter().any(|s| s.local_path() == path && s.is_open()) {
            let backup = lp.backup || (cx.config.multipath.path_manager == PathManager::Backup && usable_regular);
            if let Some(remote) = self.remote_for(cx.session.peer_addr, path) {
                self.open(cx, now, path, remote, backup);
            }
        }
        tracing::debug!(side = ?cx.side, path = p, addr = %lp.addr, "local path added");
    }

    /// See [`Connection::path_removed`](super::Connection::path_removed).
    pub(super) fn path_removed(&mut self, cx: &mut Cx<'_>, now: Time, path: PathId) {
        let p = usize::from(path.0);
        if p >= self.local.paths.len() {
            return;
        }
        self.local.path_down[p] = true;
        self.local.reopen[p] = false;
        if cx.is_closed() {
            return;
        }
        let on_path = |s: &Subflow| s.local_path() == path && s.is_open();
        if !self.subflows.iter().any(on_path) {
            return;
        }
        if cx.side == Side::Client && *cx.state == State::Established {
            let regular_elsewhere =
                self.subflows.iter().any(|s| s.is_open() && !s.pf() && !s.backup() && s.local_path() != path);
            if !regular_elsewhere {
                let kind = self.local.paths[p].iface;
                let same_kind = (0..self.local.paths.len()).find(|&k| {
                    k != p
                        && !self.local.path_down[k]
                        && self.local.paths[k].iface == kind
                        && !self.subflows.iter().any(|s| s.local_path().0 == k as u8 && s.is_open())
                });
                match same_kind {
                    Some(k) => {
                        let backup = self.local.paths[k].backup;
                        if let Some(remote) = self.remote_for(cx.session.peer_addr, PathId(k as u8)) {
                            self.open(cx, now, PathId(k as u8), remote, backup);
                        }
                    }
                    None => self.open_other_paths(cx, now, false, true),
                }
            }
        }
        for i in 0..self.subflows.slot_bound() {
            if self.subflows.get(i).is_some_and(on_path) {
                self.shut_subflow(cx, now, i, reason::UNSPECIFIED, true);
            }
        }
        self.withdraw(path);
        tracing::debug!(side = ?cx.side, path = p, "local path removed");
    }

    /// See [`Connection::announce_address`](super::Connection::announce_address).
    pub(super) fn announce_address(&mut self, path: PathId) -> bool {
        let Some(lp) = self.local.paths.get(usize::from(path.0)) else { return false };
        let id = self.local.addr_id(path);
        if !self.local.addrs.announce(id, lp.addr) {
            return false;
        }
        self.pend_on_any(FrameSet::ADD_ADDR);
        true
    }

    /// See [`Connection::remove_address`](super::Connection::remove_address).
    pub(super) fn remove_address(&mut self, cx: &mut Cx<'_>, now: Time, path: PathId) {
        self.withdraw(path);
        for i in 0..self.subflows.slot_bound() {
            if self.subflows.get(i).is_some_and(|s| s.local_path() == path) {
                self.shut_subflow(cx, now, i, reason::UNSPECIFIED, true);
            }
        }
    }

    /// Queues a REMOVE_ADDR for `path`'s address (once; it goes on another subflow; see
    /// `Addresses::withdraw`).
    fn withdraw(&mut self, path: PathId) {
        let id = self.local.addr_id(path);
        self.local.addrs.withdraw(id);
        self.pend_on_any(FrameSet::REMOVE_ADDR);
    }

    /// Where a join from local path `path` goes (see [`super::local_paths::LocalPaths::remote_for`]).
    pub(super) fn remote_for(&self, peer: SocketAddr, path: PathId) -> Option<SocketAddr> {
        self.local.remote_for(path, peer)
    }

    /// A server announces the addresses its configuration names ([`Server::announce`](crate::config::Server::announce)), with
    /// address ids from 128 (those of its local paths count from 1).
    pub(crate) fn announce_configured(&mut self, cx: &mut Cx<'_>) {
        if cx.side != Side::Server || cx.config.server.announce.is_empty() {
            return;
        }
        for (k, &a) in cx.config.server.announce.iter().enumerate().take(64) {
            let id = 0x80 | k as u8;
            self.local.addrs.announce(id, a);
        }
        self.pend_on_any(FrameSet::ADD_ADDR);
    }

    /// See [`Connection::remote_addresses`](super::Connection::remote_addresses).
    pub(super) fn remote_addresses(&self) -> &[(u8, SocketAddr)] {
        self.local.addrs.remote()
    }

    /// See [`Connection::peer_address`](super::Connection::peer_address).
    pub(super) fn peer_address(&self) -> Option<SocketAddr> {
        let open = self.subflows.iter().find(|s| s.is_open());
        open.or_else(|| self.subflows.iter().next()).map(|s| s.remote())
    }

    /// See [`Connection::path_active_since`](super::Connection::path_active_since).
    pub(super) fn path_active_since(&self, path: PathId, since: Time) -> bool {
        self.subflows
            .iter()
            .any(|s| s.is_open() && s.local_path() == path && s.last_rx().max(s.last_activity()) >= since)
    }

    /// Puts the address frames `frames` on a working subflow, or keeps them until one is
    /// established.
    pub(super) fn pend_on_any(&mut self, frames: FrameSet) {
        let slot = |f: &dyn Fn(&Subflow) -> bool| self.subflows.enumerate().find(|(_, s)| f(s)).map(|(k, _)| k);
        let pick = slot(&|s| s.established() && !s.pf() && !s.backup()).or_else(|| slot(&|s| s.established()));
        match pick {
            Some(i) => self.subflows[i].carry(frames),
            None => self.local.addrs.orphan(frames),
        }
    }

    pub(super) fn run_path_manager(&mut self, cx: &mut Cx<'_>, now: Time) {
        let backup_all = match cx.config.multipath.path_manager {
            PathManager::OnDemand => return,
            PathManager::MultiMob => {
                // The idle timer's length needs the server's RTO: ask for it (§5.16 RTO).
                if let Some(sf) = self.subflows.get_mut(0).filter(|_| cx.config.multipath.mp_idle) {
                    sf.request_rto();
                }
                return;
            }
            PathManager::Backup => true,
            PathManager::Fullmesh => false,
        };
        self.open_other_paths(cx, now, backup_all, false);
    }

    /// The on-demand path manager (break-before-make): once no open subflow is left that is
    /// not potentially failed, the client joins from every local path not in use, towards the
    /// address subflow 0 uses, by fast join where negotiated. It does not wait for an oracle
    /// period: "a client whose primary subflow times out with data pending" opens at once.
    pub(super) fn open_on_demand(&mut self, cx: &mut Cx<'_>, now: Time) {
        if cx.config.multipath.path_manager != PathManager::OnDemand {
            return;
        }
        if self.subflows.iter().any(|s| s.is_open() && !s.rec().pf) {
            return;
        }
        self.open_other_paths(cx, now, false, true);
    }

    /// The client joins from every local path without an open subflow, towards the address
    /// it connected to (by fast join where negotiated); as backup subflows if `backup_all` or
    /// the path is marked backup, and marked `failover` (closed again on fail-back).
    pub(super) fn open_other_paths(&mut self, cx: &mut Cx<'_>, now: Time, backup_all: bool, failover: bool) {
        if cx.side != Side::Client || cx.is_closed() {
            return;
        }
        for p in 0..self.local.paths.len() {
            let path = PathId(p as u8);
            if self.local.path_down[p] || self.subflows.iter().any(|s| s.local_path() == path && s.is_open()) {
                continue;
            }
            let Some(remote) = self.remote_for(cx.session.peer_addr, path) else { continue };
            let backup = backup_all || self.local.paths[p].backup;
            if let Some(i) = self.open(cx, now, path, remote, backup) {
                if failover {
                    self.subflows[i].mark_failover();
                }
            }
        }
    }

    /// A local path has no open subflow: a failover could open one.
    pub(super) fn has_unused_path(&self) -> bool {
        (0..self.local.paths.len()).any(|p| {
            !self.local.path_down[p] && !self.subflows.iter().any(|s| s.local_path().0 == p as u8 && s.is_open())
        })
    }

    /// See [`Connection::path_down`](super::Connection::path_down).
    pub(super) fn path_down(&mut self, cx: &mut Cx<'_>, now: Time, path: PathId) {
        let p = usize::from(path.0);
        if p >= self.local.paths.len() || self.local.path_down[p] {
            return;
        }
        self.local.path_down[p] = true;
        if cx.is_closed() {
            return;
        }
        let on_path = |s: &Subflow| s.local_path() == path && s.is_open();
        if cx.side == Side::Client && *cx.state == State::Established {
            self.open_other_paths(cx, now, false, true);
        }
        let elsewhere = self.subflows.iter().any(|s| s.is_open() && s.local_path() != path);
        for i in 0..self.subflows.slot_bound() {
            if !self.subflows.get(i).is_some_and(on_path) {
                continue;
            }
            if elsewhere && cx.side == Side::Client {
                self.local.reopen[p] = true;
                self.shut_subflow(cx, now, i, reason::UNSPECIFIED, true);
                self.withdraw(path);
            } else {
                let id = self.subflows[i].id();
                self.mark_potentially_failed(cx, now, id);
            }
        }
        tracing::debug!(side = ?cx.side, path = p, "local path down");
    }

    /// See [`Connection::path_up`](super::Connection::path_up).
    pub(super) fn path_up(&mut self, cx: &mut Cx<'_>, now: Time, path: PathId) {
        let p = usize::from(path.0);
        if p >= self.local.paths.len() || !self.local.path_down[p] {
            return;
        }
        self.local.path_down[p] = false;
        // The address is back: a REMOVE_ADDR not yet sent for it must not follow the rejoin.
        let id = self.local.addr_id(path);
        self.local.addrs.restore(id);
        if !std::mem::take(&mut self.local.reopen[p]) || cx.side != Side::Client {
            return;
        }
        if !self.subflows.iter().any(|s| s.local_path() == path && s.is_open()) {
            let backup = self.local.paths[p].backup;
            if let Some(remote) = self.remote_for(cx.session.peer_addr, path) {
                self.open(cx, now, path, remote, backup);
            }
        }
        tracing::debug!(side = ?cx.side, path = p, "local path up");
    }

    /// A new connection starts with the endpoint's view of its paths (nothing to close yet).
    pub(crate) fn start_with_path_down(&mut self, path: PathId) {
        if let Some(d) = self.local.path_down.get_mut(usize::from(path.0)) {
            *d = true;
        }
    }

    /// An ADD_ADDR or its echo on subflow `i`; true if it told a new address.
    pub(super) fn on_add_addr(&mut self, cx: &mut Cx<'_>, now: Time, i: usize, a: AddAddr) -> bool {
        let Some(keys) = cx.session.keys.as_ref() else { return false };
        let Some(h) = a.hmac else {
            // An echo: our announcement arrived.
            self.local.addrs.on_echo(a.addr_id);
            return false;
        };
        let expect = crypto::add_addr_hmac(keys.remote_key, keys.local_key, a.addr_id, a.ip, a.port);
        if !ct_eq(&expect, &h) {
            cx.reject(DropReason::BadHmac);
            return false;
        }
        let new = self.local.addrs.on_announced(a);
        if new {
            cx.emit(now, Event::AddressAnnounced { addr_id: a.addr_id, addr: SocketAddr::new(a.ip, a.port) });
        }
        self.subflows[i].carry(FrameSet::ADDR_ECHO);
        new
    }

    /// REMOVE_ADDR (§5.13): the peer's subflows from those addresses are closed.
    pub(super) fn on_remove_addr(&mut self, cx: &mut Cx<'_>, now: Time, ids: &[u8]) {
        for id in ids {
            for k in 0..self.subflows.slot_bound() {
                if self.subflows.get(k).is_some_and(|s| s.remote_addr_id() == *id) {
                    self.shut_subflow(cx, now, k, reason::UNSPECIFIED, false);
                }
            }
            self.local.addrs.on_removed(*id);
        }
    }

    /// REMOVE_SUBFLOW (§5.21): the subflows it names are closed with its reasons, without a
    /// word on them (the peer closed its side, and its radio may be asleep). A number of the
    /// peer's that names no subflow yet (its join still on the way) is retired, so that the
    /// late join is refused rather than opening a subflow the peer no longer answers on.
    pub(super) fn on_remove_subflow(&mut self, cx: &mut Cx<'_>, now: Time, f: &RemoveSubflow<'_>) {
        for (id, reason) in f.entries() {
            match self.subflows.by_number(id) {
                Some(k) if self.subflows[k].is_open() => self.shut_subflow(cx, now, k, reason, false),
                Some(_) => {}
                None if cx.side.peer_opened(id) => self.subflows.note_peer_number(id),
                None => {}
            }
        }
    }
}

impl Paths {
    // The first handshake over every path, and TCP where UDP gets no answer (PROTOCOL.md
    // §4.10, §4.11): `spread::Spread` keeps what is owed and what was found; these act on it.

    /// The other local paths that reach the server's address, up and not in use by subflow 0.
    fn other_handshake_paths(&self, peer: SocketAddr) -> impl Iterator<Item = PathId> + '_ {
        let first = self.subflows.get(0).map(|s| s.local_path());
        self.handshake_paths(peer).filter(move |&p| Some(p) != first)
    }

    /// Every local path that is up and reaches the server's address.
    fn handshake_paths(&self, peer: SocketAddr) -> impl Iterator<Item = PathId> + '_ {
        (0..self.local.paths.len().min(256))
            .map(|p| PathId(p as u8))
            .filter(move |&p| !self.local.is_down(p) && self.remote_for(peer, p) == Some(peer))
    }

    /// The INITIAL (or its repeat) went on subflow 0's path at `now`.
    pub(super) fn on_initial_sent(&mut self, cx: &mut Cx<'_>, now: Time) {
        let first = self.subflows.get(0).map(|s| s.local_path());
        let others: PathSet = self.other_handshake_paths(cx.session.peer_addr).collect();
        let bounds = (cx.config.multipath.other_paths_after, cx.config.multipath.tcp_after);
        self.spread.on_initial_sent(now, first, others.iter(), bounds);
    }

    /// Client, before its first INITIAL: the endpoint's word on the paths whose network was
    /// found to drop UDP (§4.11). Their joins go over TCP, and if the first path is one, the
    /// other paths and TCP are tried with the first INITIAL.
    pub(crate) fn assume_udp_silent(&mut self, cx: &mut Cx<'_>, paths: PathSet) {
        if cx.side == Side::Client && *cx.state == State::Initial && cx.config.multipath.tcp_after.is_some() {
            self.spread.assume_udp_silent(paths);
        }
    }

    /// Tells the endpoint what was found of UDP on `path`.
    fn udp_verdict(&mut self, cx: &mut Cx<'_>, path: PathId, silent: bool) {
        cx.out.endpoint(super::events::EndpointEvent::UdpVerdict { path, silent });
    }

    /// A bound passed: before the handshake, the other paths (or TCP on every path) are owed
    /// the INITIAL; after it, a UDP join still unanswered is raced over TCP.
    pub(super) fn on_spread_timeout(&mut self, cx: &mut Cx<'_>, now: Time) {
        if *cx.state == State::Initial {
            let others: PathSet = self.other_handshake_paths(cx.session.peer_addr).collect();
            let all: PathSet = self.handshake_paths(cx.session.peer_addr).collect();
            self.spread.on_timeout(now, others.iter(), all.iter());
            return;
        }
        self.end_join_trials(cx, now);
    }

    /// A copy of the INITIAL owed to another path (UDP first, then TCP), written into `buf`.
    /// A path whose socket is full keeps its copy owed for later.
    pub(super) fn poll_initial_copy(&mut self, cx: &mut Cx<'_>, buf: &mut [u8]) -> Option<Transmit> {
        let initial = cx.session.hs.as_ref()?.initial_datagram();
        if buf.len() < initial.len() {
            return None;
        }
        let (p, carrier) = self.spread.next_copy(&self.local.unwritable)?;
        buf[..initial.len()].copy_from_slice(initial);
        Some(Transmit { path: p, remote: cx.session.peer_addr, len: initial.len(), carrier })
    }

    /// The HANDSHAKE came on local path `path` over `carrier`. If that is not subflow 0's,
    /// subflow 0 moves there before it sends its CONFIRM, and the address ids follow it (RFC
    /// 8684 §3.4.1: the initial subflow's address has id 0); the first path is joined once
    /// the connection is up. An answer over TCP says that UDP was silent on every path.
    pub(super) fn handshake_via(&mut self, cx: &mut Cx<'_>, path: PathId, carrier: Carrier) {
        self.spread.handshake_done(path, carrier);
        if carrier == Carrier::Udp {
            self.udp_verdict(cx, path, false);
        }
        let first = self.subflows[0].local_path();
        if usize::from(path.0) >= self.local.paths.len() || (path == first && carrier == Carrier::Udp) {
            return;
        }
        self.subflows[0].set_carrier(carrier);
        if carrier == Carrier::Tcp {
            let all: PathSet = self.handshake_paths(cx.session.peer_addr).collect();
            for p in self.spread.silent_everywhere(all.iter()).iter() {
                self.udp_verdict(cx, p, true);
            }
        }
        cx.counters.handshakes_elsewhere += 1;
        tracing::debug!(from = first.0, to = path.0, ?carrier, "the handshake came through another path or carrier");
        if path == first {
            return;
        }
        self.subflows[0].handshake_on(path);
        if cx.config.multipath.path_manager == PathManager::MultiMob {
            // MultiMob uses its other paths for failover only: this subflow is one, closed
            // again at the fail-back once the first path has worked for the hold time.
            self.subflows[0].mark_failover();
        }
        for (p, id) in self.local.addr_ids.iter_mut().enumerate() {
            *id = super::addresses::initial_addr_id(PathId(p as u8), path);
        }
        self.spread.rejoin_first(first);
    }

    /// The connection is up on another path than its first: it joins the first (unless a
    /// path manager that joins every path does so anyway), with MP_JOIN: that path left the
    /// INITIAL unanswered, and a FAST_JOIN's data would wait there for its retransmission
    /// timer (a second, the first time) before going on the path that works.
    pub(super) fn join_first_path(&mut self, cx: &mut Cx<'_>, now: Time) {
        let Some(first) = self.spread.take_rejoin_first() else { return };
        if cx.side != Side::Client || *cx.state != State::Established || cx.is_closed() {
            return;
        }
        let in_use = self.subflows.iter().any(|s| s.local_path() == first && s.is_open());
        let down = self.local.is_down(first);
        if in_use || down {
            return;
        }
        let backup = self.local.paths.get(usize::from(first.0)).is_some_and(|lp| lp.backup);
        if let Some(k) =
            self.remote_for(cx.session.peer_addr, first).and_then(|remote| self.open(cx, now, first, remote, backup))
        {
            self.subflows[k].plain_join();
        }
    }

    /// A client opened a join over UDP in slot `k` on `path`: if it is still unanswered after
    /// `tcp_after`, a join over TCP races it.
    pub(super) fn on_udp_join_opened(&mut self, cx: &mut Cx<'_>, now: Time, k: usize, path: PathId) {
        if let (Some(after), Side::Client, Some(sf)) = (cx.config.multipath.tcp_after, cx.side, self.subflows.get(k)) {
            self.spread.trial(k, sf.id(), path, now.saturating_add(after));
        }
    }

    /// The UDP joins whose trial ended: those unanswered race a TCP join on their path.
    fn end_join_trials(&mut self, cx: &mut Cx<'_>, now: Time) {
        while let Some((k, id, path)) = self.spread.take_ended_trial(now) {
            let Some(sf) = self.subflows.get(k).filter(|s| s.id() == id) else { continue };
            // Unanswered: no SYNACK (or fast-join reply) came. One answered whose last packet
            // is not yet acknowledged passes UDP.
            if sf.state() != SubflowState::JoinSent || sf.local_path() != path || sf.carrier() != Carrier::Udp {
                continue;
            }
            let tcp_open =
                self.subflows.iter().any(|s| s.local_path() == path && s.carrier() == Carrier::Tcp && s.is_open());
            let (remote, backup, rejoin) = (sf.remote(), sf.backup(), sf.rejoin());
            if tcp_open || cx.is_closed() {
                continue;
            }
            // Raced only: the path is judged silent to UDP once the TCP join opens while the
            // UDP one is still unanswered (a path in an outage answers neither).
            if let Some(t) = self.open_over(cx, now, (path, Carrier::Tcp), remote, backup) {
                self.subflows[t].plain_join();
                if rejoin {
                    // It replaces a silent subflow as the UDP join does: given up, the path is
                    // joined again (the UDP join, given up first, left that to it).
                    self.subflows[t].mark_rejoin();
                }
                tracing::debug!(path = path.0, "a UDP join unanswered: racing it over TCP");
            }
        }
    }

    /// Client: subflow `i` was established. Over TCP while no UDP subflow works on its path
    /// (the UDP join it raced is unanswered): the path's network drops UDP, and its later
    /// joins go over TCP. Over UDP on a path that had a TCP subflow (a UDP join that lost the
    /// race, answered later): UDP passes there again, and the TCP subflow closes, its data
    /// moving to the others (RFC 8684 §3.3.6).
    pub(super) fn on_carrier_established(&mut self, cx: &mut Cx<'_>, now: Time, i: usize) {
        let Some(sf) = self.subflows.get(i) else { return };
        let path = sf.local_path();
        if cx.side != Side::Client {
            return;
        }
        if sf.carrier() == Carrier::Tcp {
            let udp_works =
                self.subflows.iter().any(|s| s.local_path() == path && s.carrier() == Carrier::Udp && s.established());
            if !udp_works {
                self.spread.udp_found(path, true);
                self.udp_verdict(cx, path, true);
            }
            return;
        }
        self.spread.udp_found(path, false);
        self.udp_verdict(cx, path, false);
        for k in 0..self.subflows.slot_bound() {
            let Some(s) = self.subflows.get(k) else { continue };
            if k != i && s.local_path() == path && s.carrier() == Carrier::Tcp && s.is_open() {
                let id = s.id();
                self.close_subflow(cx, now, id, reason::UNSPECIFIED);
                tracing::debug!(path = path.0, "UDP passes again: the TCP subflow closes");
            }
        }
    }

    // MultiMob's failover and fail-back (the `multimob` component decides; these act).

    /// `multimob`: the regular subflows `on` are declared potentially failed (and was-bad, on
    /// the oracle's or the idle timer's verdict), their data is queued for the other paths,
    /// and those are joined.
    pub(super) fn fail_over(
        &mut self,
        cx: &mut Cx<'_>,
        now: Time,
        was_bad: bool,
        on: impl Fn(usize, &Subflow) -> bool,
    ) {
        if !self.multimob.failover_open(&self.subflows) {
            // A new failover: the last one's clears (`MultiMob::held`) are over.
            self.multimob.forget_clears();
        }
        for i in 0..self.subflows.slot_bound() {
            let Some(sf) = self.subflows.get_mut(i) else { continue };
            if sf.is_open() && !sf.backup() && on(i, sf) {
                sf.set_oracle_flags(sf.was_bad() || was_bad, sf.high_rto());
                self.suspect(cx, now, i);
            }
        }
        self.open_other_paths(cx, now, false, true);
        tracing::debug!(side = ?cx.side, "multimob failover");
    }

    /// Declares subflow `i` potentially failed and queues its data in flight again for the
    /// other subflows. The data stays in flight here: the retransmission timer keeps probing
    /// the path, and the first new ACK tells it works again.
    pub(super) fn suspect(&mut self, cx: &mut Cx<'_>, now: Time, i: usize) {
        if self.subflows[i].mark_potentially_failed() {
            let id = self.subflows[i].id();
            cx.emit(now, Event::SubflowFailed { id });
        }
        self.copy_in_flight_for_reinjection(cx.send, i);
    }

    /// `multimob` fail-back (see [`MultiMob::fail_back`]): once due, close the failover
    /// subflows (the radio may sleep) and clear the oracle's flags.
    pub(super) fn check_fail_back(&mut self, cx: &mut Cx<'_>, now: Time) {
        if !self.multimob.tracks_receive_idle() || cx.is_closed() {
            return;
        }
        if self.multimob.fail_back(now, &self.subflows, cx.config.multipath.fail_back_hold) != FailBack::Due {
            return;
        }
        cx.emit(now, Event::FailBack);
        // A peer that takes REMOVE_SUBFLOW is told on the path failed back to (§5.21), so that
        // a failover subflow gone quiet carries nothing more: a SUBFLOW_RESET there would be
        // a cellular packet, and the radio, in its tail since the subflow's last packet,
        // would stay up another tail. One the peer is still sending data on (new data within
        // `QUIET_BEFORE_CLOSE`: a stream) is reset on its path as well, which the radio, awake
        // for that data, hardly pays for, and which stops the peer's sending there a cellular
        // one-way delay later whatever the path failed back to loses meanwhile.
        let elsewhere = cx.session.peer_params.remove_subflow
            && self.subflows.iter().any(|s| s.established() && !s.failover() && !s.pf());
        for i in 0..self.subflows.slot_bound() {
            let Some(sf) = self.subflows.get_mut(i) else { continue };
            sf.set_oracle_flags(false, false);
            if sf.failover() && sf.is_open() {
                let id = sf.id();
                let in_use = sf.last_data_rx().saturating_add(QUIET_BEFORE_CLOSE) > now;
                self.shut_subflow(cx, now, i, reason::UNSPECIFIED, !elsewhere || in_use);
                if elsewhere {
                    self.local.addrs.close_elsewhere(id, reason::UNSPECIFIED);
                    self.pend_on_any(FrameSet::REMOVE_SUBFLOW);
                }
            }
        }
        tracing::debug!("multimob fail-back");
    }

    /// Applies an oracle decision to this connection's subflows on that netpath.
    pub(crate) fn apply_oracle(&mut self, cx: &mut Cx<'_>, now: Time, a: oracle::Action) {
        let on = MultiMob::on_netpath(&self.subflows, &self.local, a.netpath);
        if on == 0 || cx.is_closed() {
            return;
        }
        if let Some(path) = MultiMob::netpath_path(&self.local, &a.netpath) {
            cx.emit(now, Event::Verdict { path, verdict: a.verdict });
        }
        let mut set_flags = |bad: Option<bool>, high_rto: Option<bool>| {
            for (k, sf) in self.subflows.enumerate_mut() {
                if on & (1 << k) != 0 {
                    sf.set_oracle_flags(bad.unwrap_or(sf.was_bad()), high_rto.unwrap_or(sf.high_rto()));
                }
            }
        };
        match a.verdict {
            oracle::Verdict::Bad => self.fail_over(cx, now, true, |k, _| on & (1 << k) != 0),
            oracle::Verdict::HighRto => {
                set_flags(None, Some(true));
                self.open_other_paths(cx, now, false, true);
            }
            oracle::Verdict::Clear => {
                set_flags(Some(false), Some(false));
                self.multimob.on_clear(now, &self.subflows, on);
                // A regular subflow may be healthy from now on: the fail-back hold starts.
                self.check_fail_back(cx, now);
            }
        }
    }

    /// Whether a `multimob` client's tail loss probe on subflow `i` may fail its path over
    /// (see [`MultiMob::tlp_may_fail_over`]).
    pub(super) fn tlp_may_fail_over(&self, config: &Config, i: usize) -> bool {
        let on_timeout = config.multipath.failover_on_timeout;
        self.multimob.tlp_may_fail_over(&self.subflows, i, on_timeout, self.has_unused_path())
    }

    /// Subflow `i`'s path answers nothing: its tail loss probe went unanswered, or a whole
    /// flight of two or more packets did. See the timers' `on_tlp_check`.
    pub(super) fn on_path_silent(&mut self, cx: &mut Cx<'_>, now: Time, i: usize) {
        if !self.tlp_may_fail_over(cx.config, i) {
            if MultiMob::tlp_may_reinject(&self.subflows, i) {
                self.suspect(cx, now, i);
            }
            return;
        }
        if let Some(netpath) = MultiMob::netpath(&self.subflows, &self.local, i) {
            let since = now.saturating_sub(self.subflows[i].silent_for(now));
            cx.out.endpoint(EndpointEvent::NetpathFailed { netpath, since });
        }
        let id = self.subflows[i].id();
        self.fail_over(cx, now, true, |_, s| s.id() == id);
    }

    // The application's and the oracle's say over the subflows.

    /// See [`Connection::request_peer_rto`](super::Connection::request_peer_rto).
    pub(super) fn request_peer_rto(&mut self, id: u32) {
        if let Some(sf) = self.subflows.iter_mut().find(|s| s.id() == id && s.is_open()) {
            sf.request_rto();
        }
    }

    /// See [`Connection::set_subflow_flags`](super::Connection::set_subflow_flags).
    pub(super) fn set_subflow_flags(&mut self, id: u32, was_bad: bool, high_rto: bool) {
        if let Some(sf) = self.subflows.iter_mut().find(|s| s.id() == id) {
            sf.set_oracle_flags(was_bad, high_rto);
        }
    }

    /// See [`Connection::mark_potentially_failed`](super::Connection::mark_potentially_failed).
    pub(super) fn mark_potentially_failed(&mut self, cx: &mut Cx<'_>, now: Time, id: u32) {
        if let Some(i) = self.subflows.by_number(id).filter(|&i| self.subflows[i].is_open()) {
            if self.subflows[i].mark_potentially_failed() {
                cx.emit(now, Event::SubflowFailed { id });
            }
            self.reinject_in_flight(cx, now, i, false);
        }
    }

    /// The endpoint's pace for failover probes (see [`MultiMob::probe_interval`]): it spreads
    /// a budget of probes over every connection that probes, so that a failover of thousands
    /// of connections at once does not send a probe per connection each 100 ms (issue 52).
    pub(crate) fn set_probe_interval(&mut self, every: Time) {
        self.multimob.probe_every = every;
    }

    /// `multimob` client: subflows opened for a failover are open, so a fail-back may follow.
    pub(crate) fn failover_open(&self) -> bool {
        self.multimob.failover_open(&self.subflows)
    }

    /// See [`Connection::subflow_path`](super::Connection::subflow_path).
    pub(super) fn subflow_path(&self, id: u32) -> Option<PathId> {
        self.subflows.by_number(id).and_then(|i| self.subflows.get(i)).map(|s| s.local_path())
    }

    /// What each subflow did since the last call, for the oracle: `(netpath, sample)`.
    pub(crate) fn oracle_samples(&mut self, out: &mut impl FnMut(oracle::Netpath, oracle::Sample)) {
        MultiMob::samples(&mut self.subflows, &self.local, out);
    }

    /// See [`Connection::set_backup`](super::Connection::set_backup).
    pub(super) fn set_backup(&mut self, id: u32, backup: bool) -> bool {
        let Some(sf) = self.subflows.iter_mut().find(|s| s.id() == id && s.is_open()) else { return false };
        sf.set_backup(backup);
        true
    }
}
