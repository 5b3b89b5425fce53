//! A small set of disjoint half-open `u64` ranges, kept sorted, with a bounded number of ranges.
//! Used for received packet numbers (ACK ranges, duplicate detection) and received data
//! sequence numbers (reassembly). An idle set holds no memory; the first growth reserves room
//! for the bound (a set of at most 64 ranges: all of them, and the one an insert holds before
//! the lowest is forgotten) or for 64 ranges, so that a burst of losses in a transfer's steady
//! state, with more holes than any before, does not grow it in steps; beyond 64 the vector
//! doubles and its capacity is reused. `shrink` gives it back when the set is idle.

/// Ranges a set reserves when it first grows (at most its bound and one).
const FIRST_ROOM: usize = 64;

/// Disjoint, non-adjacent, sorted half-open ranges `[start, end)`.
#[derive(Debug, Clone, Default)]
pub struct RangeSet {
    ranges: Vec<(u64, u64)>,
    /// Everything below `floor` counts as present (ranges forgotten to bound memory).
    floor: u64,
    max_ranges: usize,
}

impl RangeSet {
    /// A set that keeps at most `max_ranges` ranges; when more would be needed the lowest
    /// ranges are forgotten and everything below the new lowest range counts as present.
    pub fn new(max_ranges: usize) -> Self {
        Self { ranges: Vec::new(), floor: 0, max_ranges: max_ranges.max(1) }
    }

    /// Keeps up to `max_ranges` from now on, if that is more than before (never fewer: the
    /// ranges held stay).
    pub fn raise_bound(&mut self, max_ranges: usize) {
        self.max_ranges = self.max_ranges.max(max_ranges);
    }

    /// Gives back the memory of the ranges no longer held (an idle connection's).
    pub fn shrink(&mut self) {
        self.ranges.shrink_to_fit();
    }

    /// Keeps only the highest range: everything below it counts as present (an idle
    /// subflow's received packet numbers, whose gaps will never be filled).
    pub fn keep_last(&mut self) {
        if let Some(&(start, _)) = self.ranges.last() {
            self.advance_floor(start);
        }
    }

    /// Bytes of memory held.
    pub fn capacity_bytes(&self) -> usize {
        self.ranges.capacity() * std::mem::size_of::<(u64, u64)>()
    }

    /// Starts the set at `floor`: values below it count as present.
    pub fn with_floor(max_ranges: usize, floor: u64) -> Self {
        let mut s = Self::new(max_ranges);
        s.floor = floor;
        s
    }

    /// Everything below is taken as received.
    pub fn floor(&self) -> u64 {
        self.floor
    }

    /// No range.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// How many ranges.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether `v` is present (or below the floor).
    pub fn contains(&self, v: u64) -> bool {
        if v < self.floor {
            return true;
        }
        // Few ranges: a reverse linear scan finds recent values first.
        self.ranges.iter().rev().any(|&(s, e)| s <= v && v < e)
    }

    /// The largest value present, if any range is held.
    pub fn max(&self) -> Option<u64> {
        self.ranges.last().map(|&(_, e)| e - 1)
    }

    /// Inserts `[start, end)`; returns how many values were not present before.
    pub fn insert(&mut self, start: u64, end: u64) -> u64 {
        let start = start.max(self.floor);
        if start >= end {
            return 0;
        }
        // Find the first range whose end >= start (it may merge with us).
        let mut i = self.ranges.iter().position(|&(_, e)| e >= start).unwrap_or(self.ranges.len());
        let mut new_start = start;
        let mut new_end = end;
        let mut covered = 0u64;
        let first = i;
        while i < self.ranges.len() && self.ranges[i].0 <= end {
            let (s, e) = self.ranges[i];
            // Overlap with [start, end).
            let lo = s.max(start);
            let hi = e.min(end);
            if hi > lo {
                covered += hi - lo;
            }
            new_start = new_start.min(s);
            new_end = new_end.max(e);
            i += 1;
        }
        let added = (end - start) - covered;
        // About to grow below the room it should have: all of that room at once.
        let room = self.max_ranges.saturating_add(1).min(FIRST_ROOM);
        if self.ranges.len() == self.ranges.capacity() && self.ranges.capacity() < room {
            self.ranges.reserve_exact(room - self.ranges.len());
        }
        if first < i {
            self.ranges[first] = (new_start, new_end);
            self.ranges.drain(first + 1..i);
        } else {
            self.ranges.insert(first, (new_start, new_end));
        }
        while self.ranges.len() > self.max_ranges {
            let (_, e) = self.ranges.remove(0);
            self.floor = e;
            // The next range now starts above the floor; merge the floor into it if it touches.
        }
        added
    }

    /// Whether `[start, end)` can be inserted without forgetting a range: it touches one
    /// already held (and merges), or there is room for one more.
    pub fn can_insert(&self, start: u64, end: u64) -> bool {
        self.room() > 0 || !self.needs_range(start, end)
    }

    /// Whether inserting `[start, end)` would add a range: it starts above the floor (what
    /// starts at or below it continues the values counted present) and neither overlaps nor
    /// touches a range already held.
    pub fn needs_range(&self, start: u64, end: u64) -> bool {
        start > self.floor && !self.ranges.iter().any(|&(s, e)| s <= end && start <= e)
    }

    /// How many more ranges fit before the lowest would be forgotten.
    pub fn room(&self) -> usize {
        self.max_ranges.saturating_sub(self.ranges.len())
    }

    /// Forgets everything below `v` (it counts as present from now on).
    pub fn advance_floor(&mut self, v: u64) {
        if v <= self.floor {
            return;
        }
        self.floor = v;
        let keep = self.ranges.iter().position(|&(_, e)| e > v).unwrap_or(self.ranges.len());
        self.ranges.drain(..keep);
        if let Some(r) = self.ranges.first_mut() {
            r.0 = r.0.max(v);
        }
    }

    /// The end of the contiguous run that starts at `from` (`from` itself if absent).
    pub fn contiguous_end(&self, from: u64) -> u64 {
        if from < self.floor {
            // Below the floor everything is present; continue through a range touching it.
            return self.contiguous_end(self.floor);
        }
        for &(s, e) in &self.ranges {
            if s <= from && from < e {
                return e;
            }
        }
        from
    }

    /// The start of the first range beginning above `v`, if any.
    pub fn next_start_after(&self, v: u64) -> Option<u64> {
        self.ranges.iter().map(|r| r.0).find(|&s| s > v)
    }

    /// Ranges from the highest down, as inclusive `(smallest, largest)` pairs (ACK order).
    pub fn iter_desc(&self) -> impl Iterator<Item = (u64, u64)> + Clone + '_ {
        self.ranges.iter().rev().map(|&(s, e)| (s, e - 1))
    }

    /// Ranges in ascending order, half-open.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_merges_and_counts_new_values() {
        let mut s = RangeSet::new(8);
        assert_eq!(s.insert(10, 20), 10);
        assert_eq!(s.insert(15, 25), 5);
        assert_eq!(s.insert(30, 40), 10);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(10, 25), (30, 40)]);
        assert_eq!(s.insert(20, 35), 5);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(10, 40)]);
        assert_eq!(s.insert(40, 41), 1, "adjacent range merges");
        assert_eq!(s.len(), 1);
        assert!(s.contains(40) && !s.contains(41) && !s.contains(9));
        assert_eq!(s.insert(0, 5), 5);
        assert_eq!(s.iter_desc().collect::<Vec<_>>(), vec![(10, 40), (0, 4)]);
    }

    #[test]
    fn the_first_range_reserves_the_bound_so_losses_do_not_grow_the_set() {
        // A subflow's received packet numbers: at most 32 ranges, each hole a loss.
        let mut s = RangeSet::new(32);
        assert_eq!(s.capacity_bytes(), 0, "idle: no memory");
        s.insert(0, 1);
        let room = s.capacity_bytes();
        for k in 1..100 {
            s.insert(2 * k, 2 * k + 1);
        }
        assert_eq!(s.len(), 32);
        assert_eq!(s.capacity_bytes(), room, "grown while the holes came");
        // Idle, trimmed to its last range: the next losses take the room back in one step.
        s.keep_last();
        s.shrink();
        assert_eq!(s.len(), 1);
        s.insert(1_000, 1_001);
        assert_eq!(s.capacity_bytes(), room);
        // A set of many ranges (reassembly) reserves 64 at first.
        let mut r = RangeSet::new(10_000);
        r.insert(0, 1);
        assert_eq!(r.capacity_bytes(), 64 * 16);
    }

    #[test]
    fn bounded_ranges_raise_the_floor() {
        let mut s = RangeSet::new(2);
        s.insert(0, 1);
        s.insert(2, 3);
        s.insert(4, 5);
        assert_eq!(s.len(), 2);
        assert_eq!(s.floor(), 1);
        assert!(s.contains(0), "forgotten values count as present");
        assert!(!s.contains(1), "the gap above the forgotten range stays absent");
        assert_eq!(s.insert(0, 1), 0);
    }

    #[test]
    fn a_full_set_takes_only_what_needs_no_new_range() {
        let mut s = RangeSet::with_floor(2, 10);
        s.insert(12, 13);
        s.insert(14, 15);
        assert_eq!(s.room(), 0);
        assert!(s.needs_range(16, 17) && !s.can_insert(16, 17), "a new hole above");
        for (a, b) in [(15, 16), (11, 12), (13, 14), (10, 11), (5, 11), (12, 15)] {
            assert!(!s.needs_range(a, b) && s.can_insert(a, b), "[{a}, {b}) continues what is held");
        }
        // At the floor: the values continue the floor, and inserting them forgets nothing absent.
        s.insert(10, 11);
        assert!(!s.contains(11) && s.contains(10) && s.contains(12) && s.contains(14));
    }

    #[test]
    fn contiguous_end_and_floor() {
        let mut s = RangeSet::with_floor(8, 100);
        assert_eq!(s.contiguous_end(100), 100);
        s.insert(100, 110);
        s.insert(120, 130);
        assert_eq!(s.contiguous_end(100), 110);
        assert_eq!(s.contiguous_end(50), 110);
        s.advance_floor(125);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![(125, 130)]);
        assert_eq!(s.contiguous_end(0), 130);
    }

    #[test]
    fn agrees_with_a_model() {
        // Deterministic pseudo-random inserts against a bitmap model.
        let mut x = 0x1234_5678_9abc_def0u64;
        let mut set = RangeSet::new(1000);
        let mut model = [false; 512];
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let a = x % 500;
            let b = a + (x >> 20) % 12;
            let before = model.iter().filter(|v| **v).count() as u64;
            let added = set.insert(a, b);
            for v in &mut model[a as usize..b as usize] {
                *v = true;
            }
            let after = model.iter().filter(|v| **v).count() as u64;
            assert_eq!(added, after - before);
            for (i, v) in model.iter().enumerate() {
                assert_eq!(set.contains(i as u64), *v, "value {i}");
            }
        }
    }
}
