//! What a connection's windows do with use, in the simulator: the send buffer takes writes
//! again once a good share of it is free, and the congestion window grows only while it is
//! in use (RFC 7661).
#![allow(clippy::unwrap_used)]

mod common;

use common::{cfg, established, server_reads_all};
use mpcore::{Config, PathManager};
use mpsim::{ms, multimob_paths, Flow, Sim};

/// A writer blocked on a full send buffer is told it may write again (`write_space`) once a
/// third of the buffer is free (free room at least half of what is held), not at the first
/// acknowledged packet: it then writes a good share of the buffer per wake-up.
#[test]
fn a_full_send_buffer_takes_writes_again_once_a_third_is_free() {
    const BUF: usize = 64 << 10;
    let client = Config { send_buffer: BUF, ..cfg(PathManager::OnDemand) };
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
    let server = Config { recv_window: WINDOW, ..cfg(PathManager::OnDemand) };
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
