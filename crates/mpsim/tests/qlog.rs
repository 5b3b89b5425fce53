//! Issue 39: a connection's qlog (PROTOCOL.md §13) says what its statistics say. A MultiMob
//! phone with a lossy WiFi that fails before the second request, both sides logging: every
//! record is JSON-SEQ with the schema's fields; per path, the packets sent, received and
//! lost in the log are the subflow's counters; every join is there; no key is.
#![allow(clippy::unwrap_used)]

use mpcore::{Config, SubflowState};
use mpsim::apps::{Siri, SiriConfig};
use mpsim::{ms, multimob_backup_paths, PathEvent, Sim};
use serde_json::Value;
use std::collections::HashMap;

/// The records of a JSON-SEQ text (RFC 7464): each starts with RS and ends with a newline.
fn records(text: &[u8]) -> Vec<Value> {
    assert_eq!(text.first(), Some(&0x1e), "a JSON-SEQ text starts with RS");
    let text = std::str::from_utf8(text).unwrap();
    text.split('\x1e')
        .skip(1)
        .map(|r| {
            assert!(r.ends_with('\n'), "a record ends with a newline: {r:?}");
            serde_json::from_str(r.trim_end()).unwrap_or_else(|e| panic!("{e}: {r}"))
        })
        .collect()
}

/// Every string in `v` (keys aside): names, states, verdicts.
fn strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// The scenario: a lossy WiFi that fails before the second of two requests.
fn run(qlog: bool) -> (Sim, Siri) {
    let client = mpsim::multimob_client(oracle::Config::default()).with(|c| c.logging.qlog = qlog);
    let server = mpsim::multimob_server().with(|c| c.logging.qlog = qlog);
    let mut paths = multimob_backup_paths();
    paths[0].loss = 0.02;
    let mut sim = Sim::new(11, client, server, paths).unwrap();
    let mut app = Siri::new(SiriConfig { requests: 2, wait: ms(2_000), ..SiriConfig::default() }, 11);
    let down = SiriConfig::default().start + ms(8 * 300 + 1_000);
    sim.at(down, 0, PathEvent::Down);
    assert!(sim.run(ms(30_000), |s| app.drive(s)), "both requests answered");
    sim.run_until(sim.now + ms(100), |_| None);
    (sim, app)
}

#[test]
fn the_log_says_what_the_counters_say() {
    let (sim, app) = run(true);
    for (is_client, ep, h) in [(true, &sim.client, app.client.unwrap()), (false, &sim.server, app.server.unwrap())] {
        let side = if is_client { "client" } else { "server" };
        let log = records(sim.qlogs.log(is_client, h).unwrap_or_else(|| panic!("{side}: no log")));
        check(side, &log, ep.stats(h).unwrap());
    }
    // Logging changes nothing the connection does: every datagram on both paths, the same.
    let (quiet, _) = run(false);
    assert!(quiet.qlogs.all().next().is_none(), "no log when off");
    for p in 0..2 {
        assert_eq!(sim.path_log(p), quiet.path_log(p), "path {p}");
    }
}

fn check(side: &str, log: &[Value], st: mpcore::ConnStats) {
    let header = &log[0];
    assert_eq!(header["qlog_version"], "0.3");
    assert_eq!(header["qlog_format"], "JSON-SEQ");
    assert_eq!(header["trace"]["vantage_point"]["type"], side);
    assert_eq!(header["trace"]["common_fields"]["time_format"], "relative");
    // Every event: a time that never goes back, a name, data.
    let mut last = 0.0;
    let mut count: HashMap<(String, u64), u64> = HashMap::new();
    for e in &log[1..] {
        let t = e["time"].as_f64().unwrap_or_else(|| panic!("{side}: no time: {e}"));
        assert!(t >= last, "{side}: time went back from {last} to {t}: {e}");
        last = t;
        let name = e["name"].as_str().unwrap_or_else(|| panic!("{side}: no name: {e}"));
        assert!(e["data"].is_object(), "{side}: no data: {e}");
        if let Some(p) = e["data"]["path_id"].as_u64() {
            *count.entry((name.to_string(), p)).or_default() += 1;
        }
        if name.starts_with("transport:packet_") {
            assert!(e["data"]["header"]["packet_number"].is_u64(), "{side}: {e}");
            assert!(e["data"]["raw"]["length"].is_u64(), "{side}: {e}");
            assert!(e["data"]["frames"].is_array(), "{side}: {e}");
        }
        // Names, states and verdicts only: no key, HMAC, token or payload as text.
        let mut s = Vec::new();
        strings(e, &mut s);
        for s in s {
            assert!(
                s.len() <= 40 && s.chars().all(|c| c.is_ascii_alphanumeric() || "_:".contains(c)),
                "{side}: {s:?} in {e}"
            );
        }
    }
    let n = |name: &str, id: u32| count.get(&(name.to_string(), u64::from(id))).copied().unwrap_or(0);
    let mut joined = 0;
    for f in &st.subflows {
        let c = &f.counters;
        println!(
            "{side} subflow {}: sent {} / log {}, received {} / log {}, lost {} / log {}",
            f.id,
            c.packets_sent,
            n("transport:packet_sent", f.id),
            c.packets_received,
            n("transport:packet_received", f.id),
            c.packets_lost,
            n("recovery:packet_lost", f.id)
        );
        assert_eq!(n("transport:packet_sent", f.id), c.packets_sent, "{side}: subflow {}", f.id);
        assert_eq!(n("transport:packet_received", f.id), c.packets_received, "{side}: subflow {}", f.id);
        assert_eq!(n("recovery:packet_lost", f.id), c.packets_lost, "{side}: subflow {}", f.id);
        if f.state == SubflowState::Established || f.state == SubflowState::Closed {
            joined += 1;
        }
    }
    assert!(st.subflows.len() >= 2, "{side}: the failover joined cellular");
    let established =
        log.iter().filter(|e| e["name"] == "mpudp:subflow_updated" && e["data"]["new"] == "established").count();
    assert_eq!(established, joined, "{side}: one `established` per subflow that was");
    let verdicts = log.iter().filter(|e| e["name"] == "mpudp:oracle_verdict").count();
    if side == "client" {
        assert!(st.subflows.iter().any(|f| f.counters.packets_lost > 0), "the failed WiFi lost packets");
        assert!(verdicts > 0, "the oracle's verdict on the failed WiFi is logged");
        let joins = log
            .iter()
            .filter(|e| e["name"] == "transport:packet_sent" && e["data"]["header"]["packet_type"] == "join")
            .count();
        assert!(joins > 0, "the client's join is logged");
    }
}

#[test]
fn a_connection_that_ends_at_once_keeps_its_last_records() {
    // Every path goes silent under an upload: the client gives the peer up (peer timeout) and
    // is forgotten in the same step, with no drain period. Its log still ends with the close.
    let c = Config::default().with(|c| {
        c.logging.qlog = true;
        c.transport.idle_timeout = ms(60_000);
    });
    let mut sim = Sim::new(9, c.clone(), c, multimob_backup_paths()).unwrap();
    let mut app = mpsim::apps::Bulk::new(vec![5; 4 << 20], false);
    sim.at(ms(1_000), 0, PathEvent::Down);
    sim.at(ms(1_000), 1, PathEvent::Down);
    sim.run(ms(30_000), |s| mpsim::Flow::Wake(app.step(s)));
    assert_eq!(sim.client.live_connections(), 0, "the client gave up");
    let log = records(sim.qlogs.log(true, app.client.unwrap()).unwrap());
    let last = log.last().unwrap();
    assert_eq!(last["name"], "connectivity:connection_state_updated", "{last}");
    assert_eq!(last["data"]["reason"], "peer_unresponsive", "{last}");
}
