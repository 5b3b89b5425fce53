//! Where an endpoint's work runs: on the library's threads (the default), or inside the app's
//! own calls (`mpu_options_drive_in_calls`).
//!
//! By default an endpoint's driver (its sockets and timers) runs on a driver thread, and a
//! call on the app's thread waits for it: each request and each answer crosses between two
//! threads, which costs a wake of the other thread each way (5-10 us each on a 2-core machine
//! whose idle cores wake slowly). The Rust API avoids that on a current-thread runtime, where
//! the driver is a task of the caller's own thread; issue 55 asked the C ABI to come within
//! 1.05x of that. An endpoint driven in calls does the same for C: it has a current-thread
//! runtime of its own that no thread runs, and every call on it (its connections' reads,
//! writes, connects, accepts, events, `mpu_endpoint_drive`) runs that runtime on the caller's
//! thread while it waits. Nothing moves between calls: no timer fires, nothing is received or
//! acknowledged. That suits an app whose own network thread waits in blocking calls (a game
//! loop, a command-line tool), as quinn's and XQUIC's app-driven modes do, not one that waits
//! on the readiness descriptor, which only the driver raises. When several threads call at
//! once, one runs the runtime and the others hand it their work (a catch-up then does nothing
//! on their own thread: the running one does it). Callbacks (events, readiness) still run on
//! the library's `mpudp` thread; a connect begun with `mpu_connect_start` runs in the calls, and
//! its callback on the thread of the call that completes it. Once the app freed the last
//! handle, a thread of its own sees the closing connections to the end (`Own`).

use crate::{invalid, Fail, Res, MPU_ERR_TIMEOUT, MPU_ERR_WOULD_BLOCK};
use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::runtime::Runtime;
use tokio::task::yield_now;

/// How long the connections of an endpoint driven in calls may take to close once the app
/// freed its last handle (see `Own`).
const CLOSE_GRACE: Duration = Duration::from_secs(10);

/// An endpoint's own runtime (driven in calls), which goes with the last handle of the
/// endpoint and its connections. Connections still closing then (a DATA_FIN to repeat, the
/// peer's to acknowledge, data still to send) are seen to the end as on the library's
/// threads: the runtime moves to a thread of its own (`mpudp-close`) that runs it until its
/// tasks are done (the driver ends once no connection is left), `CLOSE_GRACE` at most.
/// Dropping it where it is would also panic on a thread inside another runtime (a handle
/// freed in an event callback).
pub(crate) struct Own(Option<Runtime>);

impl Drop for Own {
    fn drop(&mut self) {
        let Some(rt) = self.0.take() else { return };
        let slot = Arc::new(std::sync::Mutex::new(Some(rt)));
        let theirs = slot.clone();
        let spawned = std::thread::Builder::new().name("mpudp-close".into()).spawn(move || {
            let Some(rt) = theirs.lock().ok().and_then(|mut g| g.take()) else { return };
            let h = rt.handle().clone();
            rt.block_on(async move {
                let until = tokio::time::Instant::now() + CLOSE_GRACE;
                while h.metrics().num_alive_tasks() > 0 && tokio::time::Instant::now() < until {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            });
        });
        if spawned.is_err() {
            // No thread to be had: stopped here, without waiting for anything.
            if let Some(rt) = slot.lock().ok().and_then(|mut g| g.take()) {
                rt.shutdown_background();
            }
        }
    }
}

/// The runtime an endpoint and its connections run their calls in: the library's (`None`) or
/// the endpoint's own, driven in calls. Cloned into each connection.
#[derive(Clone, Default)]
pub(crate) struct Home(Option<Arc<Own>>);

impl Home {
    /// A runtime of the endpoint's own, driven by the calls made on it.
    pub(crate) fn driven_in_calls() -> Res<Self> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| Fail(crate::MPU_ERR_IO, format!("a runtime for the endpoint: {e}")))?;
        Ok(Self(Some(Arc::new(Own(Some(rt))))))
    }

    pub(crate) fn rt(&self) -> &Runtime {
        self.0.as_ref().and_then(|o| o.0.as_ref()).unwrap_or_else(|| crate::runtime())
    }

    /// Driven in calls: the caller's thread runs the endpoint while it waits.
    pub(crate) fn in_calls(&self) -> bool {
        self.0.is_some()
    }

    /// Runs what the endpoint has to do now (datagrams that arrived, due timers, sends a call
    /// asked for) on the caller's thread, waiting for nothing. A no-op for an endpoint on the
    /// library's threads, and on a thread inside a runtime (an event callback), which must not
    /// block on another.
    pub(crate) fn catch_up(&self) {
        if self.in_calls() && tokio::runtime::Handle::try_current().is_err() {
            // Two turns: the first takes in what the sockets have (the reactor is polled
            // without waiting) and wakes the driver; the second runs it.
            self.rt().block_on(async {
                yield_now().await;
                yield_now().await;
            });
        }
    }

    /// Runs `fut` to completion on the caller's thread, within `limit` (`None`: no limit;
    /// zero: polled once). Refused on a thread of the library's runtime (a callback), where it
    /// would deadlock.
    pub(crate) fn block<T>(&self, limit: Option<Duration>, fut: impl Future<Output = T>) -> Res<T> {
        // Timeout 0 never blocks: allowed from an event callback too ("readable, then read").
        if limit.is_some_and(|d| d.is_zero()) {
            return self.try_once(fut, None);
        }
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(invalid("a blocking call from the library's own thread (an event callback)"));
        }
        let limited = async {
            match limit {
                None => Ok(fut.await),
                Some(d) => tokio::time::timeout(d, fut)
                    .await
                    .map_err(|_| Fail(MPU_ERR_TIMEOUT, format!("nothing within {} ms", d.as_millis()))),
            }
        };
        if !self.in_calls() {
            return self.rt().block_on(limited);
        }
        // Driven in calls: once the call is done, one more turn, so that what it asked for
        // (a write's datagrams, a shutdown's DATA_FIN) leaves before the call returns.
        self.rt().block_on(async {
            let v = limited.await;
            yield_now().await;
            v
        })
    }

    /// A call with timeout 0: `fut` polled once on the caller's thread, inside the runtime's
    /// context (its sockets' readiness is the runtime's), with `waker` (or one that does
    /// nothing): ready, its value; else `MPU_ERR_WOULD_BLOCK` and the future is dropped. No
    /// timer and no hop to the runtime's thread: a read with nothing ready returns in
    /// microseconds, where a zero `tokio::time::timeout` waited for the timer wheel's next
    /// tick, a millisecond (issue 55). Driven in calls, the endpoint first catches up, and
    /// runs once more after the poll (a write's datagrams leave), unless another thread is
    /// running it (which then does both).
    pub(crate) fn try_once<T>(&self, fut: impl Future<Output = T>, waker: Option<Waker>) -> Res<T> {
        self.catch_up();
        let r = {
            let _in_runtime = self.rt().enter();
            let mut fut = std::pin::pin!(fut);
            let waker = waker.unwrap_or_else(|| Waker::noop().clone());
            let mut cx = Context::from_waker(&waker);
            match fut.as_mut().poll(&mut cx) {
                Poll::Ready(v) => Ok(v),
                Poll::Pending => Err(Fail(MPU_ERR_WOULD_BLOCK, "nothing ready".into())),
            }
        };
        self.catch_up();
        r
    }

    /// Runs the endpoint for `limit` on the caller's thread (driven in calls; zero: what is
    /// due now). On the library's threads there is nothing to run: returns at once.
    pub(crate) fn drive(&self, limit: Duration) -> Res<()> {
        if !self.in_calls() {
            return Ok(());
        }
        if limit.is_zero() {
            self.catch_up();
            return Ok(());
        }
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(invalid("a blocking call from the library's own thread (an event callback)"));
        }
        self.rt().block_on(async { tokio::time::sleep(limit).await });
        Ok(())
    }
}
