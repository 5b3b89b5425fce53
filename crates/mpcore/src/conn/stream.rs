//! The connection's byte stream in each direction, addressed by data sequence number (DSN).
//!
//! Both buffers are allocated once, when the connection is created, and reused: writing,
//! sending, acknowledging, receiving and reading do not allocate.

use crate::ranges::RangeSet;
use std::collections::VecDeque;

/// Bytes written by the application and not yet acknowledged at data level (DATA_ACK).
#[derive(Debug)]
pub struct SendBuf {
    buf: VecDeque<u8>,
    /// DSN of `buf[0]`: the lowest unacknowledged DSN.
    una: u64,
    capacity: usize,
}

impl SendBuf {
    pub fn new(first_dsn: u64, capacity: usize) -> Self {
        Self { buf: VecDeque::with_capacity(capacity), una: first_dsn, capacity }
    }

    /// Lowest DSN not yet acknowledged.
    pub fn una(&self) -> u64 {
        self.una
    }

    /// DSN after the last byte written.
    pub fn end(&self) -> u64 {
        self.una.wrapping_add(self.buf.len() as u64)
    }

    /// Bytes held (written and not acknowledged).
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Room for more application bytes.
    pub fn room(&self) -> usize {
        self.capacity - self.buf.len()
    }

    /// Appends as much of `data` as fits; returns the count.
    pub fn write(&mut self, data: &[u8]) -> usize {
        let n = data.len().min(self.room());
        self.buf.extend(&data[..n]);
        n
    }

    /// Drops bytes below `dsn` (a DATA_ACK); returns how many were dropped.
    pub fn ack(&mut self, dsn: u64) -> u64 {
        let n = dsn.wrapping_sub(self.una);
        if n == 0 || n > self.buf.len() as u64 {
            return 0;
        }
        self.buf.drain(..n as usize);
        self.una = dsn;
        n
    }

    /// Copies `out.len()` bytes starting at `dsn` into `out`. The range must be held.
    pub fn copy_out(&self, dsn: u64, out: &mut [u8]) -> bool {
        let off = dsn.wrapping_sub(self.una) as usize;
        if off.checked_add(out.len()).is_none_or(|e| e > self.buf.len()) {
            return false;
        }
        let (a, b) = self.buf.as_slices();
        let mut done = 0;
        if off < a.len() {
            let n = (a.len() - off).min(out.len());
            out[..n].copy_from_slice(&a[off..off + n]);
            done = n;
        }
        if done < out.len() {
            let boff = off + done - a.len();
            let n = out.len() - done;
            out[done..].copy_from_slice(&b[boff..boff + n]);
        }
        true
    }
}

/// Received bytes, placed by DSN into a ring of fixed size (the receive window), with the
/// ranges received out of order.
#[derive(Debug)]
pub struct RecvBuf {
    ring: Vec<u8>,
    /// DSN of the next byte the application reads.
    read: u64,
    /// Next DSN expected in order (EDSN, RFC 8684's DATA_ACK).
    nxt: u64,
    /// Ranges received above `nxt` (and `[.., nxt)` as the floor).
    ooo: RangeSet,
    /// The DATA_FIN's DSN was consumed: `nxt` is one past the last data byte.
    fin: bool,
}

impl RecvBuf {
    pub fn new(first_dsn: u64, window: usize) -> Self {
        Self {
            ring: vec![0; window.max(1)],
            read: first_dsn,
            nxt: first_dsn,
            // Forgetting a reassembly range would deliver the gap below it as data: the set
            // holds as many ranges as segments of 256 bytes fit in the window, and data that
            // would need one more is refused (`insert` returns `None`).
            ooo: RangeSet::with_floor(window / 256 + 64, first_dsn),
            fin: false,
        }
    }

    /// The next DSN expected in order.
    pub fn nxt(&self) -> u64 {
        self.nxt
    }

    /// Bytes ready for the application.
    pub fn readable(&self) -> usize {
        (self.nxt.wrapping_sub(self.read) - u64::from(self.fin)) as usize
    }

    /// The receive window to advertise beyond `nxt`.
    pub fn window(&self) -> u64 {
        (self.ring.len() - self.readable()) as u64
    }

    /// Highest DSN (exclusive) the ring can hold now.
    fn limit(&self) -> u64 {
        self.read.wrapping_add(self.ring.len() as u64)
    }

    /// The part of `[dsn, dsn + len)` that `insert` would store: not yet in order, within the
    /// window. Empty when `start >= end`.
    fn clip(&self, dsn: u64, len: usize) -> (u64, u64) {
        (dsn.max(self.nxt), dsn.saturating_add(len as u64).min(self.limit()))
    }

    /// Whether storing `len` bytes at `dsn` would open a new out-of-order range (they neither
    /// continue the in-order data nor touch a range already held).
    pub fn needs_range(&self, dsn: u64, len: usize) -> bool {
        let (start, end) = self.clip(dsn, len);
        !self.fin && start < end && self.ooo.needs_range(start, end)
    }

    /// How many more out-of-order ranges the buffer tracks.
    pub fn ranges_free(&self) -> usize {
        self.ooo.room()
    }

    /// Stores `data` at `dsn`, clipped to the window; returns the number of bytes not
    /// received before, or `None` if the data would open more out-of-order ranges than the
    /// buffer tracks (then nothing is stored). (DSNs are compared as plain integers: a
    /// connection would need 2^64 bytes to wrap, and the first DSN is chosen far from the top
    /// by the caller's range check.)
    pub fn insert(&mut self, dsn: u64, data: &[u8]) -> Option<u64> {
        if self.fin {
            return Some(0);
        }
        let (start, end) = self.clip(dsn, data.len());
        if start >= end {
            return Some(0);
        }
        if !self.ooo.can_insert(start, end) {
            return None;
        }
        // Write only the gaps: the first copy of every byte is the one kept (RFC 8684 §3.3.6
        // lets a receiver take either; keeping the first makes the outcome independent of
        // which subflow's copy arrives second).
        let mut v = start;
        while v < end {
            if self.ooo.contains(v) {
                v = self.ooo.contiguous_end(v).max(v + 1);
                continue;
            }
            let gap_end = self.ooo.next_start_after(v).map_or(end, |s| s.min(end));
            let src = &data[(v - dsn) as usize..(gap_end - dsn) as usize];
            let cap = self.ring.len();
            let pos = (v % cap as u64) as usize;
            let first = (cap - pos).min(src.len());
            self.ring[pos..pos + first].copy_from_slice(&src[..first]);
            self.ring[..src.len() - first].copy_from_slice(&src[first..]);
            v = gap_end;
        }
        let added = self.ooo.insert(start, end);
        self.nxt = self.ooo.contiguous_end(self.nxt);
        self.ooo.advance_floor(self.nxt);
        Some(added)
    }

    /// Consumes one DSN (the DATA_FIN's) at `nxt`.
    pub fn consume_fin(&mut self) {
        if !self.fin {
            self.fin = true;
            self.nxt = self.nxt.wrapping_add(1);
            self.ooo.advance_floor(self.nxt);
        }
    }

    /// Copies readable bytes into `out`; returns the count.
    pub fn read(&mut self, out: &mut [u8]) -> usize {
        let n = out.len().min(self.readable());
        let cap = self.ring.len();
        let pos = (self.read % cap as u64) as usize;
        let first = (cap - pos).min(n);
        out[..first].copy_from_slice(&self.ring[pos..pos + first]);
        out[first..n].copy_from_slice(&self.ring[..n - first]);
        self.read = self.read.wrapping_add(n as u64);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_buffer_acks_and_copies_across_the_wrap() {
        let mut s = SendBuf::new(1000, 16);
        assert_eq!(s.write(&[1; 10]), 10);
        assert_eq!(s.ack(1006), 6);
        assert_eq!(s.write(&(0..20).collect::<Vec<u8>>()), 12);
        assert_eq!((s.una(), s.end()), (1006, 1022));
        let mut out = [0u8; 8];
        assert!(s.copy_out(1008, &mut out));
        assert_eq!(out, [1, 1, 0, 1, 2, 3, 4, 5]);
        assert!(!s.copy_out(1020, &mut out), "beyond the end");
        assert_eq!(s.ack(1000), 0, "an old DATA_ACK changes nothing");
    }

    #[test]
    fn receive_buffer_reassembles_out_of_order() {
        let mut r = RecvBuf::new(500, 32);
        assert_eq!(r.insert(510, &[2; 10]), Some(10));
        assert_eq!(r.nxt(), 500);
        assert_eq!(r.insert(500, &[1; 12]), Some(10), "two bytes overlap the first segment");
        assert_eq!(r.nxt(), 520);
        assert_eq!(r.window(), 12);
        let mut out = [0u8; 64];
        assert_eq!(r.read(&mut out), 20);
        assert_eq!(&out[..20], &[[1u8; 10], [2u8; 10]].concat()[..]);
        assert_eq!(r.insert(520, &[3; 40]), Some(32), "clipped to the window");
        assert_eq!(r.read(&mut out), 32);
        assert_eq!(out[..32], [3; 32]);
        assert_eq!(r.insert(500, &[9; 10]), Some(0), "old data is not delivered twice");
    }

    #[test]
    fn reassembly_never_forgets_a_hole() {
        // 1024-byte window: 68 ranges at most. One byte every other byte above a hole at 0.
        let mut r = RecvBuf::new(0, 1024);
        let mut refused = 0;
        for k in 0..200u64 {
            match r.insert(1 + 2 * k, &[7]) {
                Some(1) => {}
                None => refused += 1,
                other => panic!("{other:?}"),
            }
        }
        assert!(refused > 0, "the range limit was reached");
        assert_eq!(r.nxt(), 0, "the hole at 0 is still a hole");
        assert_eq!(r.readable(), 0);
        assert_eq!(r.ranges_free(), 0);
        assert!(r.needs_range(395, 1), "a refused byte would open a range");
        assert!(!r.needs_range(0, 1), "the in-order edge never needs one");
        // The hole filled: everything up to the first refused byte is in order.
        assert_eq!(r.insert(0, &[1]), Some(1));
        assert_eq!(r.insert(2, &[2]), Some(1));
        assert_eq!(r.nxt(), 4);
        let mut out = [0u8; 4];
        assert_eq!(r.read(&mut out), 4);
        assert_eq!(out, [1, 7, 2, 7]);
    }
}
