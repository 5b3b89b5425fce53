//! One multipath connection: its state, the application's calls and its statistics. Its
//! parts are components that own their state (ARCHITECTURE.md has the table of what each
//! owns): the path layer (`Paths`: the subflows and their recovery, `subflow`; the local paths,
//! `local_paths`; MultiMob, `multimob`; the first handshake's race, `spread`), working through
//! a context of the other parts (`cx`); the stream's two sides (`send`, `recv`, `dsn`); what
//! the handshake agreed (`session`); liveness (`liveness`); the events and the log (`outbox`);
//! the scheduler's wiring (`scheduling`); 0-RTT (`early`); tickets (`tickets`). The path
//! layer's methods are in `paths` (path managers, failover), `join` (subflows opened and
//! closed) and `timers` (the timers, computed from the `Clock` view; the subflows' timeouts and
//! ACKs). The connection itself, in three files, coordinates them: this one, the receive path
//! and the timeouts (`input`), the way out and the stream (`output`). The first handshake is
//! `crate::handshake`'s. No I/O, no clock: every call carries `now`.

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
mod state;
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
use state::State;
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
    /// Tests only: raw frames for the next packet on the subflow in slot `injected_on` (see
    /// [`Connection::inject_frames`]).
    injected: Vec<u8>,
    injected_on: u8,
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
            injected_on: 0,
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
        // A slot is below `MAX_SLOTS` (64).
        self.injected_on = i as u8;
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
                + self.paths.multimob.heap_bytes()
                + self.out.heap_bytes()
                + self.injected.capacity()
                + self.session.heap_bytes(),
        }
    }
}
