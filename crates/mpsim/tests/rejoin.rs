//! A path that stops carrying packets while its interface stays up (a WiFi whose upstream
//! breaks, a hotspot left without the association noticing), for longer than the subflow idle
//! timeout: the server forgets its end of the subflow, so the client's probes on it would never
//! be answered again. A client that keeps a subflow on every path (`fullmesh`, `backup`) closes
//! its end too and joins again, retrying until the path answers (PROTOCOL.md §7). Found by the
//! cellular-uplink figure (issue 22): an upload never used WiFi again after it came back.
#![allow(clippy::unwrap_used)]

use mpcore::{Config, Event, PathManager};
use mpsim::apps::{pattern, Bulk};
use mpsim::{ms, multimob_paths, Dir, PathEvent, Sim, Verdict};

const WIFI: usize = 0;

/// An upload of 2 Mbit/s (5,000 bytes every 20 ms) over WiFi and cellular (`fullmesh`) until
/// `end`; WiFi silent from 5 s to `back` (ms).
fn upload(seed: u64, back: u64, end: u64) -> (Sim, Bulk) {
    let client = Config::default().with(|c| {
        c.multipath.path_manager = PathManager::Fullmesh;
        c.transport.keep_alive = 0;
    });
    let server = Config::default().with(|c| c.transport.keep_alive = 0);
    let mut sim = Sim::new(seed, client, server, multimob_paths()).unwrap();
    sim.at(ms(5_000), WIFI, PathEvent::Down);
    sim.at(ms(back), WIFI, PathEvent::Up);
    let mut app = Bulk::paced(pattern(250 * end as usize, seed), 5_000, ms(20), 0);
    sim.run(ms(end), |s| app.drive(s));
    (sim, app)
}

/// Data bytes WiFi delivered to the server after `t`.
fn wifi_data_after(sim: &Sim, t: u64) -> usize {
    sim.path_log(WIFI)
        .iter()
        .filter(|e| e.time > t && e.dir == Dir::Up && e.verdict == Verdict::Delivered && e.size > 1_000)
        .map(|e| e.size)
        .sum()
}

#[test]
fn a_path_silent_beyond_the_idle_timeout_is_joined_again_when_it_answers() {
    // Back while the first join is still retried (50 s), and after it was given up (150 s).
    for (seed, back) in [(1, 50_000), (2, 50_000), (3, 150_000)] {
        let (sim, app) = upload(seed, back, back + 60_000);
        let client: Vec<&Event> = app.events.iter().filter(|e| e.1).map(|e| &e.2).collect();
        // The client gave up its silent subflow (reason 0x09) and joined WiFi again.
        assert!(
            client.iter().any(|e| matches!(e, Event::SubflowClosed { id: 0, reason: 0x09 })),
            "seed {seed}: {client:?}"
        );
        let rejoined = app
            .events
            .iter()
            .find(|(t, c, e)| *c && *t > ms(back) && matches!(e, Event::SubflowEstablished { path, .. } if path.0 == 0))
            .map(|e| e.0)
            .unwrap_or_else(|| panic!("seed {seed}: WiFi joined again after it came back: {client:?}"));
        // The joins back off; one lands within the longest backoff (32 s) of WiFi's return.
        assert!(rejoined < ms(back + 32_000), "seed {seed}: rejoined at {} ms", rejoined / 1000);
        assert!(wifi_data_after(&sim, rejoined) > 1_000_000, "seed {seed}: the upload uses WiFi again");
    }
}

#[test]
fn a_short_silence_keeps_the_subflow() {
    // Silent for less than the idle timeout: the subflow's own probe finds WiFi again; no
    // close, no new join.
    let (sim, app) = upload(1, 20_000, 60_000);
    let client: Vec<&Event> = app.events.iter().filter(|e| e.1).map(|e| &e.2).collect();
    assert!(!client.iter().any(|e| matches!(e, Event::SubflowClosed { .. })), "{client:?}");
    assert!(client.iter().any(|e| matches!(e, Event::SubflowRecovered { id: 0 })), "{client:?}");
    assert!(wifi_data_after(&sim, ms(40_000)) > 1_000_000);
}

#[test]
fn joins_on_a_silent_path_back_off() {
    // WiFi silent from 5 s to the end (125 s): the client's joins there, after the old
    // subflow's idle timeout, cost a few packets a minute, not a stream.
    let (sim, app) = upload(4, 1_000_000, 125_000);
    let sent = sim.path_log(WIFI).iter().filter(|e| e.time > ms(45_000) && e.dir == Dir::Up).count();
    let given_up = app.events.iter().filter(|e| e.1 && matches!(e.2, Event::SubflowClosed { reason: 0, .. })).count();
    println!("{sent} packets on the silent WiFi in the 80 s after the idle timeout; {given_up} joins given up");
    assert!(given_up >= 1, "a join given up and tried again");
    assert!(sent <= 20, "{sent} packets in 80 s");
}

/// The server may forget a quiet subflow while its path is down (its probe unanswered, its
/// reset lost), and a client that only acknowledges never sends there to find out. The client
/// waits twice the idle timeout on a quiet subflow the server does not probe, probes it itself,
/// and joins again: a stream moves back to a WiFi that got slow, went away and came back.
#[test]
fn a_subflow_the_server_forgot_is_found_and_joined_again() {
    let client = Config::default().with(|c| {
        c.multipath.path_manager = PathManager::Fullmesh;
        c.transport.keep_alive = 0;
    });
    let server = Config::default().with(|c| {
        c.multipath.scheduler = "lowest-rtt".into();
        c.transport.keep_alive = 0;
    });
    let mut sim = Sim::new(1, client, server, multimob_paths()).unwrap();
    // WiFi slow from 5 s (the stream moves to cellular), down from 10 s to 50 s, then as before.
    sim.at(ms(5_000), WIFI, PathEvent::Delay(ms(60)));
    sim.at(ms(10_000), WIFI, PathEvent::Down);
    sim.at(ms(50_000), WIFI, PathEvent::Up);
    sim.at(ms(50_000), WIFI, PathEvent::Delay(7_500));
    let mut app = Bulk::paced(pattern(1_600 * 1_200, 1), 1_600, ms(100), ms(500));
    app.download = true;
    sim.run(ms(125_000), |s| app.drive(s));
    let server_closed = app.events.iter().any(|e| !e.1 && matches!(e.2, Event::SubflowClosed { id: 0, reason: 0x09 }));
    assert!(server_closed, "the server forgot WiFi's subflow while WiFi was down");
    let down_after = |t: u64| {
        sim.path_log(WIFI)
            .iter()
            .filter(|e| e.time > t && e.dir == Dir::Down && e.verdict == Verdict::Delivered && e.size > 1_000)
            .count()
    };
    assert!(down_after(ms(80_000)) > 300, "the stream is back on WiFi: {} packets", down_after(ms(80_000)));
}
