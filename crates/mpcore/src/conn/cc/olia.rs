//! OLIA, "Opportunistic Linked Increases" (Khalili et al., CoNEXT 2012;
//! draft-khalili-mptcp-congestion-control): Reno's decrease, an increase that moves window from
//! the largest-window subflows to the best ones. The coupled algorithm of the Linux MPTCP
//! kernel the Siri/MONROE study ran.

use super::{Ack, CongestionControl, Controller, Window};

/// OLIA's own state: the fraction of a byte of window change not yet applied.
#[derive(Debug, Default)]
pub struct Olia {
    acc: f64,
}

impl Controller for Olia {
    fn kind(&self) -> CongestionControl {
        CongestionControl::Olia
    }

    fn coupled(&self) -> bool {
        true
    }

    /// OLIA (draft-khalili-mptcp-congestion-control §3): "For each ACK on path r, increase
    /// w_r by (w_r/rtt_r^2) / (sum_p w_p/rtt_p)^2 + alpha_r/w_r" (windows in packets, per
    /// packet acknowledged; here per byte, so the change in bytes is `bytes` times that).
    /// The `alpha_r` term may be negative: window moves from the largest-window paths to the
    /// best ones, never below the minimum window.
    fn increase(&mut self, w: &mut Window, ack: &Ack) {
        let mss = w.mss as f64;
        let wnd = (w.cwnd as f64 / mss).max(1.0);
        let rtt = ack.srtt_us.max(1) as f64;
        let sum = ack.coupling.rate_sum / mss;
        let coupled = if sum > 0.0 { (wnd / (rtt * rtt)) / (sum * sum) } else { 1.0 / wnd };
        self.acc += ack.bytes as f64 * (coupled + ack.coupling.olia_alpha / wnd);
        let whole = self.acc.trunc();
        self.acc -= whole;
        if whole >= 0.0 {
            w.cwnd = w.cwnd.saturating_add(whole as u64);
        } else {
            w.cwnd = w.cwnd.saturating_sub((-whole) as u64).max(w.min_window());
            // Window given up on purpose is not to be regained by slow start.
            w.ssthresh = w.ssthresh.min(w.cwnd);
        }
    }

    fn on_recovery(&mut self) {
        self.acc = 0.0;
    }
}
