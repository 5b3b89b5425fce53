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
    pub promotion_s: f64,
    pub promotion_w: f64,
    pub active_s: f64,
    pub active_w: f64,
    pub up_j_per_mbit: f64,
    pub down_j_per_mbit: f64,
    pub tail_s: f64,
    pub tail_w: f64,
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
    pub time: Time,
    /// Sent by this host (uplink) or received (downlink).
    pub up: bool,
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
    let span = end.saturating_sub(start) as f64 / 1e6;
    let mut times: Vec<f64> =
        packets.iter().filter(|p| p.time >= start && p.time <= end).map(|p| (p.time - start) as f64 / 1e6).collect();
    times.sort_by(f64::total_cmp);
    let (mut up_bits, mut down_bits) = (0.0, 0.0);
    for p in packets.iter().filter(|p| p.time >= start && p.time <= end) {
        let bits = p.bytes as f64 * 8.0;
        if p.up {
            up_bits += bits;
        } else {
            down_bits += bits;
        }
    }
    let mut joules = 0.0;
    let mut busy = 0.0; // seconds not spent idle
    let mut promotions = 0;
    // The end of the current continuous-reception window, and of the tail after it.
    let mut active_end = f64::NEG_INFINITY;
    for &t in &times {
        let tail_end = active_end + model.tail_s;
        if t >= tail_end {
            // Idle: close the previous burst (its full tail), then promote.
            if active_end.is_finite() {
                joules += model.tail_w * model.tail_s;
                busy += model.tail_s;
            }
            promotions += 1;
            joules += model.promotion_w * model.promotion_s;
            busy += model.promotion_s;
            active_end = t;
        } else if t > active_end {
            // In the tail: the part of it that elapsed.
            joules += model.tail_w * (t - active_end);
            busy += t - active_end;
            active_end = t;
        }
        // Extend the continuous-reception window to t + active_s.
        let new_end = t + model.active_s;
        if new_end > active_end {
            joules += model.active_w * (new_end - active_end);
            busy += new_end - active_end;
            active_end = new_end;
        }
    }
    if active_end.is_finite() {
        // The last tail, cut at the end of the interval.
        let tail = (span - active_end).clamp(0.0, model.tail_s);
        joules += model.tail_w * tail;
        busy += tail;
    }
    joules += model.up_j_per_mbit * up_bits / 1e6 + model.down_j_per_mbit * down_bits / 1e6;
    joules += model.idle_w * (span - busy).max(0.0);
    let above_idle_joules = joules - model.idle_w * span;
    let mean_mw = if span > 0.0 { joules / span * 1e3 } else { 0.0 };
    Energy { joules, above_idle_joules: above_idle_joules.max(0.0), mean_mw, promotions }
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
}
