//! The connection state machine proven in the simulator (issue 3's "must show").
#![allow(clippy::unwrap_used)]

mod common;

use common::{capture, cfg, established};
use mpcore::Time;
use mpcore::{Config, Event, PathManager, SubflowState};
use mpsim::apps::{pattern, Bulk, Siri, SiriConfig};
use mpsim::{ms, multimob_paths, Flow, PathEvent, Sim};

#[test]
fn handshake_exchange_and_graceful_close_on_both_sides() {
    let mut sim = Sim::new(1, cfg(PathManager::OnDemand), cfg(PathManager::OnDemand), multimob_paths()).unwrap();
    let c = sim.connect();
    let mut s_h = None;
    let (mut at_server, mut at_client) = (Vec::new(), Vec::new());
    let mut events = Vec::new();
    let mut buf = [0u8; 4096];
    let (mut replied, mut wrote) = (false, false);
    sim.run(ms(10_000), |s| {
        if let Some(cc) = s.client.conn_mut(c) {
            if !wrote {
                cc.write(b"hello over a multipath connection").unwrap();
                cc.close();
                wrote = true;
            }
            while let Ok(n) = cc.read(&mut buf) {
                if n == 0 {
                    break;
                }
                at_client.extend_from_slice(&buf[..n]);
            }
        }
        s_h = s_h.or_else(|| s.server.accept());
        if let Some(sc) = s_h.and_then(|h| s.server.conn_mut(h)) {
            loop {
                match sc.read(&mut buf) {
                    Ok(0) => {
                        if !replied {
                            sc.write(b"goodbye").unwrap();
                            sc.close();
                            replied = true;
                        }
                        break;
                    }
                    Ok(n) => at_server.extend_from_slice(&buf[..n]),
                    Err(_) => break,
                }
            }
        }
        while let Some((_, e)) = s.client.poll_event() {
            events.push((true, e));
        }
        while let Some((_, e)) = s.server.poll_event() {
            events.push((false, e));
        }
        Flow::Wake(None)
    });
    assert_eq!(at_server, b"hello over a multipath connection");
    assert_eq!(at_client, b"goodbye");
    for side in [true, false] {
        assert!(events.contains(&(side, Event::Connected)), "{side}: {events:?}");
        assert!(events.contains(&(side, Event::Finished)), "{side}: {events:?}");
        let closed = Event::Closed { reason: mpcore::CloseReason::Graceful };
        assert!(events.contains(&(side, closed)), "{side}: {events:?}");
    }
    // After the drain period both endpoints forget the connection.
    assert_eq!(sim.client.live_connections(), 0);
    assert_eq!(sim.server.live_connections(), 0);
    // Nothing was dropped but, possibly, a last packet reaching the client after it forgot
    // the connection.
    let d = sim.client.drops();
    assert_eq!(d.total() - d.unknown_cid + sim.server.drops().total(), 0);
}

fn sha256(b: &[u8]) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, b).as_ref().to_vec()
}

#[test]
fn client_join_on_the_second_path_carries_data() {
    let mut sim = Sim::new(2, cfg(PathManager::Fullmesh), cfg(PathManager::Fullmesh), multimob_paths()).unwrap();
    let data = pattern(2_000_000, 7);
    let mut app = Bulk::new(data.clone(), false);
    sim.run(ms(20_000), |s| app.drive(s));
    assert_eq!(sha256(&app.received), sha256(&data));
    let st = sim.client.stats(app.client.unwrap()).unwrap();
    assert_eq!(st.subflows.len(), 2);
    assert_eq!(st.subflows[1].state, SubflowState::Established);
    assert!(st.subflows[1].counters.data_bytes_sent > 200_000, "{:?}", st.subflows[1].counters);
    assert!(app.events.iter().any(|e| e.1 && matches!(e.2, Event::SubflowEstablished { id: 1, .. })));
    assert!(app.events.iter().any(|e| !e.1 && matches!(e.2, Event::SubflowEstablished { id: 1, .. })));
    println!("finished at {:?} ms", app.finished_at.map(|t| t / 1000));
}

#[test]
fn ten_megabytes_over_two_lossy_duplicating_reordering_paths() {
    let mut paths = multimob_paths();
    for p in &mut paths {
        p.loss = 0.05;
        p.duplicate = 0.01;
        p.reorder = 0.02;
        p.reorder_delay = ms(5);
    }
    let mut sim = Sim::new(3, cfg(PathManager::Fullmesh), cfg(PathManager::Fullmesh), paths).unwrap();
    let data = pattern(10 << 20, 11);
    let mut app = Bulk::new(data.clone(), false);
    let done = sim.run(ms(120_000), |s| app.drive(s));
    assert!(done, "transfer did not finish: {} of {} bytes", app.received.len(), data.len());
    assert_eq!(app.received.len(), data.len());
    assert_eq!(sha256(&app.received), sha256(&data), "SHA-256 differs");
    let st = sim.client.stats(app.client.unwrap()).unwrap();
    for s in &st.subflows {
        assert!(s.counters.packets_lost > 0, "loss was exercised on subflow {}", s.id);
        assert!(s.counters.data_bytes_sent > 1 << 20, "both subflows carried data");
    }
    let drops = sim.server.drops();
    assert!(drops.duplicate > 0, "duplicated datagrams were detected and dropped: {drops:?}");
    println!("10 MB in {} ms; server drops {drops:?}", app.finished_at.unwrap() / 1000);
}

/// A 12 MB upload over fullmesh; path 0 fails from 2 s to 5 s.
fn primary_outage() -> (Sim, Vec<u8>, Bulk, Time, Time) {
    let mut sim = Sim::new(4, cfg(PathManager::Fullmesh), cfg(PathManager::Fullmesh), multimob_paths()).unwrap();
    let data = pattern(12 << 20, 5);
    let app = Bulk::new(data.clone(), false);
    let (down, up) = (ms(2_000), ms(5_000));
    sim.at(down, 0, mpsim::PathEvent::Down);
    sim.at(up, 0, mpsim::PathEvent::Up);
    (sim, data, app, down, up)
}

#[test]
fn primary_outage_mid_transfer_then_restoration() {
    let (mut sim, data, mut app, down, up) = primary_outage();
    let done = sim.run(ms(60_000), |s| app.drive(s));
    assert!(done, "the transfer completes on the other path");
    assert_eq!(sha256(&app.received), sha256(&data));
    // The stall after the failure is bounded by a few RTOs (min RTO 200 ms).
    let stall = app.longest_stall(down);
    assert!(stall < ms(800), "stall of {} ms after the outage", stall / 1000);
    // While the path was down, data still flowed (on path 1).
    let during = app.progress.iter().filter(|p| p.0 > down + ms(500) && p.0 < up).count();
    assert!(during > 100, "progress during the outage: {during} reads");
    // After restoration, path 0 carries data again.
    let after =
        sim.path_log(0).iter().filter(|e| e.time > up + ms(1_500) && e.dir == mpsim::Dir::Up && e.size > 1000).count();
    assert!(after > 100, "path 0 carries data again after it returns ({after} large packets)");
    let failed = app.events.iter().any(|e| e.1 && matches!(e.2, Event::SubflowFailed { id: 0 }));
    let recovered = app.events.iter().any(|e| e.1 && matches!(e.2, Event::SubflowRecovered { id: 0 }));
    assert!(failed && recovered, "subflow 0 went potentially failed and came back");
    println!("stall {} ms, finished at {} ms", stall / 1000, app.finished_at.unwrap() / 1000);
}

#[test]
fn a_backup_subflow_carries_no_data_while_the_primary_is_healthy() {
    let mut sim = Sim::new(5, cfg(PathManager::Backup), cfg(PathManager::Fullmesh), multimob_paths()).unwrap();
    let data = pattern(3 << 20, 9);
    let mut app = Bulk::new(data.clone(), true);
    let done = sim.run(ms(30_000), |s| app.drive(s));
    assert!(done);
    assert_eq!(sha256(&app.received), sha256(&data));
    for (side, ep) in [("client", &sim.client), ("server", &sim.server)] {
        let h = ep.handles().next().unwrap();
        let st = ep.stats(h).unwrap();
        assert_eq!(st.subflows.len(), 2, "{side}");
        assert!(st.subflows[1].backup, "{side}: subflow 1 is a backup");
        assert_eq!(st.subflows[1].state, SubflowState::Established, "{side}");
        assert_eq!(st.subflows[1].counters.data_bytes_sent, 0, "{side}: no data on the backup: {st:#?}");
    }
    // Only the join and its ACKs (and keep-alives) on the cellular path: small packets.
    assert!(sim.path_log(1).iter().all(|e| e.size < 300), "no data-sized packet on the backup path");
}

#[test]
fn server_initiated_join_to_an_announced_address() {
    let mut sim = Sim::new(6, cfg(PathManager::OnDemand), cfg(PathManager::OnDemand), multimob_paths()).unwrap();
    let mut app = Bulk::new(pattern(1 << 20, 1), true);
    sim.run(ms(500), |s| Flow::Wake(app.step(s)));
    let c = app.client.unwrap();
    assert!(sim.client.conn_mut(c).unwrap().announce_address(mpcore::PathId(1)));
    let mut joined = false;
    sim.run(ms(10_000), |s| {
        let r = app.step(s);
        if !joined {
            if let Some(h) = app.server {
                let addrs = s.server.conn(h).unwrap().remote_addresses().to_vec();
                if let Some(&(_, addr)) = addrs.first() {
                    let now = s.now;
                    let id = s.server.conn_mut(h).unwrap().open_subflow(now, mpcore::PathId(0), addr, false);
                    assert_eq!(id, Some(0x8000_0000), "the server's first subflow number");
                    joined = true;
                }
            }
        }
        Flow::Wake(r)
    });
    assert!(joined, "the ADD_ADDR arrived with a valid HMAC");
    let st = sim.server.stats(app.server.unwrap()).unwrap();
    let sf = st.subflows.iter().find(|s| s.id == 0x8000_0000).unwrap();
    assert_eq!(sf.state, SubflowState::Established);
    assert_eq!(sf.remote, mpsim::client_addr(1));
    assert!(sf.counters.data_bytes_sent > 0, "the server's subflow carried data");
    assert!(app.events.iter().any(|e| e.1 && matches!(e.2, Event::SubflowEstablished { id: 0x8000_0000, .. })));
    assert_eq!(app.received.len(), 1 << 20);
}

#[test]
fn forged_replayed_truncated_and_wrong_token_datagrams_are_dropped_and_counted() {
    let mut sim = Sim::new(7, cfg(PathManager::Fullmesh), cfg(PathManager::Fullmesh), multimob_paths()).unwrap();
    let log = capture(&mut sim);
    let data = pattern(4 << 20, 3);
    let mut app = Bulk::new(data.clone(), false);
    sim.run(ms(1_000), |s| Flow::Wake(app.step(s)));
    let captured: Vec<Vec<u8>> =
        log.borrow().iter().filter(|(_, d, _)| *d == mpsim::Dir::Up).map(|(_, _, b)| b.clone()).collect();
    let path0: Vec<Vec<u8>> =
        log.borrow().iter().filter(|(p, d, _)| *d == mpsim::Dir::Up && *p == 0).map(|(_, _, b)| b.clone()).collect();
    let short: Vec<&Vec<u8>> = path0.iter().filter(|b| b[0] & 0x80 == 0 && b.len() > 1000).collect();
    assert!(short.len() > 50);
    let attacker = "192.0.2.66:1234".parse().unwrap();
    let client = mpsim::client_addr(0);
    let t0 = sim.now + ms(10);
    let mut n = 0u64;
    // Replays of captured short-header packets, from the client's address and from another.
    for (k, b) in short.iter().take(20).enumerate() {
        let from = if k % 2 == 0 { client } else { attacker };
        sim.inject(t0 + k as u64, 0, mpsim::Dir::Up, from, (*b).clone());
        n += 1;
    }
    // Forgeries: one flipped bit in the sealed payload.
    for (k, b) in short.iter().skip(20).take(20).enumerate() {
        let mut f = (*b).clone();
        let at = 30 + k * 7;
        f[at] ^= 0x10;
        sim.inject(t0 + 100 + k as u64, 0, mpsim::Dir::Up, client, f);
    }
    // Truncations at every length class.
    for (k, cut) in [0usize, 1, 5, 9, 12, 20, 40, 400].iter().enumerate() {
        let t = short[40][..*cut].to_vec();
        sim.inject(t0 + 200 + k as u64, 0, mpsim::Dir::Up, client, t);
    }
    // A JOIN naming a token nobody has, and one replayed from the capture.
    let join = captured.iter().find(|b| b[0] & 0xf8 == 0xc0 | (4 << 3)).cloned();
    let mut wrong = join.clone().expect("the client's JOIN was captured");
    wrong[5..9].copy_from_slice(&0xdead_beefu32.to_be_bytes());
    sim.inject(t0 + 300, 0, mpsim::Dir::Up, attacker, wrong);
    // Garbage.
    sim.inject(t0 + 301, 0, mpsim::Dir::Up, attacker, vec![0x42; 77]);
    // The genuine JOIN replayed from another address: its subflow number is taken.
    sim.inject(t0 + 302, 0, mpsim::Dir::Up, attacker, join.clone().unwrap());
    let before = *sim.server.drops();
    let done = sim.run(ms(60_000), |s| app.drive(s));
    assert!(done, "the connection goes on unharmed");
    assert_eq!(sha256(&app.received), sha256(&data));
    let d = *sim.server.drops();
    // A replayed packet is a duplicate while its packet number is within the receiver's
    // window; an older one decodes to another packet number and fails the AEAD. Either way it
    // is dropped and counted, as is every other injected datagram.
    let injected = 20 + 20 + 8 + 1 + 1 + 1;
    assert!(d.total() - before.total() >= injected, "{d:?}");
    assert!(d.decrypt_failed - before.decrypt_failed >= 20, "forgeries fail the AEAD: {d:?}");
    assert!(d.malformed - before.malformed >= 5, "truncations and garbage are malformed: {d:?}");
    assert_eq!(d.unknown_token - before.unknown_token, 1, "wrong token: {d:?}");
    assert_eq!(n, 20);
    // No forged or replayed packet moved the subflow to the attacker's address.
    let st = sim.server.stats(app.server.unwrap()).unwrap();
    assert!(st.subflows.iter().all(|s| s.remote != attacker));
}

#[test]
fn nat_rebinding_moves_the_subflow_after_an_authenticated_packet() {
    let mut sim = Sim::new(8, cfg(PathManager::OnDemand), cfg(PathManager::OnDemand), multimob_paths()).unwrap();
    let nat: std::net::SocketAddr = "203.0.113.9:61000".parse().unwrap();
    sim.at(ms(1_500), 0, mpsim::PathEvent::Rebind(nat));
    let data = pattern(6 << 20, 4);
    let mut app = Bulk::new(data.clone(), false);
    let done = sim.run(ms(60_000), |s| app.drive(s));
    assert!(done);
    assert_eq!(sha256(&app.received), sha256(&data));
    let st = sim.server.stats(app.server.unwrap()).unwrap();
    assert_eq!(st.subflows[0].remote, nat, "the server follows the new address");
    assert!(app.events.iter().any(|e| !e.1 && e.2 == Event::SubflowMigrated { id: 0, remote: nat }));
    assert!(app.longest_stall(ms(1_500)) < ms(500), "the migration stalls little");
}

#[test]
fn abort_sends_fastclose_and_both_sides_stop() {
    let mut sim = Sim::new(10, cfg(PathManager::Fullmesh), cfg(PathManager::Fullmesh), multimob_paths()).unwrap();
    let mut app = Bulk::new(pattern(8 << 20, 2), false);
    sim.run(ms(1_000), |s| Flow::Wake(app.step(s)));
    let now = sim.now;
    sim.client.conn_mut(app.client.unwrap()).unwrap().abort(now);
    sim.run(ms(3_000), |s| Flow::Wake(app.step(s)));
    let aborted = Event::Closed { reason: mpcore::CloseReason::Aborted };
    let peer = Event::Closed { reason: mpcore::CloseReason::PeerAborted };
    assert!(app.events.iter().any(|e| e.1 && e.2 == aborted));
    assert!(app.events.iter().any(|e| !e.1 && e.2 == peer));
    assert_eq!(sim.server.live_connections(), 0);
    assert!(app.received.len() < 8 << 20);
}

#[test]
fn idle_timeout_closes_a_connection_whose_paths_all_died() {
    let c = cfg(PathManager::Fullmesh).with(|c| c.transport.idle_timeout = ms(3_000));
    let mut sim = Sim::new(11, c.clone(), c, multimob_paths()).unwrap();
    let mut app = Bulk::new(pattern(10_000, 2), false);
    sim.at(ms(1_000), 0, mpsim::PathEvent::Down);
    sim.at(ms(1_000), 1, mpsim::PathEvent::Down);
    sim.run(ms(10_000), |s| Flow::Wake(app.step(s)));
    let idle = Event::Closed { reason: mpcore::CloseReason::IdleTimeout };
    let at = app.events.iter().find(|e| e.1 && e.2 == idle).map(|e| e.0);
    // The idle timeout counts from the last packet the client received. The exchange is over
    // long before the paths die (nothing acknowledges an acknowledgement), so that is early.
    let last_rx = (0..2)
        .flat_map(|p| sim.path_log(p).iter())
        .filter(|e| e.dir == mpsim::Dir::Down && e.verdict == mpsim::Verdict::Delivered)
        .map(|e| e.time)
        .max()
        .unwrap();
    assert!(last_rx < ms(500), "the connection was quiet long before the paths died: {last_rx} µs");
    assert!(at.is_some_and(|t| (last_rx + ms(3_000)..last_rx + ms(3_100)).contains(&t)), "closed at {at:?}");
    assert_eq!(sim.client.live_connections(), 0);
}

#[test]
fn closing_one_subflow_reinjects_its_data_and_the_transfer_completes() {
    let mut sim = Sim::new(12, cfg(PathManager::Fullmesh), cfg(PathManager::Fullmesh), multimob_paths()).unwrap();
    let data = pattern(6 << 20, 8);
    let mut app = Bulk::new(data.clone(), false);
    sim.run(ms(1_000), |s| Flow::Wake(app.step(s)));
    let now = sim.now;
    let c = sim.client.conn_mut(app.client.unwrap()).unwrap();
    assert!(c.close_subflow(now, 0, mpcore::wire::frame::reason::GRACEFUL));
    let closed_at = sim.now;
    assert!(sim.run(ms(60_000), |s| app.drive(s)));
    assert_eq!(sha256(&app.received), sha256(&data));
    assert!(
        app.events.iter().any(|e| !e.1 && e.2 == Event::SubflowClosed { id: 0, reason: 7 }),
        "the server saw the reset"
    );
    let st = sim.client.stats(app.client.unwrap()).unwrap();
    assert_eq!(st.subflows[0].state, SubflowState::Closed);
    assert!(st.counters.reinjections > 0, "in-flight data of the closed subflow was reinjected");
    let late = sim.path_log(0).iter().filter(|e| e.time > closed_at + ms(100) && e.size > 300).count();
    assert_eq!(late, 0, "nothing but the reset on the closed subflow's path");
}

#[test]
fn remove_addr_closes_the_subflows_on_that_address_at_the_peer() {
    let mut sim = Sim::new(13, cfg(PathManager::Fullmesh), cfg(PathManager::Fullmesh), multimob_paths()).unwrap();
    let data = pattern(4 << 20, 12);
    let mut app = Bulk::new(data.clone(), true);
    sim.run(ms(1_000), |s| Flow::Wake(app.step(s)));
    let now = sim.now;
    sim.client.conn_mut(app.client.unwrap()).unwrap().remove_address(now, mpcore::PathId(1));
    assert!(sim.run(ms(60_000), |s| app.drive(s)));
    assert_eq!(sha256(&app.received), sha256(&data));
    let st = sim.server.stats(app.server.unwrap()).unwrap();
    assert_eq!(st.subflows[1].state, SubflowState::Closed, "the server closed its subflow to that address");
    assert_eq!(st.subflows[0].state, SubflowState::Established);
}

#[test]
fn mp_prio_turns_the_primary_into_a_backup_and_traffic_moves() {
    let mut sim = Sim::new(14, cfg(PathManager::Fullmesh), cfg(PathManager::Fullmesh), multimob_paths()).unwrap();
    let mut app = Bulk::new(pattern(8 << 20, 13), true);
    sim.run(ms(1_500), |s| Flow::Wake(app.step(s)));
    assert!(sim.client.conn_mut(app.client.unwrap()).unwrap().set_backup(0, true));
    let t = sim.now;
    sim.run(ms(4_000), |s| Flow::Wake(app.step(s)));
    let st = sim.server.stats(app.server.unwrap()).unwrap();
    assert!(st.subflows[0].backup, "the server applied MP_PRIO");
    // After the switch (and the packets then in flight), the server sends data on path 1 only.
    let on0 =
        sim.path_log(0).iter().filter(|e| e.time > t + ms(300) && e.dir == mpsim::Dir::Down && e.size > 1000).count();
    let on1 =
        sim.path_log(1).iter().filter(|e| e.time > t + ms(300) && e.dir == mpsim::Dir::Down && e.size > 1000).count();
    assert_eq!(on0, 0, "no data on the new backup");
    assert!(on1 > 500, "data moved to path 1 ({on1} packets)");
}

#[test]
fn one_endpoint_many_connections_routed_by_cid_and_token() {
    let mut sim = Sim::new(15, cfg(PathManager::Fullmesh), cfg(PathManager::Fullmesh), multimob_paths()).unwrap();
    let handles: Vec<_> = (0..4).map(|_| sim.connect()).collect();
    let payloads: Vec<Vec<u8>> = (0..4).map(|k| pattern(300_000 + k * 1000, k as u64)).collect();
    let mut written = [0usize; 4];
    let mut got: std::collections::HashMap<mpcore::ConnHandle, Vec<u8>> = Default::default();
    let mut buf = vec![0u8; 65536];
    sim.run(ms(20_000), |s| {
        for (k, h) in handles.iter().enumerate() {
            if let Some(c) = s.client.conn_mut(*h) {
                if let Ok(n) = c.write(&payloads[k][written[k]..]) {
                    written[k] += n;
                }
                if written[k] == payloads[k].len() {
                    c.close();
                }
            }
        }
        while s.server.accept().is_some() {}
        let hs: Vec<_> = s.server.handles().collect();
        for h in hs {
            let c = s.server.conn_mut(h).unwrap();
            while let Ok(n) = c.read(&mut buf) {
                if n == 0 {
                    break;
                }
                got.entry(h).or_default().extend_from_slice(&buf[..n]);
            }
        }
        Flow::Wake(None)
    });
    let mut received: Vec<Vec<u8>> = got.into_values().collect();
    received.sort_by_key(|v| v.len());
    assert_eq!(received, payloads, "each connection's bytes arrive on its own connection");
    for h in handles {
        let st = sim.client.stats(h).unwrap();
        assert_eq!(st.subflows.len(), 2, "each connection joined its second path");
        assert!(st.subflows.iter().all(|s| s.state == SubflowState::Established));
    }
}

/// Keep-alives (PROTOCOL.md §7) go on one subflow of the connection, the primary, from the
/// client only, every `keep_alive` of silence: the other regular subflow stays silent while the
/// connection idles, the primary's failure is noticed by an unanswered keep-alive, and the
/// keep-alives then move to the subflow left.
#[test]
fn keep_alives_go_on_the_primary_only_and_notice_it_failing() {
    let mut sim = Sim::new(16, cfg(PathManager::Fullmesh), cfg(PathManager::Fullmesh), multimob_paths()).unwrap();
    let mut app = Bulk::new(b"x".to_vec(), false);
    let fail = ms(40_000);
    sim.at(fail, 0, mpsim::PathEvent::Down);
    sim.run(ms(90_000), |s| {
        app.step(s);
        Flow::Wake(None)
    });
    let up = |path: usize, from: Time, to: Time| {
        sim.path_log(path).iter().filter(|e| e.dir == mpsim::Dir::Up && (from..to).contains(&e.time)).count()
    };
    let down = |path: usize, from: Time, to: Time| {
        sim.path_log(path).iter().filter(|e| e.dir == mpsim::Dir::Down && (from..to).contains(&e.time)).count()
    };
    // Idle from about 100 ms on: a PING every 15 s on path 0, which carried the data (at 15
    // and 30 s), each answered by one ACK, and nothing else from the server there. Path 1
    // carries only the server's subflow idle probe (30 s after it last heard there) and its
    // answer.
    assert_eq!(up(0, ms(1_000), fail), 2, "keep-alives on the primary before its failure");
    assert_eq!(down(0, ms(1_000), fail), 2, "one ACK per keep-alive, and nothing else from the server");
    assert_eq!((down(1, ms(1_000), fail), up(1, ms(1_000), fail)), (1, 1), "path 1: the server's probe only");
    // The keep-alive due at 45 s goes unanswered: the failure is noticed within the probe's
    // timeouts, and the keep-alives move to subflow 1 (path 1 hears from the client again).
    let failed = app.events.iter().find(|e| e.1 && e.2 == Event::SubflowFailed { id: 0 }).map(|e| e.0);
    assert!(failed.is_some_and(|t| t > fail && t < fail + ms(8_000)), "primary's failure noticed at {failed:?}");
    let moved = up(1, failed.unwrap(), ms(90_000));
    assert!((2..=5).contains(&moved), "keep-alives moved to path 1: {moved} packets");
    assert!(!app.events.iter().any(|e| e.2 == Event::SubflowFailed { id: 1 }), "the healthy path stays up");
}

/// The driver reports an interface going down and coming back (`Endpoint::set_path_up`) at the
/// moment the simulated link fails and returns.
fn link_script(down: Time, up: Time, path: usize) -> impl FnMut(&mut Sim) {
    let mut state = 0;
    move |s: &mut Sim| {
        if state == 0 && s.now >= down {
            s.client.set_path_up(s.now, mpcore::PathId(path as u8), false);
            state = 1;
        }
        if state == 1 && s.now >= up {
            s.client.set_path_up(s.now, mpcore::PathId(path as u8), true);
            state = 2;
        }
    }
}

#[test]
fn interface_down_moves_data_at_once_and_interface_up_rejoins() {
    let (mut sim, data, mut app, down, up) = primary_outage();
    let mut script = link_script(down, up, 0);
    let done = sim.run(ms(60_000), |s| {
        script(s);
        let f = app.drive(s);
        match f {
            Flow::Wake(None) => Flow::Wake([down, up].into_iter().find(|&t| t > s.now)),
            f => f,
        }
    });
    assert!(done);
    assert_eq!(sha256(&app.received), sha256(&data));
    // Without waiting for an RTO the stall is a couple of round trips of the other path, far
    // below the timeout-driven failover of `primary_outage_mid_transfer_then_restoration`.
    let stall = app.longest_stall(down);
    assert!(stall < ms(200), "stall of {} ms after the interface went down", stall / 1000);
    let closed = app.events.iter().any(|e| e.1 && matches!(e.2, Event::SubflowClosed { id: 0, .. }));
    assert!(closed, "subflow 0 was closed when its interface went down");
    let h = app.client.unwrap();
    let st = sim.client.stats(h).unwrap();
    let again = st.subflows.iter().find(|s| s.path == mpcore::PathId(0) && s.id != 0).expect("a new subflow on path 0");
    assert_eq!(again.state, SubflowState::Established);
    assert!(again.counters.data_bytes_sent > 1 << 20, "path 0 carries data again: {again:?}");
    println!("stall {} ms, finished at {} ms", stall / 1000, app.finished_at.unwrap() / 1000);
}

#[test]
fn multimob_interface_events() {
    let client = mpsim::multimob_client(oracle::Config::default());
    let mut sim = Sim::new(7, client, mpsim::multimob_server(), mpsim::multimob_backup_paths()).unwrap();
    let mut app = mpsim::apps::Trickle::new(&mut sim);
    let h = app.client;
    // The unused cellular interface flaps: no subflow is opened on it.
    sim.at(ms(1_000), 1, mpsim::PathEvent::Down);
    sim.at(ms(1_500), 1, mpsim::PathEvent::Up);
    let mut flap = link_script(ms(1_000), ms(1_500), 1);
    sim.run(ms(1_900), |s| {
        flap(s);
        Flow::Wake(Some(app.step(s)))
    });
    assert_eq!(sim.client.stats(h).unwrap().subflows.len(), 1, "cellular stays unused");
    assert_eq!(sim.packets_on(1, None, 0), 0);
    // WiFi goes down: cellular is joined at once, not after an oracle period or a timeout.
    let (down, up) = (ms(2_000), ms(3_000));
    sim.at(down, 0, mpsim::PathEvent::Down);
    sim.at(up, 0, mpsim::PathEvent::Up);
    let mut script = link_script(down, up, 0);
    sim.run(ms(9_000), |s| {
        script(s);
        let next = app.step(s);
        Flow::Wake(Some([down, up].into_iter().filter(|&t| t > s.now).fold(next, Time::min)))
    });
    let first_cell = sim.path_log(1).first().map(|e| e.time).unwrap();
    assert_eq!(first_cell, down, "the join leaves when the interface goes down");
    let st = sim.client.stats(h).unwrap();
    // WiFi is joined again when it returns, and the fail-back closes the cellular subflow.
    let wifi_again = st.subflows.iter().find(|s| s.path == mpcore::PathId(0) && s.id != 0).expect("WiFi rejoined");
    assert_eq!(wifi_again.state, SubflowState::Established);
    let cell = st.subflows.iter().find(|s| s.path == mpcore::PathId(1)).unwrap();
    assert_eq!(cell.state, SubflowState::Closed, "failed back: {st:#?}");
    let last_cell = sim.path_log(1).last().map(|e| e.time).unwrap();
    println!("cellular used from {} ms to {} ms", first_cell / 1000, last_cell / 1000);
}

/// Regression: at 1 Gbit/s with 1 ms RTT and a one-BDP queue, slow start loses hundreds of
/// packets at once, so reassembly holds more than 64 holes. The receive buffer used to forget
/// its lowest range then and deliver the hole below it as data.
#[test]
fn many_holes_in_reassembly_never_deliver_a_gap() {
    for npaths in [1usize, 2] {
        let cfg = cfg(PathManager::Fullmesh);
        let paths: Vec<_> =
            (0..npaths).map(|i| mpsim::PathConfig::new(mpsim::client_addr(i), mpcore::Iface::Wifi, 1, 1000)).collect();
        let mut sim = Sim::new(1, cfg.clone(), cfg, paths).unwrap();
        sim.logging = false;
        let data = pattern(12 << 20, 3);
        let mut app = Bulk::new(data.clone(), false);
        assert!(sim.run(ms(30_000), |s| app.drive(s)));
        let c = sim.client.stats(app.client.unwrap()).unwrap();
        let lost: u64 = c.subflows.iter().map(|f| f.counters.packets_lost).sum();
        assert!(lost > 100, "{npaths} paths: the scenario has many losses ({lost})");
        assert_eq!(sha256(&app.received), sha256(&data), "{npaths} paths");
        let s = sim.server.stats(app.server.unwrap()).unwrap();
        assert_eq!(s.counters.reassembly_refused, 0);
    }
}

/// A receiver whose reassembly is full must not lose the segment it cannot store. Round-robin
/// over a 10 ms and a 600 ms path, with tiny writes (one byte per packet, a write every 20 µs)
/// against the smallest receive window (4,096 bytes, so 80 out-of-order ranges): every byte on
/// the fast path lands above a hole left by the slow one, which opens more ranges than the
/// receiver tracks. A refused segment's packet is not acknowledged, so the sender's loss
/// recovery sends it again; every byte arrives, in order.
#[test]
fn a_segment_refused_by_a_full_reassembly_is_sent_again() {
    let client = Config::default().with(|c| {
        c.multipath.path_manager = PathManager::Fullmesh;
        c.multipath.scheduler = "round-robin".into();
    });
    // The smallest window, and one that stays so (no autotuning).
    let server = client.clone().with(|c| {
        c.transport.recv_window = 4096;
        c.transport.max_recv_window = 4096;
    });
    let fast = mpsim::PathConfig::new(mpsim::client_addr(0), mpcore::Iface::Wifi, 10, 100);
    let slow = mpsim::PathConfig::new(mpsim::client_addr(1), mpcore::Iface::Cellular, 600, 100);
    let mut sim = Sim::new(7, client, server, vec![fast, slow]).unwrap();
    sim.logging = false;
    let data = pattern(30_000, 9);
    // Writing starts once the slow path's subflow has joined.
    let mut app = Bulk::paced(data.clone(), 1, 20, ms(3_000));
    let done = sim.run(ms(120_000), |s| app.drive(s));
    let s = sim.server.stats(app.server.unwrap()).unwrap();
    let c = sim.client.stats(app.client.unwrap()).unwrap();
    let lost: u64 = c.subflows.iter().map(|f| f.counters.packets_lost).sum();
    println!(
        "{} segments refused, {lost} packets lost; {} of {} bytes by {} ms",
        s.counters.reassembly_refused,
        app.received.len(),
        data.len(),
        sim.now / 1000
    );
    assert!(s.counters.reassembly_refused > 0, "the scenario fills the reassembly");
    assert!(lost >= s.counters.reassembly_refused, "every refused packet counts as lost at the sender");
    assert!(done, "the transfer completes");
    assert_eq!(app.received, data);
}

/// Both paths fail under an upload, with data in flight on each; only path 0 comes back.
/// Each subflow's timeout queues its flight for the *other* subflow (a reinjection), but the
/// other one is dead: what path 0 carried must go back on path 0 at its pace, not one chunk
/// per retransmission timeout (issue 23: `round-robin`, like every scheduler that skips a
/// subflow that carried the segment, found none and sent nothing).
#[test]
fn a_reinjection_with_nowhere_else_to_go_returns_to_its_subflow() {
    let rr = cfg(PathManager::Fullmesh).with(|c| c.multipath.scheduler = "round-robin".into());
    let mut sim = Sim::new(5, rr.clone(), rr, multimob_paths()).unwrap();
    sim.logging = false;
    let data = pattern(4 << 20, 4);
    let mut app = Bulk::new(data.clone(), false);
    for p in [0, 1] {
        sim.at(ms(1_000), p, mpsim::PathEvent::Down);
    }
    sim.at(ms(3_000), 0, mpsim::PathEvent::Up);
    let done = sim.run(ms(60_000), |s| app.drive(s));
    assert!(done && app.received == data, "the upload completed");
    // 10 Mbit/s: about 1.2 MB before the outage, the other 3 MB in 2.7 s after it.
    assert!(sim.now < ms(8_000), "done {} ms after path 0 came back", (sim.now - ms(3_000)) / 1000);
}

/// Four-byte CIDs collide (issue 23): here every join CID is forced to the same value, on
/// both endpoints. The endpoint gives each colliding subflow a fresh CID before any packet
/// carries it, so three connections each join their second path, and no packet reaches the
/// wrong connection. Without the renaming the later joins took over the first one's route.
#[test]
fn colliding_join_cids_are_renamed_before_they_are_used() {
    let mut c = cfg(PathManager::Fullmesh);
    c.faults.same_join_cid = true;
    let mut sim = Sim::new(9, c.clone(), c, multimob_paths()).unwrap();
    let conns: Vec<_> = (0..3).map(|_| sim.connect()).collect();
    sim.run_until(ms(3_000), |s| {
        while s.server.accept().is_some() {}
        None
    });
    for h in &conns {
        let st = sim.client.stats(*h).unwrap();
        let up: Vec<_> = st.subflows.iter().map(|f| f.state).collect();
        assert_eq!(up, [SubflowState::Established; 2], "connection {h}: both subflows up");
    }
    let servers: Vec<_> = sim.server.handles().collect();
    assert_eq!(servers.len(), 3);
    for h in servers {
        let up = sim.server.stats(h).unwrap().subflows.iter().filter(|f| f.state == SubflowState::Established).count();
        assert_eq!(up, 2, "server connection {h}: both subflows up");
    }
    for (side, d) in [("client", sim.client.drops()), ("server", sim.server.drops())] {
        assert_eq!((d.unknown_cid, d.decrypt_failed), (0, 0), "{side}: {d:?}");
    }
}

/// `handle_timeout(now)` runs every timer due at `now`, also for a caller that did not ask
/// `poll_timeout` first: the deadlines that the datagrams sent since moved (the endpoint
/// enters them lazily, once per batch rather than per datagram) are brought up to date before
/// the due ones are taken.
#[test]
fn handle_timeout_without_poll_timeout_runs_what_the_last_datagrams_made_due() {
    let (mut sim, c) = established(3);
    assert!(sim.client.conn(c).is_some_and(|cc| cc.is_established()), "established");
    let now = sim.now;
    let later = now + ms(300);
    let quiet = sim.client.poll_timeout().unwrap();
    assert!(quiet > later, "nothing due soon on a quiet connection: {quiet} µs, now {now} µs");
    sim.client.conn_mut(c).unwrap().write(&[7; 1000]).unwrap();
    let mut buf = vec![0u8; 2048];
    let mut sent = 0;
    while sim.client.poll_transmit(now, &mut buf).is_some() {
        sent += 1;
    }
    assert!(sent > 0);
    // Those datagrams are lost. 300 ms later (many round trips) their probe is due, though
    // the endpoint was not asked for its deadline since it sent them.
    sim.client.handle_timeout(later);
    assert!(sim.client.poll_transmit(later, &mut buf).is_some(), "the lost data's probe goes out");
}

/// A lost single-packet message is one loss for MultiMob's oracle: the tail loss probe marks it
/// lost when it fires (MultiMob §III-B), and its later declaration as lost is not counted
/// again. Counting both made the oracle's loss rate twice the path's for one-packet messages.
#[test]
fn a_lost_tail_is_one_loss_for_the_oracle() {
    let (mut sim, c) = established(5);
    let counters = |s: &Sim| s.client.stats(c).unwrap().subflows[0].counters;
    let before = counters(&sim);
    // The message's only packet is lost; the path is back before the probe.
    let t = sim.now;
    sim.change(0, PathEvent::Down);
    sim.at(t + ms(5), 0, PathEvent::Up);
    sim.client.conn_mut(c).unwrap().write(&[9; 500]).unwrap();
    sim.run_until(t + ms(1_000), |_| None);
    let after = counters(&sim);
    assert_eq!(after.tlp_count - before.tlp_count, 1, "{after:?}");
    assert_eq!(after.packets_lost - before.packets_lost, 1, "{after:?}");
    assert_eq!(after.oracle_losses - before.oracle_losses, 1, "{after:?}");
}

#[test]
fn a_few_milliseconds_of_jitter_on_a_fast_primary_leave_the_backup_unused() {
    // A 0.5 ms RTT primary (loopback, a WiFi to a nearby server) whose answers are now and
    // then held 8 ms, as a busy host's scheduler holds a process: its probe timeouts are a
    // millisecond or two, but a path is declared silent only after SILENCE_FLOOR (10 ms), so
    // the backup that is never needed carries no data (the CI failure of iperf-siri's
    // `a_backup_that_is_never_needed_carries_only_its_join`).
    let mut paths = multimob_paths();
    paths[0].delay = 250;
    paths[1].backup = true;
    let mut sim = Sim::new(7, cfg(PathManager::Backup), cfg(PathManager::Fullmesh), paths).unwrap();
    let siri = SiriConfig { requests: 4, gap: ms(50), wait: ms(300), ..SiriConfig::default() };
    let mut app = Siri::new(siri, 7);
    for k in 0..120 {
        sim.at(siri.start + k * ms(20), 0, PathEvent::Delay(ms(4)));
        sim.at(siri.start + k * ms(20) + ms(6), 0, PathEvent::Delay(250));
    }
    assert!(sim.run(ms(20_000), |s| app.drive(s)));
    assert_eq!(app.results.iter().filter(|r| r.delay.is_some()).count(), 4);
    let h = sim.client.handles().next().unwrap();
    let st = sim.client.stats(h).unwrap();
    assert!(st.subflows[1].backup);
    assert_eq!(st.subflows[1].counters.data_bytes_sent, 0, "data on the backup: {:#?}", st.subflows[1]);
}
