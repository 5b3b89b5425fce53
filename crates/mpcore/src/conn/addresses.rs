//! The connection's addresses (RFC 8684 §3.4; PROTOCOL.md §5.12-5.13): those we announce
//! (ADD_ADDR, until the peer echoes them), the echoes we owe, the ids we withdraw
//! (REMOVE_ADDR), the subflows closed without a word on them (REMOVE_SUBFLOW), and those
//! the peer announced. Their frames ride on one subflow of the
//! connection's choosing (`Subflow::carry`); this component writes them.

use super::packet_builder::PacketBuilder;
use super::subflow::FrameSet;
use crate::wire::frame::AddAddr;
use crate::wire::remove_subflow::RemoveSubflow;
use crate::wire::Frame;
use crate::{crypto, PathId};
use std::net::SocketAddr;

/// The most REMOVE_ADDR names (see [`Addresses::withdraw`]).
const MAX_WITHDRAWN: usize = 16;

/// The address id of local path `path` among the paths a connection started with. RFC 8684
/// §3.4.1 gives the initial subflow's address id 0: the connection's first path has id 0,
/// path 0 takes the first path's index, and every other path its own index. An address added
/// later gets a fresh id (`Connection::path_added`).
pub(super) fn initial_addr_id(path: PathId, initial: PathId) -> u8 {
    match path {
        p if p == initial => 0,
        PathId(0) => initial.0,
        p => p.0,
    }
}

#[derive(Debug, Default)]
pub(super) struct Addresses {
    /// The peer's addresses, by id.
    remote: Vec<(u8, SocketAddr)>,
    /// Ours: (id, address, echoed by the peer).
    announced: Vec<(u8, SocketAddr, bool)>,
    /// Echoes we owe the peer (at most 16 at a time).
    echo: Vec<AddAddr>,
    /// Our address ids to withdraw (REMOVE_ADDR), until the address comes back.
    removed: Vec<u8>,
    /// Subflows closed with a REMOVE_SUBFLOW (§5.21), its entries as written: the last 16.
    /// Boxed, 8 bytes rather than a `Vec`'s 24 in every connection: most never close a subflow
    /// so, and an idle connection's size is budgeted (`mpsim/tests/memory.rs`).
    #[allow(clippy::box_collection)]
    closed_elsewhere: Option<Box<Vec<u8>>>,
    /// Frames waiting for an established subflow to carry them.
    orphaned: FrameSet,
}

impl Addresses {
    /// The addresses the peer announced.
    pub fn remote(&self) -> &[(u8, SocketAddr)] {
        &self.remote
    }

    /// Whether an announcement or a withdrawal names `id`.
    pub fn uses_id(&self, id: u8) -> bool {
        self.removed.contains(&id) || self.announced.iter().any(|a| a.0 == id)
    }

    /// Announces `addr` as `id`; false if that id is announced already.
    pub fn announce(&mut self, id: u8, addr: SocketAddr) -> bool {
        if self.announced.iter().any(|a| a.0 == id) {
            return false;
        }
        self.announced.push((id, addr, false));
        true
    }

    /// Withdraws `id` (once). A REMOVE_ADDR names the last `MAX_WITHDRAWN` ids withdrawn;
    /// older ones are taken as delivered (each went out reliably in several packets since),
    /// and fresh ids cycle through all 255 before one comes back, so an old withdrawal never
    /// names a new address.
    pub fn withdraw(&mut self, id: u8) {
        if !self.removed.contains(&id) {
            if self.removed.len() >= MAX_WITHDRAWN {
                self.removed.remove(0);
            }
            self.removed.push(id);
        }
    }

    /// The address `id` is back: a withdrawal not yet sent must not follow.
    pub fn restore(&mut self, id: u8) {
        self.removed.retain(|&r| r != id);
    }

    /// Nothing to withdraw any more.
    pub fn nothing_withdrawn(&self) -> bool {
        self.removed.is_empty()
    }

    /// Subflow `id` was closed, the peer to be told on another subflow (REMOVE_SUBFLOW). Older
    /// closes stay listed, as REMOVE_ADDR's ids do: subflow numbers are never reused, so
    /// naming a closed subflow again closes nothing new.
    pub fn close_elsewhere(&mut self, id: u32, reason: u8) {
        crate::wire::remove_subflow::push_entry(self.closed_elsewhere.get_or_insert_with(Default::default), id, reason);
    }

    /// The peer echoed our announcement of `id`.
    pub fn on_echo(&mut self, id: u8) {
        for e in self.announced.iter_mut().filter(|e| e.0 == id) {
            e.2 = true;
        }
    }

    /// The peer announced `a` (its HMAC checked); true if the address is new. The echo
    /// is owed either way.
    pub fn on_announced(&mut self, a: AddAddr) -> bool {
        let addr = SocketAddr::new(a.ip, a.port);
        let mut new = false;
        if !self.remote.iter().any(|r| r.0 == a.addr_id && r.1 == addr) {
            self.remote.retain(|r| r.0 != a.addr_id);
            if self.remote.len() < 255 {
                self.remote.push((a.addr_id, addr));
                new = true;
            }
        }
        if self.echo.len() < 16 {
            self.echo.push(AddAddr { hmac: None, ..a });
        }
        new
    }

    /// The peer withdrew `id`.
    pub fn on_removed(&mut self, id: u8) {
        self.remote.retain(|a| a.0 != id);
    }

    /// No established subflow could take `frames`: they wait for one.
    pub fn orphan(&mut self, frames: FrameSet) {
        self.orphaned |= frames;
    }

    /// The frames that waited for a subflow.
    pub fn take_orphans(&mut self) -> FrameSet {
        std::mem::take(&mut self.orphaned)
    }

    /// Writes the address frames among `carry` (what the subflow carries), authenticating
    /// announcements with the connection's keys (§5.12).
    pub fn write(&self, carry: FrameSet, local_key: u64, remote_key: u64, b: &mut PacketBuilder<'_>) {
        if carry.intersects(FrameSet::ADD_ADDR) {
            for &(id, addr, _) in self.announced.iter().filter(|a| !a.2) {
                if !b.has_room() {
                    break;
                }
                let hmac = crypto::add_addr_hmac(local_key, remote_key, id, addr.ip(), addr.port());
                let f = AddAddr { addr_id: id, ip: addr.ip(), port: addr.port(), hmac: Some(hmac) };
                b.control(FrameSet::ADD_ADDR, Frame::AddAddr(f));
            }
        }
        if carry.intersects(FrameSet::ADDR_ECHO) {
            for e in &self.echo {
                b.control(FrameSet::ADDR_ECHO, Frame::AddAddr(*e));
            }
        }
        if carry.intersects(FrameSet::REMOVE_ADDR) && !self.removed.is_empty() {
            let ids = &self.removed[..self.removed.len().min(255)];
            b.control(FrameSet::REMOVE_ADDR, Frame::RemoveAddr(ids));
        }
        if carry.intersects(FrameSet::REMOVE_SUBFLOW) {
            // Up to 84 bytes, more than the builder's usual control frame: written only where
            // it fits whole (type, length, body), else it waits for the next packet.
            match RemoveSubflow::parse(self.closed_elsewhere.as_deref().map_or(&[], |v| v.as_slice())) {
                Ok(f) if b.room() >= f.body_len() + 4 => {
                    b.control(FrameSet::REMOVE_SUBFLOW, Frame::RemoveSubflow(f));
                }
                _ => {}
            }
        }
    }

    /// A packet carrying `sent` left: the echoes it carried are owed no more.
    pub fn on_sent(&mut self, sent: FrameSet) {
        if sent.intersects(FrameSet::ADDR_ECHO) {
            self.echo.clear();
        }
    }
}
