//! Connections: read, write, shut down, abort; events (polled or pushed) and statistics.

use crate::home::Home;
use crate::ready::{block_ready, MpuReadyCallback, Readiness};
use crate::{get, guard, guard_len, invalid, put, runtime, timeout, unregister, Fail, Res};
use crate::{MPU_ERR_CLOSED, MPU_OK};
use mpudp::{CloseReason, ConnEvent, Event, Events, MpStream, OwnedReadHalf, OwnedWriteHalf, StreamControl};
use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A connection: its halves (a reader and a writer may block at once, on two threads), a
/// control for the rest, and its events.
pub(crate) struct Conn {
    read: Mutex<OwnedReadHalf>,
    write: Mutex<Option<OwnedWriteHalf>>,
    control: StreamControl,
    /// Its events, for `mpu_next_event`, until a callback takes them.
    events: Mutex<Option<Events>>,
    born: Instant,
    /// Tells the app when a call that would have blocked may go on (`ready`).
    ready: Arc<Readiness>,
    /// Where its calls run: its endpoint's (`home`).
    home: Home,
}

impl Conn {
    pub(crate) fn new(s: MpStream, home: Home) -> Self {
        let control = s.control();
        let events = Mutex::new(Some(s.events()));
        let (r, w) = s.into_split();
        let ready = Arc::default();
        Self { read: Mutex::new(r), write: Mutex::new(Some(w)), control, events, born: Instant::now(), ready, home }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn conn(h: u64) -> Res<Arc<Conn>> {
    get::<Conn>(h, "a connection")
}

fn with_conn<T>(h: u64, f: impl FnOnce(&Conn) -> Res<T>) -> Res<T> {
    let c = conn(h)?;
    f(&c)
}

fn io_fail(e: std::io::Error) -> Fail {
    Fail(MPU_ERR_CLOSED, e.to_string())
}

/// Reads up to `len` bytes into `buf`, waiting at most `timeout_ms` for some
/// (0: try once, `MPU_ERR_WOULD_BLOCK` if none; negative: no limit). Returns the
/// count (> 0), 0 at the end of the stream (the peer shut down and everything was read), or a
/// negative error (`MPU_ERR_WOULD_BLOCK`, `MPU_ERR_TIMEOUT`, `MPU_ERR_CLOSED`).
///
/// # Safety
/// `buf` must point to `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn mpu_read(conn: u64, buf: *mut u8, len: usize, timeout_ms: i32) -> isize {
    guard_len(|| {
        if buf.is_null() || len == 0 {
            return Err(invalid("read into a NULL or empty buffer"));
        }
        // SAFETY: `len` writable bytes (the caller's promise); no other reference to them.
        let out = unsafe { std::slice::from_raw_parts_mut(buf, len) };
        with_conn(conn, |c| {
            let mut r = lock(&c.read);
            let n = block_ready(&c.home, timeout(timeout_ms), &c.ready, r.read(out))?.map_err(io_fail)?;
            Ok(n as isize)
        })
    })
}

/// Writes all `len` bytes of `buf` into the connection's send buffer, waiting at most
/// `timeout_ms` for room (0: as much as fits now, `MPU_ERR_WOULD_BLOCK` if nothing does;
/// negative: no limit). Returns `len`, or the count written when the time ran out after
/// some, or a negative error. Written bytes are sent and retransmitted by the library.
///
/// # Safety
/// `buf` must point to `len` readable bytes.
#[no_mangle]
pub unsafe extern "C" fn mpu_write(conn: u64, buf: *const u8, len: usize, timeout_ms: i32) -> isize {
    guard_len(|| {
        if buf.is_null() {
            return Err(invalid("write from a NULL buffer"));
        }
        // SAFETY: `len` readable bytes (the caller's promise).
        let data = unsafe { std::slice::from_raw_parts(buf, len) };
        with_conn(conn, |c| {
            let mut g = lock(&c.write);
            let w = g.as_mut().ok_or_else(|| Fail(MPU_ERR_CLOSED, "shut down for writing".into()))?;
            let mut done = 0;
            let r = block_ready(&c.home, timeout(timeout_ms), &c.ready, async {
                while done < data.len() {
                    done += w.write(&data[done..]).await?;
                }
                Ok::<_, std::io::Error>(())
            });
            match r {
                Ok(Ok(())) => Ok(done as isize),
                Ok(Err(e)) => Err(io_fail(e)),
                Err(_) if done > 0 => Ok(done as isize),
                Err(e) => Err(e),
            }
        })
    })
}

/// Ends our direction (DATA_FIN after everything written); reading goes on. A write blocked
/// on another thread is not waited for: its next attempt fails with `MPU_ERR_CLOSED`.
#[no_mangle]
pub extern "C" fn mpu_shutdown(conn: u64) -> i32 {
    guard(|| {
        with_conn(conn, |c| {
            // Inside the runtime: it wakes the driver. Through the control, not the write half:
            // a write blocked on another thread holds that, and is not waited for (its next
            // write fails). An abort before is no error here.
            {
                let _rt = c.home.rt().enter();
                let _ = c.control.shutdown();
                if let Ok(mut w) = c.write.try_lock() {
                    w.take();
                }
            }
            // Driven in calls: the DATA_FIN leaves now.
            c.home.catch_up();
            Ok(MPU_OK)
        })
    })
}

/// Aborts the connection at once (MP_FASTCLOSE): unsent data is discarded; blocked reads and
/// writes on other threads return `MPU_ERR_CLOSED`.
#[no_mangle]
pub extern "C" fn mpu_abort(conn: u64) -> i32 {
    guard(|| {
        with_conn(conn, |c| {
            c.control.abort();
            // Driven in calls: the MP_FASTCLOSE leaves now.
            c.home.catch_up();
            Ok(MPU_OK)
        })
    })
}

/// Frees a connection handle. A connection still open is shut down gracefully (as closing a
/// TCP socket), or aborted if it had bytes nobody read.
#[no_mangle]
pub extern "C" fn mpu_conn_free(conn: u64) -> i32 {
    guard(|| {
        let o = unregister::<Conn>(conn, "a connection")?;
        let home = o.home.clone();
        {
            let _rt = home.rt().enter();
            drop(o);
        }
        // Driven in calls: what the close sends leaves now.
        home.catch_up();
        Ok(MPU_OK)
    })
}

/// Closed gracefully: both directions finished and were acknowledged. (`MPU_CLOSE_*` say why
/// a connection closed.)
pub const MPU_CLOSE_GRACEFUL: u32 = 0;
/// Aborted by this side.
pub const MPU_CLOSE_ABORTED: u32 = 1;
/// Aborted by the peer.
pub const MPU_CLOSE_PEER_ABORTED: u32 = 2;
/// Nothing heard for the idle timeout.
pub const MPU_CLOSE_IDLE_TIMEOUT: u32 = 3;
/// Any other reason (a failed handshake, no subflow left).
pub const MPU_CLOSE_OTHER: u32 = 4;
/// The peer answered nothing while our data awaited it, for the peer timeout.
pub const MPU_CLOSE_PEER_UNRESPONSIVE: u32 = 5;
/// The server no longer knows the connection (a stateless reset: the server died or
/// restarted, and the fleet's balancer sent the packets to another): connect again at once.
pub const MPU_CLOSE_RESET: u32 = 6;

fn close_code(r: CloseReason) -> u32 {
    match r {
        CloseReason::Graceful => MPU_CLOSE_GRACEFUL,
        CloseReason::Aborted => MPU_CLOSE_ABORTED,
        CloseReason::PeerAborted => MPU_CLOSE_PEER_ABORTED,
        CloseReason::IdleTimeout => MPU_CLOSE_IDLE_TIMEOUT,
        CloseReason::PeerUnresponsive { .. } => MPU_CLOSE_PEER_UNRESPONSIVE,
        CloseReason::Reset => MPU_CLOSE_RESET,
        _ => MPU_CLOSE_OTHER,
    }
}

/// Waits at most `timeout_ms` (0: try once; negative: no limit) for the connection to close (after `mpu_shutdown`: until the
/// peer acknowledged everything and closed too), with its reason (`MPU_CLOSE_*`) in `*reason`.
///
/// # Safety
/// `reason` must be NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn mpu_wait_closed(conn: u64, timeout_ms: i32, reason: *mut u32) -> i32 {
    guard(|| {
        let r = with_conn(conn, |c| c.home.block(timeout(timeout_ms), c.control.closed()))?;
        if !reason.is_null() {
            // SAFETY: non-NULL and valid (the caller's promise).
            unsafe { put(reason, close_code(r), "reason") }?;
        }
        Ok(MPU_OK)
    })
}

/// The handshake completed. (`MPU_EVENT_*` are the kinds of `MpuEvent`.)
pub const MPU_EVENT_CONNECTED: u32 = 1;
/// A subflow completed its join (`path`, `subflow`; `value` 1 if it is a backup).
pub const MPU_EVENT_SUBFLOW_ESTABLISHED: u32 = 2;
/// A subflow's retransmission timer expired: potentially failed (`subflow`).
pub const MPU_EVENT_SUBFLOW_FAILED: u32 = 3;
/// A potentially failed subflow was acknowledged again (`subflow`).
pub const MPU_EVENT_SUBFLOW_RECOVERED: u32 = 4;
/// A subflow closed (`subflow`; `value`: the reason, RFC 8684's and ours: 0 unspecified, 1
/// MPTCP error, 2 lack of resources, 3 administratively prohibited, 4 too much outstanding
/// data, 5 unacceptable performance, 6 middlebox interference, 7 graceful, 8 fast join
/// refused, 9 idle timeout, 10 stateless reset from the server's fleet).
pub const MPU_EVENT_SUBFLOW_CLOSED: u32 = 5;
/// The peer's address on a subflow changed (NAT rebinding).
pub const MPU_EVENT_SUBFLOW_MIGRATED: u32 = 6;
/// The peer announced another address (`value`: its address id).
pub const MPU_EVENT_ADDRESS_ANNOUNCED: u32 = 7;
/// The peer finished its direction.
pub const MPU_EVENT_FINISHED: u32 = 8;
/// The oracle judged a path (`path`; `value`: 0 clear, 1 bad, 2 high RTO).
pub const MPU_EVENT_VERDICT: u32 = 9;
/// Traffic went back to the preferred path after a failover.
pub const MPU_EVENT_FAIL_BACK: u32 = 10;
/// The connection closed (`value`: `MPU_CLOSE_*`). The last event.
pub const MPU_EVENT_CLOSED: u32 = 11;
/// A resumption ticket arrived from the server (client): `mpu_endpoint_tickets` now has one
/// more to save.
pub const MPU_EVENT_TICKET: u32 = 12;

/// One event of a connection.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MpuEvent {
    /// `MPU_EVENT_*`.
    pub kind: u32,
    /// The local path it concerns (the index of the interface's path), or -1.
    pub path: i32,
    /// The subflow it concerns, or -1.
    pub subflow: i64,
    /// A detail that depends on the kind (see each `MPU_EVENT_*`).
    pub value: u32,
    /// Microseconds from the connection's handle being made to the event.
    pub at_us: u64,
}

/// The app's view of an event; `None` for the library's own (readable, forgotten).
fn event_of(e: &ConnEvent, born: Instant) -> Option<MpuEvent> {
    let (kind, value) = match e.event {
        Event::Connected => (MPU_EVENT_CONNECTED, 0),
        Event::SubflowEstablished { backup, .. } => (MPU_EVENT_SUBFLOW_ESTABLISHED, u32::from(backup)),
        Event::SubflowFailed { .. } => (MPU_EVENT_SUBFLOW_FAILED, 0),
        Event::SubflowRecovered { .. } => (MPU_EVENT_SUBFLOW_RECOVERED, 0),
        Event::SubflowClosed { reason, .. } => (MPU_EVENT_SUBFLOW_CLOSED, u32::from(reason)),
        Event::SubflowMigrated { .. } => (MPU_EVENT_SUBFLOW_MIGRATED, 0),
        Event::AddressAnnounced { addr_id, .. } => (MPU_EVENT_ADDRESS_ANNOUNCED, u32::from(addr_id)),
        Event::Finished => (MPU_EVENT_FINISHED, 0),
        Event::Verdict { verdict, .. } => (
            MPU_EVENT_VERDICT,
            match verdict {
                mpudp::OracleVerdict::Clear => 0,
                mpudp::OracleVerdict::Bad => 1,
                mpudp::OracleVerdict::HighRto => 2,
            },
        ),
        Event::FailBack => (MPU_EVENT_FAIL_BACK, 0),
        Event::Closed { reason } => (MPU_EVENT_CLOSED, close_code(reason)),
        Event::TicketReceived => (MPU_EVENT_TICKET, 0),
        Event::Readable | Event::Forgotten => return None,
    };
    Some(MpuEvent {
        kind,
        value,
        path: e.path.map_or(-1, |p| i32::from(p.0)),
        subflow: e.subflow().map_or(-1, i64::from),
        at_us: e.at.saturating_duration_since(born).as_micros() as u64,
    })
}

/// Waits at most `timeout_ms` (0: try once; negative: no limit) for the connection's next event, into `*out`. Returns
/// `MPU_ERR_CLOSED` once the connection closed and every event was read, and
/// `MPU_ERR_INVALID` once a callback took the events (`mpu_set_event_callback`).
///
/// # Safety
/// `out` must be valid for a write.
#[no_mangle]
pub unsafe extern "C" fn mpu_next_event(conn: u64, timeout_ms: i32, out: *mut MpuEvent) -> i32 {
    guard(|| {
        let e = with_conn(conn, |c| {
            let mut ev = lock(&c.events);
            let ev = ev.as_mut().ok_or_else(|| invalid("the connection's events go to its callback"))?;
            let born = c.born;
            let next = async {
                // The library's own events are not the app's: skipped.
                while let Some(e) = ev.next().await {
                    if let Some(m) = event_of(&e, born) {
                        return Some(m);
                    }
                }
                None
            };
            block_ready(&c.home, timeout(timeout_ms), &c.ready, next)
        })?;
        let e = e.ok_or_else(|| Fail(MPU_ERR_CLOSED, "the connection closed; no event left".into()))?;
        // SAFETY: the caller's promise.
        unsafe { put(out, e, "out") }?;
        Ok(MPU_OK)
    })
}

/// Called on the library's thread with each event, and `ctx` as given. It must return soon
/// and must not call the blocking functions (they fail there with `MPU_ERR_INVALID`).
pub type MpuEventCallback = Option<unsafe extern "C" fn(ctx: *mut c_void, event: *const MpuEvent)>;

/// The app's context pointer, handed back to its callback on the library's thread.
struct Ctx(*mut c_void);
// SAFETY: the app promises (in the header) that its context may be used from the library's
// thread; the library only hands it back.
unsafe impl Send for Ctx {}

/// Calls `callback(ctx, &event)` on the library's thread for each event of the connection not
/// read yet (they are kept from its start) and every later one, until it closed (the
/// `MPU_EVENT_CLOSED` call is the last). Once only: the callback takes the events from
/// `mpu_next_event`, and a second call fails with `MPU_ERR_INVALID`.
///
/// # Safety
/// `callback` must be safe to call from another thread with `ctx`, until its last call.
#[no_mangle]
pub unsafe extern "C" fn mpu_set_event_callback(conn: u64, callback: MpuEventCallback, ctx: *mut c_void) -> i32 {
    guard(|| {
        let Some(cb) = callback else { return Err(invalid("callback: NULL")) };
        let (events, born) = with_conn(conn, |c| {
            let ev = lock(&c.events).take().ok_or_else(|| invalid("the events already go to a callback"))?;
            Ok((ev, c.born))
        })?;
        let ctx = Ctx(ctx);
        runtime().spawn(async move {
            let ctx = ctx;
            let mut events = events;
            while let Some(e) = events.next().await {
                let Some(ev) = event_of(&e, born) else { continue };
                // SAFETY: the caller's promise on `callback` and `ctx`.
                unsafe { cb(ctx.0, &ev) };
            }
        });
        Ok(MPU_OK)
    })
}

/// A connection's statistics.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MpuStats {
    /// 1 once the handshake completed, until it closed.
    pub established: u32,
    /// Subflows open now.
    pub subflows_open: u32,
    /// Bytes the app wrote.
    pub bytes_written: u64,
    /// Bytes the app read.
    pub bytes_read: u64,
    /// Bytes sent again on another subflow after a failure.
    pub bytes_reinjected: u64,
    /// The smallest smoothed RTT of an open subflow, in microseconds (0: none yet).
    pub srtt_us: u64,
}

/// One subflow's statistics (`mpu_subflow_stats`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MpuSubflowStats {
    /// Its number.
    pub id: u32,
    /// The local path it runs on.
    pub path: u32,
    /// 1 while it is open.
    pub open: u32,
    /// 1 if it is a backup subflow.
    pub backup: u32,
    /// Smoothed RTT, microseconds.
    pub srtt_us: u64,
    /// Data bytes it carried (first transmissions and reinjections).
    pub data_bytes_sent: u64,
    /// UDP payload bytes received on it.
    pub bytes_received: u64,
    /// 1 if it runs over TCP (its network drops UDP, PROTOCOL.md §4.11), 0 over UDP.
    pub tcp: u32,
    /// 0 (room for what comes next).
    pub reserved: u32,
}

/// The connection's statistics, into `*out`; `MPU_ERR_CLOSED` once it is forgotten.
///
/// # Safety
/// `out` must be valid for a write.
#[no_mangle]
pub unsafe extern "C" fn mpu_conn_stats(conn: u64, out: *mut MpuStats) -> i32 {
    guard(|| {
        let s = with_conn(conn, |c| c.control.stats().ok_or_else(|| Fail(MPU_ERR_CLOSED, "forgotten".into())))?;
        let open = s.subflows.iter().filter(|f| f.state == mpudp::SubflowState::Established);
        let v = MpuStats {
            established: u32::from(s.established),
            subflows_open: open.clone().count() as u32,
            bytes_written: s.counters.bytes_written,
            bytes_read: s.counters.bytes_read,
            bytes_reinjected: s.counters.bytes_reinjected,
            srtt_us: open.map(|f| f.srtt_us).filter(|&r| r > 0).min().unwrap_or(0),
        };
        // SAFETY: the caller's promise.
        unsafe { put(out, v, "out") }?;
        Ok(MPU_OK)
    })
}

/// Whether the connection was resumed with a ticket (`*resumed`, 0 or 1) and how many of the
/// stream's first bytes went as 0-RTT data (`*early_bytes`: on a server, those it received
/// early, which whoever captured them could replay; on a client, those the server took).
///
/// # Safety
/// `resumed` and `early_bytes` must be valid for a write.
#[no_mangle]
pub unsafe extern "C" fn mpu_conn_resumption(conn: u64, resumed: *mut u32, early_bytes: *mut u64) -> i32 {
    guard(|| {
        let s = with_conn(conn, |c| c.control.stats().ok_or_else(|| Fail(MPU_ERR_CLOSED, "forgotten".into())))?;
        // SAFETY: the caller's promise.
        unsafe { put(resumed, u32::from(s.resumed), "resumed") }?;
        // SAFETY: the caller's promise.
        unsafe { put(early_bytes, s.early_bytes, "early_bytes") }?;
        Ok(MPU_OK)
    })
}

/// Subflow number `index` (0-based, open and recently closed ones) of the connection, into
/// `*out`; `MPU_ERR_INVALID` past the last.
///
/// # Safety
/// `out` must be valid for a write.
#[no_mangle]
pub unsafe extern "C" fn mpu_subflow_stats(conn: u64, index: u32, out: *mut MpuSubflowStats) -> i32 {
    guard(|| {
        let s = with_conn(conn, |c| c.control.stats().ok_or_else(|| Fail(MPU_ERR_CLOSED, "forgotten".into())))?;
        let f = s.subflows.get(index as usize).ok_or_else(|| invalid(format!("no subflow at index {index}")))?;
        let v = MpuSubflowStats {
            id: f.id,
            path: u32::from(f.path.0),
            open: u32::from(f.state == mpudp::SubflowState::Established),
            backup: u32::from(f.backup),
            srtt_us: f.srtt_us,
            data_bytes_sent: f.counters.data_bytes_sent,
            bytes_received: f.counters.bytes_received,
            tcp: u32::from(f.carrier == mpudp::Carrier::Tcp),
            reserved: 0,
        };
        // SAFETY: the caller's promise.
        unsafe { put(out, v, "out") }?;
        Ok(MPU_OK)
    })
}

/// The descriptor that becomes readable when a call on connection `conn` that returned
/// `MPU_ERR_WOULD_BLOCK` (timeout 0) may go on, into `*fd`: wait on it in the app's loop
/// (Android: `MessageQueue.addOnFileDescriptorEventListener`; iOS:
/// `DispatchSource.makeReadSource`), then make again every call that returned it (a signal may
/// be for any of them). The library owns it (do not read or close it); it is valid until
/// `mpu_conn_free`. Each call with timeout 0 drains it.
///
/// # Safety
/// `fd` must be valid for a write.
#[no_mangle]
pub unsafe extern "C" fn mpu_conn_readiness_fd(conn_: u64, fd: *mut i32) -> i32 {
    guard(|| {
        let c = conn(conn_)?;
        let f = c.ready.fd().map_err(|e| Fail(crate::MPU_ERR_IO, format!("the readiness descriptor: {e}")))?;
        // SAFETY: the caller's promise.
        unsafe { put(fd, f, "fd") }?;
        Ok(MPU_OK)
    })
}

/// Calls `callback(ctx)` on the library's thread when a call on connection `conn` that
/// returned `MPU_ERR_WOULD_BLOCK` (timeout 0) may go on: resume the waiting coroutine or task
/// there (on the app's dispatcher; the callback itself must return soon and not call the
/// library). NULL removes it.
///
/// # Safety
/// `callback` must be safe to call from another thread with `ctx` until the connection is
/// freed or the callback removed.
#[no_mangle]
pub unsafe extern "C" fn mpu_conn_set_ready_callback(conn_: u64, callback: MpuReadyCallback, ctx: *mut c_void) -> i32 {
    guard(|| {
        conn(conn_)?.ready.set_callback(callback, ctx);
        Ok(MPU_OK)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reset_has_its_own_close_code_so_that_an_app_connects_again() {
        assert_eq!(close_code(CloseReason::Reset), MPU_CLOSE_RESET);
        assert_eq!(close_code(CloseReason::Graceful), MPU_CLOSE_GRACEFUL);
        assert_eq!(close_code(CloseReason::NoSubflow), MPU_CLOSE_OTHER);
    }
}
