//! Readiness without a thread per call (issue 55): a connection (or a server endpoint) tells
//! the app when a call that returned `MPU_ERR_WOULD_BLOCK` (timeout 0) may now make progress,
//! through a file descriptor its own loop waits on, or a callback.
//!
//! - **The descriptor** (`mpu_conn_readiness_fd`) becomes readable; Android's
//!   `MessageQueue.addOnFileDescriptorEventListener` and iOS's `DispatchSource.makeReadSource`
//!   wait on such a descriptor in the app's own loop, as `epoll` and `kqueue` do. It is an
//!   eventfd on Linux and Android, a pipe elsewhere (`signal`, which says why).
//! - **The callback** (`mpu_conn_set_ready_callback`) is called on the library's thread, where
//!   a Kotlin coroutine or a Swift continuation is resumed (on the app's dispatcher, never
//!   inline: the callback must not call the library).
//!
//! The rule is that of an edge-triggered `epoll`: call read, write, next event (or accept)
//! with timeout 0 until one returns `MPU_ERR_WOULD_BLOCK`; that call leaves the connection's
//! waker with the library, which signals once something changes (bytes arrived, room in the
//! send buffer, an event, the end). Each call with timeout 0 drains the descriptor first, so a
//! level-triggered loop does not spin.

use crate::home::Home;
use crate::signal::Signal;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Wake, Waker};
use std::time::Duration;

/// Called with the app's context when something that would have blocked may go on.
pub type MpuReadyCallback = Option<unsafe extern "C" fn(ctx: *mut c_void)>;

/// The app's context pointer for its ready callback.
struct Ctx(*mut c_void);
// SAFETY: the app promises (in the header) that its context may be used from the library's
// thread; the library only hands it back.
unsafe impl Send for Ctx {}
// SAFETY: as above; the library never reads or writes through it.
unsafe impl Sync for Ctx {}

/// One connection's or endpoint's readiness: the descriptor and the callback, each made when
/// the app asks for it.
#[derive(Default)]
pub(crate) struct Readiness {
    /// The descriptor the app waits on.
    signal: OnceLock<Signal>,
    /// A wake raised the descriptor since the last drain (so a drain costs nothing
    /// otherwise; and one caller at a time drains).
    signalled: std::sync::atomic::AtomicBool,
    callback: Mutex<Option<(unsafe extern "C" fn(*mut c_void), Arc<Ctx>)>>,
}

impl Readiness {
    /// The descriptor the app waits on (made at the first call).
    pub(crate) fn fd(&self) -> std::io::Result<i32> {
        if let Some(s) = self.signal.get() {
            return Ok(s.fd());
        }
        let s = Signal::new()?;
        // Another thread may have made it meanwhile: the first one made stays.
        Ok(self.signal.get_or_init(|| s).fd())
    }

    pub(crate) fn set_callback(&self, cb: MpuReadyCallback, ctx: *mut c_void) {
        let mut g = self.callback.lock().unwrap_or_else(|e| e.into_inner());
        *g = cb.map(|f| (f, Arc::new(Ctx(ctx))));
    }

    /// Whether the app asked for readiness (a descriptor or a callback).
    fn wanted(&self) -> bool {
        self.signal.get().is_some() || self.callback.lock().map_or(true, |g| g.is_some())
    }

    /// The waker a call with timeout 0 leaves with the library: this readiness, or (nobody
    /// listens) one that does nothing.
    pub(crate) fn waker(self: &Arc<Self>) -> Option<Waker> {
        self.wanted().then(|| Waker::from(self.clone()))
    }

    /// Empties the descriptor: the app is making its calls. Only after a wake (no system
    /// call otherwise), and never blocking whatever the app did to the descriptor
    /// (`Signal::clear`).
    pub(crate) fn drain(&self) {
        use std::sync::atomic::Ordering;
        if !self.signalled.swap(false, Ordering::AcqRel) {
            return;
        }
        if let Some(s) = self.signal.get() {
            s.clear();
        }
    }
}

impl Wake for Readiness {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    /// On the library's thread, under its lock: the descriptor raised (one system call), and
    /// the callback through a task of its own (it runs after the lock is released, and may be
    /// slow).
    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(sig) = self.signal.get() {
            // Raised first, then marked: a drain between the two finds the mark unset and
            // leaves the descriptor readable for the next one. The other order could clear the
            // mark, then the raise leave the descriptor readable with no mark: every later
            // drain would skip it, and a level-triggered loop spin.
            sig.raise();
            self.signalled.store(true, std::sync::atomic::Ordering::Release);
        }
        let cb = self.callback.lock().ok().and_then(|g| g.as_ref().map(|(f, c)| (*f, c.clone())));
        if let Some((f, ctx)) = cb {
            crate::runtime().spawn(async move {
                // SAFETY: the app's promise: its callback may be called with its context from
                // the library's thread.
                unsafe { f(ctx.0) };
            });
        }
    }
}

/// As [`Home::block`], for a call on an object with a readiness (`ready`): with timeout 0, the
/// descriptor is drained and the call leaves the readiness's waker with the library, which
/// signals the app when the call may make progress (see `ready`).
pub(crate) fn block_ready<T>(
    home: &Home,
    limit: Option<Duration>,
    ready: &Arc<Readiness>,
    fut: impl std::future::Future<Output = T>,
) -> crate::Res<T> {
    if !limit.is_some_and(|d| d.is_zero()) {
        return home.block(limit, fut);
    }
    ready.drain();
    home.try_once(fut, ready.waker())
}
