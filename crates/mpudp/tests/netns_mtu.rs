//! Path MTU discovery against a link whose MTU is below the largest datagram allowed, in two
//! network namespaces (root only; elsewhere the test says why it skips). The client's `c0`
//! and the server's `s0` have an MTU of 1300 (1272 bytes of UDP payload); the endpoints allow
//! 1452. The search's probes above 1272 are refused by the client's own kernel (EMSGSIZE, or
//! EINVAL for a GSO batch whose segment size is the probe's), and the driver then sends the
//! batch's datagrams one by one: only the probe is lost, never the data packet beside it.
//! Layout as in `tests/netns.rs` (the `testbed` crate), on `10.94.*`; only `c0` is used.
#![allow(clippy::unwrap_used)]

mod common;

use mpudp::{Interface, MpStream, Options};
use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};
use testbed::{ip, Reap, Testbed};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TOTAL_MB: usize = 30;
const SERVER: &str = "10.94.9.1:5201";
/// The largest UDP payload under an MTU of 1300 (IPv4 and UDP headers: 28 bytes).
const PAYLOAD: u64 = 1272;

#[test]
fn probes_above_the_interface_mtu_cost_no_data() {
    if let Some(why) = testbed::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let bed = Testbed::new("mpmtu", 94).expect("setting up the namespaces");
    ip(&format!("-n {} link set c0 mtu 1300", bed.client)).unwrap();
    ip(&format!("-n {} link set s0 mtu 1300", bed.server)).unwrap();
    let (mut server, _server_out) = common::start_server(&bed.server, "mtu_peer", "MPUDP_MTU_ROLE");
    let mut client = Reap(common::exec(&bed.client, "mtu_peer", "MPUDP_MTU_ROLE", "client"));
    let from_client = BufReader::new(client.0.stdout.take().unwrap());
    let started = Instant::now();
    let (mut report, mut hashes, mut done) = (None, None, false);
    for line in from_client.lines() {
        let line = line.unwrap();
        eprintln!("client: {line}");
        assert!(started.elapsed() < Duration::from_secs(120), "the run took too long");
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["subflow", max, lost, refused] => {
                report =
                    Some((max.parse::<u64>().unwrap(), lost.parse::<u64>().unwrap(), refused.parse::<u64>().unwrap()))
            }
            ["hashes", mine, theirs] => hashes = Some((mine.to_string(), theirs.to_string())),
            ["done"] => done = true,
            _ => {}
        }
    }
    assert!(client.0.wait().unwrap().success() && done, "client helper failed");
    let (mine, theirs) = hashes.expect("the client reported both hashes");
    assert_eq!(mine, theirs, "the server received the upload intact");
    let (max, lost, refused) = report.expect("the client reported its subflow");
    assert!(refused > 0, "the kernel refused some probes (the case under test)");
    assert!((PAYLOAD - 20..=PAYLOAD).contains(&max), "the search ended at {max} bytes, the path takes {PAYLOAD}");
    // A loaded machine (CI's) may stall the receiver until its socket's buffer overflows: those
    // losses are the receiver's, counted by its namespace's kernel (once per GRO batch, which
    // holds many datagrams, so the two counts cannot be compared). Without an overflow, any
    // loss is a data packet lost beside a refused probe.
    let overflows = udp_rcvbuf_errors(&bed.server);
    assert!(lost == 0 || overflows > 0, "{lost} data packets lost beside the refused probes");
    if overflows > 0 {
        println!("note: the receiver's socket overflowed {overflows} times (a stalled receiver); {lost} packets lost");
    }
    assert!(server.0.wait().unwrap().success(), "server helper failed");
}

/// `Udp: RcvbufErrors` of namespace `ns` (/proc/net/snmp): datagrams its kernel dropped for a
/// full socket receive buffer.
fn udp_rcvbuf_errors(ns: &str) -> u64 {
    let out = std::process::Command::new("ip").args(["netns", "exec", ns, "cat", "/proc/net/snmp"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut udp = text.lines().filter(|l| l.starts_with("Udp: "));
    let (names, values) = (udp.next().unwrap(), udp.next().unwrap());
    let k = names.split_whitespace().position(|n| n == "RcvbufErrors").unwrap();
    values.split_whitespace().nth(k).unwrap().parse().unwrap()
}

/// The processes of `probes_above_the_interface_mtu_cost_no_data`; does nothing without its
/// environment.
#[test]
#[ignore = "helper process of probes_above_the_interface_mtu_cost_no_data"]
fn mtu_peer() {
    common::run_role("MPUDP_MTU_ROLE", server, client);
}

async fn server() {
    common::hashing_server(SERVER.parse().unwrap(), Options::new()).await;
}

async fn client() {
    let opts = common::client_options().interface(Interface::new("c0"));
    assert_eq!(opts.config().transport.max_datagram_size, 1452, "the default allows more than the link");
    let mut s = MpStream::connect(SERVER, opts).await.unwrap();
    let mut hash = ring::digest::Context::new(&ring::digest::SHA256);
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut chunk = vec![0u8; 1 << 20];
    for _ in 0..TOTAL_MB {
        common::fill(&mut x, &mut chunk);
        hash.update(&chunk);
        s.write_all(&chunk).await.unwrap();
        // Paced (about 100 MB/s at most): a receiver that falls behind would lose packets
        // for reasons of its own.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    s.shutdown().await.unwrap();
    let st = s.stats().unwrap();
    let refused: u64 = s.paths().iter().map(|p| p.io.send_errors).sum();
    let mut theirs = Vec::new();
    s.read_to_end(&mut theirs).await.unwrap();
    let f = &st.subflows[0];
    println!("subflow {} {} {refused}", f.max_datagram, f.counters.packets_lost);
    println!("hashes {} {}", common::hex(hash.finish().as_ref()), common::hex(&theirs));
    println!("done");
}
