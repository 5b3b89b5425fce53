//! Endpoints driven in the app's calls (`mpu_options_drive_in_calls`, issue 55): no thread of
//! the library's runs their sockets; the caller's thread does while a call waits, and only
//! then. Both ends here are such endpoints (the server on a thread of the test's), so no
//! driver thread may appear in this process.
#![allow(clippy::unwrap_used)]
#![allow(unsafe_code)] // Calls the C functions, as an app does.

use mpudp_ffi::*;
use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn out<T: Default>(f: impl FnOnce(*mut T) -> i32) -> T {
    let mut v = T::default();
    assert_eq!(f(&mut v), MPU_OK);
    v
}

/// Options for an endpoint on loopback driven in calls.
fn driven_options(preset: u32) -> u64 {
    let any = CString::new("127.0.0.1:0").unwrap();
    let lo = CString::new("lo").unwrap();
    // SAFETY: valid out pointers and NUL-terminated strings.
    unsafe {
        let o = out(|p| mpu_options_new(preset, p));
        assert_eq!(mpu_options_add_address(o, any.as_ptr(), lo.as_ptr(), MPU_IFACE_WIRED, 0), MPU_OK);
        assert_eq!(mpu_options_drive_in_calls(o, 1), MPU_OK);
        o
    }
}

/// What an echo server saw: bytes echoed, and streams the client ended.
struct Tally {
    echoed: AtomicUsize,
    ended: AtomicUsize,
}

impl Tally {
    const fn new() -> Self {
        Self { echoed: AtomicUsize::new(0), ended: AtomicUsize::new(0) }
    }
}

/// Waits (polling, with no call on the library) until `done`, `limit` at most.
fn wait_until(limit: Duration, done: impl Fn() -> bool) {
    let t0 = Instant::now();
    while !done() && t0.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A server driven in calls on a thread of its own that counts each connection's bytes
/// (`tally`) and echoes them, each answer `delay` after its request (`None`: reads only); its
/// address and public key.
fn echo_server(tally: &'static Tally, delay: Option<Duration>) -> (CString, CString) {
    let (server, addr, key) = server_endpoint(false);
    // SAFETY: valid out pointers, buffers of their sizes.
    unsafe {
        std::thread::spawn(move || loop {
            let mut conn = 0u64;
            if mpu_accept(server, -1, &mut conn) != MPU_OK {
                return;
            }
            // One connection at a time: its reads run the endpoint, the accept's too.
            let mut b = [0u8; 4096];
            loop {
                let n = mpu_read(conn, b.as_mut_ptr(), b.len(), -1);
                if n <= 0 {
                    if n == 0 {
                        tally.ended.fetch_add(1, Ordering::SeqCst);
                    }
                    break;
                }
                tally.echoed.fetch_add(n as usize, Ordering::SeqCst);
                if let Some(d) = delay {
                    std::thread::sleep(d);
                    assert_eq!(mpu_write(conn, b.as_ptr(), n as usize, -1), n);
                }
            }
            mpu_conn_free(conn);
        });
    }
    (addr, key)
}

/// A server endpoint driven in calls on loopback (`tickets`: it issues resumption tickets and
/// takes 0-RTT data): its handle, address and public key.
fn server_endpoint(tickets: bool) -> (u64, CString, CString) {
    let seed = [5u8; 32];
    let any = CString::new("127.0.0.1:0").unwrap();
    // SAFETY: valid out pointers, NUL-terminated strings, buffers of their sizes.
    unsafe {
        let o = driven_options(MPU_PRESET_SERVER);
        assert_eq!(mpu_options_identity_seed(o, seed.as_ptr()), MPU_OK);
        if tickets {
            assert_eq!(mpu_options_issue_tickets(o, 1), MPU_OK);
        }
        let mut key = [0 as std::ffi::c_char; 64];
        assert_eq!(mpu_options_public_key(o, key.as_mut_ptr(), key.len()), MPU_OK);
        let server = out(|p| mpu_server_new(o, any.as_ptr(), p));
        mpu_options_free(o);
        let mut addr = [0 as std::ffi::c_char; 64];
        assert_eq!(mpu_endpoint_local_addr(server, addr.as_mut_ptr(), addr.len()), MPU_OK);
        let c = |b: &[std::ffi::c_char]| std::ffi::CStr::from_ptr(b.as_ptr()).to_owned();
        (server, c(&addr), c(&key))
    }
}

/// A client endpoint driven in calls, connected to `server`: (options, endpoint, connection).
fn client(server: &(CString, CString)) -> (u64, u64, u64) {
    // SAFETY: valid out pointers and NUL-terminated strings.
    unsafe {
        let o = driven_options(MPU_PRESET_DEFAULT);
        assert_eq!(mpu_options_server_key(o, server.1.as_ptr()), MPU_OK);
        let ep = out(|p| mpu_client_new(o, p));
        let conn = out(|p| mpu_connect(ep, server.0.as_ptr(), 5000, p));
        (o, ep, conn)
    }
}

/// A client driven in calls, connected to a new echo server (see `echo_server`).
fn connected(tally: &'static Tally, delay: Option<Duration>) -> (u64, u64, u64) {
    client(&echo_server(tally, delay))
}

fn free((o, ep, conn): (u64, u64, u64)) {
    mpu_conn_free(conn);
    mpu_endpoint_free(ep);
    mpu_options_free(o);
}

/// The names of this process's threads.
fn threads() -> Vec<String> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .map(|n| n.trim().to_string())
        .collect()
}

/// Reads exactly `want` bytes with blocking calls.
fn read_exact(conn: u64, want: usize) -> Vec<u8> {
    let mut got = vec![0u8; want];
    let mut n = 0;
    while n < want {
        // SAFETY: `want - n` writable bytes.
        let r = unsafe { mpu_read(conn, got.as_mut_ptr().add(n), want - n, 5000) };
        assert!(r > 0, "read {r} after {n} of {want}");
        n += r as usize;
    }
    got
}

#[test]
fn requests_are_answered_with_no_driver_thread() {
    static TALLY: Tally = Tally::new();
    let c = connected(&TALLY, Some(Duration::ZERO));
    for k in 0..20u8 {
        let req = [k; 100];
        // SAFETY: 100 readable bytes.
        assert_eq!(unsafe { mpu_write(c.2, req.as_ptr(), req.len(), 5000) }, 100);
        assert_eq!(read_exact(c.2, 100), req);
    }
    let names = threads();
    assert!(
        !names.iter().any(|n| n.starts_with("mpudp-driver")),
        "endpoints driven in calls started a driver thread: {names:?}"
    );
    free(c);
}

#[test]
fn a_write_leaves_before_its_call_returns() {
    static TALLY: Tally = Tally::new();
    let c = connected(&TALLY, Some(Duration::ZERO));
    // Blocking and with timeout 0: after each, the client makes no call at all, yet the server
    // gets the bytes (they left inside the write).
    for (k, timeout_ms) in [5000, 0].into_iter().enumerate() {
        let req = [7u8; 300];
        // SAFETY: 300 readable bytes.
        assert_eq!(unsafe { mpu_write(c.2, req.as_ptr(), req.len(), timeout_ms) }, 300);
        wait_until(Duration::from_secs(2), || TALLY.echoed.load(Ordering::SeqCst) >= 300 * (k + 1));
        assert_eq!(TALLY.echoed.load(Ordering::SeqCst), 300 * (k + 1), "write with timeout {timeout_ms} stayed behind");
        read_exact(c.2, 300);
    }
    free(c);
}

#[test]
fn calls_that_would_block_take_in_what_arrived_and_so_does_drive() {
    static TALLY: Tally = Tally::new();
    let c = connected(&TALLY, Some(Duration::from_millis(20)));
    let req = [3u8; 100];
    // A call with timeout 0 first takes in what arrived: with the answer in the socket since
    // well before (nobody ran the endpoint meanwhile), one read gets it.
    // SAFETY: 100 readable bytes.
    assert_eq!(unsafe { mpu_write(c.2, req.as_ptr(), req.len(), 0) }, 100);
    std::thread::sleep(Duration::from_millis(400));
    let mut b = [0u8; 100];
    // SAFETY: 100 writable bytes.
    let n = unsafe { mpu_read(c.2, b.as_mut_ptr(), b.len(), 0) };
    assert!(n > 0, "a read with timeout 0 took nothing in: {n}");
    if (n as usize) < req.len() {
        read_exact(c.2, req.len() - n as usize);
    }
    // Between calls nothing moves: the answer (20 ms after the request, once the write has
    // returned) waits in the socket; mpu_endpoint_drive takes it in.
    let received = || {
        let mut s = MpuSubflowStats::default();
        // SAFETY: a valid out pointer.
        assert_eq!(unsafe { mpu_subflow_stats(c.2, 0, &mut s) }, MPU_OK);
        s.bytes_received
    };
    // SAFETY: 100 readable bytes.
    assert_eq!(unsafe { mpu_write(c.2, req.as_ptr(), req.len(), 0) }, 100);
    let before = received();
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(received(), before, "the endpoint moved with no call running");
    assert_eq!(mpu_endpoint_drive(c.1, 200), MPU_OK);
    assert!(received() >= before + 100, "drive took in nothing: {} bytes received, {before} before", received());
    assert_eq!(mpu_endpoint_drive(c.1, -1), MPU_ERR_INVALID);
    free(c);
}

#[test]
fn the_last_handle_may_be_freed_on_the_librarys_thread() {
    static TALLY: Tally = Tally::new();
    static CONN: AtomicU64 = AtomicU64::new(0);
    static FREED: AtomicI32 = AtomicI32::new(1);
    unsafe extern "C" fn on_event(_ctx: *mut c_void, _e: *const MpuEvent) {
        let c = CONN.swap(0, Ordering::SeqCst);
        if c != 0 {
            // The connection holds the endpoint's runtime last: it goes with this call, on the
            // library's own thread (inside its runtime).
            FREED.store(mpu_conn_free(c), Ordering::SeqCst);
        }
    }
    let server = echo_server(&TALLY, Some(Duration::ZERO));
    let (o, ep, conn) = client(&server);
    mpu_endpoint_free(ep);
    mpu_options_free(o);
    CONN.store(conn, Ordering::SeqCst);
    // SAFETY: a callback that may run on another thread; no context.
    assert_eq!(unsafe { mpu_set_event_callback(conn, Some(on_event), std::ptr::null_mut()) }, MPU_OK);
    wait_until(Duration::from_secs(5), || FREED.load(Ordering::SeqCst) != 1);
    assert_eq!(FREED.load(Ordering::SeqCst), MPU_OK, "freeing the last handle in a callback");
}

#[test]
fn a_reader_and_a_writer_on_two_threads_share_the_endpoint() {
    static TALLY: Tally = Tally::new();
    let c = connected(&TALLY, Some(Duration::ZERO));
    let conn = c.2;
    // The reader waits in a blocking read (it runs the endpoint); the writer's calls find the
    // endpoint taken and hand their work to it.
    let reader = std::thread::spawn(move || read_exact(conn, 1000));
    let mut sent = Vec::new();
    for k in 0..10u8 {
        let req = [k; 100];
        // SAFETY: 100 readable bytes.
        assert_eq!(unsafe { mpu_write(conn, req.as_ptr(), req.len(), 5000) }, 100);
        sent.extend_from_slice(&req);
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(reader.join().unwrap(), sent);
    free(c);
}

#[test]
fn a_shutdown_leaves_before_its_call_returns() {
    static TALLY: Tally = Tally::new();
    let c = connected(&TALLY, Some(Duration::ZERO));
    assert_eq!(mpu_shutdown(c.2), MPU_OK);
    // No call after it: the DATA_FIN left inside it.
    wait_until(Duration::from_secs(2), || TALLY.ended.load(Ordering::SeqCst) > 0);
    assert_eq!(TALLY.ended.load(Ordering::SeqCst), 1, "the server never saw the stream end");
    free(c);
}

#[test]
fn connections_freed_at_once_still_close_gracefully() {
    static TALLY: Tally = Tally::new();
    let c = connected(&TALLY, None);
    // More than one flight can carry: most of it is still to send when the handles go.
    let data = vec![1u8; 2_000_000];
    let mut done = 0;
    while done < data.len() {
        // SAFETY: the rest of `data`, readable.
        let n = unsafe { mpu_write(c.2, data.as_ptr().add(done), data.len() - done, 5000) };
        assert!(n > 0, "write {n}");
        done += n as usize;
    }
    free(c);
    wait_until(Duration::from_secs(10), || TALLY.ended.load(Ordering::SeqCst) > 0);
    assert_eq!(TALLY.echoed.load(Ordering::SeqCst), data.len(), "bytes the server read");
    assert_eq!(TALLY.ended.load(Ordering::SeqCst), 1, "the server never saw the stream end");
}

/// Resumption on endpoints driven in calls: a client saves the ticket its first connection
/// got, and the next client endpoint (as after an app's restart) starts from it and sends its
/// request with the first packet (0-RTT); the server tells what it saw.
#[test]
fn a_client_driven_in_calls_resumes_with_its_request_early() {
    const REQUEST: &[u8] = b"GET /now!";
    let (server, addr, key) = server_endpoint(true);
    // SAFETY (whole test): valid out pointers, buffers of their sizes.
    let serving = unsafe {
        // Each connection: the request, then [resumed, early bytes] back.
        std::thread::spawn(move || {
            for _ in 0..2 {
                let conn = out(|p| mpu_accept(server, 10_000, p));
                read_exact(conn, REQUEST.len());
                let (mut resumed, mut early) = (0u32, 0u64);
                assert_eq!(mpu_conn_resumption(conn, &mut resumed, &mut early), MPU_OK);
                let answer = [resumed as u8, early as u8];
                assert_eq!(mpu_write(conn, answer.as_ptr(), 2, 5000), 2);
                assert_eq!(mpu_shutdown(conn), MPU_OK);
                let mut why = 0u32;
                assert_eq!(mpu_wait_closed(conn, 5000, &mut why), MPU_OK);
                mpu_conn_free(conn);
            }
            mpu_endpoint_free(server);
        })
    };
    let run = |saved: &[u8]| -> ([u8; 2], Vec<u8>) {
        // SAFETY: as above.
        unsafe {
            let o = driven_options(MPU_PRESET_DEFAULT);
            assert_eq!(mpu_options_server_key(o, key.as_ptr()), MPU_OK);
            assert_eq!(mpu_options_tickets(o, saved.as_ptr(), saved.len()), MPU_OK);
            let ep = out(|p| mpu_client_new(o, p));
            mpu_options_free(o);
            let conn = out(|p| mpu_connect_early(ep, addr.as_ptr(), REQUEST.as_ptr(), REQUEST.len(), 5000, p));
            let got = read_exact(conn, 2);
            // The ticket comes with the connection's first packets: the endpoint is driven
            // until it has one (an empty store is 3 bytes).
            let mut tickets = vec![0u8; 4096];
            let mut len = 0u64;
            for _ in 0..100 {
                assert_eq!(mpu_endpoint_tickets(ep, tickets.as_mut_ptr(), tickets.len(), &mut len), MPU_OK);
                if len > 3 {
                    break;
                }
                assert_eq!(mpu_endpoint_drive(ep, 20), MPU_OK);
            }
            tickets.truncate(len as usize);
            assert_eq!(mpu_shutdown(conn), MPU_OK);
            let mut why = 0u32;
            assert_eq!(mpu_wait_closed(conn, 5000, &mut why), MPU_OK);
            mpu_conn_free(conn);
            mpu_endpoint_free(ep);
            ([got[0], got[1]], tickets)
        }
    };
    let (first, saved) = run(&[]);
    assert_eq!(first, [0, 0], "the first connection is a fresh one");
    assert!(saved.len() > 3, "no ticket to save");
    let (second, _) = run(&saved);
    assert_eq!(second, [1, REQUEST.len() as u8], "resumed, the request early");
    serving.join().unwrap();
}
