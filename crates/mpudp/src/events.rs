//! A connection's events as an async stream ([`MpStream::events`](crate::MpStream::events)):
//! subflows joined, failed, recovered and closed, the oracle's verdicts, fail-backs, the close.

use crate::conn_event::ConnEvent;
use crate::driver::{self, store, Shared};
use mpcore::ConnHandle;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

/// The events of one connection, oldest first, as a [`futures_core::Stream`] (or with
/// [`Events::next`]); it ends after the connection's `Closed` event. One reader per
/// connection: two `Events` of the same connection share one queue.
#[derive(Debug)]
pub struct Events {
    shared: Arc<Shared>,
    h: ConnHandle,
}

impl Events {
    pub(crate) fn new(shared: &Arc<Shared>, h: ConnHandle) -> Self {
        let mut st = shared.lock();
        st.attach_slot(h);
        st.slot(h).events_read = true;
        drop(st);
        Self { shared: driver::attach(shared), h }
    }

    /// The next event; `None` once the connection closed and every event was read.
    pub async fn next(&mut self) -> Option<ConnEvent> {
        poll_fn(|cx| self.poll_event(cx)).await
    }

    /// Events dropped because the queue was full: the reader fell more than 1,024 behind, or
    /// more than 8 came before any `Events` of the connection was made (those kept are the
    /// last 8).
    pub fn lost(&self) -> u64 {
        let mut st = self.shared.lock();
        st.slot(self.h).events_lost
    }

    fn poll_event(&mut self, cx: &mut Context<'_>) -> Poll<Option<ConnEvent>> {
        let mut st = self.shared.lock();
        let stopped = st.stopped;
        let slot = st.slot(self.h);
        if let Some(e) = slot.events.pop_front() {
            return Poll::Ready(Some(e));
        }
        if slot.closed.is_some() || stopped {
            return Poll::Ready(None);
        }
        store(&mut slot.events_waker, cx.waker());
        Poll::Pending
    }
}

impl futures_core::Stream for Events {
    type Item = ConnEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<ConnEvent>> {
        self.poll_event(cx)
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        self.shared.lock().detach_slot(self.h);
        driver::detach(&self.shared);
    }
}
