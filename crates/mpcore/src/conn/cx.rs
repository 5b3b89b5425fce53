//! The context the path layer ([`super::paths::Paths`]) works through: the parts of the
//! connection beside it that its decisions touch, borrowed for one call. Reinjection moves
//! data between a subflow and the send side, a closed subflow is forgotten by the receive
//! side, events go to the outbox, and the keys and the peer's parameters are read from the
//! session. The scheduler, the tickets, 0-RTT and the test hooks stay out of its reach.

use super::events::{CloseReason, ConnCounters, EndpointEvent, Event, Side};
use super::liveness::Liveness;
use super::outbox::Outbox;
use super::recv::RecvSide;
use super::send::SendSide;
use super::session::Session;
use super::state::State;
use super::subflow::table::SubflowTable;
use crate::config::Config;
use crate::drops::DropReason;
use crate::rng::Rng;
use crate::Time;

pub(crate) struct Cx<'a> {
    pub(super) side: Side,
    pub(super) state: &'a mut State,
    pub(super) config: &'a Config,
    pub(super) session: &'a Session,
    pub(super) send: &'a mut SendSide,
    pub(super) recv: &'a mut RecvSide,
    pub(super) out: &'a mut Outbox,
    pub(super) rng: &'a mut Rng,
    pub(super) counters: &'a mut ConnCounters,
    pub(super) live: &'a mut Liveness,
}

impl Cx<'_> {
    /// Queues an event for the application and logs it (see [`Outbox::emit`]).
    pub(super) fn emit(&mut self, now: Time, e: Event) {
        self.out.emit(now, self.side, e);
    }

    /// A frame was rejected (the rest of its packet is processed): the endpoint counts it.
    pub(super) fn reject(&mut self, r: DropReason) {
        self.out.reject(r);
    }

    /// Nothing more to do: the endpoint may forget the connection.
    pub(super) fn set_drained(&mut self) {
        if self.live.drain() {
            self.out.endpoint(EndpointEvent::Drained);
        }
    }

    pub(super) fn is_closed(&self) -> bool {
        matches!(self.state, State::Closed(_))
    }

    /// The connection closes for `reason`: it drains for three of its subflows' largest RTO.
    pub(super) fn enter_closed(&mut self, subflows: &SubflowTable, now: Time, reason: CloseReason) {
        if self.is_closed() {
            return;
        }
        *self.state = State::Closed(reason);
        let rto = subflows.iter().map(|s| s.rec().rtt.rto()).max().unwrap_or(self.config.transport.initial_rto);
        self.live.drain_until = Some(now + 3 * rto);
        self.emit(now, Event::Closed { reason });
    }
}
