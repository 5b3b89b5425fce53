//! The sockets: one per local path (by `PathId`), opened bound to a device, to an address, or
//! handed over by the application.

use crate::error::{Error, Result};
use crate::options::Interface;
use quinn_udp::UdpSocketState;
use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use tokio::io::Interest;

/// The most a GSO batch carries (the kernel's limit is 64 KiB of payload).
pub(crate) const GSO_BYTES: usize = 65_000;

/// One local path's socket.
#[derive(Debug)]
pub(crate) struct PathSocket {
    pub(crate) io: tokio::net::UdpSocket,
    pub(crate) state: UdpSocketState,
    /// Datagrams per GSO batch on this socket (1: no GSO).
    pub(crate) max_segments: usize,
    /// A socket on the wildcard address answers each peer from the address the peer wrote to.
    pub(crate) replies: Option<ReplyFrom>,
    /// How it reaches its network (its TCP carriers copy it), and the path's label.
    pub(crate) binding: super::binding::Binding,
    pub(crate) label: String,
    /// Its send buffer and GSO batches, sized to the rate it drains at (none for a socket the
    /// application handed over).
    pub(crate) queue: Option<super::queue::LocalQueue>,
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
        let max_segments = state.max_gso_segments().clamp(1, (GSO_BYTES / max_datagram.max(1200)).max(1));
        let replies = local.ip().is_unspecified().then(ReplyFrom::new);
        let binding = match i.adopted() {
            Some(s) => super::binding::Binding::of_adopted(s),
            None => super::binding::Binding::device(i.device.as_deref()),
        };
        let label = i.name();
        // A socket handed over keeps the send buffer its owner chose.
        let queue = (i.adopted().is_none() && bufs.1 > 0).then(|| super::queue::LocalQueue::new(bufs.1));
        Ok(Self { io, state, max_segments, replies, binding, label, queue })
    }

    /// One sendmsg: `contents` to `remote`, as one datagram or (with `segment_size`) as a GSO
    /// batch, from the address the peer wrote to on a wildcard socket.
    pub(crate) fn send(&self, remote: SocketAddr, contents: &[u8], segment_size: Option<usize>) -> io::Result<()> {
        let t = quinn_udp::Transmit {
            destination: remote,
            ecn: None,
            contents,
            segment_size,
            src_ip: self.replies.as_ref().and_then(|r| r.source(remote)),
        };
        self.io.try_io(Interest::WRITABLE, || self.state.try_send((&self.io).into(), &t))
    }

    /// Datagrams of `seg` bytes in one GSO batch now (`queue`).
    pub(crate) fn segments(&self, seg: usize) -> usize {
        self.queue.as_ref().map_or(self.max_segments, |q| q.segments(seg, self.max_segments))
    }

    /// The socket took a send of `bytes` at `now`: the queue's sizes follow the rate.
    pub(crate) fn on_sent(&mut self, now: std::time::Instant, bytes: usize) {
        let Some(q) = self.queue.as_mut() else { return };
        if let Some(b) = q.on_sent(now, bytes) {
            // Best effort, as at opening: the kernel caps it at its own maximum.
            let _ = socket2::SockRef::from(&self.io).set_send_buffer_size(b);
        }
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
        super::binding::bind_device(&s, d, addr).map_err(|e| io_err(e, "binding to the device"))?;
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
        super::reuseport::attach(&s, st).map_err(|e| io_err(e, "loading the steering program"))?;
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

/// IPv4 peers on an IPv6 socket appear as `::ffff:a.b.c.d`; the endpoint sees them as IPv4.
pub(crate) fn unmap(a: SocketAddr) -> SocketAddr {
    match a {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(v4.into(), v6.port()),
            None => a,
        },
        a => a,
    }
}
