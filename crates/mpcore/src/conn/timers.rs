//! The connection's timers. Every timer has a kind and one deadline in a [`TimerTable`],
//! computed from the state by one function ([`Clock::timers`] for the connection,
//! `Subflow::timers` for each subflow): `poll_timeout` reports the earliest of them and
//! `handle_timeout` (`conn::input`, then `Paths::on_timers` here) does the work of exactly the
//! kinds whose deadline has passed, so the two cannot disagree. Each handler moves its own
//! deadline (or ends what it times), so after `handle_timeout(now)` no deadline at or before
//! `now` is left (the simulator checks it). Here too: the path layer's subflow ACKs and losses
//! (`Paths::on_ack`, `detect_lost`), and the buffers' size and trim.

use super::cx::Cx;
use super::events::{CloseReason, Event, Side};
use super::liveness::Liveness;
use super::multimob::MultiMob;
use super::paths::Paths;
use super::recv::RecvSide;
use super::send::SendSide;
use super::session::Session;
use super::state::State;
use super::subflow::loss::Expiry;
use super::subflow::table::SubflowTable;
use super::subflow::Subflow;
use super::subflow::{timer as sf_timer, TimerContext};
use super::timer_table::TimerTable;
use crate::config::Config;
use crate::config::PathManager;
use crate::wire::frame::reason;
use crate::wire::Ack;
use crate::Time;

/// The kinds of the connection's own timers.
pub mod timer {
    /// The drain after closing is over: the connection may be forgotten.
    pub const DRAIN: usize = 0;
    /// Client: the INITIAL is due again.
    pub const HANDSHAKE: usize = 1;
    /// Nothing authenticated arrived for the idle timeout.
    pub const IDLE: usize = 2;
    /// `multimob`: the receive idle timer (MultiMob §III-B), and a paced stream's overdue
    /// chunk (`oracle::PacedStream`).
    pub const RECEIVE_IDLE: usize = 3;
    /// `multimob`: a regular subflow has been healthy for the fail-back hold.
    pub const FAIL_BACK: usize = 4;
    /// Look whether the buffers can be given back (`trim`).
    pub const TRIM: usize = 5;
    /// Our data awaits acknowledgement and the peer has been silent for the peer timeout.
    pub const PEER: usize = 6;
    /// Client: the first handshake's other paths or TCP copies are due, or a UDP join's
    /// trial ends (`spread`).
    pub const CARRIER: usize = 7;
    pub const COUNT: usize = 8;
}

/// How long a connection moves no data before its buffers are given back (issue 19: an idle
/// connection's memory is its state, not its peak). Longer than a request/response gap of an
/// interactive app, so that a connection in use keeps its buffers.
pub const TRIM_AFTER: Time = 3_000_000;

/// What the connection's timers are computed from: a view of its parts, read only. Each
/// deadline is a function of these (see the module's doc).
pub(super) struct Clock<'a> {
    pub(super) side: Side,
    pub(super) state: State,
    pub(super) config: &'a Config,
    pub(super) session: &'a Session,
    pub(super) paths: &'a Paths,
    pub(super) live: &'a Liveness,
    pub(super) send: &'a SendSide,
}

impl<'a> Clock<'a> {
    /// The view from the path layer's side: `paths` and its context.
    pub(super) fn of(cx: &'a Cx<'_>, paths: &'a Paths) -> Self {
        Clock {
            side: cx.side,
            state: *cx.state,
            config: cx.config,
            session: cx.session,
            paths,
            live: cx.live,
            send: cx.send,
        }
    }

    fn is_closed(&self) -> bool {
        matches!(self.state, State::Closed(_))
    }

    /// The deadline of each of the connection's own timers.
    pub(super) fn timers(&self) -> TimerTable<{ timer::COUNT }> {
        let mut t = TimerTable::default();
        t.set(timer::DRAIN, self.live.drain_until);
        t.set(timer::TRIM, self.live.trim_at);
        if !self.is_closed() {
            t.set(timer::CARRIER, self.paths.spread.deadline());
        }
        if self.state == State::Initial {
            t.set(timer::HANDSHAKE, self.session.hs.as_ref().and_then(|hs| hs.deadline()));
        }
        if !self.is_closed() {
            let idle = idle_timeout(self.config, self.session, &self.paths.subflows);
            if idle > 0 {
                t.set(timer::IDLE, Some(self.live.last_rx.saturating_add(idle)));
            }
            let watch =
                self.config.transport.peer_timeout > 0 && self.state == State::Established && self.awaits_peer();
            if watch && self.live.peer_wait.is_some() {
                t.set(timer::PEER, Some(self.live.silent_since().saturating_add(self.peer_timeout())));
            }
            if self.paths.multimob.tracks_receive_idle() {
                t.set(timer::RECEIVE_IDLE, self.paths.multimob.receive_deadline(self.paths.has_unused_path()));
            }
            let hold = self.config.multipath.fail_back_hold;
            t.set(timer::FAIL_BACK, self.paths.multimob.hold_deadline(&self.paths.subflows, hold));
        }
        t
    }

    /// How long a silent peer is waited for while our data awaits its acknowledgement:
    /// `Config::transport.peer_timeout`, and at least 15 RTOs of the slowest open subflow (the sum of
    /// four retransmission timeouts, each twice the last).
    pub(super) fn peer_timeout(&self) -> u64 {
        self.config.transport.peer_timeout.max(15 * largest_rto(self.config, &self.paths.subflows))
    }

    /// Data of ours (or our DATA_FIN) awaits the peer's acknowledgement.
    pub(super) fn awaits_peer(&self) -> bool {
        self.send.unacked() > 0 || (self.send.is_finished() && !self.send.fin_acked()) || self.live.probe.is_some()
    }

    /// Why the connection gives up on its silent peer: the probes that went unanswered, for
    /// how long, on which paths.
    pub(super) fn peer_unresponsive(&self, now: Time) -> CloseReason {
        let open = || self.paths.subflows.iter().filter(|s| s.is_open());
        let probes = open().map(|s| s.rec().rto_backoff + u32::from(s.rec().tlp_sent)).sum();
        let paths = open().filter(|s| s.local_path().0 < 64).fold(0u64, |m, s| m | 1 << s.local_path().0);
        let since = self.live.silent_since();
        CloseReason::PeerUnresponsive { probes, silent_ms: now.saturating_sub(since) / 1000, paths }
    }

    /// What the subflows' timers depend on now.
    pub(super) fn timer_context(&self) -> TimerContext {
        let open = !self.is_closed();
        let idle = self.config.multipath.subflow_idle_timeout;
        let keep_alive_on = self.keep_alive_subflow();
        TimerContext {
            peer_max_ack_delay: self.peer_max_ack_delay(),
            keep_alive: if open { self.keep_alive_interval(keep_alive_on) } else { 0 },
            keep_alive_on: keep_alive_on.map(|s| s.id()),
            probe_bad: if open && self.paths.failover_open() {
                self.paths.multimob.probe_interval(self.config.multipath.oracle.period)
            } else {
                0
            },
            idle_timeout: (open
                && idle > 0
                && (self.side == Side::Server || Paths::rejoins_silent_paths(self.side, self.config)))
            .then_some(idle),
            idle_client: self.side == Side::Client,
            refresh_rtt: open && self.send.unacked() > 0,
            freshest_rx: self.paths.subflows.iter().filter(|s| s.is_open()).map(|s| s.last_rx()).max().unwrap_or(0),
        }
    }

    /// The keep-alive interval on subflow `on` (PROTOCOL.md §7). On a regular subflow, the
    /// client's `keep_alive` (for the NAT bindings of its path), at most half of either
    /// side's idle timeout, so that a keep-alive and its answer land before either side gives
    /// up. On a backup subflow that is all the connection has left (WiFi lost, cellular
    /// carrying), only what the idle timeouts need: half of the smaller one, since every PING
    /// there costs a cellular radio promotion; its NAT binding may lapse, and the client's
    /// next packet makes a new one. 0 (none) when keep-alives are off, and on the server,
    /// which is not behind the NAT whose bindings they refresh and whose PINGs would wake a
    /// phone's radio.
    pub(super) fn keep_alive_interval(&self, on: Option<&Subflow>) -> u64 {
        let Some(sf) = on.filter(|_| self.side == Side::Client && self.config.transport.keep_alive > 0) else {
            return 0;
        };
        let idle = match idle_timeout(self.config, self.session, &self.paths.subflows) {
            0 => u64::MAX,
            t => t / 2,
        };
        match sf.backup() {
            false => self.config.transport.keep_alive.min(idle),
            true if idle == u64::MAX => 0,
            true => idle,
        }
    }

    /// The one subflow keep-alives go on, the connection's primary: among the established,
    /// not potentially failed subflows, regular ones before backup ones, the one that sent
    /// data most recently (the client's requests pick the path the answers come back on),
    /// then the one data (or its acknowledgement) arrived on, then the one heard from. A backup
    /// subflow gets them only when it is all that is left, so an idle cellular backup stays
    /// silent.
    pub(super) fn keep_alive_subflow(&self) -> Option<&'a Subflow> {
        let ok = self.paths.subflows.iter().filter(|s| s.is_open() && s.established() && !s.pf());
        let key = |s: &&Subflow| {
            (!s.backup(), s.last_data_tx(), s.last_original_rx(), s.last_rx(), std::cmp::Reverse(s.id()))
        };
        ok.max_by_key(key)
    }

    pub(super) fn peer_max_ack_delay(&self) -> u64 {
        self.session.peer_params.max_ack_delay_ms * 1000
    }

    /// The earliest time `handle_timeout` has work to do.
    pub(super) fn poll_timeout(&self) -> Option<Time> {
        if self.live.drained {
            return None;
        }
        let cx = self.timer_context();
        // Before the HANDSHAKE, the INITIAL's timer stands for subflow 0's: its EARLY packets
        // (§4.9) go again after each INITIAL, and their losses are found after the handshake.
        let handshaking = self.state == State::Initial;
        let subflows = self.paths.subflows.iter().filter(|_| !handshaking).filter_map(|s| s.timers(&cx).next());
        subflows.chain(self.timers().next()).min()
    }
}

/// The idle timeout in force (RFC 9000 §10.1): the smaller of ours and the peer's, or the
/// one given if only one side gives one (0: none), and never below three RTOs of the
/// slowest open subflow, so that a slow path's probes can be answered before it fires.
/// Before the handshake tells the peer's, ours.
pub(super) fn idle_timeout(config: &Config, session: &Session, subflows: &SubflowTable) -> u64 {
    let local = config.transport.idle_timeout;
    let peer = if session.keys.is_some() { session.peer_params.idle_timeout_ms.saturating_mul(1000) } else { 0 };
    let t = match (local, peer) {
        (0, p) => p,
        (l, 0) => l,
        (l, p) => l.min(p),
    };
    if t == 0 {
        return 0;
    }
    t.max(3 * largest_rto(config, subflows))
}

/// The largest retransmission timeout (without backoff) of the open subflows.
fn largest_rto(config: &Config, subflows: &SubflowTable) -> u64 {
    let open = subflows.iter().filter(|s| s.is_open());
    open.map(|s| s.rec().rtt.rto()).max().unwrap_or(config.transport.initial_rto)
}

/// Bytes of the buffers that grow with use: the stream's two sides, each subflow's
/// sent-packet ring and received packet numbers.
pub(super) fn buffer_bytes(send: &SendSide, recv: &RecvSide, subflows: &SubflowTable) -> usize {
    let sf = subflows.iter().map(|s| s.rec().sent.capacity_bytes() + s.acks().received.capacity_bytes());
    send.buffer_bytes() + recv.buffer_bytes() + sf.sum::<usize>()
}

/// The trim timer: no data moved for `TRIM_AFTER`, so every buffer that holds nothing is
/// given back; otherwise the timer waits for `TRIM_AFTER` after the last data.
pub(super) fn trim(
    now: Time,
    live: &mut Liveness,
    send: &mut SendSide,
    recv: &mut RecvSide,
    subflows: &mut SubflowTable,
) {
    let last_data = subflows.iter().map(|s| s.last_data_tx().max(s.last_original_rx())).max().unwrap_or(0);
    if now < last_data.saturating_add(TRIM_AFTER) {
        live.trim_at = Some(last_data.saturating_add(TRIM_AFTER));
        return;
    }
    live.trim_at = None;
    send.trim();
    recv.trim();
    for sf in subflows.iter_mut() {
        sf.trim();
    }
}

/// The least time a tail loss probe's answer is given beyond the smoothed RTT.
const GRANULARITY: u64 = 2_000;

/// The least silence (µs, data in flight and nothing received) on which a path is declared
/// silent, whatever its RTT. On a path of a few ms (loopback, a WiFi to a nearby server) the
/// probe's timeouts are a millisecond or two, less than the time a busy host's scheduler can
/// hold the peer's process: CI's 2-core machine, running a debug build, once kept a loopback
/// peer from answering long enough that a backup path that was never needed carried data. A
/// path declared silent wakes the cellular radio (0.26 s and a tail of seconds at ~1 W), so
/// a few ms of jitter must not do it. Paths of 10 ms RTT or more are not affected: their
/// probe already waits longer.
pub(super) const SILENCE_FLOOR: u64 = 10_000;

impl Paths {
    /// The tail loss probe of subflow `i` was not answered in time.
    ///
    /// A `multimob` client with a path left to open fails the path over: the endpoint's oracle
    /// hears of it too, and declares the netpath bad for every connection on it ("one
    /// connection experiences issues, others react"). Otherwise, when another subflow works,
    /// the subflow is declared potentially failed and its data in flight is queued for that
    /// one, without waiting for the retransmission timeout (a flapping WiFi that fails again
    /// after the client's request arrived: the server answers over the open cellular subflow
    /// an RTO sooner). It stays in flight here, so the first new ACK recovers the subflow.
    pub(super) fn on_tlp_check(&mut self, cx: &mut Cx<'_>, now: Time, i: usize) {
        self.subflows[i].set_tlp_check(None);
        if self.subflows[i].rec().tlp_sent {
            self.on_path_silent(cx, now, i);
        }
    }

    pub(super) fn on_retransmission_timeout(&mut self, cx: &mut Cx<'_>, now: Time, i: usize) {
        match self.subflows[i].on_retransmission_timer(now, cx.config.transport.max_handshake_attempts) {
            Expiry::TailProbe => {
                // multimob: the primary's first timeout with data pending and nothing else to
                // fall back on may be a failed path, or one lost packet. The probe just sent
                // tells (it carries a PING, acknowledged at once): unanswered within an RTT and
                // its variation, the path is failed over (`on_tlp_check`); answered, nothing
                // opens (a 1% loss must not wake the cellular radio).
                // A whole flight of two or more packets unanswered is a path gone silent, not
                // a lost packet: it is acted on at once, a probe's round trip sooner.
                // Either way the path must have been silent for SILENCE_FLOOR first.
                if self.tlp_may_fail_over(cx.config, i) || MultiMob::tlp_may_reinject(&self.subflows, i) {
                    let silent = self.subflows[i].silent_for(now);
                    if self.subflows[i].flight_unanswered() && silent >= SILENCE_FLOOR {
                        self.on_path_silent(cx, now, i);
                    } else {
                        let rtt = &self.subflows[i].rec().rtt;
                        let wait = rtt.smoothed_or_default() + rtt.rttvar.max(GRANULARITY);
                        let wait = wait.max(SILENCE_FLOOR.saturating_sub(silent));
                        self.subflows[i].set_tlp_check(Some(now + wait));
                    }
                }
            }
            Expiry::JoinGivenUp => {
                self.shut_subflow(cx, now, i, reason::UNSPECIFIED, true);
                if self.subflows[i].rejoin() {
                    self.rejoin(cx, now, i);
                }
            }
            Expiry::Timeout { newly_failed } => {
                if newly_failed {
                    let id = self.subflows[i].id();
                    cx.emit(now, Event::SubflowFailed { id });
                    self.open_on_demand(cx, now);
                }
                // Everything in flight is presumed lost and goes to the retransmission queue,
                // from where the scheduler reinjects it on another subflow (RFC 8684 §3.3.6).
                self.reinject_in_flight(cx, now, i, true);
                if cx.side == Side::Client && *cx.state == State::Confirm && i == 0 {
                    self.subflows[0].ping();
                }
            }
        }
    }

    /// The subflows' timers due at `now`, and what the path managers do on every timeout:
    /// MultiMob's fail-back, and a PING on a failed path with nothing in flight, so that its
    /// retransmission timer probes it (with backoff) until it answers.
    pub(super) fn on_timers(&mut self, cx: &mut Cx<'_>, now: Time) {
        self.check_fail_back(cx, now);
        if cx.config.multipath.path_manager == PathManager::MultiMob && cx.side == Side::Client && !cx.is_closed() {
            // A failed path with nothing in flight gets a PING, so that its retransmission
            // timer probes it (with backoff) until it answers.
            for sf in self.subflows.iter_mut() {
                if sf.pf()
                    && sf.established()
                    && !sf.backup()
                    && sf.rec().eliciting_in_flight == 0
                    && sf.rec().probe.is_none()
                {
                    sf.ping();
                }
            }
        }
        let bound = if *cx.state == State::Initial { 0 } else { self.subflows.slot_bound() };
        for i in 0..bound {
            let tc = Clock::of(cx, self).timer_context();
            let Some(t) = self.subflows.get(i).map(|s| s.timers(&tc)) else { continue };
            let sf = &mut self.subflows[i];
            if t.expired(sf_timer::ACK, now) {
                sf.ack_now();
            }
            if t.expired(sf_timer::KEEP_ALIVE, now) {
                sf.keep_alive(now);
            }
            if t.expired(sf_timer::TLP_CHECK, now) {
                self.on_tlp_check(cx, now, i);
            }
            if t.expired(sf_timer::LOSS, now) {
                self.detect_lost(cx, now, i);
            }
            // Loss detection may have emptied the flight: the timer is read again.
            if self.subflows[i].timers(&tc).expired(sf_timer::RETRANSMIT, now) {
                self.on_retransmission_timeout(cx, now, i);
            }
            if t.expired(sf_timer::IDLE, now) && self.subflows[i].on_idle_timer(now) {
                // Silent for the subflow idle timeout, while another subflow was heard, and its
                // probe went unanswered: the peer's end of it is gone (PROTOCOL.md §7). A client
                // that keeps a subflow on every path joins there again.
                self.shut_subflow(cx, now, i, reason::IDLE_TIMEOUT, true);
                self.rejoin(cx, now, i);
            }
            if t.expired(sf_timer::DRAIN, now) {
                self.reclaim_subflow(cx, i);
            }
        }
        // The packets the timeouts declared lost, into the log at their time.
        cx.out.log_losses(&mut self.subflows);
        // After the loop: a timeout above may have moved the keep-alives to a subflow the loop
        // had already passed.
        let tc = Clock::of(cx, self).timer_context();
        if let Some(i) = tc.keep_alive_on.and_then(|id| self.subflows.by_number(id)) {
            if self.subflows[i].timers(&tc).expired(sf_timer::KEEP_ALIVE, now) {
                self.subflows[i].keep_alive(now);
            }
        }
    }

    /// Loss detection by time on subflow `i` (its loss timer expired).
    pub(super) fn detect_lost(&mut self, cx: &mut Cx<'_>, now: Time, i: usize) {
        let send = &mut *cx.send;
        self.subflows[i].detect_lost(now, &mut |d| send.queue_retransmission(d, 0));
    }

    // The subflows' recovery: their ACKs (with the coupling of RFC 6356 over all of them) and
    // the data of lost packets queued again.

    /// Subflow-level ACK (§5.3): the subflow takes what it acknowledges, then congestion
    /// control runs with the coupling over the open subflows, then loss detection.
    pub(super) fn on_ack(&mut self, cx: &mut Cx<'_>, now: Time, i: usize, a: &Ack<'_>) {
        let Some(acked) = self.subflows[i].on_ack(now, a, cx.config.transport.max_ack_delay) else { return };
        // Something new was acknowledged: a tail loss probe pending verdict was answered.
        self.subflows[i].set_tlp_check(None);
        let id = self.subflows[i].id();
        if acked.recovered {
            cx.emit(now, Event::SubflowRecovered { id });
        }
        if acked.established {
            let sf = &self.subflows[i];
            let ev = Event::SubflowEstablished { id, path: sf.local_path(), backup: sf.backup() };
            cx.emit(now, ev);
            self.on_carrier_established(cx, now, i);
        }
        let coupling = self.subflows.coupling(i, now);
        let send = &mut *cx.send;
        self.subflows[i].finish_ack(now, &acked, coupling, &mut |d| send.queue_retransmission(d, 0));
        cx.out.log_metrics(now, &self.subflows[i]);
    }
}
