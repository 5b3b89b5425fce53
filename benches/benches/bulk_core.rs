//! What the protocol itself costs a bulk transfer, without sockets, kernel or a real clock: a
//! client endpoint sends 64 MiB to a server endpoint in memory. A step hands what the client
//! sends (64 datagrams at most) to the server, which reads it all and answers; the virtual
//! clock moves 20 µs a step. The client's calls (writes by reference, transmits, the
//! ACKs it handles) and the server's (datagrams handled, in-place reads, its ACKs) are timed
//! apart: what `benches/net.sh` cannot separate from the kernel, and on a noisy machine can
//! measure only over many rounds.
//!
//! Medians of 7 batches, in one run, as one table: ns per KiB and per datagram.
//! Run: `cargo bench -p mp-benches --bench bulk_core` (under `cargo test` it moves 1 MiB once,
//! as a smoke test).

use bytes::Bytes;
use mpcore::{Config, ConnHandle, Endpoint, PathId, ServerIdentity};
use std::time::{Duration, Instant};

mod common;
use common::{client_addr, endpoint, server_addr};

/// The application's buffer, handed over again and again by reference.
static CHUNK: [u8; 64 << 10] = [0x42; 64 << 10];

/// Room for the datagrams of one step, each in a slot of `SLOT` bytes: the client's burst is
/// at most this, about a GSO batch and a half, as the driver's (a larger burst before the
/// server reads would hold megabytes in its ring, cold by the time they are read).
const SLOTS: usize = 64;
const SLOT: usize = 2048;

/// Two connected endpoints.
struct Pair {
    client: Endpoint,
    server: Endpoint,
    c: ConnHandle,
    s: Option<ConnHandle>,
    now: u64,
    /// The datagrams of a step, in slots (`lens` long), reused: no allocation in the loop.
    slots: Vec<u8>,
    lens: Vec<usize>,
    /// The two addresses, parsed once.
    addrs: [std::net::SocketAddr; 2],
    /// Time in the client's calls and in the server's.
    spent: [Duration; 2],
    datagrams: u64,
}

fn pair() -> Pair {
    let id = ServerIdentity::from_seed(&[5; 32]).expect("identity");
    let server = Config::server().with(|c| {
        c.server.identity = Some(id.clone());
        c.transport.recv_window = 8 << 20;
        c.transport.max_datagram_size = 1472;
        c.rng_seed = Some(1);
    });
    let client = Config::default().with(|c| {
        c.transport.server_keys = vec![id.public_key()];
        c.transport.send_buffer = 8 << 20;
        c.transport.max_datagram_size = 1472;
        c.rng_seed = Some(2);
    });
    let mut client = endpoint(client, client_addr(), false);
    let server = endpoint(server, server_addr(), true);
    let c = client.connect(0, PathId(0), server_addr()).expect("connect");
    let mut p = Pair {
        client,
        server,
        c,
        s: None,
        now: 0,
        slots: vec![0u8; SLOTS * SLOT],
        lens: Vec::with_capacity(SLOTS),
        addrs: [client_addr(), server_addr()],
        spent: Default::default(),
        datagrams: 0,
    };
    for _ in 0..1_000 {
        p.step(&mut Bytes::new(), false);
        p.s = p.s.or_else(|| p.server.accept());
        if p.s.is_some() && p.client.conn(c).is_some_and(|c| c.is_established()) {
            p.spent = Default::default();
            p.datagrams = 0;
            return p;
        }
    }
    panic!("no connection after 1,000 steps")
}

impl Pair {
    /// One step: the client writes what fits of `data` (and, with `fin`, ends the stream
    /// after it) and sends what it may; the server handles it, reads all it can and answers;
    /// the client handles the answers. Returns the bytes the server read, and whether it
    /// reached the end of the stream.
    fn step(&mut self, data: &mut Bytes, fin: bool) -> (usize, bool) {
        self.now += 20;
        let now = self.now;
        let t = Instant::now();
        if self.client.poll_timeout().is_some_and(|d| d <= now) {
            self.client.handle_timeout(now);
        }
        if let Some(c) = self.client.conn_mut(self.c) {
            while !data.is_empty() && c.write_bytes(data).unwrap_or(0) > 0 {}
            if fin && data.is_empty() {
                c.close();
            }
        }
        burst(&mut self.client, now, &mut self.slots, &mut self.lens);
        let t2 = Instant::now();
        self.spent[0] += t2 - t;
        let mut read = 0;
        let mut end = false;
        if self.server.poll_timeout().is_some_and(|d| d <= now) {
            self.server.handle_timeout(now);
        }
        hand(&mut self.server, now, self.addrs[0], &mut self.slots, &self.lens);
        self.datagrams += self.lens.len() as u64;
        if let Some(s) = self.s.and_then(|h| self.server.conn_mut(h)) {
            loop {
                match s.read_chunk(64 << 10) {
                    Ok([]) => {
                        end = true;
                        break;
                    }
                    Ok(chunk) => read += chunk.len(),
                    Err(_) => break,
                }
            }
        }
        burst(&mut self.server, now, &mut self.slots, &mut self.lens);
        let t3 = Instant::now();
        self.spent[1] += t3 - t2;
        hand(&mut self.client, now, self.addrs[1], &mut self.slots, &self.lens);
        self.spent[0] += t3.elapsed();
        (read, end)
    }
}

/// What `ep` sends now, into the slots (`SLOTS` datagrams at most).
fn burst(ep: &mut Endpoint, now: u64, slots: &mut [u8], lens: &mut Vec<usize>) {
    lens.clear();
    while lens.len() < SLOTS {
        let at = lens.len() * SLOT;
        let Some(tx) = ep.poll_transmit(now, &mut slots[at..at + SLOT]) else { break };
        lens.push(tx.len);
    }
}

/// Hands `ep` the datagrams in the slots, from `from`.
fn hand(ep: &mut Endpoint, now: u64, from: std::net::SocketAddr, slots: &mut [u8], lens: &[usize]) {
    for (k, &len) in lens.iter().enumerate() {
        ep.handle_datagram_in_place(now, PathId(0), from, &mut slots[k * SLOT..k * SLOT + len]);
    }
}

/// Moves `bytes` through a new pair; returns the time in the client's calls, in the server's,
/// and the datagrams the server handled.
fn transfer(bytes: usize) -> (Duration, Duration, u64) {
    let mut p = pair();
    let mut got = 0;
    let mut queued = 0;
    let mut data = Bytes::new();
    for _ in 0..10_000_000 {
        if data.is_empty() && queued < bytes {
            data = Bytes::from_static(&CHUNK[..CHUNK.len().min(bytes - queued)]);
            queued += data.len();
        }
        let (n, end) = p.step(&mut data, queued == bytes);
        got += n;
        if end {
            break;
        }
    }
    assert_eq!(got, bytes, "the server read everything, then the end of the stream");
    (p.spent[0], p.spent[1], p.datagrams)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (batches, bytes) = if full { (7, 64 << 20) } else { (1, 1 << 20) };
    let mut rows: [Vec<f64>; 6] = Default::default();
    for _ in 0..batches {
        let (c, s, n) = transfer(bytes);
        let kib = (bytes / 1024) as f64;
        for (k, d) in [c, s, c + s].into_iter().enumerate() {
            rows[k].push(d.as_nanos() as f64 / kib);
            rows[3 + k].push(d.as_nanos() as f64 / n as f64);
        }
    }
    println!("\nA bulk transfer between two endpoints in memory ({} MiB, medians of {batches}):\n", bytes >> 20);
    println!("| calls | ns per KiB | ns per datagram |");
    println!("|---|---|---|");
    for (k, name) in ["the sender's (client)", "the receiver's (server)", "both"].into_iter().enumerate() {
        let (kib, dg) = (median(rows[k].clone()), median(rows[3 + k].clone()));
        println!("| {name} | {kib:.0} | {dg:.0} |");
    }
    if !full {
        println!("(smoke run: `cargo bench -p mp-benches --bench bulk_core` measures)");
    }
}
