//! MultiMob (§III-B of the paper), a component: the client's receive idle timer, the
//! fail-back hold, the endpoint's pace for the probes of a failover, and MultiMob's decisions
//! read from the subflows (whether a silent path fails over, whether the fail-back is due,
//! which subflows an oracle verdict names, what each subflow tells the oracle). A part of the
//! path layer (`Paths`), which acts on the decisions (`fail_over`, `apply_oracle`,
//! `on_path_silent`, `check_fail_back` in `paths`): opening and closing subflows is the path
//! manager's. Not in MultiMob: a regular subflow that keeps losing after the oracle cleared
//! it is held off data until the fail-back ([`MultiMob::held`]).

use super::local_paths::LocalPaths;
use super::subflow::table::SubflowTable;
use crate::{PathId, Time};

/// Losses of a cleared subflow sent within this long of the one that counted as a break of
/// the fail-back hold belong to that break (see [`MultiMob::fail_back`]).
const BREAK_GAP: Time = 500_000;

#[derive(Debug, Default)]
pub(super) struct MultiMob {
    /// A `multimob` client: the only side and path manager whose decisions these are.
    client: bool,
    /// The receive idle timer (MultiMob §III-B).
    pub idle_timer: oracle::IdleTimer,
    /// A stream the server paces, and the number of the subflow it comes on (boxed: a
    /// client's only, given back when the connection idles, `trim_pace`).
    pace: Option<Box<(oracle::PacedStream, u32)>>,
    /// Since when a regular subflow has been usable while failover subflows are open (the
    /// fail-back follows `Multipath::fail_back_hold` later).
    healthy_since: Option<Time>,
    /// When the oracle first cleared a regular subflow's netpath while failover subflows were
    /// open (0: not since the fail-back, or since none is open), and the slots of the regular
    /// subflows it has cleared since: see [`MultiMob::held`].
    cleared_at: Time,
    cleared: u64,
    /// How many breaks this failover's hold has had (see [`MultiMob::fail_back`]): each
    /// doubles the hold, up to 8 times it; and the send time up to which a cleared subflow's
    /// losses belong to the last break.
    breaks: u8,
    counted: Time,
    /// While failover subflows are open, each regular subflow is probed this often (0: a
    /// fifth of the oracle's period). The endpoint sets it from how many of its connections
    /// probe (`Paths::set_probe_interval`).
    pub probe_every: Time,
}

/// What the fail-back check found (see [`MultiMob::fail_back`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FailBack {
    /// Nothing to hold: no failover subflow is open, or no regular subflow works.
    Nothing,
    /// A regular subflow works, but not for the hold yet (or the oracle still flags it).
    Holding,
    /// Fail back now: close the failover subflows and clear the flags.
    Due,
}

impl MultiMob {
    /// `client`: a client under the `multimob` path manager.
    pub fn new(client: bool) -> Self {
        Self { client, ..Self::default() }
    }

    /// Data marked MP_IDLE arrived on subflow `id` (see [`oracle::PacedStream`]); `floor`: the
    /// receive idle timer's length; `our_data`: when we last sent data.
    pub fn on_idle_data(&mut self, now: Time, floor: Time, id: u32, our_data: Time) {
        let p = self.pace.get_or_insert_with(Default::default);
        p.0.on_idle_data(now, floor, our_data);
        p.1 = id;
    }

    /// When the receive idle timer (`idle_too`: while a path is left to fail over to) or the
    /// paced stream's watch (always, so that it is used up on time) expires first.
    pub fn receive_deadline(&self, idle_too: bool) -> Option<Time> {
        let pace = self.pace.as_ref().and_then(|p| p.0.deadline());
        match (self.idle_timer.deadline().filter(|_| idle_too), pace) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The number of the subflow a paced stream came on, once when its next arrival is
    /// overdue at `now`.
    pub fn pace_overdue(&mut self, now: Time) -> Option<u32> {
        let p = self.pace.as_mut()?;
        p.0.expired(now).then_some(p.1)
    }

    /// The connection idles (its buffers are given back): a paced stream's record goes too
    /// unless it is watched (any pace is void by then: intervals of at most 2 s).
    pub fn trim_pace(&mut self) {
        if self.pace.as_ref().is_some_and(|p| p.0.deadline().is_none()) {
            self.pace = None;
        }
    }

    /// Heap bytes held (the paced stream's record).
    pub fn heap_bytes(&self) -> usize {
        self.pace.as_ref().map_or(0, |_| std::mem::size_of::<(oracle::PacedStream, u32)>())
    }

    /// A `multimob` client: the receive idle timer follows the data received.
    pub fn tracks_receive_idle(&self) -> bool {
        self.client
    }

    /// Subflows opened for a failover are open, so a fail-back may follow.
    pub fn failover_open(&self, subflows: &SubflowTable) -> bool {
        self.client && subflows.iter().any(|s| s.failover() && s.is_open())
    }

    /// Whether a subflow the fail-back could go to is no longer flagged by the oracle.
    pub fn fail_back_cleared(subflows: &SubflowTable) -> bool {
        subflows.iter().any(|s| s.fail_back_candidate() && !s.was_bad())
    }

    /// When the running hold started, while the fail-back could follow it.
    pub fn hold_deadline(&self, subflows: &SubflowTable, hold: Time) -> Option<Time> {
        // Still flagged when the hold ends: the oracle's clear verdict fails back instead.
        let start = self.healthy_since.filter(|_| Self::fail_back_cleared(subflows))?;
        Some(start.saturating_add(self.hold(hold)))
    }

    /// The hold the fail-back waits for: `hold`, doubled for each break (see
    /// [`MultiMob::fail_back`]), up to 8 times it.
    fn hold(&self, hold: Time) -> Time {
        hold.saturating_mul(1 << self.breaks.min(3))
    }

    /// The fail-back check: once a regular subflow has worked (answered, no loss or timeout;
    /// while failover subflows are open it is probed) for the hold, and the oracle no longer
    /// flags it, the fail-back is due. The hold counts from the subflow's recovery, not from
    /// the oracle's verdict, which needs a period or two of evidence to clear: the two
    /// overlap.
    ///
    /// Each *break* doubles the hold (up to 8 times `hold`), as route flap damping does: a
    /// subflow the oracle cleared in this failover lost a packet sent after the clear
    /// (declared lost on a later packet's acknowledgement, as for [`MultiMob::held`]), and
    /// losses sent within `BREAK_GAP` of the one that counted belong to the same break (a
    /// burst is one). A WiFi losing 5 % holds clean for 3 s now and then, and a fail-back then
    /// closed the cellular subflow under a WiFi about to lose 15 % (issue 54's walk). Tail
    /// probes, timeouts and losses of packets sent before the clear (a blackout's) are no
    /// breaks; a blackout after the clear, within the same failover, is one when WiFi
    /// returns and its lost packets are found.
    pub fn fail_back(&mut self, now: Time, subflows: &SubflowTable, hold: Time) -> FailBack {
        let last_loss = subflows.iter().filter(|s| s.fail_back_candidate()).map(|s| s.rec().last_loss_at).max();
        let open = self.failover_open(subflows);
        if !open {
            self.forget_clears();
        }
        let (true, Some(last_loss)) = (open, last_loss) else {
            self.healthy_since = None;
            return FailBack::Nothing;
        };
        let lost_sent = subflows
            .enumerate()
            .filter(|&(k, s)| self.cleared_regular(k, s))
            .map(|(_, s)| s.rec().last_lost_sent)
            .max()
            .unwrap_or(0);
        if lost_sent > self.cleared_at.max(self.counted) {
            self.breaks = self.breaks.saturating_add(1);
            self.counted = lost_sent.saturating_add(BREAK_GAP);
        }
        let since = (*self.healthy_since.get_or_insert(now)).max(last_loss);
        self.healthy_since = Some(since);
        if now < since.saturating_add(self.hold(hold)) || !Self::fail_back_cleared(subflows) {
            return FailBack::Holding;
        }
        self.healthy_since = None;
        self.forget_clears();
        FailBack::Due
    }

    /// The oracle cleared the netpath of the subflows in slots `on` at `now`: its regular
    /// ones are remembered while failover subflows are open.
    pub fn on_clear(&mut self, now: Time, subflows: &SubflowTable, on: u64) {
        let regular = subflows
            .enumerate()
            .filter(|(k, s)| on & (1 << (k % 64)) != 0 && !s.failover() && !s.backup())
            .fold(0, |m, (k, _)| m | 1 << (k % 64));
        if regular != 0 && self.failover_open(subflows) {
            if self.cleared_at == 0 {
                self.cleared_at = now.max(1);
            }
            self.cleared |= regular;
        }
    }

    /// Whether the subflow in slot `k` is a regular one that a clear verdict named in this
    /// failover.
    fn cleared_regular(&self, k: usize, s: &super::subflow::Subflow) -> bool {
        self.cleared_at > 0 && self.cleared & (1 << (k % 64)) != 0 && !s.failover() && !s.backup()
    }

    /// No failover is open (the fail-back came, or a new failover starts): no subflow is held.
    pub fn forget_clears(&mut self) {
        self.cleared_at = 0;
        self.cleared = 0;
        self.breaks = 0;
        self.counted = 0;
    }

    /// Whether the regular subflow in slot `k` is held off data until the fail-back: the
    /// oracle cleared its netpath while failover subflows were open, and it lost a packet sent
    /// after the first such clear (declared lost on a later packet's acknowledgement: the path
    /// works, and loses; a reordering taken for a loss counts too). Held, it is flagged as the
    /// oracle's bad ones are, a preference: the scheduler still sends on it when no failover
    /// subflow can (priority's fallback). The hold ends at the fail-back, or when the failover
    /// subflows close otherwise (`fail_back` finds none open).
    ///
    /// The oracle's smoothed rates clear a WiFi that loses 5 % (poor but usable) within a
    /// period of a failover; MultiMob's scheduler then sends on it again at once, while the
    /// failover subflow stays open (a lossy WiFi never holds clean for the fail-back). Issue
    /// 54's walk: the WiFi went on to lose 15 %, unseen by the oracle's verdicts for seconds,
    /// and the next request's bursts waited for its repairs (over 120 ms in 8 % of runs). A
    /// subflow that has lost nothing since the clear (a blackout over, a glitch within the
    /// promotion) carries data at once, as before. One declared bad and cleared again within
    /// the same failover (flapping) is judged from the first clear.
    pub fn held(&self, k: usize, s: &super::subflow::Subflow) -> bool {
        self.cleared_regular(k, s) && s.rec().last_lost_sent > self.cleared_at
    }

    /// While failover subflows are open, how often each regular subflow is probed: a fifth of
    /// the oracle's `period`, so that a path's return is seen within the period, unless the
    /// endpoint asks for less (`probe_every`).
    pub fn probe_interval(&self, period: Time) -> Time {
        (period / 5).max(self.probe_every)
    }

    /// The peer's RTO as last reported on any subflow (MultiMob's RTO option), at most
    /// `max_rto`.
    pub fn peer_rto(subflows: &SubflowTable, max_rto: Time) -> Option<Time> {
        subflows.iter().filter_map(|s| s.peer_rto_ms()).max().map(|ms| ms.saturating_mul(1000).min(max_rto))
    }

    /// Whether subflow `i`'s tail loss probe may fail its path over (`on_timeout`:
    /// `Multipath::failover_on_timeout`; `unused_path`: a path is left to open): a regular
    /// subflow, no other usable one.
    pub fn tlp_may_fail_over(&self, subflows: &SubflowTable, i: usize, on_timeout: bool, unused_path: bool) -> bool {
        let sf = &subflows[i];
        let alone = !subflows.iter().any(|s| s.id() != sf.id() && s.is_open() && !s.pf());
        self.client && on_timeout && !sf.backup() && alone && unused_path
    }

    /// Whether subflow `i`'s unanswered tail loss probe should move its data to another
    /// subflow at once: one is established and not failed (a failover subflow still open, the
    /// server's side of it), and `i` is not already failed.
    pub fn tlp_may_reinject(subflows: &SubflowTable, i: usize) -> bool {
        let sf = &subflows[i];
        !sf.pf() && subflows.iter().any(|s| s.id() != sf.id() && s.established() && !s.pf())
    }

    /// The netpath of subflow `i`: (local address, remote address, local path).
    pub fn netpath(subflows: &SubflowTable, local: &LocalPaths, i: usize) -> Option<oracle::Netpath> {
        let sf = subflows.get(i)?;
        let lp = local.get(sf.local_path())?;
        let tcp = sf.carrier() == crate::Carrier::Tcp;
        Some(oracle::Netpath { src: lp.addr.ip(), dst: sf.remote().ip(), iface: sf.local_path().0, tcp })
    }

    /// The local path of a netpath.
    pub fn netpath_path(local: &LocalPaths, np: &oracle::Netpath) -> Option<PathId> {
        local.get(PathId(np.iface)).map(|_| PathId(np.iface))
    }

    /// The open subflows on `netpath` (a mask of slots).
    pub fn on_netpath(subflows: &SubflowTable, local: &LocalPaths, netpath: oracle::Netpath) -> u64 {
        (0..subflows.slot_bound().min(64))
            .filter(|&k| {
                subflows.get(k).is_some_and(|s| s.is_open()) && Self::netpath(subflows, local, k) == Some(netpath)
            })
            .fold(0u64, |m, k| m | 1 << k)
    }

    /// What each open subflow did since the last call, for the oracle: `(netpath, sample)`.
    pub fn samples(
        subflows: &mut SubflowTable,
        local: &LocalPaths,
        out: &mut impl FnMut(oracle::Netpath, oracle::Sample),
    ) {
        for i in 0..subflows.slot_bound() {
            let open = subflows.get(i).is_some_and(|s| s.is_open());
            let Some(np) = Self::netpath(subflows, local, i).filter(|_| open) else { continue };
            let sf = &mut subflows[i];
            let d = sf.oracle_sample();
            let rtt = &sf.rec().rtt;
            // The RTO with its backoff, as Linux hands it to MultiMob's module.
            let rto = (rtt.rto() << sf.rec().rto_backoff.min(10)).min(rtt.max_rto());
            let (srtt, min_rtt) = if rtt.has_sample { (rtt.srtt, rtt.min) } else { (0, 0) };
            let received = d[3];
            out(np, oracle::Sample { sent: d[0], lost: d[1], retransmitted: d[2], rto, srtt, min_rtt, received });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conn::cc::{Cc, CongestionControl};
    use crate::conn::subflow::recovery::Rtt;
    use crate::conn::subflow::{Subflow, SubflowState};
    use crate::wire::Cid;

    fn subflow(id: u32) -> Subflow {
        let addr = "192.0.2.1:5201".parse().expect("address");
        let rtt = Rtt::new(1_000_000, 200_000, 60_000_000);
        let cc = Cc::new(CongestionControl::Reno, 1200);
        Subflow::new(id, SubflowState::Established, PathId(0), addr, Cid([id as u8; 8]), true, false, rtt, cc, 0)
    }

    /// Issue 54's hold: only a regular subflow that a clear verdict named, and that lost a
    /// packet sent after the first clear of the failover, is held; until the clears are
    /// forgotten (the fail-back, or a new failover).
    #[test]
    fn only_a_cleared_subflow_that_lost_since_is_held() {
        let mut t = SubflowTable::default();
        t.insert(subflow(0)); // WiFi
        t.insert(subflow(1)); // wired
        let mut cell = subflow(2);
        cell.mark_failover();
        t.insert(cell);
        let mut m = MultiMob::new(true);
        assert!(m.failover_open(&t));
        m.on_clear(1_000, &t, 0b01);
        assert!(!m.held(0, &t[0]), "nothing lost");
        t[0].rec_mut().last_lost_sent = 900;
        assert!(!m.held(0, &t[0]), "lost before the clear (a blackout's probes)");
        t[0].rec_mut().last_lost_sent = 1_500;
        t[1].rec_mut().last_lost_sent = 1_500;
        t[2].rec_mut().last_lost_sent = 1_500;
        assert!(m.held(0, &t[0]));
        assert!(!m.held(1, &t[1]), "the wired subflow was never cleared");
        assert!(!m.held(2, &t[2]), "the failover subflow is never held");
        // A later clear names the wired one; losses count from the first clear.
        m.on_clear(2_000, &t, 0b10);
        assert!(m.held(1, &t[1]));
        m.forget_clears();
        assert!(!m.held(0, &t[0]) && !m.held(1, &t[1]));
        // No failover open: a clear holds nothing.
        let mut m = MultiMob::new(true);
        let mut t = SubflowTable::default();
        t.insert(subflow(0));
        m.on_clear(1_000, &t, 0b01);
        t[0].rec_mut().last_lost_sent = 1_500;
        assert!(!m.held(0, &t[0]));
    }

    /// Issue 54's damped fail-back: a cleared subflow's loss of a packet sent after the clear
    /// doubles the hold, the losses within `BREAK_GAP` of it being the same break; a tail
    /// probe or a loss sent before the clear restarts the hold without doubling it.
    #[test]
    fn losses_after_the_clear_double_the_fail_back_hold() {
        const S: Time = 1_000_000;
        let hold = 3 * S;
        let mut t = SubflowTable::default();
        t.insert(subflow(0));
        let mut cell = subflow(1);
        cell.mark_failover();
        t.insert(cell);
        let mut m = MultiMob::new(true);
        m.on_clear(S, &t, 0b01);
        t[0].rec_mut().last_lost_sent = S / 2; // a blackout's, before the clear
        t[0].rec_mut().last_loss_at = S / 2;
        assert_eq!(m.fail_back(S, &t, hold), FailBack::Holding);
        assert_eq!(m.hold_deadline(&t, hold), Some(4 * S), "the plain hold from the clear");
        let mut lose = |m: &mut MultiMob, sent: Time, found: Time| {
            t[0].rec_mut().last_lost_sent = sent;
            t[0].rec_mut().last_loss_at = found;
            assert_eq!(m.fail_back(found, &t, hold), FailBack::Holding);
            m.hold_deadline(&t, hold).unwrap() - found
        };
        assert_eq!(lose(&mut m, S + S / 5, S + S / 4), 2 * hold, "a loss after the clear");
        assert_eq!(lose(&mut m, S + S / 2, S + S / 2), 2 * hold, "the same break (within 0.5 s)");
        assert_eq!(lose(&mut m, 2 * S, 2 * S + S / 20), 4 * hold, "a second break");
        assert_eq!(lose(&mut m, 2 * S, 3 * S), 4 * hold, "a tail probe: no new loss sent");
        for k in 0..4 {
            lose(&mut m, (4 + k) * S, (4 + k) * S);
        }
        assert_eq!(m.hold_deadline(&t, hold), Some(7 * S + 8 * hold), "at most 8 times");
        assert_eq!(m.fail_back(7 * S + 8 * hold, &t, hold), FailBack::Due);
        // Forgotten with the fail-back.
        m.on_clear(40 * S, &t, 0b01);
        assert_eq!(m.fail_back(40 * S, &t, hold), FailBack::Holding);
        assert_eq!(m.hold_deadline(&t, hold), Some(40 * S + hold));
    }
}
