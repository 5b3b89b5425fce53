//! An endpoint: the connections of one host (or one application), demultiplexed by connection
//! ID and join token, and the server's stateless answers to first packets (§4.1).

use crate::config::{Config, ConfigError};
use crate::conn::{random_cid, CloseReason, ConnStats, Connection, Event};
use crate::crypto::{self, encode_addr, CookieKey, KeyShare, Master, RetryTokenKey, Suite};
use crate::wire::packet::{self, Handshake, Retry};
use crate::wire::{Cid, Frame, Header, Packet, TransportParams, Writer};
use crate::{LocalPath, PathId, Time, Transmit};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::net::SocketAddr;

/// Datagrams dropped, by reason (§11: every one is counted; none changes state).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Drops {
    /// Larger than the receive limit.
    pub oversized: u64,
    /// Did not parse, or its frames did not.
    pub malformed: u64,
    /// A version we do not speak.
    pub version: u64,
    /// A short header naming no connection of ours.
    pub unknown_cid: u64,
    /// A JOIN naming no connection of ours.
    pub unknown_token: u64,
    /// AEAD authentication failed (forged or corrupted).
    pub decrypt_failed: u64,
    /// A packet number already received on that subflow (a replay or a network duplicate).
    pub duplicate: u64,
    /// A RETRY whose integrity tag is wrong.
    pub bad_retry: u64,
    /// An INITIAL whose retry token is invalid or expired.
    pub bad_token: u64,
    /// A CONFIRM whose cookie does not open, is expired, or names another address.
    pub bad_cookie: u64,
    /// A CONFIRM for a connection that already closed.
    pub cookie_replay: u64,
    /// A JOIN whose subflow number is already taken.
    pub replayed_join: u64,
    /// A join, ADD_ADDR or MP_FASTCLOSE whose HMAC or key is wrong.
    pub bad_hmac: u64,
    /// A join beyond the subflow limit, or of a kind not accepted.
    pub refused: u64,
    /// A valid packet in the wrong state (e.g. an INITIAL to a client).
    pub unexpected: u64,
    /// A frame contradicting the protocol (e.g. DATA_ACK of data never sent). Only that frame
    /// is ignored, the packet is processed, so this is not part of [`Drops::total`].
    pub protocol: u64,
}

impl Drops {
    pub fn total(&self) -> u64 {
        self.oversized
            + self.malformed
            + self.version
            + self.unknown_cid
            + self.unknown_token
            + self.decrypt_failed
            + self.duplicate
            + self.bad_retry
            + self.bad_token
            + self.bad_cookie
            + self.cookie_replay
            + self.replayed_join
            + self.bad_hmac
            + self.refused
            + self.unexpected
    }
}

/// Names one connection of an endpoint. Handles are never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnHandle(pub usize);

/// Why `connect` failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConnectError {
    /// The path id is not one of the endpoint's local paths.
    UnknownPath(PathId),
    /// The system has no randomness for a key share.
    Crypto,
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConnectError::UnknownPath(p) => write!(f, "local path {} is not configured on this endpoint", p.0),
            ConnectError::Crypto => f.write_str("no system randomness for a key share"),
        }
    }
}

impl std::error::Error for ConnectError {}

pub struct Endpoint {
    config: Config,
    paths: Vec<LocalPath>,
    server: bool,
    conns: Vec<Option<Box<Connection>>>,
    live: usize,
    by_cid: HashMap<Cid, usize>,
    by_token: HashMap<u32, usize>,
    /// CIDs of closed connections, until the cookie lifetime has passed (§4.4).
    closed_cids: HashMap<Cid, Time>,
    cookie_key: CookieKey,
    retry_key: RetryTokenKey,
    stateless: VecDeque<(PathId, SocketAddr, Vec<u8>)>,
    accept: VecDeque<ConnHandle>,
    events: VecDeque<(ConnHandle, Event)>,
    scratch: Vec<u8>,
    drops: Drops,
    rr: usize,
    /// The `multimob` path manager's oracle over every connection of this (client) endpoint.
    oracle: Option<oracle::Oracle>,
    oracle_actions: Vec<oracle::Action>,
    /// Per local path: reported down by the driver.
    path_down: Vec<bool>,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Endpoint").field("server", &self.server).field("live", &self.live).finish_non_exhaustive()
    }
}

fn ms(t: Time) -> u64 {
    t / 1000
}

impl Endpoint {
    /// An endpoint with these local paths. A `server` endpoint accepts connections; any
    /// endpoint may connect.
    pub fn new(config: Config, paths: Vec<LocalPath>, server: bool) -> Result<Self, ConfigError> {
        config.validate()?;
        if paths.is_empty() || paths.len() > 255 {
            return Err(ConfigError("an endpoint needs between 1 and 255 local paths".into()));
        }
        let cookie_key = CookieKey::generate(1).map_err(|_| ConfigError("no system randomness".into()))?;
        let retry_key = RetryTokenKey::generate().map_err(|_| ConfigError("no system randomness".into()))?;
        let scratch = vec![0u8; config.max_receive_size.max(packet::MIN_INITIAL_SIZE)];
        Ok(Self {
            path_down: vec![false; paths.len()],
            paths,
            server,
            conns: Vec::new(),
            live: 0,
            by_cid: HashMap::new(),
            by_token: HashMap::new(),
            closed_cids: HashMap::new(),
            cookie_key,
            retry_key,
            stateless: VecDeque::new(),
            accept: VecDeque::new(),
            events: VecDeque::new(),
            scratch,
            drops: Drops::default(),
            rr: 0,
            oracle: (config.path_manager == crate::PathManager::MultiMob && !server)
                .then(|| oracle::Oracle::new(config.oracle)),
            oracle_actions: Vec::new(),
            config,
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn paths(&self) -> &[LocalPath] {
        &self.paths
    }

    pub fn drops(&self) -> &Drops {
        &self.drops
    }

    /// Connections not yet forgotten.
    pub fn live_connections(&self) -> usize {
        self.live
    }

    /// Handles of the connections not yet forgotten.
    pub fn handles(&self) -> impl Iterator<Item = ConnHandle> + '_ {
        self.conns.iter().enumerate().filter(|(_, c)| c.is_some()).map(|(i, _)| ConnHandle(i))
    }

    pub fn conn(&self, h: ConnHandle) -> Option<&Connection> {
        self.conns.get(h.0)?.as_deref()
    }

    /// The connection, for the application calls (`write`, `read`, `close`, `open_subflow`...).
    pub fn conn_mut(&mut self, h: ConnHandle) -> Option<&mut Connection> {
        self.conns.get_mut(h.0)?.as_deref_mut()
    }

    pub fn stats(&self, h: ConnHandle) -> Option<ConnStats> {
        self.conn(h).map(|c| c.stats())
    }

    /// Starts a connection to `remote` over local path `path`.
    pub fn connect(&mut self, now: Time, path: PathId, remote: SocketAddr) -> Result<ConnHandle, ConnectError> {
        if usize::from(path.0) >= self.paths.len() {
            return Err(ConnectError::UnknownPath(path));
        }
        let mut cid = random_cid();
        while self.by_cid.contains_key(&cid) {
            cid = random_cid();
        }
        let c = Connection::new_client(now, &self.config, &self.paths, path, remote, cid)
            .map_err(|_| ConnectError::Crypto)?;
        if let Some(o) = self.oracle.as_mut() {
            o.start(now);
        }
        Ok(self.insert(c))
    }

    fn insert(&mut self, mut c: Connection) -> ConnHandle {
        for (p, _) in self.path_down.iter().enumerate().filter(|(_, d)| **d) {
            c.start_with_path_down(PathId(p as u8));
        }
        let idx = self.conns.len();
        self.conns.push(Some(Box::new(c)));
        self.live += 1;
        self.sync(idx, 0);
        ConnHandle(idx)
    }

    /// The next connection a peer opened to this (server) endpoint.
    pub fn accept(&mut self) -> Option<ConnHandle> {
        self.accept.pop_front()
    }

    /// Registers CIDs and tokens a connection created or retired.
    fn sync(&mut self, idx: usize, now: Time) {
        let Some(c) = self.conns.get_mut(idx).and_then(|c| c.as_deref_mut()) else { return };
        for (cid, add) in c.cid_changes.drain(..) {
            if add {
                self.by_cid.insert(cid, idx);
            } else {
                self.by_cid.remove(&cid);
            }
        }
        if let Some(t) = c.take_token_registration() {
            if self.by_token.get(&t).is_some_and(|&o| o != idx) {
                // §4.3: tokens must be unique among an endpoint's connections.
                c.fail(now, CloseReason::TokenCollision);
            } else {
                self.by_token.insert(t, idx);
            }
        }
    }

    /// Forgets a drained connection; its CIDs are remembered for the cookie lifetime.
    fn reap(&mut self, idx: usize, now: Time) {
        let drained = self.conns.get(idx).and_then(|c| c.as_deref()).is_some_and(|c| c.is_drained());
        if !drained {
            return;
        }
        let Some(mut c) = self.conns[idx].take() else { return };
        while let Some(e) = c.poll_event() {
            self.events.push_back((ConnHandle(idx), e));
        }
        self.live -= 1;
        let expiry = now + self.config.cookie_lifetime;
        self.by_cid.retain(|cid, i| {
            if *i == idx {
                self.closed_cids.insert(*cid, expiry);
                false
            } else {
                true
            }
        });
        self.by_token.retain(|_, i| *i != idx);
    }

    /// Logs a dropped datagram (`tracing`, target `mpcore`); the counter is bumped by the caller.
    fn trace_drop(why: &'static str, remote: SocketAddr, len: usize) {
        tracing::trace!(%remote, len, why, "datagram dropped");
    }

    /// Processes one received datagram. `path` is the local path it arrived on, `remote` its
    /// source address.
    pub fn handle_datagram(&mut self, now: Time, path: PathId, remote: SocketAddr, data: &[u8]) {
        if data.len() > self.config.max_receive_size || data.len() > self.scratch.len() {
            self.drops.oversized += 1;
            return;
        }
        if usize::from(path.0) >= self.paths.len() {
            self.drops.unexpected += 1;
            return;
        }
        let p = match Packet::parse(data) {
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
        self.scratch[..len].copy_from_slice(data);
        let idx = match p.header {
            Header::Short(s) => self.by_cid.get(&s.dcid).copied(),
            Header::Confirm(c) => match self.by_cid.get(&c.dcid) {
                Some(&i) => Some(i),
                None => {
                    self.server_confirm(now, path, remote, &p);
                    return;
                }
            },
            Header::Join(j) => match self.by_token.get(&j.token) {
                Some(&i) => Some(i),
                None => {
                    self.drops.unknown_token += 1;
                    return;
                }
            },
            Header::Initial(_) => {
                self.server_initial(now, path, remote, &p, len);
                return;
            }
            Header::Retry(r) => self.by_cid.get(&r.dcid).copied(),
            Header::Handshake(h) => self.by_cid.get(&h.dcid).copied(),
            Header::VersionNegotiation { dcid, versions, .. } => {
                if let Some(&i) = self.by_cid.get(&dcid) {
                    let ours = packet::versions(versions).any(|v| packet::SUPPORTED_VERSIONS.contains(&v));
                    if let Some(c) = self.conns[i].as_deref_mut() {
                        if !ours && !c.is_established() {
                            c.fail(now, CloseReason::VersionMismatch);
                        }
                    }
                } else {
                    self.drops.unknown_cid += 1;
                }
                return;
            }
            Header::UnsupportedVersion { ids, .. } => {
                self.drops.version += 1;
                if let (true, Some((dcid, scid))) = (self.server && len >= packet::MIN_INITIAL_SIZE, ids) {
                    let mut out = vec![0u8; 64];
                    let mut w = Writer::new(&mut out);
                    if packet::emit_version_negotiation(dcid, scid, &packet::SUPPORTED_VERSIONS, &mut w).is_ok() {
                        let n = w.len();
                        out.truncate(n);
                        self.stateless.push_back((path, remote, out));
                    }
                }
                return;
            }
        };
        let Some(idx) = idx else {
            self.drops.unknown_cid += 1;
            return;
        };
        let Some(c) = self.conns[idx].as_deref_mut() else {
            self.drops.unknown_cid += 1;
            return;
        };
        let scratch = &mut self.scratch[..len];
        match p.header {
            Header::Retry(_) => c.handle_retry(now, remote, &p, data, &mut self.drops),
            Header::Handshake(_) => c.handle_handshake(now, remote, &p, scratch, &mut self.drops),
            _ => c.handle_sealed(now, path, remote, &p, scratch, &mut self.drops),
        }
        self.sync(idx, now);
        self.reap(idx, now);
    }

    /// An INITIAL: answer statelessly with RETRY or HANDSHAKE (§4.1).
    fn server_initial(&mut self, now: Time, path: PathId, remote: SocketAddr, p: &Packet<'_>, len: usize) {
        let Header::Initial(i) = p.header else { return };
        if !self.server {
            self.drops.unexpected += 1;
            return;
        }
        if len < packet::MIN_INITIAL_SIZE {
            self.drops.malformed += 1;
            return;
        }
        if i.token.is_empty() && self.config.require_retry {
            let token = self.retry_key.issue(ms(now), &remote, &i.dcid.0);
            let mut out = vec![0u8; 128];
            let mut w = Writer::new(&mut out);
            let r = Retry { version: packet::VERSION_1, dcid: i.scid, scid: random_cid(), token: &token, tag: [0; 16] };
            let Ok(ul) = r.emit_untagged(&mut w) else { return };
            let tag = crypto::retry_integrity_tag(&i.dcid.0, w.written());
            if w.bytes(&tag).is_err() {
                return;
            }
            out.truncate(ul + tag.len());
            self.stateless.push_back((path, remote, out));
            return;
        }
        if !i.token.is_empty()
            && !self.retry_key.validate(i.token, ms(now), ms(self.config.cookie_lifetime), &remote, &i.dcid.0)
        {
            self.drops.bad_token += 1;
            return;
        }
        let Ok(params) = TransportParams::parse(i.params) else {
            self.drops.malformed += 1;
            return;
        };
        let Some(suite) =
            params.suites().iter().filter_map(|&id| Suite::from_id(id).ok()).find(|s| self.config.suites.contains(s))
        else {
            self.drops.refused += 1;
            return;
        };
        // Pick a server CID whose key gives a token unused here (§4.3).
        for _ in 0..4 {
            let Ok(share) = KeyShare::generate() else { return };
            let mut scid = random_cid();
            while self.by_cid.contains_key(&scid) || self.closed_cids.contains_key(&scid) {
                scid = random_cid();
            }
            let hs = Handshake {
                version: packet::VERSION_1,
                dcid: i.scid,
                scid,
                key_share: *share.public(),
                suite: suite.id(),
                pn: 0,
            };
            let mut hbuf = [0u8; Handshake::LEN];
            if hs.emit(&mut Writer::new(&mut hbuf)).is_err() {
                return;
            }
            let transcript = crypto::transcript_hash(&self.scratch[..p.header_len], &hbuf[..Handshake::TRANSCRIPT_LEN]);
            let Ok(shared) = share.agree(&i.key_share) else {
                self.drops.malformed += 1;
                return;
            };
            let master = Master::derive(&shared, &transcript);
            let secrets = master.secrets(suite);
            if self.by_token.contains_key(&crypto::token(secrets.key_server)) {
                continue;
            }
            // The cookie (§4.4): issued-at, client address, master, suite, client params.
            let mut plain = Vec::with_capacity(96 + i.params.len());
            plain.extend_from_slice(&ms(now).to_be_bytes());
            let mut a = [0u8; 19];
            let al = encode_addr(&remote, &mut a);
            plain.extend_from_slice(&a[..al]);
            plain.extend_from_slice(&master.0);
            plain.push(suite.id());
            plain.extend_from_slice(i.params);
            let mut aad = [0u8; 20];
            aad[..4].copy_from_slice(&packet::VERSION_1.to_be_bytes());
            aad[4..12].copy_from_slice(&scid.0);
            aad[12..].copy_from_slice(&i.scid.0);
            let mut cookie = vec![0u8; plain.len() + crypto::COOKIE_OVERHEAD];
            let Ok(cl) = self.cookie_key.seal(&aad, &plain, &mut cookie) else { return };
            let mut sp = [0u8; 128];
            let Ok(spl) = self.config.transport_params().emit(&mut Writer::new(&mut sp)) else { return };
            let mut out = vec![0u8; Handshake::LEN + 256 + cl];
            let mut w = Writer::new(&mut out);
            let Ok(hl) = hs.emit(&mut w) else { return };
            if Frame::TransportParams(&sp[..spl]).emit(&mut w).is_err()
                || Frame::Cookie(&cookie[..cl]).emit(&mut w).is_err()
            {
                return;
            }
            let pt = w.len() - hl;
            let Ok(n) = secrets.s2c.seal(0, 0, &mut out, hl, pt) else { return };
            out.truncate(n);
            // Anti-amplification (§10): the answer is far below three INITIALs.
            if n <= 3 * len {
                self.stateless.push_back((path, remote, out));
            }
            return;
        }
        self.drops.refused += 1;
    }

    /// A CONFIRM for no known connection: open the cookie and create the connection (§4.4).
    fn server_confirm(&mut self, now: Time, path: PathId, remote: SocketAddr, p: &Packet<'_>) {
        let Header::Confirm(c) = p.header else { return };
        if !self.server {
            self.drops.unknown_cid += 1;
            return;
        }
        if self.closed_cids.contains_key(&c.dcid) {
            self.drops.cookie_replay += 1;
            return;
        }
        let mut aad = [0u8; 20];
        aad[..4].copy_from_slice(&packet::VERSION_1.to_be_bytes());
        aad[4..12].copy_from_slice(&c.dcid.0);
        aad[12..].copy_from_slice(&c.scid.0);
        let mut out = [0u8; 512];
        let Ok(plain) = self.cookie_key.open(&aad, c.cookie, &mut out) else {
            self.drops.bad_cookie += 1;
            return;
        };
        let parsed = (|| {
            let issued = u64::from_be_bytes(plain.get(..8)?.try_into().ok()?);
            let alen = match plain.get(8)? {
                4 => 7,
                6 => 19,
                _ => return None,
            };
            let addr = plain.get(8..8 + alen)?;
            let at = 8 + alen;
            let master = Master(plain.get(at..at + 32)?.try_into().ok()?);
            let suite = Suite::from_id(*plain.get(at + 32)?).ok()?;
            let params = TransportParams::parse(plain.get(at + 33..)?).ok()?;
            Some((issued, addr, master, suite, params))
        })();
        let Some((issued, addr, master, suite, params)) = parsed else {
            self.drops.bad_cookie += 1;
            return;
        };
        let mut a = [0u8; 19];
        let al = encode_addr(&remote, &mut a);
        if &a[..al] != addr || ms(now).saturating_sub(issued) > ms(self.config.cookie_lifetime) || issued > ms(now) + 1
        {
            self.drops.bad_cookie += 1;
            return;
        }
        let conn = Connection::new_server(
            now,
            &self.config,
            &self.paths,
            path,
            remote,
            &master,
            suite,
            params,
            c.scid,
            c.dcid,
        );
        if conn.local_token().is_some_and(|t| self.by_token.contains_key(&t)) {
            self.drops.refused += 1;
            return;
        }
        // Keep the connection only if the CONFIRM's own payload authenticates.
        let mut conn = conn;
        let len = p.payload.len() + p.header_len;
        let before = self.drops.decrypt_failed + self.drops.malformed;
        conn.handle_sealed(now, path, remote, p, &mut self.scratch[..len], &mut self.drops);
        if self.drops.decrypt_failed + self.drops.malformed != before {
            return;
        }
        let h = self.insert(conn);
        tracing::debug!(%remote, handle = h.0, "connection accepted from a cookie");
        self.accept.push_back(h);
    }

    /// Runs every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Time) {
        for idx in 0..self.conns.len() {
            let due = self.conns[idx].as_deref().and_then(|c| c.poll_timeout()).is_some_and(|t| t <= now);
            if due {
                let mut alert = None;
                if let Some(c) = self.conns[idx].as_deref_mut() {
                    c.handle_timeout(now);
                    alert = c.take_alert();
                }
                self.sync(idx, now);
                if let Some(np) = alert {
                    self.declare_bad(now, np);
                }
                self.reap(idx, now);
            }
        }
        if !self.closed_cids.is_empty() {
            self.closed_cids.retain(|_, exp| *exp > now);
        }
        self.run_oracle(now);
    }

    /// The oracle's period (MultiMob §III-B): every subflow of every connection reports to
    /// its netpath, and each decision is applied to every connection on that netpath.
    fn run_oracle(&mut self, now: Time) {
        let Some(o) = self.oracle.as_mut() else { return };
        if o.poll_timeout().is_none_or(|t| now < t) {
            return;
        }
        for c in self.conns.iter_mut().flatten() {
            c.oracle_samples(&mut |np, s| o.record(np, s));
        }
        self.oracle_actions.clear();
        o.handle_timeout(now, &mut self.oracle_actions);
        for k in 0..self.oracle_actions.len() {
            let a = self.oracle_actions[k];
            tracing::debug!(?a, "oracle");
            self.apply_oracle(now, a);
        }
    }

    /// A connection found `np` failed: the oracle declares it bad for every connection on it.
    fn declare_bad(&mut self, now: Time, np: oracle::Netpath) {
        let Some(a) = self.oracle.as_mut().and_then(|o| o.declare_bad(np)) else { return };
        tracing::debug!(?a, "oracle: netpath declared bad by a timeout");
        self.apply_oracle(now, a);
    }

    fn apply_oracle(&mut self, now: Time, a: oracle::Action) {
        for idx in 0..self.conns.len() {
            if let Some(c) = self.conns[idx].as_deref_mut() {
                c.apply_oracle(now, a);
                self.sync(idx, now);
            }
        }
    }

    /// The oracle's view of a netpath (the `multimob` path manager's client only).
    pub fn oracle(&self) -> Option<&oracle::Oracle> {
        self.oracle.as_ref()
    }

    /// Tells every connection that local path `path`'s interface went down or came back
    /// (`Connection::path_down` / `path_up`); later connections start with the same view.
    pub fn set_path_up(&mut self, now: Time, path: PathId, up: bool) {
        let Some(d) = self.path_down.get_mut(usize::from(path.0)) else { return };
        *d = !up;
        for idx in 0..self.conns.len() {
            if let Some(c) = self.conns[idx].as_deref_mut() {
                if up {
                    c.path_up(now, path);
                } else {
                    c.path_down(now, path);
                }
                self.sync(idx, now);
                self.reap(idx, now);
            }
        }
    }

    /// The earliest time `handle_timeout` must be called.
    pub fn poll_timeout(&self) -> Option<Time> {
        let conns = self.conns.iter().filter_map(|c| c.as_deref()?.poll_timeout()).min();
        let oracle = self.oracle.as_ref().filter(|_| self.live > 0).and_then(|o| o.poll_timeout());
        match (conns, oracle) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The next datagram to send, written into `buf` (at least the configured datagram size).
    pub fn poll_transmit(&mut self, now: Time, buf: &mut [u8]) -> Option<Transmit> {
        if let Some((path, remote, d)) = self.stateless.pop_front() {
            if buf.len() >= d.len() {
                buf[..d.len()].copy_from_slice(&d);
                return Some(Transmit { path, remote, len: d.len() });
            }
        }
        let n = self.conns.len();
        for k in 0..n {
            let idx = (self.rr + k) % n;
            let Some(c) = self.conns[idx].as_deref_mut() else { continue };
            if let Some(t) = c.poll_transmit(now, buf) {
                self.sync(idx, now);
                self.rr = (idx + 1) % n;
                return Some(t);
            }
            self.sync(idx, now);
        }
        None
    }

    /// The next event of any connection.
    pub fn poll_event(&mut self) -> Option<(ConnHandle, Event)> {
        if let Some(e) = self.events.pop_front() {
            return Some(e);
        }
        for (idx, c) in self.conns.iter_mut().enumerate() {
            if let Some(c) = c.as_deref_mut() {
                if let Some(e) = c.poll_event() {
                    return Some((ConnHandle(idx), e));
                }
            }
        }
        None
    }

    /// Application calls that change what a connection sends (`open_subflow` and the like)
    /// may create connection IDs; call this after them so the endpoint routes to them.
    /// (Every `handle_*` and `poll_transmit` does it too.)
    pub fn refresh(&mut self, h: ConnHandle) {
        self.sync(h.0, 0);
    }
}
