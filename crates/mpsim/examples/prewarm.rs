//! Pre-warming's trade-off (issue 32), as one table: for each setting of `Config::multipath.prewarm`,
//! the worst response over seeds 1-3 in the scenarios where WiFi fails or degrades, with an
//! LTE radio on the cellular path (promotion 0.26 s, tail 11.6 s), the cellular energy they
//! cost, and the energy of a whole day (`mpsim::day`, the phone presets, LTE) with clean WiFi
//! and with 1% random WiFi loss all day, where every warm-up is a false alarm; and MultiMob
//! Fig. 4's setting at 5% WiFi loss (four requests beside a 12 KB/s background connection),
//! where the oracle alone never opens cellular.
//!
//! Run: `cargo run --release -p mpsim --example prewarm`

use mpcore::{Config, Prewarm};
use mpsim::apps::{Siri, SiriConfig, Trickle};
use mpsim::day::DaySetup;
use mpsim::scenarios::{run_in, Scenario, Setup};
use mpsim::{ms, multimob_backup_paths, multimob_client, multimob_server, PathEvent, RadioProfile, Sim};

/// MultiMob Fig. 4's setting at 5% WiFi loss, LTE radio: the cellular energy above idle (J).
fn fig4_five_percent(seed: u64, prewarm: Prewarm) -> f64 {
    let client = multimob_client(oracle::Config::default()).with(|c| {
        c.multipath.failover_on_timeout = false;
        c.multipath.prewarm = prewarm;
    });
    let mut paths = multimob_backup_paths();
    paths[1] = paths[1].with_radio(RadioProfile::LTE);
    let Ok(mut sim) = Sim::new(seed, client, multimob_server(), paths) else { return f64::NAN };
    let mut background = Trickle::new(&mut sim);
    let mut app = Siri::new(SiriConfig { requests: 4, ..SiriConfig::default() }, seed);
    sim.at(ms(200 + 8 * 300 + 1_000), 0, PathEvent::Loss(0.05));
    background.beside(&mut sim, &mut app, ms(120_000));
    sim.radio_energy(1, 0, sim.now).above_idle_joules
}

const SCENARIOS: [Scenario; 6] = [
    Scenario::Blackout,
    Scenario::BurstBlackout,
    Scenario::LossRamp,
    Scenario::DegradeThenBlackout,
    Scenario::DegradeThenLateBlackout,
    Scenario::RandomLoss,
];

fn main() {
    let settings = [
        ("off", Prewarm::OFF),
        ("once", Prewarm::ONCE),
        ("10 s, hold 20 s (default)", Prewarm::DEFAULT),
        ("10 s, hold 120 s", Prewarm { every: 10_000_000, hold: 120_000_000 }),
    ];
    let mut head = String::from("| pre-warm |");
    for s in SCENARIOS {
        head += &format!(" {}: worst ms / J |", s.name());
    }
    head += " a day, J above idle (promotions) | a day at 1% WiFi loss | Fig. 4 at 5% loss, J |";
    println!("{head}");
    println!("|{}", "---|".repeat(SCENARIOS.len() + 4));
    for (name, prewarm) in settings {
        let client = multimob_client(oracle::Config::default()).with(|c| c.multipath.prewarm = prewarm);
        let setup = Setup { client: Some(client), ..Setup::lte() };
        let mut row = format!("| {name} |");
        for s in SCENARIOS {
            let runs: Vec<_> = (1..=3).map(|seed| run_in(s, seed, &setup)).collect();
            let worst = runs.iter().map(|o| o.worst_ms).fold(0.0, f64::max);
            let joules = runs.iter().map(|o| o.cell_joules).sum::<f64>() / runs.len() as f64;
            row += &format!(" {worst:.0} / {joules:.1} |");
        }
        for loss in [0.0, 0.01] {
            let day = DaySetup {
                client: Config::phone().with(|c| c.multipath.prewarm = prewarm),
                radio: Some(RadioProfile::LTE),
                wifi_loss: loss,
                ..DaySetup::phone()
            };
            match mpsim::day::run(&day) {
                Ok(r) => {
                    let e = r.sim.radio_energy(1, 0, mpsim::day::HOUR * 24);
                    let warm = r.sim.client.warmups().0;
                    row += &format!(" {:.0} ({}, {warm} warm-ups) |", e.above_idle_joules, e.promotions);
                }
                Err(e) => row += &format!(" failed: {e} |"),
            }
        }
        let joules: Vec<f64> = (1..=3).map(|seed| fig4_five_percent(seed, prewarm)).collect();
        row += &format!(" {:.1} |", joules.iter().sum::<f64>() / 3.0);
        println!("{row}");
    }
}
