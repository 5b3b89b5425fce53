//! The driver: one tokio task per endpoint owns the sockets and a clock and runs the sans-IO
//! `mpcore::Endpoint`; the application's handles share the endpoint behind a mutex and wake
//! the task when they change what it has to send (quinn's design). The task runs on the
//! caller's runtime, or on a multi-thread one (by default) on a driver thread of its own
//! (`Options::driver_thread`, [`driver_runtime`]).
//!
//! Each poll of the task repeats, until nothing moves: receive a batch of datagrams from every
//! socket (recvmmsg, GRO super-datagrams split at their stride), run the timers that are due,
//! follow the interfaces (`paths`: on the kernel's netlink events or the application's
//! requests; a timer only if the application asked for one), hand events to the waiting
//! handles, and send what the endpoint has (consecutive datagrams to the same peer on the same
//! socket go out as one UDP GSO batch). Every buffer is allocated when the endpoint is built
//! (or a path added), none per packet.
//!
//! - `state`: what the handles and the task share.
//! - `io`: the sockets by path, the GSO batches, and the sends made without the lock.
//! - `socket`: one path's socket.
//! - `paths`: the interfaces and their paths.

mod binding;
mod handoff;
mod io;
mod paths;
#[cfg(feature = "qlog")]
mod qlog;
mod queue;
mod reuseport;
mod socket;
mod state;
#[cfg(feature = "tcp")]
mod tcp;
#[cfg(not(feature = "tcp"))]
#[path = "tcp_off.rs"]
mod tcp;

use state::State;
pub(crate) use state::{store, Command, Shared};
pub use state::{IoCounters, PathInfo};

use crate::error::{Error, Result};
use crate::options::{Interface, Options};
use bytes::BytesMut;
use io::Io;
use mpcore::{Endpoint, PathId, Steering, Time};
use paths::Interfaces;
use quinn_udp::RecvMeta;
use socket::unmap;
use std::future::Future;
use std::io::IoSliceMut;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::Interest;
use tokio::time::Sleep;

/// Datagrams (or GRO super-datagrams) read by one recvmmsg call.
const BATCH: usize = 8;
/// Room for one GRO super-datagram.
const CHUNK: usize = 65_536;
/// recvmmsg calls on one socket before the others get their turn.
const RECV_ROUNDS: usize = 2;
/// Datagrams handled between two sends (the ACKs they elicit leave without waiting for the
/// rest of a receive batch). At low rates a receive batch holds a few datagrams and each batch
/// is answered at its end; only a fast sender fills batches, and then an ACK per 128 datagrams
/// (about 180 KB, three GRO super-datagrams) is its ACK frequency. Each ACK is a `sendmsg`, and
/// on a veth the kernel runs the peer's receive and wakes its thread inside it: at 16 (one ACK
/// per 23 KB) the receiver spent 35-55 % more CPU per gigabit (benches/net.sh, issue 40).
const ACK_EVERY: usize = 128;
/// Rounds per poll before the task yields to the runtime.
const ROUNDS: usize = 16;

/// The endpoint's task.
#[derive(Debug)]
pub(crate) struct Driver {
    shared: Arc<Shared>,
    io: Io,
    ifaces: Interfaces,
    /// The kernel's link and address events (Linux, when an interface is named by device).
    #[cfg(target_os = "linux")]
    events: Option<crate::netlink::Events>,
    rx: BytesMut,
    meta: [RecvMeta; BATCH],
    timer: Pin<Box<Sleep>>,
    armed: Option<Instant>,
    /// Polling the interfaces, if the application asked for it (`Options::monitor_interval`):
    /// the next read and the interval. Nothing polls otherwise.
    monitor: Option<(Instant, Duration)>,
    /// A server spread over cores: which core owns a datagram (fixed with the endpoint).
    steering: Option<Steering>,
    /// Datagrams of other cores' connections, to hand over once this core's lock is released.
    outbox: Vec<handoff::Handoff>,
}

/// Builds the sockets and the endpoint and spawns the driver: a task of the caller's runtime,
/// or (`Options::driver_thread`, by default on a multi-thread runtime) of one of the driver
/// threads ([`driver_runtime`]), in whose runtime everything the driver registers (sockets,
/// timers, netlink) is then built. Must run inside a tokio runtime. The returned share already
/// counts as one handle (see `attach`), so that the driver cannot see no handle and stop
/// before the caller holds it.
pub(crate) fn start(opts: &Options, server: bool, v6: bool) -> Result<Arc<Shared>> {
    opts.validate()?;
    let Ok(caller) = tokio::runtime::Handle::try_current() else {
        return Err(Error::Config("mpudp endpoints must be created inside a tokio runtime".into()));
    };
    let rt = if opts.driver_thread.unwrap_or(caller.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread) {
        driver_runtime()?
    } else {
        caller
    };
    let _in = rt.enter();
    let (shared, driver) = build(opts, server, v6)?;
    rt.spawn(driver);
    Ok(shared)
}

/// The runtime of the driver thread whose turn it is. The threads (`mpudp-driver`) are started
/// as endpoints need them, one per core at most, each a current-thread runtime that lives as
/// long as the process (idle, it waits in its reactor and costs nothing); endpoints take them
/// in turn. A thread per endpoint would make a thread per `MpStream::connect`.
fn driver_runtime() -> Result<tokio::runtime::Handle> {
    /// The threads' runtimes, and how many endpoints took one.
    static THREADS: std::sync::Mutex<(Vec<tokio::runtime::Handle>, usize)> = std::sync::Mutex::new((Vec::new(), 0));
    let most = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut guard = THREADS.lock().unwrap_or_else(|e| e.into_inner());
    let (threads, taken) = &mut *guard;
    *taken += 1;
    if threads.len() >= most {
        return Ok(threads[*taken % most].clone());
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|source| Error::Io { context: "starting a driver thread's runtime".into(), source })?;
    let handle = rt.handle().clone();
    std::thread::Builder::new()
        .name("mpudp-driver".into())
        .spawn(move || rt.block_on(std::future::pending::<()>()))
        .map_err(|source| Error::Io { context: "starting a driver thread".into(), source })?;
    threads.push(handle.clone());
    Ok(handle)
}

/// The sockets, the endpoint and the driver, in the current runtime's context.
fn build(opts: &Options, server: bool, v6: bool) -> Result<(Arc<Shared>, Driver)> {
    let mut ifaces = Interfaces::new(
        v6,
        (opts.socket_buffer, opts.send_buffer),
        opts.config.transport.max_datagram_size,
        opts.config.routing(),
    );
    if opts.interfaces.is_empty() {
        let any: SocketAddr = if v6 { "[::]:0" } else { "0.0.0.0:0" }.parse().expect("a literal address");
        ifaces.add(Interface::unbound(any))?;
    }
    for i in &opts.interfaces {
        ifaces.add(i.clone())?;
    }
    let epoch = Instant::now();
    let mut io = Io {
        sockets: Vec::new(),
        tx: Vec::new(),
        scratch: BytesMut::zeroed(CHUNK),
        guess: 0,
        log: io::SendLog::new(),
        epoch,
        tcp: tcp::Tcp::new(server, opts.tcp_socket_hook.clone(), fleet_tcp_ports(&opts.config)),
        tcp_back: Vec::new(),
    };
    let (paths, infos) = ifaces.open_initial(&mut io)?;
    #[allow(unused_mut)] // changed below unless built with `tcp` and without `qlog`
    let mut config = opts.config.clone();
    // A configuration given whole after `qlog_dir` keeps the log on.
    #[cfg(feature = "qlog")]
    {
        config.logging.qlog |= opts.qlog_dir.is_some();
    }
    // Built without TCP carriers: the client never races its INITIAL or joins over TCP.
    #[cfg(not(feature = "tcp"))]
    {
        config.multipath.tcp_after = None;
    }
    let mut ep = Endpoint::new(config, paths, server).map_err(|e| Error::Config(e.to_string()))?;
    // The core's clock starts at 0 with `epoch`: resumption tickets are dated in unix time.
    let unix_ms =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    ep.set_unix_time(0, unix_ms);
    for (p, info) in infos.iter().enumerate() {
        if !info.up {
            ep.set_path_up(0, PathId(p as u8), false);
        }
    }
    let names = ifaces.list.iter().map(|w| w.iface.name()).collect();
    let mut state = State::new(ep, epoch, infos, names);
    state.tickets = opts.tickets.clone();
    #[cfg(feature = "qlog")]
    if let Some(dir) = &opts.qlog_dir {
        let files = qlog::QlogFiles::new(dir.clone())
            .map_err(|source| Error::Io { context: format!("qlog directory {}", dir.display()), source })?;
        state.qlog = Some(files);
    }
    let shared = Arc::new(Shared { state: Mutex::new(state) });
    #[cfg(target_os = "linux")]
    let events = ifaces
        .list
        .iter()
        .any(|w| w.iface.device.is_some())
        .then(|| {
            crate::netlink::Events::new()
                .map_err(|e| tracing::warn!(error = %e, "no netlink events: links followed on the application's word"))
                .ok()
        })
        .flatten();
    let driver = Driver {
        shared: shared.clone(),
        rx: BytesMut::zeroed(BATCH * CHUNK),
        meta: [RecvMeta::default(); BATCH],
        io,
        ifaces,
        #[cfg(target_os = "linux")]
        events,
        timer: Box::pin(tokio::time::sleep(Duration::from_secs(3600))),
        armed: None,
        monitor: opts.monitor_interval.map(|every| (epoch + every, every)),
        steering: opts.config.routing(),
        outbox: Vec::new(),
    };
    Ok((shared, driver))
}

/// The TCP ports a fleet's server listens on besides its UDP port's number: every server's own
/// port at the balancer (`Server::tcp_port` is `base + id`), so that the port of a dead server,
/// which the balancer then maps to a live one, reaches a listener there, whose stateless
/// resets tell that server's clients at once (as over UDP). Without a fleet, its own port.
fn fleet_tcp_ports(config: &mpcore::Config) -> Vec<u16> {
    let Some(own) = config.server.tcp_port else { return Vec::new() };
    match &config.server.fleet {
        Some(f) => {
            let base = own.saturating_sub(u16::from(f.server));
            (0..u16::from(f.servers)).filter_map(|k| base.checked_add(k)).collect()
        }
        None => vec![own],
    }
}

impl Future for Driver {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let shared = this.shared.clone();
        let r = this.run(cx, &shared);
        if this.outbox.is_empty() && this.io.tcp_back.is_empty() {
            return r;
        }
        let peers = shared.lock().peers.clone();
        forward(&peers, &mut this.outbox, &mut this.io.tcp_back);
        r
    }
}

/// Hands datagrams to the cores that own them, and TCP answers to the cores that hold their
/// carriers (never with this core's lock held: two cores handing over to each other must not
/// wait on each other).
fn forward(peers: &[std::sync::Weak<Shared>], outbox: &mut Vec<handoff::Handoff>, back: &mut Vec<handoff::TcpBack>) {
    for (k, p, remote, d, via) in outbox.drain(..) {
        let Some(peer) = peers.get(usize::from(k)).and_then(std::sync::Weak::upgrade) else { continue };
        let mut st = peer.lock();
        if st.inbox.len() < handoff::INBOX {
            st.inbox.push_back((p, remote, d, via));
            st.wake_driver();
        }
    }
    for (k, p, remote, d) in back.drain(..) {
        let Some(peer) = peers.get(usize::from(k)).and_then(std::sync::Weak::upgrade) else { continue };
        let mut st = peer.lock();
        if st.tcp_back.len() < handoff::INBOX {
            st.tcp_back.push_back((p, remote, d));
            st.wake_driver();
        }
    }
}

impl Driver {
    /// One poll's work: up to `ROUNDS` rounds of the other cores' datagrams, receive, timers,
    /// interfaces, transmit, events. The endpoint's lock is held while its state changes,
    /// never through a system call that moves datagrams (`recvmmsg`, `sendmsg`).
    fn run(&mut self, cx: &mut Context<'_>, shared: &Shared) -> Poll<()> {
        {
            let mut st = shared.lock();
            st.wakeups += 1;
            store(&mut st.driver, cx.waker());
        }
        for _ in 0..ROUNDS {
            let (now, mut progress) = {
                let mut st = shared.lock();
                let now = st.now();
                let progress = !st.inbox.is_empty() || !st.tcp_back.is_empty();
                while let Some((p, remote, mut d, via)) = st.inbox.pop_front() {
                    match via {
                        handoff::Via::Udp => st.ep.handle_datagram_in_place(now, p, remote, &mut d),
                        handoff::Via::Tcp { relay } => {
                            // Its answers go back to the core that holds the carrier.
                            st.relays.learn(p, remote, relay);
                            st.ep.handle_carried_in_place(now, p, remote, mpcore::Carrier::Tcp, &mut d);
                        }
                    }
                }
                // Other cores' answers over the TCP carriers this core holds.
                for (p, remote, d) in st.tcp_back.drain(..) {
                    self.io.tcp.queue(p, remote, &d);
                }
                (now, progress)
            };
            progress |= self.receive(cx, shared, now);
            progress |= self.io.tcp.poll(cx);
            progress |= self.io.tcp.deliver(shared, now, self.steering.as_ref(), &mut self.outbox);
            progress |= self.io.tcp.reap();
            {
                let mut st = shared.lock();
                if st.ep.poll_timeout().is_some_and(|t| t <= now) {
                    st.ep.handle_timeout(now);
                    progress = true;
                }
                // Opening a path's socket is a system call under the lock, but a rare one.
                progress |= self.follow_interfaces(cx, &mut st, now);
            }
            progress |= self.io.transmit(cx, shared, now);
            // What the sends queued for TCP carriers is written now.
            progress |= self.io.tcp.poll(cx);
            // Readers and event listeners are woken after the round's sends, never before: a
            // reader on another thread that sees the end of the stream may end the process,
            // and the ACK of the peer's DATA_FIN must be with the kernel by then. (Waking them
            // before the sends saved a cross-thread reader 10-20 us of a 100-byte round trip
            // over loopback, where a send runs the peer's receive path; it was withdrawn for
            // this reason.)
            let mut st = shared.lock();
            st.dispatch();
            if st.refs == 0 && st.ep.live_connections() == 0 {
                st.stopped = true;
                st.driver = None;
                st.wake_all();
                return Poll::Ready(());
            }
            let monitor = self.monitor.map(|(next, _)| next);
            let timeout = st.ep.poll_timeout().map(|t| st.instant(t));
            let idle = self.io.tcp.next_idle();
            let deadline = [monitor, timeout, idle]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(st.instant(now) + Duration::from_secs(3600));
            if self.armed != Some(deadline) {
                self.timer.as_mut().reset(deadline.into());
                self.armed = Some(deadline);
            }
            let fired = self.timer.as_mut().poll(cx).is_ready();
            if fired {
                self.armed = None;
            }
            let woke_reader = std::mem::take(&mut st.woke_reader);
            drop(st);
            if !progress && !fired {
                return Poll::Pending;
            }
            // A reader was woken: let it read before more comes in. On one thread, the rounds
            // went on while it waited, up to the whole receive window (8 MiB in `upload`), and
            // the ring grew to hold it all, its bytes cold in the cache by the time they were
            // read; so were the ring's places written next. Now a round's datagrams (up to
            // `RECV_ROUNDS` batches a socket) are read while hot, and the ring stays near
            // that size.
            if woke_reader {
                break;
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
    ///
    /// The lock is taken once per batch read, after the read, and released around the sends.
    fn receive(&mut self, cx: &mut Context<'_>, shared: &Shared, now: Time) -> bool {
        let steering = self.steering;
        let Driver { io, rx, meta, outbox, .. } = self;
        let mut progress = false;
        let mut since_tx = 0;
        for i in 0..io.sockets.len() {
            if io.sockets[i].is_none() {
                continue;
            }
            let mut reads = 0;
            // Until the socket is empty (a WouldBlock, then a Pending that registers the wakeup)
            // or the budget is spent (then the next round comes back here).
            while reads < RECV_ROUNDS {
                let Some(sock) = io.sockets[i].as_ref() else { break };
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
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                    Err(e) => {
                        shared.lock().paths[i].io.recv_errors += 1;
                        tracing::debug!(path = i, error = %e, "receive error");
                        break;
                    }
                };
                reads += 1;
                let mut st = shared.lock();
                st.paths[i].io.recv_calls += 1;
                progress = true;
                for (k, m) in meta.iter().enumerate().take(n) {
                    let replies = io.sockets[i].as_mut().and_then(|s| s.replies.as_mut());
                    if let (Some(r), Some(local)) = (replies, m.dst_ip) {
                        r.learn(unmap(m.addr), local);
                    }
                    let data = &mut rx[k * CHUNK..k * CHUNK + m.len.min(CHUNK)];
                    let stride = if m.stride == 0 { m.len } else { m.stride };
                    // Counted once per GRO super-datagram (its segments share `now`): the
                    // radio meter's work per call was 3 % of a bulk receiver's CPU (issue 57).
                    st.count(i, now, false, data.len().div_ceil(stride.max(1)), data.len());
                    for d in data.chunks_mut(stride.max(1)) {
                        let owner = steering.and_then(|s| s.core_of(d).filter(|&k| k != s.core()));
                        if let Some(k) = owner.filter(|_| !st.peers.is_empty() && outbox.len() < handoff::INBOX) {
                            outbox.push((k, PathId(i as u8), unmap(m.addr), d.to_vec(), handoff::Via::Udp));
                            st.paths[i].io.forwarded += 1;
                            continue;
                        }
                        // Opened in the receive buffer itself: no copy.
                        st.ep.handle_datagram_in_place(now, PathId(i as u8), unmap(m.addr), d);
                        since_tx += 1;
                        if since_tx == ACK_EVERY {
                            since_tx = 0;
                            drop(st);
                            io.transmit(cx, shared, now);
                            st = shared.lock();
                        }
                    }
                }
            }
        }
        progress
    }

    /// Follows the interfaces: applies the application's requests, and reconciles the paths
    /// with the system when the kernel reported a change, on a request, or every
    /// `monitor_interval` where the application asked for polling. Returns whether anything
    /// was done.
    fn follow_interfaces(&mut self, cx: &mut Context<'_>, st: &mut State, now: Time) -> bool {
        #[cfg(target_os = "linux")]
        let mut due = self.events.as_mut().is_some_and(|e| e.poll_changed(cx));
        #[cfg(not(target_os = "linux"))]
        let mut due = {
            let _ = cx;
            false
        };
        while let Some(c) = st.commands.pop_front() {
            self.ifaces.command(st, &mut self.io, now, c);
            due = true;
        }
        let at = st.instant(now);
        if let Some((next, every)) = self.monitor.as_mut().filter(|(next, _)| at >= *next) {
            *next = at + *every;
            due = true;
        }
        if due {
            self.ifaces.sync(st, &mut self.io, now);
        }
        due
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
