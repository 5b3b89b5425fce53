//! The readiness descriptor itself: a file descriptor the library makes readable and the app's
//! loop waits on (`epoll`, Android's Looper, `kqueue`, iOS's `DispatchSource`).
//!
//! - **Linux and Android: an eventfd**, the cheapest: a raise and a clear cost about 0.5 us of
//!   system calls, against 1.3 us for the socket pair this library used before (its writes go
//!   through the socket layer). The library raises it on its thread, under the endpoint's lock.
//! - **Elsewhere (Apple's systems): a pipe**, which `kqueue` and `DispatchSource` wait on.
//!
//! Clearing never blocks, whatever the app did to the descriptor's flags (an app that made it
//! blocking must not hang a call): it reads only what the descriptor says it holds, one clear
//! at a time. The app must not read the descriptor itself while it makes calls (the header
//! says so); a read of it between two calls does no harm.
#![allow(unsafe_code)] // System calls on descriptors this type owns.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// A descriptor that becomes readable when raised, until cleared.
#[derive(Debug)]
pub(crate) struct Signal {
    /// The end the app waits on (and, for an eventfd, the one the library writes).
    app: OwnedFd,
    /// A pipe's write end (`None` for an eventfd).
    lib: Option<OwnedFd>,
    /// One clear at a time: two that both saw the descriptor readable would both read, and
    /// the second block if the app made the descriptor blocking.
    clearing: std::sync::Mutex<()>,
}

/// `Err(last OS error)` when a system call returned a negative value.
fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl Signal {
    /// The platform's kind: an eventfd on Linux and Android, a pipe elsewhere.
    pub(crate) fn new() -> io::Result<Self> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            // SAFETY: no pointers; the descriptor returned is owned from here on.
            let fd = check(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
            // SAFETY: a descriptor just opened, owned by nothing else.
            Ok(Self { app: unsafe { OwnedFd::from_raw_fd(fd) }, lib: None, clearing: Default::default() })
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        {
            Self::pipe()
        }
    }

    /// A pipe, non-blocking and close-on-exec at both ends (Apple's systems; tested on Linux).
    #[cfg_attr(any(target_os = "linux", target_os = "android"), allow(dead_code))]
    pub(crate) fn pipe() -> io::Result<Self> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: `pipe` writes two descriptors into the array.
        check(unsafe { libc::pipe(fds.as_mut_ptr()) })?;
        // SAFETY: two descriptors just opened, owned by nothing else.
        let (app, lib) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        for fd in [&app, &lib] {
            let fd = fd.as_raw_fd();
            // SAFETY: `fcntl` on an open descriptor, with integer arguments only.
            unsafe {
                let fl = check(libc::fcntl(fd, libc::F_GETFL))?;
                check(libc::fcntl(fd, libc::F_SETFL, fl | libc::O_NONBLOCK))?;
                let fd_fl = check(libc::fcntl(fd, libc::F_GETFD))?;
                check(libc::fcntl(fd, libc::F_SETFD, fd_fl | libc::FD_CLOEXEC))?;
            }
        }
        // A write to a pipe whose read end the app closed (against the header's word) must
        // not raise SIGPIPE in an app that did not ignore it (a JVM's, a Swift app's).
        #[cfg(target_vendor = "apple")]
        // SAFETY: `fcntl` on an open descriptor, with integer arguments only.
        unsafe {
            check(libc::fcntl(lib.as_raw_fd(), libc::F_SETNOSIGPIPE, 1))?;
        }
        Ok(Self { app, lib: Some(lib), clearing: Default::default() })
    }

    /// The descriptor the app waits on.
    pub(crate) fn fd(&self) -> RawFd {
        self.app.as_raw_fd()
    }

    /// Makes the descriptor readable (one system call; a full pipe is readable already).
    pub(crate) fn raise(&self) {
        match &self.lib {
            // SAFETY: a write of one byte from a local to an open descriptor.
            Some(lib) => unsafe {
                libc::write(lib.as_raw_fd(), [1u8].as_ptr().cast(), 1);
            },
            // SAFETY: a write of the 8-byte counter increment from a local. It cannot block:
            // an eventfd's write waits only when its counter would pass 2^64 - 2.
            None => unsafe {
                libc::write(self.app.as_raw_fd(), 1u64.to_ne_bytes().as_ptr().cast(), 8);
            },
        };
    }

    /// Makes the descriptor not readable, never blocking: one system call when it is not
    /// readable (the app read it already), two otherwise.
    pub(crate) fn clear(&self) {
        let _one = self.clearing.lock().unwrap_or_else(|e| e.into_inner());
        let fd = self.app.as_raw_fd();
        match &self.lib {
            None => {
                let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
                // SAFETY: one pollfd, no wait.
                if unsafe { libc::poll(&mut p, 1, 0) } == 1 && p.revents & libc::POLLIN != 0 {
                    let mut v = [0u8; 8];
                    // SAFETY: 8 bytes into a local. A readable eventfd's read returns at once
                    // (clears are serialised by `clearing`; the app does not read it).
                    unsafe { libc::read(fd, v.as_mut_ptr().cast(), 8) };
                }
            }
            Some(_) => {
                let mut sink = [0u8; 64];
                loop {
                    let mut held: libc::c_int = 0;
                    // SAFETY: `ioctl(FIONREAD)` into a local int.
                    if unsafe { libc::ioctl(fd, libc::FIONREAD, &mut held) } < 0 || held <= 0 {
                        return;
                    }
                    let want = (held as usize).min(sink.len());
                    // SAFETY: at most `want` bytes into a local; the pipe holds at least that
                    // many, so the read returns at once, blocking or not.
                    if unsafe { libc::read(fd, sink.as_mut_ptr().cast(), want) } <= 0 {
                        return;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Signal;

    fn readable(s: &Signal) -> bool {
        let mut p = libc::pollfd { fd: s.fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one pollfd, no wait.
        unsafe { libc::poll(&mut p, 1, 0) == 1 }
    }

    /// Both kinds: raised is readable, cleared is not, a clear of a cleared one returns, and
    /// neither hangs when the app made the descriptor blocking.
    #[test]
    fn raise_and_clear_never_block() {
        for s in [Signal::new().unwrap(), Signal::pipe().unwrap()] {
            assert!(!readable(&s));
            s.raise();
            s.raise();
            assert!(readable(&s));
            s.clear();
            assert!(!readable(&s), "{s:?} still readable after a clear");
            // The app makes it blocking: a clear with nothing held must still return.
            // SAFETY: `fcntl` on an open descriptor.
            unsafe { libc::fcntl(s.fd(), libc::F_SETFL, libc::fcntl(s.fd(), libc::F_GETFL) & !libc::O_NONBLOCK) };
            s.clear();
            s.raise();
            assert!(readable(&s));
            s.clear();
            assert!(!readable(&s));
        }
    }
}
