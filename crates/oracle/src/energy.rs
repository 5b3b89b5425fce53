//! The cellular energy estimate MultiMob uses (Huang et al., MobiSys 2012, LTE), computed from
//! the packets that crossed a cellular interface.
//!
//! From idle, the first packet costs a promotion of 0.26 s at 1.21 W. Each packet keeps the
//! radio in continuous reception for 0.1 s, at 1.2 W plus 0.438 W per Mbit/s sent and 0.052 W
//! per Mbit/s received (so 0.438 J per Mbit up and 0.052 J per Mbit down). Then the
//! RRC_CONNECTED tail lasts 11.576 s at about 1.06 W (DRX) before the radio is idle again, at
//! about 0.02 W (paging).

use crate::Time;

/// The model's constants.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Model {
    /// Promotion from idle: seconds.
    pub promotion_s: f64,
    /// Promotion from idle: watts.
    pub promotion_w: f64,
    /// Continuous reception after each packet: seconds.
    pub active_s: f64,
    /// Continuous reception: watts.
    pub active_w: f64,
    /// Joules per megabit sent.
    pub up_j_per_mbit: f64,
    /// Joules per megabit received.
    pub down_j_per_mbit: f64,
    /// The RRC_CONNECTED tail after the last packet: seconds.
    pub tail_s: f64,
    /// The tail: watts.
    pub tail_w: f64,
    /// Idle (paging): watts.
    pub idle_w: f64,
}

impl Default for Model {
    fn default() -> Self {
        Self {
            promotion_s: 0.26,
            promotion_w: 1.21,
            active_s: 0.1,
            active_w: 1.2,
            up_j_per_mbit: 0.438,
            down_j_per_mbit: 0.052,
            tail_s: 11.576,
            tail_w: 1.06,
            idle_w: 0.02,
        }
    }
}

/// One packet on the cellular interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet {
    /// When it crossed the interface (µs).
    pub time: Time,
    /// Sent by this host (uplink) or received (downlink).
    pub up: bool,
    /// Its size.
    pub bytes: usize,
}

/// The estimate over an interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Energy {
    /// Joules over the interval, idle paging included.
    pub joules: f64,
    /// Joules above what an idle radio would have used over the interval.
    pub above_idle_joules: f64,
    /// Mean power over the interval, in milliwatts.
    pub mean_mw: f64,
    /// Promotions from idle (radio wake-ups).
    pub promotions: u32,
}

/// The energy of a cellular radio over `[start, end]` (µs), given the packets it carried
/// (in any order; those outside the interval are ignored).
pub fn estimate(model: &Model, packets: &[Packet], start: Time, end: Time) -> Energy {
    let mut inside: Vec<Packet> = packets.iter().filter(|p| p.time >= start && p.time <= end).copied().collect();
    inside.sort_by_key(|p| p.time);
    let mut meter = Meter::new(*model, start);
    for p in &inside {
        meter.packet(p.time, p.up, p.bytes);
    }
    meter.estimate(end)
}

/// The same estimate kept up to date packet by packet, in constant space, for a driver that
/// sees packets as they cross the interface.
///
/// ```
/// use oracle::energy::{Meter, Model};
/// let mut m = Meter::new(Model::default(), 0);
/// m.packet(1_000_000, true, 1_200);
/// let e = m.estimate(60_000_000);
/// assert_eq!(e.promotions, 1);
/// assert_eq!(m.first_packet(), Some(1_000_000));
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Meter {
    model: Model,
    start: Time,
    /// Joules of the promotions, reception windows and elapsed tails so far.
    joules: f64,
    /// Seconds the radio was not idle, up to `active_end`.
    busy: f64,
    promotions: u32,
    /// End of the current continuous-reception window, in seconds since `start`.
    active_end: f64,
    up_bits: f64,
    down_bits: f64,
    first: Option<Time>,
    last: Time,
}

impl Meter {
    /// A radio idle since `start` (µs).
    pub fn new(model: Model, start: Time) -> Self {
        Self {
            model,
            start,
            joules: 0.0,
            busy: 0.0,
            promotions: 0,
            active_end: f64::NEG_INFINITY,
            up_bits: 0.0,
            down_bits: 0.0,
            first: None,
            last: start,
        }
    }

    /// One packet at `time` (µs), sent (`up`) or received. Times must not go backwards; an
    /// earlier one counts as the latest seen.
    pub fn packet(&mut self, time: Time, up: bool, bytes: usize) {
        let time = time.max(self.last);
        self.last = time;
        self.first.get_or_insert(time);
        let m = &self.model;
        let bits = bytes as f64 * 8.0;
        if up {
            self.up_bits += bits;
        } else {
            self.down_bits += bits;
        }
        let t = (time - self.start) as f64 / 1e6;
        if t >= self.active_end + m.tail_s {
            // Idle: close the previous burst (its full tail), then promote.
            if self.active_end.is_finite() {
                self.joules += m.tail_w * m.tail_s;
                self.busy += m.tail_s;
            }
            self.promotions += 1;
            self.joules += m.promotion_w * m.promotion_s;
            self.busy += m.promotion_s;
            self.active_end = t;
        } else if t > self.active_end {
            // In the tail: the part of it that elapsed.
            self.joules += m.tail_w * (t - self.active_end);
            self.busy += t - self.active_end;
            self.active_end = t;
        }
        // Extend the continuous-reception window to t + active_s.
        let new_end = t + m.active_s;
        if new_end > self.active_end {
            self.joules += m.active_w * (new_end - self.active_end);
            self.busy += new_end - self.active_end;
            self.active_end = new_end;
        }
    }

    /// When the first packet crossed (µs), if any did.
    pub fn first_packet(&self) -> Option<Time> {
        self.first
    }

    /// The estimate over `[start, end]`: the last tail is cut at `end`, the rest of the time
    /// is idle paging.
    pub fn estimate(&self, end: Time) -> Energy {
        let m = &self.model;
        let span = end.saturating_sub(self.start) as f64 / 1e6;
        let (mut joules, mut busy) = (self.joules, self.busy);
        if self.active_end.is_finite() {
            let tail = (span - self.active_end).clamp(0.0, m.tail_s);
            joules += m.tail_w * tail;
            busy += tail;
        }
        joules += m.up_j_per_mbit * self.up_bits / 1e6 + m.down_j_per_mbit * self.down_bits / 1e6;
        joules += m.idle_w * (span - busy).max(0.0);
        let above_idle_joules = joules - m.idle_w * span;
        let mean_mw = if span > 0.0 { joules / span * 1e3 } else { 0.0 };
        Energy { joules, above_idle_joules: above_idle_joules.max(0.0), mean_mw, promotions: self.promotions }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Time = 1_000_000;

    #[test]
    fn an_unused_radio_costs_only_paging() {
        let e = estimate(&Model::default(), &[], 0, 60 * S);
        assert_eq!(e.promotions, 0);
        assert!((e.joules - 0.02 * 60.0).abs() < 1e-9);
        assert_eq!(e.above_idle_joules, 0.0);
        assert!((e.mean_mw - 20.0).abs() < 1e-9);
    }

    #[test]
    fn one_packet_costs_a_promotion_a_window_and_a_tail() {
        let m = Model::default();
        let e = estimate(&m, &[Packet { time: S, up: true, bytes: 125_000 }], 0, 60 * S);
        // 0.26*1.21 + 0.1*1.2 + 11.576*1.06 + 1 Mbit * 0.438 + idle for the rest.
        let busy = 0.26 + 0.1 + 11.576;
        let want = 0.3146 + 0.12 + 12.27056 + 0.438 + 0.02 * (60.0 - busy);
        assert!((e.joules - want).abs() < 1e-9, "{} vs {want}", e.joules);
        assert_eq!(e.promotions, 1);
    }

    #[test]
    fn close_packets_share_a_promotion_and_far_ones_do_not() {
        let m = Model::default();
        let p = |t: Time| Packet { time: t, up: false, bytes: 0 };
        let near = estimate(&m, &[p(S), p(S + 50_000), p(5 * S)], 0, 60 * S);
        assert_eq!(near.promotions, 1);
        let far = estimate(&m, &[p(S), p(30 * S)], 0, 60 * S);
        assert_eq!(far.promotions, 2);
        assert!(far.joules > near.joules);
        // Two packets 50 ms apart: one window of 150 ms.
        let two = estimate(&m, &[p(S), p(S + 50_000)], 0, 60 * S);
        let one = estimate(&m, &[p(S)], 0, 60 * S);
        assert!((two.joules - one.joules - 0.05 * (1.2 - 0.02)).abs() < 1e-9);
    }

    #[test]
    fn the_meter_matches_the_batch_estimate_and_tolerates_late_packets() {
        let m = Model::default();
        let p = |t: Time, up: bool| Packet { time: t, up, bytes: 1_000 };
        let log = [p(S, true), p(S + 30_000, false), p(4 * S, true), p(20 * S, false), p(21 * S, true)];
        let mut meter = Meter::new(m, 0);
        for q in &log {
            meter.packet(q.time, q.up, q.bytes);
        }
        let batch = estimate(&m, &log, 0, 60 * S);
        let live = meter.estimate(60 * S);
        assert!((batch.joules - live.joules).abs() < 1e-9);
        assert_eq!(batch.promotions, live.promotions);
        assert_eq!(meter.first_packet(), Some(S));
        // A packet stamped before the last one counts as at the last one: same as a packet at
        // 21 s, never a negative interval.
        let mut late = meter;
        late.packet(2 * S, true, 0);
        let mut same = meter;
        same.packet(21 * S, true, 0);
        assert_eq!(late, same);
        // Estimating part-way does not change the meter.
        let _ = meter.estimate(30 * S);
        assert!((meter.estimate(60 * S).joules - live.joules).abs() < 1e-12);
    }
}
