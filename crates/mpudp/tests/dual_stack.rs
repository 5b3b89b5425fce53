//! One connection over an IPv4 path and an IPv6 path (issue 33): the server listens on both
//! families and announces its IPv6 address; a phone whose WiFi is IPv4 (127.0.0.1) and whose
//! cellular is IPv6-only (::1) starts on WiFi, and when WiFi is lost its cellular path joins
//! the announced IPv6 address; every byte arrives. No privilege needed (loopback); the
//! namespace version, with real interfaces, is tests/netns_dual_stack.rs.
#![allow(clippy::unwrap_used)]

mod common;

use mpudp::{Iface, Interface, MpEndpoint, MpListener, Options};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test]
async fn ipv4_wifi_fails_over_to_ipv6_cellular() {
    if let Err(e) = std::net::UdpSocket::bind("[::1]:0") {
        // Where it must run (`MPUDP_REQUIRE_IPV6`, as `.ci/run` sets), a missing IPv6 loopback
        // is a failure, not a skip.
        assert!(
            std::env::var_os("MPUDP_REQUIRE_IPV6").is_none(),
            "MPUDP_REQUIRE_IPV6 is set and IPv6 loopback is missing: {e}"
        );
        eprintln!("skipped: no IPv6 loopback here ({e})");
        return;
    }
    // The server on both families; port 0 on the first socket, the second takes the same.
    let probe = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    let port = probe.local_addr().unwrap().port();
    drop(probe);
    let v6: SocketAddr = format!("[::1]:{port}").parse().unwrap();
    let server = Options::server()
        .identity(common::identity())
        .interface(Interface::unbound("0.0.0.0:0".parse().unwrap()))
        .interface(Interface::unbound("[::]:0".parse().unwrap()))
        .announce(v6);
    let l = MpListener::bind(format!("127.0.0.1:{port}").parse().unwrap(), server).unwrap();
    let serve = tokio::spawn(async move {
        let (s, _) = l.accept().await.unwrap();
        common::answer_requests(s).await;
        l.endpoint().paths()
    });
    let phone = Options::phone()
        .server_key(common::identity().public_key())
        .interface(Interface::unbound("127.0.0.1:0".parse().unwrap()).label("wifi").kind(Iface::Wifi))
        .interface(Interface::unbound("[::1]:0".parse().unwrap()).label("cell").kind(Iface::Cellular).backup(true));
    let ep = MpEndpoint::client(phone).unwrap();
    let mut c = ep.connect(format!("127.0.0.1:{port}").parse().unwrap()).await.unwrap();
    let mut events = c.events();
    let mut worst_after = Duration::ZERO;
    for r in 1..=6usize {
        if r == 4 {
            // The server's IPv6 address arrived (ADD_ADDR) before WiFi went.
            let st = c.stats().unwrap();
            assert!(st.subflows.iter().all(|f| f.remote.is_ipv4()), "{:?}", st.subflows);
            ep.set_path_down("wifi").unwrap();
        }
        let mut req = vec![0u8; 2004];
        req[0] = r as u8;
        let t0 = Instant::now();
        c.write_all(&req).await.unwrap();
        let mut resp = vec![0u8; 20_000];
        tokio::time::timeout(Duration::from_secs(10), c.read_exact(&mut resp)).await.unwrap().unwrap();
        let took = t0.elapsed();
        assert!(resp.iter().enumerate().all(|(i, &b)| b == common::byte_at(r, i)), "response {r} intact");
        if r >= 4 {
            worst_after = worst_after.max(took);
        }
    }
    let st = c.stats().unwrap();
    let v6_data: u64 = st.subflows.iter().filter(|f| f.remote == v6).map(|f| f.counters.data_bytes_sent).sum();
    assert!(v6_data > 0, "the IPv6 subflow to the announced address carried the requests: {:?}", st.subflows);
    let mut announced = false;
    while let Ok(Some(e)) = tokio::time::timeout(Duration::from_millis(10), events.next()).await {
        announced |= matches!(e.event, mpudp::Event::AddressAnnounced { addr, .. } if addr == v6);
    }
    assert!(announced, "the server announced {v6}");
    c.shutdown().await.unwrap();
    let mut rest = Vec::new();
    c.read_to_end(&mut rest).await.unwrap();
    let paths = serve.await.unwrap();
    assert!(paths[1].io.datagrams_received > 0, "the server's IPv6 socket was used: {paths:?}");
    println!("worst response after WiFi (IPv4) was lost, over IPv6: {:.2} ms", worst_after.as_secs_f64() * 1e3);
}
