//! Cryptography of PROTOCOL.md §4 and §9, all from `ring`.
//!
//! - [`KeyShare`]: X25519 key agreement (§4.1).
//! - [`Master`] and [`Secrets`]: the HKDF-SHA256 key schedule (§4.2).
//! - [`token`] and [`idsn`]: RFC 8684 §3.1's derivations from a 64-bit key (§4.3).
//! - [`join_synack_hmac`], [`join_ack_hmac`], [`add_addr_hmac`]: the HMACs of MP_JOIN and
//!   ADD_ADDR (§5.7, §5.8, §5.12). FAST_JOIN's live in the `fastjoin` crate.
//! - [`PacketKey`]: AEAD sealing and opening with the never-repeating nonce of §9.2, and header
//!   protection (§9.3).
//! - [`CookieKey`], [`RetryTokenKey`], [`retry_integrity_tag`]: the stateless server (§4.4, §4.5).
//!
//! None of these allocate.

/// Constant-time equality, shared with the fast-join checks.
pub use fastjoin::auth::ct_eq;
use fastjoin::auth::key_pair as hmac_keys;
use ring::aead::{self, quic, Aad, LessSafeKey, Nonce, UnboundKey};
use ring::{agreement, digest, hkdf, hmac, rand};
use std::fmt;
use std::net::{IpAddr, SocketAddr};

/// Why a cryptographic operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CryptoError {
    /// The system random generator failed.
    Rng,
    /// The peer's key share is invalid or gives an all-zero secret.
    BadKeyShare,
    /// Authentication failed: forged, corrupted or wrongly keyed.
    Authentication,
    /// The buffer cannot hold the output (tag, sample, cookie).
    BufferTooSmall,
    /// A suite id we do not implement.
    UnknownSuite(u8),
    /// The 2^64 nonce counter of a cookie key is spent.
    Exhausted,
}

impl fmt::Display for CryptoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CryptoError::Rng => f.write_str("system random generator failed"),
            CryptoError::BadKeyShare => f.write_str("invalid X25519 key share"),
            CryptoError::Authentication => f.write_str("authentication failed"),
            CryptoError::BufferTooSmall => f.write_str("buffer too small"),
            CryptoError::UnknownSuite(s) => write!(f, "unknown AEAD suite {s:#x}"),
            CryptoError::Exhausted => f.write_str("nonce space exhausted"),
        }
    }
}

impl std::error::Error for CryptoError {}

/// AEAD tag length of both suites.
pub const TAG_LEN: usize = 16;
/// The AES block: a plaintext that is a whole number of them is sealed and opened without a
/// partial last block (`PacketBuilder::whole_blocks`).
pub const BLOCK_LEN: usize = 16;

/// AEAD suites (§8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Suite {
    /// ChaCha20-Poly1305 (RFC 8439).
    ChaCha20Poly1305 = 0x01,
    /// AES-128-GCM.
    Aes128Gcm = 0x02,
}

impl Suite {
    /// The suite of a wire id.
    pub fn from_id(id: u8) -> Result<Self, CryptoError> {
        match id {
            0x01 => Ok(Suite::ChaCha20Poly1305),
            0x02 => Ok(Suite::Aes128Gcm),
            other => Err(CryptoError::UnknownSuite(other)),
        }
    }

    /// Its wire id.
    pub fn id(self) -> u8 {
        self as u8
    }

    /// Key length Nk of §4.2.
    pub fn key_len(self) -> usize {
        match self {
            Suite::ChaCha20Poly1305 => 32,
            Suite::Aes128Gcm => 16,
        }
    }

    fn aead(self) -> &'static aead::Algorithm {
        match self {
            Suite::ChaCha20Poly1305 => &aead::CHACHA20_POLY1305,
            Suite::Aes128Gcm => &aead::AES_128_GCM,
        }
    }

    fn hp(self) -> &'static quic::Algorithm {
        match self {
            Suite::ChaCha20Poly1305 => &quic::CHACHA20,
            Suite::Aes128Gcm => &quic::AES_128,
        }
    }
}

/// A fresh 32-byte secret from the system's secure random generator.
fn random_key() -> Result<[u8; 32], CryptoError> {
    let mut k = [0u8; 32];
    random_fill(&mut k)?;
    Ok(k)
}

/// Fills `out` from the system's secure random generator.
pub fn random_fill(out: &mut [u8]) -> Result<(), CryptoError> {
    use rand::SecureRandom;
    rand::SystemRandom::new().fill(out).map_err(|_| CryptoError::Rng)
}

/// An ephemeral X25519 key pair (§4.1). It is consumed by [`KeyShare::agree`], so it is used once.
pub struct KeyShare {
    private: agreement::EphemeralPrivateKey,
    public: [u8; 32],
}

impl fmt::Debug for KeyShare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyShare").field("public", &Hex(&self.public)).finish_non_exhaustive()
    }
}

impl KeyShare {
    /// Generates a fresh key pair.
    pub fn generate() -> Result<Self, CryptoError> {
        Self::from_rng(&rand::SystemRandom::new())
    }

    fn from_rng(rng: &dyn rand::SecureRandom) -> Result<Self, CryptoError> {
        let private =
            agreement::EphemeralPrivateKey::generate(&agreement::X25519, rng).map_err(|_| CryptoError::Rng)?;
        let pk = private.compute_public_key().map_err(|_| CryptoError::Rng)?;
        let mut public = [0u8; 32];
        public.copy_from_slice(pk.as_ref());
        Ok(Self { private, public })
    }

    /// The key pair whose private key is `seed`: for a seeded generator only (see
    /// [`crate::rng`]). *ring* takes private keys from a random generator alone, and its
    /// generator trait is sealed; its fixed-value generator (a hidden, deprecated testing aid)
    /// hands it the seed instead.
    pub fn from_seed(seed: &[u8; 32]) -> Result<Self, CryptoError> {
        #[allow(deprecated)]
        Self::from_rng(&ring::test::rand::FixedSliceRandom { bytes: seed })
    }

    /// Our public key, sent in INITIAL or HANDSHAKE.
    pub fn public(&self) -> &[u8; 32] {
        &self.public
    }

    /// X25519 with the peer's public key. An all-zero result (low-order point) is refused (§4.2).
    pub fn agree(self, peer: &[u8; 32]) -> Result<[u8; 32], CryptoError> {
        let peer = agreement::UnparsedPublicKey::new(&agreement::X25519, peer);
        let shared = agreement::agree_ephemeral(self.private, &peer, |s| {
            let mut out = [0u8; 32];
            out.copy_from_slice(s);
            out
        })
        .map_err(|_| CryptoError::BadKeyShare)?;
        if shared.iter().all(|b| *b == 0) {
            return Err(CryptoError::BadKeyShare);
        }
        Ok(shared)
    }
}

/// TH of §4.2: SHA-256 over the INITIAL's and HANDSHAKE's transcript parts.
pub fn transcript_hash(initial_part: &[u8], handshake_part: &[u8]) -> [u8; 32] {
    let mut ctx = digest::Context::new(&digest::SHA256);
    ctx.update(initial_part);
    ctx.update(handshake_part);
    let mut out = [0u8; 32];
    out.copy_from_slice(ctx.finish().as_ref());
    out
}

/// The first part of a transcript (an INITIAL's), hashed once: [`transcript_hash`] of it and
/// any HANDSHAKE part. A client keeps the INITIAL a RETRY replaced this way (§4.5).
#[derive(Clone)]
pub struct TranscriptPrefix(digest::Context);

impl TranscriptPrefix {
    /// `initial_part`, hashed.
    pub fn new(initial_part: &[u8]) -> Self {
        let mut ctx = digest::Context::new(&digest::SHA256);
        ctx.update(initial_part);
        Self(ctx)
    }

    /// `transcript_hash(initial_part, handshake_part)`.
    pub fn hash(&self, handshake_part: &[u8]) -> [u8; 32] {
        let mut ctx = self.0.clone();
        ctx.update(handshake_part);
        let mut out = [0u8; 32];
        out.copy_from_slice(ctx.finish().as_ref());
        out
    }
}

impl fmt::Debug for TranscriptPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TranscriptPrefix")
    }
}

/// A resuming INITIAL's binder (§4.8): HMAC-SHA256 under
/// `HKDF-Expand(PSK, "mpudp1 binder", 32)` of SHA-256(every INITIAL byte before the binder).
/// Only a holder of the ticket's PSK computes it, and it binds the ticket to this INITIAL.
pub fn resumption_binder(psk: &[u8; 32], initial_before_binder: &[u8]) -> [u8; 32] {
    let prk = hkdf::Prk::new_less_safe(hkdf::HKDF_SHA256, psk);
    let mut k = [0u8; 32];
    expand(&prk, b"mpudp1 binder", &mut k);
    let h = digest::digest(&digest::SHA256, initial_before_binder);
    hmac_parts(&hmac::Key::new(hmac::HMAC_SHA256, &k), &[h.as_ref()])
}

/// A resuming client's early key (§4.9), for its 0-RTT data: from the ticket's PSK and the
/// INITIAL that offered it, `PRK = HKDF-Extract(salt = SHA-256(INITIAL from byte 0 through the
/// binder), IKM = PSK)`, then key, IV and header-protection key as in §4.2 with the labels
/// "mpudp1 early key", "mpudp1 early iv", "mpudp1 early hp". Each INITIAL (a RETRY's token
/// changes it) has its own key, so its EARLY packets' nonces never repeat under one key.
pub fn early_key(psk: &[u8; 32], initial_through_binder: &[u8], suite: Suite) -> PacketKey {
    let h = digest::digest(&digest::SHA256, initial_through_binder);
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, h.as_ref()).extract(psk);
    PacketKey::derive(&prk, suite, b"mpudp1 early key", b"mpudp1 early iv", b"mpudp1 early hp")
}

/// A resumed HANDSHAKE's proof of the PSK (§4.8), in place of a signature: HMAC-SHA256 under
/// `HKDF-Expand(PSK, "mpudp1 psk proof", 32)` of `"mpudp v1 server psk proof" ‖ 0x00 ‖ TH`.
/// The client checks it before it spends its key share, as it checks a signature (§4.6), so a
/// forged answer does not spend it.
pub fn psk_proof(psk: &[u8; 32], th: &[u8; 32]) -> [u8; 32] {
    let prk = hkdf::Prk::new_less_safe(hkdf::HKDF_SHA256, psk);
    let mut k = [0u8; 32];
    expand(&prk, b"mpudp1 psk proof", &mut k);
    hmac_parts(&hmac::Key::new(hmac::HMAC_SHA256, &k), &[b"mpudp v1 server psk proof\0", th])
}

struct Len(usize);

impl hkdf::KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

fn expand(prk: &hkdf::Prk, label: &[u8], out: &mut [u8]) {
    // The only failure of `expand` is a length above 255 * 32 bytes, which no label here asks.
    if let Ok(okm) = prk.expand(&[label], Len(out.len())) {
        let _ = okm.fill(out);
    }
}

/// The keys every server of a fleet derives alike from the fleet's secret (PROTOCOL.md §2.1),
/// each under its own label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FleetKey {
    /// The cookie key (§4.4).
    Cookie,
    /// The retry token key (§4.5).
    Retry,
    /// The ticket secret (§4.7), unless the resumption configuration names its own.
    Tickets,
    /// The stateless reset key (§3.4).
    Reset,
}

impl FleetKey {
    fn label(self) -> &'static [u8] {
        match self {
            FleetKey::Cookie => b"mpudp fleet cookie",
            FleetKey::Retry => b"mpudp fleet retry",
            FleetKey::Tickets => b"mpudp fleet tickets",
            FleetKey::Reset => b"mpudp fleet reset",
        }
    }
}

/// Key `which` of the fleet's `secret`: HKDF-Expand(HKDF-Extract(salt = none, secret), label),
/// 32 bytes.
pub fn fleet_key(secret: &[u8; 32], which: FleetKey) -> [u8; 32] {
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, &[]).extract(secret);
    let mut out = [0u8; 32];
    expand(&prk, which.label(), &mut out);
    out
}

/// The stateless reset token of CID `cid` (PROTOCOL.md §3.4): the first 16 bytes of
/// HMAC-SHA256(key = the fleet's reset key, msg = the CID's 8 bytes).
pub fn reset_token(key: &[u8; 32], cid: &[u8; 8]) -> [u8; 16] {
    let tag = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), cid);
    let mut out = [0u8; 16];
    out.copy_from_slice(&tag.as_ref()[..16]);
    out
}

/// The connection's master secret (§4.2). The server seals it into its cookie.
#[derive(Clone, PartialEq, Eq)]
pub struct Master(pub [u8; 32]);

impl fmt::Debug for Master {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Master(..)")
    }
}

impl Master {
    /// `master = HKDF-Expand(HKDF-Extract(TH, shared), "mpudp1 master", 32)`.
    pub fn derive(shared: &[u8; 32], th: &[u8; 32]) -> Self {
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, th).extract(shared);
        let mut m = [0u8; 32];
        expand(&prk, b"mpudp1 master", &mut m);
        Master(m)
    }

    /// A resumed connection's master (§4.8): the PSK joins the X25519 secret in the extract,
    /// `HKDF-Expand(HKDF-Extract(TH, shared ‖ PSK), "mpudp1 master", 32)`, so the connection
    /// has the fresh agreement's forward secrecy and the ticket's authentication.
    pub fn derive_resumed(shared: &[u8; 32], psk: &[u8; 32], th: &[u8; 32]) -> Self {
        let mut ikm = [0u8; 64];
        ikm[..32].copy_from_slice(shared);
        ikm[32..].copy_from_slice(psk);
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, th).extract(&ikm);
        let mut m = [0u8; 32];
        expand(&prk, b"mpudp1 master", &mut m);
        Master(m)
    }

    /// The resumption secret (§4.7): `HKDF-Expand(master, "mpudp1 resumption", 32)`. A
    /// ticket's PSK is derived from it (`ticket::psk`); it never travels.
    pub fn resumption(&self) -> [u8; 32] {
        let prk = hkdf::Prk::new_less_safe(hkdf::HKDF_SHA256, &self.0);
        let mut r = [0u8; 32];
        expand(&prk, b"mpudp1 resumption", &mut r);
        r
    }

    /// Every key of the connection (§4.2).
    pub fn secrets(&self, suite: Suite) -> Secrets {
        let prk = hkdf::Prk::new_less_safe(hkdf::HKDF_SHA256, &self.0);
        let mut kc = [0u8; 8];
        let mut ks = [0u8; 8];
        expand(&prk, b"mpudp1 key c", &mut kc);
        expand(&prk, b"mpudp1 key s", &mut ks);
        Secrets {
            resumption: self.resumption(),
            key_client: u64::from_be_bytes(kc),
            key_server: u64::from_be_bytes(ks),
            c2s: PacketKey::derive(&prk, suite, b"mpudp1 c2s key", b"mpudp1 c2s iv", b"mpudp1 c2s hp"),
            s2c: PacketKey::derive(&prk, suite, b"mpudp1 s2c key", b"mpudp1 s2c iv", b"mpudp1 s2c hp"),
        }
    }
}

/// The keys of one connection (its `Debug` shows none of them).
pub struct Secrets {
    /// The resumption secret (`Master::resumption`).
    pub resumption: [u8; 32],
    /// Key-C, the client's 64-bit MPTCP key.
    pub key_client: u64,
    /// Key-S, the server's.
    pub key_server: u64,
    /// Client-to-server packet keys.
    pub c2s: PacketKey,
    /// Server-to-client packet keys.
    pub s2c: PacketKey,
}

impl fmt::Debug for Secrets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secrets(..)")
    }
}

/// SHA-256 of `data`.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(digest::digest(&digest::SHA256, data).as_ref());
    out
}

fn sha256_key(key: u64) -> [u8; 32] {
    let mut out = [0u8; 32];
    out.copy_from_slice(digest::digest(&digest::SHA256, &key.to_be_bytes()).as_ref());
    out
}

/// RFC 8684 §3.1: "a 32-bit token ... the most significant 32 bits of the SHA-256 hash of the key".
pub fn token(key: u64) -> u32 {
    let h = sha256_key(key);
    u32::from_be_bytes([h[0], h[1], h[2], h[3]])
}

/// RFC 8684 §3.1: "the least significant 64 bits of the SHA-256 hash of the key" is the IDSN.
pub fn idsn(key: u64) -> u64 {
    let h = sha256_key(key);
    let mut b = [0u8; 8];
    b.copy_from_slice(&h[24..]);
    u64::from_be_bytes(b)
}

fn hmac_parts(key: &hmac::Key, parts: &[&[u8]]) -> [u8; 32] {
    let mut ctx = hmac::Context::with_key(key);
    for p in parts {
        ctx.update(p);
    }
    let mut out = [0u8; 32];
    out.copy_from_slice(ctx.sign().as_ref());
    out
}

/// MP_JOIN SYN/ACK (§5.7): "the leftmost 64 bits of HMAC-SHA256(Key-B‖Key-A, R-B‖R-A)".
pub fn join_synack_hmac(key_b: u64, key_a: u64, r_b: u32, r_a: u32) -> [u8; 8] {
    let h = hmac_parts(&hmac_keys(key_b, key_a), &[&r_b.to_be_bytes(), &r_a.to_be_bytes()]);
    let mut out = [0u8; 8];
    out.copy_from_slice(&h[..8]);
    out
}

/// MP_JOIN third ACK (§5.8): "the leftmost 160 bits of HMAC-SHA256(Key-A‖Key-B, R-A‖R-B)".
pub fn join_ack_hmac(key_a: u64, key_b: u64, r_a: u32, r_b: u32) -> [u8; 20] {
    let h = hmac_parts(&hmac_keys(key_a, key_b), &[&r_a.to_be_bytes(), &r_b.to_be_bytes()]);
    let mut out = [0u8; 20];
    out.copy_from_slice(&h[..20]);
    out
}

/// The address bytes of `ip` (4 or 16), copied into `buf`.
fn ip_octets(ip: IpAddr, buf: &mut [u8; 16]) -> &[u8] {
    match ip {
        IpAddr::V4(a) => {
            buf[..4].copy_from_slice(&a.octets());
            &buf[..4]
        }
        IpAddr::V6(a) => {
            *buf = a.octets();
            &buf[..]
        }
    }
}

/// ADD_ADDR (§5.12): "the rightmost 64 bits of HMAC-SHA256(Key-sender‖Key-receiver,
/// Address ID‖IP Address‖Port)" (RFC 8684 §3.4.1).
pub fn add_addr_hmac(key_sender: u64, key_receiver: u64, addr_id: u8, ip: IpAddr, port: u16) -> [u8; 8] {
    let mut buf = [0u8; 16];
    let h =
        hmac_parts(&hmac_keys(key_sender, key_receiver), &[&[addr_id], ip_octets(ip, &mut buf), &port.to_be_bytes()]);
    let mut out = [0u8; 8];
    out.copy_from_slice(&h[24..]);
    out
}

/// One direction's packet protection (§9): AEAD key, IV, header-protection key.
pub struct PacketKey {
    suite: Suite,
    key: LessSafeKey,
    iv: [u8; 12],
    hp: quic::HeaderProtectionKey,
    /// `Faults::no_encryption` (tests and benches only): packets go out in clear with a zero
    /// tag and no header protection, to measure what the protection costs.
    #[cfg(feature = "test-hooks")]
    clear: bool,
}

impl fmt::Debug for PacketKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PacketKey").field("suite", &self.suite).finish_non_exhaustive()
    }
}

impl PacketKey {
    fn derive(prk: &hkdf::Prk, suite: Suite, kl: &[u8], ivl: &[u8], hpl: &[u8]) -> Self {
        let nk = suite.key_len();
        let mut key = [0u8; 32];
        let mut iv = [0u8; 12];
        let mut hp = [0u8; 32];
        expand(prk, kl, &mut key[..nk]);
        expand(prk, ivl, &mut iv);
        expand(prk, hpl, &mut hp[..nk]);
        // Both constructors fail only on a key length other than the suite's Nk, which
        // `key_len` gives by construction.
        let unbound = UnboundKey::new(suite.aead(), &key[..nk]).expect("AEAD key length is the suite's Nk");
        let hp = quic::HeaderProtectionKey::new(suite.hp(), &hp[..nk]).expect("HP key length is the suite's Nk");
        Self {
            suite,
            key: LessSafeKey::new(unbound),
            iv,
            hp,
            #[cfg(feature = "test-hooks")]
            clear: false,
        }
    }

    /// This key, protecting nothing (`Faults::no_encryption`): both ends must do the same.
    #[cfg(feature = "test-hooks")]
    pub(crate) fn in_clear(self) -> Self {
        Self { clear: true, ..self }
    }

    /// Whether this key protects nothing (never outside the `test-hooks` feature).
    #[inline]
    fn clear(&self) -> bool {
        #[cfg(feature = "test-hooks")]
        return self.clear;
        #[cfg(not(feature = "test-hooks"))]
        return false;
    }

    /// Its AEAD suite.
    pub fn suite(&self) -> Suite {
        self.suite
    }

    /// §9.2: `IV XOR (subflow number (4) ‖ packet number (8))`.
    pub fn nonce(&self, subflow: u32, pn: u64) -> [u8; 12] {
        let mut n = self.iv;
        for (i, b) in subflow.to_be_bytes().iter().enumerate() {
            n[i] ^= b;
        }
        for (i, b) in pn.to_be_bytes().iter().enumerate() {
            n[4 + i] ^= b;
        }
        n
    }

    /// Seals `packet[header_len..header_len + plaintext_len]` in place, with the header as
    /// associated data, and writes the tag after it. Returns the packet's total length.
    pub fn seal(
        &self,
        subflow: u32,
        pn: u64,
        packet: &mut [u8],
        header_len: usize,
        plaintext_len: usize,
    ) -> Result<usize, CryptoError> {
        let end = header_len + plaintext_len;
        if packet.len() < end + TAG_LEN {
            return Err(CryptoError::BufferTooSmall);
        }
        let (header, rest) = packet.split_at_mut(header_len);
        if self.clear() {
            rest[plaintext_len..plaintext_len + TAG_LEN].fill(0);
            return Ok(end + TAG_LEN);
        }
        let nonce = Nonce::assume_unique_for_key(self.nonce(subflow, pn));
        let tag = self
            .key
            .seal_in_place_separate_tag(nonce, Aad::from(&*header), &mut rest[..plaintext_len])
            .map_err(|_| CryptoError::BufferTooSmall)?;
        rest[plaintext_len..plaintext_len + TAG_LEN].copy_from_slice(tag.as_ref());
        Ok(end + TAG_LEN)
    }

    /// Opens `packet[header_len..]` (ciphertext and tag) in place; returns the plaintext.
    pub fn open<'a>(
        &self,
        subflow: u32,
        pn: u64,
        packet: &'a mut [u8],
        header_len: usize,
    ) -> Result<&'a mut [u8], CryptoError> {
        if packet.len() < header_len + TAG_LEN {
            return Err(CryptoError::Authentication);
        }
        let (header, rest) = packet.split_at_mut(header_len);
        if self.clear() {
            let (plain, tag) = rest.split_at_mut(rest.len() - TAG_LEN);
            return if tag.iter().all(|&b| b == 0) { Ok(plain) } else { Err(CryptoError::Authentication) };
        }
        let nonce = Nonce::assume_unique_for_key(self.nonce(subflow, pn));
        self.key.open_in_place(nonce, Aad::from(&*header), rest).map_err(|_| CryptoError::Authentication)
    }

    fn mask(&self, packet: &[u8], pn_offset: usize) -> Result<[u8; 5], CryptoError> {
        let sample = packet.get(pn_offset + 4..pn_offset + 20).ok_or(CryptoError::BufferTooSmall)?;
        if self.clear() {
            return Ok([0; 5]);
        }
        self.hp.new_mask(sample).map_err(|_| CryptoError::BufferTooSmall)
    }

    /// Seals a short-header packet whose unprotected header (from
    /// [`crate::wire::packet::Short::emit`]) fills `packet[..header_len]`, then applies header
    /// protection (§9.3). `plaintext_len` must be at least `4 - pn_len` (pad with PADDING).
    pub fn seal_short(
        &self,
        subflow: u32,
        pn: u64,
        packet: &mut [u8],
        header_len: usize,
        plaintext_len: usize,
    ) -> Result<usize, CryptoError> {
        // The header's first byte says the packet number's length (still unprotected).
        let pn_len = usize::from(packet.first().ok_or(CryptoError::BufferTooSmall)? & 0x03) + 1;
        let pn_offset = header_len.checked_sub(pn_len).ok_or(CryptoError::BufferTooSmall)?;
        if pn_offset < 1 || pn_len + plaintext_len < 4 {
            return Err(CryptoError::BufferTooSmall);
        }
        let total = self.seal(subflow, pn, packet, header_len, plaintext_len)?;
        let mask = self.mask(&packet[..total], pn_offset)?;
        packet[0] ^= mask[0] & 0x1f;
        for i in 0..pn_len {
            packet[pn_offset + i] ^= mask[1 + i];
        }
        Ok(total)
    }

    /// Removes header protection from a received short-header packet in place and returns
    /// `(pn_len, truncated packet number)`. The caller then rebuilds the full packet number
    /// ([`crate::wire::packet::decode_pn`]) and calls [`PacketKey::open`] with
    /// `header_len = pn_offset + pn_len`, where `pn_offset` is
    /// [`crate::wire::packet::Short::pn_offset`] of the receiver's CID length.
    pub fn unprotect_short(&self, packet: &mut [u8], pn_offset: usize) -> Result<(usize, u64), CryptoError> {
        let mask = self.mask(packet, pn_offset)?;
        packet[0] ^= mask[0] & 0x1f;
        let pn_len = usize::from(packet[0] & 0x03) + 1;
        let mut pn = 0u64;
        for i in 0..pn_len {
            packet[pn_offset + i] ^= mask[1 + i];
            pn = (pn << 8) | u64::from(packet[pn_offset + i]);
        }
        Ok((pn_len, pn))
    }
}

/// §3.1: `RETRY_INTEGRITY_KEY`.
pub const RETRY_INTEGRITY_KEY: &[u8] = b"mpudp v1 retry integrity";

/// RETRY integrity tag (§3.1): first 16 bytes of HMAC-SHA256(RETRY_INTEGRITY_KEY,
/// original DCID ‖ the RETRY's bytes before the tag).
pub fn retry_integrity_tag(original_dcid: &[u8; 8], untagged: &[u8]) -> [u8; 16] {
    let key = hmac::Key::new(hmac::HMAC_SHA256, RETRY_INTEGRITY_KEY);
    let h = hmac_parts(&key, &[original_dcid, untagged]);
    let mut out = [0u8; 16];
    out.copy_from_slice(&h[..16]);
    out
}

/// Encodes a socket address as family (4 or 6) ‖ address ‖ port; returns the bytes used.
pub fn encode_addr(addr: &SocketAddr, out: &mut [u8; 19]) -> usize {
    let mut buf = [0u8; 16];
    let ip = ip_octets(addr.ip(), &mut buf);
    out[0] = if addr.is_ipv4() { 4 } else { 6 };
    out[1..1 + ip.len()].copy_from_slice(ip);
    out[1 + ip.len()..3 + ip.len()].copy_from_slice(&addr.port().to_be_bytes());
    3 + ip.len()
}

/// Issues and checks RETRY tokens (§4.5).
pub struct RetryTokenKey {
    key: hmac::Key,
}

impl fmt::Debug for RetryTokenKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RetryTokenKey(..)")
    }
}

/// Length of a retry token.
pub const RETRY_TOKEN_LEN: usize = 24;

impl RetryTokenKey {
    /// A key from the system's random generator.
    pub fn generate() -> Result<Self, CryptoError> {
        Ok(Self::from_bytes(&random_key()?))
    }

    /// A key of these bytes.
    pub fn from_bytes(k: &[u8; 32]) -> Self {
        Self { key: hmac::Key::new(hmac::HMAC_SHA256, k) }
    }

    fn mac(&self, issued_ms: u64, addr: &SocketAddr, odcid: &[u8; 8]) -> [u8; 32] {
        let mut a = [0u8; 19];
        let n = encode_addr(addr, &mut a);
        hmac_parts(&self.key, &[&issued_ms.to_be_bytes(), &a[..n], odcid])
    }

    /// `issued-at ms (8) ‖ first 16 bytes of HMAC(key, issued-at ‖ address ‖ original DCID)`.
    pub fn issue(&self, now_ms: u64, addr: &SocketAddr, odcid: &[u8; 8]) -> [u8; RETRY_TOKEN_LEN] {
        let mut t = [0u8; RETRY_TOKEN_LEN];
        t[..8].copy_from_slice(&now_ms.to_be_bytes());
        t[8..].copy_from_slice(&self.mac(now_ms, addr, odcid)[..16]);
        t
    }

    /// True if `token` was issued by us for this address and DCID within `lifetime_ms`.
    pub fn validate(&self, token: &[u8], now_ms: u64, lifetime_ms: u64, addr: &SocketAddr, odcid: &[u8; 8]) -> bool {
        if token.len() != RETRY_TOKEN_LEN {
            return false;
        }
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&token[..8]);
        let issued = u64::from_be_bytes(ts);
        let fresh = issued <= now_ms && now_ms - issued <= lifetime_ms;
        ct_eq(&self.mac(issued, addr, odcid)[..16], &token[8..]) && fresh
    }
}

/// Seals and opens the server's stateless cookies (§4.4) with ChaCha20-Poly1305 and a nonce
/// counter that never repeats under the key.
pub struct CookieKey {
    id: u8,
    key: LessSafeKey,
    counter: u64,
}

impl fmt::Debug for CookieKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CookieKey").field("id", &self.id).field("counter", &self.counter).finish_non_exhaustive()
    }
}

/// Cookie bytes beyond the plaintext: key id, counter, tag.
pub const COOKIE_OVERHEAD: usize = 1 + 8 + TAG_LEN;

impl CookieKey {
    /// A random key named `id`.
    pub fn generate(id: u8) -> Result<Self, CryptoError> {
        Ok(Self::from_bytes(id, &random_key()?))
    }

    /// A key named `id` of these bytes.
    pub fn from_bytes(id: u8, k: &[u8; 32]) -> Self {
        let unbound = UnboundKey::new(&aead::CHACHA20_POLY1305, k).expect("32-byte ChaCha20 key");
        Self { id, key: LessSafeKey::new(unbound), counter: 0 }
    }

    fn nonce(counter: u64) -> Nonce {
        let mut n = [0u8; 12];
        n[4..].copy_from_slice(&counter.to_be_bytes());
        Nonce::assume_unique_for_key(n)
    }

    /// Seals `plaintext` into `out` as `key id ‖ counter ‖ ciphertext ‖ tag`; returns its length.
    pub fn seal(&mut self, aad: &[u8], plaintext: &[u8], out: &mut [u8]) -> Result<usize, CryptoError> {
        let total = COOKIE_OVERHEAD + plaintext.len();
        if out.len() < total {
            return Err(CryptoError::BufferTooSmall);
        }
        let counter = self.counter;
        self.counter = self.counter.checked_add(1).ok_or(CryptoError::Exhausted)?;
        out[0] = self.id;
        out[1..9].copy_from_slice(&counter.to_be_bytes());
        let body = &mut out[9..9 + plaintext.len()];
        body.copy_from_slice(plaintext);
        let tag = self
            .key
            .seal_in_place_separate_tag(Self::nonce(counter), Aad::from(aad), body)
            .map_err(|_| CryptoError::BufferTooSmall)?;
        out[9 + plaintext.len()..total].copy_from_slice(tag.as_ref());
        Ok(total)
    }

    /// Opens a cookie into `out`; returns the plaintext.
    pub fn open<'o>(&self, aad: &[u8], cookie: &[u8], out: &'o mut [u8]) -> Result<&'o [u8], CryptoError> {
        if cookie.len() < COOKIE_OVERHEAD || cookie[0] != self.id {
            return Err(CryptoError::Authentication);
        }
        let n = cookie.len() - 9;
        if out.len() < n {
            return Err(CryptoError::BufferTooSmall);
        }
        let mut c = [0u8; 8];
        c.copy_from_slice(&cookie[1..9]);
        let buf = &mut out[..n];
        buf.copy_from_slice(&cookie[9..]);
        let pt = self
            .key
            .open_in_place(Self::nonce(u64::from_be_bytes(c)), Aad::from(aad), buf)
            .map_err(|_| CryptoError::Authentication)?;
        Ok(pt)
    }
}

struct Hex<'a>(&'a [u8]);

impl fmt::Debug for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}
