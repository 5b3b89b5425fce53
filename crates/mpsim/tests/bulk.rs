//! Issue 23 in the simulator: what a bulk upload costs on the wire and at its own host.
#![allow(clippy::unwrap_used)]

use mpcore::{Config, Iface, PathManager, Time};
use mpsim::apps::{pattern, Bulk};
use mpsim::{client_addr, ms, Dir, Flow, PathConfig, Sim, Verdict};

fn two_paths(local_queue: bool) -> Vec<PathConfig> {
    (0..2)
        .map(|i| PathConfig {
            local_uplink_queue: local_queue,
            ..PathConfig::new(client_addr(i), if i == 0 { Iface::Wifi } else { Iface::Cellular }, 20, 20)
        })
        .collect()
}

fn upload(paths: Vec<PathConfig>, config: &Config, bytes: usize) -> (Sim, Bulk) {
    let mut sim = Sim::new(11, config.clone(), config.clone(), paths).unwrap();
    let data = pattern(bytes, 2);
    let mut app = Bulk::new(data.clone(), false);
    assert!(sim.run(ms(60_000), |s| app.drive(s)), "the upload completed");
    assert!(app.received == data);
    (sim, app)
}

fn up(sim: &Sim, path: usize, verdict: Verdict) -> (usize, usize) {
    let e = sim.path_log(path).iter().filter(|e| e.dir == Dir::Up && e.verdict == verdict);
    e.fold((0, 0), |(n, b), e| (n + 1, b + e.size))
}

/// Two 20 Mbit/s paths whose uplink queues are the client's own (as a rate-limited veth's
/// qdisc): a full queue blocks the socket. The endpoint then writes nothing for that path
/// (`set_path_writable`), so no datagram is refused and the sender loses nothing, and the
/// paths stay busy: the upload takes the time its bytes need. Before, the driver dropped what
/// a full socket refused: 1.1 % of the packets, each a loss and a halved window.
#[test]
fn a_full_local_queue_blocks_the_sender_instead_of_dropping() {
    let config = Config::default().with(|c| c.multipath.path_manager = PathManager::Fullmesh);
    let (sim, app) = upload(two_paths(true), &config, 8 << 20);
    let c = sim.client.stats(app.client.unwrap()).unwrap();
    let lost: u64 = c.subflows.iter().map(|f| f.counters.packets_lost).sum();
    let refused = up(&sim, 0, Verdict::QueueFull).0 + up(&sim, 1, Verdict::QueueFull).0;
    assert_eq!((refused, lost), (0, 0), "nothing refused by the queues, nothing lost");
    // Every byte that crossed the two uplinks, at 40 Mbit/s, plus a second for the
    // handshake, the join and the window's growth.
    let wire = up(&sim, 0, Verdict::Delivered).1 + up(&sim, 1, Verdict::Delivered).1;
    let busy = ms(wire as u64 * 8 / 40_000);
    let took = app.finished_at.unwrap();
    assert!(took <= busy + ms(1_000), "{} ms for {} ms of sending", took / 1000, busy / 1000);
}

/// A full data packet's length in datagrams of at most `max` bytes: the short header (1 + 4,
/// the default CID, + 2, the packet number), its plaintext in whole AES blocks
/// (PROTOCOL.md §9.2), the tag.
fn full_data_packet(max: usize) -> usize {
    let room = max - 7 - 16;
    7 + room - room % 16 + 16
}

/// The bytes a one-way transfer's data packets spend besides the data (PROTOCOL.md §5.5):
/// 1 + 4 (the default CID) + 2 (packet number) + 1 + 5 (DATA) + 16 (tag) = 29 in a full
/// packet, which is 1,191 bytes where datagrams of 1,200 may go: its plaintext ends on a whole
/// AES block (§9.2), so the 9 bytes after the last one stay unused. ACK frames (a few, for the
/// receiver's ACK-only packets) and the handshake add little: within 0.2 % of that (one byte
/// more per packet is 0.09 %), over paths that lose nothing (local queues, as above), so no
/// byte is sent twice. Measured: 1.0013.
#[test]
fn a_data_packet_carries_29_bytes_besides_its_data() {
    // 1200-byte datagrams from the start: no path MTU search to account for.
    let config = Config::default().with(|c| {
        c.multipath.path_manager = PathManager::Fullmesh;
        c.transport.max_datagram_size = 1200;
    });
    let bytes = 8 << 20;
    let (sim, _) = upload(two_paths(true), &config, bytes);
    let wire = up(&sim, 0, Verdict::Delivered).1 + up(&sim, 1, Verdict::Delivered).1;
    let full = full_data_packet(config.transport.max_datagram_size);
    assert_eq!(full, 1191);
    // One size whether the packet number takes 1 or 2 bytes (GSO batches datagrams of one
    // size): the blocks are counted from a 2-byte number's end.
    let sizes = || (0..2).flat_map(|p| sim.path_log(p)).filter(|e| e.dir == Dir::Up).map(|e| e.size);
    let fulls = sizes().filter(|&n| n == full).count();
    // Each carries 29 bytes besides its data: 99 % of the data went in them.
    assert!(fulls * (full - 29) > bytes - bytes / 100, "the data went in {full}-byte datagrams ({fulls})");
    let between = sizes().filter(|&n| n > full && n < 1197).count();
    assert_eq!(between, 0, "no short-header datagram over {full} bytes");
    let full = full as f64;
    let ideal = bytes as f64 * full / (full - 29.0);
    let ratio = wire as f64 / ideal;
    assert!((1.0..1.002).contains(&ratio), "{wire} bytes sent for {bytes}: {ratio:.4} of the ideal {ideal:.0}");
}

/// Path MTU discovery (PROTOCOL.md §10): a subflow starts at 1200 bytes and probes up. Path 0
/// carries 1472-byte datagrams, so its subflow reaches the default maximum, 1452, with one
/// probe; path 1 carries 1350, found within 20 bytes by halving. No probe's loss counts as a
/// loss (nothing else is lost: the queues are the host's), and the data then travels in the
/// larger datagrams (1,447 bytes: whole AES blocks, §9.2).
#[test]
fn each_subflow_finds_its_path_mtu_and_a_probe_loss_is_no_loss() {
    let config = Config::default().with(|c| c.multipath.path_manager = PathManager::Fullmesh);
    let mut paths = two_paths(true);
    paths[1].mtu = 1350;
    let (sim, app) = upload(paths, &config, 8 << 20);
    let c = sim.client.stats(app.client.unwrap()).unwrap();
    let mtu = |p: u8| c.subflows.iter().find(|f| f.path.0 == p).map(|f| f.max_datagram);
    assert_eq!(mtu(0), Some(1452));
    assert!(mtu(1).is_some_and(|m| m <= 1350 && m + 20 > 1350), "path 1: {:?}", mtu(1));
    let lost: u64 = c.subflows.iter().map(|f| f.counters.packets_lost).sum();
    assert_eq!(lost, 0, "probes too large for path 1 were dropped, and are not losses");
    assert!(up(&sim, 1, Verdict::TooBig).0 >= 3, "path 1 dropped the probes above its MTU");
    let size = full_data_packet(1452);
    let full = sim.path_log(0).iter().filter(|e| e.dir == Dir::Up && e.size == size).count();
    assert!(full * size > 3 << 20, "path 0 carried its share (about half) in {size}-byte datagrams ({full})");
}

/// A path whose MTU falls under a transfer (a tunnel came up): its full datagrams vanish, the
/// retransmission timeout takes the subflow back to 1200 bytes (a black hole, RFC 8899 §4.3),
/// and the transfer completes.
#[test]
fn a_path_mtu_that_falls_is_followed_down() {
    let config = Config::default();
    let path = PathConfig::new(client_addr(0), Iface::Wifi, 20, 20);
    let mut sim = Sim::new(3, config.clone(), config, vec![path]).unwrap();
    sim.at(ms(2_000), 0, mpsim::PathEvent::Mtu(1280));
    let data = pattern(8 << 20, 5);
    let mut app = Bulk::new(data.clone(), false);
    assert!(sim.run(ms(60_000), |s| app.drive(s)), "the upload completed");
    assert!(app.received == data);
    let c = sim.client.stats(app.client.unwrap()).unwrap();
    assert!(c.subflows[0].max_datagram <= 1280, "{:?}", c.subflows[0].max_datagram);
    let size = full_data_packet(1452);
    let before = sim.path_log(0).iter().filter(|e| e.time < ms(2_000) && e.dir == Dir::Up && e.size == size).count();
    assert!(before > 100, "{size}-byte datagrams before the fall ({before})");
    // 20 Mbit/s: 3.5 s of sending, plus the black hole's timeout.
    assert!(app.finished_at.unwrap() < ms(8_000), "{} ms", app.finished_at.unwrap() / 1000);
}

/// The client's full datagrams, by connection, in the order it sent them when `n` uploads
/// that grew their windows and went quiet write at the same moment: the lengths of the runs
/// of one connection's.
fn turns(n: usize, mbps: u64) -> Vec<usize> {
    use std::cell::RefCell;
    use std::rc::Rc;
    let config = Config::default().with(|c| c.transport.send_buffer = 4 << 20);
    let paths = vec![PathConfig::new(client_addr(0), Iface::Wifi, 4, mbps)];
    let mut sim = Sim::new(5, config.clone(), config, paths).unwrap();
    // The DCID (4 bytes, the default) of each full short-header datagram the client sends.
    let order = Rc::new(RefCell::new(Vec::<[u8; 4]>::new()));
    let tap = order.clone();
    sim.tap = Some(Box::new(move |_, _, dir, d: &[u8]| {
        if dir == Dir::Up && d.len() > 1000 && d[0] & 0x80 == 0 {
            tap.borrow_mut().push([d[1], d[2], d[3], d[4]]);
        }
    }));
    let uploads: Vec<_> = (0..n).map(|_| sim.connect()).collect();
    let (chunk, mut buf) = (vec![7u8; 64 << 10], vec![0u8; 64 << 10]);
    let mut servers = Vec::new();
    // Writes `bytes` on each upload at `at`; the server reads everything.
    let mut phase = |sim: &mut Sim, at: Time, until: Time, bytes: usize| {
        let mut left = vec![bytes; n];
        sim.run(until, |s| {
            for (k, &h) in uploads.iter().enumerate() {
                while let Some(Ok(n)) = s
                    .client
                    .conn_mut(h)
                    .filter(|_| s.now >= at && left[k] > 0)
                    .map(|c| c.write(&chunk[..left[k].min(chunk.len())]))
                {
                    left[k] -= n;
                }
            }
            while let Some(h) = s.server.accept() {
                servers.push(h);
            }
            for &h in &servers {
                while let Some(Ok(n @ 1..)) = s.server.conn_mut(h).map(|c| c.read(&mut buf)) {
                    let _ = n;
                }
            }
            Flow::Wake(Some(if s.now < at { at } else { s.now + ms(1) }))
        });
    };
    phase(&mut sim, 0, ms(1_000), (80 << 20) / n);
    // Quiet until everything is acknowledged, then all write at once.
    let t = sim.now + ms(20);
    order.borrow_mut().clear();
    phase(&mut sim, t, t + ms(30), 1 << 20);
    let order = order.borrow();
    assert!(order.len() > 100 * n, "all sent a burst ({} datagrams)", order.len());
    let mut runs = vec![1usize];
    for w in order.windows(2) {
        if w[0] == w[1] {
            *runs.last_mut().unwrap() += 1;
        } else {
            runs.push(1);
        }
    }
    runs
}

/// Issue 40: the connections of one endpoint take turns of 32 datagrams
/// (`Endpoint::poll_transmit`), so that a driver's GSO batch, which holds one connection's
/// datagrams, holds many; fewer when many are ready, so that one that becomes ready waits for
/// about 128 of the others' datagrams (`SEND_ROUND`). Two uploads from one client over one
/// 1 Gbit/s path, then eight. Before, the turn was a single datagram, and four uploads from one
/// endpoint on a veth moved 1.0 Gbit/s in batches of one datagram, where one upload moved 5.6.
#[test]
fn an_endpoints_connections_send_in_turns_of_many_datagrams() {
    let two = turns(2, 1_000);
    assert!(two.len() >= 4 && two[..4].iter().all(|&r| r == 32), "turns of 32: {:?}", &two[..two.len().min(8)]);
    let eight = turns(8, 10_000);

    assert!(
        eight.len() >= 9 && eight[1..9].iter().all(|&r| r == 16),
        "turns of 16: {:?}",
        &eight[..eight.len().min(12)]
    );
}

/// `Faults::no_encryption` (what `benches/net.sh` measures the protection's cost with): the
/// upload still completes, byte for byte, and its data now crosses the wire in clear, where
/// with the fault off no 32 bytes of it do. A key that ignored the fault on either end would
/// fail the transfer (the other end's zero tag, or its real one, would not open).
#[test]
fn without_encryption_the_data_crosses_in_clear() {
    let crosses_in_clear = |no_encryption: bool| {
        let config = Config::default().with(|c| {
            c.multipath.path_manager = PathManager::Fullmesh;
            c.faults = mpcore::Faults { no_encryption, ..mpcore::Faults::default() };
        });
        let mut sim = Sim::new(11, config.clone(), config, two_paths(false)).unwrap();
        sim.capture = Some(mpsim::pcap::Pcap::new());
        let data = pattern(200_000, 2);
        let mut app = Bulk::new(data.clone(), false);
        assert!(sim.run(ms(60_000), |s| app.drive(s)), "the upload completed");
        assert!(app.received == data);
        let wire = sim.capture.as_ref().unwrap().bytes();
        // Every 32-byte window at a 1000-byte stride of the data: in clear, most are found
        // whole in some packet (a few straddle two).
        let windows: std::collections::HashSet<&[u8]> =
            (0..data.len() - 32).step_by(1000).map(|o| &data[o..o + 32]).collect();
        let found: std::collections::HashSet<&[u8]> = wire.windows(32).filter(|x| windows.contains(x)).collect();
        (found.len(), windows.len())
    };
    let (found, of) = crosses_in_clear(true);
    assert!(found * 10 >= of * 9, "{found} of {of} windows of the data in clear");
    assert_eq!(crosses_in_clear(false).0, 0, "encrypted, none is");
}
