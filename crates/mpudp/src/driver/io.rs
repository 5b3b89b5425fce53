//! The sockets: one per local path (by `PathId`), opened bound to a device, to an address, or
//! handed over by the application; GSO batches on the way out.

use super::state::State;
use crate::error::{Error, Result};
use crate::options::Interface;
use bytes::BytesMut;
use mpcore::Time;
use quinn_udp::UdpSocketState;
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::task::{Context, Poll};
use tokio::io::Interest;

/// Datagrams built per round before receiving again.
const TX_BUDGET: usize = 128;
/// The most a GSO batch carries (the kernel's limit is 64 KiB of payload).
const GSO_BYTES: usize = 65_000;

/// One local path's socket.
#[derive(Debug)]
pub(crate) struct PathSocket {
    pub(crate) io: tokio::net::UdpSocket,
    pub(crate) state: UdpSocketState,
    /// Datagrams per GSO batch on this socket (1: no GSO).
    pub(crate) max_segments: usize,
    /// A socket on the wildcard address answers each peer from the address the peer wrote to.
    pub(crate) replies: Option<ReplyFrom>,
}

impl PathSocket {
    /// Opens interface `i`'s socket on `addr` (or takes the one the application handed
    /// over); `max_datagram` bounds its GSO batches.
    pub(crate) fn open(
        i: &Interface,
        addr: SocketAddr,
        bufs: (usize, usize),
        max_datagram: usize,
        steering: Option<mpcore::Steering>,
    ) -> Result<Self> {
        let (io, state) = open_socket(i, addr, bufs.0, bufs.1, steering)?;
        let local =
            io.local_addr().map_err(|e| Error::Io { context: format!("reading the address of {addr}"), source: e })?;
        let max_segments = state.max_gso_segments().clamp(1, GSO_BYTES / max_datagram.max(1200));
        let replies = local.ip().is_unspecified().then(ReplyFrom::new);
        Ok(Self { io, state, max_segments, replies })
    }

    /// One sendmsg: `contents` to `remote`, as one datagram or (with `segment_size`) as a GSO
    /// batch, from the address the peer wrote to on a wildcard socket.
    fn send(&self, remote: SocketAddr, contents: &[u8], segment_size: Option<usize>) -> io::Result<()> {
        let t = quinn_udp::Transmit {
            destination: remote,
            ecn: None,
            contents,
            segment_size,
            src_ip: self.replies.as_ref().and_then(|r| r.source(remote)),
        };
        self.io.try_io(Interest::WRITABLE, || self.state.try_send((&self.io).into(), &t))
    }

    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.io.local_addr().unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)))
    }
}

/// The local address each peer last wrote to, learnt from IP_PKTINFO on a socket bound to the
/// wildcard address, so that answers leave from it rather than from whatever address the
/// route back to the peer prefers (which the peer does not know: a multihomed server).
#[derive(Debug)]
pub(crate) struct ReplyFrom {
    map: HashMap<SocketAddr, IpAddr>,
}

impl ReplyFrom {
    /// Peers remembered; past this the table is emptied and relearnt from the next datagrams,
    /// so it never grows (allocates) after the endpoint is built.
    const ENTRIES: usize = 4096;

    fn new() -> Self {
        Self { map: HashMap::with_capacity(Self::ENTRIES) }
    }

    pub(crate) fn learn(&mut self, peer: SocketAddr, local: IpAddr) {
        if self.map.get(&peer) != Some(&local) {
            if self.map.len() >= Self::ENTRIES {
                self.map.clear();
            }
            self.map.insert(peer, local);
        }
    }

    fn source(&self, peer: SocketAddr) -> Option<IpAddr> {
        self.map.get(&peer).copied()
    }
}

/// One path's datagrams being gathered into one GSO send; while the socket is full it is
/// that path's queue (at most `GSO_BYTES`; beyond, datagrams are dropped like at a full
/// drop-tail queue, and the protocol's loss detection and congestion control react).
#[derive(Debug)]
pub(crate) struct TxBatch {
    buf: BytesMut,
    /// Bytes of the batch at the start of `buf`.
    len: usize,
    /// Segment size (the first datagram's length); every one but the last has it.
    seg: usize,
    count: usize,
    remote: SocketAddr,
    /// The socket said WouldBlock: wait for its write readiness.
    blocked: bool,
    /// What the endpoint was last told of `blocked` (`Endpoint::set_path_writable`).
    announced: bool,
}

impl TxBatch {
    pub(crate) fn new() -> Self {
        Self {
            buf: BytesMut::zeroed(GSO_BYTES),
            len: 0,
            seg: 0,
            count: 0,
            remote: SocketAddr::from(([0, 0, 0, 0], 0)),
            blocked: false,
            announced: false,
        }
    }

    /// Whether a datagram of `len` bytes to `remote` can join this batch.
    fn accepts(&self, remote: SocketAddr, len: usize, max: usize) -> bool {
        self.count == 0
            || (remote == self.remote
                && self.count < max
                && len <= self.seg
                && self.len + len <= GSO_BYTES
                && self.len == self.count * self.seg)
    }

    fn push(&mut self, remote: SocketAddr, d: &[u8]) {
        self.buf[self.len..self.len + d.len()].copy_from_slice(d);
        self.commit(remote, d.len());
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
        }
        self.len += len;
        self.count += 1;
    }

    fn clear(&mut self) {
        self.len = 0;
        self.count = 0;
        self.blocked = false;
    }
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
}

fn open_socket(
    i: &Interface,
    addr: SocketAddr,
    rcvbuf: usize,
    sndbuf: usize,
    steering: Option<mpcore::Steering>,
) -> Result<(tokio::net::UdpSocket, UdpSocketState)> {
    use socket2::{Domain, Protocol, Socket, Type};
    if let Some(s) = i.adopted() {
        return adopt(s);
    }
    let dev = i.device.as_deref();
    let ctx = |what: &str| match dev {
        Some(d) => format!("{what} on interface {d} ({addr})"),
        None => format!("{what} ({addr})"),
    };
    let io_err = |e: io::Error, what: &str| Error::from_io(e, ctx(what), dev, addr);
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
        .map_err(|e| io_err(e, "creating a UDP socket"))?;
    if addr.is_ipv6() {
        s.set_only_v6(true).map_err(|e| io_err(e, "setting IPV6_V6ONLY"))?;
    }
    if let Some(d) = dev {
        if !crate::iface::exists(d) {
            return Err(Error::NoSuchDevice { name: d.into() });
        }
        bind_device(&s, d, addr).map_err(|e| io_err(e, "binding to the device"))?;
    }
    // A large receive buffer absorbs bursts; the send buffer is the queue towards the link
    // (`Options::send_buffer`). The kernel caps both at its own maxima.
    let _ = s.set_recv_buffer_size(rcvbuf);
    let _ = s.set_send_buffer_size(sndbuf);
    if steering.is_some() {
        // Every core's socket on the same address: a reuseport group, in core order.
        s.set_reuse_port(true).map_err(|e| io_err(e, "setting SO_REUSEPORT"))?;
    }
    s.bind(&addr.into()).map_err(|e| io_err(e, "binding"))?;
    if let Some(st) = steering.filter(|st| st.core() == 0) {
        super::reuseport::attach(&s, st.cores()).map_err(|e| io_err(e, "loading the steering program"))?;
    }
    s.set_nonblocking(true).map_err(|e| io_err(e, "setting non-blocking mode"))?;
    let std: std::net::UdpSocket = s.into();
    let state = UdpSocketState::new((&std).into()).map_err(|e| io_err(e, "configuring the socket"))?;
    let io = tokio::net::UdpSocket::from_std(std).map_err(|e| io_err(e, "registering the socket with tokio"))?;
    Ok((io, state))
}

/// A socket the application handed over, already bound to its network by the OS (Android's
/// `Network.bindSocket`, iOS's `IP_BOUND_IF`): used as it is, made non-blocking.
fn adopt(s: &std::net::UdpSocket) -> Result<(tokio::net::UdpSocket, UdpSocketState)> {
    let ctx = |what: &str| format!("{what} (a socket handed over)");
    let io_err = |e: io::Error, what: &str| Error::Io { context: ctx(what), source: e };
    let std = s.try_clone().map_err(|e| io_err(e, "duplicating"))?;
    std.set_nonblocking(true).map_err(|e| io_err(e, "setting non-blocking mode"))?;
    let state = UdpSocketState::new((&std).into()).map_err(|e| io_err(e, "configuring the socket"))?;
    let io = tokio::net::UdpSocket::from_std(std).map_err(|e| io_err(e, "registering the socket with tokio"))?;
    Ok((io, state))
}

/// `SO_BINDTODEVICE`: the socket's packets leave through the device whatever the routes say.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn bind_device(s: &socket2::Socket, device: &str, _addr: SocketAddr) -> io::Result<()> {
    s.bind_device(Some(device.as_bytes()))
}

/// `IP_BOUND_IF` / `IPV6_BOUND_IF` by the device's index: Apple's equivalent.
#[cfg(any(target_os = "macos", target_os = "ios"))]
fn bind_device(s: &socket2::Socket, device: &str, addr: SocketAddr) -> io::Result<()> {
    let index = crate::iface::index_of(device).and_then(std::num::NonZeroU32::new);
    let index = index.ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such device"))?;
    match addr {
        SocketAddr::V4(_) => s.bind_device_by_index_v4(Some(index)),
        SocketAddr::V6(_) => s.bind_device_by_index_v6(Some(index)),
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "macos", target_os = "ios")))]
fn bind_device(_s: &socket2::Socket, _device: &str, _addr: SocketAddr) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "binding a socket to a device"))
}

impl Io {
    /// Installs path `p`'s socket.
    pub(crate) fn install(&mut self, p: usize, sock: PathSocket) {
        if self.sockets.len() <= p {
            self.sockets.resize_with(p + 1, || None);
            self.tx.resize_with(p + 1, TxBatch::new);
        }
        self.tx[p].clear();
        self.sockets[p] = Some(sock);
    }

    /// Closes path `p`'s socket (what its batch held is dropped, as on a link gone).
    pub(crate) fn close(&mut self, p: usize) {
        if let Some(s) = self.sockets.get_mut(p) {
            *s = None;
            self.tx[p].clear();
        }
    }

    /// Sends what the endpoint has; returns whether anything was sent. A path whose socket is
    /// full does not hold up the others.
    pub(crate) fn transmit(&mut self, cx: &mut Context<'_>, st: &mut State, now: Time) -> bool {
        let mut progress = false;
        // Batches a full socket held back go first.
        for p in 0..self.tx.len() {
            if self.tx[p].count > 0 && self.flush(cx, st, p) == Flush::Done {
                progress = true;
            }
            self.announce(st, p);
        }
        // What `poll_transmit` needs: room for the largest datagram the endpoint sends.
        let room = st.ep.config().max_datagram_size.max(mpcore::wire::packet::MIN_INITIAL_SIZE);
        for _ in 0..TX_BUDGET {
            // The datagram is written straight into the batch of the path the last one took
            // (a bulk transfer's next one takes it too), saving a copy per datagram; else,
            // or when it goes elsewhere, through the scratch buffer.
            let guess = self.guess;
            let tail = self.tx.get_mut(guess).and_then(|b| b.tail(room));
            let in_place = tail.is_some();
            let Some(t) = st.ep.poll_transmit(now, tail.unwrap_or(&mut self.scratch)) else { break };
            progress = true;
            let p = usize::from(t.path.0);
            self.guess = p;
            let Some(max) = self.sockets.get(p).and_then(|s| s.as_ref()).map(|s| s.max_segments) else { continue };
            if in_place && p == guess && self.tx[p].accepts(t.remote, t.len, max) {
                self.tx[p].commit(t.remote, t.len);
            } else {
                if in_place {
                    // Another path's, or one that cannot join this batch: to the scratch buffer.
                    let (b, at) = (&self.tx[guess], self.tx[guess].len);
                    self.scratch[..t.len].copy_from_slice(&b.buf[at..at + t.len]);
                }
                if !self.tx[p].accepts(t.remote, t.len, max)
                    && (self.tx[p].blocked || self.flush(cx, st, p) == Flush::Blocked)
                {
                    // Rare: the endpoint stops writing for a path once told its socket is full.
                    self.announce(st, p);
                    st.paths[p].io.queue_drops += 1;
                    continue;
                }
                self.tx[p].push(t.remote, &self.scratch[..t.len]);
            }
            // A full batch, or one ended by a short datagram, leaves at once.
            let b = &self.tx[p];
            if !b.blocked && (b.count == max || t.len < b.seg) {
                self.flush(cx, st, p);
                self.announce(st, p);
            }
        }
        for p in 0..self.tx.len() {
            if self.tx[p].count > 0 && !self.tx[p].blocked {
                self.flush(cx, st, p);
            }
            self.announce(st, p);
        }
        progress
    }

    /// Tells the endpoint when path `p`'s socket fills (it then writes nothing for the path:
    /// a datagram the socket refused would be a loss we inflicted on ourselves) and when it
    /// drains.
    fn announce(&mut self, st: &mut State, p: usize) {
        let b = &mut self.tx[p];
        if b.announced != b.blocked {
            b.announced = b.blocked;
            st.ep.set_path_writable(mpcore::PathId(p as u8), !b.blocked);
        }
    }

    /// Sends path `p`'s batch, unless its socket is full: then the batch stays, and the
    /// socket's write readiness wakes the task.
    pub(crate) fn flush(&mut self, cx: &mut Context<'_>, st: &mut State, p: usize) -> Flush {
        let (Some(Some(sock)), Some(tx)) = (self.sockets.get_mut(p), self.tx.get_mut(p)) else { return Flush::Done };
        loop {
            match sock.io.poll_send_ready(cx) {
                Poll::Pending => {
                    tx.blocked = true;
                    return Flush::Blocked;
                }
                Poll::Ready(Err(e)) => {
                    tracing::warn!(path = p, error = %e, "socket not writable");
                    st.paths[p].io.send_errors += tx.count as u64;
                    break;
                }
                Poll::Ready(Ok(())) => {}
            }
            match sock.send(tx.remote, &tx.buf[..tx.len], (tx.count > 1).then_some(tx.seg)) {
                Ok(()) => {
                    st.paths[p].io.send_calls += 1;
                    let now = st.now();
                    st.count(p, now, true, tx.count, tx.len);
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) if tx.count > 1 && too_large(&e) => {
                    // A datagram of the batch is larger than the interface's MTU (a path MTU
                    // probe: the batch's first datagram sets its segment size): the kernel
                    // refuses the whole batch. Each goes alone, so that only the oversized
                    // one is lost, as the probe it is expects to be, and not the data beside it.
                    tracing::debug!(path = p, remote = %tx.remote, error = %e, "batch refused: sent one by one");
                    one_by_one(sock, tx, st, p);
                    break;
                }
                Err(e) => {
                    st.paths[p].io.send_errors += tx.count as u64;
                    // EIO: the device cannot segment (no GSO after all); send one by one.
                    if e.raw_os_error() == Some(5) && tx.count > 1 {
                        sock.max_segments = 1;
                    }
                    tracing::debug!(path = p, remote = %tx.remote, error = %e, "send failed");
                    break;
                }
            }
        }
        tx.clear();
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

/// Sends a batch's datagrams one at a time (after the kernel refused them as one GSO send)
/// and counts what went and what failed. A full socket here drops the rest, as a full queue
/// would.
fn one_by_one(sock: &PathSocket, tx: &TxBatch, st: &mut State, p: usize) {
    for d in tx.buf[..tx.len].chunks(tx.seg.max(1)) {
        match sock.send(tx.remote, d, None) {
            Ok(()) => {
                st.paths[p].io.send_calls += 1;
                let now = st.now();
                st.count(p, now, true, 1, d.len());
            }
            Err(_) => st.paths[p].io.send_errors += 1,
        }
    }
}
