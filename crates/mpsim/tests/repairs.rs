//! Issue 54: repairs of an interactive flight sent twice (PROTOCOL.md §7, *Repairs sent
//! twice*). The Siri workload on the MultiMob configuration, WiFi only lossy where the test
//! says: the first data packet of a burst is dropped, and so is the first packet that repairs
//! it. The copy that left with the repair carries it, and the burst is answered one repair
//! late (35 ms), not two (53 ms: the repair's loss is found as the packet's was, a round trip
//! and an eighth after it left).
#![allow(clippy::unwrap_used)]

use mpsim::apps::{Siri, SiriConfig};
use mpsim::{ms, multimob_client, multimob_paths, multimob_server, Dir, Sim};

/// The worst burst delay (ms) when, from `from` on, the first client datagram of more than
/// 200 bytes and then the first such one at least 5 ms later (its repair, not a sibling of
/// its burst) are dropped; and when they were.
fn with_repair_lost(seed: u64, from: u64) -> (f64, Vec<u64>) {
    let mut sim =
        Sim::new(seed, multimob_client(oracle::Config::default()), multimob_server(), multimob_paths()).unwrap();
    let dropped = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let log = dropped.clone();
    sim.drop_if = Some(Box::new(move |t, path, dir, d: &[u8]| {
        let data = path == 0 && dir == Dir::Up && d.len() > 200 && t >= from;
        let mut dropped = log.borrow_mut();
        let due = match dropped.as_slice() {
            [] => true,
            [first] => t >= first + ms(5),
            _ => false,
        };
        if data && due {
            dropped.push(t);
        }
        data && due
    }));
    let mut app = Siri::new(SiriConfig { requests: 2, ..SiriConfig::default() }, seed);
    assert!(sim.run(ms(30_000), |s| app.drive(s)), "every request answered");
    let worst = app.results.iter().filter_map(|r| r.max_burst_delay()).max().unwrap();
    let times = dropped.borrow().clone();
    (worst as f64 / 1e3, times)
}

#[test]
fn a_lost_repair_of_a_request_costs_no_second_repair() {
    for seed in 1..=3 {
        // The first request's seventh burst (the request starts at 0.2 s, its bursts 300 ms
        // apart).
        let (worst, dropped) = with_repair_lost(seed, ms(2_000));
        // The burst's first packet, and its repair a round trip and an eighth later.
        assert_eq!(dropped.len(), 2, "seed {seed}: {dropped:?}");
        assert!((ms(16)..ms(22)).contains(&(dropped[1] - dropped[0])), "seed {seed}: {dropped:?}");
        // A burst answered in 17 ms; the lost packet is repaired when its sibling's ACK tells
        // (18 ms), and the copy arrives with the repair: 34-35 ms. Sent once, the repair's own
        // loss cost another 18 ms (53 ms in seeds 2 and 3).
        assert!(worst <= 45.0, "seed {seed}: worst {worst} ms");
    }
}

/// What repairs cost, counted where they arrive (`SubflowCounters::data_bytes_duplicate`). A
/// burst's first data packet is dropped. Its tail loss probe (SRTT + 4·RTTVAR after it left)
/// carries its 1,149 bytes, with a copy (*Repairs sent twice*); its loss, found 29 µs later
/// (9/8·SRTT), sends them again, with a copy: four arrivals, three of them duplicates (3,447
/// bytes). Without loss, none. Taking the probe for the packet's latest transmission (RFC 8985
/// §6.2), so that the loss sent nothing more, was tried: one duplicate, but over 1,000 runs of
/// the web radio through two walks (`figures::walk`) the player stalled 51 s in all against 41,
/// the redundancy helping at 30% loss; not taken.
#[test]
fn repairs_received_twice_are_counted_where_they_arrive() {
    let duplicates = |drop_one: bool| {
        let mut sim =
            Sim::new(1, multimob_client(oracle::Config::default()), multimob_server(), multimob_paths()).unwrap();
        let done = std::rc::Rc::new(std::cell::Cell::new(!drop_one));
        let flag = done.clone();
        sim.drop_if = Some(Box::new(move |t, path, dir, d: &[u8]| {
            let hit = !flag.get() && path == 0 && dir == Dir::Up && d.len() > 200 && t >= ms(2_000);
            if hit {
                flag.set(true);
            }
            hit
        }));
        let mut app = Siri::new(SiriConfig { requests: 2, ..SiriConfig::default() }, 1);
        assert!(sim.run(ms(30_000), |s| app.drive(s)), "every request answered");
        assert!(done.get(), "a packet was dropped");
        let server = sim.server.stats(app.server.unwrap()).unwrap();
        server.subflows.iter().map(|s| s.counters.data_bytes_duplicate).sum::<u64>()
    };
    assert_eq!(duplicates(false), 0, "no loss, no copy");
    assert_eq!(duplicates(true), 3 * 1149, "the probe's copy, the repair and its copy");
}

/// RFC 9002 §7.3.2's one packet beyond the window cut by a loss: "If the congestion window is
/// reduced immediately, a single packet can be sent prior to reduction. This speeds up loss
/// recovery if the data in the lost packet is retransmitted." The second full packet of four
/// bursts in a row is dropped, each loss halving the window down to the least (2,400 bytes).
/// Where the tail loss probe goes first (SRTT + 4·RTTVAR after the burst, with the lost
/// packet's data less the byte its PING takes, and the probe's copy), the loss found just after
/// fills the cut window with them, and the repair of the rest waited for the probe's
/// acknowledgement, a round trip: 48.9-49.3 ms in seeds 1-3. With the grant it goes at once:
/// 35.7-37.1 ms. (Over 400 seeds of 1 % loss the p90 of the worst response was 49.7 ms, 39.8
/// with the grant.)
#[test]
fn a_loss_that_cuts_the_window_still_lets_its_repair_go() {
    const DROPS: u32 = 4;
    for seed in 1..=3 {
        let mut sim =
            Sim::new(seed, multimob_client(oracle::Config::default()), multimob_server(), multimob_paths()).unwrap();
        let dropped = std::rc::Rc::new(std::cell::Cell::new(0u32));
        let count = dropped.clone();
        // From 8 s on, the second full packet of each burst (its packets leave at one instant),
        // for `DROPS` bursts: each loss halves the window (12 KB, then 6, 3, 2.4: the least).
        let (mut burst_at, mut full_in_burst) = (u64::MAX, 0);
        sim.drop_if = Some(Box::new(move |t, path, dir, d: &[u8]| {
            if path != 0 || dir != Dir::Up || d.len() < 1_000 || t < ms(8_000) || count.get() >= DROPS {
                return false;
            }
            if t != burst_at {
                (burst_at, full_in_burst) = (t, 0);
            }
            full_in_burst += 1;
            let drop = full_in_burst == 2;
            if drop {
                count.set(count.get() + 1);
            }
            drop
        }));
        let mut app = Siri::new(SiriConfig { requests: 4, ..SiriConfig::default() }, seed);
        assert!(sim.run(ms(60_000), |s| app.drive(s)), "every request answered");
        let worst = app.results.iter().filter_map(|r| r.max_burst_delay()).max().unwrap() as f64 / 1e3;
        assert_eq!(dropped.get(), DROPS, "seed {seed}: the packets dropped");
        assert!(worst <= 40.0, "seed {seed}: worst {worst} ms");
    }
}
