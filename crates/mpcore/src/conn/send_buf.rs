//! The bytes the application wrote and the peer has not acknowledged at data level, by
//! offset in the stream. Two kinds of writes fill it:
//! - a copy (`write(&[u8])`, what `AsyncWrite` gives): into a ring that grows by doubling,
//!   from 4 KiB up to the send buffer's size, and is given back once everything written is
//!   acknowledged and the connection goes idle;
//! - a buffer the application hands over (`write_bytes(Bytes)`): kept as it is, by reference,
//!   until acknowledged, so its bytes are copied once, into the packet that seals them.
//!
//! While only copies are written the ring is the whole buffer, and the list of pieces stays
//! empty (it allocates nothing). The first buffer handed over starts the list: the ring's
//! bytes become its first piece, and every later write a piece of its own (or lengthens the
//! last ring piece). Acknowledgements take pieces off the front. A buffer handed over that is
//! shorter than 4 KiB is copied (its piece would cost more than the copy), which also bounds
//! the pieces.

use bytes::{Buf, Bytes};
use std::cell::Cell;
use std::collections::VecDeque;

/// The ring's first size.
pub(super) const MIN_BUF: usize = 4096;

/// A buffer handed over that is shorter than this is copied into the ring instead: its piece
/// (48 bytes) would cost more than the copy saves. This also bounds the pieces, whatever the
/// application writes: each kept buffer holds at least this much when taken, the buffer holds
/// at most its capacity, and only the front piece is ever cut short, so there are at most
/// `capacity / MIN_PIECE + 2` kept buffers and a ring piece between any two.
const MIN_PIECE: usize = 4096;

/// Where a piece's bytes are.
#[derive(Debug)]
enum Src {
    /// In the ring, from this ring position (counted since the ring began).
    Ring(u64),
    /// In the application's buffer.
    Owned(Bytes),
}

/// A run of the stream from one source.
#[derive(Debug)]
struct Piece {
    start: u64,
    len: usize,
    src: Src,
}

#[derive(Debug)]
pub(super) struct SendBuf {
    ring: VecDeque<u8>,
    /// Ring position of `ring[0]` (used once there are pieces).
    ring_una: u64,
    /// Empty: the ring holds exactly `[una, una + len)`.
    pieces: VecDeque<Piece>,
    /// The piece the last copy ended in (its index, moved down as pieces are taken off the
    /// front): copies go on in order, so the next one most often starts in that piece or the
    /// one after, found without a search.
    last: Cell<usize>,
    /// Bytes held in the application's buffers.
    owned: usize,
    /// Offset of the lowest unacknowledged byte.
    pub(super) una: u64,
    /// Bytes held.
    len: usize,
    capacity: usize,
}

impl SendBuf {
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            ring: VecDeque::new(),
            ring_una: 0,
            pieces: VecDeque::new(),
            last: Cell::new(0),
            owned: 0,
            una: 0,
            len: 0,
            capacity,
        }
    }

    pub(super) fn end(&self) -> u64 {
        self.una + self.len as u64
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn room(&self) -> usize {
        self.capacity - self.len
    }

    /// The memory the held bytes take: the ring's, and what the application's buffers hold
    /// for us (the pieces' list aside, `buffer_bytes`).
    pub(super) fn span(&self) -> usize {
        self.ring.capacity() + self.owned
    }

    /// Bytes of memory held, the list of pieces included.
    pub(super) fn buffer_bytes(&self) -> usize {
        self.span() + self.pieces.capacity() * std::mem::size_of::<Piece>()
    }

    /// Gives the memory back when nothing is held.
    pub(super) fn trim(&mut self) {
        if self.len == 0 {
            self.ring = VecDeque::new();
            self.pieces = VecDeque::new();
        }
    }

    /// Copies what fits of `data` in; returns the count.
    pub(super) fn write(&mut self, data: &[u8]) -> usize {
        let n = data.len().min(self.room());
        let need = self.ring.len() + n;
        if need > self.ring.capacity() {
            // Doubling from 4 KiB, never beyond the send buffer's size.
            let to = need.max(self.ring.capacity() * 2).max(MIN_BUF).min(self.capacity);
            self.ring.reserve_exact(to - self.ring.len());
        }
        let at = self.ring_una + self.ring.len() as u64;
        self.ring.extend(&data[..n]);
        if n > 0 && !self.pieces.is_empty() {
            match self.pieces.back_mut() {
                Some(Piece { len, src: Src::Ring(r), .. }) if *r + *len as u64 == at => *len += n,
                _ => self.pieces.push_back(Piece { start: self.end(), len: n, src: Src::Ring(at) }),
            }
        }
        self.len += n;
        n
    }

    /// Takes what fits of `data` by reference (split off its front); returns the count. A
    /// short one is copied (`MIN_PIECE`). A long one is cut only where the rest is a piece's
    /// worth too, and waits (0) for room for a piece: a short front or rest would be copied,
    /// and the first copy starts the ring, an allocation in the middle of a transfer of
    /// buffers handed over, whenever the room first runs short. Not in an empty buffer, nor in
    /// one so small that a writer woken at `write_space` (a third of it free) could find less
    /// room than that.
    pub(super) fn write_bytes(&mut self, data: &mut Bytes) -> usize {
        let mut n = data.len().min(self.room());
        if data.len() >= MIN_PIECE && self.len > 0 && self.capacity >= 6 * MIN_PIECE {
            if n < data.len() {
                n = n.min(data.len() - MIN_PIECE);
            }
            if n < MIN_PIECE {
                return 0;
            }
        }
        if n == 0 {
            return 0;
        }
        if n < MIN_PIECE {
            let n = self.write(&data[..n]);
            data.advance(n);
            return n;
        }
        if self.pieces.is_empty() && !self.ring.is_empty() {
            self.pieces.push_back(Piece { start: self.una, len: self.ring.len(), src: Src::Ring(self.ring_una) });
        }
        let piece = data.split_to(n);
        self.pieces.push_back(Piece { start: self.end(), len: n, src: Src::Owned(piece) });
        self.owned += n;
        self.len += n;
        n
    }

    /// Drops the bytes below `off`; returns how many were dropped.
    pub(super) fn ack(&mut self, off: u64) -> u64 {
        let n = off.saturating_sub(self.una);
        if n == 0 || n > self.len as u64 {
            return 0;
        }
        if self.pieces.is_empty() {
            self.ring.drain(..n as usize);
            self.ring_una += n;
        } else {
            let mut left = n as usize;
            while left > 0 {
                let Some(p) = self.pieces.front_mut() else { break };
                let k = left.min(p.len);
                match &mut p.src {
                    Src::Ring(r) => {
                        self.ring.drain(..k);
                        self.ring_una += k as u64;
                        *r += k as u64;
                    }
                    Src::Owned(b) => {
                        b.advance(k);
                        self.owned -= k;
                    }
                }
                p.start += k as u64;
                p.len -= k;
                if p.len == 0 {
                    self.pieces.pop_front();
                    self.last.set(self.last.get().saturating_sub(1));
                }
                left -= k;
            }
        }
        self.una = off;
        self.len -= n as usize;
        n
    }

    /// Copies `out.len()` bytes from offset `off`; false if the range is not held.
    pub(super) fn copy_out(&self, off: u64, out: &mut [u8]) -> bool {
        let Some(start) = off.checked_sub(self.una).map(|s| s as usize) else { return false };
        if start.checked_add(out.len()).is_none_or(|e| e > self.len) {
            return false;
        }
        if self.pieces.is_empty() {
            self.copy_ring(start, out);
            return true;
        }
        let mut i = self.find(off);
        let (mut at, mut done) = (off, 0);
        while done < out.len() {
            let Some(p) = self.pieces.get(i) else { return false };
            let within = (at - p.start) as usize;
            let k = (p.len - within).min(out.len() - done);
            match &p.src {
                Src::Ring(r) => self.copy_ring((r + within as u64 - self.ring_una) as usize, &mut out[done..done + k]),
                Src::Owned(b) => out[done..done + k].copy_from_slice(&b[within..within + k]),
            }
            done += k;
            at += k as u64;
            i += 1;
        }
        if i > 0 {
            self.last.set(i - 1);
        }
        true
    }

    /// The index of the piece that holds offset `off` (held).
    fn find(&self, off: u64) -> usize {
        let holds = |i: usize| self.pieces.get(i).is_some_and(|p| p.start <= off && off < p.start + p.len as u64);
        let last = self.last.get();
        if holds(last) {
            last
        } else if holds(last + 1) {
            last + 1
        } else {
            self.pieces.partition_point(|p| p.start + p.len as u64 <= off)
        }
    }

    /// Copies `out.len()` bytes from ring index `start` (within the ring).
    fn copy_ring(&self, start: usize, out: &mut [u8]) {
        let (a, b) = self.ring.as_slices();
        let mut done = 0;
        if start < a.len() {
            let n = (a.len() - start).min(out.len());
            out[..n].copy_from_slice(&a[start..start + n]);
            done = n;
        }
        if done < out.len() {
            let boff = start + done - a.len();
            let n = out.len() - done;
            out[done..].copy_from_slice(&b[boff..boff + n]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Copies and buffers handed over, mixed, acknowledged in steps: every range reads back
    /// as the stream written, and the memory is given back at the end.
    #[test]
    fn copies_and_handed_buffers_read_back_in_order() {
        let mut s = SendBuf::new(1 << 20);
        let stream: Vec<u8> = (0..40_000u32).map(|i| (i * 7 % 251) as u8).collect();
        assert_eq!(s.write(&stream[..1000]), 1000);
        let mut b = Bytes::copy_from_slice(&stream[1000..11_000]);
        assert_eq!(s.write_bytes(&mut b), 10_000);
        assert!(b.is_empty(), "all taken");
        assert_eq!(s.write(&stream[11_000..11_500]), 500);
        assert_eq!(s.write(&stream[11_500..12_000]), 500, "lengthens the last ring piece");
        let mut small = Bytes::copy_from_slice(&stream[12_000..13_000]);
        assert_eq!(s.write_bytes(&mut small), 1000, "a short one is copied");
        assert_eq!((s.pieces.len(), s.owned), (3, 10_000));
        let mut out = vec![0u8; 12_000];
        assert!(s.copy_out(500, &mut out));
        assert_eq!(out, &stream[500..12_500], "across the three pieces");
        assert_eq!(s.ack(2500), 2500);
        assert_eq!((s.pieces.len(), s.owned), (2, 8_500));
        assert!(!s.copy_out(2000, &mut out[..10]), "acknowledged");
        assert!(!s.copy_out(12_990, &mut out[..20]), "beyond the end");
        assert!(s.copy_out(2500, &mut out[..10_500]));
        assert_eq!(&out[..10_500], &stream[2500..13_000]);
        assert_eq!(s.ack(13_000), 10_500);
        assert_eq!((s.len(), s.owned, s.pieces.len()), (0, 0, 0));
        s.trim();
        assert_eq!(s.buffer_bytes(), 0, "all given back");
    }

    /// An application handing over tiny buffers, between copies, until the buffer is full:
    /// they are copied, so the pieces stay few; then buffers just long enough to be kept,
    /// between 1-byte copies, with acknowledgements in between: never more pieces than the
    /// bound, and the stream intact.
    #[test]
    fn the_pieces_are_bounded() {
        let cap = 64 << 10;
        let mut s = SendBuf::new(cap);
        let (mut model, mut una) = (Vec::new(), 0u64);
        let mut k = 0u8;
        while s.room() > 0 {
            k = k.wrapping_add(1);
            let mut one = Bytes::copy_from_slice(&[k]);
            s.write_bytes(&mut one);
            s.write(&[k ^ 0xff]);
            model.extend([k, k ^ 0xff]);
        }
        assert_eq!(s.pieces.len(), 0, "all copied: no pieces");
        for round in 0..50 {
            una += 10_000;
            s.ack(una);
            while s.room() > 0 {
                k = k.wrapping_add(1);
                let mut c = Bytes::from(vec![k; MIN_PIECE + round]);
                let n = s.write_bytes(&mut c);
                model.extend(std::iter::repeat_n(k, n));
                model.extend(&[k][..s.write(&[k])]);
                assert!(s.pieces.len() <= 2 * (cap / MIN_PIECE + 2) + 1, "{} pieces", s.pieces.len());
            }
        }
        let mut out = vec![0u8; s.len()];
        assert!(s.copy_out(una, &mut out));
        assert!(out == model[una as usize..], "the stream intact");
    }

    /// A long buffer finding less room than a piece waits for room rather than start the
    /// ring; a short one is copied, and an empty buffer takes a long one's front whatever
    /// its size.
    #[test]
    fn a_long_buffer_waits_for_room_rather_than_start_the_ring() {
        let mut s = SendBuf::new(64 << 10);
        let mut b = Bytes::from_static(&[3; 100 << 10]);
        assert_eq!(s.write_bytes(&mut b), 64 << 10);
        s.ack(3_000);
        assert_eq!(s.write_bytes(&mut b), 0, "3,000 bytes of room: less than a piece");
        assert_eq!(s.ring.capacity(), 0, "no ring");
        s.ack(10_000);
        assert_eq!(s.write_bytes(&mut b), 10_000, "a piece's worth: taken by reference");
        // 26,864 bytes left of the buffer, room for 24,000: a cut there would leave 2,864.
        s.ack(34_000);
        assert_eq!(s.write_bytes(&mut b), 26_864 - MIN_PIECE, "cut where a piece is left");
        assert_eq!(b.len(), MIN_PIECE);
        assert_eq!(s.write_bytes(&mut b), 0, "less room than the rest");
        s.ack(60_000);
        assert_eq!(s.write_bytes(&mut b), MIN_PIECE, "the rest, by reference");
        assert_eq!(s.ring.capacity(), 0, "still no ring");
        assert_eq!(s.write_bytes(&mut Bytes::from_static(&[4; 100])), 100, "a short one is copied");
        let mut tiny = SendBuf::new(3_000);
        assert_eq!(tiny.write_bytes(&mut Bytes::from_static(&[5; 10_000])), 3_000, "empty: taken");
    }

    /// A buffer larger than the room: what fits is taken, the rest stays with the caller.
    #[test]
    fn a_handed_buffer_is_taken_up_to_the_room() {
        let mut s = SendBuf::new(10_000);
        s.write(&[1; 4_000]);
        let mut b = Bytes::from_static(&[2; 7_000]);
        assert_eq!(s.write_bytes(&mut b), 6_000);
        assert_eq!((b.len(), s.room(), s.owned), (1_000, 0, 6_000));
        assert_eq!(s.write_bytes(&mut b), 0);
    }

    proptest! {
        /// Any mix of copies, handed buffers, acknowledgements and reads agrees with a model
        /// (a plain vector of the stream).
        #[test]
        fn matches_a_model(ops in proptest::collection::vec((0u8..4, 1usize..9000, any::<u64>()), 1..60)) {
            let mut s = SendBuf::new(48 << 10);
            let mut model: Vec<u8> = Vec::new();
            let mut una = 0usize;
            let mut next = 0u8;
            for (op, n, r) in ops {
                let data: Vec<u8> = (0..n).map(|_| { next = next.wrapping_add(1); next }).collect();
                match op {
                    0 => { let k = s.write(&data); model.extend(&data[..k]); }
                    1 => { let mut b = Bytes::from(data.clone()); let k = s.write_bytes(&mut b); model.extend(&data[..k]); }
                    2 => {
                        let to = una + (r as usize) % (model.len() - una + 1);
                        s.ack(to as u64);
                        una = to;
                    }
                    _ => {
                        let held = model.len() - una;
                        let at = una + (r as usize) % (held + 1);
                        let len = ((r >> 32) as usize) % (model.len() - at + 1);
                        let mut out = vec![0u8; len];
                        prop_assert!(s.copy_out(at as u64, &mut out));
                        prop_assert_eq!(&out[..], &model[at..at + len]);
                    }
                }
                prop_assert_eq!(s.len(), model.len() - una);
                prop_assert_eq!(s.end(), model.len() as u64);
            }
        }
    }
}
