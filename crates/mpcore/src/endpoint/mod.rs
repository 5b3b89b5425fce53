//! An endpoint: the connections of one host (or one application), demultiplexed by connection
//! ID and join token, and the server's stateless answers to first packets (§4.1, in
//! `handshake`). Connections talk back through their endpoint-event queue
//! ([`EndpointEvent`]); the endpoint applies it after every call into one.

mod accept;
mod issuer;
mod local_paths;
mod netpaths;
mod oracle_periods;
mod prewarm;
mod reset;
mod tickets;
mod transmit;

use crate::activity::Activity;
use crate::config::{Config, ConfigError};
use crate::conn::{CloseReason, ConnStats, Connection, EndpointEvent, Event};
use crate::drops::{DropReason, Drops};
use crate::handshake::{self, ServerKeys};
use crate::limiter::{SourceLimiter, TokenBucket};
use crate::rng::Rng;
use crate::routes::Routes;
use crate::slab::Slab;
use crate::wire::packet;
use crate::wire::packet::Short;
use crate::wire::{Cid, Header, Packet, Writer};
use crate::{Carrier, LocalPath, PathId, PathSet, Time};
use std::collections::VecDeque;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

/// Names one connection of an endpoint. A forgotten connection's slot is reused by a later
/// one, under a new generation: an old handle then names nothing (`Endpoint::conn` is `None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnHandle {
    index: u32,
    generation: u32,
}

impl ConnHandle {
    /// Its slot: below the number of connections alive at the busiest (for an application's
    /// own tables; a slot is shared by connections one after another).
    pub fn index(self) -> usize {
        self.index as usize
    }
}

impl fmt::Display for ConnHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.index, self.generation)
    }
}

/// Why `connect` failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConnectError {
    /// The path id is not one of the endpoint's local paths.
    UnknownPath(PathId),
    /// The system has no randomness for a key share.
    Crypto,
    /// No server key to authenticate the server with (`Config::transport.server_keys`), and no explicit
    /// opt-out (`Config::transport.unauthenticated_server`).
    NoServerKey,
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectError::UnknownPath(p) => write!(f, "local path {} is not configured on this endpoint", p.0),
            ConnectError::Crypto => f.write_str("no system randomness for a key share"),
            ConnectError::NoServerKey => f.write_str(
                "the server is not authenticated: give its public key (Config::transport.server_keys) or opt out (Config::transport.unauthenticated_server)",
            ),
        }
    }
}

impl std::error::Error for ConnectError {}

/// Most stateless answers (RETRY, HANDSHAKE, VERSION_NEGOTIATION) waiting to be sent.
const STATELESS_QUEUE: usize = 1024;

/// What a server did with INITIALs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HandshakeCounters {
    /// Answered with a HANDSHAKE (a key agreement and, with an identity, a signature).
    pub answered: u64,
    /// Answered with a RETRY (`require_retry`, or more than `retry_above` per second).
    pub retries: u64,
    /// Shed: the queue of stateless answers was full.
    pub shed: u64,
    /// Shed: their source had sent `Config::server.initials_per_source` in that second already.
    pub over_source_limit: u64,
    /// Of those answered, resumed with the INITIAL's ticket (no signature, PROTOCOL.md §4.8).
    pub resumed: u64,
    /// Of those answered, offered a ticket this server did not take (the full handshake).
    pub resumption_declined: u64,
    /// Of those resumed, whose 0-RTT data was taken (the connection made at the INITIAL).
    pub early_accepted: u64,
    /// A fleet's server: STATELESS_RESETs sent, for short headers of connections unknown here
    /// (PROTOCOL.md §3.4).
    pub resets_sent: u64,
    /// A client: STATELESS_RESETs that named one of its connections.
    pub resets_received: u64,
}

/// The sans-IO endpoint: its local paths, connections, stateless handshake answers and the oracle; datagrams in with `handle_datagram`, out with `poll_transmit`.
pub struct Endpoint {
    config: Arc<Config>,
    paths: Vec<LocalPath>,
    server: bool,
    conns: Slab<Box<Connection>>,
    /// Connections by CID and token; CIDs of closed connections (§4.4).
    routes: Routes,
    /// The stateless server's cookie and retry-token keys.
    keys: ServerKeys,
    rng: Rng,
    stateless: VecDeque<(PathId, SocketAddr, Vec<u8>, Carrier)>,
    /// What carried the datagram being handled (its stateless answer goes back the same way).
    rx_carrier: Carrier,
    /// HANDSHAKEs the server may still answer before it asks for RETRYs (`retry_above`).
    hs_bucket: TokenBucket,
    /// A fleet's server: its reset key and budget.
    resetter: Option<reset::Resetter>,
    handshakes: HandshakeCounters,
    /// INITIALs answered per source and second (`Config::server.initials_per_source`).
    limiter: SourceLimiter,
    accept: VecDeque<ConnHandle>,
    events: VecDeque<(ConnHandle, Event)>,
    scratch: Vec<u8>,
    drops: Drops,
    /// Which connections need looking at: timers, sends, events (`activity`).
    activity: Activity,
    /// The latest time handed in (for the application's changes, which carry none).
    now: Time,
    /// Reused lists of connection indexes.
    scratch_idx: Vec<usize>,
    /// The `multimob` path manager's oracle over every connection of this (client) endpoint.
    oracle: Option<oracle::Oracle>,
    oracle_actions: Vec<oracle::Action>,
    /// When each netpath last brought a packet (`multimob`: refutes one connection's report).
    heard: netpaths::Heard,
    /// The connections that probe for a failover (`multimob`: their probes' pace).
    probing: netpaths::Probing,
    /// Per local path: reported down by the driver.
    path_down: Vec<bool>,
    /// Per local path: when a connection found UDP silent there (kept `UDP_VERDICT`).
    udp_silent: Vec<Option<Time>>,
    /// Per local path: removed (`remove_path`); the slot is reused by `add_path`.
    removed: Vec<bool>,
    /// Local paths whose socket is full (`set_path_writable`): no connection sends there.
    unwritable: PathSet,
    /// The connection whose turn it is to send, and the datagrams it sent in it (`SEND_TURN`).
    turn: (usize, usize),
    /// Waking the cellular radio early (`prewarm`).
    warmer: prewarm::Warmer,
    /// A server's resumption tickets (`tickets`), when it issues them.
    tickets: Option<issuer::Issuer>,
    /// The unix time, for the tickets' dates (`set_unix_time`).
    clock: issuer::UnixClock,
    /// The anti-replay record of 0-RTT INITIALs (shared with every endpoint given a clone of
    /// the configuration's).
    strikes: crate::StrikeRegister,
    /// The last records of the logs of connections forgotten since the driver last looked
    /// (`take_forgotten_qlogs`): a connection that ends without a drain period is forgotten
    /// in the call that ended it.
    qlog_tails: Vec<(ConnHandle, Vec<u8>)>,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint")
            .field("server", &self.server)
            .field("live", &self.conns.live())
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// An endpoint with these local paths (any number up to 255, none included: more come
    /// with `add_path`). A `server` endpoint accepts connections; any endpoint may connect.
    pub fn new(config: Config, paths: Vec<LocalPath>, server: bool) -> Result<Self, ConfigError> {
        config.validate()?;
        // None is fine: a phone's interfaces may all be waiting for an address (`add_path`).
        if paths.len() > 255 {
            return Err(ConfigError("an endpoint has at most 255 local paths".into()));
        }
        let mut rng = Rng::new(config.seed());
        let keys = match &config.server.fleet {
            Some(f) => ServerKeys::of_fleet(&f.secret),
            None => ServerKeys::new(&mut rng).map_err(|_| ConfigError("no system randomness".into()))?,
        };
        let tickets =
            if server { issuer::Issuer::new(&config.resumption, config.server.fleet.as_ref(), &mut rng) } else { None };
        let scratch = vec![0u8; config.transport.max_receive_size.max(packet::MIN_INITIAL_SIZE)];
        Ok(Self {
            path_down: vec![false; paths.len()],
            udp_silent: vec![None; paths.len()],
            removed: vec![false; paths.len()],
            unwritable: PathSet::default(),
            turn: (usize::MAX, 0),
            warmer: prewarm::Warmer::default(),
            tickets,
            clock: issuer::UnixClock::default(),
            strikes: config.resumption.strikes.clone().unwrap_or_default(),
            qlog_tails: Vec::new(),
            paths,
            server,
            conns: Slab::default(),
            routes: Routes::default(),
            keys,
            rng,
            stateless: VecDeque::new(),
            rx_carrier: Carrier::Udp,
            hs_bucket: TokenBucket::full(Self::hs_burst(f64::from(config.server.retry_above)), 0),
            resetter: reset::Resetter::new(config.server.fleet.as_ref()),
            handshakes: HandshakeCounters::default(),
            // Keyed without drawing from `rng`, so a seeded run's other draws stay as they were.
            limiter: SourceLimiter::new(
                config.server.initials_per_source,
                config.seed().unwrap_or_else(|| {
                    use std::hash::BuildHasher;
                    std::collections::hash_map::RandomState::new().hash_one(0u8)
                }),
            ),
            accept: VecDeque::new(),
            events: VecDeque::new(),
            scratch,
            drops: Drops::default(),
            activity: Activity::default(),
            now: 0,
            scratch_idx: Vec::new(),
            oracle: (config.multipath.path_manager == crate::PathManager::MultiMob && !server)
                .then(|| oracle::Oracle::new(config.multipath.oracle)),
            oracle_actions: Vec::new(),
            heard: netpaths::Heard::default(),
            probing: netpaths::Probing::default(),
            config: Arc::new(config),
        })
    }

    /// Its configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Datagrams dropped, by reason.
    pub fn drops(&self) -> &Drops {
        &self.drops
    }

    /// Connections not yet forgotten.
    pub fn live_connections(&self) -> usize {
        self.conns.live()
    }

    /// Handles of the connections not yet forgotten.
    pub fn handles(&self) -> impl Iterator<Item = ConnHandle> + '_ {
        self.conns.indexes().map(|i| self.handle(i))
    }

    /// The handle of the connection in slot `idx`.
    fn handle(&self, idx: usize) -> ConnHandle {
        ConnHandle { index: idx as u32, generation: self.conns.generation(idx) }
    }

    /// The slot of the connection `h` names, if the endpoint still knows it.
    fn slot_of(&self, h: ConnHandle) -> Option<usize> {
        let idx = h.index();
        (self.conns.get(idx).is_some() && self.conns.generation(idx) == h.generation).then_some(idx)
    }

    /// A connection, while the endpoint knows it.
    pub fn conn(&self, h: ConnHandle) -> Option<&Connection> {
        self.conns.get(self.slot_of(h)?).map(|c| &**c)
    }

    /// The connection, for the application calls (`write`, `read`, `close`, `open_subflow`...).
    pub fn conn_mut(&mut self, h: ConnHandle) -> Option<&mut Connection> {
        let idx = self.slot_of(h)?;
        self.activity.mark_dirty(idx);
        self.conns.get_mut(idx).map(|c| &mut **c)
    }

    /// A connection's snapshot.
    pub fn stats(&self, h: ConnHandle) -> Option<ConnStats> {
        self.conn(h).map(|c| c.stats())
    }

    /// Starts a connection to `remote` over local path `path`.
    pub fn connect(&mut self, now: Time, path: PathId, remote: SocketAddr) -> Result<ConnHandle, ConnectError> {
        self.start(now, path, remote, None)
    }

    fn start(
        &mut self,
        now: Time,
        path: PathId,
        remote: SocketAddr,
        offer: Option<handshake::Offer>,
    ) -> Result<ConnHandle, ConnectError> {
        self.now = self.now.max(now);
        if self.path(path).is_none() {
            return Err(ConnectError::UnknownPath(path));
        }
        if self.config.transport.server_keys.is_empty() && !self.config.transport.unauthenticated_server {
            return Err(ConnectError::NoServerKey);
        }
        let cid = self.fresh_cid();
        let rng = self.rng.fork();
        let mut c = Connection::new_client(now, &self.config, &self.paths, path, remote, cid, rng, offer)
            .map_err(|_| ConnectError::Crypto)?;
        let silent = self.udp_silent_paths(now);
        c.with_paths(|p, cx| p.assume_udp_silent(cx, silent));
        if let Some(o) = self.oracle.as_mut() {
            o.start(now);
        }
        Ok(self.insert(c))
    }

    fn insert(&mut self, mut c: Connection) -> ConnHandle {
        for (p, _) in self.path_down.iter().enumerate().filter(|(_, d)| **d) {
            c.with_paths(|paths, _| paths.start_with_path_down(PathId(p as u8)));
        }
        let (idx, _) = self.conns.insert(Box::new(c));
        self.apply_events(idx, self.now);
        self.handle(idx)
    }

    /// The next connection a peer opened to this (server) endpoint.
    pub fn accept(&mut self) -> Option<ConnHandle> {
        self.accept.pop_front()
    }

    /// Applies what connection `idx` asked of the endpoint: routes, its token, a failed
    /// netpath for the oracle, rejected frames to count; and forgets it once drained.
    fn apply_events(&mut self, idx: usize, now: Time) {
        self.route_events(idx, now);
        self.after(idx);
        self.activity.mark_ready(idx);
    }

    /// Connection `idx` changed: its deadline is brought up to date before the endpoint next
    /// reports or runs its timers (`refresh_deadlines`), and it is queued for `poll_event`.
    fn after(&mut self, idx: usize) {
        self.activity.mark_stale(idx);
        if self.conns.get(idx).is_some() {
            self.activity.mark_eventful(idx);
        }
    }

    /// Enters the deadline of every connection that changed since the last call: once per
    /// `poll_timeout` or `handle_timeout`, however many datagrams came and went between.
    fn refresh_deadlines(&mut self) {
        let every = self.count_probing();
        while let Some(idx) = self.activity.pop_stale() {
            if let (Some(c), Some(every)) = (self.conns.get_mut(idx), every) {
                c.with_paths(|p, _| p.set_probe_interval(every));
            }
            let t = self.conns.get(idx).and_then(|c| c.poll_timeout());
            self.activity.set_deadline(idx, t);
        }
    }

    /// What the application changed since the endpoint last looked.
    fn flush_dirty(&mut self) {
        let mut dirty = std::mem::take(&mut self.scratch_idx);
        self.activity.take_dirty(&mut dirty);
        let now = self.now;
        for &idx in &dirty {
            self.apply_events(idx, now);
        }
        dirty.clear();
        self.scratch_idx = dirty;
    }

    fn route_events(&mut self, idx: usize, now: Time) {
        let mut failed = None;
        let mut drained = false;
        while let Some(ev) = self.conns.get_mut(idx).and_then(|c| c.poll_endpoint_event()) {
            match ev {
                EndpointEvent::NewCid(cid) => self.route_cid(idx, cid, now),
                EndpointEvent::RetireCid(cid) => self.routes.retire_cid(&cid, idx),
                EndpointEvent::Token(t) => {
                    if !self.routes.add_token(t, idx) {
                        // §4.3: tokens must be unique among an endpoint's connections.
                        if let Some(c) = self.conns.get_mut(idx) {
                            c.fail(now, CloseReason::TokenCollision);
                        }
                    }
                }
                EndpointEvent::NetpathFailed { netpath, since } => failed = Some((netpath, since)),
                EndpointEvent::Rejected(r) => self.drops.count(r),
                EndpointEvent::UdpVerdict { path, silent } => self.note_udp(now, path, silent),
                EndpointEvent::Drained => drained = true,
            }
        }
        if drained {
            self.reap(idx, now);
        }
        if let Some((np, since)) = failed {
            self.declare_bad(now, np, since);
        }
    }

    /// A CID no connection of ours has or had within the cookie lifetime.
    fn fresh_cid(&mut self) -> Cid {
        loop {
            let cid = self.config.issue_cid(&mut self.rng);
            if !self.routes.cid_taken(&cid) {
                return cid;
            }
        }
    }

    /// Routes connection `idx`'s new CID, unless another connection has it or had it within
    /// the cookie lifetime: then the connection's subflow gets a fresh one, unique here, or
    /// closes if a packet already carried the old (`Paths::rename_cid`).
    fn route_cid(&mut self, idx: usize, cid: Cid, now: Time) {
        if !self.routes.cid_taken(&cid) || self.routes.cid(&cid) == Some(idx) {
            self.routes.add_cid(cid, idx);
            return;
        }
        let fresh = self.fresh_cid();
        let Some(c) = self.conns.get_mut(idx) else { return };
        let renamed = c.with_paths(|p, cx| p.rename_cid(cx, now, cid, fresh));
        tracing::debug!(target: "mpcore", ?cid, renamed, "a new CID was taken: renamed or closed");
        if renamed {
            self.routes.add_cid(fresh, idx);
        }
    }

    /// Whether this endpoint accepts connections.
    pub fn is_server(&self) -> bool {
        self.server
    }

    /// The last records of the logs (qlog) of the connections forgotten since the last call:
    /// whoever takes the live connections' logs takes these too, before their `Forgotten`.
    pub fn take_forgotten_qlogs(&mut self) -> Vec<(ConnHandle, Vec<u8>)> {
        std::mem::take(&mut self.qlog_tails)
    }

    /// Forgets a drained connection; its CIDs are remembered for the cookie lifetime.
    fn reap(&mut self, idx: usize, now: Time) {
        let h = self.handle(idx);
        let Some(mut c) = self.conns.remove(idx) else { return };
        while let Some(e) = c.poll_event() {
            self.events.push_back((h, e));
        }
        self.events.push_back((h, Event::Forgotten));
        if self.config.logging.qlog {
            let mut tail = Vec::new();
            c.take_qlog(&mut tail);
            self.qlog_tails.push((h, tail));
        }
        let expiry = now + self.config.server.cookie_lifetime;
        self.routes.forget(idx, c.local_cids(), c.local_token(), expiry);
    }

    /// Logs a dropped datagram (`tracing`, target `mpcore`); the counter is bumped by the caller.
    fn trace_drop(why: &'static str, remote: SocketAddr, len: usize) {
        tracing::trace!(%remote, len, why, "datagram dropped");
    }

    /// Processes one received datagram. `path` is the local path it arrived on, `remote` its
    /// source address; it came over UDP.
    pub fn handle_datagram(&mut self, now: Time, path: PathId, remote: SocketAddr, data: &[u8]) {
        self.handle_carried(now, path, remote, Carrier::Udp, data);
    }

    /// [`Endpoint::handle_datagram`] for a datagram that came over `carrier`: a TCP
    /// connection's (§4.11) is one length-prefixed record of its stream, `remote` the
    /// connection's peer address.
    pub fn handle_carried(&mut self, now: Time, path: PathId, remote: SocketAddr, carrier: Carrier, data: &[u8]) {
        self.rx_carrier = carrier;
        self.now = self.now.max(now);
        self.wake_oracle(now);
        if data.len() > self.config.transport.max_receive_size || data.len() > self.scratch.len() {
            self.drops.oversized += 1;
            return;
        }
        if self.path(path).is_none() {
            self.drops.unexpected += 1;
            return;
        }
        if data == crate::radio::WARM {
            self.on_warm();
            return;
        }
        let p = match Packet::parse(data, usize::from(self.config.transport.cid_len)) {
            Ok(p) => p,
            Err(crate::wire::Error::Oversized) => {
                self.drops.oversized += 1;
                Self::trace_drop("oversized", remote, data.len());
                return;
            }
            Err(_) => {
                self.drops.malformed += 1;
                Self::trace_drop("malformed", remote, data.len());
                return;
            }
        };
        let len = data.len();
        let idx = match p.header {
            Header::Short(s) => self.routes.cid(&s.dcid),
            Header::Confirm(c) => match self.routes.cid(&c.dcid) {
                Some(i) => Some(i),
                None => {
                    self.server_confirm(now, path, remote, &p, data);
                    return;
                }
            },
            Header::Join(j) => match self.routes.token(j.token) {
                Some(i) => Some(i),
                None => {
                    self.drops.unknown_token += 1;
                    return;
                }
            },
            Header::Initial(i) => {
                match self.routes.cid(&i.dcid) {
                    // A repeat of a 0-RTT INITIAL whose connection was made (§4.9).
                    Some(idx) if self.server => self.initial_again(idx, path, remote, &p, data),
                    _ => self.server_initial(now, path, remote, &p, data),
                }
                return;
            }
            Header::Early(e) => self.routes.cid(&e.dcid),
            Header::Reset(r) => {
                self.on_reset(now, &r.token);
                return;
            }
            Header::Retry(r) => self.routes.cid(&r.dcid),
            Header::Handshake(h) => self.routes.cid(&h.dcid),
            Header::VersionNegotiation { dcid, versions, .. } => {
                if let Some(i) = self.routes.cid(&dcid) {
                    let ours = packet::versions(versions).any(|v| packet::SUPPORTED_VERSIONS.contains(&v));
                    if let Some(c) = self.conns.get_mut(i) {
                        if !ours && !c.is_established() {
                            c.fail(now, CloseReason::VersionMismatch);
                        }
                    }
                    self.apply_events(i, now);
                } else {
                    self.drops.unknown_cid += 1;
                }
                return;
            }
            Header::UnsupportedVersion { ids, .. } => {
                self.drops.version += 1;
                let room = self.stateless.len() < STATELESS_QUEUE;
                if let (true, Some((dcid, scid))) = (self.server && room && len >= packet::MIN_INITIAL_SIZE, ids) {
                    let mut out = vec![0u8; 64];
                    let mut w = Writer::new(&mut out);
                    if packet::emit_version_negotiation(dcid, scid, &packet::SUPPORTED_VERSIONS, &mut w).is_ok() {
                        let n = w.len();
                        out.truncate(n);
                        self.stateless.push_back((path, remote, out, self.rx_carrier));
                    }
                }
                return;
            }
        };
        let Some(idx) = idx else {
            match p.header {
                Header::Short(s) => self.unknown_short(now, path, remote, &s.dcid, len),
                _ => self.drops.unknown_cid += 1,
            }
            return;
        };
        let Some(c) = self.conns.get_mut(idx) else {
            self.drops.unknown_cid += 1;
            return;
        };
        // Opened in place in a copy: `data` stays as it came (a view `p` borrows it). Only a
        // packet for a connection is copied, not an INITIAL (a flood's) or an unknown CID.
        let scratch = &mut self.scratch[..len];
        scratch.copy_from_slice(data);
        let r = match p.header {
            Header::Retry(_) => c.handle_retry(now, (path, self.rx_carrier), remote, &p, data),
            Header::Handshake(_) => c.handle_handshake(now, (path, self.rx_carrier), remote, &p, scratch),
            _ => c.handle_sealed(now, (path, self.rx_carrier), remote, p.header, p.header_len, scratch),
        };
        self.after_datagram(idx, now, path, remote, len, r);
    }

    /// [`Endpoint::handle_datagram`] for a datagram the caller lets the endpoint change: a
    /// short-header packet (nearly every one) is opened where it lies, without the copy
    /// `handle_datagram` makes; any other goes to `handle_datagram`. What `data` holds
    /// afterwards is unspecified.
    pub fn handle_datagram_in_place(&mut self, now: Time, path: PathId, remote: SocketAddr, data: &mut [u8]) {
        self.handle_carried_in_place(now, path, remote, Carrier::Udp, data);
    }

    /// [`Endpoint::handle_datagram_in_place`] for a datagram that came over `carrier`.
    pub fn handle_carried_in_place(
        &mut self,
        now: Time,
        path: PathId,
        remote: SocketAddr,
        carrier: Carrier,
        data: &mut [u8],
    ) {
        let short = data.first().is_some_and(|b| b & 0x80 == 0);
        if !short || data.len() > self.config.transport.max_receive_size || self.path(path).is_none() {
            return self.handle_carried(now, path, remote, carrier, data);
        }
        self.rx_carrier = carrier;
        self.wake_oracle(now);
        let (dcid, header_len) = match Packet::parse(data, usize::from(self.config.transport.cid_len)) {
            Ok(Packet { header: Header::Short(s), header_len, .. }) => (s.dcid, header_len),
            // Malformed: counted there.
            _ => return self.handle_carried(now, path, remote, carrier, data),
        };
        self.now = self.now.max(now);
        let Some((idx, c)) = self.routes.cid(&dcid).and_then(|i| Some((i, self.conns.get_mut(i)?))) else {
            self.unknown_short(now, path, remote, &dcid, data.len());
            return;
        };
        // The header, copied out of `data`, which is opened where it lies.
        let len = data.len();
        let r = c.handle_sealed(now, (path, carrier), remote, Header::Short(Short { dcid }), header_len, data);
        self.after_datagram(idx, now, path, remote, len, r);
    }

    /// Counts a dropped datagram, notes the netpath of one taken (`multimob`'s oracle), and
    /// applies what connection `idx` asked of the endpoint.
    fn after_datagram(
        &mut self,
        idx: usize,
        now: Time,
        path: PathId,
        remote: SocketAddr,
        len: usize,
        r: Result<(), DropReason>,
    ) {
        match r {
            Ok(()) => self.heard_from(now, path, remote),
            Err(r) => {
                self.drops.count(r);
                tracing::trace!(%remote, len, why = ?r, "datagram dropped");
            }
        }
        self.apply_events(idx, now);
    }

    /// Runs every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Time) {
        self.now = self.now.max(now);
        self.run_due(now);
        self.routes.expire(now);
        self.run_oracle(now);
        // The oracle's decisions (and a netpath one connection declared bad) change other
        // connections' subflows, which may make their timers due now (a keep-alive moving to
        // another subflow): those run too, so that nothing due is left.
        self.run_due(now);
    }

    fn run_due(&mut self, now: Time) {
        self.flush_dirty();
        self.refresh_deadlines();
        let mut due = std::mem::take(&mut self.scratch_idx);
        self.activity.take_due(now, &mut due);
        if !due.is_empty() {
            self.wake_oracle(now);
        }
        for &idx in &due {
            if let Some(c) = self.conns.get_mut(idx) {
                if c.poll_timeout().is_some_and(|t| t <= now) {
                    c.handle_timeout(now);
                }
            }
            self.apply_events(idx, now);
        }
        due.clear();
        self.scratch_idx = due;
    }

    /// The earliest time `handle_timeout` must be called. Takes `&mut self` to bring the
    /// deadlines of the connections that changed since the last call up to date first:
    /// O(changed), not O(connections).
    pub fn poll_timeout(&mut self) -> Option<Time> {
        self.flush_dirty();
        self.refresh_deadlines();
        let conns = self.activity.earliest();
        let oracle = self.oracle.as_ref().filter(|_| self.conns.live() > 0).and_then(|o| o.poll_timeout());
        match (conns, oracle) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next event of any connection.
    pub fn poll_event(&mut self) -> Option<(ConnHandle, Event)> {
        if let Some(e) = self.events.pop_front() {
            return Some(e);
        }
        self.flush_dirty();
        while let Some(idx) = self.activity.front_eventful() {
            if let Some(e) = self.conns.get_mut(idx).and_then(|c| c.poll_event()) {
                return Some((self.handle(idx), e));
            }
            self.activity.pop_eventful();
        }
        None
    }

    /// Application calls that change what a connection sends (`open_subflow` and the like)
    /// may create connection IDs; call this after them so the endpoint routes to them.
    /// (Every `handle_*` and `poll_transmit` does it too.)
    pub fn refresh(&mut self, h: ConnHandle) {
        if let Some(idx) = self.slot_of(h) {
            self.apply_events(idx, self.now);
        }
    }
}
