//! The server's side of resumption tickets (PROTOCOL.md §4.7): it seals one for every
//! connection it accepts, when `Config::resumption` asks, and the connection sends it in a
//! NEW_TICKET frame (§5.19); it opens those clients offer. The endpoint's unix clock
//! (`Endpoint::set_unix_time`, in `tickets.rs` with the rest of the application's side) dates
//! them.

use crate::config::Resumption;
use crate::conn::OutgoingTicket as Outgoing;
use crate::crypto::Suite;
use crate::handshake::TakenTicket;
use crate::rng::Rng;
use crate::ticket::{self, Ticket, TicketKeys, AGE_WINDOW_MS, ID_LEN};
use crate::Time;

/// A server's ticket keys and the lifetime it gives its tickets.
#[derive(Debug)]
pub(super) struct Issuer {
    keys: TicketKeys,
    lifetime_s: u32,
    /// This server's id in its fleet (`ticket::NO_ISSUER` outside one): the tickets it issues
    /// name it, and only it takes their 0-RTT data.
    issuer: u8,
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
        let issuer = fleet.map_or(crate::ticket::NO_ISSUER, |f| f.server);
        Some(Self { keys: TicketKeys::new(&secret, r.rotation_s), lifetime_s: r.lifetime_s, issuer })
    }

    /// The NEW_TICKET for the connection of resumption secret `resumption`, issued at
    /// `unix_ms`; its PSK is the one of nonce 0 (one ticket per connection).
    pub(super) fn issue(
        &self,
        unix_ms: u64,
        resumption: &[u8; 32],
        suite: Suite,
        identity: [u8; 32],
        route: Option<u8>,
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
            issuer: self.issuer,
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
            route,
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
            issued_here: t.issuer == self.issuer,
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
