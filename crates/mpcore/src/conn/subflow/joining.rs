//! A subflow's side of its join (RFC 8684 §3.2; PROTOCOL.md §5.9-5.11): the state it moves
//! through and the join frames it has pending. The HMACs are checked, and the frames
//! written, by the path layer's joins (`conn::join`), given the keys.

use super::{FrameSet, JoinKind, Subflow, SubflowState};
use crate::wire::frame::reason;
use crate::wire::Cid;
use crate::Time;

impl Subflow {
    /// We open it: the JOIN (a fast one if `fast`) with our nonce `nonce` goes first. The
    /// initiator may send (it amplifies nothing), so its own address counts as validated.
    pub fn start_join(&mut self, nonce: u32, fast: bool, backup: bool) {
        self.backup = backup;
        self.join.nonce_local = nonce;
        self.val.validated = true;
        self.join.pending |= FrameSet::JOIN;
        if fast {
            self.join.kind = JoinKind::FastInitiator;
        }
    }

    /// Before its first packet: the four-packet MP_JOIN even where FAST_JOIN was negotiated,
    /// so that no data rides on the join before the path answers (a path that just left an
    /// INITIAL unanswered, PROTOCOL.md §4.10).
    pub fn plain_join(&mut self) {
        if self.join.kind == JoinKind::FastInitiator {
            self.join.kind = JoinKind::Regular;
        }
    }

    /// The peer's JOIN of kind `kind` opened it (`JoinReceived`, or established for a fast
    /// join). A regular join answers with a SYNACK binding both nonces; a fast one with the
    /// reply, at once and in every packet until acknowledged (§5.9, §5.10); its completion
    /// counts as an original reception for the last-received scheduler.
    pub fn accept_join(&mut self, now: Time, kind: JoinKind, nonce_remote: u32, nonce_local: u32) {
        self.join.kind = kind;
        if kind == JoinKind::Regular {
            self.join.nonce_remote = nonce_remote;
            self.join.nonce_local = nonce_local;
            self.join.pending |= FrameSet::SYNACK;
        } else {
            self.join.pending |= FrameSet::FJ_REPLY;
            self.join.reply_unacked = true;
            self.acks.immediate = true;
            self.last_original_rx = now;
        }
    }

    /// A refused fast join's record (§5.9): closed from the start, it answers the JOIN (from
    /// CID `cid`, `len` bytes) and its repeats with a SUBFLOW_RESET of `reason` while it
    /// drains.
    pub fn refuse_join(&mut self, now: Time, reason: u8, cid: Cid, len: u64) {
        self.remote_cid = Some(cid);
        self.val.amp_rx = len;
        self.reset_reason = reason;
        self.signals = FrameSet::RESET;
        self.drain_until = Some(now.saturating_add(3 * self.rec.rtt.rto()));
    }

    /// The JOIN came again (a new packet number) from `same_sender` or not: answered again
    /// with what answered it first (the SYNACK, the fast-join reply, or the refusal); false
    /// if it is a replay.
    pub fn on_join_again(&mut self, same_sender: bool) -> bool {
        let fast = matches!(self.join.kind, JoinKind::FastOut | JoinKind::FastIn);
        match self.state {
            SubflowState::JoinReceived if same_sender => self.join.pending |= FrameSet::SYNACK,
            SubflowState::Established if same_sender && fast => {
                if self.join.reply_unacked {
                    self.join.pending |= FrameSet::FJ_REPLY;
                }
            }
            SubflowState::Closed if same_sender && self.reset_reason == reason::FAST_JOIN_REJECTED => {
                self.signals |= FrameSet::RESET;
            }
            _ => return false,
        }
        true
    }

    /// Our JOIN's SYNACK, its HMAC verified: the third packet (HMAC-A) goes next.
    pub fn on_synack(&mut self, cid: Cid, nonce_remote: u32, addr_id: u8, backup: bool) {
        self.remote_cid = Some(cid);
        self.join.nonce_remote = nonce_remote;
        self.remote_addr_id = addr_id;
        self.backup |= backup;
        self.state = SubflowState::JoinAckSent;
        self.join.pending.remove(FrameSet::JOIN);
        self.join.pending |= FrameSet::JOIN_ACK;
    }

    /// The fourth packet: the peer acknowledged our JOIN_ACK (RFC 8684 §3.2).
    pub(super) fn on_join_ack_acked(&mut self, now: Time) {
        self.state = SubflowState::Established;
        self.join.pending.remove(FrameSet::JOIN_ACK);
        self.last_original_rx = now;
    }

    /// Our fast join's reply, verified (§5.11): established.
    pub fn on_fast_join_reply(&mut self, now: Time, cid: Cid, addr_id: u8, backup: bool) {
        self.remote_cid = Some(cid);
        self.remote_addr_id = addr_id;
        self.backup |= backup;
        self.state = SubflowState::Established;
        self.join.pending.remove(FrameSet::JOIN);
        self.acks.immediate = true;
        self.last_original_rx = now;
    }

    /// The peer's JOIN_ACK (HMAC-A), verified: established, and the fourth packet (its
    /// acknowledgement) goes at once.
    pub fn on_join_ack(&mut self, now: Time) {
        self.state = SubflowState::Established;
        self.join.pending.remove(FrameSet::SYNACK);
        self.acks.immediate = true;
        self.last_original_rx = now;
    }

    /// We opened it and our JOIN awaits its answer: its packets carry the JOIN header.
    pub fn opening(&self) -> bool {
        self.state == SubflowState::JoinSent && self.local_opener
    }

    /// [`Subflow::opening`] with a fast join (FAST_JOIN_OUT or FAST_JOIN_IN, §5.9).
    pub fn fast_opening(&self) -> bool {
        self.opening() && self.join.kind == JoinKind::FastInitiator
    }

    /// Whether any of the join frames `frames` is pending.
    pub fn join_pending(&self, frames: FrameSet) -> bool {
        self.join.pending.intersects(frames)
    }

    /// Our JOIN has yet to leave (or is to leave again).
    pub fn join_unsent(&self) -> bool {
        self.join_pending(FrameSet::JOIN)
    }
}
