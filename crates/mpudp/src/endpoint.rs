//! `MpEndpoint`: sockets + driver, any number of connections.

use crate::driver::{self, store, PathInfo, Shared};
use crate::error::{Error, Result};
use crate::{Interface, MpStream, Options};
use mpcore::{CloseReason, ConnHandle, Drops, LinkHint, PathId};
use std::future::poll_fn;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

/// A set of local paths (one UDP socket per interface) with the task that drives every
/// connection on them (on the caller's runtime, or on a driver thread:
/// `Options::driver_thread`). A client endpoint can open many connections, which then share
/// the `multimob` oracle's view of each interface; a server endpoint accepts them.
///
/// Create it inside a tokio runtime. Clones share the endpoint; its task ends once every
/// handle (endpoints, listeners, streams) is dropped and every connection has closed.
///
/// ```no_run
/// use mpudp::{Interface, MpEndpoint, Options, PublicKey};
/// # async fn f(key: PublicKey) -> mpudp::Result<()> {
/// let ep = MpEndpoint::client(Options::new().interface(Interface::new("wlan0")).server_key(key))?;
/// let a = ep.connect("192.0.2.1:5201".parse().unwrap()).await?;
/// let b = ep.connect("192.0.2.1:5201".parse().unwrap()).await?;
/// # let _ = (a, b); Ok(()) }
/// ```
#[derive(Debug)]
pub struct MpEndpoint {
    pub(crate) shared: Arc<Shared>,
    connect_timeout: Duration,
}

impl Clone for MpEndpoint {
    fn clone(&self) -> Self {
        Self { shared: driver::attach(&self.shared), connect_timeout: self.connect_timeout }
    }
}

impl Drop for MpEndpoint {
    fn drop(&mut self) {
        driver::detach(&self.shared);
    }
}

impl MpEndpoint {
    /// A client endpoint on `opts`'s interfaces (IPv4 addresses unless `Options::ipv6`).
    pub fn client(opts: Options) -> Result<Self> {
        let v6 = opts.ipv6;
        Self::client_for(opts, v6)
    }

    pub(crate) fn client_for(opts: Options, v6: bool) -> Result<Self> {
        let shared = driver::start(&opts, false, v6)?;
        Ok(Self { shared, connect_timeout: opts.connect_timeout })
    }

    /// A server endpoint on `opts`'s interfaces; with none, one socket bound to `addr`.
    /// Interfaces without a port take `addr`'s.
    pub fn server(addr: SocketAddr, opts: Options) -> Result<Self> {
        let mut opts = opts;
        if opts.interfaces.is_empty() {
            opts.interfaces.push(Interface::unbound(addr));
        }
        for i in &mut opts.interfaces {
            if i.port == 0 {
                i.port = addr.port();
            }
        }
        let shared = driver::start(&opts, true, addr.is_ipv6())?;
        Ok(Self { shared, connect_timeout: opts.connect_timeout })
    }

    /// Opens a connection to `remote` from the primary path (the first interface configured
    /// that has an address and is up; if none has yet, it waits for one). Resolves when the
    /// handshake completes; [`Error::Unreachable`] after the connect timeout
    /// (`Options::connect_timeout`) without an answer, [`Error::NoAddress`] if no interface
    /// got an address by then.
    pub async fn connect(&self, remote: SocketAddr) -> Result<MpStream> {
        self.connect_with(remote, None).await
    }

    /// [`connect`](Self::connect), with `early` as the stream's first bytes: with a ticket for
    /// `remote` in the endpoint's store (`Options::tickets`), they go with the first packet as
    /// 0-RTT data (PROTOCOL.md §4.9) and the server can answer in its first; otherwise, or if
    /// the server does not take them, they go once the handshake is done. Either way they are
    /// written when this returns, and arrive once.
    ///
    /// Early data can be replayed by whoever captured it (the server refuses the replays it
    /// sees): send early only what is safe to act on twice, such as a request without side
    /// effects.
    pub async fn connect_early(&self, remote: SocketAddr, early: &[u8]) -> Result<MpStream> {
        self.connect_with(remote, Some(early)).await
    }

    async fn connect_with(&self, remote: SocketAddr, early: Option<&[u8]>) -> Result<MpStream> {
        if remote.port() == 0 {
            return Err(Error::Config(format!("{remote}: port 0 is no server's port")));
        }
        // §4.3: a client whose token collides with one of its other connections' starts again
        // with a fresh key share (a new attempt); rare (one in 2^32 per pair of connections),
        // so a few attempts always do.
        let mut attempt = 0;
        loop {
            match self.connect_once(remote, early).await {
                // Not with early data: the server may have taken it on the failed attempt.
                Err(Error::Closed(CloseReason::TokenCollision)) if attempt < 3 && early.is_none() => attempt += 1,
                r => return r,
            }
        }
    }

    async fn connect_once(&self, remote: SocketAddr, early: Option<&[u8]>) -> Result<MpStream> {
        let started = std::time::Instant::now();
        let path = poll_fn(|cx| {
            let mut st = self.shared.lock();
            if st.stopped {
                return Poll::Ready(Err(Error::EndpointClosed));
            }
            match st.primary() {
                Some(p) => Poll::Ready(Ok(p)),
                None => {
                    store(&mut st.path_waker, cx.waker());
                    Poll::Pending
                }
            }
        });
        let family = if remote.is_ipv6() { "IPv6" } else { "IPv4" };
        let no_address = || Error::NoAddress { name: "any of the endpoint's interfaces".into(), family };
        let path = tokio::time::timeout(self.connect_timeout, path).await.map_err(|_| no_address())??;
        let ticket_back;
        let h = {
            let mut st = self.shared.lock();
            if let Some(local) = st.ep.path(path).map(|p| p.addr).filter(|a| a.is_ipv6() != remote.is_ipv6()) {
                return Err(Error::Config(format!(
                    "address family mismatch: the server {remote} is {family}, this endpoint's path is {local} (make the endpoint with MpStream::connect, or interfaces of the server's family)"
                )));
            }
            let now = st.now();
            // A phone's monotonic clock stops while it sleeps: the unix time that dates the
            // ticket's age is taken again now.
            st.ep.set_unix_time(now, unix_ms());
            let keys: Vec<[u8; 32]> = st.ep.config().transport.server_keys.iter().map(|k| k.0).collect();
            let ticket = st.tickets.as_ref().and_then(|s| s.take_for(remote, &keys));
            ticket_back = ticket.clone();
            let h = match &ticket {
                Some(t) => st.ep.connect_resuming(now, path, remote, t),
                None => st.ep.connect(now, path, remote),
            }
            .map_err(|e| match e {
                mpcore::ConnectError::NoServerKey => Error::NoServerKey,
                e => Error::Config(e.to_string()),
            })?;
            if let (Some(data), Some(c)) = (early, st.ep.conn_mut(h)) {
                // Before the driver sends the INITIAL (it needs this lock): it announces them.
                let mut at = 0;
                while at < data.len() {
                    match c.write_early(&data[at..]) {
                        Ok(n) => at += n,
                        Err(e) => {
                            c.abort(now);
                            return Err(Error::Config(format!(
                                "early data of {} bytes does not fit the send buffer ({e:?})",
                                data.len()
                            )));
                        }
                    }
                }
            }
            st.wake_driver();
            h
        };
        let unreachable = || Error::Unreachable { addr: remote, waited: started.elapsed() };
        let stream = MpStream::new(&self.shared, h, remote);
        let handshake = poll_fn(|cx| {
            let mut st = self.shared.lock();
            let stopped = st.stopped;
            let slot = st.slot(h);
            if slot.connected {
                return Poll::Ready(Ok(()));
            }
            match slot.closed {
                Some(CloseReason::HandshakeTimeout) => Poll::Ready(Err(unreachable())),
                Some(CloseReason::ServerAuthFailed) => Poll::Ready(Err(Error::ServerNotAuthenticated { addr: remote })),
                Some(r) => Poll::Ready(Err(Error::Closed(r))),
                None if stopped => Poll::Ready(Err(Error::EndpointClosed)),
                None => {
                    store(&mut slot.connect, cx.waker());
                    Poll::Pending
                }
            }
        });
        let r = match tokio::time::timeout(self.connect_timeout, handshake).await {
            Ok(Ok(())) => return Ok(stream),
            Ok(Err(e)) => e,
            Err(_) => {
                stream.abort();
                unreachable()
            }
        };
        // The server never answered: it never saw the ticket either (or whatever saw it could
        // not answer), so the ticket is kept for the next try rather than spent.
        if let (Error::Unreachable { .. }, Some(t)) = (&r, ticket_back) {
            if let Some(s) = self.shared.lock().tickets.as_ref() {
                s.insert(t);
            }
        }
        Err(r)
    }

    /// The store of `Options::tickets`, if given: what to save for the app's next start
    /// ([`TicketStore::to_bytes`](crate::TicketStore::to_bytes)).
    pub fn ticket_store(&self) -> Option<crate::TicketStore> {
        self.shared.lock().tickets.clone()
    }

    /// The next connection a client opened to this (server) endpoint, with the client's
    /// address.
    pub async fn accept(&self) -> Result<(MpStream, SocketAddr)> {
        let h = poll_fn(|cx| self.poll_accepted(cx)).await?;
        Ok(self.stream_for(h))
    }

    /// The next accepted connection's handle, if one waits.
    pub(crate) fn poll_accepted(&self, cx: &mut Context<'_>) -> Poll<Result<ConnHandle>> {
        let mut st = self.shared.lock();
        if let Some(h) = st.accepted.pop_front() {
            return Poll::Ready(Ok(h));
        }
        if st.stopped {
            return Poll::Ready(Err(Error::EndpointClosed));
        }
        store(&mut st.accept_waker, cx.waker());
        Poll::Pending
    }

    /// The stream of accepted connection `h`, with the client's address.
    pub(crate) fn stream_for(&self, h: ConnHandle) -> (MpStream, SocketAddr) {
        let remote = {
            let st = self.shared.lock();
            st.ep.stats(h).and_then(|s| s.subflows.first().map(|f| f.remote))
        };
        let remote = remote.unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
        (MpStream::new(&self.shared, h, remote), remote)
    }

    /// The local paths, indexed by `PathId`: interface, bound address, link state, datagram
    /// counters; a path whose address went is kept, marked `removed`, until its slot is reused.
    pub fn paths(&self) -> Vec<PathInfo> {
        self.shared.lock().path_infos()
    }

    /// The primary path's bound address (the unspecified address while no interface has
    /// one).
    pub fn local_addr(&self) -> SocketAddr {
        let st = self.shared.lock();
        let p = st.primary().or_else(|| (!st.paths.is_empty()).then_some(PathId(0)));
        p.map_or(SocketAddr::from(([0, 0, 0, 0], 0)), |p| st.paths[usize::from(p.0)].addr)
    }

    /// The application says interface `name` (a device name, or an interface's
    /// [`label`](Interface::label)) is up again: feed the OS's connectivity callbacks in
    /// here. Undoes [`set_path_down`](Self::set_path_down); a link the driver sees down stays
    /// down.
    pub fn set_path_up(&self, name: &str) -> Result<()> {
        self.command(name, driver::Command::SetUp { name: name.into(), up: true })
    }

    /// The application says interface `name` is down (it lost its network): its subflows
    /// close at once and the traffic moves, as when the driver sees the link go down.
    pub fn set_path_down(&self, name: &str) -> Result<()> {
        self.command(name, driver::Command::SetUp { name: name.into(), up: false })
    }

    /// The application's word on interface `name`'s link quality, from the OS (Android's
    /// `NetworkCallback.onCapabilitiesChanged` and `WifiInfo`, iOS's `NWPathMonitor`): a
    /// degraded network, a weak signal or a slow link wakes the cellular radio early, so that a
    /// failover that follows does not wait for its promotion ([`Options::prewarm`]). It opens
    /// nothing by itself.
    pub fn path_hint(&self, name: &str, hint: LinkHint) -> Result<()> {
        self.command(name, driver::Command::Hint { name: name.into(), hint })
    }

    /// The application says the system's networks changed (Android's
    /// `ConnectivityManager.NetworkCallback`, iOS's `NWPathMonitor`, macOS's
    /// `SCNetworkReachability`): the driver reads the interfaces' links and addresses afresh,
    /// as it does on Linux when netlink reports a change. Nothing polls them otherwise (see
    /// [`Options::monitor_interval`]).
    pub fn refresh_interfaces(&self) -> Result<()> {
        let mut st = self.shared.lock();
        if st.stopped {
            return Err(Error::EndpointClosed);
        }
        st.commands.push_back(driver::Command::Refresh);
        st.wake_driver();
        Ok(())
    }

    /// How many times the endpoint's driver task has run: each run is a wake-up of the thread
    /// it is on. An idle endpoint runs only for its connections' timers (keep-alives:
    /// `Config::transport.keep_alive`), a datagram, or the application.
    pub fn driver_wakeups(&self) -> u64 {
        self.shared.lock().wakeups
    }

    /// Adds an interface to the endpoint: used (joined from, as the path manager says) as soon
    /// as it has an address; a device that does not exist yet is waited for.
    pub fn add_interface(&self, i: Interface) -> Result<()> {
        let name = i.name();
        let mut st = self.shared.lock();
        if st.stopped {
            return Err(Error::EndpointClosed);
        }
        if st.names.contains(&name) {
            return Err(Error::Config(format!("interface {name:?} is already one of the endpoint's")));
        }
        st.names.push(name);
        st.commands.push_back(driver::Command::Add(i));
        st.wake_driver();
        Ok(())
    }

    /// Removes interface `name`: its subflows close (the peer is told) and its socket goes.
    pub fn remove_interface(&self, name: &str) -> Result<()> {
        self.command(name, driver::Command::Remove { name: name.into() })?;
        self.shared.lock().names.retain(|n| n != name);
        Ok(())
    }

    fn command(&self, name: &str, c: driver::Command) -> Result<()> {
        self.shared.lock().command(name, c)
    }

    /// WARM datagrams (PROTOCOL.md §3.3) sent to wake a cellular radio, and received.
    pub fn warmups(&self) -> (u64, u64) {
        self.shared.lock().ep.warmups()
    }

    /// Datagrams the endpoint dropped (malformed, forged, replayed, unknown), by reason.
    pub fn drops(&self) -> Drops {
        *self.shared.lock().ep.drops()
    }

    /// What the server did with first packets: answered, asked to retry, shed
    /// (`Config::server.retry_above`, `Config::server.initials_per_source` and the bound on stateless
    /// answers).
    pub fn handshake_counters(&self) -> crate::HandshakeCounters {
        self.shared.lock().ep.handshake_counters()
    }

    /// Connections not yet drained.
    pub fn live_connections(&self) -> usize {
        self.shared.lock().ep.live_connections()
    }

    /// Connections the driver keeps state for: those not yet drained, and those the
    /// application still holds a stream or event stream of. Follows the connections in use,
    /// not every one ever made: a slot is freed once both are gone.
    pub fn tracked_connections(&self) -> usize {
        self.shared.lock().slots_held()
    }

    /// Aborts every connection (MP_FASTCLOSE); the task ends once they are drained and every
    /// handle is dropped.
    pub fn close(&self) {
        let mut st = self.shared.lock();
        let now = st.now();
        let handles: Vec<_> = st.ep.handles().collect();
        for h in handles {
            if let Some(c) = st.ep.conn_mut(h) {
                c.abort(now);
            }
        }
        st.wake_driver();
    }

    /// Waits until no connection is left (each closed and drained).
    pub async fn wait_idle(&self) {
        poll_fn(|cx| {
            let mut st = self.shared.lock();
            if st.ep.live_connections() == 0 || st.stopped {
                return Poll::Ready(());
            }
            store(&mut st.idle_waker, cx.waker());
            st.wake_driver();
            Poll::Pending
        })
        .await
    }
}

/// A stream's own way in: a new client endpoint and its first connection (here rather than in
/// `stream`, which the endpoint's connections are made of).
impl MpStream {
    /// Opens a connection to `remote` (an address, or a `"host:port"` resolved as
    /// [`tokio::net::lookup_host`] does, its addresses tried in turn, IPv4 first) from a new
    /// client endpoint with `opts`'s interfaces (the
    /// first is the primary path; with none, one unbound socket). Resolves once the handshake
    /// completes; fails with [`Error::Unreachable`] if the server does not answer within the
    /// connect timeout (see [`MpEndpoint::connect`](crate::MpEndpoint::connect)), with
    /// [`Error::ServerNotAuthenticated`] if it cannot prove the server key of `opts`, and at
    /// once with [`Error::NoServerKey`] if `opts` has none and did not opt out.
    ///
    /// [`Error::ServerNotAuthenticated`]: crate::Error::ServerNotAuthenticated
    /// [`Error::NoServerKey`]: crate::Error::NoServerKey
    pub async fn connect(remote: impl tokio::net::ToSocketAddrs, opts: Options) -> Result<MpStream> {
        let mut addrs: Vec<SocketAddr> = tokio::net::lookup_host(remote)
            .await
            .map_err(|source| Error::Io { context: "resolving the server's name".into(), source })?
            .collect();
        // IPv4 first, as the interfaces' addresses default to IPv4 (stable: the resolver's
        // order within a family is kept).
        addrs.sort_by_key(|a| a.is_ipv6());
        let mut last = None;
        for addr in addrs {
            let attempt = match crate::MpEndpoint::client_for(opts.clone(), addr.is_ipv6()) {
                Ok(ep) => ep.connect(addr).await,
                Err(e) => Err(e),
            };
            match attempt {
                Ok(s) => return Ok(s),
                // The server was reached and refused to prove its key, or there is no key:
                // another address of the name would not change that.
                Err(e @ (Error::ServerNotAuthenticated { .. } | Error::NoServerKey)) => return Err(e),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| Error::Io {
            context: "resolving the server's name".into(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no address"),
        }))
    }
}

/// The unix time now, in ms.
fn unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}
