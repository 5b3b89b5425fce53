//! One deadline per timer kind: the table a connection's and each subflow's timers are
//! computed into (see `conn::timers`).

use crate::Time;

/// One deadline per timer kind (`N` kinds, numbered from 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerTable<const N: usize> {
    at: [Option<Time>; N],
}

impl<const N: usize> Default for TimerTable<N> {
    fn default() -> Self {
        Self { at: [None; N] }
    }
}

impl<const N: usize> TimerTable<N> {
    /// Arms (`Some`) or stops (`None`) timer `kind`.
    pub fn set(&mut self, kind: usize, at: Option<Time>) {
        self.at[kind] = at;
    }

    /// Arms timer `kind` at `at`, or keeps its deadline if that is earlier.
    pub fn set_earliest(&mut self, kind: usize, at: Time) {
        self.at[kind] = Some(self.at[kind].map_or(at, |t| t.min(at)));
    }

    /// Whether timer `kind` is armed and due at `now`.
    pub fn expired(&self, kind: usize, now: Time) -> bool {
        self.at[kind].is_some_and(|t| t <= now)
    }

    /// The earliest deadline of all kinds.
    pub fn next(&self) -> Option<Time> {
        self.at.iter().flatten().copied().min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_deadline_per_kind() {
        let mut t: TimerTable<4> = TimerTable::default();
        assert_eq!(t.next(), None);
        t.set(2, Some(300));
        t.set(0, Some(500));
        t.set(3, Some(100));
        assert_eq!(t.next(), Some(100));
        t.set(3, None);
        assert_eq!(t.next(), Some(300), "a stopped timer no longer counts");
        assert!(t.expired(2, 300) && !t.expired(2, 299) && !t.expired(1, u64::MAX));
        t.set(2, Some(900));
        assert!(!t.expired(2, 300) && t.expired(2, 900), "re-arming replaces the deadline");
        assert_eq!(t.next(), Some(500));
        t.set_earliest(0, 700);
        t.set_earliest(1, 800);
        assert!(t.expired(0, 500) && !t.expired(1, 799) && t.expired(1, 800), "the earlier deadline stays");
    }
}
