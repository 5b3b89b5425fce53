//! Issue 36, 0-RTT data (PROTOCOL.md §4.9): a resuming client's request goes with its first
//! flight and the answer comes in the server's; a replayed first flight is refused by the
//! server and by a server sharing its anti-replay record; every way the early data can fail to
//! be taken ends with the request delivered once, whole, without an error.
#![allow(clippy::unwrap_used)]

mod common;

use common::{dated, UNIX};

use mpcore::{Config, ConnHandle, Endpoint, LocalPath, PathId, Resumption, ResumptionTicket, StrikeRegister};
use mpsim::{client_addr, ms, multimob_paths, server_addr, Dir, Flow, PathEvent, Sim};
use std::cell::RefCell;
use std::rc::Rc;

/// Path 0's round trip in `multimob_paths` (ms).
const RTT_MS: u64 = 15;
const SECRET: [u8; 32] = [0x5e; 32];

fn server_config(early_data: bool) -> Config {
    let resumption = Resumption { issue: true, early_data, secret: Some(SECRET), ..Resumption::default() };
    Config::default().with(|c| c.resumption = resumption)
}

fn pair(seed: u64, server: Config) -> Sim {
    let client = Config::default().with(|c| c.resumption = Resumption { accept: true, ..Resumption::default() });
    dated(seed, client, server, multimob_paths())
}

/// A first connection's ticket; the connection is closed and forgotten after.
fn first_ticket(sim: &mut Sim) -> ResumptionTicket {
    let c = sim.connect();
    sim.run_until(sim.now + ms(300), |_| None);
    while sim.server.accept().is_some() {}
    let t = sim.client.take_ticket(c).expect("a ticket");
    sim.client.conn_mut(c).unwrap().close();
    sim.run_until(sim.now + ms(2_000), |_| None);
    t
}

fn request() -> Vec<u8> {
    (0..2_500u32).map(|i| (i * 13 + 7) as u8).collect()
}

/// What one exchange saw: when the client's first answer byte came (µs after it started),
/// the answer, what the server read, and the server's connection.
struct Exchange {
    first_answer: Option<u64>,
    answer: Vec<u8>,
    read: Vec<u8>,
    server: Option<ConnHandle>,
    client: ConnHandle,
}

/// A request written `early` or plainly on `c` (just opened), the server answering 750 bytes
/// once it read it all; runs until the answer is whole or `limit`.
fn exchange(sim: &mut Sim, c: ConnHandle, early: bool, limit: u64) -> Exchange {
    exchange_with(sim, c, early, limit, |_| {})
}

/// As [`exchange`], with `hook` called at every step of the simulation.
fn exchange_with(sim: &mut Sim, c: ConnHandle, early: bool, limit: u64, mut hook: impl FnMut(&mut Sim)) -> Exchange {
    let req = request();
    let start = sim.now;
    let cc = sim.client.conn_mut(c).unwrap();
    let n = if early { cc.write_early(&req).unwrap() } else { cc.write(&req).unwrap() };
    assert_eq!(n, req.len());
    let mut x = Exchange { first_answer: None, answer: Vec::new(), read: Vec::new(), server: None, client: c };
    let mut answered = false;
    let mut buf = [0u8; 4096];
    sim.run(start + limit, |s| {
        hook(s);
        if let Some(cc) = s.client.conn_mut(c) {
            while let Ok(n) = cc.read(&mut buf) {
                if n == 0 {
                    break;
                }
                x.first_answer.get_or_insert(s.now - start);
                x.answer.extend_from_slice(&buf[..n]);
            }
        }
        if x.server.is_none() {
            x.server = s.server.accept();
        }
        if let Some(sc) = x.server.and_then(|h| s.server.conn_mut(h)) {
            while let Ok(n) = sc.read(&mut buf) {
                if n == 0 {
                    break;
                }
                x.read.extend_from_slice(&buf[..n]);
            }
            if x.read.len() >= req.len() && !answered {
                answered = sc.write(&[0xa5; 750]).is_ok();
            }
        }
        if x.answer.len() >= 750 {
            Flow::Done
        } else {
            Flow::Wake(None)
        }
    });
    x
}

/// Round trips of path 0 in `t` µs, rounded down.
fn rtts(t: u64) -> u64 {
    t / ms(RTT_MS)
}

fn check_whole(x: &Exchange, what: &str) {
    assert_eq!(x.read, request(), "{what}: the server read the request once, whole");
    assert_eq!(x.answer, vec![0xa5; 750], "{what}: the answer came whole");
}

#[test]
fn the_answer_to_an_early_request_comes_one_round_trip_sooner() {
    let mut sim = pair(1, server_config(true));
    let t = first_ticket(&mut sim);
    // A fresh connection: INITIAL, HANDSHAKE, then the request: the answer after 2 RTTs.
    let c = sim.connect();
    let fresh = exchange(&mut sim, c, false, ms(2_000));
    check_whole(&fresh, "fresh");
    sim.run_until(sim.now + ms(500), |_| None);
    // Resumed with the request early: it goes with the INITIAL, the answer with the
    // HANDSHAKE's flight: after 1 RTT.
    let c = sim.client.connect_resuming(sim.now, PathId(0), server_addr(), &t).unwrap();
    let early = exchange(&mut sim, c, true, ms(2_000));
    check_whole(&early, "early");
    let (f, e) = (fresh.first_answer.unwrap(), early.first_answer.unwrap());
    assert_eq!((rtts(f), rtts(e)), (2, 1), "fresh {f} µs, early {e} µs, RTT {RTT_MS} ms");
    // Both ends know which bytes came early.
    let server = early.server.unwrap();
    assert_eq!(sim.server.conn(server).unwrap().early_data(), request().len() as u64);
    assert_eq!(sim.client.conn(early.client).unwrap().early_data(), request().len() as u64);
    assert_eq!(sim.server.conn(fresh.server.unwrap()).map_or(0, |c| c.early_data()), 0);
    let h = sim.server.handshake_counters();
    assert_eq!((h.resumed, h.early_accepted), (1, 1));
}

#[test]
fn write_early_is_needed_for_early_data() {
    // A resumed connection whose request is written plainly: nothing goes before the
    // HANDSHAKE (no EARLY packet, long type 5), the answer after 2 RTTs.
    let mut sim = pair(2, server_config(true));
    let t = first_ticket(&mut sim);
    let early_packets = Rc::new(RefCell::new(0));
    let seen = early_packets.clone();
    sim.tap = Some(Box::new(move |_, _, dir, b| {
        if dir == Dir::Up && b.first().is_some_and(|f| f & 0xf8 == 0xe8) {
            *seen.borrow_mut() += 1;
        }
    }));
    let c = sim.client.connect_resuming(sim.now, PathId(0), server_addr(), &t).unwrap();
    let x = exchange(&mut sim, c, false, ms(2_000));
    check_whole(&x, "plain");
    assert_eq!(*early_packets.borrow(), 0);
    assert_eq!(rtts(x.first_answer.unwrap()), 2);
    assert_eq!(sim.server.handshake_counters().early_accepted, 0);
    assert_eq!(sim.server.conn(x.server.unwrap()).unwrap().early_data(), 0);
}

/// The client's first flight of a resumed connection with an early request, as sent.
fn captured_flight(sim: &mut Sim, t: &ResumptionTicket) -> (Exchange, Vec<Vec<u8>>) {
    let flight = Rc::new(RefCell::new(Vec::new()));
    let f = flight.clone();
    let start = sim.now;
    sim.tap = Some(Box::new(move |now, path, dir, b| {
        // The INITIAL (long type 0) and the EARLY packets (type 5) of the first millisecond.
        let first = b.first().copied().unwrap_or(0) & 0xf8;
        if path == 0 && dir == Dir::Up && now <= start + ms(1) && (first == 0xc0 || first == 0xe8) {
            f.borrow_mut().push(b.to_vec());
        }
    }));
    let c = sim.client.connect_resuming(sim.now, PathId(0), server_addr(), t).unwrap();
    let x = exchange(sim, c, true, ms(2_000));
    sim.tap = None;
    let flight = flight.borrow().clone();
    (x, flight)
}

fn replay(ep: &mut Endpoint, now: u64, flight: &[Vec<u8>]) {
    for d in flight {
        ep.handle_datagram(now, PathId(0), client_addr(0), d);
    }
    let mut buf = vec![0u8; 65_536];
    while ep.poll_transmit(now, &mut buf).is_some() {}
}

fn fleet_server(strikes: Option<StrikeRegister>) -> Endpoint {
    let mut c = server_config(true);
    c.resumption.strikes = strikes;
    c.server.identity = Some(mpcore::ServerIdentity::from_seed(&[1; 32]).unwrap());
    let paths = vec![LocalPath { addr: server_addr(), iface: mpcore::Iface::Wired, backup: false }];
    let mut ep = Endpoint::new(c, paths, true).unwrap();
    ep.set_unix_time(0, UNIX);
    ep
}

#[test]
fn a_replayed_first_flight_is_refused_here_and_by_a_server_sharing_the_record() {
    let strikes = StrikeRegister::default();
    let mut server = server_config(true);
    server.resumption.strikes = Some(strikes.clone());
    let mut sim = pair(3, server);
    let t = first_ticket(&mut sim);
    let (x, flight) = captured_flight(&mut sim, &t);
    check_whole(&x, "the original");
    assert!(flight.len() >= 3, "an INITIAL and the EARLY packets of 2,500 bytes: {}", flight.len());
    let before = sim.server.handshake_counters();
    let live = sim.server.live_connections();
    // The attacker sends the captured flight again, 100 ms later, from the client's address.
    let at = sim.now + ms(100);
    for d in &flight {
        sim.inject(at, 0, Dir::Up, client_addr(0), d.clone());
    }
    sim.run_until(at + ms(500), |_| None);
    let after = sim.server.handshake_counters();
    assert_eq!(after.early_accepted, before.early_accepted, "no second 0-RTT connection");
    assert_eq!(after.resumed, before.resumed + 1, "answered as a resumption without early data");
    assert!(sim.server.accept().is_none(), "no connection for the application");
    assert_eq!(sim.server.live_connections(), live);
    // A second server of the fleet (same ticket secret) sharing the record refuses it too.
    let now = sim.now;
    let mut sharing = fleet_server(Some(strikes));
    replay(&mut sharing, now, &flight);
    let h = sharing.handshake_counters();
    assert_eq!((h.resumed, h.early_accepted), (1, 0), "{h:?}");
    assert!(sharing.accept().is_none());
    // One with a record of its own takes it: what a fleet without a shared record risks
    // (PROTOCOL.md §12), within the age window only.
    let mut alone = fleet_server(None);
    replay(&mut alone, now, &flight);
    assert_eq!(alone.handshake_counters().early_accepted, 1);
    let mut late = fleet_server(None);
    replay(&mut late, now + ms(25_000), &flight);
    let h = late.handshake_counters();
    assert_eq!((h.resumed, h.early_accepted, h.resumption_declined), (0, 0, 1), "past the age window");
}

/// Server `id` of a fleet of 3 (the ticket secret shared), with an anti-replay record of its
/// own, its process started at unix time `started` (its clock's 0).
fn fleet_member(id: u8, started: u64) -> Endpoint {
    let mut ep = fleet_server(None);
    let fleet = Some(mpcore::Fleet { server: id, servers: 3, secret: SECRET });
    let mut c = ep.config().clone();
    c.server.fleet = fleet;
    let paths = vec![LocalPath { addr: server_addr(), iface: mpcore::Iface::Wired, backup: false }];
    ep = Endpoint::new(c, paths, true).unwrap();
    ep.set_unix_time(0, started);
    ep
}

/// Issue 56: a fleet's servers each keep their own anti-replay record, and the balancer may send
/// a replayed first flight to any of them (from another address, after a drain or a kill has
/// remapped the bytes). Only the server that issued the ticket takes its 0-RTT data; the others
/// resume the connection at one round trip, so a flight is judged by the one record that saw it.
#[test]
fn in_a_fleet_only_the_tickets_issuer_takes_its_early_data() {
    let server =
        server_config(true).with(|c| c.server.fleet = Some(mpcore::Fleet { server: 0, servers: 3, secret: SECRET }));
    let mut sim = pair(5, server);
    let t = first_ticket(&mut sim);
    // The ticket names its issuer's routing byte, and the resumed INITIAL and its EARLY
    // packets carry it first in their DCID (byte 5), where the balancer reads it (§2.1).
    let r = t.route.expect("a fleet's server names its routing byte in the ticket");
    let lone = first_ticket(&mut pair(6, server_config(true)));
    assert_eq!(lone.route, None, "a server alone names none: the resumed INITIAL's DCID stays random");
    assert_eq!(mpcore::Steering::server_of(r, 3), 0, "server 0's byte");
    let (x, flight) = captured_flight(&mut sim, &t);
    assert!(
        !flight.is_empty() && flight.iter().all(|d| d[5] == r),
        "every datagram of the flight starts its DCID with it"
    );
    check_whole(&x, "the original, at the issuer");
    assert_eq!(sim.server.handshake_counters().early_accepted, 1, "the issuer took it");
    let now = sim.now;
    // Another server of the fleet, its own record: resumed, but no early data.
    for other in [1, 2] {
        let mut m = fleet_member(other, UNIX);
        replay(&mut m, now, &flight);
        let h = m.handshake_counters();
        assert_eq!((h.resumed, h.early_accepted), (1, 0), "server {other}: {h:?}");
    }
    // The issuer's id on a fresh process (a kill, then a restart, inside the record's 20 s):
    // it started after the ticket was issued, so it takes no early data from before its start.
    let mut restarted = fleet_member(0, UNIX + now / 1_000);
    replay(&mut restarted, 1, &flight);
    let h = restarted.handshake_counters();
    assert_eq!((h.resumed, h.early_accepted), (1, 0), "the restarted issuer: {h:?}");
}

#[test]
fn early_data_the_server_does_not_take_is_sent_again_and_nothing_is_lost() {
    type Setup = fn(&mut Sim, &mut ResumptionTicket);
    let cases: [(&str, bool, Setup); 4] = [
        ("a server that takes no early data", false, |_, _| {}),
        ("a ticket the server cannot open", true, |_, t| t.ticket[40] ^= 1),
        ("a ticket expired at the server", true, |sim, t| {
            let now = sim.now;
            sim.server.set_unix_time(now, t.expires_unix_ms() + 60_000);
        }),
        ("the INITIAL lost with its EARLY packets", true, |sim, _| {
            let now = sim.now;
            sim.at(now, 0, PathEvent::Down);
            sim.at(now + ms(5), 0, PathEvent::Up);
        }),
    ];
    for (k, (what, early_ok, setup)) in cases.into_iter().enumerate() {
        let mut sim = pair(10 + k as u64, server_config(early_ok));
        let mut t = first_ticket(&mut sim);
        setup(&mut sim, &mut t);
        let c = sim.client.connect_resuming(sim.now, PathId(0), server_addr(), &t).unwrap();
        let x = exchange(&mut sim, c, true, ms(5_000));
        check_whole(&x, what);
        let early = sim.server.conn(x.server.unwrap()).unwrap().early_data();
        let taken = sim.server.handshake_counters().early_accepted;
        match k {
            0..=2 => {
                assert_eq!((early, taken), (0, 0), "{what}");
                assert_eq!(sim.client.conn(c).unwrap().early_data(), 0, "{what}");
                // Sent again as soon as the HANDSHAKE said so: as soon as a fresh connection's.
                assert_eq!(rtts(x.first_answer.unwrap()), 2, "{what}");
            }
            // The repeated INITIAL is answered and the early data sent again after it.
            _ => assert_eq!((early, taken), (request().len() as u64, 1), "{what}"),
        }
        assert!(sim.server.accept().is_none(), "{what}: one connection");
    }
}

#[test]
fn a_retry_and_a_lost_handshake_keep_the_early_data_and_make_one_connection() {
    // A RETRY: the INITIAL is built again with the token; its early data goes again under
    // the new INITIAL's key, and is taken.
    let mut sim = pair(20, server_config(true).with(|c| c.server.require_retry = true));
    let t = first_ticket(&mut sim);
    let c = sim.client.connect_resuming(sim.now, PathId(0), server_addr(), &t).unwrap();
    let x = exchange(&mut sim, c, true, ms(3_000));
    check_whole(&x, "retry");
    assert_eq!(sim.server.conn(x.server.unwrap()).unwrap().early_data(), request().len() as u64);
    assert_eq!(rtts(x.first_answer.unwrap()), 2, "the RETRY's round trip, then one");
    // The HANDSHAKE (and the first answer) lost: the client repeats its INITIAL, the
    // connection made at the first one sends its HANDSHAKE again; one connection.
    let mut sim = pair(21, server_config(true));
    let t = first_ticket(&mut sim);
    let now = sim.now;
    // The INITIAL and its EARLY packets arrive by 12 ms (7.5 ms and 1 ms each at 10 Mbit/s);
    // the HANDSHAKE would at about 16.5 ms.
    sim.at(now + ms(12), 0, PathEvent::Down);
    sim.at(now + ms(17), 0, PathEvent::Up);
    let c = sim.client.connect_resuming(now, PathId(0), server_addr(), &t).unwrap();
    let x = exchange(&mut sim, c, true, ms(5_000));
    check_whole(&x, "lost handshake");
    let h = sim.server.handshake_counters();
    assert_eq!((h.early_accepted, h.resumed), (1, 1), "{h:?}");
    assert!(sim.server.accept().is_none(), "one connection");
    assert!(x.first_answer.unwrap() > ms(1_000), "after the INITIAL's repeat: the HANDSHAKE was lost");
}

#[test]
fn under_loss_every_early_request_arrives_whole() {
    let mut taken = 0;
    for seed in 30..38 {
        let mut sim = pair(seed, server_config(true));
        let t = first_ticket(&mut sim);
        sim.change(0, PathEvent::Loss(0.2));
        let c = sim.client.connect_resuming(sim.now, PathId(0), server_addr(), &t).unwrap();
        let x = exchange(&mut sim, c, true, ms(20_000));
        check_whole(&x, &format!("seed {seed}"));
        taken += sim.server.handshake_counters().early_accepted;
    }
    assert!(taken > 0, "no early data was taken: the test proves nothing");
}

#[test]
fn a_man_in_the_middle_with_a_captured_ticket_learns_nothing_and_cannot_resume() {
    for seed in 1..=3 {
        let mut sim = pair(40 + seed, server_config(true));
        let t = first_ticket(&mut sim);
        let (x, flight) = captured_flight(&mut sim, &t);
        check_whole(&x, "the client's own");
        // The request is nowhere in clear in what the attacker captured.
        let req = request();
        for d in &flight {
            assert!(!req.chunks(16).any(|c| d.windows(16).any(|w| w == c)), "seed {seed}: request bytes in clear");
        }
        // It offers the captured ticket (its bytes and age are in the INITIAL) in an INITIAL
        // of its own: without the PSK its binder is wrong, so the server declines the ticket
        // and takes none of its early data; the connection it gets is a fresh one, whose
        // server it cannot make resume.
        let stolen = ResumptionTicket { psk: [0x42; 32], ..t.clone() };
        let before = sim.server.handshake_counters();
        let c = sim.client.connect_resuming(sim.now, PathId(0), server_addr(), &stolen).unwrap();
        let y = exchange(&mut sim, c, true, ms(3_000));
        check_whole(&y, "the attacker's fresh connection");
        let after = sim.server.handshake_counters();
        assert_eq!(after.resumed, before.resumed, "seed {seed}");
        assert_eq!(after.resumption_declined, before.resumption_declined + 1, "seed {seed}");
        assert_eq!(after.early_accepted, before.early_accepted, "seed {seed}");
        assert!(!sim.client.stats(c).unwrap().resumed);
        assert_eq!(sim.server.conn(y.server.unwrap()).unwrap().early_data(), 0, "seed {seed}");
    }
}

#[test]
fn a_first_flight_answered_with_a_retry_is_a_replay_later() {
    // Under load the server asks for a RETRY: the client's first INITIAL and its EARLY packets
    // are not taken, and it sends them again with the token. A copy of that first flight sent
    // later, to a server (of the same record) that asks for no RETRY, is a replay: its binder
    // was recorded when the RETRY answered it.
    let strikes = StrikeRegister::default();
    let mut server = server_config(true).with(|c| c.server.require_retry = true);
    server.resumption.strikes = Some(strikes.clone());
    let mut sim = pair(70, server);
    let t = first_ticket(&mut sim);
    let (x, flight) = captured_flight(&mut sim, &t);
    check_whole(&x, "through the RETRY");
    assert!(flight.len() >= 2, "the first INITIAL and its EARLY packets: {}", flight.len());
    let now = sim.now;
    let mut sharing = fleet_server(Some(strikes));
    replay(&mut sharing, now, &flight);
    let h = sharing.handshake_counters();
    assert_eq!((h.resumed, h.early_accepted), (1, 0), "refused as a replay: {h:?}");
    // Without the record it would have been taken.
    let mut alone = fleet_server(None);
    replay(&mut alone, now, &flight);
    assert_eq!(alone.handshake_counters().early_accepted, 1);
}

/// A server that asks for RETRYs, and the client's INITIAL with the RETRY's token copied from
/// another address (the client's second path, or an attacker who saw it) ahead of the INITIAL
/// itself. The token names the first path's address, so the copy is dropped: a RETRY to it
/// would record the 0-RTT binder both carry, and the INITIAL itself would then be refused its
/// early data as a replay (PROTOCOL.md §4.1, RETRY).
#[test]
fn a_copy_of_a_retried_initial_from_another_address_leaves_its_early_data_taken() {
    let strikes = StrikeRegister::default();
    let mut server = server_config(true).with(|c| c.server.require_retry = true);
    server.resumption.strikes = Some(strikes);
    let mut sim = pair(72, server);
    let t = first_ticket(&mut sim);
    let initials = Rc::new(RefCell::new(Vec::new()));
    let seen = initials.clone();
    sim.tap = Some(Box::new(move |_, path, dir, b| {
        if path == 0 && dir == Dir::Up && b.first().copied().unwrap_or(0) & 0xf8 == 0xc0 {
            seen.borrow_mut().push(b.to_vec());
        }
    }));
    let before = sim.server.handshake_counters();
    let c = sim.client.connect_resuming(sim.now, PathId(0), server_addr(), &t).unwrap();
    let mut copied = false;
    let x = exchange_with(&mut sim, c, true, ms(2_000), |s| {
        // The INITIAL with the token just left: its copy reaches the server first.
        let token_initial = initials.borrow().get(1).cloned();
        if let (false, Some(d)) = (copied, token_initial) {
            s.inject(s.now, 0, Dir::Up, client_addr(1), d);
            copied = true;
        }
    });
    sim.tap = None;
    check_whole(&x, "with a copy ahead of it");
    assert!(copied, "the client sent an INITIAL with the RETRY's token");
    let h = sim.server.handshake_counters();
    assert_eq!(sim.server.drops().bad_token, 1, "the copy's token names another address");
    assert_eq!(h.early_accepted - before.early_accepted, 1, "the early data taken: {h:?}");
    assert_eq!(h.retries - before.retries, 1, "one RETRY, to the INITIAL without a token");
}

#[test]
fn only_the_very_initial_from_its_address_gets_the_handshake_again() {
    // A server that made a connection at a 0-RTT INITIAL sends its HANDSHAKE again to a
    // repeat of that INITIAL, and to nothing else that names its original DCID.
    let mut sim = pair(71, server_config(true));
    let t = first_ticket(&mut sim);
    let (_, flight) = captured_flight(&mut sim, &t);
    let now = sim.now;
    let mut server = fleet_server(None);
    replay(&mut server, now, &flight);
    assert_eq!(server.handshake_counters().early_accepted, 1);
    let initial = &flight[0];
    let mut buf = vec![0u8; 65_536];
    let mut answers = |server: &mut Endpoint, from: std::net::SocketAddr, d: &[u8]| {
        server.handle_datagram(now, PathId(0), from, d);
        let mut to_from = Vec::new();
        while let Some(t) = server.poll_transmit(now, &mut buf) {
            if t.remote == from && buf[0] & 0xf8 == 0xd0 {
                to_from.push(t.len);
            }
        }
        to_from
    };
    // From another address: nothing goes there (no amplification towards a victim).
    assert!(answers(&mut server, client_addr(1), initial).is_empty());
    // Changed bytes: not the same INITIAL.
    let mut changed = initial.clone();
    changed[1_100] ^= 1;
    assert!(answers(&mut server, client_addr(0), &changed).is_empty());
    // The very INITIAL from its address: the same HANDSHAKE.
    assert_eq!(answers(&mut server, client_addr(0), initial).len(), 1);
    assert!(server.drops().unexpected >= 2, "{:?}", server.drops());
}

/// Issue 56: a fleet's ticket keys rotate every `rotation_s` on every server alike (each epoch's
/// key derives from the fleet's secret and the epoch's number, so no server tells another).
/// A ticket one server sealed in the middle of an epoch opens at another server in the next
/// epoch (the previous epoch's key is kept), which resumes the connection at one round trip (it
/// is not the issuer, so it takes no early data). Past its lifetime (at most `rotation_s`, so
/// never beyond the next epoch) it opens nowhere, and the connection is made with the full
/// handshake, the request delivered all the same.
#[test]
fn a_fleets_tickets_survive_a_key_rotation_at_another_server() {
    const ROTATION_MS: u64 = 600_000;
    let member = |id: u8| {
        server_config(true).with(|c| {
            c.server.fleet = Some(mpcore::Fleet { server: id, servers: 3, secret: SECRET });
            c.resumption.rotation_s = ROTATION_MS / 1_000;
            c.resumption.lifetime_s = (ROTATION_MS / 1_000) as u32;
        })
    };
    // Issued in the middle of an epoch.
    let mid = (UNIX / ROTATION_MS + 1) * ROTATION_MS + ROTATION_MS / 2;
    let mut first = pair(30, member(0));
    first.client.set_unix_time(0, mid);
    first.server.set_unix_time(0, mid);
    let t = first_ticket(&mut first);
    let next_epoch = mid - mid % ROTATION_MS + ROTATION_MS;
    for (at, opens) in [(next_epoch + 1_000, true), (next_epoch + ROTATION_MS / 2 + 1_000, false)] {
        // The same seed: the simulator's server identity, which the ticket is bound to.
        let mut sim = pair(30, member(1));
        sim.client.set_unix_time(0, at);
        sim.server.set_unix_time(0, at);
        let c = sim.client.connect_resuming(sim.now, PathId(0), server_addr(), &t).unwrap();
        let x = exchange(&mut sim, c, true, ms(3_000));
        check_whole(&x, "after a rotation");
        let h = sim.server.handshake_counters();
        let later = (at - mid) / 1_000;
        assert_eq!((h.resumed, h.early_accepted), (u64::from(opens), 0), "{later} s later at server 1: {h:?}");
    }
}
