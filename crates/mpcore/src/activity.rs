//! Which connections an endpoint must look at: work in proportion to activity, not to the
//! number of connections (issue 19: with thousands of idle connections, walking all of them on
//! every wake-up used a core).
//!
//! - **Timers**: a heap of `(deadline, connection)`. Each connection's deadline as last
//!   entered is kept beside it; a heap entry that no longer matches is stale and skipped when
//!   it comes up (lazy deletion), and the heap is rebuilt when stale entries outnumber live
//!   ones. A wake-up costs O(due + log n).
//! - **Ready**: connections that may have a datagram to send, in turn (round robin, a turn
//!   being up to `Endpoint`'s `SEND_TURN` datagrams): one is queued when something happened
//!   to it (a datagram, a timer, the application), and leaves the queue when it has nothing
//!   more to send.
//! - **Eventful**: connections that may have an event for the application.
//! - **Parked**: per local path, the connections that have something to send there but found
//!   its socket full, in the order they found it. They are polled again only while that path
//!   can take datagrams, one at a time, so a socket that fills and drains costs a poll per
//!   datagram it takes, not one per waiting connection (issue 52: 10,000 waiting connections
//!   polled again at every drain, and again parked, used the core and starved the sends).
//! - **Dirty**: connections the application changed (`Endpoint::conn_mut`) since the endpoint
//!   last looked; their deadline and readiness are brought up to date before the next poll.
//! - **Stale**: connections whose deadline may have moved (a datagram went out or came in, a
//!   timer ran) and is not yet entered in the heap. It is computed once, when the endpoint is
//!   next asked for its deadline or runs its timers, not per datagram: computing a
//!   connection's deadline looks at each subflow's timers, a few percent of a core at
//!   gigabits per second when done for every packet.

use crate::Time;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

const READY: u8 = 1;
const EVENTFUL: u8 = 2;
const DIRTY: u8 = 4;
const STALE: u8 = 8;
const PARKED: u8 = 16;

/// What an endpoint did to find the datagrams it sent (`Endpoint::transmit_work`): its work
/// per datagram, which must not grow with the connections that wait (issue 52).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransmitWork {
    /// Connections asked for a datagram.
    pub polls: u64,
    /// Datagrams they gave.
    pub datagrams: u64,
    /// Times a connection that had something only for a full socket was parked on its path.
    pub parked: u64,
}

/// The endpoint's view of which connections need it (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct Activity {
    /// What finding datagrams cost (counted by the endpoint's transmit loop).
    pub(crate) work: TransmitWork,
    deadline: Vec<Option<Time>>,
    timers: BinaryHeap<Reverse<(Time, usize)>>,
    ready: VecDeque<usize>,
    eventful: VecDeque<usize>,
    dirty: Vec<usize>,
    stale: Vec<usize>,
    /// Per local path (its index), the connections parked on it.
    parked: Vec<VecDeque<usize>>,
    queued: Vec<u8>,
}

impl Activity {
    /// Makes room for connection `idx`.
    pub(crate) fn grow(&mut self, idx: usize) {
        if self.deadline.len() <= idx {
            self.deadline.resize(idx + 1, None);
            self.queued.resize(idx + 1, 0);
            // Room for every entry the heap may hold before a rebuild, taken when a connection
            // comes, so that the per-packet path (a new deadline per ACK) never allocates.
            let most = Self::most(self.deadline.len()) + 1;
            self.timers.reserve(most.saturating_sub(self.timers.len()));
            self.ready.reserve(self.deadline.len().saturating_sub(self.ready.len()));
            self.eventful.reserve(self.deadline.len().saturating_sub(self.eventful.len()));
            self.dirty.reserve(self.deadline.len().saturating_sub(self.dirty.len()));
            self.stale.reserve(self.deadline.len().saturating_sub(self.stale.len()));
            for q in &mut self.parked {
                q.reserve(self.deadline.len().saturating_sub(q.len()));
            }
        }
    }

    /// Heap entries beyond which it is rebuilt from the live deadlines.
    fn most(connections: usize) -> usize {
        1024 + 4 * connections
    }

    /// Connection `idx`'s deadline is now `t`.
    pub(crate) fn set_deadline(&mut self, idx: usize, t: Option<Time>) {
        self.grow(idx);
        if self.deadline[idx] == t {
            return;
        }
        self.deadline[idx] = t;
        if let Some(t) = t {
            if self.timers.len() >= Self::most(self.deadline.len()) {
                self.rebuild();
            }
            self.timers.push(Reverse((t, idx)));
        }
    }

    /// Drops the stale entries, in place (the heap's storage is kept: no allocation).
    fn rebuild(&mut self) {
        let mut v = std::mem::take(&mut self.timers).into_vec();
        v.clear();
        v.extend(self.deadline.iter().enumerate().filter_map(|(i, t)| t.map(|t| Reverse((t, i)))));
        self.timers = BinaryHeap::from(v);
    }

    /// The earliest deadline entered (possibly one since changed to later: a spurious
    /// wake-up at worst, which `take_due` clears).
    pub(crate) fn earliest(&self) -> Option<Time> {
        self.timers.peek().map(|r| r.0 .0)
    }

    /// Moves the connections whose deadline is at or before `now` into `out` (their entries
    /// are consumed: `set_deadline` enters the next one).
    pub(crate) fn take_due(&mut self, now: Time, out: &mut Vec<usize>) {
        while let Some(&Reverse((t, idx))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            if self.deadline.get(idx) == Some(&Some(t)) {
                self.deadline[idx] = None;
                out.push(idx);
            }
        }
    }

    fn mark(&mut self, idx: usize, bit: u8) -> bool {
        self.grow(idx);
        let new = self.queued[idx] & bit == 0;
        self.queued[idx] |= bit;
        new
    }

    /// Connection `idx` may have something to send.
    pub(crate) fn mark_ready(&mut self, idx: usize) {
        if self.mark(idx, READY) {
            self.ready.push_back(idx);
        }
    }

    /// Connection `idx` may have something to send, and goes first (it is in the middle of
    /// its turn: `Endpoint::poll_transmit`).
    pub(crate) fn mark_ready_front(&mut self, idx: usize) {
        if self.mark(idx, READY) {
            self.ready.push_front(idx);
        }
    }

    /// Connection `idx` has something to send on local path `path`, whose socket is full: it
    /// waits there (once, whichever path it waits on first) until [`pop_parked`] takes it.
    ///
    /// [`pop_parked`]: Activity::pop_parked
    pub(crate) fn park(&mut self, idx: usize, path: u8) {
        if !self.mark(idx, PARKED) {
            return;
        }
        self.work.parked += 1;
        let p = usize::from(path);
        if self.parked.len() <= p {
            // Once per path: the queue takes room for every connection, as the others do.
            self.parked.resize_with(p + 1, VecDeque::new);
            self.parked[p].reserve(self.deadline.len());
        }
        self.parked[p].push_back(idx);
    }

    /// The local paths connections may be parked on (their indices are below this).
    pub(crate) fn parked_paths(&self) -> usize {
        self.parked.len()
    }

    /// The connection parked longest on local path `path`, taken off its queue.
    pub(crate) fn pop_parked(&mut self, path: usize) -> Option<usize> {
        let idx = self.parked.get_mut(path)?.pop_front()?;
        self.queued[idx] &= !PARKED;
        Some(idx)
    }

    /// The connection at the front of the ready queue (left queued).
    pub(crate) fn front_ready(&self) -> Option<usize> {
        self.ready.front().copied()
    }

    /// Connection `idx` may have an event for the application.
    pub(crate) fn mark_eventful(&mut self, idx: usize) {
        if self.mark(idx, EVENTFUL) {
            self.eventful.push_back(idx);
        }
    }

    /// The application changed connection `idx`.
    pub(crate) fn mark_dirty(&mut self, idx: usize) {
        if self.mark(idx, DIRTY) {
            self.dirty.push(idx);
        }
    }

    /// Connection `idx`'s deadline may have moved.
    pub(crate) fn mark_stale(&mut self, idx: usize) {
        if self.mark(idx, STALE) {
            self.stale.push(idx);
        }
    }

    /// The connections whose deadline may have moved (left listed).
    pub(crate) fn stale(&self) -> &[usize] {
        &self.stale
    }

    /// A connection whose deadline may have moved, taken off the list (to be entered again
    /// with `set_deadline`).
    pub(crate) fn pop_stale(&mut self) -> Option<usize> {
        let idx = self.stale.pop()?;
        self.queued[idx] &= !STALE;
        Some(idx)
    }

    /// How many connections are queued as ready.
    pub(crate) fn ready_len(&self) -> usize {
        self.ready.len()
    }

    /// The next ready connection, taken off the queue.
    pub(crate) fn pop_ready(&mut self) -> Option<usize> {
        let idx = self.ready.pop_front()?;
        self.queued[idx] &= !READY;
        Some(idx)
    }

    /// The first connection that may have an event (left queued).
    pub(crate) fn front_eventful(&self) -> Option<usize> {
        self.eventful.front().copied()
    }

    /// The first eventful connection has none left.
    pub(crate) fn pop_eventful(&mut self) {
        if let Some(idx) = self.eventful.pop_front() {
            self.queued[idx] &= !EVENTFUL;
        }
    }

    /// The connections changed by the application, emptied into `out`.
    pub(crate) fn take_dirty(&mut self, out: &mut Vec<usize>) {
        for idx in self.dirty.drain(..) {
            self.queued[idx] &= !DIRTY;
            out.push(idx);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_connections_come_once_and_stale_entries_are_skipped() {
        let mut a = Activity::default();
        a.set_deadline(0, Some(10));
        a.set_deadline(1, Some(5));
        a.set_deadline(0, Some(20)); // the entry at 10 is stale now
        assert_eq!(a.earliest(), Some(5));
        let mut due = Vec::new();
        a.take_due(15, &mut due);
        assert_eq!(due, [1], "0's stale entry at 10 is skipped");
        a.take_due(15, &mut due);
        assert_eq!(due, [1], "consumed");
        a.take_due(25, &mut due);
        assert_eq!(due, [1, 0]);
        assert_eq!(a.earliest(), None);
    }

    #[test]
    fn ready_and_eventful_queue_each_connection_once_in_turn() {
        let mut a = Activity::default();
        for i in [3, 1, 3, 2, 1] {
            a.mark_ready(i);
        }
        assert_eq!(a.ready_len(), 3);
        assert_eq!((a.pop_ready(), a.pop_ready()), (Some(3), Some(1)));
        a.mark_ready(3);
        assert_eq!((a.pop_ready(), a.pop_ready(), a.pop_ready()), (Some(2), Some(3), None));
        a.mark_eventful(4);
        a.mark_eventful(4);
        assert_eq!(a.front_eventful(), Some(4));
        a.pop_eventful();
        assert_eq!(a.front_eventful(), None);
        a.mark_dirty(7);
        a.mark_dirty(7);
        let mut d = Vec::new();
        a.take_dirty(&mut d);
        assert_eq!(d, [7]);
        a.mark_stale(5);
        a.mark_stale(2);
        a.mark_stale(5);
        assert_eq!((a.pop_stale(), a.pop_stale(), a.pop_stale()), (Some(2), Some(5), None));
        a.mark_stale(5);
        assert_eq!(a.pop_stale(), Some(5), "listed again once taken off");
    }

    #[test]
    fn the_heap_is_rebuilt_when_stale_entries_pile_up() {
        let mut a = Activity::default();
        for t in 0..10_000u64 {
            a.set_deadline(0, Some(1_000_000 - t));
        }
        assert!(a.timers.len() <= 1024 + 8, "{}", a.timers.len());
        let mut due = Vec::new();
        a.take_due(u64::MAX, &mut due);
        assert_eq!(due, [0]);
    }
}
