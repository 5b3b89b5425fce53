//! The application's side of resumption tickets (PROTOCOL.md §4.7, §4.8): the endpoint's
//! unix clock, the tickets a client's connections received, and a connection that offers one.
//! The server's side, which issues and opens them, is `issuer.rs`.

use crate::handshake::Offer;
#[cfg(feature = "test-hooks")]
use crate::ticket::Ticket;
use crate::Time;

impl super::Endpoint {
    /// The unix time is `unix_ms` at `now` (the driver says so once; tickets are dated by it).
    /// Without it the endpoint counts unix time from its own clock's zero.
    pub fn set_unix_time(&mut self, now: Time, unix_ms: u64) {
        self.clock.set(now, unix_ms);
    }

    /// The unix time at `now`, by [`Endpoint::set_unix_time`].
    ///
    /// [`Endpoint::set_unix_time`]: super::Endpoint::set_unix_time
    pub fn unix_ms(&self, now: Time) -> u64 {
        self.clock.unix_ms(now)
    }

    /// A resumption ticket connection `h`'s server gave it (PROTOCOL.md §4.7), for the
    /// application to keep; each is handed out once.
    pub fn take_ticket(&mut self, h: super::ConnHandle) -> Option<crate::ResumptionTicket> {
        let clock = self.clock;
        let c = self.conn_mut(h)?;
        let server = c.server_addr();
        let (at, t) = c.take_ticket()?;
        Some(crate::ResumptionTicket {
            server,
            received_unix_ms: clock.unix_ms(at),
            lifetime_s: t.lifetime_s,
            age_add: t.age_add,
            psk: t.psk,
            suite: t.suite,
            identity: t.identity,
            ticket: t.ticket,
            route: t.route,
        })
    }

    /// Starts a connection to `remote` over local path `path` that offers `ticket` (PROTOCOL.md
    /// §4.8): a server that takes it answers without a signature, keyed from the ticket's PSK
    /// and a fresh key agreement; one that does not answers with the full handshake, and the
    /// connection goes on as [`Endpoint::connect`]'s would. A ticket past its lifetime by this
    /// endpoint's clock is not offered. Each ticket should be offered once: the server gives a
    /// new one on every connection.
    ///
    /// [`Endpoint::connect`]: super::Endpoint::connect
    pub fn connect_resuming(
        &mut self,
        now: Time,
        path: crate::PathId,
        remote: std::net::SocketAddr,
        ticket: &crate::ResumptionTicket,
    ) -> Result<super::ConnHandle, super::ConnectError> {
        let unix_ms = self.clock.unix_ms(now);
        // Offered only while the key that authenticated its connection is still trusted: a
        // resumed connection is authenticated by that key (§4.8).
        let trusted = match &ticket.identity {
            Some(k) => self.config.transport.server_keys.iter().any(|pk| &pk.0 == k),
            None => self.config.transport.unauthenticated_server,
        };
        let usable = trusted && unix_ms < ticket.expires_unix_ms() && !ticket.ticket.is_empty();
        let offer = usable.then(|| Offer {
            ticket: ticket.ticket.clone(),
            psk: ticket.psk,
            obfuscated_age: ticket.obfuscated_age(unix_ms),
            suite: ticket.suite,
            identity: ticket.identity,
            route: ticket.route,
        });
        self.start(now, path, remote, offer)
    }

    /// Opens a ticket as this server would (tests of the ticket's contents).
    #[cfg(feature = "test-hooks")]
    pub fn open_ticket(&self, now: Time, sealed: &[u8]) -> Option<Ticket> {
        self.tickets.as_ref()?.open(self.clock.unix_ms(now), sealed)
    }
}
