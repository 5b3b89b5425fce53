//! First handshakes per second on one core, with and without the server's Ed25519 signature
//! (PROTOCOL.md §4.6), and resumed with a ticket (§4.8: no signature, the PSK in the key
//! schedule, the ticket opened and its binder checked), as one table:
//!
//! - the server's stateless answer to an INITIAL (two X25519 operations, the cookie, and with
//!   an identity the signature): what bounds a server under a flood of INITIALs;
//! - a whole first handshake, both ends (a new client endpoint, its INITIAL, the server's
//!   answer, the client's check of the signature and its CONFIRM).
//!
//! Medians of 7 batches, in one run. Run: `cargo bench -p mp-benches --bench handshake`
//! (under `cargo test` it runs each case a few times, as a smoke test).

use mpcore::{Config, Endpoint, PathId, Resumption, ResumptionTicket, ServerIdentity};
use std::time::Instant;

mod common;
use common::{client_addr, endpoint, server_addr};

fn server_config(identity: Option<&ServerIdentity>) -> Config {
    let resumption = Resumption { issue: true, secret: Some([3; 32]), ..Resumption::default() };
    // Every INITIAL of the bench's single source gets a HANDSHAKE (no per-source limit, no
    // RETRY under load): the limits would otherwise measure refusals and RETRYs, as they did
    // unnoticed since the per-source limit came.
    Config {
        identity: identity.cloned(),
        rng_seed: Some(1),
        resumption,
        initials_per_source: 0,
        retry_above: 0,
        ..Config::server()
    }
}

fn client_config(identity: Option<&ServerIdentity>) -> Config {
    let resumption = Resumption { accept: true, ..Resumption::default() };
    match identity {
        Some(id) => Config { server_keys: vec![id.public_key()], rng_seed: Some(2), resumption, ..Config::default() },
        None => Config { unauthenticated_server: true, rng_seed: Some(2), resumption, ..Config::default() },
    }
}

/// A client endpoint that starts a connection, resuming with `ticket` if given.
fn client(identity: Option<&ServerIdentity>, ticket: Option<&ResumptionTicket>) -> Endpoint {
    let mut c = endpoint(client_config(identity), client_addr(), false);
    match ticket {
        Some(t) => c.connect_resuming(0, PathId(0), server_addr(), t).expect("connect"),
        None => c.connect(0, PathId(0), server_addr()).expect("connect"),
    };
    c
}

/// A ticket from a whole connection to a server of the measured one's fleet (the same ticket
/// secret), so that the measured server keeps no connection.
fn ticket(identity: Option<&ServerIdentity>, buf: &mut [u8]) -> ResumptionTicket {
    let server = &mut endpoint(server_config(identity), server_addr(), true);
    let mut c = endpoint(client_config(identity), client_addr(), false);
    let h = c.connect(0, PathId(0), server_addr()).expect("connect");
    for ms in 0..200u64 {
        let now = ms * 1_000;
        c.handle_timeout(now);
        server.handle_timeout(now);
        while let Some(t) = c.poll_transmit(now, buf) {
            let d = buf[..t.len].to_vec();
            server.handle_datagram(now, PathId(0), client_addr(), &d);
        }
        while let Some(t) = server.poll_transmit(now, buf) {
            let d = buf[..t.len].to_vec();
            c.handle_datagram(now, PathId(0), server_addr(), &d);
        }
        if let Some(t) = c.take_ticket(h) {
            return t;
        }
    }
    panic!("no ticket in 200 ms")
}

/// One client INITIAL, as sent.
fn initial(identity: Option<&ServerIdentity>, ticket: Option<&ResumptionTicket>) -> Vec<u8> {
    let mut c = client(identity, ticket);
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
fn whole_handshakes(
    identity: Option<&ServerIdentity>,
    ticket: Option<&ResumptionTicket>,
    server: &mut Endpoint,
    n: usize,
    buf: &mut [u8],
) -> usize {
    let mut done = 0;
    for _ in 0..n {
        let mut c = client(identity, ticket);
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
    // Without identity, signed, and resumed from a signed server's ticket.
    for (id, resume) in [(None, false), (Some(&identity), false), (Some(&identity), true)] {
        let t = resume.then(|| ticket(id, &mut buf));
        let mut server = endpoint(server_config(id), server_addr(), true);
        let dgram = initial(id, t.as_ref());
        assert!(server_answers(&mut server, &dgram, 1, &mut buf) > 0, "the server answers");
        let answer = median_ns(batches, answers, |n| server_answers(&mut server, &dgram, n, &mut buf));
        let c = server.handshake_counters();
        assert_eq!(c.answered, 1 + (batches * answers) as u64, "every INITIAL answered: {c:?}");
        assert_eq!(whole_handshakes(id, t.as_ref(), &mut server, 2, &mut buf), 2, "handshakes complete");
        let both = median_ns(batches, whole, |n| whole_handshakes(id, t.as_ref(), &mut server, n, &mut buf));
        let resumed = server.handshake_counters().resumed;
        assert_eq!(resume, resumed > 0, "resumed: {resumed}");
        rows.push((answer, both));
    }
    println!("| per core | without signature | with Ed25519 signature | resumed with a ticket | signature's cost | resumed / signed |");
    println!("|---|---|---|---|---|---|");
    let line = |what: &str, a: f64, b: f64, r: f64| {
        println!(
            "| {what} | {:.0}/s ({:.1} us) | {:.0}/s ({:.1} us) | {:.0}/s ({:.1} us) | +{:.1} us ({:.0}%) | {:.2} |",
            1e9 / a,
            a / 1e3,
            1e9 / b,
            b / 1e3,
            1e9 / r,
            r / 1e3,
            (b - a) / 1e3,
            (b / a - 1.0) * 100.0,
            r / b
        );
    };
    line("server: INITIAL -> HANDSHAKE (stateless)", rows[0].0, rows[1].0, rows[2].0);
    line("whole first handshake, both ends", rows[0].1, rows[1].1, rows[2].1);
    if !full {
        println!("(smoke run: `cargo bench -p mp-benches --bench handshake` measures)");
    }
}
