//! # mpcore: Multipath TCP over UDP, sans I/O
//!
//! The protocol of `docs/PROTOCOL.md`: the logic of Multipath TCP (RFC 8684): data sequence
//! numbers, joins authenticated by HMAC, backup subflows, carried over UDP datagrams with
//! X25519 key agreement and AEAD packet protection.
//!
//! - [`wire`]: parse and emit every packet and frame, without allocating or panicking.
//! - [`crypto`]: key agreement, key schedule, token and IDSN, the HMACs of joins, fast joins
//!   and ADD_ADDR, packet protection.
//! - [`Endpoint`] and [`Connection`]: the state machine. It does no I/O and reads no clock:
//!   the driver hands it datagrams with [`Endpoint::handle_datagram`], calls
//!   [`Endpoint::handle_timeout`] at [`Endpoint::poll_timeout`], and sends what
//!   [`Endpoint::poll_transmit`] writes. Time is a `u64` count of microseconds from any epoch
//!   the driver picks.

#![warn(missing_docs)]

mod activity;
pub mod config;
pub mod conn;
pub mod crypto;
pub mod drops;
pub mod endpoint;
mod handshake;
pub mod identity;
mod limiter;
pub mod radio;
pub mod ranges;
pub mod rng;
mod routes;
mod slab;
pub mod steering;
pub mod strikes;
pub mod ticket;
// The wire views' fields, frame types and reason codes carry PROTOCOL.md's names, where each
// is specified (every type's documentation names its section): they are documented there.
#[allow(missing_docs)]
pub mod wire;

pub use activity::TransmitWork;
pub use config::{Config, ConfigError, Faults, Fleet, PathManager, Resumption, SchedulerFactory};
pub use conn::cc::CongestionControl;
pub use conn::{
    CloseReason, ConnCounters, ConnStats, Connection, Event, Memory, ReadError, Side, SubflowCounters, SubflowState,
    SubflowStats, WriteError,
};
pub use drops::{DropReason, Drops};
pub use endpoint::{ConnHandle, ConnectError, Endpoint, HandshakeCounters};
pub use identity::{KeyError, PublicKey, ServerIdentity};
pub use radio::{LinkHint, Prewarm};
pub use scheduler::{AnyScheduler, Flags, Iface, Mask, Pick, Scheduler, Segment, SubflowInfo};
pub use steering::Steering;
pub use strikes::StrikeRegister;
pub use ticket::ResumptionTicket;

use std::net::SocketAddr;

/// Microseconds since an epoch chosen by the driver.
pub type Time = u64;

/// Index of one of an endpoint's local paths (an interface with its address).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PathId(pub u8);

/// A set of local paths (all 256 ids fit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct PathSet([u64; 4]);

impl PathSet {
    pub(crate) fn contains(&self, p: PathId) -> bool {
        self.0[usize::from(p.0 >> 6)] & (1 << (p.0 & 63)) != 0
    }

    pub(crate) fn set(&mut self, p: PathId, on: bool) {
        let (w, bit) = (usize::from(p.0 >> 6), 1u64 << (p.0 & 63));
        if on {
            self.0[w] |= bit;
        } else {
            self.0[w] &= !bit;
        }
    }

    /// Its paths, in increasing order.
    pub(crate) fn iter(self) -> impl Iterator<Item = PathId> {
        (0..=255u8).map(PathId).filter(move |&p| self.contains(p))
    }
}

impl FromIterator<PathId> for PathSet {
    fn from_iter<I: IntoIterator<Item = PathId>>(paths: I) -> Self {
        let mut s = PathSet::default();
        for p in paths {
            s.set(p, true);
        }
        s
    }
}

/// A local path: the address a subflow uses on one interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalPath {
    /// Its address (port 0 until bound).
    pub addr: SocketAddr,
    /// The interface's kind.
    pub iface: Iface,
    /// Subflows on this path are opened as backup subflows.
    pub backup: bool,
}

/// What carries a subflow's datagrams on its path (PROTOCOL.md §4.11): a UDP socket, or,
/// where a network drops UDP, a TCP connection on the same path to the same address and
/// port, each datagram prefixed with its length (RFC 4571).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Carrier {
    /// A UDP datagram.
    #[default]
    Udp,
    /// A record of a TCP connection's stream: two bytes of length, then the datagram.
    Tcp,
}

/// A datagram `poll_transmit` wrote: send `buf[..len]` from local path `path` to `remote`,
/// over `carrier`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// The local path to send from.
    pub path: PathId,
    /// The destination.
    pub remote: SocketAddr,
    /// The datagram's length in the caller's buffer.
    pub len: usize,
    /// UDP, or the TCP connection from `path` to `remote` (opened by a client when it has
    /// none; a server sends only on one its peer opened).
    pub carrier: Carrier,
}
