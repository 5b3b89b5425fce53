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

const BIN: &str = env!("CARGO_BIN_EXE_iperf-siri");

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(2) == Some("0")))
        .unwrap_or(false)
}

fn ip(args: &str) -> Result<(), String> {
    let out = Command::new("ip").args(args.split_whitespace()).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {args}: {}", String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// The namespaces and links; deleted on drop.
struct Testbed {
    client: String,
    server: String,
}

impl Testbed {
    fn new() -> Result<Self, String> {
        let id = std::process::id();
        let t = Testbed { client: format!("isiri-c{id}"), server: format!("isiri-s{id}") };
        let (c, s) = (&t.client, &t.server);
        ip(&format!("netns add {c}"))?;
        ip(&format!("netns add {s}"))?;
        for n in [c, s] {
            ip(&format!("-n {n} link set lo up"))?;
        }
        for k in 0..2 {
            ip(&format!("link add c{k} netns {c} type veth peer name s{k} netns {s}"))?;
            ip(&format!("-n {c} addr add 10.93.{}.1/24 dev c{k}", k + 1))?;
            ip(&format!("-n {s} addr add 10.93.{}.2/24 dev s{k}", k + 1))?;
            ip(&format!("-n {c} link set c{k} up"))?;
            ip(&format!("-n {s} link set s{k} up"))?;
            ip(&format!("-n {c} route replace 10.93.9.1/32 dev c{k} metric {}", 10 + k))?;
        }
        ip(&format!("-n {s} addr add 10.93.9.1/32 dev lo"))?;
        Ok(t)
    }

    fn spawn(&self, ns: &str, args: &[&str]) -> Child {
        Command::new("ip")
            .args(["netns", "exec", ns, BIN])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        let _ = ip(&format!("netns del {}", self.client));
        let _ = ip(&format!("netns del {}", self.server));
    }
}

struct Reap(Child);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn two_interfaces_in_namespaces_survive_wifi_failing() {
    if !is_root() {
        eprintln!("skipped: creating network namespaces and veth pairs needs root");
        return;
    }
    if Command::new("ip").arg("-V").output().is_err() {
        eprintln!("skipped: iproute2's `ip` is not installed");
        return;
    }
    let bed = Testbed::new().expect("setting up the namespaces");
    // `-B`: the server answers from the address the client connected to. A socket on the
    // wildcard address would answer from the outgoing link's address instead (the driver
    // does not yet pick the source with IP_PKTINFO), which the client does not know.
    let mut server =
        Reap(bed.spawn(&bed.server, &["-s", "-B", "10.93.9.1", "-1", "-i", "0", "--scheduler", "last-received"]));
    let mut lines = BufReader::new(server.0.stdout.take().unwrap()).lines();
    assert!(
        lines.by_ref().map_while(Result::ok).any(|l| l.starts_with("Server listening on 5201")),
        "the server did not start"
    );
    std::thread::spawn(move || for _ in lines {});

    let started = Instant::now();
    let client = bed.spawn(
        &bed.client,
        &[
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
    let failed_at = started.elapsed().as_secs_f64();
    ip(&format!("-n {} link set c0 down", bed.client)).unwrap();
    let out = client.wait_with_output().unwrap();
    assert!(out.status.success(), "client: {}", String::from_utf8_lossy(&out.stderr));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    let end = &j["end"];
    assert_eq!(end["delay"]["requests_answered"], 3, "{end}");
    let ifs = end["interfaces"].as_array().unwrap();
    assert_eq!((ifs[0]["name"].as_str(), ifs[1]["name"].as_str()), (Some("c0"), Some("c1")));
    assert_eq!(ifs[0]["up"], false, "the driver saw c0 go down");
    assert!(ifs[1]["packets_sent"].as_u64().unwrap() > 0 && ifs[1]["packets_received"].as_u64().unwrap() > 0);
    // Break-before-make: nothing crossed c1 before the failure (the client started after
    // `started`, so its clock is behind ours).
    let first = end["cellular"]["first_packet_s"].as_f64().unwrap();
    assert!(first > failed_at - 0.3, "c1's first packet at {first:.3} s, WiFi failed at {failed_at:.3} s");
    assert!(end["cellular"]["energy_j"].as_f64().unwrap() > 0.0);
    assert!(wait(server.0.try_wait(), &mut server.0), "the one-off server exits after the test");
}

fn wait(first: std::io::Result<Option<std::process::ExitStatus>>, c: &mut Child) -> bool {
    if let Ok(Some(s)) = first {
        return s.success();
    }
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(10) {
        if let Ok(Some(s)) = c.try_wait() {
            return s.success();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}
