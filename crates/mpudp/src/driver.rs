//! The driver: one tokio task per endpoint owns the sockets and a clock and runs the sans-IO
//! `mpcore::Endpoint`; the application's handles share the endpoint behind a mutex and wake
//! the task when they change what it has to send (quinn's design).
//!
//! Each poll of the task repeats, until nothing moves: receive a batch of datagrams from every
//! socket (recvmmsg, GRO super-datagrams split at their stride), run the timers that are due,
//! check the links (sysfs, every `monitor_interval`), hand events to the waiting handles, and
//! send what the endpoint has (consecutive datagrams to the same peer on the same socket go out
//! as one UDP GSO batch). Every buffer is allocated when the endpoint is built, none per packet.

use crate::error::{Error, Result};
use crate::iface::LinkWatch;
use crate::options::{Interface, Options};
use bytes::BytesMut;
use mpcore::{CloseReason, ConnHandle, Endpoint, Event, Iface, LocalPath, PathId, Time};
use oracle::energy::{Energy, Meter, Model};
use quinn_udp::{RecvMeta, UdpSocketState};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::io::{self, IoSliceMut};
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use tokio::io::Interest;
use tokio::time::Sleep;

/// Datagrams (or GRO super-datagrams) read by one recvmmsg call.
const BATCH: usize = 8;
/// Room for one GRO super-datagram.
const CHUNK: usize = 65_536;
/// recvmmsg calls on one socket before the others get their turn.
const RECV_ROUNDS: usize = 2;
/// Datagrams built per round before receiving again.
const TX_BUDGET: usize = 128;
/// Datagrams handled between two sends (the ACKs they elicit leave without waiting for the
/// rest of a receive batch).
const ACK_EVERY: usize = 16;
/// Rounds per poll before the task yields to the runtime.
const ROUNDS: usize = 16;
/// The most a GSO batch carries (the kernel's limit is 64 KiB of payload).
const GSO_BYTES: usize = 65_000;

/// Datagrams and bytes through one local path's socket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounters {
    pub datagrams_sent: u64,
    pub bytes_sent: u64,
    pub datagrams_received: u64,
    pub bytes_received: u64,
    /// sendmsg calls (one per GSO batch).
    pub send_calls: u64,
    /// recvmmsg calls that returned data.
    pub recv_calls: u64,
    /// Datagrams the kernel refused to send (the link is down, no route): lost, like a drop
    /// on the path, and recovered by the protocol.
    pub send_errors: u64,
    /// Datagrams dropped because the socket stayed full while more than a GSO batch waited
    /// (a drop-tail queue in front of the socket; the protocol sees them as lost).
    pub queue_drops: u64,
    /// Errors reading the socket (ICMP errors reported on it, among others).
    pub recv_errors: u64,
    /// Up/down transitions of the interface seen by the driver.
    pub link_changes: u64,
}

/// One local path as the driver sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct PathInfo {
    /// The device the socket is bound to (`SO_BINDTODEVICE`), if any.
    pub device: Option<String>,
    /// The socket's local address.
    pub addr: SocketAddr,
    pub kind: Iface,
    pub backup: bool,
    /// The link was up at the last check.
    pub up: bool,
    pub io: IoCounters,
    /// When the first datagram crossed this path, either way.
    pub first_packet: Option<Instant>,
    /// A cellular path's radio energy since the endpoint was built, by the LTE model of
    /// Huang et al. ([`oracle::energy`]) over every datagram sent and received; `None` for
    /// other kinds of interface.
    pub radio: Option<Energy>,
}

/// What the application's handles and the driver share.
#[derive(Debug)]
pub(crate) struct Shared {
    state: Mutex<State>,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves the endpoint as consistent as mpcore left it;
        // the state machine itself never panics on input.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Wakers and news of one connection.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    pub(crate) read: Option<Waker>,
    pub(crate) write: Option<Waker>,
    pub(crate) connect: Option<Waker>,
    pub(crate) close: Option<Waker>,
    pub(crate) connected: bool,
    pub(crate) closed: Option<CloseReason>,
}

#[derive(Debug)]
pub(crate) struct State {
    pub(crate) ep: Endpoint,
    epoch: Instant,
    slots: Vec<Slot>,
    driver: Option<Waker>,
    pub(crate) accepted: VecDeque<ConnHandle>,
    pub(crate) accept_waker: Option<Waker>,
    /// Application handles alive (endpoints, listeners, streams); the driver ends when none
    /// is left and every connection has drained.
    pub(crate) refs: usize,
    pub(crate) paths: Vec<PathInfo>,
    /// Per path: every datagram's time and size, summed up by the energy model (cellular
    /// paths only; `first_packet` is kept for every path).
    meters: Vec<Meter>,
    /// The driver task has ended.
    pub(crate) stopped: bool,
    pub(crate) idle_waker: Option<Waker>,
    /// Live connections at the last `dispatch`.
    live: usize,
}

impl State {
    /// Microseconds since the endpoint was built: the core's clock.
    pub(crate) fn now(&self) -> Time {
        self.epoch.elapsed().as_micros() as Time
    }

    fn instant(&self, t: Time) -> Instant {
        self.epoch + Duration::from_micros(t)
    }

    /// A snapshot of the paths, with their first packet and radio energy up to now.
    pub(crate) fn path_infos(&self) -> Vec<PathInfo> {
        let now = self.now();
        let mut v = self.paths.clone();
        for (info, meter) in v.iter_mut().zip(&self.meters) {
            info.first_packet = meter.first_packet().map(|t| self.instant(t));
            info.radio = (info.kind == Iface::Cellular).then(|| meter.estimate(now));
        }
        v
    }

    /// Counts `count` datagrams of `bytes` in all on path `p` at `now`.
    fn count(&mut self, p: usize, now: Time, up: bool, count: usize, bytes: usize) {
        let io = &mut self.paths[p].io;
        if up {
            io.datagrams_sent += count as u64;
            io.bytes_sent += bytes as u64;
        } else {
            io.datagrams_received += count as u64;
            io.bytes_received += bytes as u64;
        }
        self.meters[p].packet(now, up, bytes);
    }

    pub(crate) fn wake_driver(&self) {
        if let Some(w) = &self.driver {
            w.wake_by_ref();
        }
    }

    pub(crate) fn slot(&mut self, h: ConnHandle) -> &mut Slot {
        if self.slots.len() <= h.0 {
            self.slots.resize_with(h.0 + 1, Slot::default);
        }
        &mut self.slots[h.0]
    }

    /// Hands the endpoint's events and accepted connections to the handles waiting for them.
    fn dispatch(&mut self) {
        while let Some((h, ev)) = self.ep.poll_event() {
            let slot = self.slot(h);
            match ev {
                Event::Connected => {
                    slot.connected = true;
                    wake(&mut slot.connect);
                }
                Event::Readable | Event::Finished => wake(&mut slot.read),
                Event::Closed { reason } => {
                    slot.closed = Some(reason);
                    for w in [&mut slot.read, &mut slot.write, &mut slot.connect, &mut slot.close] {
                        wake(w);
                    }
                }
                other => tracing::debug!(conn = h.0, event = ?other, "connection event"),
            }
        }
        // A connection drained (the endpoint forgot it): whoever waits for idleness checks.
        let live = self.ep.live_connections();
        if live < self.live {
            wake(&mut self.idle_waker);
        }
        self.live = live;
        while let Some(h) = self.ep.accept() {
            self.accepted.push_back(h);
            wake(&mut self.accept_waker);
        }
        // Writers blocked on a full send buffer: acknowledgements may have made room.
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if slot.write.is_some() && self.ep.conn(ConnHandle(i)).is_none_or(|c| c.write_room() > 0 || c.is_closed()) {
                wake(&mut slot.write);
            }
        }
    }

    fn wake_all(&mut self) {
        for s in &mut self.slots {
            for w in [&mut s.read, &mut s.write, &mut s.connect, &mut s.close] {
                wake(w);
            }
        }
        for w in [&mut self.accept_waker, &mut self.idle_waker] {
            wake(w);
        }
    }
}

/// Keeps `w` in `slot` without cloning it again when it is the same task.
pub(crate) fn store(slot: &mut Option<Waker>, w: &Waker) {
    match slot {
        Some(old) if old.will_wake(w) => {}
        _ => *slot = Some(w.clone()),
    }
}

fn wake(slot: &mut Option<Waker>) {
    if let Some(w) = slot.take() {
        w.wake();
    }
}

/// One local path's socket.
#[derive(Debug)]
struct PathSocket {
    io: tokio::net::UdpSocket,
    state: UdpSocketState,
    watch: Option<LinkWatch>,
    /// Datagrams per GSO batch on this socket (1: no GSO).
    max_segments: usize,
    /// A socket on the wildcard address answers each peer from the address the peer wrote to.
    replies: Option<ReplyFrom>,
}

/// The local address each peer last wrote to, learnt from IP_PKTINFO on a socket bound to the
/// wildcard address, so that answers leave from it rather than from whatever address the
/// route back to the peer prefers (which the peer does not know: a multihomed server).
#[derive(Debug)]
struct ReplyFrom {
    map: HashMap<SocketAddr, IpAddr>,
}

impl ReplyFrom {
    /// Peers remembered; past this the table is emptied and relearnt from the next datagrams,
    /// so it never grows (allocates) after the endpoint is built.
    const ENTRIES: usize = 4096;

    fn new() -> Self {
        Self { map: HashMap::with_capacity(Self::ENTRIES) }
    }

    fn learn(&mut self, peer: SocketAddr, local: IpAddr) {
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
struct TxBatch {
    buf: BytesMut,
    /// Bytes of the batch at the start of `buf`.
    len: usize,
    /// Segment size (the first datagram's length); every one but the last has it.
    seg: usize,
    count: usize,
    remote: SocketAddr,
    /// The socket said WouldBlock: wait for its write readiness.
    blocked: bool,
}

impl TxBatch {
    fn new() -> Self {
        Self {
            buf: BytesMut::zeroed(GSO_BYTES),
            len: 0,
            seg: 0,
            count: 0,
            remote: SocketAddr::from(([0, 0, 0, 0], 0)),
            blocked: false,
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
        if self.count == 0 {
            self.remote = remote;
            self.seg = d.len();
        }
        self.buf[self.len..self.len + d.len()].copy_from_slice(d);
        self.len += d.len();
        self.count += 1;
    }

    fn clear(&mut self) {
        self.len = 0;
        self.count = 0;
        self.blocked = false;
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flush {
    Done,
    Blocked,
}

/// The sockets, a batch per socket, and the buffer the endpoint writes each datagram into.
#[derive(Debug)]
struct Io {
    sockets: Vec<PathSocket>,
    tx: Vec<TxBatch>,
    scratch: BytesMut,
}

/// The endpoint's task.
#[derive(Debug)]
pub(crate) struct Driver {
    shared: Arc<Shared>,
    io: Io,
    rx: BytesMut,
    meta: [RecvMeta; BATCH],
    timer: Pin<Box<Sleep>>,
    armed: Option<Instant>,
    next_monitor: Instant,
    monitor_interval: Duration,
}

/// Builds the sockets and the endpoint and spawns the driver. Must run inside a tokio runtime.
/// The returned share already counts as one handle (see `attach`), so that the driver cannot
/// see no handle and stop before the caller holds it.
pub(crate) fn start(opts: &Options, server: bool, v6: bool) -> Result<Arc<Shared>> {
    opts.validate()?;
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(Error::Config("mpudp endpoints must be created inside a tokio runtime".into()));
    }
    let ifaces = if opts.interfaces.is_empty() {
        let any: SocketAddr = if v6 { "[::]:0" } else { "0.0.0.0:0" }.parse().expect("a literal address");
        vec![Interface::unbound(any)]
    } else {
        opts.interfaces.clone()
    };
    let mut sockets = Vec::with_capacity(ifaces.len());
    let mut paths = Vec::with_capacity(ifaces.len());
    let mut infos = Vec::with_capacity(ifaces.len());
    for i in &ifaces {
        let addr = i.resolve(v6)?;
        let (io, state) = open_socket(i, addr, opts.socket_buffer, opts.send_buffer)?;
        let local =
            io.local_addr().map_err(|e| Error::Io { context: format!("reading the address of {addr}"), source: e })?;
        let mut watch = i.device.as_deref().and_then(LinkWatch::new);
        let max_segments = state.max_gso_segments().clamp(1, GSO_BYTES / opts.config.max_datagram_size.max(1200));
        let info = PathInfo {
            device: i.device.clone(),
            addr: local,
            kind: i.role(),
            backup: i.backup,
            up: watch.as_mut().is_none_or(|w| w.is_up()),
            io: IoCounters::default(),
            first_packet: None,
            radio: None,
        };
        paths.push(LocalPath { addr: local, iface: info.kind, backup: i.backup });
        infos.push(info);
        let replies = local.ip().is_unspecified().then(ReplyFrom::new);
        sockets.push(PathSocket { io, state, watch, max_segments, replies });
    }
    let mut ep = Endpoint::new(opts.config.clone(), paths, server).map_err(|e| Error::Config(e.to_string()))?;
    let epoch = Instant::now();
    for (p, info) in infos.iter().enumerate() {
        if !info.up {
            ep.set_path_up(0, PathId(p as u8), false);
        }
    }
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            ep,
            epoch,
            slots: Vec::new(),
            driver: None,
            accepted: VecDeque::new(),
            accept_waker: None,
            refs: 1,
            meters: vec![Meter::new(Model::default(), 0); infos.len()],
            paths: infos,
            stopped: false,
            idle_waker: None,
            live: 0,
        }),
    });
    let driver = Driver {
        shared: shared.clone(),
        rx: BytesMut::zeroed(BATCH * CHUNK),
        meta: [RecvMeta::default(); BATCH],
        io: Io { tx: (0..sockets.len()).map(|_| TxBatch::new()).collect(), sockets, scratch: BytesMut::zeroed(CHUNK) },
        timer: Box::pin(tokio::time::sleep(Duration::from_secs(3600))),
        armed: None,
        next_monitor: epoch + opts.monitor_interval,
        monitor_interval: opts.monitor_interval,
    };
    tokio::spawn(driver);
    Ok(shared)
}

fn open_socket(
    i: &Interface,
    addr: SocketAddr,
    rcvbuf: usize,
    sndbuf: usize,
) -> Result<(tokio::net::UdpSocket, UdpSocketState)> {
    use socket2::{Domain, Protocol, Socket, Type};
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
        s.bind_device(Some(d.as_bytes())).map_err(|e| io_err(e, "binding to the device"))?;
    }
    // A large receive buffer absorbs bursts; the send buffer is the queue towards the link
    // (`Options::send_buffer`). The kernel caps both at its own maxima.
    let _ = s.set_recv_buffer_size(rcvbuf);
    let _ = s.set_send_buffer_size(sndbuf);
    s.bind(&addr.into()).map_err(|e| io_err(e, "binding"))?;
    s.set_nonblocking(true).map_err(|e| io_err(e, "setting non-blocking mode"))?;
    let std: std::net::UdpSocket = s.into();
    let state = UdpSocketState::new((&std).into()).map_err(|e| io_err(e, "configuring the socket"))?;
    let io = tokio::net::UdpSocket::from_std(std).map_err(|e| io_err(e, "registering the socket with tokio"))?;
    Ok((io, state))
}

impl Future for Driver {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let shared = this.shared.clone();
        let mut st = shared.lock();
        store(&mut st.driver, cx.waker());
        for _ in 0..ROUNDS {
            let now = st.now();
            let mut progress = this.receive(cx, &mut st, now);
            if st.ep.poll_timeout().is_some_and(|t| t <= now) {
                st.ep.handle_timeout(now);
                progress = true;
            }
            this.monitor(&mut st, now);
            progress |= this.io.transmit(cx, &mut st, now);
            st.dispatch();
            if st.refs == 0 && st.ep.live_connections() == 0 {
                st.stopped = true;
                st.driver = None;
                st.wake_all();
                return Poll::Ready(());
            }
            let deadline = st.ep.poll_timeout().map_or(this.next_monitor, |t| st.instant(t).min(this.next_monitor));
            if this.armed != Some(deadline) {
                this.timer.as_mut().reset(deadline.into());
                this.armed = Some(deadline);
            }
            let fired = this.timer.as_mut().poll(cx).is_ready();
            if fired {
                this.armed = None;
            }
            if !progress && !fired {
                return Poll::Pending;
            }
        }
        // Still busy: let other tasks run, then go on.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl Driver {
    /// Reads what every socket has (a bounded number of batches each) into the endpoint. What
    /// the endpoint has to send goes out every `ACK_EVERY` datagrams: a GRO batch holds dozens
    /// of them, and the peer's congestion window needs the ACKs they elicit.
    fn receive(&mut self, cx: &mut Context<'_>, st: &mut State, now: Time) -> bool {
        let Driver { io, rx, meta, .. } = self;
        let mut progress = false;
        let mut since_tx = 0;
        for i in 0..io.sockets.len() {
            let mut reads = 0;
            // Until the socket is empty (a WouldBlock, then a Pending that registers the wakeup)
            // or the budget is spent (then the next round comes back here).
            while reads < RECV_ROUNDS {
                let sock = &io.sockets[i];
                match sock.io.poll_recv_ready(cx) {
                    Poll::Pending => break,
                    Poll::Ready(Err(e)) => {
                        tracing::warn!(path = i, error = %e, "socket not readable");
                        break;
                    }
                    Poll::Ready(Ok(())) => {}
                }
                let res = {
                    let mut chunks = rx.chunks_mut(CHUNK);
                    let mut bufs: [IoSliceMut<'_>; BATCH] =
                        std::array::from_fn(|_| IoSliceMut::new(chunks.next().unwrap_or(&mut [])));
                    sock.io.try_io(Interest::READABLE, || sock.state.recv((&sock.io).into(), &mut bufs, meta))
                };
                let n = match res {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(e) => {
                        st.paths[i].io.recv_errors += 1;
                        tracing::debug!(path = i, error = %e, "receive error");
                        break;
                    }
                };
                reads += 1;
                st.paths[i].io.recv_calls += 1;
                progress = true;
                for (k, m) in meta.iter().enumerate().take(n) {
                    if let (Some(r), Some(local)) = (io.sockets[i].replies.as_mut(), m.dst_ip) {
                        r.learn(unmap(m.addr), local);
                    }
                    let data = &rx[k * CHUNK..k * CHUNK + m.len.min(CHUNK)];
                    let stride = if m.stride == 0 { m.len } else { m.stride };
                    for d in data.chunks(stride.max(1)) {
                        st.count(i, now, false, 1, d.len());
                        st.ep.handle_datagram(now, PathId(i as u8), unmap(m.addr), d);
                        since_tx += 1;
                        if since_tx == ACK_EVERY {
                            since_tx = 0;
                            io.transmit(cx, st, now);
                        }
                    }
                }
            }
        }
        progress
    }

    /// Checks the links every `monitor_interval`; an interface that went down or came back is
    /// reported to the endpoint (`Endpoint::set_path_up`).
    fn monitor(&mut self, st: &mut State, now: Time) {
        let at = st.instant(now);
        if at < self.next_monitor {
            return;
        }
        self.next_monitor = at + self.monitor_interval;
        for (i, sock) in self.io.sockets.iter_mut().enumerate() {
            let Some(w) = sock.watch.as_mut() else { continue };
            let up = w.is_up();
            if up != st.paths[i].up {
                st.paths[i].up = up;
                st.paths[i].io.link_changes += 1;
                tracing::info!(path = i, device = ?st.paths[i].device, up, "link state changed");
                st.ep.set_path_up(now, PathId(i as u8), up);
            }
        }
    }
}

impl Io {
    /// Sends what the endpoint has; returns whether anything was sent. A path whose socket is
    /// full does not hold up the others.
    fn transmit(&mut self, cx: &mut Context<'_>, st: &mut State, now: Time) -> bool {
        let mut progress = false;
        // Batches a full socket held back go first.
        for p in 0..self.tx.len() {
            if self.tx[p].count > 0 && self.flush(cx, st, p) == Flush::Done {
                progress = true;
            }
        }
        for _ in 0..TX_BUDGET {
            let Some(t) = st.ep.poll_transmit(now, &mut self.scratch) else { break };
            progress = true;
            let p = usize::from(t.path.0);
            let Some(max) = self.sockets.get(p).map(|s| s.max_segments) else { continue };
            if !self.tx[p].accepts(t.remote, t.len, max)
                && (self.tx[p].blocked || self.flush(cx, st, p) == Flush::Blocked)
            {
                st.paths[p].io.queue_drops += 1;
                continue;
            }
            let b = &mut self.tx[p];
            b.push(t.remote, &self.scratch[..t.len]);
            // A full batch, or one ended by a short datagram, leaves at once.
            if !b.blocked && (b.count == max || t.len < b.seg) {
                self.flush(cx, st, p);
            }
        }
        for p in 0..self.tx.len() {
            if self.tx[p].count > 0 && !self.tx[p].blocked {
                self.flush(cx, st, p);
            }
        }
        progress
    }

    /// Sends path `p`'s batch, unless its socket is full: then the batch stays, and the
    /// socket's write readiness wakes the task.
    fn flush(&mut self, cx: &mut Context<'_>, st: &mut State, p: usize) -> Flush {
        let (Some(sock), Some(tx)) = (self.sockets.get_mut(p), self.tx.get_mut(p)) else { return Flush::Done };
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
            let t = quinn_udp::Transmit {
                destination: tx.remote,
                ecn: None,
                contents: &tx.buf[..tx.len],
                segment_size: (tx.count > 1).then_some(tx.seg),
                src_ip: sock.replies.as_ref().and_then(|r| r.source(tx.remote)),
            };
            match sock.io.try_io(Interest::WRITABLE, || sock.state.try_send((&sock.io).into(), &t)) {
                Ok(()) => {
                    st.paths[p].io.send_calls += 1;
                    let now = st.now();
                    st.count(p, now, true, tx.count, tx.len);
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
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

/// IPv4 peers on an IPv6 socket appear as `::ffff:a.b.c.d`; the endpoint sees them as IPv4.
fn unmap(a: SocketAddr) -> SocketAddr {
    match a {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(v4.into(), v6.port()),
            None => a,
        },
        a => a,
    }
}

/// A handle's share of the endpoint: counts in `refs` while alive.
pub(crate) fn attach(shared: &Arc<Shared>) -> Arc<Shared> {
    shared.lock().refs += 1;
    shared.clone()
}

/// Drops a handle's share; the driver ends once none is left and every connection drained.
pub(crate) fn detach(shared: &Shared) {
    let mut st = shared.lock();
    st.refs = st.refs.saturating_sub(1);
    st.wake_driver();
}
