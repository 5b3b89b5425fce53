//! # scheduler: which subflow carries the next packet
//!
//! A scheduler looks at a slice of [`SubflowInfo`] snapshots (small `Copy` values the connection
//! fills from its subflows) and a [`Segment`] description, and answers with a [`Pick`]. It runs
//! once per packet, so every scheduler here is a plain struct whose `pick` allocates nothing,
//! and [`AnyScheduler`] selects one by name at run time with a `match` (no dynamic dispatch).
//!
//! An application brings its own by implementing [`Scheduler`] (mpcore's
//! `Config::multipath.custom_scheduler`, mpudp's `Options::custom_scheduler`); it runs behind the one
//! `AnyScheduler::Custom` arm, so only custom schedulers pay for a dynamic call:
//!
//! ```
//! use scheduler::{AnyScheduler, Pick, Scheduler, Segment, SubflowInfo};
//!
//! /// Everything on the last subflow that can send (say, a metered WiFi left for the rest).
//! #[derive(Debug)]
//! struct LastOne;
//!
//! impl Scheduler for LastOne {
//!     fn pick(&mut self, subflows: &[SubflowInfo], seg: &Segment) -> Pick {
//!         match subflows.iter().rposition(|s| s.can_send(seg.len)) {
//!             Some(i) => Pick::Send(i),
//!             None if subflows.iter().any(|s| s.available()) => Pick::Wait,
//!             None => Pick::Unavailable,
//!         }
//!     }
//!     fn name(&self) -> &str {
//!         "last-one"
//!     }
//! }
//!
//! let mut s = AnyScheduler::Custom(Box::new(LastOne));
//! assert_eq!(s.name(), "last-one");
//! ```
//!
//! | name | rule | source |
//! |---|---|---|
//! | `lowest-rtt` | [`LowestRtt`]: lowest smoothed RTT among available subflows, backups only when no regular one is available | Linux MPTCP v0.9x `default` scheduler |
//! | `last-received` | [`LastReceived`]: the subflow of the most recent *original* reception | MultiMob server scheduler |
//! | `priority` | [`Priority`]: interface preference order, next one only while the preferred one retransmits or is potentially failed | MultiMob client scheduler |
//! | `round-robin` | [`RoundRobin`]: cycle over available subflows | Linux MPTCP `roundrobin` |
//! | `redundant` | [`Redundant`]: every available subflow at once | Linux MPTCP `redundant` |
//! | `ecf` | [`Ecf`]: Earliest Completion First for heterogeneous paths | Lim et al., CoNEXT 2017 |
//! | `blest` | [`Blest`]: lowest-RTT, but no slower subflow where it would block the fastest one's window | Ferlin et al., IFIP Networking 2016 |
//!
//! At most [`MAX_SUBFLOWS`] (64) subflows are considered; entries beyond are ignored.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod blest;
mod ecf;
mod last_received;
mod lowest_rtt;
mod priority;
mod redundant;
mod round_robin;

pub use blest::Blest;
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
    /// A wireless LAN.
    Wifi,
    /// A mobile network's radio (metered, and costly in energy: see the oracle).
    Cellular,
    /// Ethernet and the like.
    Wired,
    /// Unknown (a loopback or virtual device, or a name no rule recognises).
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
    /// MultiMob's was-bad flag (the oracle declared the netpath bad; or, during a failover, it
    /// cleared it and the subflow lost a packet since: held until the fail-back).
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
    /// Bytes the congestion window lets us send now (cwnd minus bytes in flight; at least one
    /// packet's just after a loss cut the window, RFC 9002 §7.3.2, so BLEST's estimate of the
    /// flight, `cwnd - cwnd_room`, is then up to a packet low).
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
    /// The join completed.
    #[inline(always)]
    pub fn established(&self) -> bool {
        self.flags.contains(Flags::ESTABLISHED)
    }
    /// Its retransmission timer expired with no new acknowledgement since.
    #[inline(always)]
    pub fn potentially_failed(&self) -> bool {
        self.flags.contains(Flags::POTENTIALLY_FAILED)
    }
    /// A backup subflow (used only when no regular one can send).
    #[inline(always)]
    pub fn backup(&self) -> bool {
        self.flags.contains(Flags::BACKUP)
    }
    /// In loss recovery.
    #[inline(always)]
    pub fn in_recovery(&self) -> bool {
        self.flags.contains(Flags::IN_RECOVERY)
    }
    /// It already carried this segment (the segment is a reinjection).
    #[inline(always)]
    pub fn already_sent(&self) -> bool {
        self.flags.contains(Flags::ALREADY_SENT)
    }
    /// The oracle saw an RTO above its threshold on its path.
    #[inline(always)]
    pub fn high_rto(&self) -> bool {
        self.flags.contains(Flags::HIGH_RTO)
    }
    /// The oracle declared its path bad.
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
    /// The connection-level window the peer grants, counted from the oldest unacknowledged
    /// byte (BLEST's send window); 0 if unknown.
    pub send_window: u64,
    /// The connection's clock, microseconds (BLEST adapts λ once per round trip).
    pub now_us: u64,
}

/// A set of subflow indices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Mask(pub u64);

impl Mask {
    /// Adds index `i` (ignored beyond [`MAX_SUBFLOWS`]).
    #[inline]
    pub fn insert(&mut self, i: usize) {
        if i < MAX_SUBFLOWS {
            self.0 |= 1 << i;
        }
    }

    /// Whether index `i` is in the set.
    #[inline]
    pub fn contains(&self, i: usize) -> bool {
        i < MAX_SUBFLOWS && self.0 & (1 << i) != 0
    }

    /// No index.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    /// How many indices.
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

/// A packet scheduler. The connection calls [`pick`](Scheduler::pick) for each packet it
/// sends, with a snapshot of its subflows (index = the subflow's place in the slice; at most
/// [`MAX_SUBFLOWS`]) and the segment. It never reads a clock (times are in the snapshots) and
/// should not allocate: it runs on the per-packet path.
pub trait Scheduler: fmt::Debug + Send {
    /// Which subflow(s) carry `seg`; indices refer to `subflows`. An index out of range, or a
    /// subflow that is not established, is treated as [`Pick::Unavailable`].
    fn pick(&mut self, subflows: &[SubflowInfo], seg: &Segment) -> Pick;

    /// Its name, for statistics and logs.
    fn name(&self) -> &str;
}

macro_rules! builtin {
    ($t:ty, $name:literal) => {
        impl Scheduler for $t {
            #[inline]
            fn pick(&mut self, subflows: &[SubflowInfo], seg: &Segment) -> Pick {
                <$t>::pick(self, subflows, seg)
            }
            fn name(&self) -> &str {
                $name
            }
        }
    };
}

builtin!(LowestRtt, "lowest-rtt");
builtin!(LastReceived, "last-received");
builtin!(Priority, "priority");
builtin!(RoundRobin, "round-robin");
builtin!(Redundant, "redundant");
builtin!(Ecf, "ecf");
builtin!(Blest, "blest");

/// The subflows a scheduler considers.
#[inline]
pub(crate) fn considered(subflows: &[SubflowInfo]) -> &[SubflowInfo] {
    &subflows[..subflows.len().min(MAX_SUBFLOWS)]
}

/// Every scheduler, chosen at run time by name and dispatched by `match`; an application's
/// own behind [`AnyScheduler::Custom`].
#[derive(Debug)]
pub enum AnyScheduler {
    /// `lowest-rtt`.
    LowestRtt(LowestRtt),
    /// `last-received`.
    LastReceived(LastReceived),
    /// `priority`.
    Priority(Priority),
    /// `round-robin`.
    RoundRobin(RoundRobin),
    /// `redundant`.
    Redundant(Redundant),
    /// `ecf`.
    Ecf(Ecf),
    /// `blest`.
    Blest(Blest),
    /// A scheduler written outside this crate (one dynamic call per packet).
    Custom(Box<dyn Scheduler>),
}

/// The names [`AnyScheduler::from_name`] accepts.
pub const NAMES: [&str; 7] = ["lowest-rtt", "last-received", "priority", "round-robin", "redundant", "ecf", "blest"];

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
            "blest" => AnyScheduler::Blest(Blest::default()),
            other => return Err(UnknownScheduler(other.to_string())),
        })
    }

    /// The scheduler's name.
    pub fn name(&self) -> &str {
        match self {
            AnyScheduler::LowestRtt(_) => "lowest-rtt",
            AnyScheduler::LastReceived(_) => "last-received",
            AnyScheduler::Priority(_) => "priority",
            AnyScheduler::RoundRobin(_) => "round-robin",
            AnyScheduler::Redundant(_) => "redundant",
            AnyScheduler::Ecf(_) => "ecf",
            AnyScheduler::Blest(_) => "blest",
            AnyScheduler::Custom(s) => s.name(),
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
            AnyScheduler::Blest(s) => s.pick(subflows, seg),
            AnyScheduler::Custom(s) => sanitize(s.pick(subflows, seg), considered(subflows)),
        }
    }
}

/// A custom scheduler's answer, checked: an index beyond the slice or a subflow not established
/// becomes [`Pick::Unavailable`] (a `SendAll` keeps its valid members), so that a mistake in
/// application code cannot make the connection send on nothing.
fn sanitize(p: Pick, subflows: &[SubflowInfo]) -> Pick {
    let ok = |i: usize| subflows.get(i).is_some_and(|s| s.established());
    match p {
        Pick::Send(i) if !ok(i) => Pick::Unavailable,
        Pick::SendAll(m) => {
            let mut kept = Mask::default();
            for i in m.iter().filter(|&i| ok(i)) {
                kept.insert(i);
            }
            if kept.is_empty() {
                Pick::Unavailable
            } else {
                Pick::SendAll(kept)
            }
        }
        other => other,
    }
}

#[cfg(test)]
mod custom_tests {
    use super::testutil::{seg, sf};
    use super::*;

    /// Answers whatever it was built with.
    #[derive(Debug)]
    struct Fixed(Pick);

    impl Scheduler for Fixed {
        fn pick(&mut self, _: &[SubflowInfo], _: &Segment) -> Pick {
            self.0
        }
        fn name(&self) -> &str {
            "fixed"
        }
    }

    #[test]
    fn a_custom_schedulers_mistakes_become_unavailable() {
        let mut joining = sf(10, 0);
        joining.flags = Flags(0);
        let subflows = [sf(10, 0), joining];
        let run = |p: Pick| AnyScheduler::Custom(Box::new(Fixed(p))).pick(&subflows, &seg());
        assert_eq!(run(Pick::Send(0)), Pick::Send(0));
        assert_eq!(run(Pick::Send(1)), Pick::Unavailable, "not established");
        assert_eq!(run(Pick::Send(7)), Pick::Unavailable, "out of range");
        assert_eq!(run(Pick::SendAll(Mask(0b111))), Pick::SendAll(Mask(0b1)), "only valid members kept");
        assert_eq!(run(Pick::SendAll(Mask(0b110))), Pick::Unavailable);
        assert_eq!(run(Pick::Wait), Pick::Wait);
        assert_eq!(AnyScheduler::Custom(Box::new(Fixed(Pick::Wait))).name(), "fixed");
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
        Segment { len: 1200, queued_bytes: 1200, ..Default::default() }
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
