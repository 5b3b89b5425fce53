//! The endpoint's local paths: added, removed, down or up, and writable or not (the driver's
//! socket for the path has room, or is full).

use super::Endpoint;
use crate::config::ConfigError;
use crate::{LocalPath, PathId, PathSet, Time};

/// How long a connection's finding that a local path's network drops UDP holds for the
/// endpoint's next connections (PROTOCOL.md §4.11): a network's firewall rarely changes
/// within minutes, and an address change (a new network) forgets it at once.
pub(super) const UDP_VERDICT: Time = 600_000_000;

impl Endpoint {
    /// A connection found UDP silent on `path` (or answered there).
    pub(super) fn note_udp(&mut self, now: Time, path: PathId, silent: bool) {
        let p = usize::from(path.0);
        if self.udp_silent.len() <= p {
            self.udp_silent.resize(p + 1, None);
        }
        self.udp_silent[p] = silent.then_some(now);
    }

    /// The local paths whose network was found to drop UDP within `UDP_VERDICT`.
    pub(super) fn udp_silent_paths(&self, now: Time) -> PathSet {
        let mut set = PathSet::default();
        for (p, at) in self.udp_silent.iter().enumerate().take(256) {
            if at.is_some_and(|t| now < t.saturating_add(UDP_VERDICT)) {
                set.set(PathId(p as u8), true);
            }
        }
        set
    }

    /// Every local path slot, indexed by `PathId`; a removed path's slot keeps its last
    /// address until `add_path` reuses it (see [`Endpoint::path`]).
    pub fn paths(&self) -> &[LocalPath] {
        &self.paths
    }

    /// Local path `path`, unless it does not exist or was removed.
    pub fn path(&self, path: PathId) -> Option<&LocalPath> {
        let p = usize::from(path.0);
        self.paths.get(p).filter(|_| !self.removed[p])
    }

    /// Adds a local path (an interface that appeared, or a new address on one) and tells
    /// every connection (`Connection::path_added`: a client joins from it where its path
    /// manager says so). Reuses the slot of a removed path if there is one; at most 255.
    pub fn add_path(&mut self, now: Time, lp: LocalPath) -> Result<PathId, ConfigError> {
        self.wake_oracle(now);
        let p = match self.removed.iter().position(|&r| r) {
            Some(p) => p,
            None if self.paths.len() < 255 => {
                self.paths.push(lp);
                self.path_down.push(false);
                self.removed.push(false);
                self.paths.len() - 1
            }
            None => return Err(ConfigError("an endpoint has at most 255 local paths".into())),
        };
        self.paths[p] = lp;
        self.path_down[p] = false;
        self.removed[p] = false;
        // Another network (or address): what was found of UDP on the old one does not hold.
        if let Some(v) = self.udp_silent.get_mut(p) {
            *v = None;
        }
        let path = PathId(p as u8);
        // A new socket: writable.
        self.set_path_writable(path, true);
        for idx in 0..self.conns.bound() {
            if let Some(c) = self.conns.get_mut(idx) {
                c.path_added(now, path, lp);
                self.apply_events(idx, now);
            }
        }
        Ok(path)
    }

    /// Removes local path `path` for good (its interface went away, or lost this address):
    /// every connection closes its subflows there and withdraws the address
    /// (`Connection::path_removed`). Datagrams later handed in on it are dropped.
    pub fn remove_path(&mut self, now: Time, path: PathId) {
        self.wake_oracle(now);
        let p = usize::from(path.0);
        if p >= self.paths.len() || self.removed[p] {
            return;
        }
        self.removed[p] = true;
        self.path_down[p] = true;
        for idx in 0..self.conns.bound() {
            if let Some(c) = self.conns.get_mut(idx) {
                c.path_removed(now, path);
                self.apply_events(idx, now);
            }
        }
    }

    /// Tells every connection that local path `path`'s interface went down or came back
    /// (`Connection::path_down` / `path_up`); later connections start with the same view.
    pub fn set_path_up(&mut self, now: Time, path: PathId, up: bool) {
        self.wake_oracle(now);
        if self.path(path).is_none() {
            return;
        }
        self.path_down[usize::from(path.0)] = !up;
        for idx in 0..self.conns.bound() {
            if let Some(c) = self.conns.get_mut(idx) {
                if up {
                    c.path_up(now, path);
                } else {
                    c.path_down(now, path);
                }
                self.apply_events(idx, now);
            }
        }
    }

    /// Tells the endpoint whether local path `path`'s socket can take datagrams. While it
    /// cannot (the driver's send buffer is full: the interface's queue is backed up), no
    /// connection writes a datagram for it (a datagram the socket would refuse is a loss
    /// the sender inflicted on itself, and costs a retransmission and a halved window); the
    /// connections send on their other paths, or wait, parked on the path. When it can again,
    /// the connections parked there are polled again, in turn, while it still can. As TCP's
    /// small-queue backpressure, this keeps the queue in the host, where it costs no loss.
    pub fn set_path_writable(&mut self, path: PathId, writable: bool) {
        if self.unwritable.contains(path) != writable {
            return;
        }
        self.unwritable.set(path, !writable);
    }

    /// Whether local path `path` can take datagrams (see [`Endpoint::set_path_writable`]).
    pub fn path_writable(&self, path: PathId) -> bool {
        !self.unwritable.contains(path)
    }
}
