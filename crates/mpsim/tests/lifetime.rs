//! Issue 16 in the simulator: subflows have an owner. Records of closed subflows are reclaimed,
//! the peer is told when a subflow ends, a server reclaims subflows that went silent, and the
//! same seed gives the same run, byte for byte.
#![allow(clippy::unwrap_used)]

mod common;

use common::cfg;
use mpcore::wire::frame::reason;
use mpcore::{Config, ConnHandle, Event, PathId, PathManager, SubflowState, Time};
use mpsim::apps::{pattern, Bulk, Trickle};
use mpsim::{ms, Dir, Flow, PathEvent, Sim, Verdict};
use std::cell::RefCell;
use std::rc::Rc;

/// SHA-256 over every datagram that entered a path (time, path, direction, bytes) during a
/// lossy upload with an outage, and the number of datagrams.
fn trace(seed: u64) -> (Vec<u8>, usize) {
    let mut paths = mpsim::multimob_paths();
    paths[0].loss = 0.02;
    paths[1].reorder = 0.05;
    paths[1].reorder_delay = ms(3);
    let mut sim = Sim::new(seed, cfg(PathManager::Fullmesh), cfg(PathManager::Fullmesh), paths).unwrap();
    let digest = Rc::new(RefCell::new((ring::digest::Context::new(&ring::digest::SHA256), 0usize)));
    let d2 = digest.clone();
    sim.tap = Some(Box::new(move |t, path, dir, bytes| {
        let mut d = d2.borrow_mut();
        d.0.update(&t.to_be_bytes());
        d.0.update(&[path as u8, u8::from(dir == Dir::Up)]);
        d.0.update(bytes);
        d.1 += 1;
    }));
    sim.at(ms(700), 0, PathEvent::Down);
    sim.at(ms(1_500), 0, PathEvent::Up);
    let mut app = Bulk::new(pattern(600_000, seed), false);
    assert!(sim.run(ms(30_000), |s| app.drive(s)));
    sim.tap = None;
    let (ctx, n) = Rc::try_unwrap(digest).ok().unwrap().into_inner();
    (ctx.finish().as_ref().to_vec(), n)
}

#[test]
fn the_same_seed_gives_the_same_datagrams_byte_for_byte() {
    let (a, n) = trace(21);
    assert!(n > 500, "{n} datagrams");
    assert_eq!(trace(21), (a.clone(), n), "key shares, CIDs and nonces come from the seed too");
    assert_ne!(trace(22).0, a, "another seed, another run");
}

/// Runs `app` (the trickle) until `until` returns true or `limit` passes; true if it did.
fn run_until(sim: &mut Sim, app: &mut Trickle, limit: Time, mut until: impl FnMut(&Sim) -> bool) -> bool {
    sim.run(limit, |s| if until(s) { Flow::Done } else { Flow::Wake(Some(app.step(s))) })
}

fn state_of(sim: &Sim, h: ConnHandle, id: u32) -> Option<SubflowState> {
    sim.client.conn(h)?.stats().subflows.iter().find(|s| s.id == id).map(|s| s.state)
}

#[test]
fn a_thousand_open_close_cycles_then_a_join_that_succeeds() {
    let mut sim =
        Sim::new(31, cfg(PathManager::OnDemand), cfg(PathManager::OnDemand), mpsim::multimob_paths()).unwrap();
    let mut app = Trickle::new(&mut sim);
    let h = app.client;
    assert!(run_until(&mut sim, &mut app, ms(2_000), |s| s.client.conn(h).is_some_and(|c| c.is_established())));
    let (mut most_client, mut most_server) = (0, 0);
    for cycle in 0..=1000 {
        let now = sim.now;
        let c = sim.client.conn_mut(h).unwrap();
        let id = c.open_subflow(now, PathId(1), mpsim::server_addr(), false);
        let id = id.unwrap_or_else(|| panic!("cycle {cycle}: no subflow could be opened"));
        sim.client.refresh(h);
        let up =
            run_until(&mut sim, &mut app, now + ms(2_000), |s| state_of(s, h, id) == Some(SubflowState::Established));
        assert!(up, "cycle {cycle}: subflow {id} did not join");
        if cycle == 1000 {
            break; // the last one stays: it carries data
        }
        let now = sim.now;
        assert!(sim.client.conn_mut(h).unwrap().close_subflow(now, id, reason::GRACEFUL));
        run_until(&mut sim, &mut app, now + ms(50), |_| false);
        most_client = most_client.max(sim.client.conn(h).unwrap().subflow_records());
        let s = app.server.unwrap();
        most_server = most_server.max(sim.server.conn(s).unwrap().subflow_records());
    }
    // The connection goes on over the last join alone: the first subflow is closed, and the
    // trickle's data has to take the last one.
    let start = sim.now;
    assert!(sim.client.conn_mut(h).unwrap().close_subflow(start, 0, reason::GRACEFUL));
    let sent = |sim: &Sim| {
        let st = sim.client.conn(h).unwrap().stats();
        st.subflows.iter().find(|s| s.id == 1001).unwrap().counters.data_bytes_sent
    };
    let before = sent(&sim);
    run_until(&mut sim, &mut app, start + ms(3_000), |_| false);
    let c = sim.client.conn(h).unwrap().stats();
    assert!(c.established && c.closed.is_none());
    let last = c.subflows.iter().find(|s| s.id == 1001).unwrap();
    assert_eq!(last.state, SubflowState::Established);
    assert!(sent(&sim) > before, "the last subflow carries the data");
    // Closed records are reclaimed after their drain: a handful at a time, never 1,000.
    println!("1,001 joins; at most {most_client} records at the client, {most_server} at the server");
    assert!(most_client <= 12 && most_server <= 12, "{most_client} / {most_server}");
    assert_eq!(c.subflows.len(), 1 + 8, "the live subflow and the last eight closed ones");
}

/// Flaps local path `path`'s interface 200 times (down 2 s, up 3 s), telling the client's
/// endpoint as a driver would. Returns (flaps after which the path carried data again, the
/// most subflow records the server held for the connection).
fn flaps(client: Config, server: Config, paths: Vec<mpsim::PathConfig>, path: usize) -> (usize, usize) {
    let mut sim = Sim::new(41, client, server, paths).unwrap();
    sim.logging = true;
    let mut app = Trickle::new(&mut sim);
    run_until(&mut sim, &mut app, ms(2_000), |_| false);
    let (mut carried, mut most) = (0, 0);
    for _ in 0..200 {
        let t0 = sim.now;
        sim.at(t0, path, PathEvent::Down);
        sim.at(t0 + ms(2_000), path, PathEvent::Up);
        let mut state = 0;
        sim.run(t0 + ms(5_000), |s| {
            if state == 0 && s.now >= t0 {
                s.client.set_path_up(s.now, PathId(path as u8), false);
                state = 1;
            }
            if state == 1 && s.now >= t0 + ms(2_000) {
                s.client.set_path_up(s.now, PathId(path as u8), true);
                state = 2;
            }
            if let Some(c) = app.server.and_then(|h| s.server.conn(h)) {
                most = most.max(c.subflow_records());
            }
            let next = app.step(s);
            Flow::Wake(Some([t0, t0 + ms(2_000)].into_iter().filter(|&t| t > s.now).fold(next, Time::min)))
        });
        // Data (the trickle's 1,200-byte writes) on the path after it came back.
        let up = t0 + ms(2_000);
        if sim.path_log(path).iter().any(|e| e.time > up && e.dir == Dir::Up && e.size > 1_000) {
            carried += 1;
        }
        // Memory follows activity: the logs of earlier flaps are not needed.
        sim.clear_logs();
    }
    let c = sim.client.conn(app.client).unwrap().stats();
    assert!(c.established && c.closed.is_none(), "the connection survives 200 flaps");
    (carried, most)
}

#[test]
fn two_hundred_flaps_of_the_second_interface_under_fullmesh() {
    // Round-robin spreads the trickle over both paths, so each flap shows whether the path
    // carries data again.
    let client = cfg(PathManager::Fullmesh).with(|c| c.multipath.scheduler = "round-robin".into());
    let flapped = flaps(client, cfg(PathManager::Fullmesh), mpsim::multimob_paths(), 1);
    assert_recovered("fullmesh, the second path", flapped);
}

/// Data on the flapped path after every flap, and at most paths + 1 = 3 records at the server.
fn assert_recovered(what: &str, (carried, most): (usize, usize)) {
    println!("{what}: data after {carried} of 200 flaps; the server held at most {most} records");
    assert_eq!(carried, 200, "{what}");
    assert!(most <= 3, "{what}: paths + 1 = 3, held {most}");
}

#[test]
fn two_hundred_flaps_of_wifi_under_multimob() {
    // MultiMob leaves cellular unused while WiFi works, so flapping cellular changes nothing
    // (tests/core.rs shows it); a phone walking in and out of WiFi flaps WiFi.
    let client = mpsim::multimob_client(oracle::Config::default());
    let paths = mpsim::multimob_backup_paths();
    assert_recovered("multimob, WiFi", flaps(client, mpsim::multimob_server(), paths, 0));
}

#[test]
fn two_hundred_flaps_of_the_unused_cellular_interface_under_multimob() {
    // The second interface itself: MultiMob opens nothing on it while WiFi works, so its
    // flaps cost nothing, neither packets nor records.
    let client = mpsim::multimob_client(oracle::Config::default());
    let (carried, most) = flaps(client, mpsim::multimob_server(), mpsim::multimob_backup_paths(), 1);
    assert_eq!(carried, 0, "cellular stays unused");
    assert_eq!(most, 1, "the server holds the WiFi subflow alone");
}

#[test]
fn a_server_reclaims_a_subflow_whose_client_end_went_silent() {
    // The client's second path dies without its interface going down (a NAT drops the
    // binding): the client cannot tell the server, so the server's idle timeout must.
    let mut sim =
        Sim::new(43, cfg(PathManager::Fullmesh), cfg(PathManager::Fullmesh), mpsim::multimob_paths()).unwrap();
    let mut app = Trickle::new(&mut sim);
    run_until(&mut sim, &mut app, ms(2_000), |_| false);
    let s = app.server.unwrap();
    assert_eq!(sim.server.conn(s).unwrap().subflow_records(), 2);
    sim.at(ms(2_000), 1, PathEvent::Down);
    let mut closed_at = None;
    sim.run(ms(40_000), |sim| {
        while let Some((_, e)) = sim.server.poll_event() {
            if e == (Event::SubflowClosed { id: 1, reason: reason::IDLE_TIMEOUT }) {
                closed_at = Some(sim.now);
            }
        }
        Flow::Wake(Some(app.step(sim)))
    });
    let idle = Config::default().multipath.subflow_idle_timeout;
    let at = closed_at.expect("the server closed the silent subflow");
    // The trickle goes over path 0 (the lower RTT) and nothing acknowledges an acknowledgement:
    // the server last heard on path 1 when the subflow was set up, well before it died.
    let heard = sim.path_log(1).iter().filter(|e| e.dir == Dir::Up && e.verdict == Verdict::Delivered);
    let last = heard.map(|e| e.time).max().unwrap();
    println!("last heard at {:.3} s; closed by the server at {:.1} s", last as f64 / 1e6, at as f64 / 1e6);
    assert!(at > last + idle && at < last + idle + ms(5_000), "{at}");
    assert_eq!(sim.server.conn(s).unwrap().subflow_records(), 1, "its record was reclaimed");
    let c = sim.server.conn(s).unwrap().stats();
    assert!(c.closed.is_none(), "the connection goes on over WiFi");
}

type Case = (&'static str, Vec<u8>, &'static str);

/// Frames carrying every number at its largest, each with what the receiver does: "protocol"
/// (the packet is dropped and counted), "bad_hmac" or "unexpected" (the frame is rejected and
/// counted), or "taken". `ack` is a DATA_ACK the receiver can accept.
fn extreme_frames(ack: u64) -> Vec<Case> {
    use mpcore::wire::frame::{AddAddr, FastJoinIn, FastJoinOut, FastJoinReply, MpJoinSynAck, ReplyValue};
    use mpcore::wire::{Ack, Cid, Dss, Frame, MapHeader, Writer};
    const MAX: u64 = (1 << 62) - 1;
    let encode = |f: &dyn Fn(&mut Writer<'_>)| {
        let mut b = vec![0u8; 1100];
        let mut w = Writer::new(&mut b);
        f(&mut w);
        let n = w.len();
        b.truncate(n);
        b
    };
    let frame = |f: Frame<'_>| encode(&|w| f.emit(w).unwrap());
    let ones = std::net::IpAddr::from([0xffu8; 16]);
    vec![
        ("ACK of packet 2^62-1, delay 2^62-1", encode(&|w| Ack::emit(w, MAX, [(0, MAX)]).unwrap()), "protocol"),
        (
            "DATA_ACK 2^64-1, window 2^62-1",
            encode(&|w| Dss::emit_header(w, Some((u64::MAX, MAX)), None, false, false).unwrap()),
            "protocol",
        ),
        (
            "mapping at DSN 2^64-1",
            encode(&|w| {
                let m = MapHeader { dsn: u64::MAX, len: 1, short_dsn: false, to_end: false };
                Dss::emit_header(w, None, Some(m), true, true).unwrap();
                w.u8(0x55).unwrap();
            }),
            "protocol",
        ),
        (
            "a true DATA_ACK, window 2^62-1",
            encode(&|w| Dss::emit_header(w, Some((ack, MAX)), None, false, false).unwrap()),
            "taken",
        ),
        ("RTO 2^62-1 ms", frame(Frame::Rto { request: true, rto_ms: Some(MAX) }), "taken"),
        (
            "ADD_ADDR id 255, port 65535, forged",
            frame(Frame::AddAddr(AddAddr { addr_id: 255, ip: ones, port: 65535, hmac: Some([0xff; 8]) })),
            "bad_hmac",
        ),
        (
            "ADD_ADDR echo id 255",
            frame(Frame::AddAddr(AddAddr { addr_id: 255, ip: ones, port: 65535, hmac: None })),
            "taken",
        ),
        ("REMOVE_ADDR 255 x id 255", frame(Frame::RemoveAddr(&[255; 255])), "taken"),
        (
            "REMOVE_SUBFLOW 16 x number 2^32-1, reason 255",
            frame(Frame::RemoveSubflow(mpcore::wire::remove_subflow::RemoveSubflow::parse(&[0xff; 80]).unwrap())),
            "taken",
        ),
        ("MP_FASTCLOSE key 2^64-1", frame(Frame::FastClose { key: u64::MAX, reason: 255 }), "bad_hmac"),
        (
            "MP_JOIN_SYNACK",
            frame(Frame::MpJoinSynAck(MpJoinSynAck {
                backup: true,
                addr_id: 255,
                nonce: u32::MAX,
                hmac: [0xff; 8],
                cid: Cid([0xff; 8]),
            })),
            "taken",
        ),
        ("MP_JOIN_ACK", frame(Frame::MpJoinAck { hmac: [0xff; 20] }), "taken"),
        (
            "FAST_JOIN_REPLY DATA_ACK 2^64-1",
            frame(Frame::FastJoinReply(FastJoinReply {
                backup: true,
                addr_id: 255,
                value: ReplyValue::DataAck(u64::MAX),
                hmac: [0xff; 20],
                cid: [0xff; 8],
            })),
            "taken",
        ),
        (
            "FAST_JOIN_OUT DSN 2^64-1",
            frame(Frame::FastJoinOut(FastJoinOut {
                backup: true,
                addr_id: 255,
                dsn: u64::MAX,
                hmac: [0xff; 20],
                data: b"x",
            })),
            "unexpected",
        ),
        (
            "FAST_JOIN_IN DATA_ACK 2^64-1",
            frame(Frame::FastJoinIn(FastJoinIn { backup: true, addr_id: 255, data_ack: u64::MAX, hmac: [0xff; 20] })),
            "unexpected",
        ),
        ("PATH_CHALLENGE", frame(Frame::PathChallenge([0xff; 8])), "taken"),
        ("PATH_RESPONSE", frame(Frame::PathResponse([0xff; 8])), "taken"),
        ("extension type 2^62-1", frame(Frame::Extension { ty: MAX, body: &[0xff; 64] }), "taken"),
        ("TRANSPORT_PARAMS", frame(Frame::TransportParams(&[0xff; 64])), "taken"),
        ("COOKIE", frame(Frame::Cookie(&[0xff; 255])), "taken"),
    ]
}

/// Sends each case alone in a packet sealed with the connection's real keys, from the client
/// (`to_server`) or the server, while `app` runs; checks the receiver's counts.
fn inject_all(sim: &mut Sim, app: &mut Bulk, to_server: bool) {
    let (h, peer) =
        if to_server { (app.client.unwrap(), app.server.unwrap()) } else { (app.server.unwrap(), app.client.unwrap()) };
    let ep = |s: &Sim, to_server: bool| if to_server { *s.server.drops() } else { *s.client.drops() };
    let ack = if to_server { sim.client.conn(h) } else { sim.server.conn(h) }.unwrap().data_ack();
    let start = ep(sim, to_server);
    let mut expect = start;
    for (name, bytes, outcome) in extreme_frames(ack) {
        match outcome {
            "protocol" => expect.protocol += 1,
            "bad_hmac" => expect.bad_hmac += 1,
            "unexpected" => expect.unexpected += 1,
            _ => {}
        }
        let sender = if to_server { &mut sim.client } else { &mut sim.server };
        assert!(sender.conn_mut(h).unwrap().inject_frames(0, &bytes), "{name}");
        let t = sim.now;
        sim.run(t + ms(30), |s| Flow::Wake(app.step(s)));
        let d = ep(sim, to_server);
        assert_eq!(
            (d.protocol, d.bad_hmac, d.unexpected),
            (expect.protocol, expect.bad_hmac, expect.unexpected),
            "{name}"
        );
        let alive = if to_server { sim.server.conn(peer) } else { sim.client.conn(peer) };
        assert!(alive.is_some_and(|c| !c.is_closed()), "{name}: the connection lives on");
    }
}

/// Every number a frame carries, at its largest: each frame is sent alone in a packet sealed
/// with the connection's real keys, in the middle of an upload, in both directions. The
/// receiver must not panic (debug builds trap overflow; CI runs this test in release too),
/// must drop and count each packet whose values no correct peer sends (PROTOCOL.md §11), must
/// reject and count the frames it cannot use, and the upload must arrive intact.
#[test]
fn frames_with_extreme_values_are_dropped_and_counted_without_panic() {
    use mpcore::wire::Frame;
    let mut sim =
        Sim::new(51, cfg(PathManager::Fullmesh), cfg(PathManager::Fullmesh), mpsim::multimob_paths()).unwrap();
    let data = pattern(1 << 20, 51);
    let mut app = Bulk::paced(data.clone(), 4096, ms(10), 0);
    sim.run(ms(1_000), |s| Flow::Wake(app.step(s)));
    inject_all(&mut sim, &mut app, true);
    inject_all(&mut sim, &mut app, false);
    // A reset with the largest reason closes the subflow it came on; the upload goes on.
    let mut reset = [0u8; 16];
    let mut w = mpcore::wire::Writer::new(&mut reset);
    Frame::SubflowReset { transient: true, reason: 255 }.emit(&mut w).unwrap();
    let n = w.len();
    assert!(sim.client.conn_mut(app.client.unwrap()).unwrap().inject_frames(0, &reset[..n]));
    assert!(sim.run(ms(60_000), |s| app.drive(s)), "the upload completes");
    assert_eq!(app.received, data, "nothing lost or corrupted");
    assert!(app.events.iter().any(|e| !e.1 && e.2 == Event::SubflowClosed { id: 0, reason: 255 }));
}

/// Issue 19: a forgotten connection's slot is reused by the next one, under a new
/// generation: the old handle names nothing, the new one works, and `Forgotten` is each
/// connection's last event on both ends.
#[test]
fn a_forgotten_connections_slot_is_reused_under_a_new_handle() {
    let mut sim = Sim::new(4, cfg(PathManager::Fullmesh), cfg(PathManager::Fullmesh), mpsim::multimob_paths()).unwrap();
    let mut first = Bulk::new(pattern(50_000, 4), false);
    assert!(sim.run(ms(10_000), |s| first.drive(s)));
    sim.server.conn_mut(first.server.unwrap()).unwrap().close();
    let t = sim.now;
    sim.run(t + ms(10_000), |s| {
        first.step(s);
        Flow::Wake(None)
    });
    assert_eq!((sim.client.live_connections(), sim.server.live_connections()), (0, 0), "both forgot it");
    for side in [true, false] {
        let last = first.events.iter().rfind(|e| e.1 == side).map(|e| e.2);
        assert_eq!(last, Some(Event::Forgotten), "the last event (client side: {side})");
    }
    let (old_c, old_s) = (first.client.unwrap(), first.server.unwrap());
    let mut second = Bulk::new(pattern(50_000, 5), false);
    assert!(sim.run(sim.now + ms(10_000), |s| second.drive(s)));
    assert_eq!(second.received, second.data, "the second connection works");
    let (new_c, new_s) = (second.client.unwrap(), second.server.unwrap());
    assert_eq!((new_c.index(), new_s.index()), (old_c.index(), old_s.index()), "the slots are reused");
    assert!(new_c != old_c && new_s != old_s, "under new handles");
    assert!(sim.client.conn(old_c).is_none() && sim.server.conn(old_s).is_none(), "old handles name nothing");
    assert!(sim.client.conn(new_c).is_some() && sim.server.conn(new_s).is_some());
}

/// A subflow that closes hands the connection's frames it was still to carry to another one
/// (`Paths::shut_subflow`). Three paths under fullmesh; path 2 goes down and the client
/// withdraws its address: the subflow there is reset (the reset is lost with the path), and
/// the REMOVE_ADDR is queued on subflow 0, which the application closes at once, before
/// anything is sent. The REMOVE_ADDR goes on subflow 1, and the server closes its subflow to
/// path 2's address. Before, `close` forgot what the subflow was to carry, and the server
/// kept that subflow until its idle timeout.
#[test]
fn a_closing_subflow_hands_its_pending_frames_to_another() {
    let mut paths = mpsim::multimob_paths();
    paths.push(mpsim::PathConfig::new(mpsim::client_addr(2), mpcore::Iface::Wifi, 20, 10));
    let mut sim = Sim::new(21, cfg(PathManager::Fullmesh), cfg(PathManager::Fullmesh), paths).unwrap();
    let mut app = Bulk::new(pattern(2 << 20, 21), true);
    sim.run(ms(1_000), |s| Flow::Wake(app.step(s)));
    let h = app.server.unwrap();
    let third =
        move |sim: &Sim| sim.server.stats(h).unwrap().subflows.into_iter().find(|s| s.remote == mpsim::client_addr(2));
    assert_eq!(third(&sim).map(|s| s.state), Some(SubflowState::Established), "three subflows at first");
    sim.at(sim.now, 2, PathEvent::Down);
    sim.run_until(sim.now + 1, |_| None);
    let now = sim.now;
    let c = sim.client.conn_mut(app.client.unwrap()).unwrap();
    c.remove_address(now, PathId(2));
    assert!(c.close_subflow(now, 0, reason::GRACEFUL));
    sim.run(ms(2_000), |s| Flow::Wake(app.step(s)));
    assert_eq!(third(&sim).map(|s| s.state), Some(SubflowState::Closed), "the REMOVE_ADDR reached the server");
}

/// A REMOVE_SUBFLOW naming a number of the sender's own whose join has not arrived (a join
/// behind a radio's promotion when the fail-back closed it) retires the number: the late join
/// is refused as a used number (PROTOCOL.md §5.21), not opened as a subflow its sender no
/// longer answers on. The client opens a subflow on cellular (25 ms) and names it at once in a
/// REMOVE_SUBFLOW over WiFi (15 ms), which arrives first.
#[test]
fn a_subflow_removed_before_its_join_arrives_is_refused() {
    use mpcore::wire::remove_subflow::{push_entry, RemoveSubflow};
    use mpcore::wire::Frame;
    let mut sim =
        Sim::new(22, cfg(PathManager::Fullmesh), cfg(PathManager::Fullmesh), mpsim::multimob_paths()).unwrap();
    // A light upload (200 KB/s), which leaves the paths' queues empty.
    let mut app = Bulk::paced(pattern(1 << 20, 22), 2_000, ms(10), 0);
    sim.run(ms(1_000), |s| Flow::Wake(app.step(s)));
    let before = *sim.server.drops();
    let now = sim.now;
    let c = sim.client.conn_mut(app.client.unwrap()).unwrap();
    let id = c.open_subflow(now, PathId(1), mpsim::server_addr(), false).unwrap();
    let mut body = Vec::new();
    push_entry(&mut body, id, reason::UNSPECIFIED);
    let mut buf = [0u8; 16];
    let mut w = mpcore::wire::Writer::new(&mut buf);
    Frame::RemoveSubflow(RemoveSubflow::parse(&body).unwrap()).emit(&mut w).unwrap();
    let n = w.len();
    assert!(c.inject_frames(0, &buf[..n]));
    sim.run(now + ms(3_000), |s| Flow::Wake(app.step(s)));
    assert!(sim.server.drops().replayed_join > before.replayed_join, "the late join was refused");
    let server = sim.server.stats(app.server.unwrap()).unwrap();
    assert!(server.subflows.iter().all(|s| s.id != id), "the server never opened subflow {id}");
    assert!(sim.run(ms(60_000), |s| app.drive(s)), "the upload completes");
}
