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
        if self.deadline.is_some_and(|d| d <= now) {
            self.deadline = None;
            return true;
        }
        false
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
}
