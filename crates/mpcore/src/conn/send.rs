//! The sending side of the connection's stream: the bytes the application wrote, what has been
//! sent, what the peer acknowledged (DATA_ACK) and allows (its window), the queue of data to send
//! again, and the DATA_FIN (PROTOCOL.md §5.5, §6).
//!
//! Positions are offsets from the stream's first DSN (see [`super::dsn`]); the DSN on the wire
//! is `start + offset`. The buffer grows with what the application writes, by doubling, up to
//! the send buffer's size, and is given back when everything written has been acknowledged
//! and the connection goes idle (`trim`): an idle connection holds no buffer, a busy one
//! reaches its working size and then writes, sends and acknowledges without allocating.

use super::dsn::Dsn;
use super::send_buf::SendBuf;
use super::subflow::DataRef;
use bytes::Bytes;
use std::collections::VecDeque;

/// The retransmission queue holds a chunk per this many bytes of the send buffer's capacity
/// (about a full packet's payload: 24 bytes of queue per 1,200 of buffer, 2%).
const RETRANS_BYTES_PER_CHUNK: usize = 1_200;

/// A full data packet carries at least this much of the stream (a 1,200-byte datagram carries
/// about 1,130): the bound on the packets the send buffer can have in flight on one subflow.
const PAYLOAD_FLOOR: usize = 1_000;

/// Data to be sent again: lost, or left on a subflow that failed or closed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Chunk {
    off: u64,
    len: u32,
    fin: bool,
    /// Subflow slots it was already sent on (a reinjection), so the scheduler prefers others.
    mask: u64,
}

/// The next piece of the stream to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seg {
    pub off: u64,
    pub len: u64,
    pub fin: bool,
    /// Subflow slots this data was already sent on.
    pub mask: u64,
    /// Sent before (from the retransmission queue or the unacknowledged range), not new data.
    pub retrans: bool,
}

/// What a DATA_ACK did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acked {
    /// The left edge moved (new data, or our DATA_FIN, acknowledged).
    pub advanced: bool,
    /// Data bytes newly acknowledged.
    pub bytes: u64,
}

/// A DATA_ACK that acknowledges what was never sent, or lies outside the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidAck;

/// How a sent range of the stream relates to the queues, for [`SendSide::on_sent`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sent {
    /// New data: the send edge moves past it.
    New,
    /// Taken from the front of the retransmission queue.
    FromQueue,
    /// A copy (a probe, a redundant copy, a fast join's data): the queues do not change.
    Copy,
}

#[derive(Debug)]
pub struct SendSide {
    buf: SendBuf,
    /// DSN of offset 0 (`IDSN + 1`, §4.3); 0 until the keys are known.
    start: Dsn,
    /// Next new byte to send.
    nxt: u64,
    /// The peer's DATA_ACK and receive window.
    peer_ack: u64,
    peer_wnd: u64,
    retrans: VecDeque<Chunk>,
    /// Offset of our DATA_FIN (the byte after the last data byte) once the application closed.
    fin: Option<u64>,
    fin_sent: bool,
    fin_acked: bool,
    /// The DATA_ACK edge at which we last sent a FAST_JOIN_OUT: one per edge, since the peer
    /// accepts each DSN once (§5.9).
    fast_join_at: Option<u64>,
}

impl SendSide {
    pub fn new(capacity: usize) -> Self {
        Self {
            buf: SendBuf::new(capacity),
            start: Dsn(0),
            nxt: 0,
            peer_ack: 0,
            peer_wnd: 0,
            retrans: VecDeque::new(),
            fin: None,
            fin_sent: false,
            fin_acked: false,
            fast_join_at: None,
        }
    }

    /// The keys are known: the stream starts at `start` (bytes written before keep their
    /// offsets, so they simply move to their real DSNs).
    pub fn set_start(&mut self, start: Dsn) {
        self.start = start;
    }

    /// The window the peer announced in its transport parameters.
    pub fn set_peer_window(&mut self, wnd: u64) {
        self.peer_wnd = wnd;
    }

    /// The window the peer grants from the oldest unacknowledged byte (its last DATA_ACK's).
    pub fn peer_window(&self) -> u64 {
        self.peer_wnd
    }

    /// The DSN of offset `off`.
    pub fn dsn(&self, off: u64) -> Dsn {
        self.start.add(off)
    }

    /// Lowest offset not acknowledged by the peer.
    pub fn una(&self) -> u64 {
        self.buf.una
    }

    /// Offset after the last byte written.
    pub fn end(&self) -> u64 {
        self.buf.end()
    }

    /// Bytes written and not yet acknowledged.
    pub fn unacked(&self) -> usize {
        self.buf.len()
    }

    pub fn room(&self) -> usize {
        self.buf.room()
    }

    /// Bytes written and never sent.
    pub fn queued(&self) -> u64 {
        self.end() - self.nxt
    }

    /// Gives back the buffers' memory when they hold nothing (everything written was
    /// acknowledged, nothing waits to be sent again).
    pub fn trim(&mut self) {
        self.buf.trim();
        if self.retrans.is_empty() {
            self.retrans = VecDeque::new();
        }
    }

    /// Bytes of buffer held (for the memory figures and tests).
    pub fn buffer_bytes(&self) -> usize {
        self.buf.buffer_bytes() + self.retrans.capacity() * std::mem::size_of::<Chunk>()
    }

    /// How many full packets the buffer can have in flight at once: a subflow's sent-packet
    /// ring is given that much room when it sends data.
    pub fn packets_bound(&self) -> usize {
        self.buf.span() / PAYLOAD_FLOOR
    }

    /// Chunks waiting in the retransmission queue.
    pub fn retrans_len(&self) -> usize {
        self.retrans.len()
    }

    /// Whether the retransmission queue holds data beyond offset `end`.
    pub fn retrans_beyond(&self, end: u64) -> bool {
        self.retrans.iter().any(|c| c.off + u64::from(c.len) > end)
    }

    pub fn is_finished(&self) -> bool {
        self.fin.is_some()
    }

    pub fn fin_acked(&self) -> bool {
        self.fin_acked
    }

    /// Appends what fits of `data` (a copy); returns the count.
    pub fn write(&mut self, data: &[u8]) -> usize {
        let before = self.buf.span();
        let n = self.buf.write(data);
        self.grown(before);
        n
    }

    /// Takes what fits of `data` by reference, split off its front; returns the count.
    pub fn write_bytes(&mut self, data: &mut Bytes) -> usize {
        let before = self.buf.span();
        let n = self.buf.write_bytes(data);
        self.grown(before);
        n
    }

    /// The retransmission queue grows with the buffer, not when a timeout queues all in
    /// flight at once (up to one chunk per packet the buffer holds): a steady transfer
    /// allocates nothing per packet even when a subflow times out. The trim gives both back
    /// together.
    fn grown(&mut self, before: usize) {
        let span = self.buf.span();
        if span > before {
            let chunks = span / RETRANS_BYTES_PER_CHUNK;
            self.retrans.reserve(chunks.saturating_sub(self.retrans.len()));
        }
    }

    /// The application ends the stream: DATA_FIN after everything written so far.
    pub fn close(&mut self) {
        if self.fin.is_none() {
            self.fin = Some(self.end());
        }
    }

    pub fn copy_out(&self, off: u64, out: &mut [u8]) -> bool {
        self.buf.copy_out(off, out)
    }

    /// The offset a DATA_ACK names, if it is one a correct peer can send: within the stream,
    /// and not beyond what we sent (the DATA_FIN's DSN included once it went out).
    pub fn check_data_ack(&self, ack: Dsn) -> Result<u64, InvalidAck> {
        let ack = ack.offset_from(self.start).ok_or(InvalidAck)?;
        let fin_end = self.fin.filter(|_| self.fin_sent).map(|f| f + 1);
        if ack > fin_end.unwrap_or(self.nxt).max(self.nxt) {
            return Err(InvalidAck);
        }
        Ok(ack)
    }

    /// A DATA_ACK with window `wnd` (§5.5). An old one (below our left edge) changes nothing.
    pub fn on_data_ack(&mut self, ack: Dsn, wnd: u64) -> Result<Acked, InvalidAck> {
        let ack = self.check_data_ack(ack)?;
        let fin_end = self.fin.filter(|_| self.fin_sent).map(|f| f + 1);
        let una = self.una();
        if ack < una {
            return Ok(Acked { advanced: false, bytes: 0 });
        }
        let mut bytes = 0;
        if ack > una {
            bytes = self.buf.ack(ack.min(self.end()));
            if fin_end == Some(ack) {
                self.fin_acked = true;
            }
        }
        if ack > una || ack == self.peer_ack {
            self.peer_ack = ack;
            self.peer_wnd = wnd;
        }
        Ok(Acked { advanced: ack > una, bytes })
    }

    /// The next piece of the stream to send, without taking it: the front of the
    /// retransmission queue, else new data within the peer's window (and the DATA_FIN).
    pub fn peek(&mut self) -> Option<Seg> {
        let una = self.una();
        while let Some(c) = self.retrans.front_mut() {
            let end = c.off + u64::from(c.len);
            let acked_fin = !c.fin || self.fin_acked;
            if end < una || (end == una && acked_fin) {
                self.retrans.pop_front();
                continue;
            }
            if c.off < una {
                c.len = (end - una) as u32;
                c.off = una;
            }
            return Some(Seg { off: c.off, len: u64::from(c.len), fin: c.fin, mask: c.mask, retrans: true });
        }
        let end = self.end();
        let limit = self.peer_ack.saturating_add(self.peer_wnd);
        let len = (end - self.nxt).min(limit.saturating_sub(self.nxt));
        let fin = self.fin == Some(end) && !self.fin_sent && self.nxt + len == end;
        if len == 0 && !fin {
            return None;
        }
        Some(Seg { off: self.nxt, len, fin, mask: 0, retrans: false })
    }

    /// What a FAST_JOIN_OUT carries (§5.9): the stream from our DATA_ACK edge, the oldest data
    /// the peer may lack. The peer's EDSN is never behind that edge, so the DSN lies in its
    /// window. `None` (nothing to send, or a FAST_JOIN_OUT already sent at this edge, which the
    /// peer would refuse as a replay, unless `repeat` is a test's fault) means FAST_JOIN_IN.
    pub fn fast_join_segment(&mut self, repeat: bool) -> Option<Seg> {
        let una = self.una();
        if self.fast_join_at == Some(una) && !repeat {
            return None;
        }
        if self.nxt > una {
            return Some(Seg { off: una, len: self.nxt - una, fin: false, mask: 0, retrans: true });
        }
        self.peek().filter(|s| s.len > 0 && s.off == una).map(|s| Seg { fin: false, ..s })
    }

    /// Slot `bit` was freed (and may be reused by a new subflow): earlier reinjections no
    /// longer avoid it.
    pub fn forget_slot(&mut self, bit: u64) {
        for c in &mut self.retrans {
            c.mask &= !bit;
        }
    }

    /// A FAST_JOIN_OUT left with data from the current edge.
    pub fn on_fast_join_sent(&mut self) {
        self.fast_join_at = Some(self.una());
    }

    /// The part of `d` the peer has not acknowledged: what a probe or a redundant copy
    /// chosen earlier may still carry (`None` when the DATA_ACK covers it all, its DATA_FIN
    /// included).
    pub fn unacked_part(&self, d: DataRef) -> Option<DataRef> {
        let una = self.una();
        let end = d.off + u64::from(d.len);
        let fin = d.fin && !self.fin_acked;
        if end < una || (end == una && !fin) {
            return None;
        }
        let off = d.off.max(una);
        Some(DataRef { off, len: (end - off) as u32, fin })
    }

    /// Queues `d` to be sent again, with the subflow slots in `mask` marked as already used
    /// (a reinjection) or none (a loss on a working subflow, RFC 8684 §3.3.6). What the peer
    /// already acknowledged is left out.
    pub fn queue_retransmission(&mut self, d: DataRef, mask: u64) {
        let Some(DataRef { off, len, fin }) = self.unacked_part(d) else { return };
        // In DSN order (ties in arrival order), as TCP retransmits: the receiver's left edge
        // first. Timeouts of two subflows queue their flights one after the other; in arrival
        // order the hole a receiver waits on could sit behind every chunk of the other flight,
        // each sent (and refused by a full reassembly) in turn. Losses come oldest first, so
        // the place is almost always the back.
        let chunk = Chunk { off, len, fin, mask };
        // A range queued already (the same flight copied twice: a path declared failed by
        // its own connection and then by the oracle) is not sent twice; its mask grows.
        let at = self.retrans.partition_point(|c| c.off < off);
        if let Some(c) = self.retrans.range_mut(at..).take_while(|c| c.off == off).find(|c| c.len >= len) {
            c.mask |= mask;
            c.fin |= fin;
            return;
        }
        if self.retrans.back().is_none_or(|c| c.off <= off) {
            self.retrans.push_back(chunk);
        } else {
            let at = self.retrans.partition_point(|c| c.off <= off);
            self.retrans.insert(at, chunk);
        }
    }

    /// `d` left on the subflow of slot bit `bit`. Returns the bytes that were a reinjection
    /// (data queued from another subflow).
    pub fn on_sent(&mut self, d: DataRef, how: Sent, bit: u64) -> u64 {
        let end = d.off + u64::from(d.len);
        match how {
            Sent::New => {
                self.nxt = self.nxt.max(end);
                if d.fin {
                    self.fin_sent = true;
                }
                0
            }
            Sent::FromQueue => {
                let Some(c) = self.retrans.front_mut() else { return 0 };
                let reinjected = if c.mask != 0 && c.mask & bit == 0 { u64::from(d.len) } else { 0 };
                if c.off == d.off {
                    if d.len >= c.len {
                        self.retrans.pop_front();
                    } else {
                        // The rest of the chunk was not sent here: its mask stays.
                        c.off = end;
                        c.len -= d.len;
                    }
                }
                reinjected
            }
            Sent::Copy => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::send_buf::MIN_BUF;
    use super::*;

    fn side(start: u64, data: usize) -> SendSide {
        let mut s = SendSide::new(64);
        s.set_start(Dsn(start));
        s.set_peer_window(1000);
        assert_eq!(s.write(&vec![7u8; data]), data);
        s
    }

    fn send_all(s: &mut SendSide) -> Seg {
        let seg = s.peek().expect("something to send");
        s.on_sent(DataRef { off: seg.off, len: seg.len as u32, fin: seg.fin }, Sent::New, 1);
        seg
    }

    #[test]
    fn buffer_acks_and_copies_across_its_wrap() {
        let mut s = side(1000, 10);
        send_all(&mut s);
        assert_eq!(s.on_data_ack(Dsn(1006), 1000), Ok(Acked { advanced: true, bytes: 6 }));
        assert_eq!(s.write(&(0..80).collect::<Vec<u8>>()), 60, "only the room is taken");
        assert_eq!((s.una(), s.end()), (6, 70));
        let mut out = [0u8; 8];
        assert!(s.copy_out(8, &mut out));
        assert_eq!(out, [7, 7, 0, 1, 2, 3, 4, 5]);
        assert!(!s.copy_out(66, &mut out), "beyond the end");
        assert!(!s.copy_out(2, &mut out), "already acknowledged");
    }

    #[test]
    fn data_acks_across_the_dsn_wrap() {
        // The stream starts 4 bytes before 2^64: its DATA_ACKs wrap to small numbers.
        let mut s = side(u64::MAX - 3, 20);
        send_all(&mut s);
        assert_eq!(s.dsn(4), Dsn(0));
        assert_eq!(s.on_data_ack(Dsn(6), 500), Ok(Acked { advanced: true, bytes: 10 }));
        assert_eq!(s.una(), 10);
        assert_eq!(s.on_data_ack(Dsn(u64::MAX), 500), Ok(Acked { advanced: false, bytes: 0 }), "old");
        assert_eq!(s.on_data_ack(Dsn(17), 500), Err(InvalidAck), "one past what was sent");
        assert_eq!(s.on_data_ack(Dsn(u64::MAX - 4), 500), Err(InvalidAck), "before the stream");
        assert_eq!(s.on_data_ack(Dsn(1 << 63), 500), Err(InvalidAck), "far outside");
    }

    #[test]
    fn the_window_bounds_new_data_and_the_fin_follows_the_data() {
        let mut s = side(0, 30);
        s.set_peer_window(10);
        s.close();
        assert_eq!(s.peek(), Some(Seg { off: 0, len: 10, fin: false, mask: 0, retrans: false }));
        send_all(&mut s);
        assert_eq!(s.peek(), None, "window full");
        s.on_data_ack(Dsn(10), 100).unwrap();
        let seg = send_all(&mut s);
        assert_eq!((seg.off, seg.len, seg.fin), (10, 20, true), "the rest, with the DATA_FIN");
        assert_eq!(s.on_data_ack(Dsn(30), 100), Ok(Acked { advanced: true, bytes: 20 }));
        assert!(!s.fin_acked());
        assert_eq!(s.on_data_ack(Dsn(31), 100), Ok(Acked { advanced: true, bytes: 0 }), "the DATA_FIN's DSN");
        assert!(s.fin_acked());
        assert_eq!(s.on_data_ack(Dsn(32), 100), Err(InvalidAck));
    }

    #[test]
    fn retransmissions_skip_what_was_acknowledged_and_keep_their_mask() {
        let mut s = side(0, 40);
        send_all(&mut s);
        s.queue_retransmission(DataRef { off: 0, len: 10, fin: false }, 0b10);
        s.queue_retransmission(DataRef { off: 10, len: 20, fin: false }, 0);
        s.on_data_ack(Dsn(15), 100).unwrap();
        // The first chunk is acknowledged; the second is cut at the edge.
        assert_eq!(s.peek(), Some(Seg { off: 15, len: 15, fin: false, mask: 0, retrans: true }));
        assert_eq!(s.on_sent(DataRef { off: 15, len: 5, fin: false }, Sent::FromQueue, 1), 0);
        assert_eq!(s.peek().map(|g| (g.off, g.len)), Some((20, 10)), "the front shrank");
        s.queue_retransmission(DataRef { off: 30, len: 10, fin: false }, 0b10);
        s.on_sent(DataRef { off: 20, len: 10, fin: false }, Sent::FromQueue, 1);
        assert_eq!(s.peek().map(|g| g.mask), Some(0b10));
        assert_eq!(s.on_sent(DataRef { off: 30, len: 10, fin: false }, Sent::FromQueue, 1), 10, "a reinjection");
        s.queue_retransmission(DataRef { off: 0, len: 15, fin: false }, 0);
        assert_eq!(s.peek(), None, "wholly acknowledged: nothing queued");
        s.queue_retransmission(DataRef { off: 30, len: 10, fin: false }, 0b110);
        s.forget_slot(0b100);
        assert_eq!(s.peek().map(|g| g.mask), Some(0b10), "a freed slot is no longer avoided");
    }

    /// Two subflows time out one after the other: the second one's flight holds the hole at
    /// the receiver's left edge, and goes first (issue 23: in arrival order, a reassembly
    /// refusing everything but that hole stalled the transfer for good).
    #[test]
    fn retransmissions_go_in_dsn_order() {
        let mut s = side(0, 60);
        send_all(&mut s);
        for off in [20, 30, 40] {
            s.queue_retransmission(DataRef { off, len: 10, fin: false }, 0b01);
        }
        s.queue_retransmission(DataRef { off: 0, len: 10, fin: false }, 0b10);
        s.queue_retransmission(DataRef { off: 30, len: 5, fin: false }, 0b10);
        s.queue_retransmission(DataRef { off: 10, len: 10, fin: false }, 0b10);
        let mut order = Vec::new();
        while let Some(g) = s.peek() {
            order.push((g.off, g.mask));
            s.on_sent(DataRef { off: g.off, len: g.len as u32, fin: false }, Sent::FromQueue, 0b100);
        }
        // (30, 5) lies within the queued (30, 10): one copy goes, avoiding both subflows.
        assert_eq!(order, [(0, 0b10), (10, 0b10), (20, 0b01), (30, 0b11), (40, 0b01)]);
    }

    /// A path's flight copied for reinjection twice (its connection declared it failed, then
    /// the oracle did) is sent once: a failover's first flight carried every byte twice.
    #[test]
    fn a_range_queued_twice_is_sent_once() {
        let mut s = side(0, 30);
        send_all(&mut s);
        for _ in 0..2 {
            for off in [0, 10, 20] {
                s.queue_retransmission(DataRef { off, len: 10, fin: false }, 0b01);
            }
        }
        let mut sent = 0;
        while let Some(g) = s.peek() {
            sent += g.len;
            s.on_sent(DataRef { off: g.off, len: g.len as u32, fin: false }, Sent::FromQueue, 0b10);
        }
        assert_eq!(sent, 30);
    }

    #[test]
    fn a_range_chosen_before_a_data_ack_keeps_only_what_it_does_not_cover() {
        let mut s = side(0, 30);
        s.close();
        send_all(&mut s);
        s.on_data_ack(Dsn(10), 100).unwrap();
        let d = |off, len, fin| DataRef { off, len, fin };
        assert_eq!(s.unacked_part(d(0, 10, false)), None, "wholly acknowledged");
        assert_eq!(s.unacked_part(d(5, 10, false)), Some(d(10, 5, false)), "cut at the edge");
        assert_eq!(s.unacked_part(d(20, 10, true)), Some(d(20, 10, true)));
        s.on_data_ack(Dsn(30), 100).unwrap();
        assert_eq!(s.unacked_part(d(20, 10, true)), Some(d(30, 0, true)), "the DATA_FIN alone");
        s.on_data_ack(Dsn(31), 100).unwrap();
        assert_eq!(s.unacked_part(d(20, 10, true)), None, "the DATA_FIN too");
    }

    #[test]
    fn one_fast_join_out_per_edge() {
        let mut s = side(0, 30);
        assert_eq!(s.fast_join_segment(false).map(|g| (g.off, g.len)), Some((0, 30)), "new data from the edge");
        send_all(&mut s);
        s.on_fast_join_sent();
        assert_eq!(s.fast_join_segment(false), None, "this edge was used");
        assert!(s.fast_join_segment(true).is_some(), "unless a fault repeats it");
        s.on_data_ack(Dsn(10), 100).unwrap();
        let g = s.fast_join_segment(false).unwrap();
        assert_eq!((g.off, g.len, g.retrans), (10, 20, true), "what is in flight, from the new edge");
    }

    #[test]
    fn the_buffer_grows_with_what_is_written_and_is_given_back_when_acknowledged() {
        let mut s = SendSide::new(20_000);
        s.set_peer_window(1 << 20);
        assert_eq!(s.buffer_bytes(), 0, "an idle connection holds no buffer");
        assert_eq!(s.write(&[1; 100]), 100);
        let first = s.buffer_bytes();
        assert!((MIN_BUF..2 * MIN_BUF).contains(&first), "4 KiB first: {first}");
        assert_eq!(s.write(&[2; 30_000]), 19_900, "the send buffer's size still bounds what is taken");
        assert!(s.buffer_bytes() < 20_000 + 2 * MIN_BUF, "never far beyond the send buffer's size");
        let seg = s.peek().unwrap();
        s.on_sent(DataRef { off: seg.off, len: seg.len as u32, fin: false }, Sent::New, 1);
        s.trim();
        assert!(s.buffer_bytes() >= 20_000, "unacknowledged bytes keep it");
        s.on_data_ack(Dsn(20_000), 1 << 20).unwrap();
        s.trim();
        assert_eq!(s.buffer_bytes(), 0, "all acknowledged: given back");
    }
}
