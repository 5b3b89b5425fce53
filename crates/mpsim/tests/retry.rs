//! RETRY (PROTOCOL.md §4.1): the client's INITIAL with a RETRY's token, a flood of INITIALs that
//! creates no state, and the token's copies on another path or over a TCP carrier, whose
//! address it does not name.
#![allow(clippy::unwrap_used)]

mod common;

use common::{capture, cfg};
use mpcore::PathManager;
use mpsim::apps::{pattern, Bulk};
use mpsim::{ms, multimob_paths, Flow, Sim};

/// A transfer of `bytes` to a server that asks every INITIAL for a RETRY: the simulator, and the
/// client's two INITIALs (without a token, then with the RETRY's).
fn retried(bytes: usize) -> (Sim, Vec<Vec<u8>>) {
    let server = cfg(PathManager::OnDemand).with(|c| c.server.require_retry = true);
    let mut sim = Sim::new(9, cfg(PathManager::OnDemand), server, multimob_paths()).unwrap();
    let log = capture(&mut sim);
    let mut app = Bulk::new(pattern(bytes, 2), false);
    assert!(sim.run(ms(10_000), |s| app.drive(s)));
    let initials: Vec<Vec<u8>> =
        log.borrow().iter().filter(|(_, _, b)| b[0] & 0xf8 == 0xc0).map(|(_, _, b)| b.clone()).collect();
    assert_eq!(initials.len(), 2, "INITIAL, then INITIAL with the RETRY's token");
    let retries = log.borrow().iter().filter(|(_, _, b)| b[0] & 0xf8 == 0xc8).count();
    assert_eq!(retries, 1);
    (sim, initials)
}

#[test]
fn retry_then_handshake_and_a_flood_of_initials_creates_no_state() {
    let (mut sim, initials) = retried(100_000);
    // A flood of first packets from many addresses: RETRYs only, no connection, no state.
    let live = sim.server.live_connections();
    for k in 0..1000u32 {
        let from = std::net::SocketAddr::from(([198, 18, (k >> 8) as u8, k as u8], 1000));
        sim.inject(sim.now + u64::from(k), 0, mpsim::Dir::Up, from, initials[0].clone());
    }
    sim.run(sim.now + ms(2_000), |_| Flow::Wake(None));
    assert_eq!(sim.server.live_connections(), live);
    // The token-bearing INITIAL replayed from other addresses fails validation.
    for k in 0..10u32 {
        let from = std::net::SocketAddr::from(([198, 19, 0, k as u8], 1000));
        sim.inject(sim.now + u64::from(k), 0, mpsim::Dir::Up, from, initials[1].clone());
    }
    sim.run(sim.now + ms(1_000), |_| Flow::Wake(None));
    assert_eq!(sim.server.drops().bad_token, 10);
    assert_eq!(sim.server.live_connections(), live);
}

/// A client's INITIAL goes, byte for byte, on every path and carrier (PROTOCOL.md §4.10), with
/// the token of the one RETRY it took, which names the address of the UDP path it came on.
/// Over a TCP carrier the client's address is another (the TCP socket's port), and TCP's own
/// handshake proved it: the server neither checks that token nor asks for a RETRY there. Before,
/// every token-bearing INITIAL raced over TCP was dropped as `bad_token`, and a loaded server's
/// connect could stall until UDP answered (3 to 8 of the `scale` bench's 50,000 connects
/// failed).
#[test]
fn an_initial_over_tcp_is_answered_whatever_its_udp_token() {
    let (mut sim, initials) = retried(10_000);
    let before = sim.server.handshake_counters();
    // The TCP carrier's end: the client's address, another port.
    let tcp_end = std::net::SocketAddr::from(([10, 0, 1, 2], 40_000));
    let now = sim.now;
    for d in &initials {
        sim.server.handle_carried(now, mpcore::PathId(0), tcp_end, mpcore::Carrier::Tcp, d);
    }
    let after = sim.server.handshake_counters();
    assert_eq!(sim.server.drops().bad_token, 0, "the UDP path's token is not checked over TCP");
    assert_eq!(after.retries, before.retries, "no RETRY over TCP, even where every INITIAL gets one");
    assert_eq!(after.answered, before.answered + 2, "both INITIALs answered with a HANDSHAKE");
    // The same token-bearing INITIAL over UDP from that address (another path's copy): its token
    // names another address, so it is counted, and dropped by a server that would ask for a
    // RETRY (the client takes one per attempt, and a RETRY would record the 0-RTT binder that
    // the copy on the token's own path carries too).
    sim.server.handle_carried(now, mpcore::PathId(0), tcp_end, mpcore::Carrier::Udp, &initials[1]);
    let last = sim.server.handshake_counters();
    assert_eq!(sim.server.drops().bad_token, 1);
    assert_eq!((last.retries, last.answered), (after.retries, after.answered), "dropped");
}

/// A server that asks for RETRYs only under load answers an INITIAL whose token names another
/// address (the copy, on a second path, of an INITIAL a RETRY answered on the first) with a
/// HANDSHAKE once the load is gone, instead of dropping it until the client gives up on the
/// attempt.
#[test]
fn an_initial_with_another_paths_token_is_answered_when_no_retry_is_needed() {
    let (_, initials) = retried(10_000);
    let with_token = &initials[1];
    // A server with the same keys (the same seed) that asks no RETRY, and the INITIAL from
    // another address than the token names: the copy of the INITIAL on a second path.
    let mut sim2 = Sim::new(9, cfg(PathManager::OnDemand), cfg(PathManager::OnDemand), multimob_paths()).unwrap();
    let other_path = std::net::SocketAddr::from(([10, 0, 2, 2], 40_000));
    let now = sim2.now;
    sim2.server.handle_carried(now, mpcore::PathId(0), other_path, mpcore::Carrier::Udp, with_token);
    assert_eq!(sim2.server.drops().bad_token, 1, "counted");
    assert_eq!(sim2.server.handshake_counters().answered, 1, "and answered with a HANDSHAKE");
}
