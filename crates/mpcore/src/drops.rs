//! Why input is dropped (PROTOCOL.md §11: every drop is counted; none changes state).
//!
//! The handshake and the connections return a [`DropReason`] as a value; the endpoint counts
//! it in its [`Drops`].

/// Why a datagram was dropped, or (where a frame is rejected and the rest of its packet still
/// processed: a bad ADD_ADDR or MP_FASTCLOSE key, data before a join completed) one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// Larger than the receive limit.
    Oversized,
    /// Did not parse, or its frames did not.
    Malformed,
    /// A version we do not speak.
    Version,
    /// A short header naming no connection of ours.
    UnknownCid,
    /// A JOIN naming no connection of ours.
    UnknownToken,
    /// AEAD authentication failed.
    DecryptFailed,
    /// A packet number already received on that subflow.
    Duplicate,
    /// A RETRY whose integrity tag is wrong.
    BadRetry,
    /// An INITIAL whose retry token is invalid, expired, or names another address: dropped
    /// while the server asks for RETRYs, else answered as one without a token (counted either
    /// way; PROTOCOL.md §4.1, RETRY).
    BadToken,
    /// A CONFIRM whose cookie does not open.
    BadCookie,
    /// A CONFIRM for a connection that already closed.
    CookieReplay,
    /// A JOIN whose subflow number is taken or was used before.
    ReplayedJoin,
    /// A join, ADD_ADDR or MP_FASTCLOSE whose HMAC or key is wrong.
    BadHmac,
    /// A HANDSHAKE not signed by one of the server keys the client was given (§4.6).
    BadSignature,
    /// A join beyond the subflow limit, or of a kind not accepted.
    Refused,
    /// A valid packet in the wrong state.
    Unexpected,
    /// An authenticated packet carrying a value no correct peer sends (§11).
    Protocol,
}

/// Datagrams dropped, by reason.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Drops {
    /// Larger than the receive limit.
    pub oversized: u64,
    /// Did not parse, or its frames did not.
    pub malformed: u64,
    /// A version we do not speak.
    pub version: u64,
    /// A short header naming no connection of ours.
    pub unknown_cid: u64,
    /// A JOIN naming no connection of ours.
    pub unknown_token: u64,
    /// AEAD authentication failed (forged or corrupted).
    pub decrypt_failed: u64,
    /// A packet number already received on that subflow (a replay or a network duplicate).
    pub duplicate: u64,
    /// A RETRY whose integrity tag is wrong.
    pub bad_retry: u64,
    /// An INITIAL whose retry token is invalid, expired, or names another address (the copy
    /// on another path of a client's INITIAL): dropped while the server asks for RETRYs, else
    /// answered as an INITIAL without a token (PROTOCOL.md §4.1, RETRY). Counted either way.
    pub bad_token: u64,
    /// A CONFIRM whose cookie does not open, is expired, or names another address.
    pub bad_cookie: u64,
    /// A CONFIRM for a connection that already closed.
    pub cookie_replay: u64,
    /// A JOIN whose subflow number is taken or was used before.
    pub replayed_join: u64,
    /// A join, ADD_ADDR or MP_FASTCLOSE whose HMAC or key is wrong.
    pub bad_hmac: u64,
    /// A HANDSHAKE whose signature the client's server keys do not verify (or that has none).
    pub bad_signature: u64,
    /// A join beyond the subflow limit, or of a kind not accepted.
    pub refused: u64,
    /// A valid packet in the wrong state (e.g. an INITIAL to a client).
    pub unexpected: u64,
    /// An authenticated packet carrying a value no correct peer sends (an ACK of a packet
    /// never sent, a DATA_ACK beyond the data sent, data outside the stream or beyond the
    /// window we advertised): dropped whole, before any of its frames acts (§11).
    pub protocol: u64,
}

/// Sums two endpoints' counters (a server spread over cores).
impl std::ops::AddAssign for Drops {
    fn add_assign(&mut self, o: Drops) {
        self.oversized += o.oversized;
        self.malformed += o.malformed;
        self.version += o.version;
        self.unknown_cid += o.unknown_cid;
        self.unknown_token += o.unknown_token;
        self.decrypt_failed += o.decrypt_failed;
        self.duplicate += o.duplicate;
        self.bad_retry += o.bad_retry;
        self.bad_token += o.bad_token;
        self.bad_cookie += o.bad_cookie;
        self.cookie_replay += o.cookie_replay;
        self.replayed_join += o.replayed_join;
        self.bad_hmac += o.bad_hmac;
        self.bad_signature += o.bad_signature;
        self.refused += o.refused;
        self.unexpected += o.unexpected;
        self.protocol += o.protocol;
    }
}

impl Drops {
    /// Counts one drop.
    pub fn count(&mut self, r: DropReason) {
        let c = match r {
            DropReason::Oversized => &mut self.oversized,
            DropReason::Malformed => &mut self.malformed,
            DropReason::Version => &mut self.version,
            DropReason::UnknownCid => &mut self.unknown_cid,
            DropReason::UnknownToken => &mut self.unknown_token,
            DropReason::DecryptFailed => &mut self.decrypt_failed,
            DropReason::Duplicate => &mut self.duplicate,
            DropReason::BadRetry => &mut self.bad_retry,
            DropReason::BadToken => &mut self.bad_token,
            DropReason::BadCookie => &mut self.bad_cookie,
            DropReason::CookieReplay => &mut self.cookie_replay,
            DropReason::ReplayedJoin => &mut self.replayed_join,
            DropReason::BadHmac => &mut self.bad_hmac,
            DropReason::BadSignature => &mut self.bad_signature,
            DropReason::Refused => &mut self.refused,
            DropReason::Unexpected => &mut self.unexpected,
            DropReason::Protocol => &mut self.protocol,
        };
        *c += 1;
    }

    /// Every counter with its name (the field's), in declaration order.
    pub fn by_reason(&self) -> [(&'static str, u64); 17] {
        [
            ("oversized", self.oversized),
            ("malformed", self.malformed),
            ("version", self.version),
            ("unknown_cid", self.unknown_cid),
            ("unknown_token", self.unknown_token),
            ("decrypt_failed", self.decrypt_failed),
            ("duplicate", self.duplicate),
            ("bad_retry", self.bad_retry),
            ("bad_token", self.bad_token),
            ("bad_cookie", self.bad_cookie),
            ("cookie_replay", self.cookie_replay),
            ("replayed_join", self.replayed_join),
            ("bad_hmac", self.bad_hmac),
            ("bad_signature", self.bad_signature),
            ("refused", self.refused),
            ("unexpected", self.unexpected),
            ("protocol", self.protocol),
        ]
    }

    /// The counters that are not zero, as `name n, name n` (empty if none).
    pub fn summary(&self) -> String {
        let parts: Vec<String> =
            self.by_reason().iter().filter(|(_, n)| *n > 0).map(|(k, n)| format!("{k} {n}")).collect();
        parts.join(", ")
    }

    /// Every drop, whatever the reason (`bad_token` counts the INITIALs answered as without a
    /// token too).
    pub fn total(&self) -> u64 {
        self.by_reason().iter().map(|(_, n)| n).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_is_counted_named_and_summed() {
        let all = [
            DropReason::Oversized,
            DropReason::Malformed,
            DropReason::Version,
            DropReason::UnknownCid,
            DropReason::UnknownToken,
            DropReason::DecryptFailed,
            DropReason::Duplicate,
            DropReason::BadRetry,
            DropReason::BadToken,
            DropReason::BadCookie,
            DropReason::CookieReplay,
            DropReason::ReplayedJoin,
            DropReason::BadHmac,
            DropReason::BadSignature,
            DropReason::Refused,
            DropReason::Unexpected,
            DropReason::Protocol,
        ];
        let mut d = Drops::default();
        for (k, r) in all.iter().enumerate() {
            for _ in 0..=k {
                d.count(*r);
            }
        }
        // Each reason landed in its own counter: 1, 2, ..., 17 in declaration order.
        let counts: Vec<u64> = d.by_reason().iter().map(|(_, n)| *n).collect();
        assert_eq!(counts, (1..=17).collect::<Vec<u64>>());
        assert_eq!(d.total(), (1..=17).sum::<u64>());
        let mut one = Drops::default();
        one.count(DropReason::BadSignature);
        one.count(DropReason::DecryptFailed);
        assert_eq!(one.summary(), "decrypt_failed 1, bad_signature 1");
    }
}
