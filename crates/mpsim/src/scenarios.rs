//! Paths that degrade without dying (issues 18 and 32): the Siri workload on the MultiMob
//! configuration (`multimob_client`, `multimob_server`, WiFi and a cellular backup) while WiFi
//! gets slow, flaps, turns lossy, or fails and returns, with or without a model of the phone's
//! cellular radio ([`crate::radio`]). [`run`] and [`run_in`] give one seed's figures;
//! `examples/scenarios.rs` prints them as a table and `tests/degrade.rs` asserts them.

use crate::apps::{Siri, SiriConfig};
use crate::{ms, multimob_backup_paths, multimob_client, multimob_server, PathEvent, RadioProfile, Sim};
use mpcore::{Config, Time};

const WIFI: usize = 0;
const CELL: usize = 1;

/// What happens to WiFi.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// One-way (uplink) delay +500 ms from 4 s on, no loss; 30 s.
    Delay,
    /// WiFi 2 s off, 3 s on, from 4 s for 30 s.
    Flap,
    /// WiFi loss 5%, then 30%, then 60%, each for 8 s from 4 s on; 30 s.
    LossRamp,
    /// 1% random WiFi loss for 60 s.
    RandomLoss,
    /// WiFi down at 4 s (between the first two requests), back at 14 s; 30 s.
    Blackout,
    /// WiFi down in the middle of a burst: 9 ms after the second request's sixth burst was
    /// written (its first packet arrives, the rest and every answer are lost), back 10 s
    /// later; 30 s.
    BurstBlackout,
    /// WiFi weakens from 6 s (during the second request: the OS reports a signal of one bar,
    /// and 5% of packets are lost), then fails at 12 s (between the second request and the
    /// third) and returns, strong, at 22 s; 30 s. The case pre-warming is for: a phone walking
    /// away from its access point.
    DegradeThenBlackout,
    /// As `DegradeThenBlackout`, but WiFi fails later, at 20 s (before the fourth request),
    /// and returns at 28 s: more than a radio tail after the OS first said it was weak.
    DegradeThenLateBlackout,
    /// Walking out of WiFi (issue 54): from 4 s WiFi loses 5% of its packets with 10 ms more
    /// uplink delay, from 12 s 15% and 30 ms, from 20 s 30% and 60 ms, and it is gone at 26 s
    /// for good; 30 s.
    Walk,
    /// As `Walk`, the OS saying WiFi is weak (one bar) from the first loss stage on.
    WalkWithHint,
    /// WiFi down for this long (µs) in the middle of a burst (as `BurstBlackout`, 9 ms after
    /// the second request's sixth burst was written), shorter than a cellular radio's
    /// promotion: the primary answers again before a failover subflow could carry anything
    /// (issue 54); 30 s.
    BurstGlitch(Time),
}

impl Scenario {
    /// The scenario the examples name on their command line (`delay`, `flap`, `ramp`, `loss`,
    /// `blackout`, `burst`, `degrade`, `late`, `walk`, `walk-hint`, `glitch`, `glitch-200`).
    pub fn named(name: &str) -> Option<Scenario> {
        Some(match name {
            "delay" => Scenario::Delay,
            "flap" => Scenario::Flap,
            "ramp" => Scenario::LossRamp,
            "loss" => Scenario::RandomLoss,
            "blackout" => Scenario::Blackout,
            "burst" => Scenario::BurstBlackout,
            "degrade" => Scenario::DegradeThenBlackout,
            "late" => Scenario::DegradeThenLateBlackout,
            "walk" => Scenario::Walk,
            "walk-hint" => Scenario::WalkWithHint,
            "glitch" => Scenario::BurstGlitch(ms(80)),
            "glitch-200" => Scenario::BurstGlitch(ms(200)),
            _ => return None,
        })
    }

    /// Issue 18's scenarios.
    pub const ALL: [Scenario; 5] =
        [Scenario::Delay, Scenario::Flap, Scenario::LossRamp, Scenario::RandomLoss, Scenario::Blackout];

    /// Every scenario, issue 32's included.
    pub const EVERY: [Scenario; 8] = [
        Scenario::Delay,
        Scenario::Flap,
        Scenario::LossRamp,
        Scenario::RandomLoss,
        Scenario::Blackout,
        Scenario::BurstBlackout,
        Scenario::DegradeThenBlackout,
        Scenario::DegradeThenLateBlackout,
    ];

    /// Walking out of WiFi (issue 54), apart from `EVERY` so that `examples/wire_hash.rs`
    /// keeps its runs.
    pub const WALKS: [Scenario; 2] = [Scenario::Walk, Scenario::WalkWithHint];

    /// WiFi down mid-burst for 80 ms, shorter than an LTE radio's promotion (issue 54), apart
    /// from `EVERY` as the walks are.
    pub const GLITCHES: [Scenario; 1] = [Scenario::BurstGlitch(80_000)];

    /// How long `BurstBlackout` and `BurstGlitch` take WiFi down.
    pub fn burst_outage(self) -> Option<Time> {
        match self {
            Scenario::BurstBlackout => Some(ms(10_000)),
            Scenario::BurstGlitch(d) => Some(d),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Walk => "Walking out of WiFi: 5% > 15% > 30% loss, gone at 26 s",
            Scenario::WalkWithHint => "The walk, the OS saying WiFi is weak at 4 s",
            Scenario::BurstGlitch(_) => "WiFi down briefly mid-burst",
            Scenario::Delay => "WiFi uplink +500 ms at 4 s",
            Scenario::Flap => "WiFi 2 s off / 3 s on",
            Scenario::LossRamp => "WiFi loss 5% > 30% > 60%",
            Scenario::RandomLoss => "WiFi 1% random loss, 60 s",
            Scenario::Blackout => "WiFi down 4 s to 14 s",
            Scenario::BurstBlackout => "WiFi down mid-burst for 10 s",
            Scenario::DegradeThenBlackout => "WiFi weak (1 bar, 5% loss), down 12-22 s",
            Scenario::DegradeThenLateBlackout => "WiFi weak (1 bar, 5% loss), down 20-28 s",
        }
    }

    /// How long the workload runs.
    pub fn duration(self) -> Time {
        match self {
            Scenario::RandomLoss => ms(60_000),
            _ => ms(30_000),
        }
    }

    /// Schedules the scenario's path events (those at fixed times).
    pub fn script(self, sim: &mut Sim) {
        match self {
            Scenario::Delay => sim.at(ms(4_000), WIFI, PathEvent::UplinkDelay(ms(500))),
            Scenario::Flap => {
                for k in 0..6 {
                    let t = ms(4_000) + k * ms(5_000);
                    sim.at(t, WIFI, PathEvent::Down);
                    sim.at(t + ms(2_000), WIFI, PathEvent::Up);
                }
            }
            Scenario::LossRamp => {
                for (k, l) in [0.05, 0.30, 0.60].into_iter().enumerate() {
                    sim.at(ms(4_000) + k as Time * ms(8_000), WIFI, PathEvent::Loss(l));
                }
                sim.at(ms(28_000), WIFI, PathEvent::Loss(0.0));
            }
            Scenario::RandomLoss => sim.at(0, WIFI, PathEvent::Loss(0.01)),
            Scenario::Blackout => {
                sim.at(ms(4_000), WIFI, PathEvent::Down);
                sim.at(ms(14_000), WIFI, PathEvent::Up);
            }
            // Timed by the workload: see `run_in`.
            Scenario::BurstBlackout | Scenario::BurstGlitch(_) => {}
            Scenario::Walk | Scenario::WalkWithHint => {
                for (k, (loss, delay)) in [(0.05, 10), (0.15, 30), (0.30, 60)].into_iter().enumerate() {
                    let at = ms(4_000) + k as Time * ms(8_000);
                    sim.at(at, WIFI, PathEvent::Loss(loss));
                    sim.at(at, WIFI, PathEvent::UplinkDelay(ms(delay)));
                }
                if self == Scenario::WalkWithHint {
                    let weak = mpcore::LinkHint { signal_level: Some(1), ..Default::default() };
                    sim.at(ms(4_000), WIFI, PathEvent::Hint(weak));
                }
                sim.at(ms(26_000), WIFI, PathEvent::Down);
            }
            Scenario::DegradeThenBlackout | Scenario::DegradeThenLateBlackout => {
                let (down, up) =
                    if self == Scenario::DegradeThenBlackout { (12_000, 22_000) } else { (20_000, 28_000) };
                let weak = mpcore::LinkHint { signal_level: Some(1), ..Default::default() };
                let strong = mpcore::LinkHint { signal_level: Some(4), ..Default::default() };
                sim.at(ms(6_000), WIFI, PathEvent::Hint(weak));
                sim.at(ms(6_000), WIFI, PathEvent::Loss(0.05));
                sim.at(ms(down), WIFI, PathEvent::Down);
                sim.at(ms(up), WIFI, PathEvent::Hint(strong));
                sim.at(ms(up), WIFI, PathEvent::Loss(0.0));
                sim.at(ms(up), WIFI, PathEvent::Up);
            }
        }
    }

    /// When WiFi is clean again for good, if it is within the run at a fixed time.
    pub fn wifi_clean_at(self) -> Option<Time> {
        match self {
            Scenario::Blackout => Some(ms(14_000)),
            Scenario::LossRamp => Some(ms(28_000)),
            Scenario::DegradeThenBlackout => Some(ms(22_000)),
            Scenario::DegradeThenLateBlackout => Some(ms(28_000)),
            _ => None,
        }
    }
}

impl Scenario {
    /// `BurstBlackout` and `BurstGlitch`: WiFi goes down 9 ms after the second request's
    /// sixth burst was written, for `outage` (taken, so that it happens once).
    fn arm(self, sim: &mut Sim, app: &Siri, outage: &mut Option<Time>) {
        if app.results.len() == 2 && app.next_burst() == 6 {
            if let Some(d) = outage.take() {
                sim.at(sim.now + ms(9), WIFI, PathEvent::Down);
                sim.at(sim.now + ms(9) + d, WIFI, PathEvent::Up);
            }
        }
    }
}

/// How a scenario runs: both ends' configurations and the cellular radio.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The client's configuration (`None`: [`multimob_client`] with the default oracle).
    pub client: Option<Config>,
    /// The server's (`None`: [`multimob_server`]).
    pub server: Option<Config>,
    /// The phone's cellular radio (`None`: one always connected).
    pub radio: Option<RadioProfile>,
    /// The cellular path's capacity as traces, up and down (`None`: its 10 Mbit/s), with its
    /// 25 ms round trip: [`crate::trace::lte_drive`] for a drive.
    pub cell_trace: Option<[&'static crate::trace::Trace; 2]>,
}

impl Setup {
    /// The MultiMob client, no radio model.
    pub fn plain() -> Self {
        Self { client: None, server: None, radio: None, cell_trace: None }
    }

    /// The MultiMob client with an LTE radio.
    pub fn lte() -> Self {
        Self { radio: Some(RadioProfile::LTE), ..Self::plain() }
    }

    /// The `backup` path manager (the cellular subflow joined at once as a backup), lowest-RTT
    /// on both ends, no oracle: the demo's second pair.
    pub fn backup() -> Self {
        let client = Config::default().with(|c| c.multipath.path_manager = mpcore::PathManager::Backup);
        Self { client: Some(client), server: Some(Config::default()), radio: None, cell_trace: None }
    }

    /// This setup with a radio of `profile` on the cellular path.
    pub fn with_radio(self, profile: RadioProfile) -> Self {
        Self { radio: Some(profile), ..self }
    }

    /// This setup with the cellular path's capacity from the LTE drive's traces
    /// ([`crate::trace::lte_drive`]).
    pub fn on_lte_drive(self) -> Self {
        Self { cell_trace: Some(crate::trace::lte_drive()), ..self }
    }
}

/// One run's figures.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    pub requests: usize,
    pub answered: usize,
    /// Median of the final responses' delays (end of the last burst to the first byte).
    pub median_ms: f64,
    /// The longest wait for any response, intermediate ones included.
    pub worst_ms: f64,
    /// Datagrams on the cellular path, both ways.
    pub cell_packets: usize,
    /// Of those, the WARMs that woke the radio (one byte each, PROTOCOL.md §3.3): the rest
    /// are a subflow's (its join, data, ACKs).
    pub cell_warms: usize,
    /// Stream bytes sent on cellular subflows, both ways (first sendings, retransmissions and
    /// a fast join's data): 0 when cellular carried no data, whatever joins or WARMs it saw.
    pub cell_data_bytes: u64,
    /// Of those, the bytes that arrived already received (`data_bytes_duplicate` at either
    /// end's cellular subflows): what a failover's hedge sent over cellular for nothing.
    pub cell_wasted_bytes: u64,
    /// Datagrams on the WiFi path, both ways.
    pub wifi_packets: usize,
    /// Bytes of the client's datagrams on the cellular path (what a failover sent there;
    /// wasted where WiFi delivered the same data first).
    pub cell_up_bytes: usize,
    /// Cellular energy above idle over the scenario's duration (the BRIEF's model).
    pub cell_joules: f64,
    /// The least energy the same model gives for a radio connected from this run's first
    /// cellular packet until WiFi is clean plus the fail-back hold (carrying nothing, so
    /// only the promotion, the connected state and the tail count): what any fail-back within
    /// the hold must spend. `None` where WiFi is never clean again or cellular was unused.
    pub cell_floor_joules: Option<f64>,
    /// The last cellular datagram.
    pub cell_last: Option<Time>,
    /// Radio promotions from idle over the scenario's duration.
    pub promotions: u32,
    /// A hash of every datagram on every path (time, direction, size, fate): equal hashes
    /// mean the two runs put the same datagrams on the wire (`examples/wire_hash.rs`).
    pub wire: u64,
}

/// The energy of a cellular radio kept connected (a packet every 5 s, inside its 11.6 s tail)
/// from `from` to `to`, over `[0, end]`: promotion, connected state and tail, no data.
fn connected_floor(from: Time, to: Time, end: Time) -> f64 {
    let model = oracle::energy::Model::default();
    let mut packets = Vec::new();
    let mut t = from;
    while t < to {
        packets.push(oracle::energy::Packet { time: t, up: true, bytes: 0 });
        t += ms(5_000);
    }
    packets.push(oracle::energy::Packet { time: to, up: true, bytes: 0 });
    oracle::energy::estimate(&model, &packets, 0, end).above_idle_joules
}

/// One seed of `s` as `setup` has it, the workload run to its end: the simulator and the
/// workload, to read (`run_in` takes its figures from them; `examples/walk_trace.rs` its log).
pub fn simulate(s: Scenario, seed: u64, setup: &Setup) -> (Sim, Siri) {
    let client = setup.client.clone().unwrap_or_else(|| multimob_client(oracle::Config::default()));
    let mut paths = multimob_backup_paths();
    if let Some(r) = setup.radio {
        paths[CELL] = paths[CELL].with_radio(r);
    }
    paths[CELL].trace = setup.cell_trace;
    let server = setup.server.clone().unwrap_or_else(multimob_server);
    let mut sim = Sim::new(seed, client, server, paths).expect("a valid configuration");
    s.script(&mut sim);
    // A request and its wait take about 6 s: as many as keep the workload going for the
    // whole scenario, then 10 s of quiet in which the cellular subflow must be let go.
    let requests = (s.duration() / ms(6_000)) as usize;
    let mut app = Siri::new(SiriConfig { requests, ..SiriConfig::default() }, seed);
    let mut outage = s.burst_outage();
    sim.run(s.duration() + ms(30_000), |sim| {
        let flow = app.drive(sim);
        s.arm(sim, &app, &mut outage);
        flow
    });
    (sim, app)
}

/// One seed of `s` as `setup` has it.
pub fn run_in(s: Scenario, seed: u64, setup: &Setup) -> Outcome {
    let (mut sim, app) = simulate(s, seed, setup);
    let client_hold = sim.client.config().multipath.fail_back_hold;
    let quiet = sim.now + ms(10_000);
    sim.run_until(quiet, |_| None);
    let mut finals: Vec<Time> = app.results.iter().filter_map(|r| r.delay).collect();
    finals.sort_unstable();
    let worst = app.results.iter().filter_map(|r| r.max_burst_delay()).max().unwrap_or(0);
    let log = sim.path_log(CELL);
    let floor = match (s.wifi_clean_at(), log.first()) {
        (Some(clean), Some(first)) => Some(connected_floor(first.time, clean + client_hold, s.duration())),
        _ => None,
    };
    let energy = sim.radio_energy(CELL, 0, s.duration());
    // The client's subflows from its cellular path, and the server's to that path's address.
    let (cell_data_bytes, cell_wasted_bytes) = {
        let client = app.client.and_then(|h| sim.client.stats(h)).map(|s| s.subflows).unwrap_or_default();
        let server = app.server.and_then(|h| sim.server.stats(h)).map(|s| s.subflows).unwrap_or_default();
        let mine = client.iter().filter(|sf| sf.path == mpcore::PathId(CELL as u8));
        let theirs = server.iter().filter(|sf| sf.remote == crate::client_addr(CELL));
        let cell: Vec<_> = mine.chain(theirs).collect();
        (
            cell.iter().map(|sf| sf.counters.data_bytes_sent).sum(),
            cell.iter().map(|sf| sf.counters.data_bytes_duplicate).sum(),
        )
    };
    let wire = {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for p in 0..sim.path_count() {
            sim.path_log(p).hash(&mut h);
        }
        h.finish()
    };
    Outcome {
        wire,
        requests: app.cfg.requests,
        answered: finals.len(),
        median_ms: finals.get(finals.len() / 2).map_or(f64::NAN, |&d| d as f64 / 1e3),
        worst_ms: worst as f64 / 1e3,
        cell_packets: log.len(),
        cell_warms: log.iter().filter(|e| e.dir == crate::Dir::Up && e.size == 1).count(),
        cell_data_bytes,
        cell_wasted_bytes,
        wifi_packets: sim.path_log(WIFI).len(),
        cell_up_bytes: log.iter().filter(|e| e.dir == crate::Dir::Up).map(|e| e.size).sum(),
        cell_joules: energy.above_idle_joules,
        cell_floor_joules: floor,
        cell_last: log.last().map(|e| e.time),
        promotions: energy.promotions,
    }
}

/// One seed of `s` with `client` as the client's configuration (`None`: the MultiMob one),
/// no radio model.
pub fn run_with(s: Scenario, seed: u64, client: Option<Config>) -> Outcome {
    run_in(s, seed, &Setup { client, ..Setup::plain() })
}

pub fn run(s: Scenario, seed: u64) -> Outcome {
    run_with(s, seed, None)
}
