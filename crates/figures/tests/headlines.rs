//! The headline of each figure (ratios and orders, not exact values), as the index states it.
#![allow(clippy::unwrap_used)]

use figures::multimob;

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

#[test]
fn fig7_a_fast_join_answers_one_cellular_rtt_sooner_two_when_the_request_fits_its_packet() {
    let f = multimob::fig7(10);
    let p = &f.series[0].points;
    assert_eq!(p.len(), multimob::FIG7_SIZES.len());
    assert!((45.0..=55.0).contains(&p[0].1.median), "1 KB: two cellular RTTs, {:?}", p[0]);
    for (size, s) in &p[1..] {
        assert!((20.0..=35.0).contains(&s.median), "{size} KB: one cellular RTT, {s:?}");
    }
}

#[test]
fn every_figure_draws_and_indexes() {
    for f in [multimob::fig3(2), multimob::fig7(2)] {
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
