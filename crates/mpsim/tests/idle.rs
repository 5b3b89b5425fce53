//! Issue 17, quiet when idle: a connection with nothing to send sends nothing but its
//! keep-alives (PROTOCOL.md §5, §7).
#![allow(clippy::unwrap_used)]

use mpcore::{Config, PathManager};
use mpsim::apps::Bulk;
use mpsim::{ms, Dir, Flow, Sim};

/// Runs a small exchange (one request's worth), then `idle` of nothing; returns the packets
/// sent on each path during the idle time, (up, down).
fn idle_packets(client: Config, server: Config, backup_cell: bool, idle: u64) -> Vec<(usize, usize)> {
    let paths = if backup_cell { mpsim::multimob_backup_paths() } else { mpsim::multimob_paths() };
    let mut sim = Sim::new(5, client, server, paths).unwrap();
    let mut app = Bulk::new(vec![7; 3_000], false);
    let until = ms(1_000);
    sim.run(until, |s| {
        app.step(s);
        Flow::Wake(None)
    });
    assert_eq!(app.received.len(), 3_000, "the exchange before the idle time completed");
    sim.run(until + idle, |s| {
        app.step(s);
        Flow::Wake(None)
    });
    let h = app.client.unwrap();
    assert!(sim.client.conn(h).is_some_and(|c| !c.is_closed()), "still connected after the idle time");
    (0..2).map(|p| (sim.packets_on(p, Some(Dir::Up), until), sim.packets_on(p, Some(Dir::Down), until))).collect()
}

fn no_keep_alives(c: Config) -> Config {
    Config { keep_alive: 0, idle_timeout: 0, ..c }
}

#[test]
fn two_idle_endpoints_exchange_nothing_without_keep_alives() {
    // Both paths with a regular subflow each (fullmesh), the server's subflow idle timeout off
    // too: no acknowledgement of an acknowledgement, so not one packet in a minute.
    let fullmesh = Config { path_manager: PathManager::Fullmesh, subflow_idle_timeout: 0, ..Config::default() };
    let got = idle_packets(no_keep_alives(fullmesh.clone()), no_keep_alives(fullmesh), false, ms(60_000));
    assert_eq!(got, vec![(0, 0), (0, 0)], "packets (up, down) per path in 60 idle seconds");
    // The phone presets, WiFi and a cellular backup: the same.
    let got = idle_packets(no_keep_alives(Config::phone()), no_keep_alives(Config::server()), true, ms(60_000));
    assert_eq!(got, vec![(0, 0), (0, 0)], "phone presets without keep-alives");
}

#[test]
fn an_idle_phone_sends_only_keep_alives_on_wifi_and_nothing_on_cellular() {
    // `backup` path manager: the cellular backup subflow is open, and stays silent.
    let phone = Config { path_manager: PathManager::Backup, ..Config::phone() };
    let hour = ms(3_600_000);
    for (name, client) in [("multimob", Config::phone()), ("backup", phone)] {
        let got = idle_packets(client, Config::server(), true, hour);
        println!(
            "{name}: one idle hour: WiFi {} up / {} down, cellular {} up / {} down",
            got[0].0, got[0].1, got[1].0, got[1].1
        );
        // A PING every 15 s and its ACK: 240 each per hour.
        assert!((239..=240).contains(&got[0].0), "{name}: keep-alives on WiFi: {:?}", got[0]);
        assert_eq!(got[0].1, got[0].0, "{name}: one ACK per keep-alive, nothing else from the server");
        assert_eq!(got[1], (0, 0), "{name}: nothing on cellular");
    }
}
