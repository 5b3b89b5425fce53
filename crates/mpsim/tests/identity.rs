//! Issue 20 in the simulator: the server proves its identity key in the HANDSHAKE, and a
//! client given that key refuses a man in the middle.
//!
//! The attacker sits on the client's path (the simulator's tap and inject): it sees the
//! client's INITIAL and answers it with a HANDSHAKE of its own, made by an endpoint of its own
//! (its own X25519 share, so it would know every key; its own Ed25519 identity, since it does
//! not have the server's). A full man in the middle also drops everything the client sends
//! (the path loses every datagram, after the tap has seen it).
#![allow(clippy::unwrap_used)]

use mpcore::wire::packet::{Handshake, PSK_BIT, PSK_PROOF_LEN};
use mpcore::wire::{Cid, Header, Packet};
use mpcore::{CloseReason, Config, ConnHandle, Endpoint, Event, LocalPath, PathId, ServerIdentity};
use mpsim::apps::{pattern, Bulk};
use mpsim::{client_addr, ms, multimob_paths, server_addr, Dir, Flow, PathEvent, Sim};
use std::cell::RefCell;
use std::rc::Rc;

type Tapped = Rc<RefCell<Vec<(Dir, Vec<u8>)>>>;

/// The attacker: a tap that records what the client sends on path 0, and a server endpoint
/// with its own identity that answers each new INITIAL at once, injected towards the client.
struct Attacker {
    seen: Tapped,
    answered: usize,
    ep: Endpoint,
    /// Sets the P bit in its answers: it claims to hold the ticket's PSK (PROTOCOL.md §4.8).
    claims_psk: bool,
}

impl Attacker {
    fn on(sim: &mut Sim) -> Self {
        Self::with_identity(sim, Some(ServerIdentity::from_seed(&[0x66; 32]).unwrap()))
    }

    /// An attacker that answers a resuming INITIAL with an unsigned HANDSHAKE whose P bit it
    /// sets, keyed without the PSK, which it does not have.
    fn claiming_psk(sim: &mut Sim) -> Self {
        Self { claims_psk: true, ..Self::with_identity(sim, None) }
    }

    fn with_identity(sim: &mut Sim, identity: Option<ServerIdentity>) -> Self {
        let seen: Tapped = Rc::new(RefCell::new(Vec::new()));
        let s2 = seen.clone();
        sim.tap = Some(Box::new(move |_t, path, dir, bytes| {
            if path == 0 && dir == Dir::Up {
                s2.borrow_mut().push((dir, bytes.to_vec()));
            }
        }));
        let config = Config::server().with(|c| {
            c.server.identity = identity;
            c.rng_seed = Some(66);
        });
        let paths = vec![LocalPath { addr: server_addr(), iface: mpcore::Iface::Wired, backup: false }];
        Self { seen, answered: 0, ep: Endpoint::new(config, paths, true).unwrap(), claims_psk: false }
    }

    /// Answers the INITIALs seen since the last call.
    fn step(&mut self, sim: &mut Sim) {
        let seen: Vec<Vec<u8>> = self.seen.borrow()[self.answered..].iter().map(|(_, b)| b.clone()).collect();
        for dgram in seen {
            self.answered += 1;
            let Ok(p) = Packet::parse(&dgram, Cid::LEN) else { continue };
            if !matches!(p.header, Header::Initial(_)) {
                continue;
            }
            self.ep.handle_datagram(sim.now, PathId(0), client_addr(0), &dgram);
            let mut buf = vec![0u8; 65_536];
            while let Some(t) = self.ep.poll_transmit(sim.now, &mut buf) {
                let mut answer = buf[..t.len].to_vec();
                if self.claims_psk {
                    // A well-formed resumed HANDSHAKE: the P bit, and a proof it cannot make.
                    answer[0] |= PSK_BIT;
                    answer.splice(Handshake::TRANSCRIPT_LEN..Handshake::TRANSCRIPT_LEN, [0x5a; PSK_PROOF_LEN]);
                }
                sim.inject(sim.now, 0, Dir::Down, server_addr(), answer);
            }
        }
    }

    /// What the client sent on path 0, by header kind.
    fn kinds(&self) -> Vec<&'static str> {
        self.seen
            .borrow()
            .iter()
            .map(|(_, b)| match Packet::parse(b, Cid::LEN).map(|p| p.header) {
                Ok(Header::Initial(_)) => "INITIAL",
                Ok(Header::Confirm(_)) => "CONFIRM",
                _ => "other",
            })
            .collect()
    }
}

/// Runs the client's connection attempt with the attacker answering, until it ends or `until`.
fn attempt(sim: &mut Sim, attacker: &mut Attacker, until: u64) -> (ConnHandle, Vec<(u64, Event)>) {
    let h = sim.connect();
    let mut events = Vec::new();
    sim.run(until, |s| {
        attacker.step(s);
        while let Some((_, e)) = s.client.poll_event() {
            events.push((s.now, e));
        }
        if s.client.conn(h).is_none_or(|c| c.is_closed()) {
            Flow::Done
        } else {
            Flow::Wake(None)
        }
    });
    (h, events)
}

#[test]
fn a_man_in_the_middle_with_its_own_key_share_is_refused_and_gets_nothing() {
    let mut sim = Sim::new(1, Config::default(), Config::default(), multimob_paths()).unwrap();
    let mut attacker = Attacker::on(&mut sim);
    // Everything the client sends is the attacker's: the real server hears nothing (on the
    // cellular path, where the INITIAL goes too after 250 ms, nothing passes).
    sim.at(0, 0, PathEvent::Loss(1.0));
    sim.at(0, 1, PathEvent::Loss(1.0));
    let (_, events) = attempt(&mut sim, &mut attacker, ms(30_000));
    let closed = events.iter().find_map(|(t, e)| match e {
        Event::Closed { reason } => Some((*t, *reason)),
        _ => None,
    });
    let (at, reason) = closed.expect("the attempt ended");
    assert_eq!(reason, CloseReason::ServerAuthFailed, "{events:?}");
    // At the INITIAL's first repeat (the initial RTO), not after every attempt.
    assert!(at <= ms(1_100), "refused at {at} us");
    assert!(!events.iter().any(|(_, e)| matches!(e, Event::Connected)), "{events:?}");
    assert!(sim.client.drops().bad_signature >= 1, "{:?}", sim.client.drops());
    // The client sent nothing but its INITIAL (no CONFIRM: no cookie, no data), and the
    // server never had a connection.
    assert!(attacker.answered >= 1);
    assert!(attacker.kinds().iter().all(|k| *k == "INITIAL"), "{:?}", attacker.kinds());
    assert!(sim.server.accept().is_none());
    assert_eq!(sim.server.handles().count(), 0);
}

#[test]
fn a_man_in_the_middle_on_one_path_does_not_stop_the_connection_on_the_other() {
    // The attacker owns WiFi (it answers, the server hears nothing there). Its answer is
    // refused; the INITIAL's copy on cellular after 250 ms (PROTOCOL.md §4.10) reaches the
    // real server, whose answer authenticates: the connection is the server's.
    let mut sim = Sim::new(1, Config::default(), Config::default(), multimob_paths()).unwrap();
    let mut attacker = Attacker::on(&mut sim);
    sim.at(0, 0, PathEvent::Loss(1.0));
    let h = sim.connect();
    let mut connected = None;
    sim.run(ms(5_000), |s| {
        attacker.step(s);
        while let Some((_, e)) = s.client.poll_event() {
            if e == Event::Connected {
                connected = Some(s.now);
            }
        }
        mpsim::Flow::Wake(None)
    });
    let at = connected.expect("connected over cellular");
    assert!(at < ms(400), "connected at {at} us");
    assert!(sim.client.drops().bad_signature >= 1, "{:?}", sim.client.drops());
    let st = sim.client.stats(h).unwrap();
    assert_eq!(st.counters.handshakes_elsewhere, 1);
    // The real server made the connection (the attacker's endpoint never hears a CONFIRM).
    assert_eq!(sim.server.handles().count(), 1);
    // WiFi saw the INITIAL, then only the connection's sealed JOINs towards the first path:
    // no CONFIRM (the attacker's answer got none).
    assert!(!attacker.kinds().contains(&"CONFIRM"), "{:?}", attacker.kinds());
}

#[test]
fn a_forged_answer_that_races_the_server_does_not_break_the_connection() {
    // The attacker can inject but not drop: its HANDSHAKE comes first (it answers at the
    // tap, half a round trip sooner than the server), is refused without spending the key
    // share, and the server's is taken; data then flows.
    let mut sim = Sim::new(2, Config::default(), Config::default(), multimob_paths()).unwrap();
    let mut attacker = Attacker::on(&mut sim);
    let data = pattern(200_000, 2);
    let mut app = Bulk::new(data.clone(), false);
    assert!(sim.run(ms(30_000), |s| {
        attacker.step(s);
        app.drive(s)
    }));
    assert_eq!(app.received, data);
    assert_eq!(sim.client.drops().bad_signature, 1, "{:?}", sim.client.drops());
    assert!(app.events.iter().any(|(_, c, e)| *c && matches!(e, Event::Connected)));
}

#[test]
fn the_right_key_connects_and_a_rotated_key_list_too() {
    let real = ServerIdentity::from_seed(&[0x11; 32]).unwrap();
    let old = ServerIdentity::from_seed(&[0x22; 32]).unwrap().public_key();
    let server = Config::server().with(|c| c.server.identity = Some(real.clone()));
    for keys in [vec![real.public_key()], vec![old, real.public_key()]] {
        let client = Config::default().with(|c| c.transport.server_keys = keys.clone());
        let mut sim = Sim::new(3, client, server.clone(), multimob_paths()).unwrap();
        let data = pattern(50_000, 3);
        let mut app = Bulk::new(data.clone(), false);
        assert!(sim.run(ms(30_000), |s| app.drive(s)), "{keys:?}");
        assert_eq!(app.received, data);
        assert_eq!(sim.client.drops().bad_signature, 0);
    }
    // The old key alone: refused.
    let client = Config::default().with(|c| c.transport.server_keys = vec![old]);
    let mut sim = Sim::new(3, client, server.clone(), multimob_paths()).unwrap();
    let h = sim.connect();
    sim.run(ms(5_000), |_| Flow::Wake(None));
    let mut reasons = Vec::new();
    while let Some((_, e)) = sim.client.poll_event() {
        if let Event::Closed { reason } = e {
            reasons.push(reason);
        }
    }
    assert_eq!(reasons, [CloseReason::ServerAuthFailed]);
    assert!(sim.client.conn(h).is_none_or(|c| c.is_closed()));
    assert_eq!(sim.server.handles().count(), 0, "the server never got a CONFIRM");
}

#[test]
fn without_a_key_the_client_does_not_start_and_an_opted_out_one_is_fooled() {
    // No key, no opt-out: refused before any datagram.
    let client = Config::default().with(|c| c.transport.server_keys = Vec::new());
    let mut ep = Endpoint::new(
        client,
        vec![LocalPath { addr: client_addr(0), iface: mpcore::Iface::Wifi, backup: false }],
        false,
    )
    .unwrap();
    assert_eq!(ep.connect(0, PathId(0), server_addr()).unwrap_err(), mpcore::ConnectError::NoServerKey);
    // The explicit opt-out accepts the attacker's answer and sends it a CONFIRM: what the key
    // prevents.
    let client = Config::default().with(|c| c.transport.unauthenticated_server = true);
    let mut sim = Sim::new(4, client, Config::default(), multimob_paths()).unwrap();
    let mut attacker = Attacker::on(&mut sim);
    sim.at(0, 0, PathEvent::Loss(1.0));
    attempt(&mut sim, &mut attacker, ms(300));
    assert!(attacker.kinds().contains(&"CONFIRM"), "{:?}", attacker.kinds());
    assert_eq!(sim.client.drops().bad_signature, 0);
}

#[test]
fn the_signed_answer_is_64_bytes_longer_and_within_three_initials() {
    // The first datagram each way on path 0: the INITIAL and the HANDSHAKE.
    let first = |client: Config, server: Config| {
        let mut sim = Sim::new(5, client, server, multimob_paths()).unwrap();
        sim.connect();
        sim.run(ms(100), |_| Flow::Wake(None));
        let log = sim.path_log(0);
        let up = log.iter().find(|e| e.dir == Dir::Up).unwrap().size;
        let down = log.iter().find(|e| e.dir == Dir::Down).unwrap().size;
        (up, down)
    };
    let (initial, signed) = first(Config::default(), Config::default());
    let unsigned_server = Config::default().with(|c| c.server.identity = None);
    // (The simulator gives an identity to a server without one: a throwaway endpoint answers.)
    let mut ep = Endpoint::new(
        unsigned_server,
        vec![LocalPath { addr: server_addr(), iface: mpcore::Iface::Wired, backup: false }],
        true,
    )
    .unwrap();
    let mut c = Endpoint::new(
        Config::default().with(|c| c.transport.unauthenticated_server = true),
        vec![LocalPath { addr: client_addr(0), iface: mpcore::Iface::Wifi, backup: false }],
        false,
    )
    .unwrap();
    c.connect(0, PathId(0), server_addr()).unwrap();
    let mut buf = vec![0u8; 65_536];
    let t = c.poll_transmit(0, &mut buf).unwrap();
    let init = buf[..t.len].to_vec();
    ep.handle_datagram(0, PathId(0), client_addr(0), &init);
    let unsigned = ep.poll_transmit(0, &mut buf).unwrap().len;
    assert_eq!(init.len(), initial);
    assert_eq!(signed, unsigned + 64, "the signature, and nothing else");
    assert!(signed <= 3 * initial, "anti-amplification: {signed} bytes for a {initial}-byte INITIAL");
    println!("INITIAL {initial} bytes, HANDSHAKE {unsigned} bytes unsigned, {signed} signed");
}

/// A client with a ticket, its first connection done: the attacker comes for its next one.
fn resuming_client(seed: u64) -> (Sim, mpcore::ResumptionTicket) {
    let client = Config::default().with(|c| c.resumption = mpcore::Resumption { accept: true, ..Default::default() });
    let server = Config::default().with(|c| c.resumption = mpcore::Resumption { issue: true, ..Default::default() });
    let mut sim = Sim::new(seed, client, server, multimob_paths()).unwrap();
    let c = sim.connect();
    sim.run_until(ms(500), |_| None);
    while sim.server.accept().is_some() {}
    let t = sim.client.take_ticket(c).expect("a ticket");
    (sim, t)
}

/// Runs a resuming attempt with the attacker answering, until it ends, connects or `until`.
fn resume_attempt(
    sim: &mut Sim,
    attacker: &mut Attacker,
    t: &mpcore::ResumptionTicket,
    until: u64,
) -> (ConnHandle, Vec<Event>) {
    let h = sim.client.connect_resuming(sim.now, PathId(0), server_addr(), t).unwrap();
    let mut events = Vec::new();
    sim.run(until, |s| {
        attacker.step(s);
        while let Some((c, e)) = s.client.poll_event() {
            if c == h {
                events.push(e);
            }
        }
        match s.client.stats(h) {
            Some(st) if st.established => Flow::Done,
            None => Flow::Done,
            Some(_) => Flow::Wake(None),
        }
    });
    (h, events)
}

#[test]
fn an_answer_that_claims_the_ticket_without_its_psk_is_refused() {
    // The attacker alone answers (the server hears nothing): its P HANDSHAKE's proof is not
    // an HMAC under the PSK, so the client refuses it before it spends its key share, never
    // connects and sends no CONFIRM; the attempt ends as a failed authentication.
    let (mut sim, t) = resuming_client(7);
    let mut attacker = Attacker::claiming_psk(&mut sim);
    let before = sim.client.drops().bad_signature;
    let now = sim.now;
    sim.at(now, 0, PathEvent::Loss(1.0));
    sim.at(now, 1, PathEvent::Loss(1.0));
    let (_, events) = resume_attempt(&mut sim, &mut attacker, &t, now + ms(5_000));
    assert!(!events.contains(&Event::Connected), "{events:?}");
    assert!(events.contains(&Event::Closed { reason: CloseReason::ServerAuthFailed }), "{events:?}");
    assert!(sim.client.drops().bad_signature > before, "{:?}", sim.client.drops());
    assert_eq!(sim.client.drops().decrypt_failed, 0, "the key share was never spent on it");
    assert!(attacker.answered >= 1);
    assert!(attacker.kinds().iter().all(|k| *k == "INITIAL"), "{:?}", attacker.kinds());
}

#[test]
fn a_forged_psk_answer_that_races_the_server_leaves_the_resumption_to_the_server() {
    // The forged answer comes first; the client refuses its proof without spending its key
    // share, and the server's answer, which follows, resumes the connection.
    let (mut sim, t) = resuming_client(8);
    let mut attacker = Attacker::claiming_psk(&mut sim);
    let now = sim.now;
    let (h, _) = resume_attempt(&mut sim, &mut attacker, &t, now + ms(10_000));
    let st = sim.client.stats(h).unwrap();
    assert!(st.established && st.resumed, "{st:?}");
    assert!(sim.client.drops().bad_signature >= 1, "the forgery arrived and was refused");
}
