//! The simulator's steps through a path's radio (`radio::PathRadio`): a datagram held while
//! the radio is promoted or paged, released when it is awake, every crossing logged; and the
//! radio's state and energy as the tests read them.

use crate::radio::{AirEntry, HeldUp, PathRadio};
use crate::{Delivery, PathConfig, Sim, Time};
use oracle::radio::{Profile, Radio, RrcState};
use std::net::SocketAddr;

impl PathConfig {
    /// This path with a cellular radio of `profile` at the client (see [`crate::radio`]).
    pub fn with_radio(mut self, profile: Profile) -> Self {
        self.radio = Some(profile);
        self
    }
}

impl Sim {
    /// The radio on path `path`, if it has one.
    pub fn radio(&self, path: usize) -> Option<&Radio> {
        self.paths[path].radio.as_ref().map(|r| &r.radio)
    }

    /// What crossed the client's radio on path `path` (kept while [`Sim::logging`]).
    pub fn air_log(&self, path: usize) -> &[AirEntry] {
        &self.paths[path].air
    }

    /// The cellular energy of the client's radio on `path` over `[start, end]`: the path's
    /// radio profile (Huang et al.'s LTE model for a path without one) over what crossed it.
    pub fn radio_energy(&self, path: usize, start: Time, end: Time) -> oracle::energy::Energy {
        let p = &self.paths[path];
        let profile = p.cfg.radio.unwrap_or_default();
        let mut meter = Radio::new(profile, start, 0);
        for e in p.air.iter().filter(|e| e.time >= start && e.time <= end) {
            meter.observe(e.time, e.up, e.size);
        }
        meter.energy(end)
    }

    fn log_air(&mut self, k: usize, time: Time, up: bool, size: usize, state: RrcState) {
        if self.logging {
            self.paths[k].air.push(AirEntry { time, up, size, state });
        }
    }

    /// The client sends a datagram on link `k`: `false` if its radio holds it while it wakes
    /// (it goes at the end of the wake), `true` if it may go now (recorded as crossing).
    pub(crate) fn radio_uplink(
        &mut self,
        k: usize,
        (src, dst): (SocketAddr, SocketAddr),
        carrier: mpcore::Carrier,
        bytes: &mut Option<Vec<u8>>,
    ) -> bool {
        let now = self.now;
        let size = bytes.as_ref().map_or(0, Vec::len);
        let state = match self.paths[k].radio.as_mut() {
            None => RrcState::Active,
            Some(r) => {
                let state = r.radio.state_at(now);
                if r.radio.uplink(now) > now {
                    let bytes = bytes.take().unwrap_or_default();
                    r.held_up.push(HeldUp { src, dst, carrier, bytes, state });
                    return false;
                }
                r.radio.carried(now, true, size);
                state
            }
        };
        self.log_air(k, now, true, size, state);
        true
    }

    /// A datagram for the client reaches the base station of link `k`: `Some` if it is
    /// delivered now, `None` if the radio holds it (paging, a promotion).
    pub(crate) fn radio_downlink(&mut self, k: usize, d: Delivery) -> Option<Delivery> {
        let now = self.now;
        let state = match self.paths[k].radio.as_mut() {
            None => RrcState::Active,
            Some(r) => {
                let state = r.radio.state_at(now);
                if r.radio.downlink(now) > now {
                    r.held_down.push((state, d));
                    return None;
                }
                r.radio.carried(now, false, d.bytes.len());
                state
            }
        };
        self.log_air(k, now, false, d.bytes.len(), state);
        Some(d)
    }

    /// Releases what the radios held, where they are awake again: held datagrams from the
    /// client enter their path, held ones for it are delivered.
    pub(crate) fn release_radios(&mut self) {
        let now = self.now;
        for k in 0..self.paths.len() {
            let Some(r) = self.paths[k].radio.as_mut() else { continue };
            if r.release_at().is_none_or(|t| t > now) || !r.radio.ready(now) {
                continue;
            }
            let up = std::mem::take(&mut r.held_up);
            let mut down = std::mem::take(&mut r.held_down);
            down.sort_by_key(|(_, d)| d.seq);
            for h in up {
                let size = h.bytes.len();
                if let Some(r) = self.paths[k].radio.as_mut() {
                    r.radio.carried(now, true, size);
                }
                self.log_air(k, now, true, size, h.state);
                self.enter_path(true, k, (h.src, h.dst), h.carrier, h.bytes);
            }
            for (state, d) in down {
                let size = d.bytes.len();
                if let Some(r) = self.paths[k].radio.as_mut() {
                    r.radio.carried(now, false, size);
                }
                self.log_air(k, now, false, size, state);
                self.deliver(d);
            }
        }
    }

    /// The earliest time a radio releases what it holds.
    pub(crate) fn radio_release_at(&self) -> Option<Time> {
        self.paths.iter().filter_map(|p| p.radio.as_ref().and_then(PathRadio::release_at)).min()
    }
}
