//! `Cc` with each algorithm: the windows they give.

use super::*;

const MSS: u64 = 1000;

/// LEDBAT with a queue twice its target: a window not in use (RFC 7661) still shrinks,
/// and never grows; a window in use shrinks as well, and slow start is over.
#[test]
fn ledbat_backs_off_from_a_queue_whether_or_not_its_window_is_in_use() {
    let mut cc = Cc::new(CongestionControl::Ledbat, MSS);
    cc.on_rtt_sample(0, 20_000);
    cc.on_ack(1, 0, MSS, 20_000, Coupling::default());
    assert_eq!(cc.cwnd(), 11 * MSS, "no queue: slow start");
    cc.on_ack_not_limited(2, 5 * MSS);
    assert_eq!(cc.cwnd(), 11 * MSS, "a window not in use does not grow");
    for _ in 0..4 {
        cc.on_rtt_sample(3, 40_000);
    }
    cc.on_ack_not_limited(4, 4 * MSS);
    assert_eq!(cc.cwnd(), 9 * MSS, "a queue of twice the target: half the bytes acknowledged off");
    assert!(!cc.in_slow_start());
    cc.on_ack(5, 4, 2 * MSS, 20_000, Coupling::default());
    assert_eq!(cc.cwnd(), 8 * MSS);
    for _ in 0..100 {
        cc.on_ack(6, 4, 10 * MSS, 20_000, Coupling::default());
    }
    assert_eq!(cc.cwnd(), cc.min_window(), "never below the least window");
}

#[test]
fn every_name_is_taken() {
    for n in CongestionControl::NAMES {
        assert!(CongestionControl::from_name(n).is_some(), "{n}");
    }
}

#[test]
fn slow_start_doubles_then_reno_adds_one_mss_per_window() {
    let mut cc = Cc::new(CongestionControl::Reno, MSS);
    cc.on_ack(0, 0, 10 * MSS, 10_000, Coupling::default());
    assert_eq!(cc.cwnd(), 20 * MSS);
    cc.on_congestion(1, 0);
    assert_eq!((cc.cwnd(), cc.ssthresh()), (10 * MSS, 10 * MSS));
    cc.on_congestion(2, 0);
    assert_eq!(cc.cwnd(), 10 * MSS, "one reduction per recovery episode");
    for i in 0..10 {
        cc.on_ack(10 + i, 5, MSS, 10_000, Coupling::default());
    }
    // About one MSS per window of ACKs (each ACK adds MSS*MSS/cwnd as cwnd grows).
    assert!((10_900..=11_000).contains(&cc.cwnd()), "{}", cc.cwnd());
}

#[test]
fn lia_grows_no_faster_than_reno_on_two_equal_paths() {
    let mut reno = Cc::new(CongestionControl::Reno, MSS);
    let mut lia = Cc::new(CongestionControl::Lia, MSS);
    for cc in [&mut reno, &mut lia] {
        cc.on_congestion(0, 0);
        cc.set(20 * MSS, None);
    }
    // Two identical subflows of 20 MSS at 50 ms: alpha = 40 * (20/2500) / (2*20/50)^2 = 0.5.
    let p = CoupledPath { this: true, cwnd: 20 * MSS, rtt: 50_000, inter_loss: 0 };
    let coupling = Coupling::compute([p, CoupledPath { this: false, ..p }].into_iter());
    assert!((coupling.alpha - 0.5).abs() < 1e-9, "{}", coupling.alpha);
    for i in 0..200 {
        reno.on_ack(10 + i, 5, MSS, 50_000, coupling);
        lia.on_ack(10 + i, 5, MSS, 50_000, coupling);
    }
    assert!(lia.cwnd() < reno.cwnd(), "coupled {} vs reno {}", lia.cwnd(), reno.cwnd());
    assert!(lia.cwnd() > 20 * MSS, "but it still grows");
}

fn path(this: bool, cwnd_mss: u64, rtt: u64, inter_loss: u64) -> CoupledPath {
    CoupledPath { this, cwnd: cwnd_mss * MSS, rtt, inter_loss }
}

#[test]
fn olia_alone_on_its_path_is_reno() {
    let mut reno = Cc::new(CongestionControl::Reno, MSS);
    let mut olia = Cc::new(CongestionControl::Olia, MSS);
    for cc in [&mut reno, &mut olia] {
        cc.on_congestion(0, 0);
        cc.set(20 * MSS, None);
    }
    for i in 0..400 {
        let coupling = Coupling::compute([path(true, olia.cwnd() / MSS, 50_000, 0)].into_iter());
        assert_eq!(coupling.olia_alpha, 0.0);
        reno.on_ack(10 + i, 5, MSS, 50_000, Coupling::default());
        olia.on_ack(10 + i, 5, MSS, 50_000, coupling);
    }
    assert!(reno.cwnd() > 30 * MSS);
    assert!(olia.cwnd().abs_diff(reno.cwnd()) <= MSS, "olia {} reno {}", olia.cwnd(), reno.cwnd());
}

#[test]
fn olia_moves_window_from_the_largest_path_to_the_best_one() {
    // A: the largest window, few bytes between losses. B: a small window, the most bytes
    // between losses for its RTT: B is in C = B \ M, A in M; |R| = 2.
    let paths = |this_a: bool| [path(this_a, 40, 50_000, 10_000), path(!this_a, 10, 50_000, 100_000)];
    let on_a = Coupling::compute(paths(true).into_iter());
    let on_b = Coupling::compute(paths(false).into_iter());
    assert_eq!((on_a.olia_alpha, on_b.olia_alpha), (-0.5, 0.5));
    // A third path neither largest nor best gets 0.
    let three = [path(false, 40, 50_000, 10_000), path(false, 10, 50_000, 100_000), path(true, 20, 50_000, 0)];
    assert_eq!(Coupling::compute(three.into_iter()).olia_alpha, 0.0);
    // The best path also has the largest window: C is empty, no transfer.
    let same = [path(true, 40, 50_000, 100_000), path(false, 10, 50_000, 10_000)];
    assert_eq!(Coupling::compute(same.into_iter()).olia_alpha, 0.0);
    // Over the same ACKs, the largest window grows less than the coupled term alone would
    // make it, the best path more.
    let grow = |w: u64, coupling: Coupling| {
        let mut cc = Cc::new(CongestionControl::Olia, MSS);
        cc.on_congestion(0, 0);
        cc.set(w * MSS, Some(w * MSS));
        for i in 0..100 {
            cc.on_ack(10 + i, 5, MSS, 50_000, coupling);
        }
        cc.cwnd()
    };
    let plain = |c: Coupling| Coupling { olia_alpha: 0.0, ..c };
    assert!(grow(40, on_a) < grow(40, plain(on_a)), "{} vs {}", grow(40, on_a), grow(40, plain(on_a)));
    assert!(grow(10, on_b) > grow(10, plain(on_b)) + 3 * MSS, "{} vs {}", grow(10, on_b), grow(10, plain(on_b)));
}

#[test]
fn olia_never_shrinks_below_the_minimum_window() {
    let mut cc = Cc::new(CongestionControl::Olia, MSS);
    cc.on_congestion(0, 0);
    cc.set(3 * MSS, Some(3 * MSS));
    let coupling = Coupling { rate_sum: 1e9, olia_alpha: -1.0, ..Coupling::default() };
    for i in 0..100 {
        cc.on_ack(10 + i, 5, MSS, 50_000, coupling);
    }
    assert_eq!(cc.cwnd(), cc.min_window());
}

#[test]
fn olia_counts_bytes_between_losses() {
    let mut cc = Cc::new(CongestionControl::Olia, MSS);
    cc.on_ack(1, 0, 5 * MSS, 50_000, Coupling::default());
    assert_eq!(cc.inter_loss(), 5 * MSS);
    cc.on_congestion(2, 1);
    cc.on_ack(3, 3, MSS, 50_000, Coupling::default());
    assert_eq!(cc.inter_loss(), 5 * MSS, "l1 (between the last two losses) is larger");
    cc.on_congestion(4, 3);
    assert_eq!(cc.inter_loss(), MSS);
}

#[test]
fn cubic_backs_off_by_beta_and_regrows_towards_w_max() {
    let mut cc = Cc::new(CongestionControl::Cubic, MSS);
    cc.set(100 * MSS, Some(50 * MSS));
    cc.on_congestion(1_000_000, 0);
    assert_eq!(cc.cwnd(), 70 * MSS);
    let mut now = 1_000_000;
    for _ in 0..4000 {
        now += 1_000;
        cc.on_ack(now, now, MSS, 20_000, Coupling::default());
    }
    assert!(cc.cwnd() > 95 * MSS, "regrew to {}", cc.cwnd() / MSS);
}

#[test]
fn an_unused_window_neither_grows_nor_advances_cubics_curve() {
    let fresh = || {
        let mut cc = Cc::new(CongestionControl::Cubic, MSS);
        cc.set(100 * MSS, None);
        cc.on_congestion(1_000_000, 0);
        cc.on_ack(1_100_000, 1_050_000, MSS, 20_000, Coupling::default());
        cc
    };
    // Used throughout: the next acknowledgement 100 ms later.
    let mut used = fresh();
    used.on_ack(1_200_000, 1_150_000, MSS, 20_000, Coupling::default());
    // Not used for 10 s in between: no growth then, and the curve resumes where it paused
    // (else 10 s of CUBIC's curve would count, a jump to 1.5 times the window).
    let mut idle = fresh();
    let before = idle.cwnd();
    for k in 0..100 {
        idle.on_ack_not_limited(1_200_000 + k * 100_000, MSS);
    }
    assert_eq!(idle.cwnd(), before);
    idle.on_ack(11_200_000, 11_150_000, MSS, 20_000, Coupling::default());
    assert_eq!(idle.cwnd(), used.cwnd());
}

#[test]
fn rto_collapses_to_the_minimum_window() {
    let mut cc = Cc::new(CongestionControl::Lia, MSS);
    cc.on_rto(5, 8 * MSS);
    assert_eq!((cc.cwnd(), cc.ssthresh()), (2 * MSS, 5 * MSS));
}
