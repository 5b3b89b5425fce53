//! What every congestion controller shares: the algorithms' names, the coupling's inputs, the
//! window state, and the [`Controller`] trait each algorithm implements (`Cc` in the parent
//! runs one).

use std::fmt;

/// Which algorithm a subflow runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CongestionControl {
    /// RFC 5681 NewReno-style AIMD, each subflow on its own.
    Reno,
    /// RFC 9438 CUBIC, each subflow on its own.
    Cubic,
    /// RFC 6356 "Linked Increases": Reno's decrease, the coupled increase across subflows.
    #[default]
    Lia,
    /// OLIA, "Opportunistic Linked Increases": Reno's decrease, an increase that moves
    /// window from the largest-window subflows to the best ones (Pareto-optimal where LIA is
    /// not); the coupled algorithm of the Linux MPTCP kernel the Siri/MONROE study ran.
    Olia,
    /// LEDBAT (RFC 6817, LEDBAT++'s decrease), each subflow on its own: a background
    /// transfer that keeps the path's queue near a target (half the base RTT), so that
    /// requests beside it do not wait behind a full queue; Reno's halving on a loss.
    Ledbat,
}

impl CongestionControl {
    /// Every name `from_name` takes.
    pub const NAMES: [&'static str; 5] = ["lia", "olia", "cubic", "reno", "ledbat"];

    /// One of [`NAMES`](Self::NAMES).
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "ledbat" => Some(Self::Ledbat),
            "reno" => Some(Self::Reno),
            "cubic" => Some(Self::Cubic),
            "lia" => Some(Self::Lia),
            "olia" => Some(Self::Olia),
            _ => None,
        }
    }
}

/// One subflow as the coupling sees it.
#[derive(Clone, Copy, Debug, Default)]
pub struct CoupledPath {
    /// The subflow whose ACK is being processed.
    pub this: bool,
    /// Its congestion window, bytes.
    pub cwnd: u64,
    /// Smoothed RTT, µs.
    pub rtt: u64,
    /// OLIA's `l_r`: the larger of the bytes acknowledged between the last two losses and
    /// since the last one.
    pub inter_loss: u64,
}

/// The connection-wide inputs of the coupled increases, gathered over the coupled subflows
/// at the time of an ACK.
#[derive(Clone, Copy, Debug, Default)]
pub struct Coupling {
    /// `cwnd_total`, bytes.
    pub total: f64,
    /// `alpha` of RFC 6356 §3.
    pub alpha: f64,
    /// `sum_p cwnd_p / rtt_p`, bytes per µs (OLIA's denominator).
    pub rate_sum: f64,
    /// OLIA's `alpha_r` of the acknowledged subflow.
    pub olia_alpha: f64,
}

impl Coupling {
    /// LIA: `alpha = cwnd_total * max_i(cwnd_i / rtt_i^2) / (sum_i cwnd_i / rtt_i)^2`.
    ///
    /// OLIA (draft-khalili-mptcp-congestion-control §3): "M the set of the paths with the
    /// largest window ... B the set of paths that are presumably the best paths", those with
    /// the largest `l_r^2 / rtt_r`, and "C = B \ M". If C is not empty, `alpha_r =
    /// 1/(|R| |C|)` for r in C, `-1/(|R| |M|)` for r in M, 0 otherwise; if it is, all are 0.
    ///
    /// Two passes over `subflows` (a cheap iterator over the connection's table: no
    /// allocation on the ACK path).
    pub fn compute(subflows: impl Iterator<Item = CoupledPath> + Clone) -> Self {
        let (mut total, mut best, mut sum, mut n) = (0.0f64, 0.0f64, 0.0f64, 0u32);
        let (mut max_w, mut max_q) = (0u64, 0.0f64);
        for p in subflows.clone() {
            let (c, r) = (p.cwnd as f64, p.rtt.max(1) as f64);
            total += c;
            best = best.max(c / (r * r));
            sum += c / r;
            n += 1;
            max_w = max_w.max(p.cwnd);
            max_q = max_q.max(quality(&p));
        }
        let alpha = if sum > 0.0 { total * best / (sum * sum) } else { 1.0 };
        let (mut in_m, mut in_c, mut this_m, mut this_c) = (0u32, 0u32, false, false);
        for p in subflows {
            let m = p.cwnd == max_w;
            let c = !m && quality(&p) >= max_q;
            in_m += u32::from(m);
            in_c += u32::from(c);
            this_m |= p.this && m;
            this_c |= p.this && c;
        }
        let olia_alpha = match (in_c > 0, this_c, this_m) {
            (true, true, _) => 1.0 / f64::from(n * in_c),
            (true, false, true) => -1.0 / f64::from(n * in_m),
            _ => 0.0,
        };
        Self { total, alpha, rate_sum: sum, olia_alpha }
    }
}

/// OLIA's path quality `l_r^2 / rtt_r`.
fn quality(p: &CoupledPath) -> f64 {
    let l = p.inter_loss as f64;
    l * l / p.rtt.max(1) as f64
}

/// What one ACK tells a controller's increase.
#[derive(Clone, Copy, Debug)]
pub struct Ack {
    /// µs.
    pub now: u64,
    /// Newly acknowledged.
    pub bytes: u64,
    /// The subflow's smoothed RTT, µs.
    pub srtt_us: u64,
    /// The connection-wide inputs of the coupled increases (zero for the others).
    pub coupling: Coupling,
}

/// The window state every algorithm shares, handed to its [`Controller`].
#[derive(Clone, Debug)]
pub struct Window {
    pub(super) mss: u64,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Slow-start threshold, bytes.
    pub ssthresh: u64,
    /// Packets sent before this time do not cause another reduction (one per round trip).
    pub(super) recovery_start: Option<u64>,
    /// Bytes acknowledged in congestion avoidance not yet turned into a window increase.
    pub(super) acked_acc: u64,
    /// OLIA's `l1_r` and `l2_r`: bytes acknowledged between the last two losses, and since
    /// the last one.
    pub(super) between_losses: u64,
    pub(super) since_loss: u64,
}

impl Window {
    /// The segment size.
    pub fn mss(&self) -> u64 {
        self.mss
    }

    /// The least window: two segments.
    pub fn min_window(&self) -> u64 {
        2 * self.mss
    }

    /// Below the slow-start threshold.
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Accumulates fractional increases so that small ACKs still grow the window: `inc`
    /// bytes now, or one segment per window of `bytes` acknowledged when `inc` is 0.
    pub(super) fn reno_increase(&mut self, bytes: u64, inc: u64) {
        if inc > 0 {
            self.cwnd += inc;
            return;
        }
        self.acked_acc += bytes;
        if self.acked_acc >= self.cwnd {
            self.acked_acc -= self.cwnd;
            self.cwnd += self.mss;
        }
    }

    /// Reno's decrease: half the window.
    pub(super) fn halve(&mut self) {
        self.ssthresh = (self.cwnd / 2).max(self.min_window());
    }
}

/// One congestion control algorithm: its increase and decrease, and its own state. [`Cc`](super::Cc)
/// does what all share (slow start, one reduction per round trip, the collapse on a timeout)
/// and calls these at their places.
pub trait Controller: Send + Sync + fmt::Debug {
    /// Which algorithm it is.
    fn kind(&self) -> CongestionControl;

    /// Its increase reads [`Ack::coupling`] (the caller computes it only then).
    fn coupled(&self) -> bool {
        false
    }

    /// An ACK arrived at `now` for a window in use (before anything else of it).
    fn on_ack_start(&mut self, _now: u64) {}

    /// An RTT sample (µs, the peer's ACK delay removed).
    fn on_rtt_sample(&mut self, _now: u64, _rtt: u64) {}

    /// Whether the window is held where it is for this ACK (nothing else of it counts).
    fn hold(&mut self, _w: &mut Window, _now: u64, _srtt_us: u64) -> bool {
        false
    }

    /// In slow start: whether slow start ends here (the ACK then counts for the increase)
    /// rather than growing the window by the bytes acknowledged.
    fn ends_slow_start(&self) -> bool {
        false
    }

    /// The increase in congestion avoidance.
    fn increase(&mut self, w: &mut Window, ack: &Ack);

    /// `bytes` acknowledged at `now` while the window was not in use (RFC 7661: no growth).
    fn on_ack_not_limited(&mut self, _w: &mut Window, _now: u64, _bytes: u64) {}

    /// A loss episode begins at `now`: the threshold the window drops to. Reno's halving
    /// unless the algorithm has its own.
    fn on_congestion(&mut self, w: &mut Window, _now: u64) {
        w.halve();
    }

    /// A retransmission timeout, the threshold set and the window not yet collapsed.
    fn on_rto(&mut self, _w: &Window) {}

    /// A loss episode began: pending fractions go.
    fn on_recovery(&mut self) {}
}
