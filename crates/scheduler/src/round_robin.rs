//! `round-robin`: cycle over the subflows that can send (Linux MPTCP's `roundrobin` scheduler
//! with one segment per turn). Backups are used only when no regular subflow is available; a
//! reinjection skips subflows that carried it.

use crate::{considered, Pick, Segment, SubflowInfo};

/// The round-robin scheduler: remembers where the last turn ended.
#[derive(Clone, Copy, Debug, Default)]
pub struct RoundRobin {
    next: usize,
}

impl RoundRobin {
    /// Picks per the module's rules.
    pub fn pick(&mut self, subflows: &[SubflowInfo], seg: &Segment) -> Pick {
        let subflows = considered(subflows);
        let n = subflows.len();
        if n == 0 {
            return Pick::Unavailable;
        }
        for want_backup in [false, true] {
            let mut available = false;
            for k in 0..n {
                let i = (self.next + k) % n;
                let s = &subflows[i];
                if !s.fresh_in_class(want_backup) {
                    continue;
                }
                available = true;
                if s.can_send(seg.len) {
                    self.next = (i + 1) % n;
                    return Pick::Send(i);
                }
            }
            if available {
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
    fn cycles() {
        let s = [sf(10, 0), sf(20, 0), sf(30, 0)];
        let mut rr = RoundRobin::default();
        let picks: Vec<_> = (0..6).map(|_| rr.pick(&s, &seg())).collect();
        assert_eq!(picks, [0, 1, 2, 0, 1, 2].map(Pick::Send));
    }

    #[test]
    fn skips_full_and_failed_waits_when_all_full() {
        let mut s = [sf(10, 0), sf(20, 0), sf(30, 0)];
        s[1].cwnd_room = 0;
        s[2].flags.set(Flags::POTENTIALLY_FAILED, true);
        let mut rr = RoundRobin::default();
        assert_eq!(rr.pick(&s, &seg()), Pick::Send(0));
        assert_eq!(rr.pick(&s, &seg()), Pick::Send(0));
        s[0].cwnd_room = 0;
        assert_eq!(rr.pick(&s, &seg()), Pick::Wait);
    }

    #[test]
    fn backups_only_without_available_regulars() {
        let mut s = [sf(10, 0), sf(20, 0)];
        s[1].flags.set(Flags::BACKUP, true);
        let mut rr = RoundRobin::default();
        assert_eq!(rr.pick(&s, &seg()), Pick::Send(0));
        assert_eq!(rr.pick(&s, &seg()), Pick::Send(0));
        s[0].flags.set(Flags::POTENTIALLY_FAILED, true);
        assert_eq!(rr.pick(&s, &seg()), Pick::Send(1));
    }
}
