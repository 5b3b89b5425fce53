//! Issue 5 in the simulator: FAST_JOIN after a primary failure, and its defences.
//!
//! Paths as in MultiMob's emulation: WiFi (15 ms RTT) and cellular (25 ms RTT), 10 Mbit/s,
//! one-BDP queues. The client runs the on-demand path manager: no cellular subflow until
//! WiFi's subflow times out, then a join (fast or the four-packet MP_JOIN).
#![allow(clippy::unwrap_used)]

use mpcore::Iface;
use mpcore::{Config, Event, Faults, PathManager};
use mpsim::apps::{pattern, Bulk, Siri, SiriConfig};
use mpsim::{client_addr, ms, multimob_paths, Dir, Flow, PathConfig, PathEvent, Sim};

fn client(fast_join: bool) -> Config {
    Config::default().with(|c| {
        c.multipath.path_manager = PathManager::OnDemand;
        c.transport.keep_alive = 0;
        c.multipath.fast_join = fast_join;
    })
}

fn server(fast_join: bool) -> Config {
    Config::default().with(|c| {
        c.multipath.scheduler = "last-received".into();
        c.transport.keep_alive = 0;
        c.multipath.fast_join = fast_join;
    })
}

/// Two Siri requests; WiFi goes down 1 s before the second. Returns the second request's
/// largest delay over its bursts, the first request's, and the client's subflow events.
fn siri_after_failure(fast_join: bool, seed: u64) -> (u64, u64, Vec<Event>) {
    let mut sim = Sim::new(seed, client(fast_join), server(fast_join), multimob_paths()).unwrap();
    let mut app = Siri::new(SiriConfig { requests: 2, ..SiriConfig::default() }, seed);
    assert!(sim.run(ms(7_000), |s| app.drive(s)) || app.results.len() == 1);
    let second_start = app.results[0].start + ms(8 * 300 + 5_000);
    sim.at(second_start - ms(1_000), 0, PathEvent::Down);
    assert!(sim.run(ms(60_000), |s| app.drive(s)), "both requests answered");
    let events = app.events.iter().filter(|e| e.1).map(|e| e.2).collect();
    (app.results[1].max_burst_delay().unwrap(), app.results[0].max_burst_delay().unwrap(), events)
}

#[test]
fn a_fast_join_answers_the_first_request_after_a_failure_at_least_one_rtt_sooner() {
    let cellular_rtt = ms(25);
    for seed in [1, 2, 3] {
        let (fast, fast_before, fast_events) = siri_after_failure(true, seed);
        let (regular, regular_before, regular_events) = siri_after_failure(false, seed);
        println!(
            "seed {seed}: max delay of the request after the failure: FAST_JOIN {:.1} ms, MP_JOIN {:.1} ms \
             (before the failure: {:.1} / {:.1} ms)",
            fast as f64 / 1e3,
            regular as f64 / 1e3,
            fast_before as f64 / 1e3,
            regular_before as f64 / 1e3
        );
        assert!(fast_before < ms(60) && regular_before < ms(60), "healthy requests are fast");
        // Both opened the cellular subflow only after WiFi's failed.
        for events in [&fast_events, &regular_events] {
            let failed = events.iter().position(|e| matches!(e, Event::SubflowFailed { id: 0 }));
            let joined = events.iter().position(|e| matches!(e, Event::SubflowEstablished { id: 1, .. }));
            assert!(failed.is_some() && joined > failed, "{events:?}");
        }
        // One cellular RTT sooner, give or take a millisecond of ACK timing.
        assert!(fast + cellular_rtt - ms(1) <= regular, "FAST_JOIN {fast} us vs MP_JOIN {regular} us");
    }
}

#[test]
fn the_data_in_a_fast_join_is_delivered_at_once() {
    // An upload whose WiFi fails mid-way: the client's first packet on cellular carries the
    // oldest unacknowledged data, and the server acknowledges it in its first reply.
    let mut sim = Sim::new(4, client(true), server(true), multimob_paths()).unwrap();
    let data = pattern(2 << 20, 4);
    let mut app = Bulk::new(data.clone(), false);
    sim.at(ms(800), 0, PathEvent::Down);
    assert!(sim.run(ms(60_000), |s| app.drive(s)), "the upload completes over cellular");
    assert_eq!(app.received, data);
    let cl = sim.client.conn(app.client.unwrap()).unwrap().stats();
    let cell = cl.subflows.iter().find(|s| s.id == 1).unwrap();
    assert!(cell.counters.data_bytes_sent > 0);
    // The first datagram on cellular is the JOIN: large, because it carries data.
    let first_up = sim.path_log(1).iter().find(|e| e.dir == Dir::Up).unwrap();
    assert!(first_up.size > 1000, "the FAST_JOIN_OUT carries a full packet of data: {first_up:?}");
    let sv = sim.server.drops();
    assert_eq!(sv.refused + sv.bad_hmac + sv.replayed_join, 0, "{sv:?}");
    // The rest of the flight follows the JOIN in JOIN packets, before the reply (§5.9).
    let log = sim.path_log(1);
    let k = log.iter().position(|e| e.dir == Dir::Up).unwrap();
    let first_down = log[k..].iter().position(|e| e.dir == Dir::Down).map(|p| k + p).unwrap();
    assert!(first_down - k > 1, "the first flight is more than the JOIN: {:?}", &log[k..first_down]);
    // Until the client's next packet on cellular after the server's answer validates the
    // address, the server sends at most three times what it received there (§10).
    let up: usize = log[k..first_down].iter().map(|e| e.size).sum();
    let next_up = log[first_down..].iter().position(|e| e.dir == Dir::Up).map_or(log.len(), |p| first_down + p);
    let down: usize = log[first_down..next_up].iter().filter(|e| e.dir == Dir::Down).map(|e| e.size).sum();
    assert!(down > 0 && down <= 3 * up, "{down} bytes answered {up} received");
}

type Captured = std::rc::Rc<std::cell::RefCell<Vec<(usize, Dir, Vec<u8>)>>>;

fn capture(sim: &mut Sim) -> Captured {
    let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let l2 = log.clone();
    sim.tap = Some(Box::new(move |_t, path, dir, bytes| l2.borrow_mut().push((path, dir, bytes.to_vec()))));
    log
}

#[test]
fn a_captured_fast_join_replayed_from_another_address_delivers_nothing_twice() {
    let mut sim = Sim::new(5, client(true), server(true), multimob_paths()).unwrap();
    let log = capture(&mut sim);
    let data = pattern(1 << 20, 5);
    let mut app = Bulk::new(data.clone(), false);
    sim.at(ms(500), 0, PathEvent::Down);
    assert!(sim.run(ms(60_000), |s| app.drive(s)));
    // The client's first datagram on cellular: the FAST_JOIN_OUT, with data.
    let fjo = log.borrow().iter().find(|(p, d, _)| *p == 1 && *d == Dir::Up).map(|c| c.2.clone()).unwrap();
    let before = *sim.server.drops();
    let read_before = sim.server.conn(app.server.unwrap()).unwrap().stats().counters.bytes_read;
    // Replayed from another address (and again from the client's own, later).
    let attacker = "192.0.2.66:4000".parse().unwrap();
    let t = sim.now + ms(10);
    sim.inject(t, 1, Dir::Up, attacker, fjo.clone());
    sim.inject(t + ms(1), 1, Dir::Up, client_addr(1), fjo.clone());
    sim.run(t + ms(500), |_| Flow::Wake(None));
    let d = *sim.server.drops();
    assert_eq!(d.replayed_join - before.replayed_join, 2, "both replays dropped and counted: {d:?}");
    let st = sim.server.conn(app.server.unwrap()).unwrap().stats();
    assert_eq!(st.counters.bytes_read, read_before, "no byte delivered again");
    assert!(!st.subflows.iter().any(|s| s.remote.ip() == attacker.ip()), "no subflow towards the attacker");
    assert_eq!(app.received, data);
}

/// Three paths: WiFi, and two cellular ones, for a client that opens two fast joins at once.
fn three_paths() -> Vec<PathConfig> {
    let mut p = multimob_paths();
    p.push(PathConfig::new(client_addr(2), Iface::Cellular, 30, 10));
    p
}

#[test]
fn a_second_fast_join_out_for_the_same_dsn_is_refused_by_the_replay_window() {
    // A faulty client sends FAST_JOIN_OUT for the same DSN on both cellular paths: the server
    // accepts the first and refuses the second as a replay, silently; the transfer goes on.
    let faulty = client(true).with(|c| c.faults = Faults { repeat_fast_join_dsn: true, ..Faults::default() });
    let mut sim = Sim::new(6, faulty, server(true), three_paths()).unwrap();
    let data = pattern(1 << 20, 6);
    let mut app = Bulk::new(data.clone(), false);
    sim.at(ms(500), 0, PathEvent::Down);
    // Both fast joins have arrived 700 ms after the failure (a repeat of the refused one, a
    // FAST_JOIN_IN after its retransmission timeout, may make a subflow later).
    sim.run(ms(1_200), |s| app.drive(s));
    let d = sim.server.drops();
    assert_eq!(d.replayed_join, 1, "the second FAST_JOIN_OUT meets the window: {d:?}");
    let st = sim.server.conn(app.server.unwrap()).unwrap().stats();
    assert_eq!(st.subflows.len(), 2, "subflow 0 and the one accepted fast join");
    assert!(sim.run(ms(60_000), |s| app.drive(s)));
    assert_eq!(app.received, data);
}

#[test]
fn a_forged_fast_join_hmac_is_refused_and_counted() {
    // UDP only: over TCP the refused join's path would be raced by a TCP join (a valid
    // MP_JOIN), which is not what this test looks at.
    let faults = Faults { forge_fast_join_hmac: true, ..Faults::default() };
    let faulty = client(true).with(|c| {
        c.faults = faults;
        c.multipath.tcp_after = None;
    });
    let mut sim = Sim::new(7, faulty, server(true), multimob_paths()).unwrap();
    let data = pattern(4 << 20, 7);
    let mut app = Bulk::new(data, false);
    sim.at(ms(500), 0, PathEvent::Down);
    sim.run(ms(5_000), |s| app.drive(s));
    let d = sim.server.drops();
    assert!(d.bad_hmac >= 1, "{d:?}");
    let st = sim.server.conn(app.server.unwrap()).unwrap().stats();
    assert_eq!(st.subflows.len(), 1, "no subflow from a forged join");
}

#[test]
fn a_lost_join_is_sent_again_and_the_transfer_completes() {
    // Cellular is down until 1.5 s; WiFi fails at 0.5 s. The first join (fast or not) is lost;
    // its repeat after the join's RTO gets through.
    for fast_join in [true, false] {
        let mut sim = Sim::new(8, client(fast_join), server(fast_join), multimob_paths()).unwrap();
        let data = pattern(2 << 20, 8);
        let mut app = Bulk::new(data.clone(), false);
        sim.at(0, 1, PathEvent::Down);
        sim.at(ms(500), 0, PathEvent::Down);
        sim.at(ms(1_500), 1, PathEvent::Up);
        assert!(sim.run(ms(60_000), |s| app.drive(s)), "fast_join {fast_join}: the upload completes");
        assert_eq!(app.received, data);
        let lost = sim.path_log(1).iter().filter(|e| e.dir == Dir::Up && e.time < ms(1_500)).count();
        assert!(lost >= 1, "a join was sent while cellular was down");
        let cl = sim.client.conn(app.client.unwrap()).unwrap().stats();
        assert!(cl.subflows.iter().any(|s| s.id == 1 && s.counters.data_bytes_sent > 0));
    }
}
