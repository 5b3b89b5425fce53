//! A background upload beside a phone's interactive requests, on a path whose queue holds four
//! bandwidth-delay products (a bloated uplink): a loss-based upload (LIA) fills the queue and
//! every request waits behind it; LEDBAT keeps the queue near its target, half the base RTT,
//! so a request takes about 1.5 RTT, and the upload still carries most of the path.
#![allow(clippy::unwrap_used)]

use mpcore::{Config, CongestionControl, ConnHandle, Iface, PathManager, Time};
use mpsim::{client_addr, ms, Flow, PathConfig, Sim};

const RTT_MS: u64 = 15;
const MBPS: u64 = 20;
const REQUEST: usize = 2000;
const ANSWER: usize = 500;
const WARMUP: Time = 3_000_000;
const GAP: Time = 100_000;
const REQUESTS: usize = 30;

struct Run {
    /// Each request's delay, from its write to its answer's first byte (µs), sorted.
    delays: Vec<Time>,
    /// The upload's goodput while the requests ran, as a share of the path's rate.
    share: f64,
}

/// The server's side of a connection: what its first byte said it is.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Unknown,
    Upload,
    Requests,
}

fn run(cc: CongestionControl) -> Run {
    let mut path = PathConfig::new(client_addr(0), Iface::Wifi, RTT_MS, MBPS);
    path.queue_bytes *= 4;
    let client = Config { congestion: cc, path_manager: PathManager::OnDemand, ..Config::default() };
    let mut sim = Sim::new(21, client, Config::default(), vec![path]).unwrap();
    let up = sim.connect();
    let asker = sim.connect();
    let (chunk, request) = (vec![b'u'; 16 << 10], vec![b's'; REQUEST]);
    let (mut up_started, mut asker_started) = (false, false);
    let mut server: Vec<(ConnHandle, Kind, usize)> = Vec::new();
    let (mut uploaded_at_warmup, mut uploaded) = (None, 0usize);
    let (mut next_request, mut sent_at, mut delays) = (WARMUP, None::<Time>, Vec::new());
    let mut buf = vec![0u8; 64 << 10];
    let done = sim.run(ms(60_000), |s| {
        let now = s.now;
        // The uploading app: as much as the connection takes.
        if let Some(c) = s.client.conn_mut(up).filter(|c| c.is_established()) {
            if !up_started {
                up_started = c.write(b"U").is_ok();
            }
            while up_started && c.write(&chunk).is_ok_and(|n| n > 0) {}
        }
        // The asking app: a request every GAP after the warm-up, one at a time.
        if let Some(c) = s.client.conn_mut(asker).filter(|c| c.is_established()) {
            if !asker_started {
                asker_started = c.write(b"S").is_ok();
            }
            if sent_at.is_none() && now >= next_request && delays.len() < REQUESTS {
                assert_eq!(c.write(&request).unwrap(), REQUEST, "the send buffer takes a request");
                sent_at = Some(now);
                next_request = now + GAP;
            }
            let mut answer = [0u8; ANSWER];
            while let Ok(n) = c.read(&mut answer) {
                if n == 0 {
                    break;
                }
                if let Some(t) = sent_at.take() {
                    delays.push(now - t);
                }
            }
        }
        // The server: counts the upload, answers each whole request.
        while let Some(h) = s.server.accept() {
            server.push((h, Kind::Unknown, 0));
        }
        for (h, kind, held) in server.iter_mut() {
            let Some(c) = s.server.conn_mut(*h) else { continue };
            while let Ok(n) = c.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut data = &buf[..n];
                if *kind == Kind::Unknown {
                    *kind = if data[0] == b'U' { Kind::Upload } else { Kind::Requests };
                    data = &data[1..];
                }
                if *kind == Kind::Upload {
                    uploaded += data.len();
                    continue;
                }
                *held += data.len();
                while *held >= REQUEST {
                    *held -= REQUEST;
                    assert_eq!(c.write(&[b'a'; ANSWER]).unwrap(), ANSWER);
                }
            }
        }
        if now >= WARMUP && uploaded_at_warmup.is_none() {
            uploaded_at_warmup = Some((now, uploaded));
        }
        if delays.len() == REQUESTS {
            return Flow::Done;
        }
        Flow::Wake(Some(next_request.max(now + 1_000)))
    });
    assert!(done, "{} of {REQUESTS} requests answered", delays.len());
    let (t0, b0) = uploaded_at_warmup.unwrap();
    let share = (uploaded - b0) as f64 * 8.0 / ((sim.now - t0) as f64 / 1e6) / (MBPS * 1_000_000) as f64;
    delays.sort_unstable();
    Run { delays, share }
}

#[test]
fn a_ledbat_upload_leaves_the_queue_to_the_requests_beside_it() {
    let rtt = ms(RTT_MS);
    let lia = run(CongestionControl::Lia);
    let ledbat = run(CongestionControl::Ledbat);
    let p50 = |r: &Run| r.delays[REQUESTS / 2];
    let p90 = |r: &Run| r.delays[REQUESTS * 9 / 10];
    let show = |r: &Run| {
        format!(
            "p50 {:.2} RTT, p90 {:.2} RTT, upload {:.0} %",
            p50(r) as f64 / rtt as f64,
            p90(r) as f64 / rtt as f64,
            r.share * 100.0
        )
    };
    let (lia_s, ledbat_s) = (show(&lia), show(&ledbat));
    // The scenario is what it says: LIA fills the queue, a request waits behind it.
    assert!(p50(&lia) > 3 * rtt, "LIA: {lia_s}");
    assert!(lia.share > 0.9, "LIA: {lia_s}");
    // LEDBAT: the request nearly as alone, and still most of the path for the upload.
    assert!(p50(&ledbat) < 2 * rtt && p90(&ledbat) < 2 * rtt, "LEDBAT: {ledbat_s} (LIA: {lia_s})");
    assert!(ledbat.share > 0.8, "LEDBAT: {ledbat_s}");
    eprintln!("LIA: {lia_s}\nLEDBAT: {ledbat_s}");
}
