//! A range of the stream, as a packet carries it.

/// A range of the stream carried by a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DataRef {
    /// Offset in the stream (see `conn::dsn`).
    pub off: u64,
    pub len: u32,
    pub fin: bool,
}
