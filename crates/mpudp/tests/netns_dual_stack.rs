//! A phone whose WiFi is IPv4-only and whose cellular network is IPv6-only, as an app runs:
//! without privilege (issue 33, parts 4 and 5). Two namespaces (root sets them up; elsewhere
//! the test says why it skips):
//!
//! ```text
//!  client ns (the app: uid 65534, no capability)        server ns (root)
//!  c0 10.N.1.1/24           <--veth-->  s0 10.N.1.2/24   lo 10.N.9.1, fd00:N:9::1
//!  c1 fd00:N:2::1/64        <--veth-->  s1 fd00:N:2::2/64
//! ```
//!
//! The server listens on both families and announces its IPv6 address. The client binds its
//! sockets to c0 and c1 by name (SO_BINDTODEVICE on a socket not yet bound to a device needs no
//! capability since Linux 5.7), starts on WiFi and sends Siri-like requests; the test takes c0
//! down mid-run; the client's driver sees it through netlink (no privilege either), its
//! cellular path joins the server's IPv6 address, and every request is answered intact.
#![allow(clippy::unwrap_used)]

mod common;

use mpudp::{Iface, Interface, MpListener, MpStream, Options};
use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};
use testbed::{Reap, Testbed};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const NET: u8 = 94;
const REQUESTS: usize = 30;
/// The user the client runs as (`nobody`).
const APP_UID: u32 = 65534;

#[test]
fn ipv4_wifi_to_ipv6_cellular_unprivileged() {
    if let Some(why) = testbed::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let bed = Testbed::dual_stack("mpudp-ds", NET).expect("setting up the namespaces");
    let (mut server, _server_out) = common::start_server(&bed.server, "dual_stack_peer", "MPUDP_DS_ROLE");
    let mut client = Reap(common::exec_as(&bed.client, Some(APP_UID), "dual_stack_peer", "MPUDP_DS_ROLE", "client"));
    let from_client = BufReader::new(client.0.stdout.take().unwrap());
    let started = Instant::now();
    let (mut down, mut done, mut uid, mut worst) = (false, false, None, None);
    let mut answered = 0;
    let mut v6_bytes = 0u64;
    for line in from_client.lines() {
        let line = line.unwrap();
        eprintln!("client: {line}");
        assert!(started.elapsed() < Duration::from_secs(120), "the run took too long");
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["uid", u] => uid = Some(u.parse::<u32>().unwrap()),
            ["answered", r, _ms] => {
                answered = r.parse().unwrap();
                if answered == 10 {
                    bed.set_link(0, false).unwrap();
                    down = true;
                }
            }
            ["worst", ms] => worst = Some(ms.parse::<f64>().unwrap()),
            ["ipv6", bytes] => v6_bytes = bytes.parse().unwrap(),
            ["done"] => done = true,
            _ => {}
        }
    }
    let status = client.0.wait().unwrap();
    assert!(status.success() && done, "client helper failed");
    assert_eq!(uid, Some(APP_UID), "the client ran unprivileged");
    assert!(down, "WiFi went down mid-run");
    assert_eq!(answered, REQUESTS, "every request answered");
    assert!(v6_bytes > 0, "the IPv6 subflow carried the requests after WiFi went");
    println!("dual-stack failover, unprivileged client: worst response after WiFi went {:.1} ms", worst.unwrap());
    let status = server.0.wait().unwrap();
    assert!(status.success(), "server helper failed");
}

/// The processes of `ipv4_wifi_to_ipv6_cellular_unprivileged`; does nothing without its
/// environment.
#[test]
#[ignore = "helper process of ipv4_wifi_to_ipv6_cellular_unprivileged"]
fn dual_stack_peer() {
    common::run_role("MPUDP_DS_ROLE", server, client);
}

async fn server() {
    let opts = Options::server()
        .identity(common::identity())
        .interface(Interface::unbound("0.0.0.0:0".parse().unwrap()))
        .interface(Interface::unbound("[::]:0".parse().unwrap()))
        .announce(format!("[fd00:{NET}:9::1]:5201").parse().unwrap());
    let l = MpListener::bind("0.0.0.0:5201".parse().unwrap(), opts).unwrap();
    println!("listening");
    let (s, _) = l.accept().await.unwrap();
    common::answer_requests(s).await;
}

async fn client() {
    // Who we are: the effective uid, from /proc.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap().split_whitespace().nth(2).unwrap().to_string();
    println!("uid {uid}");
    let opts = Options::phone()
        .server_key(common::identity().public_key())
        .interface(Interface::new("c0").kind(Iface::Wifi))
        .interface(Interface::new("c1").kind(Iface::Cellular).backup(true).ipv6(true));
    let mut s = MpStream::connect(format!("10.{NET}.9.1:5201"), opts).await.unwrap();
    let mut worst = Duration::ZERO;
    let mut resp = vec![0u8; 20_000];
    for r in 1..=REQUESTS {
        let mut req = vec![0u8; 2004];
        req[0] = r as u8;
        let t0 = Instant::now();
        s.write_all(&req).await.unwrap();
        tokio::time::timeout(Duration::from_secs(10), s.read_exact(&mut resp)).await.unwrap().unwrap();
        let took = t0.elapsed();
        assert!(resp.iter().enumerate().all(|(i, &b)| b == common::byte_at(r, i)), "response {r} intact");
        if r > 10 {
            worst = worst.max(took);
        }
        println!("answered {r} {:.2}", took.as_secs_f64() * 1e3);
        // A request every 100 ms: the link goes down between two of them, or during one.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let st = s.stats().unwrap();
    let v6: u64 = st.subflows.iter().filter(|f| f.remote.is_ipv6()).map(|f| f.counters.data_bytes_sent).sum();
    println!("ipv6 {v6}");
    println!("worst {:.2}", worst.as_secs_f64() * 1e3);
    s.shutdown().await.unwrap();
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).await.unwrap();
    println!("done");
}
