//! What a connection's windows do with use, in the simulator: the send buffer takes writes
//! again once a good share of it is free, the congestion window grows only while it is in use
//! (RFC 7661), and the receive window grows with a reader that keeps up (PROTOCOL.md §6).
#![allow(clippy::unwrap_used)]

mod common;

use common::{cfg, established, server_reads_all};
use mpcore::{Iface, PathManager};
use mpsim::{client_addr, ms, multimob_paths, Flow, PathConfig, Sim};

/// A writer blocked on a full send buffer is told it may write again (`write_space`) once a
/// third of the buffer is free (free room at least half of what is held), not at the first
/// acknowledged packet: it then writes a good share of the buffer per wake-up.
#[test]
fn a_full_send_buffer_takes_writes_again_once_a_third_is_free() {
    const BUF: usize = 64 << 10;
    let client = cfg(PathManager::OnDemand).with(|c| c.transport.send_buffer = BUF);
    let mut sim = Sim::new(4, client, cfg(PathManager::OnDemand), multimob_paths()).unwrap();
    let c = sim.connect();
    let (mut filled, mut some_room_first, mut space) = (false, false, None);
    let mut s_h = None;
    let done = sim.run(ms(10_000), |s| {
        server_reads_all(s, &mut s_h);
        let Some(cc) = s.client.conn_mut(c) else { return Flow::Wake(None) };
        if !filled {
            if cc.is_established() {
                while cc.write(&[1; 4096]).is_ok() {}
                assert_eq!(cc.write_room(), 0);
                assert!(!cc.write_space());
                filled = true;
            }
            return Flow::Wake(None);
        }
        if cc.write_space() {
            space = Some(cc.write_room());
            return Flow::Done;
        }
        some_room_first |= cc.write_room() > 0;
        Flow::Wake(None)
    });
    assert!(done, "the buffer drained");
    assert!(some_room_first, "acknowledgements freed some room before the writer was due");
    let room = space.unwrap();
    assert!(room >= BUF / 3, "{room} bytes free when the writer may write again");
}

/// Congestion window validation (RFC 7661): a subflow that never uses half its window keeps
/// it. A kilobyte every 100 ms for 10 s is acknowledged 100 times; growing the window by each
/// acknowledgement, as slow start does, would leave it at 100 kB, a burst the path never
/// carried.
#[test]
fn an_unused_window_does_not_grow() {
    let (mut sim, c) = established(6);
    let cwnd = |s: &Sim| s.client.stats(c).unwrap().subflows[0].cwnd;
    let initial = cwnd(&sim);
    let mut next = sim.now;
    let mut s_h = None;
    sim.run_until(sim.now + ms(10_000), |s| {
        server_reads_all(s, &mut s_h);
        if s.now >= next {
            s.client.conn_mut(c).unwrap().write(&[3; 1000]).unwrap();
            next += ms(100);
        }
        Some(next)
    });
    let st = sim.client.stats(c).unwrap().subflows[0];
    assert!(st.counters.data_bytes_sent >= 99_000, "{st:?}");
    assert!(st.cwnd <= initial, "the window grew from {initial} to {} bytes unused", st.cwnd);
}

/// A bulk transfer held back by the peer's receive window (8 kB, below the path's
/// bandwidth-delay product) has a flight of about that (its packets' headers and path MTU
/// probes included, under 10 kB), and its congestion window grows while it is at most twice
/// the flight, plus what one round trip's acknowledgements add: under 3 x 8 kB. Growing with
/// every acknowledgement, it reached 2.1 MB.
#[test]
fn a_window_held_back_by_flow_control_grows_to_twice_the_flight_at_most() {
    const WINDOW: usize = 8192;
    // A window that stays what it is (no autotuning).
    let server = cfg(PathManager::OnDemand).with(|c| {
        c.transport.recv_window = WINDOW;
        c.transport.max_recv_window = WINDOW;
    });
    let mut sim = Sim::new(7, cfg(PathManager::OnDemand), server, multimob_paths()).unwrap();
    let c = sim.connect();
    let (mut s_h, mut got) = (None, 0usize);
    let done = sim.run(ms(20_000), |s| {
        if let Some(cc) = s.client.conn_mut(c) {
            while cc.is_established() && cc.write(&[5; 4096]).is_ok() {}
        }
        got += server_reads_all(s, &mut s_h);
        if got >= 2 << 20 {
            Flow::Done
        } else {
            Flow::Wake(None)
        }
    });
    assert!(done, "2 MB through an 8 kB window");
    let st = sim.client.stats(c).unwrap().subflows[0];
    assert!(st.cwnd <= 3 * WINDOW as u64, "window {} bytes for a receive window of {WINDOW}", st.cwnd);
}

/// How an upload to a server whose receive window starts at 64 KiB went.
struct Upload {
    /// Virtual time from the start to the last byte read (µs).
    took: u64,
    /// The server's receive window at the end.
    window: u64,
    /// The most bytes the server held unread at once.
    most_unread: usize,
}

const START_WINDOW: usize = 64 << 10;

/// Uploads `total` bytes over two 100 Mbit/s paths of 15 and 25 ms (fullmesh) to a server
/// whose window starts at 64 KiB and grows up to `max`. The server reads everything it has,
/// or, with `pace = Some((n, every))`, at most `n` bytes every `every` µs.
fn upload(max: usize, total: usize, pace: Option<(usize, u64)>) -> Upload {
    let server = cfg(PathManager::Fullmesh).with(|c| {
        c.transport.recv_window = START_WINDOW;
        c.transport.max_recv_window = max;
    });
    let paths = vec![
        PathConfig::new(client_addr(0), Iface::Wifi, 15, 100),
        PathConfig::new(client_addr(1), Iface::Cellular, 25, 100),
    ];
    let mut sim = Sim::new(11, cfg(PathManager::Fullmesh), server, paths).unwrap();
    let c = sim.connect();
    let chunk = vec![7u8; 16 << 10];
    let (mut written, mut got, mut most_unread) = (0usize, 0usize, 0usize);
    let (mut s_h, mut next_read) = (None, 0);
    let mut buf = vec![0u8; 16 << 10];
    let done = sim.run(ms(120_000), |s| {
        if let Some(cc) = s.client.conn_mut(c) {
            while cc.is_established() && written < total {
                match cc.write(&chunk[..chunk.len().min(total - written)]) {
                    Ok(n) if n > 0 => written += n,
                    _ => break,
                }
            }
        }
        s_h = s_h.or_else(|| s.server.accept());
        let Some(sc) = s_h.and_then(|h| s.server.conn_mut(h)) else { return Flow::Wake(None) };
        most_unread = most_unread.max(sc.readable());
        let mut budget = match pace {
            None => usize::MAX,
            Some(_) if s.now < next_read => 0,
            Some((n, every)) => {
                next_read = s.now + every;
                n
            }
        };
        while budget > 0 {
            match sc.read(&mut buf[..budget.min(16 << 10)]) {
                Ok(n) if n > 0 => {
                    got += n;
                    budget -= n;
                }
                _ => break,
            }
        }
        if got >= total {
            return Flow::Done;
        }
        Flow::Wake(pace.map(|_| next_read))
    });
    assert!(done, "{got} of {total} bytes in 120 s");
    let window = sim.server.stats(s_h.unwrap()).unwrap().recv_window;
    Upload { took: sim.now, window, most_unread }
}

/// Linux's receive-buffer autotuning, here: a window of 64 KiB holds an upload over two
/// 100 Mbit/s paths to a window per RTT (about 20 Mbit/s); growing with its reader, it lets
/// the paths carry it. It grows past the paths' bandwidth-delay product (200 Mbit/s x 25 ms,
/// 625 kB), stops at the most allowed, and the upload takes far less time.
#[test]
fn the_receive_window_grows_with_a_reader_that_keeps_up() {
    const TOTAL: usize = 20 << 20;
    let fixed = upload(START_WINDOW, TOTAL, None);
    assert_eq!(fixed.window, START_WINDOW as u64, "a window without room to grow stays");
    let tuned = upload(8 << 20, TOTAL, None);
    assert!(tuned.window >= 1 << 20 && tuned.window <= 8 << 20, "the window grew to {} bytes", tuned.window);
    assert!(
        tuned.took * 3 < fixed.took,
        "the upload took {} ms with the window growing, {} ms without",
        tuned.took / 1000,
        fixed.took / 1000
    );
    let capped = upload(256 << 10, TOTAL, None);
    assert_eq!(capped.window, 256 << 10, "the window stops at the most allowed");
}

/// A reader far slower than the paths (16 KiB every 50 ms: 2.6 Mbit/s, a quarter of the
/// window per RTT at most) never grows the window: its unread bytes close it, so the sender,
/// and the memory held, follow the reader. The window is full most of the time.
#[test]
fn a_reader_slower_than_the_sender_keeps_the_window_it_had() {
    let slow = upload(8 << 20, 1 << 20, Some((16 << 10, 50_000)));
    assert_eq!(slow.window, START_WINDOW as u64, "the window grew for a slow reader");
    assert!(
        slow.most_unread > START_WINDOW / 2,
        "the sender was held by the window: {} bytes unread",
        slow.most_unread
    );
}
