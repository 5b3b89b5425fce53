//! The three fast-join frames as borrowed views (PROTOCOL.md §5.9 to §5.11).
//!
//! Each `parse` takes the bytes that follow the frame type and returns the frame and how many
//! bytes it used; each `emit` writes the frame body (without the type) into a caller buffer and
//! returns its length. Neither allocates nor panics, whatever the input.
//!
//! ```text
//! FAST_JOIN_OUT (0x13): flags (1) addr id (1) dsn (8)      HMAC (20) data length (2) data
//! FAST_JOIN_IN  (0x14): flags (1) addr id (1) data ack (8) HMAC (20)
//! FAST_JOIN_REPLY (0x15): flags (1) addr id (1) value (8)  HMAC (20) cid (8)
//! flags: bit 0 B (backup); in a reply bit 1 K (0: value is a data ack, 1: a dsn);
//!        other bits 0 when sent, ignored on receipt
//! ```

use crate::auth::HMAC_LEN;
use std::fmt;

/// Frame type numbers (PROTOCOL.md §5).
pub mod ty {
    pub const FAST_JOIN_OUT: u64 = 0x13;
    pub const FAST_JOIN_IN: u64 = 0x14;
    pub const FAST_JOIN_REPLY: u64 = 0x15;
}

const FLAG_BACKUP: u8 = 0x01;
const FLAG_DSN: u8 = 0x02;

/// Why a frame could not be parsed or written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// The input ends inside the frame.
    Truncated,
    /// The output buffer is too small.
    BufferTooSmall,
    /// More data than a 16-bit length can describe.
    TooLong,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WireError::Truncated => "fast-join frame truncated",
            WireError::BufferTooSmall => "buffer too small for the fast-join frame",
            WireError::TooLong => "fast-join data longer than 65535 bytes",
        })
    }
}

impl std::error::Error for WireError {}

/// The fixed part shared by the three frames: flags, address id, a 64-bit value, the HMAC.
const COMMON_LEN: usize = 1 + 1 + 8 + HMAC_LEN;

fn parse_common(buf: &[u8]) -> Result<(u8, u8, u64, [u8; HMAC_LEN]), WireError> {
    let b = buf.get(..COMMON_LEN).ok_or(WireError::Truncated)?;
    let mut value = [0u8; 8];
    value.copy_from_slice(&b[2..10]);
    let mut hmac = [0u8; HMAC_LEN];
    hmac.copy_from_slice(&b[10..COMMON_LEN]);
    Ok((b[0], b[1], u64::from_be_bytes(value), hmac))
}

fn emit_common(out: &mut [u8], flags: u8, addr_id: u8, value: u64, hmac: &[u8; HMAC_LEN]) {
    out[0] = flags;
    out[1] = addr_id;
    out[2..10].copy_from_slice(&value.to_be_bytes());
    out[10..COMMON_LEN].copy_from_slice(hmac);
}

/// FAST_JOIN_OUT: a join SYN that carries data (MultiMob FJO, §5.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastJoinOut<'a> {
    pub backup: bool,
    pub addr_id: u8,
    /// The DSN of the first byte of `data`.
    pub dsn: u64,
    pub hmac: [u8; HMAC_LEN],
    pub data: &'a [u8],
}

impl<'a> FastJoinOut<'a> {
    /// Bytes before the data.
    pub const HEADER_LEN: usize = COMMON_LEN + 2;

    pub fn parse(buf: &'a [u8]) -> Result<(Self, usize), WireError> {
        let (flags, addr_id, dsn, hmac) = parse_common(buf)?;
        let len = buf.get(COMMON_LEN..Self::HEADER_LEN).ok_or(WireError::Truncated)?;
        let end = Self::HEADER_LEN + usize::from(u16::from_be_bytes([len[0], len[1]]));
        let data = buf.get(Self::HEADER_LEN..end).ok_or(WireError::Truncated)?;
        Ok((Self { backup: flags & FLAG_BACKUP != 0, addr_id, dsn, hmac, data }, end))
    }

    /// Bytes [`emit`](Self::emit) writes.
    pub fn wire_len(&self) -> usize {
        Self::HEADER_LEN + self.data.len()
    }

    pub fn emit(&self, out: &mut [u8]) -> Result<usize, WireError> {
        let n = Self::emit_header(out, self.backup, self.addr_id, self.dsn, &self.hmac, self.data.len())?;
        let end = n + self.data.len();
        out.get_mut(n..end).ok_or(WireError::BufferTooSmall)?.copy_from_slice(self.data);
        Ok(end)
    }

    /// Writes everything but the data, for a sender that copies `data_len` bytes in place
    /// right after.
    pub fn emit_header(
        out: &mut [u8],
        backup: bool,
        addr_id: u8,
        dsn: u64,
        hmac: &[u8; HMAC_LEN],
        data_len: usize,
    ) -> Result<usize, WireError> {
        let len = u16::try_from(data_len).map_err(|_| WireError::TooLong)?;
        let out = out.get_mut(..Self::HEADER_LEN).ok_or(WireError::BufferTooSmall)?;
        emit_common(out, u8::from(backup), addr_id, dsn, hmac);
        out[COMMON_LEN..].copy_from_slice(&len.to_be_bytes());
        Ok(Self::HEADER_LEN)
    }
}

/// FAST_JOIN_IN: a fast join with nothing to send, carrying the initiator's DATA_ACK (§5.10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastJoinIn {
    pub backup: bool,
    pub addr_id: u8,
    pub data_ack: u64,
    pub hmac: [u8; HMAC_LEN],
}

impl FastJoinIn {
    pub const LEN: usize = COMMON_LEN;

    pub fn parse(buf: &[u8]) -> Result<(Self, usize), WireError> {
        let (flags, addr_id, data_ack, hmac) = parse_common(buf)?;
        Ok((Self { backup: flags & FLAG_BACKUP != 0, addr_id, data_ack, hmac }, Self::LEN))
    }

    pub fn emit(&self, out: &mut [u8]) -> Result<usize, WireError> {
        let out = out.get_mut(..Self::LEN).ok_or(WireError::BufferTooSmall)?;
        emit_common(out, u8::from(self.backup), self.addr_id, self.data_ack, &self.hmac);
        Ok(Self::LEN)
    }
}

/// What a FAST_JOIN_REPLY's value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyValue {
    /// The responder's DATA_ACK (the reply to a FAST_JOIN_OUT: it acknowledges the data).
    DataAck(u64),
    /// The DSN the responder sends from (the reply to a FAST_JOIN_IN).
    Dsn(u64),
}

/// FAST_JOIN_REPLY: the responder's answer, carrying the CID it receives the subflow on
/// (§5.11).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FastJoinReply {
    pub backup: bool,
    pub addr_id: u8,
    pub value: ReplyValue,
    pub hmac: [u8; HMAC_LEN],
    pub cid: [u8; 8],
}

impl FastJoinReply {
    pub const LEN: usize = COMMON_LEN + 8;

    pub fn parse(buf: &[u8]) -> Result<(Self, usize), WireError> {
        let (flags, addr_id, v, hmac) = parse_common(buf)?;
        let c = buf.get(COMMON_LEN..Self::LEN).ok_or(WireError::Truncated)?;
        let mut cid = [0u8; 8];
        cid.copy_from_slice(c);
        let value = if flags & FLAG_DSN != 0 { ReplyValue::Dsn(v) } else { ReplyValue::DataAck(v) };
        Ok((Self { backup: flags & FLAG_BACKUP != 0, addr_id, value, hmac, cid }, Self::LEN))
    }

    pub fn emit(&self, out: &mut [u8]) -> Result<usize, WireError> {
        let out = out.get_mut(..Self::LEN).ok_or(WireError::BufferTooSmall)?;
        let (k, v) = match self.value {
            ReplyValue::DataAck(v) => (0, v),
            ReplyValue::Dsn(v) => (FLAG_DSN, v),
        };
        emit_common(out, u8::from(self.backup) | k, self.addr_id, v, &self.hmac);
        out[COMMON_LEN..].copy_from_slice(&self.cid);
        Ok(Self::LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_round_trips_and_rejects_truncation() {
        let f = FastJoinOut { backup: true, addr_id: 3, dsn: u64::MAX - 1, hmac: [7; 20], data: b"hello" };
        let mut buf = [0u8; 64];
        let n = f.emit(&mut buf).unwrap();
        assert_eq!(n, f.wire_len());
        assert_eq!(FastJoinOut::parse(&buf[..n]).unwrap(), (f, n));
        for cut in 0..n {
            assert_eq!(FastJoinOut::parse(&buf[..cut]), Err(WireError::Truncated));
        }
        assert_eq!(f.emit(&mut buf[..n - 1]), Err(WireError::BufferTooSmall));
    }

    #[test]
    fn in_and_reply_round_trip() {
        let i = FastJoinIn { backup: false, addr_id: 1, data_ack: 99, hmac: [1; 20] };
        let mut buf = [0u8; 64];
        let n = i.emit(&mut buf).unwrap();
        assert_eq!(FastJoinIn::parse(&buf[..n]).unwrap(), (i, n));
        for value in [ReplyValue::DataAck(5), ReplyValue::Dsn(6)] {
            let r = FastJoinReply { backup: true, addr_id: 2, value, hmac: [2; 20], cid: [9; 8] };
            let n = r.emit(&mut buf).unwrap();
            assert_eq!(FastJoinReply::parse(&buf[..n]).unwrap(), (r, n));
            assert_eq!(FastJoinReply::parse(&buf[..n - 1]), Err(WireError::Truncated));
        }
    }

    #[test]
    fn unknown_flag_bits_are_ignored() {
        let mut buf = [0u8; FastJoinIn::LEN];
        buf[0] = 0xfe;
        let (f, _) = FastJoinIn::parse(&buf).unwrap();
        assert!(!f.backup);
    }
}
