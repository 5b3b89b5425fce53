//! The server's identity (PROTOCOL.md §4.6, §12): a long-term Ed25519 key pair whose
//! signature over the handshake transcript hash lets a client that was given the public key
//! (an app ships it, as SSH's known hosts or WireGuard's peer keys) refuse a man in the middle.
//!
//! Key formats: a public key is its 32 bytes in standard base64 with padding (one 44-character
//! line, as WireGuard prints its keys); a private key is a PKCS#8 document in PEM ("-----BEGIN
//! PRIVATE KEY-----", as `openssl genpkey -algorithm ed25519` writes; version 1 and ring's
//! version 2 are both read, version 1 is written).

use crate::crypto::CryptoError;
use ring::signature::{self, Ed25519KeyPair, KeyPair};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// An Ed25519 public key's length.
pub const PUBLIC_KEY_LEN: usize = 32;
/// An Ed25519 signature's length.
pub const SIGNATURE_LEN: usize = 64;

/// What the server signs is this context string followed by the transcript hash TH (§4.2), as
/// TLS 1.3's CertificateVerify puts a context before its hash: a signature made for anything
/// else (another protocol, another version) never verifies here.
pub const SIGNATURE_CONTEXT: &[u8] = b"mpudp v1 server handshake signature\0";

/// The signed message: [`SIGNATURE_CONTEXT`] ‖ TH.
pub fn signed_message(th: &[u8; 32]) -> [u8; SIGNATURE_CONTEXT.len() + 32] {
    let mut m = [0u8; SIGNATURE_CONTEXT.len() + 32];
    m[..SIGNATURE_CONTEXT.len()].copy_from_slice(SIGNATURE_CONTEXT);
    m[SIGNATURE_CONTEXT.len()..].copy_from_slice(th);
    m
}

/// Why a key could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyError(pub &'static str);

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for KeyError {}

/// A server's Ed25519 public key.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PublicKey(pub [u8; PUBLIC_KEY_LEN]);

impl PublicKey {
    /// Whether `sig` is this key's signature of the transcript hash `th`.
    pub fn verifies(&self, th: &[u8; 32], sig: &[u8; SIGNATURE_LEN]) -> bool {
        signature::UnparsedPublicKey::new(&signature::ED25519, &self.0).verify(&signed_message(th), sig).is_ok()
    }
}

impl fmt::Display for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&base64::encode(&self.0))
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({self})")
    }
}

impl FromStr for PublicKey {
    type Err = KeyError;

    /// One base64 line of 32 bytes (surrounding white space ignored).
    fn from_str(s: &str) -> Result<Self, KeyError> {
        let bytes = base64::decode(s.trim())?;
        let key: [u8; PUBLIC_KEY_LEN] =
            bytes.try_into().map_err(|_| KeyError("a server key is 32 bytes (44 base64 characters)"))?;
        Ok(PublicKey(key))
    }
}

/// Whether `sig` verifies under one of `keys` (a client may accept several: key rotation).
pub fn verify_transcript(keys: &[PublicKey], th: &[u8; 32], sig: &[u8; SIGNATURE_LEN]) -> bool {
    keys.iter().any(|k| k.verifies(th, sig))
}

/// PKCS#8 v1 (RFC 8410 §7) of an Ed25519 private key: this prefix, then the 32-byte seed.
const PKCS8_V1_PREFIX: [u8; 16] =
    [0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20];
/// PKCS#8 v2 (RFC 5958; RFC 8410 §10.3, as ring writes it): this prefix, the seed, the
/// `[1] IMPLICIT BIT STRING` header, then the public key.
const PKCS8_V2_PREFIX: [u8; 16] =
    [0x30, 0x51, 0x02, 0x01, 0x01, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20];
const PKCS8_V2_MIDDLE: [u8; 3] = [0x81, 0x21, 0x00];
const PEM_BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
const PEM_END: &str = "-----END PRIVATE KEY-----";

/// A server's identity: an Ed25519 key pair. Cheap to clone (shared); its `Debug` shows only
/// the public key.
#[derive(Clone)]
pub struct ServerIdentity {
    pair: Arc<Ed25519KeyPair>,
    seed: Arc<[u8; 32]>,
}

impl fmt::Debug for ServerIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ServerIdentity({})", self.public_key())
    }
}

impl ServerIdentity {
    /// A new key pair from the system's randomness.
    pub fn generate() -> Result<Self, CryptoError> {
        let mut seed = [0u8; 32];
        crate::crypto::random_fill(&mut seed)?;
        Self::from_seed(&seed).map_err(|_| CryptoError::Rng)
    }

    /// The key pair of a 32-byte seed (RFC 8032's private key).
    pub fn from_seed(seed: &[u8; 32]) -> Result<Self, KeyError> {
        let pair = Ed25519KeyPair::from_seed_unchecked(seed).map_err(|_| KeyError("not an Ed25519 private key"))?;
        Ok(Self { pair: Arc::new(pair), seed: Arc::new(*seed) })
    }

    /// From a PKCS#8 document (version 1 or 2; a version 2 document's public key must match).
    pub fn from_pkcs8(der: &[u8]) -> Result<Self, KeyError> {
        let seed: [u8; 32] = match der.len() {
            48 if der[..16] == PKCS8_V1_PREFIX => der[16..].try_into().map_err(|_| KeyError("truncated key"))?,
            83 if der[..16] == PKCS8_V2_PREFIX && der[48..51] == PKCS8_V2_MIDDLE => {
                der[16..48].try_into().map_err(|_| KeyError("truncated key"))?
            }
            _ => return Err(KeyError("not an Ed25519 private key in PKCS#8")),
        };
        let id = Self::from_seed(&seed)?;
        if der.len() == 83 && der[51..] != id.public_key().0 {
            return Err(KeyError("the key file's public key does not match its private key"));
        }
        Ok(id)
    }

    /// From PEM text ("-----BEGIN PRIVATE KEY-----" ... "-----END PRIVATE KEY-----").
    pub fn from_pem(text: &str) -> Result<Self, KeyError> {
        let start = text.find(PEM_BEGIN).ok_or(KeyError("no \"-----BEGIN PRIVATE KEY-----\" line"))?;
        let body = &text[start + PEM_BEGIN.len()..];
        let end = body.find(PEM_END).ok_or(KeyError("no \"-----END PRIVATE KEY-----\" line"))?;
        let b64: String = body[..end].chars().filter(|c| !c.is_whitespace()).collect();
        Self::from_pkcs8(&base64::decode(&b64)?)
    }

    /// The private key as PEM (PKCS#8 version 1), for a file only its owner may read.
    pub fn to_pem(&self) -> String {
        let mut der = Vec::with_capacity(48);
        der.extend_from_slice(&PKCS8_V1_PREFIX);
        der.extend_from_slice(&self.seed[..]);
        format!("{PEM_BEGIN}\n{}\n{PEM_END}\n", base64::encode(&der))
    }

    /// The public key, what clients are given.
    pub fn public_key(&self) -> PublicKey {
        let mut k = [0u8; PUBLIC_KEY_LEN];
        k.copy_from_slice(self.pair.public_key().as_ref());
        PublicKey(k)
    }

    /// The signature of the transcript hash `th` (§4.6).
    pub fn sign_transcript(&self, th: &[u8; 32]) -> [u8; SIGNATURE_LEN] {
        let mut sig = [0u8; SIGNATURE_LEN];
        sig.copy_from_slice(self.pair.sign(&signed_message(th)).as_ref());
        sig
    }
}

/// Standard base64 (RFC 4648 §4) with padding: the keys' text form.
pub mod base64 {
    use super::KeyError;

    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

    /// Encodes `bytes` with padding.
    pub fn encode(bytes: &[u8]) -> String {
        let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
        for chunk in bytes.chunks(3) {
            let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
            let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
            for k in 0..4 {
                if k <= chunk.len() {
                    out.push(char::from(ALPHABET[(n >> (18 - 6 * k) & 63) as usize]));
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    fn value(c: u8) -> Option<u32> {
        ALPHABET.iter().position(|&a| a == c).map(|v| v as u32)
    }

    /// Decodes padded base64; anything else (a wrong length, a stray character, non-zero bits
    /// after the last byte) is an error.
    pub fn decode(s: &str) -> Result<Vec<u8>, KeyError> {
        let s = s.as_bytes();
        if !s.len().is_multiple_of(4) {
            return Err(KeyError("base64 text must be a multiple of 4 characters"));
        }
        let mut out = Vec::with_capacity(s.len() / 4 * 3);
        for (i, quad) in s.chunks(4).enumerate() {
            let last = i == s.len() / 4 - 1;
            let pad = quad.iter().rev().take_while(|&&c| c == b'=').count();
            if pad > 2 || (pad > 0 && !last) {
                return Err(KeyError("misplaced '=' in base64"));
            }
            let mut n = 0u32;
            for &c in &quad[..4 - pad] {
                n = n << 6 | value(c).ok_or(KeyError("a character that is not base64"))?;
            }
            n <<= 6 * pad as u32;
            let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
            if bytes[3 - pad..].iter().any(|&b| b != 0) {
                return Err(KeyError("non-canonical base64 (bits set after the last byte)"));
            }
            out.extend_from_slice(&bytes[..3 - pad]);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors_and_refuses_junk() {
        // RFC 4648 §10.
        for (plain, b64) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64::encode(plain.as_bytes()), b64);
            assert_eq!(base64::decode(b64).unwrap(), plain.as_bytes());
        }
        for bad in ["Zg=", "Zg===", "Z===", "Zm9v!A==", "Zh==", "Zg==Zm9v", "Zm=v"] {
            assert!(base64::decode(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rfc_8032_test_1_key_and_our_signature_input() {
        // RFC 8032 §7.1, TEST 1: the seed and its public key.
        let seed: [u8; 32] =
            hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60").try_into().unwrap();
        let id = ServerIdentity::from_seed(&seed).unwrap();
        assert_eq!(id.public_key().0.to_vec(), hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"));
        // And its signature of the empty message, to check we sign with RFC 8032's Ed25519.
        let pair = Ed25519KeyPair::from_seed_unchecked(&seed).unwrap();
        assert_eq!(
            pair.sign(b"").as_ref().to_vec(),
            hex("e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b")
        );
        // Our signature input: the context string, then TH.
        let th = [0xabu8; 32];
        let m = signed_message(&th);
        assert_eq!(&m[..36], b"mpudp v1 server handshake signature\0");
        assert_eq!(&m[36..], &th);
        let sig = id.sign_transcript(&th);
        assert_eq!(sig.to_vec(), pair.sign(&m).as_ref().to_vec(), "Ed25519 is deterministic");
        assert!(id.public_key().verifies(&th, &sig));
        let mut other = th;
        other[0] ^= 1;
        assert!(!id.public_key().verifies(&other, &sig));
    }

    /// The whole signature input, against an independent computation: TH by Python's hashlib
    /// (`sha256(b"INITIAL" + b"HANDSHAKE")`), the signature by `openssl pkeyutl -sign -rawin`
    /// over the context string and TH with RFC 8032's TEST 1 key.
    #[test]
    fn signature_known_answer_from_openssl() {
        let th = crate::crypto::transcript_hash(b"INITIAL", b"HANDSHAKE");
        assert_eq!(th.to_vec(), hex("104a99277bded47585be9ce9665820c8acc525c1b20ed37d3adcb80a0ba135f8"));
        let seed: [u8; 32] =
            hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60").try_into().unwrap();
        let id = ServerIdentity::from_seed(&seed).unwrap();
        let sig = id.sign_transcript(&th);
        assert_eq!(
            sig.to_vec(),
            hex("7c0b5f2a92d769635a1e42a25894de922ff0d448a6d1f2d457f6a6524119d62b087938f8a8e59f1bf02f9e262cedad6b6d8592544f4dc26373ab76501a67dd05")
        );
        assert!(verify_transcript(&[PublicKey([7; 32]), id.public_key()], &th, &sig), "any key of the list");
        assert!(!verify_transcript(&[PublicKey([7; 32])], &th, &sig));
    }

    #[test]
    fn keys_round_trip_through_their_text_forms() {
        let id = ServerIdentity::generate().unwrap();
        let pem = id.to_pem();
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----\n"));
        let back = ServerIdentity::from_pem(&pem).unwrap();
        assert_eq!(back.public_key(), id.public_key());
        let line = id.public_key().to_string();
        assert_eq!(line.len(), 44);
        assert_eq!(line.parse::<PublicKey>().unwrap(), id.public_key());
        assert!("AAAA".parse::<PublicKey>().is_err());
        // ring's PKCS#8 v2 reads too, and a v2 document whose public key was altered does not.
        let v2 = Ed25519KeyPair::generate_pkcs8(&ring::rand::SystemRandom::new()).unwrap();
        let from_v2 = ServerIdentity::from_pkcs8(v2.as_ref()).unwrap();
        let ring_pair = Ed25519KeyPair::from_pkcs8(v2.as_ref()).unwrap();
        assert_eq!(from_v2.public_key().0.as_slice(), ring_pair.public_key().as_ref());
        let mut bad = v2.as_ref().to_vec();
        bad[82] ^= 1;
        assert!(ServerIdentity::from_pkcs8(&bad).is_err());
        assert!(ServerIdentity::from_pem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----").is_err());
        // The PEM of a known seed, checked against an independent encoder (openssl's output
        // for this seed: `openssl pkey` prints the same three lines).
        let seed: [u8; 32] =
            hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60").try_into().unwrap();
        assert_eq!(
            ServerIdentity::from_seed(&seed).unwrap().to_pem(),
            "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ1hsZ3v/VpguoRK9JLsLMREScVpezJpGXA7rAMcrn9g\n-----END PRIVATE KEY-----\n"
        );
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }
}
