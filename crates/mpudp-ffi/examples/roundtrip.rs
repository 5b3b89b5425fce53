//! The cost of the C ABI: a small request (100 bytes) and its answer (100 bytes) over loopback,
//! one at a time, through the Rust API (`MpStream` on a tokio runtime) and through the C
//! functions (`mpu_write`, `mpu_read`) from a plain thread, as a Kotlin or Swift app calls
//! them; the same echo server for both, in one run, the ways interleaved in blocks. Prints the
//! medians and their ratios (over all rounds, and per block), and
//! what a non-blocking read with nothing ready costs (`mpu_read` with timeout 0).
//!
//! Run: `cargo run --release -p mpudp-ffi --example roundtrip [ROUNDS]`
#![allow(clippy::unwrap_used)]
#![allow(unsafe_code)] // Calls the C functions, as an app does.

use mpudp::{Interface, MpEndpoint, MpListener, Options, ServerIdentity};
use mpudp_ffi::*;
use std::ffi::CString;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SIZE: usize = 100;
/// Rounds of one way before the next way runs.
const BLOCK: usize = 250;

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e6
}

fn pct(v: &[Duration], p: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort();
    v[((v.len() as f64 * p) as usize).min(v.len() - 1)].as_secs_f64() * 1e6
}

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(5000);
    let id = ServerIdentity::from_seed(&[7; 32]).unwrap();
    let key = id.public_key();
    // The echo server, on a runtime of its own.
    let server_rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let addr = server_rt.block_on(async {
        let l = MpListener::bind("127.0.0.1:0".parse().unwrap(), Options::server().identity(id)).unwrap();
        let addr = l.local_addr();
        tokio::spawn(async move {
            while let Ok((s, _)) = l.accept().await {
                tokio::spawn(async move {
                    let (mut r, mut w) = s.into_split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        addr
    });

    // Each way runs in blocks of BLOCK rounds, the three interleaved (Rust, C blocking, C
    // readiness, Rust, ...), so that the machine's drift over the run (other processes, CPU
    // frequency) falls on all three alike; each block's median ratio is reported as well.
    let blocks = rounds.div_ceil(BLOCK).max(1);

    // The Rust API: one client task on a current-thread runtime.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let mut s = rt.block_on(async {
        let opts = Options::new().server_key(key).interface(Interface::unbound("127.0.0.1:0".parse().unwrap()));
        let ep = MpEndpoint::client(opts).unwrap();
        let s = ep.connect(addr).await.unwrap();
        (ep, s)
    });
    let mut rust_block = |n: usize, out: &mut Vec<Duration>| {
        rt.block_on(async {
            let (req, mut resp) = ([1u8; SIZE], [0u8; SIZE]);
            for _ in 0..n {
                let t0 = Instant::now();
                s.1.write_all(&req).await.unwrap();
                s.1.read_exact(&mut resp).await.unwrap();
                out.push(t0.elapsed());
            }
        })
    };

    // The C ABI, from this (non-runtime) thread.
    let (mut opts, mut ep, mut conn) = (0u64, 0u64, 0u64);
    let ckey = CString::new(key.to_string()).unwrap();
    let a = CString::new("127.0.0.1:0").unwrap();
    let label = CString::new("lo").unwrap();
    let server = CString::new(addr.to_string()).unwrap();
    // SAFETY: valid out pointers and NUL-terminated strings.
    unsafe {
        assert_eq!(mpu_options_new(MPU_PRESET_DEFAULT, &mut opts), MPU_OK);
        assert_eq!(mpu_options_server_key(opts, ckey.as_ptr()), MPU_OK);
        assert_eq!(mpu_options_add_address(opts, a.as_ptr(), label.as_ptr(), MPU_IFACE_WIRED, 0), MPU_OK);
        assert_eq!(mpu_client_new(opts, &mut ep), MPU_OK);
        assert_eq!(mpu_connect(ep, server.as_ptr(), 5000, &mut conn), MPU_OK);
    }
    let c_block = |n: usize, out: &mut Vec<Duration>| {
        let (req, mut resp) = ([1u8; SIZE], [0u8; SIZE]);
        for _ in 0..n {
            let t0 = Instant::now();
            // SAFETY: buffers of SIZE bytes.
            unsafe {
                assert_eq!(mpu_write(conn, req.as_ptr(), SIZE, 5000), SIZE as isize);
                let mut got = 0;
                while got < SIZE {
                    let n = mpu_read(conn, resp.as_mut_ptr().add(got), SIZE - got, 5000);
                    assert!(n > 0, "read {n}");
                    got += n as usize;
                }
            }
            out.push(t0.elapsed());
        }
    };
    // The same exchange as an app's own loop makes it (readiness): calls with timeout 0,
    // and between them a wait on the connection's readiness descriptor (here a blocking
    // read of it; Android's MessageQueue or iOS's DispatchSource in an app).
    let mut fd = 0;
    // SAFETY: a valid out pointer.
    assert_eq!(unsafe { mpu_conn_readiness_fd(conn, &mut fd) }, MPU_OK);
    // SAFETY: the library's descriptor, borrowed (never closed here).
    let mut wait = std::mem::ManuallyDrop::new(unsafe {
        <std::os::unix::net::UnixStream as std::os::fd::FromRawFd>::from_raw_fd(fd)
    });
    wait.set_nonblocking(false).unwrap();
    let mut ready_block = |n: usize, out: &mut Vec<Duration>| {
        let (req, mut resp) = ([1u8; SIZE], [0u8; SIZE]);
        for _ in 0..n {
            let t0 = Instant::now();
            // SAFETY: buffers of SIZE bytes.
            unsafe {
                assert_eq!(mpu_write(conn, req.as_ptr(), SIZE, 0), SIZE as isize);
                let mut got = 0;
                while got < SIZE {
                    let n = mpu_read(conn, resp.as_mut_ptr().add(got), SIZE - got, 0);
                    if n == MPU_ERR_WOULD_BLOCK as isize {
                        let mut b = [0u8; 64];
                        let _ = std::io::Read::read(&mut *wait, &mut b);
                        continue;
                    }
                    assert!(n > 0, "read {n}");
                    got += n as usize;
                }
            }
            out.push(t0.elapsed());
        }
    };

    // A warm-up block of each, not counted.
    let mut scratch = Vec::new();
    rust_block(200, &mut scratch);
    c_block(200, &mut scratch);
    ready_block(200, &mut scratch);
    let (mut rust, mut c, mut ready) = (Vec::new(), Vec::new(), Vec::new());
    let (mut c_ratios, mut ready_ratios) = (Vec::new(), Vec::new());
    for _ in 0..blocks {
        let (mut r, mut b, mut q) = (Vec::new(), Vec::new(), Vec::new());
        rust_block(BLOCK, &mut r);
        c_block(BLOCK, &mut b);
        ready_block(BLOCK, &mut q);
        let rm = median(r.clone());
        c_ratios.push(median(b.clone()) / rm);
        ready_ratios.push(median(q.clone()) / rm);
        rust.extend(r);
        c.extend(b);
        ready.extend(q);
    }

    // A non-blocking read with nothing ready (timeout 0), as an app's poll loop makes it.
    let mut try_once = Vec::with_capacity(rounds);
    let mut b = [0u8; SIZE];
    for k in 0..rounds + 200 {
        let t0 = Instant::now();
        // SAFETY: a buffer of SIZE bytes.
        let n = unsafe { mpu_read(conn, b.as_mut_ptr(), SIZE, 0) };
        assert_eq!(n, MPU_ERR_WOULD_BLOCK as isize);
        if k >= 200 {
            try_once.push(t0.elapsed());
        }
    }
    mpu_conn_free(conn);
    mpu_endpoint_free(ep);
    mpu_options_free(opts);
    let rounds = blocks * BLOCK;

    let (r, f) = (median(rust.clone()), median(c.clone()));
    println!("| {SIZE}-byte request and answer over loopback, {rounds} rounds | median (us) | p90 (us) | p99 (us) |");
    println!("|---|---|---|---|");
    println!(
        "| Rust API (MpStream, current-thread runtime) | {r:.1} | {:.1} | {:.1} |",
        pct(&rust, 0.9),
        pct(&rust, 0.99)
    );
    println!(
        "| C ABI (mpu_write + mpu_read, blocking, from an app thread) | {f:.1} | {:.1} | {:.1} |",
        pct(&c, 0.9),
        pct(&c, 0.99)
    );
    let q = median(ready.clone());
    println!(
        "| C ABI, readiness: calls with timeout 0, a wait on the readiness descriptor | {q:.1} | {:.1} | {:.1} |",
        pct(&ready, 0.9),
        pct(&ready, 0.99)
    );
    println!(
        "| C ABI, mpu_read with timeout 0 and nothing ready (MPU_ERR_WOULD_BLOCK) | {:.1} | {:.1} | {:.1} |",
        median(try_once.clone()),
        pct(&try_once, 0.9),
        pct(&try_once, 0.99)
    );
    println!(
        "C ABI / Rust API (medians): blocking {:.2}x ({:+.1} us), readiness {:.2}x ({:+.1} us)",
        f / r,
        f - r,
        q / r,
        q - r
    );
    let ratio = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[0], v[v.len() / 2], v[v.len() - 1])
    };
    let ((c0, c1, c2), (q0, q1, q2)) = (ratio(c_ratios), ratio(ready_ratios));
    println!(
        "Per block of {BLOCK} ({blocks} blocks, interleaved): blocking {c1:.2}x (min {c0:.2}, max {c2:.2}), readiness {q1:.2}x (min {q0:.2}, max {q2:.2})"
    );
}
