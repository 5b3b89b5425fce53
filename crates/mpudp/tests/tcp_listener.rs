//! A server's TCP listener (PROTOCOL.md §4.11) on loopback: it listens on its UDP port
//! number, closes a stream that does not start with the preamble, and counts it. The carrier
//! end to end, with UDP dropped by a firewall, is `netns_tcp` (root).
#![allow(clippy::unwrap_used)]

use mpudp::{MpListener, Options, ServerIdentity};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

fn listener() -> MpListener {
    let id = ServerIdentity::from_seed(&[9; 32]).unwrap();
    MpListener::bind("127.0.0.1:0".parse().unwrap(), Options::server().identity(id)).unwrap()
}

/// Waits until the listener's path counts `f` true (the driver runs on another task, or thread).
fn wait_for(l: &MpListener, f: impl Fn(&mpudp::IoCounters) -> bool) -> mpudp::IoCounters {
    let t = Instant::now();
    loop {
        let io = l.endpoint().paths()[0].io;
        if f(&io) || t.elapsed() > Duration::from_secs(5) {
            return io;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_without_the_preamble_is_closed_and_counted() {
    let l = listener();
    let addr = l.local_addr();
    let io = tokio::task::spawn_blocking(move || {
        let mut s = std::net::TcpStream::connect(addr).expect("the server listens for TCP on its UDP port");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut b = [0u8; 16];
        // Closed by the server: end of stream (or a reset), never an answer.
        let n = s.read(&mut b).unwrap_or(0);
        assert_eq!(n, 0, "the server answered a stream that is not ours");
        let io = wait_for(&l, |io| io.tcp_refused >= 1);
        drop(l);
        io
    })
    .await
    .unwrap();
    assert_eq!((io.tcp_opened, io.tcp_refused), (1, 1), "{io:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_with_the_preamble_and_a_bad_record_is_dropped_as_a_datagram() {
    let l = listener();
    let addr = l.local_addr();
    tokio::task::spawn_blocking(move || {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        // The preamble, then a record of 5 bytes that is no packet of ours: the endpoint drops
        // it as it would a UDP datagram, and the carrier stays open.
        s.write_all(b"MPU\x02\x00\x05hello").unwrap();
        let drops = {
            let t = Instant::now();
            loop {
                let d = l.drops();
                if d.malformed + d.unexpected + d.unknown_cid >= 1 || t.elapsed() > Duration::from_secs(5) {
                    break d;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        };
        assert!(drops.malformed + drops.unexpected + drops.unknown_cid >= 1, "{drops:?}");
        let io = l.endpoint().paths()[0].io;
        assert_eq!((io.tcp_opened, io.tcp_refused, io.datagrams_received), (1, 0, 1), "{io:?}");
        // A record of length 0 is an error: the carrier closes.
        s.write_all(&[0, 0]).unwrap();
        let io = wait_for(&l, |io| io.tcp_closed >= 1);
        assert_eq!(io.tcp_closed, 1, "{io:?}");
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partial_record_does_not_keep_the_driver_busy() {
    // The preamble and a record's length (16), then nothing: the driver waits
    // for the rest (the kernel wakes it), it does not poll the carrier round after round.
    let l = listener();
    let addr = l.local_addr();
    tokio::task::spawn_blocking(move || {
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.write_all(b"MPU\x02\x00\x10").unwrap();
        wait_for(&l, |io| io.tcp_opened >= 1);
        std::thread::sleep(Duration::from_millis(100));
        let before = l.endpoint().driver_wakeups();
        std::thread::sleep(Duration::from_millis(500));
        let woke = l.endpoint().driver_wakeups() - before;
        assert!(woke < 20, "the driver woke {woke} times in 0.5 s over a partial record");
        // The rest comes: 16 bytes, no packet of ours, dropped as a datagram.
        s.write_all(&[0x55; 16]).unwrap();
        let io = wait_for(&l, |io| io.datagrams_received >= 1);
        assert_eq!(io.datagrams_received, 1, "{io:?}");
    })
    .await
    .unwrap();
}
