//! Issue 19 in the simulator: a flood of INITIALs (a captured one, replayed from many
//! addresses) costs the server at most `retry_above` key agreements per second: beyond, the
//! INITIALs without a token get a RETRY (an HMAC). A real client connecting during the flood
//! pays one round trip more and gets through. The stateless answers wait in a bounded queue.
#![allow(clippy::unwrap_used)]

use mpcore::wire::{Cid, Header, Packet};
use mpcore::{Config, Endpoint, Event, LocalPath, PathId};
use mpsim::apps::{pattern, Bulk};
use mpsim::{client_addr, ms, multimob_paths, server_addr, Dir, Flow, Sim};
use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;

/// A client's INITIAL, as it left.
fn captured_initial() -> Vec<u8> {
    let mut sim = Sim::new(9, Config::default(), Config::default(), multimob_paths()).unwrap();
    let seen = Rc::new(RefCell::new(None));
    let s2 = seen.clone();
    sim.tap = Some(Box::new(move |_t, _p, dir, b| {
        if dir == Dir::Up && s2.borrow().is_none() {
            *s2.borrow_mut() = Some(b.to_vec());
        }
    }));
    sim.connect();
    sim.run(ms(10), |_| Flow::Wake(None));
    let d = seen.borrow().clone().unwrap();
    assert!(matches!(Packet::parse(&d, Cid::LEN).unwrap().header, Header::Initial(_)));
    d
}

/// 20,000 replays of `initial` over one second from 200 addresses, and a real client
/// connecting (and sending 100 KB) in the middle of it. Returns the server's counters and
/// whether the client's data arrived.
fn flood(retry_above: u32, initials_per_source: u32) -> (mpcore::HandshakeCounters, bool) {
    let initial = captured_initial();
    let server = Config { retry_above, initials_per_source, ..Config::server() };
    let mut sim = Sim::new(1, Config::default(), server, multimob_paths()).unwrap();
    for k in 0..20_000u64 {
        let from = SocketAddr::from(([198, 51, 100, (k % 200) as u8 + 1], 40_000 + (k % 200) as u16));
        sim.inject(ms(100) + k * 50, 0, Dir::Up, from, initial.clone());
    }
    let data = pattern(100_000, 1);
    let mut app = Bulk::paced(data.clone(), 100_000, ms(1), 0);
    let mut started = false;
    let done = sim.run(ms(10_000), |s| {
        // The client connects half way through the flood.
        if !started && s.now < ms(600) {
            return Flow::Wake(Some(ms(600)));
        }
        started = true;
        app.drive(s)
    });
    // The rest of the flood.
    sim.run_until(ms(1_200), |_| None);
    (sim.server.handshake_counters(), done && app.received == data)
}

#[test]
fn a_flood_of_initials_costs_at_most_retry_above_key_agreements_per_second() {
    let (on, delivered) = flood(2_000, 0);
    println!("retry_above 2000: {on:?}, client's data delivered: {delivered}");
    // One second of flood: the bucket's burst (a tenth of a second's worth), plus a second
    // of refill.
    assert!(on.answered <= 2_000 + 200 + 1, "{on:?}");
    assert!(on.retries >= 16_000, "{on:?}");
    assert!(delivered, "the real client got through the flood");
    // Without the automatic RETRY every replay costs a key agreement.
    let (off, delivered) = flood(0, 0);
    println!("retry_above 0: {off:?}, client's data delivered: {delivered}");
    assert!(off.answered >= 20_000, "{off:?}");
    assert_eq!(off.retries, 0);
}

/// With a per-source limit (8 a second here; 64 by default), the same flood is answered at
/// most 8 times a second per flooding address (after a burst of 4): the rest costs a table
/// lookup. The real client, from an address of its own, still gets through.
#[test]
fn a_flood_from_few_addresses_is_answered_a_few_times_per_address() {
    let (limited, delivered) = flood(2_000, 8);
    println!("8 per source: {limited:?}, client's data delivered: {delivered}");
    // 200 addresses: a burst of 4 each, then 8 a second over the flood's second, and the client.
    assert!(limited.answered + limited.retries <= 200 * (4 + 8) + 10, "{limited:?}");
    assert!(limited.over_source_limit >= 17_000, "{limited:?}");
    assert!(delivered, "the real client got through the flood");
}

#[test]
fn stateless_answers_wait_in_a_bounded_queue() {
    let initial = captured_initial();
    let paths = vec![LocalPath { addr: server_addr(), iface: mpcore::Iface::Wired, backup: false }];
    let mut ep = Endpoint::new(Config { retry_above: 0, ..Config::server() }, paths, true).unwrap();
    // 2,000 INITIALs and no call to poll_transmit: the answers would pile up.
    for k in 0..2_000u16 {
        ep.handle_datagram(0, PathId(0), SocketAddr::from(([198, 51, 100, 7], 1_000 + k)), &initial);
    }
    let c = ep.handshake_counters();
    assert_eq!((c.answered, c.shed), (1_024, 976), "{c:?}");
    let mut buf = vec![0u8; 65_536];
    let mut queued = 0;
    while ep.poll_transmit(0, &mut buf).is_some() {
        queued += 1;
    }
    assert_eq!(queued, 1_024);
    // Room again: the next one is answered.
    ep.handle_datagram(0, PathId(0), client_addr(0), &initial);
    assert_eq!(ep.handshake_counters().answered, 1_025);
    assert!(ep.poll_event().is_none_or(|(_, e)| e != Event::Connected));
}
