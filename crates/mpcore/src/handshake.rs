//! The first handshake (PROTOCOL.md §4), both ends.
//!
//! - [`Client`]: the client's INITIAL (padded, repeated unchanged until answered, §4.1), a
//!   RETRY's token (§4.5), the HANDSHAKE that agrees the keys and brings the server's
//!   parameters and cookie (§4.2), and the cookie it returns in its CONFIRMs (§4.4).
//! - [`answer_initial`] and [`open_cookie`]: the server's stateless part. An INITIAL gets a
//!   RETRY or a HANDSHAKE whose cookie seals everything the server will need; the server keeps
//!   nothing. A CONFIRM whose cookie opens, for the address it was issued to and within its
//!   lifetime, gives what a new connection is created from.
//!
//! - Resumption (§4.8): a client given a ticket offers it in its INITIAL with a binder; a
//!   server that opens it answers with a HANDSHAKE keyed from the ticket's PSK and the key
//!   shares (the `P` bit), without a signature. A ticket the server cannot take gets the full
//!   handshake, which the client accepts as before.
//!
//! Nothing here touches a connection or the endpoint's tables: outcomes are values.

use crate::config::Config;
use crate::crypto::{
    self, ct_eq, encode_addr, resumption_binder, transcript_hash, CookieKey, KeyShare, Master, RetryTokenKey, Secrets,
    Suite, TranscriptPrefix,
};
use crate::drops::DropReason;
use crate::identity;
use crate::rng::Rng;
use crate::wire::packet::{self, Confirm, Handshake, Initial, ResumeOffer, Retry, BINDER_LEN};
use crate::wire::{Cid, Frame, FrameList, Header, Packet, TransportParams, Writer};
use crate::Time;
use std::net::SocketAddr;

fn ms(t: Time) -> u64 {
    t / 1000
}

/// A ticket a client offers in its INITIAL (§4.8).
pub struct Offer {
    /// The server's sealed ticket, as it gave it.
    pub ticket: Vec<u8>,
    /// The ticket's PSK (never sent).
    pub psk: [u8; 32],
    /// Its age as the server is shown it.
    pub obfuscated_age: u32,
    /// The suite of the connection that got it: the early key's (§4.9).
    pub suite: u8,
    /// The server key that authenticated the connection that got it (none: an unauthenticated
    /// server); a connection resumed with it is authenticated by the same key.
    pub identity: Option<[u8; 32]>,
    /// The issuer's routing byte: the original DCID starts with it (§2.1, §4.9).
    pub route: Option<u8>,
}

impl std::fmt::Debug for Offer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Offer").field("ticket_len", &self.ticket.len()).finish_non_exhaustive()
    }
}

/// The client's side of the first handshake, until the server's first short packet.
#[derive(Debug)]
pub struct Client {
    share: Option<KeyShare>,
    /// The ticket offered in every INITIAL of this attempt, if any.
    offer: Option<Offer>,
    /// The INITIAL announces 0-RTT data (§4.9), and its early key.
    want_early: bool,
    early: Option<Box<crate::crypto::PacketKey>>,
    /// Counts the INITIALs built: EARLY packets belong to one.
    generation: u32,
    /// The INITIAL's destination CID, and the client's own CID (subflow 0's).
    odcid: Cid,
    scid: Cid,
    server: SocketAddr,
    /// The INITIAL datagram, repeated unchanged (§4.1), and the length of its transcript part.
    initial: Vec<u8>,
    transcript_len: usize,
    retried: bool,
    /// The INITIAL a RETRY replaced (its transcript's first part), when it offered no 0-RTT
    /// data: a HANDSHAKE may still answer it. A server turns to RETRY under load (`retry_above`
    /// a second), so it may have answered one copy with a HANDSHAKE and the next with a
    /// RETRY; that HANDSHAKE, checked against the new INITIAL alone, looked forged, and the
    /// connection gave up ("did not prove the server key", issue 52).
    prior: Option<TranscriptPrefix>,
    cookie: Vec<u8>,
    attempts: u32,
    /// A HANDSHAKE came that the server keys did not authenticate (§4.6).
    auth_failed: bool,
    /// When the last INITIAL went out, and when the next one is due.
    sent_at: Time,
    next_send: Time,
    send_now: bool,
}

/// What a HANDSHAKE that authenticated gives the client.
#[derive(Debug)]
pub struct Agreed {
    pub secrets: Secrets,
    pub params: TransportParams,
    /// The server's CID for subflow 0.
    pub server_cid: Cid,
    /// The HANDSHAKE's round trip, if the INITIAL went only once (Karn's rule: an answer to
    /// which copy is unknown).
    pub rtt_sample: Option<Time>,
    /// The server took our ticket: the keys come from its PSK and the key shares (§4.8).
    pub resumed: bool,
    /// The server took our 0-RTT data (§4.9).
    pub early_accepted: bool,
    /// The server key that authenticated the connection: the one whose signature verified,
    /// or, resumed, the ticket's (none: an unauthenticated server).
    pub server_key: Option<[u8; 32]>,
}

impl Client {
    /// A client handshake from `scid` to `server`, offering `offer`'s ticket if given; the
    /// INITIAL is built at once and sent by [`Client::poll_initial`].
    pub fn new(
        now: Time,
        config: &Config,
        rng: &mut Rng,
        scid: Cid,
        server: SocketAddr,
        offer: Option<Offer>,
    ) -> Result<Self, crypto::CryptoError> {
        let share = rng.key_share()?;
        let mut hs = Client {
            share: None,
            offer,
            want_early: false,
            early: None,
            generation: 0,
            odcid: Cid::default(),
            scid,
            server,
            initial: Vec::new(),
            transcript_len: 0,
            retried: false,
            prior: None,
            cookie: Vec::new(),
            attempts: 0,
            auth_failed: false,
            sent_at: now,
            next_send: now,
            send_now: true,
        };
        hs.odcid = hs.original_dcid(rng);
        if !hs.build_initial(config, &share, &[]) {
            return Err(crypto::CryptoError::BufferTooSmall);
        }
        hs.share = Some(share);
        Ok(hs)
    }

    /// A new original DCID: random, but for its first byte when the offered ticket names its
    /// issuer's routing byte (a fleet's server): the balancer then takes the resumed INITIAL
    /// and its EARLY packets to the server that takes their 0-RTT data (§2.1, §4.9).
    fn original_dcid(&self, rng: &mut Rng) -> Cid {
        let mut c = rng.cid();
        if let Some(r) = self.offer.as_ref().and_then(|o| o.route) {
            c.0[0] = r;
        }
        c
    }

    /// Builds the INITIAL (with `token`, and the ticket's offer and binder if any); `false`,
    /// with nothing changed, if it does not fit in its 1200 bytes (a RETRY's token too long).
    fn build_initial(&mut self, config: &Config, share: &KeyShare, token: &[u8]) -> bool {
        let mut pbuf = [0u8; 128];
        let mut params = config.transport_params();
        params.early_data = self.want_early;
        let plen = params.emit(&mut Writer::new(&mut pbuf)).unwrap_or(0);
        // 1200 bytes, whatever the maximum: every path carries them (larger sizes are probed
        // once the connection exists, §10), and the INITIAL must get through.
        let size = packet::MIN_INITIAL_SIZE;
        let mut buf = vec![0u8; size];
        let init = Initial {
            version: packet::VERSION_2,
            dcid: self.odcid,
            scid: self.scid,
            token,
            key_share: *share.public(),
            params: &pbuf[..plen],
            resume: self.offer.as_ref().map(|o| ResumeOffer {
                ticket: &o.ticket,
                obfuscated_age: o.obfuscated_age,
                binder: [0; BINDER_LEN],
            }),
        };
        let Ok(transcript_len) = init.emit(&mut Writer::new(&mut buf)) else { return false };
        self.transcript_len = transcript_len;
        if let Some(o) = &self.offer {
            // §4.8: the binder covers every byte before it (the token of a RETRY included).
            let at = Initial::binder_offset(self.transcript_len);
            let binder = resumption_binder(&o.psk, &buf[..at]);
            buf[at..self.transcript_len].copy_from_slice(&binder);
        }
        self.generation += 1;
        self.early = None;
        if let (Some(o), true) = (&self.offer, self.want_early) {
            if let Ok(suite) = Suite::from_id(o.suite) {
                self.early = Some(Box::new(crypto::early_key(&o.psk, &buf[..self.transcript_len], suite)));
            }
        }
        // The rest of the datagram is zero padding (§3.1: INITIALs are padded to 1200 bytes).
        self.initial = buf;
        true
    }

    /// Bytes on the heap: the INITIAL kept for its repeats, the cookie, the early key.
    pub fn heap_bytes(&self) -> usize {
        let early = self.early.as_ref().map_or(0, |_| std::mem::size_of::<crate::crypto::PacketKey>());
        self.initial.capacity() + self.cookie.capacity() + early
    }

    /// A ticket is offered whose suite the early key can use (§4.9).
    pub fn offers_early(&self) -> bool {
        self.offer.as_ref().is_some_and(|o| Suite::from_id(o.suite).is_ok())
    }

    /// The application wrote early data before the INITIAL left: the INITIAL is built again
    /// to announce it (`early_data`), with its early key. Later, it is too late: the data
    /// waits for the handshake.
    pub fn want_early(&mut self, config: &Config) {
        if self.want_early || self.attempts > 0 || !self.offers_early() {
            return;
        }
        self.want_early = true;
        if let Some(share) = self.share.take() {
            self.build_initial(config, &share, &[]);
            self.share = Some(share);
        }
    }

    /// The early key of the INITIAL sent, once it has been sent.
    pub fn early_key(&self) -> Option<&crate::crypto::PacketKey> {
        self.early.as_deref().filter(|_| self.attempts > 0)
    }

    /// The current INITIAL datagram, as [`Client::poll_initial`] writes it (its copies on
    /// other paths are the same bytes, PROTOCOL.md §4.10).
    pub fn initial_datagram(&self) -> &[u8] {
        &self.initial
    }

    /// The INITIAL's destination CID (EARLY packets carry it).
    pub fn odcid(&self) -> Cid {
        self.odcid
    }

    /// Which INITIAL is current (a RETRY or a fresh key share builds another), and how many
    /// times INITIALs went: EARLY packets go again with each.
    pub fn generation(&self) -> (u32, u32) {
        (self.generation, self.attempts)
    }

    /// The cookie to return in CONFIRMs (empty before the HANDSHAKE).
    pub fn cookie(&self) -> &[u8] {
        &self.cookie
    }

    /// Writes the INITIAL into `buf` if one is due; returns its length. Each repeat doubles the
    /// wait for the next (from `initial_rto`).
    pub fn poll_initial(&mut self, now: Time, initial_rto: u64, buf: &mut [u8]) -> Option<usize> {
        if !self.send_now || buf.len() < self.initial.len() {
            return None;
        }
        self.send_now = false;
        self.attempts += 1;
        self.sent_at = now;
        self.next_send = now.saturating_add(initial_rto << (self.attempts - 1).min(10));
        buf[..self.initial.len()].copy_from_slice(&self.initial);
        Some(self.initial.len())
    }

    /// When the INITIAL is due again (none while one is already due).
    pub fn deadline(&self) -> Option<Time> {
        (!self.send_now).then_some(self.next_send)
    }

    /// The resend timer expired: `false` if `max_attempts` INITIALs went unanswered, or if a
    /// HANDSHAKE the server keys did not authenticate came and no valid one followed before
    /// this repeat (give up: [`Client::auth_failed`] tells which).
    pub fn on_timeout(&mut self, max_attempts: u32) -> bool {
        if self.attempts >= max_attempts || self.auth_failed {
            return false;
        }
        self.send_now = true;
        true
    }

    /// Whether a HANDSHAKE came that none of the server keys authenticated.
    pub fn auth_failed(&self) -> bool {
        self.auth_failed
    }

    /// A RETRY (§4.5): its integrity tag is checked, then the INITIAL is repeated at once with
    /// the token. One RETRY per attempt.
    pub fn on_retry(
        &mut self,
        now: Time,
        remote: SocketAddr,
        p: &Packet<'_>,
        dgram: &[u8],
        config: &Config,
    ) -> Result<(), DropReason> {
        let Header::Retry(r) = p.header else { return Err(DropReason::Unexpected) };
        if self.retried || remote != self.server {
            return Err(DropReason::Unexpected);
        }
        let tag = crypto::retry_integrity_tag(&self.odcid.0, &dgram[..p.header_len]);
        if !ct_eq(&tag, &r.tag) {
            return Err(DropReason::BadRetry);
        }
        // A token that leaves no room in the INITIAL is no server's (a RETRY's integrity key
        // is public: anyone who saw the INITIAL can make one): dropped, the INITIAL unchanged.
        let Some(share) = self.share.take() else { return Err(DropReason::Unexpected) };
        let prior = (!self.want_early).then(|| TranscriptPrefix::new(&self.initial[..self.transcript_len]));
        let built = self.build_initial(config, &share, r.token);
        self.share = Some(share);
        if !built {
            return Err(DropReason::BadRetry);
        }
        self.prior = prior;
        self.retried = true;
        self.send_now = true;
        self.next_send = now;
        Ok(())
    }

    /// A HANDSHAKE (§4.1-4.2): agree the keys, open the sealed parameters and cookie. One that
    /// fails (a forgery, or a low-order key share) spent our key share: the attempt goes on
    /// with a fresh share and a new INITIAL without token.
    pub fn on_handshake(
        &mut self,
        now: Time,
        remote: SocketAddr,
        p: &Packet<'_>,
        scratch: &mut [u8],
        config: &Config,
        rng: &mut Rng,
    ) -> Result<Agreed, DropReason> {
        let Header::Handshake(h) = p.header else { return Err(DropReason::Unexpected) };
        if remote != self.server {
            return Err(DropReason::Unexpected);
        }
        let suite = Suite::from_id(h.suite).map_err(|_| DropReason::Malformed)?;
        if !config.transport.suites.contains(&suite) {
            return Err(DropReason::Malformed);
        }
        // The transcript of the INITIAL the HANDSHAKE answers: ours, or the one a RETRY replaced.
        let part = &scratch[..Handshake::TRANSCRIPT_LEN];
        let current = transcript_hash(&self.initial[..self.transcript_len], part);
        let transcripts = [Some(current), self.prior.as_ref().map(|p| p.hash(part))];
        let transcripts = || transcripts.iter().flatten();
        // §4.8: a HANDSHAKE keyed with our ticket's PSK proves the PSK (which only a holder of
        // the ticket key can derive) with an HMAC of TH, checked before the key share is spent
        // as a signature is; it has no signature. One that claims a PSK we never offered is not
        // for us.
        let mut server_key = None;
        let (psk, mut th) = match (&self.offer, h.psk_proof) {
            (Some(o), Some(proof)) => {
                let Some(&th) = transcripts().find(|th| ct_eq(&crypto::psk_proof(&o.psk, th), &proof)) else {
                    self.auth_failed = true;
                    return Err(DropReason::BadSignature);
                };
                server_key = o.identity;
                (Some(o.psk), th)
            }
            (None, Some(_)) => return Err(DropReason::Unexpected),
            (_, None) => (None, current),
        };
        // §4.6: the server's signature of TH, checked before the key share is spent, so that a
        // forged HANDSHAKE (a man in the middle's own key share) leaves the real one acceptable.
        if psk.is_none() {
            if !config.transport.server_keys.is_empty() {
                let signed = h.signature.and_then(|sig| {
                    transcripts().find_map(|t| {
                        config.transport.server_keys.iter().find(|k| k.verifies(t, &sig)).map(|k| (*t, k))
                    })
                });
                let Some((t, key)) = signed else {
                    self.auth_failed = true;
                    return Err(DropReason::BadSignature);
                };
                th = t;
                server_key = Some(key.0);
            } else if !config.transport.unauthenticated_server {
                return Err(DropReason::Unexpected);
            }
        }
        // The key share is consumed by the agreement (a second HANDSHAKE finds none).
        let Some(share) = self.share.take() else { return Err(DropReason::Unexpected) };
        let Ok(shared) = share.agree(&h.key_share) else {
            self.restart(config, rng);
            return Err(DropReason::DecryptFailed);
        };
        let master = match &psk {
            Some(psk) => Master::derive_resumed(&shared, psk, &th),
            None => Master::derive(&shared, &th),
        };
        let secrets = master.secrets(suite);
        let Ok(plain) = secrets.s2c.open(0, u64::from(h.pn), scratch, p.header_len) else {
            // Not from the server that holds our INITIAL's transcript.
            self.restart(config, rng);
            return Err(DropReason::DecryptFailed);
        };
        let Ok(frames) = FrameList::parse(plain) else { return Err(DropReason::Malformed) };
        let mut params = None;
        let mut cookie: &[u8] = &[];
        for f in frames.iter() {
            match f {
                Frame::TransportParams(tp) => params = TransportParams::parse(tp).ok(),
                Frame::Cookie(c) => cookie = c,
                _ => {}
            }
        }
        let (Some(params), false) = (params, cookie.is_empty()) else { return Err(DropReason::Malformed) };
        self.cookie = cookie.to_vec();
        let rtt_sample = (self.attempts == 1).then(|| now.saturating_sub(self.sent_at));
        let early_accepted = params.early_data;
        Ok(Agreed {
            secrets,
            params,
            server_cid: h.scid,
            rtt_sample,
            resumed: psk.is_some(),
            early_accepted,
            server_key,
        })
    }

    fn restart(&mut self, config: &Config, rng: &mut Rng) {
        if let Ok(fresh) = rng.key_share() {
            // A new original DCID too: a server that made a connection at the old INITIAL (its
            // 0-RTT data, §4.9) would take the new one for its repeat.
            self.odcid = self.original_dcid(rng);
            self.build_initial(config, &fresh, &[]);
            self.retried = false;
            self.prior = None;
            self.share = Some(fresh);
            self.send_now = true;
        }
    }
}

/// The server's long-lived secrets for stateless answers.
#[derive(Debug)]
pub struct ServerKeys {
    pub cookie: CookieKey,
    pub retry: RetryTokenKey,
}

impl ServerKeys {
    pub fn new(rng: &mut Rng) -> Result<Self, crypto::CryptoError> {
        Ok(Self { cookie: CookieKey::from_bytes(1, &rng.key()?), retry: RetryTokenKey::from_bytes(&rng.key()?) })
    }

    /// A fleet's: every server derives the same keys from the fleet's secret (§2.1), so a
    /// RETRY token or a cookie one server issued opens on another.
    pub fn of_fleet(secret: &[u8; 32]) -> Self {
        Self {
            cookie: CookieKey::from_bytes(1, &crypto::fleet_key(secret, crypto::FleetKey::Cookie)),
            retry: RetryTokenKey::from_bytes(&crypto::fleet_key(secret, crypto::FleetKey::Retry)),
        }
    }
}

/// A ticket the server opened for a resuming INITIAL: its PSK, its suite, when it was issued.
#[derive(Clone, Copy)]
pub struct TakenTicket {
    pub psk: [u8; 32],
    pub suite: u8,
    pub issued_ms: u64,
    /// This server (of its fleet) issued it: only then is its 0-RTT data taken (§4.9).
    pub issued_here: bool,
}

/// What the server made of an INITIAL's resumption offer (§4.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resumption {
    /// The INITIAL offered no ticket.
    NotOffered,
    /// The ticket opened, its age and binder checked: the HANDSHAKE is keyed with its PSK.
    Taken,
    /// The ticket did not open here, was out of date or its binder was wrong: the full
    /// handshake answers (the client loses nothing but the saving).
    Declined,
}

/// The server's answer to an INITIAL: the datagram, and what it made of a ticket.
#[derive(Debug)]
pub struct Answer {
    pub datagram: Vec<u8>,
    pub resumption: Resumption,
    /// The 0-RTT data is taken (§4.9): the connection is made now, from this.
    pub early: Option<EarlyAnswer>,
}

/// What a server connection made at a 0-RTT INITIAL starts from (§4.9).
#[derive(Debug)]
pub struct EarlyAnswer {
    pub key: crate::crypto::PacketKey,
    pub secrets: Secrets,
    pub client_params: TransportParams,
    pub server_cid: Cid,
    pub client_cid: Cid,
    pub odcid: Cid,
}

/// Whether INITIAL `p` (from `remote`) carries a RETRY token this server issued to that address
/// for its DCID within the cookie lifetime (§4.5); `None` without a token. The caller decides
/// what a token that fails means (PROTOCOL.md §4.1, RETRY): the client's INITIAL carries the
/// token of the one RETRY it took on every path, and it names that path's address only.
pub fn retry_token_valid(
    now: Time,
    remote: SocketAddr,
    p: &Packet<'_>,
    config: &Config,
    keys: &ServerKeys,
) -> Option<bool> {
    let Header::Initial(i) = p.header else { return None };
    (!i.token.is_empty())
        .then(|| keys.retry.validate(i.token, ms(now), ms(config.server.cookie_lifetime), &remote, &i.dcid.0))
}

/// The server's stateless answer to an INITIAL (§4.1): a RETRY when `require_retry`, else a
/// HANDSHAKE whose cookie seals the connection's master secret, suite and the client's
/// parameters for this address (§4.4). `require_retry`: the caller found no address
/// validated (no valid token: [`retry_token_valid`]; no TCP carrier) and wants one; an INITIAL
/// with a token is never asked for another (the caller drops it). `cid_taken` and
/// `token_taken` tell which CIDs and tokens the endpoint already uses; a key whose token
/// collides is drawn again (§4.3).
/// `open_ticket` gives a ticket's PSK and suite if this server takes it with that obfuscated
/// age (§4.8); the binder is checked here. `admit_early` says whether the 0-RTT data of an
/// INITIAL with that binder may be taken (§4.9: the server's choice and its anti-replay
/// record); it is asked only of an INITIAL that announces early data and whose ticket was
/// taken.
#[allow(clippy::too_many_arguments)]
pub fn answer_initial(
    now: Time,
    remote: SocketAddr,
    p: &Packet<'_>,
    dgram: &[u8],
    config: &Config,
    keys: &mut ServerKeys,
    rng: &mut Rng,
    require_retry: bool,
    cid_taken: impl Fn(&Cid) -> bool,
    token_taken: impl Fn(u32) -> bool,
    open_ticket: impl Fn(&[u8], u32) -> Option<TakenTicket>,
    admit_early: impl FnOnce(&[u8; 32], u64) -> bool,
) -> Result<Answer, DropReason> {
    let Header::Initial(i) = p.header else { return Err(DropReason::Unexpected) };
    if dgram.len() < packet::MIN_INITIAL_SIZE {
        return Err(DropReason::Malformed);
    }
    if require_retry {
        // An INITIAL with 0-RTT data answered with a RETRY: its binder is recorded all the
        // same (its early data is never taken), so that a copy sent later, when no RETRY is
        // asked, is a replay (§4.9).
        if let Ok(params) = TransportParams::parse(i.params) {
            let _ = take_offer(&i, &params, &dgram[..p.header_len], open_ticket, admit_early);
        }
        let datagram = retry(now, remote, &i, keys, rng)?;
        return Ok(Answer { datagram, resumption: Resumption::NotOffered, early: None });
    }
    let params = TransportParams::parse(i.params).map_err(|_| DropReason::Malformed)?;
    let suite = params
        .suites()
        .iter()
        .filter_map(|&id| Suite::from_id(id).ok())
        .find(|s| config.transport.suites.contains(s))
        .ok_or(DropReason::Refused)?;
    let (psk, early_key, resumption) = take_offer(&i, &params, &dgram[..p.header_len], open_ticket, admit_early);
    let share = rng.key_share().map_err(|_| DropReason::Refused)?;
    let key_share = *share.public();
    let shared = share.agree(&i.key_share).map_err(|_| DropReason::Malformed)?;
    // Pick a server CID whose key gives a token unused here (§4.3) and, on a server spread
    // over cores or in a fleet, owned by this core of this server (`steering`): the CID is in TH, so each draw derives
    // another Key-S (a hash, not a key agreement).
    let routing = config.routing();
    let tries = 8 * routing.map_or(1, |s| u32::from(s.cores()) * u32::from(s.servers()));
    for _ in 0..tries {
        let mut scid = config.issue_cid(rng);
        while cid_taken(&scid) {
            scid = config.issue_cid(rng);
        }
        let mut hs = Handshake {
            version: packet::VERSION_2,
            dcid: i.scid,
            scid,
            key_share,
            suite: suite.id(),
            // The S bit is in TH: set before TH is taken, the signature filled in after. A
            // resumed HANDSHAKE has none: the PSK authenticates it (§4.8).
            signature: config
                .server
                .identity
                .as_ref()
                .filter(|_| psk.is_none())
                .map(|_| [0u8; identity::SIGNATURE_LEN]),
            // Likewise the PSK proof's place (the P bit is in TH).
            psk_proof: psk.map(|_| [0u8; packet::PSK_PROOF_LEN]),
            pn: 0,
        };
        let mut hbuf = [0u8; Handshake::MAX_LEN];
        hs.emit(&mut Writer::new(&mut hbuf)).map_err(|_| DropReason::Malformed)?;
        let transcript = transcript_hash(&dgram[..p.header_len], &hbuf[..Handshake::TRANSCRIPT_LEN]);
        let master = match &psk {
            Some(psk) => Master::derive_resumed(&shared, psk, &transcript),
            None => Master::derive(&shared, &transcript),
        };
        let secrets = master.secrets(suite);
        let token = crypto::token(secrets.key_server);
        if token_taken(token) || routing.is_some_and(|s| !s.owns_token(token)) {
            continue;
        }
        let cookie = seal_cookie(now, remote, keys, &master, suite, psk.is_some(), (&scid, &i.scid), i.params)?;
        // §4.6: the identity signs TH (the signature is outside TH, inside the AEAD's data);
        // §4.8: a resumed HANDSHAKE proves the PSK instead.
        if hs.signature.is_some() {
            hs.signature = config.server.identity.as_ref().map(|id| id.sign_transcript(&transcript));
        }
        hs.psk_proof = psk.map(|psk| crypto::psk_proof(&psk, &transcript));
        let mut server_params = config.transport_params();
        server_params.early_data = early_key.is_some();
        let out = seal_handshake(&hs, &server_params, &cookie, &secrets)?;
        // Anti-amplification (§10): the answer must stay within three INITIALs.
        if out.len() > 3 * dgram.len() {
            return Err(DropReason::Refused);
        }
        let early = early_key.map(|key| EarlyAnswer {
            key,
            secrets,
            client_params: params,
            server_cid: scid,
            client_cid: i.scid,
            odcid: i.dcid,
        });
        return Ok(Answer { datagram: out, resumption, early });
    }
    Err(DropReason::Refused)
}

/// The HANDSHAKE datagram: header `hs`, then the server's parameters and the cookie, sealed
/// with the s2c key for subflow 0, packet number 0 (§3.1).
fn seal_handshake(
    hs: &Handshake,
    params: &TransportParams,
    cookie: &[u8],
    secrets: &Secrets,
) -> Result<Vec<u8>, DropReason> {
    let mut sp = [0u8; 128];
    let spl = params.emit(&mut Writer::new(&mut sp)).map_err(|_| DropReason::Refused)?;
    let mut out = vec![0u8; Handshake::MAX_LEN + 256 + cookie.len()];
    let mut w = Writer::new(&mut out);
    let hl = hs.emit(&mut w).map_err(|_| DropReason::Refused)?;
    Frame::TransportParams(&sp[..spl]).emit(&mut w).map_err(|_| DropReason::Refused)?;
    Frame::Cookie(cookie).emit(&mut w).map_err(|_| DropReason::Refused)?;
    let pt = w.len() - hl;
    let n = secrets.s2c.seal(0, 0, &mut out, hl, pt).map_err(|_| DropReason::Refused)?;
    out.truncate(n);
    Ok(out)
}

/// A RETRY (§4.5) for INITIAL `i` from `remote`: its token, its integrity tag.
fn retry(
    now: Time,
    remote: SocketAddr,
    i: &Initial<'_>,
    keys: &ServerKeys,
    rng: &mut Rng,
) -> Result<Vec<u8>, DropReason> {
    let token = keys.retry.issue(ms(now), &remote, &i.dcid.0);
    let mut out = vec![0u8; 128];
    let mut w = Writer::new(&mut out);
    let r = Retry { version: packet::VERSION_2, dcid: i.scid, scid: rng.cid(), token: &token, tag: [0; 16] };
    let ul = r.emit_untagged(&mut w).map_err(|_| DropReason::Malformed)?;
    let tag = crypto::retry_integrity_tag(&i.dcid.0, w.written());
    w.bytes(&tag).map_err(|_| DropReason::Malformed)?;
    out.truncate(ul + tag.len());
    Ok(out)
}

/// What the server makes of INITIAL `i`'s resumption offer (`initial`: its bytes through the
/// binder): the ticket's PSK if taken (§4.8: it opens here, its age checks, and its binder
/// proves the client holds the PSK), the early key if its announced 0-RTT data is taken too
/// (§4.9: `admit_early`, the server's choice and its anti-replay record; the key of the
/// ticket's suite and this INITIAL), and how to count it.
fn take_offer(
    i: &Initial<'_>,
    params: &TransportParams,
    initial: &[u8],
    open_ticket: impl Fn(&[u8], u32) -> Option<TakenTicket>,
    admit_early: impl FnOnce(&[u8; 32], u64) -> bool,
) -> (Option<[u8; 32]>, Option<crate::crypto::PacketKey>, Resumption) {
    let Some(o) = i.resume else { return (None, None, Resumption::NotOffered) };
    let taken = open_ticket(o.ticket, o.obfuscated_age).filter(|t| {
        let binder = resumption_binder(&t.psk, &initial[..Initial::binder_offset(initial.len())]);
        ct_eq(&binder, &o.binder)
    });
    let Some(t) = taken else { return (None, None, Resumption::Declined) };
    let early = Suite::from_id(t.suite)
        .ok()
        .filter(|_| params.early_data && t.issued_here && admit_early(&o.binder, t.issued_ms))
        .map(|s| crypto::early_key(&t.psk, initial, s));
    (Some(t.psk), early, Resumption::Taken)
}

/// The cookie (§4.4): issued-at, client address, master, suite (its high bit: resumed, §4.8),
/// client params; sealed for the server and client CIDs `cids`.
#[allow(clippy::too_many_arguments)]
fn seal_cookie(
    now: Time,
    remote: SocketAddr,
    keys: &mut ServerKeys,
    master: &Master,
    suite: Suite,
    resumed: bool,
    cids: (&Cid, &Cid),
    client_params: &[u8],
) -> Result<Vec<u8>, DropReason> {
    let mut plain = Vec::with_capacity(96 + client_params.len());
    plain.extend_from_slice(&ms(now).to_be_bytes());
    let mut a = [0u8; 19];
    let al = encode_addr(&remote, &mut a);
    plain.extend_from_slice(&a[..al]);
    plain.extend_from_slice(&master.0);
    plain.push(suite.id() | if resumed { RESUMED_FLAG } else { 0 });
    plain.extend_from_slice(client_params);
    let aad = cookie_aad(cids.0, cids.1);
    let mut cookie = vec![0u8; plain.len() + crypto::COOKIE_OVERHEAD];
    let cl = keys.cookie.seal(&aad, &plain, &mut cookie).map_err(|_| DropReason::Refused)?;
    cookie.truncate(cl);
    Ok(cookie)
}

/// The cookie's suite byte, bit 7: the connection was resumed (§4.4, §4.8).
const RESUMED_FLAG: u8 = 0x80;

/// The cookie's associated data: version, server CID, client CID (§4.4).
fn cookie_aad(server_cid: &Cid, client_cid: &Cid) -> [u8; 20] {
    let mut aad = [0u8; 20];
    aad[..4].copy_from_slice(&packet::VERSION_2.to_be_bytes());
    aad[4..12].copy_from_slice(&server_cid.0);
    aad[12..].copy_from_slice(&client_cid.0);
    aad
}

/// What a cookie that opened holds.
#[derive(Debug)]
pub struct Accepted {
    pub master: Master,
    pub suite: Suite,
    pub client_params: TransportParams,
    /// The HANDSHAKE was keyed with a ticket's PSK (§4.8).
    pub resumed: bool,
}

/// Opens a CONFIRM's cookie (§4.4): it must authenticate under our key, name the address the
/// CONFIRM came from, and be within its lifetime.
pub fn open_cookie(
    now: Time,
    remote: SocketAddr,
    c: &Confirm<'_>,
    key: &CookieKey,
    config: &Config,
) -> Result<Accepted, DropReason> {
    let aad = cookie_aad(&c.dcid, &c.scid);
    let mut out = [0u8; 512];
    let plain = key.open(&aad, c.cookie, &mut out).map_err(|_| DropReason::BadCookie)?;
    let parsed = (|| {
        let issued = u64::from_be_bytes(plain.get(..8)?.try_into().ok()?);
        let alen = match plain.get(8)? {
            4 => 7,
            6 => 19,
            _ => return None,
        };
        let addr = plain.get(8..8 + alen)?;
        let at = 8 + alen;
        let master = Master(plain.get(at..at + 32)?.try_into().ok()?);
        let flagged = *plain.get(at + 32)?;
        let suite = Suite::from_id(flagged & !RESUMED_FLAG).ok()?;
        let params = TransportParams::parse(plain.get(at + 33..)?).ok()?;
        Some((issued, addr, master, (suite, flagged & RESUMED_FLAG != 0), params))
    })();
    let (issued, addr, master, (suite, resumed), client_params) = parsed.ok_or(DropReason::BadCookie)?;
    let mut a = [0u8; 19];
    let al = encode_addr(&remote, &mut a);
    let expired = ms(now).saturating_sub(issued) > ms(config.server.cookie_lifetime) || issued > ms(now) + 1;
    if &a[..al] != addr || expired {
        return Err(DropReason::BadCookie);
    }
    Ok(Accepted { master, suite, client_params, resumed })
}
