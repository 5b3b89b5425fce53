//! Per-subflow congestion control: Reno (RFC 5681), CUBIC (RFC 9438), and Reno with the
//! coupled increase of RFC 6356 (LIA). All windows are in bytes.

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
}

impl CongestionControl {
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "reno" => Some(Self::Reno),
            "cubic" => Some(Self::Cubic),
            "lia" => Some(Self::Lia),
            _ => None,
        }
    }
}

/// RFC 6356 §3 inputs gathered over the connection's subflows at the time of an ACK.
#[derive(Clone, Copy, Debug, Default)]
pub struct Coupling {
    /// `cwnd_total`, bytes.
    pub total: f64,
    /// `alpha` of RFC 6356 §3.
    pub alpha: f64,
}

impl Coupling {
    /// `alpha = cwnd_total * max_i(cwnd_i / rtt_i^2) / (sum_i cwnd_i / rtt_i)^2` over
    /// `(cwnd bytes, srtt µs)` pairs.
    pub fn compute(subflows: impl Iterator<Item = (u64, u64)>) -> Self {
        let (mut total, mut best, mut sum) = (0.0f64, 0.0f64, 0.0f64);
        for (cwnd, rtt) in subflows {
            let (c, r) = (cwnd as f64, rtt.max(1) as f64);
            total += c;
            best = best.max(c / (r * r));
            sum += c / r;
        }
        let alpha = if sum > 0.0 { total * best / (sum * sum) } else { 1.0 };
        Self { total, alpha }
    }
}

const CUBIC_C: f64 = 0.4;
const CUBIC_BETA: f64 = 0.7;

#[derive(Clone, Debug)]
pub struct Cc {
    kind: CongestionControl,
    mss: u64,
    pub cwnd: u64,
    pub ssthresh: u64,
    /// Packets sent before this time do not cause another reduction (one per round trip).
    recovery_start: Option<u64>,
    /// Bytes acknowledged in congestion avoidance not yet turned into a window increase.
    acked_acc: u64,
    // CUBIC state (RFC 9438 §4), windows in bytes, times in µs.
    w_max: f64,
    k_s: f64,
    epoch_start: Option<u64>,
    w_est: f64,
}

impl Cc {
    pub fn new(kind: CongestionControl, mss: u64) -> Self {
        Self {
            kind,
            mss,
            // RFC 6928 / RFC 9002: an initial window of 10 packets.
            cwnd: 10 * mss,
            ssthresh: u64::MAX,
            recovery_start: None,
            acked_acc: 0,
            w_max: 0.0,
            k_s: 0.0,
            epoch_start: None,
            w_est: 0.0,
        }
    }

    pub fn kind(&self) -> CongestionControl {
        self.kind
    }

    pub fn min_window(&self) -> u64 {
        2 * self.mss
    }

    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    pub fn in_recovery(&self, sent_time: u64) -> bool {
        self.recovery_start.is_some_and(|t| sent_time <= t)
    }

    /// `bytes` newly acknowledged, from a packet sent at `sent_time`; `srtt_us` the subflow's
    /// smoothed RTT; `coupling` the connection-wide LIA inputs.
    pub fn on_ack(&mut self, now: u64, sent_time: u64, bytes: u64, srtt_us: u64, coupling: Coupling) {
        if self.in_recovery(sent_time) {
            return;
        }
        if self.in_slow_start() {
            self.cwnd += bytes;
            return;
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
            CongestionControl::Cubic => self.cubic_increase(now, bytes, srtt_us),
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
        self.recovery_start = Some(now);
        self.acked_acc = 0;
        match self.kind {
            CongestionControl::Reno | CongestionControl::Lia => {
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
        self.recovery_start = Some(now);
        self.acked_acc = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

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
        let coupling = Coupling::compute([(20 * MSS, 50_000), (20 * MSS, 50_000)].into_iter());
        assert!((coupling.alpha - 0.5).abs() < 1e-9, "{}", coupling.alpha);
        for i in 0..200 {
            reno.on_ack(10 + i, 5, MSS, 50_000, coupling);
            lia.on_ack(10 + i, 5, MSS, 50_000, coupling);
        }
        assert!(lia.cwnd < reno.cwnd, "coupled {} vs reno {}", lia.cwnd, reno.cwnd);
        assert!(lia.cwnd > 20 * MSS, "but it still grows");
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
    fn rto_collapses_to_the_minimum_window() {
        let mut cc = Cc::new(CongestionControl::Lia, MSS);
        cc.on_rto(5, 8 * MSS);
        assert_eq!((cc.cwnd, cc.ssthresh), (2 * MSS, 5 * MSS));
    }
}
