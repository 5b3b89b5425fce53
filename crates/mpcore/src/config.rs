//! Endpoint and connection configuration.

use crate::conn::cc::CongestionControl;
use crate::crypto::Suite;
use crate::identity::{PublicKey, ServerIdentity};
use scheduler::{AnyScheduler, Iface, Scheduler};
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
    /// declares the path bad (every `Config::oracle.period`, over all connections of the
    /// endpoint), the receive idle timer expires, or the primary subflow's first timeout (its
    /// tail loss probe) finds no other usable subflow; then joins (fast where negotiated) from
    /// the other paths. Once a regular subflow has been healthy again for
    /// `Config::fail_back_hold`, those subflows are closed and traffic fails back.
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

/// Everything an endpoint and its connections are tuned by. Times are in microseconds.
#[derive(Clone, Debug)]
pub struct Config {
    /// Largest UDP payload sent, and announced as accepted: the ceiling of each subflow's path
    /// MTU search (§10). A subflow sends at most 1200 bytes until a probe of a larger size was
    /// acknowledged. 1452 by default: a 1500-byte MTU under IPv6 (1472 would do under IPv4).
    pub max_datagram_size: usize,
    /// Datagrams above this size are dropped on receipt.
    pub max_receive_size: usize,
    /// RFC 6298 minimum RTO (Linux: 200 ms).
    pub min_rto: u64,
    /// Largest RTO, backoff included (RFC 6298 §2.5: at least 60 s).
    pub max_rto: u64,
    /// RTO before the first RTT sample (RFC 6298 §2.1: 1 s).
    pub initial_rto: u64,
    /// Longest delay before acknowledging an ack-eliciting packet.
    pub max_ack_delay: u64,
    /// Each subflow's congestion control (coupled: LIA, OLIA; or Reno, CUBIC; or LEDBAT for a
    /// background transfer).
    pub congestion: CongestionControl,
    /// A name from `scheduler::NAMES` (ignored when `custom_scheduler` is set).
    pub scheduler: String,
    /// An application's own scheduler: each connection gets one from this factory.
    pub custom_scheduler: Option<SchedulerFactory>,
    /// The `priority` scheduler's interface preference, most preferred first (empty: WiFi,
    /// wired, cellular). Kinds left out rank after the listed ones. A user on a metered WiFi
    /// and a flat-rate cellular plan says `[Cellular, Wifi]`.
    pub interface_order: Vec<Iface>,
    /// How a client opens subflows (a server follows the client's).
    pub path_manager: PathManager,
    /// The receive window the connection starts with (advertised beyond the DATA_ACK, and
    /// the transport parameter `initial_window`). It grows with a reader that keeps up with
    /// the sender, up to `max_recv_window` (PROTOCOL.md §6).
    pub recv_window: usize,
    /// The most the receive window grows to (Linux's receive-buffer autotuning, as
    /// `tcp_rmem`'s third value). At or below `recv_window`, the window does not grow. The
    /// buffer itself holds the bytes received and not yet read, in order or not: a
    /// connection whose reader keeps up and whose paths lose little, or that is idle, holds
    /// far less. As a TCP socket's, a peer that sends out of order on purpose can make a
    /// connection hold the whole window.
    pub max_recv_window: usize,
    /// Bytes the application may have written and not yet acknowledged.
    pub send_buffer: usize,
    /// The connection closes after this long without an authenticated packet (0: never). The
    /// timeout in force is the smaller of ours and the peer's (RFC 9000 §10.1; the one given
    /// when the other side gives none), and at least three retransmission timeouts.
    pub idle_timeout: u64,
    /// While data of ours awaits the peer's acknowledgement, the connection gives up on a peer
    /// that has answered nothing for this long (and for at least 15 RTOs: four backed-off
    /// retransmissions) and closes with `CloseReason::PeerUnresponsive` (PROTOCOL.md §7; 0:
    /// never, leaving it to the idle timeout). 10 s by default: Linux's TCP waits out
    /// `tcp_retries2` (15 retransmissions, about 15 minutes), QUIC its idle timeout; an
    /// interactive app wants to know in seconds, and a phone's radio wakes within 3.
    pub peer_timeout: u64,
    /// Client: after this long without sending anything the peer must acknowledge, a PING
    /// goes on the connection's primary subflow (0: never), so that the NAT bindings of its
    /// path stay open and the path's failure is noticed while idle (PROTOCOL.md §7). One
    /// subflow per connection, never an idle backup; at most half of either side's idle
    /// timeout. 15 s by default: below the 30 s that the shortest-lived UDP NAT bindings seen
    /// in carrier networks last, at 240 PINGs (and as many ACKs) per idle hour. Servers never
    /// send keep-alives.
    pub keep_alive: u64,
    /// Most subflows open at once (at most `scheduler::MAX_SUBFLOWS`).
    pub max_subflows: usize,
    /// Offer and accept FAST_JOIN (MultiMob).
    pub fast_join: bool,
    /// Offer and use MP_IDLE and the RTO frame (MultiMob).
    pub mp_idle: bool,
    /// AEAD suites offered, in preference order.
    pub suites: Vec<Suite>,
    /// A server that answers every INITIAL without a token with a RETRY.
    pub require_retry: bool,
    /// A server answers at most this many INITIALs per second with a HANDSHAKE (each costs
    /// two X25519 operations and a signature) before it asks the ones without a token for a
    /// RETRY (an HMAC, no key agreement): a flood of INITIALs, spoofed or replayed, then costs
    /// little, and a real client pays one round trip more. A token bucket holding a tenth of
    /// a second's worth (at least 16), so the key agreements never come in a long burst; 0
    /// turns the automatic RETRY off.
    pub retry_above: u32,
    /// INITIALs a server answers (with a RETRY or a HANDSHAKE) per second from one source
    /// address and port; beyond, they are shed, at the cost of a table lookup (a flood of
    /// replayed INITIALs from a few hundred addresses no longer fills the socket). 0: no limit.
    pub initials_per_source: u32,
    /// A server spread over several cores: which one this endpoint is. Its CIDs and tokens
    /// then name it, so that the kernel sends each datagram to it (`steering`; mpudp's
    /// `MpListener::bind_cores` sets it).
    pub steering: Option<crate::steering::Steering>,
    /// A server of a fleet behind a load balancer that reads the routing byte (PROTOCOL.md
    /// §2.1): its id, the fleet's ids, and the secret the fleet shares (its RETRY token,
    /// cookie and stateless reset keys, and its ticket key unless `resumption.secret` is set).
    /// The core number of `steering` sits beside the id in the same byte.
    pub fleet: Option<Fleet>,
    /// Server: addresses announced to every client once its connection is established
    /// (ADD_ADDR, RFC 8684 §3.4; address ids 128 and up, PROTOCOL.md §5.12), at most 64: its
    /// other addresses, an IPv6 one beside the IPv4 one the client connected to, so that a
    /// client path of the other family (IPv6-only cellular) can join. A server cannot know
    /// which of its addresses clients reach, so it announces only those it is told.
    pub announce: Vec<std::net::SocketAddr>,
    /// Bytes of the CIDs this endpoint issues that short headers carry (4 to 8; §3.2, transport
    /// parameter `cid_len`): the rest of each CID is zero. 4 by default: 4 bytes of every
    /// packet saved (0.3 % of a full one), and unique among up to millions of CIDs, as the
    /// endpoint checks each new CID against its routes and draws another on a collision
    /// (a core of a steered server has 2^24 values, the first byte naming the core).
    pub cid_len: u8,
    /// How long a cookie or retry token stays valid.
    pub cookie_lifetime: u64,
    /// Give up a handshake or a join after this many unanswered sends.
    pub max_handshake_attempts: u32,
    /// Client: when the first INITIAL has gone this long (µs) without an answer on the path
    /// the connection was opened on, the same INITIAL goes on every other local path that
    /// reaches the server, and each repeat goes on all of them (PROTOCOL.md §4.10). 250 ms
    /// by default: RFC 8305's Connection Attempt Delay, longer than the round trip of the
    /// paths this library targets (WiFi and LTE) and short beside the INITIAL's 1 s repeat
    /// timer. `None`: only that path (a network that drops UDP then fails the connection).
    pub other_paths_after: Option<u64>,
    /// Client: when the first INITIAL has gone this long (µs) without an answer on any path,
    /// it goes once over TCP on every path (PROTOCOL.md §4.11), and a JOIN over UDP
    /// unanswered this long is raced by a JOIN over TCP on its path. 1 s (the INITIAL's first
    /// repeat) by default: a waking LTE radio (0.26 s) and a slow path answer within it.
    /// `None`: UDP only. A server accepts TCP carriers whatever this says.
    pub tcp_after: Option<u64>,
    /// A server closes a subflow it has heard nothing on for this long while another subflow
    /// of the connection was heard more recently, after a PING it sent there went unanswered
    /// (PROTOCOL.md §7; 0: never). The connection's last subflow is left to `idle_timeout`.
    /// A `fullmesh` or `backup` client does the same and joins from that path again.
    pub subflow_idle_timeout: u64,
    /// For simulations and tests only: every key share, connection ID and nonce comes from a
    /// generator seeded with this value (see [`crate::rng`]), so a run is a function of its
    /// inputs. Never set it in production: the keys would be predictable.
    #[cfg(feature = "test-hooks")]
    pub rng_seed: Option<u64>,
    /// The oracle of the `multimob` path manager (period, thresholds).
    pub oracle: oracle::Config,
    /// `multimob`: a primary subflow's first timeout (its tail loss probe) with data pending
    /// and no other usable subflow declares its netpath bad at once, without waiting for the
    /// oracle's period. Off, only the oracle's statistics and the idle timer open subflows, as
    /// in MultiMob's kernel module.
    pub failover_on_timeout: bool,
    /// `multimob`: how long a regular subflow must stay healthy before the subflows opened for
    /// a failover are closed.
    pub fail_back_hold: u64,
    /// Client: when to wake the cellular radio before a failover needs it (issue 32; see
    /// [`crate::radio`]): on the oracle's suspicion of a regular path, or the app's hint.
    pub prewarm: crate::Prewarm,
    /// Server: the identity that signs every HANDSHAKE (PROTOCOL.md §4.6), so that clients
    /// given its public key can tell it from a man in the middle. `None`: HANDSHAKEs are
    /// unsigned and only clients that opted out of authentication accept them.
    pub identity: Option<ServerIdentity>,
    /// Client: the server public keys accepted (several while a server rotates its key). A
    /// HANDSHAKE not signed by one of them is refused and nothing is sent; when no valid one
    /// arrives before the INITIAL is due again, the connection ends with
    /// `CloseReason::ServerAuthFailed`.
    pub server_keys: Vec<PublicKey>,
    /// Client: connect without authenticating the server (an active attacker on the path can
    /// then read and change everything). `Endpoint::connect` refuses to start with neither
    /// this nor `server_keys`.
    pub unauthenticated_server: bool,
    /// Resumption tickets (PROTOCOL.md §4.7): a server that issues them seals one for every
    /// connection it accepts and sends it (NEW_TICKET).
    pub resumption: Resumption,
    /// Keep an event log per connection (qlog, PROTOCOL.md §13), taken with
    /// `Connection::take_qlog`. Off by default: then no log exists and logging costs a test of
    /// an `Option` per event site.
    pub qlog: bool,
    /// Deliberate protocol violations, for tests of the peer's defences (the `test-hooks`
    /// feature: tests and the simulator only).
    #[cfg(feature = "test-hooks")]
    pub faults: Faults,
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
        if let Some(f) = &self.custom_scheduler {
            return AnyScheduler::Custom(f.make());
        }
        match AnyScheduler::from_name(&self.scheduler) {
            Ok(AnyScheduler::Priority(_)) if !self.interface_order.is_empty() => {
                AnyScheduler::Priority(scheduler::Priority::new(&self.interface_order))
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

impl Default for Config {
    fn default() -> Self {
        Self {
            max_datagram_size: 1452,
            max_receive_size: crate::wire::packet::MAX_UDP_PAYLOAD,
            min_rto: 200_000,
            max_rto: 60_000_000,
            initial_rto: 1_000_000,
            max_ack_delay: 25_000,
            congestion: CongestionControl::Lia,
            scheduler: "lowest-rtt".into(),
            custom_scheduler: None,
            interface_order: Vec::new(),
            path_manager: PathManager::Fullmesh,
            recv_window: 1 << 20,
            max_recv_window: 8 << 20,
            send_buffer: 4 << 20,
            idle_timeout: 30_000_000,
            peer_timeout: 10_000_000,
            keep_alive: 15_000_000,
            max_subflows: 8,
            fast_join: false,
            mp_idle: false,
            suites: vec![Suite::Aes128Gcm, Suite::ChaCha20Poly1305],
            require_retry: false,
            retry_above: 2_000,
            initials_per_source: 64,
            steering: None,
            fleet: None,
            announce: Vec::new(),
            cid_len: 4,
            cookie_lifetime: 10_000_000,
            max_handshake_attempts: 6,
            other_paths_after: Some(250_000),
            tcp_after: Some(1_000_000),
            subflow_idle_timeout: 30_000_000,
            #[cfg(feature = "test-hooks")]
            rng_seed: None,
            oracle: oracle::Config::default(),
            failover_on_timeout: true,
            fail_back_hold: 3_000_000,
            prewarm: crate::Prewarm::DEFAULT,
            identity: None,
            server_keys: Vec::new(),
            unauthenticated_server: false,
            qlog: false,
            resumption: Resumption::default(),
            #[cfg(feature = "test-hooks")]
            faults: Faults::default(),
        }
    }
}

/// Resumption tickets (PROTOCOL.md §4.7).
#[derive(Clone, PartialEq, Eq)]
pub struct Resumption {
    /// Client: announce that it takes tickets (the `tickets` parameter, §8), so that a server
    /// that issues them sends one; `Endpoint::connect_resuming` offers one (§4.8).
    pub accept: bool,
    /// Server: seal a ticket for every connection accepted whose client takes them, and send
    /// it (NEW_TICKET, §5.19).
    pub issue: bool,
    /// How long a client may use a ticket, in seconds (2 h by default).
    pub lifetime_s: u32,
    /// The ticket key's epoch, in seconds: a ticket opens in the epoch it was sealed in and
    /// the next, so at least `lifetime_s` (2 h by default).
    pub rotation_s: u64,
    /// The secret the ticket keys derive from. Every core of a server and every server of a
    /// fleet that may see a client's next connection needs the same one; `None`: drawn when
    /// the endpoint is made, so only that endpoint opens its tickets.
    pub secret: Option<[u8; 32]>,
    /// Server: take the 0-RTT data of a resumed connection (PROTOCOL.md §4.9): the connection
    /// is created at its INITIAL, and the application reads the early bytes at once
    /// (`Connection::early_data` says how many of the stream's first bytes came so).
    pub early_data: bool,
    /// Server: the anti-replay record of 0-RTT INITIALs. Endpoints given clones of one
    /// configuration share it (the cores of `bind_cores` do); `None`: one per endpoint.
    pub strikes: Option<crate::StrikeRegister>,
}

impl Default for Resumption {
    fn default() -> Self {
        Self {
            accept: false,
            issue: false,
            lifetime_s: 7_200,
            rotation_s: 7_200,
            secret: None,
            early_data: false,
            strikes: None,
        }
    }
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
        Self {
            path_manager: PathManager::MultiMob,
            scheduler: "priority".into(),
            fast_join: true,
            mp_idle: true,
            idle_timeout: PHONE_IDLE_TIMEOUT,
            max_datagram_size: crate::wire::packet::MIN_INITIAL_SIZE,
            ..Self::default()
        }
    }

    /// A server for phones: the `last-received` scheduler (answers go on the subflow the
    /// client used last), FAST_JOIN and MP_IDLE accepted, an idle timeout of 2 minutes (as the
    /// phone's). Servers send no keep-alives. No peer timeout: a phone whose WiFi went away
    /// while an answer was on its way is silent until it joins from another network, which
    /// can take longer than 10 s (it learns of the loss itself, or sends its next request);
    /// the idle timeout bounds the wait, and it is the phone that must learn in seconds that
    /// its answer will not come (its own peer timeout).
    pub fn server() -> Self {
        Self {
            scheduler: "last-received".into(),
            fast_join: true,
            mp_idle: true,
            idle_timeout: PHONE_IDLE_TIMEOUT,
            peer_timeout: 0,
            ..Self::default()
        }
    }

    /// Checks the values against the protocol's limits.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |s: &str| Err(ConfigError(s.to_string()));
        let r = &self.resumption;
        if r.issue && (r.lifetime_s == 0 || u64::from(r.lifetime_s) > r.rotation_s) {
            return err("resumption: lifetime_s must be positive and at most rotation_s (a ticket opens in its epoch and the next)");
        }
        if self.max_datagram_size < crate::wire::packet::MIN_INITIAL_SIZE || self.max_datagram_size > 65_527 {
            return err("max_datagram_size must be between 1200 and 65527 bytes");
        }
        if self.announce.len() > 64 || self.announce.iter().any(|a| a.port() == 0 || a.ip().is_unspecified()) {
            return err("announce: at most 64 addresses, each with an address and a port");
        }
        if self.min_rto == 0 || self.min_rto > self.max_rto || self.initial_rto == 0 {
            return err("min_rto must be positive and at most max_rto; initial_rto positive");
        }
        if self.max_ack_delay >= 16_384_000 {
            return err("max_ack_delay must be below 16384 ms");
        }
        if self.recv_window < 4096 || self.send_buffer < 4096 {
            return err("recv_window and send_buffer must be at least 4096 bytes");
        }
        if self.recv_window.max(self.max_recv_window) > 1 << 30 {
            return err("recv_window and max_recv_window must be at most 1 GiB");
        }
        if self.max_subflows == 0 || self.max_subflows > scheduler::MAX_SUBFLOWS {
            return err("max_subflows must be between 1 and 64");
        }
        if self.suites.is_empty() || self.suites.len() > crate::wire::params::MAX_SUITES {
            return err("offer between 1 and 8 AEAD suites");
        }
        if !(crate::wire::Cid::MIN_LEN..=crate::wire::Cid::LEN).contains(&usize::from(self.cid_len)) {
            return err("cid_len must be between 4 and 8 bytes");
        }
        if self.fleet.is_some() && self.routing().is_none() {
            return err("fleet: the server id must be below the fleet's ids, and cores × ids at most 256");
        }
        if let Err(e) = scheduler::AnyScheduler::from_name(&self.scheduler) {
            return Err(ConfigError(e.to_string()));
        }
        Ok(())
    }

    /// A fresh CID for this endpoint to issue: random, naming its core on a steered server,
    /// `cid_len` bytes long. Unique only by chance: the endpoint checks it against its routes.
    pub(crate) fn issue_cid(&self, rng: &mut crate::rng::Rng) -> crate::wire::Cid {
        let c = rng.cid();
        self.routing().map_or(c, |s| s.tag(c)).truncated(usize::from(self.cid_len))
    }

    /// The routing byte's meaning for this server: its core among `steering`'s and its id
    /// among `fleet`'s; `None` for a server of one core outside a fleet (and for a client).
    pub fn routing(&self) -> Option<crate::steering::Steering> {
        match &self.fleet {
            None => self.steering,
            Some(f) => self.steering.or(crate::steering::Steering::new(0, 1))?.in_fleet(f.server, f.servers),
        }
    }

    /// Transport parameters announcing this configuration (§8).
    pub fn transport_params(&self) -> crate::wire::TransportParams {
        let mut p = crate::wire::TransportParams {
            max_datagram_size: self.max_datagram_size as u64,
            initial_window: self.recv_window as u64,
            max_ack_delay_ms: self.max_ack_delay / 1000,
            idle_timeout_ms: self.idle_timeout / 1000,
            fast_join: self.fast_join,
            max_subflows: self.max_subflows as u64,
            mp_idle: self.mp_idle,
            cid_len: self.cid_len,
            tickets: self.resumption.accept,
            ..Default::default()
        };
        let ids: Vec<u8> = self.suites.iter().map(|s| s.id()).collect();
        // Validated: 1..=8 suites.
        let _ = p.set_suites(&ids);
        p
    }
}
