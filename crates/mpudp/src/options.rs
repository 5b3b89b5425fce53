//! What an endpoint is built from: its interfaces and the protocol's configuration.

use crate::error::{Error, Result};
use crate::iface;
use mpcore::{
    Config, CongestionControl, Iface, PathManager, Prewarm, PublicKey, Scheduler, SchedulerFactory, ServerIdentity,
};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

/// One local path: a UDP socket on a network interface.
///
/// ```
/// use mpudp::{Interface, Iface};
/// // WiFi first (the primary path), then the cellular modem as a backup path.
/// let wifi = Interface::new("wlan0").kind(Iface::Wifi);
/// let cell = Interface::new("rmnet0").kind(Iface::Cellular).backup(true);
/// // No device binding (no privilege needed): a socket on one address.
/// let plain = Interface::unbound("127.0.0.1:0".parse().unwrap());
/// # let _ = (wifi, cell, plain);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    pub(crate) device: Option<String>,
    pub(crate) ip: Option<IpAddr>,
    pub(crate) port: u16,
    pub(crate) kind: Option<Iface>,
    pub(crate) backup: bool,
    pub(crate) label: Option<String>,
    pub(crate) socket: Option<Adopted>,
    /// The address family a device takes its address in (`None`: the endpoint's).
    pub(crate) v6: Option<bool>,
}

/// A socket the application handed over (compared by identity).
#[derive(Clone, Debug)]
pub(crate) struct Adopted(pub(crate) Arc<std::net::UdpSocket>);

impl PartialEq for Adopted {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Adopted {}

impl Interface {
    /// The interface named `device` (as `ip link` shows it). Its socket is bound to the device
    /// with `SO_BINDTODEVICE` (no privilege on Linux 5.7 and later; CAP_NET_RAW before), so its
    /// packets leave through it whatever the routing table prefers; the address is the
    /// interface's first one of the peer's family unless [`ip`](Self::ip) names one. The role
    /// is guessed from the name ([`guess_kind`](crate::guess_kind)) unless [`kind`](Self::kind)
    /// sets it.
    pub fn new(device: impl Into<String>) -> Self {
        Self {
            device: Some(device.into()),
            ip: None,
            port: 0,
            kind: None,
            backup: false,
            label: None,
            socket: None,
            v6: None,
        }
    }

    /// A socket bound to `addr` without a device binding: the routing table picks the way out.
    /// Needs no privilege; the choice for loopback tests and for hosts with one interface.
    pub fn unbound(addr: SocketAddr) -> Self {
        let ip = Some(addr.ip());
        Self { device: None, ip, port: addr.port(), kind: None, backup: false, label: None, socket: None, v6: None }
    }

    /// A socket the operating system already bound to a network, handed over by the
    /// application: Android's `Network.bindSocket`, iOS's `IP_BOUND_IF`, or any
    /// `std::net::UdpSocket` (from an `OwnedFd` with `UdpSocket::from`). The app needs no
    /// privilege (no `SO_BINDTODEVICE`) to run multipath this way. Name it with
    /// [`label`](Self::label) to report it up or down ([`MpEndpoint::set_path_up`]); the
    /// driver cannot watch its link.
    ///
    /// [`MpEndpoint::set_path_up`]: crate::MpEndpoint::set_path_up
    pub fn from_socket(socket: impl Into<std::net::UdpSocket>) -> Self {
        let socket = Some(Adopted(Arc::new(socket.into())));
        Self { device: None, ip: None, port: 0, kind: None, backup: false, label: None, socket, v6: None }
    }

    /// The name the application refers to this interface by ([`MpEndpoint::set_path_up`],
    /// [`MpEndpoint::remove_interface`]); by default the device name, else the address.
    ///
    /// [`MpEndpoint::set_path_up`]: crate::MpEndpoint::set_path_up
    /// [`MpEndpoint::remove_interface`]: crate::MpEndpoint::remove_interface
    pub fn label(mut self, name: impl Into<String>) -> Self {
        self.label = Some(name.into());
        self
    }

    /// This interface's name (see [`label`](Self::label)).
    pub fn name(&self) -> String {
        if let Some(l) = &self.label {
            return l.clone();
        }
        if let Some(d) = &self.device {
            return d.clone();
        }
        match (&self.socket, self.ip) {
            (Some(s), _) => s.0.local_addr().map(|a| a.to_string()).unwrap_or_else(|_| "socket".into()),
            (None, Some(ip)) => SocketAddr::new(ip, self.port).to_string(),
            (None, None) => "any".into(),
        }
    }

    pub(crate) fn adopted(&self) -> Option<&std::net::UdpSocket> {
        self.socket.as_ref().map(|s| &*s.0)
    }

    /// The driver follows this interface's addresses (a device without a fixed address).
    pub(crate) fn follows_addresses(&self) -> bool {
        self.device.is_some() && self.ip.is_none() && self.socket.is_none()
    }

    /// The local address to bind (one of the interface's).
    pub fn ip(mut self, ip: IpAddr) -> Self {
        self.ip = Some(ip);
        self
    }

    /// A device's address is its IPv6 one (`true`) or its IPv4 one, whatever the endpoint's
    /// family: IPv4 WiFi beside IPv6-only cellular. The server's address of that family comes
    /// from its announcements ([`Options::announce`]); a connection starts on the primary
    /// path, so that one must be of the server address's family.
    pub fn ipv6(mut self, on: bool) -> Self {
        self.v6 = Some(on);
        self
    }

    /// The local port (0: any free one; a server gives its listening port).
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// The interface's role, which the schedulers and the oracle use (WiFi, cellular, wired).
    pub fn kind(mut self, kind: Iface) -> Self {
        self.kind = Some(kind);
        self
    }

    /// Subflows on this interface are backup subflows (MP_PRIO): used only when no regular
    /// subflow can carry data.
    pub fn backup(mut self, backup: bool) -> Self {
        self.backup = backup;
        self
    }

    /// The device name, if the socket is bound to one.
    pub fn device(&self) -> Option<&str> {
        self.device.as_deref()
    }

    pub(crate) fn role(&self) -> Iface {
        self.kind.unwrap_or_else(|| self.device.as_deref().map(iface::guess_kind).unwrap_or_default())
    }

    /// The address to bind: the one given, else the device's address of the family in
    /// `all` (its current `keep` if it still has it, else its first), else `None` (a device
    /// without an address yet: the driver waits for one). A socket handed over has its own.
    pub(crate) fn resolve(&self, v6: bool, all: &[iface::InterfaceInfo], keep: Option<IpAddr>) -> Option<SocketAddr> {
        let v6 = self.v6.unwrap_or(v6);
        let unspecified = if v6 { IpAddr::V6(Ipv6Addr::UNSPECIFIED) } else { IpAddr::V4(Ipv4Addr::UNSPECIFIED) };
        if let Some(s) = self.adopted() {
            return s.local_addr().ok();
        }
        if let Some(ip) = self.ip {
            return Some(SocketAddr::new(ip, self.port));
        }
        let Some(name) = self.device.as_deref() else { return Some(SocketAddr::new(unspecified, self.port)) };
        // IPv6 link-local addresses need a scope on every send: skip them.
        let usable = |a: &IpAddr| match a {
            IpAddr::V4(_) => !v6,
            IpAddr::V6(a) => v6 && (a.segments()[0] & 0xffc0) != 0xfe80,
        };
        let addrs = &all.iter().find(|i| i.name == name)?.addrs;
        let ip = keep.filter(|k| addrs.contains(k)).or_else(|| addrs.iter().copied().find(usable))?;
        Some(SocketAddr::new(ip, self.port))
    }

    /// At start: a device that does not exist is a mistake (a typo), not something to wait
    /// for; [`MpEndpoint::add_interface`](crate::MpEndpoint::add_interface) adds one that
    /// appears later.
    pub(crate) fn check_exists(&self) -> Result<()> {
        match self.device.as_deref() {
            Some(name) if self.socket.is_none() && !iface::exists(name) => {
                Err(Error::NoSuchDevice { name: name.into() })
            }
            _ => Ok(()),
        }
    }
}

/// Options of an endpoint: its interfaces (the first is the primary path) and the protocol's
/// configuration (scheduler, path manager, oracle, fast join, buffers, timers).
///
/// ```
/// use mpudp::{Interface, Options, PathManager};
/// let opts = Options::new()
///     .interface(Interface::new("wlan0"))
///     .interface(Interface::new("rmnet0").backup(true))
///     .scheduler("last-received")
///     .path_manager(PathManager::MultiMob)
///     .fast_join(true);
/// assert_eq!(opts.config().multipath.scheduler, "last-received");
/// ```
#[derive(Clone, Debug)]
pub struct Options {
    pub(crate) interfaces: Vec<Interface>,
    pub(crate) config: Config,
    pub(crate) monitor_interval: Option<Duration>,
    pub(crate) socket_buffer: usize,
    pub(crate) send_buffer: usize,
    pub(crate) connect_timeout: Duration,
    pub(crate) ipv6: bool,
    #[cfg(feature = "qlog")]
    pub(crate) qlog_dir: Option<std::path::PathBuf>,
    pub(crate) tickets: Option<crate::TicketStore>,
    pub(crate) driver_thread: Option<bool>,
    pub(crate) tcp_socket_hook: Option<TcpSocketHook>,
}

impl Default for Options {
    fn default() -> Self {
        Self::new()
    }
}

impl Options {
    /// No interface yet (an endpoint without any gets one unbound socket on the wildcard
    /// address) and mpcore's default configuration.
    pub fn new() -> Self {
        Self {
            interfaces: Vec::new(),
            config: Config::default(),
            monitor_interval: None,
            socket_buffer: 4 << 20,
            send_buffer: 256 << 10,
            connect_timeout: Duration::from_secs(10),
            ipv6: false,
            #[cfg(feature = "qlog")]
            qlog_dir: None,
            tickets: None,
            driver_thread: None,
            tcp_socket_hook: None,
        }
    }

    /// Client: resume connections with the tickets of `store` (PROTOCOL.md §4.8): every
    /// ticket a server gives goes there, and a connection to a server the store has a ticket
    /// for offers it (once). Resumed, the server proves itself with the ticket instead of a
    /// signature, and [`MpEndpoint::connect_early`](crate::MpEndpoint::connect_early) sends the
    /// request with the first packet. A server that cannot take the ticket does the full
    /// handshake: nothing is lost.
    pub fn tickets(mut self, store: crate::TicketStore) -> Self {
        self.config.resumption.accept = true;
        self.tickets = Some(store);
        self
    }

    /// Server: give every client that takes them a resumption ticket, and with `early_data`
    /// take a resuming client's 0-RTT data (PROTOCOL.md §4.7-4.9). A fleet of servers that
    /// should resume each other's clients needs one ticket secret
    /// (`config_mut().resumption.secret`).
    pub fn issue_tickets(mut self, early_data: bool) -> Self {
        self.config.resumption.issue = true;
        self.config.resumption.early_data = early_data;
        self
    }

    /// A phone's client ([`Config::phone`]): MultiMob's break-before-make path manager (the
    /// cellular path opened only when WiFi degrades), the `priority` scheduler, FAST_JOIN and
    /// MP_IDLE, keep-alives every 15 s on the primary subflow only. Add the WiFi interface
    /// first and the cellular one as a backup:
    ///
    /// ```
    /// use mpudp::{Iface, Interface, Options, PathManager};
    /// let opts = Options::phone()
    ///     .interface(Interface::new("wlan0").kind(Iface::Wifi))
    ///     .interface(Interface::new("rmnet0").kind(Iface::Cellular).backup(true));
    /// assert_eq!(opts.config().multipath.path_manager, PathManager::MultiMob);
    /// ```
    pub fn phone() -> Self {
        Self { config: Config::phone(), ..Self::new() }
    }

    /// A server for phones ([`Config::server`]): answers on the subflow the client used last
    /// (`last-received`), FAST_JOIN and MP_IDLE accepted.
    pub fn server() -> Self {
        Self { config: Config::server(), ..Self::new() }
    }

    /// Adds a local path; the first one added is the primary path.
    pub fn interface(mut self, i: Interface) -> Self {
        self.interfaces.push(i);
        self
    }

    /// The packet scheduler by name (`scheduler::NAMES`: lowest-rtt, last-received, priority,
    /// round-robin, redundant, ecf, blest).
    pub fn scheduler(mut self, name: &str) -> Self {
        self.config.multipath.scheduler = name.to_string();
        self
    }

    /// An application's own packet scheduler (see [`mpcore::Scheduler`]): `make` gives each
    /// connection its instance. Replaces the named scheduler.
    ///
    /// ```
    /// use mpudp::{Options, Pick, Scheduler, Segment, SubflowInfo};
    /// #[derive(Debug)]
    /// struct FirstThatCanSend;
    /// impl Scheduler for FirstThatCanSend {
    ///     fn pick(&mut self, s: &[SubflowInfo], seg: &Segment) -> Pick {
    ///         s.iter().position(|f| f.can_send(seg.len)).map_or(Pick::Wait, Pick::Send)
    ///     }
    ///     fn name(&self) -> &str {
    ///         "first"
    ///     }
    /// }
    /// let opts = Options::new().custom_scheduler(|| Box::new(FirstThatCanSend));
    /// assert!(opts.config().multipath.custom_scheduler.is_some());
    /// ```
    pub fn custom_scheduler(mut self, make: impl Fn() -> Box<dyn Scheduler> + Send + Sync + 'static) -> Self {
        self.config.multipath.custom_scheduler = Some(SchedulerFactory::new(make));
        self
    }

    /// The `priority` scheduler's interface preference, most preferred first (default WiFi,
    /// wired, cellular): `&[Iface::Cellular, Iface::Wifi]` for a metered WiFi.
    pub fn interface_order(mut self, order: &[Iface]) -> Self {
        self.config.multipath.interface_order = order.to_vec();
        self
    }

    /// How the client opens subflows (fullmesh, backup, on-demand, multimob).
    pub fn path_manager(mut self, pm: PathManager) -> Self {
        self.config.multipath.path_manager = pm;
        self
    }

    /// The `multimob` path manager's oracle: period and thresholds.
    pub fn oracle(mut self, o: oracle::Config) -> Self {
        self.config.multipath.oracle = o;
        self
    }

    /// Client: when to wake the cellular radio before a failover needs it ([`Prewarm`]: on the
    /// oracle's suspicion of a regular path or a [`MpEndpoint::path_hint`](crate::MpEndpoint);
    /// [`Prewarm::DEFAULT`] unless set). [`Prewarm::OFF`] spends no energy on it.
    pub fn prewarm(mut self, p: Prewarm) -> Self {
        self.config.multipath.prewarm = p;
        self
    }

    /// Each subflow's congestion control: [`CongestionControl::Lia`] by default (coupled, RFC
    /// 6356), OLIA, Reno, CUBIC, or LEDBAT for a background transfer that yields to the
    /// user's traffic.
    pub fn congestion(mut self, cc: CongestionControl) -> Self {
        self.config.transport.congestion = cc;
        self
    }

    /// The connection closes after this long without a packet from the peer (30 s by default,
    /// 2 minutes in the phone and server presets; zero: never). The smaller of the two sides'
    /// is in force.
    pub fn idle_timeout(mut self, d: Duration) -> Self {
        self.config.transport.idle_timeout = micros(d);
        self
    }

    /// While data awaits the peer's acknowledgement, how long a silent peer is waited for
    /// before the connection closes with `PeerUnresponsive` (10 s by default, none in the server
    /// preset; zero: leave it to the idle timeout).
    pub fn peer_timeout(mut self, d: Duration) -> Self {
        self.config.transport.peer_timeout = micros(d);
        self
    }

    /// Client: a PING on the primary subflow after this long without sending (15 s by default,
    /// below the shortest UDP NAT bindings; zero: never).
    pub fn keep_alive(mut self, d: Duration) -> Self {
        self.config.transport.keep_alive = micros(d);
        self
    }

    /// The receive window a connection starts with and the most it grows to (1 MiB and 8 MiB
    /// by default): what a connection may hold of received bytes its reader has not taken.
    pub fn recv_window(mut self, initial: usize, max: usize) -> Self {
        self.config.transport.recv_window = initial;
        self.config.transport.max_recv_window = max;
        self
    }

    /// Offers FAST_JOIN (data in the first packet of a new subflow) and MP_IDLE.
    pub fn fast_join(mut self, on: bool) -> Self {
        self.config.multipath.fast_join = on;
        self.config.multipath.mp_idle = on;
        self
    }

    /// Client: authenticate the server by this public key (PROTOCOL.md §4.6); may be given
    /// several times (a server rotating its key). A connection to a server that does not sign
    /// with one of them fails with [`Error::ServerNotAuthenticated`](crate::Error) and sends
    /// it nothing.
    pub fn server_key(mut self, key: PublicKey) -> Self {
        self.config.transport.server_keys.push(key);
        self
    }

    /// Client: connect without authenticating the server. Anyone on the path can then sit in
    /// the middle of the connection; connecting with neither this nor a
    /// [`server_key`](Self::server_key) is refused.
    pub fn insecure_unauthenticated_server(mut self) -> Self {
        self.config.transport.unauthenticated_server = true;
        self
    }

    /// Server: the identity that signs its handshakes (its public key is what clients are
    /// given). Without one, only clients that opted out of authentication can connect.
    pub fn identity(mut self, id: ServerIdentity) -> Self {
        self.config.server.identity = Some(id);
        self
    }

    /// Server: an address of this server announced to every client (ADD_ADDR, with its HMAC),
    /// so that their paths of another family can join: listening on IPv4 and IPv6, announce
    /// the IPv6 address (as clients reach it) to phones whose cellular network is IPv6-only.
    /// May be given several times (at most 64).
    pub fn announce(mut self, addr: SocketAddr) -> Self {
        self.config.server.announce.push(addr);
        self
    }

    /// Replaces the whole protocol configuration.
    pub fn config_all(mut self, c: Config) -> Self {
        self.config = c;
        self
    }

    /// The protocol configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The protocol configuration, to change any field.
    pub fn config_mut(&mut self) -> &mut Config {
        &mut self.config
    }

    /// Reads the interfaces' links and addresses every `d`, for a platform where neither the
    /// kernel's events nor the application's calls report changes. Off by default: the driver
    /// sleeps until a datagram, a timer of the protocol, a netlink event (Linux, for interfaces
    /// named by device) or the application ([`MpEndpoint::set_path_up`],
    /// [`MpEndpoint::refresh_interfaces`], ...) wakes it. Each poll is a wake-up of the
    /// process (five a second at 200 ms), which a phone pays for in energy.
    ///
    /// [`MpEndpoint::set_path_up`]: crate::MpEndpoint::set_path_up
    /// [`MpEndpoint::refresh_interfaces`]: crate::MpEndpoint::refresh_interfaces
    pub fn monitor_interval(mut self, d: Duration) -> Self {
        self.monitor_interval = Some(d.max(Duration::from_millis(1)));
        self
    }

    /// The socket receive buffer asked from the kernel (default 4 MiB: room for bursts).
    pub fn socket_buffer(mut self, bytes: usize) -> Self {
        self.socket_buffer = bytes;
        self
    }

    /// The most a socket's send buffer may be (default 256 KiB; the kernel holds up to twice
    /// this much). It is the queue in front of the interface: a qdisc counts a GSO batch as one
    /// packet, so its own limit does not bound the bytes queued, and everything else sent on
    /// the link (another connection's request, an ACK) waits behind it. So the driver sizes
    /// each socket's buffer to about 2 ms of the rate it drains at (4 ms once the kernel
    /// doubles it) and its GSO batches to about 1 ms, within this bound, as Linux sizes a TCP
    /// socket's queue (a socket handed over keeps its own). A full socket stops the path's
    /// sends until it drains.
    pub fn send_buffer(mut self, bytes: usize) -> Self {
        self.send_buffer = bytes;
        self
    }

    /// Run the endpoint's driver (its sockets, timers and netlink events) on a driver thread,
    /// in a current-thread runtime, instead of as a task of the caller's runtime. The default
    /// is on when the caller's runtime is tokio's multi-thread one, off on a current-thread
    /// one. On the multi-thread runtime a worker with nothing to do waits in the reactor, so
    /// every datagram the sockets receive, and every one the kernel frees after sending, wakes
    /// it on another core only to find the driver's task already scheduled: that cost a single
    /// upload 10-15 % of its rate (`benches/net.sh`). On a driver thread the drivers are alone
    /// in their reactor, and the application's runtime hears from them only when a stream
    /// becomes readable or writable. The driver threads (`mpudp-driver`) are started as
    /// endpoints need them, one per core at most, and endpoints take them in turn; they live
    /// as long as the process, idle when no endpoint is left. The driver runs on real time: on
    /// a current-thread runtime whose clock is paused (tokio's `test-util`), leave this off.
    pub fn driver_thread(mut self, on: bool) -> Self {
        self.driver_thread = Some(on);
        self
    }

    /// What `driver_thread` set: `None` if nothing did (the runtime decides, as above).
    pub fn driver_thread_choice(&self) -> Option<bool> {
        self.driver_thread
    }

    /// How long `connect` waits for the handshake before giving up with
    /// [`Error::Unreachable`] (default 10 s).
    pub fn connect_timeout(mut self, d: Duration) -> Self {
        self.connect_timeout = d;
        self
    }

    /// How long the first handshake waits for an answer on the first interface before its
    /// INITIAL goes on every other interface too (PROTOCOL.md §4.10; default 250 ms, RFC
    /// 8305's Connection Attempt Delay; `None`: the first interface only). A network that
    /// drops UDP then costs a connection this long, not the connect timeout.
    pub fn other_paths_after(mut self, d: Option<Duration>) -> Self {
        self.config.multipath.other_paths_after = d.map(|d| d.as_micros().min(u128::from(u64::MAX)) as u64);
        self
    }

    /// Where UDP gets no answer for `d`, use TCP (PROTOCOL.md §4.11): the first handshake's
    /// INITIAL goes once over TCP on every interface, and a join over UDP unanswered that long
    /// is raced by one over TCP on its interface (a server accepts TCP on its UDP port number
    /// whatever this says). 1 s by default; `None`: UDP only.
    pub fn tcp_fallback(mut self, d: Option<Duration>) -> Self {
        self.config.multipath.tcp_after = d.map(|d| d.as_micros().min(u128::from(u64::MAX)) as u64);
        self
    }

    /// Interfaces named by device take their IPv6 address rather than their IPv4 one (for
    /// [`MpEndpoint::client`](crate::MpEndpoint::client); `MpStream::connect` follows the
    /// peer's family).
    pub fn ipv6(mut self, on: bool) -> Self {
        self.ipv6 = on;
        self
    }

    /// Calls `hook` with each TCP socket the endpoint opens for a path whose UDP socket the
    /// application handed over ([`Interface::from_socket`]), and that path's label, before the
    /// socket connects or listens: where the OS binds a socket to a network by a call of its
    /// own (Android's `Network.bindSocket`), the hook makes the TCP carrier (PROTOCOL.md §4.11)
    /// leave through the same network as the UDP socket. Without it the endpoint copies the
    /// handed-in socket's binding (its device, `SO_MARK` or `IP_BOUND_IF`), and refuses the
    /// carrier when it cannot. An error from the hook refuses the carrier too.
    ///
    /// With the `tcp` feature (on by default).
    #[cfg(feature = "tcp")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tcp")))]
    pub fn tcp_socket_hook(
        mut self,
        hook: impl Fn(std::os::fd::BorrowedFd<'_>, &str) -> std::io::Result<()> + Send + Sync + 'static,
    ) -> Self {
        self.tcp_socket_hook = Some(TcpSocketHook(std::sync::Arc::new(hook)));
        self
    }

    /// Removes the hook of `Options::tcp_socket_hook`.
    #[cfg(feature = "tcp")]
    #[cfg_attr(docsrs, doc(cfg(feature = "tcp")))]
    pub fn without_tcp_socket_hook(mut self) -> Self {
        self.tcp_socket_hook = None;
        self
    }

    /// Writes every connection's event log (qlog, JSON-SEQ: PROTOCOL.md §13) to a file of its
    /// own in `dir` (created if missing): `<client|server>-<endpoint start, unix ms>-<n>-<connection>.sqlog`,
    /// readable by qvis and `iperf-siri timeline`. It holds packet numbers, sizes, frames,
    /// recovery metrics and the transport's decisions; never a key or a payload byte.
    ///
    /// With the `qlog` feature (on by default).
    #[cfg(feature = "qlog")]
    #[cfg_attr(docsrs, doc(cfg(feature = "qlog")))]
    pub fn qlog_dir(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.qlog_dir = Some(dir.into());
        self.config.logging.qlog = true;
        self
    }

    pub(crate) fn validate(&self) -> Result<()> {
        self.config.validate().map_err(|e| Error::Config(e.to_string()))?;
        if self.interfaces.len() > 64 {
            return Err(Error::Config("at most 64 interfaces".into()));
        }
        Ok(())
    }
}

/// The application's hook for the TCP sockets of its handed-in paths
/// ([`Options::tcp_socket_hook`]).
#[derive(Clone)]
#[cfg_attr(not(feature = "tcp"), allow(dead_code))]
pub(crate) struct TcpSocketHook(pub(crate) std::sync::Arc<BindSocket>);

/// What binds one TCP socket (by descriptor) for a path (by label).
type BindSocket = dyn Fn(std::os::fd::BorrowedFd<'_>, &str) -> std::io::Result<()> + Send + Sync;

impl std::fmt::Debug for TcpSocketHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TcpSocketHook")
    }
}

/// `d` in microseconds, saturating.
fn micros(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}
