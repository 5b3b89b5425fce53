//! Data sequence numbers (PROTOCOL.md §5.5, RFC 8684 §3.3).
//!
//! A DSN is 64 bits on a circle: a connection's first DSN is `IDSN + 1`, derived from a hash
//! (§4.3), so it can lie anywhere, and the numbers of one stream may wrap from `2^64 - 1` to 0.
//! All wrap-around arithmetic lives here. Inside the connection, positions in a stream are
//! plain `u64` *offsets* from the stream's first DSN, which never wrap (a stream would have to
//! carry 2^62 bytes): the send and receive sides convert at the edge, with [`Dsn::offset_from`]
//! for what the wire brings and [`Dsn::add`] for what they put on it.

use std::fmt;

/// How far ahead of a stream's start a DSN may lie and still belong to it. No stream carries
/// 2^62 bytes; anything further away (or behind the start) is not a position in the stream.
pub const HORIZON: u64 = 1 << 62;

/// A data sequence number as it travels.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Dsn(pub u64);

impl Dsn {
    /// The DSN `n` positions after this one (mod 2^64).
    pub const fn add(self, n: u64) -> Dsn {
        Dsn(self.0.wrapping_add(n))
    }

    /// The offset of this DSN in the stream that starts at `start`: `self - start` on the
    /// circle, if that lies in `[0, HORIZON)`. `None` for a DSN behind the start of the stream
    /// or absurdly far ahead of it: no correct peer sends one.
    pub const fn offset_from(self, start: Dsn) -> Option<u64> {
        let d = self.0.wrapping_sub(start.0);
        if d < HORIZON {
            Some(d)
        } else {
            None
        }
    }

    /// `self` comes strictly before `other` (serial-number order, RFC 1982: exact while the
    /// two lie within 2^63 of each other).
    pub const fn before(self, other: Dsn) -> bool {
        (self.0.wrapping_sub(other.0) as i64) < 0
    }
}

impl fmt::Debug for Dsn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Dsn({:#x})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_across_the_wrap() {
        let start = Dsn(u64::MAX - 9);
        assert_eq!(start.add(10), Dsn(0));
        assert_eq!(Dsn(5).offset_from(start), Some(15), "five past the wrap");
        assert_eq!(start.offset_from(start), Some(0));
        assert_eq!(Dsn(u64::MAX - 10).offset_from(start), None, "one before the start");
        assert_eq!(start.add(HORIZON - 1).offset_from(start), Some(HORIZON - 1));
        assert_eq!(start.add(HORIZON).offset_from(start), None, "beyond the horizon");
    }

    #[test]
    fn order_is_the_circle_s() {
        assert!(Dsn(u64::MAX).before(Dsn(3)), "3 follows 2^64-1 after the wrap");
        assert!(!Dsn(3).before(Dsn(u64::MAX)));
        assert!(Dsn(10).before(Dsn(11)));
        assert!(!Dsn(11).before(Dsn(11)));
    }
}
