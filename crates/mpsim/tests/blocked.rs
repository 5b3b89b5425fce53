//! Issue 37 in the simulator: a network that drops UDP (`PathEvent::Firewall`) on the path a
//! connection is opened on. After `Config::multipath.other_paths_after` without an answer the client
//! sends its INITIAL on its other paths too (PROTOCOL.md §4.10); the connection is made on the
//! path that answers, and the client joins the first path, which carries data again once the
//! firewall lets UDP through.
#![allow(clippy::unwrap_used)]

use mpcore::{CloseReason, Event, PathId, SubflowState};
use mpsim::apps::{Siri, SiriConfig};
use mpsim::{ms, multimob_client, multimob_paths, multimob_server, Dir, PathEvent, Sim};
use std::cell::RefCell;
use std::rc::Rc;

const WIFI: usize = 0;
const CELL: usize = 1;

/// Every INITIAL the client sent, as (time, path).
type Initials = Rc<RefCell<Vec<(u64, usize)>>>;

fn tap_initials(sim: &mut Sim) -> Initials {
    let seen: Initials = Rc::new(RefCell::new(Vec::new()));
    let log = seen.clone();
    sim.tap = Some(Box::new(move |t, path, dir, d: &[u8]| {
        // A long header of type 0 (PROTOCOL.md §3.1).
        if dir == Dir::Up && d[0] & 0x80 != 0 && (d[0] >> 3) & 7 == 0 {
            log.borrow_mut().push((t, path));
        }
    }));
    seen
}

/// The MultiMob phone, over UDP only (the TCP carrier's tests are `tcp_carrier.rs`).
fn phone(other_paths_after: Option<u64>) -> Sim {
    let client = multimob_client(oracle::Config::default()).with(|c| {
        c.multipath.other_paths_after = other_paths_after;
        c.multipath.tcp_after = None;
    });
    Sim::new(3, client, multimob_server(), multimob_paths()).unwrap()
}

fn connected_at(events: &[(u64, bool, Event)]) -> Option<u64> {
    events.iter().find(|(_, client, e)| *client && *e == Event::Connected).map(|e| e.0)
}

#[test]
fn udp_blocked_on_wifi_opens_on_cellular_and_wifi_carries_data_once_it_passes_again() {
    let mut sim = phone(Some(ms(250)));
    let initials = tap_initials(&mut sim);
    sim.at(0, WIFI, PathEvent::Firewall(true));
    sim.at(ms(3_000), WIFI, PathEvent::Firewall(false));
    // The first request is written once the connection is up (and the client has opened its
    // join of WiFi, which must carry none of it while WiFi has not answered).
    let cfg = SiriConfig { requests: 6, start: ms(400), ..SiriConfig::default() };
    let mut app = Siri::new(cfg, 3);
    assert!(sim.run(ms(60_000), |s| app.drive(s)), "every request answered");
    for r in &app.results {
        let worst = r.ir_delays.iter().chain([&r.delay]).map(|d| d.unwrap()).max().unwrap();
        assert!(worst < ms(100), "a request waited {worst} us: {r:?}");
    }
    // One INITIAL on WiFi, its copy on cellular at the bound; connected two cellular round
    // trips (25 ms) later: the HANDSHAKE's, then the CONFIRM's and the server's first packet.
    let at = connected_at(&app.events).unwrap();
    assert!((ms(300)..ms(310)).contains(&at), "connected at {at} us");
    let sent = initials.borrow().clone();
    assert_eq!(sent, [(0, WIFI), (ms(250), CELL)], "the INITIALs");
    let c = app.client.unwrap();
    let st = sim.client.stats(c).unwrap();
    assert_eq!(st.counters.handshakes_elsewhere, 1, "{st:?}");
    // Subflow 0 lives on cellular; the client joined WiFi, which came through once the
    // firewall opened, and carried the requests after that.
    let sf0 = st.subflows.iter().find(|s| s.id == 0).unwrap();
    assert_eq!(sf0.path, PathId(CELL as u8));
    let wifi = st.subflows.iter().find(|s| s.path == PathId(WIFI as u8)).unwrap();
    assert_eq!(wifi.state, SubflowState::Established, "{st:?}");
    assert!(wifi.counters.bytes_sent > 10_000, "WiFi carried requests: {wifi:?}");
    // MultiMob treats the cellular subflow as a failover one: once WiFi has worked for the
    // hold time, the fail-back closes it and the cellular radio may sleep.
    let fail_back = app.events.iter().find(|e| e.1 && e.2 == Event::FailBack).map(|e| e.0);
    assert!(fail_back.is_some_and(|t| t > ms(3_000)), "{:?}", app.events);
    assert_ne!(sf0.state, SubflowState::Established, "{sf0:?}");
    let air = sim.air_log(CELL);
    let late = air.iter().filter(|e| e.time > fail_back.unwrap() + ms(1_000)).count();
    assert_eq!(late, 0, "cellular stayed quiet after the fail-back: {late} datagrams");
}

#[test]
fn without_the_bound_a_first_path_that_drops_udp_fails_the_connection() {
    // The behaviour before issue 37, and the mutation this guards: only the first path.
    let mut sim = phone(None);
    let initials = tap_initials(&mut sim);
    sim.at(0, WIFI, PathEvent::Firewall(true));
    let mut app = Siri::new(SiriConfig { requests: 1, ..SiriConfig::default() }, 3);
    sim.run(ms(120_000), |s| app.drive(s));
    assert!(app.events.iter().any(|(_, c, e)| *c && *e == Event::Closed { reason: CloseReason::HandshakeTimeout }));
    assert!(initials.borrow().iter().all(|&(_, p)| p == WIFI), "{:?}", initials.borrow());
    assert_eq!(initials.borrow().len(), 6, "max_handshake_attempts");
}

#[test]
fn a_first_path_that_answers_leaves_the_cellular_radio_alone() {
    for seed in 1..=5 {
        let client = multimob_client(oracle::Config::default());
        let mut sim = Sim::new(seed, client, multimob_server(), multimob_paths()).unwrap();
        let initials = tap_initials(&mut sim);
        let cell_before = Rc::new(RefCell::new(0usize));
        let mut app = Siri::new(SiriConfig { requests: 2, ..SiriConfig::default() }, seed);
        let seen = cell_before.clone();
        assert!(sim.run(ms(30_000), |s| {
            if connected_at(&app.events).is_none() {
                *seen.borrow_mut() = s.air_log(CELL).len();
            }
            app.drive(s)
        }));
        assert_eq!(initials.borrow().as_slice(), [(0, WIFI)], "seed {seed}");
        assert_eq!(*cell_before.borrow(), 0, "seed {seed}: nothing on the cellular radio before connecting");
        let st = sim.client.stats(app.client.unwrap()).unwrap();
        assert_eq!(st.counters.handshakes_elsewhere, 0);
    }
}

#[test]
fn blocked_everywhere_every_path_carries_each_repeat_and_the_handshake_times_out() {
    let mut sim = phone(Some(ms(250)));
    let initials = tap_initials(&mut sim);
    sim.at(0, WIFI, PathEvent::Firewall(true));
    sim.at(0, CELL, PathEvent::Firewall(true));
    let mut app = Siri::new(SiriConfig { requests: 1, ..SiriConfig::default() }, 3);
    sim.run(ms(120_000), |s| app.drive(s));
    assert!(app.events.iter().any(|(_, c, e)| *c && *e == Event::Closed { reason: CloseReason::HandshakeTimeout }));
    let sent = initials.borrow();
    let on = |p| sent.iter().filter(|s| s.1 == p).count();
    // The first INITIAL and its 5 repeats on WiFi; on cellular the copy at the bound and one
    // with each repeat.
    assert_eq!((on(WIFI), on(CELL)), (6, 6), "{sent:?}");
}

#[test]
fn a_slow_first_path_and_its_copy_race_and_the_first_answer_wins() {
    // WiFi's round trip (400 ms) is longer than the bound: the cellular copy (250 + 25 ms)
    // answers first; the WiFi answer that follows finds the handshake done and is dropped.
    let mut sim = phone(Some(ms(250)));
    let initials = tap_initials(&mut sim);
    sim.change(WIFI, PathEvent::Delay(ms(200)));
    let mut app = Siri::new(SiriConfig { requests: 2, ..SiriConfig::default() }, 3);
    sim.run(ms(1_000), |s| {
        let f = app.drive(s);
        if connected_at(&app.events).is_some() {
            mpsim::Flow::Done
        } else {
            f
        }
    });
    let at = connected_at(&app.events).unwrap();
    assert!(at < ms(310), "connected at {at} us");
    // The handshake's round trip is not timed from the first INITIAL (that would say 275 ms
    // for a 25 ms path): the first sample comes from the CONFIRM's acknowledgement.
    let st = sim.client.stats(app.client.unwrap()).unwrap();
    let srtt = st.subflows.iter().find(|s| s.id == 0).unwrap().srtt_us;
    assert!(srtt < ms(100), "srtt {srtt} us");
    assert!(sim.run(ms(30_000), |s| app.drive(s)));
    assert_eq!(initials.borrow().as_slice(), [(0, WIFI), (ms(250), CELL)]);
    let st = sim.client.stats(app.client.unwrap()).unwrap();
    assert_eq!(st.counters.handshakes_elsewhere, 1);
    let sf0 = st.subflows.iter().find(|s| s.id == 0).unwrap();
    assert_eq!(sf0.path, PathId(CELL as u8));
    // The server made one connection, not two.
    assert_eq!(sim.server.handles().count(), 1);
}
