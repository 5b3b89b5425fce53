//! The phone's cellular radio on a simulated path ([`PathConfig::radio`]): the delays of its
//! RRC states and the energy it uses, from one state machine ([`oracle::radio::Radio`]).
//!
//! A datagram the client sends while its radio is idle waits at the phone for the promotion
//! (from RRC_INACTIVE, the resume); one that reaches the base station for an idle phone waits
//! for the phone's paging occasion and then the promotion. Every datagram that crosses the
//! radio (on any path, with a radio or without one) leaves a line in the path's air log: when
//! it crossed, which way, its size, and the state the radio was in when the datagram reached
//! it. The energy ([`Sim::radio_energy`]) is the same state machine run over that log, so the
//! energy and the delays cannot disagree (`tests/radio.rs` checks it packet by packet).
//!
//! `PathRadio` is a path's radio and what it holds; the simulator's steps that go through it
//! are in `sim_radio`.
//!
//! [`PathConfig::radio`]: crate::PathConfig::radio
//! [`Sim::radio_energy`]: crate::Sim::radio_energy

use crate::{Delivery, Time};
use oracle::radio::{Profile, Radio, RrcState};
use std::net::SocketAddr;

/// One datagram that crossed the client's radio on a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AirEntry {
    /// When it crossed (left the phone, or reached it).
    pub time: Time,
    /// Sent by the client.
    pub up: bool,
    pub size: usize,
    /// The radio's state when the datagram reached it (sent by the phone, or arrived at the
    /// base station): not connected means it waited for a promotion, a resume or paging.
    pub state: RrcState,
}

/// A datagram the client handed its radio while it woke.
#[derive(Debug)]
pub(crate) struct HeldUp {
    pub(crate) src: SocketAddr,
    pub(crate) dst: SocketAddr,
    pub(crate) carrier: mpcore::Carrier,
    pub(crate) bytes: Vec<u8>,
    pub(crate) state: RrcState,
}

/// A path's radio and what waits for it.
#[derive(Debug)]
pub(crate) struct PathRadio {
    pub(crate) radio: Radio,
    pub(crate) held_up: Vec<HeldUp>,
    pub(crate) held_down: Vec<(RrcState, Delivery)>,
}

impl PathRadio {
    pub(crate) fn new(profile: Profile, paging_phase: Time) -> Self {
        Self { radio: Radio::new(profile, 0, paging_phase), held_up: Vec::new(), held_down: Vec::new() }
    }

    /// When the datagrams held here may go, if any are held.
    pub(crate) fn release_at(&self) -> Option<Time> {
        if self.held_up.is_empty() && self.held_down.is_empty() {
            return None;
        }
        self.radio.wake_until()
    }
}
