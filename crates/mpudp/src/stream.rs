//! `MpStream`: one multipath connection as a tokio byte stream.

use crate::driver::{self, store, PathInfo, Shared};
use crate::error::Error;
use bytes::Bytes;
use mpcore::{CloseReason, ConnHandle, ConnStats, PathId, ReadError, WriteError};
use std::future::poll_fn;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The connection behind a stream, its halves and its controls: holds its slot in the driver
/// until the last of them is dropped.
#[derive(Debug)]
pub(crate) struct ConnRef {
    shared: Arc<Shared>,
    h: ConnHandle,
    remote: SocketAddr,
}

impl Drop for ConnRef {
    fn drop(&mut self) {
        self.shared.lock().detach_slot(self.h);
        driver::detach(&self.shared);
    }
}

/// What a stream and its halves share (not its controls). The last one dropped ends the stream
/// in our direction (DATA_FIN after everything written); the driver delivers what is buffered.
/// As TCP answers a close with unread data by a reset, a stream dropped with bytes it never
/// read, or that receives bytes after it was dropped, aborts the connection (MP_FASTCLOSE):
/// the peer's writer learns at once that nobody will read, rather than wait on a window that
/// will never open.
#[derive(Debug)]
pub(crate) struct StreamRef(Arc<ConnRef>);

impl std::ops::Deref for StreamRef {
    type Target = ConnRef;

    fn deref(&self) -> &ConnRef {
        &self.0
    }
}

impl Drop for StreamRef {
    fn drop(&mut self) {
        let mut st = self.shared.lock();
        let now = st.now();
        if let Some(c) = st.ep.conn_mut(self.h) {
            if c.readable() > 0 {
                c.abort(now);
            } else {
                c.close();
            }
        }
        st.slot(self.h).orphaned = true;
        st.wake_driver();
    }
}

impl ConnRef {
    fn poll_read(&self, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if buf.remaining() == 0 {
            // Nothing can be read into no room: done at once, whatever is waiting (as
            // `TcpStream`; a reader cannot take it for the end of the stream, which is 0 bytes
            // read into room for some).
            return Poll::Ready(Ok(()));
        }
        self.poll_read_via(cx, |c| c.read(buf.initialize_unfilled())).map_ok(|n| buf.advance(n))
    }

    /// Calls `f` with the next chunk of the stream where it lies, up to `max` bytes (the end of
    /// the stream: `None`, and `f` is kept).
    fn poll_read_chunk<R>(
        &self,
        cx: &mut Context<'_>,
        max: usize,
        f: &mut Option<impl FnOnce(&[u8]) -> R>,
    ) -> Poll<io::Result<Option<R>>> {
        let mut out = None;
        self.poll_read_via(cx, |c| {
            let chunk = c.read_chunk(max)?;
            if !chunk.is_empty() {
                out = f.take().map(|f| f(chunk));
            }
            Ok(chunk.len())
        })
        .map_ok(|_| out)
    }

    /// Reads with `read` under the endpoint's lock: the count it read, or the end of the
    /// stream (0), or waits.
    fn poll_read_via(
        &self,
        cx: &mut Context<'_>,
        read: impl FnOnce(&mut mpcore::Connection) -> Result<usize, ReadError>,
    ) -> Poll<io::Result<usize>> {
        let mut st = self.shared.lock();
        let res = match st.ep.conn_mut(self.h) {
            Some(c) => read(c),
            // Drained and forgotten by the endpoint: its end is known.
            None => match st.slot(self.h).closed {
                Some(CloseReason::Graceful) => Ok(0),
                Some(r) => Err(ReadError::Closed(r)),
                None => Err(ReadError::Closed(CloseReason::NoSubflow)),
            },
        };
        match res {
            Ok(n) => {
                // The window opened by a quarter of the buffer: the driver sends a packet to
                // say so. Smaller openings go with the next acknowledgement; a wake-up per
                // read would cost the driver's thread a context switch each.
                if n > 0 && st.ep.conn(self.h).is_some_and(|c| c.window_update_due()) {
                    st.wake_driver();
                }
                Poll::Ready(Ok(n))
            }
            Err(ReadError::Blocked) if st.stopped => Poll::Ready(Err(Error::EndpointClosed.into())),
            Err(ReadError::Blocked) => {
                store(&mut st.slot(self.h).read, cx.waker());
                Poll::Pending
            }
            Err(ReadError::Closed(r)) => Poll::Ready(Err(Error::Closed(r).into())),
        }
    }

    fn poll_write(&self, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_write_with(cx, |c| c.write(data))
    }

    /// Writes the front of `data` by reference (split off it).
    fn poll_write_bytes(&self, cx: &mut Context<'_>, data: &mut Bytes) -> Poll<io::Result<usize>> {
        self.poll_write_with(cx, |c| c.write_bytes(data))
    }

    fn poll_write_with(
        &self,
        cx: &mut Context<'_>,
        write: impl FnOnce(&mut mpcore::Connection) -> Result<usize, WriteError>,
    ) -> Poll<io::Result<usize>> {
        let mut st = self.shared.lock();
        let Some(c) = st.ep.conn_mut(self.h) else {
            let r = st.slot(self.h).closed.unwrap_or(CloseReason::NoSubflow);
            return Poll::Ready(Err(Error::Closed(r).into()));
        };
        // The driver is woken only when the connection had nothing left to send: otherwise
        // it is sending already, or waits for what lets it (an acknowledgement, a timer, a
        // socket's room), and these bytes go after the others. On a multi-thread runtime a
        // wake-up per write costs the driver's thread a futex call and often a context switch.
        let idle = c.unsent() == 0;
        match write(c) {
            Ok(n) => {
                if idle {
                    st.wake_driver();
                }
                Poll::Ready(Ok(n))
            }
            Err(WriteError::Blocked) if st.stopped => Poll::Ready(Err(Error::EndpointClosed.into())),
            Err(WriteError::Blocked) => {
                st.wait_write(self.h, cx.waker());
                Poll::Pending
            }
            Err(WriteError::Finished) => {
                Poll::Ready(Err(io::Error::new(io::ErrorKind::BrokenPipe, "write after shutdown")))
            }
            Err(WriteError::Closed(r)) => Poll::Ready(Err(Error::Closed(r).into())),
        }
    }

    /// Ends our direction (DATA_FIN after everything written). An error if the connection
    /// ended otherwise than gracefully (aborted by either side, timed out), as a TCP socket
    /// that was reset refuses `shutdown`.
    fn shutdown(&self) -> io::Result<()> {
        let mut st = self.shared.lock();
        let failed = match st.ep.conn_mut(self.h) {
            Some(c) => match c.close_reason() {
                Some(r) if r != CloseReason::Graceful => Some(r),
                _ => {
                    c.close();
                    None
                }
            },
            None => st.slot(self.h).closed.filter(|&r| r != CloseReason::Graceful),
        };
        st.wake_driver();
        match failed {
            Some(r) => Err(Error::Closed(r).into()),
            None => Ok(()),
        }
    }

    fn stats(&self) -> Option<ConnStats> {
        self.shared.lock().ep.stats(self.h)
    }

    fn open_subflow(&self, path: PathId, backup: bool) -> Option<u32> {
        let mut st = self.shared.lock();
        let now = st.now();
        let id = st.ep.conn_mut(self.h)?.open_subflow(now, path, self.remote, backup);
        st.wake_driver();
        id
    }

    fn close_subflow(&self, id: u32) -> bool {
        let mut st = self.shared.lock();
        let now = st.now();
        let done = st.ep.conn_mut(self.h).is_some_and(|c| c.close_subflow(now, id, 0));
        st.wake_driver();
        done
    }

    fn set_backup(&self, id: u32, backup: bool) -> bool {
        let mut st = self.shared.lock();
        let done = st.ep.conn_mut(self.h).is_some_and(|c| c.set_backup(id, backup));
        st.wake_driver();
        done
    }

    fn probe_peer(&self) -> bool {
        let mut st = self.shared.lock();
        let now = st.now();
        let sent = st.ep.conn_mut(self.h).is_some_and(|c| c.probe_peer(now));
        st.wake_driver();
        sent
    }

    fn abort(&self) {
        let mut st = self.shared.lock();
        let now = st.now();
        if let Some(c) = st.ep.conn_mut(self.h) {
            c.abort(now);
        }
        st.wake_driver();
    }
}

/// A multipath connection: a reliable, ordered byte stream over subflows on several
/// interfaces. Implements tokio's [`AsyncRead`] and [`AsyncWrite`]; [`into_split`]
/// gives halves for two tasks. Dropping it ends our direction gracefully (like closing a TCP
/// socket): the driver still delivers what was written.
///
/// Reading and writing behave as a `tokio::net::TcpStream` does:
/// - a read into no room returns at once with nothing; after the peer's end of stream every
///   read returns 0 bytes; after an abort (ours or the peer's) or a timeout, an error
///   ([`Error::Closed`](crate::Error::Closed) as `io::Error`: `ConnectionReset` for an abort,
///   `TimedOut` for a silent peer);
/// - a write of nothing returns 0 at once while the stream is open; a write after
///   `shutdown` is `BrokenPipe`;
/// - `flush` returns at once: written bytes are in the send buffer and go on their own; it
///   says nothing of their delivery, which [`closed`](MpStream::closed) tells (graceful: both
///   directions' data acknowledged);
/// - `shutdown` sends DATA_FIN after everything written and returns at once; again is
///   harmless; after an abort or a timeout it is an error.
///
/// Without copies: [`write_chunk`](MpStream::write_chunk) hands a `Bytes` over by reference,
/// [`read_with`](MpStream::read_with) reads the received bytes where they lie.
///
/// [`into_split`]: MpStream::into_split
///
/// ```no_run
/// use mpudp::{Interface, MpStream, Options, PublicKey};
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// // The server's public key, as `iperf-siri keygen` prints it.
/// let key: PublicKey = "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=".parse()?;
/// let opts = Options::new()
///     .interface(Interface::new("wlan0"))
///     .interface(Interface::new("rmnet0").backup(true))
///     .server_key(key);
/// let mut s = MpStream::connect("192.0.2.1:5201", opts).await?;
/// s.write_all(b"hello").await?;
/// s.shutdown().await?;
/// let mut reply = Vec::new();
/// s.read_to_end(&mut reply).await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct MpStream {
    conn: Arc<StreamRef>,
}

impl MpStream {
    pub(crate) fn new(shared: &Arc<Shared>, h: ConnHandle, remote: SocketAddr) -> Self {
        shared.lock().attach_slot(h);
        Self { conn: Arc::new(StreamRef(Arc::new(ConnRef { shared: driver::attach(shared), h, remote }))) }
    }

    /// Opens a subflow from local path `path` to the server's address (a client only),
    /// `backup` or regular; returns its number, or `None` if it cannot (no such path, the
    /// subflow limit, a closed connection). The driver sends the join at once.
    pub fn open_subflow(&self, path: PathId, backup: bool) -> Option<u32> {
        self.conn.open_subflow(path, backup)
    }

    /// Closes subflow `id` (SUBFLOW_RESET to the peer; its data in flight goes to the others).
    /// Returns whether it was open.
    pub fn close_subflow(&self, id: u32) -> bool {
        self.conn.close_subflow(id)
    }

    /// Marks subflow `id` backup (or regular again), and tells the peer (MP_PRIO): a backup
    /// subflow carries data only when no regular one can. Returns whether it was open.
    pub fn set_backup(&self, id: u32, backup: bool) -> bool {
        self.conn.set_backup(id, backup)
    }

    /// The peer's address on the first subflow.
    pub fn peer_addr(&self) -> SocketAddr {
        self.conn.remote
    }

    /// A snapshot of the connection and each subflow (RTT, window, counters), or `None` once
    /// the endpoint has forgotten the connection.
    pub fn stats(&self) -> Option<ConnStats> {
        self.conn.stats()
    }

    /// The connection's events as they happen: subflows joined, failed, recovered and
    /// closed, the oracle's verdicts, fail-backs, and the close, after which the stream ends.
    /// Until the first `events()` of a connection the driver keeps only its last 8 (its
    /// first ones, for a stream taken right after connecting); from then on, up to 1,024
    /// waiting to be read ([`Events::lost`](crate::Events::lost) counts the others).
    ///
    /// ```no_run
    /// # async fn f(s: mpudp::MpStream) {
    /// let mut events = s.events();
    /// tokio::spawn(async move {
    ///     while let Some(e) = events.next().await {
    ///         println!("{:?} on {:?}", e.event, e.path);
    ///     }
    /// });
    /// # }
    /// ```
    pub fn events(&self) -> crate::Events {
        crate::Events::new(&self.conn.shared, self.conn.h)
    }

    /// The endpoint's local paths: interface, address, link state and datagram counters.
    pub fn paths(&self) -> Vec<PathInfo> {
        self.conn.shared.lock().path_infos()
    }

    /// Aborts the connection at once (MP_FASTCLOSE): unsent data is discarded.
    pub fn abort(&self) {
        self.conn.abort()
    }

    /// Asks whether the peer is still there, in a pause of the application's (a client
    /// between requests): a PING goes now, and if nothing at all comes back from the peer
    /// within the peer timeout (`Options::peer_timeout`, 10 s by default), the connection
    /// closes as when data goes unanswered (reads and writes fail with "the peer stopped
    /// answering"). Idle, a connection otherwise learns of a dead peer only at its idle
    /// timeout. Each call costs one PING and its ACK on the primary path. False (nothing sent)
    /// unless the connection is established and has a peer timeout.
    pub fn probe_peer(&self) -> bool {
        self.conn.probe_peer()
    }

    /// A handle on this stream's connection that stays usable once the stream is split or
    /// handed to a library that owns it (an HTTP client, a foreign-language binding): stats,
    /// events, subflows, abort, the close. It is not a stream: once the stream and its halves
    /// are dropped our direction ends as it would without a control, which can still watch
    /// the connection close.
    pub fn control(&self) -> StreamControl {
        StreamControl { conn: self.conn.0.clone() }
    }

    /// Waits until the connection has closed, for whatever reason (after a graceful close both
    /// sides' DATA_FINs were acknowledged). Use it after `shutdown` to know the peer got
    /// everything.
    pub async fn closed(&self) -> CloseReason {
        closed(&self.conn).await
    }

    /// Splits into a read half and a write half that can move to different tasks. Dropping the
    /// write half ends our direction (DATA_FIN), as `shutdown` does.
    pub fn into_split(self) -> (OwnedReadHalf, OwnedWriteHalf) {
        (OwnedReadHalf { conn: self.conn.clone() }, OwnedWriteHalf { conn: self.conn })
    }
}

async fn closed(conn: &ConnRef) -> CloseReason {
    poll_fn(|cx| {
        let mut st = conn.shared.lock();
        let stopped = st.stopped;
        let slot = st.slot(conn.h);
        match slot.closed {
            Some(r) => Poll::Ready(r),
            None if stopped => Poll::Ready(CloseReason::Aborted),
            None => {
                store(&mut slot.close, cx.waker());
                Poll::Pending
            }
        }
    })
    .await
}

/// See [`MpStream::control`]. Cloneable and `Send`; every method is [`MpStream`]'s.
#[derive(Clone, Debug)]
pub struct StreamControl {
    conn: Arc<ConnRef>,
}

impl StreamControl {
    /// The application says interface `name` (of this connection's endpoint) is down: see
    /// [`MpEndpoint::set_path_down`](crate::MpEndpoint::set_path_down). It applies to the
    /// endpoint, so to every connection on it.
    pub fn set_path_down(&self, name: &str) -> crate::error::Result<()> {
        let c = driver::Command::SetUp { name: name.into(), up: false };
        self.conn.shared.lock().command(name, c)
    }

    /// The interface is up again: see [`MpEndpoint::set_path_up`](crate::MpEndpoint::set_path_up).
    pub fn set_path_up(&self, name: &str) -> crate::error::Result<()> {
        let c = driver::Command::SetUp { name: name.into(), up: true };
        self.conn.shared.lock().command(name, c)
    }

    /// See [`MpStream::stats`].
    pub fn stats(&self) -> Option<ConnStats> {
        self.conn.stats()
    }

    /// See [`MpStream::events`].
    pub fn events(&self) -> crate::Events {
        crate::Events::new(&self.conn.shared, self.conn.h)
    }

    /// See [`MpStream::abort`].
    pub fn abort(&self) {
        self.conn.abort()
    }

    /// Ends our direction (DATA_FIN after everything written), as shutting the write half
    /// down does, without it: a writer blocked on a full send buffer (another thread, another
    /// task) is not waited for, and its next write fails. An error if the connection ended
    /// otherwise than gracefully.
    pub fn shutdown(&self) -> std::io::Result<()> {
        self.conn.shutdown()
    }

    /// See [`MpStream::probe_peer`].
    pub fn probe_peer(&self) -> bool {
        self.conn.probe_peer()
    }

    /// See [`MpStream::closed`].
    pub async fn closed(&self) -> CloseReason {
        closed(&self.conn).await
    }

    /// See [`MpStream::peer_addr`].
    pub fn peer_addr(&self) -> SocketAddr {
        self.conn.remote
    }

    /// See [`MpStream::open_subflow`].
    pub fn open_subflow(&self, path: PathId, backup: bool) -> Option<u32> {
        self.conn.open_subflow(path, backup)
    }

    /// See [`MpStream::close_subflow`].
    pub fn close_subflow(&self, id: u32) -> bool {
        self.conn.close_subflow(id)
    }

    /// See [`MpStream::set_backup`].
    pub fn set_backup(&self, id: u32, backup: bool) -> bool {
        self.conn.set_backup(id, backup)
    }

    /// See [`MpStream::paths`].
    pub fn paths(&self) -> Vec<PathInfo> {
        self.conn.shared.lock().path_infos()
    }
}

/// `write_chunk` for a type with a `conn: Arc<ConnRef>`.
macro_rules! write_chunk {
    ($t:ty) => {
        impl $t {
            /// Writes all of `data` without copying it into the send buffer: the stream keeps
            /// it by reference until the peer acknowledges it, and its bytes are copied once,
            /// into the packets that seal them (`AsyncWrite` copies them into the send buffer
            /// first). Returns once all of it is in the send buffer (waiting for room as
            /// `write_all` does), with `write_all`'s errors. The buffer's memory is held until
            /// the peer acknowledges its bytes: a small `Bytes` cut from a large allocation
            /// keeps all of it. A buffer under 4 KiB is copied (keeping it would cost more).
            ///
            /// ```no_run
            /// # async fn f(mut s: mpudp::MpStream) -> std::io::Result<()> {
            /// let body = bytes::Bytes::from(vec![7u8; 1 << 20]);
            /// s.write_chunk(body.clone()).await?; // the same bytes again: no copy either
            /// s.write_chunk(body).await?;
            /// # Ok(()) }
            /// ```
            pub async fn write_chunk(&mut self, mut data: Bytes) -> io::Result<()> {
                while !data.is_empty() {
                    poll_fn(|cx| self.conn.poll_write_bytes(cx, &mut data)).await?;
                }
                Ok(())
            }
        }
    };
}

write_chunk!(MpStream);
write_chunk!(OwnedWriteHalf);

/// `read_with` for a type with a `conn: Arc<StreamRef>`.
macro_rules! read_with {
    ($t:ty) => {
        impl $t {
            /// Reads in place: waits for bytes, then calls `f` with the next of the stream, up
            /// to `max`, where they lie in the connection's receive buffer, and they are read.
            /// `AsyncRead` copies them into the caller's buffer; this does not, for a reader
            /// that hashes, parses or counts them. A chunk may be shorter than what is
            /// waiting (it ends where the buffer wraps). `Ok(None)` at the end of the stream;
            /// errors as `read`'s. With `max == 0`, `f` gets nothing at once.
            ///
            /// `f` runs under the endpoint's lock, which its driver needs to receive and send:
            /// keep it short, and in it never call into, or drop, a handle of this endpoint
            /// (the lock is not re-entrant: that would deadlock).
            ///
            /// ```no_run
            /// # async fn f(mut s: mpudp::MpStream) -> std::io::Result<()> {
            /// let mut sum = 0u64;
            /// while let Some(()) = s.read_with(1 << 16, |b| sum += b.iter().map(|&x| u64::from(x)).sum::<u64>()).await? {}
            /// # Ok(()) }
            /// ```
            pub async fn read_with<R>(&mut self, max: usize, f: impl FnOnce(&[u8]) -> R) -> io::Result<Option<R>> {
                if max == 0 {
                    return Ok(Some(f(&[])));
                }
                let mut f = Some(f);
                poll_fn(|cx| self.conn.poll_read_chunk(cx, max, &mut f)).await
            }
        }
    };
}

read_with!(MpStream);
read_with!(OwnedReadHalf);

/// `AsyncRead` for a type with a `conn: Arc<ConnRef>`.
macro_rules! async_read {
    ($t:ty) => {
        impl AsyncRead for $t {
            fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
                self.conn.poll_read(cx, buf)
            }
        }
    };
}

/// `AsyncWrite` for a type with a `conn: Arc<ConnRef>`. Flushing has nothing to do: written
/// bytes are in the connection's send buffer and the driver sends them on its own (as a TCP
/// socket's flush, it says nothing of their delivery: `closed()` does); shutting down sends
/// DATA_FIN after them, and fails once the connection was aborted or timed out.
macro_rules! async_write {
    ($t:ty) => {
        impl AsyncWrite for $t {
            fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
                self.conn.poll_write(cx, buf)
            }

            fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(Ok(()))
            }

            fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
                Poll::Ready(self.conn.shutdown())
            }
        }
    };
}

async_read!(MpStream);
async_write!(MpStream);
async_read!(OwnedReadHalf);
async_write!(OwnedWriteHalf);

/// The read half of an [`MpStream`].
#[derive(Debug)]
pub struct OwnedReadHalf {
    conn: Arc<StreamRef>,
}

/// The write half of an [`MpStream`]; dropping it ends our direction (DATA_FIN).
#[derive(Debug)]
pub struct OwnedWriteHalf {
    conn: Arc<StreamRef>,
}

impl OwnedReadHalf {
    /// See [`MpStream::stats`].
    pub fn stats(&self) -> Option<ConnStats> {
        self.conn.stats()
    }
}

impl OwnedWriteHalf {
    /// See [`MpStream::stats`].
    pub fn stats(&self) -> Option<ConnStats> {
        self.conn.stats()
    }

    /// See [`MpStream::probe_peer`].
    pub fn probe_peer(&self) -> bool {
        self.conn.probe_peer()
    }

    /// See [`MpStream::closed`].
    pub async fn closed(&self) -> CloseReason {
        closed(&self.conn).await
    }
}

impl Drop for OwnedWriteHalf {
    fn drop(&mut self) {
        // Our direction ends; after an abort there is nothing to end.
        let _ = self.conn.shutdown();
    }
}
