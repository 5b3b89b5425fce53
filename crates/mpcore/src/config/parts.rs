//! The parts of a [`Config`](super::Config): each a struct of public fields with its
//! defaults and a builder method per field (`Transport::default().idle_timeout(5_000_000)`),
//! made by one macro so that a field, its default and its builder cannot disagree.

use super::{Fleet, PathManager, SchedulerFactory};
use crate::conn::cc::CongestionControl;
use crate::crypto::Suite;
use crate::identity::{PublicKey, ServerIdentity};
use scheduler::Iface;

/// Defines a part: the struct (every field public, documented), `Default` from the values
/// given, and for each field a builder method of the same name.
macro_rules! part {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$doc:meta])* $field:ident: $ty:ty = $default:expr, )*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[$doc])* pub $field: $ty, )*
        }

        impl Default for $name {
            fn default() -> Self {
                Self { $( $field: $default, )* }
            }
        }

        impl $name {
            $(
                $(#[$doc])*
                #[must_use]
                pub fn $field(mut self, value: $ty) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}

part! {
    /// The transport of each connection: datagram sizes, timers, windows and buffers, congestion
    /// control, the AEAD suites, and how a client authenticates its server. Times in µs.
    #[derive(Clone, Debug)]
    #[non_exhaustive]
    pub struct Transport {
        /// Largest UDP payload sent, and announced as accepted: the ceiling of each subflow's path
        /// MTU search (§10). A subflow sends at most 1200 bytes until a probe of a larger size was
        /// acknowledged. 1452 by default: a 1500-byte MTU under IPv6 (1472 would do under IPv4).
        max_datagram_size: usize = 1452,
        /// Datagrams above this size are dropped on receipt.
        max_receive_size: usize = crate::wire::packet::MAX_UDP_PAYLOAD,
        /// RFC 6298 minimum RTO (Linux: 200 ms).
        min_rto: u64 = 200_000,
        /// Largest RTO, backoff included (RFC 6298 §2.5: at least 60 s).
        max_rto: u64 = 60_000_000,
        /// RTO before the first RTT sample (RFC 6298 §2.1: 1 s).
        initial_rto: u64 = 1_000_000,
        /// Longest delay before acknowledging an ack-eliciting packet.
        max_ack_delay: u64 = 25_000,
        /// Each subflow's congestion control (coupled: LIA, OLIA; or Reno, CUBIC; or LEDBAT for a
        /// background transfer).
        congestion: CongestionControl = CongestionControl::Lia,
        /// The receive window the connection starts with (advertised beyond the DATA_ACK, and
        /// the transport parameter `initial_window`). It grows with a reader that keeps up with
        /// the sender, up to `max_recv_window` (PROTOCOL.md §6).
        recv_window: usize = 1 << 20,
        /// The most the receive window grows to (Linux's receive-buffer autotuning, as
        /// `tcp_rmem`'s third value). At or below `recv_window`, the window does not grow. The
        /// buffer itself holds the bytes received and not yet read, in order or not: a
        /// connection whose reader keeps up and whose paths lose little, or that is idle, holds
        /// far less. As a TCP socket's, a peer that sends out of order on purpose can make a
        /// connection hold the whole window.
        max_recv_window: usize = 8 << 20,
        /// Bytes the application may have written and not yet acknowledged.
        send_buffer: usize = 4 << 20,
        /// The connection closes after this long without an authenticated packet (0: never). The
        /// timeout in force is the smaller of ours and the peer's (RFC 9000 §10.1; the one given
        /// when the other side gives none), and at least three retransmission timeouts.
        idle_timeout: u64 = 30_000_000,
        /// While data of ours awaits the peer's acknowledgement, the connection gives up on a peer
        /// that has answered nothing for this long (and for at least 15 RTOs: four backed-off
        /// retransmissions) and closes with `CloseReason::PeerUnresponsive` (PROTOCOL.md §7; 0:
        /// never, leaving it to the idle timeout). 10 s by default: Linux's TCP waits out
        /// `tcp_retries2` (15 retransmissions, about 15 minutes), QUIC its idle timeout; an
        /// interactive app wants to know in seconds, and a phone's radio wakes within 3.
        peer_timeout: u64 = 10_000_000,
        /// Client: after this long without sending anything the peer must acknowledge, a PING
        /// goes on the connection's primary subflow (0: never), so that the NAT bindings of its
        /// path stay open and the path's failure is noticed while idle (PROTOCOL.md §7). One
        /// subflow per connection, never an idle backup; at most half of either side's idle
        /// timeout. 15 s by default: below the 30 s that the shortest-lived UDP NAT bindings seen
        /// in carrier networks last, at 240 PINGs (and as many ACKs) per idle hour. Servers never
        /// send keep-alives.
        keep_alive: u64 = 15_000_000,
        /// AEAD suites offered, in preference order.
        suites: Vec<Suite> = vec![Suite::Aes128Gcm, Suite::ChaCha20Poly1305],
        /// Bytes of the CIDs this endpoint issues that short headers carry (4 to 8; §3.2, transport
        /// parameter `cid_len`): the rest of each CID is zero. 4 by default: 4 bytes of every
        /// packet saved (0.3 % of a full one), and unique among up to millions of CIDs, as the
        /// endpoint checks each new CID against its routes and draws another on a collision
        /// (a core of a steered server has 2^24 values, the first byte naming the core).
        cid_len: u8 = 4,
        /// Give up a handshake or a join after this many unanswered sends.
        max_handshake_attempts: u32 = 6,
        /// Client: the server public keys accepted (several while a server rotates its key). A
        /// HANDSHAKE not signed by one of them is refused and nothing is sent; when no valid one
        /// arrives before the INITIAL is due again, the connection ends with
        /// `CloseReason::ServerAuthFailed`.
        server_keys: Vec<PublicKey> = Vec::new(),
        /// Client: connect without authenticating the server (an active attacker on the path can
        /// then read and change everything). `Endpoint::connect` refuses to start with neither
        /// this nor `server_keys`.
        unauthenticated_server: bool = false,
    }
}

part! {
    /// Multipath and MultiMob: the scheduler, the path manager and its oracle, FAST_JOIN and
    /// MP_IDLE, the first handshake over several paths and TCP, the failover's fail-back and the
    /// radio's pre-warming. Times in µs.
    #[derive(Clone, Debug)]
    #[non_exhaustive]
    pub struct Multipath {
        /// A name from `scheduler::NAMES` (ignored when `custom_scheduler` is set).
        scheduler: String = "lowest-rtt".into(),
        /// An application's own scheduler: each connection gets one from this factory.
        custom_scheduler: Option<SchedulerFactory> = None,
        /// The `priority` scheduler's interface preference, most preferred first (empty: WiFi,
        /// wired, cellular). Kinds left out rank after the listed ones. A user on a metered WiFi
        /// and a flat-rate cellular plan says `[Cellular, Wifi]`.
        interface_order: Vec<Iface> = Vec::new(),
        /// How a client opens subflows (a server follows the client's).
        path_manager: PathManager = PathManager::Fullmesh,
        /// Most subflows open at once (at most `scheduler::MAX_SUBFLOWS`).
        max_subflows: usize = 8,
        /// Offer and accept FAST_JOIN (MultiMob).
        fast_join: bool = false,
        /// Offer and use MP_IDLE and the RTO frame (MultiMob).
        mp_idle: bool = false,
        /// Client: when the first INITIAL has gone this long (µs) without an answer on the path
        /// the connection was opened on, the same INITIAL goes on every other local path that
        /// reaches the server, and each repeat goes on all of them (PROTOCOL.md §4.10). 250 ms
        /// by default: RFC 8305's Connection Attempt Delay, longer than the round trip of the
        /// paths this library targets (WiFi and LTE) and short beside the INITIAL's 1 s repeat
        /// timer. `None`: only that path (a network that drops UDP then fails the connection).
        other_paths_after: Option<u64> = Some(250_000),
        /// Client: when the first INITIAL has gone this long (µs) without an answer on any path,
        /// it goes once over TCP on every path (PROTOCOL.md §4.11), and a JOIN over UDP
        /// unanswered this long is raced by a JOIN over TCP on its path. 1 s (the INITIAL's first
        /// repeat) by default: a waking LTE radio (0.26 s) and a slow path answer within it.
        /// `None`: UDP only. A server accepts TCP carriers whatever this says.
        tcp_after: Option<u64> = Some(1_000_000),
        /// A server closes a subflow it has heard nothing on for this long while another subflow
        /// of the connection was heard more recently, after a PING it sent there went unanswered
        /// (PROTOCOL.md §7; 0: never). The connection's last subflow is left to `idle_timeout`.
        /// A `fullmesh` or `backup` client does the same and joins from that path again.
        subflow_idle_timeout: u64 = 30_000_000,
        /// The oracle of the `multimob` path manager (period, thresholds).
        oracle: oracle::Config = oracle::Config::default(),
        /// `multimob`: a primary subflow's first timeout (its tail loss probe) with data pending
        /// and no other usable subflow declares its netpath bad at once, without waiting for the
        /// oracle's period. Off, only the oracle's statistics and the idle timer open subflows, as
        /// in MultiMob's kernel module.
        failover_on_timeout: bool = true,
        /// `multimob`: how long a regular subflow must stay healthy before the subflows opened for
        /// a failover are closed; doubled, up to 8 times this, by each loss of a subflow the
        /// oracle cleared during the failover, of a packet sent after the clear (PROTOCOL.md §7).
        fail_back_hold: u64 = 3_000_000,
        /// Client: when to wake the cellular radio before a failover needs it (issue 32; see
        /// [`crate::radio`]): on the oracle's suspicion of a regular path, or the app's hint.
        prewarm: crate::Prewarm = crate::Prewarm::DEFAULT,
    }
}

part! {
    /// A server's own settings: its identity, its defences against floods of INITIALs (RETRY,
    /// per-source limits, cookies), the cores it is spread over, the fleet it belongs to and the
    /// addresses it announces. A client ignores them. Times in µs.
    #[derive(Clone, Debug)]
    #[non_exhaustive]
    pub struct Server {
        /// Server: the identity that signs every HANDSHAKE (PROTOCOL.md §4.6), so that clients
        /// given its public key can tell it from a man in the middle. `None`: HANDSHAKEs are
        /// unsigned and only clients that opted out of authentication accept them.
        identity: Option<ServerIdentity> = None,
        /// A server that answers every INITIAL without a token with a RETRY.
        require_retry: bool = false,
        /// A server answers at most this many INITIALs per second with a HANDSHAKE (each costs
        /// two X25519 operations and a signature) before it asks the ones without a token for a
        /// RETRY (an HMAC, no key agreement): a flood of INITIALs, spoofed or replayed, then costs
        /// little, and a real client pays one round trip more. A token bucket holding a tenth of
        /// a second's worth (at least 16), so the key agreements never come in a long burst; 0
        /// turns the automatic RETRY off.
        retry_above: u32 = 2_000,
        /// INITIALs a server answers (with a RETRY or a HANDSHAKE) per second from one source
        /// address and port; beyond, they are shed, at the cost of a table lookup (a flood of
        /// replayed INITIALs from a few hundred addresses no longer fills the socket). 0: no limit.
        initials_per_source: u32 = 64,
        /// How long a cookie or retry token stays valid.
        cookie_lifetime: u64 = 10_000_000,
        /// A server spread over several cores: which one this endpoint is. Its CIDs and tokens
        /// then name it, so that the kernel sends each datagram to it (`steering`; mpudp's
        /// `MpListener::bind_cores` sets it).
        steering: Option<crate::steering::Steering> = None,
        /// A server of a fleet behind a load balancer that reads the routing byte (PROTOCOL.md
        /// §2.1): its id, the fleet's ids, and the secret the fleet shares (its RETRY token,
        /// cookie and stateless reset keys, and its ticket key unless `resumption.secret` is set).
        /// The core number of `steering` sits beside the id in the same byte.
        fleet: Option<Fleet> = None,
        /// Server: addresses announced to every client once its connection is established
        /// (ADD_ADDR, RFC 8684 §3.4; address ids 128 and up, PROTOCOL.md §5.12), at most 64: its
        /// other addresses, an IPv6 one beside the IPv4 one the client connected to, so that a
        /// client path of the other family (IPv6-only cellular) can join. A server cannot know
        /// which of its addresses clients reach, so it announces only those it is told.
        announce: Vec<std::net::SocketAddr> = Vec::new(),
        /// A server of a fleet: the port at the balancer that leads to this server alone, which
        /// it names to its clients (the `tcp_port` parameter, PROTOCOL.md §8) for their TCP
        /// carriers (§4.11): the balancer cannot read a TCP stream's routing byte, so it
        /// steers a carrier by the port it was opened to. The server listens there, and on the
        /// fleet's other servers' ports (`tcp_port - id + k`): the balancer maps a dead server's
        /// port to a live one, whose stateless resets then reach that server's clients.
        tcp_port: Option<u16> = None,
    }
}

part! {
    /// What each connection records of itself.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    #[non_exhaustive]
    pub struct Logging {
        /// Keep an event log per connection (qlog, PROTOCOL.md §13), taken with
        /// `Connection::take_qlog`. Off by default: then no log exists and logging costs a test of
        /// an `Option` per event site.
        qlog: bool = false,
    }
}

part! {
    /// Resumption tickets and 0-RTT data (PROTOCOL.md §4.7-4.9).
    #[derive(Clone, PartialEq, Eq)]
    pub struct Resumption {
        /// Client: announce that it takes tickets (the `tickets` parameter, §8), so that a server
        /// that issues them sends one; `Endpoint::connect_resuming` offers one (§4.8).
        accept: bool = false,
        /// Server: seal a ticket for every connection accepted whose client takes them, and send
        /// it (NEW_TICKET, §5.19).
        issue: bool = false,
        /// How long a client may use a ticket, in seconds (2 h by default).
        lifetime_s: u32 = 7_200,
        /// The ticket key's epoch, in seconds: a ticket opens in the epoch it was sealed in and
        /// the next, so at least `lifetime_s` (2 h by default).
        rotation_s: u64 = 7_200,
        /// The secret the ticket keys derive from. Every core of a server and every server of a
        /// fleet that may see a client's next connection needs the same one; `None`: drawn when
        /// the endpoint is made, so only that endpoint opens its tickets.
        secret: Option<[u8; 32]> = None,
        /// Server: take the 0-RTT data of a resumed connection (PROTOCOL.md §4.9): the connection
        /// is created at its INITIAL, and the application reads the early bytes at once
        /// (`Connection::early_data` says how many of the stream's first bytes came so).
        early_data: bool = false,
        /// Server: the anti-replay record of 0-RTT INITIALs. Endpoints given clones of one
        /// configuration share it (the cores of `bind_cores` do); `None`: one per endpoint.
        strikes: Option<crate::StrikeRegister> = None,
    }
}
