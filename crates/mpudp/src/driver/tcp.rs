//! TCP carriers (PROTOCOL.md §4.11): where a network drops UDP, a subflow's datagrams travel
//! over a TCP connection on the same path to the same address and port, each record two
//! bytes of length and the datagram (RFC 4571). The opener (a client) sends the 4-byte
//! preamble `MPU\x02` first; the acceptor (a server, listening on its UDP port number)
//! closes a connection whose first bytes differ.
//!
//! A client opens a carrier when the endpoint first sends over TCP from a path to an address;
//! a server sends only on carriers its peers opened. Records are queued under the endpoint's
//! lock and written without it, as UDP batches are; a carrier whose queue passes
//! `HIGH_WATER` makes its path unwritable for the endpoint until it drains (back-pressure:
//! the subflow over TCP sees no loss, so nothing else would bound its window). A carrier
//! idle for `IDLE` (nothing read or written) is closed, as is one that fails or ends.

use super::binding::Binding;
use super::state::{Shared, TcpEvents};
use crate::options::TcpSocketHook;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// What the opener writes before its first record.
pub(crate) const PREAMBLE: [u8; 4] = *b"MPU\x02";
/// Queued bytes past which the carrier's path is unwritable for the endpoint.
const HIGH_WATER: usize = 256 * 1024;
/// Queued bytes past which records are dropped (the endpoint was told the path is full).
const MAX_QUEUE: usize = 4 << 20;
/// A carrier with nothing read or written for this long is closed.
const IDLE: Duration = Duration::from_secs(60);
/// Carriers a server keeps at most, and per peer address.
const MAX_CARRIERS: usize = 4096;
const PER_SOURCE: usize = 64;
/// The kernel's send buffer of a carrier: small, so that what waits, waits in our queue, where
/// back-pressure sees it (a large one hides seconds of data from the subflow's RTT).
const SNDBUF: u32 = 256 * 1024;
/// The largest record (a datagram).
const MAX_RECORD: usize = 65_535;
/// A carrier's read buffer (it grows for a larger record).
const READ_BUF: usize = 32 * 1024;

type Connecting = Pin<Box<dyn Future<Output = io::Result<TcpStream>> + Send>>;

enum Link {
    Connecting(Connecting),
    Open(TcpStream),
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Link::Connecting(_) => "connecting",
            Link::Open(_) => "open",
        })
    }
}

/// One TCP connection carrying records between a local path and a peer address.
#[derive(Debug)]
struct Carrier {
    link: Link,
    /// Bytes to write (`out[sent..]`).
    out: Vec<u8>,
    sent: usize,
    /// Bytes read (`inb[..have]`) and not yet taken as records; room for `READ_BUF` or the
    /// record being read, whichever is larger.
    inb: Vec<u8>,
    have: usize,
    /// An accepted carrier whose preamble has not been read yet.
    expect_preamble: bool,
    last_active: Instant,
    failed: bool,
}

impl Carrier {
    fn new(link: Link, opener: bool) -> Self {
        let out = if opener { PREAMBLE.to_vec() } else { Vec::new() };
        Self {
            link,
            out,
            sent: 0,
            inb: vec![0; READ_BUF],
            have: 0,
            expect_preamble: !opener,
            last_active: Instant::now(),
            failed: false,
        }
    }

    fn queued(&self) -> usize {
        self.out.len() - self.sent
    }

    /// Gives back the written front of `out`: at once when all is written, else once it is
    /// half the buffer and 64 KiB (a queue held near `HIGH_WATER` by back-pressure would
    /// otherwise keep every byte it ever sent).
    fn compact(&mut self) {
        compact(&mut self.out, &mut self.sent);
    }
}

/// Per path: a client's means to open carriers (its address, how its UDP socket reaches its
/// network, its label), a server's listeners (its UDP port's number, and a fleet server's own
/// port, `Server::tcp_port`).
#[derive(Debug, Default)]
struct PathTcp {
    local: Option<SocketAddr>,
    binding: Binding,
    label: String,
    listeners: Vec<TcpListener>,
}

/// Every carrier of the endpoint, by (path, peer).
#[derive(Debug, Default)]
pub(crate) struct Tcp {
    server: bool,
    /// A fleet's server: the ports at the balancer that lead to each server, where it listens
    /// too (`fleet_tcp_ports`).
    fleet_ports: Vec<u16>,
    /// The application's hook for each TCP socket of a handed-in path.
    hook: Option<TcpSocketHook>,
    paths: Vec<PathTcp>,
    carriers: HashMap<(usize, SocketAddr), Carrier>,
    /// Per path, what happened since the counters were last updated.
    pub(crate) events: Vec<TcpEvents>,
}

impl Tcp {
    pub(crate) fn new(server: bool, hook: Option<TcpSocketHook>, fleet_ports: Vec<u16>) -> Self {
        Self { server, hook, fleet_ports, ..Self::default() }
    }

    /// Path `p` (`label`) has a socket on `local`, bound as `binding` says: a server listens
    /// there for TCP too (the same port number); a client opens its carriers from its address
    /// and through the same network.
    pub(crate) fn install(&mut self, p: usize, local: SocketAddr, binding: &Binding, label: &str) {
        if self.paths.len() <= p {
            self.paths.resize_with(p + 1, PathTcp::default);
            self.events.resize(p + 1, TcpEvents::default());
        }
        self.close_path(p);
        let others = self.fleet_ports.iter().copied().filter(|&o| o != local.port());
        let listeners = std::iter::once(local.port())
            .chain(others)
            .filter(|_| self.server)
            .filter_map(|port| {
                let at = SocketAddr::new(local.ip(), port);
                listen(at, binding)
                    .map_err(|e| match e.kind() {
                        // A server spread over cores: another core's listener has the port.
                        io::ErrorKind::AddrInUse => {
                            tracing::debug!(path = p, %at, "TCP carriers served by another listener")
                        }
                        _ => tracing::warn!(path = p, %at, error = %e, "no TCP listener: no TCP carriers here"),
                    })
                    .ok()
            })
            .collect();
        self.paths[p] = PathTcp { local: Some(local), binding: binding.clone(), label: label.to_string(), listeners };
    }

    /// Path `p` is gone: its listener and carriers close.
    pub(crate) fn close_path(&mut self, p: usize) {
        if let Some(pt) = self.paths.get_mut(p) {
            *pt = PathTcp::default();
        }
        self.carriers.retain(|k, _| k.0 != p);
    }

    /// Client: whether path `p` has a carrier with more queued than `HIGH_WATER` (the path is
    /// then unwritable for the endpoint). A server's path is every client's: one carrier that
    /// stalls (a zero window, a phone gone) must not stop the others, so a server's carriers
    /// only drop past `MAX_QUEUE`, which the subflow over it sees as a stall.
    pub(crate) fn full(&self, p: usize) -> bool {
        !self.server && self.carriers.iter().any(|(k, c)| k.0 == p && c.queued() > HIGH_WATER)
    }

    /// Whether a carrier of path `p` to `remote` is open here.
    pub(crate) fn has_carrier(&self, p: usize, remote: SocketAddr) -> bool {
        self.carriers.contains_key(&(p, remote))
    }

    /// Queues datagram `d` for `remote` from path `p`, opening the carrier if this is a
    /// client without one (a server drops it: only its peer opens).
    pub(crate) fn queue(&mut self, p: usize, remote: SocketAddr, d: &[u8]) {
        if !self.carriers.contains_key(&(p, remote)) {
            if self.server {
                self.count(p, |e| e.dropped += 1);
                return;
            }
            match self.connect(p, remote) {
                Ok(c) => {
                    self.carriers.insert((p, remote), c);
                    self.count(p, |e| e.opened += 1);
                }
                Err(e) => {
                    tracing::debug!(path = p, %remote, error = %e, "cannot open a TCP carrier");
                    self.count(p, |e| e.refused += 1);
                    return;
                }
            }
        }
        let Some(c) = self.carriers.get_mut(&(p, remote)) else { return };
        if c.queued() + d.len() + 2 > MAX_QUEUE || d.len() > MAX_RECORD {
            self.count(p, |e| e.dropped += 1);
            return;
        }
        c.compact();
        c.out.extend_from_slice(&(d.len() as u16).to_be_bytes());
        c.out.extend_from_slice(d);
    }

    fn connect(&self, p: usize, remote: SocketAddr) -> io::Result<Carrier> {
        let pt = self.paths.get(p).ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such path"))?;
        let s = if remote.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
        // Through the same network as the path's UDP socket (`binding`), or not at all.
        pt.binding.apply(&socket2::SockRef::from(&s), remote)?;
        if let Some(hook) = self.hook.as_ref().filter(|_| pt.binding.adopted) {
            use std::os::fd::AsFd;
            (hook.0)(s.as_fd(), &pt.label)?;
        }
        if let Some(local) = pt.local.filter(|l| !l.ip().is_unspecified() && l.is_ipv4() == remote.is_ipv4()) {
            s.bind(SocketAddr::new(local.ip(), 0))?;
        }
        s.set_nodelay(true)?;
        let _ = s.set_send_buffer_size(SNDBUF);
        Ok(Carrier::new(Link::Connecting(Box::pin(s.connect(remote))), true))
    }

    fn count(&mut self, p: usize, f: impl FnOnce(&mut TcpEvents)) {
        if let Some(e) = self.events.get_mut(p) {
            f(e);
        }
    }

    /// Accepts, connects, writes and reads what it can without blocking (the records read wait
    /// in each carrier for `deliver`). Returns whether anything moved. Never called with the
    /// endpoint's lock held.
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> bool {
        let mut progress = self.accept(cx);
        let now = Instant::now();
        for (&(p, remote), c) in self.carriers.iter_mut() {
            // A failed carrier waits for `reap`; its connect future, if it failed there, has
            // completed and must not be polled again (tokio panics: "resumed after
            // completion"). An IPv6 link that lost its address failed the connect at once, and
            // the driver's next poll in the same round took its thread down (issue 56).
            if c.failed {
                continue;
            }
            if let Link::Connecting(f) = &mut c.link {
                match f.as_mut().poll(cx) {
                    Poll::Pending => continue,
                    Poll::Ready(Ok(s)) => {
                        c.link = Link::Open(s);
                        progress = true;
                    }
                    Poll::Ready(Err(e)) => {
                        tracing::debug!(path = p, %remote, error = %e, "TCP carrier failed to connect");
                        c.failed = true;
                        continue;
                    }
                }
            }
            let Link::Open(s) = &c.link else { continue };
            // Write what is queued.
            while c.queued() > 0 {
                match s.poll_write_ready(cx) {
                    Poll::Pending => break,
                    Poll::Ready(Err(_)) => {
                        c.failed = true;
                        break;
                    }
                    Poll::Ready(Ok(())) => {}
                }
                match s.try_write(&c.out[c.sent..]) {
                    Ok(n) => {
                        c.sent += n;
                        c.last_active = now;
                        progress = true;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(_) => {
                        c.failed = true;
                        break;
                    }
                }
            }
            compact(&mut c.out, &mut c.sent);
            // Read what came (while room is left: `deliver` takes the records and makes room).
            while c.have < c.inb.len() {
                match s.poll_read_ready(cx) {
                    Poll::Pending => break,
                    Poll::Ready(Err(_)) => {
                        c.failed = true;
                        break;
                    }
                    Poll::Ready(Ok(())) => {}
                }
                let n = match s.try_read(&mut c.inb[c.have..]) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                    Err(_) => {
                        c.failed = true;
                        break;
                    }
                };
                if n == 0 {
                    // The peer closed.
                    c.failed = true;
                    break;
                }
                c.have += n;
                c.last_active = now;
                progress = true;
                if !check_stream(&mut c.inb, &mut c.have, &mut c.expect_preamble) {
                    c.failed = true;
                    break;
                }
            }
        }
        progress
    }

    /// Closes the carriers that failed, ended or went idle (after `deliver` took what they
    /// read: the records that came with a FIN are not lost). Returns whether any closed.
    pub(crate) fn reap(&mut self) -> bool {
        let now = Instant::now();
        let before = self.carriers.len();
        let events = &mut self.events;
        self.carriers.retain(|&(p, _), c| {
            let keep = !c.failed && now.duration_since(c.last_active) < IDLE;
            if !keep {
                if let Some(e) = events.get_mut(p) {
                    if c.expect_preamble && c.failed {
                        e.refused += 1;
                    } else {
                        e.closed += 1;
                    }
                }
            }
            keep
        });
        self.carriers.len() != before
    }

    /// A server takes the connections waiting at its listeners, within its limits.
    fn accept(&mut self, cx: &mut Context<'_>) -> bool {
        let mut progress = false;
        for p in 0..self.paths.len() {
            for l in 0..self.paths[p].listeners.len() {
                self.accept_on(cx, p, l, &mut progress);
            }
        }
        progress
    }

    /// Takes the connections waiting at listener `l` of path `p`.
    fn accept_on(&mut self, cx: &mut Context<'_>, p: usize, l: usize, progress: &mut bool) {
        loop {
            let (s, peer) = match self.paths[p].listeners[l].poll_accept(cx) {
                Poll::Pending => break,
                Poll::Ready(Err(e)) => {
                    tracing::debug!(path = p, error = %e, "accept failed");
                    break;
                }
                Poll::Ready(Ok(x)) => x,
            };
            *progress = true;
            let peer = super::socket::unmap(peer);
            let from_peer = self.carriers.keys().filter(|k| k.1.ip() == peer.ip()).count();
            if self.carriers.len() >= MAX_CARRIERS || from_peer >= PER_SOURCE {
                self.count(p, |e| e.refused += 1);
                continue;
            }
            let _ = s.set_nodelay(true);
            let _ = socket2::SockRef::from(&s).set_send_buffer_size(SNDBUF as usize);
            self.carriers.insert((p, peer), Carrier::new(Link::Open(s), false));
            self.count(p, |e| e.opened += 1);
        }
    }

    /// When the next carrier goes idle, if any.
    pub(crate) fn next_idle(&self) -> Option<Instant> {
        self.carriers.values().map(|c| c.last_active + IDLE).min()
    }
}

/// `Carrier::compact` on the carrier's fields (callable while its stream is borrowed).
fn compact(out: &mut Vec<u8>, sent: &mut usize) {
    if *sent == out.len() {
        out.clear();
        *sent = 0;
    } else if *sent >= 64 * 1024 && *sent * 2 >= out.len() {
        out.drain(..*sent);
        *sent = 0;
    }
}

/// Checks what an accepted carrier read first: the preamble (then dropped from the buffer);
/// `false` if the stream is not ours (an HTTP request, a TLS ClientHello, a scanner).
fn check_stream(inb: &mut [u8], have: &mut usize, expect_preamble: &mut bool) -> bool {
    if !*expect_preamble {
        return true;
    }
    let n = (*have).min(PREAMBLE.len());
    if inb[..n] != PREAMBLE[..n] {
        return false;
    }
    if *have >= PREAMBLE.len() {
        inb.copy_within(PREAMBLE.len()..*have, 0);
        *have -= PREAMBLE.len();
        *expect_preamble = false;
    }
    true
}

/// A TCP listener on `local` (bound as the path's UDP socket), beside the UDP socket of the
/// same port.
fn listen(local: SocketAddr, binding: &Binding) -> io::Result<TcpListener> {
    let s = if local.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    s.set_reuseaddr(true)?;
    binding.apply(&socket2::SockRef::from(&s), local)?;
    if local.is_ipv6() {
        // As the UDP socket: IPv6 only (an IPv4 listener on the same port serves IPv4).
        socket2::SockRef::from(&s).set_only_v6(true)?;
    }
    s.bind(local)?;
    s.listen(1024)
}

impl Tcp {
    /// Hands the complete records every carrier read to the endpoint (opened where they lie,
    /// no copy), under its lock, counting them on their path; a carrier whose stream is not
    /// records (an empty one) is marked failed. Returns whether any was handed or failed (a
    /// partial record waiting for its rest is no progress: the driver must not spin on it).
    /// On a server spread over cores (`steering`), a record of another core's connection goes
    /// into `outbox` for that core (`handoff`).
    pub(crate) fn deliver(
        &mut self,
        shared: &Shared,
        now: mpcore::Time,
        steering: Option<&mpcore::Steering>,
        outbox: &mut Vec<super::handoff::Handoff>,
    ) -> bool {
        if !self.carriers.values().any(|c| c.have >= 2 && !c.expect_preamble) {
            return false;
        }
        let mut st = shared.lock();
        let mut handed = false;
        for (&(p, remote), c) in self.carriers.iter_mut() {
            if c.expect_preamble {
                continue;
            }
            let mut at = 0;
            while c.have >= at + 2 {
                let len = usize::from(u16::from_be_bytes([c.inb[at], c.inb[at + 1]]));
                if len == 0 {
                    c.failed = true;
                    handed = true;
                    break;
                }
                if c.have < at + 2 + len {
                    if c.inb.len() < 2 + len {
                        // A record larger than the buffer: room for it (once per size).
                        c.inb.resize(2 + len, 0);
                    }
                    break;
                }
                let d = &mut c.inb[at + 2..at + 2 + len];
                st.count(p, now, false, 1, len);
                let owner = steering.and_then(|s| s.core_of(d).filter(|&k| k != s.core()).map(|k| (k, s.core())));
                match owner.filter(|_| !st.peers.is_empty() && outbox.len() < super::handoff::INBOX) {
                    Some((k, relay)) => {
                        let via = super::handoff::Via::Tcp { relay };
                        outbox.push((k, mpcore::PathId(p as u8), remote, d.to_vec(), via));
                    }
                    None => {
                        st.ep.handle_carried_in_place(now, mpcore::PathId(p as u8), remote, mpcore::Carrier::Tcp, d);
                    }
                }
                at += 2 + len;
                handed = true;
            }
            if at > 0 {
                c.inb.copy_within(at..c.have, 0);
                c.have -= at;
            }
        }
        handed
    }
}
