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
    Client,
    Server,
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
}

/// Something the application may want to know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The first handshake completed.
    Connected,
    SubflowEstablished {
        id: u32,
        path: PathId,
        backup: bool,
    },
    /// The subflow's retransmission timer expired: potentially failed.
    SubflowFailed {
        id: u32,
    },
    /// A potentially failed subflow got a new acknowledgement.
    SubflowRecovered {
        id: u32,
    },
    SubflowClosed {
        id: u32,
        reason: u8,
    },
    /// The peer's address on a subflow changed (NAT rebinding).
    SubflowMigrated {
        id: u32,
        remote: SocketAddr,
    },
    /// The peer announced an address (ADD_ADDR with a valid HMAC).
    AddressAnnounced {
        addr_id: u8,
        addr: SocketAddr,
    },
    /// New bytes can be read.
    Readable,
    /// The peer's DATA_FIN arrived in order: after the bytes still buffered, `read` returns 0.
    Finished,
    /// The `multimob` oracle's decision for a path this connection uses (bad: failed over;
    /// high RTO: backup subflows opened; clear: the flags are lifted).
    Verdict {
        path: PathId,
        verdict: oracle::Verdict,
    },
    /// `multimob`: a regular subflow was healthy for the hold time; the failover subflows are
    /// being closed and traffic is back on the preferred path.
    FailBack,
    Closed {
        reason: CloseReason,
    },
}

/// Why a write failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteError {
    /// The send buffer is full; write again after data is acknowledged.
    Blocked,
    /// `close` was called: no more data may be written.
    Finished,
    Closed(CloseReason),
}

/// Why a read returned nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// Nothing to read yet.
    Blocked,
    Closed(CloseReason),
}

/// Connection-wide counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnCounters {
    pub bytes_written: u64,
    pub bytes_read: u64,
    /// Data bytes acknowledged by DATA_ACK.
    pub bytes_acked: u64,
    pub bytes_reinjected: u64,
    pub reinjections: u64,
    /// Segments not stored because they would have opened more out-of-order ranges than the
    /// receive buffer tracks.
    pub reassembly_refused: u64,
}

/// A snapshot of a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnStats {
    pub side: Side,
    pub established: bool,
    pub closed: Option<CloseReason>,
    pub counters: ConnCounters,
    pub subflows: Vec<SubflowStats>,
    /// The scheduler's name (a custom scheduler's own).
    pub scheduler: String,
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
    /// `multimob`: this connection found the netpath failed; the endpoint's oracle declares it
    /// bad for every connection on it.
    NetpathFailed(oracle::Netpath),
    /// A frame was rejected and ignored (the rest of its packet was processed): count it.
    Rejected(DropReason),
    /// Closed and drained: the connection may be forgotten.
    Drained,
}
