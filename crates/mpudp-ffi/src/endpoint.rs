//! Endpoints: a client's (its interfaces, connections out) or a server's (a listening address,
//! connections in), and the app's word on its paths.

use crate::conn::Conn;
use crate::home::Home;
use crate::options::{iface_kind, options_of};
use crate::ready::{block_ready, MpuReadyCallback, Readiness};
use crate::{
    arg_addr, arg_str, flag, get, guard, invalid, put, register, timeout, unregister, unregister_any, write_str, Fail,
    Res, MPU_OK,
};
use mpudp::{Interface, LinkHint, MpEndpoint, MpListener};
use std::ffi::{c_char, c_void};
use std::sync::Arc;

pub(crate) enum Side {
    Client(MpEndpoint),
    /// A server and the readiness of its accepts.
    Server(MpListener, Arc<Readiness>),
}

/// An endpoint and where its calls run (`home`): its connections run theirs there too.
pub(crate) struct Endpoint {
    pub(crate) side: Side,
    pub(crate) home: Home,
}

impl Endpoint {
    fn ep(&self) -> &MpEndpoint {
        match &self.side {
            Side::Client(e) => e,
            Side::Server(l, _) => l.endpoint(),
        }
    }
}

/// Where an endpoint of options `o` runs (`mpu_options_drive_in_calls`): in the app's calls
/// when its driver is not to have a thread, else on the library's threads.
fn home_for(o: &mpudp::Options) -> Res<Home> {
    if o.driver_thread_choice() == Some(false) {
        Home::driven_in_calls()
    } else {
        Ok(Home::default())
    }
}

/// The endpoint of handle `h` (kept alive by the returned `Arc`).
pub(crate) fn endpoint_of(h: u64) -> Res<(Arc<Endpoint>, &'static str)> {
    let o = get::<Endpoint>(h, "an endpoint")?;
    let kind = match &o.side {
        Side::Client(_) => "client",
        Side::Server(..) => "server",
    };
    Ok((o, kind))
}

fn with_ep<T>(h: u64, f: impl FnOnce(&Endpoint) -> Res<T>) -> Res<T> {
    let (e, _) = endpoint_of(h)?;
    f(&e)
}

/// A client endpoint with the options of handle `options` (its interfaces: the first is the
/// primary path), into `*out`.
///
/// # Safety
/// `out` must be valid for a write.
#[no_mangle]
pub unsafe extern "C" fn mpu_client_new(options: u64, out: *mut u64) -> i32 {
    guard(|| {
        let o = options_of(options)?;
        let home = home_for(&o)?;
        let ep = {
            let _rt = home.rt().enter();
            MpEndpoint::client(o)?
        };
        let h = register(Endpoint { side: Side::Client(ep), home });
        // SAFETY: the caller's promise.
        unsafe { put(out, h, "out") }.inspect_err(|_| unregister_any(h))?;
        Ok(MPU_OK)
    })
}

/// A server endpoint listening on `addr` (`"0.0.0.0:5201"`, `"[::]:5201"`), with the options
/// of handle `options` (it needs an identity), into `*out`.
///
/// # Safety
/// `addr` must be a NUL-terminated string, `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn mpu_server_new(options: u64, addr: *const c_char, out: *mut u64) -> i32 {
    guard(|| {
        // SAFETY: the caller's promise.
        let a = unsafe { arg_addr(addr, "addr") }?;
        let o = options_of(options)?;
        let home = home_for(&o)?;
        let l = {
            let _rt = home.rt().enter();
            MpListener::bind(a, o)?
        };
        let h = register(Endpoint { side: Side::Server(l, Arc::default()), home });
        // SAFETY: the caller's promise.
        unsafe { put(out, h, "out") }.inspect_err(|_| unregister_any(h))?;
        Ok(MPU_OK)
    })
}

/// Frees an endpoint handle. Its connections go on until they close (free them too); the
/// endpoint's sockets close after the last one.
#[no_mangle]
pub extern "C" fn mpu_endpoint_free(endpoint: u64) -> i32 {
    guard(|| {
        let o = unregister::<Endpoint>(endpoint, "an endpoint")?;
        let home = o.home.clone();
        let _rt = home.rt().enter();
        drop(o);
        Ok(MPU_OK)
    })
}

/// The primary path's local address (`"127.0.0.1:5201"`), NUL-terminated into `buf`.
///
/// # Safety
/// `buf` must point to `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn mpu_endpoint_local_addr(endpoint: u64, buf: *mut c_char, len: usize) -> i32 {
    guard(|| {
        let a = with_ep(endpoint, |e| Ok(e.ep().local_addr().to_string()))?;
        if buf.is_null() || len <= a.len() {
            return Err(invalid(format!("buffer of {len} bytes for {} bytes", a.len() + 1)));
        }
        // SAFETY: the caller's promise; `len` leaves room for the NUL.
        unsafe { write_str(&a, buf, len) };
        Ok(MPU_OK)
    })
}

/// Connects to the server at `addr` from a client endpoint, waiting at most `timeout_ms` for
/// the handshake (negative: the options' connect timeout), into `*out` (a connection handle).
///
/// # Safety
/// `addr` must be a NUL-terminated string, `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn mpu_connect(endpoint: u64, addr: *const c_char, timeout_ms: i32, out: *mut u64) -> i32 {
    guard(|| {
        // SAFETY: the caller's promise.
        let a = unsafe { arg_addr(addr, "addr") }?;
        let (o, kind) = endpoint_of(endpoint)?;
        let Side::Client(ep) = &o.side else {
            return Err(invalid(format!("endpoint {endpoint} is a {kind}: only a client connects")));
        };
        let s = o.home.block(timeout(timeout_ms), ep.connect(a))??;
        let h = register(Conn::new(s, o.home.clone()));
        // SAFETY: the caller's promise.
        unsafe { put(out, h, "out") }.inspect_err(|_| unregister_any(h))?;
        Ok(MPU_OK)
    })
}

/// `mpu_connect` with `data` (`len` bytes) as the stream's first bytes: with a ticket for the
/// server (`mpu_options_tickets`) they go with the first packet as 0-RTT data and the answer
/// can come a round trip sooner; otherwise they go once the handshake is done. Either way they
/// are written, once. Early data can be replayed by whoever captured it: send early only a
/// request that is safe to act on twice. `timeout_ms` as for `mpu_connect` (negative: the
/// options' connect timeout).
///
/// # Safety
/// `addr` must be a NUL-terminated string, `data` point to `len` readable bytes (or be NULL
/// with `len` 0), `out` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn mpu_connect_early(
    endpoint: u64,
    addr: *const c_char,
    data: *const u8,
    len: usize,
    timeout_ms: i32,
    out: *mut u64,
) -> i32 {
    guard(|| {
        // SAFETY: the caller's promise.
        let a = unsafe { arg_addr(addr, "addr") }?;
        if data.is_null() && len > 0 {
            return Err(invalid("data: NULL with a length"));
        }
        // SAFETY: `len` readable bytes (the caller's promise).
        let early = if len == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(data, len) } };
        let (o, kind) = endpoint_of(endpoint)?;
        let Side::Client(ep) = &o.side else {
            return Err(invalid(format!("endpoint {endpoint} is a {kind}: only a client connects")));
        };
        let s = o.home.block(timeout(timeout_ms), ep.connect_early(a, early))??;
        let h = register(Conn::new(s, o.home.clone()));
        // SAFETY: the caller's promise.
        unsafe { put(out, h, "out") }.inspect_err(|_| unregister_any(h))?;
        Ok(MPU_OK)
    })
}

/// The client endpoint's resumption tickets as bytes, to save for the app's next start
/// (`mpu_options_tickets`): written into `buf` (`len` bytes) with their length in
/// `*written`. `MPU_ERR_INVALID` if `buf` is too small (`*written` then says how large it must
/// be) or the endpoint keeps no tickets.
///
/// # Safety
/// `buf` must point to `len` writable bytes (or be NULL with `len` 0), `written` be valid
/// for a write.
#[no_mangle]
pub unsafe extern "C" fn mpu_endpoint_tickets(endpoint: u64, buf: *mut u8, len: usize, written: *mut u64) -> i32 {
    guard(|| {
        let bytes = with_ep(endpoint, |e| {
            e.ep().ticket_store().map(|s| s.to_bytes()).ok_or_else(|| invalid("no tickets: see mpu_options_tickets"))
        })?;
        // SAFETY: the caller's promise.
        unsafe { put(written, bytes.len() as u64, "written") }?;
        if buf.is_null() || len < bytes.len() {
            return Err(invalid(format!("buffer of {len} bytes for {} bytes", bytes.len())));
        }
        // SAFETY: `len` >= the bytes' length, writable (the caller's promise).
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf, bytes.len()) };
        Ok(MPU_OK)
    })
}

/// Waits at most `timeout_ms` (0: try once; negative: no limit) for the next connection to a
/// server endpoint, into `*out`.
///
/// # Safety
/// `out` must be valid for a write.
#[no_mangle]
pub unsafe extern "C" fn mpu_accept(endpoint: u64, timeout_ms: i32, out: *mut u64) -> i32 {
    guard(|| {
        let (o, kind) = endpoint_of(endpoint)?;
        let Side::Server(l, ready) = &o.side else {
            return Err(invalid(format!("endpoint {endpoint} is a {kind}: only a server accepts")));
        };
        let (s, _peer) = block_ready(&o.home, timeout(timeout_ms), ready, l.accept())??;
        let h = register(Conn::new(s, o.home.clone()));
        // SAFETY: the caller's promise.
        unsafe { put(out, h, "out") }.inspect_err(|_| unregister_any(h))?;
        Ok(MPU_OK)
    })
}

/// The app says interface `name` (a device name or a label) is up (`up`) or down: feed
/// Android's `NetworkCallback.onAvailable`/`onLost` and iOS's `NWPathMonitor` in here. Down
/// moves the traffic off it at once.
///
/// # Safety
/// `name` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mpu_path_set_up(endpoint: u64, name: *const c_char, up: i32) -> i32 {
    guard(|| {
        let up = flag(up, "up")?;
        // SAFETY: the caller's promise.
        let n = unsafe { arg_str(name, "name") }?;
        with_ep(endpoint, |e| if up { e.ep().set_path_up(n) } else { e.ep().set_path_down(n) }.map_err(Fail::from))?;
        Ok(MPU_OK)
    })
}

/// The app's word on interface `name`'s link quality: `degraded` (the OS says so), its signal
/// level 0-4 (negative: unknown) and link rate in bit/s (0: unknown). A weak WiFi wakes the
/// cellular radio early, so a failover that follows does not wait for it.
///
/// # Safety
/// `name` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mpu_path_hint(
    endpoint: u64,
    name: *const c_char,
    degraded: i32,
    signal_level: i32,
    link_rate_bps: u64,
) -> i32 {
    guard(|| {
        let degraded = flag(degraded, "degraded")?;
        // SAFETY: the caller's promise.
        let n = unsafe { arg_str(name, "name") }?;
        let hint = LinkHint {
            degraded,
            signal_level: u8::try_from(signal_level).ok().map(|l| l.min(4)),
            link_rate_bps: (link_rate_bps > 0).then_some(link_rate_bps),
        };
        with_ep(endpoint, |e| e.ep().path_hint(n, hint).map_err(Fail::from))?;
        Ok(MPU_OK)
    })
}

/// Adds a path: a socket on `addr`, named `label`, as `mpu_options_add_address` does before
/// the endpoint exists (a network that appeared). Used as the path manager says.
///
/// # Safety
/// `addr` and `label` must be NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn mpu_path_add_address(
    endpoint: u64,
    addr: *const c_char,
    label: *const c_char,
    kind: u32,
    backup: i32,
) -> i32 {
    guard(|| {
        let backup = flag(backup, "backup")?;
        // SAFETY: the caller's promise.
        let (a, l) = unsafe { (arg_addr(addr, "addr")?, arg_str(label, "label")?) };
        let i = Interface::unbound(a).label(l).kind(iface_kind(kind)?).backup(backup);
        with_ep(endpoint, |e| e.ep().add_interface(i).map_err(Fail::from))?;
        Ok(MPU_OK)
    })
}

/// Adds a path on a socket the app bound to a network (see `mpu_options_add_fd`; the library
/// owns `fd` from this call on).
///
/// # Safety
/// `fd` must be an open UDP socket the caller gives up; `label` a NUL-terminated string.
#[cfg(unix)]
#[no_mangle]
pub unsafe extern "C" fn mpu_path_add_fd(endpoint: u64, fd: i32, label: *const c_char, kind: u32, backup: i32) -> i32 {
    guard(|| {
        let sock = crate::options::adopt_fd(fd)?;
        let backup = flag(backup, "backup")?;
        // SAFETY: the caller's promise.
        let l = unsafe { arg_str(label, "label") }?;
        let i = Interface::from_socket(sock).label(l).kind(iface_kind(kind)?).backup(backup);
        with_ep(endpoint, |e| e.ep().add_interface(i).map_err(Fail::from))?;
        Ok(MPU_OK)
    })
}

/// Removes interface `name` (a network the OS lost for good): its subflows close, the peer is
/// told, its socket goes.
///
/// # Safety
/// `name` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mpu_path_remove(endpoint: u64, name: *const c_char) -> i32 {
    guard(|| {
        // SAFETY: the caller's promise.
        let n = unsafe { arg_str(name, "name") }?;
        with_ep(endpoint, |e| e.ep().remove_interface(n).map_err(Fail::from))?;
        Ok(MPU_OK)
    })
}

/// The OS says the networks changed: the endpoint reads its interfaces' links and addresses
/// afresh (nothing polls them).
#[no_mangle]
pub extern "C" fn mpu_paths_changed(endpoint: u64) -> i32 {
    guard(|| {
        with_ep(endpoint, |e| e.ep().refresh_interfaces().map_err(Fail::from))?;
        Ok(MPU_OK)
    })
}

/// Runs an endpoint driven in calls (`mpu_options_drive_in_calls`) on the caller's thread for
/// `timeout_ms` (0: what is due now: datagrams that arrived, timers, sends): between its
/// other calls, an app calls this often enough for the timers (an ACK's delay, a loss's
/// repair, keep-alives; every few milliseconds while data is in flight). Returns at once for
/// an endpoint on the library's threads, which needs no driving. `MPU_ERR_INVALID` for a
/// negative timeout, or one other than 0 on the library's thread (an event callback).
#[no_mangle]
pub extern "C" fn mpu_endpoint_drive(endpoint: u64, timeout_ms: i32) -> i32 {
    guard(|| {
        let limit = timeout(timeout_ms).ok_or_else(|| invalid("a negative timeout: drive for how long?"))?;
        let (o, _) = endpoint_of(endpoint)?;
        o.home.drive(limit)?;
        Ok(MPU_OK)
    })
}

/// The times the endpoint's driver has run, into `*out` (an idle one runs only for
/// keep-alives).
///
/// # Safety
/// `out` must be valid for a write.
#[no_mangle]
pub unsafe extern "C" fn mpu_endpoint_wakeups(endpoint: u64, out: *mut u64) -> i32 {
    guard(|| {
        let n = with_ep(endpoint, |e| Ok(e.ep().driver_wakeups()))?;
        // SAFETY: the caller's promise.
        unsafe { put(out, n, "out") }?;
        Ok(MPU_OK)
    })
}

/// The readiness of a server's accepts (see `mpu_conn_readiness_fd`): the descriptor becomes
/// readable when `mpu_accept` with timeout 0, having returned `MPU_ERR_WOULD_BLOCK`, has a
/// connection to give; `MPU_ERR_INVALID` for a client.
///
/// # Safety
/// `fd` must be valid for a write.
#[no_mangle]
pub unsafe extern "C" fn mpu_endpoint_readiness_fd(endpoint: u64, fd: *mut i32) -> i32 {
    guard(|| {
        let ready = server_readiness(endpoint)?;
        let f = ready.fd().map_err(|e| Fail(crate::MPU_ERR_IO, format!("the readiness descriptor: {e}")))?;
        // SAFETY: the caller's promise.
        unsafe { put(fd, f, "fd") }?;
        Ok(MPU_OK)
    })
}

/// Calls `callback(ctx)` on the library's thread when `mpu_accept` with timeout 0, having
/// returned `MPU_ERR_WOULD_BLOCK`, has a connection to give (see
/// `mpu_conn_set_ready_callback`). NULL removes it.
///
/// # Safety
/// `callback` must be safe to call from another thread with `ctx` until the endpoint is freed
/// or the callback removed.
#[no_mangle]
pub unsafe extern "C" fn mpu_endpoint_set_ready_callback(
    endpoint: u64,
    callback: MpuReadyCallback,
    ctx: *mut c_void,
) -> i32 {
    guard(|| {
        server_readiness(endpoint)?.set_callback(callback, ctx);
        Ok(MPU_OK)
    })
}

fn server_readiness(endpoint: u64) -> Res<Arc<Readiness>> {
    let (o, kind) = endpoint_of(endpoint)?;
    match &o.side {
        Side::Server(_, r) => Ok(r.clone()),
        Side::Client(_) => Err(invalid(format!("endpoint {endpoint} is a {kind}: only a server accepts"))),
    }
}
