//! What the connection does with its subflows' recovery: it applies their ACKs (with the
//! coupling of RFC 6356 over all of them), queues the data of lost packets again, reinjects
//! what a failing or closing subflow had in flight, and closes subflows.

use super::cc::{CoupledPath, Coupling};
use super::events::{CloseReason, EndpointEvent, Event};
use super::{Connection, State};
use crate::wire::frame::reason;
use crate::wire::{Ack, Cid};
use crate::Time;

impl Connection {
    /// Closes one subflow (SUBFLOW_RESET with `reason`); its data is reinjected elsewhere.
    pub fn close_subflow(&mut self, now: Time, id: u32, reason: u8) -> bool {
        let Some(i) = self.subflows.by_number(id).filter(|&i| self.subflows[i].is_open()) else { return false };
        self.shut_subflow(now, i, reason, true);
        true
    }

    /// Queues a copy of everything in flight on subflow `k` for reinjection, leaving it in
    /// flight there (it may still arrive).
    pub(super) fn copy_in_flight_for_reinjection(&mut self, k: usize) {
        let mask = 1u64 << (k % 64);
        for p in self.subflows[k].rec().sent.iter() {
            if let Some(d) = p.data {
                self.send.queue_retransmission(d, mask);
            }
        }
    }

    /// Subflow-level ACK (§5.3): the subflow takes what it acknowledges, then congestion
    /// control runs with the coupling over the open subflows, then loss detection.
    pub(super) fn on_ack(&mut self, now: Time, i: usize, a: &Ack<'_>) {
        let Some(acked) = self.subflows[i].on_ack(now, a, self.config.transport.max_ack_delay) else { return };
        // Something new was acknowledged: a tail loss probe pending verdict was answered.
        self.subflows[i].set_tlp_check(None);
        let id = self.subflows[i].id();
        if acked.recovered {
            self.emit(now, Event::SubflowRecovered { id });
        }
        if acked.established {
            let sf = &self.subflows[i];
            let ev = Event::SubflowEstablished { id, path: sf.local_path(), backup: sf.backup() };
            self.emit(now, ev);
            self.on_carrier_established(now, i);
        }
        // Coupled: the working subflows that used their window within the last RTO, and this
        // one (see `cc`'s module documentation).
        let this = self.subflows[i].id();
        let coupling = if !self.subflows[i].rec().cc.coupled() {
            Coupling::default()
        } else {
            Coupling::compute(
                self.subflows
                    .iter()
                    .filter(|s| s.established() && !s.pf() && (s.id() == this || s.rec().cwnd_limited(now)))
                    .map(|s| CoupledPath {
                        this: s.id() == this,
                        cwnd: s.rec().cc.cwnd(),
                        rtt: s.rec().rtt.smoothed_or_default(),
                        inter_loss: s.rec().cc.inter_loss(),
                    }),
            )
        };
        let send = &mut self.send;
        self.subflows[i].finish_ack(now, &acked, coupling, &mut |d| send.queue_retransmission(d, 0));
        self.qlog_metrics(now, i);
    }

    /// Loss detection by time on subflow `i` (its loss timer expired).
    pub(super) fn detect_lost(&mut self, now: Time, i: usize) {
        let send = &mut self.send;
        self.subflows[i].detect_lost(now, &mut |d| send.queue_retransmission(d, 0));
    }

    /// Moves everything in flight on subflow `i` to the retransmission queue, marked as a
    /// reinjection; `count_lost`: each packet counts as lost on the subflow.
    pub(super) fn reinject_in_flight(&mut self, now: Time, i: usize, count_lost: bool) {
        let mask = 1u64 << (i % 64);
        let (send, counters) = (&mut self.send, &mut self.counters);
        let orphaned = self.subflows[i].drain_flight(now, count_lost, &mut |d| {
            send.queue_retransmission(d, mask);
            counters.reinjections += 1;
        });
        if !orphaned.is_empty() {
            self.pend_on_any(orphaned);
        }
    }

    /// Closes subflow `i` and reinjects its data; `tell_peer`: with a SUBFLOW_RESET carrying
    /// `reason`.
    pub(super) fn shut_subflow(&mut self, now: Time, i: usize, reason: u8, tell_peer: bool) {
        if !self.subflows[i].is_open() {
            return;
        }
        let id = self.subflows[i].id();
        // Closed first, so that connection-level frames in flight there go to another subflow.
        self.subflows[i].close(now, reason, tell_peer);
        self.reinject_in_flight(now, i, false);
        // What it was still to carry for the connection (addresses, the ticket) goes elsewhere.
        let pending = self.subflows[i].carried();
        if !pending.is_empty() {
            self.subflows[i].drop_carried(pending);
            self.pend_on_any(pending);
        }
        self.emit(now, Event::SubflowClosed { id, reason });
        self.recv.forget_slot(i);
        // The last subflow gone: the connection waits for a join (the client's new address
        // after a break-before-make move) until its idle timeout; without one, it ends now.
        if self.state == State::Established && self.subflows.open_count() == 0 && self.idle_timeout() == 0 {
            self.enter_closed(now, CloseReason::NoSubflow);
        }
    }

    /// The endpoint found that `old`, the CID a new subflow was given, is another
    /// connection's (CIDs of 4 bytes do collide, rarely). If no packet has revealed it yet the
    /// subflow takes `fresh` instead and this returns true; otherwise the subflow closes
    /// without a word (the peer's packets to it reach the other connection, which cannot open
    /// them) and the path manager may join again.
    pub(crate) fn rename_cid(&mut self, now: Time, old: Cid, fresh: Cid) -> bool {
        let Some(i) = self.subflows.by_cid(&old) else { return false };
        if self.subflows[i].rec().next_pn == 0 {
            self.subflows[i].rename_local_cid(fresh);
            return true;
        }
        self.shut_subflow(now, i, reason::UNSPECIFIED, false);
        false
    }

    /// The drain of closed subflow `i` is over: its record goes, with its route; its
    /// statistics stay in the connection's history.
    pub(super) fn reclaim_subflow(&mut self, i: usize) {
        let stats = self.subflows[i].stats();
        if let Some(sf) = self.subflows.reclaim(i, stats) {
            self.out.endpoint(EndpointEvent::RetireCid(sf.local_cid()));
            self.send.forget_slot(1 << (i % 64));
            self.recv.forget_slot(i);
            tracing::trace!(side = ?self.side, id = sf.id(), "subflow record reclaimed");
        }
    }
}
