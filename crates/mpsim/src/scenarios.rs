//! Paths that degrade without dying (issue 18): the Siri workload on the MultiMob
//! configuration (`multimob_client`, `multimob_server`, WiFi and a cellular backup) while WiFi
//! gets slow, flaps, turns lossy, or fails and returns. [`run`] gives one seed's figures;
//! `examples/scenarios.rs` prints them as a table and `tests/degrade.rs` asserts them.

use crate::apps::{Siri, SiriConfig};
use crate::{ms, multimob_backup_paths, multimob_client, multimob_server, PathEvent, Sim};
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
    /// WiFi down at 4 s, back at 14 s; 30 s.
    Blackout,
}

impl Scenario {
    pub const ALL: [Scenario; 5] =
        [Scenario::Delay, Scenario::Flap, Scenario::LossRamp, Scenario::RandomLoss, Scenario::Blackout];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Delay => "WiFi uplink +500 ms at 4 s",
            Scenario::Flap => "WiFi 2 s off / 3 s on",
            Scenario::LossRamp => "WiFi loss 5% > 30% > 60%",
            Scenario::RandomLoss => "WiFi 1% random loss, 60 s",
            Scenario::Blackout => "WiFi down 4 s to 14 s",
        }
    }

    /// How long the workload runs.
    pub fn duration(self) -> Time {
        match self {
            Scenario::RandomLoss => ms(60_000),
            _ => ms(30_000),
        }
    }

    /// Schedules the scenario's path events.
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
        }
    }

    /// When WiFi is clean again for good, if it is within the run.
    pub fn wifi_clean_at(self) -> Option<Time> {
        match self {
            Scenario::Blackout => Some(ms(14_000)),
            Scenario::LossRamp => Some(ms(28_000)),
            _ => None,
        }
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
    /// Cellular energy above idle over the scenario's duration (the BRIEF's model).
    pub cell_joules: f64,
    /// The least energy the same model gives for a radio connected from this run's first
    /// cellular packet until WiFi is clean plus the fail-back hold (carrying nothing, so
    /// only the promotion, the connected state and the tail count): what any fail-back within
    /// the hold must spend. `None` where WiFi is never clean again or cellular was unused.
    pub cell_floor_joules: Option<f64>,
    /// The last cellular datagram.
    pub cell_last: Option<Time>,
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

/// One seed of `s` with `client` as the client's configuration (`None`: the MultiMob one).
pub fn run_with(s: Scenario, seed: u64, client: Option<Config>) -> Outcome {
    let client = client.unwrap_or_else(|| multimob_client(oracle::Config::default()));
    let client_hold = client.fail_back_hold;
    let mut sim = Sim::new(seed, client, multimob_server(), multimob_backup_paths()).expect("a valid configuration");
    s.script(&mut sim);
    // A request and its wait take about 6 s: as many as keep the workload going for the
    // whole scenario, then 10 s of quiet in which the cellular subflow must be let go.
    let requests = (s.duration() / ms(6_000)) as usize;
    let mut app = Siri::new(SiriConfig { requests, ..SiriConfig::default() }, seed);
    sim.run(s.duration() + ms(30_000), |sim| app.drive(sim));
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
    Outcome {
        requests,
        answered: finals.len(),
        median_ms: finals.get(finals.len() / 2).map_or(f64::NAN, |&d| d as f64 / 1e3),
        worst_ms: worst as f64 / 1e3,
        cell_packets: log.len(),
        cell_joules: sim.radio_energy(CELL, 0, s.duration()).above_idle_joules,
        cell_floor_joules: floor,
        cell_last: log.last().map(|e| e.time),
    }
}

pub fn run(s: Scenario, seed: u64) -> Outcome {
    run_with(s, seed, None)
}
