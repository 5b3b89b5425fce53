//! The connection's view of its local paths (one per interface address the endpoint has):
//! each path's address and kind, whether its interface is down, whether a subflow closed by
//! `path_down` is to be reopened, its address id (RFC 8684 §3.4.1), the addresses announced
//! and withdrawn (`Addresses`), and which paths' sockets are full right now. The path
//! managers decide from it (`paths`); it decides nothing about subflows itself.

use super::addresses::{self, Addresses};
use crate::{LocalPath, PathId, PathSet};
use std::net::SocketAddr;

#[derive(Debug)]
pub(super) struct LocalPaths {
    pub paths: Vec<LocalPath>,
    /// Per local path: its interface is down (the driver said so with `path_down`).
    pub path_down: Vec<bool>,
    /// Per local path: `path_down` closed a subflow there, so `path_up` opens one again.
    pub reopen: Vec<bool>,
    /// Per local path: the address id its address has (RFC 8684 §3.4.1; see `paths`).
    pub addr_ids: Vec<u8>,
    /// The address id the next address added gets (`path_added`).
    pub next_addr_id: u8,
    /// Ours and the peer's, announced and withdrawn.
    pub addrs: Addresses,
    /// Local paths whose socket is full (the endpoint's, given with each poll,
    /// `poll_transmit_with`): nothing is written for them.
    pub unwritable: PathSet,
    /// The first unwritable path a poll held back a datagram for (returned by the poll).
    pub held_back: Option<PathId>,
    /// Client: the path manager ran once the connection was established.
    pub pm_ran: bool,
}

impl LocalPaths {
    /// The paths a connection starts with, `initial` the one its first subflow is on.
    pub fn new(paths: &[LocalPath], initial: PathId) -> Self {
        Self {
            paths: paths.to_vec(),
            path_down: vec![false; paths.len()],
            reopen: vec![false; paths.len()],
            addr_ids: (0..paths.len()).map(|p| addresses::initial_addr_id(PathId(p as u8), initial)).collect(),
            next_addr_id: paths.len().clamp(1, 255) as u8,
            addrs: Addresses::default(),
            unwritable: PathSet::default(),
            held_back: None,
            pm_ran: false,
        }
    }

    /// Local path `path`, if the connection knows it.
    pub fn get(&self, path: PathId) -> Option<&LocalPath> {
        self.paths.get(usize::from(path.0))
    }

    /// Whether `path`'s interface is down (or the path is unknown).
    pub fn is_down(&self, path: PathId) -> bool {
        self.path_down.get(usize::from(path.0)).is_none_or(|&d| d)
    }

    /// The address id of local path `path`'s current address.
    pub fn addr_id(&self, path: PathId) -> u8 {
        self.addr_ids.get(usize::from(path.0)).copied().unwrap_or(path.0)
    }

    /// Path slot `p` (at most one past the last) has a new address `lp`: it is up, nothing
    /// is to be reopened there, and its address gets a fresh id. False if `p` is out of range.
    pub fn readdress(&mut self, p: usize, lp: LocalPath) -> bool {
        if p > self.paths.len() || p > 254 {
            return false;
        }
        if p == self.paths.len() {
            self.paths.push(lp);
            self.path_down.push(false);
            self.reopen.push(false);
            self.addr_ids.push(0);
        }
        self.paths[p] = lp;
        self.path_down[p] = false;
        self.reopen[p] = false;
        self.addr_ids[p] = self.fresh_addr_id(p);
        true
    }

    /// An address id for path slot `p` that no other path uses and no pending REMOVE_ADDR
    /// names; ids cycle through 1..=255 (0 is the initial address's).
    fn fresh_addr_id(&mut self, p: usize) -> u8 {
        for _ in 0..255 {
            let id = self.next_addr_id.max(1);
            self.next_addr_id = id.checked_add(1).unwrap_or(1);
            let taken = self.addr_ids.iter().enumerate().any(|(k, &a)| k != p && a == id) || self.addrs.uses_id(id);
            if !taken {
                return id;
            }
        }
        self.addr_ids[p]
    }

    /// Where a join from local path `path` goes: `peer` (the address the connection started
    /// on) if the path is of its family (or a dual-stack socket on `[::]`), else the last
    /// address of the path's family the server announced (an IPv6-only cellular path joins
    /// the server's IPv6 address); `None` while there is none.
    pub fn remote_for(&self, path: PathId, peer: SocketAddr) -> Option<SocketAddr> {
        let local = self.get(path)?.addr;
        let reaches = |r: &SocketAddr| r.is_ipv6() == local.is_ipv6() || local.ip().is_unspecified() && local.is_ipv6();
        if reaches(&peer) {
            return Some(peer);
        }
        self.addrs.remote().iter().rev().map(|r| r.1).find(|r| reaches(r) && !r.ip().is_unspecified())
    }

    /// The heap its per-path tables hold.
    pub fn heap_bytes(&self) -> usize {
        self.paths.capacity() * std::mem::size_of::<LocalPath>()
            + self.path_down.capacity()
            + self.reopen.capacity()
            + self.addr_ids.capacity()
    }
}
