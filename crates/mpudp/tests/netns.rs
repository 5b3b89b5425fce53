//! Two hosts in two network namespaces joined by two veth pairs, set up by the test itself
//! (root only; elsewhere the test says why it skips). The client's sockets are bound to its two
//! veths with SO_BINDTODEVICE; the server has one address (on its loopback), reachable over
//! both links, as a phone reaches one server over WiFi and cellular.
//!
//! ```text
//!  client ns                           server ns
//!  c0 10.91.1.1/24  <--veth-->  s0 10.91.1.2/24
//!  c1 10.91.2.1/24  <--veth-->  s1 10.91.2.2/24      lo 10.91.9.1/32 (the server)
//! ```
//!
//! The test re-runs its own binary in each namespace (`ip netns exec`), as the ignored
//! helper `netns_peer`, and steers the client through stdin/stdout: handshake, join on the
//! second interface, 50 MB uploaded and hashed by the server, c0 taken down mid-transfer (the
//! transfer goes on over c1), brought back up (the client joins it again and sends on it).
#![allow(clippy::unwrap_used)]

mod common;

use mpudp::{Iface, Interface, MpStream, Options};
use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, Instant};
use testbed::{Reap, Testbed};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

const TOTAL_MB: usize = 50;
const SERVER: &str = "10.91.9.1:5201";

#[test]
fn two_interfaces_in_namespaces() {
    if let Some(why) = testbed::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let bed = Testbed::new("mpudp", 91).expect("setting up the namespaces");
    let (mut server, _server_out) = common::start_server(&bed.server, "netns_peer", "MPUDP_NETNS_ROLE");

    let mut client = Reap(common::exec(&bed.client, "netns_peer", "MPUDP_NETNS_ROLE", "client"));
    let mut to_client = client.0.stdin.take().unwrap();
    let from_client = BufReader::new(client.0.stdout.take().unwrap());
    let started = Instant::now();
    let (mut joined, mut down_at, mut up_at) = (false, None, None);
    let mut subflows = Vec::new();
    let mut hashes = None;
    let mut done = false;
    for line in from_client.lines() {
        let line = line.unwrap();
        eprintln!("client: {line}");
        assert!(started.elapsed() < Duration::from_secs(240), "the run took too long");
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["joined"] => joined = true,
            ["sent", mb] => {
                let mb: usize = mb.parse().unwrap();
                if mb == 10 {
                    bed.set_link(0, false).unwrap();
                    down_at = Some(Instant::now());
                }
                if mb == 25 {
                    bed.set_link(0, true).unwrap();
                    // Taking a link down flushes its routes; whoever configures the link (DHCP,
                    // here the test) installs them again.
                    bed.route(0).unwrap();
                    up_at = Some(Instant::now());
                }
            }
            ["waiting"] => {
                // The client pauses until the driver has seen the link return and rejoined.
                writeln!(to_client, "go").unwrap();
            }
            ["subflow", id, path, state, bytes] => {
                subflows.push((id.to_string(), path.to_string(), state.to_string(), bytes.parse::<u64>().unwrap()))
            }
            ["hashes", mine, theirs] => hashes = Some((mine.to_string(), theirs.to_string())),
            // Read on to the end: the harness still prints its summary.
            ["done"] => done = true,
            _ => {}
        }
    }
    let status = client.0.wait().unwrap();
    assert!(status.success() && done, "client helper failed");
    assert!(joined, "the second interface was joined");
    assert!(down_at.is_some() && up_at.is_some(), "the link went down and up during the transfer");
    let (mine, theirs) = hashes.expect("the client reported both hashes");
    assert_eq!(mine, theirs, "the server received the 50 MB intact");
    // Subflow 0 on c0 was closed when c0 went down; c1 carried the transfer; a new subflow on
    // c0 carried data after it came back.
    let on = |path: &'static str| subflows.iter().filter(move |s| s.1 == path);
    assert!(on("1").any(|s| s.3 > 1 << 20), "c1 carried data: {subflows:?}");
    assert!(on("0").any(|s| s.0 == "0" && s.2 == "Closed"), "subflow 0 closed with its link: {subflows:?}");
    assert!(on("0").any(|s| s.0 != "0" && s.3 > 1 << 20), "c0 used again after it came back: {subflows:?}");
    let status = server.0.wait().unwrap();
    assert!(status.success(), "server helper failed");
}

/// The processes of `two_interfaces_in_namespaces`; does nothing without its environment.
#[test]
#[ignore = "helper process of two_interfaces_in_namespaces"]
fn netns_peer() {
    common::run_role("MPUDP_NETNS_ROLE", server, client);
}

async fn server() {
    common::hashing_server(SERVER.parse().unwrap(), Options::new().scheduler("last-received")).await;
}

async fn client() {
    // Round-robin, so that both links share the paced upload (lowest-rtt would leave a rejoined
    // link in slow start idle while the other has room).
    let opts = common::client_options()
        .scheduler("round-robin")
        .interface(Interface::new("c0").kind(Iface::Wifi))
        .interface(Interface::new("c1").kind(Iface::Cellular))
        .monitor_interval(Duration::from_millis(50));
    let mut s = MpStream::connect(SERVER, opts).await.unwrap();
    established_on(&s, 1, false).await;
    println!("joined");
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let mut hash = ring::digest::Context::new(&ring::digest::SHA256);
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut chunk = vec![0u8; 1 << 20];
    for mb in 1..=TOTAL_MB {
        common::fill(&mut x, &mut chunk);
        hash.update(&chunk);
        s.write_all(&chunk).await.unwrap();
        // Paced (about 50 MB/s at most) so that the link events fall inside the transfer.
        tokio::time::sleep(Duration::from_millis(20)).await;
        println!("sent {mb}");
        if mb == 30 {
            // c0 came back at 25 MB: let the driver see it and rejoin before going on.
            println!("waiting");
            stdin.next_line().await.unwrap();
            established_on(&s, 0, true).await;
        }
    }
    s.shutdown().await.unwrap();
    let mut theirs = Vec::new();
    s.read_to_end(&mut theirs).await.unwrap();
    let mine = hash.finish();
    let st = s.stats().unwrap();
    for f in &st.subflows {
        println!("subflow {} {} {:?} {}", f.id, f.path.0, f.state, f.counters.data_bytes_sent);
    }
    println!("hashes {} {}", common::hex(mine.as_ref()), common::hex(&theirs));
    println!("done");
}

/// Waits (at most 5 s) for an established subflow on local path `path` (`rejoined`: not the
/// first subflow).
async fn established_on(s: &MpStream, path: u8, rejoined: bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let found = |st: mpudp::ConnStats| {
        st.subflows.iter().any(|f| {
            f.path == mpcore::PathId(path) && (!rejoined || f.id != 0) && f.state == mpcore::SubflowState::Established
        })
    };
    while !s.stats().is_some_and(found) {
        assert!(Instant::now() < deadline, "no established subflow on path {path}: {:#?}", s.stats());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
