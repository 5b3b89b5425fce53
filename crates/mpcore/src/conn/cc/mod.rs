//! Per-subflow congestion control: Reno (RFC 5681) and LIA (`reno`), CUBIC (RFC 9438,
//! `cubic`), LEDBAT for background transfers (RFC 6817, `ledbat`), and OLIA (Khalili et al.,
//! "MPTCP is not Pareto-optimal", CoNEXT 2012; draft-khalili-mptcp-congestion-control,
//! `olia`). All windows are in bytes.
//!
//! Each algorithm is a [`Controller`] that owns its own state (CUBIC's curve, OLIA's fraction,
//! LEDBAT's delay measurements); what every algorithm shares is the [`Window`] (the window,
//! slow start's threshold, one reduction per round trip, the bytes between losses that OLIA's
//! coupling reads), which [`Cc`] keeps and hands to its controller. The coupled increases
//! (LIA, OLIA) read the connection-wide [`Coupling`], computed only for a controller that says
//! it is [`coupled`](Controller::coupled). Reno and LIA hold no state of their own, and their
//! box allocates nothing: a subflow's controller costs 88 bytes with them (304 when one
//! struct held every algorithm's state).
//!
//! Both couplings were designed for a bulk flow, every subflow using its whole window. A
//! subflow that is not (an interactive flow's idle cellular subflow with a large window) is
//! left out of the coupling ([`Coupling::compute`] is handed only the subflows whose window
//! was full within the last RTO, and the one acknowledged): otherwise its window would hold
//! the busy one far below what the application offers (issue 18: a slow WiFi carrying 2-3
//! packets per round trip under LIA while the cellular window sat unused).

mod cubic;
mod ledbat;
mod olia;
mod reno;

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
    mss: u64,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Slow-start threshold, bytes.
    pub ssthresh: u64,
    /// Packets sent before this time do not cause another reduction (one per round trip).
    recovery_start: Option<u64>,
    /// Bytes acknowledged in congestion avoidance not yet turned into a window increase.
    acked_acc: u64,
    /// OLIA's `l1_r` and `l2_r`: bytes acknowledged between the last two losses, and since
    /// the last one.
    between_losses: u64,
    since_loss: u64,
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
    fn reno_increase(&mut self, bytes: u64, inc: u64) {
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
    fn halve(&mut self) {
        self.ssthresh = (self.cwnd / 2).max(self.min_window());
    }
}

/// One congestion control algorithm: its increase and decrease, and its own state. [`Cc`]
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

/// One subflow's congestion controller: the shared window and its algorithm.
#[derive(Debug)]
pub struct Cc {
    w: Window,
    algo: Box<dyn Controller>,
}

impl Cc {
    /// A controller with the initial window of 10 segments.
    pub fn new(kind: CongestionControl, mss: u64) -> Self {
        let algo: Box<dyn Controller> = match kind {
            CongestionControl::Reno => Box::new(reno::Reno),
            CongestionControl::Lia => Box::new(reno::Lia),
            CongestionControl::Olia => Box::new(olia::Olia::default()),
            CongestionControl::Cubic => Box::new(cubic::Cubic::default()),
            CongestionControl::Ledbat => Box::new(ledbat::Ledbat::default()),
        };
        Self::with(algo, mss)
    }

    /// A controller running `algo`, with the initial window of 10 segments.
    pub fn with(algo: Box<dyn Controller>, mss: u64) -> Self {
        let w = Window {
            mss,
            // RFC 6928 / RFC 9002: an initial window of 10 packets.
            cwnd: 10 * mss,
            ssthresh: u64::MAX,
            recovery_start: None,
            acked_acc: 0,
            between_losses: 0,
            since_loss: 0,
        };
        Self { w, algo }
    }

    /// Its algorithm.
    pub fn kind(&self) -> CongestionControl {
        self.algo.kind()
    }

    /// What its algorithm's own state takes on the heap (nothing for Reno and LIA).
    pub fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.algo)
    }

    /// Its increase reads the coupling.
    pub fn coupled(&self) -> bool {
        self.algo.coupled()
    }

    /// The congestion window, bytes.
    pub fn cwnd(&self) -> u64 {
        self.w.cwnd
    }

    /// The slow-start threshold, bytes.
    pub fn ssthresh(&self) -> u64 {
        self.w.ssthresh
    }

    /// The least window: two segments.
    pub fn min_window(&self) -> u64 {
        self.w.min_window()
    }

    /// Below the slow-start threshold.
    pub fn in_slow_start(&self) -> bool {
        self.w.in_slow_start()
    }

    /// OLIA's `l_r`.
    pub fn inter_loss(&self) -> u64 {
        self.w.between_losses.max(self.w.since_loss)
    }

    /// A packet sent at `sent_time` belongs to the current recovery episode.
    pub fn in_recovery(&self, sent_time: u64) -> bool {
        self.w.recovery_start.is_some_and(|t| sent_time <= t)
    }

    /// `bytes` newly acknowledged, from a packet sent at `sent_time`; `srtt_us` the subflow's
    /// smoothed RTT; `coupling` the connection-wide LIA and OLIA inputs.
    pub fn on_ack(&mut self, now: u64, sent_time: u64, bytes: u64, srtt_us: u64, coupling: Coupling) {
        self.w.since_loss = self.w.since_loss.saturating_add(bytes);
        self.algo.on_ack_start(now);
        if self.in_recovery(sent_time) {
            return;
        }
        if self.algo.hold(&mut self.w, now, srtt_us) {
            return;
        }
        if self.w.in_slow_start() {
            if self.algo.ends_slow_start() {
                self.w.ssthresh = self.w.cwnd;
            } else {
                self.w.cwnd += bytes;
                return;
            }
        }
        self.algo.increase(&mut self.w, &Ack { now, bytes, srtt_us, coupling });
    }

    /// An RTT sample (µs, the peer's ACK delay removed): LEDBAT's measure of the queue.
    pub fn on_rtt_sample(&mut self, now: u64, rtt: u64) {
        self.algo.on_rtt_sample(now, rtt);
    }

    /// `bytes` newly acknowledged while the subflow has not used half its window lately (the
    /// application or the socket gave it less to send): the window is not grown (RFC 7661:
    /// growing a window that is not in use would let the subflow later send a burst of
    /// a size the path never carried). OLIA still counts the bytes between losses.
    pub fn on_ack_not_limited(&mut self, now: u64, bytes: u64) {
        self.w.since_loss = self.w.since_loss.saturating_add(bytes);
        self.algo.on_ack_not_limited(&mut self.w, now, bytes);
    }

    /// A loss of a packet sent at `sent_time` (once per round trip: packets sent before the
    /// current recovery started are ignored).
    pub fn on_congestion(&mut self, now: u64, sent_time: u64) {
        if self.in_recovery(sent_time) {
            return;
        }
        self.start_recovery(now);
        self.algo.on_congestion(&mut self.w, now);
        self.w.cwnd = self.w.ssthresh;
    }

    /// A retransmission timeout (RFC 5681 §3.1 eq. 4: ssthresh = max(FlightSize/2, 2*SMSS),
    /// then a window of one segment; we keep the two-segment minimum of RFC 9002).
    pub fn on_rto(&mut self, now: u64, in_flight: u64) {
        self.w.ssthresh = (in_flight.max(self.w.cwnd) / 2).max(self.w.min_window());
        self.algo.on_rto(&self.w);
        self.w.cwnd = self.w.min_window();
        self.start_recovery(now);
    }

    /// A loss episode begins at `now` (a loss or a timeout): no further reduction for what
    /// was sent before, the increase accumulators restart, and OLIA's bytes since the last
    /// loss become its bytes between the last two.
    fn start_recovery(&mut self, now: u64) {
        self.w.recovery_start = Some(now);
        self.w.acked_acc = 0;
        self.algo.on_recovery();
        self.w.between_losses = std::mem::take(&mut self.w.since_loss);
    }

    /// Tests: sets the window and the threshold.
    #[cfg(test)]
    fn set(&mut self, cwnd: u64, ssthresh: Option<u64>) {
        self.w.cwnd = cwnd;
        if let Some(s) = ssthresh {
            self.w.ssthresh = s;
        }
    }
}

#[cfg(test)]
mod tests;
