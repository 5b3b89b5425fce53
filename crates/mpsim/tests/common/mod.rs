//! What several of the simulator's test files share: the default configuration with a path
//! manager, a quiet established connection, the server's side of a one-way transfer, and a
//! capture of every datagram.
#![allow(dead_code, clippy::unwrap_used)]

use mpcore::{Config, ConnHandle, PathManager};
use mpsim::{ms, multimob_paths, Sim};

/// The default configuration with path manager `pm`.
pub fn cfg(pm: PathManager) -> Config {
    Config::default().with(|c| c.multipath.path_manager = pm)
}

/// A connection on the simulator's two paths (one subflow), established and quiet at 500 ms.
pub fn established(seed: u64) -> (Sim, ConnHandle) {
    let mut sim = Sim::new(seed, cfg(PathManager::OnDemand), cfg(PathManager::OnDemand), multimob_paths()).unwrap();
    let c = sim.connect();
    sim.run_until(ms(500), |_| None);
    (sim, c)
}

/// The server's side of a one-way transfer: accepts the connection (into `h`) and reads all
/// it has; returns how many bytes.
pub fn server_reads_all(s: &mut Sim, h: &mut Option<ConnHandle>) -> usize {
    *h = h.or_else(|| s.server.accept());
    let (mut buf, mut total) = ([0u8; 4096], 0);
    if let Some(sc) = h.and_then(|h| s.server.conn_mut(h)) {
        while let Ok(n) = sc.read(&mut buf) {
            if n == 0 {
                break;
            }
            total += n;
        }
    }
    total
}

/// The unix time (ms) the resumption tests' endpoints start at.
pub const UNIX: u64 = 1_700_000_000_000;

/// A simulation whose endpoints both say it is [`UNIX`] at their start (resumption tickets
/// are dated by it).
pub fn dated(seed: u64, client: Config, server: Config, paths: Vec<mpsim::PathConfig>) -> Sim {
    let mut sim = Sim::new(seed, client, server, paths).unwrap();
    sim.client.set_unix_time(0, UNIX);
    sim.server.set_unix_time(0, UNIX);
    sim
}

pub type Captured = std::rc::Rc<std::cell::RefCell<Vec<(usize, mpsim::Dir, Vec<u8>)>>>;

/// Captures every datagram entering any path (the attacker and RETRY tests).
pub fn capture(sim: &mut Sim) -> Captured {
    let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let l2 = log.clone();
    sim.tap = Some(Box::new(move |_t, path, dir, bytes| {
        l2.borrow_mut().push((path, dir, bytes.to_vec()));
    }));
    log
}
