//! A server spread over cores (issue 19): `MpListener::bind_cores` runs one endpoint per core
//! on the same address, and the kernel steers every datagram to the core that owns its
//! connection, joins from the client's second address included. Loopback, two client paths.
#![allow(clippy::unwrap_used)]

use mpudp::{Interface, MpEndpoint, MpListener, Options, PathManager, ServerIdentity, SubflowState};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn identity() -> ServerIdentity {
    ServerIdentity::from_seed(&[7; 32]).unwrap()
}

#[tokio::test]
async fn connections_spread_over_cores_and_every_packet_finds_its_core() {
    let l = MpListener::bind_cores("127.0.0.1:0".parse().unwrap(), Options::server().identity(identity()), 2).unwrap();
    let addr = l.local_addr();
    assert_eq!(l.endpoints().len(), 2);
    assert!(l.endpoints().iter().all(|e| e.local_addr() == addr), "both cores on one address");
    let (done_tx, mut done_rx) = tokio::sync::mpsc::channel::<()>(1);
    let l = std::sync::Arc::new(l);
    let l2 = l.clone();
    tokio::spawn(async move {
        while let Ok((s, _)) = l2.accept().await {
            let done = done_tx.clone();
            tokio::spawn(async move {
                let (mut r, mut w) = s.into_split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
                let _ = w.shutdown().await;
                drop(done);
            });
        }
    });
    let opts = Options::new()
        .server_key(identity().public_key())
        .path_manager(PathManager::Fullmesh)
        .interface(Interface::unbound("127.0.0.1:0".parse().unwrap()))
        .interface(Interface::unbound("127.0.0.2:0".parse().unwrap()));
    let ep = MpEndpoint::client(opts).unwrap();
    let mut tasks = Vec::new();
    for i in 0..16u8 {
        let ep = ep.clone();
        tasks.push(tokio::spawn(async move {
            let mut s = ep.connect(addr).await.unwrap();
            let msg: Vec<u8> = (0..200_000u32).map(|k| (k as u8) ^ i).collect();
            // Both subflows established: the join from 127.0.0.2 found the owning core.
            let t0 = std::time::Instant::now();
            loop {
                let st = s.stats().unwrap();
                let up = st.subflows.iter().filter(|f| f.state == SubflowState::Established).count();
                if up == 2 {
                    break;
                }
                assert!(t0.elapsed() < Duration::from_secs(5), "connection {i}: the join never completed: {up} up");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            s.write_all(&msg).await.unwrap();
            s.shutdown().await.unwrap();
            let mut back = Vec::new();
            s.read_to_end(&mut back).await.unwrap();
            assert!(back == msg, "connection {i}: the echo differs");
            let st = s.stats().unwrap();
            st.subflows.iter().map(|f| f.counters.packets_received).collect::<Vec<_>>()
        }));
    }
    let mut per_core = [0usize; 2];
    for (k, e) in l.endpoints().iter().enumerate() {
        per_core[k] = e.live_connections();
    }
    for t in tasks {
        let received = tokio::time::timeout(Duration::from_secs(30), t).await.unwrap().unwrap();
        assert!(received.iter().all(|&n| n > 0), "every subflow carried packets back: {received:?}");
    }
    let counts: Vec<usize> = l.endpoints().iter().map(|e| e.handshake_counters().answered as usize).collect();
    println!("connections answered per core: {counts:?} (live when sampled: {per_core:?})");
    assert_eq!(counts.iter().sum::<usize>(), 16, "every connection answered once");
    assert!(counts.iter().all(|&c| c > 0), "both cores took connections: {counts:?}");
    let d = l.drops();
    assert_eq!(
        (d.unknown_cid, d.unknown_token, d.bad_cookie),
        (0, 0, 0),
        "no datagram reached a core not its own: {}",
        d.summary()
    );
    // The kernel steers almost every datagram: only those of a GSO batch (loopback) or GRO
    // batch that mixed connections of both cores are handed over in user space.
    let io: Vec<_> = l.endpoints().iter().flat_map(|e| e.paths()).map(|p| p.io).collect();
    let forwarded: u64 = io.iter().map(|c| c.forwarded).sum();
    let received: u64 = io.iter().map(|c| c.datagrams_received).sum();
    println!("datagrams handed between cores: {forwarded} of {received}");
    assert!(forwarded * 5 < received, "the kernel steered most datagrams: {forwarded} of {received} handed over");
    let _ = done_rx.try_recv();
}

#[tokio::test]
async fn a_bad_number_of_cores_is_a_clear_error() {
    let opts = || Options::server().identity(identity());
    for n in [0, 65] {
        let e = MpListener::bind_cores("127.0.0.1:0".parse().unwrap(), opts(), n).unwrap_err();
        assert!(e.to_string().contains("cores must be between 1 and 64"), "{e}");
    }
    let one = MpListener::bind_cores("127.0.0.1:0".parse().unwrap(), opts(), 1).unwrap();
    assert_eq!(one.endpoints().len(), 1);
}
