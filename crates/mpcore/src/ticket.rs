//! Resumption tickets (PROTOCOL.md §4.7): the secret a connection leaves for the next one, and
//! the server's sealed, stateless record of it.
//!
//! - Both ends derive the connection's *resumption secret* from its master
//!   ([`crate::crypto::Master::resumption`]); a ticket's pre-shared key (PSK) is derived from it
//!   and the ticket's nonce ([`psk`]), so the PSK never travels.
//! - The server seals what it must remember into the ticket ([`TicketKeys::seal`]): when it was
//!   issued, its lifetime, the age obfuscator, the PSK, the suite and the identity key that
//!   signed the first handshake (a resumed connection is as authenticated as the first). The
//!   client keeps the ticket opaque, with the PSK beside it.
//! - Ticket keys: one per epoch of `rotation` seconds, derived from a secret that a fleet of
//!   servers (and every core of one) shares; a ticket opens under its epoch's key or the one
//!   before. The AEAD nonce is the ticket's random 16-byte id (its first 12 bytes; the whole id
//!   is authenticated): the key has many sealers (cores, servers), so a counter, as the cookie
//!   key uses, could repeat. Random 96-bit nonces collide with probability 2^-33 after 2^32
//!   tickets under one key; an epoch of a busy fleet issues far fewer.

use crate::crypto::{CryptoError, TAG_LEN};
use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::hkdf;

/// The ticket's format, first byte of its plaintext.
const FORMAT: u8 = 2;

/// Ticket bytes beyond the plaintext: key id, ticket id, tag.
pub const OVERHEAD: usize = 1 + ID_LEN + TAG_LEN;

/// How far the age a client shows for its ticket may be from the age the server computes
/// (ms): the ticket's flight to the client, and the drift of two clocks over its lifetime
/// (PROTOCOL.md §4.8).
pub const AGE_WINDOW_MS: u64 = 10_000;

/// A ticket's random id.
pub const ID_LEN: usize = 16;

/// The plaintext's length: format (1), issued (8, unix ms), lifetime (4, s), age_add (4),
/// PSK (32), suite (1), identity key (32, zeros for an unauthenticated server).
pub const PLAINTEXT_LEN: usize = 1 + 8 + 4 + 4 + 32 + 1 + 32 + 1;

/// A sealed ticket's length.
pub const TICKET_LEN: usize = OVERHEAD + PLAINTEXT_LEN;

struct Len(usize);

impl hkdf::KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

fn expand(prk: &hkdf::Prk, info: &[&[u8]], out: &mut [u8]) {
    // The only failure of `expand` is a length above 255 * 32 bytes, which nothing here asks.
    if let Ok(okm) = prk.expand(info, Len(out.len())) {
        let _ = okm.fill(out);
    }
}

/// A ticket's PSK: `HKDF-Expand(resumption, "mpudp1 ticket psk" ‖ nonce (8), 32)`.
pub fn psk(resumption: &[u8; 32], nonce: u64) -> [u8; 32] {
    let prk = hkdf::Prk::new_less_safe(hkdf::HKDF_SHA256, resumption);
    let mut out = [0u8; 32];
    expand(&prk, &[b"mpudp1 ticket psk", &nonce.to_be_bytes()], &mut out);
    out
}

/// What a ticket holds for the server (its plaintext).
#[derive(Clone, PartialEq, Eq)]
pub struct Ticket {
    /// When the server issued it (unix ms).
    pub issued_ms: u64,
    /// How long the client may use it (s).
    pub lifetime_s: u32,
    /// Added to the ticket's age (ms) by the client, so that an observer of two resumptions
    /// cannot link them by the ages they show (RFC 8446 §4.6.1).
    pub age_add: u32,
    /// The pre-shared key the resumed connection is keyed with ([`psk`]).
    pub psk: [u8; 32],
    /// The AEAD suite of the connection that issued it (PROTOCOL.md §8).
    pub suite: u8,
    /// The identity key that signed the first handshake (zeros if the server had none).
    pub identity: [u8; 32],
    /// The fleet's server that issued it ([`NO_ISSUER`] outside a fleet): only it takes the
    /// resumed connection's 0-RTT data, so that a replayed flight is judged by the one
    /// anti-replay record that saw the first (PROTOCOL.md §4.9).
    pub issuer: u8,
}

/// [`Ticket::issuer`] of a server outside a fleet (fleet ids are below 255).
pub const NO_ISSUER: u8 = 0xff;

impl std::fmt::Debug for Ticket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ticket")
            .field("issued_ms", &self.issued_ms)
            .field("lifetime_s", &self.lifetime_s)
            .field("suite", &self.suite)
            .finish_non_exhaustive()
    }
}

impl Ticket {
    fn encode(&self) -> [u8; PLAINTEXT_LEN] {
        let mut b = [0u8; PLAINTEXT_LEN];
        b[0] = FORMAT;
        b[1..9].copy_from_slice(&self.issued_ms.to_be_bytes());
        b[9..13].copy_from_slice(&self.lifetime_s.to_be_bytes());
        b[13..17].copy_from_slice(&self.age_add.to_be_bytes());
        b[17..49].copy_from_slice(&self.psk);
        b[49] = self.suite;
        b[50..82].copy_from_slice(&self.identity);
        b[82] = self.issuer;
        b
    }

    fn decode(b: &[u8]) -> Option<Self> {
        if b.len() != PLAINTEXT_LEN || b[0] != FORMAT {
            return None;
        }
        let u32_at = |k: usize| u32::from_be_bytes([b[k], b[k + 1], b[k + 2], b[k + 3]]);
        let mut issued = [0u8; 8];
        issued.copy_from_slice(&b[1..9]);
        let mut psk = [0u8; 32];
        psk.copy_from_slice(&b[17..49]);
        let mut identity = [0u8; 32];
        identity.copy_from_slice(&b[50..82]);
        Some(Self {
            issued_ms: u64::from_be_bytes(issued),
            lifetime_s: u32_at(9),
            age_add: u32_at(13),
            psk,
            suite: b[49],
            identity,
            issuer: b[82],
        })
    }

    /// Whether it may still be used at `unix_ms`: lifetime left, and issued no later than
    /// then by more than [`AGE_WINDOW_MS`] (another server of the fleet, whose clock is ahead
    /// of ours, may have issued it a moment ago).
    pub fn fresh(&self, unix_ms: u64) -> bool {
        self.issued_ms <= unix_ms.saturating_add(AGE_WINDOW_MS)
            && unix_ms.saturating_sub(self.issued_ms) <= u64::from(self.lifetime_s) * 1_000
    }
}

/// A ticket as the client keeps it: the server's sealed bytes, the PSK beside them, and when
/// it expires. [`ResumptionTicket::to_bytes`] and [`ResumptionTicket::from_bytes`] let an
/// application keep it across restarts. The bytes hold the PSK: store them as a secret.
#[derive(Clone, PartialEq, Eq)]
pub struct ResumptionTicket {
    /// The server it is for (the address the connection was opened to).
    pub server: std::net::SocketAddr,
    /// When it arrived (unix ms, the endpoint's clock).
    pub received_unix_ms: u64,
    /// How long it may be used after it arrived (s).
    pub lifetime_s: u32,
    /// What hides its age from observers ([`ResumptionTicket::obfuscated_age`]).
    pub age_add: u32,
    /// The pre-shared key, derived from the connection's resumption secret (never sent).
    pub psk: [u8; 32],
    /// The AEAD suite of the connection that got it: its 0-RTT data is sealed with it
    /// (PROTOCOL.md §4.9).
    pub suite: u8,
    /// The server key that authenticated the connection that got it (`None`: an
    /// unauthenticated server). A client offers the ticket only while it still trusts that key
    /// (`Config::transport.server_keys`), as a resumed connection is authenticated by it (§4.8).
    pub identity: Option<[u8; 32]>,
    /// The server's sealed record (opaque).
    pub ticket: Vec<u8>,
    /// A fleet's server: its routing byte, which the resumed INITIAL's original DCID starts
    /// with so that the balancer takes it to the server that issued the ticket, the one that
    /// takes its 0-RTT data (PROTOCOL.md §2.1, §4.9). `None` from a server alone.
    pub route: Option<u8>,
}

impl std::fmt::Debug for ResumptionTicket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResumptionTicket")
            .field("server", &self.server)
            .field("received_unix_ms", &self.received_unix_ms)
            .field("lifetime_s", &self.lifetime_s)
            .field("ticket_len", &self.ticket.len())
            .finish_non_exhaustive()
    }
}

/// [`ResumptionTicket::to_bytes`]'s format, its first byte: 3 adds the route; 2 (before the
/// route) is still read.
const STORED_FORMAT: u8 = 3;

impl ResumptionTicket {
    /// When it may no longer be used (unix ms).
    pub fn expires_unix_ms(&self) -> u64 {
        self.received_unix_ms.saturating_add(u64::from(self.lifetime_s) * 1_000)
    }

    /// Its age as the server is shown it at `unix_ms`: milliseconds since it arrived, plus
    /// `age_add`, modulo 2^32 (RFC 8446 §4.2.11.1).
    pub fn obfuscated_age(&self, unix_ms: u64) -> u32 {
        (unix_ms.saturating_sub(self.received_unix_ms) as u32).wrapping_add(self.age_add)
    }

    /// The bytes an application stores: format (1), server address (1 + 4 or 16, + 2),
    /// received (8), lifetime (4), age_add (4), PSK (32), suite (1), identity (1 + 0 or 32),
    /// ticket (1 + n), route (1 + 0 or 1).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = vec![STORED_FORMAT];
        match self.server.ip() {
            std::net::IpAddr::V4(a) => {
                b.push(4);
                b.extend_from_slice(&a.octets());
            }
            std::net::IpAddr::V6(a) => {
                b.push(6);
                b.extend_from_slice(&a.octets());
            }
        }
        b.extend_from_slice(&self.server.port().to_be_bytes());
        b.extend_from_slice(&self.received_unix_ms.to_be_bytes());
        b.extend_from_slice(&self.lifetime_s.to_be_bytes());
        b.extend_from_slice(&self.age_add.to_be_bytes());
        b.extend_from_slice(&self.psk);
        b.push(self.suite);
        match &self.identity {
            Some(k) => {
                b.push(1);
                b.extend_from_slice(k);
            }
            None => b.push(0),
        }
        b.push(self.ticket.len() as u8);
        b.extend_from_slice(&self.ticket);
        match self.route {
            Some(r) => b.extend_from_slice(&[1, r]),
            None => b.push(0),
        }
        b
    }

    /// What [`ResumptionTicket::to_bytes`] wrote; `None` for anything else.
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        let mut r = crate::wire::Reader::new(b);
        let format = r.u8().ok()?;
        if format != STORED_FORMAT && format != 2 {
            return None;
        }
        let ip = match r.u8().ok()? {
            4 => std::net::IpAddr::from(r.array::<4>().ok()?),
            6 => std::net::IpAddr::from(r.array::<16>().ok()?),
            _ => return None,
        };
        let server = std::net::SocketAddr::new(ip, r.u16().ok()?);
        let received_unix_ms = r.u64().ok()?;
        let lifetime_s = r.u32().ok()?;
        let age_add = r.u32().ok()?;
        let psk = r.array::<32>().ok()?;
        let suite = r.u8().ok()?;
        let identity = match r.u8().ok()? {
            0 => None,
            1 => Some(r.array::<32>().ok()?),
            _ => return None,
        };
        let n = usize::from(r.u8().ok()?);
        let ticket = r.bytes(n).ok()?.to_vec();
        let route = match format {
            2 => None,
            _ => match r.u8().ok()? {
                0 => None,
                1 => Some(r.u8().ok()?),
                _ => return None,
            },
        };
        if !r.is_empty() || ticket.is_empty() {
            return None;
        }
        Some(Self { server, received_unix_ms, lifetime_s, age_add, psk, suite, identity, ticket, route })
    }
}

/// The server's ticket keys: one per epoch, derived from a shared secret (module docs).
pub struct TicketKeys {
    secret: hkdf::Prk,
    rotation_s: u64,
}

impl std::fmt::Debug for TicketKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TicketKeys").field("rotation_s", &self.rotation_s).finish_non_exhaustive()
    }
}

impl TicketKeys {
    /// Keys from `secret`, a new one every `rotation_s` seconds (at least 1).
    pub fn new(secret: &[u8; 32], rotation_s: u64) -> Self {
        Self { secret: hkdf::Prk::new_less_safe(hkdf::HKDF_SHA256, secret), rotation_s: rotation_s.max(1) }
    }

    fn key(&self, epoch: u64) -> LessSafeKey {
        let mut k = [0u8; 32];
        expand(&self.secret, &[b"mpudp1 ticket key", &epoch.to_be_bytes()], &mut k);
        LessSafeKey::new(UnboundKey::new(&aead::CHACHA20_POLY1305, &k).expect("32-byte ChaCha20 key"))
    }

    fn nonce(id: &[u8]) -> Nonce {
        let mut n = [0u8; 12];
        n.copy_from_slice(&id[..12]);
        Nonce::assume_unique_for_key(n)
    }

    /// Seals `t` at `unix_ms` under the epoch's key, named by `id` (random): `key id (1) ‖ id
    /// (16) ‖ ciphertext ‖ tag`, [`TICKET_LEN`] bytes.
    pub fn seal(&self, unix_ms: u64, id: [u8; ID_LEN], t: &Ticket) -> Result<[u8; TICKET_LEN], CryptoError> {
        let epoch = unix_ms / 1_000 / self.rotation_s;
        let mut out = [0u8; TICKET_LEN];
        out[0] = epoch as u8;
        out[1..1 + ID_LEN].copy_from_slice(&id);
        let (head, body) = out.split_at_mut(1 + ID_LEN);
        body[..PLAINTEXT_LEN].copy_from_slice(&t.encode());
        let tag = self
            .key(epoch)
            .seal_in_place_separate_tag(Self::nonce(&id), Aad::from(&head[..]), &mut body[..PLAINTEXT_LEN])
            .map_err(|_| CryptoError::BufferTooSmall)?;
        body[PLAINTEXT_LEN..].copy_from_slice(tag.as_ref());
        Ok(out)
    }

    /// Opens a ticket at `unix_ms`: under the current epoch's key or the previous one's (the
    /// key id's byte says which). `None` if it does not open, whatever the reason.
    pub fn open(&self, unix_ms: u64, ticket: &[u8]) -> Option<Ticket> {
        if ticket.len() != TICKET_LEN {
            return None;
        }
        let now = unix_ms / 1_000 / self.rotation_s;
        let epoch = [now, now.saturating_sub(1)].into_iter().find(|e| *e as u8 == ticket[0])?;
        let (head, sealed) = ticket.split_at(1 + ID_LEN);
        let mut buf = [0u8; PLAINTEXT_LEN + TAG_LEN];
        buf.copy_from_slice(sealed);
        let pt = self.key(epoch).open_in_place(Self::nonce(&head[1..]), Aad::from(head), &mut buf).ok()?;
        Ticket::decode(pt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticket() -> Ticket {
        Ticket {
            issued_ms: 1_700_000_000_000,
            lifetime_s: 7_200,
            age_add: 0xdead_beef,
            psk: [7; 32],
            suite: 2,
            identity: [9; 32],
            issuer: 1,
        }
    }

    #[test]
    fn a_ticket_opens_in_its_epoch_and_the_next_only() {
        let keys = TicketKeys::new(&[1; 32], 3_600);
        let t = ticket();
        let sealed = keys.seal(t.issued_ms, [3; ID_LEN], &t).unwrap();
        assert_eq!(keys.open(t.issued_ms, &sealed), Some(t.clone()));
        assert_eq!(keys.open(t.issued_ms + 3_600_000, &sealed), Some(t.clone()), "the next epoch");
        assert_eq!(keys.open(t.issued_ms + 7_200_000, &sealed), None, "two epochs later");
        // Another secret (another fleet), or a flipped bit anywhere: nothing opens.
        assert_eq!(TicketKeys::new(&[2; 32], 3_600).open(t.issued_ms, &sealed), None);
        for k in 0..sealed.len() {
            let mut bad = sealed;
            bad[k] ^= 1;
            assert_eq!(keys.open(t.issued_ms, &bad), None, "bit flipped in byte {k}");
        }
        assert_eq!(keys.open(t.issued_ms, &sealed[..TICKET_LEN - 1]), None);
    }

    #[test]
    fn a_stored_ticket_round_trips_and_anything_else_is_refused() {
        for server in ["192.0.2.1:4433", "[2001:db8::1]:443"] {
            let t = ResumptionTicket {
                server: server.parse().unwrap(),
                received_unix_ms: 1_700_000_000_000,
                lifetime_s: 7_200,
                age_add: 77,
                psk: [5; 32],
                suite: 2,
                identity: server.starts_with('1').then_some([8; 32]),
                ticket: vec![1; TICKET_LEN],
                route: server.starts_with('1').then_some(0x42),
            };
            let b = t.to_bytes();
            assert_eq!(ResumptionTicket::from_bytes(&b), Some(t.clone()));
            for cut in 0..b.len() {
                assert_eq!(ResumptionTicket::from_bytes(&b[..cut]), None, "cut at {cut}");
            }
            // Format 2 (before the route): the same without its route bytes.
            let mut old = b[..b.len() - 1 - usize::from(t.route.is_some())].to_vec();
            old[0] = 2;
            assert_eq!(ResumptionTicket::from_bytes(&old), Some(ResumptionTicket { route: None, ..t.clone() }));
            assert_eq!(t.expires_unix_ms(), 1_700_007_200_000);
            assert_eq!(t.obfuscated_age(1_700_000_001_000), 1_077);
        }
    }

    #[test]
    fn the_psk_depends_on_the_secret_and_the_nonce_and_freshness_on_the_lifetime() {
        assert_ne!(psk(&[1; 32], 0), psk(&[1; 32], 1));
        assert_ne!(psk(&[1; 32], 0), psk(&[2; 32], 0));
        assert_eq!(psk(&[1; 32], 5), psk(&[1; 32], 5));
        let t = ticket();
        assert!(t.fresh(t.issued_ms) && t.fresh(t.issued_ms + 7_200_000));
        assert!(!t.fresh(t.issued_ms + 7_200_001));
        // Issued by a server whose clock is ahead of ours: within the age window, fresh.
        assert!(t.fresh(t.issued_ms - AGE_WINDOW_MS) && !t.fresh(t.issued_ms - AGE_WINDOW_MS - 1));
    }
}
