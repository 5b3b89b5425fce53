//! The server's side of resumption tickets (PROTOCOL.md §4.7): it seals one for every
//! connection it accepts, when `Config::resumption` asks, and the connection sends it in a
//! NEW_TICKET frame (§5.19). The endpoint's unix clock (`Endpoint::set_unix_time`) dates them.

use crate::config::Resumption;
use crate::conn::OutgoingTicket as Outgoing;
use crate::crypto::Suite;
use crate::handshake::{Offer, TakenTicket};
use crate::rng::Rng;
use crate::ticket::{self, Ticket, TicketKeys, AGE_WINDOW_MS, ID_LEN};
use crate::Time;

/// A server's ticket keys and the lifetime it gives its tickets.
#[derive(Debug)]
pub(super) struct Issuer {
    keys: TicketKeys,
    lifetime_s: u32,
}

impl Issuer {
    /// The issuer `r` configures: its secret, or one drawn from `rng` (this endpoint's own:
    /// every core of a server, every server of a fleet, must be given the same one).
    pub(super) fn new(r: &Resumption, fleet: Option<&crate::config::Fleet>, rng: &mut Rng) -> Option<Self> {
        if !r.issue {
            return None;
        }
        let of_fleet = fleet.map(|f| crate::crypto::fleet_key(&f.secret, crate::crypto::FleetKey::Tickets));
        let secret = match r.secret.or(of_fleet) {
            Some(s) => s,
            None => {
                let mut s = [0u8; 32];
                rng.fill(&mut s).ok()?;
                s
            }
        };
        Some(Self { keys: TicketKeys::new(&secret, r.rotation_s), lifetime_s: r.lifetime_s })
    }

    /// The NEW_TICKET for the connection of resumption secret `resumption`, issued at
    /// `unix_ms`; its PSK is the one of nonce 0 (one ticket per connection).
    pub(super) fn issue(
        &self,
        unix_ms: u64,
        resumption: &[u8; 32],
        suite: Suite,
        identity: [u8; 32],
        rng: &mut Rng,
    ) -> Option<Outgoing> {
        let nonce = 0;
        let t = Ticket {
            issued_ms: unix_ms,
            lifetime_s: self.lifetime_s,
            age_add: rng.u32(),
            psk: ticket::psk(resumption, nonce),
            suite: suite.id(),
            identity,
        };
        let mut id = [0u8; ID_LEN];
        rng.fill(&mut id).ok()?;
        let sealed = self.keys.seal(unix_ms, id, &t).ok()?;
        // The frame's limit: a sealed record of 1..=255 bytes.
        (1..=255).contains(&sealed.len()).then(|| Outgoing {
            lifetime_s: t.lifetime_s,
            age_add: t.age_add,
            nonce,
            ticket: sealed.to_vec(),
        })
    }

    /// The PSK of a ticket a resuming INITIAL offers with `obfuscated_age` (PROTOCOL.md
    /// §4.8), if it opens here, is within its lifetime at `unix_ms`, and the age the client
    /// shows is within [`AGE_WINDOW_MS`] of the age the server computes.
    pub(super) fn take(&self, unix_ms: u64, sealed: &[u8], obfuscated_age: u32) -> Option<TakenTicket> {
        let t = self.open(unix_ms, sealed)?;
        let client_age = u64::from(obfuscated_age.wrapping_sub(t.age_add));
        let server_age = unix_ms.saturating_sub(t.issued_ms);
        (client_age.abs_diff(server_age) <= AGE_WINDOW_MS).then_some(TakenTicket {
            psk: t.psk,
            suite: t.suite,
            issued_ms: t.issued_ms,
        })
    }

    /// Opens a ticket this server (or its fleet) issued, if it is fresh at `unix_ms`.
    pub(super) fn open(&self, unix_ms: u64, sealed: &[u8]) -> Option<Ticket> {
        self.keys.open(unix_ms, sealed).filter(|t| t.fresh(unix_ms))
    }
}

/// The endpoint's unix clock: the unix time (ms) at `Time` zero, given by the driver.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct UnixClock {
    at_zero_ms: u64,
}

impl UnixClock {
    pub(super) fn set(&mut self, now: Time, unix_ms: u64) {
        self.at_zero_ms = unix_ms.saturating_sub(now / 1_000);
    }

    pub(super) fn unix_ms(&self, now: Time) -> u64 {
        self.at_zero_ms.saturating_add(now / 1_000)
    }
}

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
            Some(k) => self.config.server_keys.iter().any(|pk| &pk.0 == k),
            None => self.config.unauthenticated_server,
        };
        let usable = trusted && unix_ms < ticket.expires_unix_ms() && !ticket.ticket.is_empty();
        let offer = usable.then(|| Offer {
            ticket: ticket.ticket.clone(),
            psk: ticket.psk,
            obfuscated_age: ticket.obfuscated_age(unix_ms),
            suite: ticket.suite,
            identity: ticket.identity,
        });
        self.start(now, path, remote, offer)
    }

    /// Opens a ticket as this server would (tests of the ticket's contents).
    #[cfg(feature = "test-hooks")]
    pub fn open_ticket(&self, now: Time, sealed: &[u8]) -> Option<Ticket> {
        self.tickets.as_ref()?.open(self.clock.unix_ms(now), sealed)
    }
}
