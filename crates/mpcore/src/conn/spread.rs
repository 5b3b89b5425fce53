//! Every path, and TCP where UDP gets no answer (PROTOCOL.md §4.10, §4.11).
//!
//! The first handshake: a client whose INITIAL goes unanswered on its first path for
//! [`Config::other_paths_after`] sends the same INITIAL on each of its other local paths that
//! reach the server, and repeats it on all of them from then on; after
//! [`Config::tcp_after`] it sends it once more over TCP on every path. The connection is made
//! on the path (and carrier) whose HANDSHAKE comes first; subflow 0 moves there, and the
//! client joins its first path afterwards, so that it returns there when that network carries
//! the protocol again.
//!
//! Joins: a client's JOIN over UDP unanswered for `tcp_after` races a JOIN over TCP on the
//! same path; whichever opens carries the path (a TCP join that opens while the UDP one is
//! unanswered marks the path silent to UDP: its later joins go over TCP), and a UDP subflow
//! that opens after the TCP one replaces it (the path moves back to UDP).
//!
//! RFC 8305 §5 (Happy Eyeballs) tells the client to start the next attempt after a
//! "Connection Attempt Delay" of 250 ms by default when the first has not succeeded. A
//! phone whose WiFi drops UDP (hotel and enterprise networks, captive portals) would
//! otherwise repeat its INITIAL there for the whole handshake timeout and never try the
//! cellular path that works.
//!
//! [`Config::other_paths_after`]: crate::Config::other_paths_after
//! [`Config::tcp_after`]: crate::Config::tcp_after

use super::events::Side;
use super::subflow::SubflowState;
use super::{Connection, State};
use crate::config::PathManager;
use crate::wire::frame::reason;
use crate::{Carrier, PathId, PathSet, Time, Transmit};

/// Where the client's INITIAL goes besides its first path, and the paths found silent to UDP.
#[derive(Debug, Default)]
pub(super) struct Spread {
    /// When the other paths start (none: not before the first INITIAL left, or no more).
    at: Option<Time>,
    /// The other paths take every INITIAL from now on.
    on: bool,
    /// When the INITIAL goes over TCP on every path (once).
    tcp_at: Option<Time>,
    tcp_on: bool,
    /// Local paths still owed a copy of the INITIAL that went last, over UDP and over TCP.
    owed: PathSet,
    owed_tcp: PathSet,
    /// The path the connection first tried, when the handshake came through another: it is
    /// joined once the connection is up.
    pub(super) rejoin_first: Option<PathId>,
    /// Paths whose UDP went unanswered while TCP was answered there (the handshake over TCP,
    /// or a TCP join that won its race), or that the endpoint remembers so: the client's joins
    /// there go over TCP.
    udp_silent: PathSet,
    /// Client's UDP joins on trial: (slot, subflow number, path, when a TCP join races it if
    /// still unanswered).
    trials: Vec<(usize, u32, PathId, Time)>,
}

impl Connection {
    /// The other local paths that reach the server's address, up and not in use by subflow 0.
    fn other_handshake_paths(&self) -> impl Iterator<Item = PathId> + '_ {
        let first = self.subflows.get(0).map(|s| s.local_path());
        self.handshake_paths().filter(move |&p| Some(p) != first)
    }

    /// Every local path that is up and reaches the server's address.
    fn handshake_paths(&self) -> impl Iterator<Item = PathId> + '_ {
        (0..self.paths.len().min(256)).map(|p| PathId(p as u8)).filter(move |&p| {
            !self.path_down.get(usize::from(p.0)).is_none_or(|&d| d) && self.remote_for(p) == Some(self.peer_addr)
        })
    }

    /// When the handshake's other paths or its TCP copies are due, or a UDP join's trial
    /// ends (the connection's `CARRIER` timer).
    pub(super) fn spread_deadline(&self) -> Option<Time> {
        let udp = self.spread.at.filter(|_| !self.spread.on);
        let tcp = self.spread.tcp_at.filter(|_| !self.spread.tcp_on);
        let trial = self.spread.trials.iter().map(|t| t.3).min();
        [udp, tcp, trial].into_iter().flatten().min()
    }

    /// The first INITIAL left at `now`: the other paths start after the bound, TCP later; at
    /// once both where the endpoint found the first path's network dropping UDP.
    fn arm_spread(&mut self, now: Time) {
        if self.spread.at.is_some() || self.spread.tcp_at.is_some() {
            return;
        }
        let known_silent = self.subflows.get(0).is_some_and(|s| self.spread.udp_silent.contains(s.local_path()));
        let bound = |after: u64| if known_silent { now } else { now.saturating_add(after) };
        if let Some(after) = self.config.other_paths_after {
            if self.other_handshake_paths().next().is_some() {
                self.spread.at = Some(bound(after));
            }
        }
        self.spread.tcp_at = self.config.tcp_after.map(bound);
    }

    /// Client, before its first INITIAL: the endpoint's word on the paths whose network was
    /// found to drop UDP (§4.11). Their joins go over TCP, and if the first path is one, the
    /// other paths and TCP are tried with the first INITIAL.
    pub(crate) fn assume_udp_silent(&mut self, paths: PathSet) {
        if self.side == Side::Client && self.state == State::Initial && self.config.tcp_after.is_some() {
            self.spread.udp_silent = paths;
        }
    }

    /// Tells the endpoint what was found of UDP on `path`.
    fn udp_verdict(&mut self, path: PathId, silent: bool) {
        self.endpoint_events.push_back(super::events::EndpointEvent::UdpVerdict { path, silent });
    }

    /// A bound passed: before the handshake, the other paths (or TCP on every path) are owed
    /// the INITIAL; after it, a UDP join still unanswered is raced over TCP.
    pub(super) fn on_spread_timeout(&mut self, now: Time) {
        if self.state == State::Initial {
            if !self.spread.on && self.spread.at.is_some_and(|at| at <= now) {
                self.spread.on = true;
                self.owe_copies();
                tracing::debug!("no answer on the first path: the INITIAL goes on every path");
            }
            if !self.spread.tcp_on && self.spread.tcp_at.is_some_and(|at| at <= now) {
                self.spread.tcp_on = true;
                let mut owed = self.spread.owed_tcp;
                for p in self.handshake_paths() {
                    owed.set(p, true);
                }
                self.spread.owed_tcp = owed;
                tracing::debug!("no answer over UDP: the INITIAL goes over TCP on every path");
            }
            return;
        }
        self.end_join_trials(now);
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

    /// A RETRY came on `path` over `carrier`: the INITIAL with its token goes there too (a
    /// UDP one goes with the repeat already; a TCP one is owed once more).
    pub(super) fn initial_again_on(&mut self, path: PathId, carrier: Carrier) {
        if carrier == Carrier::Tcp {
            self.spread.owed_tcp.set(path, true);
        }
    }

    /// A copy of the INITIAL owed to another path (UDP first, then TCP), written into `buf`.
    /// A path whose socket is full keeps its copy owed for later.
    pub(super) fn poll_initial_copy(&mut self, buf: &mut [u8]) -> Option<Transmit> {
        let initial = self.hs.as_ref()?.initial_datagram();
        if buf.len() < initial.len() {
            return None;
        }
        let sendable = |set: &PathSet, unwritable: &PathSet| {
            (0..=255u8).map(PathId).find(|&p| set.contains(p) && !unwritable.contains(p))
        };
        let (p, carrier) = match sendable(&self.spread.owed, &self.unwritable) {
            Some(p) => (p, Carrier::Udp),
            None => (sendable(&self.spread.owed_tcp, &self.unwritable)?, Carrier::Tcp),
        };
        match carrier {
            Carrier::Udp => self.spread.owed.set(p, false),
            Carrier::Tcp => self.spread.owed_tcp.set(p, false),
        }
        buf[..initial.len()].copy_from_slice(initial);
        Some(Transmit { path: p, remote: self.peer_addr, len: initial.len(), carrier })
    }

    /// The HANDSHAKE came on local path `path` over `carrier`. If that is not subflow 0's,
    /// subflow 0 moves there before it sends its CONFIRM, and the address ids follow it (RFC
    /// 8684 §3.4.1: the initial subflow's address has id 0); the first path is joined once
    /// the connection is up. An answer over TCP says that UDP was silent on every path.
    pub(super) fn handshake_via(&mut self, path: PathId, carrier: Carrier) {
        // The handshake is over: no more copies.
        let (trials, silent) = (std::mem::take(&mut self.spread.trials), self.spread.udp_silent);
        self.spread = Spread { trials, udp_silent: silent, ..Spread::default() };
        if carrier == Carrier::Udp {
            self.spread.udp_silent.set(path, false);
            self.udp_verdict(path, false);
        }
        let first = self.subflows[0].local_path();
        if usize::from(path.0) >= self.paths.len() || (path == first && carrier == Carrier::Udp) {
            return;
        }
        self.subflows[0].set_carrier(carrier);
        if carrier == Carrier::Tcp {
            let mut silent = self.spread.udp_silent;
            for p in self.handshake_paths() {
                silent.set(p, true);
            }
            self.spread.udp_silent = silent;
            for p in (0..=255u8).map(PathId).filter(|&p| silent.contains(p)) {
                self.udp_verdict(p, true);
            }
        }
        self.counters.handshakes_elsewhere += 1;
        tracing::debug!(from = first.0, to = path.0, ?carrier, "the handshake came through another path or carrier");
        if path == first {
            return;
        }
        self.subflows[0].handshake_on(path);
        if self.config.path_manager == PathManager::MultiMob {
            // MultiMob uses its other paths for failover only: this subflow is one, closed
            // again at the fail-back once the first path has worked for the hold time.
            self.subflows[0].mark_failover();
        }
        for (p, id) in self.addr_ids.iter_mut().enumerate() {
            *id = super::addresses::initial_addr_id(PathId(p as u8), path);
        }
        self.spread.rejoin_first = Some(first);
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

    /// The carrier a client's join from `path` takes: TCP where UDP was found silent.
    pub(super) fn join_carrier(&self, path: PathId) -> Carrier {
        if self.spread.udp_silent.contains(path) {
            Carrier::Tcp
        } else {
            Carrier::Udp
        }
    }

    /// A client opened a join over UDP in slot `k` on `path`: if it is still unanswered after
    /// `tcp_after`, a join over TCP races it.
    pub(super) fn on_udp_join_opened(&mut self, now: Time, k: usize, path: PathId) {
        if let (Some(after), Side::Client, Some(sf)) = (self.config.tcp_after, self.side, self.subflows.get(k)) {
            if self.spread.trials.len() < 64 {
                self.spread.trials.push((k, sf.id(), path, now.saturating_add(after)));
            }
        }
    }

    /// The UDP joins whose trial ended: those unanswered race a TCP join on their path.
    fn end_join_trials(&mut self, now: Time) {
        let mut i = 0;
        while i < self.spread.trials.len() {
            let (k, id, path, at) = self.spread.trials[i];
            if at > now {
                i += 1;
                continue;
            }
            self.spread.trials.swap_remove(i);
            let Some(sf) = self.subflows.get(k).filter(|s| s.id() == id) else { continue };
            // Unanswered: no SYNACK (or fast-join reply) came. One answered whose last packet
            // is not yet acknowledged passes UDP.
            if sf.state() != SubflowState::JoinSent || sf.local_path() != path || sf.carrier() != Carrier::Udp {
                continue;
            }
            let tcp_open =
                self.subflows.iter().any(|s| s.local_path() == path && s.carrier() == Carrier::Tcp && s.is_open());
            let (remote, backup, rejoin) = (sf.remote(), sf.backup(), sf.rejoin());
            if tcp_open || self.is_closed() {
                continue;
            }
            // Raced only: the path is judged silent to UDP once the TCP join opens while the
            // UDP one is still unanswered (a path in an outage answers neither).
            if let Some(t) = self.open_over(now, (path, Carrier::Tcp), remote, backup) {
                self.subflows[t].plain_join();
                if rejoin {
                    // It replaces a silent subflow as the UDP join does: given up, the path is
                    // joined again (the UDP join, given up first, left that to it).
                    self.subflows[t].mark_rejoin();
                }
                tracing::debug!(path = path.0, "a UDP join unanswered: racing it over TCP");
            }
        }
    }

    /// Client: subflow `i` was established. Over TCP while no UDP subflow works on its path
    /// (the UDP join it raced is unanswered): the path's network drops UDP, and its later
    /// joins go over TCP. Over UDP on a path that had a TCP subflow (a UDP join that lost the
    /// race, answered later): UDP passes there again, and the TCP subflow closes, its data
    /// moving to the others (RFC 8684 §3.3.6).
    pub(super) fn on_carrier_established(&mut self, now: Time, i: usize) {
        let Some(sf) = self.subflows.get(i) else { return };
        let path = sf.local_path();
        if self.side != Side::Client {
            return;
        }
        if sf.carrier() == Carrier::Tcp {
            let udp_works =
                self.subflows.iter().any(|s| s.local_path() == path && s.carrier() == Carrier::Udp && s.established());
            if !udp_works {
                self.spread.udp_silent.set(path, true);
                self.udp_verdict(path, true);
            }
            return;
        }
        self.spread.udp_silent.set(path, false);
        self.udp_verdict(path, false);
        for k in 0..self.subflows.slot_bound() {
            let Some(s) = self.subflows.get(k) else { continue };
            if k != i && s.local_path() == path && s.carrier() == Carrier::Tcp && s.is_open() {
                let id = s.id();
                self.close_subflow(now, id, reason::UNSPECIFIED);
                tracing::debug!(path = path.0, "UDP passes again: the TCP subflow closes");
            }
        }
    }
}
