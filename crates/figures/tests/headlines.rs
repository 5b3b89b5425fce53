//! The headline of each figure (ratios and orders, not exact values), as the index states it.
#![allow(clippy::unwrap_used)]

use figures::multimob;

/// The leading number of column `k` (after the row's name) of the table row starting `prefix`.
fn cell(table: &str, prefix: &str, k: usize) -> f64 {
    let line = table.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no row {prefix}:\n{table}"));
    let c = line.split('|').nth(2 + k).unwrap();
    c.trim().split(' ').next().unwrap().parse().unwrap()
}

#[test]
fn fig3_multimobs_scheduler_cuts_the_delay_after_a_failure() {
    let f = multimob::fig3(10);
    let (default, mm) = (&f.series[0].points, &f.series[1].points);
    let healthy = (default[0].1.median, mm[0].1.median);
    assert!((healthy.0 - healthy.1).abs() <= 0.1 * healthy.0, "healthy: alike {healthy:?}");
    let ratio = mm[1].1.median / default[1].1.median;
    assert!(ratio < 0.75, "after the failure, last-received / lowest-rtt = {ratio:.2} (paper 0.5)");
    assert!(default[1].1.median > 2.0 * healthy.0, "the failure costs the default scheduler");
}

/// MultiMob's fast join gains one RTT over MP_JOIN (its SYN carries one packet); this stack's
/// sends its whole first flight before the reply (issue 32) and gains two at every size.
#[test]
fn fig7_a_fast_join_answers_two_cellular_rtts_sooner_its_first_flight_carrying_the_request() {
    let f = multimob::fig7(10);
    let p = &f.series[0].points;
    assert_eq!(p.len(), multimob::FIG7_SIZES.len());
    for (size, s) in p {
        assert!((45.0..=60.0).contains(&s.median), "{size} KB: two cellular RTTs, {s:?}");
    }
}

#[test]
fn every_figure_draws_and_indexes() {
    for f in [multimob::fig3(2), multimob::fig7(2), figures::walk::table1(1)] {
        let svg = figures::plot::svg(&f).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains(&f.title), "{}", f.id);
        let md = f.markdown();
        assert!(md.contains(&format!("({}.svg)", f.id)) && md.contains("**Paper:**") && md.contains("**Here:**"));
    }
}

#[test]
fn fig4_a_lower_loss_threshold_trades_energy_for_delay() {
    let (a, b) = multimob::fig4(6);
    let med = |f: &figures::Figure, k: usize, loss: f64| {
        f.series[k].points.iter().find(|p| p.0 == loss).map(|p| p.1.median).unwrap()
    };
    // Energy: none without loss with the oracle; the lower sloss, the more; no oracle the most.
    for k in 1..=3 {
        assert_eq!(med(&b, k, 0.0), 0.0, "the oracle keeps cellular silent without loss");
    }
    for loss in [10.0, 15.0, 20.0] {
        assert!(med(&b, 1, loss) >= med(&b, 2, loss) && med(&b, 2, loss) >= med(&b, 3, loss), "energy at {loss}%");
        assert!(med(&b, 0, loss) >= med(&b, 1, loss), "no oracle costs the most at {loss}%");
        // Delay: the other way round.
        assert!(med(&a, 1, loss) <= med(&a, 3, loss), "sloss 10% answers sooner than 40% at {loss}%");
    }
    assert_eq!(med(&b, 3, 10.0), 0.0, "sloss 40% keeps cellular closed at 10% loss (median)");
}

#[test]
fn fig5_a_shorter_oracle_period_reacts_sooner() {
    let f = multimob::fig5(6);
    let p = &f.series[0].points;
    assert!(p[0].1.median < p[5].1.median, "Ts 1 ms against 500 ms: {:?} {:?}", p[0], p[5]);
    assert!(p[0].1.max <= p[6].1.max, "the worst case grows with Ts");
}

#[test]
fn siri_fig6_the_schedulers_are_alike_up_to_the_70th_percentile() {
    for mobile in [false, true] {
        let f = figures::siri::fig6(3, mobile);
        let med = |k: usize, q: f64| f.series[k].points.iter().find(|p| p.0 == q).unwrap().1.median;
        for q in [50.0, 70.0] {
            let (d, s) = (med(0, q), med(1, q));
            assert!((d - s).abs() <= 0.15 * d, "mobile {mobile}, p{q}: default {d} ms, server {s} ms");
        }
        if !mobile {
            // A stationary node: every configuration alike, the tail too.
            for k in 1..4 {
                assert!((med(k, 99.0) - med(0, 99.0)).abs() <= 0.15 * med(0, 99.0), "stationary p99, config {k}");
            }
        }
    }
}

#[test]
fn multimob_fig6_the_receive_idle_timer_resumes_a_download_within_a_second() {
    let f = figures::download::fig6(1);
    let table = f.table.as_deref().unwrap();
    // Seed 1 plotted: MultiMob's download moves to cellular and completes.
    let cell = f.series.iter().find(|s| s.name.starts_with("MultiMob") && s.name.ends_with("cellular")).unwrap();
    let last = cell.points.last().unwrap().1.median;
    assert!(last > 15.0, "most of the 20 MB over cellular after the failure: {last} MB");
    assert!(f.ours.contains("never notices"), "on-demand without the idle timer never resumes: {}", f.ours);
    assert!(table.contains("| MultiMob (receive idle timer) | 0.5"), "a stall of 0.5x s:\n{table}");
}

#[test]
fn multimob_table1_multimob_costs_the_least_cellular_power_and_answers_every_request() {
    let f = figures::walk::table1(2);
    let (delay, power) = (&f.series[0].points, &f.series[1].points);
    for k in 0..2 {
        assert!(power[2].1.median < 0.8 * power[k].1.median, "MultiMob's power against config {k}: {power:?}");
    }
    assert!(f.ours.starts_with("Every configuration answers all 100 requests"), "{}", f.ours);
    // MultiMob's largest delay is no worse than Backup's (the paper: similar).
    assert!(delay[2].1.median <= delay[1].1.median, "{delay:?}");
}

#[test]
fn multimob_streaming_stays_on_wifi_where_it_can_and_never_stalls() {
    let f = figures::walk::streaming(1);
    let t = f.table.as_deref().unwrap();
    let row = |name: &str| -> Vec<f64> { (0..3).map(|k| cell(t, &format!("| {name} |"), k)).collect() };
    let (nbk, mm) = (row("No backup"), row("MultiMob"));
    assert_eq!((nbk[0], mm[0]), (0.0, 0.0), "no stall");
    // 49 % against 69 % (48 % over 20 seeds). The bound was 20 points, which the shares met
    // by one before congestion window validation moved seed 1's MultiMob share from 48 to
    // 49 %: the WiFi subflow's window now stays at what the stream uses instead of growing
    // with each of its acknowledgements.
    assert!(mm[1] + 15.0 < nbk[1], "share over cellular: MultiMob {} %, No backup {} %", mm[1], nbk[1]);
    assert!(mm[2] < 0.75 * nbk[2], "cellular power: MultiMob {} mW, No backup {} mW", mm[2], nbk[2]);
}

#[test]
fn uplink_table3_two_uplinks_beat_the_best_one() {
    let f = figures::uplink::table3(1);
    let p = &f.series[0].points;
    let best = p[0].1.median.max(p[1].1.median);
    for (x, s) in &p[2..] {
        assert!(s.median > 1.1 * best, "row {x}: {} against the best single {best}", s.median);
    }
}

#[test]
fn uplink_fig5_the_upload_survives_the_downgrade() {
    let f = figures::uplink::mobile(1, true);
    let t = f.table.as_deref().unwrap();
    let phase = |name: &str| cell(t, &format!("| {name} ("), 0);
    assert!(phase("4G") > 4.34, "above Verizon 4G alone before the downgrade");
    // After it, coupling (LIA) holds the connection near AT&T's rate; uncoupled CUBIC nears the sum.
    let cubic = cell(t, "| 3G (70-120 s), uncoupled CUBIC |", 0);
    assert!(phase("3G") < 1.0 && cubic > 1.3 * phase("3G"), "LIA {} against uncoupled CUBIC {cubic}", phase("3G"));
    assert!(phase("stall") > 0.5, "AT&T carries the upload through Verizon's stall");
    assert!(t.contains("| longest run of seconds without goodput | 0.00"), "{t}");
}

#[test]
fn siri_fig4_mptcp_cuts_the_mobile_tail_and_matches_tcp_when_stationary() {
    for mobile in [false, true] {
        let f = figures::siri::fig4(3, mobile);
        let med = |k: usize, q: f64| f.series[k].points.iter().find(|p| p.0 == q).unwrap().1.median;
        if mobile {
            assert!(med(1, 99.0) * 5.0 < med(0, 99.0), "p99: MPTCP {} against TCP {}", med(1, 99.0), med(0, 99.0));
        } else {
            for q in figures::siri::PERCENTILES {
                assert!((med(1, q) - med(0, q)).abs() <= 0.05 * med(0, q), "stationary p{q}");
            }
        }
    }
}

#[test]
fn uplink_fig4_the_upload_follows_wifi_out_and_back() {
    let f = figures::uplink::mobile(1, false);
    let t = f.table.as_deref().unwrap();
    let phase = |name: &str| cell(t, &format!("| {name} ("), 0);
    let (wifi, gone, back) = (phase("WiFi"), phase("no WiFi"), phase("WiFi back"));
    assert!(wifi > 2.0 * gone && back > 2.0 * gone, "WiFi {wifi}, without {gone}, back {back} Mbit/s");
    assert!(gone > 4.0, "the cellular paths carry the upload while WiFi is gone: {gone}");
}
