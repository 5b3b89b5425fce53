//! The wire format of docs/PROTOCOL.md: borrowed views for parsing, emitters that write into
//! caller buffers. Nothing here allocates or panics on any input.

pub mod codec;
pub mod frame;
pub mod frame_list;
pub mod new_ticket;
pub mod packet;
pub mod params;
pub mod remove_subflow;

pub use codec::{Reader, Writer};
pub use frame::{Ack, Dss, Frame, Frames, MapHeader};
pub use frame_list::FrameList;
pub use packet::{Cid, Header, Packet};
pub use params::TransportParams;

use std::fmt;

/// Why bytes could not be parsed, or a value could not be emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The input ended inside a field.
    Truncated,
    /// The output buffer is too small.
    BufferTooSmall,
    /// A value does not fit its field (a varint above 2^62 - 1).
    ValueTooLarge,
    /// A datagram longer than any UDP payload or the configured limit.
    Oversized,
    /// A frame type below 0x40 that this version does not define.
    UnknownFrame(u64),
    /// Fields that contradict each other or this specification.
    Malformed(&'static str),
}

impl From<fastjoin::WireError> for Error {
    fn from(e: fastjoin::WireError) -> Self {
        match e {
            fastjoin::WireError::Truncated => Error::Truncated,
            fastjoin::WireError::BufferTooSmall => Error::BufferTooSmall,
            fastjoin::WireError::TooLong => Error::ValueTooLarge,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated => f.write_str("packet truncated"),
            Error::BufferTooSmall => f.write_str("output buffer too small"),
            Error::ValueTooLarge => f.write_str("value too large for its field"),
            Error::Oversized => f.write_str("datagram too large"),
            Error::UnknownFrame(t) => write!(f, "unknown frame type {t:#x}"),
            Error::Malformed(why) => write!(f, "malformed: {why}"),
        }
    }
}

impl std::error::Error for Error {}
