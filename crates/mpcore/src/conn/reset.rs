//! Stateless reset (PROTOCOL.md §3.4, §5.20; issue 38): a fleet's server tells the client the
//! reset token of every CID it receives a subflow on (RESET_TOKEN), and a server of the fleet
//! that gets a short header for a connection it does not know answers with that token, which
//! only the fleet's shared secret gives. The client closes the subflow the token names and,
//! once no subflow is left, the connection: its server is gone, and it connects again
//! (to another server) at once rather than after its idle timeout.

use super::packet_builder::PacketBuilder;
use super::subflow::FrameSet;
use super::{Connection, Side};
use crate::wire::frame::reason;
use crate::wire::packet::RESET_TOKEN_LEN;
use crate::wire::Frame;
use crate::{crypto, CloseReason, Time};

impl Connection {
    /// Writes subflow `i`'s RESET_TOKEN if pending (a fleet's server only pends it).
    pub(super) fn write_reset_token(&self, i: usize, b: &mut PacketBuilder<'_>) {
        let sf = &self.subflows[i];
        if !sf.pending().intersects(FrameSet::RESET_TOKEN) {
            return;
        }
        if let Some(f) = self.config.server.fleet.as_ref() {
            let key = crypto::fleet_key(&f.secret, crypto::FleetKey::Reset);
            b.control(FrameSet::RESET_TOKEN, Frame::ResetToken(crypto::reset_token(&key, &sf.local_cid().0)));
        }
    }

    /// A RESET_TOKEN arrived on subflow `i`: a client keeps it (a server ignores one).
    pub(super) fn on_reset_token(&mut self, i: usize, token: [u8; RESET_TOKEN_LEN]) {
        if self.side == Side::Client {
            self.subflows[i].set_peer_reset(token);
        }
    }

    /// Whether a STATELESS_RESET carrying `token` is for this connection: one of its open
    /// subflows was given that token.
    pub(crate) fn is_reset_by(&self, token: &[u8; RESET_TOKEN_LEN]) -> bool {
        self.side == Side::Client && self.subflows.iter().any(|s| s.is_reset_by(token))
    }

    /// A STATELESS_RESET with `token` arrived: the subflows it names close (nothing is sent
    /// on them any more), their data goes to the others; with no open subflow left, the
    /// connection ends at once (`CloseReason::Reset`). Not on the per-packet path: the
    /// endpoint calls it only for a reset whose token one of the connection's subflows holds.
    pub(crate) fn on_stateless_reset(&mut self, now: Time, token: &[u8; RESET_TOKEN_LEN]) {
        let hit: Vec<usize> = self.subflows.enumerate().filter(|(_, s)| s.is_reset_by(token)).map(|(i, _)| i).collect();
        for i in hit {
            self.shut_subflow(now, i, reason::STATELESS_RESET, false);
        }
        // A join in progress does not keep it: it goes to the same fleet, which does not know
        // the connection either.
        if !self.is_closed() && !self.subflows.iter().any(|s| s.is_open() && s.established()) {
            self.fail(now, CloseReason::Reset);
        }
    }
}
