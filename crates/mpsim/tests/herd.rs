//! Issue 52: one client endpoint with many connections (a load generator, a proxy: one
//! endpoint standing for thousands of phones), each asking one server a small request at a
//! time. On loopback, 10,000 such connections lost a request each, all at once: one
//! connection's silent flight declared WiFi bad for every connection of the endpoint, which
//! all failed over at once (10,000 joins) and then probed WiFi every 100 ms each (100,000
//! PINGs a second), while each drain of the full socket polled every waiting connection
//! again. The host's own delays then looked like a failing network, and it did not recover.
//! Each mechanism is tested here in virtual time, at a scale debug builds run in seconds:
//!
//! - a full socket costs a poll per datagram it takes, not one per waiting connection;
//! - one connection's silence on a netpath that brings the others their answers moves only
//!   that connection;
//! - a failover of every connection probes WiFi at the endpoint's pace, not each
//!   connection's, and every connection still fails back once WiFi returns.
#![allow(clippy::unwrap_used)]

use mpcore::wire::{Cid, Header, Packet};
use mpcore::{Config, ConnHandle, Event, Iface, PathId, SubflowState};
use mpsim::{client_addr, ms, multimob_client, multimob_paths, multimob_server, Dir, Flow, PathConfig, PathEvent, Sim};
use std::collections::HashMap;

const REQUEST: usize = 1_200;
const ANSWER: usize = 300;

/// The server of thousands of connections from one address (the per-source limit on first
/// packets, made for floods from a few addresses, would count them as one).
fn server(base: Config) -> Config {
    base.with(|c| c.server.initials_per_source = 0)
}

/// `n` connections of one client endpoint, each sending `count` requests of `REQUEST` bytes,
/// `every` apart from `start` (connection `i` offset by `i * spread / n`), the next only once
/// the last is answered; the server answers each with `ANSWER` bytes.
struct Many {
    conns: Vec<ConnHandle>,
    start: u64,
    every: u64,
    spread: u64,
    count: usize,
    /// Per connection: requests sent, and the one awaiting its answer (sent at, bytes left).
    sent: Vec<usize>,
    waiting: Vec<Option<(u64, usize)>>,
    /// Each answer's delay, and the connection that got it.
    answers: Vec<(usize, u64)>,
    server_got: HashMap<ConnHandle, usize>,
    buf: Vec<u8>,
}

impl Many {
    fn new(sim: &mut Sim, n: usize, start: u64, every: u64, spread: u64, count: usize) -> Self {
        // Opened 10 at a time, 25 ms apart: all at once, their INITIALs would overflow the
        // paths' queues (and some connections would start on cellular).
        let mut conns = Vec::with_capacity(n);
        while conns.len() < n {
            for _ in 0..10.min(n - conns.len()) {
                conns.push(sim.connect());
            }
            let t = sim.now + ms(25);
            sim.run_until(t, |s| {
                while s.server.accept().is_some() {}
                None
            });
        }
        Self {
            conns,
            start,
            every,
            spread,
            count,
            sent: vec![0; n],
            waiting: vec![None; n],
            answers: Vec::new(),
            server_got: HashMap::new(),
            buf: vec![0; 65_536],
        }
    }

    fn due(&self, i: usize) -> u64 {
        self.start + self.spread * i as u64 / self.conns.len() as u64 + self.every * self.sent[i] as u64
    }

    /// As an application does, it touches a connection only when its event says so or its
    /// request is due (each touch makes the endpoint look at the connection again).
    fn drive(&mut self, s: &mut Sim) -> Flow {
        let now = s.now;
        let mut readable = std::collections::HashSet::new();
        while let Some((h, e)) = s.client.poll_event() {
            if e == Event::Readable {
                readable.insert(h);
            }
        }
        let mut next: Option<u64> = None;
        for i in 0..self.conns.len() {
            let h = self.conns[i];
            let due = (self.waiting[i].is_none() && self.sent[i] < self.count).then(|| self.due(i));
            if !readable.contains(&h) && due.is_none_or(|t| t > now) {
                next = due.map_or(next, |t| Some(next.map_or(t, |n| n.min(t))));
                continue;
            }
            let Some(c) = s.client.conn_mut(h) else { continue };
            while let Ok(n) = c.read(&mut self.buf) {
                if n == 0 {
                    break;
                }
                if let Some((at, left)) = self.waiting[i].as_mut() {
                    *left = left.saturating_sub(n);
                    if *left == 0 {
                        self.answers.push((i, now - *at));
                        self.waiting[i] = None;
                    }
                }
            }
            if self.waiting[i].is_none() && self.sent[i] < self.count && now >= self.due(i) {
                assert_eq!(c.write(&[7; REQUEST]), Ok(REQUEST), "the request fits the send buffer");
                self.sent[i] += 1;
                self.waiting[i] = Some((now, ANSWER));
            }
            if self.waiting[i].is_none() && self.sent[i] < self.count {
                let t = self.due(i);
                next = Some(next.map_or(t, |n| n.min(t)));
            }
        }
        let mut ready = Vec::new();
        while let Some((h, e)) = s.server.poll_event() {
            if e == Event::Readable {
                ready.push(h);
            }
        }
        while s.server.accept().is_some() {}
        for h in ready {
            let Some(c) = s.server.conn_mut(h) else { continue };
            let got = self.server_got.entry(h).or_default();
            while let Ok(n) = c.read(&mut self.buf) {
                if n == 0 {
                    break;
                }
                *got += n;
            }
            while *got >= REQUEST {
                *got -= REQUEST;
                assert_eq!(c.write(&[9; ANSWER]), Ok(ANSWER), "the answer fits the send buffer");
            }
        }
        if self.answers.len() == self.conns.len() * self.count {
            return Flow::Done;
        }
        Flow::Wake(next)
    }
}

/// 1,000 connections write a request at the same instant into a path whose queue is in the
/// client's host (a socket that blocks when full, as on a rate-limited interface). Each
/// drain of the socket used to make every waiting connection ready again: the first few
/// sent, the socket filled, and the next poll found the rest held back again, one by one,
/// at every drain (about 400 polls per datagram sent here). Parked on the path, they are
/// polled again in turn while it takes datagrams.
#[test]
fn a_full_socket_costs_a_poll_per_datagram_it_takes_not_one_per_waiting_connection() {
    let mut wifi = PathConfig::new(client_addr(0), Iface::Wifi, 20, 10);
    wifi.local_uplink_queue = true;
    wifi.queue_bytes = 30_000;
    let mut sim = Sim::new(1, Config::default(), server(Config::server()), vec![wifi]).unwrap();
    sim.logging = false;
    let n = 1_000;
    let mut app = Many::new(&mut sim, n, ms(3_000), ms(10_000), 0, 1);
    sim.run_until(ms(3_000) - 1, |s| match app.drive(s) {
        Flow::Wake(t) => t,
        Flow::Done => None,
    });
    let up = app.conns.iter().filter(|&&h| sim.client.stats(h).is_some_and(|s| s.established)).count();
    assert_eq!(up, n, "every connection is up before the herd");
    let before = sim.client.transmit_work();
    assert!(sim.run(ms(20_000), |s| app.drive(s)), "every request answered");
    let w = sim.client.transmit_work();
    let (polls, datagrams) = (w.polls - before.polls, w.datagrams - before.datagrams);
    assert!(w.parked > before.parked, "the socket filled: {w:?}");
    // 1.2 MB at 10 Mbit/s: about a second; about a thousand datagrams each way.
    assert!(datagrams >= n as u64, "{w:?}");
    assert!(polls <= 5 * datagrams, "{polls} polls for {datagrams} datagrams ({w:?})");
    let worst = app.answers.iter().map(|a| a.1).max().unwrap();
    assert!(worst < ms(3_000), "the last answer took {worst} us");
}

/// The datagrams of the connection a test picks: the first request sent up on WiFi at `at`
/// names it (a datagram of a request's size, its server-side CID); from then on its
/// datagrams up on WiFi are dropped.
fn drop_one_connection_from(sim: &mut Sim, at: u64) {
    let mut victim: Option<Cid> = None;
    sim.drop_if = Some(Box::new(move |t, path, dir, d: &[u8]| {
        if path != 0 || dir != Dir::Up || t < at {
            return false;
        }
        let cid_len = usize::from(Config::default().transport.cid_len);
        let Ok(Packet { header: Header::Short(s), .. }) = Packet::parse(d, cid_len) else { return false };
        if victim.is_none() && t == at && d.len() > 1_000 {
            victim = Some(s.dcid);
        }
        victim == Some(s.dcid)
    }));
}

/// Connections that opened a subflow on cellular (path 1).
fn on_cellular(sim: &Sim, conns: &[ConnHandle]) -> Vec<usize> {
    let cell = |h: &ConnHandle| {
        sim.client.stats(*h).unwrap().subflows.iter().any(|f| f.path == PathId(1) && f.counters.bytes_sent > 0)
    };
    conns.iter().enumerate().filter(|(_, h)| cell(h)).map(|(i, _)| i).collect()
}

/// Twenty MultiMob connections ask a request every 100 ms over a working WiFi (one every 5 ms:
/// the netpath is heard from all the time); from 3 s one of them has every datagram it
/// sends on WiFi dropped. Its tail loss probe goes unanswered
/// and it fails over to cellular, where its requests are answered. The others heard WiFi
/// after its silence began: its report is refuted and they stay on WiFi. Before, the report
/// declared WiFi bad for every connection of the endpoint, and all twenty joined cellular.
#[test]
fn one_connections_silence_on_a_path_that_answers_the_others_moves_only_that_connection() {
    let mut sim =
        Sim::new(4, multimob_client(oracle::Config::default()), server(multimob_server()), multimob_paths()).unwrap();
    let mut app = Many::new(&mut sim, 20, ms(1_000), ms(100), ms(100), 60);
    // Connection 0's request at 3,000 ms is the only datagram sent up at that instant.
    drop_one_connection_from(&mut sim, ms(3_000));
    assert!(sim.run(ms(30_000), |s| app.drive(s)), "every request answered, the victim's on cellular");
    assert_eq!(on_cellular(&sim, &app.conns), [0], "only the silent connection moved");
    assert!(sim.client.netpath_failures_refuted() >= 1);
    let worst_other = app.answers.iter().filter(|a| a.0 != 0).map(|a| a.1).max().unwrap();
    assert!(worst_other < ms(40), "the others' requests took up to {worst_other} us");
}

/// 300 MultiMob connections ask a request every 2 s; WiFi goes down at 4 s and returns at
/// 14 s. Every connection fails over (the netpath is silent for all of them). While their
/// cellular subflows are open, each probes WiFi, at the endpoint's pace: a thousand probes a
/// second spread over the 300, not ten a second each (3,000 a second here, 100,000 at 10,000
/// connections). Once WiFi is back, every connection fails back.
#[test]
fn a_failover_of_many_connections_probes_at_the_endpoints_pace_and_all_fail_back() {
    let mut sim =
        Sim::new(6, multimob_client(oracle::Config::default()), server(multimob_server()), multimob_paths()).unwrap();
    let n = 300;
    let mut app = Many::new(&mut sim, n, ms(1_000), ms(2_000), ms(2_000), 20);
    sim.at(ms(4_000), 0, PathEvent::Down);
    sim.at(ms(14_000), 0, PathEvent::Up);
    assert!(sim.run(ms(60_000), |s| app.drive(s)), "every request answered");
    assert_eq!(on_cellular(&sim, &app.conns).len(), n, "every connection failed over");
    // WiFi's datagrams up while it was down, from 6 s (the failover done, the flights'
    // retransmissions backed off) to 14 s: the probes.
    let probes = sim.path_log(0).iter().filter(|e| e.dir == Dir::Up && (ms(6_000)..ms(14_000)).contains(&e.time));
    let per_second = probes.count() as u64 / 8;
    assert!(per_second <= 1_300, "{per_second} datagrams a second on the dead WiFi");
    let back = |h: &ConnHandle| {
        sim.client
            .stats(*h)
            .unwrap()
            .subflows
            .iter()
            .all(|f| f.path == PathId(0) || f.state != SubflowState::Established)
    };
    let failed_back = app.conns.iter().filter(|h| back(h)).count();
    assert_eq!(failed_back, n, "every connection failed back to WiFi");
}
