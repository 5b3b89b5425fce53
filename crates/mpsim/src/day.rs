//! Issue 17, "a day in a phone's life": 24 hours of virtual time on one connection, WiFi and a
//! cellular backup. A Siri request about every 10 minutes; WiFi lost and found 100 times (the
//! link fails and the driver says so; every other time the driver reports it back a second
//! before it carries packets); the WiFi address changes 20 times, half make-before-break (the
//! new address first), half break-before-make (a DHCP gap of 3 s); one hour fully idle.
//! [`run`] plays it for a configuration (`tests/day.rs` asserts the phone presets' day;
//! `examples/prewarm.rs` weighs the pre-warming settings by it).

use crate::apps::{RequestResult, Siri, SiriConfig};
use crate::{ms, Flow, PathEvent, RadioProfile, Rng, Sim};
use mpcore::{Config, ConnHandle, Iface, LocalPath, PathId, Time};
use std::net::SocketAddr;

/// An hour of virtual time.
pub const HOUR: Time = 3_600_000_000;
const WIFI: usize = 0;
const CELL: usize = 1;

#[derive(Clone, Copy, Debug)]
enum Act {
    /// The WiFi link fails and the driver reports it down; `up` later it is back.
    Outage { up: Time },
    /// A new WiFi address; `gap`: the old one goes first and the new one comes after it.
    Renumber { gap: Option<Time> },
}

/// The day's script: WiFi's outages and renumberings, and what it has done so far.
#[derive(Debug)]
pub struct Day {
    acts: Vec<(Time, Act)>,
    /// Pending second halves: (time, what).
    later: Vec<(Time, Later)>,
    wifi: PathId,
    next_addr: u8,
    /// Outages and renumberings begun so far.
    pub outages: usize,
    pub renumbered: usize,
    /// When WiFi was unusable: outages and DHCP gaps, (from, to).
    pub gaps: Vec<(Time, Time)>,
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
    pub fn new(seed: u64) -> Self {
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
    pub fn step(&mut self, sim: &mut Sim) -> Option<Time> {
        let now = sim.now;
        while self.acts.first().is_some_and(|a| a.0 <= now) {
            let (_, act) = self.acts.remove(0);
            match act {
                Act::Outage { up } => {
                    sim.change(WIFI, PathEvent::Down);
                    sim.client.set_path_up(now, self.wifi, false);
                    // Every other outage ends with the driver a second early.
                    let after = if self.outages.is_multiple_of(2) { 0 } else { ms(1_000) };
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

/// How a day is played.
#[derive(Clone, Debug)]
pub struct DaySetup {
    pub seed: u64,
    pub client: Config,
    pub server: Config,
    /// The phone's cellular radio (`None`: one always connected).
    pub radio: Option<RadioProfile>,
    /// Random loss on WiFi all day (0: none).
    pub wifi_loss: f64,
}

impl DaySetup {
    /// The phone presets' day (`Config::phone`, `Config::server`), seed 24, no radio model.
    pub fn phone() -> Self {
        Self { seed: 24, client: Config::phone(), server: Config::server(), radio: None, wifi_loss: 0.0 }
    }
}

/// A day played: the simulation, the script, every request's result, the connection, and the
/// most subflow records each side held.
#[derive(Debug)]
pub struct DayRun {
    pub sim: Sim,
    pub day: Day,
    pub results: Vec<RequestResult>,
    pub conn: ConnHandle,
    pub most_records: (usize, usize),
}

/// Plays the day; `Err` says what went wrong (a connection lost, a request unanswered).
pub fn run(setup: &DaySetup) -> Result<DayRun, String> {
    let mut paths = crate::multimob_backup_paths();
    if let Some(r) = setup.radio {
        paths[CELL] = paths[CELL].with_radio(r);
    }
    let mut sim = Sim::new(setup.seed, setup.client.clone(), setup.server.clone(), paths).map_err(|e| e.to_string())?;
    if setup.wifi_loss > 0.0 {
        sim.at(0, WIFI, PathEvent::Loss(setup.wifi_loss));
    }
    let mut day = Day::new(setup.seed);
    // A request about every 10 minutes: 72 before the idle hour, 66 after it.
    let siri = |requests, start| SiriConfig { requests, start, wait: ms(597_000), ..SiriConfig::default() };
    let mut most_records = (0, 0);
    let mut lost = None;
    let mut run = |sim: &mut Sim, app: &mut Siri, day: &mut Day, until: Time| {
        let done = sim.run(until, |s| {
            let wake = day.step(s);
            let flow = app.drive(s);
            if let (Some(c), Some(sv)) = (app.client, app.server) {
                let (Some(c), Some(sv)) = (s.client.conn(c), s.server.conn(sv)) else {
                    lost.get_or_insert(s.now);
                    return Flow::Done;
                };
                most_records = (most_records.0.max(c.subflow_records()), most_records.1.max(sv.subflow_records()));
            }
            match flow {
                Flow::Done => Flow::Done,
                Flow::Wake(w) => Flow::Wake([w, wake].into_iter().flatten().min()),
            }
        });
        if let Some(t) = lost {
            return Err(format!("the connection is gone at {t} µs"));
        }
        done.then_some(()).ok_or_else(|| format!("a request unanswered by {:.2} h", until as f64 / HOUR as f64))
    };
    let mut morning = Siri::new(siri(72, ms(200)), 1);
    run(&mut sim, &mut morning, &mut day, 12 * HOUR)?;
    // The idle hour, 12 h to 13 h: nothing to send, no network event.
    sim.run(13 * HOUR, |s| Flow::Wake(day.step(s)));
    let mut afternoon = Siri::new(siri(66, 13 * HOUR), 2);
    (afternoon.client, afternoon.server) = (morning.client, morning.server);
    run(&mut sim, &mut afternoon, &mut day, 24 * HOUR)?;
    sim.run(24 * HOUR, |s| Flow::Wake(day.step(s)));
    let conn = morning.client.ok_or("no connection")?;
    let results = morning.results.into_iter().chain(afternoon.results).collect();
    Ok(DayRun { sim, day, results, conn, most_records })
}
