//! The FAST_JOIN_OUT replay window (PROTOCOL.md §5.9).
//!
//! MultiMob's rule: "at most one fast-join SYN is accepted per data sequence number", and only
//! for a DSN in `[EDSN - rcv_wnd, EDSN]`, where EDSN is the next data sequence number the
//! receiver expects and `rcv_wnd` its receive window.
//!
//! The window is two numbers and a small array:
//!
//! - `low`, the lower edge. It only moves forward: each update takes the larger of itself and
//!   `EDSN - rcv_wnd`. A window that grows later therefore never re-opens DSNs that were
//!   already forgotten.
//! - `seen`, the DSNs already accepted in `[low, ...]`, at most `N` of them. A DSN below `low`
//!   is refused as stale, so forgetting it loses nothing. When all `N` slots hold live DSNs, a
//!   new fast join is refused (`Full`) rather than remembered imperfectly.
//!
//! Sequence numbers wrap at 2^64 (RFC 8684's 64-bit DSN); every comparison is made on the
//! signed difference, which is exact while the numbers compared lie within 2^63 of each
//! other. The receive window is capped at 2^62 for that reason.

/// How many accepted DSNs a window remembers by default. A client opens one fast join per
/// path failure, so a handful per receive window is already generous.
pub const DEFAULT_CAPACITY: usize = 16;

/// The largest receive window the comparisons accept (larger ones are capped).
pub const MAX_WINDOW: u64 = 1 << 62;

/// Why a FAST_JOIN_OUT is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// It carries no data: a FAST_JOIN_OUT must (§5.9 rule 1).
    NoData,
    /// Its DSN lies below `EDSN - rcv_wnd` (or below the window's lower edge) (rule 2).
    Stale,
    /// A fast join with this DSN was already accepted (rule 3, the replay rule).
    Replay,
    /// Its DSN lies beyond EDSN. No correct initiator sends one: it takes the DSN from the
    /// DATA_ACK it received, which never exceeds EDSN.
    Ahead,
    /// Every slot of the window holds a live DSN.
    Full,
    /// The HMAC does not verify (the responder checks it before the window: [`crate::Keys`]).
    BadHmac,
}

/// What the responder does with a FAST_JOIN_OUT.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Accept the subflow and deliver the data (bytes already received are not delivered
    /// twice: the receive buffer keeps the first copy).
    Deliver,
    /// Accept the subflow but drop the data: all of it lies before EDSN (rule 4).
    AcceptDropData,
    /// Refuse the join.
    Refuse(Refusal),
}

impl Verdict {
    /// Whether the subflow is accepted.
    pub fn accepted(self) -> bool {
        matches!(self, Verdict::Deliver | Verdict::AcceptDropData)
    }
}

/// `a < b` on the 2^64 circle.
fn before(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) < 0
}

/// The replay window of one connection's receiving side. `N` slots, no allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayWindow<const N: usize = DEFAULT_CAPACITY> {
    low: u64,
    seen: [u64; N],
    len: usize,
}

impl<const N: usize> ReplayWindow<N> {
    /// A window for a stream whose first DSN is `first_dsn` (the peer's IDSN): nothing below
    /// it was ever sent, so nothing below it is accepted.
    pub fn new(first_dsn: u64) -> Self {
        Self { low: first_dsn, seen: [0; N], len: 0 }
    }

    /// The lower edge: DSNs before it are refused as stale.
    pub fn low(&self) -> u64 {
        self.low
    }

    /// How many accepted DSNs are remembered.
    pub fn remembered(&self) -> usize {
        self.len
    }

    /// Moves the lower edge to `edsn - wnd` if that is ahead of it, and forgets the DSNs that
    /// fall below it.
    pub fn advance(&mut self, edsn: u64, wnd: u64) {
        let edge = edsn.wrapping_sub(wnd.min(MAX_WINDOW));
        if !before(edge, self.low) {
            self.low = edge;
        }
        let mut k = 0;
        while k < self.len {
            if before(self.seen[k], self.low) {
                self.len -= 1;
                self.seen[k] = self.seen[self.len];
            } else {
                k += 1;
            }
        }
    }

    /// The verdict for a FAST_JOIN_OUT carrying `len` bytes from `dsn`, given the current
    /// `edsn`, without changing anything. Call [`advance`](Self::advance) first (or use
    /// [`accept`](Self::accept)) so that the lower edge is current.
    pub fn check(&self, dsn: u64, len: u64, edsn: u64) -> Verdict {
        if len == 0 {
            return Verdict::Refuse(Refusal::NoData);
        }
        if before(dsn, self.low) {
            return Verdict::Refuse(Refusal::Stale);
        }
        if before(edsn, dsn) {
            return Verdict::Refuse(Refusal::Ahead);
        }
        if self.seen[..self.len].contains(&dsn) {
            return Verdict::Refuse(Refusal::Replay);
        }
        if self.len == N {
            return Verdict::Refuse(Refusal::Full);
        }
        // The data ends at or before EDSN: all of it was received already.
        if !before(edsn, dsn.wrapping_add(len)) {
            Verdict::AcceptDropData
        } else {
            Verdict::Deliver
        }
    }

    /// Updates the window for `(edsn, wnd)`, decides, and remembers `dsn` if accepted.
    pub fn accept(&mut self, dsn: u64, len: u64, edsn: u64, wnd: u64) -> Verdict {
        self.advance(edsn, wnd);
        let v = self.check(dsn, len, edsn);
        if v.accepted() {
            self.seen[self.len] = dsn;
            self.len += 1;
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_of_section_5_9() {
        let mut w: ReplayWindow<4> = ReplayWindow::new(1000);
        // EDSN 5000, window 2000: accepted DSNs lie in [3000, 5000].
        assert_eq!(w.accept(4000, 100, 5000, 2000), Verdict::AcceptDropData);
        assert_eq!(w.accept(4000, 2000, 5000, 2000), Verdict::Refuse(Refusal::Replay));
        assert_eq!(w.accept(4990, 100, 5000, 2000), Verdict::Deliver);
        assert_eq!(w.accept(5000, 1, 5000, 2000), Verdict::Deliver);
        assert_eq!(w.accept(2999, 100, 5000, 2000), Verdict::Refuse(Refusal::Stale));
        assert_eq!(w.accept(5001, 100, 5000, 2000), Verdict::Refuse(Refusal::Ahead));
        assert_eq!(w.accept(3500, 0, 5000, 2000), Verdict::Refuse(Refusal::NoData));
        assert_eq!(w.accept(3000, 10, 5000, 2000), Verdict::AcceptDropData);
        assert_eq!(w.remembered(), 4);
        assert_eq!(w.accept(3100, 10, 5000, 2000), Verdict::Refuse(Refusal::Full));
        // EDSN moves on: 3000 and 4000 fall below the edge and are forgotten.
        assert_eq!(w.accept(6000, 10, 7000, 2500), Verdict::AcceptDropData);
        assert_eq!(w.remembered(), 3);
        assert_eq!(w.low(), 4500);
    }

    #[test]
    fn a_window_that_grows_does_not_reopen_forgotten_numbers() {
        let mut w: ReplayWindow<4> = ReplayWindow::new(0);
        assert!(w.accept(900, 10, 1000, 200).accepted());
        w.advance(2000, 200); // edge 1800: 900 is forgotten
        assert_eq!(w.remembered(), 0);
        // The window grows to 5000: EDSN - W would be before 900, but the edge stays.
        assert_eq!(w.accept(900, 10, 2000, 5000), Verdict::Refuse(Refusal::Stale));
        assert_eq!(w.low(), 1800);
    }

    #[test]
    fn sequence_numbers_wrap() {
        let start = u64::MAX - 50;
        let mut w: ReplayWindow = ReplayWindow::new(start);
        let edsn = start.wrapping_add(100); // 49 after the wrap
        assert_eq!(w.accept(start.wrapping_add(10), 200, edsn, 1000), Verdict::Deliver);
        assert_eq!(w.accept(start.wrapping_add(10), 200, edsn, 1000), Verdict::Refuse(Refusal::Replay));
        assert_eq!(w.accept(start.wrapping_sub(1), 200, edsn, 1000), Verdict::Refuse(Refusal::Stale));
        assert_eq!(w.accept(edsn.wrapping_add(1), 10, edsn, 1000), Verdict::Refuse(Refusal::Ahead));
        assert_eq!(w.accept(edsn, 10, edsn, 1000), Verdict::Deliver);
    }

    #[test]
    fn huge_windows_are_capped() {
        let mut w: ReplayWindow = ReplayWindow::new(0);
        assert_eq!(w.accept(95, 10, 100, u64::MAX), Verdict::Deliver);
        assert_eq!(w.low(), 0);
    }
}
