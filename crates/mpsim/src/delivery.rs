//! A datagram in flight in the simulator: when it arrives, on which path, which way.

use mpcore::{Carrier, PathId, Time};
use std::net::SocketAddr;

/// A datagram on its way, ordered by arrival (then by the order it was sent).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Delivery {
    pub(crate) at: Time,
    pub(crate) seq: u64,
    pub(crate) to_server: bool,
    pub(crate) path: usize,
    /// The client's local path it arrives on (towards the client).
    pub(crate) local: PathId,
    pub(crate) from: SocketAddr,
    pub(crate) bytes: Vec<u8>,
    /// UDP, or the path's TCP connection (`tcp`).
    pub(crate) carrier: Carrier,
}
