//! First handshakes per second on one core, with and without the server's Ed25519 signature
//! (PROTOCOL.md §4.6), as one table:
//!
//! - the server's stateless answer to an INITIAL (two X25519 operations, the cookie, and with
//!   an identity the signature): what bounds a server under a flood of INITIALs;
//! - a whole first handshake, both ends (a new client endpoint, its INITIAL, the server's
//!   answer, the client's check of the signature and its CONFIRM).
//!
//! Medians of 7 batches, in one run. Run: `cargo bench -p mp-benches --bench handshake`
//! (under `cargo test` it runs each case a few times, as a smoke test).

use mpcore::{Config, Endpoint, PathId, ServerIdentity};
use std::time::Instant;

mod common;
use common::{client_addr, endpoint, server_addr};

fn server_config(identity: Option<&ServerIdentity>) -> Config {
    Config { identity: identity.cloned(), rng_seed: Some(1), ..Config::server() }
}

fn client_config(identity: Option<&ServerIdentity>) -> Config {
    match identity {
        Some(id) => Config { server_keys: vec![id.public_key()], rng_seed: Some(2), ..Config::default() },
        None => Config { unauthenticated_server: true, rng_seed: Some(2), ..Config::default() },
    }
}

/// One client INITIAL, as sent.
fn initial(identity: Option<&ServerIdentity>) -> Vec<u8> {
    let mut c = endpoint(client_config(identity), client_addr(), false);
    c.connect(0, PathId(0), server_addr()).expect("connect");
    let mut buf = vec![0u8; 65_536];
    let t = c.poll_transmit(0, &mut buf).expect("an INITIAL");
    buf[..t.len].to_vec()
}

/// `n` stateless answers to the same INITIAL; returns the bytes answered (to keep the work).
fn server_answers(server: &mut Endpoint, dgram: &[u8], n: usize, buf: &mut [u8]) -> usize {
    let mut bytes = 0;
    for _ in 0..n {
        server.handle_datagram(1_000, PathId(0), client_addr(), dgram);
        while let Some(t) = server.poll_transmit(1_000, buf) {
            bytes += t.len;
        }
    }
    bytes
}

/// `n` whole first handshakes, each with a new client endpoint; returns how many completed
/// on the client's side (it sent its CONFIRM).
fn whole_handshakes(identity: Option<&ServerIdentity>, server: &mut Endpoint, n: usize, buf: &mut [u8]) -> usize {
    let mut done = 0;
    for _ in 0..n {
        let mut c = endpoint(client_config(identity), client_addr(), false);
        c.connect(0, PathId(0), server_addr()).expect("connect");
        let t = c.poll_transmit(0, buf).expect("an INITIAL");
        let init = buf[..t.len].to_vec();
        server.handle_datagram(1_000, PathId(0), client_addr(), &init);
        let t = server.poll_transmit(1_000, buf).expect("a HANDSHAKE");
        let hs = buf[..t.len].to_vec();
        c.handle_datagram(2_000, PathId(0), server_addr(), &hs);
        if c.poll_transmit(2_000, buf).is_some() && c.drops().total() == 0 {
            done += 1;
        }
    }
    done
}

/// Median ns per operation over `batches` batches of `n`.
fn median_ns(batches: usize, n: usize, mut f: impl FnMut(usize) -> usize) -> f64 {
    let mut v: Vec<f64> = (0..batches)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f(n));
            t.elapsed().as_nanos() as f64 / n as f64
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (batches, answers, whole) = if full { (7, 2_000, 300) } else { (1, 3, 2) };
    let identity = ServerIdentity::from_seed(&[9; 32]).expect("identity");
    let mut buf = vec![0u8; 65_536];
    let mut rows = Vec::new();
    for id in [None, Some(&identity)] {
        let mut server = endpoint(server_config(id), server_addr(), true);
        let dgram = initial(id);
        assert!(server_answers(&mut server, &dgram, 1, &mut buf) > 0, "the server answers");
        let answer = median_ns(batches, answers, |n| server_answers(&mut server, &dgram, n, &mut buf));
        assert_eq!(whole_handshakes(id, &mut server, 2, &mut buf), 2, "handshakes complete");
        let both = median_ns(batches, whole, |n| whole_handshakes(id, &mut server, n, &mut buf));
        rows.push((answer, both));
    }
    println!("| per core | without signature | with Ed25519 signature | cost of the signature |");
    println!("|---|---|---|---|");
    let line = |what: &str, a: f64, b: f64| {
        println!(
            "| {what} | {:.0}/s ({:.1} us) | {:.0}/s ({:.1} us) | +{:.1} us ({:.0}%) |",
            1e9 / a,
            a / 1e3,
            1e9 / b,
            b / 1e3,
            (b - a) / 1e3,
            (b / a - 1.0) * 100.0
        );
    };
    line("server: INITIAL -> HANDSHAKE (stateless)", rows[0].0, rows[1].0);
    line("whole first handshake, both ends", rows[0].1, rows[1].1);
    if !full {
        println!("(smoke run: `cargo bench -p mp-benches --bench handshake` measures)");
    }
}
