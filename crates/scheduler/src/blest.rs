//! `blest`: BLocking ESTimation. S. Ferlin, Ö. Alay, O. Mehani, R. Boreli, "BLEST:
//! Blocking Estimation-based MPTCP Scheduler for Heterogeneous Networks", IFIP Networking 2016.
//!
//! The lowest-RTT rule picks a subflow. When that is not the fastest subflow `f` (its window
//! is full), sending on the slower `s` would tie up connection-level send window for `s`'s
//! RTT, during which `f` could have sent
//!
//! ```text
//! X = (cwnd_f + mss · (n − 1) / 2) · n · λ,   n = rtt_s / rtt_f + 1 (rounded down, at most 16)
//! ```
//!
//! bytes (the paper's estimate: `f` grows by one MSS per round trip, congestion avoidance).
//! If `X` does not fit in the window the peer leaves beside what `s` would hold,
//! `window − (inflight_s + len)`, sending on `s` would block `f` (head-of-line blocking at
//! the receiver): BLEST sends nothing and waits for `f`.
//!
//! λ corrects the estimate. It starts at 1.2 and stays within 1.0..=1.3; at most once per
//! round trip of `f` it goes up by 0.04 if a segment was reinjected since the last update (the
//! paper: "if there have been retransmissions of packets of the slow flow"), otherwise down by
//! 0.01, as the authors' Linux module does (`lambda` 12, `dyn_lambda_bad` 40, `dyn_lambda_good`
//! 10, per mille).
//!
//! What differs from that module: the estimate uses `f`'s smoothed RTT (the module averages
//! the smallest and largest it saw) and `s`'s smoothed RTT as the time its segment lingers (the
//! module interpolates between `s`'s smallest and largest by its flight size); both assume
//! congestion avoidance (the module counts a window doubling per round in slow start). The
//! window is the peer's receive window from the oldest unacknowledged byte
//! ([`Segment::send_window`]); where it is unknown (0) BLEST sends as lowest-RTT does.

use crate::{considered, LowestRtt, Pick, Segment, SubflowInfo};

/// λ's bounds and steps, per mille.
const LAMBDA_START: u32 = 1_200;
const LAMBDA_MIN: u32 = 1_000;
const LAMBDA_MAX: u32 = 1_300;
const LAMBDA_UP: u32 = 40;
const LAMBDA_DOWN: u32 = 10;

/// The BLEST scheduler: λ and when it last changed.
#[derive(Clone, Copy, Debug)]
pub struct Blest {
    /// λ, per mille.
    lambda: u32,
    last_update_us: u64,
    /// A reinjection was scheduled since the last update.
    reinjected: bool,
}

impl Default for Blest {
    fn default() -> Self {
        Self { lambda: LAMBDA_START, last_update_us: 0, reinjected: false }
    }
}

impl Blest {
    /// λ, per mille.
    pub fn lambda(&self) -> u32 {
        self.lambda
    }

    /// Picks per the rule above.
    pub fn pick(&mut self, subflows: &[SubflowInfo], seg: &Segment) -> Pick {
        let subflows = considered(subflows);
        let pick = LowestRtt.pick(subflows, seg);
        let reinjection = subflows.iter().any(|s| s.already_sent());
        self.reinjected |= reinjection;
        let Pick::Send(b) = pick else { return pick };
        let slow = &subflows[b];
        if seg.send_window == 0 || slow.already_sent() || seg.answer_data_fin_on == Some(b) {
            return pick;
        }
        // The fastest subflow of the same class that has not carried the segment, sendable or not.
        let fast = subflows
            .iter()
            .enumerate()
            .filter(|(_, s)| s.fresh_in_class(slow.backup()))
            .min_by_key(|(i, s)| (s.srtt_us, *i))
            .map(|(i, _)| i);
        let Some(f) = fast.filter(|&f| f != b && subflows[f].srtt_us < slow.srtt_us) else { return pick };
        let fast = &subflows[f];
        self.update_lambda(seg.now_us, fast.srtt_us);
        let rtt_f = u128::from(fast.srtt_us.max(1));
        let n = (u128::from(slow.srtt_us) / rtt_f + 1).min(16);
        let mss = u128::from(seg.len.max(1));
        // X = (cwnd_f + mss (n - 1) / 2) n λ, in bytes (λ per mille).
        let fast_bytes = (2 * u128::from(fast.cwnd) + mss * (n - 1)) * n * u128::from(self.lambda) / 2_000;
        let slow_holds = u128::from(slow.cwnd.saturating_sub(slow.cwnd_room)) + u128::from(seg.len);
        let room = u128::from(seg.send_window).saturating_sub(slow_holds);
        if fast_bytes > room {
            Pick::Wait
        } else {
            pick
        }
    }

    /// At most once per fast round trip: λ up after a reinjection, down otherwise.
    fn update_lambda(&mut self, now_us: u64, rtt_f: u32) {
        if now_us.saturating_sub(self.last_update_us) < u64::from(rtt_f) {
            return;
        }
        self.lambda = if self.reinjected {
            (self.lambda + LAMBDA_UP).min(LAMBDA_MAX)
        } else {
            self.lambda.saturating_sub(LAMBDA_DOWN).max(LAMBDA_MIN)
        };
        self.reinjected = false;
        self.last_update_us = now_us;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{seg, sf};
    use crate::Flags;

    /// A fast 10 ms subflow with a full window and a slow 100 ms one with room.
    fn fast_full_slow_free() -> [SubflowInfo; 2] {
        let mut s = [sf(10, 0), sf(100, 0)];
        s[0].cwnd_room = 0;
        s
    }

    #[test]
    fn fastest_when_it_has_room() {
        let s = [sf(100, 0), sf(10, 0)];
        let g = Segment { send_window: 10_000, ..seg() };
        assert_eq!(Blest::default().pick(&s, &g), Pick::Send(1));
    }

    #[test]
    fn waits_when_the_slow_subflow_would_block_the_fast_one() {
        // n = 11 rounds of the fast subflow: (14,600 + 1,200 * 5) * 11 * 1.2 = 271,920 bytes, more
        // than a 200 kB window leaves.
        let g = Segment { send_window: 200_000, now_us: 1_000_000, ..seg() };
        assert_eq!(Blest::default().pick(&fast_full_slow_free(), &g), Pick::Wait);
    }

    #[test]
    fn uses_the_slow_subflow_when_the_window_is_large() {
        let g = Segment { send_window: 300_000, now_us: 1_000_000, ..seg() };
        let mut b = Blest::default();
        assert_eq!(b.pick(&fast_full_slow_free(), &g), Pick::Send(1));
        // λ went down a step (no reinjection), not below its floor.
        assert_eq!(b.lambda(), LAMBDA_START - LAMBDA_DOWN);
    }

    #[test]
    fn the_slow_subflows_flight_counts_against_the_window() {
        let mut s = fast_full_slow_free();
        // 40 kB in flight on the slow subflow: 300,000 - 41,200 < 271,920.
        (s[1].cwnd, s[1].cwnd_room) = (100_000, 60_000);
        let g = Segment { send_window: 300_000, now_us: 1_000_000, ..seg() };
        assert_eq!(Blest::default().pick(&s, &g), Pick::Wait);
    }

    #[test]
    fn unknown_window_sends_as_lowest_rtt() {
        let g = Segment { send_window: 0, ..seg() };
        assert_eq!(Blest::default().pick(&fast_full_slow_free(), &g), Pick::Send(1));
    }

    #[test]
    fn lambda_rises_after_reinjections_once_per_fast_rtt_within_bounds() {
        let mut b = Blest::default();
        let mut s = fast_full_slow_free();
        s[0].flags.set(Flags::ALREADY_SENT, true);
        // A reinjection (subflow 0 carried the segment): noted, but the fast subflow is no
        // candidate for it, so no estimate and no update.
        let g = Segment { send_window: 300_000, now_us: 0, ..seg() };
        assert_eq!(b.pick(&s, &g), Pick::Send(1));
        assert_eq!(b.lambda(), LAMBDA_START);
        let s = fast_full_slow_free();
        let mut at = |t: u64| b.pick(&s, &Segment { send_window: 300_000, now_us: t, ..seg() });
        at(20_000);
        at(25_000); // within one fast RTT (10 ms) of the last update: no change
        assert_eq!(b.lambda(), LAMBDA_START + LAMBDA_UP);
        for k in 0..100 {
            b.reinjected = true;
            b.update_lambda(40_000 + k * 10_000, 10_000);
        }
        assert_eq!(b.lambda(), LAMBDA_MAX);
        for k in 0..100 {
            b.update_lambda(2_000_000 + k * 10_000, 10_000);
        }
        assert_eq!(b.lambda(), LAMBDA_MIN);
    }

    #[test]
    fn backup_classes_compare_within_their_class() {
        // The only regular subflow is full; the slow subflow is a backup: no BLEST estimate
        // across classes (lowest-RTT waits for the regular one).
        let mut s = fast_full_slow_free();
        s[1].flags.set(Flags::BACKUP, true);
        let g = Segment { send_window: 1, now_us: 1_000_000, ..seg() };
        assert_eq!(Blest::default().pick(&s, &g), Pick::Wait);
        assert_eq!(LowestRtt.pick(&s, &g), Pick::Wait);
    }
}
