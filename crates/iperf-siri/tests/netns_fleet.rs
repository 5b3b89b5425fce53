//! Issue 56: a fleet run with the command line alone, as an operator would. Three
//! `iperf-siri -s --fleet K/3` processes in their namespaces behind the ruleset
//! `iperf-siri fleet-rules` prints (loaded with `nft -f`), and `iperf-siri -c` clients on two
//! links (the `FleetBed` of `mpudp`'s fleet test). Root only; elsewhere the test says why it
//! skips, and `MPUDP_REQUIRE_NETNS` (set by `.ci/run`) makes a missing tool a failure.
//!
//! Which server ran a client's test is read from the servers' own reports ("Accepted
//! connection from ADDR, port P"), P being the client's port in its JSON report.
//!
//! What it shows, each step through the CLI (the short tests of a step run at once): the tests
//! spread over the three; a drained
//! server (`,drained`) takes no new test; a killed server (`,dead`) is found by its running
//! clients at once (a stateless reset from the server that took its id: the client exits
//! with an error that says so, in well under a second), while a test on another server runs
//! to its end; new tests then go to the one server left.
#![allow(clippy::unwrap_used)]

mod common;

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use testbed::fleet::{nft_missing, FleetBed};
use testbed::Reap;

const BIN: &str = env!("CARGO_BIN_EXE_iperf-siri");
const NET: u8 = 95;

/// A server of the fleet: its process and every line it printed so far.
struct Server {
    process: Reap,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// `iperf-siri -s --fleet k/3` in backend `k`'s namespace, once it listens.
    fn start(bed: &FleetBed, k: usize, key: &str, secret: &str) -> Self {
        let fleet = format!("{k}/3");
        let args = ["-s", "--fleet", &fleet, "--fleet-secret", secret, "--key", key, "-i", "0", "--max-tests", "100"];
        let mut child = Command::new("ip")
            .args(["netns", "exec", bed.backend(k), BIN])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap()).lines();
        let lines = Arc::new(Mutex::new(Vec::new()));
        let l2 = lines.clone();
        std::thread::spawn(move || {
            for line in out.map_while(Result::ok) {
                l2.lock().unwrap().push(line);
            }
        });
        let s = Self { process: Reap(child), lines };
        let t = Instant::now();
        while !s.printed(|l| l.starts_with("Server listening on 5201")) {
            assert!(t.elapsed() < Duration::from_secs(10), "server {k} did not start");
            std::thread::sleep(Duration::from_millis(10));
        }
        s
    }

    fn printed(&self, f: impl Fn(&str) -> bool) -> bool {
        self.lines.lock().unwrap().iter().any(|l| f(l))
    }

    /// Whether this server accepted the test of the client on WiFi port `port`.
    fn ran(&self, port: u64) -> bool {
        let from = format!("Accepted connection from 10.{NET}.1.1, port {port} ");
        self.printed(|l| l.starts_with(&from))
    }
}

/// Runs `iperf-siri fleet-rules` for the servers' states (`""`, `",drained"`, `",dead"`) and
/// loads its output into the balancer.
fn rules(bed: &FleetBed, states: [&str; 3]) {
    let mut args = vec!["fleet-rules".to_string(), "--service".into(), format!("{}:5201", bed.service_ip())];
    args.extend(["--ids".into(), "3".into()]);
    for (k, st) in states.iter().enumerate() {
        args.extend(["--server".into(), format!("{k}={}{st}", bed.backend_ip(k))]);
    }
    let out = Command::new(BIN).args(&args).output().unwrap();
    assert!(out.status.success(), "fleet-rules: {}", String::from_utf8_lossy(&out.stderr));
    bed.balance(&String::from_utf8(out.stdout).unwrap()).expect("nft -f took the ruleset");
}

/// A client test of `requests` requests, spawned in the client's namespace, JSON out.
fn client(bed: &FleetBed, public: &str, requests: u32) -> Child {
    let n = requests.to_string();
    let args = ["-c", &bed.service_ip(), "--server-key", public, "-m", "c0@wifi,c1@cellular", "--requests", &n];
    let tail = ["--wait", "20ms", "--burst-gap", "2ms", "-i", "0", "-J"];
    Command::new("ip")
        .args(["netns", "exec", bed.client(), BIN])
        .args(args)
        .args(tail)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The client's WiFi port (its report's `start.connected`).
fn port_of(j: &Value) -> u64 {
    j["start"]["connected"][0]["local_port"].as_u64().unwrap()
}

/// The server that ran the test on `port`, waiting up to 10 s for its report line.
fn owner(servers: &[Option<Server>], port: u64) -> usize {
    let t = Instant::now();
    loop {
        if let Some(k) = servers.iter().position(|s| s.as_ref().is_some_and(|s| s.ran(port))) {
            return k;
        }
        assert!(t.elapsed() < Duration::from_secs(10), "no server reports the test from port {port}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `n` short tests at once, each run to its end: the server of each.
fn tests(bed: &FleetBed, public: &str, servers: &[Option<Server>], n: usize) -> Vec<usize> {
    let running: Vec<Child> = (0..n).map(|_| client(bed, public, 1)).collect();
    running
        .into_iter()
        .map(|c| {
            let out: Output = c.wait_with_output().unwrap();
            assert!(out.status.success(), "client: {}", String::from_utf8_lossy(&out.stderr));
            let j: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(j["end"]["delay"]["requests_answered"], 1, "{}", j["end"]);
            owner(servers, port_of(&j))
        })
        .collect()
}

#[test]
fn a_fleet_of_three_cli_servers_behind_the_cli_rules() {
    if let Some(why) = testbed::unavailable().or_else(nft_missing) {
        eprintln!("skipped: {why}");
        return;
    }
    let bed = FleetBed::new("fcli", NET, 3).expect("setting up the namespaces");
    let (key, public) = common::key();
    let secret = std::env::temp_dir().join(format!("iperf-siri-fleet-{}.hex", std::process::id()));
    std::fs::write(&secret, "5e".repeat(32)).unwrap();
    let secret_path = secret.to_str().unwrap().to_string();
    rules(&bed, ["", "", ""]);
    let mut servers: Vec<Option<Server>> = (0..3).map(|k| Some(Server::start(&bed, k, key, &secret_path))).collect();

    // Spread: 30 tests at once.
    let mut per = [0usize; 3];
    for k in tests(&bed, public, &servers, 30) {
        per[k] += 1;
    }
    eprintln!("tests per server: {per:?}");
    let most = 10.0 + 4.0 * (30.0f64 * 2.0 / 9.0).sqrt();
    assert!(per.iter().all(|&n| n > 0 && (n as f64) <= most), "spread: {per:?}");

    // Drained: server 2 takes no new test.
    rules(&bed, ["", "", ",drained"]);
    let after = tests(&bed, public, &servers, 15);
    assert!(after.iter().all(|&k| k != 2), "a new test on the drained server: {after:?}");

    // Killed: long tests run on servers 0 and 1 (started until each has one); server 1 is
    // killed and its id given to server 0.
    let mut long: [Option<(Child, u64)>; 2] = [None, None];
    let t = Instant::now();
    while long.iter().any(Option::is_none) {
        assert!(t.elapsed() < Duration::from_secs(30), "no long test on each of servers 0 and 1");
        // Its port: the server's report names the client's WiFi port; the client prints it
        // only at the end, so the port is found from the servers' new lines.
        let before: Vec<usize> =
            servers.iter().map(|s| s.as_ref().map_or(0, |s| s.lines.lock().unwrap().len())).collect();
        let mut c = client(&bed, public, 40);
        let found = wait_new_test(&servers, &before);
        match found {
            Some((k, port)) if k < 2 && long[k].is_none() => long[k] = Some((c, port)),
            _ => {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
    std::thread::sleep(Duration::from_millis(200));
    drop(servers[1].take());
    let killed = Instant::now();
    rules(&bed, ["", ",dead", ",drained"]);
    let (mut on_dead, _) = long[1].take().unwrap();
    let status = loop {
        if let Some(s) = on_dead.try_wait().unwrap() {
            break s;
        }
        assert!(killed.elapsed() < Duration::from_secs(10), "the dead server's client never learned it");
        std::thread::sleep(Duration::from_millis(5));
    };
    let learned = killed.elapsed();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut on_dead.stderr.take().unwrap(), &mut err).unwrap();
    eprintln!("the dead server's client exited after {} ms: {}", learned.as_millis(), err.trim());
    assert!(!status.success(), "a test cut short is a failure");
    assert!(err.to_lowercase().contains("reset"), "the client says its server reset it: {err}");
    // The other long test runs to its end on server 0.
    let (alive, _) = long[0].take().unwrap();
    let out = alive.wait_with_output().unwrap();
    assert!(out.status.success(), "client on server 0: {}", String::from_utf8_lossy(&out.stderr));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["end"]["delay"]["requests_answered"], 40, "{}", j["end"]);

    // New tests go to server 0 alone (1 dead, 2 drained).
    let last = tests(&bed, public, &servers, 5);
    assert!(last.iter().all(|&k| k == 0), "1 is dead and 2 drained: {last:?}");
    for s in servers.iter_mut().flatten() {
        let _ = s.process.0.kill();
    }
    let _ = std::fs::remove_file(&secret);
}

/// The first test a server reports after `before` (each server's line count then): its
/// server and the client's port; `None` after 5 s.
fn wait_new_test(servers: &[Option<Server>], before: &[usize]) -> Option<(usize, u64)> {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(5) {
        for (k, s) in servers.iter().enumerate() {
            let Some(s) = s else { continue };
            let lines = s.lines.lock().unwrap();
            let new = lines.iter().skip(before[k]);
            let from = format!("Accepted connection from 10.{NET}.1.1, port ");
            if let Some(port) =
                new.filter_map(|l| l.strip_prefix(&from)).find_map(|r| r.split(' ').next()?.parse().ok())
            {
                return Some((k, port));
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}
