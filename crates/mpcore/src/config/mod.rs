//! Endpoint and connection configuration.

mod parts;

pub use parts::{Logging, Multipath, Resumption, Server, Transport};
use scheduler::{AnyScheduler, Scheduler};
use std::fmt;
use std::sync::Arc;

/// A server of a fleet behind a stateless load balancer (PROTOCOL.md §2.1; issue 38).
#[derive(Clone, PartialEq, Eq)]
pub struct Fleet {
    /// This server's id, below `servers`.
    pub server: u8,
    /// How many ids the routing byte names: the balancer's map and every server of the fleet
    /// use the same number for the fleet's life (more ids than servers leaves room to add
    /// some; a drained or dead server's id is mapped to another server).
    pub servers: u8,
    /// The secret every server of the fleet shares: the keys that must open on any server
    /// derive from it (`crypto::fleet_key`, one label per `crypto::FleetKey`).
    pub secret: [u8; 32],
}

impl fmt::Debug for Fleet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fleet").field("server", &self.server).field("servers", &self.servers).finish_non_exhaustive()
    }
}

/// How a client opens additional subflows (the server never opens them on its own).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PathManager {
    /// A subflow on every local path as soon as the connection is up (make-before-break);
    /// paths marked backup get backup subflows.
    #[default]
    Fullmesh,
    /// A subflow on every local path, all but the first as backup subflows.
    Backup,
    /// Break-before-make: no additional subflow until the application (or an oracle) asks for
    /// one with `open_subflow`, or until no open subflow is left that is not potentially
    /// failed; then the client joins from every other local path (by fast join where both
    /// ends offer it).
    OnDemand,
    /// MultiMob's break-before-make (§III-B): no subflow on another path until the oracle
    /// declares the path bad (every `Config::multipath.oracle.period`, over all connections of the
    /// endpoint), the receive idle timer expires, or the primary subflow's first timeout (its
    /// tail loss probe) finds no other usable subflow; then joins (fast where negotiated) from
    /// the other paths. Once a regular subflow has been healthy again for
    /// `Config::multipath.fail_back_hold` (longer after losses since the oracle cleared it:
    /// PROTOCOL.md §7), those subflows are closed and traffic fails back.
    MultiMob,
}

impl PathManager {
    /// `fullmesh`, `backup`, `on-demand` (or `ondemand`), `multimob`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "fullmesh" => Some(Self::Fullmesh),
            "backup" => Some(Self::Backup),
            "ondemand" | "on-demand" => Some(Self::OnDemand),
            "multimob" => Some(Self::MultiMob),
            _ => None,
        }
    }
}

/// Everything an endpoint and its connections are tuned by, in parts: each part's fields are
/// public, with defaults and a builder method each. The presets are one call
/// ([`Config::phone`], [`Config::server`]); [`Config::with`] changes a few fields of one:
///
/// ```
/// use mpcore::{Config, PathManager};
/// let client = Config::phone().with(|c| {
///     c.transport.idle_timeout = 60_000_000;
///     c.multipath.path_manager = PathManager::OnDemand;
/// });
/// assert_eq!(client.multipath.scheduler, "priority");
/// // A part built on its own, from its defaults:
/// let lan = mpcore::config::Transport::default().idle_timeout(5_000_000).keep_alive(0);
/// let server = Config::server().with(|c| c.transport = lan);
/// assert_eq!(server.transport.keep_alive, 0);
/// ```
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Config {
    /// Each connection's transport: sizes, timers, windows, congestion control, suites and
    /// the server's authentication.
    pub transport: Transport,
    /// Multipath and MultiMob: scheduler, path manager, oracle, FAST_JOIN, failover.
    pub multipath: Multipath,
    /// Resumption tickets and 0-RTT data (PROTOCOL.md §4.7-4.9).
    pub resumption: Resumption,
    /// A server's identity, defences, cores, fleet and announced addresses.
    pub server: Server,
    /// What each connection records of itself (qlog).
    pub logging: Logging,
    /// For simulations and tests only: every key share, connection ID and nonce comes from a
    /// generator seeded with this value (see [`crate::rng`]), so a run is a function of its
    /// inputs. Never set it in production: the keys would be predictable.
    #[cfg(feature = "test-hooks")]
    pub rng_seed: Option<u64>,
    /// Deliberate protocol violations, for tests of the peer's defences (the `test-hooks`
    /// feature: tests and the simulator only).
    #[cfg(feature = "test-hooks")]
    pub faults: Faults,
}

impl Config {
    /// This configuration after `edit`: `Config::phone().with(|c| c.transport.keep_alive = 0)`.
    #[must_use]
    pub fn with(mut self, edit: impl FnOnce(&mut Self)) -> Self {
        edit(&mut self);
        self
    }
}

/// Makes a connection's scheduler (see [`scheduler::Scheduler`]): one instance per
/// connection, so a scheduler may keep per-connection state.
#[derive(Clone)]
pub struct SchedulerFactory(Arc<dyn Fn() -> Box<dyn Scheduler> + Send + Sync>);

impl SchedulerFactory {
    /// A factory calling `make` for each new connection.
    pub fn new(make: impl Fn() -> Box<dyn Scheduler> + Send + Sync + 'static) -> Self {
        Self(Arc::new(make))
    }

    /// A new scheduler.
    pub fn make(&self) -> Box<dyn Scheduler> {
        (self.0)()
    }
}

impl fmt::Debug for SchedulerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SchedulerFactory({})", self.make().name())
    }
}

impl Config {
    /// The scheduler a new connection runs: the custom one, else the named one (with
    /// `interface_order` for `priority`).
    pub fn make_scheduler(&self) -> AnyScheduler {
        if let Some(f) = &self.multipath.custom_scheduler {
            return AnyScheduler::Custom(f.make());
        }
        match AnyScheduler::from_name(&self.multipath.scheduler) {
            Ok(AnyScheduler::Priority(_)) if !self.multipath.interface_order.is_empty() => {
                AnyScheduler::Priority(scheduler::Priority::new(&self.multipath.interface_order))
            }
            Ok(s) => s,
            Err(_) => AnyScheduler::LowestRtt(scheduler::LowestRtt),
        }
    }
}

/// Ways a test can make an endpoint misbehave towards its peer (set through `Config::faults`,
/// the `test-hooks` feature).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Faults {
    /// Damage the HMAC of every FAST_JOIN_OUT and FAST_JOIN_IN sent.
    pub forge_fast_join_hmac: bool,
    /// Send a FAST_JOIN_OUT on every fast join, even for a DSN already sent in one.
    pub repeat_fast_join_dsn: bool,
    /// Report every connection's token to the endpoint as 0, so that every connection after
    /// the first collides (§4.3).
    pub same_token: bool,
    /// Give every subflow a connection joins or accepts the same CID, so that the
    /// connections' join CIDs collide at the endpoint (which renames them).
    pub same_join_cid: bool,
    /// Send every packet after the handshake in clear, with a zero tag and no header
    /// protection, and expect the peer's so: what the protection costs a transfer
    /// (`benches/net.sh`). Both ends must set it; the HANDSHAKE packet is still protected, the
    /// CONFIRM, JOIN and every later packet are not.
    pub no_encryption: bool,
}

impl fmt::Debug for Resumption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resumption")
            .field("accept", &self.accept)
            .field("issue", &self.issue)
            .field("lifetime_s", &self.lifetime_s)
            .field("rotation_s", &self.rotation_s)
            .field("secret", &self.secret.map(|_| ".."))
            .field("early_data", &self.early_data)
            .finish()
    }
}

/// A configuration that cannot work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// The idle timeout of the phone presets: 2 minutes, so that a connection left on a cellular
/// backup alone (WiFi lost) needs a keep-alive there only once a minute.
const PHONE_IDLE_TIMEOUT: u64 = 120_000_000;

impl Config {
    /// The seed of the endpoint's random generator (`None` outside the `test-hooks` feature).
    pub(crate) fn seed(&self) -> Option<u64> {
        #[cfg(feature = "test-hooks")]
        return self.rng_seed;
        #[cfg(not(feature = "test-hooks"))]
        return None;
    }

    /// The deliberate violations to commit (none outside the `test-hooks` feature).
    pub(crate) fn faults(&self) -> Faults {
        #[cfg(feature = "test-hooks")]
        return self.faults;
        #[cfg(not(feature = "test-hooks"))]
        return Faults::default();
    }
}

impl Config {
    /// A phone's client, as MultiMob tuned it: the `multimob` path manager (no subflow on
    /// another path until the oracle or a timeout says the current one degraded), the
    /// `priority` scheduler (regular subflows before backups, WiFi before cellular), FAST_JOIN
    /// and MP_IDLE offered, and keep-alives every 15 s on the primary subflow only (its NAT
    /// bindings; an unused cellular path stays silent), an idle timeout of 2 minutes (a
    /// cellular backup carrying the connection alone gets a keep-alive once a minute). Mark
    /// the cellular interface backup.
    ///
    /// Datagrams stay at 1200 bytes (`max_datagram_size`; no path MTU search above it, in
    /// either direction, since the server sends no more than the phone allows). An
    /// interactive message then takes more packets, and under heavy loss a lost one is
    /// repaired by the next one's acknowledgement rather than a tail probe: in the simulator's
    /// WiFi loss ramp (5 % > 30 % > 60 %, 20 seeds) the worst response passed 150 ms in 5 seeds
    /// with 1452-byte datagrams and in 1 with 1200. The header costs 2.4 % of a 1200-byte
    /// datagram against 2 % of a 1452-byte one; the larger size pays at gigabits per second,
    /// where the per-packet work counts, which a phone does not reach.
    pub fn phone() -> Self {
        Self::default().with(|c| {
            c.multipath.path_manager = PathManager::MultiMob;
            c.multipath.scheduler = "priority".into();
            c.multipath.fast_join = true;
            c.multipath.mp_idle = true;
            c.transport.idle_timeout = PHONE_IDLE_TIMEOUT;
            c.transport.max_datagram_size = crate::wire::packet::MIN_INITIAL_SIZE;
        })
    }

    /// A server for phones: the `last-received` scheduler (answers go on the subflow the
    /// client used last), FAST_JOIN and MP_IDLE accepted, an idle timeout of 2 minutes (as the
    /// phone's). Servers send no keep-alives. No peer timeout: a phone whose WiFi went away
    /// while an answer was on its way is silent until it joins from another network, which
    /// can take longer than 10 s (it learns of the loss itself, or sends its next request);
    /// the idle timeout bounds the wait, and it is the phone that must learn in seconds that
    /// its answer will not come (its own peer timeout).
    pub fn server() -> Self {
        Self::default().with(|c| {
            c.multipath.scheduler = "last-received".into();
            c.multipath.fast_join = true;
            c.multipath.mp_idle = true;
            c.transport.idle_timeout = PHONE_IDLE_TIMEOUT;
            c.transport.peer_timeout = 0;
        })
    }

    /// Checks the values against the protocol's limits.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |s: &str| Err(ConfigError(s.to_string()));
        let r = &self.resumption;
        if r.issue && (r.lifetime_s == 0 || u64::from(r.lifetime_s) > r.rotation_s) {
            return err("resumption: lifetime_s must be positive and at most rotation_s (a ticket opens in its epoch and the next)");
        }
        if self.transport.max_datagram_size < crate::wire::packet::MIN_INITIAL_SIZE
            || self.transport.max_datagram_size > 65_527
        {
            return err("max_datagram_size must be between 1200 and 65527 bytes");
        }
        if self.server.announce.len() > 64
            || self.server.announce.iter().any(|a| a.port() == 0 || a.ip().is_unspecified())
        {
            return err("announce: at most 64 addresses, each with an address and a port");
        }
        if self.transport.min_rto == 0
            || self.transport.min_rto > self.transport.max_rto
            || self.transport.initial_rto == 0
        {
            return err("min_rto must be positive and at most max_rto; initial_rto positive");
        }
        if self.transport.max_ack_delay >= 16_384_000 {
            return err("max_ack_delay must be below 16384 ms");
        }
        if self.transport.recv_window < 4096 || self.transport.send_buffer < 4096 {
            return err("recv_window and send_buffer must be at least 4096 bytes");
        }
        if self.transport.recv_window.max(self.transport.max_recv_window) > 1 << 30 {
            return err("recv_window and max_recv_window must be at most 1 GiB");
        }
        if self.multipath.max_subflows == 0 || self.multipath.max_subflows > scheduler::MAX_SUBFLOWS {
            return err("max_subflows must be between 1 and 64");
        }
        if self.transport.suites.is_empty() || self.transport.suites.len() > crate::wire::params::MAX_SUITES {
            return err("offer between 1 and 8 AEAD suites");
        }
        if !(crate::wire::Cid::MIN_LEN..=crate::wire::Cid::LEN).contains(&usize::from(self.transport.cid_len)) {
            return err("cid_len must be between 4 and 8 bytes");
        }
        if self.server.fleet.is_some() && self.routing().is_none() {
            return err("fleet: the server id must be below the fleet's ids, and cores × ids at most 256");
        }
        if let Err(e) = scheduler::AnyScheduler::from_name(&self.multipath.scheduler) {
            return Err(ConfigError(e.to_string()));
        }
        Ok(())
    }

    /// A fresh CID for this endpoint to issue: random, naming its core on a steered server,
    /// `cid_len` bytes long. Unique only by chance: the endpoint checks it against its routes.
    pub(crate) fn issue_cid(&self, rng: &mut crate::rng::Rng) -> crate::wire::Cid {
        let c = rng.cid();
        self.routing().map_or(c, |s| s.tag(c)).truncated(usize::from(self.transport.cid_len))
    }

    /// The routing byte's meaning for this server: its core among `steering`'s and its id
    /// among `fleet`'s; `None` for a server of one core outside a fleet (and for a client).
    pub fn routing(&self) -> Option<crate::steering::Steering> {
        match &self.server.fleet {
            None => self.server.steering,
            Some(f) => self.server.steering.or(crate::steering::Steering::new(0, 1))?.in_fleet(f.server, f.servers),
        }
    }

    /// Transport parameters announcing this configuration (§8).
    pub fn transport_params(&self) -> crate::wire::TransportParams {
        let mut p = crate::wire::TransportParams {
            max_datagram_size: self.transport.max_datagram_size as u64,
            initial_window: self.transport.recv_window as u64,
            max_ack_delay_ms: self.transport.max_ack_delay / 1000,
            idle_timeout_ms: self.transport.idle_timeout / 1000,
            fast_join: self.multipath.fast_join,
            max_subflows: self.multipath.max_subflows as u64,
            mp_idle: self.multipath.mp_idle,
            cid_len: self.transport.cid_len,
            tickets: self.resumption.accept,
            tcp_port: self.server.tcp_port.unwrap_or(0),
            // Every endpoint of this version acts on REMOVE_SUBFLOW (§5.21).
            remove_subflow: true,
            ..Default::default()
        };
        let ids: Vec<u8> = self.transport.suites.iter().map(|s| s.id()).collect();
        // Validated: 1..=8 suites.
        let _ = p.set_suites(&ids);
        p
    }
}
