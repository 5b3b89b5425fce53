//! CUBIC (RFC 9438), each subflow on its own.

use super::{Ack, CongestionControl, Controller, Window};

const CUBIC_C: f64 = 0.4;
const CUBIC_BETA: f64 = 0.7;

/// CUBIC's curve (RFC 9438 §4), windows in bytes, times in µs.
#[derive(Debug, Default)]
pub struct Cubic {
    w_max: f64,
    k_s: f64,
    epoch_start: Option<u64>,
    w_est: f64,
    /// Since when acknowledgements have come for a window the subflow did not fill (see
    /// `on_ack_not_limited`): the curve is paused for that long.
    not_limited_since: Option<u64>,
}

impl Controller for Cubic {
    fn kind(&self) -> CongestionControl {
        CongestionControl::Cubic
    }

    fn on_ack_start(&mut self, now: u64) {
        if let Some(since) = self.not_limited_since.take() {
            // The curve is a function of time since the last reduction: the time the window
            // was not in use does not count (as Linux shifts `epoch_start`).
            if let Some(e) = self.epoch_start.as_mut() {
                *e = e.saturating_add(now.saturating_sub(since));
            }
        }
    }

    fn increase(&mut self, w: &mut Window, ack: &Ack) {
        let (now, bytes) = (ack.now, ack.bytes);
        let mss = w.mss as f64;
        let start = *self.epoch_start.get_or_insert(now);
        if self.w_max < w.cwnd as f64 {
            // No reduction yet (or the window grew past it): start the curve at the window.
            self.w_max = w.cwnd as f64;
            self.k_s = 0.0;
        }
        // RFC 9438 §4.2: W_cubic(t) = C*(t-K)^3 + W_max, in segments, t in seconds,
        // evaluated one RTT ahead.
        let t = (now.saturating_sub(start) + ack.srtt_us) as f64 / 1e6;
        let target = (CUBIC_C * (t - self.k_s).powi(3) * mss + self.w_max).max(w.cwnd as f64);
        // §4.3 Reno-friendly region: W_est grows by alpha_cubic per RTT.
        let alpha = 3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA);
        self.w_est += alpha * mss * bytes as f64 / w.cwnd.max(1) as f64;
        let target = target.min(1.5 * w.cwnd as f64);
        let inc = if self.w_est > target {
            self.w_est - w.cwnd as f64
        } else {
            (target - w.cwnd as f64) * bytes as f64 / w.cwnd.max(1) as f64
        };
        if inc >= 1.0 {
            w.cwnd += inc as u64;
        } else {
            w.reno_increase(bytes, 0);
        }
    }

    fn on_ack_not_limited(&mut self, _w: &mut Window, now: u64, _bytes: u64) {
        self.not_limited_since.get_or_insert(now);
    }

    fn on_congestion(&mut self, w: &mut Window, now: u64) {
        let cwnd = w.cwnd as f64;
        // §4.7 fast convergence.
        self.w_max = if cwnd < self.w_max { cwnd * (1.0 + CUBIC_BETA) / 2.0 } else { cwnd };
        w.ssthresh = ((cwnd * CUBIC_BETA) as u64).max(w.min_window());
        self.k_s = ((self.w_max - w.ssthresh as f64) / w.mss as f64 / CUBIC_C).cbrt();
        self.epoch_start = Some(now);
        self.w_est = w.ssthresh as f64;
    }

    fn on_rto(&mut self, w: &Window) {
        self.w_max = w.cwnd as f64;
        self.epoch_start = None;
    }
}
