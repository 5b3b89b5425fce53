//! What the connection tells others: the application's events, the endpoint's (routes,
//! tokens, counters, forgetting us) and the event log when `Config::logging.qlog` is on.

use super::events::{EndpointEvent, Event, Side};
use super::qlog::{Metrics, Qlog};
use super::subflow::table::SubflowTable;
use super::subflow::Subflow;
use crate::drops::DropReason;
use crate::Time;
use std::collections::VecDeque;

#[derive(Debug)]
pub(super) struct Outbox {
    pub events: VecDeque<Event>,
    /// What the endpoint must do for us (routes, token, oracle, counters, forgetting us).
    pub endpoint_events: VecDeque<EndpointEvent>,
    /// The event log, when `Config::logging.qlog` is on (`qlog`).
    pub qlog: Option<Box<Qlog>>,
}

impl Outbox {
    pub fn new(qlog: Option<Box<Qlog>>) -> Self {
        Self { events: VecDeque::new(), endpoint_events: VecDeque::new(), qlog }
    }

    /// Queues an event for the application and logs it (`tracing`, target `mpcore`).
    pub fn emit(&mut self, now: Time, side: Side, e: Event) {
        if let Some(q) = self.qlog.as_deref_mut() {
            q.event(now, &e);
        }
        // One `Readable` stands for any number of packets that arrived since the application
        // last looked: the queue does not grow with the packet rate.
        if e == Event::Readable && self.events.back() == Some(&Event::Readable) {
            return;
        }
        if e != Event::Readable {
            tracing::debug!(side = ?side, event = ?e, "connection event");
        }
        self.events.push_back(e);
    }

    /// Something for the endpoint to do.
    pub fn endpoint(&mut self, e: EndpointEvent) {
        self.endpoint_events.push_back(e);
    }

    /// A frame was rejected (the rest of its packet is processed): the endpoint counts it.
    pub fn reject(&mut self, r: DropReason) {
        self.endpoint(EndpointEvent::Rejected(r));
    }

    /// The heap its queues hold.
    pub fn heap_bytes(&self) -> usize {
        use std::mem::size_of;
        self.events.capacity() * size_of::<Event>() + self.endpoint_events.capacity() * size_of::<EndpointEvent>()
    }

    /// The subflows' packets declared lost since the last look, into the log.
    pub fn log_losses(&mut self, subflows: &mut SubflowTable) {
        let Some(q) = self.qlog.as_deref_mut() else { return };
        for sf in subflows.iter_mut() {
            let id = sf.id();
            sf.take_losses(|now, pn, trigger| q.packet_lost(now, id, pn, trigger));
        }
    }

    /// A subflow's recovery metrics, into the log if one changed.
    pub fn log_metrics(&mut self, now: Time, sf: &Subflow) {
        let Some(q) = self.qlog.as_deref_mut() else { return };
        let r = sf.rec();
        let m = Metrics {
            srtt: r.rtt.srtt,
            min_rtt: r.rtt.min,
            latest_rtt: r.rtt.latest,
            rttvar: r.rtt.rttvar,
            cwnd: r.cc.cwnd(),
            in_flight: r.in_flight,
        };
        q.metrics(now, sf.id(), m);
    }
}
