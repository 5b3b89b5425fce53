//! First handshakes per second on one core, with and without the server's Ed25519 signature
//! (PROTOCOL.md §4.6), and resumed with a ticket (§4.8: no signature, the PSK in the key
//! schedule, the ticket opened and its binder checked) and resumed with 0-RTT data (§4.9: the
//! server also makes the connection at the INITIAL and takes the early bytes), as one table:
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
    let resumption = Resumption { issue: true, early_data: true, secret: Some([3; 32]), ..Resumption::default() };
    // Every INITIAL of the bench's single source gets a HANDSHAKE (no per-source limit, no
    // RETRY under load): the limits would otherwise measure refusals and RETRYs, as they did
    // unnoticed since the per-source limit came.
    Config::server().with(|c| {
        c.server.identity = identity.cloned();
        c.rng_seed = Some(1);
        c.resumption = resumption;
        c.server.initials_per_source = 0;
        c.server.retry_above = 0;
    })
}

fn client_config(identity: Option<&ServerIdentity>) -> Config {
    let resumption = Resumption { accept: true, ..Resumption::default() };
    match identity {
        Some(id) => Config::default().with(|c| {
            c.transport.server_keys = vec![id.public_key()];
            c.rng_seed = Some(2);
            c.resumption = resumption;
        }),
        None => Config::default().with(|c| {
            c.transport.unauthenticated_server = true;
            c.rng_seed = Some(2);
            c.resumption = resumption;
        }),
    }
}

/// A client endpoint that starts a connection, resuming with `ticket` if given, and with
/// `EARLY` bytes of 0-RTT data if `early`.
fn client(identity: Option<&ServerIdentity>, ticket: Option<&ResumptionTicket>, early: bool) -> Endpoint {
    // Each client its own randomness: a 0-RTT INITIAL is taken once (a copy is a replay).
    static SEED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(100);
    let seed = SEED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let config = client_config(identity).with(|c| c.rng_seed = Some(seed));
    let mut c = endpoint(config, client_addr(), false);
    let h = match ticket {
        Some(t) => c.connect_resuming(0, PathId(0), server_addr(), t).expect("connect"),
        None => c.connect(0, PathId(0), server_addr()).expect("connect"),
    };
    if early {
        c.conn_mut(h).expect("the connection").write_early(&[0x11; EARLY]).expect("early data");
    }
    c
}

/// The 0-RTT data of the `early` rows: a request of a kilobyte.
const EARLY: usize = 1_000;

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
        pass(&mut c, server, now, client_addr(), buf);
        pass(server, &mut c, now, server_addr(), buf);
        if let Some(t) = c.take_ticket(h) {
            return t;
        }
    }
    panic!("no ticket in 200 ms")
}

/// Every datagram `from` has to send at `now`, handed to `to` (as from `addr`); how many.
fn pass(from: &mut Endpoint, to: &mut Endpoint, now: u64, addr: std::net::SocketAddr, buf: &mut [u8]) -> usize {
    let mut n = 0;
    while let Some(t) = from.poll_transmit(now, buf) {
        let d = buf[..t.len].to_vec();
        to.handle_datagram(now, PathId(0), addr, &d);
        n += 1;
    }
    n
}

/// A client's first flight, as sent: the INITIAL, and the EARLY packets with 0-RTT data.
fn flight(identity: Option<&ServerIdentity>, ticket: Option<&ResumptionTicket>, early: bool) -> Vec<Vec<u8>> {
    let mut c = client(identity, ticket, early);
    let mut buf = vec![0u8; 65_536];
    let mut out = Vec::new();
    while let Some(t) = c.poll_transmit(0, &mut buf) {
        out.push(buf[..t.len].to_vec());
    }
    out
}

/// The server's answers to `flights` (an INITIAL each, a stateless answer repeated for each;
/// a 0-RTT one makes a connection each); returns the bytes answered (to keep the work).
fn server_answers(server: &mut Endpoint, flights: &[Vec<Vec<u8>>], buf: &mut [u8]) -> usize {
    let mut bytes = 0;
    for f in flights {
        for d in f {
            server.handle_datagram(1_000, PathId(0), client_addr(), d);
        }
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
    early: bool,
    server: &mut Endpoint,
    n: usize,
    buf: &mut [u8],
) -> usize {
    let mut done = 0;
    for _ in 0..n {
        let mut c = client(identity, ticket, early);
        pass(&mut c, server, 1_000, client_addr(), buf);
        pass(server, &mut c, 2_000, server_addr(), buf);
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
    // Without identity, signed, resumed from a signed server's ticket, and resumed with 0-RTT
    // data (the server makes the connection at the INITIAL and takes the early data).
    for (id, resume, early) in [
        (None, false, false),
        (Some(&identity), false, false),
        (Some(&identity), true, false),
        (Some(&identity), true, true),
    ] {
        let t = resume.then(|| ticket(id, &mut buf));
        let mut server = endpoint(server_config(id), server_addr(), true);
        // A stateless answer is the same work for every copy of one INITIAL; a 0-RTT one is
        // taken once per INITIAL (the anti-replay record), so each is a new client's.
        let one = flight(id, t.as_ref(), early);
        let flights: Vec<Vec<Vec<u8>>> = if early {
            (0..batches * answers + 1).map(|_| flight(id, t.as_ref(), true)).collect()
        } else {
            vec![one; batches * answers + 1]
        };
        assert!(server_answers(&mut server, &flights[..1], &mut buf) > 0, "the server answers");
        let mut k = 1;
        let answer = median_ns(batches, answers, |n| {
            let b = server_answers(&mut server, &flights[k..k + n], &mut buf);
            k += n;
            b
        });
        let c = server.handshake_counters();
        assert_eq!(c.answered, 1 + (batches * answers) as u64, "every INITIAL answered: {c:?}");
        assert_eq!(c.early_accepted, if early { c.answered } else { 0 }, "0-RTT taken: {c:?}");
        assert_eq!(whole_handshakes(id, t.as_ref(), early, &mut server, 2, &mut buf), 2, "handshakes complete");
        let both = median_ns(batches, whole, |n| whole_handshakes(id, t.as_ref(), early, &mut server, n, &mut buf));
        let c = server.handshake_counters();
        // Every resuming INITIAL was taken (the whole handshakes' too).
        assert_eq!((c.resumed > 0, c.resumption_declined), (resume, 0), "{c:?}");
        rows.push((answer, both));
    }
    println!(
        "| per core | without signature | with Ed25519 signature | resumed with a ticket | resumed, 0-RTT data | signature's cost | resumed / signed | 0-RTT / signed |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let rate = |x: f64| format!("{:.0}/s ({:.1} us)", 1e9 / x, x / 1e3);
    let line = |what: &str, a: f64, b: f64, r: f64, e: f64| {
        println!(
            "| {what} | {} | {} | {} | {} | +{:.1} us ({:.0}%) | {:.2} | {:.2} |",
            rate(a),
            rate(b),
            rate(r),
            rate(e),
            (b - a) / 1e3,
            (b / a - 1.0) * 100.0,
            r / b,
            e / b
        );
    };
    line("server: INITIAL -> HANDSHAKE", rows[0].0, rows[1].0, rows[2].0, rows[3].0);
    line("whole first handshake, both ends", rows[0].1, rows[1].1, rows[2].1, rows[3].1);
    if !full {
        println!("(smoke run: `cargo bench -p mp-benches --bench handshake` measures)");
    }
}
