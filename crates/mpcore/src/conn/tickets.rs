//! The connection's side of resumption tickets (PROTOCOL.md §4.7, §5.19): a server's
//! connection carries the NEW_TICKET its endpoint sealed on its first subflow until it is
//! acknowledged (a lost one is sent again, as an address frame is); a client's derives the
//! ticket's PSK from its resumption secret and keeps the ticket for the application
//! (`Endpoint::take_ticket`).

use super::packet_builder::PacketBuilder;
use super::subflow::FrameSet;
use crate::ticket;
use crate::wire::new_ticket::NewTicket;
use crate::wire::Frame;
use crate::Time;

/// Tickets a client keeps before the application takes them.
const KEPT: usize = 4;

/// A ticket as the client received it.
#[derive(Clone)]
pub(crate) struct Received {
    pub lifetime_s: u32,
    pub age_add: u32,
    pub psk: [u8; 32],
    /// The connection's AEAD suite (its 0-RTT data is sealed with it).
    pub suite: u8,
    /// The server key that authenticated the connection.
    pub identity: Option<[u8; 32]>,
    pub ticket: Vec<u8>,
    /// The issuer's routing byte, for the resumed INITIAL's DCID (a fleet's server gives it).
    pub route: Option<u8>,
}

/// A NEW_TICKET as the server's endpoint issued it, for its connection to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Outgoing {
    pub lifetime_s: u32,
    pub age_add: u32,
    pub nonce: u64,
    /// The sealed ticket (1..=255 bytes).
    pub ticket: Vec<u8>,
    /// A fleet's server: the routing byte of the connection's CIDs (PROTOCOL.md §5.19).
    pub route: Option<u8>,
}

impl Outgoing {
    /// The frame.
    pub(crate) fn frame(&self) -> NewTicket<'_> {
        NewTicket {
            lifetime_s: self.lifetime_s,
            age_add: self.age_add,
            nonce: self.nonce,
            ticket: &self.ticket,
            route: self.route,
        }
    }
}

/// A server's ticket to send, a client's tickets received: a component of the connection,
/// which hands it what it needs (the subflow carrying the ticket marks it, the keys give the
/// resumption secret).
#[derive(Default)]
pub(super) struct Tickets {
    out: Option<Outgoing>,
    got: Vec<(Time, Received)>,
    /// The connection was opened with a ticket (§4.8).
    resumed: bool,
    /// Client: the server key that authenticated the connection (its tickets carry it).
    server_key: Option<[u8; 32]>,
}

impl std::fmt::Debug for Tickets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tickets").field("out", &self.out.is_some()).field("got", &self.got.len()).finish()
    }
}

impl Tickets {
    /// Server: the NEW_TICKET its endpoint issued for this connection, to go on the subflow
    /// the caller marked (`FrameSet::TICKET`).
    pub(super) fn queue(&mut self, t: Outgoing) {
        self.out = Some(t);
    }

    /// Writes the NEW_TICKET if the subflow carries it (`carry`).
    pub(super) fn write(&self, carry: FrameSet, b: &mut PacketBuilder<'_>) {
        if let (true, Some(out)) = (carry.intersects(FrameSet::TICKET), self.out.as_ref()) {
            let t = out.frame();
            // Larger than the builder's usual control frame: written only where it fits whole
            // (type, length, body), else it waits for the next packet.
            if b.room() >= t.body_len() + 4 {
                b.control(FrameSet::TICKET, Frame::NewTicket(t));
            }
        }
    }

    /// Client: a NEW_TICKET arrived (a malformed one dropped its packet when it was parsed),
    /// on a connection whose resumption secret is `resumption` and AEAD suite `suite`. A copy
    /// of one already kept (the server sent it again after a loss it only presumed) is not
    /// kept twice. Whether it was kept (the application is told).
    pub(super) fn on_new_ticket(&mut self, now: Time, t: &NewTicket<'_>, resumption: &[u8; 32], suite: u8) -> bool {
        let got = Received {
            lifetime_s: t.lifetime_s,
            age_add: t.age_add,
            psk: ticket::psk(resumption, t.nonce),
            suite,
            identity: self.server_key,
            ticket: t.ticket.to_vec(),
            route: t.route,
        };
        if self.got.iter().any(|(_, g)| g.ticket == got.ticket) {
            return false;
        }
        if self.got.len() == KEPT {
            self.got.remove(0);
        }
        self.got.push((now, got));
        true
    }

    /// The oldest ticket received and not yet taken, with its arrival.
    pub(super) fn take(&mut self) -> Option<(Time, Received)> {
        (!self.got.is_empty()).then(|| self.got.remove(0))
    }

    /// The connection was opened with a resumption ticket (PROTOCOL.md §4.8).
    pub(super) fn resumed(&self) -> bool {
        self.resumed
    }

    pub(super) fn set_resumed(&mut self, resumed: bool) {
        self.resumed = resumed;
    }

    /// Client: the server key that authenticated the connection (none: unauthenticated).
    pub(super) fn set_server_key(&mut self, key: Option<[u8; 32]>) {
        self.server_key = key;
    }
}
