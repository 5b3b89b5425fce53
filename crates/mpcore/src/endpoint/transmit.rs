//! The way out: the stateless answers, then the connections in turn (a turn of up to
//! `SEND_TURN` datagrams), and the connections parked on a full socket (`Activity`).

use super::Endpoint;
use crate::{PathId, Time, Transmit};

/// Datagrams a connection sends in a row before the next one's turn: enough that a driver's
/// GSO batch (datagrams of one connection to one address, `mpudp::driver::io`) holds many.
/// One datagram per turn made every batch of four uploads from one endpoint a single
/// datagram, and moved a fifth of one upload's rate (benches/net.sh, issue 40).
const SEND_TURN: usize = 32;

/// The turns shrink as more connections are ready, to `SEND_ROUND / ready` (at least one), so
/// that a connection that becomes ready (an interactive one beside bulk ones) waits for about
/// this many of the others' datagrams, or one each when there are more of them.
const SEND_ROUND: usize = 128;

impl Endpoint {
    /// The next datagram to send, written into `buf` (at least the configured datagram size).
    pub fn poll_transmit(&mut self, now: Time, buf: &mut [u8]) -> Option<Transmit> {
        if let Some((path, remote, d, carrier)) = self.stateless.pop_front() {
            if buf.len() >= d.len() {
                buf[..d.len()].copy_from_slice(&d);
                return Some(Transmit { path, remote, len: d.len(), carrier });
            }
        }
        self.now = self.now.max(now);
        self.flush_dirty();
        // Connections parked on a path whose socket drained go first (they waited longest),
        // unless one is in the middle of its turn.
        if self.activity.front_ready() != Some(self.turn.0) {
            if let Some(t) = self.poll_parked(now, buf) {
                return Some(t);
            }
        }
        // The connections that may have something to send, in turn: one that sends keeps the
        // front of the queue for its turn (`SEND_TURN`, less when many are ready: `SEND_ROUND`),
        // then goes to the back; one that has nothing leaves it until something happens to it,
        // and one that has something only for a full socket is parked on its path.
        for _ in 0..self.activity.ready_len() {
            let Some(idx) = self.activity.pop_ready() else { break };
            if let Some(t) = self.poll_conn(now, idx, buf) {
                return Some(t);
            }
        }
        None
    }

    /// Polls the connections parked on each path that can take datagrams again, in the order
    /// they were parked, until one sends: a drained socket costs a poll per datagram it
    /// takes, however many connections wait (issue 52).
    fn poll_parked(&mut self, now: Time, buf: &mut [u8]) -> Option<Transmit> {
        for p in 0..self.activity.parked_paths() {
            while !self.unwritable.contains(PathId(p as u8)) {
                let Some(idx) = self.activity.pop_parked(p) else { break };
                if let Some(t) = self.poll_conn(now, idx, buf) {
                    return Some(t);
                }
            }
        }
        None
    }

    /// One connection's next datagram, if it has one for a path that can take it; if it has
    /// one only for a full socket, it is parked on that path.
    fn poll_conn(&mut self, now: Time, idx: usize, buf: &mut [u8]) -> Option<Transmit> {
        let c = self.conns.get_mut(idx)?;
        let (t, held_back) = c.poll_transmit_with(now, buf, self.unwritable);
        self.activity.work.polls += 1;
        self.route_events(idx, now);
        self.after(idx);
        let Some(t) = t else {
            if let Some(p) = held_back {
                self.activity.park(idx, p.0);
            }
            return None;
        };
        self.activity.work.datagrams += 1;
        let sent = if self.turn.0 == idx { self.turn.1 + 1 } else { 1 };
        let limit = (SEND_ROUND / (self.activity.ready_len() + 1)).clamp(1, SEND_TURN);
        if sent < limit {
            self.turn = (idx, sent);
            self.activity.mark_ready_front(idx);
        } else {
            self.turn = (usize::MAX, 0);
            self.activity.mark_ready(idx);
        }
        self.wake_oracle(now);
        Some(t)
    }

    /// What finding the datagrams sent cost: the connections polled, the datagrams they gave,
    /// the times one was parked on a full socket.
    pub fn transmit_work(&self) -> crate::TransmitWork {
        self.activity.work
    }
}
