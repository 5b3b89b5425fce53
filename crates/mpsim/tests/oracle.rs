//! Issue 6 in the simulator: the oracle and break-before-make path management (`multimob`).
//!
//! Paths as in MultiMob's emulation: WiFi (15 ms RTT) and cellular (25 ms RTT, a backup path),
//! 10 Mbit/s, one-BDP queues. The MultiMob configuration: the `multimob` path manager and the
//! `priority` scheduler on the client, `last-received` on the server, FAST_JOIN and MP_IDLE on
//! both, keep-alives off.
#![allow(clippy::unwrap_used)]

use mpcore::{ConnHandle, Event};
use mpsim::apps::{pattern, Bulk, Siri, SiriConfig, Trickle};
use mpsim::{ms, multimob_backup_paths, multimob_client, multimob_server, Flow, PathEvent, Sim};

const WIFI: usize = 0;
const CELL: usize = 1;

fn sim(seed: u64) -> Sim {
    Sim::new(seed, multimob_client(oracle::Config::default()), multimob_server(), multimob_backup_paths()).unwrap()
}

/// Subflows the client opened beyond the first (each one a wake-up of the cellular path).
fn failovers(sim: &Sim, h: ConnHandle) -> usize {
    sim.client.conn(h).unwrap().stats().subflows.len() - 1
}

#[test]
fn a_without_losses_the_cellular_path_stays_silent() {
    let mut sim = sim(1);
    let mut app = Siri::new(SiriConfig { requests: 6, ..SiriConfig::default() }, 1);
    assert!(sim.run(ms(120_000), |s| app.drive(s)));
    let end = sim.now;
    assert_eq!(app.results.len(), 6);
    assert!(app.results.iter().all(|r| r.max_burst_delay().unwrap() < ms(60)));
    assert_eq!(sim.packets_on(CELL, None, 0), 0, "not one packet on the backup path");
    let e = sim.radio_energy(CELL, 0, end);
    assert_eq!(e.above_idle_joules, 0.0);
    assert_eq!(e.promotions, 0);
    println!("(a) {} requests, 0 cellular packets, {:.3} J above idle", app.results.len(), e.above_idle_joules);
}

#[test]
fn b_one_connection_meets_losses_and_the_others_react() {
    let mut sim = sim(2);
    let mut background = Trickle::new(&mut sim);
    let mut app = Siri::new(SiriConfig { requests: 2, ..SiriConfig::default() }, 2);
    sim.run(ms(1_000), |s| {
        background.step(s);
        Flow::Wake(Some(s.now + ms(10)))
    });
    // The first request, then WiFi turns 40% lossy while the user is between requests.
    let mut driven = |s: &mut Sim, app: &mut Siri| {
        background.step(s);
        match app.drive(s) {
            Flow::Done => Flow::Done,
            Flow::Wake(t) => Flow::Wake(Some(t.unwrap_or(u64::MAX).min(s.now + ms(10)))),
        }
    };
    sim.run(ms(5_000), |s| driven(s, &mut app));
    assert_eq!(app.results.len(), 1);
    let loss_at = app.results[0].start + ms(8 * 300 + 1_000);
    let second = app.results[0].start + ms(8 * 300 + 5_000);
    sim.at(loss_at, WIFI, PathEvent::Loss(0.4));
    sim.run(second - ms(1), |s| driven(s, &mut app));
    // Before the interactive connection sends its next request, it already has its backup.
    let siri = app.client.unwrap();
    let st = sim.client.conn(siri).unwrap().stats();

    let cell = st.subflows.iter().find(|s| s.path.0 == CELL as u8);
    assert!(
        cell.is_some_and(|s| s.state == mpcore::SubflowState::Established),
        "the interactive connection was given its cellular subflow: {st:?}"
    );
    let opened = app.events.iter().find(|e| e.1 && matches!(e.2, Event::SubflowEstablished { id: 1, .. }));
    let oracle = sim.client.oracle().unwrap();
    let np = oracle::Netpath {
        src: mpsim::client_addr(WIFI).ip(),
        dst: mpsim::server_addr().ip(),
        iface: WIFI as u8,
        tcp: false,
    };
    println!(
        "(b) loss from {} ms; interactive connection's backup up at {:?} ms; next request at {} ms; netpath {:?}",
        loss_at / 1000,
        opened.map(|e| e.0 / 1000),
        second / 1000,
        oracle.stats(np)
    );
    assert!(sim.run(ms(60_000), |s| driven(s, &mut app)), "the second request is answered");
}

#[test]
fn c_a_silent_download_is_rescued_by_the_idle_timer() {
    let mut sim = sim(3);
    let data = pattern(20 << 20, 3);
    let mut app = Bulk::new(data.clone(), true);
    sim.at(ms(1_500), WIFI, PathEvent::Loss(1.0));
    assert!(sim.run(ms(120_000), |s| app.drive(s)), "the download completes");
    assert_eq!(app.received, data);
    let h = app.client.unwrap();
    let st = sim.client.conn(h).unwrap().stats();
    let cell = st.subflows.iter().find(|s| s.path.0 == CELL as u8).unwrap();
    let opened = app.events.iter().find(|e| e.1 && matches!(e.2, Event::SubflowEstablished { id: 1, .. })).unwrap();
    println!(
        "(c) WiFi 100% lossy at 1500 ms; cellular subflow up at {} ms; download done at {} ms",
        opened.0 / 1000,
        app.finished_at.unwrap() / 1000
    );
    // The client sent nothing but ACKs, so no timeout of its own opened the path: the idle
    // timer did, after at least 500 ms of silence.
    assert!(opened.0 >= ms(2_000), "{}", opened.0);
    assert!(cell.counters.bytes_received > 10 << 20, "the rest came over cellular");
    assert_eq!(failovers(&sim, h), 1);
}

/// The whole MultiMob configuration, WiFi blacked out while the client is between two Siri
/// requests: the worst delay over every burst of the next request.
pub fn blackout_max_delay(seed: u64, oracle: oracle::Config) -> (u64, u64, f64) {
    let mut sim = Sim::new(seed, multimob_client(oracle), multimob_server(), multimob_backup_paths()).unwrap();
    let mut app = Siri::new(SiriConfig { requests: 2, ..SiriConfig::default() }, seed);
    sim.run(ms(7_000), |s| app.drive(s));
    let second = app.results[0].start + ms(8 * 300 + 5_000);
    sim.at(second - ms(1_000), WIFI, PathEvent::Down);
    assert!(sim.run(ms(60_000), |s| app.drive(s)));
    let end = sim.now;
    (
        app.results[1].max_burst_delay().unwrap(),
        app.results[0].max_burst_delay().unwrap(),
        sim.radio_energy(CELL, 0, end).above_idle_joules,
    )
}

#[test]
fn d_multimob_answers_within_250_ms_after_a_blackout_between_requests() {
    for seed in [1, 2, 3] {
        let (after, before, joules) = blackout_max_delay(seed, oracle::Config::default());
        println!(
            "(d) seed {seed}: max delay of the request after the blackout {:.1} ms (before: {:.1} ms); \
             cellular energy above idle {joules:.2} J",
            after as f64 / 1e3,
            before as f64 / 1e3
        );
        assert!(before < ms(60));
        assert!(after <= ms(250), "{after} us");
    }
}

#[test]
fn e_one_percent_random_loss_for_a_minute() {
    let mut rows = Vec::new();
    for seed in [1, 2, 3] {
        let mut sim = sim(seed);
        sim.at(0, WIFI, PathEvent::Loss(0.01));
        let mut app = Siri::new(SiriConfig { requests: 8, ..SiriConfig::default() }, seed);
        assert!(sim.run(ms(120_000), |s| app.drive(s)), "every request answered");
        let end = sim.now;
        let h = app.client.unwrap();
        let opened = failovers(&sim, h);
        let e = sim.radio_energy(CELL, 0, end);
        let max = app.results.iter().filter_map(|r| r.max_burst_delay()).max().unwrap();
        println!(
            "(e) seed {seed}: {} requests over {:.1} s, backup opened {opened} times (false alarms), \
             cellular {:.1} J above idle ({:.0} mW mean), {} promotions, max delay {:.1} ms",
            app.results.len(),
            end as f64 / 1e6,
            e.above_idle_joules,
            e.mean_mw,
            e.promotions,
            max as f64 / 1e3
        );
        // Every wake-up of the radio is one of those openings (a fail-back sends nothing there,
        // or a reset while the server's answers still arrive there, the radio awake for them).
        assert!(e.promotions as usize <= 2 * opened);
        assert_eq!(opened == 0, e.above_idle_joules == 0.0);
        rows.push(opened);
    }
    // 1% loss is not a failure: the oracle's 25% threshold is far, and only tail losses of
    // the primary open the backup, so it stays rare.
    assert!(rows.iter().all(|&n| n <= 4), "{rows:?}");
}

#[test]
fn fail_back_closes_the_backup_once_wifi_is_healthy_again() {
    let mut sim = sim(4);
    let mut app = Siri::new(SiriConfig { requests: 4, ..SiriConfig::default() }, 4);
    sim.run(ms(7_000), |s| app.drive(s));
    let second = app.results[0].start + ms(8 * 300 + 5_000);
    sim.at(second - ms(1_000), WIFI, PathEvent::Down);
    sim.at(second + ms(1_000), WIFI, PathEvent::Up);
    assert!(sim.run(ms(120_000), |s| app.drive(s)));
    let h = app.client.unwrap();
    let st = sim.client.conn(h).unwrap().stats();
    let cell = st.subflows.iter().find(|s| s.path.0 == CELL as u8).unwrap();
    assert_eq!(cell.state, mpcore::SubflowState::Closed, "the backup was closed after the hold time");
    let last_cell = sim.path_log(CELL).last().unwrap().time;
    // WiFi counts as healthy once its probe is answered (the probes back off while it is down)
    // and the oracle has seen it carry packets again: the hold runs from there.
    let recovered = app.events.iter().find(|e| e.1 && e.2 == mpcore::Event::SubflowRecovered { id: 0 });
    let recovered = recovered.map(|e| e.0).expect("WiFi's subflow recovered");
    println!(
        "(fail-back) WiFi back at {} ms, its subflow recovered at {} ms; last cellular packet at {} ms",
        (second + ms(1_000)) / 1000,
        recovered / 1000,
        last_cell / 1000
    );
    let hold = mpsim::multimob_client(oracle::Config::default()).multipath.fail_back_hold;
    let fail_back = app.events.iter().find(|e| e.1 && e.2 == mpcore::Event::FailBack).map(|e| e.0);
    let fail_back = fail_back.expect("a fail-back");
    assert!(fail_back >= recovered + hold, "no fail-back before the hold");
    assert!(fail_back < recovered + hold + ms(1_000), "the fail-back follows the hold");
    // The cellular subflow is closed with a REMOVE_SUBFLOW over WiFi (PROTOCOL.md §5.21):
    // nothing more goes on cellular, whose radio sleeps after its tail from the last data.
    assert!(last_cell < fail_back, "a cellular packet at {last_cell} us, after the fail-back");
    let server = sim.server.conn(app.server.unwrap()).unwrap().stats();
    let theirs = server.subflows.iter().find(|s| s.remote == mpsim::client_addr(CELL)).unwrap();
    assert_eq!(theirs.state, mpcore::SubflowState::Closed, "the server closed its side too");
    assert!(app.results[2].max_burst_delay().unwrap() < ms(60), "later requests are fast, over WiFi");
}

/// Issue 21: a failover and its fail-back as the application sees them, in order: WiFi's
/// subflow failed, the oracle's bad verdict on WiFi, the cellular subflow joined, WiFi back
/// (recovered, cleared), the fail-back, the cellular subflow closed.
#[test]
fn the_events_of_a_failover_come_in_order() {
    let mut sim = sim(1);
    sim.at(ms(4_000), WIFI, PathEvent::Down);
    sim.at(ms(14_000), WIFI, PathEvent::Up);
    let mut app = Siri::new(SiriConfig { requests: 4, ..SiriConfig::default() }, 1);
    assert!(sim.run(ms(60_000), |s| app.drive(s)));
    sim.run_until(sim.now + ms(10_000), |_| None);
    for (t, c, e) in &app.events {
        if *c && !matches!(e, Event::Readable) {
            println!("{:.3} {e:?}", *t as f64 / 1e6);
        }
    }
    let client: Vec<String> = app
        .events
        .iter()
        .filter(|(_, c, e)| *c && !matches!(e, Event::Readable))
        .map(|(_, _, e)| match e {
            Event::SubflowEstablished { id, path, .. } => format!("established {id} path {}", path.0),
            Event::SubflowFailed { id } => format!("failed {id}"),
            Event::SubflowRecovered { id } => format!("recovered {id}"),
            Event::SubflowClosed { id, .. } => format!("closed {id}"),
            Event::Verdict { path, verdict } => format!("verdict {verdict:?} path {}", path.0),
            Event::FailBack => "fail-back".to_string(),
            other => format!("{other:?}"),
        })
        .collect();
    let expect = [
        "established 0 path 0",
        "failed 0",
        "verdict Bad path 0",
        "established 1 path 1",
        "recovered 0",
        "verdict Clear path 0",
        "fail-back",
        "closed 1",
    ];
    // A verdict is a change: WiFi is declared bad once; cellular, which carries the data
    // reinjected from WiFi (its first sending there, not a retransmission), never.
    assert_eq!(client.iter().filter(|e| *e == "verdict Bad path 0").count(), 1, "{client:#?}");
    assert!(!client.iter().any(|e| e.starts_with("verdict") && e.ends_with("path 1")), "{client:#?}");
    // Each expected event, in this order (other events may come between).
    let mut at = 0;
    for want in expect {
        match client[at..].iter().position(|e| e == want) {
            Some(k) => at += k + 1,
            None => panic!("{want:?} missing after position {at}: {client:#?}"),
        }
    }
}

/// A stream (the server pushes, the client only acknowledges) fails over when WiFi degrades
/// (the oracle sees its losses; a stream's every packet empties the server's queue and carries
/// MP_IDLE, so the idle timer does not run) and back when it returns, and then stays on WiFi:
/// the receive idle timer, which does not
/// apply while the failover subflow is open, restarts from the last data received, not from
/// the data before the failover (whose deadline lies in the past and fired at once, joining
/// cellular again the moment it was closed).
#[test]
fn a_stream_fails_back_and_stays_on_wifi() {
    let mut sim = sim(1);
    sim.at(ms(10_000), WIFI, PathEvent::Loss(0.3));
    sim.at(ms(14_000), WIFI, PathEvent::Down);
    sim.at(ms(24_000), WIFI, PathEvent::Up);
    sim.at(ms(24_000), WIFI, PathEvent::Loss(0.0));
    let mut app = Bulk::paced(pattern(1_600 * 600, 1), 1_600, ms(100), ms(500));
    app.download = true;
    assert!(sim.run(ms(90_000), |s| app.drive(s)));
    let failbacks = app.events.iter().filter(|e| e.1 && e.2 == Event::FailBack).map(|e| e.0).collect::<Vec<_>>();
    let Some(&back) = failbacks.first() else { panic!("no fail-back") };
    let joins = app
        .events
        .iter()
        .filter(|(t, c, e)| {
            *c && *t >= back && matches!(e, Event::SubflowEstablished { path, .. } if path.0 == CELL as u8)
        })
        .count();
    assert_eq!(joins, 0, "no join of cellular after the fail-back at {} ms", back / 1000);
    let cell_data = sim.path_log(CELL).iter().filter(|e| e.time > back + ms(1_000) && e.size > 1_000).count();
    assert_eq!(cell_data, 0, "the stream stays on WiFi after the fail-back");
}

/// A fail-back while the server streams on the cellular subflow (a web radio, 1,600 bytes
/// every 100 ms; WiFi loses 30% from 5 s to 15 s): that subflow is in use, so the client resets it
/// on its path as well as naming it in a REMOVE_SUBFLOW over WiFi (PROTOCOL.md §7, *Closing*).
/// With WiFi's uplink losing everything for 300 ms from the fail-back, the server still closes
/// its cellular subflow a cellular one-way delay after the fail-back; told over WiFi alone,
/// it would wait for WiFi's repair and keep streaming into a subflow the client closed.
#[test]
fn a_fail_back_resets_a_cellular_subflow_in_use_on_its_path() {
    let run = |drop_from: Option<u64>| {
        let mut sim = sim(3);
        sim.at(ms(5_000), WIFI, PathEvent::Loss(0.3));
        sim.at(ms(15_000), WIFI, PathEvent::Loss(0.0));
        if let Some(t) = drop_from {
            sim.drop_if = Some(Box::new(move |now, path, dir, _: &[u8]| {
                path == WIFI && dir == mpsim::Dir::Up && (t..t + ms(300)).contains(&now)
            }));
        }
        let mut app = Bulk::paced(pattern(16_000 * 30, 3), 1_600, ms(100), ms(500));
        app.download = true;
        assert!(sim.run(ms(60_000), |s| app.drive(s)), "the stream was delivered");
        let at = |client: bool, e: &dyn Fn(&Event) -> bool| {
            app.events.iter().find(|x| x.1 == client && e(&x.2)).map(|x| x.0).unwrap()
        };
        let fail_back = at(true, &|e| *e == Event::FailBack);
        let cell = sim
            .server
            .stats(app.server.unwrap())
            .unwrap()
            .subflows
            .iter()
            .find(|s| s.remote == mpsim::client_addr(CELL))
            .map(|s| s.id)
            .unwrap();
        let closed = at(false, &|e| matches!(e, Event::SubflowClosed { id, .. } if *id == cell));
        (fail_back, closed)
    };
    let (fail_back, _) = run(None);
    let (again, closed) = run(Some(fail_back));
    assert_eq!(again, fail_back, "the same run up to the fail-back");
    assert!(
        closed - fail_back < ms(20),
        "the server closed its cellular subflow {} us after the fail-back",
        closed - fail_back
    );
}

/// A stream the server paces (a web radio, 1,600 bytes every 100 ms, each chunk ending with
/// MP_IDLE) while WiFi blacks out from 5 s to 15 s, on the paper's client (no keep-alives). The
/// receive idle timer never runs (the last data always had MP_IDLE) and the client, which only
/// acknowledges, sent nothing a timer could find unanswered: before, it never failed over and
/// the stream stopped until WiFi came back. Now the overdue chunk (`oracle::PacedStream`: 500 ms
/// after the last) sends a PING on WiFi, whose silence fails WiFi over: the stream goes on over
/// cellular within a second.
#[test]
fn a_paced_download_fails_over_when_its_chunks_stop() {
    let mut sim = sim(3);
    sim.at(ms(5_000), WIFI, PathEvent::Down);
    sim.at(ms(15_000), WIFI, PathEvent::Up);
    let mut app = Bulk::paced(pattern(16_000 * 30, 3), 1_600, ms(100), ms(500));
    app.download = true;
    assert!(sim.run(ms(60_000), |s| app.drive(s)), "the stream was delivered");
    let joined = app.events.iter().find(|e| e.1 && matches!(e.2, Event::SubflowEstablished { .. }) && e.0 > ms(1_000));
    let joined = joined.map(|e| e.0).expect("the client failed over");
    assert!(joined < ms(6_000), "cellular joined at {joined} us");
    // The longest the stream stopped: from the outage's last chunk to the next.
    let longest = app.progress.windows(2).filter(|w| w[1].0 > ms(5_000)).map(|w| w[1].0 - w[0].0).max().unwrap();
    assert!(longest < ms(1_500), "the stream stopped for {longest} us");
}

/// The same stream with WiFi working throughout: when it ends, its overdue chunk asks WiFi
/// once (a PING and its answer), and cellular stays silent.
#[test]
fn a_paced_download_that_ends_asks_once_and_wakes_nothing() {
    let mut sim = sim(3);
    let mut app = Bulk::paced(pattern(16_000 * 30, 3), 1_600, ms(100), ms(500));
    app.download = true;
    assert!(sim.run(ms(60_000), |s| app.drive(s)), "the stream was delivered");
    let end = app.progress.last().unwrap().0;
    sim.run_until(end + ms(10_000), |_| None);
    assert!(sim.path_log(CELL).is_empty(), "cellular carried {:?}", sim.path_log(CELL));
    let after: Vec<_> = sim.path_log(WIFI).iter().filter(|e| e.time > end + ms(100)).collect();
    let up = after.iter().filter(|e| e.dir == mpsim::Dir::Up).count();
    assert!(up <= 2, "the client sent {up} datagrams after the stream's end: {after:?}");
}
