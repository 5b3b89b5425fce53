//! Issue 52: no test slot held by a client that does not use it, and none lost to a pause.
//! `iperf-siri -s` on loopback, stock clients, as a new user runs them.
#![allow(clippy::unwrap_used)]

mod common;

use common::{client, json, key, one_at_a_time, server, BIN};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A background client at source address `from`, its standard error piped.
fn background(port: u16, from: &str, workload: &[&str]) -> Child {
    Command::new(BIN)
        .args(["--server-key", key().1.as_str(), "-c", "127.0.0.1", "-p", &port.to_string(), "-i", "0", "-m", from])
        .args(workload)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits up to `limit` for `c` to exit (killing it then); its standard error.
fn finish(mut c: Child, limit: Duration) -> String {
    let t = Instant::now();
    while c.try_wait().unwrap().is_none() && t.elapsed() < limit {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = c.kill();
    String::from_utf8_lossy(&c.wait_with_output().unwrap().stderr).to_string()
}

fn signal(pid: u32, sig: &str) {
    assert!(Command::new("kill").args([sig, &pid.to_string()]).status().unwrap().success());
}

/// Four stock clients, two from each of two addresses, declare a long wait between their two
/// requests. Before, they took all four slots and 31 other clients were told "busy" for 50 s.
/// Now one network holds three slots at most, and a client that waits for a slot ends the
/// test silent longest (its client is told why): every other client is served.
#[test]
fn squatters_from_two_addresses_keep_nobody_out() {
    let _serial = one_at_a_time();
    let (mut srv, port) = server(&[]);
    let squat = ["--requests", "2", "--bursts", "1", "--wait", "25s"];
    let squatters: Vec<Child> =
        ["127.0.0.1", "127.0.0.1", "127.0.0.2", "127.0.0.2"].iter().map(|a| background(port, a, &squat)).collect();
    // Their first requests answered, they wait, silent for longer than a slot may be held
    // against a client that asks.
    std::thread::sleep(Duration::from_millis(3_000));
    let p = port.to_string();
    for k in 0..6 {
        let out = client(&["-c", "127.0.0.1", "-p", &p, "-m", "127.0.0.3", "--requests", "1", "--bursts", "2", "-J"]);
        assert_eq!(json(&out)["end"]["delay"]["requests_answered"], 1, "client {k}");
    }
    let said: Vec<String> = squatters.into_iter().map(|c| finish(c, Duration::from_secs(1))).collect();
    let ended = said.iter().filter(|e| e.contains("the server ended the test") && e.contains("another client")).count();
    let busy = said.iter().filter(|e| e.contains("busy")).count();
    println!("squatters: {ended} ended for another client, {busy} told busy: {said:?}");
    assert!(ended >= 1, "{said:?}");
    assert_eq!(busy, 1, "one network holds three of the four slots: {said:?}");
    srv.kill().unwrap();
    let _ = srv.wait();
}

/// A declared wait of an hour is refused at once, with the server's bound in the line (the
/// default bound is 30 s; this server's, 2 s).
#[test]
fn a_declared_silence_beyond_the_servers_bound_is_refused() {
    let _serial = one_at_a_time();
    let (mut srv, port) = server(&["--max-silence", "2"]);
    let p = port.to_string();
    let out = client(&["-c", "127.0.0.1", "-p", &p, "--requests", "2", "--wait", "3600s"]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && e.contains("--max-silence") && e.contains("3600.0 s"), "{e}");
    let ok = json(&client(&["-c", "127.0.0.1", "-p", &p, "--requests", "2", "--bursts", "1", "--wait", "2s", "-J"]));
    assert_eq!(ok["end"]["delay"]["requests_answered"], 2, "a wait at the bound is served");
    srv.kill().unwrap();
    let _ = srv.wait();
}

/// A server frozen for 5 s (SIGSTOP) during its client's wait, and a client suspended for
/// 5 s during its own, keep their tests. Before, the server judged the client gone ("the
/// client sent nothing for 4.0 s") when it woke, or while the client slept.
#[test]
fn a_server_frozen_or_a_client_suspended_for_5_s_keeps_its_test() {
    let _serial = one_at_a_time();
    let workload = ["--requests", "3", "--bursts", "2", "--burst-gap", "50ms", "--wait", "2s", "-J"];
    // The two cases at once, each with its own server (the test's time is one case's).
    let cases = ["server", "client"].map(|frozen| {
        std::thread::spawn(move || {
            let (mut srv, port) = server(&[]);
            let c = Command::new(BIN)
                .args(["--server-key", key().1.as_str(), "-c", "127.0.0.1", "-p", &port.to_string()])
                .args(workload)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            // The first request is answered within a second; the freeze starts in the wait.
            std::thread::sleep(Duration::from_millis(1_000));
            let pid = if frozen == "server" { srv.id() } else { c.id() };
            signal(pid, "-STOP");
            std::thread::sleep(Duration::from_secs(5));
            signal(pid, "-CONT");
            let out = c.wait_with_output().unwrap();
            srv.kill().unwrap();
            let _ = srv.wait();
            (frozen, json(&out)["end"]["delay"]["requests_answered"].clone())
        })
    });
    for case in cases {
        let (frozen, answered) = case.join().unwrap();
        assert_eq!(answered, 3, "{frozen} frozen");
    }
}
