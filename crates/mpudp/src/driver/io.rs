//! The sockets by path and the way out: the endpoint writes each datagram into its path's GSO batch while the
//! driver holds the endpoint's lock; the batches leave by `sendmsg` with the lock released,
//! so that the application's handles never wait on a system call. What the sends did (the
//! counters, the radio's packets, a socket that filled) is logged and told to the shared
//! state at the next lock.

use super::socket::{PathSocket, GSO_BYTES};
use super::state::{Shared, State};
use bytes::BytesMut;
use mpcore::Time;
use std::io;
use std::net::SocketAddr;
use std::task::{Context, Poll};

/// Datagrams built per round before receiving again.
const TX_BUDGET: usize = 128;

/// One path's datagrams being gathered into one GSO send; while the socket is full it is
/// that path's queue (at most `GSO_BYTES`, and one datagram built before the endpoint knew,
/// `held`; beyond, rarely, datagrams are dropped like at a full drop-tail queue, and the
/// protocol's loss detection and congestion control react).
#[derive(Debug)]
pub(crate) struct TxBatch {
    buf: BytesMut,
    /// Bytes of the batch at the start of `buf`.
    len: usize,
    /// Segment size (the first datagram's length); every one but the last has it.
    seg: usize,
    count: usize,
    remote: SocketAddr,
    /// The routing byte of its datagrams (`routing_byte`).
    key: Option<u8>,
    /// The socket said WouldBlock: wait for its write readiness.
    blocked: bool,
    /// What the endpoint was last told of `blocked` (`Endpoint::set_path_writable`).
    announced: bool,
    /// A datagram built before the endpoint learnt the socket was full (another connection's,
    /// which could not join the batch): it starts the next batch. Dropping it would be a loss
    /// we inflicted on ourselves, and cost that connection half its window.
    held: Vec<u8>,
    held_remote: SocketAddr,
}

impl TxBatch {
    pub(crate) fn new() -> Self {
        Self {
            buf: BytesMut::zeroed(GSO_BYTES),
            len: 0,
            seg: 0,
            count: 0,
            remote: SocketAddr::from(([0, 0, 0, 0], 0)),
            key: None,
            blocked: false,
            announced: false,
            held: Vec::new(),
            held_remote: SocketAddr::from(([0, 0, 0, 0], 0)),
        }
    }

    /// Whether datagram `d` to `remote` can join this batch.
    fn accepts(&self, remote: SocketAddr, d: &[u8], max: usize) -> bool {
        let len = d.len();
        self.count == 0
            || (remote == self.remote
                && routing_byte(d) == self.key
                && self.count < max
                && len <= self.seg
                && self.len + len <= GSO_BYTES
                && self.len == self.count * self.seg)
    }

    fn push(&mut self, remote: SocketAddr, d: &[u8]) {
        self.buf[self.len..self.len + d.len()].copy_from_slice(d);
        self.commit(remote, d.len());
    }

    /// The `len` bytes written at the batch's end (a datagram not yet taken).
    fn written(&self, len: usize) -> &[u8] {
        &self.buf[self.len..self.len + len]
    }

    /// The free end of the batch, where the next datagram may be written in place, if it has
    /// room for `max` bytes.
    fn tail(&mut self, max: usize) -> Option<&mut [u8]> {
        (!self.blocked && self.len + max <= self.buf.len()).then(|| &mut self.buf[self.len..self.len + max])
    }

    /// Takes the `len` bytes written at the batch's end as its next datagram.
    fn commit(&mut self, remote: SocketAddr, len: usize) {
        if self.count == 0 {
            self.remote = remote;
            self.seg = len;
            self.key = routing_byte(self.written(len));
        }
        self.len += len;
        self.count += 1;
    }

    pub(crate) fn clear(&mut self) {
        self.len = 0;
        self.count = 0;
        self.blocked = false;
        self.held.clear();
    }

    /// Keeps datagram `d` for the next batch; false if one is kept already.
    fn hold(&mut self, remote: SocketAddr, d: &[u8]) -> bool {
        if !self.held.is_empty() {
            return false;
        }
        // Allocated once per path, at its first full socket.
        self.held.extend_from_slice(d);
        self.held_remote = remote;
        true
    }

    /// The batch went: the datagram kept starts the next one.
    fn sent(&mut self) {
        let held = std::mem::take(&mut self.held);
        self.clear();
        if !held.is_empty() {
            self.push(self.held_remote, &held);
        }
        self.held = held;
        self.held.clear();
    }
}

/// The byte of a datagram that a fleet's balancer and a server's kernel read to find its server
/// and core (`mpcore::steering`): byte 1 of a short header, byte 5 of a long one. A GSO batch
/// crosses a software balancer (and a veth) as one packet whose first datagram's byte sends
/// the whole batch, so datagrams of different connections (one client socket carries
/// several, of several servers) never share a batch.
fn routing_byte(d: &[u8]) -> Option<u8> {
    let first = *d.first()?;
    d.get(if first & 0x80 == 0 { 1 } else { 5 }).copied()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flush {
    Done,
    Blocked,
}

/// The sockets by `PathId` (none where the path was removed or never was), a batch per
/// socket, and the buffer the endpoint writes each datagram into.
#[derive(Debug)]
pub(crate) struct Io {
    pub(crate) sockets: Vec<Option<PathSocket>>,
    pub(crate) tx: Vec<TxBatch>,
    pub(crate) scratch: BytesMut,
    /// The path the last datagram took: the next is written into its batch.
    pub(crate) guess: usize,
    /// What the sends did while the lock was released (`tx`).
    pub(crate) log: SendLog,
    /// The endpoint's clock's origin (the sends' times for the radio model).
    pub(crate) epoch: std::time::Instant,
    /// The TCP carriers (PROTOCOL.md §4.11).
    pub(crate) tcp: super::tcp::Tcp,
    /// Answers over TCP for carriers another core holds, to hand over once the lock is released.
    pub(crate) tcp_back: Vec<super::handoff::TcpBack>,
}

impl Io {
    /// Installs path `p`'s socket.
    pub(crate) fn install(&mut self, p: usize, sock: PathSocket) {
        if self.sockets.len() <= p {
            self.sockets.resize_with(p + 1, || None);
            self.tx.resize_with(p + 1, TxBatch::new);
            self.log.errors.resize(p + 1, (0, 0));
        }
        self.tx[p].clear();
        self.tcp.install(p, sock.local_addr(), &sock.binding, &sock.label);
        self.sockets[p] = Some(sock);
    }

    /// Closes path `p`'s socket (what its batch held is dropped, as on a link gone).
    pub(crate) fn close(&mut self, p: usize) {
        if let Some(s) = self.sockets.get_mut(p) {
            *s = None;
            self.tx[p].clear();
        }
        self.tcp.close_path(p);
    }
}

/// What the sockets did while the lock was released (see [`Io::apply`]).
#[derive(Debug)]
pub(crate) struct SendLog {
    /// Each send that went: (path, time, datagrams, bytes), for the counters and the radio.
    sent: Vec<(usize, Time, usize, usize)>,
    /// Per path: send errors and datagrams dropped in front of a full socket.
    errors: Vec<(u64, u64)>,
}

impl SendLog {
    pub(crate) fn new() -> Self {
        // Room for a batch sent one datagram at a time on each of a few paths: nothing grows
        // in steady state.
        Self { sent: Vec::with_capacity(256), errors: Vec::new() }
    }
}

impl Io {
    /// Sends what the endpoint has; returns whether anything was sent. A path whose socket is
    /// full does not hold up the others. The lock on `shared` is taken to build datagrams and
    /// released around every send.
    pub(crate) fn transmit(&mut self, cx: &mut Context<'_>, shared: &Shared, now: Time) -> bool {
        let mut progress = false;
        // Batches a full socket held back go first.
        for p in 0..self.tx.len() {
            if self.tx[p].count > 0 && self.flush(cx, p) == Flush::Done {
                progress = true;
            }
        }
        let mut st = shared.lock();
        self.apply(&mut st);
        // What `poll_transmit` needs: room for the largest datagram the endpoint sends.
        let room = st.ep.config().transport.max_datagram_size.max(mpcore::wire::packet::MIN_INITIAL_SIZE);
        for _ in 0..TX_BUDGET {
            // The datagram is written straight into the batch of the path the last one took
            // (a bulk transfer's next one takes it too), saving a copy per datagram; else,
            // or when it goes elsewhere, through the scratch buffer.
            let guess = self.guess;
            let tail = self.tx.get_mut(guess).and_then(|b| b.tail(room));
            let in_place = tail.is_some();
            let Some(t) = st.ep.poll_transmit(now, tail.unwrap_or(&mut self.scratch)) else { break };
            progress = true;
            if t.carrier == mpcore::Carrier::Tcp {
                // A record for the path's TCP carrier, queued (written without the lock).
                let p = usize::from(t.path.0);
                let d = if in_place { self.tx[guess].written(t.len) } else { &self.scratch[..t.len] };
                match st.relays.of(p, t.remote).filter(|_| !self.tcp.has_carrier(p, t.remote)) {
                    // Another core holds the carrier (a server on several cores): it writes it.
                    Some(relay) => self.tcp_back.push((relay, p, t.remote, d.to_vec())),
                    None => self.tcp.queue(p, t.remote, d),
                }
                st.count(p, now, true, 1, t.len);
                self.announce(&mut st, p);
                continue;
            }
            let p = usize::from(t.path.0);
            self.guess = p;
            let Some(max) = self.sockets.get(p).and_then(|s| s.as_ref()).map(|s| s.segments(t.len)) else { continue };
            if in_place && p == guess && self.tx[p].accepts(t.remote, self.tx[p].written(t.len), max) {
                self.tx[p].commit(t.remote, t.len);
            } else {
                if in_place {
                    // Another path's, or one that cannot join this batch: to the scratch buffer.
                    let (b, at) = (&self.tx[guess], self.tx[guess].len);
                    self.scratch[..t.len].copy_from_slice(&b.buf[at..at + t.len]);
                }
                if !self.tx[p].accepts(t.remote, &self.scratch[..t.len], max) {
                    // The batch leaves first, without the lock.
                    let blocked = self.tx[p].blocked || {
                        drop(st);
                        let f = self.flush(cx, p);
                        st = shared.lock();
                        self.apply(&mut st);
                        f == Flush::Blocked
                    };
                    if blocked {
                        // The endpoint stops writing for a path once told its socket is full;
                        // the datagram it built before is kept (a second one, rarer, dropped).
                        self.announce(&mut st, p);
                        if !self.tx[p].hold(t.remote, &self.scratch[..t.len]) {
                            st.paths[p].io.queue_drops += 1;
                        }
                        continue;
                    }
                }
                self.tx[p].push(t.remote, &self.scratch[..t.len]);
            }
            // A full batch, or one ended by a short datagram, leaves at once.
            let b = &self.tx[p];
            if !b.blocked && (b.count >= max || t.len < b.seg) {
                drop(st);
                self.flush(cx, p);
                st = shared.lock();
                self.apply(&mut st);
            }
        }
        drop(st);
        for p in 0..self.tx.len() {
            if self.tx[p].count > 0 && !self.tx[p].blocked {
                self.flush(cx, p);
            }
        }
        self.apply(&mut shared.lock());
        progress
    }

    /// Tells the shared state what the sends did since the last time, and the endpoint which
    /// paths' sockets are full.
    pub(crate) fn apply(&mut self, st: &mut State) {
        for (p, t, count, bytes) in self.log.sent.drain(..) {
            st.paths[p].io.send_calls += 1;
            st.count(p, t, true, count, bytes);
        }
        for (p, e) in self.log.errors.iter_mut().enumerate() {
            if *e != (0, 0) {
                st.paths[p].io.send_errors += e.0;
                st.paths[p].io.queue_drops += e.1;
                *e = (0, 0);
            }
        }
        for (p, e) in self.tcp.events.iter_mut().enumerate() {
            if let Some(io) = st.paths.get_mut(p).map(|i| &mut i.io) {
                io.tcp_opened += std::mem::take(&mut e.opened);
                io.tcp_refused += std::mem::take(&mut e.refused);
                io.tcp_closed += std::mem::take(&mut e.closed);
                io.queue_drops += std::mem::take(&mut e.dropped);
            }
        }
        for p in 0..self.tx.len() {
            self.announce(st, p);
        }
    }

    /// Tells the endpoint when path `p`'s socket fills (it then writes nothing for the path:
    /// a datagram the socket refused would be a loss we inflicted on ourselves) and when it
    /// drains.
    fn announce(&mut self, st: &mut State, p: usize) {
        let full = self.tcp.full(p);
        let Some(b) = self.tx.get_mut(p) else { return };
        let blocked = b.blocked || full;
        if b.announced != blocked {
            b.announced = blocked;
            st.ep.set_path_writable(mpcore::PathId(p as u8), !blocked);
        }
    }

    /// Sends path `p`'s batch, unless its socket is full: then the batch stays, and the
    /// socket's write readiness wakes the task. Called without the lock; what happened goes
    /// to the log.
    pub(crate) fn flush(&mut self, cx: &mut Context<'_>, p: usize) -> Flush {
        let (Some(Some(sock)), Some(tx)) = (self.sockets.get_mut(p), self.tx.get_mut(p)) else { return Flush::Done };
        // One clock read per send: its time for the log (since the endpoint's origin) and for
        // the socket's rate.
        let epoch = self.epoch;
        let now = move || {
            let t = std::time::Instant::now();
            (t, t.duration_since(epoch).as_micros() as Time)
        };
        loop {
            match sock.io.poll_send_ready(cx) {
                Poll::Pending => {
                    tx.blocked = true;
                    return Flush::Blocked;
                }
                Poll::Ready(Err(e)) => {
                    tracing::warn!(path = p, error = %e, "socket not writable");
                    self.log.errors[p].0 += tx.count as u64;
                    break;
                }
                Poll::Ready(Ok(())) => {}
            }
            match sock.send(tx.remote, &tx.buf[..tx.len], (tx.count > 1).then_some(tx.seg)) {
                Ok(()) => {
                    let (t, at) = now();
                    self.log.sent.push((p, at, tx.count, tx.len));
                    sock.on_sent(t, tx.len);
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) if tx.count > 1 && too_large(&e) => {
                    // A datagram of the batch is larger than the interface's MTU (a path MTU
                    // probe: the batch's first datagram sets its segment size): the kernel
                    // refuses the whole batch. Each goes alone, so that only the oversized
                    // one is lost, as the probe it is expects to be, and not the data beside it.
                    tracing::debug!(path = p, remote = %tx.remote, error = %e, "batch refused: sent one by one");
                    for d in tx.buf[..tx.len].chunks(tx.seg.max(1)) {
                        match sock.send(tx.remote, d, None) {
                            Ok(()) => {
                                let (t, at) = now();
                                self.log.sent.push((p, at, 1, d.len()));
                                sock.on_sent(t, d.len());
                            }
                            Err(_) => self.log.errors[p].0 += 1,
                        }
                    }
                    break;
                }
                Err(e) => {
                    self.log.errors[p].0 += tx.count as u64;
                    // EIO: the device cannot segment (no GSO after all); send one by one.
                    if e.raw_os_error() == Some(5) && tx.count > 1 {
                        sock.max_segments = 1;
                    }
                    tracing::debug!(path = p, remote = %tx.remote, error = %e, "send failed");
                    break;
                }
            }
        }
        tx.sent();
        Flush::Done
    }
}

/// EMSGSIZE: a datagram larger than the interface's MTU. (The kernel says EINVAL, which
/// std reports as `InvalidInput`, for a GSO batch whose segment size is.)
#[cfg(any(target_os = "macos", target_os = "ios"))]
const EMSGSIZE: i32 = 40;
#[cfg(not(any(target_os = "macos", target_os = "ios")))]
const EMSGSIZE: i32 = 90;

/// The kernel refused a send for a datagram larger than the interface allows.
fn too_large(e: &io::Error) -> bool {
    e.raw_os_error() == Some(EMSGSIZE) || e.kind() == io::ErrorKind::InvalidInput
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 40: a datagram built for a path whose socket turned out full (another
    /// connection's, which could not join the batch) is kept, and starts the next batch once
    /// the full one went; only a second one is dropped. Before, it was dropped: with two
    /// uploads from one endpoint, 1,615 self-inflicted losses in 1 GB.
    #[test]
    fn a_datagram_built_for_a_full_socket_starts_the_next_batch() {
        let (a, b): (SocketAddr, SocketAddr) = ("10.0.0.1:1".parse().unwrap(), "10.0.0.2:2".parse().unwrap());
        let mut tx = TxBatch::new();
        tx.push(a, &[0x40, 1, 2, 3]);
        tx.push(a, &[0x40, 1, 2, 4]);
        tx.blocked = true;
        assert!(tx.hold(b, &[0x40, 9, 9, 9, 9]), "the first is kept");
        assert!(!tx.hold(b, &[0x40, 8, 8]), "a second is not");
        tx.sent();
        assert_eq!((tx.count, tx.len, tx.remote, tx.blocked), (1, 5, b, false));
        assert_eq!(&tx.buf[..5], &[0x40, 9, 9, 9, 9], "the kept datagram starts the batch");
        tx.sent();
        assert_eq!((tx.count, tx.len), (0, 0), "and is sent once");
        assert!(tx.hold(a, &[0x40, 7]), "room again");
        tx.clear();
        tx.sent();
        assert_eq!(tx.count, 0, "a path closed drops it");
    }
}
