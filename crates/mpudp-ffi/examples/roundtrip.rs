//! The cost of the C ABI: a small request (100 bytes) and its answer (100 bytes) over loopback,
//! one at a time, four ways against the same echo server, in one run, interleaved in blocks:
//! - the Rust API (`MpStream`) on a current-thread runtime, where the connection's driver runs
//!   on the caller's thread: no thread hand-off at all;
//! - the Rust API from a task on a multi-thread runtime (as under `#[tokio::main]`), where the
//!   driver runs on a driver thread of its own, as the C library's does;
//! - the C functions (`mpu_write`, `mpu_read`) with a timeout, from a plain thread;
//! - the C functions with timeout 0 and, between them, a `poll` of the readiness descriptor,
//!   as an app's own loop waits (Android's Looper and iOS's `DispatchSource` do the same);
//! - the C functions with a timeout on an endpoint driven in calls
//!   (`mpu_options_drive_in_calls`): its driver runs on the calling thread while it waits, as
//!   the Rust API's does on a current-thread runtime.
//!
//! Prints each way's median, p90 and p99, its ratio to the first (over all rounds, and per
//! block), and what a non-blocking read with nothing ready costs (`mpu_read` with timeout 0).
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
/// The ways compared.
const WAYS: usize = 5;

/// One way of making the exchange: `n` rounds, their times pushed.
type Way<'a> = &'a mut dyn FnMut(usize, &mut Vec<Duration>);

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

    // Each way runs in blocks of BLOCK rounds, the four interleaved (Rust, Rust on a
    // multi-thread runtime, C blocking, C readiness, Rust, ...), so that the machine's drift
    // over the run (other processes, CPU frequency) falls on all alike; each block's median
    // ratio is reported as well.
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
    // The same from an endpoint driven in calls.
    let (mut dopts, mut dep, mut dconn) = (0u64, 0u64, 0u64);
    // SAFETY: valid out pointers and NUL-terminated strings.
    unsafe {
        assert_eq!(mpu_options_new(MPU_PRESET_DEFAULT, &mut dopts), MPU_OK);
        assert_eq!(mpu_options_server_key(dopts, ckey.as_ptr()), MPU_OK);
        assert_eq!(mpu_options_add_address(dopts, a.as_ptr(), label.as_ptr(), MPU_IFACE_WIRED, 0), MPU_OK);
        assert_eq!(mpu_options_drive_in_calls(dopts, 1), MPU_OK);
        assert_eq!(mpu_client_new(dopts, &mut dep), MPU_OK);
        assert_eq!(mpu_connect(dep, server.as_ptr(), 5000, &mut dconn), MPU_OK);
    }
    let exchange = |conn: u64, n: usize, out: &mut Vec<Duration>| {
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
    let c_block = |n: usize, out: &mut Vec<Duration>| exchange(conn, n, out);
    let driven_block = |n: usize, out: &mut Vec<Duration>| exchange(dconn, n, out);
    // The same exchange as an app's own loop makes it (readiness): calls with timeout 0,
    // and between them a wait on the connection's readiness descriptor (here `poll`;
    // Android's MessageQueue or iOS's DispatchSource in an app). The app does not read it: the
    // next call drains it. An earlier version of this example waited in a blocking `read` of
    // the descriptor, a thread parked on it, which flattered this way by about 30 us (a socket
    // pair then: 1.03-1.09x the current-thread round trip against 1.40-1.51x with `poll`).
    let mut fd = 0;
    // SAFETY: a valid out pointer.
    assert_eq!(unsafe { mpu_conn_readiness_fd(conn, &mut fd) }, MPU_OK);
    let ready_block = |n: usize, out: &mut Vec<Duration>| {
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
                        // The app's loop waits until the descriptor is readable (the next call
                        // with timeout 0 drains it), as Android's Looper and iOS's
                        // DispatchSource do.
                        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
                        libc::poll(&mut p, 1, -1);
                        continue;
                    }
                    assert!(n > 0, "read {n}");
                    got += n as usize;
                }
            }
            out.push(t0.elapsed());
        }
    };

    // The Rust API as a `#[tokio::main]` app uses it: a task on a multi-thread runtime, the
    // connection's driver on a driver thread of its own, as the C ABI's is.
    let mt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let m = mt.block_on(async {
        let opts = Options::new().server_key(key).interface(Interface::unbound("127.0.0.1:0".parse().unwrap()));
        let ep = MpEndpoint::client(opts).unwrap();
        let s = ep.connect(addr).await.unwrap();
        (ep, s)
    });
    let m = std::sync::Arc::new(tokio::sync::Mutex::new(m));
    let mt_block = |n: usize, out: &mut Vec<Duration>| {
        let m = m.clone();
        let got = mt
            .block_on(mt.spawn(async move {
                let mut g = m.lock().await;
                let (req, mut resp, mut v) = ([1u8; SIZE], [0u8; SIZE], Vec::with_capacity(n));
                for _ in 0..n {
                    let t0 = Instant::now();
                    g.1.write_all(&req).await.unwrap();
                    g.1.read_exact(&mut resp).await.unwrap();
                    v.push(t0.elapsed());
                }
                v
            }))
            .unwrap();
        out.extend(got);
    };

    // A warm-up block of each, not counted; then the blocks, each way's median against the
    // Rust API's (current-thread) in the same block.
    let mut ways: [Way<'_>; WAYS] =
        [&mut rust_block, &mut { mt_block }, &mut { c_block }, &mut { ready_block }, &mut { driven_block }];
    let mut scratch = Vec::new();
    for w in ways.iter_mut() {
        w(200, &mut scratch);
    }
    let mut all: [Vec<Duration>; WAYS] = Default::default();
    let mut ratios: [Vec<f64>; WAYS] = Default::default();
    for _ in 0..blocks {
        let mut got: [Vec<Duration>; WAYS] = Default::default();
        for (w, g) in ways.iter_mut().zip(got.iter_mut()) {
            w(BLOCK, g);
        }
        let base = median(got[0].clone());
        for k in 0..WAYS {
            ratios[k].push(median(got[k].clone()) / base);
            all[k].append(&mut got[k]);
        }
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
    for (c, e, o) in [(conn, ep, opts), (dconn, dep, dopts)] {
        mpu_conn_free(c);
        mpu_endpoint_free(e);
        mpu_options_free(o);
    }
    let rounds = blocks * BLOCK;

    let names = [
        "Rust API (MpStream, a current-thread runtime: the driver on the caller's thread)",
        "Rust API (MpStream, a task on a multi-thread runtime: the driver on its own thread)",
        "C ABI (mpu_write + mpu_read, blocking, from an app thread)",
        "C ABI, readiness: calls with timeout 0, between them a poll of the readiness descriptor",
        "C ABI (mpu_write + mpu_read, blocking) on an endpoint driven in calls (mpu_options_drive_in_calls)",
    ];
    println!("| {SIZE}-byte request and answer over loopback, {rounds} rounds | median (us) | p90 (us) | p99 (us) | / Rust API (all rounds) | / Rust API (per block: median, min, max) |");
    println!("|---|---|---|---|---|---|");
    let base = median(all[0].clone());
    for k in 0..WAYS {
        let m = median(all[k].clone());
        let mut r = ratios[k].clone();
        r.sort_by(f64::total_cmp);
        let (lo, mid, hi) = (r[0], r[r.len() / 2], r[r.len() - 1]);
        println!(
            "| {} | {m:.1} | {:.1} | {:.1} | {:.2}x ({:+.1} us) | {mid:.2}x ({lo:.2}, {hi:.2}) |",
            names[k],
            pct(&all[k], 0.9),
            pct(&all[k], 0.99),
            m / base,
            m - base
        );
    }
    println!(
        "| C ABI, mpu_read with timeout 0 and nothing ready (MPU_ERR_WOULD_BLOCK) | {:.1} | {:.1} | {:.1} | | |",
        median(try_once.clone()),
        pct(&try_once, 0.9),
        pct(&try_once, 0.99)
    );
    println!(
        "Readiness / Rust API on a multi-thread runtime (medians): {:.2}x",
        median(all[3].clone()) / median(all[1].clone())
    );
}
