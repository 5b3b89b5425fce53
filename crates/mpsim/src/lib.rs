//! # mpsim: a deterministic multipath network simulator
//!
//! Two [`mpcore::Endpoint`]s, a client and a server, joined by N paths, in virtual time. Each
//! path has, per direction, a one-way delay, a rate (serialisation at a bottleneck), a
//! drop-tail queue, random loss, duplication and reordering, and a script of events at given
//! times (outage on/off, loss, delay, rate, NAT rebinding). Every datagram leaves a line in the
//! path's packet log. The run is a function of the seed alone: the network's behaviour (which
//! datagram is lost, duplicated or delayed, and when each arrives) and, unless a configuration
//! sets its own `rng_seed`, both endpoints' randomness (key shares, connection IDs, nonces), so
//! the same seed gives the same datagrams, byte for byte.
//!
//! The core never reads a clock, so the simulator just calls `handle_datagram_in_place` and
//! `handle_timeout` at the virtual times where something happens: 60 simulated seconds of an
//! interactive workload take milliseconds.

pub mod apps;
pub mod day;
pub(crate) mod delivery;
pub mod pcap;
pub mod qlog;
pub mod radio;
mod rng;
pub mod scenarios;
mod sim_radio;
mod tcp;
pub mod trace;

pub use rng::{ms, Rng};

use delivery::Delivery;
use mpcore::{Carrier, Config, ConfigError, Endpoint, Iface, LocalPath, PathId, ServerIdentity, Time};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;

pub use oracle::radio::{Profile as RadioProfile, RrcState};
pub use radio::AirEntry;

/// One path's properties (both directions alike).
#[derive(Clone, Copy, Debug)]
pub struct PathConfig {
    /// The client's address on this path (its interface).
    pub client_addr: SocketAddr,
    pub iface: Iface,
    /// Client subflows on this path are backup subflows.
    pub backup: bool,
    /// One-way propagation delay.
    pub delay: Time,
    /// Bottleneck rate in bits per second (0: unlimited).
    pub rate_bps: u64,
    /// Drop-tail queue in bytes in front of the bottleneck (0: unlimited).
    pub queue_bytes: u64,
    pub loss: f64,
    pub duplicate: f64,
    /// Probability that a datagram is held back by `reorder_delay` (so later ones overtake it).
    pub reorder: f64,
    pub reorder_delay: Time,
    /// Extra one-way delay client to server (0 unless scripted: `PathEvent::UplinkDelay`).
    pub uplink_extra: Time,
    /// The client-to-server queue is in the client's own host (a qdisc on its interface, as
    /// with a rate-limited veth): when it is full the client's socket blocks, and the endpoint
    /// is told the path is not writable (`Endpoint::set_path_writable`) until half of it has
    /// drained, rather than the datagram being dropped.
    pub local_uplink_queue: bool,
    /// The largest datagram (UDP payload) the path carries, both directions; larger ones are
    /// dropped (`Verdict::TooBig`). 1472 by default: a 1500-byte MTU, IPv4.
    pub mtu: usize,
    /// The client's cellular radio on this path, whose states delay its datagrams
    /// ([`radio`]); `None`: a radio always connected (no promotion, no paging).
    pub radio: Option<RadioProfile>,
    /// The bottleneck's capacity, up and down, as traces of delivery opportunities
    /// ([`trace`]) instead of `rate_bps`; `queue_bytes` still bounds the queue (a local uplink
    /// queue, `local_uplink_queue`, is not modelled on a traced path).
    pub trace: Option<[&'static trace::Trace; 2]>,
}

impl PathConfig {
    /// A path with round-trip time `rtt_ms`, `mbps` Mbit/s and a queue of one
    /// bandwidth-delay product (the MultiMob emulation's setting).
    pub fn new(client_addr: SocketAddr, iface: Iface, rtt_ms: u64, mbps: u64) -> Self {
        let rate_bps = mbps * 1_000_000;
        let bdp = rate_bps / 8 * rtt_ms / 1000;
        Self {
            client_addr,
            iface,
            backup: false,
            delay: ms(rtt_ms) / 2,
            rate_bps,
            queue_bytes: bdp.max(3000),
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            reorder_delay: 0,
            uplink_extra: 0,
            local_uplink_queue: false,
            mtu: 1472,
            radio: None,
            trace: None,
        }
    }
}

/// A scripted change to a path.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PathEvent {
    /// Every datagram is dropped (both directions) until `Up`.
    Down,
    Up,
    Loss(f64),
    /// The one-way delay, both directions.
    Delay(Time),
    /// Extra delay on the client-to-server direction only (a bloated uplink queue).
    UplinkDelay(Time),
    RateBps(u64),
    /// The path's MTU (see `PathConfig::mtu`).
    Mtu(usize),
    /// A NAT in front of the client now maps it to this address.
    Rebind(SocketAddr),
    /// The phone's OS tells the client something of this path's link quality
    /// ([`Endpoint::path_hint`] on every local path over it).
    Hint(mpcore::LinkHint),
    /// A firewall on the path drops every UDP datagram, both directions, from now (`true`)
    /// until `Firewall(false)`; the interface stays up (a hotel network that blocks UDP). What
    /// was in flight still arrives.
    Firewall(bool),
}

/// Direction of a datagram on a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dir {
    /// Client to server.
    Up,
    /// Server to client.
    Down,
}

/// What became of a datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    Delivered,
    /// Dropped by random loss.
    Lost,
    /// Dropped because the path was down.
    Outage,
    /// Dropped by a firewall that blocks UDP (`PathEvent::Firewall`).
    Firewalled,
    /// Dropped: larger than the path's MTU.
    TooBig,
    /// Dropped by the full queue.
    QueueFull,
    /// A duplicate made by the path (also delivered).
    Duplicate,
    /// No route (no path leads to that address).
    NoRoute,
}

/// One line of a path's packet log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LogEntry {
    /// When the datagram entered the path.
    pub time: Time,
    pub dir: Dir,
    pub size: usize,
    pub verdict: Verdict,
}

#[derive(Debug)]
struct PathState {
    cfg: PathConfig,
    up: bool,
    /// A firewall drops UDP (`PathEvent::Firewall`).
    udp_blocked: bool,
    nat: Option<SocketAddr>,
    /// When each direction's bottleneck finishes serialising what it holds.
    busy_until: [Time; 2],
    /// Each direction's use of its trace, on a traced path.
    traced: [trace::TraceLink; 2],
    /// When the path's TCP carrier last delivered, each direction (`tcp`: in order).
    tcp_last: [Time; 2],
    log: Vec<LogEntry>,
    /// The client's local path whose socket this path's full local queue blocks.
    blocked: Option<PathId>,
    /// The client's radio, if the path models one.
    radio: Option<radio::PathRadio>,
    /// What crossed the client's radio (or interface, without a radio model).
    air: Vec<AirEntry>,
}

impl PathState {
    /// Bytes waiting in direction `d`'s queue at `now` (0 without a rate limit).
    fn backlog(&self, d: usize, now: Time) -> u64 {
        let busy = self.busy_until[d].saturating_sub(now);
        (u128::from(busy) * u128::from(self.cfg.rate_bps) / 8 / 1_000_000) as u64
    }

    /// When a blocked local queue has drained to half: the socket takes datagrams again.
    fn writable_at(&self) -> Time {
        let half = (self.cfg.queue_bytes / 2) as u128 * 8 * 1_000_000 / u128::from(self.cfg.rate_bps.max(1));
        self.busy_until[0].saturating_sub(half as Time)
    }
}

/// The simulated network and its two endpoints.
pub struct Sim {
    pub now: Time,
    pub client: Endpoint,
    pub server: Endpoint,
    pub server_addr: SocketAddr,
    rng: Rng,
    paths: Vec<PathState>,
    queue: BinaryHeap<Reverse<Delivery>>,
    script: Vec<(Time, usize, PathEvent)>,
    seq: u64,
    buf: Vec<u8>,
    /// Datagrams in flight when their path went down.
    pub swallowed: u64,
    /// Keep the per-path packet log (on by default).
    pub logging: bool,
    /// A hook that sees (and may replace) every datagram entering a path: an attacker's view.
    #[allow(clippy::type_complexity)]
    pub tap: Option<Box<dyn FnMut(Time, usize, Dir, &[u8])>>,
    /// A filter that drops the datagrams it says so of, as a loss, before the path's own
    /// losses (a test's scripted loss: one connection's datagrams, say).
    #[allow(clippy::type_complexity)]
    pub drop_if: Option<Box<dyn FnMut(Time, usize, Dir, &[u8]) -> bool>>,
    /// Datagrams to inject: (time, path, direction, source, bytes).
    injections: Vec<(Time, usize, Dir, SocketAddr, Vec<u8>)>,
    /// The simulated path (link) each of the client's local paths sends over, by `PathId`.
    links: Vec<usize>,
    /// The connections' event logs, when `Config::logging.qlog` is on for a side.
    pub qlogs: qlog::QlogStore,
    /// Every datagram entering a path (and every one injected), when set.
    pub capture: Option<pcap::Pcap>,
}

impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim").field("now", &self.now).field("paths", &self.paths.len()).finish_non_exhaustive()
    }
}

/// What an application driven by [`Sim::run`] wants next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Keep going; call me again after the next event, or at this time at the latest.
    Wake(Option<Time>),
    /// Stop the run.
    Done,
}

/// The server's address in every simulation.
pub fn server_addr() -> SocketAddr {
    SocketAddr::from(([10, 0, 0, 1], 5201))
}

/// The client's address on path `i`.
pub fn client_addr(i: usize) -> SocketAddr {
    SocketAddr::from(([10, 1 + i as u8, 0, 2], 40_000))
}

/// The two paths of the MultiMob emulation: WiFi (15 ms RTT) and cellular (25 ms), 10 Mbit/s,
/// queues of one bandwidth-delay product.
pub fn multimob_paths() -> Vec<PathConfig> {
    vec![PathConfig::new(client_addr(0), Iface::Wifi, 15, 10), PathConfig::new(client_addr(1), Iface::Cellular, 25, 10)]
}

/// [`multimob_paths`] with the cellular path a backup path, as MultiMob's phones have it.
pub fn multimob_backup_paths() -> Vec<PathConfig> {
    let mut p = multimob_paths();
    p[1].backup = true;
    p
}

/// The MultiMob client of the paper: [`Config::phone`] with this oracle, without keep-alives
/// (the paper's phones sent none).
pub fn multimob_client(oracle: oracle::Config) -> Config {
    Config::phone().with(|c| {
        c.transport.keep_alive = 0;
        c.multipath.oracle = oracle;
    })
}

/// The MultiMob server: [`Config::server`] (`last-received`, FAST_JOIN, MP_IDLE).
pub fn multimob_server() -> Config {
    Config::server()
}

impl Sim {
    /// A client and a server with these configurations over `paths`.
    ///
    /// As an app ships its server's key, the simulator provisions one: a server without an
    /// identity gets one drawn from the seed, and a client given no server key and not opted
    /// out of authentication is given that server's public key. A test of authentication sets
    /// either itself.
    pub fn new(seed: u64, mut client: Config, mut server: Config, paths: Vec<PathConfig>) -> Result<Self, ConfigError> {
        let mut seeds = Rng::new(seed ^ 0x6d70_7369_6d00);
        client.rng_seed.get_or_insert(seeds.next_u64());
        server.rng_seed.get_or_insert(seeds.next_u64());
        if server.server.identity.is_none() {
            let mut key = [0u8; 32];
            for chunk in key.chunks_mut(8) {
                chunk.copy_from_slice(&seeds.next_u64().to_le_bytes());
            }
            server.server.identity = Some(ServerIdentity::from_seed(&key).map_err(|e| ConfigError(e.to_string()))?);
        }
        if client.transport.server_keys.is_empty() && !client.transport.unauthenticated_server {
            client.transport.server_keys = server.server.identity.iter().map(|id| id.public_key()).collect();
        }
        let cpaths =
            paths.iter().map(|p| LocalPath { addr: p.client_addr, iface: p.iface, backup: p.backup }).collect();
        let spaths = vec![LocalPath { addr: server_addr(), iface: Iface::Wired, backup: false }];
        let npaths = paths.len();
        // Each radio's paging phase from the seed, apart from the network's own draws.
        let mut phases = Rng::new(seed ^ 0x7261_6469_6f00);
        let radios: Vec<Option<radio::PathRadio>> = paths
            .iter()
            .map(|p| p.radio.map(|r| radio::PathRadio::new(r, phases.range(0, r.paging_cycle.max(1) - 1))))
            .collect();
        Ok(Self {
            now: 0,
            client: Endpoint::new(client, cpaths, false)?,
            server: Endpoint::new(server, spaths, true)?,
            server_addr: server_addr(),
            rng: Rng::new(seed),
            paths: paths
                .into_iter()
                .zip(radios)
                .map(|(cfg, radio)| PathState {
                    cfg,
                    up: true,
                    udp_blocked: false,
                    nat: None,
                    busy_until: [0; 2],
                    traced: Default::default(),
                    tcp_last: [0; 2],
                    log: Vec::new(),
                    blocked: None,
                    radio,
                    air: Vec::new(),
                })
                .collect(),
            queue: BinaryHeap::new(),
            script: Vec::new(),
            seq: 0,
            swallowed: 0,
            buf: vec![0u8; 65_536],
            logging: true,
            tap: None,
            drop_if: None,
            injections: Vec::new(),
            links: (0..npaths).collect(),
            qlogs: qlog::QlogStore::default(),
            capture: None,
        })
    }

    /// Schedules a change of path `path` at time `at`.
    pub fn at(&mut self, at: Time, path: usize, ev: PathEvent) {
        self.script.push((at, path, ev));
        self.script.sort_by_key(|e| Reverse(e.0));
    }

    /// Changes path `path` now (what [`Sim::at`] does when its time comes), so that an
    /// application reacting in the same step (a driver reporting the link up) sees it.
    pub fn change(&mut self, path: usize, ev: PathEvent) {
        let p = &mut self.paths[path];
        match ev {
            PathEvent::Down => p.up = false,
            PathEvent::Up => p.up = true,
            PathEvent::Firewall(on) => p.udp_blocked = on,
            PathEvent::Loss(l) => p.cfg.loss = l,
            PathEvent::Delay(d) => p.cfg.delay = d,
            PathEvent::UplinkDelay(d) => p.cfg.uplink_extra = d,
            PathEvent::RateBps(r) => p.cfg.rate_bps = r,
            PathEvent::Mtu(m) => p.cfg.mtu = m,
            PathEvent::Rebind(a) => p.nat = Some(a),
            PathEvent::Hint(h) => {
                let now = self.now;
                for lp in (0..self.links.len()).filter(|&lp| self.links[lp] == path) {
                    self.client.path_hint(now, PathId(lp as u8), h);
                }
            }
        }
    }

    /// Schedules a datagram to enter path `path` at `at` in direction `dir`, from `from`.
    pub fn inject(&mut self, at: Time, path: usize, dir: Dir, from: SocketAddr, bytes: Vec<u8>) {
        self.injections.push((at, path, dir, from, bytes));
        self.injections.sort_by_key(|e| Reverse(e.0));
    }

    /// Adds a local path to the client (a new address, or a new interface) that sends over
    /// simulated path `link` from `lp.addr` ([`Endpoint::add_path`]).
    pub fn add_client_path(&mut self, link: usize, lp: LocalPath) -> PathId {
        assert!(link < self.paths.len(), "no simulated path {link}");
        let id = self.client.add_path(self.now, lp).expect("at most 255 local paths");
        let p = usize::from(id.0);
        if self.links.len() <= p {
            self.links.resize(p + 1, link);
        }
        self.links[p] = link;
        id
    }

    /// Removes one of the client's local paths ([`Endpoint::remove_path`]).
    pub fn remove_client_path(&mut self, path: PathId) {
        self.client.remove_path(self.now, path);
    }

    /// The simulated path the client's local path `path` sends over.
    pub fn link_of(&self, path: PathId) -> usize {
        self.links.get(usize::from(path.0)).copied().unwrap_or(usize::from(path.0))
    }

    /// The client's local path that receives what arrives over `link` for address `dst`:
    /// the one with that address, else (behind a NAT, or an injection) the first one on it.
    fn client_path_for(&self, link: usize, dst: Option<SocketAddr>) -> PathId {
        let on_link = |p: &usize| self.links[*p] == link && self.client.path(PathId(*p as u8)).is_some();
        let mut ps = (0..self.links.len()).filter(on_link);
        let by_addr =
            dst.and_then(|d| (0..self.links.len()).filter(on_link).find(|&p| self.client.paths()[p].addr == d));
        PathId(by_addr.or_else(|| ps.next()).unwrap_or(link) as u8)
    }

    /// Forgets every path's packet log (a long run keeps only what it still needs).
    pub fn clear_logs(&mut self) {
        for p in &mut self.paths {
            p.log.clear();
            p.air.clear();
        }
    }

    pub fn path_log(&self, path: usize) -> &[LogEntry] {
        &self.paths[path].log
    }

    pub fn path_count(&self) -> usize {
        self.paths.len()
    }

    /// Datagrams that entered path `path` in direction `dir` after `since`.
    pub fn packets_on(&self, path: usize, dir: Option<Dir>, since: Time) -> usize {
        self.paths[path].log.iter().filter(|e| e.time >= since && dir.is_none_or(|d| e.dir == d)).count()
    }

    /// Starts the client's connection on path 0.
    pub fn connect(&mut self) -> mpcore::ConnHandle {
        let now = self.now;
        let addr = self.server_addr;
        // Path 0 exists (the constructor was given at least one path, or this panics in tests).
        self.client.connect(now, PathId(0), addr).expect("path 0 exists")
    }

    fn route(
        &mut self,
        from_client: bool,
        path_hint: usize,
        (src, dst): (SocketAddr, SocketAddr),
        carrier: Carrier,
        bytes: Vec<u8>,
    ) {
        let now = self.now;
        let k = if from_client {
            path_hint
        } else {
            // Towards a NAT's public address, or one of the client's addresses.
            let natted = self.paths.iter().position(|p| p.nat == Some(dst));
            let own = (0..self.links.len())
                .find(|&p| {
                    self.client.path(PathId(p as u8)).is_some_and(|lp| lp.addr == dst)
                        && self.paths[self.links[p]].nat.is_none()
                })
                .map(|p| self.links[p]);
            match natted.or(own) {
                Some(k) => k,
                None => {
                    if self.logging && !self.paths.is_empty() {
                        self.paths[0].log.push(LogEntry {
                            time: now,
                            dir: Dir::Down,
                            size: bytes.len(),
                            verdict: Verdict::NoRoute,
                        });
                    }
                    return;
                }
            }
        };
        let bytes = if from_client {
            let mut held = Some(bytes);
            if !self.radio_uplink(k, (src, dst), carrier, &mut held) {
                return;
            }
            held.unwrap_or_default()
        } else {
            bytes
        };
        self.enter_path(from_client, k, (src, dst), carrier, bytes);
    }

    /// A datagram enters path `k` (towards the server if `from_client`): the tap, the
    /// path's verdict, the queue, the log.
    fn enter_path(
        &mut self,
        from_client: bool,
        k: usize,
        (src, dst): (SocketAddr, SocketAddr),
        carrier: Carrier,
        bytes: Vec<u8>,
    ) {
        let now = self.now;
        let dir = if from_client { Dir::Up } else { Dir::Down };
        if let Some(tap) = self.tap.as_mut() {
            tap(now, k, dir, &bytes);
        }
        if let (Some(c), Carrier::Udp) = (self.capture.as_mut(), carrier) {
            // The capture is of UDP (a TCP carrier's records would need a TCP stream).
            c.push(now, src, dst, &bytes);
        }
        let size = bytes.len();
        let d = if dir == Dir::Up { 0 } else { 1 };
        let verdict = if carrier == Carrier::Tcp {
            self.enter_tcp(from_client, k, (src, dst), bytes)
        } else {
            let p = &mut self.paths[k];
            if !p.up {
                Verdict::Outage
            } else if p.udp_blocked {
                Verdict::Firewalled
            } else if size > p.cfg.mtu {
                Verdict::TooBig
            } else if self.drop_if.as_mut().is_some_and(|f| f(now, k, dir, &bytes)) || self.rng.chance(p.cfg.loss) {
                // The filter first: the path's random loss is drawn for what it lets through.
                Verdict::Lost
            } else {
                let cfg = p.cfg;
                let done = match cfg.trace {
                    Some(tr) => p.traced[d].enqueue(tr[d], now, size, cfg.queue_bytes),
                    None if cfg.queue_bytes > 0
                        && cfg.rate_bps > 0
                        && p.backlog(d, now) + size as u64 > cfg.queue_bytes =>
                    {
                        None
                    }
                    None => {
                        let tx =
                            if cfg.rate_bps > 0 { (size as u64 * 8 * 1_000_000).div_ceil(cfg.rate_bps) } else { 0 };
                        p.busy_until[d] = p.busy_until[d].max(now) + tx;
                        Some(p.busy_until[d])
                    }
                };
                if let Some(done) = done {
                    let mut at = done + cfg.delay + if from_client { cfg.uplink_extra } else { 0 };
                    if self.rng.chance(cfg.reorder) {
                        at += cfg.reorder_delay;
                    }
                    let dup = self.rng.chance(cfg.duplicate);
                    let (to_server, from) = if from_client { (true, p.nat.unwrap_or(src)) } else { (false, src) };
                    let local = if from_client { PathId(0) } else { self.client_path_for(k, Some(dst)) };
                    if dup {
                        self.seq += 1;
                        let copy = Delivery {
                            at: at + 1,
                            seq: self.seq,
                            to_server,
                            path: k,
                            local,
                            from,
                            bytes: bytes.clone(),
                            carrier,
                        };
                        self.queue.push(Reverse(copy));
                    }
                    self.seq += 1;
                    self.queue.push(Reverse(Delivery {
                        at,
                        seq: self.seq,
                        to_server,
                        path: k,
                        local,
                        from,
                        bytes,
                        carrier,
                    }));
                    if dup {
                        Verdict::Duplicate
                    } else {
                        Verdict::Delivered
                    }
                } else {
                    Verdict::QueueFull
                }
            }
        };
        if self.logging {
            self.paths[k].log.push(LogEntry { time: now, dir, size, verdict });
        }
    }

    /// Sends everything both endpoints have to send now.
    fn flush(&mut self) {
        let now = self.now;
        let mut buf = std::mem::take(&mut self.buf);
        while let Some(t) = self.client.poll_transmit(now, &mut buf) {
            let src = self.client.paths()[usize::from(t.path.0)].addr;
            let k = self.link_of(t.path);
            self.route(true, k, (src, t.remote), t.carrier, buf[..t.len].to_vec());
            // A full local queue blocks the socket: no room for another full datagram.
            let p = &mut self.paths[k];
            if p.cfg.local_uplink_queue && p.cfg.rate_bps > 0 && p.backlog(0, now) + 1500 > p.cfg.queue_bytes {
                p.blocked = Some(t.path);
                self.client.set_path_writable(t.path, false);
            }
        }
        while let Some(t) = self.server.poll_transmit(now, &mut buf) {
            let src = self.server.paths()[usize::from(t.path.0)].addr;
            self.route(false, 0, (src, t.remote), t.carrier, buf[..t.len].to_vec());
        }
        self.buf = buf;
        self.qlogs.collect(&mut self.client, &mut self.server);
    }

    fn next_event(&mut self) -> Option<Time> {
        [
            self.queue.peek().map(|d| d.0.at),
            self.client.poll_timeout(),
            self.server.poll_timeout(),
            self.script.last().map(|e| e.0),
            self.injections.last().map(|e| e.0),
            self.paths.iter().filter_map(|p| p.blocked.map(|_| p.writable_at())).min(),
            self.radio_release_at(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Runs until `deadline`, calling `app` after every step (it drives the applications on
    /// both endpoints and returns when it next wants to be called, if at a set time).
    pub fn run_until(&mut self, deadline: Time, mut app: impl FnMut(&mut Sim) -> Option<Time>) {
        loop {
            self.flush();
            let wake = app(self);
            self.flush();
            let next = [self.next_event(), wake].into_iter().flatten().min();
            let Some(next) = next.filter(|&t| t <= deadline) else {
                self.now = self.now.max(deadline);
                return;
            };
            self.now = self.now.max(next);
            self.step_at();
        }
    }

    /// Runs until `app` returns [`Flow::Done`] or until `deadline`; returns whether the app
    /// finished. `app` is called after every step.
    pub fn run(&mut self, deadline: Time, mut app: impl FnMut(&mut Sim) -> Flow) -> bool {
        loop {
            self.flush();
            let wake = match app(self) {
                Flow::Done => {
                    self.flush();
                    return true;
                }
                Flow::Wake(t) => t,
            };
            self.flush();
            let next = [self.next_event(), wake].into_iter().flatten().min();
            let Some(next) = next.filter(|&t| t <= deadline) else {
                self.now = self.now.max(deadline);
                return false;
            };
            self.now = self.now.max(next);
            self.step_at();
        }
    }

    /// Hands a datagram to its endpoint, opened where it lies (as mpudp's driver does with its
    /// receive buffers).
    fn deliver(&mut self, mut d: Delivery) {
        let now = self.now;
        if d.to_server {
            self.server.handle_carried_in_place(now, PathId(0), d.from, d.carrier, &mut d.bytes);
        } else {
            self.client.handle_carried_in_place(now, d.local, d.from, d.carrier, &mut d.bytes);
        }
    }

    /// Applies everything due at `self.now`.
    fn step_at(&mut self) {
        let now = self.now;
        for p in &mut self.paths {
            if p.blocked.is_some() && p.writable_at() <= now {
                if let Some(path) = p.blocked.take() {
                    self.client.set_path_writable(path, true);
                }
            }
        }
        self.release_radios();
        while self.script.last().is_some_and(|e| e.0 <= now) {
            let Some((_, k, ev)) = self.script.pop() else { break };
            self.change(k, ev);
        }
        while self.injections.last().is_some_and(|e| e.0 <= now) {
            let Some((_, k, dir, from, bytes)) = self.injections.pop() else { break };
            self.seq += 1;
            let at = now + self.paths[k].cfg.delay;
            let local = self.client_path_for(k, None);
            let to_server = dir == Dir::Up;
            if let Some(c) = self.capture.as_mut() {
                let to = if to_server { self.server_addr } else { self.paths[k].cfg.client_addr };
                c.push(now, from, to, &bytes);
            }
            let carrier = Carrier::Udp;
            self.queue.push(Reverse(Delivery { at, seq: self.seq, to_server, path: k, local, from, bytes, carrier }));
        }
        while self.queue.peek().is_some_and(|d| d.0.at <= now) {
            let Some(Reverse(d)) = self.queue.pop() else { break };
            if !self.paths[d.path].up {
                // The outage also swallows what was already in flight.
                self.swallowed += 1;
                continue;
            }
            let d = if d.to_server { Some(d) } else { self.radio_downlink(d.path, d) };
            if let Some(d) = d {
                self.deliver(d);
            }
        }
        for (name, ep) in [("client", &mut self.client), ("server", &mut self.server)] {
            if ep.poll_timeout().is_some_and(|t| t <= now) {
                ep.handle_timeout(now);
                // The timer table's promise: what was due has been done, and no deadline at or
                // before `now` is left (else a driver would spin).
                let next = ep.poll_timeout();
                assert!(next.is_none_or(|t| t > now), "{name}: a timer is still due at {now} µs: {next:?}");
            }
        }
    }
}
