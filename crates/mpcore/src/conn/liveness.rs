//! Whether the peer is alive and whether the connection still needs to be kept: when it was
//! last heard, since when our data (or the application's probe) awaits it, the drain after
//! closing, and the timer that gives idle buffers back. The connection's timers read these
//! deadlines (`timers`); the receive path and the packet builder move them.

use crate::Time;

#[derive(Debug)]
pub(super) struct Liveness {
    /// The last authenticated packet heard from the peer.
    pub last_rx: Time,
    /// Closed; still answering for a drain period until then.
    pub drain_until: Option<Time>,
    /// Since when our data has awaited the peer's acknowledgement (the peer timeout counts
    /// from this or the last packet heard, whichever is later).
    pub peer_wait: Option<Time>,
    /// Since when the application's probe of the peer (`probe_peer`) awaits an answer.
    pub probe: Option<Time>,
    /// When to look whether the connection's buffers can be given back (`trim`), armed by
    /// the first datagram sent or received after the last look.
    pub trim_at: Option<Time>,
    /// The connection may be forgotten (closed and drained).
    pub drained: bool,
    /// The application aborted the connection: MP_FASTCLOSE went on every subflow.
    pub fastclose: bool,
}

impl Liveness {
    pub fn new(now: Time) -> Self {
        Self {
            last_rx: now,
            drain_until: None,
            peer_wait: None,
            probe: None,
            trim_at: None,
            drained: false,
            fastclose: false,
        }
    }

    /// Since when the peer has been silent towards data of ours that awaits it: the later of
    /// the last packet heard and the start of the wait.
    pub fn silent_since(&self) -> Time {
        self.last_rx.max(self.peer_wait.unwrap_or(0))
    }

    /// The application probes the peer at `now`: the peer timeout runs from now unless it
    /// runs already.
    pub fn start_probe(&mut self, now: Time) {
        self.probe.get_or_insert(now);
        self.peer_wait.get_or_insert(now);
    }

    /// Marks the connection drained; true the first time (the endpoint is to be told).
    pub fn drain(&mut self) -> bool {
        !std::mem::replace(&mut self.drained, true)
    }
}
