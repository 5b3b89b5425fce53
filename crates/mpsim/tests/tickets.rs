//! Issue 36, its first part: a server that issues resumption tickets (PROTOCOL.md §4.7) hands
//! one to every client that takes them, in a NEW_TICKET (§5.19) it repeats until delivered;
//! both ends derive the same PSK from the connection's secret, which never travels; the ticket
//! opens at its server only, within its lifetime, and names the server's identity.
#![allow(clippy::unwrap_used)]

use mpcore::{Config, Resumption, ResumptionTicket};
use mpsim::{ms, multimob_paths, server_addr, PathEvent, Sim};

const UNIX: u64 = 1_700_000_000_000;

fn pair(seed: u64, accept: bool, issue: bool) -> Sim {
    let client = Config::default().with(|c| c.resumption = Resumption { accept, ..Resumption::default() });
    // The server logs (qlog): the tests count its NEW_TICKETs there.
    let server = Config::default().with(|c| {
        c.resumption = Resumption { issue, ..Resumption::default() };
        c.logging.qlog = true;
    });
    let mut sim = Sim::new(seed, client, server, multimob_paths()).unwrap();
    sim.client.set_unix_time(0, UNIX);
    sim.server.set_unix_time(0, UNIX);
    sim
}

#[test]
fn each_client_that_takes_tickets_gets_one_whose_psk_the_server_derives_too() {
    let mut sim = pair(31, true, true);
    let c = sim.connect();
    sim.run_until(ms(500), |_| None);
    let t = sim.client.take_ticket(c).expect("a ticket");
    assert!(sim.client.take_ticket(c).is_none(), "handed out once");
    assert_eq!(t.server, server_addr());
    assert_eq!(t.lifetime_s, 7_200);
    assert!((UNIX..UNIX + 500).contains(&t.received_unix_ms), "{t:?}");
    let opened = sim.server.open_ticket(sim.now, &t.ticket).expect("its server opens it");
    assert_eq!(opened.psk, t.psk, "both ends derive the same PSK");
    assert_eq!(opened.age_add, t.age_add);
    let identity = sim.server.config().server.identity.as_ref().unwrap().public_key().0;
    assert_eq!(opened.identity, identity, "the ticket names the key that signed the handshake");
    assert!(t.received_unix_ms - opened.issued_ms < 100);
    // The application keeps it as bytes; they give it back whole.
    assert_eq!(ResumptionTicket::from_bytes(&t.to_bytes()), Some(t.clone()));
    // Past its lifetime the server no longer opens it; nor does another server.
    assert!(sim.server.open_ticket(sim.now + ms(7_201_000), &t.ticket).is_none());
    let other = pair(32, true, true);
    assert!(other.server.open_ticket(sim.now, &t.ticket).is_none(), "another server's secret");
    // The ticket will travel in clear in a resumed INITIAL: the PSK is sealed in it, never
    // readable.
    assert!(!t.ticket.windows(32).any(|w| w == t.psk), "the PSK in clear in the ticket");
}

#[test]
fn a_lost_ticket_is_sent_again_and_none_goes_where_it_is_not_wanted() {
    // 30% of the datagrams lost both ways: every connection that establishes gets its
    // ticket, and some needed it sent again (the server's log counts its NEW_TICKETs).
    let mut resent = 0;
    for seed in 1..=8 {
        let mut sim = pair(seed, true, true);
        sim.at(ms(1), 0, PathEvent::Loss(0.3));
        let c = sim.connect();
        sim.run_until(ms(20_000), |_| None);
        if !sim.client.stats(c).is_some_and(|s| s.established) {
            continue;
        }
        assert!(sim.client.take_ticket(c).is_some(), "seed {seed}: no ticket");
        let (_, _, log) = sim.qlogs.all().find(|l| !l.0).unwrap();
        let sent = String::from_utf8_lossy(log).matches("\"new_ticket\"").count();
        resent += sent.saturating_sub(1);
    }
    assert!(resent > 0, "no NEW_TICKET was lost: the test proves nothing");
    // A client that does not announce `tickets` gets none (a sender sends only the extension
    // frames its peer announced, §5); a server that does not issue sends none.
    for (accept, issue) in [(false, true), (true, false)] {
        let mut sim = pair(33, accept, issue);
        let c = sim.connect();
        sim.run_until(ms(500), |_| None);
        assert!(sim.client.take_ticket(c).is_none(), "accept {accept}, issue {issue}");
    }
}

#[test]
fn a_malformed_ticket_drops_its_packet() {
    // A server whose NEW_TICKET has no ticket in it (0x40, length 7: lifetime 1, age_add,
    // nonce 0, an empty ticket): the client drops the whole packet as malformed and counts it;
    // nothing in it acts and no ticket is kept.
    let mut sim = pair(34, true, false);
    let c = sim.connect();
    sim.run_until(ms(300), |_| None);
    let s = sim.server.accept().unwrap();
    let before = sim.client.drops().malformed;
    let lost = |sim: &Sim| sim.server.stats(s).unwrap().subflows[0].counters.packets_lost;
    let lost_before = lost(&sim);
    let bad = [0x40, 0x40, 0x07, 0x01, 0, 0, 0, 0, 0x00, 0x00];
    assert!(sim.server.conn_mut(s).unwrap().inject_frames(0, &bad));
    sim.run_until(ms(600), |_| None);
    assert!(sim.client.drops().malformed > before, "counted");
    assert!(lost(&sim) > lost_before, "dropped unacknowledged: the server found it lost");
    assert!(sim.client.take_ticket(c).is_none());
}
