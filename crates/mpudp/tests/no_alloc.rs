//! A steady bulk transfer through the driver allocates nothing per packet, written through
//! `AsyncWrite` or handed over with `write_chunk`: every allocation on
//! the thread that runs everything (a current-thread runtime with both endpoints' drivers, the
//! sockets' I/O, the protocol, the application's reads and writes) is counted while 16 MiB flow over two loopback paths, after a warm-up
//! that lets buffers reach their working size (the receiver's its largest: it reads only once
//! the sender has filled the receive window).
//!
//! `MPUDP_ALLOC_TRACE=1` prints a backtrace of the first allocations in the measured window.
#![allow(clippy::unwrap_used)]
#![allow(unsafe_code)] // a global allocator is an unsafe trait; this one only counts

#[macro_use]
mod alloc_probe;

use mpudp::{Interface, MpListener, MpStream, Options};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicU64 = AtomicU64::new(0);
static TRACED: AtomicU64 = AtomicU64::new(0);
/// Read from `MPUDP_ALLOC_TRACE` before counting starts: reading the environment allocates, so
/// doing it inside the allocator would recurse.
static TRACE: AtomicBool = AtomicBool::new(false);
static READS_MEASURED: AtomicU64 = AtomicU64::new(0);
/// Sizes of the first allocations counted, for the failure message.
static SIZES: [AtomicU64; 8] = [const { AtomicU64::new(0) }; 8];

thread_local! {
    static IN_TRACE: Cell<bool> = const { Cell::new(false) };
    /// This thread runs the runtime (both drivers and the application); the test harness's
    /// own threads are not measured.
    static MEASURED: Cell<bool> = const { Cell::new(false) };
}

fn note(size: usize) {
    if !COUNTING.load(Ordering::Relaxed) || !MEASURED.with(|m| m.get()) || IN_TRACE.with(|t| t.get()) {
        return;
    }
    let k = ALLOCS.fetch_add(1, Ordering::Relaxed) as usize;
    if let Some(slot) = SIZES.get(k) {
        slot.store(size as u64, Ordering::Relaxed);
    }
    if TRACE.load(Ordering::Relaxed) && TRACED.fetch_add(1, Ordering::Relaxed) < 5 {
        IN_TRACE.with(|t| {
            if !t.replace(true) {
                eprintln!("allocation:\n{}", std::backtrace::Backtrace::force_capture());
                t.set(false);
            }
        });
    }
}

noting_allocator!(note);

/// The application's chunk for `write_chunk`: a static buffer, so that handing it over again
/// and again allocates nothing (as clones of a shared `Bytes` do not).
static CHUNK: [u8; 64 << 10] = [0x42; 64 << 10];

/// With `AsyncWrite` and `AsyncRead` (copies into the send buffer and out of the receive
/// buffer), then with `write_chunk` and `read_with` (the application's buffers kept by
/// reference, the received bytes read in place): one after the other, as the counters are the
/// process's.
#[test]
fn steady_bulk_transfer_allocates_nothing_per_packet() {
    for chunked in [false, true] {
        // A thread of its own, with room on the stack for a backtrace taken inside the allocator.
        std::thread::Builder::new().stack_size(64 << 20).spawn(move || measure(chunked)).unwrap().join().unwrap();
    }
}

fn measure(chunked: bool) {
    ALLOCS.store(0, Ordering::Relaxed);
    READS_MEASURED.store(0, Ordering::Relaxed);
    TRACE.store(std::env::var_os("MPUDP_ALLOC_TRACE").is_some(), Ordering::Relaxed);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    MEASURED.with(|m| m.set(true));
    rt.block_on(async {
        let id = mpudp::ServerIdentity::from_seed(&[7; 32]).unwrap();
        let key = id.public_key();
        // The receive window stays as it starts: its growth reallocates the ring, a step of
        // the warm-up that a loaded machine's slower reads could put in the measured part.
        let mut so = Options::new().identity(id);
        so.config_mut().transport.max_recv_window = so.config_mut().transport.recv_window;
        let l = MpListener::bind("127.0.0.1:0".parse().unwrap(), so).unwrap();
        let addr = l.local_addr();
        const WARM: usize = 16 << 20;
        const MEASURED: usize = 16 << 20;
        let server = tokio::spawn(async move {
            let (mut s, _) = l.accept().await.unwrap();
            // The reader starts late, so that the sender fills the whole receive window first:
            // the receive ring grows to the window's size, its largest, in the warm-up. Without
            // this, a reader that once lags further behind in the measured part than it ever
            // did before (qemu's timing) made the ring double there.
            tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            let mut buf = vec![0u8; 64 << 10];
            let mut got = 0usize;
            loop {
                // Chunked: read in place too (`read_with`).
                let n = if chunked {
                    s.read_with(buf.len(), |b| b.len()).await.unwrap().unwrap_or(0)
                } else {
                    s.read(&mut buf).await.unwrap()
                };
                if n == 0 {
                    break;
                }
                got += n;
                if COUNTING.load(Ordering::Relaxed) {
                    READS_MEASURED.fetch_add(1, Ordering::Relaxed);
                }
                if got >= WARM && !COUNTING.load(Ordering::Relaxed) && got < WARM + MEASURED {
                    COUNTING.store(true, Ordering::Relaxed);
                }
                if got >= WARM + MEASURED {
                    COUNTING.store(false, Ordering::Relaxed);
                }
            }
            (got, s.paths())
        });
        let opts = Options::new()
            .server_key(key)
            .interface(Interface::unbound("127.0.0.1:0".parse().unwrap()))
            .interface(Interface::unbound("127.0.0.2:0".parse().unwrap()));
        let mut c = MpStream::connect(addr, opts).await.unwrap();
        let chunk = bytes::Bytes::from_static(&CHUNK);
        let mut sent = 0;
        while sent < WARM + MEASURED + (4 << 20) {
            if chunked {
                c.write_chunk(chunk.clone()).await.unwrap();
            } else {
                c.write_all(&chunk).await.unwrap();
            }
            sent += chunk.len();
        }
        c.shutdown().await.unwrap();
        let (got, paths) = server.await.unwrap();
        assert_eq!(got, sent);
        let packets: u64 = paths.iter().map(|p| p.io.datagrams_received).sum();
        let allocs = ALLOCS.load(Ordering::Relaxed);
        println!(
            "{}: {allocs} allocations while {} MiB moved ({packets} datagrams received by the server in all)",
            if chunked { "write_chunk" } else { "AsyncWrite" },
            MEASURED >> 20
        );
        assert!(READS_MEASURED.load(Ordering::Relaxed) > 100, "the measured window saw the transfer");
        let sizes: Vec<u64> = SIZES.iter().map(|s| s.load(Ordering::Relaxed)).take(allocs as usize).collect();
        assert_eq!(
            allocs, 0,
            "allocations in the steady state, of {sizes:?} bytes (run with MPUDP_ALLOC_TRACE=1 to see where)"
        );
    });
}
