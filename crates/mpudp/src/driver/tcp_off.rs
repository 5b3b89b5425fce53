//! The TCP carriers left out (the crate built without its `tcp` feature): the same calls as
//! `tcp.rs`, doing nothing. The driver also sets `Multipath::tcp_after` to `None`, so the
//! endpoint never sends over TCP; a record it would send anyway is counted as dropped.

use super::binding::Binding;
use super::state::{Shared, TcpEvents};
use crate::options::TcpSocketHook;
use std::net::SocketAddr;
use std::task::Context;
use std::time::Instant;

/// No carriers.
#[derive(Debug, Default)]
pub(crate) struct Tcp {
    pub(crate) events: Vec<TcpEvents>,
}

impl Tcp {
    pub(crate) fn new(_server: bool, _hook: Option<TcpSocketHook>, _fleet_ports: Vec<u16>) -> Self {
        Self::default()
    }

    pub(crate) fn install(&mut self, p: usize, _local: SocketAddr, _binding: &Binding, _label: &str) {
        if self.events.len() <= p {
            self.events.resize(p + 1, TcpEvents::default());
        }
    }

    pub(crate) fn close_path(&mut self, _p: usize) {}

    pub(crate) fn full(&self, _p: usize) -> bool {
        false
    }

    pub(crate) fn has_carrier(&self, _p: usize, _remote: SocketAddr) -> bool {
        false
    }

    pub(crate) fn queue(&mut self, p: usize, _remote: SocketAddr, _d: &[u8]) {
        if let Some(e) = self.events.get_mut(p) {
            e.dropped += 1;
        }
    }

    pub(crate) fn poll(&mut self, _cx: &mut Context<'_>) -> bool {
        false
    }

    pub(crate) fn reap(&mut self) -> bool {
        false
    }

    pub(crate) fn next_idle(&self) -> Option<Instant> {
        None
    }

    pub(crate) fn deliver(
        &mut self,
        _shared: &Shared,
        _now: mpcore::Time,
        _steering: Option<&mpcore::Steering>,
        _outbox: &mut Vec<super::handoff::Handoff>,
    ) -> bool {
        false
    }
}
