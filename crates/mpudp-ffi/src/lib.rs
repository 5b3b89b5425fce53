//! # mpudp-ffi: mpudp through a C ABI
//!
//! The library an Android or iOS app links: a small C interface (`include/mpudp.h`, generated
//! by cbindgen) over [`mpudp`]. Kotlin reaches it through JNI (or a JNA-style binding), Swift
//! through its C interop (a module map over the header); `bindings/` has thin wrappers for
//! both, and the tests drive it from C and from Python (ctypes).
//!
//! ## Model
//! - **Handles, not pointers.** Options, endpoints and connections are `uint64_t` handles in a
//!   table: a handle that was freed, never existed or is of another kind gets
//!   `MPU_ERR_INVALID`, never undefined behaviour. Only byte buffers and strings are pointers,
//!   and each is checked for NULL.
//! - **Flags are `int32_t`, 0 or 1**, never C's `bool`: any other value is `MPU_ERR_INVALID`.
//!   A binding that passes its boolean as an int (JNA sends a Kotlin `true` as -1) would
//!   otherwise hand the library a `bool` that is neither, undefined behaviour that an
//!   optimised build turned into lost subflows (ABI 1; issue 55).
//! - **Calls with a timeout, and readiness.** `mpu_connect`, `mpu_accept`, `mpu_read`,
//!   `mpu_write` and `mpu_next_event` wait at most `timeout_ms` (negative: no limit). With 0
//!   they return at once (microseconds: the call is polled once on the caller's thread) with
//!   the result or `MPU_ERR_WOULD_BLOCK`, and leave the library a waker: the connection's (or
//!   server's) readiness descriptor becomes readable, or its ready callback is called, when the
//!   call may go on (`ready`; `mpu_connect_start` for a connect). An app's own loop (Android's
//!   `MessageQueue`, iOS's `DispatchSource`), Kotlin coroutines and Swift tasks then need no
//!   thread per pending call; simple apps call the blocking forms from a thread of their own.
//!   Readers, writers and control calls may run on different threads at once. An app that
//!   wants pushes sets an event callback (`mpu_set_event_callback`), called on the library's
//!   thread; calls with timeout 0 are allowed there ("readable, then read").
//! - **Threads.** The first endpoint starts one tokio thread (`mpudp`) that runs the event
//!   callbacks; the endpoints' drivers (their sockets and timers) run on driver threads
//!   (`mpudp-driver`, one per core at most, `Options::driver_thread`), so a slow callback does
//!   not hold up the sockets. Blocking calls park the caller's thread, not those. A blocking
//!   call (a timeout other than 0) made from an event callback (on the `mpudp` thread) fails
//!   with `MPU_ERR_INVALID`. An endpoint made with `mpu_options_drive_in_calls` has no driver
//!   thread: the calls made on it run its sockets and timers on the caller's thread while they
//!   wait (`home`), so a request and its answer cross no thread.
//! - **Errors** are negative `int32_t` codes; `mpu_last_error` gives the calling thread's last
//!   message. A panic inside the library is caught at the boundary and reported as
//!   `MPU_ERR_PANIC`: none unwinds into the caller.
#![allow(unsafe_code)] // The C boundary: raw buffers and strings, checked before use.

mod conn;
mod connecting;
mod endpoint;
mod home;
mod options;
mod ready;
mod signal;
mod tuning;

pub use conn::*;
pub use connecting::*;
pub use endpoint::*;
pub use options::*;
pub use ready::*;
pub use tuning::*;

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// Success.
pub const MPU_OK: i32 = 0;
/// A bad argument: a NULL pointer, an unknown or freed handle, a malformed string or address,
/// a blocking call from the library's own thread.
pub const MPU_ERR_INVALID: i32 = -1;
/// Nothing happened within the timeout.
pub const MPU_ERR_TIMEOUT: i32 = -2;
/// Nothing is ready now (a call with a timeout of 0).
pub const MPU_ERR_WOULD_BLOCK: i32 = -3;
/// The connection is closed (aborted by either side, timed out, or shut down for writing).
pub const MPU_ERR_CLOSED: i32 = -4;
/// The server did not answer.
pub const MPU_ERR_UNREACHABLE: i32 = -5;
/// The server could not prove the key the client was given.
pub const MPU_ERR_NOT_AUTHENTICATED: i32 = -6;
/// The options or the request are not valid together (the message says why).
pub const MPU_ERR_CONFIG: i32 = -7;
/// The operating system refused (a socket, a bind): the message has its error.
pub const MPU_ERR_IO: i32 = -8;
/// Binding to a device needs a privilege the process lacks (`CAP_NET_RAW` on Linux).
pub const MPU_ERR_PERMISSION: i32 = -9;
/// No interface of that name.
pub const MPU_ERR_NO_SUCH_INTERFACE: i32 = -10;
/// A bug in the library (a panic, caught at the boundary). Please report it.
pub const MPU_ERR_PANIC: i32 = -99;

/// The C ABI's version (this header's): changes only when a signature or a meaning changes.
pub const MPU_ABI_VERSION: u32 = 2;

/// The ABI version of the library actually loaded (compare with `MPU_ABI_VERSION`).
#[no_mangle]
pub extern "C" fn mpu_abi_version() -> u32 {
    MPU_ABI_VERSION
}

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

/// An error at the boundary: a code and its message.
#[derive(Debug)]
pub(crate) struct Fail(pub(crate) i32, pub(crate) String);

pub(crate) type Res<T> = Result<T, Fail>;

pub(crate) fn invalid(msg: impl Into<String>) -> Fail {
    Fail(MPU_ERR_INVALID, msg.into())
}

/// A flag from the app: 0 or 1, anything else `MPU_ERR_INVALID`. Flags cross the boundary as
/// `int32_t`, never as C's `bool`: a binding that passes a `bool` as an int (JNA passes a
/// Kotlin `true` as -1) would otherwise hand Rust a `bool` that is neither, which is undefined
/// behaviour (issue 55).
pub(crate) fn flag(value: i32, what: &str) -> Res<bool> {
    match value {
        0 => Ok(false),
        1 => Ok(true),
        v => Err(invalid(format!("{what} must be 0 or 1, not {v}"))),
    }
}

impl From<mpudp::Error> for Fail {
    fn from(e: mpudp::Error) -> Self {
        use mpudp::Error as E;
        let code = match &e {
            E::NoSuchDevice { .. } | E::NoSuchInterface { .. } => MPU_ERR_NO_SUCH_INTERFACE,
            E::PermissionDenied { .. } => MPU_ERR_PERMISSION,
            E::Unreachable { .. } => MPU_ERR_UNREACHABLE,
            E::ServerNotAuthenticated { .. } => MPU_ERR_NOT_AUTHENTICATED,
            E::Config(_) | E::NoServerKey => MPU_ERR_CONFIG,
            E::Closed(_) | E::EndpointClosed => MPU_ERR_CLOSED,
            _ => MPU_ERR_IO,
        };
        Fail(code, e.to_string())
    }
}

/// Runs `f` at the boundary: its error becomes a code (the message kept for
/// `mpu_last_error`), a panic becomes `MPU_ERR_PANIC`.
pub(crate) fn guard(f: impl FnOnce() -> Res<i32>) -> i32 {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => v,
        Ok(Err(Fail(code, msg))) => {
            set_error(msg);
            code
        }
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_error(format!("internal error (a panic in mpudp): {msg}"));
            MPU_ERR_PANIC
        }
    }
}

/// `guard` for a call that returns a byte count (`ssize_t`).
pub(crate) fn guard_len(f: impl FnOnce() -> Res<isize>) -> isize {
    let mut out = 0;
    let code = guard(|| {
        out = f()?;
        Ok(MPU_OK)
    });
    if code == MPU_OK {
        out
    } else {
        code as isize
    }
}

fn set_error(msg: String) {
    LAST_ERROR.with(|e| *e.borrow_mut() = msg);
}

/// Copies the calling thread's last error message into `buf` (NUL-terminated, cut to fit) and
/// returns its full length in bytes without the NUL (0: no error yet). `buf` may be NULL
/// with `len` 0 to ask for the length.
///
/// # Safety
/// `buf` must be NULL or point to `len` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn mpu_last_error(buf: *mut c_char, len: usize) -> usize {
    let msg = LAST_ERROR.with(|e| e.borrow().clone());
    // SAFETY: the caller's promise on (buf, len); checked for NULL inside.
    unsafe { write_str(&msg, buf, len) };
    msg.len()
}

/// Writes `s` into `buf` NUL-terminated, cut to `len - 1` bytes; nothing if NULL or 0.
///
/// # Safety
/// `buf` must be NULL or point to `len` writable bytes.
pub(crate) unsafe fn write_str(s: &str, buf: *mut c_char, len: usize) {
    if buf.is_null() || len == 0 {
        return;
    }
    let n = s.len().min(len - 1);
    // SAFETY: `buf` is non-NULL with room for `len > n` bytes (the caller's promise).
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
}

/// A C string argument as UTF-8.
///
/// # Safety
/// `p` must be NULL or a NUL-terminated string.
pub(crate) unsafe fn arg_str<'a>(p: *const c_char, what: &str) -> Res<&'a str> {
    if p.is_null() {
        return Err(invalid(format!("{what}: NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated (the caller's promise).
    unsafe { CStr::from_ptr(p) }.to_str().map_err(|_| invalid(format!("{what}: not UTF-8")))
}

/// A C string argument that is a socket address (`"192.0.2.1:5201"`, `"[::1]:0"`).
///
/// # Safety
/// `p` must be NULL or a NUL-terminated string.
pub(crate) unsafe fn arg_addr(p: *const c_char, what: &str) -> Res<std::net::SocketAddr> {
    // SAFETY: forwarded.
    let a = unsafe { arg_str(p, what) }?;
    a.parse().map_err(|_| invalid(format!("{what}: {a:?} is not an address with a port")))
}

/// An optional C string argument (NULL: none).
///
/// # Safety
/// `p` must be NULL or a NUL-terminated string.
pub(crate) unsafe fn opt_str<'a>(p: *const c_char, what: &str) -> Res<Option<&'a str>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded.
    unsafe { arg_str(p, what) }.map(Some)
}

/// A `timeout_ms` argument: negative is none, 0 is "try once".
pub(crate) fn timeout(ms: i32) -> Option<Duration> {
    u64::try_from(ms).ok().map(Duration::from_millis)
}

/// Writes `v` through `out`, checked for NULL.
///
/// # Safety
/// `out` must be NULL or valid for a write of `T`.
pub(crate) unsafe fn put<T>(out: *mut T, v: T, what: &str) -> Res<()> {
    if out.is_null() {
        return Err(invalid(format!("{what}: NULL")));
    }
    // SAFETY: non-NULL and valid (the caller's promise).
    unsafe { out.write(v) };
    Ok(())
}

/// The library's one runtime (see the crate's documentation).
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("mpudp")
            .enable_all()
            .build()
            .expect("a tokio runtime (threads and an epoll instance)")
    })
}

/// The objects behind the handles: options, endpoints and connections, each its own type (the
/// table names none of them: a handle's object is checked for the type a call expects).
type Object = Arc<dyn Any + Send + Sync>;

fn table() -> &'static Mutex<HashMap<u64, Object>> {
    static T: OnceLock<Mutex<HashMap<u64, Object>>> = OnceLock::new();
    T.get_or_init(Default::default)
}

fn lock_table() -> std::sync::MutexGuard<'static, HashMap<u64, Object>> {
    table().lock().unwrap_or_else(|e| e.into_inner())
}

/// Registers `o`; its handle (never 0, never reused).
pub(crate) fn register<T: Any + Send + Sync>(o: T) -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let h = NEXT.fetch_add(1, Ordering::Relaxed);
    lock_table().insert(h, Arc::new(o));
    h
}

/// The object of handle `h`, a `T` (`what` names the kind), kept alive by the caller while it
/// uses it, even if another thread frees the handle meanwhile.
pub(crate) fn get<T: Any + Send + Sync>(h: u64, what: &str) -> Res<Arc<T>> {
    let o = lock_table().get(&h).cloned();
    let o = o.ok_or_else(|| invalid(format!("no object with handle {h} (freed, or never made)")))?;
    o.downcast::<T>().map_err(|_| invalid(format!("handle {h} is not {what}")))
}

/// Removes handle `h` from the table if its object is a `T` (`what` names the kind); the object
/// goes once no call is using it.
pub(crate) fn unregister<T: Any + Send + Sync>(h: u64, what: &str) -> Res<Arc<T>> {
    let mut t = lock_table();
    match t.get(&h) {
        None => Err(invalid(format!("no object with handle {h} (freed twice?)"))),
        Some(o) if !o.is::<T>() => Err(invalid(format!("handle {h} is not {what}"))),
        Some(_) => {
            let o = t.remove(&h).expect("present");
            Ok(o.downcast::<T>().unwrap_or_else(|_| unreachable!("checked above")))
        }
    }
}

/// `unregister` of a handle of any kind (one just made, whose making failed after).
pub(crate) fn unregister_any(h: u64) {
    lock_table().remove(&h);
}

/// Handles not yet freed (options, endpoints and connections): for leak checks.
#[no_mangle]
pub extern "C" fn mpu_live_handles() -> u64 {
    lock_table().len() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last() -> String {
        let mut buf = [0 as c_char; 128];
        // SAFETY: a local buffer of that size.
        unsafe { mpu_last_error(buf.as_mut_ptr(), buf.len()) };
        // SAFETY: NUL-terminated by `mpu_last_error`.
        unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned()
    }

    #[test]
    fn a_panic_stops_at_the_boundary_with_its_message() {
        #[allow(clippy::panic)]
        let code = guard(|| panic!("boom"));
        assert_eq!(code, MPU_ERR_PANIC);
        assert!(last().contains("boom"), "{}", last());
        assert_eq!(guard_len(|| Err(invalid("bad"))), MPU_ERR_INVALID as isize);
        assert_eq!(last(), "bad");
    }

    #[test]
    fn a_long_message_is_cut_to_the_buffer_and_reports_its_length() {
        set_error("x".repeat(300));
        let mut buf = [1 as c_char; 16];
        // SAFETY: a local buffer of that size.
        let n = unsafe { mpu_last_error(buf.as_mut_ptr(), buf.len()) };
        assert_eq!(n, 300);
        assert_eq!(buf[15], 0);
        // SAFETY: NULL with 0 asks for the length only.
        assert_eq!(unsafe { mpu_last_error(std::ptr::null_mut(), 0) }, 300);
    }

    #[test]
    fn handles_of_the_wrong_kind_or_freed_are_refused() {
        let mut h = 0;
        // SAFETY: a local out.
        assert_eq!(unsafe { mpu_options_new(MPU_PRESET_PHONE, &mut h) }, MPU_OK);
        assert_eq!(mpu_endpoint_free(h), MPU_ERR_INVALID, "an options handle is not an endpoint");
        assert_eq!(mpu_conn_free(h), MPU_ERR_INVALID, "nor a connection");
        assert_eq!(mpu_options_free(h), MPU_OK, "and is still there");
        assert_eq!(mpu_options_free(h), MPU_ERR_INVALID, "but not twice");
        // SAFETY: a local out.
        assert_eq!(unsafe { mpu_options_new(77, &mut h) }, MPU_ERR_INVALID);
        // SAFETY: NULL out is checked.
        assert_eq!(unsafe { mpu_options_new(MPU_PRESET_PHONE, std::ptr::null_mut()) }, MPU_ERR_INVALID);
    }

    /// Built with a feature or without it (`.ci/run` tests both builds), the options call
    /// of each feature either takes the option or says which feature the library lacks.
    #[test]
    fn an_option_of_a_feature_left_out_says_so() {
        let mut o = 0;
        // SAFETY: a local out.
        assert_eq!(unsafe { mpu_options_new(MPU_PRESET_PHONE, &mut o) }, MPU_OK);
        let dir = std::ffi::CString::new(std::env::temp_dir().to_string_lossy().as_ref()).unwrap_or_default();
        // SAFETY: a NUL-terminated string.
        let q = unsafe { options::mpu_options_qlog_dir(o, dir.as_ptr()) };
        if cfg!(feature = "qlog") {
            assert_eq!(q, MPU_OK);
        } else {
            assert_eq!(q, MPU_ERR_INVALID);
            assert!(last().contains("`qlog` feature"), "{}", last());
        }
        // SAFETY: NULL removes the callback; nothing is called.
        let t = unsafe { options::mpu_options_tcp_socket_callback(o, None, std::ptr::null_mut()) };
        if cfg!(feature = "tcp") {
            assert_eq!(t, MPU_OK);
        } else {
            assert_eq!(t, MPU_ERR_INVALID);
            assert!(last().contains("`tcp` feature"), "{}", last());
        }
        assert_eq!(mpu_options_free(o), MPU_OK);
    }

    #[test]
    fn flags_other_than_0_or_1_are_refused_before_anything_is_done() {
        let c = |s: &str| std::ffi::CString::new(s).unwrap_or_default();
        let mut o = 0;
        // SAFETY: a local out.
        assert_eq!(unsafe { mpu_options_new(MPU_PRESET_PHONE, &mut o) }, MPU_OK);
        let (wifi, cell, lo) = (c("wifi"), c("cell"), c("127.0.0.1:0"));
        // JNA passes a Kotlin `true` as -1: refused with a message, nothing added.
        for bad in [-1, 2, 255] {
            // SAFETY: NUL-terminated strings.
            let r = unsafe { mpu_options_add_address(o, lo.as_ptr(), wifi.as_ptr(), MPU_IFACE_WIFI, bad) };
            assert_eq!(r, MPU_ERR_INVALID);
            assert_eq!(last(), format!("backup must be 0 or 1, not {bad}"));
            // SAFETY: as above.
            let r = unsafe { mpu_options_add_device(o, wifi.as_ptr(), MPU_IFACE_WIFI, bad) };
            assert_eq!(r, MPU_ERR_INVALID);
            assert_eq!(mpu_options_issue_tickets(o, bad), MPU_ERR_INVALID);
        }
        assert_eq!(mpu_options_issue_tickets(o, 1), MPU_OK);
        // SAFETY: NUL-terminated strings.
        assert_eq!(unsafe { mpu_options_add_address(o, lo.as_ptr(), wifi.as_ptr(), MPU_IFACE_WIFI, 0) }, MPU_OK);
        let mut ep = 0;
        // SAFETY: a local out.
        assert_eq!(unsafe { mpu_client_new(o, &mut ep) }, MPU_OK, "{}", last());
        // SAFETY: NUL-terminated strings, here and below.
        assert_eq!(unsafe { mpu_path_set_up(ep, wifi.as_ptr(), -1) }, MPU_ERR_INVALID);
        assert_eq!(last(), "up must be 0 or 1, not -1");
        assert_eq!(unsafe { mpu_path_set_up(ep, wifi.as_ptr(), 1) }, MPU_OK, "{}", last());
        assert_eq!(unsafe { mpu_path_hint(ep, wifi.as_ptr(), 2, -1, 0) }, MPU_ERR_INVALID);
        assert_eq!(unsafe { mpu_path_hint(ep, wifi.as_ptr(), 1, 2, 0) }, MPU_OK, "{}", last());
        let lo2 = c("127.0.0.2:0");
        let r = unsafe { mpu_path_add_address(ep, lo2.as_ptr(), cell.as_ptr(), MPU_IFACE_CELLULAR, -1) };
        assert_eq!(r, MPU_ERR_INVALID);
        assert_eq!(mpu_endpoint_free(ep), MPU_OK);
        assert_eq!(mpu_options_free(o), MPU_OK);
    }

    #[test]
    #[cfg(feature = "tcp")]
    fn the_tcp_socket_callback_is_set_and_removed_on_options_only() {
        unsafe extern "C" fn bind(_ctx: *mut std::ffi::c_void, _label: *const c_char, _fd: i32) -> i32 {
            0
        }
        let mut o = 0;
        // SAFETY: a local out.
        assert_eq!(unsafe { mpu_options_new(MPU_PRESET_PHONE, &mut o) }, MPU_OK);
        // SAFETY: a callback safe from any thread, no context.
        assert_eq!(unsafe { mpu_options_tcp_socket_callback(o, Some(bind), std::ptr::null_mut()) }, MPU_OK);
        assert!(options_of(o).is_ok_and(|opts| format!("{opts:?}").contains("TcpSocketHook")));
        // SAFETY: NULL removes it.
        assert_eq!(unsafe { mpu_options_tcp_socket_callback(o, None, std::ptr::null_mut()) }, MPU_OK);
        assert!(options_of(o).is_ok_and(|opts| !format!("{opts:?}").contains("TcpSocketHook")));
        assert_eq!(mpu_options_free(o), MPU_OK);
        // SAFETY: as above; a freed handle is refused.
        assert_eq!(unsafe { mpu_options_tcp_socket_callback(o, Some(bind), std::ptr::null_mut()) }, MPU_ERR_INVALID);
    }

    #[test]
    fn a_blocking_call_from_the_library_thread_is_refused() {
        let r = runtime().block_on(async { home::Home::default().block(None, async { 1 }) });
        assert!(matches!(r, Err(Fail(MPU_ERR_INVALID, _))));
    }
}
