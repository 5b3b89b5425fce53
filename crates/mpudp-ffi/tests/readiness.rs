//! Readiness without a thread per call (issue 55), through the C functions as an app's loop
//! uses them: calls with timeout 0 until `MPU_ERR_WOULD_BLOCK`, then a wait on the readiness
//! descriptor (or the callback), then the calls again. Accept, read, write and events each
//! signal; nothing signals while nothing changed.
#![allow(clippy::unwrap_used)]
#![allow(unsafe_code)] // Calls the C functions, as an app does.

use mpudp_ffi::*;
use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Whether descriptor `fd` (the library's) becomes readable within `ms` (then read, as an
/// app's loop that clears the descriptor itself would; the library's next call with timeout 0
/// drains the rest).
fn readable_within(fd: i32, ms: u64) -> bool {
    // SAFETY: `fcntl` and `read` on the library's open descriptor (borrowed, never closed
    // here), into local bytes.
    unsafe {
        // Left blocking on purpose: the library's calls must not hang on it (`drain`).
        libc::fcntl(fd, libc::F_SETFL, libc::fcntl(fd, libc::F_GETFL) & !libc::O_NONBLOCK);
        if !polls_readable(fd, ms) {
            return false;
        }
        // 8 bytes: an eventfd's read takes its whole counter (a pipe's, up to 8 bytes).
        let mut b = [0u8; 8];
        libc::read(fd, b.as_mut_ptr().cast(), 8) > 0
    }
}

/// Whether descriptor `fd` becomes readable within `ms`, left as it is (as Android's Looper and
/// iOS's DispatchSource leave it: the library's next call drains it).
fn polls_readable(fd: i32, ms: u64) -> bool {
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one pollfd on the library's open descriptor.
    unsafe { libc::poll(&mut p, 1, ms as i32) == 1 }
}

fn out<T: Default>(f: impl FnOnce(*mut T) -> i32) -> T {
    let mut v = T::default();
    assert_eq!(f(&mut v), MPU_OK);
    v
}

unsafe extern "C" fn count(ctx: *mut c_void) {
    // SAFETY: the test's static counter.
    unsafe { &*(ctx as *const AtomicUsize) }.fetch_add(1, Ordering::SeqCst);
}

/// The tests count the library's live handles: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn accept_read_write_and_events_signal_the_descriptor_and_the_callback() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let seed = [9u8; 32];
    let any = CString::new("127.0.0.1:0").unwrap();
    let lo = CString::new("lo").unwrap();
    // SAFETY (whole test): valid out pointers, NUL-terminated strings, buffers of their sizes.
    let server = unsafe {
        let o = out(|p| mpu_options_new(MPU_PRESET_SERVER, p));
        assert_eq!(mpu_options_identity_seed(o, seed.as_ptr()), MPU_OK);
        let mut key = [0 as std::ffi::c_char; 128];
        assert_eq!(mpu_options_public_key(o, key.as_mut_ptr(), key.len()), MPU_OK);
        let s = out(|p| mpu_server_new(o, any.as_ptr(), p));
        mpu_options_free(o);
        (s, std::ffi::CStr::from_ptr(key.as_ptr()).to_owned())
    };
    let (server, key) = server;
    let mut addr = [0 as std::ffi::c_char; 64];
    assert_eq!(unsafe { mpu_endpoint_local_addr(server, addr.as_mut_ptr(), addr.len()) }, MPU_OK);

    // Accept: nothing yet, then a client connects.
    let accept_fd = out(|p| unsafe { mpu_endpoint_readiness_fd(server, p) });
    let mut conn_s = 0;
    assert_eq!(unsafe { mpu_accept(server, 0, &mut conn_s) }, MPU_ERR_WOULD_BLOCK);
    assert!(!readable_within(accept_fd, 50), "no client yet: nothing to signal");
    let client = unsafe {
        let o = out(|p| mpu_options_new(MPU_PRESET_DEFAULT, p));
        assert_eq!(mpu_options_server_key(o, key.as_ptr()), MPU_OK);
        assert_eq!(mpu_options_add_address(o, any.as_ptr(), lo.as_ptr(), MPU_IFACE_WIRED, 0), MPU_OK);
        let c = out(|p| mpu_client_new(o, p));
        mpu_options_free(o);
        c
    };
    // Connect without a parked thread: started, the callback says when it ended, finished.
    static CONNECTED: AtomicUsize = AtomicUsize::new(0);
    let cctx = &CONNECTED as *const AtomicUsize as *mut c_void;
    let pending = out(|p| unsafe { mpu_connect_start(client, addr.as_ptr(), Some(count), cctx, p) });
    let mut conn_c = 0;
    let mut polls = 0;
    while CONNECTED.load(Ordering::SeqCst) == 0 {
        assert_eq!(unsafe { mpu_connect_finish(pending, &mut conn_c) }, MPU_ERR_WOULD_BLOCK, "not before the callback");
        polls += 1;
        assert!(polls < 5000, "the connect's callback never came");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(unsafe { mpu_connect_finish(pending, &mut conn_c) }, MPU_OK);
    assert_eq!(unsafe { mpu_connect_finish(pending, &mut conn_c) }, MPU_ERR_INVALID, "the connect's handle is freed");
    assert!(readable_within(accept_fd, 5000), "a connection to accept signals");
    assert_eq!(unsafe { mpu_accept(server, 0, &mut conn_s) }, MPU_OK);

    // Read: nothing, then the client writes.
    let fd = out(|p| unsafe { mpu_conn_readiness_fd(conn_s, p) });
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let ctx = &CALLS as *const AtomicUsize as *mut c_void;
    assert_eq!(unsafe { mpu_conn_set_ready_callback(conn_s, Some(count), ctx) }, MPU_OK);
    let mut buf = [0u8; 4096];
    assert_eq!(unsafe { mpu_read(conn_s, buf.as_mut_ptr(), buf.len(), 0) }, MPU_ERR_WOULD_BLOCK as isize);
    assert!(!readable_within(fd, 50), "nothing arrived: nothing to signal");
    let before = CALLS.load(Ordering::SeqCst);
    let msg = [7u8; 100];
    assert_eq!(unsafe { mpu_write(conn_c, msg.as_ptr(), msg.len(), 5000) }, 100);
    assert!(polls_readable(fd, 5000), "bytes arrived: the descriptor is readable");
    for _ in 0..500 {
        if CALLS.load(Ordering::SeqCst) > before {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(CALLS.load(Ordering::SeqCst) > before, "and the callback was called");
    assert_eq!(unsafe { mpu_read(conn_s, buf.as_mut_ptr(), buf.len(), 0) }, 100);
    assert!(!polls_readable(fd, 20), "the call drained it");

    // Write: fill the send buffer with non-blocking writes; room comes back as the peer reads.
    let chunk = vec![1u8; 64 << 10];
    let mut sent = 0usize;
    loop {
        let n = unsafe { mpu_write(conn_s, chunk.as_ptr(), chunk.len(), 0) };
        if n == MPU_ERR_WOULD_BLOCK as isize {
            break;
        }
        assert!(n > 0, "write {n}");
        sent += n as usize;
        assert!(sent < 1 << 30, "the send buffer never filled");
    }
    assert!(!readable_within(fd, 20), "no room yet: nothing to signal");
    let mut got = 0usize;
    while got < sent / 2 {
        let n = unsafe { mpu_read(conn_c, buf.as_mut_ptr(), buf.len(), 5000) };
        assert!(n > 0, "client read {n}");
        got += n as usize;
    }
    assert!(readable_within(fd, 5000), "room in the send buffer signals");
    assert!(unsafe { mpu_write(conn_s, chunk.as_ptr(), chunk.len(), 0) } > 0);

    // Events: the client's shutdown ends the server's stream (a read of 0) and closes.
    let mut ev = MpuEvent::default();
    while unsafe { mpu_next_event(conn_s, 0, &mut ev) } == MPU_OK {}
    assert_eq!(mpu_abort(conn_c), MPU_OK);
    assert!(readable_within(fd, 5000), "the peer's abort signals");

    for h in [conn_c, conn_s] {
        mpu_conn_free(h);
    }
    // A connect freed before its end is cancelled (nowhere answers: it would go on for 10 s).
    let nowhere = CString::new("127.0.0.1:9").unwrap();
    let pending = out(|p| unsafe { mpu_connect_start(client, nowhere.as_ptr(), None, std::ptr::null_mut(), p) });
    assert_eq!(mpu_connect_free(pending), MPU_OK);
    mpu_endpoint_free(client);
    mpu_endpoint_free(server);
    assert_eq!(mpu_live_handles(), 0, "nothing left behind");
}

/// A server and a client over loopback, connected: (server, client, server's conn, client's).
fn pair(seed: u8) -> (u64, u64, u64, u64) {
    let any = CString::new("127.0.0.1:0").unwrap();
    let lo = CString::new("lo").unwrap();
    // SAFETY (whole function): valid out pointers and NUL-terminated strings.
    unsafe {
        let o = out(|p| mpu_options_new(MPU_PRESET_SERVER, p));
        assert_eq!(mpu_options_identity_seed(o, [seed; 32].as_ptr()), MPU_OK);
        let mut key = [0 as std::ffi::c_char; 128];
        assert_eq!(mpu_options_public_key(o, key.as_mut_ptr(), key.len()), MPU_OK);
        let server = out(|p| mpu_server_new(o, any.as_ptr(), p));
        mpu_options_free(o);
        let mut addr = [0 as std::ffi::c_char; 64];
        assert_eq!(mpu_endpoint_local_addr(server, addr.as_mut_ptr(), addr.len()), MPU_OK);
        let o = out(|p| mpu_options_new(MPU_PRESET_DEFAULT, p));
        assert_eq!(mpu_options_server_key(o, key.as_ptr()), MPU_OK);
        assert_eq!(mpu_options_add_address(o, any.as_ptr(), lo.as_ptr(), MPU_IFACE_WIRED, 0), MPU_OK);
        let client = out(|p| mpu_client_new(o, p));
        mpu_options_free(o);
        let conn_c = out(|p| mpu_connect(client, addr.as_ptr(), 5000, p));
        let conn_s = out(|p| mpu_accept(server, 5000, p));
        (server, client, conn_s, conn_c)
    }
}

#[test]
fn shutdown_does_not_wait_for_a_writer_blocked_on_another_thread() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (server, client, conn_s, conn_c) = pair(11);
    // The send buffer full (the client reads nothing yet).
    let chunk = vec![3u8; 64 << 10];
    let mut sent = 0usize;
    loop {
        // SAFETY: a buffer of its length.
        let n = unsafe { mpu_write(conn_s, chunk.as_ptr(), chunk.len(), 0) };
        if n == MPU_ERR_WOULD_BLOCK as isize {
            break;
        }
        sent += n as usize;
    }
    let writer = std::thread::spawn(move || {
        let chunk = vec![3u8; 64 << 10];
        // SAFETY: a buffer of its length. Blocks: nothing makes room for 3 s.
        unsafe { mpu_write(conn_s, chunk.as_ptr(), chunk.len(), 3000) }
    });
    std::thread::sleep(Duration::from_millis(200));
    let t0 = std::time::Instant::now();
    assert_eq!(mpu_shutdown(conn_s), MPU_OK);
    let took = t0.elapsed();
    assert!(took < Duration::from_millis(1000), "mpu_shutdown waited for the blocked writer: {took:?}");
    // The client gets everything written, then the end of the stream.
    let mut buf = vec![0u8; 64 << 10];
    let mut got = 0usize;
    loop {
        // SAFETY: a buffer of its length.
        let n = unsafe { mpu_read(conn_c, buf.as_mut_ptr(), buf.len(), 5000) };
        assert!(n >= 0, "client read {n}");
        if n == 0 {
            break;
        }
        got += n as usize;
    }
    let late = writer.join().unwrap();
    assert!(got >= sent, "{got} of {sent} bytes before the end");
    println!("shutdown took {took:?}; the blocked write returned {late}; {got} bytes then the end");
    for h in [conn_c, conn_s] {
        mpu_conn_free(h);
    }
    mpu_endpoint_free(client);
    mpu_endpoint_free(server);
}
