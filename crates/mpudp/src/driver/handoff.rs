//! A server spread over cores (`MpListener::bind_cores`): datagrams handed from the core that
//! received them to the core that owns their connection (by the routing byte, PROTOCOL.md
//! §2.1), and, for TCP carriers, the way back (the types; `forward`, in the driver, hands them
//! over).
//!
//! The kernel steers UDP datagrams to their core, but one core's listener accepts every TCP
//! carrier (the port's other cores find it taken): the records a carrier brings for another
//! core's connection go there (`Via::Tcp`, naming the core that holds the carrier), and that
//! core's answers over TCP come back to the carrier's core, which writes them (issue 56).
//! Before, the listener's core dropped the records of connections it did not own, and a
//! client whose WiFi dropped UDP could not use WiFi with a server on several cores.

use mpcore::PathId;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Most datagrams waiting in a core's inbox; beyond, they are dropped (as a full socket would).
pub(crate) const INBOX: usize = 4096;

/// How a datagram handed to another core arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "tcp"), allow(dead_code))]
pub(crate) enum Via {
    Udp,
    /// Over the TCP carrier that core `relay` holds: the answers go back there.
    Tcp {
        relay: u8,
    },
}

/// A datagram for core `.0`: its path, its sender, its bytes, how it came.
pub(crate) type Handoff = (u8, PathId, SocketAddr, Vec<u8>, Via);

/// An answer over TCP for the carrier core `.0` holds: its path, its peer, the record.
pub(crate) type TcpBack = (u8, usize, SocketAddr, Vec<u8>);

/// Which core holds the TCP carrier of each (path, peer) whose records it handed here.
#[derive(Debug, Default)]
pub(crate) struct Relays {
    by_peer: HashMap<(usize, SocketAddr), (u8, Instant)>,
}

/// Relays not heard from for this long are forgotten (carriers close after a minute idle).
const FORGET: Duration = Duration::from_secs(120);

impl Relays {
    /// Core `relay` handed a record of (`p`, `remote`) here.
    pub(crate) fn learn(&mut self, p: PathId, remote: SocketAddr, relay: u8) {
        let now = Instant::now();
        if self.by_peer.len() >= 4096 {
            self.by_peer.retain(|_, (_, at)| now.duration_since(*at) < FORGET);
        }
        self.by_peer.insert((usize::from(p.0), remote), (relay, now));
    }

    /// The core that holds (`p`, `remote`)'s carrier, if another core handed its records here.
    pub(crate) fn of(&self, p: usize, remote: SocketAddr) -> Option<u8> {
        self.by_peer.get(&(p, remote)).map(|r| r.0)
    }
}
