//! A connection's subflows. Each lives in a *slot*; a slot's index is the subflow's place in
//! the scheduler's view, in the reinjection masks and in the endpoint's CID routes, and it
//! stays the same for the subflow's whole life. A closed subflow's record is reclaimed after
//! its drain and its slot taken by the next subflow, so a connection that opens and closes
//! subflows for days holds only the ones alive now.
//!
//! What must outlive a record does: the subflow numbers the peer has used (a JOIN naming one
//! again is a replay, §2, §12) and the final statistics of the last few closed subflows.

use super::{Subflow, SubflowStats};
use crate::conn::cc::{CoupledPath, Coupling};
use crate::ranges::RangeSet;
use crate::wire::Cid;
use crate::Time;
use std::collections::VecDeque;
use std::ops::{Index, IndexMut};

/// Most subflow records a connection holds at once (the schedulers' limit).
pub const MAX_SLOTS: usize = scheduler::MAX_SUBFLOWS;

/// How many closed subflows' final statistics [`SubflowTable::history`] keeps.
pub const HISTORY: usize = 8;

/// Ranges of peer subflow numbers remembered exactly; beyond, the lowest are merged into the
/// used ones (a late JOIN below them is refused, never a replay accepted).
const NUMBER_RANGES: usize = 8;

#[derive(Debug)]
pub struct SubflowTable {
    slots: Vec<Option<Subflow>>,
    /// Subflow numbers (without the opener bit) the peer has used.
    peer_numbers: RangeSet,
    /// Final statistics of the last closed subflows, with their creation order.
    history: VecDeque<(u64, SubflowStats)>,
    /// Creation order of each slot's subflow (beside `slots`, one each), and the next to give.
    order: Vec<u64>,
    next_order: u64,
}

impl Default for SubflowTable {
    fn default() -> Self {
        Self {
            // Grown one slot at a time: a subflow record is large, and most connections have one or two.
            slots: Vec::new(),
            peer_numbers: RangeSet::new(NUMBER_RANGES),
            history: VecDeque::new(),
            order: Vec::new(),
            next_order: 0,
        }
    }
}

impl SubflowTable {
    /// Bytes on the heap: the slots, their creation order, the peer's numbers, the history.
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.slots.capacity() * size_of::<Option<Subflow>>()
            + self.order.capacity() * size_of::<u64>()
            + self.peer_numbers.capacity_bytes()
            + self.history.capacity() * size_of::<(u64, SubflowStats)>()
            + self.slots.iter().flatten().map(|s| s.rec().cc.heap_bytes()).sum::<usize>()
    }

    /// One past the highest slot in use: slot indices are below it.
    pub fn slot_bound(&self) -> usize {
        self.slots.len()
    }

    /// Subflow records held (open or draining).
    pub fn records(&self) -> usize {
        self.slots.iter().flatten().count()
    }

    pub fn open_count(&self) -> usize {
        self.iter().filter(|s| s.is_open()).count()
    }

    pub fn get(&self, slot: usize) -> Option<&Subflow> {
        self.slots.get(slot)?.as_ref()
    }

    pub fn get_mut(&mut self, slot: usize) -> Option<&mut Subflow> {
        self.slots.get_mut(slot)?.as_mut()
    }

    /// The subflows held, in slot order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Subflow> + Clone + '_ {
        self.slots.iter().flatten()
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut Subflow> + '_ {
        self.slots.iter_mut().flatten()
    }

    /// `(slot, subflow)` pairs, in slot order.
    pub fn enumerate(&self) -> impl Iterator<Item = (usize, &Subflow)> + '_ {
        self.slots.iter().enumerate().filter_map(|(k, s)| Some((k, s.as_ref()?)))
    }

    /// `(slot, subflow)` pairs, in slot order.
    pub fn enumerate_mut(&mut self) -> impl Iterator<Item = (usize, &mut Subflow)> + '_ {
        self.slots.iter_mut().enumerate().filter_map(|(k, s)| Some((k, s.as_mut()?)))
    }

    /// The slot of the subflow whose CID (ours) is `cid`.
    pub fn by_cid(&self, cid: &Cid) -> Option<usize> {
        self.enumerate().find(|(_, s)| s.local_cid == *cid).map(|(k, _)| k)
    }

    /// The slot of subflow number `id`.
    pub fn by_number(&self, id: u32) -> Option<usize> {
        self.enumerate().find(|(_, s)| s.id == id).map(|(k, _)| k)
    }

    /// Subflow number `id`, one of the peer's, is used for good: it opened a subflow with it,
    /// or closed it before its join reached us (a REMOVE_SUBFLOW, §5.21), so that a late join
    /// with it is refused as a used number.
    pub fn note_peer_number(&mut self, id: u32) {
        let n = u64::from(id & 0x7fff_ffff);
        self.peer_numbers.insert(n, n + 1);
    }

    /// Whether the peer already used subflow number `id` (for a subflow alive or gone).
    pub fn peer_number_used(&self, id: u32) -> bool {
        self.peer_numbers.contains(u64::from(id & 0x7fff_ffff))
    }

    /// Places `sf` in the lowest free slot; `None` when all [`MAX_SLOTS`] are taken. A number
    /// the peer opened is remembered for good.
    pub fn insert(&mut self, sf: Subflow) -> Option<usize> {
        let slot = match self.slots.iter().position(Option::is_none) {
            Some(k) => k,
            None if self.slots.len() < MAX_SLOTS => {
                self.slots.reserve_exact(1);
                self.slots.push(None);
                self.order.reserve_exact(1);
                self.order.push(0);
                self.slots.len() - 1
            }
            None => return None,
        };
        if !sf.local_opener {
            self.note_peer_number(sf.id);
        }
        self.order[slot] = self.next_order;
        self.next_order += 1;
        self.slots[slot] = Some(sf);
        Some(slot)
    }

    /// Removes the record in `slot` and keeps `stats` (its final statistics) in the history.
    pub fn reclaim(&mut self, slot: usize, stats: SubflowStats) -> Option<Subflow> {
        let sf = self.slots.get_mut(slot)?.take()?;
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back((self.order[slot], stats));
        while let Some(None) = self.slots.last() {
            self.slots.pop();
            self.order.pop();
        }
        Some(sf)
    }

    /// The statistics of every subflow held and of the last [`HISTORY`] closed ones, in the
    /// order the subflows were created.
    pub fn stats(&self, live: impl Fn(&Subflow) -> SubflowStats) -> Vec<SubflowStats> {
        let mut all: Vec<(u64, SubflowStats)> = self.history.iter().copied().collect();
        all.extend(self.enumerate().map(|(k, s)| (self.order[k], live(s))));
        all.sort_by_key(|e| e.0);
        all.into_iter().map(|e| e.1).collect()
    }
}

impl SubflowTable {
    /// The coupling of congestion control for subflow `i`'s ACK (RFC 6356): over the working
    /// subflows that used their window within the last RTO, and `i` itself (see `cc`'s module
    /// documentation); none for an uncoupled algorithm.
    pub fn coupling(&self, i: usize, now: Time) -> Coupling {
        let this = self[i].id();
        if !self[i].rec().cc.coupled() {
            return Coupling::default();
        }
        Coupling::compute(
            self.iter().filter(|s| s.established() && !s.pf() && (s.id() == this || s.rec().cwnd_limited(now))).map(
                |s| CoupledPath {
                    this: s.id() == this,
                    cwnd: s.rec().cc.cwnd(),
                    rtt: s.rec().rtt.smoothed_or_default(),
                    inter_loss: s.rec().cc.inter_loss(),
                },
            ),
        )
    }
}

impl Index<usize> for SubflowTable {
    type Output = Subflow;

    /// The subflow in `slot`, which must be held (slots come from this table's own
    /// iteration or lookups).
    fn index(&self, slot: usize) -> &Subflow {
        match self.get(slot) {
            Some(s) => s,
            None => panic!("no subflow in slot {slot}"),
        }
    }
}

impl IndexMut<usize> for SubflowTable {
    fn index_mut(&mut self, slot: usize) -> &mut Subflow {
        match self.get_mut(slot) {
            Some(s) => s,
            None => panic!("no subflow in slot {slot}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::recovery::Rtt;
    use super::super::SubflowState;
    use super::*;
    use crate::conn::cc::{Cc, CongestionControl};
    use crate::PathId;

    fn subflow(id: u32, local_opener: bool) -> Subflow {
        let addr = "192.0.2.1:5201".parse().expect("address");
        let cid = Cid([id as u8; 8]);
        let rtt = Rtt::new(1_000_000, 200_000, 60_000_000);
        let cc = Cc::new(CongestionControl::Reno, 1200);
        Subflow::new(id, SubflowState::Established, PathId(0), addr, cid, local_opener, false, rtt, cc, 0)
    }

    fn reclaim(t: &mut SubflowTable, slot: usize) {
        let st = t[slot].stats();
        assert!(t.reclaim(slot, st).is_some());
    }

    #[test]
    fn slots_are_stable_and_reused_lowest_first() {
        let mut t = SubflowTable::default();
        assert_eq!(t.insert(subflow(0, true)), Some(0));
        assert_eq!(t.insert(subflow(1, true)), Some(1));
        assert_eq!(t.insert(subflow(2, true)), Some(2));
        reclaim(&mut t, 1);
        assert_eq!((t.slot_bound(), t.records()), (3, 2), "slot 2 keeps its index");
        assert_eq!(t.by_number(2), Some(2));
        assert_eq!(t.by_cid(&Cid([2; 8])), Some(2));
        assert_eq!(t.by_cid(&Cid([1; 8])), None, "the reclaimed record's CID is gone");
        assert_eq!(t.insert(subflow(3, true)), Some(1), "the free slot is taken first");
        reclaim(&mut t, 2);
        reclaim(&mut t, 1);
        assert_eq!(t.slot_bound(), 1, "trailing free slots are dropped");
        assert!(t.get(1).is_none() && t.get(5).is_none());
    }

    #[test]
    fn a_full_table_refuses_and_open_and_close_forever_never_fills_it() {
        let mut t = SubflowTable::default();
        for id in 0..MAX_SLOTS as u32 {
            assert!(t.insert(subflow(id, true)).is_some());
        }
        assert_eq!(t.insert(subflow(99, true)), None, "64 records at once is the limit");
        for id in 0..MAX_SLOTS {
            reclaim(&mut t, id);
        }
        for id in 100..10_100 {
            let slot = t.insert(subflow(id, true)).expect("a slot");
            reclaim(&mut t, slot);
        }
        assert_eq!(t.records(), 0);
    }

    #[test]
    fn the_peer_s_numbers_stay_used_after_their_records_go() {
        let mut t = SubflowTable::default();
        let s = t.insert(subflow(0x8000_0003, false)).expect("slot");
        assert!(t.peer_number_used(0x8000_0003) && !t.peer_number_used(0x8000_0002));
        reclaim(&mut t, s);
        assert!(t.peer_number_used(0x8000_0003), "a replayed JOIN meets the number");
        t.insert(subflow(7, true));
        assert!(!t.peer_number_used(7), "our own numbers are not the peer's");
        // Many scattered numbers: the oldest ranges merge into "used", never into "free".
        for n in (10..40).step_by(2) {
            let slot = t.insert(subflow(0x8000_0000 | n, false)).expect("slot");
            reclaim(&mut t, slot);
        }
        assert!((10..40).step_by(2).all(|n| t.peer_number_used(n)));
        assert!(t.peer_number_used(11), "a gap below the remembered ranges counts as used");
        assert!(!t.peer_number_used(39) && !t.peer_number_used(41), "recent gaps stay free");
    }

    #[test]
    fn statistics_keep_the_last_closed_subflows_in_creation_order() {
        let mut t = SubflowTable::default();
        for id in 0..12 {
            t.insert(subflow(id, true));
        }
        for slot in 0..11 {
            reclaim(&mut t, slot);
        }
        let ids: Vec<u32> = t.stats(Subflow::stats).iter().map(|s| s.id).collect();
        assert_eq!(ids, vec![3, 4, 5, 6, 7, 8, 9, 10, 11], "{HISTORY} closed ones, then the one alive");
        let s = t.insert(subflow(12, true)).expect("slot");
        assert_eq!(s, 0, "a reused slot");
        assert_eq!(t.stats(Subflow::stats).last().map(|s| s.id), Some(12), "listed by creation, not by slot");
    }
}
