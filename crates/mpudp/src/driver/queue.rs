//! The queue a path's socket keeps in front of its link, sized to the rate the path drains at,
//! as Linux sizes a TCP socket's (TCP Small Queues and TSO autosizing: about a millisecond of
//! the pacing rate per TSO packet, a couple of them in the qdisc).
//!
//! A phone's uplink is often its own bottleneck: WiFi or LTE slower than the app writes. Then
//! what the socket holds waits in the interface's queue, and every other datagram sent
//! there (another connection's request, an ACK) waits behind it. A fixed send buffer of
//! 256 KiB (the kernel doubles it) is 40 ms at 100 Mbit/s: on two 100 Mbit/s veths, a Siri
//! request beside an upload took 42 ms where alone it took 0.4 (benches/net.sh, issue 40).
//! Sized to the rate, the socket holds about 4 ms and a GSO batch about 1 ms: the link stays
//! busy (the driver refills it as soon as the socket drains) and little waits behind.

use std::time::{Duration, Instant};

/// The rate is measured over windows of this length.
const WINDOW: Duration = Duration::from_millis(10);
/// The estimate is the largest window's rate over the last one to two of these (BBR's
/// windowed maximum of the delivery rate): a dip of our own (the driver late to refill the
/// socket) must not shrink the queue, which would make the next dip likelier.
const EPOCH: Duration = Duration::from_secs(1);
/// The least send buffer asked for (the kernel doubles it): room for a couple of batches.
const MIN_SNDBUF: usize = 8 << 10;

/// One path's measured drain rate, and what it sizes.
#[derive(Debug)]
pub(crate) struct LocalQueue {
    /// The largest window's rate (bytes per second) in this epoch and in the last one.
    cur: f64,
    prev: f64,
    /// The current window's start and the current epoch's, from the first send on.
    clock: Option<(Instant, Instant)>,
    /// Bytes sent since the window's start.
    bytes: usize,
    /// The send buffer asked of the kernel last (0: the one the socket was opened with).
    sndbuf: usize,
    /// The most the application allows (`Options::send_buffer`).
    ceiling: usize,
}

impl LocalQueue {
    pub(crate) fn new(ceiling: usize) -> Self {
        Self { cur: 0.0, prev: 0.0, clock: None, bytes: 0, sndbuf: 0, ceiling }
    }

    fn rate(&self) -> f64 {
        self.cur.max(self.prev)
    }

    /// The socket took `bytes` (payload) at `now`. Returns a new send buffer size to set when
    /// the estimate has moved it up by half or down by a third (rarely: a change costs a
    /// system call). The kernel counts its own overhead against the buffer too, so without GSO
    /// the socket holds less time than said here.
    pub(crate) fn on_sent(&mut self, now: Instant, bytes: usize) -> Option<usize> {
        // A window counts the sends after its start.
        let Some((start, mut epoch)) = self.clock else {
            self.clock = Some((now, now));
            return None;
        };
        self.bytes += bytes;
        let elapsed = now.duration_since(start);
        if elapsed < WINDOW {
            return None;
        }
        if now.duration_since(epoch) >= EPOCH {
            self.prev = self.cur;
            self.cur = 0.0;
            epoch = now;
        }
        self.cur = self.cur.max(self.bytes as f64 / elapsed.as_secs_f64());
        self.clock = Some((now, epoch));
        self.bytes = 0;
        let want = self.sndbuf_for();
        let close = want * 2 <= self.sndbuf * 3 && want * 3 >= self.sndbuf * 2;
        if self.sndbuf != 0 && close {
            return None;
        }
        self.sndbuf = want;
        Some(want)
    }

    /// About 2 ms of the rate (which the kernel doubles: the socket holds 4 ms), within
    /// `MIN_SNDBUF` and the ceiling. At 1 ms the driver, late by a millisecond on a busy
    /// machine, sometimes let the link idle: 1-2 % of the goodput on 100 Mbit/s links.
    fn sndbuf_for(&self) -> usize {
        ((self.rate() * 0.002) as usize).clamp(MIN_SNDBUF.min(self.ceiling), self.ceiling)
    }

    /// Datagrams of `seg` bytes per GSO batch: about 1 ms of the rate, at least 2, at most
    /// `max`. Before any measure, `max`.
    pub(crate) fn segments(&self, seg: usize, max: usize) -> usize {
        if self.sndbuf == 0 {
            return max;
        }
        ((self.rate() * 0.001) as usize / seg.max(1)).clamp(2.min(max), max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `rate` bytes per second for `ms` milliseconds in 1 ms sends; the last size set.
    fn feed(q: &mut LocalQueue, t: &mut Instant, rate: usize, ms: u64) -> Option<usize> {
        let mut set = None;
        for _ in 0..ms {
            *t += Duration::from_millis(1);
            set = q.on_sent(*t, rate / 1000).or(set);
        }
        set
    }

    /// At 100 Mbit/s the socket holds 4 ms (25 KB asked, which the kernel doubles) and a
    /// batch 1 ms (8 datagrams of 1,472 bytes); at 10 Gbit/s the application's ceiling and
    /// the socket's most. A rate that rises is believed at once; one that falls (a dip of the
    /// driver's own as much as the link's) only after one to two seconds; a small change sets
    /// nothing.
    #[test]
    fn the_local_queue_follows_the_rate() {
        let mut q = LocalQueue::new(256 << 10);
        let mut t = Instant::now();
        assert_eq!(q.segments(1472, 44), 44, "unmeasured: the most");
        assert_eq!(feed(&mut q, &mut t, 12_500_000, 100), Some(25_000));
        assert_eq!(q.segments(1472, 44), 8);
        assert_eq!(feed(&mut q, &mut t, 13_000_000, 100), None, "a small change sets nothing");
        assert_eq!(feed(&mut q, &mut t, 1_250_000_000, 20), Some(256 << 10), "a rise: at once, to the ceiling");
        assert_eq!(q.segments(1472, 44), 44);
        assert_eq!(feed(&mut q, &mut t, 1_000_000, 900), None, "a fall: not at once");
        assert_eq!(q.segments(1472, 44), 44);
        assert_eq!(feed(&mut q, &mut t, 1_000_000, 2_100), Some(MIN_SNDBUF), "but within two seconds");
        assert_eq!(q.segments(1472, 44), 2, "two datagrams at least");
        assert_eq!(LocalQueue::new(4096).sndbuf_for(), 4096, "never above the ceiling");
    }
}
