//! MultiMob's FAST_JOIN: a new subflow whose first packet already carries data
//! (FAST_JOIN_OUT) or the initiator's data acknowledgement (FAST_JOIN_IN), so that data flows
//! after one round trip or at once instead of after the two round trips of an MP_JOIN.
//!
//! This crate is the pure part, with no I/O, no clock and no allocation:
//!
//! - [`wire`]: the FAST_JOIN_OUT, FAST_JOIN_IN and FAST_JOIN_REPLY frames (PROTOCOL.md §5.9 to
//!   §5.11) as views that parse from and emit into caller buffers.
//! - [`auth`]: their HMAC-SHA256 tags over the connection's keys (ring), compared in
//!   constant time.
//! - [`window`]: the replay window. A FAST_JOIN_OUT is accepted only if its DSN lies in
//!   `[EDSN - rcv_wnd, EDSN]`, at most once per DSN, in bounded memory.
//! - [`accept_out`] and [`accept_in`]: what a responder runs on a fast join: the HMAC first,
//!   then the window.
//!
//! `mpcore` builds the connection behaviour on these (which packet a client sends, what the
//! server does with the data). The property tests in `tests/` are meant to be run and extended
//! by users; see the crate's README.md.

#![warn(missing_docs)]

pub mod auth;
pub mod window;
// FAST_JOIN's frame fields carry the MultiMob paper's and PROTOCOL.md §5.9-5.11's names,
// where they are specified.
#[allow(missing_docs)]
pub mod wire;

pub use auth::{Keys, Kind, HMAC_LEN};
pub use window::{Refusal, ReplayWindow, Verdict, DEFAULT_CAPACITY};
pub use wire::{FastJoinIn, FastJoinOut, FastJoinReply, ReplyValue, WireError};

/// The responder's decision on a FAST_JOIN_OUT: the HMAC over `dsn ‖ token` must verify
/// (`token` is the responder's own token, the one the JOIN header carried), then the replay
/// window decides for the current `edsn` and receive window `wnd`. A packet whose HMAC fails
/// leaves the window untouched.
pub fn accept_out<const N: usize>(
    keys: &Keys,
    token: u32,
    f: &FastJoinOut<'_>,
    window: &mut ReplayWindow<N>,
    edsn: u64,
    wnd: u64,
) -> Verdict {
    if !keys.verify(Kind::Out, f.dsn, token, &f.hmac) {
        return Verdict::Refuse(Refusal::BadHmac);
    }
    window.accept(f.dsn, f.data.len() as u64, edsn, wnd)
}

/// The responder's check of a FAST_JOIN_IN: its HMAC over `data_ack ‖ token`. A FAST_JOIN_IN
/// carries no data, so the replay window does not apply; a replayed one is caught by its
/// subflow number, which the AEAD binds to the packet.
pub fn accept_in(keys: &Keys, token: u32, f: &FastJoinIn) -> bool {
    keys.verify(Kind::In, f.data_ack, token, &f.hmac)
}

/// The reply to an accepted fast join, signed by the responder.
pub fn reply(keys: &Keys, token: u32, backup: bool, addr_id: u8, value: ReplyValue, cid: [u8; 8]) -> FastJoinReply {
    let (kind, v) = match value {
        ReplyValue::DataAck(v) => (Kind::ReplyAck, v),
        ReplyValue::Dsn(v) => (Kind::ReplyDsn, v),
    };
    FastJoinReply { backup, addr_id, value, hmac: keys.sign(kind, v, token), cid }
}

/// The initiator's check of a reply.
pub fn verify_reply(keys: &Keys, token: u32, r: &FastJoinReply) -> bool {
    let (kind, v) = match r.value {
        ReplyValue::DataAck(v) => (Kind::ReplyAck, v),
        ReplyValue::Dsn(v) => (Kind::ReplyDsn, v),
    };
    keys.verify(kind, v, token, &r.hmac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signed_fast_join_out_is_accepted_once() {
        let (a, b, token) = (11, 22, 0x0a0b_0c0d);
        let client = Keys::new(a, b);
        let server = Keys::new(b, a);
        let mut w: ReplayWindow = ReplayWindow::new(0);
        let f =
            FastJoinOut { backup: true, addr_id: 1, dsn: 500, hmac: client.sign(Kind::Out, 500, token), data: b"x" };
        assert_eq!(accept_out(&server, token, &f, &mut w, 500, 1000), Verdict::Deliver);
        assert_eq!(accept_out(&server, token, &f, &mut w, 500, 1000), Verdict::Refuse(Refusal::Replay));
        // A wrong token, or a tag made with the responder's own key order, does not verify
        // and is not remembered.
        let g = FastJoinOut { dsn: 501, hmac: client.sign(Kind::Out, 501, token), ..f };
        assert_eq!(accept_out(&server, token + 1, &g, &mut w, 600, 1000), Verdict::Refuse(Refusal::BadHmac));
        let h = FastJoinOut { hmac: server.sign(Kind::Out, 501, token), ..g };
        assert_eq!(accept_out(&server, token, &h, &mut w, 600, 1000), Verdict::Refuse(Refusal::BadHmac));
        assert_eq!(w.remembered(), 1);
        assert_eq!(accept_out(&server, token, &g, &mut w, 501, 1000), Verdict::Deliver);
    }

    #[test]
    fn replies_verify_only_for_their_value_and_kind() {
        let (a, b, token) = (11, 22, 7);
        let client = Keys::new(a, b);
        let server = Keys::new(b, a);
        let r = reply(&server, token, false, 0, ReplyValue::DataAck(42), [1; 8]);
        assert!(verify_reply(&client, token, &r));
        assert!(!verify_reply(&client, token, &FastJoinReply { value: ReplyValue::Dsn(42), ..r }));
        assert!(!verify_reply(&client, token, &FastJoinReply { value: ReplyValue::DataAck(43), ..r }));
        assert!(!verify_reply(&server, token, &r));
        let i = FastJoinIn { backup: false, addr_id: 0, data_ack: 9, hmac: client.sign(Kind::In, 9, token) };
        assert!(accept_in(&server, token, &i));
        assert!(!accept_in(&server, token, &FastJoinIn { data_ack: 10, ..i }));
    }
}
