//! Where the connection stands: handshaking, established or closed.

use super::events::CloseReason;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum State {
    /// Client: INITIAL sent, waiting for HANDSHAKE (or RETRY).
    Initial,
    /// Client: keys agreed, CONFIRM packets sent, no short packet from the server yet.
    Confirm,
    Established,
    /// Closed; still answering for a drain period (until `drain_until`).
    Closed(CloseReason),
}
