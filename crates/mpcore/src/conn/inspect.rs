//! One look at a packet's frames before any of them acts: what it asks of the receiver (an
//! ACK, at once or not), and whether any number in it is one a correct peer cannot send.

use super::dsn::Dsn;
use super::recv::RecvSide;
use super::send::SendSide;
use crate::drops::DropReason;
use crate::wire::{Frame, FrameList};

/// What one look at a packet's frames found, before any of them acts.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Inspection {
    /// An ACK is owed for it.
    pub eliciting: bool,
    /// The ACK is owed at once: handshake and join packets are acknowledged at once (as QUIC
    /// acknowledges its handshake), so their RTT samples start without a delayed-ACK bias.
    pub urgent: bool,
    /// It answers our fast join (a FAST_JOIN_REPLY, or the reset refusing it).
    pub answers_join: bool,
    pub carries_reset: bool,
    /// Out-of-order reassembly ranges its data would open.
    pub new_ranges: usize,
    /// It carries stream data (a DSS mapping).
    pub data: bool,
}

/// One look at a packet's frames (parsed and validated, §5) before any of them acts, for a
/// subflow whose next packet number is `next_pn`: no number in them is one a correct peer
/// cannot send (PROTOCOL.md §11).
pub(super) fn inspect(
    send: &SendSide,
    recv: &RecvSide,
    next_pn: u64,
    frames: &FrameList<'_>,
) -> Result<Inspection, DropReason> {
    let mut look = Inspection::default();
    for f in frames.iter() {
        match f {
            // An ACK of a packet number we never sent.
            Frame::Ack(a) if a.largest >= next_pn => return Err(DropReason::Protocol),
            Frame::Dss(d) => {
                look.data |= d.mapping.is_some();
                if let Some((ack, _)) = d.ack {
                    send.check_data_ack(Dsn(ack)).map_err(|_| DropReason::Protocol)?;
                }
                if let Some((dsn, data)) = d.mapping_near(recv.edsn().0) {
                    let new = recv.check(Dsn(dsn), data.len()).map_err(|_| DropReason::Protocol)?;
                    look.new_ranges += usize::from(new);
                }
            }
            _ => {}
        }
        look.eliciting |= f.is_ack_eliciting();
        look.urgent |= matches!(
            f,
            Frame::Ping
                | Frame::HandshakeDone
                | Frame::MpJoinSynAck(_)
                | Frame::MpJoinAck { .. }
                | Frame::FastJoinReply(_)
        );
        look.answers_join |= matches!(f, Frame::FastJoinReply(_) | Frame::SubflowReset { .. });
        look.carries_reset |= matches!(f, Frame::SubflowReset { .. });
    }
    Ok(look)
}
