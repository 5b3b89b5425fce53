//! The cellular energy estimate MultiMob uses (Huang et al., MobiSys 2012, LTE), computed from
//! the packets that crossed a cellular interface.
//!
//! From idle, the first packet costs a promotion of 0.26 s at 1.21 W. Each packet keeps the
//! radio in continuous reception for 0.1 s, at 1.2 W plus 0.438 W per Mbit/s sent and 0.052 W
//! per Mbit/s received (so 0.438 J per Mbit up and 0.052 J per Mbit down). Then the
//! RRC_CONNECTED tail lasts 11.576 s at about 1.06 W (DRX) before the radio is idle again, at
//! about 0.02 W (paging).

use crate::radio::Radio;
use crate::Time;

pub use crate::radio::{Energy, Profile as Model};

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
/// sees packets as they cross the interface: the radio's state machine ([`crate::radio`]) in
/// its observing mode, so a packet that crosses an idle radio pays the promotion that must
/// have preceded it.
///
/// ```
/// use oracle::energy::{Meter, Model};
/// let mut m = Meter::new(Model::default(), 0);
/// m.packet(1_000_000, true, 1_200);
/// let e = m.estimate(60_000_000);
/// assert_eq!(e.promotions, 1);
/// assert_eq!(m.first_packet(), Some(1_000_000));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Meter {
    radio: Radio,
}

impl Meter {
    /// A radio idle since `start` (µs).
    pub fn new(model: Model, start: Time) -> Self {
        Self { radio: Radio::new(model, start, 0) }
    }

    /// One packet at `time` (µs), sent (`up`) or received. Times must not go backwards; an
    /// earlier one counts as the latest seen.
    pub fn packet(&mut self, time: Time, up: bool, bytes: usize) {
        self.radio.observe(time, up, bytes);
    }

    /// When the first packet crossed (µs), if any did.
    pub fn first_packet(&self) -> Option<Time> {
        self.radio.first_packet()
    }

    /// The estimate over `[start, end]`: the last tail is cut at `end`, the rest of the time
    /// is idle paging.
    pub fn estimate(&self, end: Time) -> Energy {
        self.radio.energy(end)
    }

    /// The radio state machine the meter keeps.
    pub fn radio(&self) -> &Radio {
        &self.radio
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
        let mut late = meter.clone();
        late.packet(2 * S, true, 0);
        let mut same = meter.clone();
        same.packet(21 * S, true, 0);
        assert_eq!(late, same);
        // Estimating part-way does not change the meter.
        let _ = meter.estimate(30 * S);
        assert!((meter.estimate(60 * S).joules - live.joules).abs() < 1e-12);
    }
}
