//! The fleet balancer's cost per packet (issue 38): the nftables ruleset `mpudp::fleet` writes
//! (a stateless rewrite by the routing byte, connection tracking off) against plain IP
//! forwarding through the same namespace. A client namespace sends UDP datagrams as fast as
//! one core can (`send` in a loop, short headers with every routing byte in turn) through the
//! balancer namespace to one backend, which counts what arrives; on veths the forwarding runs
//! in the sender's softirq, so the sender's core pays for it and the delivered rate falls by
//! exactly the balancer's work. Rows: 64- and 1,200-byte datagrams; medians of rounds that
//! alternate the two setups; the difference in ns per packet.
//!
//! Root only (elsewhere, and without `nft`, it says why and stops). Run:
//! `cargo bench -p mp-benches --bench balancer` (5 rounds of 2 s per setup and size); under
//! `cargo test`, one round of 0.2 s.

use mpudp::fleet::{Backend, Balancer};
use std::io::{BufRead, BufReader, Write};
use std::net::UdpSocket;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use testbed::fleet::FleetBed;

/// Sends `size`-byte datagrams to `to` for `secs`; prints how many.
fn blast(to: &str, secs: f64, size: usize) {
    let s = UdpSocket::bind("0.0.0.0:0").expect("a socket");
    s.connect(to).expect("a route");
    let mut d = vec![0u8; size];
    d[0] = 0x40;
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut sent = 0u64;
    'outer: loop {
        for _ in 0..256 {
            d[1] = sent as u8;
            if s.send(&d).is_ok() {
                sent += 1;
            }
        }
        if Instant::now() >= end {
            break 'outer;
        }
    }
    println!("sent {sent}");
}

/// Counts the datagrams arriving on port 5201 until its standard input closes.
fn sink() {
    let s = UdpSocket::bind("0.0.0.0:5201").expect("port 5201");
    s.set_read_timeout(Some(Duration::from_millis(20))).expect("a timeout");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    std::thread::spawn(move || {
        let mut line = String::new();
        while std::io::stdin().read_line(&mut line).is_ok_and(|n| n > 0) {}
        flag.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    println!("ready");
    let _ = std::io::stdout().flush();
    let mut buf = [0u8; 2048];
    let mut got = 0u64;
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        if s.recv(&mut buf).is_ok() {
            got += 1;
        }
    }
    println!("received {got}");
}

/// This binary in namespace `ns` with `args`.
fn in_ns(ns: &str, args: &[&str]) -> std::process::Child {
    Command::new("ip")
        .args(["netns", "exec", ns])
        .arg(std::env::current_exe().expect("this binary"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("ip netns exec")
}

fn number(line: &str) -> u64 {
    line.split_whitespace().last().and_then(|w| w.parse().ok()).unwrap_or(0)
}

/// One round: datagrams per second delivered to the backend.
fn round(bed: &FleetBed, to: &str, secs: f64, size: usize) -> f64 {
    let mut sink = in_ns(bed.backend(0), &["--sink"]);
    let mut out = BufReader::new(sink.stdout.take().expect("piped"));
    let mut line = String::new();
    while line.trim() != "ready" {
        line.clear();
        if out.read_line(&mut line).unwrap_or(0) == 0 {
            panic!("the sink ended");
        }
    }
    let blaster = in_ns(bed.client(), &["--blast", to, &secs.to_string(), &size.to_string()]);
    let sent = blaster.wait_with_output().expect("the sender");
    assert!(number(&String::from_utf8_lossy(&sent.stdout)) > 0, "nothing sent");
    std::thread::sleep(Duration::from_millis(100));
    drop(sink.stdin.take());
    line.clear();
    let _ = out.read_line(&mut line);
    let _ = sink.wait();
    number(&line) as f64 / secs
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(k) = args.iter().position(|a| a == "--blast") {
        let (to, secs, size) = (&args[k + 1], args[k + 2].parse().unwrap_or(1.0), args[k + 3].parse().unwrap_or(64));
        return blast(to, secs, size);
    }
    if args.iter().any(|a| a == "--sink") {
        return sink();
    }
    let why = testbed::unavailable().or_else(testbed::fleet::nft_missing);
    if let Some(why) = why {
        println!("balancer bench skipped: {why}");
        return;
    }
    let full = args.iter().any(|a| a == "--bench");
    let (rounds, secs) = if full { (5, 2.0) } else { (1, 0.2) };
    let bed = FleetBed::new("bb", 95, 1).expect("the namespaces");
    // Plain forwarding sends to the backend's own address, through the same balancer.
    testbed::ip(&format!("-n {} route add {}/32 via 10.95.1.2 dev c0", bed.client(), bed.backend_ip(0)))
        .expect("a route");
    // Three ids, one live server: every routing byte goes to backend 0 through the full maps.
    let b = |id, alive| Backend { id, addr: bed.backend_ip(0).parse().expect("an address"), accepting: alive, alive };
    let mut backends = vec![b(0, true), b(1, false), b(2, false)];
    backends[1].addr = "10.95.11.2".parse().expect("an address");
    backends[2].addr = "10.95.12.2".parse().expect("an address");
    let service = format!("{}:5201", bed.service_ip());
    let rules = Balancer {
        service: service.parse().expect("an address"),
        servers: 3,
        backends,
        table: "mpudp_fleet".into(),
        tcp_base: Some(6000),
    }
    .nft_ruleset()
    .expect("a ruleset");
    let direct = format!("{}:5201", bed.backend_ip(0));
    let empty = "table ip mpudp_fleet\ndelete table ip mpudp_fleet\n";
    println!("| datagram | plain forwarding (kpps) | balancer rules (kpps) | ratio | balancer's cost (ns/packet) |");
    println!("|---|---|---|---|---|");
    for size in [64usize, 1_200] {
        let (mut plain, mut ruled) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            bed.balance(empty).expect("no ruleset");
            plain.push(round(&bed, &direct, secs, size));
            bed.balance(&rules).expect("the ruleset");
            ruled.push(round(&bed, &service, secs, size));
        }
        let (p, r) = (median(plain), median(ruled));
        let cost = if p > 0.0 && r > 0.0 { 1e9 / r - 1e9 / p } else { f64::NAN };
        println!("| {size} B | {:.0} | {:.0} | {:.2} | {cost:.0} |", p / 1e3, r / 1e3, r / p);
    }
}
