//! `redundant`: send every segment on every subflow that can send (Linux MPTCP's `redundant`
//! scheduler); the receiver keeps the first copy by DSN. Backups join only when no regular
//! subflow is available; a reinjection goes only where the segment has not been.

use crate::{considered, Mask, Pick, Segment, SubflowInfo};

/// The redundant scheduler (stateless).
#[derive(Clone, Copy, Debug, Default)]
pub struct Redundant;

impl Redundant {
    /// Picks per the module's rules: [`Pick::SendAll`] with every usable subflow.
    pub fn pick(&self, subflows: &[SubflowInfo], seg: &Segment) -> Pick {
        let subflows = considered(subflows);
        for want_backup in [false, true] {
            let mut mask = Mask::default();
            let mut available = false;
            for (i, s) in subflows.iter().enumerate() {
                if !s.fresh_in_class(want_backup) {
                    continue;
                }
                available = true;
                if s.can_send(seg.len) {
                    mask.insert(i);
                }
            }
            if !mask.is_empty() {
                return Pick::SendAll(mask);
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
    fn every_usable_regular_subflow() {
        let mut s = [sf(10, 0), sf(20, 0), sf(30, 0), sf(5, 0)];
        s[2].flags.set(Flags::POTENTIALLY_FAILED, true);
        s[3].flags.set(Flags::BACKUP, true);
        let Pick::SendAll(m) = Redundant.pick(&s, &seg()) else { panic!() };
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![0, 1]);
    }

    #[test]
    fn backups_when_no_regular_and_wait_when_full() {
        let mut s = [sf(10, 0), sf(5, 0)];
        s[1].flags.set(Flags::BACKUP, true);
        s[0].flags.set(Flags::ESTABLISHED, false);
        assert_eq!(Redundant.pick(&s, &seg()), Pick::SendAll(Mask(0b10)));
        s[1].cwnd_room = 0;
        assert_eq!(Redundant.pick(&s, &seg()), Pick::Wait);
        s[1].flags.set(Flags::ALREADY_SENT, true);
        assert_eq!(Redundant.pick(&s, &seg()), Pick::Unavailable);
    }
}
