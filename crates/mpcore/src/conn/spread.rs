//! The first handshake on every path (PROTOCOL.md §4.10): a client whose INITIAL goes
//! unanswered on its first path for [`Config::other_paths_after`] sends the same INITIAL on
//! each of its other local paths that reach the server, and repeats it on all of them from
//! then on. The connection is made on the path whose HANDSHAKE comes first; subflow 0 moves
//! there, and the client joins its first path afterwards, so that it returns there when that
//! network carries the protocol again.
//!
//! RFC 8305 §5 (Happy Eyeballs) tells the client to start the next attempt after a
//! "Connection Attempt Delay" of 250 ms by default when the first has not succeeded. A
//! phone whose WiFi drops UDP (hotel and enterprise networks, captive portals) would
//! otherwise repeat its INITIAL there for the whole handshake timeout and never try the
//! cellular path that works.
//!
//! [`Config::other_paths_after`]: crate::Config::other_paths_after

use super::events::Side;
use super::{Connection, State};
use crate::config::PathManager;
use crate::{PathId, Time, Transmit};

/// Where the client's INITIAL goes besides its first path.
#[derive(Debug, Default)]
pub(super) struct Spread {
    /// When the other paths start (none: not before the first INITIAL left, or no more).
    at: Option<Time>,
    /// The other paths take every INITIAL from now on.
    on: bool,
    /// Local paths still owed a copy of the INITIAL that went last (at most 256; a bitmap).
    owed: crate::PathSet,
    /// Whether any copy went: the round trip of the answer is then unknown (Karn's rule).
    pub(super) copied: bool,
    /// The path the connection first tried, when the handshake came through another: it is
    /// joined once the connection is up.
    pub(super) rejoin_first: Option<PathId>,
}

impl Connection {
    /// The other local paths that reach the server's address, up and not in use by subflow 0.
    fn other_handshake_paths(&self) -> impl Iterator<Item = PathId> + '_ {
        let first = self.subflows.get(0).map(|s| s.local_path());
        (0..self.paths.len().min(256)).map(|p| PathId(p as u8)).filter(move |&p| {
            Some(p) != first
                && !self.path_down.get(usize::from(p.0)).is_none_or(|&d| d)
                && self.remote_for(p) == Some(self.peer_addr)
        })
    }

    /// When the other paths are due a copy of the INITIAL (the `HANDSHAKE` timer's other
    /// half).
    pub(super) fn spread_deadline(&self) -> Option<Time> {
        self.spread.at.filter(|_| !self.spread.on)
    }

    /// The first INITIAL left at `now`: the other paths start after the bound.
    fn arm_spread(&mut self, now: Time) {
        if let (Some(after), None, false) = (self.config.other_paths_after, self.spread.at, self.spread.on) {
            if self.other_handshake_paths().next().is_some() {
                self.spread.at = Some(now.saturating_add(after));
            }
        }
    }

    /// The bound passed without an answer: every other path is owed the INITIAL now, and
    /// each repeat from now on.
    pub(super) fn on_spread_timeout(&mut self, now: Time) {
        if self.spread.on || self.spread.at.is_none_or(|at| at > now) {
            return;
        }
        self.spread.on = true;
        self.owe_copies();
        tracing::debug!("no answer on the first path: the INITIAL goes on every path");
    }

    fn owe_copies(&mut self) {
        let mut owed = self.spread.owed;
        for p in self.other_handshake_paths() {
            owed.set(p, true);
        }
        self.spread.owed = owed;
    }

    /// The INITIAL (or its repeat) went on subflow 0's path at `now`.
    pub(super) fn on_initial_sent(&mut self, now: Time) {
        if self.spread.on {
            self.owe_copies();
        } else {
            self.arm_spread(now);
        }
    }

    /// A copy of the INITIAL owed to another path, written into `buf`.
    pub(super) fn poll_initial_copy(&mut self, buf: &mut [u8]) -> Option<Transmit> {
        let initial = self.hs.as_ref()?.initial_datagram();
        let p = (0..=255u8).map(PathId).find(|&p| self.spread.owed.contains(p))?;
        self.spread.owed.set(p, false);
        if buf.len() < initial.len() || self.unwritable.contains(p) {
            // Its socket is full: this copy is skipped; the next repeat carries one.
            return None;
        }
        buf[..initial.len()].copy_from_slice(initial);
        self.spread.copied = true;
        Some(Transmit { path: p, remote: self.peer_addr, len: initial.len() })
    }

    /// The HANDSHAKE came on local path `path`. If that is not subflow 0's, subflow 0 moves
    /// there before it sends its CONFIRM, and the address ids follow it (RFC 8684 §3.4.1: the
    /// initial subflow's address has id 0); the first path is joined once the connection is
    /// up.
    pub(super) fn handshake_via(&mut self, path: PathId) {
        let first = self.subflows[0].local_path();
        if path == first || usize::from(path.0) >= self.paths.len() {
            return;
        }
        self.subflows[0].handshake_on(path);
        if self.config.path_manager == PathManager::MultiMob {
            // MultiMob uses its other paths for failover only: this subflow is one, closed
            // again at the fail-back once the first path has worked for the hold time.
            self.subflows[0].mark_failover();
        }
        for (p, id) in self.addr_ids.iter_mut().enumerate() {
            *id = super::paths::initial_addr_id(PathId(p as u8), path);
        }
        self.spread.rejoin_first = Some(first);
        self.counters.handshakes_elsewhere += 1;
        tracing::debug!(from = first.0, to = path.0, "the handshake came through another path");
    }

    /// The connection is up on another path than its first: it joins the first (unless a
    /// path manager that joins every path does so anyway), with MP_JOIN: that path left the
    /// INITIAL unanswered, and a FAST_JOIN's data would wait there for its retransmission
    /// timer (a second, the first time) before going on the path that works.
    pub(super) fn join_first_path(&mut self, now: Time) {
        let Some(first) = self.spread.rejoin_first.take() else { return };
        if self.side != Side::Client || self.state != State::Established || self.is_closed() {
            return;
        }
        let in_use = self.subflows.iter().any(|s| s.local_path() == first && s.is_open());
        let down = self.path_down.get(usize::from(first.0)).is_none_or(|&d| d);
        if in_use || down {
            return;
        }
        let backup = self.paths.get(usize::from(first.0)).is_some_and(|lp| lp.backup);
        if let Some(k) = self.remote_for(first).and_then(|remote| self.open(now, first, remote, backup)) {
            self.subflows[k].plain_join();
        }
    }
}
