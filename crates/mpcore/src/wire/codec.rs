//! Bounds-checked byte reader and writer, and QUIC variable-length integers (PROTOCOL.md §1).
//!
//! Every accessor returns an error instead of panicking when the input ends or the output is
//! full, so parsers built on them cannot panic on any input.

use super::Error;

/// The largest value a varint can hold: 2^62 - 1.
pub const VARINT_MAX: u64 = (1 << 62) - 1;

/// Number of bytes the shortest varint encoding of `v` takes (1, 2, 4 or 8).
/// Values above [`VARINT_MAX`] report 8; [`Writer::varint`] rejects them.
#[inline]
pub const fn varint_len(v: u64) -> usize {
    if v < 1 << 6 {
        1
    } else if v < 1 << 14 {
        2
    } else if v < 1 << 30 {
        4
    } else {
        8
    }
}

/// A cursor over an input buffer.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// Starts reading at the beginning of `buf`.
    #[inline]
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// True when nothing is left.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// Takes `n` bytes.
    #[inline]
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], Error> {
        if n > self.remaining() {
            return Err(Error::Truncated);
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// Takes a fixed-size array.
    #[inline]
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], Error> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N)?);
        Ok(out)
    }

    /// Takes everything that is left.
    #[inline]
    pub fn rest(&mut self) -> &'a [u8] {
        let out = &self.buf[self.pos..];
        self.pos = self.buf.len();
        out
    }

    /// Looks at the next byte without taking it.
    #[inline]
    pub fn peek_u8(&self) -> Result<u8, Error> {
        self.buf.get(self.pos).copied().ok_or(Error::Truncated)
    }

    #[inline]
    pub fn u8(&mut self) -> Result<u8, Error> {
        let b = self.peek_u8()?;
        self.pos += 1;
        Ok(b)
    }

    #[inline]
    pub fn u16(&mut self) -> Result<u16, Error> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    #[inline]
    pub fn u32(&mut self) -> Result<u32, Error> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    #[inline]
    pub fn u64(&mut self) -> Result<u64, Error> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    /// Reads a QUIC varint (RFC 9000 §16).
    #[inline]
    pub fn varint(&mut self) -> Result<u64, Error> {
        let first = self.peek_u8()?;
        let len = 1usize << (first >> 6);
        let raw = self.bytes(len)?;
        let mut v = u64::from(first & 0x3f);
        for b in &raw[1..] {
            v = (v << 8) | u64::from(*b);
        }
        Ok(v)
    }

    /// Reads a varint that must fit a `usize` length and the bytes left.
    #[inline]
    pub fn length(&mut self) -> Result<usize, Error> {
        let v = self.varint()?;
        if v > self.remaining() as u64 {
            return Err(Error::Truncated);
        }
        Ok(v as usize)
    }

    /// Parses a view defined by another crate: `parse` gets everything left and returns the
    /// view and how many bytes it used.
    #[inline]
    pub fn view<T, E: Into<Error>>(
        &mut self,
        parse: impl FnOnce(&'a [u8]) -> Result<(T, usize), E>,
    ) -> Result<T, Error> {
        let (v, n) = parse(&self.buf[self.pos..]).map_err(Into::into)?;
        self.bytes(n)?;
        Ok(v)
    }

    /// Reads a varint length, then that many bytes.
    #[inline]
    pub fn length_prefixed(&mut self) -> Result<&'a [u8], Error> {
        let n = self.length()?;
        self.bytes(n)
    }
}

/// A cursor over an output buffer supplied by the caller.
#[derive(Debug)]
pub struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Writer<'a> {
    /// Starts writing at the beginning of `buf`.
    #[inline]
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    /// Bytes written so far.
    #[inline]
    pub fn len(&self) -> usize {
        self.pos
    }

    /// True when nothing was written.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pos == 0
    }

    /// Room left.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Everything written so far.
    #[inline]
    pub fn written(&self) -> &[u8] {
        &self.buf[..self.pos]
    }

    /// Mutable access to everything written so far (for sealing in place).
    #[inline]
    pub fn written_mut(&mut self) -> &mut [u8] {
        &mut self.buf[..self.pos]
    }

    /// Reserves `n` bytes and returns them for the caller to fill.
    #[inline]
    pub fn reserve(&mut self, n: usize) -> Result<&mut [u8], Error> {
        if n > self.remaining() {
            return Err(Error::BufferTooSmall);
        }
        let start = self.pos;
        self.pos += n;
        Ok(&mut self.buf[start..start + n])
    }

    #[inline]
    pub fn bytes(&mut self, data: &[u8]) -> Result<(), Error> {
        self.reserve(data.len())?.copy_from_slice(data);
        Ok(())
    }

    #[inline]
    pub fn u8(&mut self, v: u8) -> Result<(), Error> {
        self.bytes(&[v])
    }

    #[inline]
    pub fn u16(&mut self, v: u16) -> Result<(), Error> {
        self.bytes(&v.to_be_bytes())
    }

    #[inline]
    pub fn u32(&mut self, v: u32) -> Result<(), Error> {
        self.bytes(&v.to_be_bytes())
    }

    #[inline]
    pub fn u64(&mut self, v: u64) -> Result<(), Error> {
        self.bytes(&v.to_be_bytes())
    }

    /// Writes `v` as the shortest varint.
    #[inline]
    pub fn varint(&mut self, v: u64) -> Result<(), Error> {
        if v > VARINT_MAX {
            return Err(Error::ValueTooLarge);
        }
        match varint_len(v) {
            1 => self.u8(v as u8),
            2 => self.u16(v as u16 | 0x4000),
            4 => self.u32(v as u32 | 0x8000_0000),
            _ => self.u64(v | 0xc000_0000_0000_0000),
        }
    }

    /// Writes a varint length then the bytes.
    #[inline]
    pub fn length_prefixed(&mut self, data: &[u8]) -> Result<(), Error> {
        self.varint(data.len() as u64)?;
        self.bytes(data)
    }

    /// Writes a view defined by another crate: reserves `n` bytes and lets `emit` fill them.
    #[inline]
    pub fn view<E: Into<Error>>(
        &mut self,
        n: usize,
        emit: impl FnOnce(&mut [u8]) -> Result<usize, E>,
    ) -> Result<(), Error> {
        emit(self.reserve(n)?).map_err(Into::into)?;
        Ok(())
    }

    /// Writes `n` zero bytes.
    #[inline]
    pub fn zeros(&mut self, n: usize) -> Result<(), Error> {
        self.reserve(n)?.fill(0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn varint_rfc9000_examples() {
        // RFC 9000 Appendix A.1 examples.
        let cases: [(&[u8], u64); 4] = [
            (&[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c], 151_288_809_941_952_652),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
        ];
        for (bytes, value) in cases {
            assert_eq!(Reader::new(bytes).varint(), Ok(value));
            let mut buf = [0u8; 8];
            let mut w = Writer::new(&mut buf);
            w.varint(value).unwrap();
            assert_eq!(w.written(), bytes);
        }
        // A two-byte encoding of 37 is legal on input.
        assert_eq!(Reader::new(&[0x40, 0x25]).varint(), Ok(37));
    }

    #[test]
    fn varint_too_large_is_an_error() {
        let mut buf = [0u8; 8];
        assert_eq!(Writer::new(&mut buf).varint(VARINT_MAX + 1), Err(Error::ValueTooLarge));
    }

    #[test]
    fn writer_full_is_an_error() {
        let mut buf = [0u8; 3];
        let mut w = Writer::new(&mut buf);
        assert_eq!(w.u32(1), Err(Error::BufferTooSmall));
        assert_eq!(w.len(), 0, "a failed write writes nothing");
        w.u16(7).unwrap();
        assert_eq!(w.varint(1 << 20), Err(Error::BufferTooSmall));
    }

    proptest! {
        #[test]
        fn varint_round_trip(v in 0..=VARINT_MAX) {
            let mut buf = [0u8; 8];
            let mut w = Writer::new(&mut buf);
            w.varint(v).unwrap();
            prop_assert_eq!(w.len(), varint_len(v));
            let n = w.len();
            let mut r = Reader::new(&buf[..n]);
            prop_assert_eq!(r.varint(), Ok(v));
            prop_assert!(r.is_empty());
            // Every truncation fails cleanly.
            for cut in 0..n {
                prop_assert_eq!(Reader::new(&buf[..cut]).varint(), Err(Error::Truncated));
            }
        }
    }
}
