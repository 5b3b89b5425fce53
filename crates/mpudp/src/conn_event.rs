//! One event of a connection, as the driver queues it for the application (a leaf: the driver
//! fills the queue, `Events` reads it).

use mpcore::{Event, PathId};
use std::time::Instant;

/// Most events a connection keeps for a reader that is behind; older ones are dropped (and
/// counted in [`Events::lost`](crate::Events::lost)).
pub(crate) const QUEUE: usize = 1024;

/// Events a connection keeps while nobody reads them (no `Events` was made): the last ones,
/// for a reader that starts late (the connection's first events, as a rule). Reserved at the
/// first event, so that a connection whose events nobody reads (most servers') neither grows
/// its queue in the middle of a transfer nor holds more than this.
pub(crate) const UNREAD: usize = 8;

/// One event of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnEvent {
    /// When the driver handed it out.
    pub at: Instant,
    /// What happened.
    pub event: Event,
    /// The local path of the subflow it concerns, where it concerns one that still exists
    /// (or the path of a verdict).
    pub path: Option<PathId>,
}

impl ConnEvent {
    /// A short name of the event's kind: `connected`, `subflow_established`, `subflow_failed`,
    /// `subflow_recovered`, `subflow_closed`, `subflow_migrated`, `address_announced`,
    /// `finished`, `verdict`, `fail_back`, `closed` (`readable` and `forgotten` never reach the
    /// stream).
    pub fn kind(&self) -> &'static str {
        match self.event {
            Event::Connected => "connected",
            Event::SubflowEstablished { .. } => "subflow_established",
            Event::SubflowFailed { .. } => "subflow_failed",
            Event::SubflowRecovered { .. } => "subflow_recovered",
            Event::SubflowClosed { .. } => "subflow_closed",
            Event::SubflowMigrated { .. } => "subflow_migrated",
            Event::AddressAnnounced { .. } => "address_announced",
            Event::Readable => "readable",
            Event::Finished => "finished",
            Event::Verdict { .. } => "verdict",
            Event::FailBack => "fail_back",
            Event::TicketReceived => "ticket_received",
            Event::Closed { .. } => "closed",
            Event::Forgotten => "forgotten",
        }
    }

    /// The subflow it concerns, if any.
    pub fn subflow(&self) -> Option<u32> {
        self.event.subflow()
    }
}
