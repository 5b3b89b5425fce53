//! The client's receive idle timer (MultiMob §III-B).
//!
//! "The client uses this information to set its idle timer at max(500 msec, RTO_Server). This
//! timer runs while the MP_IDLE flag of the last received data is reset. It is reset every time
//! a packet is received on the subflow and stopped if the last data packet had the MP_IDLE flag
//! set. If the timer expires, the oracle triggers the creation of backup subflows."
//!
//! With the published code's details (BRIEF.md): 1.5 s while the server's RTO is unknown;
//! in-order data and DATA_ACKs rearm it. One choice of ours: the timer starts with the first
//! data received without MP_IDLE, not at connection setup, so a connection whose server has
//! sent nothing yet (and so never set MP_IDLE) raises no alarm. The caller runs it only while
//! a backup path exists to be opened.

use crate::Time;

/// The shortest timer: 500 ms.
pub const MIN_IDLE: Time = 500_000;
/// The timer while the server's RTO is unknown: 1.5 s.
pub const UNKNOWN_RTO_IDLE: Time = 1_500_000;

/// The timer's length for a server RTO (`None`: not reported yet).
pub fn idle_timeout(peer_rto: Option<Time>) -> Time {
    peer_rto.map_or(UNKNOWN_RTO_IDLE, |r| r.max(MIN_IDLE))
}

/// The receive idle timer of one connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IdleTimer {
    deadline: Option<Time>,
}

impl IdleTimer {
    /// Data arrived in order; `idle` is its MP_IDLE bit.
    pub fn on_data(&mut self, now: Time, idle: bool, peer_rto: Option<Time>) {
        self.deadline = if idle { None } else { Some(now.saturating_add(idle_timeout(peer_rto))) };
    }

    /// A DATA_ACK that advanced our send window: rearms a running timer.
    pub fn on_data_ack(&mut self, now: Time, peer_rto: Option<Time>) {
        if self.deadline.is_some() {
            self.deadline = Some(now.saturating_add(idle_timeout(peer_rto)));
        }
    }

    /// When the timer expires, if it runs.
    pub fn deadline(&self) -> Option<Time> {
        self.deadline
    }

    /// True once when the timer expires at or before `now`; it is then stopped.
    pub fn expired(&mut self, now: Time) -> bool {
        take_due(&mut self.deadline, now)
    }
}

/// True once when `deadline` is at or before `now`, which then clears it.
fn take_due(deadline: &mut Option<Time>, now: Time) -> bool {
    let due = deadline.is_some_and(|d| d <= now);
    if due {
        *deadline = None;
    }
    due
}

/// Intervals a [`PacedStream`] judges the pace by.
const PACE_GAPS: usize = 4;
/// The longest interval taken for a pace: 2 s.
pub const MAX_PACE: Time = 2_000_000;

/// A stream the server paces: a web radio's chunks every 100 ms, each ending with MP_IDLE (the
/// server's queue empties between them), so that the receive idle timer never runs, and a
/// client that only acknowledges sends nothing whose silence a timer could find. When data
/// marked MP_IDLE has come at a steady interval (the last four intervals within a factor of two
/// of each other, each under [`MAX_PACE`]) and the client sent no data of its own meanwhile (a
/// stream, not answers to its requests), the next is overdue three intervals after the last
/// one (and no sooner than the receive idle timer would be): the client then probes the path
/// it came on, and an unanswered probe fails it over as any unanswered tail does. Not in
/// MultiMob, whose client waits for the server's silence to end (issue 54: a web radio over
/// WiFi blacked out for 10 s stalled for 10 s).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PacedStream {
    /// The last arrival (`None`: none yet).
    last: Option<Time>,
    /// The last intervals between arrivals, µs, newest first; `seen` of them are known.
    gaps: [u32; PACE_GAPS],
    seen: u8,
    deadline: Option<Time>,
}

impl PacedStream {
    /// Data marked MP_IDLE arrived at `now`; `floor`: the shortest wait for the next (the
    /// receive idle timer's length, [`idle_timeout`]); `our_data`: when the client last sent
    /// data (0: never). Answers to the client's own requests are no stream: their silence
    /// after the last answer is the user's.
    pub fn on_idle_data(&mut self, now: Time, floor: Time, our_data: Time) {
        if let Some(last) = self.last {
            self.gaps.copy_within(0..PACE_GAPS - 1, 1);
            self.gaps[0] = now.saturating_sub(last).min(u64::from(u32::MAX)) as u32;
            self.seen = (self.seen + 1).min(PACE_GAPS as u8);
        }
        self.last = Some(now);
        let (lo, hi) = (self.gaps.iter().min().copied().unwrap_or(0), self.gaps.iter().max().copied().unwrap_or(0));
        let span = self.gaps.iter().map(|&g| u64::from(g)).sum::<u64>();
        let quiet = our_data == 0 || our_data < now.saturating_sub(span);
        let paced = usize::from(self.seen) == PACE_GAPS
            && lo > 0
            && u64::from(hi) <= MAX_PACE
            && u64::from(hi) <= 2 * u64::from(lo);
        let paced = paced && quiet;
        let mean = span / PACE_GAPS as u64;
        self.deadline = paced.then(|| now.saturating_add((3 * mean).max(floor)));
    }

    /// When the next arrival is overdue, if the stream is paced.
    pub fn deadline(&self) -> Option<Time> {
        self.deadline
    }

    /// True once when the next arrival is overdue at `now`; the watch then stops until the
    /// next arrival.
    pub fn expired(&mut self, now: Time) -> bool {
        take_due(&mut self.deadline, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_between_data_and_stops_on_mp_idle() {
        let mut t = IdleTimer::default();
        assert_eq!(t.deadline(), None, "nothing received yet: not running");
        t.on_data(1_000, false, None);
        assert_eq!(t.deadline(), Some(1_000 + 1_500_000), "1.5 s while the RTO is unknown");
        t.on_data(2_000, false, Some(200_000));
        assert_eq!(t.deadline(), Some(2_000 + 500_000), "at least 500 ms");
        t.on_data_ack(3_000, Some(800_000));
        assert_eq!(t.deadline(), Some(3_000 + 800_000), "the server's RTO when larger");
        assert!(!t.expired(802_999));
        assert!(t.expired(803_000));
        assert!(!t.expired(900_000), "fires once");
        t.on_data(1_000_000, false, None);
        t.on_data(1_100_000, true, None);
        assert_eq!(t.deadline(), None, "MP_IDLE stops it");
        t.on_data_ack(1_200_000, None);
        assert_eq!(t.deadline(), None, "a DATA_ACK does not restart a stopped timer");
    }

    #[test]
    fn a_paced_stream_is_watched_once_its_pace_is_steady() {
        let mut p = PacedStream::default();
        // Chunks every 100 ms (a little jitter): watched from the fifth, the next overdue
        // 500 ms later (three intervals are 300 ms; the floor is 500).
        for (k, t) in [0, 100, 205, 300, 398].into_iter().enumerate() {
            assert_eq!(p.deadline(), None, "arrival {k}: not yet paced");
            p.on_idle_data(t * 1_000, MIN_IDLE, 0);
        }
        assert_eq!(p.deadline(), Some(898_000));
        // Every 300 ms (a burst's answers): three intervals, 900 ms.
        let mut q = PacedStream::default();
        for t in [0, 300, 600, 900, 1_200] {
            q.on_idle_data(t * 1_000, MIN_IDLE, 0);
        }
        assert_eq!(q.deadline(), Some(2_100_000));
        assert!(!q.expired(2_099_999));
        assert!(q.expired(2_100_000));
        assert!(!q.expired(2_200_000), "fires once");
        // An irregular interval (the user's pause) stops the watch until the pace is steady again.
        q.on_idle_data(4_200_000, MIN_IDLE, 0);
        assert_eq!(q.deadline(), None, "3 s after 300 ms intervals");
        // Intervals over 2 s are no pace.
        let mut r = PacedStream::default();
        for t in 0..5 {
            r.on_idle_data(t * 2_500_000, MIN_IDLE, 0);
        }
        assert_eq!(r.deadline(), None);
        // Answers to the client's requests (it sent data 150 ms ago): no stream.
        let mut a = PacedStream::default();
        for t in [0, 300, 600, 900, 1_200] {
            a.on_idle_data(t * 1_000, MIN_IDLE, (t * 1_000).saturating_sub(150_000) + 1);
        }
        assert_eq!(a.deadline(), None);
    }
}
