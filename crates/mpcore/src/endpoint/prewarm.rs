//! Waking the phone's cellular radio before it is needed (issue 32).
//!
//! A cellular radio idle for its tail (11.6 s in LTE) sends its next packet only after a
//! promotion (0.26 s); break-before-make opens cellular exactly when it is idle, so the
//! promotion is the largest part of a failover. When a regular path is first *suspected*
//! (the oracle's test of its losses, or its delay, [`oracle::Oracle::suspected_at`]; or the
//! app's [`LinkHint`] says the OS finds the network
//! degraded, the signal weak or the link slow), the endpoint sends one WARM datagram on every
//! cellular path (PROTOCOL.md §3.3: one byte, discarded by the receiver): the promotion then
//! overlaps the rest of the detection, and the subflow is opened only on the verdict, as
//! before. While the suspicion lasts it warms again every [`crate::Prewarm::every`] (inside the
//! radio's tail), for at most [`crate::Prewarm::hold`] after the last suspicion. Each warm-up of an
//! idle LTE radio costs a promotion and a tail, about 13 J: the setting is the trade-off.

use crate::radio::LinkHint;
use crate::Time;

/// The endpoint's pre-warming state: the hints the app gave, the WARMs sent per path. The
/// endpoint (`oracle_periods.rs`) decides when to warm, from its oracle's suspicions and these.
#[derive(Debug, Default)]
pub(super) struct Warmer {
    /// Per local path: the last WARM sent on it.
    warmed: Vec<Option<Time>>,
    /// Per local path: the app's last hint, and when a suspicious one came.
    hints: Vec<(LinkHint, Option<Time>)>,
    /// WARM datagrams sent and received.
    pub(super) sent: u64,
    pub(super) received: u64,
}

impl Warmer {
    /// The app's hint on local path `p` at `now`; whether it is suspicious.
    pub(super) fn hint(&mut self, p: usize, hint: LinkHint, now: Time) -> bool {
        if self.hints.len() <= p {
            self.hints.resize(p + 1, (LinkHint::default(), None));
        }
        self.hints[p].0 = hint;
        if hint.suspicious() {
            self.hints[p].1 = Some(now);
        }
        hint.suspicious()
    }

    /// The latest suspicious hint on a path `warmable` takes.
    pub(super) fn last_hinted(&self, warmable: impl Fn(usize) -> bool) -> Option<Time> {
        (self.hints.iter().enumerate()).filter(|(p, h)| h.0.suspicious() && warmable(*p)).filter_map(|(_, h)| h.1).max()
    }

    /// Whether local path `p` was warmed within `every` of `now`.
    pub(super) fn warm_at(&self, p: usize, now: Time, every: Time) -> bool {
        self.warmed.get(p).copied().flatten().is_some_and(|t| now < t.saturating_add(every))
    }

    /// A WARM went on local path `p` at `now`.
    pub(super) fn warmed(&mut self, p: usize, now: Time) {
        if self.warmed.len() <= p {
            self.warmed.resize(p + 1, None);
        }
        self.warmed[p] = Some(now);
        self.sent += 1;
    }
}
