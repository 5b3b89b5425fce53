//! Issue 37 in the simulator: where UDP gets no answer, the client's subflows run over TCP on
//! the same path (PROTOCOL.md §4.11), the simulator's TCP carrier being a reliable in-order
//! pipe that a UDP firewall lets through (`mpsim::tcp`).
#![allow(clippy::unwrap_used)]

use mpcore::{Carrier, Event, PathId, SubflowState};
use mpsim::apps::{pattern, Bulk, Siri, SiriConfig};
use mpsim::{ms, multimob_client, multimob_paths, multimob_server, PathEvent, Sim};

const WIFI: usize = 0;
const CELL: usize = 1;

fn phone(seed: u64) -> Sim {
    let client = multimob_client(oracle::Config::default()).with(|c| c.multipath.tcp_after = Some(ms(1_000)));
    Sim::new(seed, client, multimob_server(), multimob_paths()).unwrap()
}

fn connected_at(events: &[(u64, bool, Event)]) -> Option<u64> {
    events.iter().find(|(_, client, e)| *client && *e == Event::Connected).map(|e| e.0)
}

#[test]
fn udp_blocked_on_every_path_opens_over_tcp_and_answers_every_request() {
    let mut sim = phone(5);
    sim.at(0, WIFI, PathEvent::Firewall(true));
    sim.at(0, CELL, PathEvent::Firewall(true));
    let mut app = Siri::new(SiriConfig { requests: 4, ..SiriConfig::default() }, 5);
    assert!(sim.run(ms(60_000), |s| app.drive(s)), "every request answered");
    // The INITIAL over TCP on both paths at 1 s; WiFi's (15 ms round trip) answers first,
    // and the connection is up a round trip after that.
    let at = connected_at(&app.events).unwrap();
    assert!((ms(1_030)..ms(1_045)).contains(&at), "connected at {at} us");
    let st = sim.client.stats(app.client.unwrap()).unwrap();
    let sf0 = st.subflows.iter().find(|s| s.id == 0).unwrap();
    assert_eq!((sf0.path, sf0.carrier), (PathId(WIFI as u8), Carrier::Tcp), "{st:?}");
    assert_eq!(st.counters.handshakes_elsewhere, 1);
    // Nothing crossed the cellular radio but the INITIALs and the server's answer there:
    // MultiMob opens no cellular subflow while WiFi works, over TCP or not.
    assert!(st.subflows.iter().all(|s| s.path == PathId(WIFI as u8)), "{st:?}");
    let server = sim.server.stats(app.server.unwrap()).unwrap();
    assert_eq!(server.subflows[0].carrier, Carrier::Tcp, "the server answers over the carrier it was reached by");
}

#[test]
fn udp_blocked_on_every_path_uploads_10_mb_intact() {
    let mut sim = phone(6);
    sim.at(0, WIFI, PathEvent::Firewall(true));
    sim.at(0, CELL, PathEvent::Firewall(true));
    let data = pattern(10 << 20, 6);
    let mut app = Bulk::new(data.clone(), false);
    assert!(sim.run(ms(120_000), |s| app.drive(s)), "the upload completed");
    assert!(app.received == data, "every byte intact");
    let st = sim.server.stats(app.server.unwrap()).unwrap();
    assert!(st.subflows.iter().all(|s| s.carrier == Carrier::Tcp), "{st:?}");
}

#[test]
fn udp_blocked_on_wifi_runs_wifi_over_tcp_and_back_over_udp_once_it_passes() {
    let mut sim = phone(7);
    sim.at(0, WIFI, PathEvent::Firewall(true));
    sim.at(ms(5_000), WIFI, PathEvent::Firewall(false));
    let cfg = SiriConfig { requests: 8, start: ms(400), ..SiriConfig::default() };
    let mut app = Siri::new(cfg, 7);
    let mut wifi_tcp_bytes_at_5s = None;
    assert!(sim.run(ms(90_000), |s| {
        if wifi_tcp_bytes_at_5s.is_none() && s.now >= ms(5_000) {
            let st = s.client.stats(app.client.unwrap()).unwrap();
            let tcp = st.subflows.iter().filter(|f| f.path == PathId(WIFI as u8) && f.carrier == Carrier::Tcp);
            wifi_tcp_bytes_at_5s = Some(tcp.map(|f| f.counters.data_bytes_sent).sum::<u64>());
        }
        app.drive(s)
    }));
    for r in &app.results {
        let worst = r.ir_delays.iter().chain([&r.delay]).map(|d| d.unwrap()).max().unwrap();
        assert!(worst < ms(100), "a request waited {worst} us: {r:?}");
    }
    let st = sim.client.stats(app.client.unwrap()).unwrap();
    // Connected over cellular UDP; the WiFi join over UDP went unanswered for 1 s and a TCP
    // join on WiFi won the race and carried the requests until UDP passed again.
    let sf0 = st.subflows.iter().find(|s| s.id == 0).unwrap();
    assert_eq!((sf0.path, sf0.carrier), (PathId(CELL as u8), Carrier::Udp));
    assert!(wifi_tcp_bytes_at_5s.unwrap() > 10_000, "WiFi over TCP carried requests: {st:?}");
    let wifi = |c| st.subflows.iter().find(|s| s.path == PathId(WIFI as u8) && s.carrier == c).unwrap();
    assert_eq!(wifi(Carrier::Udp).state, SubflowState::Established, "{st:?}");
    assert!(wifi(Carrier::Udp).counters.data_bytes_sent > 10_000, "back over UDP: {st:?}");
    assert_ne!(wifi(Carrier::Tcp).state, SubflowState::Established, "the TCP subflow closed: {st:?}");
}

#[test]
fn paths_that_answer_over_udp_never_open_tcp() {
    for seed in 1..=5 {
        let mut sim = phone(seed);
        // A lossy WiFi and a cellular path: UDP answers, if not always at once.
        sim.at(0, WIFI, PathEvent::Loss(0.05));
        let mut app = Siri::new(SiriConfig { requests: 4, ..SiriConfig::default() }, seed);
        assert!(sim.run(ms(60_000), |s| app.drive(s)));
        let st = sim.client.stats(app.client.unwrap()).unwrap();
        assert!(st.subflows.iter().all(|s| s.carrier == Carrier::Udp), "seed {seed}: {st:?}");
    }
}

#[test]
fn over_tcp_the_subflow_leaves_loss_repair_to_tcp() {
    // One path, 1% loss, UDP blocked: every subflow runs over TCP, which repairs each loss in
    // its RTO and a round trip (the simulator's 200 ms + 15 ms). A subflow that also ran its
    // tail loss probe and 200 ms RTOs would fire during each repair, queue a duplicate behind
    // it and collapse its window: requests then waited over 2 s (PROTOCOL.md §4.11).
    for seed in 1..=5 {
        let paths: Vec<mpsim::PathConfig> = multimob_paths().into_iter().take(1).collect();
        let client = multimob_client(oracle::Config::default()).with(|c| c.multipath.tcp_after = Some(ms(1_000)));
        let mut sim = Sim::new(seed, client, multimob_server(), paths).unwrap();
        sim.at(0, WIFI, PathEvent::Loss(0.01));
        sim.at(0, WIFI, PathEvent::Firewall(true));
        let mut app = Siri::new(SiriConfig { requests: 10, start: ms(2_000), ..SiriConfig::default() }, seed);
        assert!(sim.run(ms(300_000), |s| app.drive(s)));
        let st = sim.client.stats(app.client.unwrap()).unwrap();
        assert!(st.subflows.iter().all(|s| s.carrier == Carrier::Tcp && s.counters.tlp_count == 0), "{st:?}");
        for r in &app.results {
            let worst = r.max_burst_delay().unwrap();
            assert!(worst < ms(500), "seed {seed}: a request waited {worst} us");
        }
    }
}

/// How long after now the client's connection `h` connected, running the simulation until it
/// did (for at most `within`).
fn run_until_connected(sim: &mut Sim, h: mpcore::ConnHandle, within: u64) -> Option<u64> {
    let start = sim.now;
    let deadline = start + within;
    let mut at = None;
    sim.run(deadline, |s| {
        while let Some((ch, e)) = s.client.poll_event() {
            if ch == h && e == Event::Connected {
                at = Some(s.now - start);
            }
        }
        while s.server.accept().is_some() {}
        if at.is_some() {
            mpsim::Flow::Done
        } else {
            mpsim::Flow::Wake(None)
        }
    });
    at
}

#[test]
fn the_endpoint_remembers_a_network_that_drops_udp_for_its_next_connections() {
    // UDP dropped everywhere: the first connection waits for the 1 s bound; the next one
    // from the same endpoint tries TCP with its first INITIAL and connects in round trips.
    let mut sim = phone(8);
    sim.change(WIFI, PathEvent::Firewall(true));
    sim.change(CELL, PathEvent::Firewall(true));
    let first = sim.connect();
    let t1 = run_until_connected(&mut sim, first, ms(10_000)).unwrap();
    assert!(t1 > ms(1_000), "first connection at {t1} us");
    let second = sim.connect();
    let t2 = run_until_connected(&mut sim, second, ms(10_000)).unwrap();
    assert!(t2 < ms(100), "second connection at {t2} us");
    let st = sim.client.stats(second).unwrap();
    assert!(st.subflows.iter().all(|s| s.carrier == Carrier::Tcp), "{st:?}");
    // UDP dropped on WiFi only: the next connection tries cellular with its first INITIAL.
    let mut sim = phone(9);
    sim.change(WIFI, PathEvent::Firewall(true));
    let first = sim.connect();
    run_until_connected(&mut sim, first, ms(10_000)).unwrap();
    // Until the join race tells the endpoint (1 s after the connection).
    let later = sim.now + ms(2_000);
    sim.run_until(later, |_| None);
    let second = sim.connect();
    let t2 = run_until_connected(&mut sim, second, ms(10_000)).unwrap();
    assert!(t2 < ms(100), "second connection at {t2} us");
}
