//! `lowest-rtt`: the out-of-tree Linux MPTCP `default` scheduler (mptcp_sched.c,
//! `get_available_subflow` and `get_subflow_from_selectors`), which the seeds call lowest-RTT.
//!
//! 1. A DATA_FIN is answered on the subflow that carried the peer's DATA_FIN, if it is available.
//! 2. Over the regular (non-backup) subflows: skip those not established or potentially failed
//!    ("definitely unavailable"). Among those that can send now and have not carried this
//!    segment, take the lowest smoothed RTT. If none can, but one that has not carried it is only
//!    *temporarily* unavailable (window full, loss recovery), wait for it.
//! 3. Otherwise the same over the backup subflows.
//! 4. Otherwise (every candidate already carried the segment) forget which carried it and take
//!    the lowest RTT among regular subflows that can send, then backups: Linux clears the
//!    segment's path mask and loops once.
//!
//! So a backup subflow is used only when no regular subflow is available, and a reinjected
//! segment prefers a subflow it has not been sent on.

use crate::{considered, Flags, Pick, Segment, SubflowInfo, SEND_MASK};

/// The lowest-RTT scheduler (stateless).
#[derive(Clone, Copy, Debug, Default)]
pub struct LowestRtt;

/// "No candidate" for the packed keys below.
pub(crate) const NONE: u64 = u64::MAX;

/// A key whose minimum is the lowest RTT, ties going to the lower index: `srtt << 6 | index`.
#[inline(always)]
pub(crate) fn rtt_key(s: &SubflowInfo, i: usize) -> u64 {
    (u64::from(s.srtt_us) << 6) | i as u64
}

/// The index packed in a key.
#[inline(always)]
pub(crate) fn key_index(k: u64) -> usize {
    (k & 63) as usize
}

/// DATA_FIN rule shared by several schedulers: "Answer data_fin on same subflow".
#[inline]
pub(crate) fn data_fin_subflow(subflows: &[SubflowInfo], seg: &Segment) -> Option<usize> {
    let i = seg.answer_data_fin_on?;
    let s = subflows.get(i)?;
    s.can_send(seg.len).then_some(i)
}

impl LowestRtt {
    /// Picks per the module's rules.
    #[inline]
    pub fn pick(&self, subflows: &[SubflowInfo], seg: &Segment) -> Pick {
        let subflows = considered(subflows);
        if seg.answer_data_fin_on.is_none() {
            if let Some(i) = Self::fast(subflows, seg) {
                return Pick::Send(i);
            }
        }
        Self::full(subflows, seg)
    }

    /// The steady-state case in a lean scan: the lowest-RTT regular subflow that can send and has
    /// not carried the segment. When one exists it is exactly what the full rule's first
    /// selector pass returns.
    #[inline(always)]
    pub(crate) fn fast(subflows: &[SubflowInfo], seg: &Segment) -> Option<usize> {
        const MASK: u8 = SEND_MASK | Flags::BACKUP.0 | Flags::ALREADY_SENT.0;
        let len = seg.len.max(1);
        let mut best = NONE;
        for (i, s) in subflows.iter().enumerate() {
            let ok = (s.flags.0 & MASK == Flags::ESTABLISHED.0) & (s.cwnd_room >= len);
            best = best.min(if ok { rtt_key(s, i) } else { NONE });
        }
        (best != NONE).then(|| key_index(best))
    }

    /// The whole rule, in one scan of the slice.
    #[inline(never)]
    pub(crate) fn full(subflows: &[SubflowInfo], seg: &Segment) -> Pick {
        if let Some(i) = data_fin_subflow(subflows, seg) {
            return Pick::Send(i);
        }
        // Keys carry the backup bit on top, so one minimum prefers any regular subflow to any
        // backup, then the lower RTT, then the lower index. All state stays in registers.
        let mut unused = NONE; // can send, has not carried the segment
        let mut any = NONE; // can send
        let mut waits = 0u8; // bit 0/1: regular/backup unused waiting; bit 2/3: any waiting
        for (i, s) in subflows.iter().enumerate() {
            let can = s.can_send(seg.len);
            let wait = s.available() & !can;
            let fresh = !s.already_sent();
            let key = (u64::from(s.backup()) << 63) | rtt_key(s, i);
            let key = if can { key } else { NONE };
            any = any.min(key);
            unused = unused.min(if fresh { key } else { NONE });
            let shift = u8::from(s.backup());
            waits |= (u8::from(wait & fresh) << shift) | (u8::from(wait) << (2 + shift));
        }
        // Linux's first loop (path mask honoured), then its second (path mask cleared): in
        // each, regular subflows before backups; a temporarily unavailable candidate means wait.
        for (best, w) in [(unused, waits), (any, waits >> 2)] {
            let best_is_regular = best >> 63 == 0;
            if best != NONE && best_is_regular {
                return Pick::Send(key_index(best));
            }
            if w & 1 != 0 {
                return Pick::Wait;
            }
            if best != NONE {
                return Pick::Send(key_index(best));
            }
            if w & 2 != 0 {
                return Pick::Wait;
            }
        }
        Pick::Unavailable
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{seg, sf};
    use crate::Flags;

    #[test]
    fn lowest_srtt_wins() {
        let s = [sf(30, 0), sf(15, 0), sf(25, 0)];
        assert_eq!(LowestRtt.pick(&s, &seg()), Pick::Send(1));
    }

    #[test]
    fn backup_only_when_no_regular_available() {
        let mut s = [sf(30, 0), sf(5, 0)];
        s[1].flags.set(Flags::BACKUP, true);
        assert_eq!(LowestRtt.pick(&s, &seg()), Pick::Send(0), "a faster backup is not used");
        s[0].flags.set(Flags::POTENTIALLY_FAILED, true);
        assert_eq!(LowestRtt.pick(&s, &seg()), Pick::Send(1), "primary potentially failed");
        s[0].flags.set(Flags::POTENTIALLY_FAILED, false);
        s[0].flags.set(Flags::ESTABLISHED, false);
        assert_eq!(LowestRtt.pick(&s, &seg()), Pick::Send(1), "primary not established");
    }

    #[test]
    fn full_window_on_regular_waits_rather_than_using_backup() {
        let mut s = [sf(30, 0), sf(5, 0)];
        s[1].flags.set(Flags::BACKUP, true);
        s[0].cwnd_room = 100;
        assert_eq!(LowestRtt.pick(&s, &seg()), Pick::Wait);
        s[0].cwnd_room = 14_600;
        s[0].flags.set(Flags::IN_RECOVERY, true);
        assert_eq!(LowestRtt.pick(&s, &seg()), Pick::Wait, "loss recovery is temporary too");
    }

    #[test]
    fn full_fast_subflow_yields_to_slower_one_with_room() {
        let mut s = [sf(10, 0), sf(40, 0)];
        s[0].cwnd_room = 0;
        assert_eq!(LowestRtt.pick(&s, &seg()), Pick::Send(1));
    }

    #[test]
    fn reinjection_prefers_a_subflow_not_yet_used() {
        let mut s = [sf(10, 0), sf(40, 0)];
        s[0].flags.set(Flags::ALREADY_SENT, true);
        assert_eq!(LowestRtt.pick(&s, &seg()), Pick::Send(1));
        // Then an unused backup before a used regular.
        let mut s = [sf(10, 0), sf(40, 0)];
        s[0].flags.set(Flags::ALREADY_SENT, true);
        s[1].flags.set(Flags::BACKUP, true);
        assert_eq!(LowestRtt.pick(&s, &seg()), Pick::Send(1));
        // Every subflow carried it: the fastest regular again.
        let mut s = [sf(10, 0), sf(40, 0)];
        s[0].flags.set(Flags::ALREADY_SENT, true);
        s[1].flags.set(Flags::ALREADY_SENT, true);
        assert_eq!(LowestRtt.pick(&s, &seg()), Pick::Send(0));
    }

    #[test]
    fn reinjection_waits_for_an_unused_subflow_with_a_full_window() {
        let mut s = [sf(10, 0), sf(40, 0)];
        s[0].flags.set(Flags::ALREADY_SENT, true);
        s[1].cwnd_room = 0;
        assert_eq!(LowestRtt.pick(&s, &seg()), Pick::Wait);
    }

    #[test]
    fn data_fin_answered_on_the_peers_data_fin_subflow() {
        let s = [sf(10, 0), sf(40, 0)];
        let mut g = seg();
        g.answer_data_fin_on = Some(1);
        assert_eq!(LowestRtt.pick(&s, &g), Pick::Send(1));
        // Unless that subflow cannot send: then the normal rule.
        let mut s2 = s;
        s2[1].flags.set(Flags::POTENTIALLY_FAILED, true);
        assert_eq!(LowestRtt.pick(&s2, &g), Pick::Send(0));
        g.answer_data_fin_on = Some(7);
        assert_eq!(LowestRtt.pick(&s, &g), Pick::Send(0), "an out-of-range index is ignored");
    }

    #[test]
    fn nothing_available() {
        let mut s = [sf(10, 0), sf(40, 0)];
        s[0].flags.set(Flags::POTENTIALLY_FAILED, true);
        s[1].flags.set(Flags::ESTABLISHED, false);
        assert_eq!(LowestRtt.pick(&s, &seg()), Pick::Unavailable);
        assert_eq!(LowestRtt.pick(&[], &seg()), Pick::Unavailable);
    }

    proptest::proptest! {
        #[test]
        fn fast_path_agrees_with_the_full_rule(s in crate::testutil::arb_subflows()) {
            let g = Segment { len: 1000, ..seg() };
            if let Some(i) = LowestRtt::fast(&s, &g) {
                proptest::prop_assert_eq!(LowestRtt::full(&s, &g), Pick::Send(i));
            }
        }
    }
}
