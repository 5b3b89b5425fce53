//! The phone's networks change under a running connection, in two network namespaces (root
//! only; elsewhere the test says why it skips); the driver follows the kernel's netlink events:
//!
//! - the client's `c0` has no address when the endpoint starts: it is waited for, not an
//!   error, and the connection starts on `c1`; `c0` gets its address 2 s later and is joined;
//! - mid-transfer, `c0` gets a second address on another subnet and loses the first (a phone
//!   moving to another WiFi network, or a DHCP renumbering): the driver opens a socket on the
//!   new address, the client joins from it, the old path is removed (REMOVE_ADDR to the server);
//! - an interface the application added before it existed (`c2`) appears mid-transfer, with
//!   its address, and is joined;
//! - the 40 MB upload arrives intact (SHA-256), and the new address and `c2` carried data.
//!
//! Layout as in `tests/netns.rs` (the `testbed` crate), plus `10.92.3.1/24` on `c0` later.
#![allow(clippy::unwrap_used)]

mod common;

use mpudp::{Iface, Interface, MpEndpoint, MpStream, Options};
use std::io::{BufRead, BufReader, Write};
use std::time::{Duration, Instant};
use testbed::{ip, Reap, Testbed};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

const TOTAL_MB: usize = 40;
const NET: u8 = 92;
const SERVER: &str = "10.92.9.1:5201";
const NEW_ADDR: &str = "10.92.3.1";

#[test]
fn an_address_that_comes_late_and_one_that_changes_mid_transfer() {
    if let Some(why) = testbed::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let bed = Testbed::new("mpren", NET).expect("setting up the namespaces");
    let (c, s) = (bed.client.clone(), bed.server.clone());
    // c0 starts without an address; the server can route back to the later one.
    ip(&format!("-n {c} addr flush dev c0")).unwrap();
    ip(&format!("-n {s} route add 10.{NET}.3.0/24 dev s0")).unwrap();
    let (mut server, _server_out) = common::start_server(&s, "renumber_peer", "MPUDP_RENUMBER_ROLE");
    let mut client = Reap(common::exec(&c, "renumber_peer", "MPUDP_RENUMBER_ROLE", "client"));
    let mut to_client = client.0.stdin.take().unwrap();
    let from_client = BufReader::new(client.0.stdout.take().unwrap());
    let started = Instant::now();
    let (mut first_c0, mut renumbered, mut appeared) = (None, false, false);
    let (mut subflows, mut paths, mut hashes, mut done) = (Vec::new(), Vec::new(), None, false);
    for line in from_client.lines() {
        let line = line.unwrap();
        eprintln!("client: {line}");
        assert!(started.elapsed() < Duration::from_secs(240), "the run took too long");
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["connected"] => {
                // The endpoint is up, on c1 alone: c0 gets its address 2 s later.
                std::thread::sleep(Duration::from_secs(2));
                ip(&format!("-n {c} addr add 10.{NET}.1.1/24 dev c0")).unwrap();
                bed.route(0).unwrap();
                writeln!(to_client, "go").unwrap();
            }
            ["joined", "c0", id] => first_c0 = Some(id.to_string()),
            ["sent", "10"] => {
                ip(&format!("-n {c} addr add {NEW_ADDR}/24 dev c0")).unwrap();
                ip(&format!("-n {c} addr del 10.{NET}.1.1/24 dev c0")).unwrap();
                bed.route(0).unwrap();
                renumbered = true;
            }
            ["sent", "20"] => {
                // c2 appears: a new link with its address and a route to the server.
                ip(&format!("link add c2 netns {c} type veth peer name s2 netns {s}")).unwrap();
                ip(&format!("-n {s} addr add 10.{NET}.4.2/24 dev s2")).unwrap();
                ip(&format!("-n {s} link set s2 up")).unwrap();
                ip(&format!("-n {c} addr add 10.{NET}.4.1/24 dev c2")).unwrap();
                ip(&format!("-n {c} link set c2 up")).unwrap();
                ip(&format!("-n {c} route replace 10.{NET}.9.1/32 dev c2 metric 12")).unwrap();
                appeared = true;
            }
            // c2's link fails: the driver watches the link of a device that appeared late too.
            ["sent", "30"] => ip(&format!("-n {c} link set c2 down")).unwrap(),
            ["subflow", id, path, state, bytes] => subflows.push((
                id.to_string(),
                path.parse::<usize>().unwrap(),
                state.to_string(),
                bytes.parse::<u64>().unwrap(),
            )),
            ["path", dev, addr, removed, up] => {
                paths.push((dev.to_string(), addr.to_string(), *removed == "true", up.to_string()))
            }
            ["hashes", mine, theirs] => hashes = Some((mine.to_string(), theirs.to_string())),
            ["done"] => done = true,
            _ => {}
        }
    }
    let status = client.0.wait().unwrap();
    assert!(status.success() && done, "client helper failed");
    let first_c0 = first_c0.expect("c0 was joined once it got its address");
    assert!(renumbered && appeared);
    let (mine, theirs) = hashes.expect("the client reported both hashes");
    assert_eq!(mine, theirs, "the server received the 40 MB intact");
    // c0's first address is no live path (its slot may have gone to c2); the subflow from it
    // closed; c0's new address is a path that carried data.
    let live = |addr: &str| paths.iter().position(|p| p.1.starts_with(addr) && !p.2);
    assert!(live(&format!("10.{NET}.1.1:")).is_none(), "c0's first address still in use: {paths:?}");
    let new = live(&format!("{NEW_ADDR}:")).expect("a path on c0's new address");
    let carried = subflows.iter().filter(|s| s.1 == new).map(|s| s.3).sum::<u64>();
    assert!(carried > 1 << 20, "the new address carried data: {subflows:?}");
    assert!(
        subflows.iter().any(|s| s.0 == first_c0 && s.2 == "Closed"),
        "the old address's subflow closed: {subflows:?}"
    );
    let c2 = paths.iter().position(|p| p.0 == "c2").expect("a path on c2");
    let carried = subflows.iter().filter(|s| s.1 == c2).map(|s| s.3).sum::<u64>();
    assert!(carried > 1 << 20, "c2 carried data once it appeared: {subflows:?}");
    assert!(paths[c2].3 == "false", "c2's link seen down: {paths:?}");
    assert!(
        subflows.iter().filter(|s| s.1 == c2).all(|s| s.2 == "Closed"),
        "c2's subflow closed with its link: {subflows:?}"
    );
    assert!(server.0.wait().unwrap().success(), "server helper failed");
}

/// The processes of the test above; does nothing without its environment.
#[test]
#[ignore = "helper process of an_address_that_comes_late_and_one_that_changes_mid_transfer"]
fn renumber_peer() {
    common::run_role("MPUDP_RENUMBER_ROLE", server, client);
}

async fn server() {
    common::hashing_server(SERVER.parse().unwrap(), Options::server()).await;
}

async fn client() {
    // Fullmesh with round-robin, so that every path carries part of the paced upload. The
    // monitor interval is long: the driver must follow the kernel's events, not poll.
    let opts = common::client_options()
        .scheduler("round-robin")
        .interface(Interface::new("c0").kind(Iface::Wifi))
        .interface(Interface::new("c1").kind(Iface::Cellular))
        .monitor_interval(Duration::from_secs(3600));
    let ep = MpEndpoint::client(opts).unwrap();
    // c2 does not exist yet: it is waited for.
    ep.add_interface(Interface::new("c2").kind(Iface::Wired)).unwrap();
    let mut s = ep.connect(SERVER.parse().unwrap()).await.unwrap();
    println!("connected");
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    stdin.next_line().await.unwrap();
    let id = established_on(&s, "10.92.1.1:").await;
    println!("joined c0 {id}");
    let mut hash = ring::digest::Context::new(&ring::digest::SHA256);
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut chunk = vec![0u8; 1 << 20];
    for mb in 1..=TOTAL_MB {
        common::fill(&mut x, &mut chunk);
        hash.update(&chunk);
        s.write_all(&chunk).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        println!("sent {mb}");
        if mb == 15 {
            // Renumbered at 10 MB: the rest goes over the new address too.
            established_on(&s, "10.92.3.1:").await;
            println!("joined new");
        }
        if mb == 25 {
            // c2 appeared at 20 MB.
            established_on(&s, "10.92.4.1:").await;
            println!("joined c2");
        }
    }
    s.shutdown().await.unwrap();
    let mut theirs = Vec::new();
    s.read_to_end(&mut theirs).await.unwrap();
    let mine = hash.finish();
    for f in &s.stats().unwrap().subflows {
        println!("subflow {} {} {:?} {}", f.id, f.path.0, f.state, f.counters.data_bytes_sent);
    }
    for p in s.paths() {
        println!("path {} {} {} {}", p.device.as_deref().unwrap_or("-"), p.addr, p.removed, p.up);
    }
    println!("hashes {} {}", common::hex(mine.as_ref()), common::hex(&theirs));
    println!("done");
}

/// Waits (at most 10 s) for an established subflow on the path bound to an address starting
/// with `addr`; its number.
async fn established_on(s: &MpStream, addr: &str) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let paths = s.paths();
        let path = paths.iter().position(|p| !p.removed && p.addr.to_string().starts_with(addr));
        let st = s.stats().unwrap();
        let up = |p: usize| {
            st.subflows.iter().find(|f| usize::from(f.path.0) == p && f.state == mpcore::SubflowState::Established)
        };
        if let Some(f) = path.and_then(up) {
            return f.id;
        }
        assert!(Instant::now() < deadline, "no established subflow from {addr}: {paths:#?} {st:#?}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
