//! The fast-join HMACs (PROTOCOL.md §5.9 to §5.11), with `ring`.
//!
//! MultiMob: FAST_JOIN_OUT's SYN carries "an HMAC over the keys and data_seq‖token",
//! FAST_JOIN_IN's "an HMAC over the keys and data_ack‖token", and the SYN/ACK "the server's
//! HMAC and its data_ack or data_seq". Here each HMAC is the leftmost 160 bits of
//! HMAC-SHA256(key = first key ‖ second key, msg = kind ‖ value ‖ token), keys as 8 big-endian
//! bytes. The kind byte (our departure) keeps an HMAC of one use from standing for another.

use ring::hmac;
use std::fmt;

/// Length of a fast-join HMAC: the leftmost 160 bits of HMAC-SHA256.
pub const HMAC_LEN: usize = 20;

/// The four uses of the fast-join HMAC: the byte that leads the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    /// FAST_JOIN_OUT: the value is the DSN of the data in the packet.
    Out = 0x01,
    /// FAST_JOIN_IN: the value is the initiator's DATA_ACK.
    In = 0x02,
    /// FAST_JOIN_REPLY carrying the responder's DATA_ACK.
    ReplyAck = 0x03,
    /// FAST_JOIN_REPLY carrying the responder's DSN.
    ReplyDsn = 0x04,
}

/// An HMAC-SHA256 key made of two 64-bit MPTCP keys, `first ‖ second` (RFC 8684 §3.2's
/// "Key-A‖Key-B" construction, shared with MP_JOIN and ADD_ADDR).
pub fn key_pair(first: u64, second: u64) -> hmac::Key {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&first.to_be_bytes());
    k[8..].copy_from_slice(&second.to_be_bytes());
    hmac::Key::new(hmac::HMAC_SHA256, &k)
}

/// Constant-time equality of two byte strings (false if their lengths differ): the time
/// taken does not depend on where they differ.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

fn mac(key: &hmac::Key, kind: Kind, value: u64, token: u32) -> [u8; HMAC_LEN] {
    let mut msg = [0u8; 13];
    msg[0] = kind as u8;
    msg[1..9].copy_from_slice(&value.to_be_bytes());
    msg[9..].copy_from_slice(&token.to_be_bytes());
    let tag = hmac::sign(key, &msg);
    let mut out = [0u8; HMAC_LEN];
    out.copy_from_slice(&tag.as_ref()[..HMAC_LEN]);
    out
}

/// One connection's fast-join keys, precomputed in both orders so that signing or verifying
/// costs one HMAC and no key setup.
///
/// The signer puts its own key first: the initiator signs FAST_JOIN_OUT/IN with
/// Key-A‖Key-B, the responder signs its reply with Key-B‖Key-A.
#[derive(Clone)]
pub struct Keys {
    local_remote: hmac::Key,
    remote_local: hmac::Key,
}

impl fmt::Debug for Keys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("fastjoin::Keys(..)")
    }
}

impl Keys {
    /// Keys for the side whose MPTCP key is `local`, talking to the side whose key is `remote`.
    pub fn new(local: u64, remote: u64) -> Self {
        Self { local_remote: key_pair(local, remote), remote_local: key_pair(remote, local) }
    }

    /// The HMAC we send. `token` is the responder's token (the JOIN header's).
    pub fn sign(&self, kind: Kind, value: u64, token: u32) -> [u8; HMAC_LEN] {
        mac(&self.local_remote, kind, value, token)
    }

    /// Checks, in constant time, an HMAC the peer computed with its key first.
    pub fn verify(&self, kind: Kind, value: u64, token: u32, tag: &[u8; HMAC_LEN]) -> bool {
        ct_eq(&mac(&self.remote_local, kind, value, token), tag)
    }
}

/// The HMAC for explicit keys, `key_first` being the signer's (for test vectors).
pub fn hmac(key_first: u64, key_second: u64, kind: Kind, value: u64, token: u32) -> [u8; HMAC_LEN] {
    mac(&key_pair(key_first, key_second), kind, value, token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initiator_and_responder_agree() {
        let (a, b) = (0x0102_0304_0506_0708, 0x1112_1314_1516_1718);
        let ka = Keys::new(a, b);
        let kb = Keys::new(b, a);
        let t = ka.sign(Kind::Out, 77, 0xdead_beef);
        assert_eq!(t, hmac(a, b, Kind::Out, 77, 0xdead_beef));
        assert!(kb.verify(Kind::Out, 77, 0xdead_beef, &t));
        // Another kind, value, token or direction does not verify.
        assert!(!kb.verify(Kind::In, 77, 0xdead_beef, &t));
        assert!(!kb.verify(Kind::Out, 78, 0xdead_beef, &t));
        assert!(!kb.verify(Kind::Out, 77, 0xdead_beee, &t));
        assert!(!ka.verify(Kind::Out, 77, 0xdead_beef, &t));
        let r = kb.sign(Kind::ReplyAck, 5, 0xdead_beef);
        assert!(ka.verify(Kind::ReplyAck, 5, 0xdead_beef, &r));
    }

    #[test]
    fn matches_a_direct_hmac_sha256() {
        // HMAC-SHA256(0x00..01 ‖ 0x00..02, 0x02 ‖ 0x00..2a ‖ 0x00000007), leftmost 20 bytes.
        let key = [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2];
        let msg = [2, 0, 0, 0, 0, 0, 0, 0, 42, 0, 0, 0, 7];
        let full = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, &key), &msg);
        assert_eq!(&hmac(1, 2, Kind::In, 42, 7)[..], &full.as_ref()[..20]);
    }

    #[test]
    fn ct_eq_compares_length_and_content() {
        assert!(ct_eq(b"abc", b"abc"));
        assert!(!ct_eq(b"abc", b"abd"));
        assert!(!ct_eq(b"abc", b"ab"));
    }
}
