//! Issue 38 in the simulator: a server of a fleet names itself in the routing byte of every
//! CID and JOIN token it issues (PROTOCOL.md §2.1), and another server of the fleet that gets
//! the connection's packets (its own died; the balancer sent its id elsewhere) answers each
//! with a STATELESS_RESET (§3.4): the client ends the connection within about two RTTs of its
//! next packet, where it would otherwise wait out its timeouts.
#![allow(clippy::unwrap_used)]

use mpcore::{CloseReason, Config, Endpoint, Event, Fleet, Iface, LocalPath, Steering};
use mpsim::{ms, multimob_paths, server_addr, Dir, Sim};
use std::cell::RefCell;
use std::rc::Rc;

const SECRET: [u8; 32] = [7; 32];

fn member(server: u8, secret: [u8; 32]) -> Config {
    Config::default().with(|c| c.server.fleet = Some(Fleet { server, servers: 3, secret }))
}

/// A connection to server 2 of 3 with both paths joined and data exchanged; every datagram the
/// client sends, kept.
fn connected(seed: u64) -> (Sim, mpcore::ConnHandle, Rc<RefCell<Vec<Vec<u8>>>>) {
    connected_with(seed, false)
}

/// `connected`, the second path joined with FAST_JOIN if `fast`.
fn connected_with(seed: u64, fast: bool) -> (Sim, mpcore::ConnHandle, Rc<RefCell<Vec<Vec<u8>>>>) {
    let client = Config::default().with(|c| c.multipath.fast_join = fast);
    let server = member(2, SECRET).with(|c| c.multipath.fast_join = fast);
    let mut sim = Sim::new(seed, client, server, multimob_paths()).unwrap();
    let sent = Rc::new(RefCell::new(Vec::new()));
    let log = sent.clone();
    sim.tap = Some(Box::new(move |_, _, dir, d: &[u8]| {
        if dir == Dir::Up {
            log.borrow_mut().push(d.to_vec());
        }
    }));
    let c = sim.connect();
    sim.run_until(ms(1_000), |_| None);
    sim.client.conn_mut(c).unwrap().write(b"hello").unwrap();
    sim.run_until(ms(2_000), |_| None);
    let st = sim.client.stats(c).unwrap();
    assert!(
        st.established && st.subflows.iter().filter(|s| s.state == mpcore::SubflowState::Established).count() == 2,
        "{st:?}"
    );
    (sim, c, sent)
}

#[test]
fn every_datagram_after_the_initial_names_the_server_in_the_routing_byte() {
    for (seed, fast) in (1..=5).flat_map(|s| [(s, false), (s, true)]) {
        let (_sim, _, sent) = connected_with(seed, fast);
        let sent = sent.borrow();
        let (mut short, mut joins) = (0, 0);
        for d in sent.iter() {
            let server = if d[0] & 0x80 == 0 {
                short += 1;
                d[1]
            } else {
                match (d[0] >> 3) & 7 {
                    0 | 5 => continue, // INITIAL, EARLY: the client's random DCID, hashed
                    4 => {
                        joins += 1;
                        d[5]
                    }
                    _ => d[5],
                }
            };
            assert_eq!(Steering::server_of(server, 3), 2, "seed {seed}: {d:02x?}");
        }
        assert!(short >= 2 && joins >= 1, "seed {seed}: {short} short, {joins} joins");
    }
}

fn reset_after_move(seed: u64, secret: [u8; 32]) -> (Option<(u64, CloseReason)>, u64, u64) {
    let (mut sim, c, _) = connected(seed);
    // The server dies; the balancer sends its id to server 0, which never heard of it.
    let paths = vec![LocalPath { addr: server_addr(), iface: Iface::Wired, backup: false }];
    let mut other = member(0, secret);
    other.rng_seed = Some(seed);
    sim.server = Endpoint::new(other, paths, true).unwrap();
    let asked = sim.now;
    sim.client.conn_mut(c).unwrap().write(b"are you there?").unwrap();
    let mut closed = None;
    sim.run_until(asked + ms(5_000), |s| {
        while let Some((_, e)) = s.client.poll_event() {
            if let (Event::Closed { reason }, None) = (e, closed) {
                closed = Some((s.now - asked, reason));
            }
        }
        None
    });
    let sent = sim.server.handshake_counters().resets_sent;
    (closed, sent, sim.client.handshake_counters().resets_received)
}

#[test]
fn a_server_of_the_fleet_that_does_not_know_the_connection_resets_it_within_two_rtts() {
    for seed in 1..=5 {
        let (closed, sent, received) = reset_after_move(seed, SECRET);
        let (after, reason) = closed.expect("the client gave up");
        eprintln!("seed {seed}: closed {} ms after the write", after / 1000);
        assert_eq!(reason, CloseReason::Reset, "seed {seed}");
        // Both subflows are reset: the WiFi one at its next packet (RTT 15 ms), the cellular
        // one when the data moves there (RTT 25 ms). The goal: two RTTs (of each path).
        assert!(after <= ms(2 * (15 + 25)), "seed {seed}: closed {after} us after the write");
        assert!(sent >= 2 && received >= 2, "seed {seed}: {sent} sent, {received} received");
    }
}

#[test]
fn a_reset_without_the_fleets_secret_is_ignored() {
    let (closed, sent, received) = reset_after_move(3, [8; 32]);
    assert!(sent > 0, "the other server answers with its own token");
    assert_eq!(received, 0, "no token of the client's matches");
    assert!(closed.is_none_or(|(t, r)| r != CloseReason::Reset && t > ms(1_000)), "{closed:?}");
}

#[test]
fn a_server_outside_a_fleet_sends_no_reset() {
    let mut sim = Sim::new(4, Config::default(), Config::default(), multimob_paths()).unwrap();
    let c = sim.connect();
    sim.run_until(ms(1_000), |_| None);
    let paths = vec![LocalPath { addr: server_addr(), iface: Iface::Wired, backup: false }];
    sim.server = Endpoint::new(Config::default().with(|c| c.rng_seed = Some(4)), paths, true).unwrap();
    sim.client.conn_mut(c).unwrap().write(b"x").unwrap();
    sim.run_until(ms(3_000), |_| None);
    assert_eq!(sim.server.handshake_counters().resets_sent, 0);
    assert!(sim.server.drops().unknown_cid > 0);
}

/// Puts `config`'s endpoint in the server's place (another server of the fleet, which never
/// saw the connection, gets its next packets).
fn swap_in(sim: &mut Sim, config: Config) {
    let paths = vec![LocalPath { addr: server_addr(), iface: Iface::Wired, backup: false }];
    sim.server = Endpoint::new(config, paths, true).unwrap();
}

#[test]
fn a_fleets_servers_open_each_others_retry_tokens_cookies_and_tickets() {
    // Server 2 asks for a RETRY, then answers the repeat with a HANDSHAKE and its cookie;
    // server 0 (the same identity, as a fleet's servers have) gets the client's next packet:
    // the repeated INITIAL with the token, or the CONFIRM with the cookie.
    for (what, after_retries, after_answers) in [("RETRY token", 1, 0), ("cookie", 1, 1)] {
        let retry = |k| member(k, SECRET).with(|c| c.server.require_retry = true);
        let mut sim = Sim::new(8, Config::default(), retry(2), multimob_paths()).unwrap();
        let identity = sim.server.config().server.identity.clone();
        let c = sim.connect();
        let mut swapped = false;
        sim.run_until(ms(1_000), |s| {
            let h = s.server.handshake_counters();
            if !swapped && (h.retries, h.answered) == (after_retries, after_answers) {
                swapped = true;
                swap_in(
                    s,
                    retry(0).with(|c| {
                        c.server.identity = identity.clone();
                        c.rng_seed = Some(9);
                    }),
                );
            }
            None
        });
        let h = sim.server.handshake_counters();
        assert!(swapped && sim.client.stats(c).is_some_and(|s| s.established), "{what}: {h:?}");
        assert_eq!(h.retries, 0, "{what}: server 0 took it, and asked for no second RETRY");
        assert_eq!(h.answered, 1 - after_answers, "{what}");
    }
    // A ticket server 2 issued resumes on server 0.
    let issuing =
        |k| member(k, SECRET).with(|c| c.resumption = mpcore::Resumption { issue: true, ..Default::default() });
    let client = Config::default().with(|c| c.resumption = mpcore::Resumption { accept: true, ..Default::default() });
    let mut sim = Sim::new(9, client, issuing(2), multimob_paths()).unwrap();
    sim.client.set_unix_time(0, 1_700_000_000_000);
    sim.server.set_unix_time(0, 1_700_000_000_000);
    let c = sim.connect();
    sim.run_until(ms(500), |_| None);
    let ticket = sim.client.take_ticket(c).expect("a ticket");
    let identity = sim.server.config().server.identity.clone();
    swap_in(
        &mut sim,
        issuing(0).with(|c| {
            c.server.identity = identity;
            c.rng_seed = Some(10);
        }),
    );
    sim.server.set_unix_time(sim.now, 1_700_000_000_000 + sim.now / 1000);
    let r = sim.client.connect_resuming(sim.now, mpcore::PathId(0), server_addr(), &ticket).unwrap();
    sim.run_until(ms(1_000), |_| None);
    assert!(sim.client.stats(r).is_some_and(|s| s.established && s.resumed), "{:?}", sim.server.handshake_counters());
}
