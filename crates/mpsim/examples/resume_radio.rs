//! Would resumption's round trip hold on a phone? The first-byte delay of a request on a new
//! connection, fresh (the full handshake) against resumed with the request as 0-RTT data
//! (PROTOCOL.md §4.8-4.9), on MultiMob's two paths in the simulator, the request sent after
//! the phone was idle long enough (20 s) for its radio to sleep: WiFi (RTT 15 ms, no radio
//! model) and cellular (RTT 25 ms) with an LTE and an NR SA radio (`oracle::radio`), whose
//! promotion every connection then pays.
//!
//! Run: `cargo run --release -p mpsim --example resume_radio`
#![allow(clippy::unwrap_used)]

use mpcore::{Config, ConnHandle, PathId, Resumption, ResumptionTicket};
use mpsim::{ms, multimob_paths, server_addr, Flow, RadioProfile, Sim};

const UNIX: u64 = 1_700_000_000_000;
const IDLE_MS: u64 = 20_000;

/// Connects on `path` (resuming with `ticket` and the request early if given) and runs until
/// the answer's first byte: the delay in µs, and the connection's next ticket.
fn ask(sim: &mut Sim, path: PathId, ticket: Option<&ResumptionTicket>) -> (u64, Option<ResumptionTicket>) {
    let start = sim.now;
    let request = [0x42u8; 500];
    let c: ConnHandle = match ticket {
        Some(t) => sim.client.connect_resuming(start, path, server_addr(), t).unwrap(),
        None => sim.client.connect(start, path, server_addr()).unwrap(),
    };
    let cc = sim.client.conn_mut(c).unwrap();
    if ticket.is_some() {
        cc.write_early(&request).unwrap();
    } else {
        cc.write(&request).unwrap();
    }
    let (mut server, mut first, mut got) = (None, None, 0usize);
    let mut buf = [0u8; 4096];
    sim.run(start + ms(10_000), |s| {
        server = server.or_else(|| s.server.accept());
        if let Some(sc) = server.and_then(|h| s.server.conn_mut(h)) {
            while let Ok(n) = sc.read(&mut buf) {
                if n == 0 {
                    break;
                }
                got += n;
                if got >= request.len() {
                    sc.write(b"answer").unwrap();
                }
            }
        }
        if let Some(cc) = s.client.conn_mut(c) {
            if matches!(cc.read(&mut buf), Ok(n) if n > 0) {
                first = Some(s.now - start);
            }
        }
        if first.is_some() {
            Flow::Done
        } else {
            Flow::Wake(None)
        }
    });
    // The ticket comes with the connection's first packets; then both ends close.
    sim.run_until(sim.now + ms(200), |_| None);
    let next = sim.client.take_ticket(c);
    if let Some(cc) = sim.client.conn_mut(c) {
        cc.close();
    }
    if let Some(sc) = server.and_then(|h| sim.server.conn_mut(h)) {
        sc.close();
    }
    (first.expect("an answer"), next)
}

fn median(mut v: Vec<u64>) -> f64 {
    v.sort_unstable();
    v[v.len() / 2] as f64 / 1e3
}

fn main() {
    let rows = [
        ("WiFi, RTT 15 ms", PathId(0), None),
        ("cellular, RTT 25 ms, LTE radio", PathId(1), Some(RadioProfile::LTE)),
        ("cellular, RTT 25 ms, NR SA radio", PathId(1), Some(RadioProfile::NR_SA)),
    ];
    println!("| path, after {} s idle | fresh handshake (ms) | resumed, 0-RTT (ms) | saved (ms) |", IDLE_MS / 1000);
    println!("|---|---|---|---|");
    for (name, path, radio) in rows {
        let mut paths = multimob_paths();
        if let Some(r) = radio {
            paths[1] = paths[1].with_radio(r);
        }
        let client = Config::default().with(|c| c.resumption = Resumption { accept: true, ..Resumption::default() });
        let server = Config::default()
            .with(|c| c.resumption = Resumption { issue: true, early_data: true, ..Resumption::default() });
        let mut sim = Sim::new(5, client, server, paths).unwrap();
        sim.client.set_unix_time(0, UNIX);
        sim.server.set_unix_time(0, UNIX);
        let (mut fresh, mut resumed) = (Vec::new(), Vec::new());
        let (_, mut ticket) = ask(&mut sim, path, None);
        for _ in 0..5 {
            for early in [false, true] {
                let now = sim.now;
                sim.run_until(now + ms(IDLE_MS), |_| None);
                if early {
                    let (d, next) = ask(&mut sim, path, ticket.as_ref());
                    resumed.push(d);
                    ticket = next;
                } else {
                    fresh.push(ask(&mut sim, path, None).0);
                }
            }
        }
        let (f, r) = (median(fresh), median(resumed));
        println!("| {name} | {f:.1} | {r:.1} | {:.1} |", f - r);
    }
}
