//! The receiving side of the connection's stream: reassembly by DSN from every subflow, the
//! DATA_ACK and window we advertise, the peer's DATA_FIN and MP_IDLE, and the FAST_JOIN_OUT
//! replay window (PROTOCOL.md §5.5, §5.9, §6).
//!
//! Positions are offsets from the peer's first DSN (see [`super::dsn`]). The ring grows with
//! the bytes held, by doubling, up to the receive window, and is given back when the
//! connection goes idle (`trim`): an idle connection holds no buffer, a busy one reaches its
//! working size and then receives and reads without allocating (issue 19).
//!
//! The window itself grows with a reader that keeps up (`autotune`, Linux's receive-buffer
//! autotuning), up to the configured most; it never shrinks.

use super::dsn::Dsn;
use crate::ranges::RangeSet;
use crate::Time;

/// The ring's first size.
const MIN_RING: usize = 4096;

/// Received bytes, placed by offset into a ring (at most the receive window), with the ranges
/// received out of order.
#[derive(Debug)]
struct RecvBuf {
    /// Byte `v` is at `v % ring.len()`; what is held, `[read, highest received)`, always fits.
    ring: Vec<u8>,
    /// The receive window: the most the ring may hold.
    size: usize,
    /// Next byte the application reads.
    read: u64,
    /// Next byte expected in order (EDSN, RFC 8684's DATA_ACK).
    nxt: u64,
    /// Ranges received above `nxt` (and `[.., nxt)` as the floor).
    ooo: RangeSet,
    /// The DATA_FIN's DSN was consumed: `nxt` is one past the last data byte.
    fin: bool,
}

impl RecvBuf {
    fn new(window: usize) -> Self {
        Self {
            ring: Vec::new(),
            size: window.max(1),
            read: 0,
            nxt: 0,
            ooo: RangeSet::with_floor(Self::ranges_for(window), 0),
            fin: false,
        }
    }

    /// Forgetting a reassembly range would deliver the gap below it as data: the set holds as
    /// many ranges as segments of 256 bytes fit in the window, and data that would need one
    /// more is refused (`insert` returns `None`).
    fn ranges_for(window: usize) -> usize {
        window / 256 + 64
    }

    /// The window grows to `size` (larger than it was): the ring grows with the bytes held,
    /// as before, and the reassembly tracks as many more ranges.
    fn widen(&mut self, size: usize) {
        self.size = size;
        self.ooo.raise_bound(Self::ranges_for(size));
    }

    fn readable(&self) -> usize {
        (self.nxt - self.read - u64::from(self.fin)) as usize
    }

    fn window(&self) -> u64 {
        (self.size - self.readable()) as u64
    }

    /// One past the highest offset the window admits now.
    fn limit(&self) -> u64 {
        self.read + self.size as u64
    }

    /// Makes the ring hold offsets up to `end` (within the window): doubles it (from 4 KiB) and
    /// moves what it holds to their new places.
    fn grow(&mut self, end: u64) {
        let need = (end - self.read) as usize;
        let old = self.ring.len();
        if need <= old {
            return;
        }
        let cap = need.next_power_of_two().max(MIN_RING).max(old * 2).min(self.size);
        let mut ring = vec![0u8; cap];
        let held = self.ooo.max().map_or(self.nxt, |m| m + 1).max(self.nxt);
        let mut v = self.read;
        while v < held {
            let (from, to) = ((v % old as u64) as usize, (v % cap as u64) as usize);
            let run = (old - from).min(cap - to).min((held - v) as usize);
            ring[to..to + run].copy_from_slice(&self.ring[from..from + run]);
            v += run as u64;
        }
        self.ring = ring;
    }

    /// Gives the ring back when it holds nothing (every byte read, no out-of-order data).
    fn trim(&mut self) {
        if self.readable() == 0 && self.ooo.is_empty() {
            self.ring = Vec::new();
            self.ooo.shrink();
        }
    }

    /// The part of `[off, off + len)` that `insert` would store: not yet in order, within the
    /// window. Empty when `start >= end`.
    fn clip(&self, off: u64, len: usize) -> (u64, u64) {
        (off.max(self.nxt), off.saturating_add(len as u64).min(self.limit()))
    }

    fn needs_range(&self, off: u64, len: usize) -> bool {
        let (start, end) = self.clip(off, len);
        !self.fin && start < end && self.ooo.needs_range(start, end)
    }

    /// Stores `data` at `off`, clipped to the window; returns the number of bytes not received
    /// before, or `None` if the data would open more out-of-order ranges than the buffer
    /// tracks (then nothing is stored).
    fn insert(&mut self, off: u64, data: &[u8]) -> Option<u64> {
        if self.fin {
            return Some(0);
        }
        let (start, end) = self.clip(off, data.len());
        if start >= end {
            return Some(0);
        }
        if start == self.nxt && self.ooo.is_empty() && self.ooo.floor() <= start {
            // In order with no hole above: the bulk of a transfer. What the general case below
            // does, without its walks over the ranges.
            self.grow(end);
            self.put(start, &data[(start - off) as usize..(end - off) as usize]);
            self.nxt = end;
            self.ooo.advance_floor(end);
            return Some(end - start);
        }
        if !self.ooo.can_insert(start, end) {
            return None;
        }
        self.grow(end);
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
            self.put(v, &data[(v - off) as usize..(gap_end - off) as usize]);
            v = gap_end;
        }
        let added = self.ooo.insert(start, end);
        self.nxt = self.ooo.contiguous_end(self.nxt);
        self.ooo.advance_floor(self.nxt);
        Some(added)
    }

    /// Copies `src` into the ring at offset `v` (the ring holds it: `grow` came first).
    fn put(&mut self, v: u64, src: &[u8]) {
        let cap = self.ring.len();
        let pos = (v % cap as u64) as usize;
        let first = (cap - pos).min(src.len());
        self.ring[pos..pos + first].copy_from_slice(&src[..first]);
        self.ring[..src.len() - first].copy_from_slice(&src[first..]);
    }

    fn consume_fin(&mut self) {
        if !self.fin {
            self.fin = true;
            self.nxt += 1;
            self.ooo.advance_floor(self.nxt);
        }
    }

    fn read(&mut self, out: &mut [u8]) -> usize {
        let mut n = 0;
        while n < out.len() {
            let (pos, len) = self.take(out.len() - n);
            if len == 0 {
                break;
            }
            out[n..n + len].copy_from_slice(&self.ring[pos..pos + len]);
            n += len;
        }
        n
    }

    /// Takes up to `max` in-order bytes from the front, no further than the ring's end;
    /// returns where they are in the ring and how many.
    fn take(&mut self, max: usize) -> (usize, usize) {
        let n = max.min(self.readable());
        if n == 0 {
            return (0, 0);
        }
        let cap = self.ring.len();
        let pos = (self.read % cap as u64) as usize;
        let n = n.min(cap - pos);
        self.read += n as u64;
        (pos, n)
    }
}

/// A mapping no correct peer sends: outside the stream, or beyond the window we advertised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidMapping;

/// What a mapping did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mapped {
    /// Bytes not received before.
    pub new: u64,
    /// More bytes can be read now.
    pub readable: bool,
    /// The peer's DATA_FIN was reached in order: after the buffered bytes, the stream ends.
    pub finished: bool,
}

/// The mapping's data would open an out-of-order range beyond those tracked: nothing stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refused;

#[derive(Debug)]
pub struct RecvSide {
    buf: RecvBuf,
    /// DSN of offset 0 (the peer's `IDSN + 1`).
    start: Dsn,
    /// The most the buffer's size (`RecvBuf::size`: W of the fast-join rule, §5.9) grows to.
    /// W only grows (`autotune`), and the replay window's edge `EDSN - W` never moves back
    /// whatever W does.
    max_size: u64,
    /// The current measurement of the reader's pace (`autotune`): when it began and how many
    /// bytes the application had read then.
    tune_start: Option<Time>,
    tune_read: u64,
    /// Offset of the peer's DATA_FIN, and the subflow slot that carried it (a DATA_FIN is
    /// answered there, BRIEF.md).
    fin: Option<u64>,
    fin_slot: Option<usize>,
    /// The DATA_FIN was reached in order.
    finished: bool,
    /// MP_IDLE of the last data received in DSN order (MultiMob §III-B).
    idle: bool,
    highest_end: u64,
    /// The window we last advertised, and whether it has since grown enough to say so.
    advertised: u64,
    /// The DATA_ACK (as an offset) we last sent.
    advertised_ack: u64,
    window_update: bool,
    /// FAST_JOIN_OUT replay window over the peer's DSNs (§5.9).
    fast_join: fastjoin::ReplayWindow,
}

impl RecvSide {
    /// A receiving side whose window starts at `window` and grows up to `max_window` (not at
    /// all when that is no larger).
    pub fn new(window: usize, max_window: usize) -> Self {
        Self {
            buf: RecvBuf::new(window),
            start: Dsn(0),
            max_size: max_window.max(window) as u64,
            tune_start: None,
            tune_read: 0,
            fin: None,
            fin_slot: None,
            finished: false,
            idle: false,
            highest_end: 0,
            advertised: window as u64,
            advertised_ack: 0,
            window_update: false,
            fast_join: fastjoin::ReplayWindow::new(0),
        }
    }

    /// The keys are known: the peer's stream starts at `start`.
    pub fn set_start(&mut self, start: Dsn) {
        *self = Self::new(self.buf.size, self.max_size as usize);
        self.start = start;
        self.fast_join = fastjoin::ReplayWindow::new(start.0);
    }

    /// The DSN of the stream's first byte.
    pub fn start(&self) -> Dsn {
        self.start
    }

    /// The next DSN expected in order (EDSN): our DATA_ACK.
    pub fn edsn(&self) -> Dsn {
        self.start.add(self.buf.nxt)
    }

    /// The window to advertise beyond the DATA_ACK.
    pub fn window(&self) -> u64 {
        self.buf.window()
    }

    /// A DATA_ACK with this window left in a packet.
    pub fn on_window_advertised(&mut self) {
        self.advertised = self.buf.window();
        self.advertised_ack = self.buf.nxt;
    }

    /// The DATA_ACK or the window moved since a packet last carried them: a data packet
    /// should carry them too (§5.5).
    pub fn ack_news(&self) -> bool {
        self.buf.nxt != self.advertised_ack || self.buf.window() != self.advertised
    }

    /// The window grew by a quarter of the buffer since we last advertised it: a packet should
    /// say so (the sender may be waiting on a closed window).
    pub fn take_window_update(&mut self) -> bool {
        std::mem::take(&mut self.window_update)
    }

    /// `take_window_update` without taking it.
    pub fn window_update_due(&self) -> bool {
        self.window_update
    }

    pub fn readable(&self) -> usize {
        self.buf.readable()
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// MP_IDLE of the last data received in DSN order.
    pub fn peer_idle(&self) -> bool {
        self.idle
    }

    /// The subflow slot that carried the peer's DATA_FIN.
    pub fn fin_slot(&self) -> Option<usize> {
        self.fin_slot
    }

    /// Slot `slot` closed: the DATA_FIN can no longer be answered there.
    pub fn forget_slot(&mut self, slot: usize) {
        if self.fin_slot == Some(slot) {
            self.fin_slot = None;
        }
    }

    /// Checks a mapping before its packet is acknowledged: `Ok(true)` if storing it would open
    /// a new out-of-order range (see [`RecvSide::ranges_free`]).
    pub fn check(&self, dsn: Dsn, len: usize) -> Result<bool, InvalidMapping> {
        let off = dsn.offset_from(self.start).ok_or(InvalidMapping)?;
        if off + len as u64 > self.buf.limit() && !self.finished {
            return Err(InvalidMapping);
        }
        Ok(self.buf.needs_range(off, len))
    }

    /// How many more out-of-order ranges the buffer tracks.
    pub fn ranges_free(&self) -> usize {
        self.buf.ooo.room()
    }

    /// Takes a mapping's data (the first copy of each byte is kept), and its DATA_FIN and
    /// MP_IDLE flags. Data outside the stream or the window is ignored.
    pub fn on_mapping(&mut self, dsn: Dsn, data: &[u8], fin: bool, idle: bool, slot: usize) -> Result<Mapped, Refused> {
        let Some(off) = dsn.offset_from(self.start) else { return Ok(Mapped::default()) };
        let mut m = Mapped::default();
        if !data.is_empty() {
            let before = self.buf.readable();
            m.new = self.buf.insert(off, data).ok_or(Refused)?;
            m.readable = self.buf.readable() > before;
        }
        let end = off + data.len() as u64;
        if end >= self.highest_end {
            self.highest_end = end;
            self.idle = idle;
        }
        if fin && self.fin.is_none() {
            self.fin = Some(end);
            self.fin_slot = Some(slot);
        }
        if self.fin == Some(self.buf.nxt) && !self.finished {
            self.buf.consume_fin();
            self.finished = true;
            m.finished = true;
        }
        Ok(m)
    }

    /// Gives back the buffer's memory if it holds nothing (the connection is idle).
    pub fn trim(&mut self) {
        self.buf.trim();
    }

    /// Bytes of buffer held (for the memory figures and tests).
    pub fn buffer_bytes(&self) -> usize {
        self.buf.ring.capacity()
    }

    /// How many acknowledgement-only packets a subflow may send while this window's data
    /// arrives: one per two full packets (§5.3), about 1,000 bytes of data each. Their records
    /// wait in the subflow's sent-packet ring until the peer acknowledges a later packet (a
    /// window update's PING, a quarter window apart): they are how a receiver learns its
    /// path's loss (the oracle's input), so they are kept, and the ring is given this room
    /// rather than doubling whenever the peer is slow to acknowledge. At most the data
    /// received so far calls for: a request of 2,500 bytes needs one or two, not the 524 a
    /// 1 MiB window would (33 KiB per connection, given back 3 s later: at 10,000
    /// connections answering a request each, 330 MB that the allocator kept, issue 52); a
    /// transfer reaches the window's count after its first window of data.
    pub fn acks_bound(&self) -> usize {
        (self.buf.nxt.min(self.buf.size as u64) as usize / 2_000).max(1)
    }

    /// Reads in-order bytes into `out`; returns the count.
    pub fn read(&mut self, out: &mut [u8]) -> usize {
        let n = self.buf.read(out);
        self.on_read(n);
        n
    }

    /// Takes up to `max` in-order bytes where they lie in the receive buffer, no copy: the
    /// front of what is readable, up to the ring's end (the rest comes next). Empty when
    /// nothing is readable.
    pub fn read_chunk(&mut self, max: usize) -> &[u8] {
        let (pos, n) = self.buf.take(max);
        self.on_read(n);
        &self.buf.ring[pos..pos + n]
    }

    fn on_read(&mut self, n: usize) {
        if n > 0 && self.buf.window() >= self.advertised + self.size() / 4 {
            self.window_update = true;
        }
    }

    /// The window may still grow.
    pub fn can_grow(&self) -> bool {
        self.size() < self.max_size
    }

    /// Grows the window with the reader (Linux's receive-buffer autotuning, DRS,
    /// `tcp_rcv_space_adjust`): once per `rtt` (µs), when the application read more than half
    /// the window per `rtt` since the last time, to the power of two at or above twice that,
    /// up to the most allowed. A sender held by our window moves about a window per RTT; twice
    /// that lets its congestion window go on growing. A reader that takes less than half a
    /// window per RTT never grows it: its unread bytes close the window, so the memory held
    /// follows the reader, not the sender. A measurement stretched by a pause counts the
    /// reads per `rtt`, not in all. Returns whether the window grew (the peer should hear of
    /// it soon: a window update is due).
    pub fn autotune(&mut self, now: Time, rtt: u64) -> bool {
        let rtt = rtt.max(1);
        let read = self.buf.read;
        let elapsed = match self.tune_start {
            Some(t) if now.saturating_sub(t) >= rtt => now - t,
            Some(_) => return false,
            None => {
                self.tune_start = Some(now);
                self.tune_read = read;
                return false;
            }
        };
        let per_rtt = u128::from(read - self.tune_read) * u128::from(rtt) / u128::from(elapsed);
        self.tune_start = Some(now);
        self.tune_read = read;
        let want = (2 * per_rtt).min(u128::from(self.max_size)) as u64;
        if want <= self.size() {
            return false;
        }
        // By powers of two (at most three steps from 1 MiB to 8 MiB): the ring, which doubles,
        // is copied once per step rather than at every new high of the reader's pace.
        self.buf.widen(want.next_power_of_two().min(self.max_size) as usize);
        self.window_update = true;
        true
    }

    /// The receive window's size now (read or not).
    pub fn size(&self) -> u64 {
        self.buf.size as u64
    }

    /// The responder's decision on a FAST_JOIN_OUT whose HMAC is checked by `fastjoin`: the
    /// replay window at EDSN, with W the receive window now (§5.9).
    pub fn accept_fast_join(
        &mut self,
        keys: &fastjoin::Keys,
        token: u32,
        f: &fastjoin::FastJoinOut<'_>,
    ) -> fastjoin::Verdict {
        let edsn = self.edsn().0;
        let wnd = self.size();
        fastjoin::accept_out(keys, token, f, &mut self.fast_join, edsn, wnd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(start: u64, window: usize) -> RecvSide {
        let mut r = RecvSide::new(window, 0);
        r.set_start(Dsn(start));
        r
    }

    fn read_all(r: &mut RecvSide) -> Vec<u8> {
        let mut out = vec![0u8; 1 << 16];
        let n = r.read(&mut out);
        out.truncate(n);
        out
    }

    #[test]
    fn reassembles_out_of_order_across_the_dsn_wrap() {
        let s = u64::MAX - 4;
        let mut r = side(s, 32);
        let m = r.on_mapping(Dsn(s).add(10), &[2; 10], false, false, 0).unwrap();
        assert_eq!((m.new, m.readable), (10, false));
        assert_eq!(r.edsn(), Dsn(s));
        let m = r.on_mapping(Dsn(s), &[1; 12], false, false, 0).unwrap();
        assert_eq!((m.new, m.readable), (10, true), "two bytes overlap the first segment");
        assert_eq!(r.edsn(), Dsn(15), "past the wrap");
        assert_eq!(r.window(), 12);
        assert_eq!(read_all(&mut r), [[1u8; 10], [2u8; 10]].concat());
        assert_eq!(r.window(), 32);
        assert_eq!(r.on_mapping(Dsn(s), &[9; 10], false, false, 0).unwrap().new, 0, "old data is not delivered twice");
    }

    #[test]
    fn mappings_outside_the_stream_or_the_window_are_invalid() {
        let mut r = side(1000, 32);
        assert_eq!(r.check(Dsn(1000), 32), Ok(false), "the whole window, in order");
        assert_eq!(r.check(Dsn(1010), 4), Ok(true), "above a hole: a new range");
        assert_eq!(r.check(Dsn(1000), 33), Err(InvalidMapping), "one byte beyond the window");
        assert_eq!(r.check(Dsn(999), 1), Err(InvalidMapping), "before the stream");
        assert_eq!(r.check(Dsn(u64::MAX), 1), Err(InvalidMapping));
        r.on_mapping(Dsn(1000), &[0; 20], false, false, 0).unwrap();
        assert_eq!(r.check(Dsn(1020), 13), Err(InvalidMapping), "the unread bytes still hold the window");
        read_all(&mut r);
        assert_eq!(r.check(Dsn(1020), 32), Ok(false), "reading opened it again");
        // Lenient where the checks already ran (a fast join's data): clipped, not refused.
        assert_eq!(r.on_mapping(Dsn(1040), &[0; 40], false, false, 0).unwrap().new, 12);
    }

    #[test]
    fn the_data_fin_is_reached_in_order_and_remembered_with_its_subflow() {
        let mut r = side(0, 64);
        let m = r.on_mapping(Dsn(10), &[5; 5], true, true, 3).unwrap();
        assert!(!m.finished, "a hole before it");
        assert_eq!(r.fin_slot(), Some(3));
        let m = r.on_mapping(Dsn(0), &[4; 10], false, false, 1).unwrap();
        assert!(m.finished && m.readable);
        assert!(r.peer_idle(), "MP_IDLE of the highest data");
        assert_eq!(r.edsn(), Dsn(16), "the DATA_FIN takes one DSN");
        assert_eq!(read_all(&mut r).len(), 15);
        r.forget_slot(3);
        assert_eq!(r.fin_slot(), None);
    }

    #[test]
    fn a_reopened_window_is_advertised_once() {
        let mut r = side(0, 1024);
        r.on_mapping(Dsn(0), &[1; 1024], false, false, 0).unwrap();
        r.on_window_advertised();
        assert_eq!(r.window(), 0);
        let mut out = [0u8; 200];
        r.read(&mut out);
        assert!(!r.take_window_update(), "200 bytes are less than a quarter");
        r.read(&mut out);
        assert!(r.take_window_update(), "400 bytes free: say so");
        assert!(!r.take_window_update(), "once");
        r.on_window_advertised();
        r.read(&mut out);
        assert!(!r.take_window_update());
    }

    #[test]
    fn reassembly_never_forgets_a_hole() {
        // 1024-byte window: 68 ranges at most. One byte every other byte above a hole at 0.
        let mut r = side(0, 1024);
        let mut refused = 0;
        for k in 0..200u64 {
            match r.on_mapping(Dsn(1 + 2 * k), &[7], false, false, 0) {
                Ok(m) => assert_eq!(m.new, 1),
                Err(Refused) => refused += 1,
            }
        }
        assert!(refused > 0, "the range limit was reached");
        assert_eq!(r.edsn(), Dsn(0), "the hole at 0 is still a hole");
        assert_eq!(r.readable(), 0);
        assert_eq!(r.ranges_free(), 0);
        assert_eq!(r.check(Dsn(395), 1), Ok(true), "a refused byte would open a range");
        assert_eq!(r.check(Dsn(0), 1), Ok(false), "the in-order edge never needs one");
        r.on_mapping(Dsn(0), &[1], false, false, 0).unwrap();
        r.on_mapping(Dsn(2), &[2], false, false, 0).unwrap();
        assert_eq!(r.edsn(), Dsn(4));
        assert_eq!(read_all(&mut r), [1, 7, 2, 7]);
    }

    fn pattern(from: u64, to: u64) -> Vec<u8> {
        (from..to).map(|v| (v % 251) as u8).collect()
    }

    #[test]
    fn the_ring_grows_with_what_it_holds_and_is_given_back_when_idle() {
        let mut r = side(0, 1 << 16);
        assert_eq!(r.buffer_bytes(), 0, "an idle connection holds no buffer");
        r.on_mapping(Dsn(0), &pattern(0, 3000), false, false, 0).unwrap();
        assert_eq!(r.buffer_bytes(), MIN_RING);
        let mut out = vec![0u8; 2000];
        assert_eq!(r.read(&mut out), 2000);
        assert_eq!(out, pattern(0, 2000));
        // Wraps around the 4 KiB ring, then a segment out of order makes it double: the
        // wrapped bytes move to their new places.
        r.on_mapping(Dsn(3000), &pattern(3000, 6000), false, false, 0).unwrap();
        assert_eq!(r.buffer_bytes(), MIN_RING);
        r.on_mapping(Dsn(9000), &pattern(9000, 10_000), false, false, 0).unwrap();
        assert_eq!(r.buffer_bytes(), 2 * MIN_RING);
        r.on_mapping(Dsn(6000), &pattern(6000, 9000), false, false, 0).unwrap();
        assert_eq!(r.window(), (1 << 16) - 8000, "the window is the receive buffer's, not the ring's");
        assert_eq!(read_all(&mut r), pattern(2000, 10_000));
        r.trim();
        assert_eq!(r.buffer_bytes(), 0, "idle again: given back");
        r.on_mapping(Dsn(10_000), &pattern(10_000, 10_100), false, false, 0).unwrap();
        r.trim();
        assert_eq!(r.buffer_bytes(), MIN_RING, "unread bytes keep it");
        assert_eq!(read_all(&mut r), pattern(10_000, 10_100));
    }

    #[test]
    fn chunks_are_read_in_place_up_to_the_ring_end_then_from_its_start() {
        let mut r = side(0, 1 << 16);
        r.on_mapping(Dsn(0), &pattern(0, 3000), false, false, 0).unwrap();
        let mut out = vec![0u8; 3000];
        assert_eq!(r.read(&mut out), 3000);
        // 3000 bytes more wrap around the 4 KiB ring: the first chunk stops at its end.
        r.on_mapping(Dsn(3000), &pattern(3000, 6000), false, false, 0).unwrap();
        assert_eq!(r.read_chunk(500), &pattern(3000, 3500)[..], "no more than asked");
        assert_eq!(r.read_chunk(10_000), &pattern(3500, MIN_RING as u64)[..], "to the ring's end");
        assert_eq!(r.read_chunk(10_000), &pattern(MIN_RING as u64, 6000)[..], "then from its start");
        assert!(r.read_chunk(10_000).is_empty(), "all taken");
        assert_eq!(r.readable(), 0);
        assert_eq!(r.window(), 1 << 16, "taken bytes open the window as read ones do");
        let mut r = side(0, 1024);
        r.on_mapping(Dsn(0), &[1; 1024], false, false, 0).unwrap();
        r.on_window_advertised();
        assert_eq!(r.read_chunk(200).len(), 200);
        assert!(!r.take_window_update(), "200 bytes are less than a quarter");
        assert_eq!(r.read_chunk(200).len(), 200);
        assert!(r.take_window_update(), "400 bytes free: say so");
    }

    /// Fills the window in order from the current EDSN and reads it all: a reader that keeps
    /// up with a sender held by the window.
    fn move_a_window(r: &mut RecvSide) {
        let n = r.window() as usize;
        r.on_mapping(r.edsn(), &vec![1; n], false, false, 0).unwrap();
        assert_eq!(read_all_of(r), n);
    }

    fn read_all_of(r: &mut RecvSide) -> usize {
        let mut out = vec![0u8; 1 << 16];
        let mut total = 0;
        loop {
            match r.read(&mut out) {
                0 => return total,
                n => total += n,
            }
        }
    }

    #[test]
    fn the_window_grows_once_per_rtt_to_twice_what_was_read_up_to_the_most() {
        let mut r = RecvSide::new(8192, 40_000);
        r.set_start(Dsn(0));
        let ranges = r.ranges_free();
        assert!(!r.autotune(0, 1000), "the first call starts a measurement");
        move_a_window(&mut r);
        assert!(!r.autotune(999, 1000), "not before an RTT");
        assert!(r.autotune(1000, 1000), "a window read in an RTT");
        assert_eq!((r.size(), r.window()), (16_384, 16_384), "twice what was read");
        assert!(r.take_window_update(), "the peer should hear of it");
        assert!(r.ranges_free() > ranges, "the reassembly tracks more ranges in a larger window");
        move_a_window(&mut r);
        assert!(r.autotune(2000, 1000));
        assert_eq!(r.size(), 32_768);
        move_a_window(&mut r);
        assert!(r.autotune(3000, 1000));
        assert_eq!(r.size(), 40_000, "no more than the most");
        let mut odd = RecvSide::new(5000, 1 << 20);
        odd.set_start(Dsn(0));
        odd.autotune(0, 1000);
        move_a_window(&mut odd);
        assert!(odd.autotune(1000, 1000));
        assert_eq!((odd.size(), odd.window()), (16_384, 16_384), "twice 5,000, rounded up to a power of two");
        assert!(!r.can_grow());
    }

    #[test]
    fn reads_spread_over_a_pause_count_per_rtt() {
        let mut r = RecvSide::new(8192, 1 << 20);
        r.set_start(Dsn(0));
        r.autotune(0, 1000);
        move_a_window(&mut r);
        // A window read, but over ten RTTs: 819 bytes per RTT, less than the window.
        assert!(!r.autotune(10_000, 1000));
        assert_eq!(r.size(), 8192);
        // Half a window in an RTT: twice that is the window, no more.
        let half = vec![1; 4096];
        r.on_mapping(r.edsn(), &half, false, false, 0).unwrap();
        read_all_of(&mut r);
        assert!(!r.autotune(11_000, 1000));
        assert_eq!(r.size(), 8192);
    }

    #[test]
    fn a_window_at_its_most_does_not_grow() {
        let mut r = RecvSide::new(8192, 4096);
        r.set_start(Dsn(0));
        assert!(!r.can_grow(), "a most below the start is the start");
        r.autotune(0, 1000);
        move_a_window(&mut r);
        assert!(!r.autotune(1000, 1000));
        assert_eq!(r.size(), 8192);
    }
}
