//! LEDBAT, a congestion control for background transfers (RFC 6817, with LEDBAT++'s
//! multiplicative decrease, draft-irtf-iccrg-ledbat-plus-plus): it fills the path while the
//! path's queue is short, and backs off as soon as the queue grows past a target, so that a
//! phone's interactive traffic beside an upload (a request to a voice assistant beside a photo
//! backup) does not wait behind a queue the upload filled. A loss-based controller (Reno, LIA,
//! CUBIC) fills whatever queue the path has: on a path with four round trips of queue, a
//! request beside a LIA upload waits four round trips.
//!
//! The delay is measured as RTT rather than RFC 6817's one-way delay (which needs timestamps
//! in every packet): the queuing delay is the current RTT above the base RTT. That also counts
//! a queue of the acknowledgements' direction: a download beside the upload that fills the
//! downlink's queue holds the upload at its least window while its uplink is empty (a
//! limitation; a one-way measure would need a timestamp in the ACK frame).
//!
//! LEDBAT++'s periodic slowdown lets the queue drain so that the base is measured again.
//! Left out of LEDBAT++: its GAIN below 1 on paths
//! under 10 ms (here GAIN is 1 everywhere).

use super::{Ack, CongestionControl, Controller, Window};
use crate::Time;

/// RFC 6817 §3.4.2 CURRENT_FILTER: the current delay is the least of the last few samples.
const CURRENT_FILTER: usize = 4;
/// RFC 6817 §3.4.2 BASE_HISTORY: the base delay is the least of the last 10 minutes' least
/// delays, so that a path whose delay grew for good (a handover, a new route) is measured
/// from its new base within 10 minutes instead of being taken as queued forever; until then
/// such a subflow sends little (down to its least window, when the delay grew by more than
/// the target).
const BASE_HISTORY: usize = 10;
const MINUTE: Time = 60_000_000;
/// The target: a queue of half the base RTT, at least 5 ms and at most RFC 6817's 100 ms. A
/// request beside the upload then takes about 1.5 RTT. In proportion to the RTT, so that a
/// long path (a cellular one at 60 ms, whose jitter is larger) has room for its jitter, as a
/// fixed 5 ms would not (a choice; the simulator has no jitter to show it).
const TARGET_MIN: Time = 5_000;
const TARGET_MAX: Time = 100_000;

/// Where a subflow is in LEDBAT++'s periodic slowdown (µs; `Ledbat::hold`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slowdown {
    /// Slow start has not ended yet.
    Before,
    /// The next slowdown begins then.
    At(Time),
    /// The window is held at its least until `until`; it was `cwnd` at `since`.
    Held { since: Time, until: Time, cwnd: u64 },
    /// Slow start brings the window back; the slowdown began at `since`.
    Back { since: Time },
}

/// One subflow's LEDBAT: its delay measurements, its window's pending change, its slowdown.
#[derive(Clone, Debug)]
pub struct Ledbat {
    current: [Time; CURRENT_FILTER],
    next: usize,
    /// The least RTT of each of the last minutes, the current minute's last.
    base: [Time; BASE_HISTORY],
    minute: Time,
    /// A fraction of a byte of window change not applied yet.
    acc: f64,
    /// The periodic slowdown.
    pub slowdown: Slowdown,
}

impl Default for Ledbat {
    fn default() -> Self {
        Self {
            current: [Time::MAX; CURRENT_FILTER],
            next: 0,
            base: [Time::MAX; BASE_HISTORY],
            minute: 0,
            acc: 0.0,
            slowdown: Slowdown::Before,
        }
    }
}

impl Ledbat {
    /// An RTT sample at `now` (µs, the peer's ACK delay removed).
    pub fn on_sample(&mut self, now: Time, rtt: Time) {
        self.current[self.next] = rtt;
        self.next = (self.next + 1) % CURRENT_FILTER;
        let minute = now / MINUTE;
        if minute > self.minute {
            // One bucket per minute gone by (at most the whole history).
            let gone = ((minute - self.minute) as usize).min(BASE_HISTORY);
            self.base.rotate_left(gone);
            self.base[BASE_HISTORY - gone..].fill(Time::MAX);
            self.minute = minute;
        }
        let last = &mut self.base[BASE_HISTORY - 1];
        *last = (*last).min(rtt);
    }

    /// The queuing delay now and the target, µs; `None` before the first sample.
    pub fn delay(&self) -> Option<(Time, Time)> {
        // Every sample enters the current minute's bucket: a base means a current delay too.
        let base = self.base.iter().copied().min().filter(|&b| b != Time::MAX)?;
        let current = self.current.iter().copied().min().unwrap_or(base);
        Some((current.saturating_sub(base), (base / 2).clamp(TARGET_MIN, TARGET_MAX)))
    }

    /// The window's change for `bytes` acknowledged in congestion avoidance, with window
    /// `cwnd` and segment `mss`, in whole bytes (the fraction is kept for later).
    ///
    /// Below the target, RFC 6817 §2.4.2: `cwnd += GAIN * off_target * bytes * MSS / cwnd`,
    /// `off_target = (TARGET - queuing_delay) / TARGET`, GAIN 1: at most Reno's one segment
    /// per RTT, less as the queue nears the target. Above it, LEDBAT++'s decrease (without its
    /// GAIN term), per RTT `W * (queuing_delay / TARGET - 1)` and at most `W / 2`: here per
    /// acknowledged byte, so that a window's worth of acknowledgements takes it off. RFC
    /// 6817's own decrease is as slow as its increase (a segment per RTT at twice the
    /// target), and a window that overshot in slow start would hold the queue for hundreds of
    /// round trips.
    ///
    /// Without `grow` (a window not in use, RFC 7661), only a decrease counts.
    pub fn change(&mut self, bytes: u64, cwnd: u64, mss: u64, grow: bool) -> i64 {
        let Some((queued, target)) = self.delay() else { return 0 };
        let ratio = queued as f64 / target as f64;
        self.acc += if ratio < 1.0 {
            if !grow {
                return 0;
            }
            (1.0 - ratio) * bytes as f64 * mss as f64 / cwnd.max(1) as f64
        } else {
            -((ratio - 1.0).min(0.5) * bytes as f64)
        };
        let whole = self.acc.trunc();
        self.acc -= whole;
        whole as i64
    }

    /// Slow start ends once the queue reaches three quarters of the target (LEDBAT++ §4.1).
    pub fn queue_ends_slow_start(&self) -> bool {
        self.delay().is_some_and(|(queued, target)| queued * 4 >= target * 3)
    }

    /// LEDBAT's change for `bytes` acknowledged; only a decrease unless `grow`. A decrease
    /// also ends slow start (the window is not to be regained at once).
    fn apply(&mut self, w: &mut Window, bytes: u64, grow: bool) {
        let change = self.change(bytes, w.cwnd, w.mss, grow);
        w.cwnd = w.cwnd.saturating_add_signed(change).max(w.min_window());
        if change < 0 {
            w.ssthresh = w.ssthresh.min(w.cwnd);
        }
    }
}

impl Controller for Ledbat {
    fn kind(&self) -> CongestionControl {
        CongestionControl::Ledbat
    }

    fn on_rtt_sample(&mut self, now: u64, rtt: u64) {
        self.on_sample(now, rtt);
    }

    /// LEDBAT++'s periodic slowdown (draft-irtf-iccrg-ledbat-plus-plus §4.4): two RTTs after
    /// slow start first ends, then every nine times as long as the last slowdown took, the
    /// window drops to its least for two RTTs and slow start brings it back to where it was.
    /// The queue drains meanwhile, and the base delay is measured again: without it, a
    /// standing queue near the target entered each minute's least delay, the base rose with
    /// it after 10 minutes and the queue with the base (in the simulator, a request beside the
    /// upload went from 1.45 to 1.74 RTT in 11 minutes). It costs about a tenth of the path.
    /// Returns whether the window is held at its least now (the ACK changes nothing else).
    fn hold(&mut self, w: &mut Window, now: u64, srtt_us: u64) -> bool {
        match self.slowdown {
            Slowdown::Before if !w.in_slow_start() => self.slowdown = Slowdown::At(now + 2 * srtt_us),
            Slowdown::At(at) if now >= at => {
                self.slowdown = Slowdown::Held { since: now, until: now + 2 * srtt_us, cwnd: w.cwnd };
                w.cwnd = w.min_window();
                return true;
            }
            Slowdown::Held { until, .. } if now < until => return true,
            Slowdown::Held { since, cwnd, .. } => {
                w.ssthresh = cwnd;
                self.slowdown = Slowdown::Back { since };
            }
            Slowdown::Back { since } if !w.in_slow_start() => {
                self.slowdown = Slowdown::At(now + 9 * now.saturating_sub(since));
            }
            _ => {}
        }
        false
    }

    /// Back from a slowdown, slow start goes on to the window that held the queue at its
    /// target before: the queue its bursts make is no sign of a full path.
    fn ends_slow_start(&self) -> bool {
        !matches!(self.slowdown, Slowdown::Back { .. }) && self.queue_ends_slow_start()
    }

    fn increase(&mut self, w: &mut Window, ack: &Ack) {
        self.apply(w, ack.bytes, true);
    }

    /// RFC 7661 forbids only the growth: a background upload that does not fill its window
    /// still backs off from a queue others built.
    fn on_ack_not_limited(&mut self, w: &mut Window, _now: u64, bytes: u64) {
        self.apply(w, bytes, false);
    }

    /// A loss episode began: the pending fraction goes.
    fn on_recovery(&mut self) {
        self.acc = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_is_the_least_of_the_last_samples_above_the_base() {
        let mut l = Ledbat::default();
        assert_eq!(l.delay(), None);
        l.on_sample(0, 40_000);
        assert_eq!(l.delay(), Some((0, 20_000)), "the target: half the base RTT");
        for rtt in [70_000, 65_000, 90_000, 80_000] {
            l.on_sample(1_000, rtt);
        }
        assert_eq!(l.delay(), Some((25_000, 20_000)), "a spike alone does not count, the least of four does");
        l.on_sample(2_000, 41_000);
        assert_eq!(l.delay(), Some((1_000, 20_000)));
    }

    #[test]
    fn a_base_that_grew_for_good_is_learnt_within_ten_minutes() {
        let mut l = Ledbat::default();
        l.on_sample(0, 20_000);
        // A new route: 60 ms from now on.
        for m in 1..=10 {
            for _ in 0..4 {
                l.on_sample(m * MINUTE, 60_000);
            }
        }
        assert_eq!(l.delay(), Some((0, 30_000)), "the old base is forgotten");
        let mut k = Ledbat::default();
        k.on_sample(0, 20_000);
        for _ in 0..4 {
            k.on_sample(9 * MINUTE, 60_000);
        }
        assert_eq!(k.delay().map(|d| d.0), Some(40_000), "within ten minutes it holds");
    }

    #[test]
    fn the_window_grows_below_the_target_and_shrinks_above_it() {
        const MSS: u64 = 1000;
        let mut l = Ledbat::default();
        l.on_sample(0, 20_000);
        // No queue: a window of acknowledgements adds one segment, as Reno.
        let grown: i64 = (0..20).map(|_| l.change(MSS, 20 * MSS, MSS, true)).sum();
        assert!((999..=1000).contains(&grown), "{grown}");
        // A queue of 20 ms, twice the 10 ms target: a window's worth takes half of it off.
        for _ in 0..4 {
            l.on_sample(0, 40_000);
        }
        let shrunk: i64 = (0..20).map(|_| l.change(MSS, 20 * MSS, MSS, true)).sum();
        assert_eq!(shrunk, -10 * MSS as i64);
        // Just above: a little.
        for _ in 0..4 {
            l.on_sample(0, 31_000);
        }
        let less: i64 = (0..20).map(|_| l.change(MSS, 20 * MSS, MSS, true)).sum();
        assert_eq!(less, -2 * MSS as i64, "10 % of the window");
        assert!(l.queue_ends_slow_start());
    }
}
