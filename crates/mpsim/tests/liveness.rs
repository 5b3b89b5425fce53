//! Issue 35: every end of a dead peer is noticed. A peer that disappears while our data
//! awaits it is given up after the peer timeout, with what happened; an idle connection ends
//! at the smaller of both sides' idle timeouts (PROTOCOL.md §7).
#![allow(clippy::unwrap_used)]

use mpcore::{CloseReason, Config, Event, PathManager, Time};
use mpsim::apps::Bulk;
use mpsim::{ms, Dir, Flow, PathEvent, Sim, Verdict};

/// The last datagram `dir` delivered on any path.
fn last_delivered(sim: &Sim, dir: Dir) -> Time {
    (0..sim.path_count())
        .flat_map(|p| sim.path_log(p).iter())
        .filter(|e| e.dir == dir && e.verdict == Verdict::Delivered)
        .map(|e| e.time)
        .max()
        .unwrap()
}

#[test]
fn a_peer_gone_while_data_awaits_it_is_declared_dead_within_the_bound() {
    // An upload of 20 MB on both paths; at 1 s every path goes silent for good. The idle
    // timeout is a minute: only the peer timeout (10 s) can end the client's wait sooner.
    let c = Config::default().with(|c| {
        c.transport.idle_timeout = ms(60_000);
        c.multipath.path_manager = PathManager::Fullmesh;
    });
    let mut sim = Sim::new(3, c.clone(), c, mpsim::multimob_paths()).unwrap();
    let mut app = Bulk::new(vec![5; 20 << 20], false);
    sim.at(ms(1_000), 0, PathEvent::Down);
    sim.at(ms(1_000), 1, PathEvent::Down);
    sim.run(ms(30_000), |s| Flow::Wake(app.step(s)));
    let heard = last_delivered(&sim, Dir::Down);
    let closed = app.events.iter().find(|e| e.1 && matches!(e.2, Event::Closed { .. })).copied();
    let Some((at, _, Event::Closed { reason })) = closed else { panic!("the client never closed: {:?}", app.events) };
    println!("last heard at {} ms; closed at {} ms: {reason}", heard / 1000, at / 1000);
    let CloseReason::PeerUnresponsive { probes, silent_ms, paths } = reason else { panic!("closed for {reason:?}") };
    assert!(
        (ms(9_900)..ms(10_100)).contains(&(at - heard)),
        "gave up {} ms after the last answer",
        (at - heard) / 1000
    );
    assert!(silent_ms.abs_diff((at - heard) / 1000) <= 5, "{silent_ms} ms of silence reported");
    assert!(probes >= 4, "{probes} unanswered probes");
    assert_eq!(paths, 0b11, "both paths were tried");
    assert!(reason.to_string().contains("on paths 0, 1"), "{reason}");
    assert_eq!(sim.client.live_connections(), 0);
}

#[test]
fn a_silent_peer_with_nothing_awaiting_it_is_left_to_the_idle_timeout() {
    // The same outage after the upload completed: nothing awaits the peer, so the idle
    // timeout (20 s) ends the connection, not the peer timeout.
    let c = Config::default().with(|c| {
        c.transport.idle_timeout = ms(20_000);
        c.transport.keep_alive = 0;
    });
    let mut sim = Sim::new(4, c.clone(), c, mpsim::multimob_paths()).unwrap();
    let mut app = Bulk::new(vec![5; 10_000], false);
    sim.at(ms(1_000), 0, PathEvent::Down);
    sim.at(ms(1_000), 1, PathEvent::Down);
    sim.run(ms(30_000), |s| Flow::Wake(app.step(s)));
    let closed: Vec<_> = app.events.iter().filter(|e| e.1 && matches!(e.2, Event::Closed { .. })).collect();
    assert_eq!(closed.len(), 1, "{:?}", app.events);
    assert_eq!(closed[0].2, Event::Closed { reason: CloseReason::IdleTimeout });
}

#[test]
fn the_idle_timeout_is_the_smaller_of_both_sides() {
    // The phone says 30 s, the server 120 s (its preset); no keep-alives. After a small
    // exchange the connection is idle: the server lets it go 30 s after it last heard the
    // phone, as the phone does (RFC 9000 §10.1), not after 120 s.
    let phone = Config::phone().with(|c| {
        c.transport.idle_timeout = ms(30_000);
        c.transport.keep_alive = 0;
    });
    let server = Config::server();
    assert_eq!(server.transport.idle_timeout, ms(120_000));
    let mut sim = Sim::new(5, phone, server, mpsim::multimob_backup_paths()).unwrap();
    let mut app = Bulk::new(vec![1; 3_000], false);
    sim.run(ms(200_000), |s| Flow::Wake(app.step(s)));
    assert_eq!(app.received.len(), 3_000);
    let up = last_delivered(&sim, Dir::Up);
    let server_closed = app.events.iter().find(|e| !e.1 && matches!(e.2, Event::Closed { .. })).unwrap();
    println!("the phone last heard at {} ms; the server closed at {} ms", up / 1000, server_closed.0 / 1000);
    assert_eq!(server_closed.2, Event::Closed { reason: CloseReason::IdleTimeout });
    assert!(
        (up + ms(30_000)..up + ms(30_100)).contains(&server_closed.0),
        "server closed at {} ms",
        server_closed.0 / 1000
    );
}

#[test]
fn the_peer_timeout_counts_from_when_data_started_waiting() {
    // No keep-alives: the client hears nothing for 20 s between two requests. Its second
    // request must be given the peer timeout from when it was sent, not from the last packet
    // heard (which would end the connection the moment the request leaves).
    let c = Config::default().with(|c| {
        c.transport.keep_alive = 0;
        c.transport.idle_timeout = ms(60_000);
        c.multipath.path_manager = PathManager::Fullmesh;
    });
    let mut sim = Sim::new(6, c.clone(), c, mpsim::multimob_paths()).unwrap();
    let mut app =
        mpsim::apps::Siri::new(mpsim::apps::SiriConfig { requests: 2, wait: ms(20_000), ..Default::default() }, 6);
    sim.run(ms(40_000), |s| app.drive(s));
    assert_eq!(app.results.len(), 2, "both requests answered");
    assert!(!app.events.iter().any(|e| matches!(e.2, Event::Closed { .. })), "{:?}", app.events);
}

/// Issue 52: an idle client asks whether its peer is still there (`Connection::probe_peer`,
/// as iperf-siri does each second of its wait between requests). While the peer answers,
/// nothing ends; once every path is silent, the next probe goes unanswered and the
/// connection is given up the peer timeout after, not at the idle timeout (60 s here).
#[test]
fn an_idle_client_that_probes_its_peer_learns_of_its_death_within_the_peer_timeout() {
    let c = Config::default().with(|c| {
        c.transport.idle_timeout = ms(60_000);
        c.transport.keep_alive = 0;
    });
    let mut sim = Sim::new(7, c.clone(), c, mpsim::multimob_paths()).unwrap();
    let mut app = Bulk::new(vec![5; 10_000], false);
    sim.at(ms(5_000), 0, PathEvent::Down);
    sim.at(ms(5_000), 1, PathEvent::Down);
    let mut next_probe = ms(1_000);
    let mut probes = 0;
    sim.run(ms(30_000), |s| {
        let wake = app.step(s);
        if s.now >= next_probe {
            if let Some(h) = app.client {
                probes += usize::from(s.client.conn_mut(h).is_some_and(|c| c.probe_peer(s.now)));
            }
            next_probe += ms(1_000);
        }
        Flow::Wake(Some(wake.map_or(next_probe, |w| w.min(next_probe))))
    });
    assert!(probes >= 5, "{probes} probes");
    let closed: Vec<_> = app.events.iter().filter(|e| e.1 && matches!(e.2, Event::Closed { .. })).collect();
    assert_eq!(closed.len(), 1, "{:?}", app.events);
    let (at, _, Event::Closed { reason }) = *closed[0] else { unreachable!() };
    assert!(matches!(reason, CloseReason::PeerUnresponsive { .. }), "{reason:?}");
    // The last probe answered left at 4 s; the first unanswered at 5 s, as the outage began:
    // given up the peer timeout (10 s) after it.
    let heard = last_delivered(&sim, Dir::Down);
    assert!(heard < ms(5_000) && (ms(15_000)..ms(15_100)).contains(&at), "closed at {at}, heard {heard}");
}
