//! Reno (RFC 5681), each subflow on its own, and LIA (RFC 6356 "Linked Increases"): Reno's
//! decrease with an increase coupled across the subflows. Neither holds state of its own.

use super::{Ack, CongestionControl, Controller, Window};

/// RFC 5681 NewReno-style AIMD: one segment per window acknowledged.
#[derive(Debug, Default)]
pub struct Reno;

impl Controller for Reno {
    fn kind(&self) -> CongestionControl {
        CongestionControl::Reno
    }

    fn increase(&mut self, w: &mut Window, ack: &Ack) {
        w.reno_increase(ack.bytes, ack.bytes * w.mss / w.cwnd.max(1));
    }
}

/// RFC 6356's coupled increase.
#[derive(Debug, Default)]
pub struct Lia;

impl Controller for Lia {
    fn kind(&self) -> CongestionControl {
        CongestionControl::Lia
    }

    fn coupled(&self) -> bool {
        true
    }

    /// RFC 6356 §3: "For each ACK received on subflow i, increase cwnd_i by
    /// min(alpha*bytes_acked*MSS_i/cwnd_total, bytes_acked*MSS_i/cwnd_i)".
    fn increase(&mut self, w: &mut Window, ack: &Ack) {
        let (bytes, coupling) = (ack.bytes, ack.coupling);
        let own = bytes * w.mss / w.cwnd.max(1);
        let coupled = if coupling.total > 0.0 {
            (coupling.alpha * bytes as f64 * w.mss as f64 / coupling.total) as u64
        } else {
            own
        };
        w.reno_increase(bytes, coupled.min(own));
    }
}
