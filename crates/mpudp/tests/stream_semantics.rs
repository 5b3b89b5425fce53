//! Issue 41: `MpStream`'s `AsyncRead` and `AsyncWrite` behave as `tokio::net::TcpStream`'s
//! (what `MpStream`'s documentation lists), and its control handle reaches the paths.
#![allow(clippy::unwrap_used)]

use mpudp::{CloseReason, Interface, MpEndpoint, MpListener, MpStream, Options, PathId, ServerIdentity, SubflowState};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn identity() -> ServerIdentity {
    ServerIdentity::from_seed(&[9; 32]).unwrap()
}

/// A connected pair over loopback: (client, server, the server's listener to keep).
async fn pair() -> (MpStream, MpStream, MpListener) {
    let l = MpListener::bind("127.0.0.1:0".parse().unwrap(), Options::new().identity(identity())).unwrap();
    let addr = l.local_addr();
    let (c, accepted) =
        tokio::join!(MpStream::connect(addr, Options::new().server_key(identity().public_key())), l.accept());
    (c.unwrap(), accepted.unwrap().0, l)
}

/// Resolves at once, or fails the test.
async fn now<T>(what: &str, f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_millis(200), f).await.unwrap_or_else(|_| panic!("{what} waits"))
}

#[tokio::test]
async fn a_read_into_no_room_returns_at_once() {
    let (mut c, mut s, _l) = pair().await;
    // Nothing waiting, then something waiting: 0 bytes at once either way.
    assert_eq!(now("an empty read, nothing waiting", c.read(&mut [])).await.unwrap(), 0);
    s.write_all(b"abc").await.unwrap();
    let mut b = [0u8; 3];
    c.read_exact(&mut b[..1]).await.unwrap();
    assert_eq!(now("an empty read, data waiting", c.read(&mut [])).await.unwrap(), 0);
    c.read_exact(&mut b[1..]).await.unwrap();
    assert_eq!(&b, b"abc", "the empty reads took nothing");
}

#[tokio::test]
async fn a_write_of_nothing_returns_0_and_a_write_after_shutdown_is_a_broken_pipe() {
    let (mut c, _s, _l) = pair().await;
    assert_eq!(now("an empty write", c.write(&[])).await.unwrap(), 0);
    now("flush", c.flush()).await.unwrap();
    now("shutdown", c.shutdown()).await.unwrap();
    now("shutdown again", c.shutdown()).await.unwrap();
    let e = c.write(b"x").await.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
}

#[tokio::test]
async fn every_read_after_the_end_of_the_stream_returns_0() {
    let (mut c, mut s, _l) = pair().await;
    s.write_all(b"bye").await.unwrap();
    s.shutdown().await.unwrap();
    let mut got = Vec::new();
    c.read_to_end(&mut got).await.unwrap();
    assert_eq!(got, b"bye");
    for _ in 0..3 {
        assert_eq!(now("a read after the end", c.read(&mut [0u8; 8])).await.unwrap(), 0);
    }
}

/// Dropping a stream ends it as closing a TCP socket does: what was written is still
/// delivered, then the end of the stream; the connection closes gracefully once the peer ends
/// its direction too (nothing arrived for the dropped side to leave unread).
#[tokio::test]
async fn a_stream_dropped_after_writing_delivers_everything_then_its_end() {
    let (mut c, mut s, _l) = pair().await;
    let sent: Vec<u8> = (0..2_000_000u32).map(|i| (i % 251) as u8).collect();
    c.write_all(&sent).await.unwrap();
    let control = c.control();
    drop(c);
    let mut got = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut got)).await.unwrap().unwrap();
    assert!(got == sent, "{} bytes of {} came, or changed", got.len(), sent.len());
    s.shutdown().await.unwrap();
    assert_eq!(tokio::time::timeout(Duration::from_secs(5), s.closed()).await.unwrap(), CloseReason::Graceful);
    assert_eq!(tokio::time::timeout(Duration::from_secs(5), control.closed()).await.unwrap(), CloseReason::Graceful);
}

#[tokio::test]
async fn shutdown_after_an_abort_is_an_error_on_both_sides() {
    let (mut c, mut s, _l) = pair().await;
    c.write_all(b"x").await.unwrap();
    let mut one = [0u8; 1];
    s.read_exact(&mut one).await.unwrap();
    c.abort();
    let e = c.shutdown().await.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}");
    assert_eq!(tokio::time::timeout(Duration::from_secs(5), s.closed()).await.unwrap(), CloseReason::PeerAborted);
    let e = s.shutdown().await.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}");
    let e = s.read(&mut one).await.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}");
}

#[tokio::test]
async fn the_control_handle_takes_a_path_down_and_up() {
    let l = MpListener::bind("127.0.0.1:0".parse().unwrap(), Options::new().identity(identity())).unwrap();
    let addr = l.local_addr();
    tokio::spawn(async move {
        let (mut s, _) = l.accept().await.unwrap();
        let mut sink = vec![0u8; 1 << 16];
        while s.read(&mut sink).await.is_ok_and(|n| n > 0) {}
    });
    let opts = Options::new()
        .server_key(identity().public_key())
        .interface(Interface::unbound("127.0.0.1:0".parse().unwrap()).label("wifi"))
        .interface(Interface::unbound("127.0.0.2:0".parse().unwrap()).label("cell"));
    let ep = MpEndpoint::client(opts).unwrap();
    let s = ep.connect(addr).await.unwrap();
    // The stream goes to a library that owns it; the control stays.
    let control = s.control();
    let owned = tokio::spawn(async move {
        let mut s = s;
        for _ in 0..50 {
            s.write_all(&[3u8; 20_000]).await.unwrap();
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        s
    });
    let open_on = |p: u8| {
        let c = control.clone();
        async move {
            for _ in 0..500 {
                let sf = c.stats().unwrap().subflows;
                if sf.iter().any(|f| f.path == PathId(p) && f.state == SubflowState::Established) {
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            false
        }
    };
    assert!(open_on(1).await, "fullmesh joined the second path");
    control.set_path_down("wifi").unwrap();
    let mut closed = false;
    for _ in 0..500 {
        let sf = control.stats().unwrap().subflows;
        if !sf.iter().any(|f| f.path == PathId(0) && f.state != SubflowState::Closed) {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(closed, "the wifi subflow closed: {:?}", control.stats());
    control.set_path_up("wifi").unwrap();
    assert!(open_on(0).await, "wifi joined again");
    assert!(control.set_path_down("nope").is_err(), "an unknown interface is refused");
    drop(owned.await.unwrap());
}

/// Issue 40: `write_chunk` hands buffers over by reference, mixed with `AsyncWrite`'s copies
/// and larger than the send buffer (it waits for room as `write_all` does): the peer reads the
/// stream as written. A chunk written after `shutdown` is a broken pipe, as a write is.
#[tokio::test]
async fn write_chunk_and_write_all_mix_in_order() {
    let (mut c, mut s, _l) = pair().await;
    let stream: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let all = bytes::Bytes::from(stream.clone());
    let reader = tokio::spawn(async move {
        let mut got = Vec::new();
        s.read_to_end(&mut got).await.unwrap();
        got
    });
    // 1 MB copied, 1.5 MB handed over in one chunk (several send buffers' worth), 100 bytes
    // copied, the rest in small chunks cut from the same buffer.
    c.write_all(&stream[..1_000_000]).await.unwrap();
    c.write_chunk(all.slice(1_000_000..2_500_000)).await.unwrap();
    c.write_all(&stream[2_500_000..2_500_100]).await.unwrap();
    for k in (2_500_100..3_000_000).step_by(7_777) {
        c.write_chunk(all.slice(k..(k + 7_777).min(3_000_000))).await.unwrap();
    }
    c.write_chunk(bytes::Bytes::new()).await.unwrap();
    c.shutdown().await.unwrap();
    let got = reader.await.unwrap();
    assert!(got == stream, "the stream as written ({} of {} bytes)", got.len(), stream.len());
    let e = c.write_chunk(bytes::Bytes::from_static(b"x")).await.unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
}

#[tokio::test]
async fn read_with_hands_out_the_stream_in_place_and_mixes_with_read() {
    let (mut c, s, _l) = pair().await;
    let stream: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
    let (mut r, _w) = s.into_split();
    let reader = tokio::spawn(async move {
        let mut got = Vec::new();
        let mut chunks = 0;
        // In place mostly; every tenth chunk through `AsyncRead`, which must go on where the
        // last chunk ended.
        loop {
            if chunks % 10 == 9 {
                let mut b = [0u8; 1000];
                let n = r.read(&mut b).await.unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&b[..n]);
            } else {
                let Some(n) = r
                    .read_with(50_000, |b| {
                        got.extend_from_slice(b);
                        b.len()
                    })
                    .await
                    .unwrap()
                else {
                    break;
                };
                assert!(n > 0 && n <= 50_000, "a chunk of {n} bytes");
            }
            chunks += 1;
        }
        // At the end: `None` again, and nothing asked for gets nothing at once.
        assert_eq!(now("read_with after the end", r.read_with(10, |b| b.len())).await.unwrap(), None);
        assert_eq!(now("read_with of nothing", r.read_with(0, |b| b.len())).await.unwrap(), Some(0));
        got
    });
    c.write_all(&stream).await.unwrap();
    c.shutdown().await.unwrap();
    let got = reader.await.unwrap();
    assert!(got == stream, "the stream as written ({} of {} bytes)", got.len(), stream.len());
}
