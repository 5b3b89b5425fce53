//! What idle connections cost (issue 19): N established connections
//! between a client and a server endpoint, all idle; then the driver's work per wake-up
//! (`poll_timeout`, `handle_timeout`, `poll_transmit` until empty, `poll_event` until empty),
//! 1 ms of virtual time apart, with nothing due (medians of 7 batches), and the resident memory
//! they added to this process (both ends), per connection. As one table.
//!
//! Run: `cargo bench -p mp-benches --bench idle` (under `cargo test`, a smoke run).

#![allow(unsafe_code)] // a global allocator is an unsafe trait; this one only counts

use mpcore::{Config, Endpoint, PathId, ServerIdentity, Time};
use std::time::Instant;

mod counting;
use counting::{heap, on};

#[global_allocator]
static GLOBAL: counting::Counting = counting::Counting;

mod common;
mod procfs;
use common::{client_addr, endpoint, server_addr};

/// Moves every datagram each way until neither sends, at `now` (the server's answers after
/// each datagram of the client, as a network would interleave them).
fn pump(c: &mut Endpoint, s: &mut Endpoint, now: Time, buf: &mut [u8]) {
    const C: usize = 0;
    const S: usize = 1;
    loop {
        let mut moved = false;
        while let Some(len) = on(C, || c.poll_transmit(now, buf)).map(|t| t.len) {
            let d = buf[..len].to_vec();
            on(S, || s.handle_datagram(now, PathId(0), client_addr(), &d));
            moved = true;
            while let Some(len) = on(S, || s.poll_transmit(now, buf)).map(|t| t.len) {
                let d = buf[..len].to_vec();
                on(C, || c.handle_datagram(now, PathId(0), server_addr(), &d));
            }
        }
        while let Some(len) = on(S, || s.poll_transmit(now, buf)).map(|t| t.len) {
            let d = buf[..len].to_vec();
            on(C, || c.handle_datagram(now, PathId(0), server_addr(), &d));
            moved = true;
        }
        if !moved {
            return;
        }
    }
}

/// One wake-up of a driver with nothing due: the endpoint's calls, as mpudp makes them.
fn wake(ep: &mut Endpoint, now: Time, buf: &mut [u8]) -> usize {
    let mut n = 0;
    if ep.poll_timeout().is_some_and(|t| t <= now) {
        ep.handle_timeout(now);
    }
    while ep.poll_transmit(now, buf).is_some() {
        n += 1;
    }
    while ep.poll_event().is_some() {
        n += 1;
    }
    n
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let sizes: &[usize] = if full { &[100, 1_000, 4_000] } else { &[10] };
    let (batches, wakes) = if full { (7, 200) } else { (1, 2) };
    let id = ServerIdentity::from_seed(&[3; 32]).expect("identity");
    let mut buf = vec![0u8; 65_536];
    println!("| idle connections | server: µs per wake-up | client: µs per wake-up | resident KiB per connection, both ends | server: heap KiB per connection | client: heap KiB per connection |");
    println!("|---|---|---|---|---|---|");
    for &n in sizes {
        // No keep-alives and long idle timeouts: nothing falls due while measuring.
        let quiet = |c: Config| {
            c.with(|c| {
                c.transport.keep_alive = 0;
                c.transport.idle_timeout = 0;
                c.multipath.subflow_idle_timeout = 0;
            })
        };
        // All the connections come from one address and port: the per-source limit on
        // INITIALs (64 a second, issue 19) would hold the last ones back for seconds.
        let server = quiet(Config::server().with(|c| {
            c.server.identity = Some(id.clone());
            c.rng_seed = Some(1);
            c.server.retry_above = 0;
            c.server.initials_per_source = 0;
        }));
        let client = quiet(Config::default().with(|c| {
            c.transport.server_keys = vec![id.public_key()];
            c.rng_seed = Some(2);
        }));
        let mut s = endpoint(server, server_addr(), true);
        let mut c = endpoint(client, client_addr(), false);
        let mut now: Time = 0;
        let rss0 = procfs::rss_kib();
        let heap0 = [0, 1].map(heap);
        for _ in 0..n {
            on(0, || c.connect(now, PathId(0), server_addr())).expect("connect");
        }
        // Handshakes, then let every delayed ACK and timer of the start run out.
        for _ in 0..50 {
            pump(&mut c, &mut s, now, &mut buf);
            now += 100_000;
            on(0, || {
                c.handle_timeout(now);
                while c.poll_event().is_some() {}
            });
            on(1, || {
                s.handle_timeout(now);
                while s.poll_event().is_some() {}
                while s.accept().is_some() {}
            });
        }
        pump(&mut c, &mut s, now, &mut buf);
        assert_eq!(s.live_connections(), n, "every connection established");
        let per_conn = procfs::rss_kib().saturating_sub(rss0) as f64 / n as f64;
        let heap = [0, 1].map(|i| (heap(i) - heap0[i]) as f64 / n as f64 / 1024.0);
        let mut per_wake = |ep: &mut Endpoint, now: &mut Time| {
            let mut v: Vec<f64> = (0..batches)
                .map(|_| {
                    let t = Instant::now();
                    for _ in 0..wakes {
                        *now += 1_000;
                        std::hint::black_box(wake(ep, *now, &mut buf));
                    }
                    t.elapsed().as_nanos() as f64 / wakes as f64 / 1e3
                })
                .collect();
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        let sv = per_wake(&mut s, &mut now);
        let cv = per_wake(&mut c, &mut now);
        println!("| {n} | {sv:.2} | {cv:.2} | {per_conn:.0} | {:.1} | {:.1} |", heap[1], heap[0]);
    }
    if !full {
        println!("(smoke run: `cargo bench -p mp-benches --bench idle` measures)");
    }
}
