//! Links whose capacity follows a trace, in mahimahi's format (Winstein et al., NSDI 2013): one
//! line per delivery opportunity of 1,500 bytes, its time in milliseconds from the trace's
//! start, in order; the trace repeats, its period being its last line's time. A path with a
//! trace (`PathConfig::trace`) drains each direction's queue at its opportunities
//! instead of at a fixed rate: an idle link lets its opportunities go by unused, a busy one
//! fills each with up to 1,500 bytes of what waits (a datagram may span several).
//!
//! [`lte_drive`] is the one trace this crate carries, made from published measurements of an
//! LTE network driven through (see there): a trace of a model, not a capture. Any mahimahi
//! trace (its `Verizon-LTE-driving.up`, say) loads with [`Trace::parse`].

use crate::rng::{ms, Rng};
use mpcore::Time;
use std::collections::VecDeque;
use std::sync::OnceLock;

/// Bytes a delivery opportunity carries.
pub const OPPORTUNITY_BYTES: u32 = 1_500;

/// A link's delivery opportunities.
#[derive(Debug, PartialEq, Eq)]
pub struct Trace {
    /// Milliseconds from the start, non-decreasing.
    ops: Vec<u32>,
    /// The period after which the trace repeats, ms (its last opportunity's time, at least 1).
    period_ms: u64,
}

impl Trace {
    /// Parses a trace: one non-negative integer per line (blank lines ignored), in order, at
    /// least one; a one-line error otherwise.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut ops = Vec::new();
        for (k, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let t: u32 = line.parse().map_err(|_| format!("line {}: {line:?} is not a time in ms", k + 1))?;
            if ops.last().is_some_and(|&p| t < p) {
                return Err(format!("line {}: {t} ms comes before the line above", k + 1));
            }
            ops.push(t);
        }
        let last = *ops.last().ok_or("a trace needs at least one delivery opportunity")?;
        Ok(Self { ops, period_ms: u64::from(last).max(1) })
    }

    /// The trace, one time per line.
    pub fn format(&self) -> String {
        let mut s = String::with_capacity(self.ops.len() * 6);
        for t in &self.ops {
            s.push_str(&t.to_string());
            s.push('\n');
        }
        s
    }

    /// Opportunity `k` (counting through the repetitions), µs from the start.
    pub fn at(&self, k: u64) -> Time {
        let n = self.ops.len() as u64;
        ms((k / n) * self.period_ms + u64::from(self.ops[(k % n) as usize]))
    }

    /// The first opportunity at `t` or later.
    pub fn first_from(&self, t: Time) -> u64 {
        let n = self.ops.len() as u64;
        let period = ms(self.period_ms);
        let (cycle, within) = (t / period, t % period);
        let k = self.ops.partition_point(|&o| ms(u64::from(o)) < within) as u64;
        cycle * n + k
    }

    /// The mean rate over one period, bits per second.
    pub fn mean_bps(&self) -> u64 {
        self.ops.len() as u64 * u64::from(OPPORTUNITY_BYTES) * 8 * 1_000 / self.period_ms
    }

    /// Keeps the trace for the rest of the program (a `PathConfig` holds `&'static`).
    pub fn leak(self) -> &'static Self {
        Box::leak(Box::new(self))
    }
}

/// One direction of a traced link: the next opportunity, the bytes left in it, and what the
/// queue holds (when each datagram's last byte leaves, and its size).
#[derive(Debug)]
pub(crate) struct TraceLink {
    next: u64,
    left: u32,
    queued: VecDeque<(Time, u32)>,
}

impl Default for TraceLink {
    fn default() -> Self {
        Self { next: 0, left: OPPORTUNITY_BYTES, queued: VecDeque::new() }
    }
}

impl TraceLink {
    /// Bytes waiting at `now`.
    pub fn backlog(&mut self, now: Time) -> u64 {
        while self.queued.front().is_some_and(|q| q.0 <= now) {
            self.queued.pop_front();
        }
        self.queued.iter().map(|q| u64::from(q.1)).sum()
    }

    /// A datagram of `size` bytes enters the queue at `now`: when its last byte leaves, or
    /// `None` if a queue of `limit` bytes (0: unlimited) has no room for it.
    pub fn enqueue(&mut self, trace: &Trace, now: Time, size: usize, limit: u64) -> Option<Time> {
        let size = size as u32;
        if limit > 0 && self.backlog(now) + u64::from(size) > limit {
            return None;
        }
        // Opportunities that went by while the link was idle are lost.
        let first = trace.first_from(now);
        if self.next < first {
            (self.next, self.left) = (first, OPPORTUNITY_BYTES);
        }
        let mut rest = size;
        loop {
            let take = rest.min(self.left);
            (self.left, rest) = (self.left - take, rest - take);
            if rest == 0 {
                break;
            }
            (self.next, self.left) = (self.next + 1, OPPORTUNITY_BYTES);
        }
        let done = trace.at(self.next);
        if self.left == 0 {
            (self.next, self.left) = (self.next + 1, OPPORTUNITY_BYTES);
        }
        self.queued.push_back((done, size));
        Some(done)
    }
}

/// An LTE link driven through, both directions (`[up, down]`), from published measurements:
/// Chen, Nahum, Towsley and Liu, "On Uplink Measurement of Cellular Networks for Mobile
/// Multi-Path TCP" (the study the uplink figures reproduce), Verizon 4G LTE driven around
/// Amherst at about 65 km/h:
///
/// - uplink: 4.34 Mbit/s on average (Table 1, mobile), coefficient of variation of the
///   throughput 0.47 (Table 2, mobile; smoothed over 1-5 s);
/// - downlink: 12.1 Mbit/s on average (§4.1, static: the study saw no degradation in
///   motion), coefficient of variation 0.25 (Table 2, mobile).
///
/// Two minutes of [`Trace::model`], then it repeats. A trace of a model of those measurements,
/// not a capture: `examples/lte_trace.rs` writes it out in mahimahi's format, and a capture
/// (mahimahi's `Verizon-LTE-driving.up`, say) loads with [`Trace::parse`].
pub fn lte_drive() -> [&'static Trace; 2] {
    static TRACES: OnceLock<[&'static Trace; 2]> = OnceLock::new();
    *TRACES.get_or_init(|| [Trace::model(1, 120, 4.34e6, 0.47).leak(), Trace::model(2, 120, 12.1e6, 0.25).leak()])
}

impl Trace {
    /// `seconds` of a link of `mean_bps` on average whose rate has coefficient of variation
    /// `cv`: the rate of each 100 ms is the mean times a log-normal factor whose logarithm
    /// follows a first-order autoregression (correlation 0.95 from one 100 ms to the next: the
    /// rate wanders over seconds, as a drive's does), the factor's mean 1 and its coefficient
    /// of variation `cv`. Each 100 ms gets as many delivery opportunities as its rate carries
    /// (the fraction carried over), spread over its 1 ms LTE subframes.
    pub fn model(seed: u64, seconds: u64, mean_bps: f64, cv: f64) -> Self {
        const SLOT_MS: u64 = 100;
        const PHI: f64 = 0.95;
        let mut rng = Rng::new(seed);
        let mut normal = || {
            // Box-Muller.
            let u1 = rng.unit().max(f64::MIN_POSITIVE);
            let u2 = rng.unit();
            (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        };
        let sigma = (1.0 + cv * cv).ln().sqrt();
        let mut z = normal();
        let (mut ops, mut carry) = (Vec::new(), 0.0);
        for slot in 0..seconds * 1_000 / SLOT_MS {
            z = PHI * z + (1.0 - PHI * PHI).sqrt() * normal();
            let rate = mean_bps * (sigma * z - sigma * sigma / 2.0).exp();
            let bytes = rate / 8.0 * SLOT_MS as f64 / 1_000.0 + carry;
            let n = (bytes / f64::from(OPPORTUNITY_BYTES)).floor();
            carry = bytes - n * f64::from(OPPORTUNITY_BYTES);
            let n = n as u64;
            for k in 0..n {
                ops.push((slot * SLOT_MS + k * SLOT_MS / n) as u32);
            }
        }
        // The period is the last line: one more at the end.
        ops.push((seconds * 1_000) as u32);
        Self { ops, period_ms: (seconds * 1_000).max(1) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_repeats_and_bad_ones_are_refused() {
        let t = Trace::parse("0\n0\n5\n\n10\n").unwrap();
        assert_eq!((t.at(0), t.at(2), t.at(3), t.at(4), t.at(6)), (0, ms(5), ms(10), ms(10), ms(15)));
        assert_eq!(t.first_from(ms(6)), 3);
        assert_eq!(t.first_from(ms(11)), 6);
        assert_eq!(t.mean_bps(), 4 * 1_500 * 8 * 100);
        assert_eq!(Trace::parse(&t.format()), Ok(t));
        assert!(Trace::parse("").is_err());
        assert!(Trace::parse("5\n3\n").is_err());
        assert!(Trace::parse("1\nx\n").is_err());
    }

    #[test]
    fn a_traced_queue_drains_at_its_opportunities() {
        // An opportunity every 10 ms.
        let t = Trace::parse(&(1..=10).map(|k| (k * 10).to_string()).collect::<Vec<_>>().join("\n")).unwrap();
        let mut l = TraceLink::default();
        // Two datagrams of 1,000 bytes at 1 ms: the first leaves at 10 ms, the second spans the
        // opportunities at 10 and 20 ms.
        assert_eq!(l.enqueue(&t, ms(1), 1_000, 0), Some(ms(10)));
        assert_eq!(l.enqueue(&t, ms(1), 1_000, 0), Some(ms(20)));
        assert_eq!(l.backlog(ms(15)), 1_000);
        // A queue of 2,500 bytes has no room for a third at 15 ms; at 25 ms it is empty, and
        // the opportunities that went by are lost: the next is at 30 ms.
        assert_eq!(l.enqueue(&t, ms(15), 1_600, 2_500), None);
        assert_eq!(l.enqueue(&t, ms(25), 1_500, 2_500), Some(ms(30)));
        // After the trace's end it repeats: 100 ms is its period.
        assert_eq!(l.enqueue(&t, ms(101), 100, 0), Some(ms(110)));
    }
}
