//! Packet headers (PROTOCOL.md §3): parse a datagram into a [`Packet`] view, emit headers into
//! caller buffers. Payload protection lives in [`crate::crypto`].

use super::codec::{Reader, Writer};
use super::Error;
use std::fmt;

/// Version 2 of this protocol: version 1 with CIDs of 4 to 8 bytes (§2), the DSS frame's S and
/// E flags and its compact form DATA (§5.5). Version 1 (0x6d70_0001) receivers ignored the DSS
/// flags' high bits, so the two cannot be mixed.
pub const VERSION_2: u32 = 0x6d70_0002;
/// Versions this implementation speaks.
pub const SUPPORTED_VERSIONS: [u32; 1] = [VERSION_2];
/// An INITIAL datagram is at least this long (§3.1).
pub const MIN_INITIAL_SIZE: usize = 1200;
/// Default and minimum datagram payload (§10).
pub const DEFAULT_MAX_DATAGRAM: usize = 1200;
/// No UDP payload can exceed this.
pub const MAX_UDP_PAYLOAD: usize = 65_527;
/// X25519 public key size.
pub const KEY_SHARE_LEN: usize = 32;
/// AEAD tag size of every suite.
pub const TAG_LEN: usize = 16;
/// Retry integrity tag size.
pub const RETRY_TAG_LEN: usize = 16;

const FORM_LONG: u8 = 0x80;
const FIXED_BIT: u8 = 0x40;

/// A connection ID: 8 bytes chosen by the receiver of the packets that carry it (§2). A
/// receiver may issue shorter ones (`cid_len`, 4 to 8 bytes): the rest is zero, and short
/// headers carry only the first `cid_len` bytes (§3.2).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Cid(pub [u8; 8]);

impl Cid {
    pub const LEN: usize = 8;
    /// The shortest CID an endpoint may issue.
    pub const MIN_LEN: usize = 4;

    /// This CID with its bytes from `len` on zeroed (a CID of `len` bytes).
    pub fn truncated(mut self, len: usize) -> Self {
        for b in self.0.iter_mut().skip(len) {
            *b = 0;
        }
        self
    }
}

impl fmt::Debug for Cid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// Long header packet types (§3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum LongType {
    Initial = 0,
    Retry = 1,
    Handshake = 2,
    Confirm = 3,
    Join = 4,
    Early = 5,
    Reset = 6,
}

impl LongType {
    fn from_bits(b: u8) -> Result<Self, Error> {
        Ok(match b {
            0 => LongType::Initial,
            1 => LongType::Retry,
            2 => LongType::Handshake,
            3 => LongType::Confirm,
            4 => LongType::Join,
            5 => LongType::Early,
            6 => LongType::Reset,
            _ => return Err(Error::Malformed("reserved long packet type")),
        })
    }

    fn first_byte(self) -> u8 {
        FORM_LONG | FIXED_BIT | ((self as u8) << 3)
    }
}

/// INITIAL (§3.1), the client's first flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Initial<'a> {
    pub version: u32,
    pub dcid: Cid,
    pub scid: Cid,
    pub token: &'a [u8],
    pub key_share: [u8; KEY_SHARE_LEN],
    /// Raw transport parameters (§8).
    pub params: &'a [u8],
    /// A resumption offer (the `R` bit, §4.8).
    pub resume: Option<ResumeOffer<'a>>,
}

/// INITIAL's first byte, bit 0 (the `R` bit, §3.1): a resumption offer follows the parameters.
pub const RESUME_BIT: u8 = 0x01;

/// A binder's length: HMAC-SHA256 (§4.8).
pub const BINDER_LEN: usize = 32;

/// What a resuming INITIAL carries after its parameters (§4.8): the ticket, its obfuscated
/// age and the binder that proves the client holds the ticket's PSK.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResumeOffer<'a> {
    pub ticket: &'a [u8],
    pub obfuscated_age: u32,
    pub binder: [u8; BINDER_LEN],
}

impl Initial<'_> {
    /// Writes the packet up to the end of params, or of the resumption offer; returns that
    /// length (the transcript part, §4.2). The caller pads the datagram to
    /// [`MIN_INITIAL_SIZE`] with [`Writer::zeros`]. The binder covers every byte before it
    /// ([`Initial::binder_offset`]): the caller writes a zero binder, computes it, and
    /// writes it there.
    pub fn emit(&self, w: &mut Writer<'_>) -> Result<usize, Error> {
        let r = if self.resume.is_some() { RESUME_BIT } else { 0 };
        w.u8(LongType::Initial.first_byte() | r)?;
        w.u32(self.version)?;
        w.bytes(&self.dcid.0)?;
        w.bytes(&self.scid.0)?;
        w.length_prefixed(self.token)?;
        w.bytes(&self.key_share)?;
        w.length_prefixed(self.params)?;
        if let Some(o) = &self.resume {
            if o.ticket.is_empty() {
                return Err(Error::Malformed("empty ticket"));
            }
            w.length_prefixed(o.ticket)?;
            w.u32(o.obfuscated_age)?;
            w.bytes(&o.binder)?;
        }
        Ok(w.len())
    }

    /// Where the binder starts in a resuming INITIAL whose transcript part (the parsed
    /// header) is `header_len` bytes: it covers every byte before.
    pub fn binder_offset(header_len: usize) -> usize {
        header_len.saturating_sub(BINDER_LEN)
    }
}

/// RETRY (§3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry<'a> {
    pub version: u32,
    pub dcid: Cid,
    pub scid: Cid,
    pub token: &'a [u8],
    pub tag: [u8; RETRY_TAG_LEN],
}

impl Retry<'_> {
    /// Writes everything before the tag; returns its length. The caller computes the tag over
    /// those bytes ([`crate::crypto::retry_integrity_tag`]) and writes it.
    pub fn emit_untagged(&self, w: &mut Writer<'_>) -> Result<usize, Error> {
        if self.token.is_empty() {
            return Err(Error::Malformed("empty retry token"));
        }
        w.u8(LongType::Retry.first_byte())?;
        w.u32(self.version)?;
        w.bytes(&self.dcid.0)?;
        w.bytes(&self.scid.0)?;
        w.length_prefixed(self.token)?;
        Ok(w.len())
    }
}

/// HANDSHAKE header (§3.1); the sealed payload follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handshake {
    pub version: u32,
    pub dcid: Cid,
    pub scid: Cid,
    pub key_share: [u8; KEY_SHARE_LEN],
    pub suite: u8,
    /// The server's Ed25519 signature of the transcript hash (§4.6), if it has an identity.
    pub signature: Option<[u8; SIGNATURE_LEN]>,
    /// With the `P` bit (§4.8): the server took the INITIAL's ticket, the keys are derived
    /// from its PSK as well as the key shares, and this proof of the PSK (an HMAC of the
    /// transcript hash) stands where a signature would.
    pub psk_proof: Option<[u8; PSK_PROOF_LEN]>,
    pub pn: u32,
}

/// An Ed25519 signature's length.
pub const SIGNATURE_LEN: usize = 64;

/// HANDSHAKE's first byte, bit 0 (the `S` bit, §3.1): a signature follows the suite. The first
/// byte is in the transcript hash, so removing a signature changes the keys.
pub const SIGNED_BIT: u8 = 0x01;

/// HANDSHAKE's first byte, bit 1 (the `P` bit, §4.8): keyed with the ticket's PSK, a proof of
/// it follows the suite. Never with `S`.
pub const PSK_BIT: u8 = 0x02;

/// A PSK proof's length: HMAC-SHA256 (§4.8).
pub const PSK_PROOF_LEN: usize = 32;

impl Handshake {
    /// Offset of the byte after the suite: the end of the HANDSHAKE's transcript part (§4.2).
    pub const TRANSCRIPT_LEN: usize = 1 + 4 + 8 + 8 + KEY_SHARE_LEN + 1;
    /// The longest header (with a signature).
    pub const MAX_LEN: usize = Self::TRANSCRIPT_LEN + SIGNATURE_LEN + 4;

    /// Header length (the associated data).
    pub fn header_len(&self) -> usize {
        Self::TRANSCRIPT_LEN
            + self.signature.map_or(0, |_| SIGNATURE_LEN)
            + self.psk_proof.map_or(0, |_| PSK_PROOF_LEN)
            + 4
    }

    pub fn emit(&self, w: &mut Writer<'_>) -> Result<usize, Error> {
        let signed = if self.signature.is_some() { SIGNED_BIT } else { 0 };
        let psk = if self.psk_proof.is_some() { PSK_BIT } else { 0 };
        if signed != 0 && psk != 0 {
            return Err(Error::Malformed("signed and keyed with a PSK"));
        }
        w.u8(LongType::Handshake.first_byte() | signed | psk)?;
        w.u32(self.version)?;
        w.bytes(&self.dcid.0)?;
        w.bytes(&self.scid.0)?;
        w.bytes(&self.key_share)?;
        w.u8(self.suite)?;
        if let Some(sig) = &self.signature {
            w.bytes(sig)?;
        }
        if let Some(proof) = &self.psk_proof {
            w.bytes(proof)?;
        }
        w.u32(self.pn)?;
        Ok(w.len())
    }
}

/// CONFIRM header (§3.1); the sealed payload follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Confirm<'a> {
    pub version: u32,
    pub dcid: Cid,
    pub scid: Cid,
    pub cookie: &'a [u8],
    pub pn: u32,
}

impl Confirm<'_> {
    pub fn emit(&self, w: &mut Writer<'_>) -> Result<usize, Error> {
        if self.cookie.is_empty() {
            return Err(Error::Malformed("empty cookie"));
        }
        w.u8(LongType::Confirm.first_byte())?;
        w.u32(self.version)?;
        w.bytes(&self.dcid.0)?;
        w.bytes(&self.scid.0)?;
        w.length_prefixed(self.cookie)?;
        w.u32(self.pn)?;
        Ok(w.len())
    }
}

/// JOIN header (§3.1); the sealed payload follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Join {
    pub version: u32,
    /// The receiver's token.
    pub token: u32,
    pub scid: Cid,
    pub subflow: u32,
    pub pn: u32,
}

impl Join {
    /// Header length (the associated data).
    pub const LEN: usize = 1 + 4 + 4 + 8 + 4 + 4;

    pub fn emit(&self, w: &mut Writer<'_>) -> Result<usize, Error> {
        w.u8(LongType::Join.first_byte())?;
        w.u32(self.version)?;
        w.u32(self.token)?;
        w.bytes(&self.scid.0)?;
        w.u32(self.subflow)?;
        w.u32(self.pn)?;
        Ok(w.len())
    }
}

/// EARLY header (§3.1, §4.9): a resuming client's 0-RTT data on subflow 0, sent after its
/// INITIAL and sealed with the early key; the sealed payload follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Early {
    pub version: u32,
    /// The INITIAL's destination CID (the original DCID).
    pub dcid: Cid,
    /// The client's CID (the INITIAL's source CID).
    pub scid: Cid,
    pub pn: u32,
}

impl Early {
    /// Header length (the associated data).
    pub const LEN: usize = 1 + 4 + 8 + 8 + 4;

    pub fn emit(&self, w: &mut Writer<'_>) -> Result<usize, Error> {
        w.u8(LongType::Early.first_byte())?;
        w.u32(self.version)?;
        w.bytes(&self.dcid.0)?;
        w.bytes(&self.scid.0)?;
        w.u32(self.pn)?;
        Ok(w.len())
    }
}

/// STATELESS_RESET (§3.4): a server that does not know a short header's connection proves
/// that it may end it, with the token the connection's server gave for that CID.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reset {
    pub version: u32,
    pub token: [u8; RESET_TOKEN_LEN],
}

/// Bytes of a stateless reset token (§3.4).
pub const RESET_TOKEN_LEN: usize = 16;

impl Reset {
    /// The whole packet: smaller than any short-header packet that may trigger it.
    pub const LEN: usize = 1 + 4 + RESET_TOKEN_LEN;

    pub fn emit(&self, w: &mut Writer<'_>) -> Result<usize, Error> {
        w.u8(LongType::Reset.first_byte())?;
        w.u32(self.version)?;
        w.bytes(&self.token)?;
        Ok(w.len())
    }
}

/// Short header (§3.2) before header protection is removed: only the CID is readable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Short {
    pub dcid: Cid,
}

impl Short {
    /// Offset of the first packet-number byte when the receiver's CIDs are `cid_len` bytes.
    pub const fn pn_offset(cid_len: usize) -> usize {
        1 + cid_len
    }

    /// Writes an *unprotected* short header for packet number `pn`, encoded on `pn_len` bytes
    /// (1..=4), with the first `cid_len` bytes (the receiver's, 4..=8) of `dcid`; returns the
    /// header length. [`crate::crypto::PacketKey::seal_short`] protects it.
    pub fn emit(dcid: Cid, cid_len: usize, pn: u64, pn_len: usize, w: &mut Writer<'_>) -> Result<usize, Error> {
        if !(1..=4).contains(&pn_len) {
            return Err(Error::Malformed("packet number length"));
        }
        if !(Cid::MIN_LEN..=Cid::LEN).contains(&cid_len) {
            return Err(Error::Malformed("CID length"));
        }
        w.u8(FIXED_BIT | (pn_len as u8 - 1))?;
        w.bytes(&dcid.0[..cid_len])?;
        let bytes = pn.to_be_bytes();
        w.bytes(&bytes[8 - pn_len..])?;
        Ok(w.len())
    }
}

/// Any header (§3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Header<'a> {
    VersionNegotiation {
        dcid: Cid,
        scid: Cid,
        versions: &'a [u8],
    },
    /// A long header of a version we do not speak. `ids` holds `(dcid, scid)` when the packet
    /// is long enough to be an INITIAL of that version, so a VERSION_NEGOTIATION can answer it.
    UnsupportedVersion {
        version: u32,
        ids: Option<(Cid, Cid)>,
    },
    Initial(Initial<'a>),
    Retry(Retry<'a>),
    Handshake(Handshake),
    Confirm(Confirm<'a>),
    Join(Join),
    Early(Early),
    Reset(Reset),
    Short(Short),
}

/// A parsed datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    pub header: Header<'a>,
    /// Bytes of header: for sealed long headers the associated data; for INITIAL the
    /// transcript part; for RETRY the bytes the tag covers; for short headers the offset of
    /// the (protected) packet number.
    pub header_len: usize,
    /// What follows the header: ciphertext and tag for sealed packets, padding for INITIAL,
    /// the protected packet number and ciphertext for short headers.
    pub payload: &'a [u8],
}

fn cid(r: &mut Reader<'_>) -> Result<Cid, Error> {
    Ok(Cid(r.array()?))
}

impl<'a> Packet<'a> {
    /// Parses a datagram sent to an endpoint whose CIDs are `cid_len` bytes (4..=8; what
    /// its short headers carry). Never panics; every failure is an [`Error`].
    pub fn parse(datagram: &'a [u8], cid_len: usize) -> Result<Self, Error> {
        if datagram.len() > MAX_UDP_PAYLOAD {
            return Err(Error::Oversized);
        }
        let mut r = Reader::new(datagram);
        let first = r.u8()?;
        if first & FORM_LONG == 0 {
            if first & FIXED_BIT == 0 {
                return Err(Error::Malformed("fixed bit"));
            }
            if !(Cid::MIN_LEN..=Cid::LEN).contains(&cid_len) {
                return Err(Error::Malformed("CID length"));
            }
            let mut dcid = Cid::default();
            dcid.0[..cid_len].copy_from_slice(r.bytes(cid_len)?);
            let payload = r.rest();
            // Packet number (>= 1 byte) plus sample room for header protection (§9.3):
            // the shortest valid packet is pn (1) + 3 bytes of plaintext + tag.
            if payload.len() < 4 + TAG_LEN {
                return Err(Error::Truncated);
            }
            return Ok(Packet {
                header: Header::Short(Short { dcid }),
                header_len: Short::pn_offset(cid_len),
                payload,
            });
        }
        let version = r.u32()?;
        if version == 0 {
            let dcid = cid(&mut r)?;
            let scid = cid(&mut r)?;
            let versions = r.rest();
            if versions.is_empty() || !versions.len().is_multiple_of(4) {
                return Err(Error::Malformed("version list"));
            }
            return Ok(Packet {
                header: Header::VersionNegotiation { dcid, scid, versions },
                header_len: datagram.len(),
                payload: &[],
            });
        }
        if !SUPPORTED_VERSIONS.contains(&version) {
            let ids = match (cid(&mut r), cid(&mut r)) {
                (Ok(d), Ok(s)) => Some((d, s)),
                _ => None,
            };
            return Ok(Packet { header: Header::UnsupportedVersion { version, ids }, header_len: 5, payload: &[] });
        }
        let ty = LongType::from_bits((first >> 3) & 0x07)?;
        let header = match ty {
            LongType::Initial => {
                let dcid = cid(&mut r)?;
                let scid = cid(&mut r)?;
                let token = r.length_prefixed()?;
                let key_share = r.array()?;
                let params = r.length_prefixed()?;
                let resume = if first & RESUME_BIT != 0 {
                    let ticket = r.length_prefixed()?;
                    if ticket.is_empty() {
                        return Err(Error::Malformed("empty ticket"));
                    }
                    Some(ResumeOffer { ticket, obfuscated_age: r.u32()?, binder: r.array()? })
                } else {
                    None
                };
                Header::Initial(Initial { version, dcid, scid, token, key_share, params, resume })
            }
            LongType::Retry => {
                let dcid = cid(&mut r)?;
                let scid = cid(&mut r)?;
                let token = r.length_prefixed()?;
                if token.is_empty() {
                    return Err(Error::Malformed("empty retry token"));
                }
                let header_len = r.position();
                let tag = r.array()?;
                if !r.is_empty() {
                    return Err(Error::Malformed("bytes after retry tag"));
                }
                return Ok(Packet {
                    header: Header::Retry(Retry { version, dcid, scid, token, tag }),
                    header_len,
                    payload: &[],
                });
            }
            LongType::Handshake if first & (SIGNED_BIT | PSK_BIT) == SIGNED_BIT | PSK_BIT => {
                return Err(Error::Malformed("signed and keyed with a PSK"));
            }
            LongType::Handshake => Header::Handshake(Handshake {
                version,
                dcid: cid(&mut r)?,
                scid: cid(&mut r)?,
                key_share: r.array()?,
                suite: r.u8()?,
                signature: if first & SIGNED_BIT != 0 { Some(r.array()?) } else { None },
                psk_proof: if first & PSK_BIT != 0 { Some(r.array()?) } else { None },
                pn: r.u32()?,
            }),
            LongType::Confirm => {
                let dcid = cid(&mut r)?;
                let scid = cid(&mut r)?;
                let cookie = r.length_prefixed()?;
                if cookie.is_empty() {
                    return Err(Error::Malformed("empty cookie"));
                }
                Header::Confirm(Confirm { version, dcid, scid, cookie, pn: r.u32()? })
            }
            LongType::Join => {
                Header::Join(Join { version, token: r.u32()?, scid: cid(&mut r)?, subflow: r.u32()?, pn: r.u32()? })
            }
            LongType::Early => Header::Early(Early { version, dcid: cid(&mut r)?, scid: cid(&mut r)?, pn: r.u32()? }),
            LongType::Reset => Header::Reset(Reset { version, token: r.array()? }),
        };
        let header_len = r.position();
        let payload = r.rest();
        match header {
            Header::Initial(_) => {
                if datagram.len() < MIN_INITIAL_SIZE {
                    return Err(Error::Malformed("INITIAL below 1200 bytes"));
                }
            }
            Header::Reset(_) => {
                if !payload.is_empty() {
                    return Err(Error::Malformed("bytes after a STATELESS_RESET"));
                }
            }
            _ => {
                if payload.len() < TAG_LEN {
                    return Err(Error::Truncated);
                }
            }
        }
        Ok(Packet { header, header_len, payload })
    }
}

/// Writes a VERSION_NEGOTIATION packet (§3.1) answering an INITIAL with ids `(dcid, scid)`.
pub fn emit_version_negotiation(
    initial_dcid: Cid,
    initial_scid: Cid,
    versions: &[u32],
    w: &mut Writer<'_>,
) -> Result<usize, Error> {
    if versions.is_empty() {
        return Err(Error::Malformed("version list"));
    }
    w.u8(FORM_LONG | FIXED_BIT)?;
    w.u32(0)?;
    w.bytes(&initial_scid.0)?;
    w.bytes(&initial_dcid.0)?;
    for v in versions {
        w.u32(*v)?;
    }
    Ok(w.len())
}

/// Iterates the versions of a VERSION_NEGOTIATION list.
pub fn versions(list: &[u8]) -> impl Iterator<Item = u32> + '_ {
    list.chunks_exact(4).map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
}

/// Packet-number bytes a sender uses for `pn` when `largest_acked` is the largest packet the
/// peer acknowledged (RFC 9000 Appendix A.2): enough to cover twice the unacknowledged range.
pub fn pn_len(pn: u64, largest_acked: Option<u64>) -> usize {
    let unacked = match largest_acked {
        Some(la) => pn.saturating_sub(la),
        None => pn.saturating_add(1),
    };
    let bits = 64 - unacked.saturating_mul(2).leading_zeros() as usize + 1;
    bits.div_ceil(8).clamp(1, 4)
}

/// Reconstructs a full packet number from its `pn_len`-byte truncation, given the largest
/// packet number received so far on the subflow (RFC 9000 Appendix A.3).
pub fn decode_pn(largest: Option<u64>, truncated: u64, pn_len: usize) -> u64 {
    let expected = largest.map_or(0, |l| l.wrapping_add(1));
    let bits = 8 * pn_len as u32;
    let win = 1u64 << bits;
    let half = win / 2;
    let mask = win - 1;
    let candidate = (expected & !mask) | (truncated & mask);
    if candidate.wrapping_add(half) <= expected && candidate < (1u64 << 62) - win {
        candidate + win
    } else if candidate > expected.wrapping_add(half) && candidate >= win {
        candidate - win
    } else {
        candidate
    }
}
