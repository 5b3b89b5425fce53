//! `--resume` end to end (issue 36): a new connection per request, fresh and resumed with
//! 0-RTT alternately, against `iperf-siri -s` and in the demo's emulator.
#![allow(clippy::unwrap_used)]

mod common;

use common::{client, json, one_at_a_time, run, server};
use serde_json::Value;

/// Every sample of `kind` ("fresh" or "resumed").
fn samples<'a>(r: &'a Value, kind: &str) -> &'a Vec<Value> {
    r[kind].as_array().unwrap()
}

fn check_kinds(r: &Value, n: usize) {
    let fresh = samples(r, "fresh");
    let resumed = samples(r, "resumed");
    assert_eq!((fresh.len(), resumed.len()), (n, n), "{r}");
    for s in fresh {
        assert_eq!((s["resumed"].as_bool(), s["early_bytes"].as_u64()), (Some(false), Some(0)), "{s}");
    }
    for s in resumed {
        assert_eq!(s["resumed"].as_bool(), Some(true), "{s}");
        assert!(s["early_bytes"].as_u64().unwrap() > 0, "the test request went early: {s}");
    }
    for s in fresh.iter().chain(resumed) {
        assert!(s["delay_ms"].as_f64().is_some(), "the request was answered: {s}");
    }
}

#[test]
fn resume_against_a_server_alternates_fresh_and_resumed_connections() {
    let _one = one_at_a_time();
    let (mut srv, port) = server(&[]);
    let port = port.to_string();
    let out = client(&["-c", "127.0.0.1", "-p", &port, "--resume", "--requests", "3", "--bursts", "1", "-J"]);
    let _ = srv.kill();
    let doc = json(&out);
    check_kinds(&doc["resume"], 3);
    // The text form says how many early requests the server took.
    let (mut srv, port) = server(&[]);
    let port = port.to_string();
    let out = client(&["-c", "127.0.0.1", "-p", &port, "--resume", "--requests", "2", "--bursts", "1"]);
    let _ = srv.kill();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("resumed with early data taken: 2 of 2"), "{text}");
    // Bulk mode has no requests to resume.
    let out = client(&["-c", "127.0.0.1", "-p", "9", "--resume", "--mode", "bulk"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--resume"), "{out:?}");
}

#[test]
fn the_resume_demo_saves_a_round_trip_on_each_emulated_path() {
    let _one = one_at_a_time();
    let out = run(&["demo", "--resume", "--requests", "3", "-J"]);
    let doc = json(&out);
    let runs = doc["demo_resume"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    // The paths' round trips bound the delays from below: a fresh connection's first byte
    // takes two (INITIAL and HANDSHAKE, then the request and its answer), a resumed one's one.
    for (run, rtt) in runs.iter().zip([15.0, 25.0]) {
        check_kinds(&run["resume"], 3);
        for s in samples(&run["resume"], "fresh") {
            assert!(s["first_byte_ms"].as_f64().unwrap() >= 2.0 * rtt, "{s}");
        }
        for s in samples(&run["resume"], "resumed") {
            assert!(s["first_byte_ms"].as_f64().unwrap() >= rtt, "{s}");
        }
    }
}
