//! NEW_TICKET (PROTOCOL.md §5.19): the server's resumption ticket for the client, sent once per
//! connection after the handshake. It is an extension frame (type 0x40, length-prefixed), so a
//! client that does not know it skips it; this one parses it with the other frames, as
//! [`Frame::NewTicket`](super::Frame::NewTicket), once.
//!
//! ```text
//! type (v) = 0x40, length (v), then:
//! lifetime (v)      seconds the client may use the ticket
//! age_add (4)       added to the ticket's age when the client shows it (§4.7)
//! nonce (v)         the ticket's PSK is HKDF-Expand(resumption secret, "mpudp1 ticket psk" ‖ nonce)
//! ticket (v-len)    opaque to the client: the server's sealed record (1..=255 bytes)
//! [route (1)]       a fleet's server only: the routing byte a resumed INITIAL's DCID starts
//!                   with, so that the balancer takes it to the issuer (§2.1, §4.9)
//! ```

use super::codec::{varint_len, Reader, Writer};
use super::Error;

/// NEW_TICKET's frame type.
pub const NEW_TICKET: u64 = 0x40;

/// A NEW_TICKET frame's body, as a view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewTicket<'a> {
    pub lifetime_s: u32,
    pub age_add: u32,
    pub nonce: u64,
    pub ticket: &'a [u8],
    /// The routing byte for the client's resumed INITIAL (a fleet's server only).
    pub route: Option<u8>,
}

impl<'a> NewTicket<'a> {
    /// Parses the body of an extension frame of type [`NEW_TICKET`]; nothing may follow.
    pub fn parse(body: &'a [u8]) -> Result<Self, Error> {
        let mut r = Reader::new(body);
        let lifetime = r.varint()?;
        let age_add = r.u32()?;
        let nonce = r.varint()?;
        let ticket = r.length_prefixed()?;
        let route = if r.is_empty() { None } else { Some(r.u8()?) };
        if !r.is_empty() || ticket.is_empty() || ticket.len() > 255 {
            return Err(Error::Malformed("NEW_TICKET"));
        }
        let lifetime_s = u32::try_from(lifetime).map_err(|_| Error::Malformed("NEW_TICKET lifetime"))?;
        Ok(Self { lifetime_s, age_add, nonce, ticket, route })
    }

    /// The body's length (what follows the frame's length field).
    pub fn body_len(&self) -> usize {
        varint_len(u64::from(self.lifetime_s))
            + 4
            + varint_len(self.nonce)
            + varint_len(self.ticket.len() as u64)
            + self.ticket.len()
            + usize::from(self.route.is_some())
    }

    /// Writes the body (what follows the frame's type and length); returns its length.
    pub fn emit(&self, w: &mut Writer<'_>) -> Result<usize, Error> {
        if self.ticket.is_empty() || self.ticket.len() > 255 {
            return Err(Error::Malformed("NEW_TICKET"));
        }
        let start = w.len();
        w.varint(u64::from(self.lifetime_s))?;
        w.u32(self.age_add)?;
        w.varint(self.nonce)?;
        w.length_prefixed(self.ticket)?;
        if let Some(r) = self.route {
            w.u8(r)?;
        }
        Ok(w.len() - start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ticket_frame_round_trips_and_bad_ones_are_refused() {
        for route in [None, Some(0x83)] {
            let t = NewTicket { lifetime_s: 7_200, age_add: 0x0102_0304, nonce: 5, ticket: &[9; 114], route };
            let mut buf = [0u8; 256];
            let mut w = Writer::new(&mut buf);
            let n = t.emit(&mut w).unwrap();
            assert_eq!(NewTicket::parse(&buf[..n]), Ok(t));
            assert_eq!(t.body_len(), n);
            // Cut anywhere, a ticket without its route is still a ticket (the byte is optional);
            // every shorter cut is refused.
            let whole = n - usize::from(route.is_some());
            for cut in 0..whole {
                assert!(NewTicket::parse(&buf[..cut]).is_err(), "cut at {cut}");
            }
            let mut longer = buf[..n].to_vec();
            longer.push(0);
            if route.is_none() {
                assert_eq!(NewTicket::parse(&longer).map(|t| t.route), Ok(Some(0)), "the route byte");
                longer.push(0);
            }
            assert!(NewTicket::parse(&longer).is_err(), "a trailing byte");
        }
        let t = NewTicket { lifetime_s: 7_200, age_add: 0x0102_0304, nonce: 5, ticket: &[9; 114], route: None };
        let empty = NewTicket { ticket: &[], ..t };
        assert!(empty.emit(&mut Writer::new(&mut [0u8; 64])).is_err());
    }
}
