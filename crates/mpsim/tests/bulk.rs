//! Issue 23 in the simulator: what a bulk upload costs on the wire and at its own host.
#![allow(clippy::unwrap_used)]

use mpcore::{Config, Iface, PathManager};
use mpsim::apps::{pattern, Bulk};
use mpsim::{client_addr, ms, Dir, PathConfig, Sim, Verdict};

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
    let config = Config { path_manager: PathManager::Fullmesh, ..Config::default() };
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

/// The bytes a one-way transfer's data packets spend besides the data (PROTOCOL.md §5.5):
/// 1 + 4 (the default CID) + 2 (packet number) + 1 + 5 (DATA) + 16 (tag) = 29 in a
/// 1200-byte datagram. ACK frames (a few, for the receiver's ACK-only packets) and the
/// handshake add little: within 0.2 % of that (one byte more per packet is 0.09 %), over
/// paths that lose nothing (local queues, as above), so no byte is sent twice. Measured:
/// 1.0013.
#[test]
fn a_data_packet_carries_29_bytes_besides_its_data() {
    let config = Config { path_manager: PathManager::Fullmesh, ..Config::default() };
    let bytes = 8 << 20;
    let (sim, _) = upload(two_paths(true), &config, bytes);
    let wire = up(&sim, 0, Verdict::Delivered).1 + up(&sim, 1, Verdict::Delivered).1;
    let full = config.max_datagram_size as f64;
    let ideal = bytes as f64 * full / (full - 29.0);
    let ratio = wire as f64 / ideal;
    assert!((1.0..1.002).contains(&ratio), "{wire} bytes sent for {bytes}: {ratio:.4} of the ideal {ideal:.0}");
}
