//! `priority`: MultiMob's client scheduler. "On the smartphone, MultiMob uses a priority
//! scheduler that favors WiFi and only uses cellular when the WiFi subflow experiences
//! retransmissions." (MultiMob §III-A)
//!
//! Interfaces are ranked by a preference order (default WiFi, wired, cellular, other). Going down
//! the ranks, the first rank with an available subflow (established, not potentially failed, not
//! yet used for this segment) that shows no retransmissions is the one used: its lowest-RTT
//! subflow that can send, or, if its window is full, nothing now. A rank whose subflows all
//! retransmit or are potentially failed passes to the next. If every rank passes, the least bad
//! choice is taken: the lowest-RTT subflow that can send, so a lossy WiFi with no cellular
//! subflow yet still carries data.

use crate::lowest_rtt::data_fin_subflow;
use crate::{considered, Iface, Pick, Segment, SubflowInfo};

/// The priority scheduler.
#[derive(Clone, Copy, Debug)]
pub struct Priority {
    order: [Iface; 4],
    len: usize,
}

impl Default for Priority {
    fn default() -> Self {
        Self { order: [Iface::Wifi, Iface::Wired, Iface::Cellular, Iface::Other], len: 4 }
    }
}

impl Priority {
    /// A scheduler with this preference order (most preferred first; at most 4 kinds, repeats
    /// ignored). Kinds left out rank after the listed ones.
    pub fn new(order: &[Iface]) -> Self {
        let mut o = [Iface::Other; 4];
        let mut len = 0;
        for k in order {
            if len < 4 && !o[..len].contains(k) {
                o[len] = *k;
                len += 1;
            }
        }
        Self { order: o, len }
    }

    fn rank(&self, k: Iface) -> usize {
        self.order[..self.len].iter().position(|o| *o == k).unwrap_or(self.len)
    }

    /// Picks per the module's rules. Ranks are scanned in order and the first decides, so the
    /// usual case (the preferred interface healthy) costs one scan; the first scan also finds
    /// the fallback.
    pub fn pick(&self, subflows: &[SubflowInfo], seg: &Segment) -> Pick {
        let subflows = considered(subflows);
        if let Some(i) = data_fin_subflow(subflows, seg) {
            return Pick::Send(i);
        }
        let mut fallback: Option<usize> = None;
        let mut any = false;
        for rank in 0..=self.len {
            let mut healthy = false;
            let mut best: Option<usize> = None;
            for (i, s) in subflows.iter().enumerate() {
                if !s.available() || s.already_sent() {
                    continue;
                }
                let can = s.can_send(seg.len);
                let faster = |b: Option<usize>| b.is_none_or(|b| s.srtt_us < subflows[b].srtt_us);
                if rank == 0 {
                    any = true;
                    if can && faster(fallback) {
                        fallback = Some(i);
                    }
                }
                if s.retrans_outstanding > 0 || self.rank(s.iface) != rank {
                    continue;
                }
                healthy = true;
                if can && faster(best) {
                    best = Some(i);
                }
            }
            match best {
                Some(i) => return Pick::Send(i),
                None if healthy => return Pick::Wait,
                None => {}
            }
        }
        // Every rank retransmits or failed: the least bad subflow.
        match fallback {
            Some(i) => Pick::Send(i),
            None if any => Pick::Wait,
            None => Pick::Unavailable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{seg, sf};
    use crate::Flags;

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

    #[test]
    fn reinjection_skips_the_subflow_that_carried_it() {
        let mut s = pair();
        s[0].flags.set(Flags::ALREADY_SENT, true);
        assert_eq!(Priority::default().pick(&s, &seg()), Pick::Send(1));
        s[1].flags.set(Flags::ALREADY_SENT, true);
        assert_eq!(Priority::default().pick(&s, &seg()), Pick::Unavailable);
    }
}
