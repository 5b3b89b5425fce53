//! `priority`: MultiMob's client scheduler. "On the smartphone, MultiMob uses a priority
//! scheduler that favors WiFi and only uses cellular when the WiFi subflow experiences
//! retransmissions." (MultiMob §III-A)
//!
//! Interfaces are ranked by a preference order (default WiFi, wired, cellular, other). Going down
//! the ranks, the first rank with an available subflow (established, not potentially failed, not
//! yet used for this segment) that shows no retransmissions and that the oracle has not flagged
//! (bad, or a high RTO: up but degraded; the connection also flags a subflow that lost packets
//! after the oracle cleared it during a failover, until the fail-back) is the one used: its lowest-RTT subflow that can send,
//! or, if its window is full, nothing now. A rank whose subflows all retransmit, are
//! potentially failed or flagged passes to the next (the open failover subflow). If every rank passes, the least bad
//! choice is taken: the lowest-RTT subflow that can send, so a lossy WiFi with no cellular
//! subflow yet still carries data.

use crate::lowest_rtt::{data_fin_subflow, key_index, rtt_key, NONE};
use crate::{considered, Flags, Iface, Pick, Segment, SubflowInfo};

/// The oracle's flags for a path that is up but degraded.
const DEGRADED: u8 = Flags::WAS_BAD.0 | Flags::HIGH_RTO.0;

/// The priority scheduler.
#[derive(Clone, Copy, Debug)]
pub struct Priority {
    /// The rank of each interface kind (0 most preferred), indexed by [`kind_index`].
    ranks: [u8; 4],
}

impl Default for Priority {
    fn default() -> Self {
        Self::new(&[Iface::Wifi, Iface::Wired, Iface::Cellular, Iface::Other])
    }
}

/// An interface kind as an index into [`Priority::ranks`].
#[inline(always)]
fn kind_index(k: Iface) -> usize {
    match k {
        Iface::Wifi => 0,
        Iface::Cellular => 1,
        Iface::Wired => 2,
        Iface::Other => 3,
    }
}

impl Priority {
    /// A scheduler with this preference order (most preferred first; at most 4 kinds, repeats
    /// ignored). Kinds left out rank after the listed ones.
    pub fn new(order: &[Iface]) -> Self {
        const UNLISTED: u8 = u8::MAX;
        let mut ranks = [UNLISTED; 4];
        let mut listed = 0u8;
        for k in order {
            if ranks[kind_index(*k)] == UNLISTED {
                ranks[kind_index(*k)] = listed;
                listed += 1;
            }
        }
        for r in &mut ranks {
            if *r == UNLISTED {
                *r = listed;
            }
        }
        Self { ranks }
    }

    #[inline(always)]
    fn rank(&self, k: Iface) -> u64 {
        u64::from(self.ranks[kind_index(k)])
    }

    /// Picks per the module's rules, in one scan. The ranks' pass-through reads as: the best
    /// (lowest) rank that has a healthy candidate decides; within it the lowest RTT that can
    /// send, else wait. So the scan keeps that rank, the lowest `(rank, srtt, index)` among
    /// healthy candidates that can send, and the lowest `(srtt, index)` among all candidates that
    /// can send for the fallback.
    #[inline]
    pub fn pick(&self, subflows: &[SubflowInfo], seg: &Segment) -> Pick {
        let subflows = considered(subflows);
        if let Some(i) = data_fin_subflow(subflows, seg) {
            return Pick::Send(i);
        }
        const RANK_SHIFT: u32 = 38; // above rtt_key's 32 bits of srtt and 6 of index
        let mut healthy_rank = u64::MAX;
        let mut best = NONE;
        let mut fallback = NONE;
        let mut any = false;
        // Branch-free: every subflow costs the same, whatever its state. (`rtt_key` is written
        // twice on purpose: bound once to a local, the bench measured 12 ns instead of 9.5.)
        for (i, s) in subflows.iter().enumerate() {
            let candidate = s.available() & !s.already_sent();
            // A subflow the oracle flagged (bad, or a high RTO: degraded though up) is not
            // healthy either: the open failover subflow is preferred while it is flagged.
            let healthy = candidate & (s.retrans_outstanding == 0) & (s.flags.0 & DEGRADED == 0);
            let can = candidate & s.can_send(seg.len);
            let rank = self.rank(s.iface);
            any |= candidate;
            fallback = fallback.min(if can { rtt_key(s, i) } else { NONE });
            healthy_rank = healthy_rank.min(if healthy { rank } else { u64::MAX });
            best = best.min(if healthy & can { (rank << RANK_SHIFT) | rtt_key(s, i) } else { NONE });
        }
        if healthy_rank != u64::MAX {
            // The best healthy rank decides: its fastest subflow that can send, else wait.
            return if best != NONE && best >> RANK_SHIFT == healthy_rank {
                Pick::Send(key_index(best))
            } else {
                Pick::Wait
            };
        }
        // Every rank retransmits or failed: the least bad subflow.
        if fallback != NONE {
            Pick::Send(key_index(fallback))
        } else if any {
            Pick::Wait
        } else {
            Pick::Unavailable
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{seg, sf};

    fn pair() -> [SubflowInfo; 2] {
        let mut s = [sf(40, 0), sf(15, 0)];
        s[1].iface = Iface::Cellular;
        s[1].flags.set(Flags::BACKUP, true);
        s
    }

    #[test]
    fn wifi_first_even_when_cellular_is_faster() {
        assert_eq!(Priority::default().pick(&pair(), &seg()), Pick::Send(0));
    }

    #[test]
    fn cellular_while_wifi_retransmits_then_back() {
        let mut s = pair();
        s[0].retrans_outstanding = 2;
        assert_eq!(Priority::default().pick(&s, &seg()), Pick::Send(1));
        s[0].retrans_outstanding = 0;
        assert_eq!(Priority::default().pick(&s, &seg()), Pick::Send(0));
    }

    #[test]
    fn cellular_while_the_oracle_flags_wifi_degraded_and_wifi_without_another_choice() {
        for flag in [Flags::WAS_BAD, Flags::HIGH_RTO] {
            let mut s = pair();
            s[0].flags.set(flag, true);
            assert_eq!(Priority::default().pick(&s, &seg()), Pick::Send(1), "{flag:?}");
            // No failover subflow: the degraded WiFi still carries the data.
            assert_eq!(Priority::default().pick(&s[..1], &seg()), Pick::Send(0), "{flag:?}");
        }
    }

    #[test]
    fn cellular_while_wifi_potentially_failed() {
        let mut s = pair();
        s[0].flags.set(Flags::POTENTIALLY_FAILED, true);
        assert_eq!(Priority::default().pick(&s, &seg()), Pick::Send(1));
    }

    #[test]
    fn healthy_wifi_with_full_window_waits() {
        let mut s = pair();
        s[0].cwnd_room = 0;
        assert_eq!(Priority::default().pick(&s, &seg()), Pick::Wait);
    }

    #[test]
    fn retransmitting_wifi_alone_still_carries_data() {
        let mut s = [sf(40, 0)];
        s[0].retrans_outstanding = 1;
        assert_eq!(Priority::default().pick(&s, &seg()), Pick::Send(0));
    }

    #[test]
    fn custom_order_and_unlisted_kinds() {
        let s = pair();
        let cell_first = Priority::new(&[Iface::Cellular, Iface::Wifi, Iface::Cellular]);
        assert_eq!(cell_first.pick(&s, &seg()), Pick::Send(1));
        let only_wired = Priority::new(&[Iface::Wired]);
        // WiFi and cellular both rank after wired, in one rank: lowest RTT.
        assert_eq!(only_wired.pick(&s, &seg()), Pick::Send(1));
    }

    /// The rule as the module text states it, rank by rank: the model `pick` must agree with.
    fn by_ranks(order: &[Iface], subflows: &[SubflowInfo], seg: &Segment) -> Pick {
        if let Some(i) = data_fin_subflow(subflows, seg) {
            return Pick::Send(i);
        }
        let rank = |k: Iface| order.iter().position(|o| *o == k).unwrap_or(order.len());
        let lowest_rtt = |pred: &dyn Fn(&SubflowInfo) -> bool| {
            let mut best: Option<usize> = None;
            for (i, s) in subflows.iter().enumerate() {
                if pred(s) && s.can_send(seg.len) && best.is_none_or(|b| s.srtt_us < subflows[b].srtt_us) {
                    best = Some(i);
                }
            }
            best
        };
        let candidate = |s: &SubflowInfo| s.available() && !s.already_sent();
        for r in 0..=order.len() {
            let flagged = |s: &SubflowInfo| s.flags.contains(Flags::WAS_BAD) || s.flags.contains(Flags::HIGH_RTO);
            let healthy =
                |s: &SubflowInfo| candidate(s) && s.retrans_outstanding == 0 && !flagged(s) && rank(s.iface) == r;
            if subflows.iter().any(healthy) {
                return lowest_rtt(&healthy).map_or(Pick::Wait, Pick::Send);
            }
        }
        match lowest_rtt(&candidate) {
            Some(i) => Pick::Send(i),
            None if subflows.iter().any(candidate) => Pick::Wait,
            None => Pick::Unavailable,
        }
    }

    proptest::proptest! {
        #[test]
        fn one_scan_agrees_with_the_rank_by_rank_rule(
            s in proptest::collection::vec((0..128u8, 0..4usize, 0..3u32, 0..3u32, 0..3u32), 1..9),
            order in proptest::collection::vec(0..4usize, 0..5),
            fin in proptest::option::weighted(0.1, 0..9usize),
        ) {
            const KINDS: [Iface; 4] = [Iface::Wifi, Iface::Cellular, Iface::Wired, Iface::Other];
            let s: Vec<SubflowInfo> = s
                .into_iter()
                .map(|(f, k, rtt, room, retr)| SubflowInfo {
                    flags: Flags(if f < 64 { Flags::ESTABLISHED.0 } else { f & 0x7f }),
                    iface: KINDS[k],
                    srtt_us: rtt * 1000,
                    cwnd_room: room * 1000,
                    retrans_outstanding: retr,
                    ..Default::default()
                })
                .collect();
            let mut order: Vec<Iface> = order.into_iter().map(|k| KINDS[k]).collect();
            let p = Priority::new(&order);
            let mut seen = Vec::new();
            order.retain(|k| if seen.contains(k) { false } else { seen.push(*k); true });
            let g = Segment { len: 1000, answer_data_fin_on: fin, ..seg() };
            proptest::prop_assert_eq!(p.pick(&s, &g), by_ranks(&order, &s, &g));
        }
    }

    #[test]
    fn reinjection_skips_the_subflow_that_carried_it() {
        let mut s = pair();
        s[0].flags.set(Flags::ALREADY_SENT, true);
        assert_eq!(Priority::default().pick(&s, &seg()), Pick::Send(1));
        s[1].flags.set(Flags::ALREADY_SENT, true);
        assert_eq!(Priority::default().pick(&s, &seg()), Pick::Unavailable);
    }
}
