//! `MpListener`: a server on one core (one endpoint, its driver a task on the caller's
//! runtime or on a driver thread, `Options::driver_thread`), or spread over several
//! (`bind_cores`): one endpoint per core, each on a thread of its own with a current-thread
//! runtime, every core's sockets bound to the same addresses with `SO_REUSEPORT`, and the
//! kernel steering each datagram to the core that owns its connection (`mpcore::steering`,
//! `driver::reuseport`). The application's streams may be used from any runtime: a stream
//! talks to its core's driver through that core's shared state.

use crate::endpoint::MpEndpoint;
use crate::error::{Error, Result};
use crate::{MpStream, Options};
use mpcore::steering::{Steering, MAX_CORES};
use mpcore::Drops;
use std::future::poll_fn;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::Poll;
use std::time::Duration;
use tokio::sync::oneshot;

/// A server: accepts multipath connections on one address, or on several interfaces; on one
/// core (`bind`: its driver runs on the caller's runtime, or on a driver thread when that is
/// a multi-thread one: `Options::driver_thread`) or spread over several
/// (`bind_cores`).
///
/// ```no_run
/// use mpudp::{MpListener, Options, ServerIdentity};
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
/// # async fn f(identity: ServerIdentity) -> mpudp::Result<()> {
/// let listener = MpListener::bind("0.0.0.0:5201".parse().unwrap(), Options::new().identity(identity))?;
/// loop {
///     let (mut s, peer) = listener.accept().await?;
///     tokio::spawn(async move {
///         let mut buf = vec![0; 4096];
///         while let Ok(n) = s.read(&mut buf).await {
///             if n == 0 || s.write_all(&buf[..n]).await.is_err() {
///                 break;
///             }
///         }
///     });
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct MpListener {
    /// One endpoint per core (one in all for `bind`).
    eps: Vec<MpEndpoint>,
    /// Tells each core's thread that the listener is gone (`bind_cores` only); the thread
    /// then lives until its driver ends, which outlives the streams it accepted.
    stops: Vec<oneshot::Sender<()>>,
    /// The core `accept` looks at first (in turn, so no core's connections wait on another's).
    next: AtomicUsize,
}

impl MpListener {
    /// Listens on `addr` (with `opts`'s interfaces, each on `addr`'s port).
    pub fn bind(addr: SocketAddr, opts: Options) -> Result<Self> {
        Ok(Self { eps: vec![MpEndpoint::server(addr, opts)?], stops: Vec::new(), next: AtomicUsize::new(0) })
    }

    /// Listens on `addr` with `cores` endpoints (at most 64), each driven by a thread of its
    /// own: the connections are spread over them by the kernel's hash of the client's first
    /// packet, and every later packet of a connection (from any of the client's addresses,
    /// its joins included) reaches the core that owns it (Linux: a steering program on the
    /// sockets' `SO_REUSEPORT` group; elsewhere an error). `cores` 1 is `bind`. The threads
    /// end once the listener and every stream it accepted are dropped and their connections
    /// drained.
    pub fn bind_cores(addr: SocketAddr, opts: Options, cores: usize) -> Result<Self> {
        if cores == 1 {
            return Self::bind(addr, opts);
        }
        let n = u8::try_from(cores)
            .ok()
            .filter(|&n| (1..=MAX_CORES).contains(&n))
            .ok_or_else(|| Error::Config(format!("cores must be between 1 and {MAX_CORES}, not {cores}")))?;
        let mut addr = addr;
        let (mut eps, mut stops) = (Vec::new(), Vec::new());
        // The cores share one ticket secret: a client's next connection may reach any of them.
        let mut opts = opts;
        let r = &mut opts.config_mut().resumption;
        if r.issue && r.secret.is_none() {
            let mut s = [0u8; 32];
            mpcore::crypto::random_fill(&mut s)
                .map_err(|_| Error::Config("no system randomness for the ticket secret".into()))?;
            r.secret = Some(s);
        }
        // And one anti-replay record: a replayed 0-RTT INITIAL may reach any of them.
        if r.early_data && r.strikes.is_none() {
            r.strikes = Some(mpcore::StrikeRegister::default());
        }
        // One after another, so that each core's socket takes its place in the group in order.
        for k in 0..n {
            let mut o = opts.clone();
            o.config_mut().server.steering = Steering::new(k, n);
            // Each core is a thread of its own already.
            o.driver_thread = Some(false);
            let (tx, rx) = std::sync::mpsc::channel();
            let (stop, stopped) = oneshot::channel();
            std::thread::Builder::new()
                .name(format!("mpudp-core-{k}"))
                .spawn(move || core(addr, o, tx, stopped))
                .map_err(|e| Error::Io { context: "starting a core's thread".into(), source: e })?;
            let ep = rx.recv().map_err(|_| Error::Config("a core's thread ended while starting".into()))??;
            if addr.port() == 0 {
                addr.set_port(ep.local_addr().port());
            }
            eps.push(ep);
            stops.push(stop);
        }
        // Each core hands the datagrams of the others' connections over (see `IoCounters::forwarded`).
        let peers: Vec<_> = eps.iter().map(|e| std::sync::Arc::downgrade(&e.shared)).collect();
        for e in &eps {
            e.shared.lock().peers = peers.clone();
        }
        Ok(Self { eps, stops, next: AtomicUsize::new(0) })
    }

    /// The next connection, with the client's address (from whichever core has one).
    pub async fn accept(&self) -> Result<(MpStream, SocketAddr)> {
        let (k, h) = poll_fn(|cx| {
            let n = self.eps.len();
            let first = self.next.fetch_add(1, Ordering::Relaxed) % n;
            let mut closed = 0;
            for j in 0..n {
                let k = (first + j) % n;
                match self.eps[k].poll_accepted(cx) {
                    Poll::Ready(Ok(h)) => return Poll::Ready(Ok((k, h))),
                    Poll::Ready(Err(_)) => closed += 1,
                    Poll::Pending => {}
                }
            }
            if closed == n {
                Poll::Ready(Err(Error::EndpointClosed))
            } else {
                Poll::Pending
            }
        })
        .await?;
        Ok(self.eps[k].stream_for(h))
    }

    /// The primary path's bound address (with the port picked, when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.eps[0].local_addr()
    }

    /// The endpoint underneath (paths, drops, close); core 0's when spread over cores.
    pub fn endpoint(&self) -> &MpEndpoint {
        &self.eps[0]
    }

    /// Every core's endpoint, in core order (one for `bind`).
    pub fn endpoints(&self) -> &[MpEndpoint] {
        &self.eps
    }

    /// Datagrams the server dropped, by reason (forged, malformed, replayed, ...: PROTOCOL.md
    /// §11), since it started, summed over its cores.
    pub fn drops(&self) -> Drops {
        let mut d = Drops::default();
        for ep in &self.eps {
            d += ep.drops();
        }
        d
    }
}

impl Drop for MpListener {
    fn drop(&mut self) {
        for s in self.stops.drain(..) {
            let _ = s.send(());
        }
    }
}

/// A core's thread: its endpoint and driver on a current-thread runtime, until the listener
/// is gone and the driver ended.
fn core(
    addr: SocketAddr,
    opts: Options,
    tx: std::sync::mpsc::Sender<Result<MpEndpoint>>,
    stopped: oneshot::Receiver<()>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = tx.send(Err(Error::Io { context: "starting a core's runtime".into(), source: e }));
            return;
        }
    };
    rt.block_on(async move {
        let ep = match MpEndpoint::server(addr, opts) {
            Ok(ep) => ep,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        let shared = ep.shared.clone();
        if tx.send(Ok(ep.clone())).is_err() {
            return;
        }
        // The listener dropped (or its sender did).
        let _ = stopped.await;
        drop(ep);
        // The streams this core accepted still run on its driver, which ends once they are
        // dropped and their connections drained.
        while !shared.lock().stopped {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}
