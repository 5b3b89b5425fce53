//! Property tests over every scheduler: never an unusable subflow, backups only as each rule
//! allows, same input same answer. `PROPTEST_CASES=N` sets the number of cases.

use proptest::prelude::*;
use scheduler::*;

mod common;
use common::flags;

fn arb_subflow() -> impl Strategy<Value = SubflowInfo> {
    (
        (any::<bool>(), prop::bool::weighted(0.2), prop::bool::weighted(0.3), prop::bool::weighted(0.15)),
        (1_000..300_000u32, 0..50_000u32, 1_200..100_000u32, prop_oneof![Just(0u32), 0..20_000u32, Just(100_000)]),
        (0..10u64, prop::bool::weighted(0.15), prop::bool::weighted(0.15), prop::bool::weighted(0.2)),
        (prop_oneof![Just(Iface::Wifi), Just(Iface::Cellular), Just(Iface::Wired), Just(Iface::Other)], 0..3u32),
    )
        .prop_map(|((est, pf, backup, rec), (srtt, var, cwnd, room), (rx, hr, bad, sent), (iface, retr))| {
            SubflowInfo {
                id: 0,
                // Mostly established.
                flags: flags(est || !pf, pf, backup, rec, sent, hr, bad),
                srtt_us: srtt,
                rttvar_us: var,
                cwnd,
                cwnd_room: room,
                // Coarse timestamps so that ties happen.
                last_original_rx_us: rx * 1000,
                iface,
                retrans_outstanding: retr * u32::from(retr == 2),
            }
        })
}

fn arb_input() -> impl Strategy<Value = (Vec<SubflowInfo>, Segment)> {
    (
        proptest::collection::vec(arb_subflow(), 0..10),
        1..1500u32,
        0..2_000_000u64,
        prop::option::weighted(0.1, 0..12usize),
        (prop_oneof![Just(0u64), 0..2_000_000u64], 0..10_000_000u64),
    )
        .prop_map(|(s, len, queued, dfin, (send_window, now_us))| {
            (s, Segment { len, answer_data_fin_on: dfin, queued_bytes: queued, send_window, now_us })
        })
}

fn picked(p: Pick) -> Vec<usize> {
    match p {
        Pick::Send(i) => vec![i],
        Pick::SendAll(m) => m.iter().collect(),
        Pick::Wait | Pick::Unavailable => vec![],
    }
}

/// The DATA_FIN rule can pick any subflow that can send; exclude it from rule checks.
fn by_data_fin(s: &[SubflowInfo], seg: &Segment, p: Pick) -> bool {
    matches!((p, seg.answer_data_fin_on), (Pick::Send(i), Some(j)) if i == j && j < s.len() && s[j].can_send(seg.len))
}

proptest! {
    #[test]
    fn never_an_unusable_subflow((s, seg) in arb_input()) {
        for name in NAMES {
            let mut sched = AnyScheduler::from_name(name).unwrap();
            let p = sched.pick(&s, &seg);
            for i in picked(p) {
                prop_assert!(i < s.len(), "{name}: index {i} out of range");
                prop_assert!(s[i].can_send(seg.len), "{name}: picked {:?} which cannot send", s[i]);
            }
            let lowest_rtt_like = name == "lowest-rtt" || name == "blest" || (name == "last-received" && s.len() == 1);
            let any_unused_available = s.iter().any(|x| x.available() && !x.already_sent());
            match p {
                Pick::Wait => prop_assert!(
                    s.iter().any(|x| x.available() && !x.can_send(seg.len)),
                    "{name}: Wait with no temporarily unavailable subflow"
                ),
                Pick::Unavailable => prop_assert!(
                    !any_unused_available,
                    "{name}: Unavailable although a subflow is available"
                ),
                _ => {}
            }
            for i in picked(p) {
                if s[i].already_sent() && !by_data_fin(&s, &seg, p) {
                    prop_assert!(lowest_rtt_like, "{name}: reinjected on a subflow that already carried it");
                    prop_assert!(!any_unused_available, "{name}: used a used subflow while an unused one is available");
                }
            }
        }
    }

    #[test]
    fn backups_only_as_each_rule_allows((s, seg) in arb_input()) {
        for name in NAMES {
            let mut sched = AnyScheduler::from_name(name).unwrap();
            let p = sched.pick(&s, &seg);
            if by_data_fin(&s, &seg, p) {
                continue;
            }
            for i in picked(p) {
                let b = &s[i];
                if !b.backup() {
                    continue;
                }
                match name {
                    "lowest-rtt" | "blest" | "round-robin" | "redundant" => prop_assert!(
                        !s.iter().any(|r| !r.backup() && r.available() && !r.already_sent())
                            || (matches!(name, "lowest-rtt" | "blest") && !b.already_sent() && s.iter().all(|r| r.backup() || !r.available() || r.already_sent())),
                        "{name}: backup used while a regular subflow is available"
                    ),
                    "ecf" => prop_assert!(
                        !s.iter().any(|r| !r.backup() && r.available() && !r.already_sent()),
                        "ecf: backup with a regular available"
                    ),
                    "last-received" if s.len() > 1 => {
                        // Pass 2 only replaces with a strictly newer reception; pass 1's choice is
                        // at least as new as every eligible unflagged regular subflow.
                        for r in s.iter().filter(|r| !r.backup() && r.available() && !r.already_sent() && !r.flagged()) {
                            prop_assert!(b.last_original_rx_us > r.last_original_rx_us,
                                "last-received: backup {:?} not newer than regular {:?}", b, r);
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn same_input_same_answer((s, seg) in arb_input(), warmup in proptest::collection::vec(arb_input(), 0..4)) {
        for name in NAMES {
            let mut a = AnyScheduler::from_name(name).unwrap();
            let mut b = AnyScheduler::from_name(name).unwrap();
            // Put stateful schedulers in some state first, both alike.
            for (ws, wseg) in &warmup {
                prop_assert_eq!(a.pick(ws, wseg), b.pick(ws, wseg), "{}", name);
            }
            prop_assert_eq!(a.pick(&s, &seg), b.pick(&s, &seg), "{}", name);
        }
    }

    #[test]
    fn priority_never_skips_a_healthy_preferred_subflow((s, seg) in arb_input()) {
        let p = Priority::default().pick(&s, &seg);
        if let Pick::Send(i) = p {
            if by_data_fin(&s, &seg, p) {
                return Ok(());
            }
            let rank = |k: Iface| [Iface::Wifi, Iface::Wired, Iface::Cellular, Iface::Other].iter().position(|x| *x == k).unwrap();
            for r in &s {
                // Healthy: no retransmissions, and not flagged by the oracle (bad, high RTO).
                let flagged = r.flags.contains(Flags::WAS_BAD) || r.flags.contains(Flags::HIGH_RTO);
                let healthy = r.available() && !r.already_sent() && r.retrans_outstanding == 0 && !flagged;
                prop_assert!(!(healthy && rank(r.iface) < rank(s[i].iface)),
                    "picked {:?} over healthy preferred {:?}", s[i], r);
            }
        }
    }

    #[test]
    fn last_received_takes_the_newest_eligible_unflagged_regular((s, seg) in arb_input()) {
        // Without backups or flags the rule is simply: newest reception among eligible subflows.
        let s: Vec<_> = s.into_iter().map(|mut x| { x.flags.set(Flags::BACKUP, false); x.flags.set(Flags::HIGH_RTO, false); x.flags.set(Flags::WAS_BAD, false); x }).collect();
        let seg = Segment { answer_data_fin_on: None, ..seg };
        if s.len() < 2 {
            return Ok(());
        }
        let p = LastReceived.pick(&s, &seg);
        let newest = s.iter().filter(|x| x.available() && !x.already_sent()).map(|x| x.last_original_rx_us).max();
        match p {
            Pick::Send(i) => prop_assert_eq!(Some(s[i].last_original_rx_us), newest),
            Pick::Wait => {
                // The newest eligible subflow (the first one among ties) cannot send.
                let first = s.iter().position(|x| x.available() && !x.already_sent() && Some(x.last_original_rx_us) == newest).unwrap();
                prop_assert!(!s[first].can_send(seg.len));
            }
            Pick::Unavailable => prop_assert!(newest.is_none()),
            Pick::SendAll(_) => prop_assert!(false),
        }
    }
}

proptest! {
    /// With distinct timestamps and RTTs (no ties), the order of the slice does not change which
    /// subflow lowest-rtt and last-received choose.
    #[test]
    fn order_of_the_slice_does_not_matter((s, seg) in arb_input(), rot in 0..10usize) {
        let mut s = s;
        for (i, x) in s.iter_mut().enumerate() {
            x.id = i as u32;
            x.last_original_rx_us = x.last_original_rx_us * 100 + i as u64;
            x.srtt_us = x.srtt_us * 100 + i as u32;
        }
        let seg = Segment { answer_data_fin_on: None, ..seg };
        let mut r = s.clone();
        if !r.is_empty() {
            let k = rot % r.len();
            r.rotate_left(k);
            r.reverse();
        }
        for name in ["lowest-rtt", "last-received"] {
            let a = AnyScheduler::from_name(name).unwrap().pick(&s, &seg);
            let b = AnyScheduler::from_name(name).unwrap().pick(&r, &seg);
            match (a, b) {
                (Pick::Send(i), Pick::Send(j)) => prop_assert_eq!(s[i].id, r[j].id, "{}", name),
                (a, b) => prop_assert_eq!(a, b, "{}", name),
            }
        }
    }
}

#[test]
fn names_round_trip_and_unknown_names_are_errors() {
    for n in NAMES {
        assert_eq!(AnyScheduler::from_name(n).unwrap().name(), n);
    }
    let e = AnyScheduler::from_name("fastest").unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown scheduler 'fastest'; choose one of: lowest-rtt, last-received, priority, round-robin, redundant, ecf, blest"
    );
}

#[test]
fn more_than_64_subflows_are_ignored_beyond_64() {
    let mut s = vec![
        SubflowInfo {
            flags: Flags::ESTABLISHED,
            srtt_us: 50_000,
            cwnd: 10_000,
            cwnd_room: 10_000,
            ..Default::default()
        };
        70
    ];
    s[69].srtt_us = 1;
    assert_eq!(LowestRtt.pick(&s, &Segment { len: 1000, ..Default::default() }), Pick::Send(0));
}
