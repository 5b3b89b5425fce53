//! `iperf-siri` between two network namespaces joined by two veth pairs (root only; elsewhere
//! the test says why it skips). The client binds its subflows to `c0` (WiFi) and `c1`
//! (cellular) with SO_BINDTODEVICE; the server has one address, reachable over both.
//!
//! ```text
//!  client ns                           server ns
//!  c0 10.93.1.1/24  <--veth-->  s0 10.93.1.2/24
//!  c1 10.93.2.1/24  <--veth-->  s1 10.93.2.2/24      lo 10.93.9.1/32 (the server)
//! ```
//!
//! Under MultiMob (break-before-make, fast join), `c0` is taken down after the first request:
//! every request is still answered, over `c1`, which carried nothing before the failure.
#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use testbed::{Reap, Testbed};

const BIN: &str = env!("CARGO_BIN_EXE_iperf-siri");

fn spawn(ns: &str, args: &[&str]) -> Child {
    Command::new("ip")
        .args(["netns", "exec", ns, BIN])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn two_interfaces_in_namespaces_survive_wifi_failing() {
    if let Some(why) = testbed::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let bed = Testbed::new("isiri", 93).expect("setting up the namespaces");
    let (mut server, key) = one_off_server(&bed);

    let client = spawn(
        &bed.client,
        &[
            "--server-key",
            &key,
            "-c",
            "10.93.9.1",
            "-m",
            "c0@wifi,c1@cellular",
            "--path-manager",
            "multimob",
            "--fast-join",
            "--requests",
            "3",
            "--burst-gap",
            "50ms",
            "--wait",
            "0.5s",
            "-J",
            "-i",
            "0",
        ],
    );
    // The first request takes 8 × 50 ms; WiFi fails during the wait after it.
    std::thread::sleep(Duration::from_millis(650));
    bed.set_link(0, false).unwrap();
    let out = client.wait_with_output().unwrap();
    assert!(out.status.success(), "client: {}", String::from_utf8_lossy(&out.stderr));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    let end = &j["end"];
    assert_eq!(end["delay"]["requests_answered"], 3, "{end}");
    let ifs = end["interfaces"].as_array().unwrap();
    assert_eq!((ifs[0]["name"].as_str(), ifs[1]["name"].as_str()), (Some("c0"), Some("c1")));
    assert_eq!(ifs[0]["up"], false, "the driver saw c0 go down");
    assert!(ifs[1]["packets_sent"].as_u64().unwrap() > 0 && ifs[1]["packets_received"].as_u64().unwrap() > 0);
    // Break-before-make: c1 was joined only once c0's subflow had closed. Both times are the
    // client's events (the test's clock would count the client's start, which a loaded machine
    // stretches), stamped by the driver after the round that sent the join and closed c0.
    let events = j["events"].as_array().unwrap();
    let time_of = |hit: &dyn Fn(&Value) -> bool| events.iter().find(|e| hit(e)).and_then(|e| e["time"].as_f64());
    let closed =
        time_of(&|e| e["path"] == 0 && (e["kind"] == "subflow_closed" || e["kind"] == "subflow_failed")).unwrap();
    let joined = time_of(&|e| e["path"] == 1 && e["kind"] == "subflow_established").unwrap();
    assert!(joined >= closed, "c1 joined at {joined:.3} s, c0's subflow closed at {closed:.3} s: {events:?}");
    assert!(end["cellular"]["energy_j"].as_f64().unwrap() > 0.0);
    assert!(exits_ok(&mut server.0), "the one-off server exits after the test");
}

#[test]
fn wifi_that_drops_udp_is_reported_and_the_requests_go_over_cellular() {
    if let Some(why) = testbed::unavailable().or_else(testbed::fleet::nft_missing) {
        eprintln!("skipped: {why}");
        return;
    }
    let bed = Testbed::new("isiri-blk", 96).expect("setting up the namespaces");
    bed.block_udp(0, true).unwrap();
    let (mut server, key) = one_off_server(&bed);
    let args = ["--server-key", &key, "-c", "10.96.9.1", "-m", "c0@wifi,c1@cellular", "--requests", "2"];
    let client = spawn(&bed.client, &[&args[..], &["--wait", "0.2s", "-J", "-i", "0"]].concat());
    let out = client.wait_with_output().unwrap();
    assert!(out.status.success(), "client: {}", String::from_utf8_lossy(&out.stderr));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    let end = &j["end"];
    assert_eq!(end["delay"]["requests_answered"], 2, "{end}");
    assert_eq!(end["connection"]["handshake_via_path"], 1, "{}", end["connection"]);
    assert!(exits_ok(&mut server.0), "the one-off server exits after the test");
    // The text report says so too.
    let (mut server, key) = one_off_server(&bed);
    let args = ["--server-key", &key, "-c", "10.96.9.1", "-m", "c0@wifi,c1@cellular", "--requests", "1"];
    let out = spawn(&bed.client, &[&args[..], &["--wait", "0.2s", "-i", "0"]].concat()).wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "client: {}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("Handshake: connected through c1"), "{text}");
    assert!(exits_ok(&mut server.0));
    // UDP dropped on both: the run goes over TCP (`--tcp-fallback`, 1 s by default), and says
    // so.
    bed.block_udp(1, true).unwrap();
    let (mut server, key) = one_off_server(&bed);
    let args = ["--server-key", &key, "-c", "10.96.9.1", "-m", "c0@wifi,c1@cellular", "--requests", "2"];
    let tail = ["--tcp-fallback", "1s", "--wait", "0.2s", "-J", "-i", "0"];
    let out = spawn(&bed.client, &[&args[..], &tail].concat()).wait_with_output().unwrap();
    assert!(out.status.success(), "client: {}", String::from_utf8_lossy(&out.stderr));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    let end = &j["end"];
    assert_eq!(end["delay"]["requests_answered"], 2, "{end}");
    let subflows = end["connection"]["subflows"].as_array().unwrap();
    assert!(!subflows.is_empty() && subflows.iter().all(|f| f["carrier"] == "tcp"), "{}", end["connection"]);
    assert!(exits_ok(&mut server.0));
}

/// A one-off server (`-1`) in the server namespace, once it listens; and its key.
fn one_off_server(bed: &Testbed) -> (Reap, String) {
    // The server listens on the wildcard address: its answers must leave from the address
    // the client wrote to (10.N.9.1), not from the outgoing link's (10.N.1.2).
    let mut server = Reap(spawn(&bed.server, &["-s", "-1", "-i", "0", "--scheduler", "last-received"]));
    let mut lines = BufReader::new(server.0.stdout.take().unwrap()).lines();
    assert!(
        lines.by_ref().map_while(Result::ok).any(|l| l.starts_with("Server listening on 5201")),
        "the server did not start"
    );
    std::thread::spawn(move || for _ in lines {});
    // It made a key pair at start and printed the public key, as a user would copy it.
    let mut err = BufReader::new(server.0.stderr.take().unwrap()).lines();
    let key = err
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| l.strip_prefix("server key: ").map(|k| k.split_whitespace().next().unwrap_or("").to_string()))
        .expect("the server prints its key");
    std::thread::spawn(move || for _ in err {});
    (server, key)
}

/// Whether the process exits, successfully, within 10 s.
fn exits_ok(c: &mut Child) -> bool {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        if let Ok(Some(s)) = c.try_wait() {
            return s.success();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}
