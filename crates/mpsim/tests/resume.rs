//! Issue 36, the resumed handshake (PROTOCOL.md §4.8): a client offers the ticket of its last
//! connection with a binder; a server that takes it answers without a signature, keyed from the
//! ticket's PSK and a fresh key agreement; every ticket it cannot take gets the full handshake,
//! and the connection goes on as a fresh one would.
#![allow(clippy::unwrap_used)]

mod common;

use common::{dated, UNIX};

use mpcore::wire::packet::{self, Retry, PSK_BIT, SIGNED_BIT};
use mpcore::wire::{Cid, Header, Packet, Writer};
use mpcore::{Config, ConnHandle, PathId, PathManager, Resumption, ResumptionTicket, SubflowState};
use mpsim::{ms, multimob_paths, server_addr, Dir, Flow, Sim};
use std::cell::RefCell;
use std::rc::Rc;

fn pair(seed: u64, server: Config) -> Sim {
    let client = Config::default().with(|c| c.resumption = Resumption { accept: true, ..Resumption::default() });
    let server = server.with(|c| c.resumption.issue = true);
    dated(seed, client, server, multimob_paths())
}

/// A first connection's ticket (the connection stays open).
fn first_ticket(sim: &mut Sim) -> ResumptionTicket {
    let c = sim.connect();
    sim.run_until(sim.now + ms(500), |_| None);
    while sim.server.accept().is_some() {}
    sim.client.take_ticket(c).expect("a ticket")
}

/// The first byte of every HANDSHAKE the server sends from now on, with its length.
fn watch_handshakes(sim: &mut Sim) -> Rc<RefCell<Vec<(u8, usize)>>> {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let s = seen.clone();
    sim.tap = Some(Box::new(move |_, _, dir, b| {
        // A long header of type 2 (§3.1).
        if dir == Dir::Down && b.first().is_some_and(|f| f & 0xf8 == 0xd0) {
            s.borrow_mut().push((b[0], b.len()));
        }
    }));
    seen
}

/// The client sends a request on `c` and the server answers it: what came back.
fn exchange(sim: &mut Sim, c: ConnHandle) -> Vec<u8> {
    let request: Vec<u8> = (0..3000u32).map(|i| (i * 7) as u8).collect();
    let (mut sent, mut got, mut server) = (false, Vec::new(), None);
    let mut buf = [0u8; 4096];
    let deadline = sim.now + ms(3_000);
    sim.run(deadline, |s| {
        if let Some(cc) = s.client.conn_mut(c) {
            if !sent && cc.write(&request).is_ok() {
                sent = true;
            }
            while let Ok(n) = cc.read(&mut buf) {
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
        }
        server = server.or_else(|| s.server.accept());
        if let Some(sc) = server.and_then(|h| s.server.conn_mut(h)) {
            while let Ok(n) = sc.read(&mut buf) {
                if n == 0 {
                    break;
                }
                // Echo, reversed: an answer the server computed.
                let back: Vec<u8> = buf[..n].iter().map(|b| !b).collect();
                sc.write(&back).unwrap();
            }
        }
        if got.len() >= request.len() {
            Flow::Done
        } else {
            Flow::Wake(None)
        }
    });
    let want: Vec<u8> = request.iter().map(|b| !b).collect();
    assert_eq!(got, want, "the answer came back whole");
    got
}

fn server_conn_resumed(sim: &Sim) -> Vec<bool> {
    sim.server.handles().filter_map(|h| sim.server.stats(h)).map(|s| s.resumed).collect()
}

#[test]
fn a_ticket_resumes_without_a_signature_and_the_connection_works() {
    let mut sim = pair(41, Config::default());
    let hs = watch_handshakes(&mut sim);
    let t = first_ticket(&mut sim);
    let c = sim.client.connect_resuming(sim.now, PathId(0), server_addr(), &t).unwrap();
    exchange(&mut sim, c);
    let counters = sim.server.handshake_counters();
    assert_eq!((counters.answered, counters.resumed, counters.resumption_declined), (2, 1, 0));
    assert!(sim.client.stats(c).unwrap().resumed, "the client knows it resumed");
    assert_eq!(server_conn_resumed(&sim), vec![false, true], "the server knows which one resumed");
    // The resumed connection's HANDSHAKE is keyed with the PSK (P), has no signature (S
    // clear) but a 32-byte proof of the PSK, so it is 32 bytes shorter than the first
    // connection's signed one.
    let hs = hs.borrow().clone();
    assert_eq!(hs.len(), 2, "{hs:?}");
    assert_eq!(hs[0].0 & (PSK_BIT | SIGNED_BIT), SIGNED_BIT);
    assert_eq!(hs[1].0 & (PSK_BIT | SIGNED_BIT), PSK_BIT);
    assert_eq!(hs[1].1, hs[0].1 - 64 + 32);
    // The resumed connection gets a ticket of its own for the next one.
    sim.run_until(sim.now + ms(300), |_| None);
    let next = sim.client.take_ticket(c).expect("a ticket from the resumed connection");
    assert_ne!(next.ticket, t.ticket);
    assert_ne!(next.psk, t.psk);
}

#[test]
fn joins_work_on_a_resumed_connection() {
    // The default path manager opens the second path's subflow at once: on a resumed
    // connection the join's HMACs use keys derived from the resumed master.
    let mut sim = pair(42, Config::default());
    let t = first_ticket(&mut sim);
    let c = sim.client.connect_resuming(sim.now, PathId(0), server_addr(), &t).unwrap();
    exchange(&mut sim, c);
    sim.run_until(sim.now + ms(1_000), |_| None);
    let stats = sim.client.stats(c).unwrap();
    assert!(stats.resumed);
    let paths: Vec<_> =
        stats.subflows.iter().filter(|s| s.state == SubflowState::Established).map(|s| s.path).collect();
    assert!(paths.contains(&PathId(0)) && paths.contains(&PathId(1)), "{:?}", stats.subflows);
}

#[test]
fn a_ticket_the_server_cannot_take_gets_the_full_handshake_and_the_connection_works() {
    type Spoil = fn(&mut ResumptionTicket, &mut Sim);
    let cases: [(&str, Spoil); 5] = [
        ("a corrupted ticket", |t, _| t.ticket[30] ^= 1),
        ("a wrong PSK (the binder does not verify)", |t, _| t.psk[0] ^= 1),
        ("expired at the server", |t, sim| {
            let now = sim.now;
            sim.server.set_unix_time(now, UNIX + u64::from(t.lifetime_s) * 1_000 + 60_000);
        }),
        ("an age 60 s off the server's", |t, _| t.received_unix_ms -= 60_000),
        ("another server's ticket (that server's secret, our server's key)", |t, _| {
            let mut other = pair(99, Config::default());
            let key = t.identity;
            *t = first_ticket(&mut other);
            t.identity = key;
        }),
    ];
    for (i, (what, spoil)) in cases.into_iter().enumerate() {
        let mut sim = pair(50 + i as u64, Config::default());
        let mut t = first_ticket(&mut sim);
        spoil(&mut t, &mut sim);
        let hs = watch_handshakes(&mut sim);
        let c = sim.client.connect_resuming(sim.now, PathId(0), server_addr(), &t).unwrap();
        exchange(&mut sim, c);
        let counters = sim.server.handshake_counters();
        assert_eq!((counters.resumed, counters.resumption_declined), (0, 1), "{what}");
        assert!(!sim.client.stats(c).unwrap().resumed, "{what}");
        let hs = hs.borrow().clone();
        assert_eq!(hs.len(), 1, "{what}: {hs:?}");
        assert_eq!(hs[0].0 & (PSK_BIT | SIGNED_BIT), SIGNED_BIT, "{what}: the full, signed handshake");
    }
}

#[test]
fn a_retry_keeps_the_ticket() {
    // Under load the server asks for a RETRY: the client repeats its INITIAL with the token
    // and a binder over the new bytes; the ticket is still taken.
    let mut sim = pair(60, Config::default().with(|c| c.server.require_retry = true));
    let t = first_ticket(&mut sim);
    let c = sim.client.connect_resuming(sim.now, PathId(0), server_addr(), &t).unwrap();
    exchange(&mut sim, c);
    let counters = sim.server.handshake_counters();
    assert_eq!((counters.retries, counters.resumed, counters.resumption_declined), (2, 1, 0));
    assert!(sim.client.stats(c).unwrap().resumed);
}

#[test]
fn a_ticket_is_offered_only_while_the_key_that_authenticated_it_is_trusted() {
    let mut sim = pair(62, Config::default());
    let mut t = first_ticket(&mut sim);
    let key = sim.server.config().server.identity.as_ref().unwrap().public_key().0;
    assert_eq!(t.identity, Some(key), "the ticket remembers the key that signed its handshake");
    // A ticket of a connection another key authenticated (the app no longer pins it): not
    // offered, the full handshake instead.
    t.identity = Some([0x77; 32]);
    let c = sim.client.connect_resuming(sim.now, PathId(0), server_addr(), &t).unwrap();
    exchange(&mut sim, c);
    let counters = sim.server.handshake_counters();
    assert_eq!((counters.resumed, counters.resumption_declined), (0, 0), "not even offered");
    assert!(!sim.client.stats(c).unwrap().resumed);
}

#[test]
fn a_client_past_the_ticket_lifetime_does_not_offer_it() {
    let mut sim = pair(61, Config::default());
    let t = first_ticket(&mut sim);
    let now = sim.now;
    sim.client.set_unix_time(now, t.expires_unix_ms() + 1);
    let c = sim.client.connect_resuming(sim.now, PathId(0), server_addr(), &t).unwrap();
    exchange(&mut sim, c);
    let counters = sim.server.handshake_counters();
    assert_eq!((counters.resumed, counters.resumption_declined), (0, 0), "not even offered");
}

#[test]
fn a_fast_join_carries_data_on_a_resumed_connection() {
    // On-demand path manager with FAST_JOIN (MultiMob's): WiFi fails mid-upload on a resumed
    // connection; the first packet on cellular is a FAST_JOIN_OUT full of data, authenticated
    // with the keys of the resumed master, and the upload completes intact.
    let resumption = Resumption { accept: true, ..Resumption::default() };
    let client = Config::default().with(|c| {
        c.multipath.path_manager = PathManager::OnDemand;
        c.transport.keep_alive = 0;
        c.multipath.fast_join = true;
        c.resumption = resumption;
    });
    let resumption = Resumption { issue: true, ..Resumption::default() };
    let server = Config::default().with(|c| {
        c.multipath.scheduler = "last-received".into();
        c.transport.keep_alive = 0;
        c.multipath.fast_join = true;
        c.resumption = resumption;
    });
    let mut sim = dated(43, client, server, multimob_paths());
    let t = first_ticket(&mut sim);
    let c = sim.client.connect_resuming(sim.now, PathId(0), server_addr(), &t).unwrap();
    let data: Vec<u8> = (0..2_000_000u32).map(|i| (i % 251) as u8).collect();
    let now = sim.now;
    sim.at(now + ms(800), 0, mpsim::PathEvent::Down);
    let (mut written, mut got, mut server) = (0, Vec::new(), None);
    let mut buf = [0u8; 65_536];
    let done = sim.run(now + ms(60_000), |s| {
        if let Some(cc) = s.client.conn_mut(c) {
            while written < data.len() {
                match cc.write(&data[written..]) {
                    Ok(n) => written += n,
                    Err(_) => break,
                }
            }
        }
        server = server.or_else(|| s.server.accept());
        if let Some(sc) = server.and_then(|h| s.server.conn_mut(h)) {
            while let Ok(n) = sc.read(&mut buf) {
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
        }
        if got.len() == data.len() {
            Flow::Done
        } else {
            Flow::Wake(None)
        }
    });
    assert!(done && got == data, "the upload completes intact ({} of {})", got.len(), data.len());
    assert!(sim.client.stats(c).unwrap().resumed);
    let first_up = sim.path_log(1).iter().find(|e| e.dir == Dir::Up).unwrap();
    assert!(first_up.size > 1000, "the FAST_JOIN_OUT carries a full packet of data: {first_up:?}");
    let d = sim.server.drops();
    assert_eq!(d.refused + d.bad_hmac + d.replayed_join, 0, "{d:?}");
}

#[test]
fn a_forged_retry_whose_token_leaves_no_room_is_dropped() {
    // RETRY's integrity key is public: whoever saw the INITIAL can forge one. One whose token
    // would not fit in the INITIAL (with the ticket's offer) is dropped, and the connection
    // goes on with the server's own answer.
    let mut sim = pair(64, Config::default());
    let t = first_ticket(&mut sim);
    let initial = Rc::new(RefCell::new(None));
    let seen = initial.clone();
    sim.tap = Some(Box::new(move |_, _, dir, b: &[u8]| {
        if dir == Dir::Up && b.first().is_some_and(|f| f & 0xf8 == 0xc0) {
            seen.borrow_mut().get_or_insert_with(|| b.to_vec());
        }
    }));
    let c = sim.client.connect_resuming(sim.now, PathId(0), server_addr(), &t).unwrap();
    let now = sim.now;
    sim.run_until(now + ms(1), |_| None);
    let initial = initial.borrow().clone().expect("the INITIAL");
    let Ok(Packet { header: Header::Initial(i), .. }) = Packet::parse(&initial, 8) else { panic!("an INITIAL") };
    let token = [0x5a; 1_100];
    let r = Retry { version: packet::VERSION_2, dcid: i.scid, scid: Cid([9; 8]), token: &token, tag: [0; 16] };
    let mut buf = vec![0u8; 2_000];
    let mut w = Writer::new(&mut buf);
    let n = r.emit_untagged(&mut w).unwrap();
    let tag = mpcore::crypto::retry_integrity_tag(&i.dcid.0, w.written());
    buf[n..n + 16].copy_from_slice(&tag);
    buf.truncate(n + 16);
    sim.inject(now + ms(2), 0, Dir::Down, server_addr(), buf);
    exchange(&mut sim, c);
    assert!(sim.client.drops().bad_retry >= 1, "{:?}", sim.client.drops());
    assert!(sim.client.stats(c).unwrap().resumed);
}
