//! Every path, and TCP where UDP gets no answer (PROTOCOL.md §4.10, §4.11).
//!
//! The first handshake: a client whose INITIAL goes unanswered on its first path for
//! [`Multipath::other_paths_after`] sends the same INITIAL on each of its other local paths that
//! reach the server, and repeats it on all of them from then on; after
//! [`Multipath::tcp_after`] it sends it once more over TCP on every path. The connection is made
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
//! This component keeps what is owed and found; the path layer (`Paths`, whose part it is, in
//! `paths.rs`) asks it and acts on the subflows.
//!
//! [`Multipath::other_paths_after`]: crate::config::Multipath::other_paths_after
//! [`Multipath::tcp_after`]: crate::config::Multipath::tcp_after

use crate::{Carrier, PathId, PathSet, Time};

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
    rejoin_first: Option<PathId>,
    /// Paths whose UDP went unanswered while TCP was answered there (the handshake over TCP,
    /// or a TCP join that won its race), or that the endpoint remembers so: the client's joins
    /// there go over TCP.
    udp_silent: PathSet,
    /// Client's UDP joins on trial: (slot, subflow number, path, when a TCP join races it if
    /// still unanswered).
    trials: Vec<(usize, u32, PathId, Time)>,
}

impl Spread {
    /// When the handshake's other paths or its TCP copies are due, or a UDP join's trial
    /// ends (the connection's `CARRIER` timer).
    pub(super) fn deadline(&self) -> Option<Time> {
        let udp = self.at.filter(|_| !self.on);
        let tcp = self.tcp_at.filter(|_| !self.tcp_on);
        let trial = self.trials.iter().map(|t| t.3).min();
        [udp, tcp, trial].into_iter().flatten().min()
    }

    /// The INITIAL (or its repeat) went on the first path, `first`, at `now`; `others`: the
    /// other paths that reach the server. Once the copies are on, each sending owes one to
    /// every other path; before, the first sending arms the bounds (`other_paths_after` and
    /// `tcp_after`: at once both where the endpoint found the first path's network dropping
    /// UDP).
    pub(super) fn on_initial_sent(
        &mut self,
        now: Time,
        first: Option<PathId>,
        mut others: impl Iterator<Item = PathId>,
        (other_paths_after, tcp_after): (Option<u64>, Option<u64>),
    ) {
        if self.on {
            for p in others {
                self.owed.set(p, true);
            }
            return;
        }
        if self.at.is_some() || self.tcp_at.is_some() {
            return;
        }
        let known_silent = first.is_some_and(|p| self.udp_silent.contains(p));
        let bound = |after: u64| if known_silent { now } else { now.saturating_add(after) };
        if let Some(after) = other_paths_after {
            if others.next().is_some() {
                self.at = Some(bound(after));
            }
        }
        self.tcp_at = tcp_after.map(bound);
    }

    /// Client, before its first INITIAL: the paths whose network the endpoint found to drop
    /// UDP (§4.11).
    pub(super) fn assume_udp_silent(&mut self, paths: PathSet) {
        self.udp_silent = paths;
    }

    /// A bound passed before the handshake: the other paths (`others`), or TCP on every path
    /// (`all`), are owed the INITIAL.
    pub(super) fn on_timeout(
        &mut self,
        now: Time,
        others: impl Iterator<Item = PathId>,
        all: impl Iterator<Item = PathId>,
    ) {
        if !self.on && self.at.is_some_and(|at| at <= now) {
            self.on = true;
            for p in others {
                self.owed.set(p, true);
            }
            tracing::debug!("no answer on the first path: the INITIAL goes on every path");
        }
        if !self.tcp_on && self.tcp_at.is_some_and(|at| at <= now) {
            self.tcp_on = true;
            for p in all {
                self.owed_tcp.set(p, true);
            }
            tracing::debug!("no answer over UDP: the INITIAL goes over TCP on every path");
        }
    }

    /// A RETRY came on `path` over `carrier`: the INITIAL with its token goes there too (a
    /// UDP one goes with the repeat already; a TCP one is owed once more).
    pub(super) fn initial_again_on(&mut self, path: PathId, carrier: Carrier) {
        if carrier == Carrier::Tcp {
            self.owed_tcp.set(path, true);
        }
    }

    /// The next copy of the INITIAL owed (UDP first, then TCP), on a path not in
    /// `unwritable`, taken off what is owed. A path whose socket is full keeps its copy owed.
    pub(super) fn next_copy(&mut self, unwritable: &PathSet) -> Option<(PathId, Carrier)> {
        let sendable = |set: &PathSet| (0..=255u8).map(PathId).find(|&p| set.contains(p) && !unwritable.contains(p));
        let (p, carrier) = match sendable(&self.owed) {
            Some(p) => (p, Carrier::Udp),
            None => (sendable(&self.owed_tcp)?, Carrier::Tcp),
        };
        match carrier {
            Carrier::Udp => self.owed.set(p, false),
            Carrier::Tcp => self.owed_tcp.set(p, false),
        }
        Some((p, carrier))
    }

    /// The HANDSHAKE came on `path` over `carrier`: no more copies (the join trials and what
    /// was found of UDP stay). Over UDP, UDP passes on `path`.
    pub(super) fn handshake_done(&mut self, path: PathId, carrier: Carrier) {
        let (trials, silent) = (std::mem::take(&mut self.trials), self.udp_silent);
        *self = Spread { trials, udp_silent: silent, ..Spread::default() };
        if carrier == Carrier::Udp {
            self.udp_silent.set(path, false);
        }
    }

    /// The handshake was answered over TCP: UDP was silent on every path of `all`. Returns
    /// every path found silent, these and those before.
    pub(super) fn silent_everywhere(&mut self, all: impl Iterator<Item = PathId>) -> PathSet {
        for p in all {
            self.udp_silent.set(p, true);
        }
        self.udp_silent
    }

    /// The path the connection first tried, to join once it is up (the handshake came
    /// through another).
    pub(super) fn rejoin_first(&mut self, first: PathId) {
        self.rejoin_first = Some(first);
    }

    pub(super) fn take_rejoin_first(&mut self) -> Option<PathId> {
        self.rejoin_first.take()
    }

    /// The carrier a client's join from `path` takes: TCP where UDP was found silent.
    pub(super) fn join_carrier(&self, path: PathId) -> Carrier {
        if self.udp_silent.contains(path) {
            Carrier::Tcp
        } else {
            Carrier::Udp
        }
    }

    /// What was found of UDP on `path`: silent, or it passes.
    pub(super) fn udp_found(&mut self, path: PathId, silent: bool) {
        self.udp_silent.set(path, silent);
    }

    /// A UDP join in slot `k` (subflow `id`) on `path` is on trial until `until` (at most 64
    /// at once).
    pub(super) fn trial(&mut self, k: usize, id: u32, path: PathId, until: Time) {
        if self.trials.len() < 64 {
            self.trials.push((k, id, path, until));
        }
    }

    /// A UDP join whose trial ended by `now`, taken off the trials: (slot, subflow, path).
    pub(super) fn take_ended_trial(&mut self, now: Time) -> Option<(usize, u32, PathId)> {
        let i = self.trials.iter().position(|t| t.3 <= now)?;
        let (k, id, path, _) = self.trials.swap_remove(i);
        Some((k, id, path))
    }
}
