//! Issue 17, "a day in a phone's life": 24 hours of virtual time on one connection with the
//! phone presets (`Config::phone`, `Config::server`), WiFi and a cellular backup. A Siri request
//! about every 10 minutes; WiFi lost and found 100 times (the link fails and the driver says so;
//! every other time the driver reports it back a second before it carries packets); the WiFi address changes 20 times, half make-before-break (the new address first), half
//! break-before-make (a DHCP gap of 3 s); one hour fully idle. Run it with `--nocapture` for the
//! report.
#![allow(clippy::unwrap_used)]

use mpcore::{Config, Iface, LocalPath, PathId, Time};
use mpsim::apps::{Siri, SiriConfig};
use mpsim::{ms, Dir, Flow, PathEvent, Rng, Sim};
use std::net::SocketAddr;

const HOUR: Time = 3_600_000_000;
const WIFI: usize = 0;
const CELL: usize = 1;

#[derive(Clone, Copy, Debug)]
enum Act {
    /// The WiFi link fails and the driver reports it down; `up` later it is back.
    Outage { up: Time },
    /// A new WiFi address; `gap`: the old one goes first and the new one comes after it.
    Renumber { gap: Option<Time> },
}

struct Day {
    acts: Vec<(Time, Act)>,
    /// Pending second halves: (time, what).
    later: Vec<(Time, Later)>,
    wifi: PathId,
    next_addr: u8,
    outages: usize,
    renumbered: usize,
    /// When WiFi was unusable: outages and DHCP gaps, (from, to).
    gaps: Vec<(Time, Time)>,
}

#[derive(Clone, Copy, Debug)]
enum Later {
    /// The driver reports WiFi up; the link carries packets only `after` that (association
    /// and DHCP still finishing: the first join from it is lost).
    LinkUp {
        after: Time,
    },
    /// The link carries packets again.
    Carries,
    Add(SocketAddr),
}

impl Day {
    /// 120 events in 120 equal slots of the 23 busy hours (the idle hour, 12 h to 13 h, has
    /// none), each at a random point of its slot; 100 outages of 10 s to 5 min, 20 renumberings.
    fn new(seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let mut kinds: Vec<bool> = (0..120).map(|k| k < 20).collect();
        for k in (1..kinds.len()).rev() {
            kinds.swap(k, rng.range(0, k as u64) as usize);
        }
        // 63 slots in the 12 hours before the idle one, 57 in the 11 after it.
        let (morning, afternoon) = (12 * HOUR / 63, 11 * HOUR / 57);
        let mut renumbers = 0;
        let acts = kinds
            .iter()
            .enumerate()
            .map(|(k, &renumber)| {
                let (start, slot) = match k {
                    k if k < 63 => (k as Time * morning, morning),
                    k => (13 * HOUR + (k as Time - 63) * afternoon, afternoon),
                };
                // Everything of an event (up to 5 min, a 3 s fail-back) ends within its slot.
                let at = start + ms(60_000) + rng.range(0, slot - ms(7 * 60_000));
                let act = if renumber {
                    renumbers += 1;
                    Act::Renumber { gap: (renumbers % 2 == 0).then_some(ms(3_000)) }
                } else {
                    Act::Outage { up: at + rng.range(ms(10_000), ms(300_000)) }
                };
                (at, act)
            })
            .collect();
        Self {
            acts,
            later: Vec::new(),
            wifi: PathId(WIFI as u8),
            next_addr: 3,
            outages: 0,
            renumbered: 0,
            gaps: Vec::new(),
        }
    }

    fn wifi_path(addr: SocketAddr) -> LocalPath {
        LocalPath { addr, iface: Iface::Wifi, backup: false }
    }

    /// Applies what is due; returns when it next has something to do.
    fn step(&mut self, sim: &mut Sim) -> Option<Time> {
        let now = sim.now;
        while self.acts.first().is_some_and(|a| a.0 <= now) {
            let (_, act) = self.acts.remove(0);
            match act {
                Act::Outage { up } => {
                    sim.change(WIFI, PathEvent::Down);
                    sim.client.set_path_up(now, self.wifi, false);
                    // Every other outage ends with the driver a second early.
                    let after = if self.outages % 2 == 0 { 0 } else { ms(1_000) };
                    self.later.push((up, Later::LinkUp { after }));
                    self.outages += 1;
                    self.gaps.push((now, up + after));
                }
                Act::Renumber { gap } => {
                    let addr = SocketAddr::from(([10, 1, 0, self.next_addr], 40_000));
                    self.next_addr += 1;
                    self.renumbered += 1;
                    let old = self.wifi;
                    match gap {
                        None => {
                            self.wifi = sim.add_client_path(WIFI, Self::wifi_path(addr));
                            sim.remove_client_path(old);
                        }
                        Some(gap) => {
                            sim.remove_client_path(old);
                            self.later.push((now + gap, Later::Add(addr)));
                            self.gaps.push((now, now + gap));
                        }
                    }
                }
            }
        }
        while let Some(k) = self.later.iter().position(|l| l.0 <= now) {
            let (_, l) = self.later.remove(k);
            match l {
                Later::LinkUp { after } => {
                    if after == 0 {
                        sim.change(WIFI, PathEvent::Up);
                    } else {
                        self.later.push((now + after, Later::Carries));
                    }
                    sim.client.set_path_up(now, self.wifi, true);
                }
                Later::Carries => sim.change(WIFI, PathEvent::Up),
                Later::Add(addr) => self.wifi = sim.add_client_path(WIFI, Self::wifi_path(addr)),
            }
        }
        self.acts.iter().map(|a| a.0).chain(self.later.iter().map(|l| l.0)).min()
    }
}

/// Packets on `path` in `from..to`, (up, down).
fn packets(sim: &Sim, path: usize, from: Time, to: Time) -> (usize, usize) {
    let n = |d: Dir| sim.path_log(path).iter().filter(|e| e.dir == d && (from..to).contains(&e.time)).count();
    (n(Dir::Up), n(Dir::Down))
}

#[test]
fn a_day_in_a_phones_life() {
    let wall = std::time::Instant::now();
    let mut sim = Sim::new(24, Config::phone(), Config::server(), mpsim::multimob_backup_paths()).unwrap();
    let mut day = Day::new(24);
    // A request about every 10 minutes: 72 before the idle hour, 66 after it.
    let siri = |requests, start| SiriConfig { requests, start, wait: ms(597_000), ..SiriConfig::default() };
    let mut most_records = (0, 0);
    let mut run = |sim: &mut Sim, app: &mut Siri, day: &mut Day, until: Time| {
        let done = sim.run(until, |s| {
            let wake = day.step(s);
            let flow = app.drive(s);
            if let (Some(c), Some(sv)) = (app.client, app.server) {
                let (Some(c), Some(sv)) = (s.client.conn(c), s.server.conn(sv)) else {
                    let tail: Vec<_> = app.events.iter().filter(|e| !matches!(e.2, mpcore::Event::Readable)).collect();
                    panic!("the connection is gone at {} µs: {tail:#?}", s.now);
                };
                most_records = (most_records.0.max(c.subflow_records()), most_records.1.max(sv.subflow_records()));
            }
            match flow {
                Flow::Done => Flow::Done,
                Flow::Wake(w) => Flow::Wake([w, wake].into_iter().flatten().min()),
            }
        });
        assert!(done, "every request answered by {:.2} h", until as f64 / HOUR as f64);
    };
    let mut morning = Siri::new(siri(72, ms(200)), 1);
    run(&mut sim, &mut morning, &mut day, 12 * HOUR);
    // The idle hour, 12 h to 13 h: nothing to send, no network event.
    let idle_from = 12 * HOUR;
    sim.run(13 * HOUR, |s| Flow::Wake(day.step(s)));
    let idle = HOUR;
    let mut afternoon = Siri::new(siri(66, 13 * HOUR), 2);
    (afternoon.client, afternoon.server) = (morning.client, morning.server);
    run(&mut sim, &mut afternoon, &mut day, 24 * HOUR);
    let end = 24 * HOUR;
    sim.run(end, |s| Flow::Wake(day.step(s)));

    let c = sim.client.conn(morning.client.unwrap()).unwrap();
    assert!(c.is_established() && !c.is_closed(), "one connection all day");
    let results: Vec<_> = morning.results.iter().chain(&afternoon.results).collect();
    assert_eq!(results.len(), 138);
    let mut delays: Vec<Time> = results.iter().map(|r| r.max_burst_delay().unwrap()).collect();
    delays.sort_unstable();
    let (wifi_idle, cell_idle) = (packets(&sim, WIFI, idle_from, 13 * HOUR), packets(&sim, CELL, idle_from, 13 * HOUR));
    let per_hour = |n: usize| n as f64 * HOUR as f64 / idle as f64;
    let energy = sim.radio_energy(CELL, 0, end);
    let cell_day = packets(&sim, CELL, 0, end);
    println!("a day: {} outages, {} WiFi renumberings, {} requests", day.outages, day.renumbered, results.len());
    println!(
        "idle hour ({:.2} h): WiFi {:.0} up + {:.0} down per hour, cellular {:.0} up + {:.0} down per hour",
        idle as f64 / HOUR as f64,
        per_hour(wifi_idle.0),
        per_hour(wifi_idle.1),
        per_hour(cell_idle.0),
        per_hour(cell_idle.1)
    );
    println!(
        "request delay (worst burst): median {:.1} ms, p90 {:.1} ms, max {:.1} ms",
        delays[delays.len() / 2] as f64 / 1e3,
        delays[delays.len() * 9 / 10] as f64 / 1e3,
        delays[delays.len() - 1] as f64 / 1e3
    );
    println!(
        "cellular over the day: {} up / {} down packets, {:.1} J above idle, {} promotions",
        cell_day.0, cell_day.1, energy.above_idle_joules, energy.promotions
    );
    println!(
        "subflow records at most: client {}, server {}; closed subflows kept {}; wall time {:.2} s",
        most_records.0,
        most_records.1,
        c.stats().subflows.len(),
        wall.elapsed().as_secs_f64()
    );
    // Only keep-alives while idle: a PING every 15 s on WiFi (240 an hour) and its ACK, and
    // nothing on cellular.
    assert!(per_hour(wifi_idle.0) <= 241.0 && per_hour(wifi_idle.1) <= 241.0, "{wifi_idle:?} in the idle hour");
    assert!(wifi_idle.0 >= 200, "keep-alives kept going: {wifi_idle:?}");
    assert_eq!(cell_idle, (0, 0), "cellular silent while WiFi works");
    // Cellular carried the outages and the DHCP gaps, and nothing else: every cellular packet
    // falls in one of them, or in the fail-back after it: WiFi's join (its retries 1 s and
    // 2 s apart, when the link was not carrying yet), the oracle periods seeing WiFi carry
    // packets (its flags cleared), then the 3 s hold.
    let hold = Config::phone().fail_back_hold + ms(6_000);
    let stray: Vec<Time> = (sim.path_log(CELL).iter().map(|e| e.time))
        .filter(|&t| !day.gaps.iter().any(|&(a, b)| (a..=b + hold).contains(&t)))
        .collect();
    assert!(stray.is_empty(), "cellular packets outside WiFi's gaps: {stray:?}");
    // The records follow the live subflows, not the day's 200-odd subflows.
    assert!(most_records.0 <= 12 && most_records.1 <= 12, "{most_records:?}");
    // A request that met an outage waited for the failover; none waited for long.
    assert!(delays[delays.len() - 1] < ms(3_000), "worst request {} ms", delays[delays.len() - 1] / 1000);
}
