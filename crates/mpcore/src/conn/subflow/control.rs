//! What a subflow has to send besides data, and its writing: the ACK it owes, its own
//! signals (PING, MP_PRIO, the RTO option, HANDSHAKE_DONE, SUBFLOW_RESET, MP_FASTCLOSE), its
//! address validation, and the connection's address frames it was given to carry. Each is
//! pended here by a method that says why, written into a [`PacketBuilder`] where it fits,
//! cleared when the packet leaves, and pended again when the packet is lost (`pend_again`).

use super::{FrameSet, JoinKind, Subflow, Validation};
use crate::conn::packet_builder::PacketBuilder;
use crate::wire::{Ack, Frame};
use crate::Time;

impl Subflow {
    /// A PING: a probe, a keep-alive, or a packet the peer must acknowledge at once.
    pub fn ping(&mut self) {
        self.signals |= FrameSet::PING;
    }

    /// Tells the peer that this subflow is (or is no longer) a backup one (MP_PRIO).
    pub fn set_backup(&mut self, backup: bool) {
        self.backup = backup;
        self.signals |= FrameSet::PRIO;
    }

    /// Asks the peer for its RTO (MultiMob's RTO option).
    pub fn request_rto(&mut self) {
        self.signals |= FrameSet::RTO_REQ;
    }

    /// The peer asked for our RTO: it goes in the next packet.
    pub fn send_rto(&mut self) {
        self.signals |= FrameSet::RTO_VAL;
    }

    /// The server's subflow 0 confirms the handshake (HANDSHAKE_DONE, §4.2).
    pub fn send_handshake_done(&mut self) {
        self.signals |= FrameSet::HS_DONE;
    }

    /// A fleet's server: the stateless reset token of this subflow's CID goes to the client.
    pub fn send_reset_token(&mut self) {
        self.signals |= FrameSet::RESET_TOKEN;
    }

    /// A fleet's server (`fleet`): writes the stateless reset token of this subflow's CID if
    /// it is pending (PROTOCOL.md §5.20). The token derives from the fleet's shared secret, so
    /// any server of the fleet can reset a subflow whose connection it does not know.
    pub fn write_reset_token(&self, fleet: Option<&crate::config::Fleet>, b: &mut PacketBuilder<'_>) {
        let Some(f) = fleet.filter(|_| self.pending().intersects(FrameSet::RESET_TOKEN)) else { return };
        let key = crate::crypto::fleet_key(&f.secret, crate::crypto::FleetKey::Reset);
        b.control(FrameSet::RESET_TOKEN, Frame::ResetToken(crate::crypto::reset_token(&key, &self.local_cid().0)));
    }

    /// Client: the server's stateless reset token for the CID we send this subflow to.
    pub fn set_peer_reset(&mut self, token: [u8; crate::wire::packet::RESET_TOKEN_LEN]) {
        self.peer_reset = Some(token);
    }

    /// Whether `token` is the reset token of this subflow, while it is open (a closed one's
    /// CID may have been retired by the server, which then resets it).
    pub fn is_reset_by(&self, token: &[u8; crate::wire::packet::RESET_TOKEN_LEN]) -> bool {
        self.is_open() && self.peer_reset.is_some_and(|t| crate::crypto::ct_eq(&t, token))
    }

    /// The connection is aborted: MP_FASTCLOSE on this subflow.
    pub fn send_fast_close(&mut self) {
        self.signals |= FrameSet::FASTCLOSE;
    }

    /// Connection-level address frames (`FrameSet::ADDRESSES`) for this subflow to carry.
    pub fn carry(&mut self, frames: FrameSet) {
        self.carry |= frames.intersection(FrameSet::CARRIED);
    }

    /// The address frames it is to carry.
    pub fn carried(&self) -> FrameSet {
        self.carry
    }

    /// Drops address frames it was to carry (what they said no longer holds).
    pub fn drop_carried(&mut self, frames: FrameSet) {
        // (the address frames, or the ticket when the subflow closes)
        self.carry.remove(frames);
    }

    /// A PATH_CHALLENGE arrived: its PATH_RESPONSE goes next.
    pub fn on_path_challenge(&mut self, data: [u8; 8]) {
        self.val.on_challenge(data);
    }

    /// A PATH_RESPONSE arrived: the address is validated if it answers our challenge.
    pub fn on_path_response(&mut self, data: &[u8; 8]) {
        self.val.on_response(data);
    }

    /// Everything it has to send besides data and ACKs, whoever owns it.
    pub fn pending(&self) -> FrameSet {
        self.signals | self.join.pending | self.val.pending | self.carry
    }

    /// The frames of a lost packet `lost` that are still worth sending go to their owners
    /// again.
    pub(super) fn pend_again(&mut self, lost: FrameSet) {
        let again = self.state.frames_to_resend(lost);
        self.join.pending |= again.intersection(FrameSet::JOINING);
        self.val.pending |= again.intersection(FrameSet::VALIDATION);
        self.carry |= again.intersection(FrameSet::CARRIED);
        self.signals |= again.without(FrameSet::JOINING | FrameSet::VALIDATION | FrameSet::CARRIED);
    }

    /// A packet carrying the control frames `sent` left: they are no longer pending (a
    /// PATH_RESPONSE is sent once, as RFC 9000 §8.2.2 asks), and a fast join's first JOIN
    /// lets the rest of its flight follow (§5.9).
    pub fn on_frames_sent(&mut self, sent: FrameSet) {
        self.signals.remove(sent);
        self.join.pending.remove(sent);
        self.val.pending.remove(sent);
        self.carry.remove(sent);
        if sent.intersects(FrameSet::RESPONSE) {
            self.val.response = None;
        }
        if sent.intersects(FrameSet::JOIN) && self.join.kind == JoinKind::FastInitiator {
            self.join.first_sent = true;
        }
    }

    /// The ACK frame, when one is due or owed (`force`: beside control frames, or in a
    /// data packet since a packet arrived; §5.3).
    pub fn write_ack(&self, now: Time, force: bool, b: &mut PacketBuilder<'_>) {
        let a = &self.acks;
        if !a.received.is_empty() && (a.due(now) || a.unacked_eliciting > 0 || force) {
            let delay = now.saturating_sub(a.largest_at);
            let ranges = a.received.iter_desc().take(8);
            if Ack::emit(b.writer(), delay, ranges).is_ok() {
                b.ack_sent = true;
            }
        }
    }

    /// The subflow's own signals among `kinds`, in their wire order (PROTOCOL.md §5);
    /// `probing` adds the PING a probe carries. `remote_key` authenticates an MP_FASTCLOSE.
    pub fn write_signals(&self, kinds: FrameSet, probing: bool, remote_key: u64, b: &mut PacketBuilder<'_>) {
        let mut pending = self.signals.intersection(kinds);
        if probing && kinds.intersects(FrameSet::PING) {
            pending |= FrameSet::PING;
        }
        if pending.is_empty() {
            return;
        }
        let frames = [
            (FrameSet::HS_DONE, Frame::HandshakeDone),
            (FrameSet::PRIO, Frame::MpPrio { backup: self.backup }),
            (FrameSet::RTO_REQ, Frame::Rto { request: true, rto_ms: None }),
            (FrameSet::RTO_VAL, Frame::Rto { request: false, rto_ms: Some(self.rec.rtt.rto() / 1000) }),
            (FrameSet::RESET, Frame::SubflowReset { transient: false, reason: self.reset_reason }),
            (FrameSet::FASTCLOSE, Frame::FastClose { key: remote_key, reason: 0 }),
            (FrameSet::PING, Frame::Ping),
        ];
        for (kind, f) in frames {
            if pending.intersects(kind) {
                b.control(kind, f);
            }
        }
    }
}

impl Validation {
    /// The subflow moved to a new address (NAT rebinding, §7): `challenge` goes to it, and
    /// until its answer the address may receive three times what it sent (`amp_rx`).
    pub fn restart(&mut self, amp_rx: u64, challenge: [u8; 8]) {
        self.validated = false;
        self.amp_rx = amp_rx;
        self.amp_tx = 0;
        self.challenge = Some(challenge);
        self.pending |= FrameSet::CHALLENGE;
    }

    /// A PATH_CHALLENGE arrived: the PATH_RESPONSE goes in the next packet.
    pub fn on_challenge(&mut self, data: [u8; 8]) {
        self.response = Some(data);
        self.pending |= FrameSet::RESPONSE;
    }

    /// A PATH_RESPONSE arrived: the address is validated if it answers our challenge.
    pub fn on_response(&mut self, data: &[u8; 8]) {
        if self.challenge.is_some_and(|c| crate::crypto::ct_eq(&c, data)) {
            self.validated = true;
            self.challenge = None;
            self.pending.remove(FrameSet::CHALLENGE);
        }
    }

    /// PATH_CHALLENGE and PATH_RESPONSE when pending.
    pub fn write(&self, b: &mut PacketBuilder<'_>) {
        if let Some(c) = self.challenge.filter(|_| self.pending.intersects(FrameSet::CHALLENGE)) {
            b.control(FrameSet::CHALLENGE, Frame::PathChallenge(c));
        }
        if let Some(r) = self.response.filter(|_| self.pending.intersects(FrameSet::RESPONSE)) {
            b.control(FrameSet::RESPONSE, Frame::PathResponse(r));
        }
    }
}
