//! REMOVE_SUBFLOW (PROTOCOL.md §5.21): closes subflows of the connection *other* than the
//! one it is sent on. A phone that fails back to WiFi closes its cellular subflow with it,
//! sent over WiFi: a SUBFLOW_RESET on the cellular subflow itself would be a cellular
//! packet, and the radio, in its tail by then, would stay awake for another tail (11.6 s at
//! about 1 W on LTE). It is an extension frame (type 0x41, length-prefixed), sent only to a
//! peer whose `remove_subflow` transport parameter (§8) says it acts on it.
//!
//! ```text
//! type (v) = 0x41, length (v), then 1..=16 entries of:
//! subflow number (4)   a subflow of the connection (§2), either side's
//! reason (1)           as SUBFLOW_RESET's (§5.16)
//! ```

use super::codec::Writer;
use super::Error;

/// REMOVE_SUBFLOW's frame type.
pub const REMOVE_SUBFLOW: u64 = 0x41;

/// Bytes per entry: the subflow number and the reason.
pub const ENTRY_LEN: usize = 5;

/// Most entries a frame carries.
pub const MAX_ENTRIES: usize = 16;

/// A REMOVE_SUBFLOW frame's body, as a view: its entries, checked once when parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoveSubflow<'a> {
    body: &'a [u8],
}

impl<'a> RemoveSubflow<'a> {
    /// Parses (or checks, before it is written) a body: 1..=16 whole entries.
    pub fn parse(body: &'a [u8]) -> Result<Self, Error> {
        if body.is_empty() || !body.len().is_multiple_of(ENTRY_LEN) || body.len() > MAX_ENTRIES * ENTRY_LEN {
            return Err(Error::Malformed("REMOVE_SUBFLOW needs 1..=16 entries of 5 bytes"));
        }
        Ok(Self { body })
    }

    /// The subflows it closes, with their reasons.
    pub fn entries(&self) -> impl Iterator<Item = (u32, u8)> + 'a {
        self.body.chunks_exact(ENTRY_LEN).map(|e| (u32::from_be_bytes([e[0], e[1], e[2], e[3]]), e[4]))
    }

    /// The body's length.
    pub fn body_len(&self) -> usize {
        self.body.len()
    }

    /// Writes the body (the caller wrote the type and length).
    pub fn emit(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        w.bytes(self.body)
    }
}

/// Appends an entry to `body` (an encoder's list of closes owed), keeping the last
/// [`MAX_ENTRIES`].
pub fn push_entry(body: &mut Vec<u8>, subflow: u32, reason: u8) {
    if body.len() >= MAX_ENTRIES * ENTRY_LEN {
        body.drain(..ENTRY_LEN);
    }
    body.extend_from_slice(&subflow.to_be_bytes());
    body.push(reason);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_bad_bodies_are_refused() {
        let mut body = Vec::new();
        for k in 0..20u32 {
            push_entry(&mut body, 0x8000_0000 | k, (k % 10) as u8);
        }
        let f = RemoveSubflow::parse(&body).unwrap();
        let e: Vec<_> = f.entries().collect();
        assert_eq!(e.len(), MAX_ENTRIES);
        assert_eq!(e[0], (0x8000_0004, 4));
        assert_eq!(e[15], (0x8000_0013, 9));
        assert!(RemoveSubflow::parse(&[]).is_err());
        assert!(RemoveSubflow::parse(&body[..7]).is_err());
        assert!(RemoveSubflow::parse(&[0; (MAX_ENTRIES + 1) * ENTRY_LEN]).is_err());
    }
}
