//! Frames of the protected payload (PROTOCOL.md §5).
//!
//! [`Frame`] is a borrowed view: data, cookies and parameter blocks point into the packet.
//! [`Frames`] iterates over a decrypted payload; [`Frame::emit`] writes one frame into a
//! caller buffer. Parsing validates every field once, so iterating an ACK's ranges afterwards
//! cannot fail.

use super::codec::{varint_len, Reader, Writer};
use super::new_ticket::{NewTicket, NEW_TICKET};
use super::packet::Cid;
use super::remove_subflow::{RemoveSubflow, REMOVE_SUBFLOW};
use super::Error;
use std::net::IpAddr;

/// Frame type numbers (PROTOCOL.md §5 table).
pub mod ty {
    pub const PADDING: u64 = 0x00;
    pub const PING: u64 = 0x01;
    pub const ACK: u64 = 0x02;
    pub const PATH_CHALLENGE: u64 = 0x03;
    pub const PATH_RESPONSE: u64 = 0x04;
    pub const DSS: u64 = 0x08;
    /// DSS's compact form: a mapping to the end of the payload with a short DSN (§5.5).
    pub const DATA: u64 = 0x09;
    pub const MP_JOIN: u64 = 0x10;
    pub const MP_JOIN_SYNACK: u64 = 0x11;
    pub const MP_JOIN_ACK: u64 = 0x12;
    pub use fastjoin::wire::ty::{FAST_JOIN_IN, FAST_JOIN_OUT, FAST_JOIN_REPLY};
    pub const ADD_ADDR: u64 = 0x18;
    pub const REMOVE_ADDR: u64 = 0x19;
    pub const MP_PRIO: u64 = 0x1a;
    pub const MP_FASTCLOSE: u64 = 0x1b;
    pub const SUBFLOW_RESET: u64 = 0x1c;
    pub const RTO: u64 = 0x1d;
    pub const RESET_TOKEN: u64 = 0x1e;
    pub const TRANSPORT_PARAMS: u64 = 0x30;
    pub const COOKIE: u64 = 0x31;
    pub const HANDSHAKE_DONE: u64 = 0x32;
    /// Types at or above this carry a length and may be skipped when unknown (§5).
    pub const EXTENSION_MIN: u64 = 0x40;
}

/// Most ACK ranges a receiver processes (PROTOCOL.md §10).
pub const MAX_ACK_RANGES: u64 = 256;

/// SUBFLOW_RESET / MP_FASTCLOSE reason codes (PROTOCOL.md §5.16; 0x00..0x06 from RFC 8684 §3.6).
pub mod reason {
    pub const UNSPECIFIED: u8 = 0x00;
    pub const MPTCP_ERROR: u8 = 0x01;
    pub const LACK_OF_RESOURCES: u8 = 0x02;
    pub const ADMIN_PROHIBITED: u8 = 0x03;
    pub const TOO_MUCH_OUTSTANDING: u8 = 0x04;
    pub const UNACCEPTABLE_PERFORMANCE: u8 = 0x05;
    pub const MIDDLEBOX_INTERFERENCE: u8 = 0x06;
    pub const GRACEFUL: u8 = 0x07;
    pub const FAST_JOIN_REJECTED: u8 = 0x08;
    pub const IDLE_TIMEOUT: u8 = 0x09;
    /// Local only, never sent: the server's STATELESS_RESET named the subflow (§3.4).
    pub const STATELESS_RESET: u8 = 0x0a;
}

/// An ACK frame (§5.3). Parsed ranges stay in wire form and are walked by [`Ack::ranges`].
///
/// Equality is semantic (same largest, delay and ranges), not byte-wise: a peer may encode a
/// varint in a longer form than needed, which is the same ACK.
#[derive(Debug, Clone, Copy)]
pub struct Ack<'a> {
    pub largest: u64,
    /// Microseconds.
    pub ack_delay: u64,
    first_range: u64,
    range_count: u64,
    /// The `range_count` (gap, length) pairs, already validated.
    tail: &'a [u8],
}

impl<'a> Ack<'a> {
    /// The acknowledged ranges, each `(smallest, largest)` inclusive, from the highest down.
    pub fn ranges(&self) -> AckRanges<'a> {
        AckRanges {
            next: Some((self.largest - self.first_range, self.largest)),
            reader: Reader::new(self.tail),
            left: self.range_count,
        }
    }

    /// Number of ranges (1 + the frame's range count).
    pub fn len(&self) -> usize {
        self.range_count as usize + 1
    }

    /// Never true: an ACK always holds its first range.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Writes an ACK for `ranges` (inclusive `(smallest, largest)`, strictly descending and
    /// separated by at least one missing packet). Fails on empty, unordered or touching ranges.
    pub fn emit<I>(w: &mut Writer<'_>, ack_delay: u64, ranges: I) -> Result<(), Error>
    where
        I: IntoIterator<Item = (u64, u64)>,
        I::IntoIter: Clone,
    {
        let iter = ranges.into_iter();
        let mut count = 0u64;
        let mut prev: Option<(u64, u64)> = None;
        for (lo, hi) in iter.clone() {
            if lo > hi {
                return Err(Error::Malformed("ack range lo > hi"));
            }
            if let Some((plo, _)) = prev {
                if hi.checked_add(2).is_none_or(|x| x > plo) {
                    return Err(Error::Malformed("ack ranges not descending with a gap"));
                }
            }
            prev = Some((lo, hi));
            count += 1;
        }
        if count == 0 {
            return Err(Error::Malformed("ack without ranges"));
        }
        let mut it = iter;
        let (lo, hi) = it.next().ok_or(Error::Malformed("ack without ranges"))?;
        w.varint(ty::ACK)?;
        w.varint(hi)?;
        w.varint(ack_delay)?;
        w.varint(count - 1)?;
        w.varint(hi - lo)?;
        let mut prev_lo = lo;
        for (lo, hi) in it {
            w.varint(prev_lo - hi - 2)?;
            w.varint(hi - lo)?;
            prev_lo = lo;
        }
        Ok(())
    }

    fn parse(r: &mut Reader<'a>) -> Result<Self, Error> {
        let largest = r.varint()?;
        let ack_delay = r.varint()?;
        let range_count = r.varint()?;
        if range_count > MAX_ACK_RANGES {
            return Err(Error::Malformed("too many ack ranges"));
        }
        let first_range = r.varint()?;
        let mut range = (largest.checked_sub(first_range).ok_or(Error::Malformed("ack range below zero"))?, largest);
        // Walk every range once so that the frame is known valid and `ranges()` cannot fail.
        let start = r.position();
        let mut probe = r.clone();
        for _ in 0..range_count {
            range = next_range(&mut probe, range.0)?;
        }
        let tail = r.bytes(probe.position() - start)?;
        Ok(Ack { largest, ack_delay, first_range, range_count, tail })
    }
}

/// Reads one `(gap, range length)` pair and returns the range it describes below the range
/// whose smallest packet number is `prev_smallest` (§5.3).
fn next_range(r: &mut Reader<'_>, prev_smallest: u64) -> Result<(u64, u64), Error> {
    let gap = r.varint()?;
    let len = r.varint()?;
    let below_zero = Error::Malformed("ack range below zero");
    let hi = prev_smallest.checked_sub(gap).and_then(|x| x.checked_sub(2)).ok_or(below_zero)?;
    Ok((hi.checked_sub(len).ok_or(below_zero)?, hi))
}

impl PartialEq for Ack<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.largest == other.largest
            && self.ack_delay == other.ack_delay
            && self.range_count == other.range_count
            && self.ranges().eq(other.ranges())
    }
}

impl Eq for Ack<'_> {}

/// Iterator over an [`Ack`]'s ranges.
#[derive(Debug, Clone)]
pub struct AckRanges<'a> {
    next: Option<(u64, u64)>,
    reader: Reader<'a>,
    left: u64,
}

impl Iterator for AckRanges<'_> {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        let cur = self.next.take()?;
        if self.left > 0 {
            self.left -= 1;
            // Validated at parse time; a failure here would only end the iteration.
            self.next = next_range(&mut self.reader, cur.0).ok();
        }
        Some(cur)
    }
}

/// DSS frame (§5.5): DATA_ACK and/or a mapping with its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dss<'a> {
    /// `(data ack, receive window)`.
    pub ack: Option<(u64, u64)>,
    /// `(dsn, data)`. With `short_dsn`, only the DSN's low 40 bits (as parsed): the receiver
    /// takes the DSN nearest to the one it expects ([`Dss::mapping_near`]).
    pub mapping: Option<(u64, &'a [u8])>,
    /// DATA_FIN after the mapping's data.
    pub fin: bool,
    /// MultiMob MP_IDLE.
    pub idle: bool,
    /// S: the mapping's DSN travels as its low 40 bits.
    pub short_dsn: bool,
    /// E: the mapping has no length field; its data runs to the end of the payload, so the
    /// frame is the packet's last.
    pub to_end: bool,
}

/// The header of a DSS mapping, for [`Dss::emit_header`]: the caller writes the data next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapHeader {
    pub dsn: u64,
    pub len: usize,
    /// Send the DSN's low 40 bits (S): only when every DSN the receiver may expect lies
    /// within 2^39 of `dsn` (the sender's unacknowledged data spans at most 2^39 bytes).
    pub short_dsn: bool,
    /// Leave out the length (E): the data ends the packet.
    pub to_end: bool,
}

impl<'a> Dss<'a> {
    pub const FLAG_ACK: u8 = 0x01;
    pub const FLAG_MAP: u8 = 0x02;
    pub const FLAG_FIN: u8 = 0x04;
    pub const FLAG_IDLE: u8 = 0x08;
    pub const FLAG_SHORT: u8 = 0x10;
    pub const FLAG_TO_END: u8 = 0x20;
    /// Bytes of a short DSN (S).
    pub const SHORT_DSN_LEN: usize = 5;

    /// A DATA_ACK alone.
    pub fn data_ack(ack: u64, window: u64) -> Self {
        Self { ack: Some((ack, window)), mapping: None, fin: false, idle: false, short_dsn: false, to_end: false }
    }

    /// A mapping with the full DSN and a length, and no DATA_ACK.
    pub fn data(dsn: u64, data: &'a [u8], fin: bool) -> Self {
        Self { ack: None, mapping: Some((dsn, data)), fin, idle: false, short_dsn: false, to_end: false }
    }

    /// The mapping with its full DSN: a short one (S) is taken as the DSN nearest to
    /// `expected` with those low 40 bits (RFC 9000 Appendix A.3's rule, over 40 bits and
    /// modulo 2^64 as DSNs are).
    pub fn mapping_near(&self, expected: u64) -> Option<(u64, &'a [u8])> {
        let (dsn, data) = self.mapping?;
        if !self.short_dsn {
            return Some((dsn, data));
        }
        // The difference modulo 2^40, sign-extended: within [-2^39, 2^39).
        let delta = ((dsn.wrapping_sub(expected) << 24) as i64) >> 24;
        Some((expected.wrapping_add(delta as u64), data))
    }

    /// Whether this header has the compact form (§5.5 DATA, 0x09): a mapping with a short
    /// DSN running to the payload's end, and nothing else.
    const fn compact(ack: Option<(u64, u64)>, mapping: Option<MapHeader>, fin: bool, idle: bool) -> bool {
        match mapping {
            Some(m) => ack.is_none() && !fin && !idle && m.short_dsn && m.to_end,
            None => false,
        }
    }

    /// Writes a DSS frame whose mapping data the caller writes next: type, flags, the
    /// DATA_ACK, then the mapping's DSN and length. The caller then reserves `len` bytes
    /// ([`Writer::reserve`]) and copies the data there, so no intermediate copy is made.
    pub fn emit_header(
        w: &mut Writer<'_>,
        ack: Option<(u64, u64)>,
        mapping: Option<MapHeader>,
        fin: bool,
        idle: bool,
    ) -> Result<(), Error> {
        if (fin || idle) && mapping.is_none() {
            return Err(Error::Malformed("DATA_FIN or MP_IDLE without mapping"));
        }
        if ack.is_none() && mapping.is_none() {
            return Err(Error::Malformed("empty DSS"));
        }
        if Self::compact(ack, mapping, fin, idle) {
            w.varint(ty::DATA)?;
            return short_dsn_emit(w, mapping.map_or(0, |m| m.dsn));
        }
        let flag = |on: bool, bit: u8| if on { bit } else { 0 };
        w.varint(ty::DSS)?;
        w.u8(flag(ack.is_some(), Self::FLAG_ACK)
            | flag(mapping.is_some(), Self::FLAG_MAP)
            | flag(fin, Self::FLAG_FIN)
            | flag(idle, Self::FLAG_IDLE)
            | flag(mapping.is_some_and(|m| m.short_dsn), Self::FLAG_SHORT)
            | flag(mapping.is_some_and(|m| m.to_end), Self::FLAG_TO_END))?;
        if let Some((a, wnd)) = ack {
            w.u64(a)?;
            w.varint(wnd)?;
        }
        if let Some(m) = mapping {
            if m.short_dsn {
                short_dsn_emit(w, m.dsn)?;
            } else {
                w.u64(m.dsn)?;
            }
            if !m.to_end {
                w.varint(m.len as u64)?;
            }
        }
        Ok(())
    }

    /// Bytes [`Dss::emit_header`] writes for these arguments.
    pub const fn header_len(ack: Option<(u64, u64)>, mapping: Option<MapHeader>) -> usize {
        if Self::compact(ack, mapping, false, false) {
            return 1 + Self::SHORT_DSN_LEN;
        }
        let ack_len = match ack {
            Some((_, wnd)) => 8 + varint_len(wnd),
            None => 0,
        };
        let map_len = match mapping {
            Some(m) => {
                (if m.short_dsn { Self::SHORT_DSN_LEN } else { 8 })
                    + if m.to_end { 0 } else { varint_len(m.len as u64) }
            }
            None => 0,
        };
        2 + ack_len + map_len
    }

    /// Bytes of DSS overhead (everything but the data) for a mapping of `len` bytes at most,
    /// with or without a DATA_ACK, with the full DSN and a length: the worst case.
    pub const fn overhead(with_ack: bool, len: usize) -> usize {
        1 + 1 + if with_ack { 8 + 8 } else { 0 } + 8 + varint_len(len as u64)
    }
}

/// A short DSN: its low 40 bits, big-endian.
fn short_dsn_emit(w: &mut Writer<'_>, dsn: u64) -> Result<(), Error> {
    w.bytes(&dsn.to_be_bytes()[8 - Dss::SHORT_DSN_LEN..])
}

fn short_dsn_parse(r: &mut Reader<'_>) -> Result<u64, Error> {
    let b: [u8; Dss::SHORT_DSN_LEN] = r.array()?;
    Ok(b.iter().fold(0, |acc, &x| acc << 8 | u64::from(x)))
}

/// A join-family flags byte: bit 0 is the backup flag everywhere.
const FLAG_BACKUP: u8 = 0x01;

/// MP_JOIN (§5.6), the join SYN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MpJoin {
    pub backup: bool,
    pub addr_id: u8,
    pub nonce: u32,
}

/// MP_JOIN_SYNACK (§5.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MpJoinSynAck {
    pub backup: bool,
    pub addr_id: u8,
    pub nonce: u32,
    pub hmac: [u8; 8],
    pub cid: Cid,
}

pub use fastjoin::wire::{FastJoinIn, FastJoinOut, FastJoinReply, ReplyValue};

/// ADD_ADDR (§5.12).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddAddr {
    pub addr_id: u8,
    pub ip: IpAddr,
    pub port: u16,
    /// `None` for an echo.
    pub hmac: Option<[u8; 8]>,
}

/// One frame, borrowed from the payload it was parsed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A run of `len` PADDING bytes (parsed as one frame).
    Padding {
        len: usize,
    },
    Ping,
    Ack(Ack<'a>),
    PathChallenge([u8; 8]),
    PathResponse([u8; 8]),
    Dss(Dss<'a>),
    MpJoin(MpJoin),
    MpJoinSynAck(MpJoinSynAck),
    MpJoinAck {
        hmac: [u8; 20],
    },
    FastJoinOut(FastJoinOut<'a>),
    FastJoinIn(FastJoinIn),
    FastJoinReply(FastJoinReply),
    AddAddr(AddAddr),
    /// Address ids (1..=255 of them).
    RemoveAddr(&'a [u8]),
    MpPrio {
        backup: bool,
    },
    FastClose {
        key: u64,
        reason: u8,
    },
    SubflowReset {
        transient: bool,
        reason: u8,
    },
    /// `request`: ask the peer's RTO; `rto_ms`: our RTO in milliseconds.
    Rto {
        request: bool,
        rto_ms: Option<u64>,
    },
    /// The stateless reset token of the CID the sender receives this subflow on (§5.20).
    ResetToken([u8; super::packet::RESET_TOKEN_LEN]),
    /// Raw transport parameters; see [`super::params::TransportParams::parse`].
    TransportParams(&'a [u8]),
    Cookie(&'a [u8]),
    HandshakeDone,
    /// The server's resumption ticket (type 0x40, an extension frame: PROTOCOL.md §5.19).
    NewTicket(NewTicket<'a>),
    /// Closes other subflows of the connection (type 0x41, an extension frame: §5.21).
    RemoveSubflow(RemoveSubflow<'a>),
    /// An extension frame (type > 0x40); unknown ones are skipped by the receiver.
    Extension {
        ty: u64,
        body: &'a [u8],
    },
}

fn ip_parse(r: &mut Reader<'_>) -> Result<IpAddr, Error> {
    match r.u8()? {
        4 => Ok(IpAddr::from(r.array::<4>()?)),
        6 => Ok(IpAddr::from(r.array::<16>()?)),
        _ => Err(Error::Malformed("ip version")),
    }
}

fn ip_emit(w: &mut Writer<'_>, ip: &IpAddr) -> Result<(), Error> {
    match ip {
        IpAddr::V4(a) => {
            w.u8(4)?;
            w.bytes(&a.octets())
        }
        IpAddr::V6(a) => {
            w.u8(6)?;
            w.bytes(&a.octets())
        }
    }
}

impl<'a> Frame<'a> {
    /// Parses one frame from `r`.
    pub fn parse(r: &mut Reader<'a>) -> Result<Self, Error> {
        let t = r.varint()?;
        Ok(match t {
            ty::PADDING => {
                let mut len = 1;
                while r.peek_u8() == Ok(0) {
                    r.u8()?;
                    len += 1;
                }
                Frame::Padding { len }
            }
            ty::PING => Frame::Ping,
            ty::ACK => Frame::Ack(Ack::parse(r)?),
            ty::PATH_CHALLENGE => Frame::PathChallenge(r.array()?),
            ty::PATH_RESPONSE => Frame::PathResponse(r.array()?),
            ty::DSS => {
                let flags = r.u8()?;
                if flags & 0xc0 != 0 {
                    return Err(Error::Malformed("DSS flags"));
                }
                let ack = if flags & Dss::FLAG_ACK != 0 { Some((r.u64()?, r.varint()?)) } else { None };
                let short_dsn = flags & Dss::FLAG_SHORT != 0;
                let to_end = flags & Dss::FLAG_TO_END != 0;
                let mapping = if flags & Dss::FLAG_MAP != 0 {
                    let dsn = if short_dsn { short_dsn_parse(r)? } else { r.u64()? };
                    Some((dsn, if to_end { r.rest() } else { r.length_prefixed()? }))
                } else {
                    None
                };
                let fin = flags & Dss::FLAG_FIN != 0;
                let idle = flags & Dss::FLAG_IDLE != 0;
                if ack.is_none() && mapping.is_none() {
                    return Err(Error::Malformed("empty DSS"));
                }
                if (fin || idle || short_dsn || to_end) && mapping.is_none() {
                    return Err(Error::Malformed("DATA_FIN, MP_IDLE, S or E without mapping"));
                }
                Frame::Dss(Dss { ack, mapping, fin, idle, short_dsn, to_end })
            }
            ty::DATA => {
                let dsn = short_dsn_parse(r)?;
                let mapping = Some((dsn, r.rest()));
                Frame::Dss(Dss { ack: None, mapping, fin: false, idle: false, short_dsn: true, to_end: true })
            }
            ty::MP_JOIN => {
                let flags = r.u8()?;
                Frame::MpJoin(MpJoin { backup: flags & FLAG_BACKUP != 0, addr_id: r.u8()?, nonce: r.u32()? })
            }
            ty::MP_JOIN_SYNACK => {
                let flags = r.u8()?;
                Frame::MpJoinSynAck(MpJoinSynAck {
                    backup: flags & FLAG_BACKUP != 0,
                    addr_id: r.u8()?,
                    nonce: r.u32()?,
                    hmac: r.array()?,
                    cid: Cid(r.array()?),
                })
            }
            ty::MP_JOIN_ACK => Frame::MpJoinAck { hmac: r.array()? },
            // The fast-join frames are the `fastjoin` crate's views (§5.9 to §5.11).
            ty::FAST_JOIN_OUT => Frame::FastJoinOut(r.view(FastJoinOut::parse)?),
            ty::FAST_JOIN_IN => Frame::FastJoinIn(r.view(FastJoinIn::parse)?),
            ty::FAST_JOIN_REPLY => Frame::FastJoinReply(r.view(FastJoinReply::parse)?),
            ty::ADD_ADDR => {
                let flags = r.u8()?;
                let addr_id = r.u8()?;
                let ip = ip_parse(r)?;
                let port = r.u16()?;
                let hmac = if flags & 0x01 != 0 { None } else { Some(r.array()?) };
                Frame::AddAddr(AddAddr { addr_id, ip, port, hmac })
            }
            ty::REMOVE_ADDR => {
                let n = r.u8()?;
                if n == 0 {
                    return Err(Error::Malformed("REMOVE_ADDR without ids"));
                }
                Frame::RemoveAddr(r.bytes(n as usize)?)
            }
            ty::MP_PRIO => Frame::MpPrio { backup: r.u8()? & FLAG_BACKUP != 0 },
            ty::MP_FASTCLOSE => Frame::FastClose { key: r.u64()?, reason: r.u8()? },
            ty::SUBFLOW_RESET => {
                let flags = r.u8()?;
                Frame::SubflowReset { transient: flags & 0x01 != 0, reason: r.u8()? }
            }
            ty::RTO => {
                let flags = r.u8()?;
                let rto_ms = if flags & 0x02 != 0 { Some(r.varint()?) } else { None };
                Frame::Rto { request: flags & 0x01 != 0, rto_ms }
            }
            ty::RESET_TOKEN => Frame::ResetToken(r.array()?),
            ty::TRANSPORT_PARAMS => Frame::TransportParams(r.length_prefixed()?),
            ty::COOKIE => {
                let c = r.length_prefixed()?;
                if c.is_empty() {
                    return Err(Error::Malformed("empty cookie"));
                }
                Frame::Cookie(c)
            }
            ty::HANDSHAKE_DONE => Frame::HandshakeDone,
            NEW_TICKET => Frame::NewTicket(NewTicket::parse(r.length_prefixed()?)?),
            REMOVE_SUBFLOW => Frame::RemoveSubflow(RemoveSubflow::parse(r.length_prefixed()?)?),
            t if t >= ty::EXTENSION_MIN => Frame::Extension { ty: t, body: r.length_prefixed()? },
            t => return Err(Error::UnknownFrame(t)),
        })
    }

    /// The frame's type number.
    pub fn ty(&self) -> u64 {
        match self {
            Frame::Padding { .. } => ty::PADDING,
            Frame::Ping => ty::PING,
            Frame::Ack(_) => ty::ACK,
            Frame::PathChallenge(_) => ty::PATH_CHALLENGE,
            Frame::PathResponse(_) => ty::PATH_RESPONSE,
            Frame::Dss(_) => ty::DSS,
            Frame::MpJoin(_) => ty::MP_JOIN,
            Frame::MpJoinSynAck(_) => ty::MP_JOIN_SYNACK,
            Frame::MpJoinAck { .. } => ty::MP_JOIN_ACK,
            Frame::FastJoinOut(_) => ty::FAST_JOIN_OUT,
            Frame::FastJoinIn(_) => ty::FAST_JOIN_IN,
            Frame::FastJoinReply(_) => ty::FAST_JOIN_REPLY,
            Frame::AddAddr(_) => ty::ADD_ADDR,
            Frame::RemoveAddr(_) => ty::REMOVE_ADDR,
            Frame::MpPrio { .. } => ty::MP_PRIO,
            Frame::FastClose { .. } => ty::MP_FASTCLOSE,
            Frame::SubflowReset { .. } => ty::SUBFLOW_RESET,
            Frame::Rto { .. } => ty::RTO,
            Frame::ResetToken(_) => ty::RESET_TOKEN,
            Frame::TransportParams(_) => ty::TRANSPORT_PARAMS,
            Frame::Cookie(_) => ty::COOKIE,
            Frame::HandshakeDone => ty::HANDSHAKE_DONE,
            Frame::NewTicket(_) => NEW_TICKET,
            Frame::RemoveSubflow(_) => REMOVE_SUBFLOW,
            Frame::Extension { ty, .. } => *ty,
        }
    }

    /// Whether a packet carrying this frame must be acknowledged (PROTOCOL.md §5.1). A frame
    /// that only acknowledges or ends does not: PADDING, ACK, a DSS without a mapping (a
    /// DATA_ACK and window, which cannot carry DATA_FIN or MP_IDLE), SUBFLOW_RESET and
    /// MP_FASTCLOSE. Were a DATA_ACK eliciting, each side would acknowledge the other's
    /// acknowledgements forever and an idle connection would never go quiet.
    pub fn is_ack_eliciting(&self) -> bool {
        match self {
            Frame::Padding { .. } | Frame::Ack(_) | Frame::SubflowReset { .. } | Frame::FastClose { .. } => false,
            Frame::Dss(d) => d.mapping.is_some(),
            _ => true,
        }
    }

    /// Writes the frame. An [`Frame::Ack`] is re-emitted from its parsed ranges.
    /// On error the writer may hold a partial frame; callers discard the buffer.
    pub fn emit(&self, w: &mut Writer<'_>) -> Result<(), Error> {
        if let Frame::Ack(a) = self {
            return Ack::emit(w, a.ack_delay, a.ranges());
        }
        if let Frame::Padding { len } = self {
            if *len == 0 {
                return Err(Error::Malformed("zero-length padding"));
            }
            return w.zeros(*len);
        }
        if let Frame::Dss(d) = self {
            if (d.short_dsn || d.to_end) && d.mapping.is_none() {
                return Err(Error::Malformed("S or E without mapping"));
            }
            let map = d.mapping.map(|(dsn, data)| MapHeader {
                dsn,
                len: data.len(),
                short_dsn: d.short_dsn,
                to_end: d.to_end,
            });
            Dss::emit_header(w, d.ack, map, d.fin, d.idle)?;
            // The header carries the length, unless the data runs to the end.
            if let Some((_, data)) = d.mapping {
                w.bytes(data)?;
            }
            return Ok(());
        }
        w.varint(self.ty())?;
        match *self {
            Frame::Padding { .. } | Frame::Ack(_) | Frame::Ping | Frame::HandshakeDone => {}
            Frame::PathChallenge(d) | Frame::PathResponse(d) => w.bytes(&d)?,
            Frame::Dss(_) => unreachable!("DSS is written above"),
            Frame::MpJoin(j) => {
                w.u8(u8::from(j.backup))?;
                w.u8(j.addr_id)?;
                w.u32(j.nonce)?;
            }
            Frame::MpJoinSynAck(j) => {
                w.u8(u8::from(j.backup))?;
                w.u8(j.addr_id)?;
                w.u32(j.nonce)?;
                w.bytes(&j.hmac)?;
                w.bytes(&j.cid.0)?;
            }
            Frame::MpJoinAck { hmac } => w.bytes(&hmac)?,
            Frame::FastJoinOut(j) => w.view(j.wire_len(), |out| j.emit(out))?,
            Frame::FastJoinIn(j) => w.view(FastJoinIn::LEN, |out| j.emit(out))?,
            Frame::FastJoinReply(j) => w.view(FastJoinReply::LEN, |out| j.emit(out))?,
            Frame::AddAddr(a) => {
                w.u8(u8::from(a.hmac.is_none()))?;
                w.u8(a.addr_id)?;
                ip_emit(w, &a.ip)?;
                w.u16(a.port)?;
                if let Some(h) = a.hmac {
                    w.bytes(&h)?;
                }
            }
            Frame::RemoveAddr(ids) => {
                if ids.is_empty() || ids.len() > 255 {
                    return Err(Error::Malformed("REMOVE_ADDR needs 1..=255 ids"));
                }
                w.u8(ids.len() as u8)?;
                w.bytes(ids)?;
            }
            Frame::MpPrio { backup } => w.u8(u8::from(backup))?,
            Frame::FastClose { key, reason } => {
                w.u64(key)?;
                w.u8(reason)?;
            }
            Frame::SubflowReset { transient, reason } => {
                w.u8(u8::from(transient))?;
                w.u8(reason)?;
            }
            Frame::Rto { request, rto_ms } => {
                w.u8(u8::from(request) | if rto_ms.is_some() { 0x02 } else { 0 })?;
                if let Some(v) = rto_ms {
                    w.varint(v)?;
                }
            }
            Frame::ResetToken(t) => w.bytes(&t)?,
            Frame::TransportParams(p) => w.length_prefixed(p)?,
            Frame::Cookie(c) => {
                if c.is_empty() {
                    return Err(Error::Malformed("empty cookie"));
                }
                w.length_prefixed(c)?;
            }
            Frame::NewTicket(t) => {
                w.varint(t.body_len() as u64)?;
                t.emit(w)?;
            }
            Frame::RemoveSubflow(f) => {
                w.varint(f.body_len() as u64)?;
                f.emit(w)?;
            }
            Frame::Extension { ty, body } => {
                if ty < ty::EXTENSION_MIN {
                    return Err(Error::Malformed("extension type below 0x40"));
                }
                if ty == NEW_TICKET || ty == REMOVE_SUBFLOW {
                    // Its own frame: as an extension, what it carries would not parse back.
                    return Err(Error::Malformed("a known frame written as an extension"));
                }
                w.length_prefixed(body)?;
            }
        }
        Ok(())
    }
}

/// Iterator over the frames of a decrypted payload. After the first error it yields nothing.
#[derive(Debug, Clone)]
pub struct Frames<'a> {
    r: Reader<'a>,
    failed: bool,
}

impl<'a> Frames<'a> {
    pub fn new(payload: &'a [u8]) -> Self {
        Self { r: Reader::new(payload), failed: false }
    }

    /// Where the next frame starts in the payload.
    pub fn offset(&self) -> usize {
        self.r.position()
    }

    /// Checks the whole payload parses, without keeping anything. Receivers call this before
    /// acting on any frame, so that a malformed packet changes no state (PROTOCOL.md §1).
    pub fn validate(payload: &'a [u8]) -> Result<(), Error> {
        for f in Frames::new(payload) {
            f?;
        }
        Ok(())
    }
}

impl<'a> Iterator for Frames<'a> {
    type Item = Result<Frame<'a>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.r.is_empty() {
            return None;
        }
        let res = Frame::parse(&mut self.r);
        self.failed = res.is_err();
        Some(res)
    }
}
