//! `last-received`: MultiMob's server scheduler.
//!
//! "The server-side scheduler maintains for each subflow the timestamp of the *last original
//! packet* received over this subflow. A packet is considered to be *original* if it contains new
//! data (based on its DSN) or if it successfully concludes a subflow establishment. Similarly, an
//! acknowledgement is considered to be original if its Data ACK advances the lower edge of the
//! sending window. The MultiMob scheduler first removes from consideration the potentially
//! failed subflows and the ones where this data has already been transmitted. Then it iterates
//! over all remaining subflows to identify the one having the most recent original reception.
//! If the congestion window of this subflow is not full, it is selected." (MultiMob §III-A)
//!
//! With the published code's details (BRIEF.md):
//! 1. A single subflow bypasses the logic (the lowest-RTT rules apply to it).
//! 2. A DATA_FIN is answered on the subflow that carried the peer's DATA_FIN.
//! 3. Pass 1, regular subflows: skip potentially failed, not established and already used for
//!    this segment; take the newest timestamp; a subflow flagged high-RTO or was-bad never
//!    replaces a best one without the flag.
//! 4. Pass 2, every subflow including backups: only one whose timestamp is strictly newer than
//!    pass 1's choice replaces it (with the same flag rule).
//! 5. If the chosen subflow cannot send now (window full, recovery), send nothing now: no fall
//!    back to another subflow.
//!
//! The flag rule is read as a preference order: an unflagged subflow beats a flagged one, then
//! the newer reception wins, then the lower index. Read as a sequential scan ("replace the best
//! so far if newer, unless flagged against unflagged"), the answer would depend on the order of
//! the slice (a flagged subflow met first would keep an older unflagged one out); the preference
//! order gives the same answer whatever the order. It follows that pass 2 can only ever promote
//! a backup subflow (no regular subflow is newer than pass 1's choice under the same rule), so
//! the whole rule is computed in one scan keeping four maxima.

use crate::lowest_rtt::{data_fin_subflow, LowestRtt};
use crate::{considered, Flags, Pick, Segment, SubflowInfo, AVAIL_MASK};

/// What excludes a subflow from the lean scan: unavailable, already used, or flagged.
const FAST_MASK: u8 = AVAIL_MASK | Flags::ALREADY_SENT.0 | Flags::HIGH_RTO.0 | Flags::WAS_BAD.0;

/// The last-received scheduler (stateless: the timestamps live in the snapshots).
#[derive(Clone, Copy, Debug, Default)]
pub struct LastReceived;

/// Timestamps above this are clamped (2^56 µs is over 2,000 years).
const TS_MAX: u64 = (1 << 56) - 1;

/// A key whose maximum is the newest reception, ties going to the lower index; 0 is "none".
#[inline(always)]
fn rx_key(s: &SubflowInfo, i: usize) -> u64 {
    ((s.last_original_rx_us.min(TS_MAX) << 6) | (63 - i as u64)) + 1
}

#[inline(always)]
fn ts(k: u64) -> u64 {
    (k - 1) >> 6
}

#[inline(always)]
fn index(k: u64) -> usize {
    63 - ((k - 1) & 63) as usize
}

impl LastReceived {
    /// Picks per the module's rules.
    #[inline]
    pub fn pick(&self, subflows: &[SubflowInfo], seg: &Segment) -> Pick {
        if let ([a, b], None) = (subflows, seg.answer_data_fin_on) {
            if let Some(p) = Self::fast_two(a, b, seg) {
                return p;
            }
        }
        let subflows = considered(subflows);
        // The fast path's answer for a single eligible unflagged regular subflow (send if it can,
        // else wait) is also the lowest-RTT answer of the single-subflow bypass.
        if seg.answer_data_fin_on.is_none() {
            if let Some(p) = Self::fast(subflows, seg) {
                return p;
            }
        }
        if subflows.len() == 1 {
            return LowestRtt.pick(subflows, seg);
        }
        Self::full(subflows, seg)
    }

    /// The steady-state case in a lean scan: some eligible regular subflow is unflagged. Then
    /// pass 1 chooses the newest unflagged regular, and only a strictly newer unflagged backup
    /// replaces it in pass 2: one maximum over the eligible unflagged subflows, ordered by
    /// timestamp, then regular before backup, then lower index, decides.
    #[inline(always)]
    fn fast(subflows: &[SubflowInfo], seg: &Segment) -> Option<Pick> {
        let mut best = usize::MAX; // Newest timestamp first, a regular subflow before a backup on a tie, then the lowest
                                   // index (strict comparisons keep the first). Full 64-bit timestamps, no packing.
        let mut best_ts = 0u64;
        let mut best_regular = false;
        let mut regular_seen = false;
        for (i, s) in subflows.iter().enumerate() {
            if s.flags.0 & FAST_MASK != Flags::ESTABLISHED.0 {
                continue;
            }
            let regular = !s.backup();
            let ts = s.last_original_rx_us;
            if best == usize::MAX || ts > best_ts || (ts == best_ts && regular && !best_regular) {
                best = i;
                best_ts = ts;
                best_regular = regular;
            }
            regular_seen |= regular;
        }
        if !regular_seen {
            return None;
        }
        let s = subflows.get(best)?;
        Some(if s.can_send(seg.len) { Pick::Send(best) } else { Pick::Wait })
    }

    /// `fast` for the common two-subflow case (WiFi and cellular), without a loop. When both are
    /// eligible, regular and unflagged (the steady state) the rule reduces to one comparison of
    /// timestamps, tested first: the mixed cases cost a few more instructions, which at two
    /// subflows was the difference between 5.6 and 4.1 ns per pick.
    #[inline(always)]
    fn fast_two(a: &SubflowInfo, b: &SubflowInfo, seg: &Segment) -> Option<Pick> {
        const REGULAR: u8 = FAST_MASK | Flags::BACKUP.0;
        let (ta, tb) = (a.last_original_rx_us, b.last_original_rx_us);
        let (ra, rb) = (a.flags.0 & REGULAR == Flags::ESTABLISHED.0, b.flags.0 & REGULAR == Flags::ESTABLISHED.0);
        let take_b = if ra & rb {
            // The steady state (WiFi and cellular both healthy): the newer reception, a tie to a.
            tb > ta
        } else {
            if !(ra | rb) {
                return None;
            }
            let ea = a.flags.0 & FAST_MASK == Flags::ESTABLISHED.0;
            let eb = b.flags.0 & FAST_MASK == Flags::ESTABLISHED.0;
            // b wins only if a is out, or b is strictly newer, or as new and regular against a backup.
            eb & (!ea | (tb > ta) | ((tb == ta) & rb))
        };
        let (i, s) = if take_b { (1, b) } else { (0, a) };
        Some(if s.can_send(seg.len) { Pick::Send(i) } else { Pick::Wait })
    }

    #[inline(never)]
    fn full(subflows: &[SubflowInfo], seg: &Segment) -> Pick {
        if let Some(i) = data_fin_subflow(subflows, seg) {
            return Pick::Send(i);
        }
        // Pass 1's preference order in one key: unflagged above flagged, then newest, then lowest
        // index; plus the newest unflagged and the newest flagged backup for pass 2.
        let mut reg = 0u64;
        let mut bak_u = 0u64;
        let mut bak_f = 0u64;
        for (i, s) in subflows.iter().enumerate() {
            let eligible = s.available() & !s.already_sent();
            let flagged = s.flagged();
            let key = if eligible { rx_key(s, i) } else { 0 };
            let pref = key | (u64::from(!flagged & eligible) << 63);
            reg = reg.max(if s.backup() { 0 } else { pref });
            bak_u = bak_u.max(if s.backup() & !flagged { key } else { 0 });
            bak_f = bak_f.max(if s.backup() & flagged { key } else { 0 });
        }
        let reg_unflagged = reg >> 63 == 1;
        let reg = reg & !(1 << 63);
        let chosen = if reg == 0 {
            // No regular subflow is eligible: pass 2 alone, over the backups.
            if bak_u != 0 {
                bak_u
            } else {
                bak_f
            }
        } else if bak_u != 0 && ts(bak_u) > ts(reg) {
            // A strictly newer unflagged backup replaces pass 1's choice, flagged or not.
            bak_u
        } else if !reg_unflagged && bak_f != 0 && ts(bak_f) > ts(reg) {
            // A flagged one replaces only a flagged choice.
            bak_f
        } else {
            reg
        };
        if chosen == 0 {
            return Pick::Unavailable;
        }
        let i = index(chosen);
        if subflows[i].can_send(seg.len) {
            Pick::Send(i)
        } else {
            Pick::Wait
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{seg, sf};
    use crate::Flags;

    #[test]
    fn answers_on_the_subflow_the_client_used_last() {
        // The WiFi subflow has the lower RTT, but the client's last request came on cellular.
        let s = [sf(15, 1_000), sf(25, 2_000)];
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Send(1));
        assert_eq!(LowestRtt.pick(&s, &seg()), Pick::Send(0), "what lowest-rtt would do");
    }

    #[test]
    fn skips_potentially_failed_unestablished_and_already_used() {
        let mut s = [sf(15, 1_000), sf(25, 2_000), sf(40, 3_000)];
        s[2].flags.set(Flags::POTENTIALLY_FAILED, true);
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Send(1));
        s[1].flags.set(Flags::ESTABLISHED, false);
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Send(0));
        s[1].flags.set(Flags::ESTABLISHED, true);
        s[1].flags.set(Flags::ALREADY_SENT, true);
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Send(0));
    }

    #[test]
    fn full_window_means_wait_not_fall_back() {
        let mut s = [sf(15, 1_000), sf(25, 2_000)];
        s[1].cwnd_room = 0;
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Wait);
        s[1].cwnd_room = 14_600;
        s[1].flags.set(Flags::IN_RECOVERY, true);
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Wait);
    }

    #[test]
    fn flagged_subflow_never_replaces_an_unflagged_best() {
        let mut s = [sf(15, 1_000), sf(25, 2_000)];
        s[1].flags.set(Flags::WAS_BAD, true);
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Send(0));
        s[1].flags.set(Flags::WAS_BAD, false);
        s[1].flags.set(Flags::HIGH_RTO, true);
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Send(0));
        // Both flagged: the timestamp decides again.
        s[0].flags.set(Flags::WAS_BAD, true);
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Send(1));
        // An unflagged newer one replaces a flagged best.
        let mut s = [sf(15, 1_000), sf(25, 2_000)];
        s[0].flags.set(Flags::HIGH_RTO, true);
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Send(1));
        // And an unflagged older one beats a flagged newer one, in either order.
        let mut s = [sf(15, 2_000), sf(25, 1_000)];
        s[0].flags.set(Flags::WAS_BAD, true);
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Send(1));
        s.swap(0, 1);
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Send(0));
    }

    #[test]
    fn ties_go_to_the_lower_index() {
        let s = [sf(15, 5), sf(25, 5), sf(35, 5)];
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Send(0));
        // The two-subflow path, too.
        let s = [sf(25, 5), sf(15, 5)];
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Send(0));
    }

    #[test]
    fn flagged_regular_replaced_by_newer_backup_unflagged_first() {
        let mut s = [sf(15, 1_000), sf(25, 3_000), sf(35, 2_000)];
        s[0].flags.set(Flags::HIGH_RTO, true);
        s[1].flags.set(Flags::BACKUP, true);
        s[1].flags.set(Flags::WAS_BAD, true);
        s[2].flags.set(Flags::BACKUP, true);
        // Both backups are newer than the flagged regular; the unflagged one wins.
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Send(2));
        s[2].last_original_rx_us = 500;
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Send(1));
    }

    #[test]
    fn backup_only_when_strictly_newer_than_the_regular_choice() {
        let mut s = [sf(15, 2_000), sf(25, 2_000)];
        s[1].flags.set(Flags::BACKUP, true);
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Send(0), "a tie keeps the regular");
        s[1].last_original_rx_us = 2_001;
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Send(1), "newer backup wins in pass 2");
        s[1].flags.set(Flags::WAS_BAD, true);
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Send(0), "flag rule applies in pass 2");
    }

    #[test]
    fn backup_used_when_no_regular_is_eligible() {
        let mut s = [sf(15, 9_000), sf(25, 1_000)];
        s[1].flags.set(Flags::BACKUP, true);
        s[0].flags.set(Flags::POTENTIALLY_FAILED, true);
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Send(1));
    }

    #[test]
    fn single_subflow_bypasses() {
        let mut s = [sf(15, 0)];
        s[0].flags.set(Flags::ALREADY_SENT, true);
        // Lowest-rtt's second loop sends a reinjection on the only subflow.
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Send(0));
    }

    #[test]
    fn data_fin_on_the_peers_data_fin_subflow() {
        let s = [sf(15, 5_000), sf(25, 1_000)];
        let mut g = seg();
        g.answer_data_fin_on = Some(1);
        assert_eq!(LastReceived.pick(&s, &g), Pick::Send(1));
    }

    #[test]
    fn nothing_eligible() {
        let mut s = [sf(15, 1), sf(25, 2)];
        s[0].flags.set(Flags::ALREADY_SENT, true);
        s[1].flags.set(Flags::ALREADY_SENT, true);
        assert_eq!(LastReceived.pick(&s, &seg()), Pick::Unavailable);
    }

    proptest::proptest! {
        #[test]
        fn the_two_subflow_path_agrees_with_the_full_rule(
            s in proptest::strategy::Strategy::prop_map((crate::testutil::arb_subflows(), crate::testutil::arb_subflows()), |(a, b)| vec![a[0], b[0]]),
        ) {
            let g = Segment { len: 1000, ..seg() };
            if let Some(p) = LastReceived::fast_two(&s[0], &s[1], &g) {
                proptest::prop_assert_eq!(p, LastReceived::full(&s, &g));
                proptest::prop_assert_eq!(Some(p), LastReceived::fast(&s, &g));
            }
        }

        #[test]
        fn fast_path_agrees_with_the_full_rule(s in crate::testutil::arb_subflows()) {
            let g = Segment { len: 1000, ..seg() };
            if let Some(p) = LastReceived::fast(&s, &g) {
                let full = if s.len() == 1 { LowestRtt.pick(&s, &g) } else { LastReceived::full(&s, &g) };
                proptest::prop_assert_eq!(p, full);
            }
        }
    }
}
