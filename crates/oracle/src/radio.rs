//! A phone's cellular radio: its RRC states, what they delay and what they cost.
//!
//! One state machine answers both questions, so that the delay a simulator or an emulator
//! adds and the energy a meter reports can never disagree about the state the radio was in.
//!
//! ```text
//!            uplink packet (promotion)               no packet for `active`
//!   IDLE ───────────────────────────────► ACTIVE ──────────────────────────► TAIL (DRX)
//!    ▲  downlink: wait for the paging        ▲                                  │
//!    │  occasion, then the promotion         │  any packet (no delay)           │ `tail`
//!    │                                       └──────────────────────────────────┤
//!    │                `inactive` (NR only)           resume (NR only)           ▼
//!    └────────────────────────────────────── INACTIVE ◄───────────────────── (end of tail)
//! ```
//!
//! - From IDLE a packet waits for the promotion (LTE: 0.26 s, Huang et al.). A packet *for* an
//!   idle phone waits first for the phone's next paging occasion (one per `paging_cycle`, at
//!   the phone's own phase), then for the promotion.
//! - Each packet carried keeps the radio in continuous reception for `active`; then the
//!   connected state's DRX `tail` follows, during which packets pass without delay.
//! - 5G NR may park the phone in RRC_INACTIVE after the tail; leaving it (a *resume*) is
//!   faster than a promotion from IDLE. A profile with `inactive` = 0 has no such state.
//!
//! Time is in microseconds ([`Time`]); powers in watts.
//!
//! Three ways in: [`Radio::uplink`] and [`Radio::downlink`] ask when a packet can cross (and
//! start the promotion or the paging it needs); [`Radio::carried`] records a packet that
//! crossed; [`Radio::observe`] is the meter's view, for a host that sees packets only as they
//! cross: a packet crossing while the state machine says the radio is idle had to wait for a
//! promotion that ended just then.

use crate::Time;

/// The parameters of a radio technology.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Profile {
    /// A short name (`lte`, `nr`).
    pub name: &'static str,
    /// IDLE to CONNECTED: how long the first packet waits.
    pub promotion: Time,
    /// Power during the promotion (W).
    pub promotion_w: f64,
    /// Continuous reception after each packet.
    pub active: Time,
    /// Power in continuous reception (W), besides the per-bit costs.
    pub active_w: f64,
    /// Joules per megabit sent.
    pub up_j_per_mbit: f64,
    /// Joules per megabit received.
    pub down_j_per_mbit: f64,
    /// The connected state's DRX tail after the last continuous reception.
    pub tail: Time,
    /// Power in the tail (W).
    pub tail_w: f64,
    /// Power when idle (paging only, W).
    pub idle_w: f64,
    /// The idle DRX (paging) cycle: data for an idle phone waits for its next occasion.
    pub paging_cycle: Time,
    /// How long the radio stays in RRC_INACTIVE after the tail before going idle (0: the
    /// technology has no such state).
    pub inactive: Time,
    /// RRC_INACTIVE to CONNECTED: how long the first packet waits.
    pub resume: Time,
    /// Power during a resume (W).
    pub resume_w: f64,
    /// Power in RRC_INACTIVE (W).
    pub inactive_w: f64,
}

impl Profile {
    /// LTE, as Huang et al. measured it ("A Close Examination of Performance and Power
    /// Characteristics of 4G LTE Networks", MobiSys 2012) and the MultiMob paper uses it:
    /// promotion 0.26 s at 1.21 W, continuous reception 0.1 s at 1.2 W plus 0.438 J per Mbit
    /// sent and 0.052 J per Mbit received, a tail of 11.576 s at 1.06 W, idle 0.02 W; the
    /// idle paging cycle of 1.28 s (rf128, 3GPP TS 36.331 `defaultPagingCycle`; 1.28-1.30 s
    /// on Verizon's and T-Mobile's LTE in Narayanan et al. 2021, Table 7).
    pub const LTE: Profile = Profile {
        name: "lte",
        promotion: 260_000,
        promotion_w: 1.21,
        active: 100_000,
        active_w: 1.2,
        up_j_per_mbit: 0.438,
        down_j_per_mbit: 0.052,
        tail: 11_576_000,
        tail_w: 1.06,
        idle_w: 0.02,
        paging_cycle: 1_280_000,
        inactive: 0,
        resume: 0,
        resume_w: 0.0,
        inactive_w: 0.02,
    };

    /// 5G NR standalone on low band, from the one published measurement of its RRC timers
    /// we found: Narayanan et al., "A Variegated Look at 5G in the Wild: Performance, Power,
    /// and QoE Implications", SIGCOMM 2021, T-Mobile SA low-band. Measured there: promotion
    /// 341 ms and inactivity (tail) timer 10.4 s, idle DRX cycle 1.25 s (Table 7), tail power
    /// 0.593 W (Table 2), and RRC_INACTIVE held about 5 s before RRC_IDLE (§4.2).
    /// Not measured there, so assumed: the resume from RRC_INACTIVE takes 10 ms, the 3GPP
    /// control-plane latency target from a battery-efficient state (TR 38.913; O-RAN WG7
    /// §4.4), which real networks will not beat; the promotion and active powers and the
    /// per-bit costs are LTE's above; INACTIVE costs what IDLE does (paging only).
    pub const NR_SA: Profile = Profile {
        name: "nr",
        promotion: 341_000,
        promotion_w: 1.21,
        active: 100_000,
        active_w: 1.2,
        up_j_per_mbit: 0.438,
        down_j_per_mbit: 0.052,
        tail: 10_400_000,
        tail_w: 0.593,
        idle_w: 0.02,
        paging_cycle: 1_250_000,
        inactive: 5_000_000,
        resume: 10_000,
        resume_w: 1.21,
        inactive_w: 0.02,
    };

    /// A profile by its short name: `lte` or `nr`.
    pub fn by_name(name: &str) -> Option<Profile> {
        [Self::LTE, Self::NR_SA].into_iter().find(|p| p.name.eq_ignore_ascii_case(name))
    }

    /// The power drawn in `state` (W), besides the per-bit costs.
    pub fn power(&self, state: RrcState) -> f64 {
        match state {
            RrcState::Idle => self.idle_w,
            RrcState::Promoting => self.promotion_w,
            RrcState::Resuming => self.resume_w,
            RrcState::Active => self.active_w,
            RrcState::Tail => self.tail_w,
            RrcState::Inactive => self.inactive_w,
        }
    }
}

impl Default for Profile {
    fn default() -> Self {
        Self::LTE
    }
}

/// The radio's state at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RrcState {
    /// RRC_IDLE: a packet waits for a promotion (and, towards the phone, for paging).
    Idle,
    /// IDLE to CONNECTED under way.
    Promoting,
    /// RRC_INACTIVE to CONNECTED under way (NR).
    Resuming,
    /// CONNECTED, in continuous reception (within `active` of a packet).
    Active,
    /// CONNECTED, in the DRX tail: packets pass without delay.
    Tail,
    /// RRC_INACTIVE (NR): a packet waits for a resume.
    Inactive,
}

impl RrcState {
    /// Connected: a packet crosses at once.
    pub fn connected(self) -> bool {
        matches!(self, RrcState::Active | RrcState::Tail)
    }
}

/// A promotion or resume, under way or scheduled (after a paging occasion).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Wake {
    from: Time,
    until: Time,
    resume: bool,
}

/// One cellular radio: its state over time and the energy it has used.
#[derive(Debug, Clone, PartialEq)]
pub struct Radio {
    profile: Profile,
    /// Where in its paging cycle this phone's occasions fall.
    paging_phase: Time,
    start: Time,
    /// End of the current (or last) continuous reception, once a packet was carried.
    active_end: Option<Time>,
    wake: Option<Wake>,
    /// Energy is accounted up to this time.
    acc: Time,
    /// Joules of the states up to `acc`.
    state_j: f64,
    /// The part of `state_j` above idle (kept apart so that an idle radio has exactly none).
    above_j: f64,
    up_bits: f64,
    down_bits: f64,
    promotions: u32,
    resumes: u32,
    pages: u32,
    first: Option<Time>,
    last: Time,
}

/// What a radio cost over an interval.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Energy {
    /// Joules over the interval, idle paging included.
    pub joules: f64,
    /// Joules above what an idle radio would have used over the interval.
    pub above_idle_joules: f64,
    /// Mean power over the interval, in milliwatts.
    pub mean_mw: f64,
    /// Promotions from idle (radio wake-ups).
    pub promotions: u32,
    /// Resumes from RRC_INACTIVE (NR).
    pub resumes: u32,
}

impl Radio {
    /// A radio idle since `start`, its paging occasions at `paging_phase` modulo the cycle.
    pub fn new(profile: Profile, start: Time, paging_phase: Time) -> Self {
        Self {
            profile,
            paging_phase: paging_phase % profile.paging_cycle.max(1),
            start,
            active_end: None,
            wake: None,
            acc: start,
            state_j: 0.0,
            above_j: 0.0,
            up_bits: 0.0,
            down_bits: 0.0,
            promotions: 0,
            resumes: 0,
            pages: 0,
            first: None,
            last: start,
        }
    }

    /// The radio's parameters.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The end of the continuous reception that governs `t`: a wake that ended by `t` left
    /// the radio connected from its end.
    fn active_end_at(&self, t: Time) -> Option<Time> {
        match self.wake {
            Some(w) if t >= w.until => Some(self.active_end.map_or(w.until, |a| a.max(w.until))),
            _ => self.active_end,
        }
    }

    /// The state at `t` (at or after the last event given to the radio).
    pub fn state_at(&self, t: Time) -> RrcState {
        if let Some(w) = self.wake {
            if t >= w.from && t < w.until {
                return if w.resume { RrcState::Resuming } else { RrcState::Promoting };
            }
        }
        let Some(ae) = self.active_end_at(t) else { return RrcState::Idle };
        let p = &self.profile;
        if t < ae {
            RrcState::Active
        } else if t < ae.saturating_add(p.tail) {
            RrcState::Tail
        } else if t < ae.saturating_add(p.tail).saturating_add(p.inactive) {
            RrcState::Inactive
        } else {
            RrcState::Idle
        }
    }

    /// The first time after `t` at which the state may change.
    fn next_boundary(&self, t: Time) -> Time {
        let p = &self.profile;
        let mut best = Time::MAX;
        let mut consider = |b: Time| {
            if b > t && b < best {
                best = b;
            }
        };
        if let Some(w) = self.wake {
            consider(w.from);
            consider(w.until);
        }
        if let Some(ae) = self.active_end_at(t) {
            consider(ae);
            consider(ae.saturating_add(p.tail));
            consider(ae.saturating_add(p.tail).saturating_add(p.inactive));
        }
        best
    }

    /// Accounts the states' energy up to `to`.
    fn integrate(&mut self, to: Time) {
        while self.acc < to {
            let end = self.next_boundary(self.acc).min(to);
            let state = self.state_at(self.acc);
            let (w, dt) = (self.profile.power(state), (end - self.acc) as f64 / 1e6);
            self.state_j += w * dt;
            if state != RrcState::Idle {
                self.above_j += (w - self.profile.idle_w) * dt;
            }
            self.acc = end;
        }
    }

    /// Brings the radio to `now`: energy accounted, a finished wake folded into the
    /// connected state. Returns `now`, never earlier than the last event.
    fn advance(&mut self, now: Time) -> Time {
        let now = now.max(self.last);
        self.last = now;
        self.integrate(now);
        if let Some(w) = self.wake.filter(|w| w.until <= now) {
            self.active_end = Some(self.active_end.map_or(w.until, |a| a.max(w.until)));
            self.wake = None;
        }
        now
    }

    /// The next paging occasion at or after `t`.
    fn paging_occasion(&self, t: Time) -> Time {
        let c = self.profile.paging_cycle;
        if c == 0 {
            return t;
        }
        let phase = self.paging_phase;
        let k = t.saturating_sub(phase).div_ceil(c);
        let at = phase + k * c;
        if at < t {
            at + c
        } else {
            at
        }
    }

    /// How long a wake takes: a resume (from RRC_INACTIVE) or a promotion.
    fn wake_len(&self, resume: bool) -> Time {
        if resume {
            self.profile.resume
        } else {
            self.profile.promotion
        }
    }

    /// A wake from `from` to `until` (counted); returns `until`.
    fn start_wake(&mut self, from: Time, until: Time, resume: bool) -> Time {
        self.wake = Some(Wake { from, until, resume });
        if resume {
            self.resumes += 1;
        } else {
            self.promotions += 1;
        }
        until
    }

    /// The host hands the radio a packet to send at `now`: when it goes on the air. An idle
    /// radio starts its promotion now (or a resume, from RRC_INACTIVE); one already waking
    /// sends at the end of that.
    pub fn uplink(&mut self, now: Time) -> Time {
        let now = self.advance(now);
        match (self.wake, self.state_at(now)) {
            (Some(w), RrcState::Promoting | RrcState::Resuming) => w.until,
            (_, RrcState::Active | RrcState::Tail) => now,
            (_, RrcState::Inactive) => self.start_wake(now, now.saturating_add(self.wake_len(true)), true),
            (scheduled, _) => {
                // Idle. A wake scheduled for a paging occasion still to come is replaced by
                // this one: the phone asks for the connection itself, now (one promotion).
                if let Some(w) = scheduled.filter(|w| w.from > now) {
                    let len = w.until - w.from;
                    self.wake = Some(Wake { from: now, until: now.saturating_add(len), resume: w.resume });
                    return now.saturating_add(len);
                }
                self.start_wake(now, now.saturating_add(self.wake_len(false)), false)
            }
        }
    }

    /// A packet for the phone reaches its base station at `now`: when the phone receives it.
    /// An idle (or inactive) phone is paged at its next occasion and then promotes (resumes).
    pub fn downlink(&mut self, now: Time) -> Time {
        let now = self.advance(now);
        if let Some(w) = self.wake.filter(|w| w.until > now) {
            return w.until;
        }
        match self.state_at(now) {
            RrcState::Active | RrcState::Tail => now,
            state => {
                self.pages += 1;
                let page = self.paging_occasion(now);
                let resume = state == RrcState::Inactive;
                self.start_wake(page, page.saturating_add(self.wake_len(resume)), resume)
            }
        }
    }

    /// Whether a packet can cross at `now` without waiting.
    pub fn ready(&self, now: Time) -> bool {
        self.state_at(now.max(self.last)).connected()
    }

    /// When a wake under way or scheduled ends, if one is.
    pub fn wake_until(&self) -> Option<Time> {
        self.wake.map(|w| w.until)
    }

    /// A packet of `bytes` crossed at `at` (sent if `up`), the radio connected: it starts or
    /// extends the continuous reception. Returns the state it crossed in.
    pub fn carried(&mut self, at: Time, up: bool, bytes: usize) -> RrcState {
        let at = self.advance(at);
        let state = self.state_at(at);
        self.first.get_or_insert(at);
        let bits = bytes as f64 * 8.0;
        if up {
            self.up_bits += bits;
        } else {
            self.down_bits += bits;
        }
        let end = at.saturating_add(self.profile.active);
        self.active_end = Some(self.active_end.map_or(end, |a| a.max(end)));
        state
    }

    /// The meter's view: a packet seen crossing at `at`. If the state machine has the radio
    /// idle (or inactive) then, the packet waited for a promotion (a resume) that ended at
    /// `at`, which is accounted; then it is [`Radio::carried`]. A promotion that would have
    /// begun before the radio's start is counted whole.
    pub fn observe(&mut self, at: Time, up: bool, bytes: usize) -> RrcState {
        let at = at.max(self.last);
        let state = self.state_at(at);
        if matches!(state, RrcState::Idle | RrcState::Inactive) {
            let resume = state == RrcState::Inactive;
            let len = self.wake_len(resume);
            let begun = at.saturating_sub(len).max(self.acc).min(at);
            self.advance(begun);
            // Before the start (or the clock's zero) nothing was accounted: that part of the
            // promotion is added here, the rest by the integration below.
            let before = len.saturating_sub(at - begun) as f64 / 1e6;
            let w = self.profile.power(if resume { RrcState::Resuming } else { RrcState::Promoting });
            self.state_j += w * before;
            self.above_j += (w - self.profile.idle_w) * before;
            self.start_wake(begun, at, resume);
        }
        self.carried(at, up, bytes);
        state
    }

    /// When the first packet crossed, if any did.
    pub fn first_packet(&self) -> Option<Time> {
        self.first
    }

    /// Promotions from idle so far (a paging occasion still to come included).
    pub fn promotions(&self) -> u32 {
        self.promotions
    }

    /// Pages (data for an idle or inactive phone) so far.
    pub fn pages(&self) -> u32 {
        self.pages
    }

    /// The energy over `[start, end]`: the states up to `end` and the bits carried.
    pub fn energy(&self, end: Time) -> Energy {
        let mut r = self.clone();
        r.integrate(end);
        let p = &self.profile;
        let span = end.saturating_sub(self.start) as f64 / 1e6;
        let bits_j = p.up_j_per_mbit * r.up_bits / 1e6 + p.down_j_per_mbit * r.down_bits / 1e6;
        let joules = r.state_j + bits_j;
        let above_idle_joules = r.above_j + bits_j;
        let mean_mw = if span > 0.0 { joules / span * 1e3 } else { 0.0 };
        Energy { joules, above_idle_joules, mean_mw, promotions: r.promotions, resumes: r.resumes }
    }
}

/// For checking a delay model against a meter: whether each packet of a log of crossings
/// `(time, state the packet found the radio in)` woke the radio: the first at its time that
/// found it idle or inactive (a packet that came during a wake, or whose page an earlier send
/// overtook, crossed with it). A meter observing the same crossings sees exactly these packets
/// cross an idle (inactive) radio.
pub fn wakers(log: &[(Time, RrcState)]) -> Vec<bool> {
    let mut out = Vec::with_capacity(log.len());
    let mut woke_at = None;
    for &(t, s) in log {
        let wakes = matches!(s, RrcState::Idle | RrcState::Inactive) && woke_at != Some(t);
        if wakes {
            woke_at = Some(t);
        }
        out.push(wakes);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Time = 1_000_000;
    const MS: Time = 1_000;

    #[test]
    fn an_idle_radio_delays_the_first_packet_by_the_promotion() {
        let mut r = Radio::new(Profile::LTE, 0, 0);
        assert_eq!(r.state_at(S), RrcState::Idle);
        let air = r.uplink(S);
        assert_eq!(air, S + 260 * MS);
        assert_eq!(r.state_at(S + 100 * MS), RrcState::Promoting);
        // A second packet during the promotion waits for its end too.
        assert_eq!(r.uplink(S + 100 * MS), air);
        assert_eq!(r.carried(air, true, 1200), RrcState::Tail);
        assert_eq!(r.state_at(air + 50 * MS), RrcState::Active);
        // In the tail, no delay; after it, a new promotion.
        assert_eq!(r.uplink(air + 5 * S), air + 5 * S);
        r.carried(air + 5 * S, true, 100);
        let idle_at = air + 5 * S + 100 * MS + 11_576 * MS;
        assert_eq!(r.state_at(idle_at - 1), RrcState::Tail);
        assert_eq!(r.state_at(idle_at), RrcState::Idle);
        assert_eq!(r.uplink(idle_at), idle_at + 260 * MS);
        assert_eq!(r.promotions(), 2);
    }

    #[test]
    fn data_for_an_idle_phone_waits_for_paging_then_the_promotion() {
        // Occasions at 0.3 s + k * 1.28 s.
        let mut r = Radio::new(Profile::LTE, 0, 300 * MS);
        let at = r.downlink(S);
        assert_eq!(at, 300 * MS + 1_280 * MS + 260 * MS);
        assert_eq!(r.pages(), 1);
        // Idle (paging DRX) until the occasion, then promoting.
        assert_eq!(r.state_at(1_500 * MS), RrcState::Idle);
        assert_eq!(r.state_at(1_600 * MS), RrcState::Promoting);
        // The phone sending before its occasion promotes at once, and the page's data comes
        // with that promotion: one promotion, not two.
        let mut r2 = Radio::new(Profile::LTE, 0, 300 * MS);
        r2.downlink(S);
        assert_eq!(r2.uplink(S + 10 * MS), S + 270 * MS);
        assert_eq!(r2.downlink(S + 20 * MS), S + 270 * MS);
        assert_eq!(r2.promotions(), 1);
    }

    #[test]
    fn nr_resumes_from_inactive_faster_than_it_promotes() {
        let p = Profile::NR_SA;
        let mut r = Radio::new(p, 0, 0);
        let air = r.uplink(0);
        assert_eq!(air, 341 * MS);
        r.carried(air, true, 100);
        let tail_end = air + p.active + p.tail;
        assert_eq!(r.state_at(tail_end), RrcState::Inactive);
        assert_eq!(r.uplink(tail_end + S), tail_end + S + 10 * MS);
        r.carried(tail_end + S + 10 * MS, true, 100);
        let e = r.energy(60 * S);
        assert_eq!((e.promotions, e.resumes), (1, 1));
        // Past the inactive period, idle again: a full promotion.
        let idle = tail_end + S + 10 * MS + p.active + p.tail + p.inactive;
        assert_eq!(r.state_at(idle), RrcState::Idle);
    }

    #[test]
    fn the_meter_and_the_delay_model_agree_on_every_packet() {
        // Packets handed to a delaying radio (some far apart, some during a promotion, some
        // for the phone while it is idle); they cross in time order, as in the simulator. A
        // meter that sees them only as they cross must find the same states and energy.
        let mut delayed = Radio::new(Profile::NR_SA, 0, 400 * MS);
        let mut meter = Radio::new(Profile::NR_SA, 0, 0);
        let arrivals = [S, S + 50 * MS, 31 * S, 31 * S + 20 * MS, 44 * S, 45 * S, 70 * S, 70 * S + 5 * MS, 90 * S];
        let mut pending: Vec<(Time, bool, RrcState)> = Vec::new();
        let mut crossed: Vec<(Time, bool, RrcState)> = Vec::new();
        let mut carry = |delayed: &mut Radio, pending: &mut Vec<(Time, bool, RrcState)>, upto: Time| {
            pending.sort_by_key(|p| p.0);
            while pending.first().is_some_and(|p| p.0 <= upto) {
                let (air, up, before) = pending.remove(0);
                assert!(delayed.carried(air, up, 1000).connected(), "carried only when connected");
                crossed.push((air, up, before));
            }
        };
        for (k, &t) in arrivals.iter().enumerate() {
            carry(&mut delayed, &mut pending, t);
            let up = k % 3 != 1;
            let before = delayed.state_at(t);
            let air = if up { delayed.uplink(t) } else { delayed.downlink(t) };
            pending.push((air, up, before));
        }
        carry(&mut delayed, &mut pending, Time::MAX);
        let log: Vec<(Time, RrcState)> = crossed.iter().map(|c| (c.0, c.2)).collect();
        let wakers = wakers(&log);
        assert!(wakers.iter().filter(|w| **w).count() >= 3, "{crossed:?}");
        for (k, (&(air, up, before), waker)) in crossed.iter().zip(wakers).enumerate() {
            let seen = meter.observe(air, up, 1000);
            if waker {
                assert_eq!(seen, before, "packet {k} woke the radio: {crossed:?}");
            } else {
                assert!(seen.connected(), "packet {k} crossed a connected radio");
                if before.connected() {
                    assert_eq!(seen, before, "packet {k}");
                }
            }
        }
        let (a, b) = (delayed.energy(200 * S), meter.energy(200 * S));
        assert_eq!((a.promotions, a.resumes), (b.promotions, b.resumes));
        assert!((a.joules - b.joules).abs() < 1e-6, "{a:?} {b:?}");
    }

    #[test]
    fn energy_follows_the_states() {
        let p = Profile::LTE;
        let mut r = Radio::new(p, 0, 0);
        let air = r.uplink(S);
        r.carried(air, true, 125_000);
        let e = r.energy(60 * S);
        // 0.26*1.21 + 0.1*1.2 + 11.576*1.06 + 1 Mbit * 0.438 + idle for the rest.
        let busy = 0.26 + 0.1 + 11.576;
        let want = 0.26 * 1.21 + 0.1 * 1.2 + 11.576 * 1.06 + 0.438 + 0.02 * (60.0 - busy);
        assert!((e.joules - want).abs() < 1e-9, "{} vs {want}", e.joules);
        assert!((e.above_idle_joules - (want - 0.02 * 60.0)).abs() < 1e-9);
        // Asking does not change it.
        assert_eq!(r.energy(60 * S), e);
    }

    /// A meter started just before the first packet (a driver's clock starts at zero with its
    /// endpoint) still counts the whole promotion that packet waited for.
    #[test]
    fn a_promotion_before_the_meters_start_counts_whole() {
        for start in [0, 2 * MS] {
            let mut m = Radio::new(Profile::LTE, start, 0);
            m.observe(3 * MS, true, 100);
            let e = m.energy(3 * MS);
            assert!((e.joules - 0.26 * 1.21 - 100.0 * 8.0 * 0.438 / 1e6).abs() < 1e-9, "start {start}: {e:?}");
            assert_eq!(e.promotions, 1);
        }
    }

    #[test]
    fn paging_occasions_follow_the_phase() {
        let r = Radio::new(Profile::LTE, 0, 300 * MS);
        assert_eq!(r.paging_occasion(0), 300 * MS);
        assert_eq!(r.paging_occasion(300 * MS), 300 * MS);
        assert_eq!(r.paging_occasion(301 * MS), 1_580 * MS);
        assert_eq!(Profile::by_name("NR"), Some(Profile::NR_SA));
        assert_eq!(Profile::by_name("3g"), None);
    }
}
