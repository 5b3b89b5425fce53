//! The kernel's link and address events (Linux rtnetlink): a socket subscribed to the
//! `RTNLGRP_LINK`, `RTNLGRP_IPV4_IFADDR` and `RTNLGRP_IPV6_IFADDR` groups wakes the driver as
//! soon as an interface appears, goes, changes state or gains or loses an address. The
//! messages are only a wake-up: the driver then reads the interfaces afresh (getifaddrs and
//! sysfs), so a message it did not parse, or an overrun (ENOBUFS: the kernel dropped some),
//! cannot leave it with a stale view.

use std::io;
use std::task::{Context, Poll};
use tokio::io::unix::AsyncFd;

/// rtnetlink multicast groups (linux/rtnetlink.h).
const RTNLGRP_LINK: u32 = 1;
const RTNLGRP_IPV4_IFADDR: u32 = 5;
const RTNLGRP_IPV6_IFADDR: u32 = 9;
/// errno: the socket overran (asm-generic/errno.h).
const ENOBUFS: i32 = 105;

/// A subscription to the kernel's link and address events.
#[derive(Debug)]
pub(crate) struct Events {
    fd: AsyncFd<netlink_sys::Socket>,
    buf: Vec<u8>,
}

impl Events {
    /// Subscribes; must run inside a tokio runtime.
    pub(crate) fn new() -> io::Result<Self> {
        let mut s = netlink_sys::Socket::new(netlink_sys::constants::NETLINK_ROUTE)?;
        s.bind_auto()?;
        for g in [RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR, RTNLGRP_IPV6_IFADDR] {
            s.add_membership(g)?;
        }
        s.set_non_blocking(true)?;
        // The crate's one `unsafe`: tokio registers a raw descriptor only on the caller's word.
        // SAFETY: `netlink_sys::Socket` owns its descriptor (it closes it on drop) and always
        // returns that one from `as_raw_fd`; the `AsyncFd` owns the socket, so the descriptor
        // stays open and the same for as long as it is registered.
        #[allow(unsafe_code)]
        let fd = unsafe { AsyncFd::register(s) }.map_err(|e| io::Error::other(e.to_string()))?;
        Ok(Self { fd, buf: Vec::with_capacity(16 * 1024) })
    }

    /// Reads every pending message; true if there was any (or the kernel dropped some): the
    /// interfaces may have changed. Registers the task for the next one either way.
    pub(crate) fn poll_changed(&mut self, cx: &mut Context<'_>) -> bool {
        let mut changed = false;
        loop {
            let mut guard = match self.fd.poll_read_ready(cx) {
                Poll::Ready(Ok(g)) => g,
                Poll::Ready(Err(e)) => {
                    tracing::warn!(error = %e, "netlink socket failed");
                    return changed;
                }
                Poll::Pending => return changed,
            };
            self.buf.clear();
            match guard.try_io(|s| s.get_ref().recv(&mut self.buf, 0)) {
                Ok(Ok(_)) => changed = true,
                // ENOBUFS: events were lost; a full re-read covers them.
                Ok(Err(e)) if e.raw_os_error() == Some(ENOBUFS) => changed = true,
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "reading the netlink socket");
                    return changed;
                }
                Err(_would_block) => {}
            }
        }
    }
}
