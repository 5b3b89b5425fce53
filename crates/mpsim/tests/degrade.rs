//! Issue 18 in the simulator: paths that degrade without dying. The Siri workload on the
//! MultiMob configuration (WiFi 15 ms RTT, cellular 25 ms as the backup, 10 Mbit/s) while WiFi
//! gets slow, flaps, turns lossy, or fails and returns; seeds 1 to 3, each threshold the
//! issue's. `cargo run --release -p mpsim --example scenarios` prints the same runs as a table.
#![allow(clippy::unwrap_used)]

use mpsim::ms;
use mpsim::scenarios::{run, Outcome, Scenario, Setup};

fn runs(s: Scenario) -> Vec<Outcome> {
    (1..=3)
        .map(|seed| {
            let o = run(s, seed);
            assert_eq!(o.answered, o.requests, "{s:?} seed {seed}: every request answered: {o:?}");
            o
        })
        .collect()
}

/// One-way WiFi delay +500 ms at 4 s, no loss: the oracle judges the path by its delay, the
/// priority scheduler passes over it to the open cellular subflow, and it is not failed back to
/// while it stays slow.
#[test]
fn slow_wifi_is_left_for_cellular() {
    for (seed, o) in runs(Scenario::Delay).iter().enumerate() {
        assert!(o.median_ms <= 60.0, "seed {}: median {} ms", seed + 1, o.median_ms);
        assert!(o.worst_ms <= 600.0, "seed {}: worst {} ms", seed + 1, o.worst_ms);
        // Cellular carries the requests to the end: WiFi never got fast again.
        assert!(o.cell_last.unwrap() >= ms(29_000), "seed {}: {o:?}", seed + 1);
    }
}

/// WiFi 2 s off / 3 s on for 30 s: a burst that starts while WiFi is down again goes to the
/// cellular subflow still open, and a reply lost when WiFi fails under it moves to cellular
/// one RTT after its probe, not an RTO.
#[test]
fn flapping_wifi_costs_no_timeout() {
    for (seed, o) in runs(Scenario::Flap).iter().enumerate() {
        assert!(o.worst_ms <= 150.0, "seed {}: worst {} ms", seed + 1, o.worst_ms);
    }
}

/// WiFi loss 5% > 30% > 60% in steps of 8 s: no fail-back to a WiFi still lossy. The issue
/// asks for a worst response of 300 ms; the code before it gave 91-259 ms on these seeds (the
/// issue's testbed 88-357 ms), so the bound here is 150 ms, which that code fails.
#[test]
fn lossy_wifi_is_not_failed_back_to() {
    for (seed, o) in runs(Scenario::LossRamp).iter().enumerate() {
        assert!(o.worst_ms <= 150.0, "seed {}: worst {} ms", seed + 1, o.worst_ms);
        assert!(o.median_ms <= 30.0, "seed {}: median {} ms", seed + 1, o.median_ms);
    }
}

/// Seeds 1 to 20 of `s` on the LTE radio model: the worst responses, sorted, and how many runs
/// sent data over cellular.
fn twenty_on_lte(s: Scenario) -> (Vec<f64>, usize) {
    let outs: Vec<Outcome> = (1..=20).map(|seed| mpsim::scenarios::run_in(s, seed, &Setup::lte())).collect();
    for (seed, o) in (1..).zip(&outs) {
        assert_eq!(o.answered, o.requests, "{s:?} seed {seed}: every request answered: {o:?}");
    }
    let mut worst: Vec<f64> = outs.iter().map(|o| o.worst_ms).collect();
    worst.sort_by(f64::total_cmp);
    (worst, outs.iter().filter(|o| o.cell_data_bytes > 0).count())
}

/// 1% random WiFi loss for 60 s (issue 54's row: a worst response of 40 ms, no data on
/// cellular): a lost packet is one lost packet, repaired on WiFi, not a reason to wake the
/// cellular radio. A lost tail is probed a round trip after it left (RFC 9002's timing), not
/// after the ACK of the flight's head and a whole probe timeout: before, the median run's worst
/// response was 51 ms and one run waited 233 ms; now 36 and at most 66 (two losses in one
/// exchange, each repaired on WiFi, make the runs near 50 ms). Data went over cellular in two
/// runs of 20 (seeds 10 and 17; 13 of 400): an ACK lost and then the probe that asked again
/// lost too look like a path gone silent (p^2, PROTOCOL.md §7), the phone joins from cellular,
/// and the server sends its next answer there. Issue 54's goal of none is not met.
#[test]
fn random_loss_is_repaired_on_wifi() {
    let (worst, on_cellular) = twenty_on_lte(Scenario::RandomLoss);
    assert!(worst[10] <= 40.0, "median run's worst {} ms: {worst:?}", worst[10]);
    assert!(worst[19] <= 75.0, "{worst:?}");
    assert!(on_cellular <= 2, "{on_cellular} runs of 20 sent data over cellular");
    for (seed, o) in runs(Scenario::RandomLoss).iter().enumerate() {
        assert_eq!(o.cell_packets, 0, "seed {}: {o:?}", seed + 1);
    }
}

/// WiFi down at 4 s, back at 14 s: fast failover, and the cellular subflow closed within the
/// hold time plus one second after WiFi is back, so that the radio spends within 5% of what the
/// energy model makes unavoidable for that use. Issue 32's goal for the worst response is
/// 60 ms (the floor: one WiFi RTT to suspect, one cellular RTT to answer, about 45 ms): the
/// whole first flight unanswered fails over at the probe timeout, and the fast join carries
/// the whole request (91 ms before, 71 ms before the wait for the probe's answer came in).
#[test]
fn blackout_fails_back_within_the_hold() {
    let hold = mpsim::multimob_client(oracle::Config::default()).multipath.fail_back_hold;
    for (seed, o) in runs(Scenario::Blackout).iter().enumerate() {
        assert!(o.worst_ms <= 60.0, "seed {}: worst {} ms", seed + 1, o.worst_ms);
        let last = o.cell_last.unwrap();
        assert!(last <= ms(14_000) + hold + ms(1_000), "seed {}: last cellular packet at {last} us", seed + 1);
        let floor = o.cell_floor_joules.unwrap();
        assert!(o.cell_joules <= floor * 1.05, "seed {}: {} J, floor {floor} J", seed + 1, o.cell_joules);
    }
}

/// Issue 54's restore row (goal 17 J): WiFi down from 4 s to 14 s, an LTE radio on cellular.
/// At the fail-back the phone closes the cellular subflow with a REMOVE_SUBFLOW sent over WiFi
/// (PROTOCOL.md §5.21), and the server closes its side without a word on cellular: the radio's
/// tail runs from the last data cellular carried (about 10 s), not from a SUBFLOW_RESET sent
/// there at the fail-back (17 s), which kept the radio up for 7 s more: 22.4 J then, 14.9 now.
#[test]
fn a_fail_back_lets_the_cellular_radio_sleep_from_its_last_data() {
    for seed in 1..=3 {
        let (sim, app) = mpsim::scenarios::simulate(Scenario::Blackout, seed, &Setup::lte());
        let cell = mpsim::client_addr(1);
        let server = sim.server.stats(app.server.unwrap()).unwrap();
        let theirs: Vec<_> = server.subflows.iter().filter(|s| s.remote == cell).collect();
        assert!(!theirs.is_empty(), "seed {seed}: the server had no subflow to cellular");
        for s in theirs {
            assert_eq!(s.state, mpcore::SubflowState::Closed, "seed {seed}: the server kept {s:?}");
        }
        let last = sim.path_log(1).last().unwrap().time;
        assert!(last < ms(14_000), "seed {seed}: a cellular datagram at {last} us, after WiFi came back");
        let end = Scenario::Blackout.duration();
        let joules = sim.radio_energy(1, 0, end).above_idle_joules;
        assert!(joules <= 17.0, "seed {seed}: {joules} J of cellular energy");
        assert!(app.results.iter().all(|r| r.delay.is_some()), "seed {seed}: a request unanswered");
    }
}

/// WiFi down 80 ms in the middle of a burst, with an LTE radio on cellular: shorter than the
/// radio's promotion (0.26 s). The hedged failover (issue 54): the failover's fast join goes
/// (and wakes the radio), WiFi's probes go on, and once WiFi answers, before the join could
/// carry anything, WiFi carries the flight and the bursts after it: nothing is committed to
/// the joining subflow while WiFi works. Without it (the joining subflow taking data whenever
/// the scheduler picks it) the response waited for the promotion (306 ms) and the next burst
/// went over cellular too.
#[test]
fn a_primary_back_within_the_promotion_carries_the_flight() {
    for s in Scenario::GLITCHES {
        for seed in 1..=3 {
            let o = mpsim::scenarios::run_in(s, seed, &mpsim::scenarios::Setup::lte());
            assert_eq!(o.answered, o.requests, "{s:?} seed {seed}: {o:?}");
            assert!(o.worst_ms <= 170.0, "{s:?} seed {seed}: worst {} ms (the promotion alone is 260)", o.worst_ms);
            // The fast join's first flight (the join and the flight it carries, 2.4-3.6 KB) and
            // the acknowledgements of the answers that came back that way; no later burst.
            assert!(o.cell_up_bytes <= 4_500, "{s:?} seed {seed}: {} B sent over cellular: {o:?}", o.cell_up_bytes);
        }
    }
}

/// Walking out of WiFi (issue 54's row, goal 120 ms): loss 5% > 15% > 30% with growing uplink
/// delay, then WiFi gone, with an LTE radio on cellular, without and with the OS saying WiFi
/// is weak at the first stage. Once failed over, the phone does not fail back to a WiFi that
/// still loses 30% (the oracle does not clear a netpath its loss test suspects at the end of
/// two periods in a row): before, a period in which WiFi's few probes lost few cleared it, the bursts went back
/// to it, and the median run's worst response was 194 ms (177 with the hint), at most 341
/// (357). Then 79 (56), at most 171 (163). Now, with the hold of a WiFi still losing after
/// the oracle cleared it and the damped fail-back, 56 (28), at most 84 (79) over these 20 seeds:
/// every run within the goal (400 seeds: `the_walk_s_worst_responses_stay...` below).
#[test]
fn walking_out_of_wifi_fails_over_for_good() {
    for s in Scenario::WALKS {
        let (worst, _) = twenty_on_lte(s);
        assert!(worst[10] <= 70.0, "{s:?}: median run's worst {} ms: {worst:?}", worst[10]);
        assert!(worst[19] <= 120.0, "{s:?}: {worst:?}");
    }
}

/// WiFi loss 5% > 30% > 60% on the LTE radio model: repairs of a flight go twice, and a WiFi
/// still losing is not failed back to. The median run's worst response was 201 ms; now 93.
#[test]
fn a_loss_ramp_on_lte_is_answered_within_a_round_trip_or_two() {
    let (worst, _) = twenty_on_lte(Scenario::LossRamp);
    assert!(worst[10] <= 120.0, "median run's worst {} ms: {worst:?}", worst[10]);
}

/// The cellular join of a failover waits for the radio's promotion (0.26 s against a 25 ms
/// path), and its first flight's RTT samples say so. They used to stay in the smoothed RTT
/// for seconds (an interactive flow takes few samples), and the oracle's delay rule declared
/// the cellular netpath bad, as slow as WiFi was fast: in the walk, seed 93's third request
/// then went to a WiFi losing 15 % (both netpaths bad), 224 ms. The first later sample now
/// starts the estimate again (`Rtt::sample_at`), and cellular is never judged slow.
#[test]
fn a_join_that_waited_for_the_radio_does_not_make_cellular_slow() {
    use mpcore::Event;
    for seed in [93, 1, 2, 3] {
        let (_, app) = mpsim::scenarios::simulate(Scenario::Walk, seed, &Setup::lte());
        let verdicts: Vec<String> = app
            .events
            .iter()
            .filter_map(|(t, client, e)| match e {
                Event::Verdict { path, verdict } if *client => {
                    Some(format!("{:.1} s: {verdict:?} path {}", *t as f64 / 1e6, path.0))
                }
                _ => None,
            })
            .collect();
        assert!(verdicts.iter().any(|v| v.ends_with("Bad path 0")), "seed {seed}: WiFi failed over: {verdicts:?}");
        assert!(!verdicts.iter().any(|v| v.ends_with("Bad path 1")), "seed {seed}: {verdicts:?}");
    }
}

/// The walk's tail (issue 54's goal: every run's worst response within 120 ms), over 400
/// seeds of each walk on the LTE radio. Runs over 120 ms (walk, and with the OS's hint): 61
/// and 25 before; 33 and 25 once a join's first flight no longer made cellular look slow; 7
/// and 7 once a WiFi that loses after the oracle cleared it is held off data until the
/// fail-back (`MultiMob::held`; without it, 33 and 25 again); 3 and 0 once each loss after
/// the clear doubles the fail-back hold (without it, 7 and 7): a WiFi losing 5 % held clean
/// for 3 s now and then, and the fail-back closed the cellular subflow before the 15 % stage.
/// Release only (about a minute in debug); `.ci/run` runs it.
#[test]
#[cfg_attr(debug_assertions, ignore)]
fn the_walk_s_worst_responses_stay_within_120_ms_in_all_but_a_few_runs() {
    for s in Scenario::WALKS {
        let over: Vec<(u64, f64)> = (1..=400)
            .map(|seed| (seed, mpsim::scenarios::run_in(s, seed, &Setup::lte()).worst_ms))
            .filter(|(_, w)| *w > 120.0)
            .collect();
        assert!(over.len() <= 5, "{s:?}: {} runs over 120 ms: {over:?}", over.len());
    }
}
