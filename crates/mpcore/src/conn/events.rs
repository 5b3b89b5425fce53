//! What a connection tells the application ([`Event`], [`ConnStats`]) and its endpoint
//! ([`EndpointEvent`]).

use crate::drops::DropReason;
use crate::wire::Cid;
use crate::PathId;
use std::net::SocketAddr;

pub use super::subflow::{SubflowCounters, SubflowStats};

/// Which end of the first handshake this endpoint was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// Sent the INITIAL (opens subflows).
    Client,
    /// Answered it.
    Server,
}

impl Side {
    /// Whether subflow number `id` is one the peer opened (bit 31, PROTOCOL.md §2: 0 for the
    /// client's subflows, 1 for the server's).
    pub(crate) fn peer_opened(self, id: u32) -> bool {
        (id & 0x8000_0000 != 0) == (self == Side::Client)
    }
}

/// Why a connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// Both DATA_FINs sent and acknowledged.
    Graceful,
    /// This application aborted (MP_FASTCLOSE sent).
    Aborted,
    /// The peer sent MP_FASTCLOSE.
    PeerAborted,
    /// Nothing authenticated arrived for the idle timeout.
    IdleTimeout,
    /// The peer answered nothing while our data awaited its acknowledgement, for
    /// `Config::transport.peer_timeout` (PROTOCOL.md §7): it is gone, or every path to it is.
    PeerUnresponsive {
        /// Retransmission timeouts and tail loss probes that went unanswered, on every path.
        probes: u32,
        /// How long the peer had been silent, in milliseconds.
        silent_ms: u64,
        /// The local paths the connection had open subflows on (bit `n`: `PathId(n)`, for
        /// paths below 64).
        paths: u64,
    },
    /// The first handshake got no answer.
    HandshakeTimeout,
    /// The server's HANDSHAKE was not signed by a key the client was given (PROTOCOL.md §4.6):
    /// a man in the middle, or a server with another key. Nothing was sent to it.
    ServerAuthFailed,
    /// The server speaks none of our versions.
    VersionMismatch,
    /// Our token collided with another connection's (§4.3); connect again.
    TokenCollision,
    /// Every subflow closed, and the connection has no idle timeout to wait for a new one.
    NoSubflow,
    /// The server answered with a stateless reset on every subflow (PROTOCOL.md §3.4): it
    /// does not know the connection (it restarted, or the fleet's balancer sent the packets
    /// to another server because the connection's is gone). Connect again.
    Reset,
}

impl std::fmt::Display for CloseReason {
    /// What happened, in words (the `Debug` form is the variant's name).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            CloseReason::Graceful => write!(f, "closed by both ends"),
            CloseReason::Aborted => write!(f, "aborted here"),
            CloseReason::PeerAborted => write!(f, "aborted by the peer"),
            CloseReason::IdleTimeout => write!(f, "nothing heard from the peer for the idle timeout"),
            CloseReason::PeerUnresponsive { probes, silent_ms, paths } => {
                write!(
                    f,
                    "the peer stopped answering: {probes} probes unanswered over {:.1} s",
                    silent_ms as f64 / 1000.0
                )?;
                let list: Vec<String> = (0..64).filter(|p| paths & (1u64 << p) != 0).map(|p| p.to_string()).collect();
                match list.len() {
                    0 => Ok(()),
                    1 => write!(f, " on path {}", list[0]),
                    _ => write!(f, " on paths {}", list.join(", ")),
                }
            }
            CloseReason::HandshakeTimeout => write!(f, "the first handshake got no answer"),
            CloseReason::ServerAuthFailed => write!(f, "the server's key is not the one expected"),
            CloseReason::VersionMismatch => write!(f, "the server speaks none of our versions"),
            CloseReason::TokenCollision => write!(f, "token collision (connect again)"),
            CloseReason::NoSubflow => write!(f, "every subflow closed"),
            CloseReason::Reset => {
                write!(f, "the server does not know the connection any more (stateless reset): connect again")
            }
        }
    }
}

/// Something the application may want to know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The first handshake completed.
    Connected,
    /// A subflow completed its join (or the first handshake, for subflow 0).
    SubflowEstablished {
        /// The subflow's number.
        id: u32,
        /// The local path it runs on.
        path: PathId,
        /// It is a backup subflow.
        backup: bool,
    },
    /// The subflow's retransmission timer expired (or its tail probe went unanswered while
    /// another subflow works): potentially failed.
    SubflowFailed {
        /// The subflow's number.
        id: u32,
    },
    /// A potentially failed subflow got a new acknowledgement.
    SubflowRecovered {
        /// The subflow's number.
        id: u32,
    },
    /// A subflow closed (by either end, or reclaimed after an idle timeout).
    SubflowClosed {
        /// The subflow's number.
        id: u32,
        /// SUBFLOW_RESET's reason code (PROTOCOL.md §5.16).
        reason: u8,
    },
    /// The peer's address on a subflow changed (NAT rebinding).
    SubflowMigrated {
        /// The subflow's number.
        id: u32,
        /// The peer's new address.
        remote: SocketAddr,
    },
    /// The peer announced an address (ADD_ADDR with a valid HMAC).
    AddressAnnounced {
        /// Its address id.
        addr_id: u8,
        /// The address.
        addr: SocketAddr,
    },
    /// New bytes can be read.
    Readable,
    /// The peer's DATA_FIN arrived in order: after the bytes still buffered, `read` returns 0.
    Finished,
    /// The `multimob` oracle's decision for a path this connection uses (bad: failed over;
    /// high RTO: backup subflows opened; clear: the flags are lifted).
    Verdict {
        /// The local path judged.
        path: PathId,
        /// The decision.
        verdict: oracle::Verdict,
    },
    /// Client: the server gave a resumption ticket (PROTOCOL.md §4.7), which
    /// `Endpoint::take_ticket` hands out.
    TicketReceived,
    /// `multimob`: a regular subflow was healthy for the hold time; the failover subflows are
    /// being closed and traffic is back on the preferred path.
    FailBack,
    /// The connection ended.
    Closed {
        /// Why.
        reason: CloseReason,
    },
    /// The endpoint forgot the connection (its drain period is over): every connection's last
    /// event. Its handle names nothing from now on; an application's own table of connections
    /// frees its entry here.
    Forgotten,
}

impl Event {
    /// The subflow it concerns, if any.
    pub fn subflow(&self) -> Option<u32> {
        match *self {
            Event::SubflowEstablished { id, .. }
            | Event::SubflowFailed { id }
            | Event::SubflowRecovered { id }
            | Event::SubflowClosed { id, .. }
            | Event::SubflowMigrated { id, .. } => Some(id),
            _ => None,
        }
    }
}

/// Why a write failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteError {
    /// The send buffer is full; write again after data is acknowledged.
    Blocked,
    /// `close` was called: no more data may be written.
    Finished,
    /// The connection ended.
    Closed(CloseReason),
}

/// Why a read returned nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// Nothing to read yet.
    Blocked,
    /// The connection ended (after every byte was read).
    Closed(CloseReason),
}

/// Connection-wide counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnCounters {
    /// Bytes the application wrote.
    pub bytes_written: u64,
    /// Bytes the application read.
    pub bytes_read: u64,
    /// Data bytes acknowledged by DATA_ACK.
    pub bytes_acked: u64,
    /// Data bytes sent again on another subflow than the one that first carried them.
    pub bytes_reinjected: u64,
    /// Ranges queued for reinjection.
    pub reinjections: u64,
    /// Segments not stored because they would have opened more out-of-order ranges than the
    /// receive buffer tracks.
    pub reassembly_refused: u64,
    /// Client: 1 if the first handshake came through another local path than the one the
    /// connection was opened on, or over TCP (its INITIAL went unanswered over UDP there,
    /// PROTOCOL.md §4.10-4.11).
    pub handshakes_elsewhere: u64,
}

/// A snapshot of a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnStats {
    /// Client or server.
    pub side: Side,
    /// The first handshake completed and the connection is not closed.
    pub established: bool,
    /// Why it ended, once it did.
    pub closed: Option<CloseReason>,
    /// Connection-wide counters.
    pub counters: ConnCounters,
    /// Every open subflow, and the last closed ones' final statistics.
    pub subflows: Vec<SubflowStats>,
    /// The scheduler's name (a custom scheduler's own).
    pub scheduler: String,
    /// Opened with a resumption ticket (PROTOCOL.md §4.8).
    pub resumed: bool,
    /// The stream's first bytes that went as 0-RTT data and were taken (§4.9): on a server,
    /// those it received early (replayable by whoever captured them); on a client, those it
    /// sent early that the server took.
    pub early_bytes: u64,
    /// Our receive window now: `Config::transport.recv_window` at first, grown with the reader up to
    /// `Config::transport.max_recv_window` (PROTOCOL.md §6).
    pub recv_window: u64,
}

/// What a connection holds in memory, bytes, by part ([`Connection::memory`]).
///
/// [`Connection::memory`]: crate::Connection::memory
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Memory {
    /// The connection's own record (its endpoint keeps it boxed): state, the stream's two
    /// sides, the components, the keys, all inline.
    pub connection: usize,
    /// Of `connection`, the keys: both directions' AEAD and header protection, the fast-join
    /// HMAC keys (none until the handshake agreed them).
    pub keys: usize,
    /// The subflows' records (one slot each, grown one at a time), their creation order, the
    /// peer's subflow numbers and the last closed ones' statistics.
    pub subflows: usize,
    /// The buffers that grow with use and are given back after 3 s without data: the
    /// stream's two sides, each subflow's sent packets and received packet numbers.
    pub buffers: usize,
    /// The scheduler's view of the subflows (one entry per slot).
    pub scheduler: usize,
    /// The event log (`Config::logging.qlog`): its text not yet taken, its metrics.
    pub qlog: usize,
    /// The rest: the local paths' copy and per-path flags, the event queues, a client's
    /// first-handshake state until it ends.
    pub other: usize,
}

impl Memory {
    /// Every part (`keys` is within `connection`).
    pub fn total(&self) -> usize {
        self.connection + self.subflows + self.buffers + self.scheduler + self.qlog + self.other
    }
}

/// What a connection asks of its endpoint. The connection never touches the endpoint's
/// tables: it queues these, and the endpoint applies them after every call into it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndpointEvent {
    /// Route short-header packets with this destination CID to the connection.
    NewCid(Cid),
    /// The CID's subflow is gone: stop routing it.
    RetireCid(Cid),
    /// The connection's token (§4.3) is known: route JOINs naming it here (tokens are unique
    /// among an endpoint's connections; a collision fails the newer one).
    Token(u32),
    /// `multimob`: this connection found the netpath failed, silent to it since `since`; the
    /// endpoint's oracle declares it bad for every connection on it, unless the netpath
    /// brought another connection a packet after `since`.
    NetpathFailed {
        /// The netpath.
        netpath: oracle::Netpath,
        /// Since when the connection heard nothing on it while its data waited.
        since: crate::Time,
    },
    /// A frame was rejected and ignored (the rest of its packet was processed): count it.
    Rejected(DropReason),
    /// Client: UDP went unanswered from this local path (`silent`), or was answered there
    /// (PROTOCOL.md §4.11): the endpoint keeps the verdict for its next connections.
    UdpVerdict {
        /// The local path.
        path: PathId,
        /// UDP went unanswered there (`false`: it was answered).
        silent: bool,
    },
    /// Closed and drained: the connection may be forgotten.
    Drained,
}
