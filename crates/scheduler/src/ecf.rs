//! `ecf`: Earliest Completion First, for paths of very different RTTs. Y. Lim, E. M. Nahum,
//! D. Towsley, R. J. Gibbens, "ECF: An MPTCP Path Scheduler to Manage Heterogeneous Paths",
//! ACM CoNEXT 2017.
//!
//! When the fastest subflow `f` can send, it is used. When its window is full, the fastest other
//! subflow `s` that can send is considered, with `k` the bytes queued, `δ = max(rttvar_f,
//! rttvar_s)` and β = 1/4:
//!
//! ```text
//! if (1 + k / cwnd_f) · rtt_f < (1 + waiting · β) · (rtt_s + δ)     waiting for f finishes first
//!     and k / cwnd_s · rtt_s >= 2 · rtt_f + δ                        and s would finish later:
//!         waiting = 1, send nothing now
//! otherwise waiting = 0 (in the first case's else), send on s
//! ```
//!
//! as the paper's Algorithm 1 and its Linux implementation (`mptcp_ecf.c`, `r_beta = 4`) do.
//! Candidates are the regular subflows that have not carried the segment, or the backups when
//! there is no such regular subflow.

use crate::{considered, Pick, Segment, SubflowInfo};

/// The ECF scheduler: keeps the hysteresis bit `waiting`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ecf {
    waiting: bool,
}

impl Ecf {
    /// Picks per the module's rules.
    pub fn pick(&mut self, subflows: &[SubflowInfo], seg: &Segment) -> Pick {
        let subflows = considered(subflows);
        // Regular subflows that have not carried this segment first; backups only without one.
        let want_backup = !subflows.iter().any(|s| !s.backup() && s.available() && !s.already_sent());
        let cand = |s: &SubflowInfo| s.fresh_in_class(want_backup);
        let mut fastest: Option<usize> = None;
        let mut other: Option<usize> = None;
        for (i, s) in subflows.iter().enumerate() {
            if cand(s) && fastest.is_none_or(|f| s.srtt_us < subflows[f].srtt_us) {
                fastest = Some(i);
            }
        }
        let Some(f) = fastest else { return Pick::Unavailable };
        if subflows[f].can_send(seg.len) {
            return Pick::Send(f);
        }
        for (i, s) in subflows.iter().enumerate() {
            if i != f && cand(s) && s.can_send(seg.len) && other.is_none_or(|o| s.srtt_us < subflows[o].srtt_us) {
                other = Some(i);
            }
        }
        let Some(o) = other else { return Pick::Wait };
        let (sf, ss) = (&subflows[f], &subflows[o]);
        let mss = u128::from(seg.len.max(1));
        let k = u128::from(seg.queued_bytes);
        let cwnd_f = u128::from(sf.cwnd).max(mss);
        let cwnd_s = u128::from(ss.cwnd).max(mss);
        let (rtt_f, rtt_s) = (u128::from(sf.srtt_us), u128::from(ss.srtt_us));
        let delta = u128::from(sf.rttvar_us.max(ss.rttvar_us));
        // (k + cwnd_f) · rtt_f · 4 < (4 + waiting) · cwnd_f · (rtt_s + δ)
        let lhs = 4 * (k + cwnd_f) * rtt_f;
        let rhs = (4 + u128::from(self.waiting)) * cwnd_f * (rtt_s + delta);
        if lhs < rhs {
            if k * rtt_s >= cwnd_s * (2 * rtt_f + delta) {
                self.waiting = true;
                return Pick::Wait;
            }
        } else {
            self.waiting = false;
        }
        Pick::Send(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{seg, sf};
    use crate::Flags;

    #[test]
    fn fastest_when_it_has_room() {
        let s = [sf(100, 0), sf(10, 0)];
        assert_eq!(Ecf::default().pick(&s, &seg()), Pick::Send(1));
    }

    #[test]
    fn waits_for_the_fast_path_when_the_slow_one_would_finish_later() {
        // Fast 10 ms path full; slow 200 ms path; a little queued: waiting one fast RTT is better.
        let mut s = [sf(10, 0), sf(200, 0)];
        s[0].cwnd_room = 0;
        let mut g = seg();
        g.queued_bytes = 20_000;
        let mut ecf = Ecf::default();
        assert_eq!(ecf.pick(&s, &g), Pick::Wait);
        assert!(ecf.waiting);
    }

    #[test]
    fn uses_the_slow_path_when_the_queue_is_long() {
        // With a queue many fast windows long, the slow path helps.
        let mut s = [sf(10, 0), sf(30, 0)];
        s[0].cwnd_room = 0;
        let mut g = seg();
        g.queued_bytes = 10_000_000;
        let mut ecf = Ecf { waiting: true };
        assert_eq!(ecf.pick(&s, &g), Pick::Send(1));
        assert!(!ecf.waiting);
    }

    #[test]
    fn uses_the_slow_path_when_it_finishes_first_anyway() {
        // Small queue, slow path only slightly slower: k/cwnd_s · rtt_s < 2 rtt_f + δ.
        let mut s = [sf(10, 0), sf(12, 0)];
        s[0].cwnd_room = 0;
        let g = seg();
        assert_eq!(Ecf::default().pick(&s, &g), Pick::Send(1));
    }

    #[test]
    fn reinjection_goes_to_an_unused_backup() {
        let mut s = [sf(30, 0), sf(10, 0)];
        s[1].flags.set(Flags::BACKUP, true);
        s[0].flags.set(Flags::ALREADY_SENT, true);
        assert_eq!(Ecf::default().pick(&s, &seg()), Pick::Send(1));
    }

    #[test]
    fn backups_only_when_no_regular() {
        let mut s = [sf(30, 0), sf(10, 0)];
        s[1].flags.set(Flags::BACKUP, true);
        assert_eq!(Ecf::default().pick(&s, &seg()), Pick::Send(0));
        s[0].flags.set(Flags::POTENTIALLY_FAILED, true);
        assert_eq!(Ecf::default().pick(&s, &seg()), Pick::Send(1));
    }
}
