//! Issue 17, quiet when idle: a connection with nothing to send sends nothing but its
//! keep-alives (PROTOCOL.md §5, §7).
#![allow(clippy::unwrap_used)]

use mpcore::{Config, PathManager, Time};
use mpsim::apps::Bulk;
use mpsim::{ms, Dir, Flow, PathEvent, Sim};

/// Runs a small exchange (one request's worth), then `idle` of nothing; returns the packets
/// sent on each path during the idle time, (up, down).
fn idle_packets(client: Config, server: Config, backup_cell: bool, idle: u64) -> Vec<(usize, usize)> {
    let paths = if backup_cell { mpsim::multimob_backup_paths() } else { mpsim::multimob_paths() };
    let mut sim = Sim::new(5, client, server, paths).unwrap();
    let mut app = Bulk::new(vec![7; 3_000], false);
    let until = ms(1_000);
    sim.run(until, |s| {
        app.step(s);
        Flow::Wake(None)
    });
    assert_eq!(app.received.len(), 3_000, "the exchange before the idle time completed");
    sim.run(until + idle, |s| {
        app.step(s);
        Flow::Wake(None)
    });
    let h = app.client.unwrap();
    assert!(sim.client.conn(h).is_some_and(|c| !c.is_closed()), "still connected after the idle time");
    (0..2).map(|p| (sim.packets_on(p, Some(Dir::Up), until), sim.packets_on(p, Some(Dir::Down), until))).collect()
}

fn no_keep_alives(c: Config) -> Config {
    c.with(|c| {
        c.transport.keep_alive = 0;
        c.transport.idle_timeout = 0;
    })
}

#[test]
fn two_idle_endpoints_exchange_nothing_without_keep_alives() {
    // Both paths with a regular subflow each (fullmesh), the server's subflow idle timeout off
    // too: no acknowledgement of an acknowledgement, so not one packet in a minute.
    let fullmesh = Config::default().with(|c| {
        c.multipath.path_manager = PathManager::Fullmesh;
        c.multipath.subflow_idle_timeout = 0;
    });
    let got = idle_packets(no_keep_alives(fullmesh.clone()), no_keep_alives(fullmesh), false, ms(60_000));
    assert_eq!(got, vec![(0, 0), (0, 0)], "packets (up, down) per path in 60 idle seconds");
    // The phone presets, WiFi and a cellular backup: the same.
    let got = idle_packets(no_keep_alives(Config::phone()), no_keep_alives(Config::server()), true, ms(60_000));
    assert_eq!(got, vec![(0, 0), (0, 0)], "phone presets without keep-alives");
}

#[test]
fn an_idle_phone_sends_only_keep_alives_on_wifi_and_nothing_on_cellular() {
    // `backup` path manager: the cellular backup subflow is open, and stays silent.
    let phone = Config::phone().with(|c| c.multipath.path_manager = PathManager::Backup);
    let hour = ms(3_600_000);
    for (name, client) in [("multimob", Config::phone()), ("backup", phone)] {
        let got = idle_packets(client, Config::server(), true, hour);
        println!(
            "{name}: one idle hour: WiFi {} up / {} down, cellular {} up / {} down",
            got[0].0, got[0].1, got[1].0, got[1].1
        );
        // A PING every 15 s and its ACK: 240 each per hour.
        assert!((239..=240).contains(&got[0].0), "{name}: keep-alives on WiFi: {:?}", got[0]);
        assert_eq!(got[0].1, got[0].0, "{name}: one ACK per keep-alive, nothing else from the server");
        assert_eq!(got[1], (0, 0), "{name}: nothing on cellular");
    }
}

/// An ACK no longer answers a window update, so a lost one would leave a sender whose window
/// is closed waiting for good: the update goes with a PING, repeated until acknowledged. A
/// slow reader behind a 16 KB window on a lossy path (six seeds), keep-alives off (nothing
/// else would wake the sender): the upload completes every time.
#[test]
fn a_lost_window_update_is_repaired() {
    let stalls: Vec<Time> = (1..=6).map(slow_reader).collect();
    println!("longest stall per seed (ms): {:?}", stalls.iter().map(|s| s / 1000).collect::<Vec<_>>());
    // Repaired by the receiver's own loss recovery (its PING's retransmission timer: a tail
    // probe at 2 SRTT, RTOs of at least 200 ms doubling at each loss in a row, so a few
    // seconds at worst at 10% loss). Without the PING one of these seeds never completes: the
    // sender waits on a window it was never told had opened.
    assert!(stalls.iter().all(|&s| s < ms(5_000)), "{stalls:?}");
}

/// One run of the slow reader with `seed`; the longest time the reader got nothing.
fn slow_reader(seed: u64) -> Time {
    let mut paths = mpsim::multimob_paths();
    paths.truncate(1);
    paths[0].loss = 0.1;
    let client = Config::default().with(|c| {
        c.multipath.path_manager = PathManager::OnDemand;
        c.transport.keep_alive = 0;
    });
    let server = Config::default().with(|c| {
        c.transport.recv_window = 16 << 10;
        c.transport.max_recv_window = 16 << 10;
        c.transport.keep_alive = 0;
    });
    let mut sim = Sim::new(seed, client, server, paths).unwrap();
    let data = mpsim::apps::pattern(1 << 20, 3);
    let (mut written, mut got, mut buf) = (0, Vec::new(), vec![0u8; 16 << 10]);
    let (mut c, mut s, mut events) = (None, None, Vec::new());
    let mut next_read = 0;
    let (mut stall, mut last_got) = (0, 0);
    let done = sim.run(ms(60_000), |sim| {
        mpsim::apps::pump(sim, &mut c, &mut s, &mut events);
        if let Some(conn) = c.and_then(|h| sim.client.conn_mut(h)) {
            while written < data.len() {
                match conn.write(&data[written..]) {
                    Ok(n) => written += n,
                    Err(_) => break,
                }
            }
        }
        // The reader takes what is there every 50 ms, no more often.
        if sim.now >= next_read {
            next_read = sim.now + ms(50);
            if let Some(conn) = s.and_then(|h| sim.server.conn_mut(h)) {
                if let Ok(n) = conn.read(&mut buf) {
                    if n > 0 {
                        stall = stall.max(sim.now - last_got);
                        last_got = sim.now;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
            }
        }
        if got.len() == data.len() {
            Flow::Done
        } else {
            Flow::Wake(Some(next_read))
        }
    });
    assert!(done, "the upload stalled at {} of {} bytes", got.len(), data.len());
    assert!(got == data);
    stall
}

/// Issue 19, small idle connections: the buffers grow with a transfer (a 4 MiB upload over
/// the MultiMob paths) and are given back once no data has moved for `TRIM_AFTER` (3 s), on
/// both ends; the connection then holds only a few bytes of packet-number ranges.
#[test]
fn buffers_follow_activity() {
    let quiet = |c: Config| {
        c.with(|c| {
            c.transport.keep_alive = 0;
            c.transport.idle_timeout = 0;
        })
    };
    let mut sim = Sim::new(11, quiet(Config::phone()), quiet(Config::server()), mpsim::multimob_paths()).unwrap();
    let mut app = Bulk::new(vec![9; 4 << 20], false);
    let mut busiest = [0usize; 2];
    sim.run(ms(30_000), |s| {
        app.step(s);
        if let (Some(c), Some(h)) = (app.client, app.server) {
            let bytes =
                [s.client.conn(c).map_or(0, |c| c.buffer_bytes()), s.server.conn(h).map_or(0, |c| c.buffer_bytes())];
            busiest = [busiest[0].max(bytes[0]), busiest[1].max(bytes[1])];
        }
        if app.received.len() == app.data.len() {
            Flow::Done
        } else {
            Flow::Wake(None)
        }
    });
    assert_eq!(app.received.len(), 4 << 20, "the upload completed");
    let (c, h) = (app.client.unwrap(), app.server.unwrap());
    println!("largest buffers during the upload: client {} KiB, server {} KiB", busiest[0] >> 10, busiest[1] >> 10);
    assert!(busiest[0] >= 256 << 10 && busiest[1] >= 64 << 10, "they grew with the transfer: {busiest:?}");
    let done = sim.now;
    sim.run(done + ms(2_500), |s| {
        app.step(s);
        Flow::Wake(None)
    });
    let held = |sim: &Sim| [sim.client.conn(c).unwrap().buffer_bytes(), sim.server.conn(h).unwrap().buffer_bytes()];
    assert!(held(&sim)[0] >= 4096, "2.5 s after the last data the buffers are kept: {:?}", held(&sim));
    sim.run(done + ms(4_000), |s| {
        app.step(s);
        Flow::Wake(None)
    });
    let idle = held(&sim);
    println!("held after 4 idle seconds: client {} B, server {} B", idle[0], idle[1]);
    assert!(idle.iter().all(|&b| b <= 256), "given back when idle: {idle:?}");
    assert!(sim.client.conn(c).is_some_and(|c| !c.is_closed()), "still connected");
}

/// The simulator's half of `mpudp/tests/no_alloc.rs`: once an upload over two paths has
/// reached its working size, the client's buffers keep it while the subflows' shares of the
/// flight shift: the fast path goes down for two seconds and the slow one carries everything,
/// then the fast path comes back (the buffers are sized by the send buffer, not by doubling at
/// each new high of a subflow's flight). Each subflow that
/// sends data holds a slot per 1,000 bytes of the send buffer (40 bytes each, 4 %), beside the
/// retransmission queue's 2 %: 4 MiB of buffer hold at least 6 % more. (The server's
/// reassembly ranges may grow while the outage's losses are repaired; that is not a steady
/// state, and `no_alloc.rs` covers the receiver's.)
#[test]
fn a_transfer_keeps_its_buffers_as_its_paths_change() {
    let fullmesh = Config::default().with(|c| c.multipath.path_manager = PathManager::Fullmesh);
    let mut sim = Sim::new(3, fullmesh, Config::server(), mpsim::multimob_paths()).unwrap();
    let mut app = Bulk::new(vec![3; 12 << 20], false);
    let (mut sizes, mut last, mut cut, mut working) = (Vec::new(), 0, false, 0);
    sim.run(ms(60_000), |s| {
        app.step(s);
        let held = app.client.and_then(|c| s.client.conn(c)).map_or(0, |c| c.buffer_bytes());
        if app.received.len() >= 2 << 20 {
            if !cut {
                cut = true;
                working = held;
                let now = s.now;
                s.change(0, PathEvent::Down);
                s.at(now + ms(2_000), 0, PathEvent::Up);
            } else if held != last {
                sizes.push(held);
            }
        }
        last = held;
        if app.received.len() == app.data.len() {
            Flow::Done
        } else {
            Flow::Wake(None)
        }
    });
    assert_eq!(app.received.len(), 12 << 20, "the upload completed");
    assert!(working >= (4 << 20) * 106 / 100, "the working size, {working} bytes, has room for the flight");
    assert!(sizes.is_empty(), "the client's buffers changed size to {sizes:?} bytes");
}

/// A keep-alive is no activity to size buffers for: the server's acknowledgement of a client's
/// PING records one packet, not the working size of a receiver's sent-packet ring (a slot per
/// acknowledgement the receive window calls for, 21 KiB at 1 MiB). A server keeping 50,000
/// phones alive every 15 s held that for 3 s after each keep-alive: 5 KiB per connection on
/// average (`benches/scale`).
#[test]
fn a_keep_alive_grows_no_buffer() {
    let quiet_server = Config::server().with(|c| c.transport.idle_timeout = 0);
    let mut sim = Sim::new(12, Config::phone(), quiet_server, mpsim::multimob_paths()).unwrap();
    let c = sim.connect();
    let mut h = None;
    let mut most = 0;
    let keep_alive = Config::phone().transport.keep_alive;
    sim.run_until(ms(10_000), |s| {
        h = h.or_else(|| s.server.accept());
        None
    });
    let h = h.expect("accepted");
    // Past the handshake's buffers (trimmed), through three keep-alives.
    let sent_before = sim.client.stats(c).unwrap().subflows[0].counters.packets_sent;
    sim.run_until(ms(10_000) + 3 * keep_alive, |s| {
        most = most.max(s.server.conn(h).map_or(0, |c| c.buffer_bytes()));
        None
    });
    let pings = sim.client.stats(c).unwrap().subflows[0].counters.packets_sent - sent_before;
    assert!(pings >= 3, "the client kept the connection alive: {pings} packets");
    assert!(most <= 1024, "the server held {most} bytes of buffers for a keep-alive");
}

/// The client's timer deadlines that came due while idle for `idle` after a small exchange
/// (each one a wake-up of a phone's process).
fn idle_deadlines(client: Config, idle: u64) -> Vec<Time> {
    let mut sim = Sim::new(5, client, Config::server(), mpsim::multimob_backup_paths()).unwrap();
    let mut app = Bulk::new(vec![7; 3_000], false);
    let until = ms(1_000);
    let step = |s: &mut Sim| {
        app.step(s);
        Flow::Wake(None)
    };
    sim.run(until, step);
    assert_eq!(app.received.len(), 3_000, "the exchange before the idle time completed");
    let mut due = Vec::new();
    let mut t = until;
    while t < until + idle {
        if let Some(d) = sim.client.poll_timeout().filter(|&d| d <= until + idle && due.last() != Some(&d)) {
            due.push(d);
        }
        t += ms(10);
        sim.run(t, |s| {
            app.step(s);
            Flow::Wake(None)
        });
    }
    due
}

#[test]
fn an_idle_phone_wakes_only_for_its_keep_alives() {
    // The oracle's periods (500 ms) stop once one changes nothing, and resume with the next
    // datagram or timer: without keep-alives, the idle phone has no timer once the last
    // exchange's own (an idle probe, its answer, the oracle's period after it) have run.
    let quiet = idle_deadlines(no_keep_alives(Config::phone()), ms(60_000));
    println!("no keep-alives: {} timers in an idle minute: {quiet:?}", quiet.len());
    assert!(quiet.len() <= 4, "timers of an idle phone without keep-alives: {quiet:?}");
    // With them (every 15 s): per keep-alive, its own timer, its probe timeout, the oracle's
    // period that sees the PING and its ACK (after which it sleeps: the next would change
    // nothing), and three seconds later the buffer-trim timer the datagrams armed and the
    // period it starts. Every 500 ms before (120 a minute).
    let keep = idle_deadlines(Config::phone(), ms(60_000));
    println!("keep-alives: {} timers in an idle minute: {keep:?}", keep.len());
    assert!(keep.len() <= 4 * 7, "timers of an idle phone with keep-alives every 15 s: {keep:?}");
}
