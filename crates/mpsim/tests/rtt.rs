//! RTT estimates that go stale. A lowest-RTT scheduler compares its subflows' smoothed RTTs;
//! a subflow it stops using after a bad spell (loss and delay) keeps the spell's estimate, since
//! no packet there corrects it, and the connection stays on the slower path long after the spell.
//! Found by the Siri study's Fig. 4b (issue 22): a mobile node's median delay was the 70 ms
//! path's, not the 50 ms one's. A sample after `RTT_STALE` of silence replaces the estimate, and
//! while the connection sends, an inflated stale subflow gets a PING to take one.
#![allow(clippy::unwrap_used)]

use mpcore::{Config, Iface, PathManager};
use mpsim::apps::{Siri, SiriConfig};
use mpsim::{client_addr, ms, PathConfig, PathEvent, Sim};

/// Two cellular paths (50 and 70 ms), both used (`fullmesh`, lowest-RTT at both ends); a 2 s
/// spell of 30% loss and +150 ms on the first at 6 s; Siri requests every ~6.5 s.
fn run(seed: u64, spell: bool) -> (Sim, Siri) {
    let client = Config::default().with(|c| {
        c.multipath.path_manager = PathManager::Fullmesh;
        c.transport.keep_alive = 0;
    });
    let server = Config::default().with(|c| {
        c.multipath.scheduler = "lowest-rtt".into();
        c.transport.keep_alive = 0;
    });
    let paths = vec![
        PathConfig::new(client_addr(0), Iface::Cellular, 50, 10),
        PathConfig::new(client_addr(1), Iface::Cellular, 70, 10),
    ];
    let mut sim = Sim::new(seed, client, server, paths).unwrap();
    if spell {
        sim.at(ms(6_000), 0, PathEvent::Loss(0.3));
        sim.at(ms(6_000), 0, PathEvent::Delay(ms(100)));
        sim.at(ms(8_000), 0, PathEvent::Loss(0.0));
        sim.at(ms(8_000), 0, PathEvent::Delay(ms(25)));
    }
    let mut app = Siri::new(SiriConfig { requests: 8, wait: ms(4_000), ..SiriConfig::default() }, seed);
    assert!(sim.run(ms(120_000), |s| app.drive(s)));
    (sim, app)
}

#[test]
fn the_faster_path_is_used_again_after_its_bad_spell() {
    for seed in 1..=3 {
        let (_, app) = run(seed, true);
        // From the third request on (the spell is long over), answers come over the 50 ms path.
        for r in &app.results[2..] {
            let d = r.delay.unwrap();
            assert!(d < ms(60), "seed {seed}: request at {} ms answered in {} ms", r.start / 1000, d / 1000);
        }
    }
}

#[test]
fn a_healthy_connection_sends_no_rtt_probes() {
    // No spell: no estimate is inflated, so the 70 ms path carries nothing after its join (until
    // the server's subflow idle probe at 30 s, PROTOCOL.md §7) while four requests are answered.
    let (sim, _) = run(1, false);
    let on_slow = sim.path_log(1).iter().filter(|e| (ms(1_000)..ms(29_000)).contains(&e.time)).count();
    assert_eq!(on_slow, 0, "packets on the unused path");
}
