//! A connect that parks no thread (issue 55): `mpu_connect_start` begins the handshake on the
//! library's runtime and returns at once with a handle; the callback says when it ended, and
//! `mpu_connect_finish` gives the connection (or the error). A Kotlin coroutine or a Swift task
//! suspends between the two; freeing the handle before the end cancels the connect.

use crate::conn::Conn;
use crate::endpoint::{endpoint_of, Side};
use crate::home::Home;
use crate::ready::MpuReadyCallback;
use crate::{arg_addr, get, guard, invalid, put, register, unregister, unregister_any, Fail};
use crate::{MPU_ERR_WOULD_BLOCK, MPU_OK};
use mpudp::MpStream;
use std::ffi::{c_char, c_void};
use std::sync::Mutex;

/// A connect in progress.
pub(crate) struct Connecting {
    result: std::sync::Arc<Mutex<Option<Result<MpStream, mpudp::Error>>>>,
    task: tokio::task::AbortHandle,
    /// Where the connection's calls will run (its endpoint's).
    home: Home,
}

impl Drop for Connecting {
    fn drop(&mut self) {
        self.task.abort();
        // Driven in calls, the task goes (and the endpoint it holds) only when its runtime
        // runs: now.
        self.home.catch_up();
    }
}

/// The app's context pointer for its callback.
struct Ctx(*mut c_void);
// SAFETY: the app promises (in the header) that its context may be used from the library's
// thread; the library only hands it back.
unsafe impl Send for Ctx {}

/// Starts connecting to the server at `addr` from a client endpoint (within the options'
/// connect timeout) and returns at once: `*out` is the connect's handle. When the handshake
/// ended, either way, `callback(ctx)` is called on the library's thread (NULL: none; poll
/// `mpu_connect_finish`); then `mpu_connect_finish` gives the connection. `mpu_connect_free`
/// cancels a connect in progress. On an endpoint driven in calls the handshake goes on only in
/// calls on it (`mpu_connect_finish`, `mpu_endpoint_drive`), and the callback runs on the
/// thread of the call in which it ended.
///
/// # Safety
/// `addr` must be a NUL-terminated string, `out` valid for a write; `callback` safe to call
/// from another thread with `ctx`, once.
#[no_mangle]
pub unsafe extern "C" fn mpu_connect_start(
    endpoint: u64,
    addr: *const c_char,
    callback: MpuReadyCallback,
    ctx: *mut c_void,
    out: *mut u64,
) -> i32 {
    guard(|| {
        // SAFETY: the caller's promise.
        let a = unsafe { arg_addr(addr, "addr") }?;
        let (o, kind) = endpoint_of(endpoint)?;
        if !matches!(&o.side, Side::Client(_)) {
            return Err(invalid(format!("endpoint {endpoint} is a {kind}: only a client connects")));
        }
        let result = std::sync::Arc::new(Mutex::new(None));
        let (slot, ctx) = (result.clone(), Ctx(ctx));
        let home = o.home.clone();
        // On the endpoint's runtime: driven in calls, the handshake runs in the app's calls
        // (`mpu_connect_finish` among them), and the callback on that call's thread.
        let task = home.rt().spawn(async move {
            let ctx = ctx;
            let Side::Client(ep) = &o.side else { return };
            let r = ep.connect(a).await;
            *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            if let Some(cb) = callback {
                // SAFETY: the app's promise: its callback may be called with its context here.
                unsafe { cb(ctx.0) };
            }
        });
        let h = register(Connecting { result, task: task.abort_handle(), home });
        // SAFETY: the caller's promise.
        unsafe { put(out, h, "out") }.inspect_err(|_| unregister_any(h))?;
        Ok(MPU_OK)
    })
}

/// The end of connect `pending`: `MPU_ERR_WOULD_BLOCK` while the handshake goes on; else the
/// connect's handle is freed and `*out` is the connection (`MPU_OK`) or its error is returned
/// (`MPU_ERR_UNREACHABLE`, `MPU_ERR_NOT_AUTHENTICATED`, ...).
///
/// # Safety
/// `out` must be valid for a write.
#[no_mangle]
pub unsafe extern "C" fn mpu_connect_finish(pending: u64, out: *mut u64) -> i32 {
    guard(|| {
        let c = get::<Connecting>(pending, "a connect in progress")?;
        // An endpoint driven in calls takes in what arrived.
        c.home.catch_up();
        let r = c.result.lock().unwrap_or_else(|e| e.into_inner()).take();
        let Some(r) = r else {
            return Err(Fail(MPU_ERR_WOULD_BLOCK, "the handshake goes on".into()));
        };
        let home = c.home.clone();
        drop(c);
        let _ = unregister::<Connecting>(pending, "a connect in progress");
        let h = register(Conn::new(r?, home));
        // SAFETY: the caller's promise.
        unsafe { put(out, h, "out") }.inspect_err(|_| unregister_any(h))?;
        Ok(MPU_OK)
    })
}

/// Cancels connect `pending` if it goes on, and frees its handle.
#[no_mangle]
pub extern "C" fn mpu_connect_free(pending: u64) -> i32 {
    guard(|| unregister::<Connecting>(pending, "a connect in progress").map(|_| MPU_OK))
}
