//! The netpath table's rules, period by period.

use super::*;

fn np(i: u8) -> Netpath {
    Netpath { src: [10, 0, i, 2].into(), dst: [10, 0, 0, 1].into(), iface: i, tcp: false }
}

fn period(o: &mut Oracle, now: &mut Time, samples: &[(Netpath, Sample)]) -> Vec<Action> {
    for &(n, s) in samples {
        o.record(n, s);
    }
    *now += o.config().period;
    let mut out = Vec::new();
    assert!(o.handle_timeout(*now, &mut out));
    out
}

fn s(sent: u64, lost: u64, retransmitted: u64, rto_ms: u64) -> Sample {
    Sample { sent, lost, retransmitted, rto: rto_ms * 1000, ..Sample::default() }
}

/// A sample of a path that answers: as many packets came back as were not lost.
fn live(sent: u64, lost: u64) -> Sample {
    Sample { received: sent - lost, ..s(sent, lost, 0, 200) }
}

/// A sample with packets carried, an RTO of 200 ms and this smoothed and least RTT (ms).
fn rtt(srtt_ms: u64, min_ms: u64) -> Sample {
    Sample { sent: 10, srtt: srtt_ms * 1000, min_rtt: min_ms * 1000, ..s(10, 0, 0, 200) }
}

#[test]
fn it_sleeps_when_the_next_period_would_change_nothing_and_wakes_on_its_grid() {
    let mut o = Oracle::new(Config::default());
    let p = o.config().period;
    let mut now = 0;
    o.start(now);
    // Traffic, then nothing: the next period (an idle subflow reports only its RTO and
    // RTT) would change nothing, so the oracle may sleep at once.
    period(&mut o, &mut now, &[(np(0), rtt(30, 20))]);
    assert!(o.quiet(), "nothing would change without packets");
    o.sleep();
    assert!(o.is_asleep() && o.poll_timeout().is_none());
    // Woken between two of the old deadlines: the next one, not a period from now.
    o.wake(now + 3 * p + p / 3);
    assert!(!o.is_asleep());
    assert_eq!(o.poll_timeout(), Some(now + 4 * p));
}

/// A tiny deterministic generator for the property below.
fn next(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

#[test]
fn a_period_skipped_while_quiet_is_one_that_would_have_changed_nothing() {
    // Random periods on two netpaths (losses, retransmissions, RTOs up to the high-RTO
    // threshold, RTTs from 10 to 400 ms), with idle stretches: whenever the oracle says it
    // may sleep, the idle period it would skip, run for real on a copy, decides nothing and
    // leaves the table as it was. This is what keeps the simulator's every datagram the
    // same with the sleep as without it.
    let mut x = 0x2545_f491_4f6c_dd1d;
    let mut o = Oracle::new(Config::default());
    let mut now = 0;
    o.start(now);
    let mut last = [Sample::default(); 2];
    let (mut quiet, mut checked) = (0, 0);
    for _ in 0..5_000 {
        let mut samples = Vec::new();
        for (k, l) in last.iter_mut().enumerate() {
            let r = next(&mut x);
            let s = if r.is_multiple_of(3) {
                // Idle: only the RTO and RTT it last had.
                Sample { rto: l.rto, srtt: l.srtt, min_rtt: l.min_rtt, ..Sample::default() }
            } else {
                let sent = 1 + (r >> 8) % 40;
                let lost = if (r >> 16).is_multiple_of(4) { (r >> 20) % (sent + 1) } else { 0 };
                let srtt = 10_000 + (r >> 28) % 390_000;
                Sample {
                    sent,
                    lost,
                    retransmitted: lost,
                    rto: 200_000 + (r >> 40) % 2_000_000,
                    srtt,
                    min_rtt: 10_000,
                    received: (sent - lost) * ((r >> 50) % 2),
                }
            };
            *l = s;
            samples.push((np(k as u8), s));
        }
        period(&mut o, &mut now, &samples);
        if o.quiet() {
            quiet += 1;
            let mut skipped = o.clone();
            let idle: Vec<_> = last
                .iter()
                .enumerate()
                .map(|(k, l)| {
                    (np(k as u8), Sample { rto: l.rto, srtt: l.srtt, min_rtt: l.min_rtt, ..Sample::default() })
                })
                .collect();
            let mut t = now;
            let decided = period(&mut skipped, &mut t, &idle);
            assert!(decided.is_empty(), "a skipped period would have decided {decided:?}");
            assert!(skipped.table == o.table, "a skipped period would have changed the table");
            checked += 1;
        }
    }
    assert!(quiet > 100 && checked == quiet, "quiet {quiet} of 5,000 periods");
}

#[test]
fn suspicion_comes_below_the_verdicts_and_only_from_periods_with_packets() {
    let mut o = Oracle::new(Config::default()); // 30% against 1%, 2x and +30 ms
    let mut now = 0;
    o.start(now);
    // 1% loss, even a lost packet among five (20% for that period): no suspicion.
    for _ in 0..10 {
        assert!(period(&mut o, &mut now, &[(np(0), live(100, 1))]).is_empty());
    }
    assert!(period(&mut o, &mut now, &[(np(0), live(5, 1))]).is_empty());
    assert!(period(&mut o, &mut now, &[(np(0), live(20, 0))]).is_empty());
    assert_eq!(o.suspected_at(np(0)), None);
    // 5% loss for 400 packets: poor but usable, not suspected.
    for _ in 0..20 {
        assert!(period(&mut o, &mut now, &[(np(0), live(20, 1))]).is_empty());
    }
    assert_eq!(o.suspected_at(np(0)), None, "5% is not suspected");
    // 30% loss: suspected within a dozen packets, no verdict (its V-EMA starts low).
    assert!(period(&mut o, &mut now, &[(np(0), live(5, 1))]).is_empty());
    assert_eq!(o.suspected_at(np(0)), None, "one loss in five packets: not yet");
    assert!(period(&mut o, &mut now, &[(np(0), live(10, 3))]).is_empty());
    let at = o.suspected_at(np(0)).expect("suspected");
    assert_eq!(at, now);
    // A silent period (the path went dark, nothing sent) keeps the smoothed loss but
    // brings no new suspicion: the last one stands.
    assert!(period(&mut o, &mut now, &[]).is_empty());
    assert_eq!(o.suspected_at(np(0)), Some(at));
    assert_eq!(o.suspicions().collect::<Vec<_>>(), [(np(0), at)]);
    // Delay: twice the baseline and 30 ms above it.
    let mut o = Oracle::new(Config::default());
    let mut now = 0;
    o.start(now);
    period(&mut o, &mut now, &[(np(1), rtt(15, 15))]);
    period(&mut o, &mut now, &[(np(1), rtt(44, 15))]);
    assert_eq!(o.suspected_at(np(1)), None, "29 ms above the baseline");
    period(&mut o, &mut now, &[(np(1), rtt(45, 15))]);
    assert_eq!(o.suspected_at(np(1)), Some(now));
    assert!(!o.is_bad(np(1)));
}

#[test]
fn delay_rule_fires_far_above_the_baseline_and_clears_below_half_its_thresholds() {
    let mut o = Oracle::new(Config::default()); // ratio 4, margin 100 ms
    let mut now = 0;
    o.start(now);
    let verdicts = |a: Vec<Action>| a.into_iter().map(|a| a.verdict).collect::<Vec<_>>();
    assert!(period(&mut o, &mut now, &[(np(0), rtt(15, 15))]).is_empty());
    // 100 ms slower: 6.7 times the baseline but 99 ms above it: not yet.
    assert!(period(&mut o, &mut now, &[(np(0), rtt(114, 60))]).is_empty());
    assert_eq!(verdicts(period(&mut o, &mut now, &[(np(0), rtt(115, 60))])), [Verdict::Bad]);
    assert!(o.is_bad(np(0)));
    // Back under the thresholds but above half of them (2.5 times, 50 ms above): still
    // slow, no clear (a delay hovering at the threshold does not flap).
    for _ in 0..4 {
        assert!(period(&mut o, &mut now, &[(np(0), rtt(80, 60))]).is_empty());
    }
    assert!(o.is_bad(np(0)));
    assert_eq!(verdicts(period(&mut o, &mut now, &[(np(0), rtt(60, 60))])), [Verdict::Clear]);
    // Re-armed: the thresholds are whole again.
    assert!(period(&mut o, &mut now, &[(np(0), rtt(80, 60))]).is_empty());
    assert_eq!(verdicts(period(&mut o, &mut now, &[(np(0), rtt(115, 60))])), [Verdict::Bad]);
    // Not slower than the other netpath by the margin: not bad.
    let mut o = Oracle::new(Config::default());
    o.start(0);
    let mut now = 0;
    let both = [(np(0), rtt(200, 15)), (np(1), rtt(150, 150))];
    assert!(period(&mut o, &mut now, &both).is_empty());
    // A margin of 0 turns the rule off.
    let mut o = Oracle::new(Config { rtt_margin: 0, ..Config::default() });
    o.start(0);
    let mut now = 0;
    assert!(period(&mut o, &mut now, &[(np(0), rtt(900, 15))]).is_empty());
}

#[test]
fn trigger_fires_on_the_rising_edge_and_rearms_below_the_band() {
    let mut t = Trigger::default();
    assert!(!t.update(0.2, 0.25, 0.05));
    assert!(t.update(0.25, 0.25, 0.05));
    assert!(!t.update(0.4, 0.25, 0.05), "stays quiet while above");
    assert!(!t.update(0.22, 0.25, 0.05), "inside the band: still disarmed");
    assert!(!t.update(0.3, 0.25, 0.05), "so no second firing");
    assert!(!t.update(0.19, 0.25, 0.05), "below the band: re-armed");
    assert!(t.update(0.26, 0.25, 0.05));
}

#[test]
fn loss_on_a_netpath_marks_it_bad_once_then_clears() {
    let mut o = Oracle::new(Config::default());
    let mut now = 0;
    o.start(now);
    // Healthy periods: nothing.
    assert!(period(&mut o, &mut now, &[(np(0), s(100, 1, 1, 200))]).is_empty());
    // Two connections on netpath 0 lose 30% of their packets. V-EMA: prod = .5*30 + .5*.5,
    // vol = .5*100 + .5*50: 0.203, under 25%.
    let a = period(&mut o, &mut now, &[(np(0), s(50, 15, 15, 200)), (np(0), s(50, 15, 15, 200))]);
    assert!(a.is_empty(), "{a:?} {:?}", o.stats(np(0)));
    // Half lost: 0.373. One decision for the netpath, whatever the number of connections.
    let a = period(&mut o, &mut now, &[(np(0), s(100, 50, 30, 200))]);
    assert_eq!(a, vec![Action { netpath: np(0), verdict: Verdict::Bad }]);
    assert!(o.is_bad(np(0)));
    // Still lossy: no repeated decision.
    assert!(period(&mut o, &mut now, &[(np(0), s(100, 60, 0, 200))]).is_empty());
    // Recovery: cleared once the smoothed rates fall under the thresholds.
    let mut cleared = false;
    for _ in 0..6 {
        let a = period(&mut o, &mut now, &[(np(0), s(100, 0, 0, 200))]);
        cleared |= a == vec![Action { netpath: np(0), verdict: Verdict::Clear }];
    }
    assert!(cleared && !o.is_bad(np(0)));
    // Another netpath never was touched.
    assert!(o.stats(np(1)).is_none());
}

#[test]
fn retransmissions_alone_mark_bad() {
    let mut o = Oracle::new(Config::default());
    let mut now = 0;
    o.start(now);
    let a = period(&mut o, &mut now, &[(np(0), s(10, 0, 6, 200))]);
    assert_eq!(a, vec![Action { netpath: np(0), verdict: Verdict::Bad }]);
}

#[test]
fn a_high_rto_opens_backups_without_declaring_bad() {
    let mut o = Oracle::new(Config::default());
    let mut now = 0;
    o.start(now);
    let a = period(&mut o, &mut now, &[(np(0), s(0, 0, 0, 1600))]);
    assert_eq!(a, vec![Action { netpath: np(0), verdict: Verdict::HighRto }]);
    assert!(!o.is_bad(np(0)));
    assert!(period(&mut o, &mut now, &[(np(0), s(0, 0, 0, 3200))]).is_empty(), "edge, not level");
    let a = period(&mut o, &mut now, &[(np(0), s(1, 0, 0, 200))]);
    assert_eq!(a, vec![Action { netpath: np(0), verdict: Verdict::Clear }]);
}

/// Issue 52: one subflow backing off its timer while the netpath brings the others
/// packets is silent alone: its RTO does not open every connection's backups. A netpath
/// silent to all is judged by the largest RTO, and so is one whose heard subflows are slow.
#[test]
fn a_high_rto_counts_only_when_the_netpath_brought_its_subflows_nothing() {
    let heard = |rto_ms| Sample { received: 5, ..s(5, 0, 0, rto_ms) };
    let mut o = Oracle::new(Config::default());
    let mut now = 0;
    o.start(now);
    let a = period(&mut o, &mut now, &[(np(0), s(3, 0, 0, 1600)), (np(0), heard(200)), (np(0), heard(250))]);
    assert!(a.is_empty(), "one silent subflow among heard ones: {a:?}");
    let a = period(&mut o, &mut now, &[(np(0), s(3, 0, 0, 1600)), (np(0), s(2, 0, 0, 200))]);
    assert_eq!(a, vec![Action { netpath: np(0), verdict: Verdict::HighRto }], "silent to all");
    let mut o = Oracle::new(Config::default());
    o.start(now);
    let a = period(&mut o, &mut now, &[(np(0), s(3, 0, 0, 200)), (np(0), heard(1600))]);
    assert_eq!(a, vec![Action { netpath: np(0), verdict: Verdict::HighRto }], "a heard subflow is slow");
}
#[test]
fn an_empty_period_keeps_the_smoothed_values() {
    let mut o = Oracle::new(Config::default());
    let mut now = 0;
    o.start(now);
    period(&mut o, &mut now, &[(np(0), s(10, 1, 0, 200))]);
    let before = o.stats(np(0)).unwrap();
    period(&mut o, &mut now, &[]);
    let after = o.stats(np(0)).unwrap();
    assert_eq!(before.loss, after.loss);
}

#[test]
fn a_declared_bad_netpath_clears_only_on_a_period_with_packets() {
    let mut o = Oracle::new(Config::default());
    let mut now = 0;
    o.start(now);
    period(&mut o, &mut now, &[(np(0), s(100, 0, 0, 200))]);
    assert_eq!(o.declare_bad(np(0)), Some(Action { netpath: np(0), verdict: Verdict::Bad }));
    assert_eq!(o.declare_bad(np(0)), None, "once");
    assert!(period(&mut o, &mut now, &[]).is_empty(), "no packets, no evidence");
    assert!(o.is_bad(np(0)));
    let a = period(&mut o, &mut now, &[(np(0), s(10, 0, 0, 200))]);
    assert_eq!(a, vec![Action { netpath: np(0), verdict: Verdict::Clear }]);
}

/// Issue 54's walk: a WiFi losing 30 % carries a few probes per period, and a period that
/// lost few of them brought its smoothed loss under 25 %: it was cleared, and the phone failed
/// back to it. It stays bad while the loss test (each packet weighed) still suspects it, and
/// is cleared once clean packets outweigh that evidence.
#[test]
fn a_bad_netpath_still_losing_is_not_cleared() {
    let mut o = Oracle::new(Config::default());
    let mut now = 0;
    o.start(now);
    let mut verdicts = Vec::new();
    for _ in 0..3 {
        verdicts.extend(period(&mut o, &mut now, &[(np(0), live(10, 3))]).into_iter().map(|a| a.verdict));
    }
    assert_eq!(verdicts, [Verdict::Bad]);
    // Still 30 %, on five probes a period, two periods in three losing none: the smoothed
    // rate falls under the threshold, and before, such a period cleared it.
    let mut dipped = false;
    for k in 0..12 {
        let lost = if k % 3 == 2 { 4 } else { 0 };
        let a = period(&mut o, &mut now, &[(np(0), live(5, lost))]);
        assert!(a.is_empty(), "period {k}: {a:?}, {:?}", o.stats(np(0)));
        dipped |= o.stats(np(0)).unwrap().loss < Config::default().loss_threshold;
    }
    assert!(dipped && o.is_bad(np(0)), "the rate alone would have cleared it");
    // Clean again: cleared within about twenty packets.
    let mut periods = 0;
    while o.is_bad(np(0)) {
        period(&mut o, &mut now, &[(np(0), live(5, 0))]);
        periods += 1;
        assert!(periods <= 5, "still bad after {periods} clean periods");
    }
}

/// One period that the loss test suspects (an outage of 80 ms loses a burst of packets) does
/// not hold a bad netpath: the periods before it were clean, and it is cleared.
#[test]
fn one_lossy_period_does_not_hold_a_bad_netpath() {
    let mut o = Oracle::new(Config::default());
    let mut now = 0;
    o.start(now);
    period(&mut o, &mut now, &[(np(0), live(10, 0))]);
    assert_eq!(o.declare_bad(np(0)), Some(Action { netpath: np(0), verdict: Verdict::Bad }));
    let a = period(&mut o, &mut now, &[(np(0), live(12, 3))]);
    assert_eq!(a, vec![Action { netpath: np(0), verdict: Verdict::Clear }]);
    // The same period after one the test suspected too: still losing, not cleared.
    let mut o = Oracle::new(Config::default());
    o.start(now);
    period(&mut o, &mut now, &[(np(0), live(10, 0))]);
    period(&mut o, &mut now, &[(np(0), live(12, 3))]);
    assert!(o.suspected_at(np(0)).is_some(), "three losses of twelve: suspected");
    assert_eq!(o.declare_bad(np(0)), Some(Action { netpath: np(0), verdict: Verdict::Bad }));
    assert!(period(&mut o, &mut now, &[(np(0), live(12, 3))]).is_empty());
    assert!(o.is_bad(np(0)));
}

/// A netpath that brings nothing back is silent, not lossy: its lost probes add no evidence
/// to the loss test, so that once it answers again, clean, it is cleared as soon as its
/// smoothed rate allows (a blackout's probes held the test at its cap, and the netpath bad,
/// for twenty clean packets more).
#[test]
fn a_silent_netpath_gathers_no_evidence_of_loss() {
    let mut o = Oracle::new(Config::default());
    let mut now = 0;
    o.start(now);
    period(&mut o, &mut now, &[(np(0), live(20, 0))]);
    assert_eq!(o.declare_bad(np(0)), Some(Action { netpath: np(0), verdict: Verdict::Bad }));
    // Ten seconds of probes, every one lost, nothing received.
    for _ in 0..20 {
        period(&mut o, &mut now, &[(np(0), s(5, 5, 0, 200))]);
    }
    assert_eq!(o.suspected_at(np(0)), None, "silence is not a loss rate");
    for k in 0.. {
        assert!(k < 10, "the smoothed rate never fell under its threshold");
        let a = period(&mut o, &mut now, &[(np(0), live(5, 0))]);
        let below = o.stats(np(0)).unwrap().loss < Config::default().loss_threshold;
        assert_eq!(a.contains(&Action { netpath: np(0), verdict: Verdict::Clear }), below, "{a:?}");
        if below {
            break;
        }
    }
}
