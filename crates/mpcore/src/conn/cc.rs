//! Per-subflow congestion control: Reno (RFC 5681), CUBIC (RFC 9438), LEDBAT for background
//! transfers (RFC 6817, in `conn::ledbat`), and the two coupled increases for multipath:
//! RFC 6356's LIA and OLIA (Khalili et al., "MPTCP is not
//! Pareto-optimal", CoNEXT 2012; draft-khalili-mptcp-congestion-control). All windows are in
//! bytes.
//!
//! Both couplings were designed for a bulk flow, every subflow using its whole window. A
//! subflow that is not (an interactive flow's idle cellular subflow with a large window) is
//! left out of the coupling ([`Coupling::compute`] is handed only the subflows whose window
//! was full within the last RTO, and the one acknowledged): otherwise its window would hold
//! the busy one far below what the application offers (issue 18: a slow WiFi carrying 2-3
//! packets per round trip under LIA while the cellular window sat unused).

use super::ledbat::{Ledbat, Slowdown};

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

const CUBIC_C: f64 = 0.4;
const CUBIC_BETA: f64 = 0.7;

#[derive(Clone, Debug)]
/// One subflow's congestion controller.
pub struct Cc {
    kind: CongestionControl,
    mss: u64,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Slow-start threshold, bytes.
    pub ssthresh: u64,
    /// Packets sent before this time do not cause another reduction (one per round trip).
    recovery_start: Option<u64>,
    /// Bytes acknowledged in congestion avoidance not yet turned into a window increase.
    acked_acc: u64,
    /// OLIA: the fraction of a byte of window change not yet applied.
    olia_acc: f64,
    /// OLIA's `l1_r` and `l2_r`: bytes acknowledged between the last two losses, and since
    /// the last one.
    between_losses: u64,
    since_loss: u64,
    // CUBIC state (RFC 9438 §4), windows in bytes, times in µs.
    w_max: f64,
    k_s: f64,
    epoch_start: Option<u64>,
    w_est: f64,
    /// Since when acknowledgements have come for a window the subflow did not fill (see
    /// `on_ack_not_limited`): CUBIC's curve is paused for that long.
    not_limited_since: Option<u64>,
    /// LEDBAT's delay measurements (unused by the others).
    ledbat: Ledbat,
}

impl Cc {
    /// A controller with the initial window of 10 segments.
    pub fn new(kind: CongestionControl, mss: u64) -> Self {
        Self {
            kind,
            mss,
            // RFC 6928 / RFC 9002: an initial window of 10 packets.
            cwnd: 10 * mss,
            ssthresh: u64::MAX,
            recovery_start: None,
            acked_acc: 0,
            olia_acc: 0.0,
            between_losses: 0,
            since_loss: 0,
            w_max: 0.0,
            k_s: 0.0,
            epoch_start: None,
            w_est: 0.0,
            not_limited_since: None,
            ledbat: Ledbat::default(),
        }
    }

    /// Its algorithm.
    pub fn kind(&self) -> CongestionControl {
        self.kind
    }

    /// The least window: two segments.
    pub fn min_window(&self) -> u64 {
        2 * self.mss
    }

    /// Below the slow-start threshold.
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// OLIA's `l_r`.
    pub fn inter_loss(&self) -> u64 {
        self.between_losses.max(self.since_loss)
    }

    /// A packet sent at `sent_time` belongs to the current recovery episode.
    pub fn in_recovery(&self, sent_time: u64) -> bool {
        self.recovery_start.is_some_and(|t| sent_time <= t)
    }

    /// `bytes` newly acknowledged, from a packet sent at `sent_time`; `srtt_us` the subflow's
    /// smoothed RTT; `coupling` the connection-wide LIA inputs.
    pub fn on_ack(&mut self, now: u64, sent_time: u64, bytes: u64, srtt_us: u64, coupling: Coupling) {
        self.since_loss = self.since_loss.saturating_add(bytes);
        if let Some(since) = self.not_limited_since.take() {
            // CUBIC's curve is a function of time since the last reduction: the time the
            // window was not in use does not count (as Linux shifts `epoch_start`).
            if let Some(e) = self.epoch_start.as_mut() {
                *e = e.saturating_add(now.saturating_sub(since));
            }
        }
        if self.in_recovery(sent_time) {
            return;
        }
        if self.kind == CongestionControl::Ledbat && self.ledbat_slowdown(now, srtt_us) {
            return;
        }
        if self.in_slow_start() {
            // Back from a slowdown, slow start goes on to the window that held the queue at
            // its target before: the queue its bursts make is no sign of a full path.
            let back = matches!(self.ledbat.slowdown, Slowdown::Back { .. });
            if self.kind == CongestionControl::Ledbat && !back && self.ledbat.ends_slow_start() {
                self.ssthresh = self.cwnd;
            } else {
                self.cwnd += bytes;
                return;
            }
        }
        match self.kind {
            CongestionControl::Reno => self.reno_increase(bytes, bytes * self.mss / self.cwnd.max(1)),
            CongestionControl::Lia => {
                // RFC 6356 §3: "For each ACK received on subflow i, increase cwnd_i by
                // min(alpha*bytes_acked*MSS_i/cwnd_total, bytes_acked*MSS_i/cwnd_i)".
                let own = bytes * self.mss / self.cwnd.max(1);
                let coupled = if coupling.total > 0.0 {
                    (coupling.alpha * bytes as f64 * self.mss as f64 / coupling.total) as u64
                } else {
                    own
                };
                self.reno_increase(bytes, coupled.min(own));
            }
            CongestionControl::Olia => self.olia_increase(bytes, srtt_us, coupling),
            CongestionControl::Cubic => self.cubic_increase(now, bytes, srtt_us),
            CongestionControl::Ledbat => self.ledbat_change(bytes, true),
        }
    }

    /// An RTT sample (µs, the peer's ACK delay removed): LEDBAT's measure of the queue.
    pub fn on_rtt_sample(&mut self, now: u64, rtt: u64) {
        if self.kind == CongestionControl::Ledbat {
            self.ledbat.on_sample(now, rtt);
        }
    }

    /// `bytes` newly acknowledged while the subflow has not used half its window lately (the
    /// application or the socket gave it less to send): the window is not grown (RFC 7661:
    /// growing a window that is not in use would let the subflow later send a burst of
    /// a size the path never carried). OLIA still counts the bytes between losses.
    pub fn on_ack_not_limited(&mut self, now: u64, bytes: u64) {
        self.since_loss = self.since_loss.saturating_add(bytes);
        self.not_limited_since.get_or_insert(now);
        // RFC 7661 forbids only the growth: a background upload that does not fill its window
        // still backs off from a queue others built.
        if self.kind == CongestionControl::Ledbat {
            self.ledbat_change(bytes, false);
        }
    }

    /// LEDBAT++'s periodic slowdown (draft-irtf-iccrg-ledbat-plus-plus §4.4): two RTTs after
    /// slow start first ends, then every nine times as long as the last slowdown took, the
    /// window drops to its least for two RTTs and slow start brings it back to where it was.
    /// The queue drains meanwhile, and the base delay is measured again: without it, a
    /// standing queue near the target entered each minute's least delay, the base rose with
    /// it after 10 minutes and the queue with the base (in the simulator, a request beside the
    /// upload went from 1.45 to 1.74 RTT in 11 minutes). It costs about a tenth of the path.
    /// Returns whether the window is held at its least now (the ACK changes nothing else).
    fn ledbat_slowdown(&mut self, now: u64, srtt_us: u64) -> bool {
        match self.ledbat.slowdown {
            Slowdown::Before if !self.in_slow_start() => self.ledbat.slowdown = Slowdown::At(now + 2 * srtt_us),
            Slowdown::At(at) if now >= at => {
                self.ledbat.slowdown = Slowdown::Held { since: now, until: now + 2 * srtt_us, cwnd: self.cwnd };
                self.cwnd = self.min_window();
                return true;
            }
            Slowdown::Held { until, .. } if now < until => return true,
            Slowdown::Held { since, cwnd, .. } => {
                self.ssthresh = cwnd;
                self.ledbat.slowdown = Slowdown::Back { since };
            }
            Slowdown::Back { since } if !self.in_slow_start() => {
                self.ledbat.slowdown = Slowdown::At(now + 9 * now.saturating_sub(since));
            }
            _ => {}
        }
        false
    }

    /// LEDBAT's change for `bytes` acknowledged; only a decrease unless `grow`. A decrease
    /// also ends slow start (the window is not to be regained at once).
    fn ledbat_change(&mut self, bytes: u64, grow: bool) {
        let change = self.ledbat.change(bytes, self.cwnd, self.mss, grow);
        self.cwnd = self.cwnd.saturating_add_signed(change).max(self.min_window());
        if change < 0 {
            self.ssthresh = self.ssthresh.min(self.cwnd);
        }
    }

    /// OLIA (draft-khalili-mptcp-congestion-control §3): "For each ACK on path r, increase
    /// w_r by (w_r/rtt_r^2) / (sum_p w_p/rtt_p)^2 + alpha_r/w_r" (windows in packets, per
    /// packet acknowledged; here per byte, so the change in bytes is `bytes` times that).
    /// The `alpha_r` term may be negative: window moves from the largest-window paths to the
    /// best ones, never below the minimum window.
    fn olia_increase(&mut self, bytes: u64, srtt_us: u64, coupling: Coupling) {
        let mss = self.mss as f64;
        let w = (self.cwnd as f64 / mss).max(1.0);
        let rtt = srtt_us.max(1) as f64;
        let sum = coupling.rate_sum / mss;
        let coupled = if sum > 0.0 { (w / (rtt * rtt)) / (sum * sum) } else { 1.0 / w };
        self.olia_acc += bytes as f64 * (coupled + coupling.olia_alpha / w);
        let whole = self.olia_acc.trunc();
        self.olia_acc -= whole;
        if whole >= 0.0 {
            self.cwnd = self.cwnd.saturating_add(whole as u64);
        } else {
            self.cwnd = self.cwnd.saturating_sub((-whole) as u64).max(self.min_window());
            // Window given up on purpose is not to be regained by slow start.
            self.ssthresh = self.ssthresh.min(self.cwnd);
        }
    }

    /// Accumulates fractional increases so that small ACKs still grow the window.
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

    fn cubic_increase(&mut self, now: u64, bytes: u64, srtt_us: u64) {
        let mss = self.mss as f64;
        let start = *self.epoch_start.get_or_insert(now);
        if self.w_max < self.cwnd as f64 {
            // No reduction yet (or the window grew past it): start the curve at the window.
            self.w_max = self.cwnd as f64;
            self.k_s = 0.0;
        }
        // RFC 9438 §4.2: W_cubic(t) = C*(t-K)^3 + W_max, in segments, t in seconds,
        // evaluated one RTT ahead.
        let t = (now.saturating_sub(start) + srtt_us) as f64 / 1e6;
        let target = (CUBIC_C * (t - self.k_s).powi(3) * mss + self.w_max).max(self.cwnd as f64);
        // §4.3 Reno-friendly region: W_est grows by alpha_cubic per RTT.
        let alpha = 3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA);
        self.w_est += alpha * mss * bytes as f64 / self.cwnd.max(1) as f64;
        let target = target.min(1.5 * self.cwnd as f64);
        let inc = if self.w_est > target {
            self.w_est - self.cwnd as f64
        } else {
            (target - self.cwnd as f64) * bytes as f64 / self.cwnd.max(1) as f64
        };
        if inc >= 1.0 {
            self.cwnd += inc as u64;
        } else {
            self.reno_increase(bytes, 0);
        }
    }

    /// A loss of a packet sent at `sent_time` (once per round trip: packets sent before the
    /// current recovery started are ignored).
    pub fn on_congestion(&mut self, now: u64, sent_time: u64) {
        if self.in_recovery(sent_time) {
            return;
        }
        self.start_recovery(now);
        match self.kind {
            CongestionControl::Reno | CongestionControl::Lia | CongestionControl::Olia | CongestionControl::Ledbat => {
                self.ssthresh = (self.cwnd / 2).max(self.min_window());
            }
            CongestionControl::Cubic => {
                let cwnd = self.cwnd as f64;
                // §4.7 fast convergence.
                self.w_max = if cwnd < self.w_max { cwnd * (1.0 + CUBIC_BETA) / 2.0 } else { cwnd };
                self.ssthresh = ((cwnd * CUBIC_BETA) as u64).max(self.min_window());
                self.k_s = ((self.w_max - self.ssthresh as f64) / self.mss as f64 / CUBIC_C).cbrt();
                self.epoch_start = Some(now);
                self.w_est = self.ssthresh as f64;
            }
        }
        self.cwnd = self.ssthresh;
    }

    /// A retransmission timeout (RFC 5681 §3.1 eq. 4: ssthresh = max(FlightSize/2, 2*SMSS),
    /// then a window of one segment; we keep the two-segment minimum of RFC 9002).
    pub fn on_rto(&mut self, now: u64, in_flight: u64) {
        self.ssthresh = (in_flight.max(self.cwnd) / 2).max(self.min_window());
        if self.kind == CongestionControl::Cubic {
            self.w_max = self.cwnd as f64;
            self.epoch_start = None;
        }
        self.cwnd = self.min_window();
        self.start_recovery(now);
    }

    /// A loss episode begins at `now` (a loss or a timeout): no further reduction for what
    /// was sent before, the increase accumulators restart, and OLIA's bytes since the last
    /// loss become its bytes between the last two.
    fn start_recovery(&mut self, now: u64) {
        self.recovery_start = Some(now);
        self.acked_acc = 0;
        self.olia_acc = 0.0;
        self.ledbat.on_recovery();
        self.between_losses = std::mem::take(&mut self.since_loss);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    /// LEDBAT with a queue twice its target: a window not in use (RFC 7661) still shrinks,
    /// and never grows; a window in use shrinks as well, and slow start is over.
    #[test]
    fn ledbat_backs_off_from_a_queue_whether_or_not_its_window_is_in_use() {
        let mut cc = Cc::new(CongestionControl::Ledbat, MSS);
        cc.on_rtt_sample(0, 20_000);
        cc.on_ack(1, 0, MSS, 20_000, Coupling::default());
        assert_eq!(cc.cwnd, 11 * MSS, "no queue: slow start");
        cc.on_ack_not_limited(2, 5 * MSS);
        assert_eq!(cc.cwnd, 11 * MSS, "a window not in use does not grow");
        for _ in 0..4 {
            cc.on_rtt_sample(3, 40_000);
        }
        cc.on_ack_not_limited(4, 4 * MSS);
        assert_eq!(cc.cwnd, 9 * MSS, "a queue of twice the target: half the bytes acknowledged off");
        assert!(!cc.in_slow_start());
        cc.on_ack(5, 4, 2 * MSS, 20_000, Coupling::default());
        assert_eq!(cc.cwnd, 8 * MSS);
        for _ in 0..100 {
            cc.on_ack(6, 4, 10 * MSS, 20_000, Coupling::default());
        }
        assert_eq!(cc.cwnd, cc.min_window(), "never below the least window");
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
        assert_eq!(cc.cwnd, 20 * MSS);
        cc.on_congestion(1, 0);
        assert_eq!((cc.cwnd, cc.ssthresh), (10 * MSS, 10 * MSS));
        cc.on_congestion(2, 0);
        assert_eq!(cc.cwnd, 10 * MSS, "one reduction per recovery episode");
        for i in 0..10 {
            cc.on_ack(10 + i, 5, MSS, 10_000, Coupling::default());
        }
        // About one MSS per window of ACKs (each ACK adds MSS*MSS/cwnd as cwnd grows).
        assert!((10_900..=11_000).contains(&cc.cwnd), "{}", cc.cwnd);
    }

    #[test]
    fn lia_grows_no_faster_than_reno_on_two_equal_paths() {
        let mut reno = Cc::new(CongestionControl::Reno, MSS);
        let mut lia = Cc::new(CongestionControl::Lia, MSS);
        for cc in [&mut reno, &mut lia] {
            cc.on_congestion(0, 0);
            cc.cwnd = 20 * MSS;
        }
        // Two identical subflows of 20 MSS at 50 ms: alpha = 40 * (20/2500) / (2*20/50)^2 = 0.5.
        let p = CoupledPath { this: true, cwnd: 20 * MSS, rtt: 50_000, inter_loss: 0 };
        let coupling = Coupling::compute([p, CoupledPath { this: false, ..p }].into_iter());
        assert!((coupling.alpha - 0.5).abs() < 1e-9, "{}", coupling.alpha);
        for i in 0..200 {
            reno.on_ack(10 + i, 5, MSS, 50_000, coupling);
            lia.on_ack(10 + i, 5, MSS, 50_000, coupling);
        }
        assert!(lia.cwnd < reno.cwnd, "coupled {} vs reno {}", lia.cwnd, reno.cwnd);
        assert!(lia.cwnd > 20 * MSS, "but it still grows");
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
            cc.cwnd = 20 * MSS;
        }
        for i in 0..400 {
            let coupling = Coupling::compute([path(true, olia.cwnd / MSS, 50_000, 0)].into_iter());
            assert_eq!(coupling.olia_alpha, 0.0);
            reno.on_ack(10 + i, 5, MSS, 50_000, Coupling::default());
            olia.on_ack(10 + i, 5, MSS, 50_000, coupling);
        }
        assert!(reno.cwnd > 30 * MSS);
        assert!(olia.cwnd.abs_diff(reno.cwnd) <= MSS, "olia {} reno {}", olia.cwnd, reno.cwnd);
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
            (cc.cwnd, cc.ssthresh) = (w * MSS, w * MSS);
            for i in 0..100 {
                cc.on_ack(10 + i, 5, MSS, 50_000, coupling);
            }
            cc.cwnd
        };
        let plain = |c: Coupling| Coupling { olia_alpha: 0.0, ..c };
        assert!(grow(40, on_a) < grow(40, plain(on_a)), "{} vs {}", grow(40, on_a), grow(40, plain(on_a)));
        assert!(grow(10, on_b) > grow(10, plain(on_b)) + 3 * MSS, "{} vs {}", grow(10, on_b), grow(10, plain(on_b)));
    }

    #[test]
    fn olia_never_shrinks_below_the_minimum_window() {
        let mut cc = Cc::new(CongestionControl::Olia, MSS);
        cc.on_congestion(0, 0);
        (cc.cwnd, cc.ssthresh) = (3 * MSS, 3 * MSS);
        let coupling = Coupling { rate_sum: 1e9, olia_alpha: -1.0, ..Coupling::default() };
        for i in 0..100 {
            cc.on_ack(10 + i, 5, MSS, 50_000, coupling);
        }
        assert_eq!(cc.cwnd, cc.min_window());
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
        cc.cwnd = 100 * MSS;
        cc.ssthresh = 50 * MSS;
        cc.on_congestion(1_000_000, 0);
        assert_eq!(cc.cwnd, 70 * MSS);
        let mut now = 1_000_000;
        for _ in 0..4000 {
            now += 1_000;
            cc.on_ack(now, now, MSS, 20_000, Coupling::default());
        }
        assert!(cc.cwnd > 95 * MSS, "regrew to {}", cc.cwnd / MSS);
    }

    #[test]
    fn an_unused_window_neither_grows_nor_advances_cubics_curve() {
        let fresh = || {
            let mut cc = Cc::new(CongestionControl::Cubic, MSS);
            cc.cwnd = 100 * MSS;
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
        let before = idle.cwnd;
        for k in 0..100 {
            idle.on_ack_not_limited(1_200_000 + k * 100_000, MSS);
        }
        assert_eq!(idle.cwnd, before);
        idle.on_ack(11_200_000, 11_150_000, MSS, 20_000, Coupling::default());
        assert_eq!(idle.cwnd, used.cwnd);
    }

    #[test]
    fn rto_collapses_to_the_minimum_window() {
        let mut cc = Cc::new(CongestionControl::Lia, MSS);
        cc.on_rto(5, 8 * MSS);
        assert_eq!((cc.cwnd, cc.ssthresh), (2 * MSS, 5 * MSS));
    }
}
