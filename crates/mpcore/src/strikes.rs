//! The server's anti-replay record for 0-RTT data (PROTOCOL.md §4.9; RFC 8446 §8.2, "client
//! hello recording"): the binder of every resuming INITIAL whose early data was taken, kept
//! for as long as its ticket age could still be accepted. A binder seen again in that time is
//! a replay, and its early data is refused; one older than that fails the age check (§4.8)
//! before it gets here. The binder is an HMAC under the ticket's PSK of the whole INITIAL, so
//! nobody without the PSK makes a new one, and each INITIAL a client sends (a repeat sends the
//! same bytes) has its own.
//!
//! A handle is cheap to clone and every clone is the same record: the cores of one server
//! (`bind_cores`) share one, as every endpoint that may see a replay of an INITIAL must. A fleet
//! of servers behind a balancer that steers an INITIAL by its source would need a shared store
//! to refuse a replay sent from another address; without one, it relies on the age window, and
//! an application should treat early data as replayable there (PROTOCOL.md §12). The record
//! lives in memory: after a restart, the endpoint takes no early data with a ticket issued
//! before it started until [`KEEP_MS`] have passed (`endpoint::accept`).

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

/// How long a binder is kept (ms): twice the age window and a millisecond, longer than an
/// INITIAL's age stays acceptable (its age is fixed in its bytes while the server's count of
/// it grows, and the window's bounds are inclusive).
pub const KEEP_MS: u64 = 2 * crate::ticket::AGE_WINDOW_MS + 1;

/// Binders kept at most by default: 100,000 (about 5 MB), 5,000 0-RTT handshakes a second for
/// [`KEEP_MS`]. When full, early data is refused (the handshake goes on): safe, not lossy.
pub const DEFAULT_CAPACITY: usize = 100_000;

#[derive(Debug, Default)]
struct Record {
    seen: HashSet<[u8; 16]>,
    /// In the order recorded, with their expiry (unix ms).
    order: VecDeque<([u8; 16], u64)>,
    capacity: usize,
}

/// A shared record of the binders whose early data was taken.
#[derive(Clone, Debug)]
pub struct StrikeRegister(Arc<Mutex<Record>>);

impl PartialEq for StrikeRegister {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for StrikeRegister {}

impl Default for StrikeRegister {
    fn default() -> Self {
        Self::new(DEFAULT_CAPACITY)
    }
}

impl StrikeRegister {
    /// A record of at most `capacity` binders.
    pub fn new(capacity: usize) -> Self {
        Self(Arc::new(Mutex::new(Record { capacity, ..Record::default() })))
    }

    /// Records `binder` at `unix_ms`: `true` if its early data may be taken (not seen within
    /// [`KEEP_MS`], and room to remember it), `false` for a replay or a full record.
    pub fn admit(&self, binder: &[u8; 32], unix_ms: u64) -> bool {
        let Ok(mut r) = self.0.lock() else { return false };
        while let Some(&(b, expiry)) = r.order.front() {
            if expiry > unix_ms {
                break;
            }
            r.order.pop_front();
            r.seen.remove(&b);
        }
        let mut key = [0u8; 16];
        key.copy_from_slice(&binder[..16]);
        if r.seen.len() >= r.capacity || !r.seen.insert(key) {
            return false;
        }
        r.order.push_back((key, unix_ms.saturating_add(KEEP_MS)));
        true
    }

    /// Binders held now.
    pub fn len(&self) -> usize {
        self.0.lock().map_or(0, |r| r.seen.len())
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binder_is_taken_once_within_the_window_and_forgotten_after() {
        let s = StrikeRegister::new(2);
        let shared = s.clone();
        assert!(s.admit(&[1; 32], 1_000));
        assert!(!shared.admit(&[1; 32], 1_000 + KEEP_MS - 1), "a clone is the same record");
        assert!(s.admit(&[2; 32], 2_000));
        assert!(!s.admit(&[3; 32], 2_000), "full: refused, not forgotten");
        assert!(s.admit(&[1; 32], 1_000 + KEEP_MS), "expired");
        assert_eq!(s.len(), 2, "the first expired and came back; the second stays");
        assert!(StrikeRegister::default() != s);
    }
}
