//! The phone's radio, as the protocol core sees it (issue 32): when to wake the cellular radio
//! early ([`Prewarm`], a setting of [`crate::Config`]), what the app knows of a link's quality
//! ([`LinkHint`], handed to [`crate::Endpoint::path_hint`]), and the WARM datagram that wakes
//! a radio. The endpoint's side is `endpoint::prewarm`.

use crate::Time;

/// When to wake the cellular radio early; see the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prewarm {
    /// How often a cellular path is warmed while a suspicion lasts (0: never). Below the
    /// radio's tail, so that it stays connected: LTE's is 11.6 s, NR's 10.4 s.
    pub every: Time,
    /// How long after the last suspicion warming goes on.
    pub hold: Time,
}

impl Prewarm {
    /// No pre-warming.
    pub const OFF: Prewarm = Prewarm { every: 0, hold: 0 };
    /// One warm-up when a suspicion starts, none while it lasts (one promotion per episode).
    pub const ONCE: Prewarm = Prewarm { every: 60_000_000, hold: 0 };
    /// The default: warm at the first suspicion and every 10 s while it lasts, up to 20 s
    /// after the last (`examples/prewarm` in mpsim weighs the choices).
    pub const DEFAULT: Prewarm = Prewarm { every: 10_000_000, hold: 20_000_000 };
}

impl Default for Prewarm {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What the phone knows of a link's quality, from the OS (Android's `NetworkCallback` and
/// `WifiInfo`, iOS's `NWPathMonitor`), handed to [`crate::Endpoint::path_hint`]. Early evidence for the
/// oracle: a suspicious hint wakes the cellular radio (see the module documentation); it does
/// not by itself fail a path over.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkHint {
    /// The OS considers the network degraded (Android's data-stall report, the app's own
    /// judgement).
    pub degraded: bool,
    /// Signal level, 0 (none) to 4 (full) (Android's `WifiManager.calculateSignalLevel` over
    /// `getMaxSignalLevel`, scaled; signal bars).
    pub signal_level: Option<u8>,
    /// The link's rate, in bit/s (Android's `WifiInfo.getLinkSpeed`).
    pub link_rate_bps: Option<u64>,
}

impl LinkHint {
    /// A link this slow is suspected (a WiFi link at its lowest rates, far from its access
    /// point).
    pub const SLOW_LINK_BPS: u64 = 6_000_000;

    /// Whether the hint makes the path suspected: degraded, a signal of 1 bar or none, or a
    /// link rate under [`LinkHint::SLOW_LINK_BPS`].
    pub fn suspicious(&self) -> bool {
        self.degraded
            || self.signal_level.is_some_and(|l| l <= 1)
            || self.link_rate_bps.is_some_and(|r| r < Self::SLOW_LINK_BPS)
    }
}

/// The WARM datagram (PROTOCOL.md §3.3).
pub const WARM: [u8; 1] = [0x00];
