//! # scheduler: which subflow carries the next packet
//!
//! A scheduler looks at a slice of [`SubflowInfo`] snapshots (small `Copy` values the connection
//! fills from its subflows) and a [`Segment`] description, and answers with a [`Pick`]. It runs
//! once per packet, so every scheduler here is a plain struct whose `pick` allocates nothing,
//! and [`AnyScheduler`] selects one by name at run time with a `match` (no dynamic dispatch).
//!
//! | name | rule | source |
//! |---|---|---|
//! | `lowest-rtt` | [`LowestRtt`]: lowest smoothed RTT among available subflows, backups only when no regular one is available | Linux MPTCP v0.9x `default` scheduler |
//! | `last-received` | [`LastReceived`]: the subflow of the most recent *original* reception | MultiMob server scheduler |
//! | `priority` | [`Priority`]: interface preference order, next one only while the preferred one retransmits or is potentially failed | MultiMob client scheduler |
//! | `round-robin` | [`RoundRobin`]: cycle over available subflows | Linux MPTCP `roundrobin` |
//! | `redundant` | [`Redundant`]: every available subflow at once | Linux MPTCP `redundant` |
//! | `ecf` | [`Ecf`]: Earliest Completion First for heterogeneous paths | Lim et al., CoNEXT 2017 |
//!
//! At most [`MAX_SUBFLOWS`] (64) subflows are considered; entries beyond are ignored.

#![forbid(unsafe_code)]

mod ecf;
mod last_received;
mod lowest_rtt;
mod priority;
mod redundant;
mod round_robin;

pub use ecf::Ecf;
pub use last_received::LastReceived;
pub use lowest_rtt::LowestRtt;
pub use priority::Priority;
pub use redundant::Redundant;
pub use round_robin::RoundRobin;

use std::fmt;

/// Most subflows a scheduler looks at (the width of [`Mask`]).
pub const MAX_SUBFLOWS: usize = 64;

/// The kind of network interface a subflow uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Iface {
    Wifi,
    Cellular,
    Wired,
    #[default]
    Other,
}

/// Boolean state of a subflow, one bit each, so that a scan tests several with one load.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flags(pub u8);

impl Flags {
    /// The join completed (fourth ACK, or the initial subflow's handshake).
    pub const ESTABLISHED: Flags = Flags(1 << 0);
    /// Potentially failed: an RTO expired and no new acknowledgement came since.
    pub const POTENTIALLY_FAILED: Flags = Flags(1 << 1);
    /// The peer or we marked it backup (MP_JOIN/MP_PRIO backup bit).
    pub const BACKUP: Flags = Flags(1 << 2);
    /// In loss recovery (Linux: "temporarily unavailable").
    pub const IN_RECOVERY: Flags = Flags(1 << 3);
    /// This segment was already sent on this subflow (a reinjection).
    pub const ALREADY_SENT: Flags = Flags(1 << 4);
    /// MultiMob's high-RTO flag (the oracle saw an RTO above its threshold).
    pub const HIGH_RTO: Flags = Flags(1 << 5);
    /// MultiMob's was-bad flag (the oracle declared the netpath bad).
    pub const WAS_BAD: Flags = Flags(1 << 6);

    /// True if every bit of `f` is set.
    #[inline(always)]
    pub const fn contains(self, f: Flags) -> bool {
        self.0 & f.0 == f.0
    }

    /// Sets or clears the bits of `f`.
    #[inline(always)]
    pub fn set(&mut self, f: Flags, on: bool) {
        if on {
            self.0 |= f.0;
        } else {
            self.0 &= !f.0;
        }
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

/// What a scheduler knows of one subflow when it picks. Times are in microseconds on the
/// connection's clock; the scheduler never reads a clock itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubflowInfo {
    /// The connection's identifier of the subflow (not interpreted here).
    pub id: u32,
    /// Established, potentially failed, backup, in recovery, already sent, high RTO, was bad.
    pub flags: Flags,
    /// The interface kind.
    pub iface: Iface,
    /// Smoothed RTT.
    pub srtt_us: u32,
    /// RTT variation.
    pub rttvar_us: u32,
    /// Congestion window, bytes.
    pub cwnd: u32,
    /// Bytes the congestion window lets us send now (cwnd minus bytes in flight).
    pub cwnd_room: u32,
    /// Time of the last *original* reception on this subflow (new data, a DATA_ACK that advanced
    /// the send window's left edge, or the completed join); 0 if none yet.
    pub last_original_rx_us: u64,
    /// Packets sent on this subflow that are being retransmitted or await retransmission.
    pub retrans_outstanding: u32,
}

pub(crate) const AVAIL_MASK: u8 = Flags::ESTABLISHED.0 | Flags::POTENTIALLY_FAILED.0;
pub(crate) const SEND_MASK: u8 = AVAIL_MASK | Flags::IN_RECOVERY.0;

impl SubflowInfo {
    #[inline(always)]
    pub fn established(&self) -> bool {
        self.flags.contains(Flags::ESTABLISHED)
    }
    #[inline(always)]
    pub fn potentially_failed(&self) -> bool {
        self.flags.contains(Flags::POTENTIALLY_FAILED)
    }
    #[inline(always)]
    pub fn backup(&self) -> bool {
        self.flags.contains(Flags::BACKUP)
    }
    #[inline(always)]
    pub fn in_recovery(&self) -> bool {
        self.flags.contains(Flags::IN_RECOVERY)
    }
    #[inline(always)]
    pub fn already_sent(&self) -> bool {
        self.flags.contains(Flags::ALREADY_SENT)
    }
    #[inline(always)]
    pub fn high_rto(&self) -> bool {
        self.flags.contains(Flags::HIGH_RTO)
    }
    #[inline(always)]
    pub fn was_bad(&self) -> bool {
        self.flags.contains(Flags::WAS_BAD)
    }

    /// Linux's `mptcp_is_def_unavailable` negated: established and not potentially failed.
    #[inline(always)]
    pub fn available(&self) -> bool {
        self.flags.0 & AVAIL_MASK == Flags::ESTABLISHED.0
    }

    /// Available and able to send `len` bytes now (not in recovery, window room).
    #[inline(always)]
    pub fn can_send(&self, len: u32) -> bool {
        (self.flags.0 & SEND_MASK == Flags::ESTABLISHED.0) & (self.cwnd_room >= len.max(1))
    }

    /// Available, of the wanted class (backup or regular), and has not carried this segment:
    /// a candidate for the schedulers that try regular subflows first, then backups.
    #[inline(always)]
    pub(crate) fn fresh_in_class(&self, want_backup: bool) -> bool {
        self.backup() == want_backup && self.available() && !self.already_sent()
    }

    /// MultiMob's flags that keep a subflow from replacing an unflagged best one.
    #[inline(always)]
    pub fn flagged(&self) -> bool {
        self.flags.0 & (Flags::HIGH_RTO.0 | Flags::WAS_BAD.0) != 0
    }
}

/// The segment to schedule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    /// Bytes the packet will carry.
    pub len: u32,
    /// Set when the segment carries our DATA_FIN and the peer's DATA_FIN arrived on the subflow
    /// at this index: "A DATA_FIN is answered on the subflow that carried the peer's DATA_FIN."
    pub answer_data_fin_on: Option<usize>,
    /// Bytes waiting in the connection's send queue (ECF's `k`).
    pub queued_bytes: u64,
}

/// A set of subflow indices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Mask(pub u64);

impl Mask {
    #[inline]
    pub fn insert(&mut self, i: usize) {
        if i < MAX_SUBFLOWS {
            self.0 |= 1 << i;
        }
    }

    #[inline]
    pub fn contains(&self, i: usize) -> bool {
        i < MAX_SUBFLOWS && self.0 & (1 << i) != 0
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.0.count_ones() as usize
    }

    /// Indices in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = usize> {
        let bits = self.0;
        (0..MAX_SUBFLOWS).filter(move |i| bits & (1 << i) != 0)
    }
}

/// A scheduler's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pick {
    /// Send on the subflow at this index of the slice.
    Send(usize),
    /// Send a copy on each of these subflows (the redundant scheduler).
    SendAll(Mask),
    /// A suitable subflow exists but cannot send now (window full, recovery): send nothing and
    /// ask again when something changes.
    Wait,
    /// No subflow can carry this segment (none established, all potentially failed, or all
    /// already carried it).
    Unavailable,
}

/// The subflows a scheduler considers.
#[inline]
pub(crate) fn considered(subflows: &[SubflowInfo]) -> &[SubflowInfo] {
    &subflows[..subflows.len().min(MAX_SUBFLOWS)]
}

/// Every scheduler, chosen at run time by name, dispatched by `match`.
#[derive(Clone, Debug)]
pub enum AnyScheduler {
    LowestRtt(LowestRtt),
    LastReceived(LastReceived),
    Priority(Priority),
    RoundRobin(RoundRobin),
    Redundant(Redundant),
    Ecf(Ecf),
}

/// The names [`AnyScheduler::from_name`] accepts.
pub const NAMES: [&str; 6] = ["lowest-rtt", "last-received", "priority", "round-robin", "redundant", "ecf"];

/// An unknown scheduler name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownScheduler(pub String);

impl fmt::Display for UnknownScheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown scheduler '{}'; choose one of: {}", self.0, NAMES.join(", "))
    }
}

impl std::error::Error for UnknownScheduler {}

impl AnyScheduler {
    /// The scheduler called `name` (one of [`NAMES`]), with its default settings.
    pub fn from_name(name: &str) -> Result<Self, UnknownScheduler> {
        Ok(match name {
            "lowest-rtt" => AnyScheduler::LowestRtt(LowestRtt),
            "last-received" => AnyScheduler::LastReceived(LastReceived),
            "priority" => AnyScheduler::Priority(Priority::default()),
            "round-robin" => AnyScheduler::RoundRobin(RoundRobin::default()),
            "redundant" => AnyScheduler::Redundant(Redundant),
            "ecf" => AnyScheduler::Ecf(Ecf::default()),
            other => return Err(UnknownScheduler(other.to_string())),
        })
    }

    /// The scheduler's name.
    pub fn name(&self) -> &'static str {
        match self {
            AnyScheduler::LowestRtt(_) => "lowest-rtt",
            AnyScheduler::LastReceived(_) => "last-received",
            AnyScheduler::Priority(_) => "priority",
            AnyScheduler::RoundRobin(_) => "round-robin",
            AnyScheduler::Redundant(_) => "redundant",
            AnyScheduler::Ecf(_) => "ecf",
        }
    }

    /// Picks the subflow(s) for `seg`.
    #[inline]
    pub fn pick(&mut self, subflows: &[SubflowInfo], seg: &Segment) -> Pick {
        match self {
            AnyScheduler::LowestRtt(s) => s.pick(subflows, seg),
            AnyScheduler::LastReceived(s) => s.pick(subflows, seg),
            AnyScheduler::Priority(s) => s.pick(subflows, seg),
            AnyScheduler::RoundRobin(s) => s.pick(subflows, seg),
            AnyScheduler::Redundant(s) => s.pick(subflows, seg),
            AnyScheduler::Ecf(s) => s.pick(subflows, seg),
        }
    }
}

/// Test helpers shared by the schedulers' unit tests.
#[cfg(test)]
pub(crate) mod testutil {
    use super::*;

    /// An established, healthy regular subflow with room, `srtt` ms and last reception `rx` µs.
    pub fn sf(srtt_ms: u32, rx: u64) -> SubflowInfo {
        SubflowInfo {
            flags: Flags::ESTABLISHED,
            srtt_us: srtt_ms * 1000,
            rttvar_us: srtt_ms * 250,
            cwnd: 14_600,
            cwnd_room: 14_600,
            last_original_rx_us: rx,
            iface: Iface::Wifi,
            ..Default::default()
        }
    }

    pub fn seg() -> Segment {
        Segment { len: 1200, answer_data_fin_on: None, queued_bytes: 1200 }
    }

    /// Random snapshots for the fast-path agreement properties. Half of the subflows are healthy
    /// (established only, or established backups), the steady state the fast paths test first;
    /// the rest have any flags.
    pub fn arb_subflows() -> impl proptest::strategy::Strategy<Value = Vec<SubflowInfo>> {
        use proptest::prelude::*;
        let flags = prop_oneof![
            3 => Just(Flags::ESTABLISHED.0),
            1 => Just((Flags::ESTABLISHED | Flags::BACKUP).0),
            4 => any::<u8>().prop_map(|f| f & 0x7f),
        ];
        proptest::collection::vec((flags, 0..4u32, 0..3u32, 0..4u64), 1..9).prop_map(|v| {
            v.into_iter()
                .map(|(f, rtt, room, rx)| SubflowInfo {
                    flags: Flags(f),
                    srtt_us: rtt * 1000,
                    cwnd_room: room * 1000,
                    last_original_rx_us: rx,
                    ..Default::default()
                })
                .collect()
        })
    }
}
