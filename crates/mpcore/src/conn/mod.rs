//! One multipath connection: its state, the application's calls and its statistics. Its
//! parts are components that own their state (ARCHITECTURE.md has the table of what each
//! owns): the subflows and their recovery (`subflow`), the stream's two sides (`send`, `recv`,
//! `dsn`), what the handshake agreed (`session`), the local paths (`local_paths`), liveness
//! (`liveness`), the events and the log (`outbox`), MultiMob (`multimob`), 0-RTT (`early`),
//! the first handshake's race (`spread`), tickets (`tickets`). The connection's own code acts
//! on their outcomes: the receive path (`input`), the way out (`output`), the timers
//! (`timers`), subflows opened and closed (`join`), path managers and failover (`paths`). The
//! first handshake is `crate::handshake`'s. No I/O, no clock: every call carries `now`.

mod addresses;
pub mod cc;
mod cx;
pub mod dsn;
mod early;
mod events;
mod input;
mod inspect;
mod join;
mod liveness;
mod local_paths;
mod multimob;
mod outbox;
mod output;
mod packet_builder;
mod paths;
pub(crate) mod qlog;
mod recv;
mod scheduling;
mod send;
mod send_buf;
mod session;
mod spread;
mod subflow;
mod tickets;
mod timer_table;
mod timers;

use crate::config::{Config, PathManager};
use crate::crypto;
use crate::drops::DropReason;
use crate::handshake;
use crate::rng::Rng;
use crate::wire::{Cid, TransportParams};
use crate::{LocalPath, PathId, Time};
pub(crate) use cx::Cx;
use dsn::Dsn;
use liveness::Liveness;
use local_paths::LocalPaths;
use multimob::MultiMob;
use outbox::Outbox;
pub(crate) use paths::Paths;
use recv::RecvSide;
use scheduler::SubflowInfo;
use scheduling::Scheduling;
use send::SendSide;
use session::{Keys, Session};
use std::net::SocketAddr;
use std::sync::Arc;
use subflow::table::SubflowTable;
use subflow::Subflow;
use timers::Clock;

pub(crate) use early::EarlyStart;
pub use early::MAX_EARLY_DATA;
pub use events::Memory;
pub use events::{
    CloseReason, ConnCounters, ConnStats, EndpointEvent, Event, ReadError, Side, SubflowCounters, SubflowStats,
    WriteError,
};
pub use subflow::SubflowState;
pub(crate) use tickets::Outgoing as OutgoingTicket;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Client: INITIAL sent, waiting for HANDSHAKE (or RETRY).
    Initial,
    /// Client: keys agreed, CONFIRM packets sent, no short packet from the server yet.
    Confirm,
    Established,
    /// Closed; still answering for a drain period (until `drain_until`).
    Closed(CloseReason),
}

/// One multipath connection: its subflows, stream, keys and timers (sans-IO: every call carries `now`).
pub struct Connection {
    side: Side,
    state: State,
    /// Shared with the endpoint and its other connections.
    config: Arc<Config>,
    /// What the first handshake agreed: keys, tokens, the peer's parameters and address.
    session: Session,
    /// The subflows, the local paths and what the path managers keep.
    paths: Paths,
    send: SendSide,
    recv: RecvSide,
    sched: Scheduling,
    /// The application's and the endpoint's events, and the event log.
    out: Outbox,
    rng: Rng,
    counters: ConnCounters,
    /// When the peer was heard, what awaits it, the drain and the trim timer.
    live: Liveness,
    /// Tests only: raw frames for the next packet (see [`Connection::inject_frames`]).
    injected: Vec<u8>,
    /// The resumption ticket to send (server) or received (client).
    tickets: tickets::Tickets,
    /// 0-RTT data: what the client may send early, what the server took.
    early: early::Early,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("side", &self.side)
            .field("state", &self.state)
            .field("subflows", &self.paths.subflows.records())
            .finish_non_exhaustive()
    }
}

impl Connection {
    #[allow(clippy::too_many_arguments)]
    fn blank(
        side: Side,
        now: Time,
        config: &Arc<Config>,
        paths: &[LocalPath],
        initial_path: PathId,
        peer_addr: SocketAddr,
        rng: Rng,
    ) -> Self {
        let sched = config.make_scheduler();
        Self {
            side,
            state: State::Initial,
            config: config.clone(),
            session: Session::new(peer_addr),
            paths: Paths {
                subflows: SubflowTable::default(),
                opened: 0,
                local: LocalPaths::new(paths, initial_path),
                multimob: MultiMob::new(side == Side::Client && config.multipath.path_manager == PathManager::MultiMob),
                spread: spread::Spread::default(),
            },
            send: SendSide::new(config.transport.send_buffer),
            recv: RecvSide::new(config.transport.recv_window, config.transport.max_recv_window),
            sched: Scheduling { algo: sched, infos: Vec::new(), rr: 0 },
            out: Outbox::new(config.logging.qlog.then(|| Box::new(qlog::Qlog::new(now, side)))),
            rng,
            counters: ConnCounters::default(),
            live: Liveness::new(now),
            injected: Vec::new(),
            tickets: tickets::Tickets::default(),
            early: early::Early::default(),
        }
    }

    /// The CIDs the endpoint routes to this connection: its subflow records' (reclaimed ones
    /// were retired).
    pub(crate) fn local_cids(&self) -> impl Iterator<Item = Cid> + '_ {
        self.paths.subflows.iter().map(|s| s.local_cid()).chain(self.early.route())
    }

    /// The client's side of a new connection: its INITIAL is built and sent by
    /// `poll_transmit`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new_client(
        now: Time,
        config: &Arc<Config>,
        paths: &[LocalPath],
        path: PathId,
        remote: SocketAddr,
        local_cid: Cid,
        mut rng: Rng,
        offer: Option<handshake::Offer>,
    ) -> Result<Self, crypto::CryptoError> {
        let hs = handshake::Client::new(now, config, &mut rng, local_cid, remote, offer)?;
        let mut c = Self::blank(Side::Client, now, config, paths, path, remote, rng);
        let (p, cx) = c.split();
        let mut sf = p.new_subflow(&cx, now, 0, SubflowState::JoinSent, path, remote, local_cid);
        sf.opened_by_client();
        c.paths.subflows.insert(sf);
        c.paths.opened = 1;
        c.out.endpoint(EndpointEvent::NewCid(local_cid));
        c.session.hs = Some(Box::new(hs));
        Ok(c)
    }

    /// The server's side, created from a CONFIRM whose cookie opened (§4.4).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new_server(
        now: Time,
        config: &Arc<Config>,
        paths: &[LocalPath],
        (path, carrier): (PathId, crate::Carrier),
        remote: SocketAddr,
        secrets: crypto::Secrets,
        client_params: TransportParams,
        (client_cid, server_cid): (Cid, Cid),
        resumed: bool,
        rng: Rng,
    ) -> Self {
        let mut c = Self::blank(Side::Server, now, config, paths, path, remote, rng);
        c.install_keys(secrets);
        c.tickets.set_resumed(resumed);
        c.set_peer_params(client_params);
        let (p, cx) = c.split();
        let mut sf = p.new_subflow(&cx, now, 0, SubflowState::Established, path, remote, server_cid);
        sf.set_carrier(carrier);
        sf.accept_handshake(client_cid, now);
        c.paths.subflows.insert(sf);
        c.out.endpoint(EndpointEvent::NewCid(server_cid));
        c.state = State::Established;
        c.emit(now, Event::Connected);
        if let Some(q) = c.out.qlog.as_deref_mut() {
            // The application hears of the connection only; the log has its first subflow too.
            q.event(now, &Event::SubflowEstablished { id: 0, path, backup: false });
        }
        c
    }

    /// Takes this side's keys and tokens from the connection's secrets (see
    /// [`Session::install`]) and starts both directions of the stream at IDSN + 1 (§4.3).
    /// Bytes (and a DATA_FIN) written before the keys were known move to their real DSNs.
    fn install_keys(&mut self, s: crypto::Secrets) {
        let f = self.config.faults();
        let (token, local_key, remote_key) = self.session.install(self.side, s, f.no_encryption, f.same_token);
        self.out.endpoint(EndpointEvent::Token(token));
        self.send.set_start(Dsn(crypto::idsn(local_key)).add(1));
        self.recv.set_start(Dsn(crypto::idsn(remote_key)).add(1));
    }

    fn set_peer_params(&mut self, p: TransportParams) {
        self.session.peer_params = p;
        self.send.set_peer_window(p.initial_window);
        let mss = self.mss();
        for sf in self.paths.subflows.iter_mut() {
            sf.set_max_datagram(mss);
        }
    }

    /// The largest datagram either side allows: the path MTU search's ceiling.
    fn mss(&self) -> usize {
        self.session.mss(&self.config)
    }

    /// The path layer, and the context it works through (the rest of the connection).
    fn split(&mut self) -> (&mut Paths, Cx<'_>) {
        let cx = Cx {
            side: self.side,
            state: &mut self.state,
            config: &self.config,
            session: &self.session,
            send: &mut self.send,
            recv: &mut self.recv,
            out: &mut self.out,
            rng: &mut self.rng,
            counters: &mut self.counters,
            live: &mut self.live,
        };
        (&mut self.paths, cx)
    }

    /// The largest datagram to send on subflow `i`: what its path is known to carry.
    fn subflow_mss(&self, i: usize) -> usize {
        self.mss().min(self.paths.subflows[i].pmtu().current())
    }

    /// The view the timers are computed from.
    fn clock(&self) -> Clock<'_> {
        Clock {
            side: self.side,
            state: self.state,
            config: &self.config,
            session: &self.session,
            paths: &self.paths,
            live: &self.live,
            send: &self.send,
        }
    }

    /// The path layer, to read.
    pub(crate) fn path_layer(&self) -> &Paths {
        &self.paths
    }

    /// Runs `f` on the path layer with its context (the endpoint's oracle and path watch
    /// speak to the path layer this way too).
    pub(crate) fn with_paths<R>(&mut self, f: impl FnOnce(&mut Paths, &mut Cx<'_>) -> R) -> R {
        let (p, mut cx) = self.split();
        f(p, &mut cx)
    }

    /// Client or server.
    pub fn side(&self) -> Side {
        self.side
    }

    /// The first handshake completed and it is not closed.
    pub fn is_established(&self) -> bool {
        self.state == State::Established
    }

    /// Why the connection closed, once it has.
    pub fn close_reason(&self) -> Option<CloseReason> {
        match self.state {
            State::Closed(r) => Some(r),
            _ => None,
        }
    }

    /// It ended (it may still be draining).
    pub fn is_closed(&self) -> bool {
        matches!(self.state, State::Closed(_))
    }

    /// True once the connection may be forgotten (closed and drained).
    pub fn is_drained(&self) -> bool {
        self.live.drained
    }

    /// The token that names it to this endpoint (§4.3), once known.
    pub fn local_token(&self) -> Option<u32> {
        self.session.local_token
    }

    /// The MP_IDLE state of the last in-order data received (MultiMob §III-B).
    pub fn peer_idle(&self) -> bool {
        self.recv.peer_idle()
    }

    /// The next event for the application.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.out.events.pop_front()
    }

    /// The next thing the endpoint must do for this connection.
    pub(crate) fn poll_endpoint_event(&mut self) -> Option<EndpointEvent> {
        self.out.endpoint_events.pop_front()
    }

    /// A frame was rejected (the rest of its packet is processed): the endpoint counts it.
    fn reject(&mut self, r: DropReason) {
        self.out.reject(r);
    }

    /// Nothing more to do: the endpoint may forget the connection.
    fn set_drained(&mut self) {
        self.with_paths(|_, cx| cx.set_drained());
    }

    /// Queues an event for the application and logs it (see [`Outbox::emit`]).
    fn emit(&mut self, now: Time, e: Event) {
        self.out.emit(now, self.side, e);
    }

    /// Appends the event log's records since the last call to `out` (JSON-SEQ, PROTOCOL.md
    /// §13; the first call gives the header record too). Nothing when `Config::logging.qlog` is off.
    pub fn take_qlog(&mut self, out: &mut Vec<u8>) {
        self.out.log_losses(&mut self.paths.subflows);
        if let Some(q) = self.out.qlog.as_deref_mut() {
            q.take(out);
        }
    }

    /// Events the log dropped because it was not taken (more than 16 MiB pending).
    pub fn qlog_dropped(&self) -> u64 {
        self.out.qlog.as_ref().map_or(0, |q| q.dropped())
    }

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

    /// Ends the stream in this direction (DATA_FIN after the bytes written so far).
    pub fn close(&mut self) {
        if !self.is_closed() {
            self.send.close();
        }
    }

    /// Aborts the connection: MP_FASTCLOSE on every subflow, then nothing more.
    pub fn abort(&mut self, now: Time) {
        if self.is_closed() {
            return;
        }
        if self.session.keys.is_some() {
            self.live.fastclose = true;
            for sf in self.paths.subflows.iter_mut().filter(|s| s.is_open() && s.remote_cid().is_some()) {
                sf.send_fast_close();
            }
        }
        self.enter_closed(now, CloseReason::Aborted);
    }

    /// Ends the connection at once (no drain period).
    pub(crate) fn fail(&mut self, now: Time, reason: CloseReason) {
        self.enter_closed(now, reason);
        self.set_drained();
    }

    fn enter_closed(&mut self, now: Time, reason: CloseReason) {
        let (p, mut cx) = self.split();
        cx.enter_closed(&p.subflows, now, reason);
    }

    /// Subflow records held now: the open subflows and the closed ones still draining (a
    /// closed subflow's record is reclaimed three RTOs after it closed).
    pub fn subflow_records(&self) -> usize {
        self.paths.subflows.records()
    }

    /// For tests of a peer's defences only: our DATA_ACK as it travels (the peer's next DSN).
    #[cfg(feature = "test-hooks")]
    pub fn data_ack(&self) -> u64 {
        self.recv.edsn().0
    }

    /// For tests of a peer's defences only: `frames` (encoded frames, sent as they are) go
    /// into the next packet on subflow `id`, sealed with the connection's keys. False if
    /// there is no such subflow.
    #[cfg(feature = "test-hooks")]
    pub fn inject_frames(&mut self, id: u32, frames: &[u8]) -> bool {
        let Some(i) = self.paths.subflows.by_number(id) else { return false };
        self.injected.extend_from_slice(frames);
        self.paths.subflows[i].ping();
        true
    }

    /// Server: the NEW_TICKET its endpoint issued for this connection goes on the first
    /// subflow.
    pub(crate) fn queue_ticket(&mut self, t: OutgoingTicket) {
        if let Some(sf) = self.paths.subflows.get_mut(0) {
            sf.carry(subflow::FrameSet::TICKET);
            self.tickets.queue(t);
        }
    }

    /// The oldest resumption ticket received and not yet taken, with its arrival.
    pub(crate) fn take_ticket(&mut self) -> Option<(Time, tickets::Received)> {
        self.tickets.take()
    }

    /// The connection was opened with a resumption ticket (PROTOCOL.md §4.8): the server took
    /// the client's ticket, and the keys come from its PSK and a fresh key agreement.
    pub fn resumed(&self) -> bool {
        self.tickets.resumed()
    }

    /// The address the connection was opened to: the client's view of its server.
    pub fn server_addr(&self) -> SocketAddr {
        self.session.peer_addr
    }

    /// A snapshot of the connection and its subflows.
    pub fn stats(&self) -> ConnStats {
        ConnStats {
            side: self.side,
            established: self.state == State::Established,
            closed: match self.state {
                State::Closed(r) => Some(r),
                _ => None,
            },
            counters: self.counters,
            subflows: self.paths.subflows.stats(Subflow::stats),
            scheduler: self.sched.algo.name().to_string(),
            resumed: self.tickets.resumed(),
            early_bytes: self.early_data(),
            recv_window: self.recv.size(),
        }
    }

    /// What the connection holds in memory, by part (issue 52: an idle server connection's
    /// budget, `mpsim/tests/memory.rs`).
    pub fn memory(&self) -> Memory {
        use std::mem::size_of;
        let cap = |n: usize, each: usize| n * each;
        Memory {
            connection: size_of::<Connection>(),
            keys: if self.session.keys.is_some() { size_of::<Keys>() } else { 0 },
            subflows: self.paths.subflows.heap_bytes(),
            buffers: self.buffer_bytes(),
            scheduler: cap(self.sched.infos.capacity(), size_of::<SubflowInfo>()),
            qlog: self.out.qlog.as_ref().map_or(0, |q| q.heap_bytes()),
            other: self.paths.local.heap_bytes()
                + self.out.heap_bytes()
                + self.injected.capacity()
                + self.session.heap_bytes(),
        }
    }
}

/// The path layer's calls, made through the connection (see [`Paths`]).
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
