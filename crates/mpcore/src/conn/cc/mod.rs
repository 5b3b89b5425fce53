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
//! box allocates nothing: a subflow's controller costs 80 bytes with them (304 when one
//! struct held every algorithm's state).
//!
//! Both couplings were designed for a bulk flow, every subflow using its whole window. A
//! subflow that is not (an interactive flow's idle cellular subflow with a large window) is
//! left out of the coupling ([`Coupling::compute`] is handed only the subflows whose window
//! was full within the last RTO, and the one acknowledged): otherwise its window would hold
//! the busy one far below what the application offers (issue 18: a slow WiFi carrying 2-3
//! packets per round trip under LIA while the cellular window sat unused).

mod controller;
mod cubic;
mod ledbat;
mod olia;
mod reno;

pub use controller::{Ack, CongestionControl, Controller, CoupledPath, Coupling, Window};

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
