//! Options: what an endpoint is built from (its interfaces, the server's key or identity, the
//! scheduler), built up by calls on an options handle.

use crate::{
    arg_addr, arg_str, flag, get, guard, invalid, opt_str, put, register, unregister, unregister_any, Fail, Res, MPU_OK,
};
use mpudp::{Iface, Interface, Options, PublicKey, ServerIdentity};
use std::ffi::{c_char, c_void};
use std::sync::Mutex;

/// mpudp's defaults: any scheduler and path manager may be set after.
pub const MPU_PRESET_DEFAULT: u32 = 0;
/// A phone's client: MultiMob's path manager (cellular opened only when WiFi degrades), the
/// `priority` scheduler, FAST_JOIN, keep-alives every 15 s on WiFi only, radio pre-warming.
pub const MPU_PRESET_PHONE: u32 = 1;
/// A server for phones: answers on the subflow the client used last, accepts fast joins.
pub const MPU_PRESET_SERVER: u32 = 2;

/// An interface of unknown role.
pub const MPU_IFACE_OTHER: u32 = 0;
/// A WiFi interface.
pub const MPU_IFACE_WIFI: u32 = 1;
/// A cellular interface.
pub const MPU_IFACE_CELLULAR: u32 = 2;
/// A wired interface.
pub const MPU_IFACE_WIRED: u32 = 3;

pub(crate) fn iface_kind(k: u32) -> Res<Iface> {
    Ok(match k {
        MPU_IFACE_OTHER => Iface::Other,
        MPU_IFACE_WIFI => Iface::Wifi,
        MPU_IFACE_CELLULAR => Iface::Cellular,
        MPU_IFACE_WIRED => Iface::Wired,
        _ => return Err(invalid(format!("interface kind {k} (MPU_IFACE_*)"))),
    })
}

/// The options of handle `h`, changed by `f`.
pub(crate) fn with(h: u64, f: impl FnOnce(Options) -> Res<Options>) -> Res<i32> {
    let m = get::<Mutex<Options>>(h, "an options handle")?;
    let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
    *g = f(g.clone())?;
    Ok(MPU_OK)
}

/// A copy of the options of handle `h`.
pub(crate) fn options_of(h: u64) -> Res<Options> {
    let m = get::<Mutex<Options>>(h, "an options handle")?;
    let g = m.lock().unwrap_or_else(|e| e.into_inner());
    Ok(g.clone())
}

/// New options from a preset (`MPU_PRESET_*`), into `*out`. Free with `mpu_options_free`
/// (an endpoint keeps its own copy: the options can be freed once it is made).
///
/// # Safety
/// `out` must be valid for a write.
#[no_mangle]
pub unsafe extern "C" fn mpu_options_new(preset: u32, out: *mut u64) -> i32 {
    guard(|| {
        let o = match preset {
            MPU_PRESET_DEFAULT => Options::new(),
            MPU_PRESET_PHONE => Options::phone(),
            MPU_PRESET_SERVER => Options::server(),
            _ => return Err(invalid(format!("preset {preset} (MPU_PRESET_*)"))),
        };
        let h = register(Mutex::new(o));
        // SAFETY: the caller's promise on `out`.
        unsafe { put(out, h, "out") }.inspect_err(|_| unregister_any(h))?;
        Ok(MPU_OK)
    })
}

/// Frees an options handle.
#[no_mangle]
pub extern "C" fn mpu_options_free(options: u64) -> i32 {
    guard(|| unregister::<Mutex<Options>>(options, "an options handle").map(|_| MPU_OK))
}

/// Adds an interface by device name (`wlan0`, `rmnet_data0`): its socket is bound to the
/// device (`SO_BINDTODEVICE`, which needs `CAP_NET_RAW` on Linux; on Android and iOS hand in
/// sockets instead, `mpu_options_add_fd`). The first interface added is the primary path.
///
/// # Safety
/// `device` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mpu_options_add_device(options: u64, device: *const c_char, kind: u32, backup: i32) -> i32 {
    guard(|| {
        let backup = flag(backup, "backup")?;
        // SAFETY: the caller's promise.
        let name = unsafe { arg_str(device, "device") }?;
        let k = iface_kind(kind)?;
        with(options, |o| Ok(o.interface(Interface::new(name).kind(k).backup(backup))))
    })
}

/// Adds an interface as a socket bound to an address (`"192.0.2.10:0"`, `"[2001:db8::1]:0"`),
/// named `label` (NULL: the address) for the path calls.
///
/// # Safety
/// `addr` must be a NUL-terminated string, `label` NULL or one.
#[no_mangle]
pub unsafe extern "C" fn mpu_options_add_address(
    options: u64,
    addr: *const c_char,
    label: *const c_char,
    kind: u32,
    backup: i32,
) -> i32 {
    guard(|| {
        let backup = flag(backup, "backup")?;
        // SAFETY: the caller's promise.
        let (a, l) = unsafe { (arg_addr(addr, "addr")?, opt_str(label, "label")?) };
        let k = iface_kind(kind)?;
        with(options, |o| {
            let mut i = Interface::unbound(a).kind(k).backup(backup);
            if let Some(l) = l {
                i = i.label(l);
            }
            Ok(o.interface(i))
        })
    })
}

/// Adds an interface as a UDP socket the app already bound to a network: Android's
/// `Network.bindSocket` (on a `DatagramSocket`, then `ParcelFileDescriptor.detachFd`), iOS's
/// `IP_BOUND_IF`/`IPV6_BOUND_IF`. Needs no privilege. The library owns `fd` from this call on,
/// whatever it returns (it is closed on error); `label` names it for the path calls.
///
/// # Safety
/// `fd` must be an open UDP socket the caller gives up; `label` a NUL-terminated string.
#[cfg(unix)]
#[no_mangle]
pub unsafe extern "C" fn mpu_options_add_fd(
    options: u64,
    fd: i32,
    label: *const c_char,
    kind: u32,
    backup: i32,
) -> i32 {
    guard(|| {
        let sock = adopt_fd(fd)?;
        let backup = flag(backup, "backup")?;
        // SAFETY: the caller's promise.
        let l = unsafe { arg_str(label, "label") }?;
        let k = iface_kind(kind)?;
        with(options, |o| Ok(o.interface(Interface::from_socket(sock).label(l).kind(k).backup(backup))))
    })
}

/// Takes over socket `fd` (closed on error): it must be a bound socket.
#[cfg(unix)]
pub(crate) fn adopt_fd(fd: i32) -> Res<std::net::UdpSocket> {
    use std::os::fd::FromRawFd;
    if fd < 0 {
        return Err(invalid(format!("fd {fd}")));
    }
    // SAFETY: the caller hands over an open socket it no longer uses (the C functions' promise).
    let sock = unsafe { std::net::UdpSocket::from_raw_fd(fd) };
    sock.local_addr().map_err(|e| Fail(crate::MPU_ERR_IO, format!("fd {fd} is not a bound socket: {e}")))?;
    Ok(sock)
}

/// The server's public key (base64, as `iperf-siri keygen` and `mpu_options_public_key`
/// print it) that a client requires the server to prove. May be given more than once.
///
/// # Safety
/// `key` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mpu_options_server_key(options: u64, key: *const c_char) -> i32 {
    guard(|| {
        // SAFETY: the caller's promise.
        let k = unsafe { arg_str(key, "key") }?;
        let k: PublicKey = k.parse().map_err(|e| invalid(format!("server key: {e}")))?;
        with(options, |o| Ok(o.server_key(k)))
    })
}

/// Writes every connection's event log (qlog, JSON-SEQ: PROTOCOL.md §13) to a file of its own
/// in the directory `dir` (created if missing; an app's cache directory): what a developer
/// reads in qvis or `iperf-siri timeline` after a failover on a phone. No key or payload byte
/// is in it. The endpoint fails to build (`MPU_ERR_IO`) if the directory cannot be made.
///
/// # Safety
/// `dir` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mpu_options_qlog_dir(options: u64, dir: *const c_char) -> i32 {
    guard(|| {
        // SAFETY: the caller's promise.
        let d = unsafe { arg_str(dir, "dir") }?;
        if d.is_empty() {
            return Err(invalid("qlog directory: empty path"));
        }
        #[cfg(feature = "qlog")]
        return with(options, |o| Ok(o.qlog_dir(std::path::PathBuf::from(d))));
        #[cfg(not(feature = "qlog"))]
        let _ = options;
        #[cfg(not(feature = "qlog"))]
        Err(invalid("qlog: this library was built without its `qlog` feature"))
    })
}

/// Client: resume connections with resumption tickets (PROTOCOL.md §4.8): the endpoint keeps
/// the tickets its servers give and offers one to its next connection to the same server,
/// which then proves itself with the ticket instead of a signature, and takes the request of
/// `mpu_connect_early` with the first packet (0-RTT). `saved` (`len` bytes) are the tickets an
/// earlier run saved with `mpu_endpoint_tickets` (NULL or `len` 0: none yet). Save them as the
/// app's other credentials: they hold the tickets' secrets.
///
/// # Safety
/// `saved` must point to `len` readable bytes, or be NULL with `len` 0.
#[no_mangle]
pub unsafe extern "C" fn mpu_options_tickets(options: u64, saved: *const u8, len: usize) -> i32 {
    guard(|| {
        let store = if len == 0 {
            mpudp::TicketStore::new()
        } else {
            if saved.is_null() {
                return Err(invalid("saved: NULL with a length"));
            }
            // SAFETY: `len` readable bytes (the caller's promise).
            let bytes = unsafe { std::slice::from_raw_parts(saved, len) };
            mpudp::TicketStore::from_bytes(bytes)
                .ok_or_else(|| invalid("saved tickets: not what mpu_endpoint_tickets wrote"))?
        };
        with(options, |o| Ok(o.tickets(store)))
    })
}

/// Called with each TCP socket the library opens for a path whose UDP socket the app handed in
/// (`mpu_options_add_fd`, `mpu_path_add_fd`), before it connects: `label` is the path's label,
/// `fd` the socket (still the library's: bind it, do not close it). Returns 0, or anything
/// else to refuse the carrier. On the library's driver thread (driven in calls: on the thread
/// of the call that runs the endpoint).
pub type MpuTcpSocketCallback = Option<unsafe extern "C" fn(ctx: *mut c_void, label: *const c_char, fd: i32) -> i32>;

/// The app's context pointer for its socket callback.
#[cfg(feature = "tcp")]
struct HookCtx(*mut c_void);
// SAFETY: the app promises (in the header) that its context may be used from the library's
// threads; the library only hands it back.
#[cfg(feature = "tcp")]
unsafe impl Send for HookCtx {}
// SAFETY: as above; the library never reads or writes through it.
#[cfg(feature = "tcp")]
unsafe impl Sync for HookCtx {}

/// The TCP carrier (PROTOCOL.md §4.11) of a handed-in path leaves through the app's network:
/// `callback(ctx, label, fd)` binds each TCP socket as the app bound the path's UDP socket
/// (Android: `Network.bindSocket`, through a `ParcelFileDescriptor.fromFd(fd)`; iOS:
/// `IP_BOUND_IF`). Without it the library copies the handed-in socket's binding (its device,
/// `SO_MARK` or `IP_BOUND_IF`) and refuses the carrier when it cannot, which an Android app,
/// unable to set a socket's mark itself, needs this callback for. NULL removes it.
///
/// # Safety
/// `callback` must be safe to call from another thread with `ctx`, while an endpoint made
/// from these options lives.
#[no_mangle]
pub unsafe extern "C" fn mpu_options_tcp_socket_callback(
    options: u64,
    callback: MpuTcpSocketCallback,
    ctx: *mut c_void,
) -> i32 {
    guard(|| {
        #[cfg(not(feature = "tcp"))]
        {
            let _ = (options, callback, ctx);
            Err(invalid("TCP carriers: this library was built without its `tcp` feature"))
        }
        #[cfg(feature = "tcp")]
        tcp_socket_callback(options, callback, ctx)
    })
}

#[cfg(feature = "tcp")]
fn tcp_socket_callback(options: u64, callback: MpuTcpSocketCallback, ctx: *mut c_void) -> crate::Res<i32> {
    let Some(cb) = callback else {
        return with(options, |o| Ok(o.without_tcp_socket_hook()));
    };
    let ctx = std::sync::Arc::new(HookCtx(ctx));
    with(options, |o| {
        Ok(o.tcp_socket_hook(move |fd, label| {
            use std::os::fd::AsRawFd;
            let c = std::ffi::CString::new(label).unwrap_or_default();
            // SAFETY: the app's promise: its callback may be called with its context.
            let r = unsafe { cb(ctx.0, c.as_ptr(), fd.as_raw_fd()) };
            match r {
                0 => Ok(()),
                e => Err(std::io::Error::other(format!("the app's socket callback refused it ({e})"))),
            }
        }))
    })
}

/// Server: give clients resumption tickets, and with `early_data` take a resuming client's
/// 0-RTT request (PROTOCOL.md §4.7-4.9).
#[no_mangle]
pub extern "C" fn mpu_options_issue_tickets(options: u64, early_data: i32) -> i32 {
    guard(|| {
        let early_data = flag(early_data, "early_data")?;
        with(options, |o| Ok(o.issue_tickets(early_data)))
    })
}

/// A server's identity from its PEM file's text (`iperf-siri keygen`).
///
/// # Safety
/// `pem` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mpu_options_identity_pem(options: u64, pem: *const c_char) -> i32 {
    guard(|| {
        // SAFETY: the caller's promise.
        let p = unsafe { arg_str(pem, "pem") }?;
        let id = ServerIdentity::from_pem(p).map_err(|e| invalid(format!("identity: {e}")))?;
        with(options, |o| Ok(o.identity(id)))
    })
}

/// A server's identity derived from a 32-byte seed (tests and demos; keep real keys in a PEM).
///
/// # Safety
/// `seed` must point to 32 readable bytes.
#[no_mangle]
pub unsafe extern "C" fn mpu_options_identity_seed(options: u64, seed: *const u8) -> i32 {
    guard(|| {
        if seed.is_null() {
            return Err(invalid("seed: NULL"));
        }
        // SAFETY: 32 readable bytes (the caller's promise).
        let s: [u8; 32] = unsafe { *seed.cast::<[u8; 32]>() };
        let id = ServerIdentity::from_seed(&s).map_err(|e| invalid(format!("identity: {e}")))?;
        with(options, |o| Ok(o.identity(id)))
    })
}

/// The packet scheduler by name (`lowest-rtt`, `last-received`, `priority`, `round-robin`,
/// `redundant`, `ecf`, `blest`).
///
/// # Safety
/// `name` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mpu_options_scheduler(options: u64, name: *const c_char) -> i32 {
    guard(|| {
        // SAFETY: the caller's promise.
        let n = unsafe { arg_str(name, "name") }?;
        with(options, |o| Ok(o.scheduler(n)))
    })
}

/// How long `mpu_connect` waits for the handshake by default (also bounded by its own
/// timeout).
#[no_mangle]
pub extern "C" fn mpu_options_connect_timeout(options: u64, ms: u32) -> i32 {
    guard(|| with(options, |o| Ok(o.connect_timeout(std::time::Duration::from_millis(u64::from(ms))))))
}

/// Where UDP gets no answer for `ms` milliseconds, use TCP on that interface (PROTOCOL.md
/// §4.11: the first handshake, and joins; 1000 by default); 0: UDP only.
#[no_mangle]
pub extern "C" fn mpu_options_tcp_fallback(options: u64, ms: u32) -> i32 {
    let d = (ms > 0).then(|| std::time::Duration::from_millis(u64::from(ms)));
    guard(|| with(options, |o| Ok(o.tcp_fallback(d))))
}

/// The public key of the options' server identity (base64, what clients are given),
/// NUL-terminated into `buf`; `MPU_ERR_CONFIG` if the options have none.
///
/// # Safety
/// `buf` must point to `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn mpu_options_public_key(options: u64, buf: *mut c_char, len: usize) -> i32 {
    guard(|| {
        let o = options_of(options)?;
        let id =
            o.config().server.identity.as_ref().ok_or_else(|| Fail(crate::MPU_ERR_CONFIG, "no identity".into()))?;
        let k = id.public_key().to_string();
        if buf.is_null() || len <= k.len() {
            return Err(invalid(format!("buffer of {len} bytes for {} bytes", k.len() + 1)));
        }
        // SAFETY: the caller's promise; `len` leaves room for the NUL.
        unsafe { crate::write_str(&k, buf, len) };
        Ok(MPU_OK)
    })
}
