//! MultiMob's oracle, sans-IO: counters and `now` in, decisions out.
//!
//! - [`vema`]: the volume-weighted EMA of the loss and retransmission rates.
//! - [`netpath`]: the table of netpaths (source IP, destination IP, interface) aggregating
//!   every subflow of every connection of an endpoint, evaluated every period Ts against the
//!   thresholds, with rising-edge triggers.
//! - [`idle`]: the client's receive idle timer (MP_IDLE and the server's RTO).
//! - [`radio`]: a phone's cellular radio (RRC idle, promotion, connected, tail; NR's
//!   RRC_INACTIVE), one state machine for the delay it adds and the energy it uses.
//! - [`energy`]: the cellular energy estimate (Huang et al.'s LTE model), from a packet log
//!   or kept up to date packet by packet ([`energy::Meter`]), read off [`radio`]'s states.
//!
//! `mpcore`'s `multimob` path manager drives these from the connection state.

#![warn(missing_docs)]

pub mod energy;
pub mod idle;
pub mod netpath;
pub mod radio;
pub mod vema;

pub use idle::{IdleTimer, PacedStream};
pub use netpath::{Action, Config, Netpath, Oracle, Sample, Stats, Trigger, Verdict};
pub use vema::Vema;

/// Microseconds, as everywhere in the workspace.
pub type Time = u64;
