//! Issue 16 in the simulator: subflows have an owner. Records of closed subflows are reclaimed,
//! the peer is told when a subflow ends, a server reclaims subflows that went silent, and the
//! same seed gives the same run, byte for byte.
#![allow(clippy::unwrap_used)]

use mpcore::{Config, PathManager};
use mpsim::apps::{pattern, Bulk};
use mpsim::{ms, Dir, PathEvent, Sim};
use std::cell::RefCell;
use std::rc::Rc;

fn cfg(pm: PathManager) -> Config {
    Config { path_manager: pm, ..Config::default() }
}

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
