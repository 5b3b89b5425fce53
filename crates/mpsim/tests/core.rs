//! The connection state machine proven in the simulator (issue 3's "must show").
#![allow(clippy::unwrap_used)]

use mpcore::{Config, Event, PathManager, SubflowState};
use mpsim::apps::{pattern, Bulk};
use mpsim::{ms, multimob_paths, Sim};

fn cfg(pm: PathManager) -> Config {
    Config { path_manager: pm, ..Config::default() }
}

#[test]
fn handshake_and_a_small_exchange() {
    let mut sim = Sim::new(1, cfg(PathManager::OnDemand), cfg(PathManager::OnDemand), multimob_paths()).unwrap();
    let mut app = Bulk::new(b"hello over a multipath connection".to_vec(), false);
    let done = sim.run_while(ms(5_000), |s| app.step(s), |_| false);
    assert!(!done);
    assert_eq!(app.received, b"hello over a multipath connection");
    assert!(app.finished_at.is_some(), "DATA_FIN delivered");
    assert!(app.events.iter().any(|e| e.1 && e.2 == Event::Connected));
    assert!(app.events.iter().any(|e| !e.1 && e.2 == Event::Connected));
    let st = sim.client.stats(app.client.unwrap()).unwrap();
    assert_eq!(st.subflows.len(), 1);
    println!("{st:#?}");
}
