//! The send loop: control frames first, then data through the scheduler.

use super::early::MAX_EARLY_DATA;
use super::events::{Side, WriteError};
use super::send::Seg;
use super::subflow::recovery::Probe;
use super::subflow::{DataRef, FrameSet, Subflow};
use super::{Connection, State};
use crate::{PathId, PathSet, Time, Transmit};
use scheduler::{Flags, Pick, Segment, SubflowInfo};

impl Connection {
    /// The next datagram to send, written into `buf`.
    pub fn poll_transmit(&mut self, now: Time, buf: &mut [u8]) -> Option<Transmit> {
        self.poll_transmit_with(now, buf, PathSet::default()).0
    }

    /// [`Connection::poll_transmit`] with the endpoint's word on which local paths' sockets
    /// are full (`unwritable`: nothing is written for them); also the first of them a datagram
    /// was held back for (the connection then waits for that socket to drain).
    pub(crate) fn poll_transmit_with(
        &mut self,
        now: Time,
        buf: &mut [u8],
        unwritable: PathSet,
    ) -> (Option<Transmit>, Option<PathId>) {
        self.local.unwritable = unwritable;
        let t = self.transmit(now, buf);
        if t.is_some() {
            self.arm_trim(now);
        }
        (t, std::mem::take(&mut self.local.held_back))
    }

    fn transmit(&mut self, now: Time, buf: &mut [u8]) -> Option<Transmit> {
        if self.live.drained {
            return None;
        }
        if self.state == State::Initial {
            let Some(len) = self.session.hs.as_mut()?.poll_initial(now, self.config.transport.initial_rto, buf) else {
                // After the INITIAL, its copies on the other paths once they are due (§4.10),
                // then its 0-RTT data (§4.9).
                if let Some(t) = self.poll_initial_copy(buf) {
                    return Some(t);
                }
                return self.build_early(now, buf);
            };
            self.on_initial_sent(now);
            let sf = &self.subflows[0];
            return Some(Transmit { path: sf.local_path(), remote: sf.remote(), len, carrier: sf.carrier() });
        }
        let orphans = self.local.addrs.take_orphans();
        if !orphans.is_empty() {
            self.pend_on_any(orphans);
        }
        let n = self.subflows.slot_bound();
        if self.recv.take_window_update() {
            // A DSS without data elicits no acknowledgement (§5), so a lost window update would
            // never be repaired and a sender waiting on the window would wait for good: the
            // update goes with a PING, which the retransmission timer repeats until answered.
            let best = self.subflows.enumerate().filter(|(_, s)| s.established() && !s.pf());
            if let Some((i, _)) = best.max_by_key(|(_, s)| s.last_original_rx()) {
                self.subflows[i].ack_now();
                self.subflows[i].ping();
            }
        }
        // Control first: ACKs due, pending frames, probes, redundant copies.
        for k in 0..n {
            let i = (self.sched.rr + k) % n;
            let Some(sf) = self.subflows.get(i) else { continue };
            let closing_only = !sf.is_open() && sf.pending().intersects(FrameSet::CLOSING);
            if !sf.is_open() && !closing_only {
                continue;
            }
            let urgent =
                sf.acks().due(now) || !sf.pending().is_empty() || sf.rec().probe.is_some() || sf.copy().is_some();
            if urgent && self.local.unwritable.contains(sf.local_path()) {
                // Its socket is full: this waits until the endpoint says it is writable.
                self.local.held_back.get_or_insert(sf.local_path());
                continue;
            }
            if urgent {
                // A first fast-join packet carries data when there is some (FAST_JOIN_OUT);
                // its repeats are FAST_JOIN_IN.
                let first_fast_join = sf.fast_opening() && sf.join_unsent() && sf.rec().rto_backoff == 0;
                let repeat = self.config.faults().repeat_fast_join_dsn;
                let seg = if first_fast_join { self.send.fast_join_segment(repeat) } else { None };
                if let Some(t) = self.build(now, i, seg, buf) {
                    self.sched.rr = (i + 1) % n;
                    return Some(t);
                }
            }
        }
        if self.is_closed() {
            return None;
        }
        // A path MTU probe, on a subflow busy with data (its loss is then told by the packets
        // after it, and an idle path costs nothing) with room for it in its window.
        for i in 0..n {
            let Some(sf) = self.subflows.get(i) else { continue };
            let busy = sf.rec().eliciting_in_flight > 0 && self.send.queued() > 0;
            let usable = self.state == State::Established && sf.established() && !sf.rec().pf && sf.val().validated;
            // Not while it loses packets: a lost probe would then say nothing of its size.
            let calm = sf.rec().recent_losses == 0;
            if !busy || !usable || !calm || self.local.unwritable.contains(sf.local_path()) {
                continue;
            }
            if let Some(size) = sf.pmtu().probe_due(now).filter(|&s| sf.rec().cwnd_room() >= s as u64) {
                if let Some(t) = self.build_mtu_probe(now, i, size, buf) {
                    return Some(t);
                }
            }
        }
        // Data, through the scheduler.
        let (i, seg) = self.schedule(now)?;
        self.build(now, i, Some(seg), buf)
    }

    pub(super) fn schedule(&mut self, now: Time) -> Option<(usize, Seg)> {
        let seg = self.send.peek()?;
        let payload = self.max_payload() as u64;
        let len = seg.len.min(payload).max(1) as u32;
        let slow = self.slow_subflows(u64::from(len));
        self.sched.infos.clear();
        // Room for the slots there are (grown once per new slot, not per packet: an idle
        // connection does not keep room for 64, 2.5 KiB).
        self.sched.infos.reserve(self.subflows.slot_bound());
        for k in 0..self.subflows.slot_bound() {
            let Some(sf) = self.subflows.get(k) else {
                // A free slot: never eligible.
                self.sched.infos.push(SubflowInfo::default());
                continue;
            };
            let mut flags = Flags(0);
            let ready = (sf.established() && sf.remote_cid().is_some()) || sf.fast_join_flight();
            flags.set(Flags::ESTABLISHED, ready);
            // A subflow far slower than it was and than another working one carries no new
            // data while that one works, under every path manager (issue 32).
            flags.set(Flags::POTENTIALLY_FAILED, sf.rec().pf || slow & (1 << (k % 64)) != 0);
            flags.set(Flags::BACKUP, sf.backup());
            flags.set(Flags::IN_RECOVERY, sf.rec().rto_backoff > 0);
            flags.set(Flags::ALREADY_SENT, seg.mask & (1 << k) != 0);
            flags.set(Flags::HIGH_RTO, sf.high_rto());
            flags.set(Flags::WAS_BAD, sf.was_bad());
            let mut room = sf.rec().cwnd_room().min(sf.val().room());
            if self.local.unwritable.contains(sf.local_path()) && room > 0 {
                // A full socket: no room until it drains (the scheduler picks another, or waits).
                room = 0;
                self.local.held_back.get_or_insert(sf.local_path());
            }
            self.sched.infos.push(SubflowInfo {
                id: sf.id(),
                flags,
                iface: self.local.paths.get(usize::from(sf.local_path().0)).map(|p| p.iface).unwrap_or_default(),
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
            answer_data_fin_on: if seg.fin { self.recv.fin_slot() } else { None },
            queued_bytes: self.send.queued(),
            send_window: self.send.peer_window(),
            now_us: now,
        };
        let mut pick = self.sched.algo.pick(&self.sched.infos, &s);
        if pick == Pick::Unavailable && seg.mask != 0 {
            // A reinjection no other usable subflow can carry goes back where it was sent (its
            // own subflow recovered, or is the last one): the mask steers data away from a
            // subflow that failed, it does not strand it.
            for info in self.sched.infos.iter_mut() {
                info.flags.set(Flags::ALREADY_SENT, false);
            }
            pick = self.sched.algo.pick(&self.sched.infos, &s);
        }
        if let (Some(q), Pick::Send(i)) = (self.out.qlog.as_deref_mut(), pick) {
            if let Some(sf) = self.subflows.get(i) {
                q.pick(now, sf.id());
            }
        }
        match pick {
            Pick::Send(i) if self.subflows.get(i).is_some() => Some((i, seg)),
            Pick::SendAll(mask) => {
                let mut first = None;
                for i in mask.iter() {
                    if self.subflows.get(i).is_none() {
                        continue;
                    }
                    if first.is_none() {
                        first = Some(i);
                    } else {
                        let take = seg.len.min(payload) as u32;
                        let d = DataRef { off: seg.off, len: take, fin: seg.fin && u64::from(take) == seg.len };
                        self.subflows[i].send_copy(d);
                    }
                }
                first.map(|i| (i, seg))
            }
            _ => None,
        }
    }

    /// The subflows (slot bits) whose RTT (smoothed, or the latest sample) is far above their
    /// own least RTT (the oracle's `rtt_ratio` times it and `rtt_margin` above it) and above
    /// the best other working subflow's by the margin, while that one has room in its window
    /// for a segment of `len` bytes: the oracle's delay rule, per connection, so that a
    /// `backup` or `fullmesh` client (no oracle) and a server leave a WiFi that got 500 ms
    /// slower for a working cellular subflow instead of waiting 500 ms on every request. Its
    /// RTT is still sampled (the stale-estimate probes), so it is used again once it is fast.
    pub(super) fn slow_subflows(&self, len: u64) -> u64 {
        let (ratio, margin) = (self.config.multipath.oracle.rtt_ratio, self.config.multipath.oracle.rtt_margin);
        if margin == 0 || self.subflows.open_count() < 2 {
            return 0;
        }
        let works = |s: &Subflow| s.established() && !s.rec().pf && s.rec().rtt.has_sample;
        // Only while a faster one has room for this segment: a bulk transfer that fills the
        // fast path's window still gets the slow path's bandwidth (the uplink study's
        // aggregation).
        let room = |o: &Subflow| o.rec().cwnd_room().min(o.val().room()) >= len;
        let mut mask = 0u64;
        for (k, sf) in self.subflows.enumerate().filter(|(_, s)| works(s)) {
            // The latest sample as well as the smoothed RTT: the average takes a dozen
            // samples to climb 500 ms, and each request sent meanwhile waits the 500 ms.
            let rtt = &sf.rec().rtt;
            let r = rtt.srtt.max(rtt.latest);
            let own = r as f64 >= rtt.min as f64 * ratio && r >= rtt.min.saturating_add(margin);
            if !own {
                continue;
            }
            let others = self.subflows.iter().filter(|o| o.id() != sf.id() && works(o) && room(o));
            if others.map(|o| o.rec().rtt.srtt).min().is_some_and(|b| r >= b.saturating_add(margin)) {
                mask |= 1 << (k % 64);
            }
        }
        mask
    }

    /// What a probe carries: for an RTO the oldest data to retransmit; for a tail loss probe
    /// new data if any, else the last segment sent on the subflow (RFC 8985 §7.3).
    pub(super) fn probe_data(&mut self, i: usize, p: Probe) -> Option<(DataRef, bool, bool)> {
        let s = match p {
            // A copy of the oldest data awaiting retransmission; the queue keeps it, so the
            // scheduler also reinjects it on a working subflow.
            Probe::Rto => self.send.peek().filter(|s| s.retrans)?,
            Probe::Tail => {
                // New data only on a subflow already carrying data (never on a backup subflow
                // the scheduler keeps idle); else the last segment it sent, else a bare PING.
                let last = self.subflows[i].last_data_in_flight();
                let may_take_new = last.is_some() && !self.subflows[i].backup();
                match (self.send.peek().filter(|s| !s.retrans && may_take_new), last) {
                    (Some(s), _) => s,
                    (None, Some(d)) => Seg { off: d.off, len: u64::from(d.len), fin: d.fin, mask: 0, retrans: true },
                    (None, None) => return None,
                }
            }
        };
        let d = DataRef { off: s.off, len: s.len.min(u64::from(u32::MAX)) as u32, fin: s.fin };
        Some((d, s.retrans, !s.retrans))
    }
}

impl Connection {
    // 0-RTT data, the client's side of what goes early (`early::Early` keeps its state).

    /// Queues bytes that may go before the handshake completes, as 0-RTT data (PROTOCOL.md
    /// §4.9), on a connection opened with `Endpoint::connect_resuming`. Early data can be
    /// replayed by an attacker who captured it (the server refuses a replay it sees, §4.9):
    /// write early only what is safe to act on twice, such as a request without side
    /// effects. Only a prefix of the stream goes early: after a plain `write`, or once the
    /// handshake is done, this is a plain `write`. Whatever the server did not take is sent
    /// again under the 1-RTT keys; nothing is lost and no error follows.
    pub fn write_early(&mut self, data: &[u8]) -> Result<usize, WriteError> {
        let open = self.side == Side::Client && self.state == State::Initial && self.early.prefix_open();
        let n = self.write_stream(data)?;
        if open && self.session.hs.as_ref().is_some_and(|hs| hs.offers_early()) {
            self.early.extend_prefix(self.send.end());
            // The server's window is not known before its HANDSHAKE; it holds the early
            // data's most (§4.9). Its own window replaces this at the HANDSHAKE.
            if self.send.peer_window() < MAX_EARLY_DATA {
                self.send.set_peer_window(MAX_EARLY_DATA);
            }
            if let Some(hs) = self.session.hs.as_mut() {
                hs.want_early(&self.config);
            }
        }
        Ok(n)
    }

    /// Server: how many of the stream's first bytes came as 0-RTT data (replayable by
    /// whoever captured them, PROTOCOL.md §4.9; the server refused any replay it saw).
    /// Client: how many of them went in EARLY packets to a server that takes early data (0 if
    /// it did not; those of them lost were sent again after the handshake).
    pub fn early_data(&self) -> u64 {
        self.early.bytes(self.side)
    }
}
