//! What the connection tells a subflow about its life beyond its frames and its losses: how
//! it was opened, what arrived on it, what left on it, what the oracle and the path manager
//! decided about it. Each method says what happened; the subflow changes its own fields.

use super::pmtu::Pmtu;
use super::{DataRef, Subflow, SubflowState};
use crate::wire::packet::DEFAULT_MAX_DATAGRAM;
use crate::wire::Cid;
use crate::{PathId, Time};
use std::net::SocketAddr;

impl Subflow {
    /// A new record's local address id and path MTU search (up to `max` bytes).
    pub fn set_up(&mut self, local_addr_id: u8, max: usize, now: Time) {
        self.local_addr_id = local_addr_id;
        self.pmtu = Pmtu::new(DEFAULT_MAX_DATAGRAM, max, now);
    }

    /// The peer's transport parameters bound the datagrams to `max` bytes.
    pub fn set_max_datagram(&mut self, max: usize) {
        self.pmtu.set_max(max);
    }

    /// The client's subflow 0: it sends the INITIAL to an address it chose, so that address
    /// counts as validated (nothing is amplified).
    pub fn opened_by_client(&mut self) {
        self.val.validated = true;
    }

    /// The server's subflow 0, made by the client's CONFIRM: the cookie came back from the
    /// address it was sent to (§4.4), so the address is validated; the HANDSHAKE took packet
    /// number 0 of the subflow under the s2c key (§9.2); HANDSHAKE_DONE goes next.
    pub fn accept_handshake(&mut self, client_cid: Cid, now: Time) {
        self.remote_cid = Some(client_cid);
        self.val.validated = true;
        self.rec.next_pn = 1;
        self.send_handshake_done();
        self.last_original_rx = now;
        self.backup = false;
    }

    /// The server's subflow 0, made at a 0-RTT INITIAL of `rx` bytes answered with `tx`
    /// (PROTOCOL.md §4.9): the address is unproven until the client's CONFIRM, and may
    /// receive three times what it sent until then (§10).
    pub fn await_proof(&mut self, rx: u64, tx: u64) {
        self.val.validated = false;
        self.val.amp_rx = rx;
        self.val.amp_tx = tx;
    }

    /// A CONFIRM under the 1-RTT keys came from the address: only who got our HANDSHAKE there
    /// could send it.
    pub fn prove_address(&mut self) {
        self.val.validated = true;
    }

    /// `len` bytes went to the address outside a packet of the subflow (the HANDSHAKE sent
    /// again by the endpoint): they count against its budget.
    pub fn count_sent_outside(&mut self, len: u64) {
        self.val.amp_tx += len;
    }

    /// The client's subflow 0 got the server's HANDSHAKE: established, with the handshake's
    /// RTT sample if it was not repeated; a PING confirms at once.
    pub fn on_handshake(&mut self, server_cid: Cid, rtt_sample: Option<Time>, now: Time) {
        self.remote_cid = Some(server_cid);
        self.state = SubflowState::Established;
        self.last_original_rx = now;
        self.ping();
        if let Some(rtt) = rtt_sample {
            self.rec.rtt.sample_at(now, rtt, 0);
        }
    }

    /// A peer's JOIN opens this record: its CID, flags and first datagram (`len` bytes, the
    /// anti-amplification budget starts there: §10).
    pub fn on_join_received(&mut self, cid: Cid, backup: bool, addr_id: u8, len: u64) {
        self.remote_cid = Some(cid);
        self.backup = backup;
        self.remote_addr_id = addr_id;
        self.val.validated = false;
        self.val.amp_rx = len;
        self.counters.packets_received = 1;
        self.counters.bytes_received = len;
    }

    /// The peer's CID, from an answer refused (a bad HMAC): the reset goes to it.
    pub fn answer_to(&mut self, cid: Cid) {
        self.remote_cid = Some(cid);
    }

    /// This join replaces a subflow of its path that went silent (see `Paths::rejoin`).
    pub fn mark_rejoin(&mut self) {
        self.rejoin = true;
    }

    /// The path manager opened it for a failover (closed again at the fail-back).
    pub fn mark_failover(&mut self) {
        self.failover = true;
    }

    /// Subflow 0, before its handshake is answered: the answer came on local path `path` (the
    /// INITIAL went there too, PROTOCOL.md §4.10), so the subflow lives there.
    pub fn handshake_on(&mut self, path: PathId) {
        self.local_path = path;
    }

    /// The endpoint renamed our CID before the subflow sent anything.
    pub fn rename_local_cid(&mut self, fresh: Cid) {
        self.local_cid = fresh;
    }

    /// An authenticated packet, the newest, came from `remote` on `path` (NAT rebinding, §7):
    /// the subflow moves there, and `challenge` validates the new address.
    pub fn migrate(&mut self, remote: SocketAddr, path: PathId, len: u64, challenge: [u8; 8]) {
        self.remote = remote;
        self.local_path = path;
        self.val.restart(len, challenge);
    }

    /// A datagram of `len` bytes was accepted on it.
    pub fn count_received(&mut self, len: u64) {
        self.counters.packets_received += 1;
        self.counters.bytes_received += len;
        self.val.amp_rx += len;
    }

    /// The peer's MP_PRIO.
    pub fn on_peer_prio(&mut self, backup: bool) {
        self.backup = backup;
    }

    /// The peer's RTO, in ms (MultiMob's RTO option).
    pub fn on_peer_rto(&mut self, rto_ms: u64) {
        self.peer_rto_ms = Some(rto_ms);
    }

    /// New data, or a new DATA_ACK, arrived on it: an original reception, for the
    /// last-received scheduler.
    pub fn on_original_data(&mut self, now: Time) {
        self.last_original_rx = now;
    }

    /// New stream data arrived on it.
    pub fn on_new_data(&mut self, now: Time) {
        self.last_original_rx = now;
        self.last_data_rx = now;
    }

    /// `bytes` stream bytes arrived on it that were received already.
    pub fn on_duplicate_data(&mut self, bytes: u64) {
        self.counters.data_bytes_duplicate += bytes;
    }

    /// An ACK is owed at once.
    pub fn ack_now(&mut self) {
        self.acks.immediate = true;
    }

    /// Its keep-alive timer fired: a PING.
    pub fn keep_alive(&mut self, now: Time) {
        self.ping();
        self.last_activity = now;
    }

    /// The redundant scheduler puts a copy of `d` on it too.
    pub fn send_copy(&mut self, d: DataRef) {
        self.copy = Some(d);
        self.spare = false;
    }

    /// A repair just sent here goes again at once.
    pub fn send_spare(&mut self, d: DataRef) {
        self.copy = Some(d);
        self.spare = true;
        self.spared = (d.off, d.off + u64::from(d.len));
    }

    /// The pending copy has nothing left to carry (the peer acknowledged its data).
    pub fn drop_copy(&mut self) {
        self.copy = None;
    }

    /// A packet was about to leave, but held nothing worth sending: no ACK is owed any more,
    /// a pending copy has nothing left to carry (the peer acknowledged its data meanwhile),
    /// and a pending probe goes as a PING.
    pub fn nothing_to_send(&mut self) {
        self.acks.clear();
        self.copy = None;
        if self.rec.probe.is_some() {
            self.ping();
        }
    }

    /// A packet left without the scheduler's data (`scheduled`: with it): a pending copy went
    /// in it, or else a pending probe (a copy goes first, and the probe in the next packet).
    pub fn on_unscheduled_sent(&mut self, scheduled: bool) {
        if !scheduled && self.copy.take().is_none() {
            self.rec.probe = None;
        }
    }

    /// The ring of packets in flight takes room for `n` at once (see `Connection::on_built`).
    pub fn reserve_flight(&mut self, n: usize) {
        self.rec.sent.reserve(n);
    }

    /// `len` stream bytes left on it; `retransmitted`: its own retransmission.
    pub fn on_data_sent(&mut self, now: Time, len: u32, retransmitted: bool) {
        self.last_data_tx = now;
        self.counters.data_bytes_sent += u64::from(len);
        if retransmitted {
            self.counters.bytes_retransmitted += u64::from(len);
            self.counters.packets_retransmitted += 1;
        }
    }

    /// `bytes` first sent on another subflow were sent here too.
    pub fn count_reinjected(&mut self, bytes: u64) {
        self.counters.bytes_reinjected += bytes;
    }

    /// The connection's buffers are trimmed: the flight's ring gives its room back, and the
    /// ACK ranges shrink to the last one (packets missing that long were given up by the peer
    /// long ago: a late copy is dropped as a duplicate).
    pub fn trim(&mut self) {
        self.rec.sent.shrink();
        self.acks.received.keep_last();
        self.acks.received.shrink();
    }

    /// An oracle's verdict, or a path that went silent: potentially failed until the next
    /// new acknowledgement. True if it was not already.
    pub fn mark_potentially_failed(&mut self) -> bool {
        !std::mem::replace(&mut self.rec.pf, true)
    }

    /// The oracle's flags (MultiMob §III-B).
    pub fn set_oracle_flags(&mut self, was_bad: bool, high_rto: bool) {
        self.was_bad = was_bad;
        self.high_rto = high_rto;
    }

    /// The counters the oracle has not seen yet (packets sent, lost, retransmitted, received),
    /// now
    /// reported.
    pub fn oracle_sample(&mut self) -> [u64; 4] {
        let c = &self.counters;
        let now = [c.packets_sent, c.oracle_losses, c.packets_retransmitted, c.packets_received];
        let d = std::array::from_fn(|k| now[k] - self.reported[k]);
        self.reported = now;
        d
    }

    /// `multimob`: an unanswered tail loss probe fails the path over at `at`, unless a new
    /// acknowledgement comes first (`None`: it came, or the check ran).
    pub fn set_tlp_check(&mut self, at: Option<Time>) {
        self.tlp_check = at;
    }
}
