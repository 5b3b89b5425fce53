//! The application's say over the interfaces, over loopback (no privilege needed): a socket it
//! hands over, paths it reports down and up, interfaces it adds and removes while a connection
//! runs.
#![allow(clippy::unwrap_used)]

use mpcore::{PathId, SubflowState};
use mpudp::{Error, Interface, MpEndpoint, MpListener, MpStream, Options, ServerIdentity};

fn identity() -> ServerIdentity {
    ServerIdentity::from_seed(&[7; 32]).unwrap()
}

/// A client given the test server's key.
fn client() -> Options {
    Options::new().server_key(identity().public_key())
}
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A server that reads everything and answers with the byte count when the client finishes.
async fn counting_server() -> (SocketAddr, tokio::task::JoinHandle<u64>) {
    let l = MpListener::bind("127.0.0.1:0".parse().unwrap(), Options::server().identity(identity())).unwrap();
    let addr = l.local_addr();
    let task = tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut n = 0u64;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let k = s.read(&mut buf).await.unwrap();
            if k == 0 {
                break;
            }
            n += k as u64;
        }
        s.write_all(&n.to_be_bytes()).await.unwrap();
        s.shutdown().await.unwrap();
        s.closed().await;
        n
    });
    (addr, task)
}

/// Waits (at most 5 s) until `f` holds for the connection's subflows.
async fn until(s: &MpStream, what: &str, f: impl Fn(&[mpudp::SubflowStats]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !f(&s.stats().unwrap().subflows) {
        assert!(Instant::now() < deadline, "{what}: {:#?}", s.stats());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn open_on(path: u8) -> impl Fn(&[mpudp::SubflowStats]) -> bool {
    move |sf| sf.iter().any(|f| f.path == PathId(path) && f.state == SubflowState::Established)
}

async fn finish(mut s: MpStream, server: tokio::task::JoinHandle<u64>, sent: u64) {
    s.shutdown().await.unwrap();
    let mut back = Vec::new();
    s.read_to_end(&mut back).await.unwrap();
    assert_eq!(back, sent.to_be_bytes(), "the server got every byte");
    assert_eq!(server.await.unwrap(), sent);
}

#[tokio::test]
async fn a_socket_the_app_hands_over_carries_a_connection() {
    let (addr, server) = counting_server().await;
    // As Android's Network.bindSocket would give it: bound already, to the network's address.
    let sock = std::net::UdpSocket::bind("127.0.0.2:0").unwrap();
    let local = sock.local_addr().unwrap();
    let opts = client().interface(Interface::from_socket(sock).label("cell").kind(mpudp::Iface::Cellular));
    let mut s = MpStream::connect(addr, opts).await.unwrap();
    s.write_all(&[7u8; 300_000]).await.unwrap();
    let paths = s.paths();
    assert_eq!(paths[0].addr, local, "the path is the handed-over socket: {paths:?}");
    assert_eq!(paths[0].kind, mpudp::Iface::Cellular);
    finish(s, server, 300_000).await;
}

#[tokio::test]
async fn the_app_reports_a_path_down_and_up_and_adds_and_removes_interfaces() {
    let (addr, server) = counting_server().await;
    let ep = MpEndpoint::client(
        client()
            .interface(Interface::unbound("127.0.0.1:0".parse().unwrap()).label("wifi"))
            .interface(Interface::unbound("127.0.0.2:0".parse().unwrap()).label("cell")),
    )
    .unwrap();
    let mut s = ep.connect(addr).await.unwrap();
    until(&s, "fullmesh joins the second path", open_on(1)).await;
    let chunk = vec![1u8; 100_000];
    let mut sent = 0u64;
    let send = async |s: &mut MpStream, n: usize| {
        for _ in 0..n {
            s.write_all(&chunk).await.unwrap();
        }
        n as u64 * chunk.len() as u64
    };
    sent += send(&mut s, 5).await;

    // Down: the subflow on "wifi" closes at once and the data goes on over "cell".
    ep.set_path_down("wifi").unwrap();
    until(&s, "the wifi subflow closes", |sf| {
        !sf.iter().any(|f| f.path == PathId(0) && f.state != SubflowState::Closed)
    })
    .await;
    sent += send(&mut s, 5).await;
    // Up: joined again.
    ep.set_path_up("wifi").unwrap();
    until(&s, "wifi rejoined", open_on(0)).await;

    // A third interface added while connected: fullmesh joins from it.
    ep.add_interface(Interface::unbound("127.0.0.3:0".parse().unwrap()).label("eth")).unwrap();
    until(&s, "the added interface joined", open_on(2)).await;
    sent += send(&mut s, 5).await;
    // Removed: its subflow closes and its path is marked removed.
    ep.remove_interface("eth").unwrap();
    until(&s, "the removed interface's subflow closes", |sf| {
        sf.iter().filter(|f| f.path == PathId(2)).all(|f| f.state == SubflowState::Closed)
    })
    .await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while !ep.paths()[2].removed {
        assert!(Instant::now() < deadline, "{:#?}", ep.paths());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    sent += send(&mut s, 5).await;

    // Mistakes get a clear error.
    assert!(matches!(ep.set_path_down("nope"), Err(Error::NoSuchInterface { name }) if name == "nope"));
    assert!(matches!(
        ep.add_interface(Interface::unbound("127.0.0.1:0".parse().unwrap()).label("cell")),
        Err(Error::Config(_))
    ));
    finish(s, server, sent).await;
}
