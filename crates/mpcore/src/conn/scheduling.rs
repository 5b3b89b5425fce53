//! The scheduler's wiring: what it is told of each subflow for a pick (its flags, RTT,
//! window and room), and what is done with its answer. The algorithms themselves are the
//! `scheduler` crate's.

use super::paths::Paths;
use super::qlog::Qlog;
use super::recv::RecvSide;
use super::send::{Seg, SendSide};
use super::subflow::table::SubflowTable;
use super::subflow::{DataRef, Subflow};
use crate::config::Config;
use crate::Time;
use scheduler::{AnyScheduler, Flags, Pick, Segment, SubflowInfo};

/// The scheduler and what it is given to choose from.
pub(super) struct Scheduling {
    pub(super) algo: AnyScheduler,
    /// The subflows as the scheduler sees them, rebuilt for each pick (kept for its room).
    pub(super) infos: Vec<SubflowInfo>,
    /// Where the round of subflows owed a packet starts next (`transmit`).
    pub(super) rr: usize,
}

impl Scheduling {
    /// Picks the subflow (its slot) for segment `seg`, at most `payload` bytes of it; with
    /// `SendAll`, the other subflows picked get a copy of it.
    pub(super) fn pick(
        &mut self,
        now: Time,
        (seg, payload): (Seg, u64),
        paths: &mut Paths,
        (send, recv): (&SendSide, &RecvSide),
        config: &Config,
        qlog: Option<&mut Qlog>,
    ) -> Option<(usize, Seg)> {
        let len = seg.len.min(payload).max(1) as u32;
        let slow = slow_subflows(&paths.subflows, config, u64::from(len));
        self.infos.clear();
        // Room for the slots there are (grown once per new slot, not per packet: an idle
        // connection does not keep room for 64, 2.5 KiB).
        self.infos.reserve(paths.subflows.slot_bound());
        // A subflow the scheduler is shown as working: established, and neither potentially
        // failed nor far slower than it was (the same test as the flags below).
        let works = |k: usize, s: &Subflow| {
            s.established() && s.remote_cid().is_some() && !s.pf() && slow & (1 << (k % 64)) == 0
        };
        // Looked at only for a subflow in its fast join's first flight (rare), not per pick.
        let others_work = |table: &SubflowTable| table.enumerate().any(|(k, s)| works(k, s));
        for k in 0..paths.subflows.slot_bound() {
            let Some(sf) = paths.subflows.get(k) else {
                // A free slot: never eligible.
                self.infos.push(SubflowInfo::default());
                continue;
            };
            let mut flags = Flags(0);
            // The later packets of a fast join's first flight may carry data while nothing else
            // can (their data waits for the join's answer, behind a radio's promotion): not
            // while another subflow works (issue 54: a primary that answers again within the
            // promotion carries the flight).
            let ready = (sf.established() && sf.remote_cid().is_some())
                || (sf.fast_join_flight() && !others_work(&paths.subflows));
            flags.set(Flags::ESTABLISHED, ready);
            // A subflow far slower than it was and than another working one carries no new
            // data while that one works, under every path manager (issue 32).
            flags.set(Flags::POTENTIALLY_FAILED, sf.rec().pf || slow & (1 << (k % 64)) != 0);
            flags.set(Flags::BACKUP, sf.backup());
            flags.set(Flags::IN_RECOVERY, sf.rec().rto_backoff > 0);
            flags.set(Flags::ALREADY_SENT, seg.mask & (1 << k) != 0);
            flags.set(Flags::HIGH_RTO, sf.high_rto());
            flags.set(Flags::WAS_BAD, sf.was_bad() || paths.multimob.held(k, sf));
            let mut room = sf.rec().cwnd_room().min(sf.val().room());
            if paths.local.unwritable.contains(sf.local_path()) && room > 0 {
                // A full socket: no room until it drains (the scheduler picks another, or waits).
                room = 0;
                paths.local.held_back.get_or_insert(sf.local_path());
            }
            self.infos.push(SubflowInfo {
                id: sf.id(),
                flags,
                iface: paths.local.paths.get(usize::from(sf.local_path().0)).map(|p| p.iface).unwrap_or_default(),
                srtt_us: sf.rec().rtt.smoothed_or_default().min(u64::from(u32::MAX)) as u32,
                rttvar_us: sf.rec().rtt.rttvar.min(u64::from(u32::MAX)) as u32,
                cwnd: sf.rec().cc.cwnd().min(u64::from(u32::MAX)) as u32,
                cwnd_room: room.min(u64::from(u32::MAX)) as u32,
                last_original_rx_us: sf.last_original_rx(),
                retrans_outstanding: sf.rec().recent_losses + u32::from(sf.rec().pf),
            });
        }
        let s = Segment {
            len,
            answer_data_fin_on: if seg.fin { recv.fin_slot() } else { None },
            queued_bytes: send.queued(),
            send_window: send.peer_window(),
            now_us: now,
        };
        let mut pick = self.algo.pick(&self.infos, &s);
        if pick == Pick::Unavailable && seg.mask != 0 {
            // A reinjection no other usable subflow can carry goes back where it was sent (its
            // own subflow recovered, or is the last one): the mask steers data away from a
            // subflow that failed, it does not strand it.
            for info in self.infos.iter_mut() {
                info.flags.set(Flags::ALREADY_SENT, false);
            }
            pick = self.algo.pick(&self.infos, &s);
        }
        if let (Some(q), Pick::Send(i)) = (qlog, pick) {
            if let Some(sf) = paths.subflows.get(i) {
                q.pick(now, sf.id());
            }
        }
        match pick {
            Pick::Send(i) if paths.subflows.get(i).is_some() => Some((i, seg)),
            Pick::SendAll(mask) => {
                let mut first = None;
                for i in mask.iter() {
                    if paths.subflows.get(i).is_none() {
                        continue;
                    }
                    if first.is_none() {
                        first = Some(i);
                    } else {
                        let take = seg.len.min(payload) as u32;
                        let d = DataRef { off: seg.off, len: take, fin: seg.fin && u64::from(take) == seg.len };
                        paths.subflows[i].send_copy(d);
                    }
                }
                first.map(|i| (i, seg))
            }
            _ => None,
        }
    }
}

/// The subflows (slot bits) whose RTT (smoothed, or the latest sample) is far above their
/// own least RTT (the oracle's `rtt_ratio` times it and `rtt_margin` above it) and above
/// the best other working subflow's by the margin, while that one has room in its window
/// for a segment of `len` bytes: the oracle's delay rule, per connection, so that a
/// `backup` or `fullmesh` client (no oracle) and a server leave a WiFi that got 500 ms
/// slower for a working cellular subflow instead of waiting 500 ms on every request. Its
/// RTT is still sampled (the stale-estimate probes), so it is used again once it is fast.
fn slow_subflows(subflows: &SubflowTable, config: &Config, len: u64) -> u64 {
    let (ratio, margin) = (config.multipath.oracle.rtt_ratio, config.multipath.oracle.rtt_margin);
    if margin == 0 || subflows.open_count() < 2 {
        return 0;
    }
    let works = |s: &Subflow| s.established() && !s.rec().pf && s.rec().rtt.has_sample;
    // Only while a faster one has room for this segment: a bulk transfer that fills the
    // fast path's window still gets the slow path's bandwidth (the uplink study's
    // aggregation).
    let room = |o: &Subflow| o.rec().cwnd_room().min(o.val().room()) >= len;
    let mut mask = 0u64;
    for (k, sf) in subflows.enumerate().filter(|(_, s)| works(s)) {
        // The latest sample as well as the smoothed RTT: the average takes a dozen
        // samples to climb 500 ms, and each request sent meanwhile waits the 500 ms.
        let rtt = &sf.rec().rtt;
        let r = rtt.srtt.max(rtt.latest);
        let own = r as f64 >= rtt.min as f64 * ratio && r >= rtt.min.saturating_add(margin);
        if !own {
            continue;
        }
        let others = subflows.iter().filter(|o| o.id() != sf.id() && works(o) && room(o));
        if others.map(|o| o.rec().rtt.srtt).min().is_some_and(|b| r >= b.saturating_add(margin)) {
            mask |= 1 << (k % 64);
        }
    }
    mask
}
