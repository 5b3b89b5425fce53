//! Resumption and 0-RTT through the driver (issue 36), over loopback: a client with a ticket
//! store resumes its second connection and sends its request with the first packet; a server
//! on two cores resumes a client whose tickets the other core issued; the store's bytes
//! survive an application restart.
#![allow(clippy::unwrap_used)]

use mpudp::{Interface, MpEndpoint, MpListener, Options, ServerIdentity, TicketStore};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn identity() -> ServerIdentity {
    ServerIdentity::from_seed(&[8; 32]).unwrap()
}

const REQUEST: &[u8] = b"GET /weather HTTP/1.1\r\nHost: phone\r\n\r\n";

/// A server that answers each connection's request (REQUEST's length) with its reversal,
/// and reports per connection: resumed, early bytes.
async fn server(cores: usize) -> (SocketAddr, tokio::sync::mpsc::UnboundedReceiver<(bool, u64)>) {
    let mut opts = Options::new().identity(identity()).issue_tickets(true);
    // One service: every server of these tests seals tickets under the same secret, as the
    // servers of a fleet do (a ticket from one opens on another).
    opts.config_mut().resumption.secret = Some([7; 32]);
    let l = MpListener::bind_cores("127.0.0.1:0".parse().unwrap(), opts, cores).unwrap();
    let addr = l.local_addr();
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = l.accept().await.unwrap();
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut req = vec![0u8; REQUEST.len()];
                s.read_exact(&mut req).await.unwrap();
                let st = s.stats().unwrap();
                tx.send((st.resumed, st.early_bytes)).unwrap();
                req.reverse();
                s.write_all(&req).await.unwrap();
                s.shutdown().await.unwrap();
                let mut rest = Vec::new();
                let _ = s.read_to_end(&mut rest).await;
            });
        }
    });
    (addr, rx)
}

fn client(store: &TicketStore) -> MpEndpoint {
    let opts = Options::new()
        .server_key(identity().public_key())
        .interface(Interface::unbound("127.0.0.1:0".parse().unwrap()))
        .tickets(store.clone());
    MpEndpoint::client(opts).unwrap()
}

/// One request on a new connection (early if asked); returns the answer.
async fn ask(ep: &MpEndpoint, addr: SocketAddr, early: bool) -> (Vec<u8>, mpudp::ConnStats) {
    let mut s = if early { ep.connect_early(addr, REQUEST).await.unwrap() } else { ep.connect(addr).await.unwrap() };
    if !early {
        s.write_all(REQUEST).await.unwrap();
    }
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).await.unwrap();
    let st = s.stats().unwrap();
    s.shutdown().await.unwrap();
    (answer, st)
}

async fn wait_for_ticket(store: &TicketStore) {
    for _ in 0..200 {
        if !store.is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no ticket in 2 s");
}

fn reversed() -> Vec<u8> {
    REQUEST.iter().rev().copied().collect()
}

#[tokio::test]
async fn the_second_connection_resumes_and_its_request_goes_early() {
    let (addr, mut seen) = server(1).await;
    let store = TicketStore::new();
    let ep = client(&store);
    let (answer, st) = ask(&ep, addr, false).await;
    assert_eq!(answer, reversed());
    assert!(!st.resumed);
    assert_eq!(seen.recv().await.unwrap(), (false, 0));
    wait_for_ticket(&store).await;
    // The application restarts: the tickets come back from their bytes.
    let store = TicketStore::from_bytes(&store.to_bytes()).unwrap();
    let ep = client(&store);
    let (answer, st) = ask(&ep, addr, true).await;
    assert_eq!(answer, reversed());
    assert!(st.resumed, "{st:?}");
    assert_eq!(st.early_bytes, REQUEST.len() as u64, "the server took the early request");
    assert_eq!(seen.recv().await.unwrap(), (true, REQUEST.len() as u64), "the server knows they came early");
    // The resumed connection left a ticket of its own; the one used is gone.
    wait_for_ticket(&store).await;
    assert_eq!(store.len(), 1);
    // Without a ticket the early bytes go after the handshake: the same answer.
    let empty = TicketStore::new();
    let (answer, st) = ask(&client(&empty), addr, true).await;
    assert_eq!(answer, reversed());
    assert_eq!((st.resumed, st.early_bytes), (false, 0));
    assert_eq!(seen.recv().await.unwrap(), (false, 0));
}

#[tokio::test]
async fn a_server_on_two_cores_resumes_the_tickets_of_either() {
    let (addr, mut seen) = server(2).await;
    let store = TicketStore::new();
    let mut resumed = 0;
    for k in 0..6 {
        // A new client endpoint (a new source port) each time: the kernel spreads them over
        // the two cores, whose tickets and anti-replay record are shared.
        let ep = client(&store);
        let (answer, _) = ask(&ep, addr, k > 0).await;
        assert_eq!(answer, reversed());
        let (r, early) = seen.recv().await.unwrap();
        if k > 0 {
            assert!(r && early == REQUEST.len() as u64, "connection {k}: resumed {r}, early {early}");
            resumed += 1;
        }
        wait_for_ticket(&store).await;
    }
    assert_eq!(resumed, 5);
}

/// Tickets belong to the server's key, not its address (issue 55): a ticket got from one
/// address resumes at another (DNS or anycast moved the service), and a connect that nobody
/// answered keeps its ticket rather than spending it.
#[tokio::test]
async fn a_ticket_follows_the_servers_key_and_survives_an_unanswered_connect() {
    let (addr, mut seen) = server(1).await;
    let store = TicketStore::new();
    let (answer, _) = ask(&client(&store), addr, false).await;
    assert_eq!(answer, reversed());
    assert_eq!(seen.recv().await.unwrap(), (false, 0));
    wait_for_ticket(&store).await;
    // Nothing listens there: the connect fails unanswered, and the ticket stays.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let opts = Options::new()
        .server_key(identity().public_key())
        .interface(Interface::unbound("127.0.0.1:0".parse().unwrap()))
        .connect_timeout(Duration::from_millis(300))
        .tcp_fallback(None)
        .tickets(store.clone());
    let ep = MpEndpoint::client(opts).unwrap();
    let e = ep.connect(silent.local_addr().unwrap()).await.unwrap_err();
    assert!(matches!(e, mpudp::Error::Unreachable { .. }), "{e}");
    assert_eq!(store.len(), 1, "the unanswered connect kept its ticket");
    // The same server (its key) behind a new address: the ticket resumes there.
    let (moved, mut seen2) = server(1).await;
    assert_ne!(moved, addr);
    let (answer, st) = ask(&client(&store), moved, true).await;
    assert_eq!(answer, reversed());
    assert!(st.resumed, "resumed at the service's new address: {st:?}");
    // Resumed, its early request taken after the handshake: this server started after the
    // ticket was issued, and takes no 0-RTT data from before its start for the anti-replay
    // record's 20 s (PROTOCOL.md §4.9: a flight captured before it started is not in it).
    assert_eq!(seen2.recv().await.unwrap(), (true, 0));
}
