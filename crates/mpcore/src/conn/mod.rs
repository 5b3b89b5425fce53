//! One multipath connection: the first handshake (client side), joins, the data stream with
//! DSN reassembly, DATA_ACK and flow control, per-subflow loss recovery and congestion control,
//! scheduling, reinjection and closing. No I/O, no clock: every call carries `now`.

pub mod cc;
mod stream;
pub mod subflow;

use crate::config::{Config, PathManager};
use crate::crypto::{
    self, ct_eq, join_ack_hmac, join_synack_hmac, transcript_hash, KeyShare, Master, PacketKey, Suite,
};
use crate::endpoint::Drops;
use crate::wire::frame::{reason, AddAddr, FastJoinIn, FastJoinOut, FastJoinReply, MpJoin, MpJoinSynAck, ReplyValue};
use crate::wire::packet::{self, decode_pn, Confirm, Handshake, Initial, Join, Short};
use crate::wire::{Ack, Cid, Dss, Frame, Frames, Header, Packet, TransportParams, Writer};
use crate::{LocalPath, PathId, Time, Transmit};
use cc::{Cc, Coupling};
use fastjoin::{Refusal, Verdict};
use scheduler::{AnyScheduler, Flags, Pick, Segment, SubflowInfo};
use std::collections::VecDeque;
use std::net::SocketAddr;
use stream::{RecvBuf, SendBuf};
use subflow::{ctrl, DataRef, JoinKind, Probe, Rtt, SentPacket, Subflow, SubflowState};

pub use subflow::SubflowCounters;

/// Which end of the first handshake this endpoint was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

/// Why a connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// Both DATA_FINs sent and acknowledged.
    Graceful,
    /// This application aborted (MP_FASTCLOSE sent).
    Aborted,
    /// The peer sent MP_FASTCLOSE.
    PeerAborted,
    /// Nothing authenticated arrived for the idle timeout.
    IdleTimeout,
    /// The first handshake got no answer.
    HandshakeTimeout,
    /// The server speaks none of our versions.
    VersionMismatch,
    /// Our token collided with another connection's (§4.3); connect again.
    TokenCollision,
    /// Every subflow closed.
    NoSubflow,
}

/// Something the application may want to know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The first handshake completed.
    Connected,
    SubflowEstablished {
        id: u32,
        path: PathId,
        backup: bool,
    },
    /// The subflow's retransmission timer expired: potentially failed.
    SubflowFailed {
        id: u32,
    },
    /// A potentially failed subflow got a new acknowledgement.
    SubflowRecovered {
        id: u32,
    },
    SubflowClosed {
        id: u32,
        reason: u8,
    },
    /// The peer's address on a subflow changed (NAT rebinding).
    SubflowMigrated {
        id: u32,
        remote: SocketAddr,
    },
    /// The peer announced an address (ADD_ADDR with a valid HMAC).
    AddressAnnounced {
        addr_id: u8,
        addr: SocketAddr,
    },
    /// New bytes can be read.
    Readable,
    /// The peer's DATA_FIN arrived in order: after the bytes still buffered, `read` returns 0.
    Finished,
    Closed {
        reason: CloseReason,
    },
}

/// Why a write failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteError {
    /// The send buffer is full; write again after data is acknowledged.
    Blocked,
    /// `close` was called: no more data may be written.
    Finished,
    Closed(CloseReason),
}

/// Why a read returned nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// Nothing to read yet.
    Blocked,
    Closed(CloseReason),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Client: INITIAL sent, waiting for HANDSHAKE (or RETRY).
    Initial,
    /// Client: keys agreed, CONFIRM packets sent, no short packet from the server yet.
    Confirm,
    Established,
    /// Closed; still answering for a drain period (until `drain_until`).
    Closed(CloseReason),
}

struct ClientHs {
    share: Option<KeyShare>,
    odcid: Cid,
    /// The INITIAL datagram, repeated unchanged (§4.1).
    initial: Vec<u8>,
    transcript_len: usize,
    retried: bool,
    cookie: Vec<u8>,
    attempts: u32,
    /// When the last INITIAL went out.
    sent_at: Time,
    next_send: Time,
    send_now: bool,
    server: SocketAddr,
}

struct Keys {
    send: PacketKey,
    recv: PacketKey,
    local_key: u64,
    remote_key: u64,
    /// The fast-join HMAC keys, both orders precomputed.
    fast: fastjoin::Keys,
}

/// Data to be sent again: lost, or left on a subflow that failed or closed.
#[derive(Clone, Copy, Debug)]
struct Chunk {
    dsn: u64,
    len: u32,
    fin: bool,
    /// Subflow indices it was already sent on.
    mask: u64,
}

/// The next piece of the stream to send.
#[derive(Clone, Copy, Debug)]
struct Seg {
    dsn: u64,
    len: u64,
    fin: bool,
    mask: u64,
    retrans: bool,
}

/// Connection-wide counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnCounters {
    pub bytes_written: u64,
    pub bytes_read: u64,
    /// Data bytes acknowledged by DATA_ACK.
    pub bytes_acked: u64,
    pub bytes_reinjected: u64,
    pub reinjections: u64,
    /// Segments not stored because they would have opened more out-of-order ranges than the
    /// receive buffer tracks.
    pub reassembly_refused: u64,
}

/// A snapshot of one subflow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubflowStats {
    pub id: u32,
    pub path: PathId,
    pub remote: SocketAddr,
    pub state: SubflowState,
    pub backup: bool,
    pub potentially_failed: bool,
    pub srtt_us: u64,
    pub rttvar_us: u64,
    pub rto_us: u64,
    pub cwnd: u64,
    pub in_flight: u64,
    pub counters: SubflowCounters,
}

/// A snapshot of a connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnStats {
    pub side: Side,
    pub established: bool,
    pub closed: Option<CloseReason>,
    pub counters: ConnCounters,
    pub subflows: Vec<SubflowStats>,
}

pub struct Connection {
    side: Side,
    state: State,
    config: Config,
    paths: Vec<LocalPath>,
    hs: Option<ClientHs>,
    keys: Option<Keys>,
    local_token: Option<u32>,
    remote_token: u32,
    peer_params: TransportParams,
    subflows: Vec<Subflow>,
    opened: u32,
    send: SendBuf,
    recv: RecvBuf,
    snd_nxt: u64,
    peer_ack: u64,
    peer_wnd: u64,
    retrans: VecDeque<Chunk>,
    local_fin: Option<u64>,
    fin_sent: bool,
    fin_acked: bool,
    peer_fin: Option<u64>,
    peer_fin_subflow: Option<usize>,
    peer_fin_done: bool,
    /// MP_IDLE of the last data received in DSN order (MultiMob §III-B).
    peer_idle: bool,
    highest_rx_end: u64,
    sched: AnyScheduler,
    infos: Vec<SubflowInfo>,
    events: VecDeque<Event>,
    pub(crate) cid_changes: Vec<(Cid, bool)>,
    rr: usize,
    last_rx: Time,
    drain_until: Option<Time>,
    window_update: bool,
    last_window_adv: u64,
    counters: ConnCounters,
    remote_addrs: Vec<(u8, SocketAddr)>,
    announce: Vec<(u8, SocketAddr, bool)>,
    echo: Vec<AddAddr>,
    remove: Vec<u8>,
    fastclose: bool,
    /// FAST_JOIN_OUT replay window over the peer's DSNs (§5.9).
    fj_window: fastjoin::ReplayWindow,
    /// The DATA_ACK edge at which we last sent a FAST_JOIN_OUT: one per edge, since the peer
    /// accepts each DSN once.
    fjo_sent_at: Option<u64>,
    /// `multimob`: the receive idle timer (MultiMob §III-B).
    idle_timer: oracle::IdleTimer,
    /// `multimob`: a netpath this connection found failed, for the endpoint's oracle.
    alert: Option<oracle::Netpath>,
    /// `multimob`: since when a regular subflow has been usable while failover subflows are
    /// open (fail-back after `Config::fail_back_hold`).
    healthy_since: Option<Time>,
    pm_ran: bool,
    drained: bool,
    token_registered: bool,
    /// Per local path: its interface is down (the driver said so with `path_down`).
    path_down: Vec<bool>,
    /// Per local path: `path_down` closed a subflow there, so `path_up` opens one again.
    reopen: Vec<bool>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("side", &self.side)
            .field("state", &self.state)
            .field("subflows", &self.subflows.len())
            .finish_non_exhaustive()
    }
}

fn random_u32() -> u32 {
    let mut b = [0u8; 4];
    // random_fill fails only if the OS has no randomness, which ring treats as fatal too.
    let _ = crypto::random_fill(&mut b);
    u32::from_be_bytes(b)
}

/// A fresh random connection ID.
pub fn random_cid() -> Cid {
    let mut c = [0u8; 8];
    let _ = crypto::random_fill(&mut c);
    Cid(c)
}

impl Connection {
    fn blank(side: Side, now: Time, config: &Config, paths: &[LocalPath], local_dsn: u64, remote_dsn: u64) -> Self {
        let sched = AnyScheduler::from_name(&config.scheduler).unwrap_or(AnyScheduler::LowestRtt(scheduler::LowestRtt));
        Self {
            side,
            state: State::Initial,
            config: config.clone(),
            paths: paths.to_vec(),
            hs: None,
            keys: None,
            local_token: None,
            remote_token: 0,
            peer_params: TransportParams::default(),
            subflows: Vec::with_capacity(config.max_subflows),
            opened: 0,
            send: SendBuf::new(local_dsn, config.send_buffer),
            recv: RecvBuf::new(remote_dsn, config.recv_window),
            snd_nxt: local_dsn,
            peer_ack: local_dsn,
            peer_wnd: 0,
            retrans: VecDeque::with_capacity(64),
            local_fin: None,
            fin_sent: false,
            fin_acked: false,
            peer_fin: None,
            peer_fin_subflow: None,
            peer_fin_done: false,
            peer_idle: false,
            highest_rx_end: remote_dsn,
            sched,
            infos: Vec::with_capacity(scheduler::MAX_SUBFLOWS),
            events: VecDeque::new(),
            cid_changes: Vec::new(),
            rr: 0,
            last_rx: now,
            drain_until: None,
            window_update: false,
            last_window_adv: config.recv_window as u64,
            counters: ConnCounters::default(),
            remote_addrs: Vec::new(),
            announce: Vec::new(),
            echo: Vec::new(),
            remove: Vec::new(),
            fastclose: false,
            fj_window: fastjoin::ReplayWindow::new(remote_dsn),
            fjo_sent_at: None,
            idle_timer: oracle::IdleTimer::default(),
            alert: None,
            healthy_since: None,
            pm_ran: false,
            drained: false,
            token_registered: false,
            path_down: vec![false; paths.len()],
            reopen: vec![false; paths.len()],
        }
    }

    fn new_subflow(
        &self,
        now: Time,
        id: u32,
        state: SubflowState,
        path: PathId,
        remote: SocketAddr,
        cid: Cid,
    ) -> Subflow {
        let rtt = Rtt::new(self.config.initial_rto, self.config.min_rto, self.config.max_rto);
        let cc = Cc::new(self.config.congestion, self.mss() as u64);
        let opener = match self.side {
            Side::Client => id & 0x8000_0000 == 0,
            Side::Server => id & 0x8000_0000 != 0,
        };
        let backup = self.paths.get(usize::from(path.0)).is_some_and(|p| p.backup);
        let mut sf = Subflow::new(id, state, path, remote, cid, opener, backup, rtt, cc, now);
        // Flow control bounds the data in flight by the peer's window (and ours, before its
        // parameters are known): room for one record per 512 bytes of it, so that the record
        // queue does not grow (allocate) in the middle of a transfer.
        let window = self.config.recv_window.max(self.peer_params.initial_window as usize);
        sf.sent.reserve((window / 512 + 64).min(4096));
        sf
    }

    /// The client's side of a new connection: builds the INITIAL (sent by `poll_transmit`).
    pub(crate) fn new_client(
        now: Time,
        config: &Config,
        paths: &[LocalPath],
        path: PathId,
        remote: SocketAddr,
        local_cid: Cid,
    ) -> Result<Self, crypto::CryptoError> {
        let mut c = Self::blank(Side::Client, now, config, paths, 0, 0);
        let sf = c.new_subflow(now, 0, SubflowState::JoinSent, path, remote, local_cid);
        c.subflows.push(sf);
        c.subflows[0].validated = true;
        c.opened = 1;
        c.cid_changes.push((local_cid, true));
        let share = KeyShare::generate()?;
        let mut hs = ClientHs {
            share: None,
            odcid: random_cid(),
            initial: Vec::new(),
            transcript_len: 0,
            retried: false,
            cookie: Vec::new(),
            attempts: 0,
            sent_at: now,
            next_send: now,
            send_now: true,
            server: remote,
        };
        c.build_initial(&mut hs, &share, &[]);
        hs.share = Some(share);
        c.hs = Some(hs);
        Ok(c)
    }

    fn build_initial(&self, hs: &mut ClientHs, share: &KeyShare, token: &[u8]) {
        let mut pbuf = [0u8; 128];
        let mut pw = Writer::new(&mut pbuf);
        let plen = self.config.transport_params().emit(&mut pw).unwrap_or(0);
        let size = self.config.max_datagram_size.max(packet::MIN_INITIAL_SIZE);
        let mut buf = vec![0u8; size];
        let mut w = Writer::new(&mut buf);
        let init = Initial {
            version: packet::VERSION_1,
            dcid: hs.odcid,
            scid: self.subflows[0].local_cid,
            token,
            key_share: *share.public(),
            params: &pbuf[..plen],
        };
        hs.transcript_len = init.emit(&mut w).unwrap_or(0);
        // The rest of the datagram is zero padding (§3.1: INITIALs are padded to 1200 bytes).
        buf.truncate(size);
        hs.initial = buf;
    }

    /// The server's side, created from a CONFIRM whose cookie opened (§4.4).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new_server(
        now: Time,
        config: &Config,
        paths: &[LocalPath],
        path: PathId,
        remote: SocketAddr,
        master: &Master,
        suite: Suite,
        client_params: TransportParams,
        client_cid: Cid,
        server_cid: Cid,
    ) -> Self {
        let mut c = Self::blank(Side::Server, now, config, paths, 0, 0);
        c.install_keys(master.secrets(suite));
        c.set_peer_params(client_params);
        let mut sf = c.new_subflow(now, 0, SubflowState::Established, path, remote, server_cid);
        sf.remote_cid = Some(client_cid);
        // The cookie came back from the address it was sent to (§4.4): validated.
        sf.validated = true;
        // The HANDSHAKE took packet number 0 of subflow 0 under the s2c key (§9.2).
        sf.next_pn = 1;
        sf.ctrl_pending |= ctrl::HS_DONE;
        sf.last_original_rx = now;
        sf.backup = false;
        c.subflows.push(sf);
        c.cid_changes.push((server_cid, true));
        c.state = State::Established;
        c.events.push_back(Event::Connected);
        c
    }

    /// Takes this side's keys and tokens from the connection's secrets and starts both
    /// directions of the stream at IDSN + 1 (§4.3). Bytes (and a DATA_FIN) written before the
    /// keys were known move to their real DSNs.
    fn install_keys(&mut self, s: crypto::Secrets) {
        let (send, recv, local_key, remote_key) = match self.side {
            Side::Client => (s.c2s, s.s2c, s.key_client, s.key_server),
            Side::Server => (s.s2c, s.c2s, s.key_server, s.key_client),
        };
        let fast = fastjoin::Keys::new(local_key, remote_key);
        self.keys = Some(Keys { send, recv, local_key, remote_key, fast });
        self.local_token = Some(crypto::token(local_key));
        self.remote_token = crypto::token(remote_key);
        let local_dsn = crypto::idsn(local_key).wrapping_add(1);
        let remote_dsn = crypto::idsn(remote_key).wrapping_add(1);
        let old = std::mem::replace(&mut self.send, SendBuf::new(local_dsn, self.config.send_buffer));
        let mut early = vec![0u8; old.len()];
        if old.copy_out(old.una(), &mut early) {
            self.send.write(&early);
        }
        if let Some(f) = self.local_fin {
            self.local_fin = Some(local_dsn.wrapping_add(f.wrapping_sub(old.una())));
        }
        self.snd_nxt = local_dsn;
        self.peer_ack = local_dsn;
        self.recv = RecvBuf::new(remote_dsn, self.config.recv_window);
        self.highest_rx_end = remote_dsn;
        self.fj_window = fastjoin::ReplayWindow::new(remote_dsn);
    }

    fn set_peer_params(&mut self, p: TransportParams) {
        self.peer_params = p;
        self.peer_wnd = p.initial_window;
    }

    fn mss(&self) -> usize {
        self.config.max_datagram_size.min(self.peer_params.max_datagram_size as usize)
    }

    pub fn side(&self) -> Side {
        self.side
    }

    pub fn is_established(&self) -> bool {
        self.state == State::Established
    }

    pub fn is_closed(&self) -> bool {
        matches!(self.state, State::Closed(_))
    }

    /// True once the connection may be forgotten (closed and drained).
    pub fn is_drained(&self) -> bool {
        self.drained
    }

    pub fn local_token(&self) -> Option<u32> {
        self.local_token
    }

    pub(crate) fn take_token_registration(&mut self) -> Option<u32> {
        if self.token_registered {
            return None;
        }
        let t = self.local_token?;
        self.token_registered = true;
        Some(t)
    }

    /// The MP_IDLE state of the last in-order data received (MultiMob §III-B).
    pub fn peer_idle(&self) -> bool {
        self.peer_idle
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Queues an event for the application and logs it (`tracing`, target `mpcore`).
    fn emit(&mut self, e: Event) {
        // One `Readable` stands for any number of packets that arrived since the application
        // last looked: the queue does not grow with the packet rate.
        if e == Event::Readable && self.events.back() == Some(&Event::Readable) {
            return;
        }
        tracing::debug!(side = ?self.side, event = ?e, "connection event");
        self.events.push_back(e);
    }

    // ------------------------------------------------------------------ application calls

    /// Queues bytes for sending; returns how many were taken.
    pub fn write(&mut self, data: &[u8]) -> Result<usize, WriteError> {
        if let State::Closed(r) = self.state {
            return Err(WriteError::Closed(r));
        }
        if self.local_fin.is_some() {
            return Err(WriteError::Finished);
        }
        let n = self.send.write(data);
        if n == 0 && !data.is_empty() {
            return Err(WriteError::Blocked);
        }
        self.counters.bytes_written += n as u64;
        Ok(n)
    }

    /// Room in the send buffer.
    pub fn write_room(&self) -> usize {
        self.send.room()
    }

    /// Bytes written and not yet acknowledged at data level.
    pub fn unacked(&self) -> usize {
        self.send.len()
    }

    /// Reads received bytes in order. `Ok(0)` means the peer finished (DATA_FIN) and
    /// everything was read.
    pub fn read(&mut self, out: &mut [u8]) -> Result<usize, ReadError> {
        let n = self.recv.read(out);
        if n > 0 {
            self.counters.bytes_read += n as u64;
            // Advertise the reopened window once a quarter of it is free again.
            let wnd = self.recv.window();
            if wnd >= self.last_window_adv + self.config.recv_window as u64 / 4 {
                self.window_update = true;
            }
            return Ok(n);
        }
        if self.peer_fin_done {
            return Ok(0);
        }
        match self.state {
            State::Closed(r) if r != CloseReason::Graceful => Err(ReadError::Closed(r)),
            _ => Err(ReadError::Blocked),
        }
    }

    /// Bytes ready to read.
    pub fn readable(&self) -> usize {
        self.recv.readable()
    }

    /// Ends the stream in this direction (DATA_FIN after the bytes written so far).
    pub fn close(&mut self) {
        if self.local_fin.is_none() && !self.is_closed() {
            self.local_fin = Some(self.send.end());
        }
    }

    /// Aborts the connection: MP_FASTCLOSE on every subflow, then nothing more.
    pub fn abort(&mut self, now: Time) {
        if self.is_closed() {
            return;
        }
        if self.keys.is_some() {
            self.fastclose = true;
            for sf in self.subflows.iter_mut().filter(|s| s.is_open() && s.remote_cid.is_some()) {
                sf.ctrl_pending |= ctrl::FASTCLOSE;
            }
        }
        self.enter_closed(now, CloseReason::Aborted);
    }

    /// Ends the connection at once (no drain period).
    pub(crate) fn fail(&mut self, now: Time, reason: CloseReason) {
        self.enter_closed(now, reason);
        self.drained = true;
    }

    fn enter_closed(&mut self, now: Time, reason: CloseReason) {
        if self.is_closed() {
            return;
        }
        self.state = State::Closed(reason);
        let rto = self.subflows.iter().map(|s| s.rtt.rto()).max().unwrap_or(self.config.initial_rto);
        self.drain_until = Some(now + 3 * rto);
        self.emit(Event::Closed { reason });
    }

    /// Opens an additional subflow from `path` to `remote` (MP_JOIN). Returns its number.
    pub fn open_subflow(&mut self, now: Time, path: PathId, remote: SocketAddr, backup: bool) -> Option<u32> {
        if self.state != State::Established || self.keys.is_none() {
            return None;
        }
        if self.subflows.iter().filter(|s| s.is_open()).count() >= self.max_subflows()
            || self.subflows.len() >= scheduler::MAX_SUBFLOWS
        {
            return None;
        }
        let id = match self.side {
            Side::Client => self.opened,
            Side::Server => self.opened | 0x8000_0000,
        };
        self.opened += 1;
        let cid = random_cid();
        let mut sf = self.new_subflow(now, id, SubflowState::JoinSent, path, remote, cid);
        sf.backup = backup;
        sf.nonce_local = random_u32();
        // The JOIN is sent by a packet to an address that has not answered yet: the initiator
        // may send (it is not amplifying anything), so its own subflow counts as validated.
        sf.validated = true;
        sf.ctrl_pending |= ctrl::JOIN;
        if self.fast_join_negotiated() {
            sf.join = JoinKind::FastInitiator;
        }
        self.subflows.push(sf);
        self.cid_changes.push((cid, true));
        Some(id)
    }

    /// Both ends offered FAST_JOIN (MultiMob), so our joins are fast ones.
    fn fast_join_negotiated(&self) -> bool {
        self.config.fast_join && self.peer_params.fast_join
    }

    fn max_subflows(&self) -> usize {
        self.config.max_subflows.min(self.peer_params.max_subflows.max(1) as usize)
    }

    /// Closes one subflow (SUBFLOW_RESET with `reason`); its data is reinjected elsewhere.
    pub fn close_subflow(&mut self, now: Time, id: u32, reason: u8) -> bool {
        let Some(i) = self.subflows.iter().position(|s| s.id == id && s.is_open()) else { return false };
        self.subflows[i].reset_reason = reason;
        self.subflows[i].ctrl_pending = ctrl::RESET;
        self.shut_subflow(now, i, reason);
        true
    }

    /// Changes the backup flag of a subflow and tells the peer (MP_PRIO).
    pub fn set_backup(&mut self, id: u32, backup: bool) -> bool {
        let Some(sf) = self.subflows.iter_mut().find(|s| s.id == id && s.is_open()) else { return false };
        sf.backup = backup;
        sf.ctrl_pending |= ctrl::PRIO;
        true
    }

    /// Announces a local path's address to the peer (ADD_ADDR).
    pub fn announce_address(&mut self, path: PathId) -> bool {
        let Some(lp) = self.paths.get(usize::from(path.0)) else { return false };
        if self.announce.iter().any(|a| a.0 == path.0) {
            return false;
        }
        self.announce.push((path.0, lp.addr, false));
        self.pend_on_any(ctrl::ADD_ADDR);
        true
    }

    /// Withdraws a local path's address (REMOVE_ADDR) and closes our subflows on it.
    pub fn remove_address(&mut self, now: Time, path: PathId) {
        self.remove.push(path.0);
        for i in 0..self.subflows.len() {
            if self.subflows[i].local_path == path && self.subflows[i].is_open() {
                self.shut_subflow(now, i, crate::wire::frame::reason::UNSPECIFIED);
            }
        }
        self.pend_on_any(ctrl::REMOVE_ADDR);
    }

    /// The addresses the peer announced.
    pub fn remote_addresses(&self) -> &[(u8, SocketAddr)] {
        &self.remote_addrs
    }

    /// Asks the peer for its RTO on subflow `id` (MultiMob RTO option).
    pub fn request_peer_rto(&mut self, id: u32) {
        if let Some(sf) = self.subflows.iter_mut().find(|s| s.id == id && s.is_open()) {
            sf.ctrl_pending |= ctrl::RTO_REQ;
        }
    }

    /// Sets the oracle's flags on a subflow.
    pub fn set_subflow_flags(&mut self, id: u32, was_bad: bool, high_rto: bool) {
        if let Some(sf) = self.subflows.iter_mut().find(|s| s.id == id) {
            sf.was_bad = was_bad;
            sf.high_rto = high_rto;
        }
    }

    /// Marks a subflow potentially failed (an oracle's verdict), reinjecting its data.
    pub fn mark_potentially_failed(&mut self, now: Time, id: u32) {
        if let Some(i) = self.subflows.iter().position(|s| s.id == id && s.is_open()) {
            if !self.subflows[i].pf {
                self.subflows[i].pf = true;
                self.emit(Event::SubflowFailed { id });
            }
            self.reinject_in_flight(now, i, false);
        }
    }

    fn pend_on_any(&mut self, bit: u16) {
        let pick = self
            .subflows
            .iter()
            .position(|s| s.established() && !s.pf && !s.backup)
            .or_else(|| self.subflows.iter().position(|s| s.established()));
        if let Some(i) = pick {
            self.subflows[i].ctrl_pending |= bit;
        }
    }

    pub fn stats(&self) -> ConnStats {
        ConnStats {
            side: self.side,
            established: self.state == State::Established,
            closed: match self.state {
                State::Closed(r) => Some(r),
                _ => None,
            },
            counters: self.counters,
            subflows: self
                .subflows
                .iter()
                .map(|s| SubflowStats {
                    id: s.id,
                    path: s.local_path,
                    remote: s.remote,
                    state: s.state,
                    backup: s.backup,
                    potentially_failed: s.pf,
                    srtt_us: s.rtt.srtt,
                    rttvar_us: s.rtt.rttvar,
                    rto_us: s.rtt.rto(),
                    cwnd: s.cc.cwnd,
                    in_flight: s.in_flight,
                    counters: s.counters,
                })
                .collect(),
        }
    }

    // ------------------------------------------------------------------ receiving

    /// RETRY for the client (§4.5): checks the integrity tag, then repeats INITIAL with the token.
    pub(crate) fn handle_retry(
        &mut self,
        now: Time,
        remote: SocketAddr,
        p: &Packet<'_>,
        dgram: &[u8],
        drops: &mut Drops,
    ) {
        let Header::Retry(r) = p.header else { return };
        let Some(hs) = self.hs.as_mut() else { return };
        if self.state != State::Initial || hs.retried || remote != hs.server {
            drops.unexpected += 1;
            return;
        }
        let tag = crypto::retry_integrity_tag(&hs.odcid.0, &dgram[..p.header_len]);
        if !ct_eq(&tag, &r.tag) {
            drops.bad_retry += 1;
            return;
        }
        let Some(mut hs) = self.hs.take() else { return };
        hs.retried = true;
        if let Some(share) = hs.share.take() {
            self.build_initial(&mut hs, &share, r.token);
            hs.share = Some(share);
        }
        hs.send_now = true;
        hs.next_send = now;
        self.hs = Some(hs);
    }

    /// A HANDSHAKE that failed (a forgery, or a low-order key share) spent our key share: the
    /// attempt goes on with a fresh share and a new INITIAL without token.
    fn restart_attempt(&mut self) {
        if let (Ok(fresh), Some(mut hs)) = (KeyShare::generate(), self.hs.take()) {
            self.build_initial(&mut hs, &fresh, &[]);
            hs.retried = false;
            hs.share = Some(fresh);
            hs.send_now = true;
            self.hs = Some(hs);
        }
    }

    /// HANDSHAKE for the client (§4.1-4.2): agree keys, open the sealed params and cookie.
    pub(crate) fn handle_handshake(
        &mut self,
        now: Time,
        remote: SocketAddr,
        p: &Packet<'_>,
        scratch: &mut [u8],
        drops: &mut Drops,
    ) {
        let Header::Handshake(h) = p.header else { return };
        if self.state != State::Initial {
            drops.unexpected += 1;
            return;
        }
        let Some(hs) = self.hs.as_mut() else { return };
        if remote != hs.server {
            drops.unexpected += 1;
            return;
        }
        let Ok(suite) = Suite::from_id(h.suite) else {
            drops.malformed += 1;
            return;
        };
        if !self.config.suites.contains(&suite) {
            drops.malformed += 1;
            return;
        }
        let th = transcript_hash(&hs.initial[..hs.transcript_len], &scratch[..Handshake::TRANSCRIPT_LEN]);
        // The key share is consumed by the agreement; keep a copy of nothing else.
        let Some(share) = hs.share.take() else { return };
        let Ok(shared) = share.agree(&h.key_share) else {
            drops.decrypt_failed += 1;
            self.restart_attempt();
            return;
        };
        let s = Master::derive(&shared, &th).secrets(suite);
        let Ok(plain) = s.s2c.open(0, u64::from(h.pn), scratch, p.header_len) else {
            // Not from the server that holds our INITIAL's transcript.
            drops.decrypt_failed += 1;
            self.restart_attempt();
            return;
        };
        let mut params = None;
        let mut cookie: &[u8] = &[];
        if Frames::validate(plain).is_err() {
            drops.malformed += 1;
            return;
        }
        for f in Frames::new(plain).flatten() {
            match f {
                Frame::TransportParams(tp) => params = TransportParams::parse(tp).ok(),
                Frame::Cookie(c) => cookie = c,
                _ => {}
            }
        }
        let (Some(params), false) = (params, cookie.is_empty()) else {
            drops.malformed += 1;
            return;
        };
        let Some(hs) = self.hs.as_mut() else { return };
        hs.cookie = cookie.to_vec();
        self.install_keys(s);
        self.set_peer_params(params);
        let sf = &mut self.subflows[0];
        sf.remote_cid = Some(h.scid);
        sf.state = SubflowState::Established;
        sf.last_original_rx = now;
        sf.ctrl_pending |= ctrl::PING;
        // The HANDSHAKE's round trip is the first RTT sample, if the INITIAL was not repeated
        // (Karn's rule: an answer to which copy is unknown).
        if let Some(hs) = self.hs.as_ref().filter(|hs| hs.attempts == 1) {
            sf.rtt.update(now.saturating_sub(hs.sent_at), 0);
        }
        self.state = State::Confirm;
        self.last_rx = now;
    }

    /// A sealed packet for this connection: a short header, a CONFIRM (server, subflow 0) or a
    /// JOIN. `scratch` holds a copy of the datagram that may be modified in place.
    pub(crate) fn handle_sealed(
        &mut self,
        now: Time,
        path: PathId,
        remote: SocketAddr,
        p: &Packet<'_>,
        scratch: &mut [u8],
        drops: &mut Drops,
    ) {
        if self.drained || self.keys.is_none() {
            drops.unexpected += 1;
            return;
        }
        let dgram_len = scratch.len() as u64;
        let (i, pn, hl, is_join) = match p.header {
            Header::Short(s) => {
                let Some(i) = self.subflows.iter().position(|sf| sf.local_cid == s.dcid) else {
                    drops.unknown_cid += 1;
                    return;
                };
                let Some(keys) = self.keys.as_ref() else { return };
                let Ok((len, trunc)) = keys.recv.unprotect_short(scratch) else {
                    drops.malformed += 1;
                    return;
                };
                let pn = decode_pn(self.subflows[i].largest_rx, trunc, len);
                (i, pn, Short::PN_OFFSET + len, false)
            }
            Header::Confirm(c) => {
                if self.side != Side::Server {
                    drops.unexpected += 1;
                    return;
                }
                let Some(i) = self.subflows.iter().position(|sf| sf.local_cid == c.dcid) else {
                    drops.unknown_cid += 1;
                    return;
                };
                (i, u64::from(c.pn), p.header_len, false)
            }
            Header::Join(j) => match self.subflows.iter().position(|sf| sf.id == j.subflow) {
                Some(i) => (i, u64::from(j.pn), p.header_len, true),
                None => {
                    self.handle_new_join(now, path, remote, p, scratch, drops);
                    return;
                }
            },
            _ => return,
        };
        let Some(keys) = self.keys.as_ref() else { return };
        let id = self.subflows[i].id;
        let Ok(plain) = keys.recv.open(id, pn, scratch, hl) else {
            drops.decrypt_failed += 1;
            return;
        };
        if Frames::validate(plain).is_err() {
            drops.malformed += 1;
            return;
        }
        // One look at the frames before acting on them: is an ACK owed, and at once?
        // Handshake and join packets are acknowledged at once (as QUIC acknowledges its
        // handshake): their RTT samples then start the estimator without a delayed-ACK bias.
        let (mut eliciting, mut urgent, mut answers_join) = (false, false, false);
        let mut new_ranges = 0usize;
        for f in Frames::new(plain).flatten() {
            if let Frame::Dss(Dss { mapping: Some((dsn, data)), .. }) = f {
                new_ranges += usize::from(self.recv.needs_range(dsn, data.len()));
            }
            eliciting |= f.is_ack_eliciting();
            urgent |= matches!(
                f,
                Frame::HandshakeDone | Frame::MpJoinSynAck(_) | Frame::MpJoinAck { .. } | Frame::FastJoinReply(_)
            );
            answers_join |= matches!(f, Frame::FastJoinReply(_) | Frame::SubflowReset { .. });
        }
        if new_ranges > self.recv.ranges_free() {
            // The reassembly cannot track another hole (far more holes than segments of 256
            // bytes fit in the window). The packet is dropped before it is acknowledged, so the
            // sender declares it lost and sends its data again: a stored segment is never given
            // up, and a refused one is never lost. Data that fills a hole is always taken.
            self.counters.reassembly_refused += 1;
            return;
        }
        let max_ack_delay = self.config.max_ack_delay;
        let sf = &mut self.subflows[i];
        if sf.state == SubflowState::JoinSent && sf.join == JoinKind::FastInitiator && !answers_join {
            // Nothing on a fast join is usable before the reply: not acknowledged, so the peer
            // sends it again (its reply rides in every packet until we acknowledge one).
            drops.unexpected += 1;
            return;
        }
        if !sf.on_packet_received(now, pn, eliciting, max_ack_delay) {
            if is_join {
                drops.replayed_join += 1;
            } else {
                drops.duplicate += 1;
            }
            return;
        }
        if is_join {
            // A repeated JOIN (new packet number) from the same address: answer it again, with
            // the SYNACK, the fast-join reply, or the refusal. Anything else is a replay.
            let same = sf.remote == remote && !sf.local_opener;
            match sf.state {
                SubflowState::JoinReceived if same => sf.ctrl_pending |= ctrl::SYNACK,
                SubflowState::Established if same && sf.reply_unacked => sf.ctrl_pending |= ctrl::FJ_REPLY,
                SubflowState::Closed if same && sf.reset_reason == reason::FAST_JOIN_REJECTED => {
                    sf.ctrl_pending |= ctrl::RESET;
                }
                _ => drops.replayed_join += 1,
            }
            return;
        }
        sf.counters.packets_received += 1;
        sf.counters.bytes_received += dgram_len;
        sf.amp_rx += dgram_len;
        self.last_rx = now;
        // NAT rebinding (§7): an authenticated packet, the newest on the subflow, from a new
        // address moves the subflow there, pending validation of the new address.
        if (sf.remote != remote || sf.local_path != path) && sf.largest_rx == Some(pn) {
            sf.remote = remote;
            sf.local_path = path;
            sf.validated = false;
            sf.amp_rx = dgram_len;
            sf.amp_tx = 0;
            let mut ch = [0u8; 8];
            let _ = crypto::random_fill(&mut ch);
            sf.challenge = Some(ch);
            sf.ctrl_pending |= ctrl::CHALLENGE;
            self.emit(Event::SubflowMigrated { id, remote });
        }
        if self.side == Side::Client && self.state == State::Confirm && matches!(p.header, Header::Short(_)) {
            self.state = State::Established;
            self.hs = None;
            self.emit(Event::Connected);
            self.emit(Event::SubflowEstablished { id: 0, path: self.subflows[0].local_path, backup: false });
        }
        if urgent {
            self.subflows[i].ack_now = true;
        }
        for f in Frames::new(plain).flatten() {
            self.on_frame(now, i, f, drops);
        }
        self.after_receive(now);
    }

    fn after_receive(&mut self, now: Time) {
        if self.state == State::Established && !self.pm_ran && self.side == Side::Client {
            self.pm_ran = true;
            self.run_path_manager(now);
        }
        self.check_fail_back(now);
        self.check_close(now);
    }

    fn run_path_manager(&mut self, now: Time) {
        let backup_all = match self.config.path_manager {
            PathManager::OnDemand => return,
            PathManager::MultiMob => {
                // The idle timer's length needs the server's RTO: ask for it (§5.16 RTO).
                if self.config.mp_idle {
                    self.subflows[0].ctrl_pending |= ctrl::RTO_REQ;
                }
                return;
            }
            PathManager::Backup => true,
            PathManager::Fullmesh => false,
        };
        self.open_other_paths(now, backup_all, false);
    }

    /// The on-demand path manager (break-before-make): once no open subflow is left that is
    /// not potentially failed, the client joins from every local path not in use, towards the
    /// address subflow 0 uses, by fast join where negotiated. It does not wait for an oracle
    /// period: "a client whose primary subflow times out with data pending" opens at once.
    fn open_on_demand(&mut self, now: Time) {
        if self.config.path_manager != PathManager::OnDemand {
            return;
        }
        if self.subflows.iter().any(|s| s.is_open() && !s.pf) {
            return;
        }
        self.open_other_paths(now, false, true);
    }

    /// The client joins from every local path without an open subflow, towards the address
    /// subflow 0 uses (by fast join where negotiated); as backup subflows if `backup_all` or
    /// the path is marked backup, and marked `failover` (closed again on fail-back).
    fn open_other_paths(&mut self, now: Time, backup_all: bool, failover: bool) {
        if self.side != Side::Client || self.is_closed() || self.subflows.is_empty() {
            return;
        }
        let remote = self.subflows[0].remote;
        for p in 0..self.paths.len() {
            let path = PathId(p as u8);
            if self.path_down[p] || self.subflows.iter().any(|s| s.local_path == path && s.is_open()) {
                continue;
            }
            let backup = backup_all || self.paths[p].backup;
            if self.open_subflow(now, path, remote, backup).is_some() {
                if let Some(sf) = self.subflows.last_mut() {
                    sf.failover = failover;
                }
            }
        }
    }

    /// A local path has no open subflow: a failover could open one.
    fn has_unused_path(&self) -> bool {
        (0..self.paths.len())
            .any(|p| !self.path_down[p] && !self.subflows.iter().any(|s| s.local_path.0 == p as u8 && s.is_open()))
    }

    /// The interface of local path `path` went down (the driver watches the links). A client
    /// first joins from every other path that is up and has no subflow (make-before-break
    /// made instant: the link is gone), then closes its subflows on `path`, reinjecting their
    /// data; `path_up` opens them again. Where no other subflow could carry the connection,
    /// and on the server (which cannot open subflows), the subflows stay open, marked
    /// potentially failed, and their retransmission timers probe the path.
    pub fn path_down(&mut self, now: Time, path: PathId) {
        let p = usize::from(path.0);
        if p >= self.paths.len() || self.path_down[p] {
            return;
        }
        self.path_down[p] = true;
        if self.is_closed() {
            return;
        }
        let on_path = |s: &Subflow| s.local_path == path && s.is_open();
        if self.side == Side::Client && self.state == State::Established {
            self.open_other_paths(now, false, true);
        }
        let elsewhere = self.subflows.iter().any(|s| s.is_open() && s.local_path != path);
        for i in 0..self.subflows.len() {
            if !on_path(&self.subflows[i]) {
                continue;
            }
            if elsewhere && self.side == Side::Client {
                self.reopen[p] = true;
                self.shut_subflow(now, i, crate::wire::frame::reason::UNSPECIFIED);
            } else {
                let id = self.subflows[i].id;
                self.mark_potentially_failed(now, id);
            }
        }
        tracing::debug!(side = ?self.side, path = p, "local path down");
    }

    /// The interface of local path `path` is up again: a client opens a subflow there again
    /// if `path_down` closed one (a path that had none, such as an unused cellular backup
    /// under `multimob`, stays unused).
    pub fn path_up(&mut self, now: Time, path: PathId) {
        let p = usize::from(path.0);
        if p >= self.paths.len() || !self.path_down[p] {
            return;
        }
        self.path_down[p] = false;
        if !std::mem::take(&mut self.reopen[p]) || self.side != Side::Client || self.subflows.is_empty() {
            return;
        }
        if !self.subflows.iter().any(|s| s.local_path == path && s.is_open()) {
            let remote = self.subflows[0].remote;
            let backup = self.paths[p].backup;
            self.open_subflow(now, path, remote, backup);
        }
        tracing::debug!(side = ?self.side, path = p, "local path up");
    }

    /// A new connection starts with the endpoint's view of its paths (nothing to close yet).
    pub(crate) fn start_with_path_down(&mut self, path: PathId) {
        if let Some(d) = self.path_down.get_mut(usize::from(path.0)) {
            *d = true;
        }
    }

    /// `multimob`: the regular subflows `on` are declared potentially failed (and was-bad, on
    /// the oracle's or the idle timer's verdict), their data is queued for the other paths,
    /// and those are joined.
    fn fail_over(&mut self, now: Time, was_bad: bool, on: impl Fn(usize, &Subflow) -> bool) {
        for i in 0..self.subflows.len() {
            let sf = &mut self.subflows[i];
            if sf.is_open() && !sf.backup && on(i, sf) {
                sf.was_bad |= was_bad;
                if !sf.pf {
                    sf.pf = true;
                    let id = sf.id;
                    self.emit(Event::SubflowFailed { id });
                }
                // Its data is queued again for the new subflows, but stays in flight here: the
                // retransmission timer keeps probing the path, and the first new ACK tells it
                // works again (the fail-back).
                self.copy_in_flight_for_reinjection(i);
            }
        }
        self.open_other_paths(now, false, true);
        tracing::debug!(side = ?self.side, "multimob failover");
    }

    /// `multimob` fail-back: once a regular subflow has been healthy (usable, not declared bad
    /// by the oracle, no loss or timeout) for the hold time while failover subflows are open,
    /// close those (the radio may sleep) and clear the flags.
    fn check_fail_back(&mut self, now: Time) {
        if self.config.path_manager != PathManager::MultiMob || self.side != Side::Client || self.is_closed() {
            return;
        }
        let failover_open = self.subflows.iter().any(|s| s.failover && s.is_open());
        let healthy = |s: &&Subflow| s.established() && !s.backup && !s.failover && !s.pf && !s.was_bad;
        let last_loss = self.subflows.iter().filter(healthy).map(|s| s.last_loss_at).max();
        let (true, Some(last_loss)) = (failover_open, last_loss) else {
            self.healthy_since = None;
            return;
        };
        let since = *self.healthy_since.get_or_insert(now);
        let since = since.max(last_loss);
        self.healthy_since = Some(since);
        if now < since + self.config.fail_back_hold {
            return;
        }
        self.healthy_since = None;
        for i in 0..self.subflows.len() {
            let sf = &mut self.subflows[i];
            sf.was_bad = false;
            sf.high_rto = false;
            if sf.failover && sf.is_open() {
                let id = sf.id;
                self.close_subflow(now, id, reason::UNSPECIFIED);
            }
        }
        tracing::debug!("multimob fail-back");
    }

    /// The peer's RTO as last reported on any subflow (MultiMob's RTO option).
    fn peer_rto(&self) -> Option<Time> {
        self.subflows.iter().filter_map(|s| s.peer_rto_ms).max().map(|ms| ms * 1000)
    }

    /// `multimob` client: the idle timer runs only while a failover could follow.
    fn idle_timer_applies(&self) -> bool {
        self.config.path_manager == PathManager::MultiMob && self.side == Side::Client && self.has_unused_path()
    }

    /// The netpath of subflow `i`: (local address, remote address, local path).
    fn netpath(&self, i: usize) -> Option<oracle::Netpath> {
        let sf = &self.subflows[i];
        let lp = self.paths.get(usize::from(sf.local_path.0))?;
        Some(oracle::Netpath { src: lp.addr.ip(), dst: sf.remote.ip(), iface: sf.local_path.0 })
    }

    /// A netpath this connection found failed since the last call.
    pub(crate) fn take_alert(&mut self) -> Option<oracle::Netpath> {
        self.alert.take()
    }

    /// What each subflow did since the last call, for the oracle: `(netpath, sample)`.
    pub(crate) fn oracle_samples(&mut self, out: &mut impl FnMut(oracle::Netpath, oracle::Sample)) {
        for i in 0..self.subflows.len() {
            let Some(np) = self.netpath(i).filter(|_| self.subflows[i].is_open()) else { continue };
            let sf = &mut self.subflows[i];
            let c = sf.counters;
            let now = [c.packets_sent, c.packets_lost + c.tlp_count, c.packets_retransmitted];
            let d = [now[0] - sf.reported[0], now[1] - sf.reported[1], now[2] - sf.reported[2]];
            sf.reported = now;
            out(np, oracle::Sample { sent: d[0], lost: d[1], retransmitted: d[2], rto: sf.rtt.rto() });
        }
    }

    /// Applies an oracle decision to this connection's subflows on that netpath.
    pub(crate) fn apply_oracle(&mut self, now: Time, a: oracle::Action) {
        let on = (0..self.subflows.len().min(64))
            .filter(|&k| self.subflows[k].is_open() && self.netpath(k) == Some(a.netpath))
            .fold(0u64, |m, k| m | 1 << k);
        if on == 0 || self.is_closed() {
            return;
        }
        let mut set_flags = |bad: Option<bool>, high_rto: Option<bool>| {
            for (k, sf) in self.subflows.iter_mut().enumerate().take(64) {
                if on & (1 << k) != 0 {
                    sf.was_bad = bad.unwrap_or(sf.was_bad);
                    sf.high_rto = high_rto.unwrap_or(sf.high_rto);
                }
            }
        };
        match a.verdict {
            oracle::Verdict::Bad => self.fail_over(now, true, |k, _| on & (1 << k) != 0),
            oracle::Verdict::HighRto => {
                set_flags(None, Some(true));
                self.open_other_paths(now, false, true);
            }
            oracle::Verdict::Clear => set_flags(Some(false), Some(false)),
        }
    }

    /// A JOIN naming a subflow number not seen before (§3.1, §5.6).
    fn handle_new_join(
        &mut self,
        now: Time,
        path: PathId,
        remote: SocketAddr,
        p: &Packet<'_>,
        scratch: &mut [u8],
        drops: &mut Drops,
    ) {
        let Header::Join(j) = p.header else { return };
        let peer_opener_bit = match self.side {
            Side::Client => 0x8000_0000,
            Side::Server => 0,
        };
        if self.state != State::Established || j.subflow & 0x8000_0000 != peer_opener_bit {
            drops.unexpected += 1;
            return;
        }
        if self.subflows.iter().filter(|s| s.is_open()).count() >= self.config.max_subflows
            || self.subflows.len() >= scheduler::MAX_SUBFLOWS
        {
            drops.refused += 1;
            return;
        }
        let len = scratch.len() as u64;
        let Some(keys) = self.keys.as_ref() else { return };
        let Ok(plain) = keys.recv.open(j.subflow, u64::from(j.pn), scratch, p.header_len) else {
            drops.decrypt_failed += 1;
            return;
        };
        if Frames::validate(plain).is_err() {
            drops.malformed += 1;
            return;
        }
        let mut frames = Frames::new(plain).flatten();
        let local_token = self.local_token.unwrap_or_default();
        // What the first frame asks for: (backup, address id, how, the data to deliver, R-A).
        let (backup, addr_id, join, data, nonce) = match frames.next() {
            Some(Frame::MpJoin(mj)) => (mj.backup, mj.addr_id, JoinKind::Regular, None, mj.nonce),
            // §5.9: the HMAC, then the replay window, where EDSN is our next expected DSN and
            // W our receive buffer (a constant, so that the window's edge only moves forward).
            Some(Frame::FastJoinOut(f)) if self.config.fast_join => {
                let edsn = self.recv.nxt();
                let wnd = self.config.recv_window as u64;
                match fastjoin::accept_out(&keys.fast, local_token, &f, &mut self.fj_window, edsn, wnd) {
                    Verdict::Deliver => (f.backup, f.addr_id, JoinKind::FastOut, Some((f.dsn, f.data)), 0),
                    Verdict::AcceptDropData => (f.backup, f.addr_id, JoinKind::FastOut, None, 0),
                    Verdict::Refuse(Refusal::BadHmac) => {
                        drops.bad_hmac += 1;
                        return;
                    }
                    Verdict::Refuse(Refusal::Replay) => {
                        // Silently: a replay gets no answer.
                        drops.replayed_join += 1;
                        return;
                    }
                    Verdict::Refuse(r) => {
                        drops.refused += 1;
                        let reason =
                            if r == Refusal::NoData { reason::MPTCP_ERROR } else { reason::FAST_JOIN_REJECTED };
                        self.refuse_join(now, path, remote, j.subflow, j.scid, u64::from(j.pn), len, reason);
                        return;
                    }
                }
            }
            Some(Frame::FastJoinIn(f)) if self.config.fast_join => {
                if !fastjoin::accept_in(&keys.fast, local_token, &f) {
                    drops.bad_hmac += 1;
                    return;
                }
                (f.backup, f.addr_id, JoinKind::FastIn, None, 0)
            }
            _ => {
                // Not a join, or a fast join we did not offer.
                drops.refused += 1;
                return;
            }
        };
        let cid = random_cid();
        let fast = join != JoinKind::Regular;
        let state = if fast { SubflowState::Established } else { SubflowState::JoinReceived };
        let mut sf = self.new_subflow(now, j.subflow, state, path, remote, cid);
        sf.remote_cid = Some(j.scid);
        sf.backup = backup;
        sf.remote_addr_id = addr_id;
        sf.join = join;
        sf.validated = false;
        sf.amp_rx = len;
        sf.counters.packets_received = 1;
        sf.counters.bytes_received = len;
        sf.on_packet_received(now, u64::from(j.pn), true, self.config.max_ack_delay);
        if fast {
            // The join is complete on our side: reply, and send at once (§5.9, §5.10). The
            // completed join counts as an original reception for the last-received scheduler.
            sf.ctrl_pending |= ctrl::FJ_REPLY;
            sf.reply_unacked = true;
            sf.ack_now = true;
            sf.last_original_rx = now;
        } else {
            sf.nonce_remote = nonce;
            sf.nonce_local = random_u32();
            sf.ctrl_pending |= ctrl::SYNACK;
        }
        let id = sf.id;
        self.subflows.push(sf);
        self.cid_changes.push((cid, true));
        self.last_rx = now;
        if !fast {
            return;
        }
        let i = self.subflows.len() - 1;
        self.emit(Event::SubflowEstablished { id, path, backup });
        if let Some((dsn, data)) = data {
            let d = Dss { ack: None, mapping: Some((dsn, data)), fin: false, idle: false };
            self.on_dss(now, i, &d, drops);
        }
        // The rest of the JOIN packet: its DATA_ACK, ACK, RTO frames.
        for f in frames {
            self.on_frame(now, i, f, drops);
        }
        // The peer moved to a new path, presumably because the old one went bad: what we
        // have in flight elsewhere is queued again, for the new subflow first.
        for k in 0..i {
            if self.subflows[k].is_open() {
                self.copy_in_flight_for_reinjection(k);
            }
        }
        self.after_receive(now);
    }

    /// Answers a refused fast join with a SUBFLOW_RESET (§5.9), from a closed subflow that
    /// keeps the number taken.
    #[allow(clippy::too_many_arguments)]
    fn refuse_join(
        &mut self,
        now: Time,
        path: PathId,
        remote: SocketAddr,
        id: u32,
        scid: Cid,
        pn: u64,
        len: u64,
        reason: u8,
    ) {
        let mut sf = self.new_subflow(now, id, SubflowState::Closed, path, remote, random_cid());
        sf.remote_cid = Some(scid);
        sf.amp_rx = len;
        sf.reset_reason = reason;
        sf.ctrl_pending = ctrl::RESET;
        sf.on_packet_received(now, pn, true, self.config.max_ack_delay);
        self.subflows.push(sf);
    }

    /// Queues a copy of everything in flight on subflow `k` for reinjection, leaving it in
    /// flight there (it may still arrive).
    fn copy_in_flight_for_reinjection(&mut self, k: usize) {
        for p in 0..self.subflows[k].sent.len() {
            if let Some(d) = self.subflows[k].sent[p].data {
                self.queue_retransmission(k, d, true);
            }
        }
    }

    fn on_frame(&mut self, now: Time, i: usize, f: Frame<'_>, drops: &mut Drops) {
        match f {
            Frame::Padding { .. } | Frame::Ping | Frame::Extension { .. } => {}
            Frame::Ack(a) => self.on_ack(now, i, &a),
            Frame::PathChallenge(d) => {
                self.subflows[i].response = Some(d);
                self.subflows[i].ctrl_pending |= ctrl::RESPONSE;
            }
            Frame::PathResponse(d) => {
                let sf = &mut self.subflows[i];
                if sf.challenge.is_some_and(|c| ct_eq(&c, &d)) {
                    sf.validated = true;
                    sf.challenge = None;
                    sf.ctrl_pending &= !ctrl::CHALLENGE;
                }
            }
            Frame::Dss(d) => self.on_dss(now, i, &d, drops),
            Frame::MpJoinSynAck(sa) => self.on_synack(now, i, &sa, drops),
            Frame::MpJoinAck { hmac } => self.on_join_ack(now, i, &hmac, drops),
            Frame::AddAddr(a) => self.on_add_addr(i, a, drops),
            Frame::RemoveAddr(ids) => {
                for id in ids {
                    for k in 0..self.subflows.len() {
                        if self.subflows[k].remote_addr_id == *id
                            && self.subflows[k].is_open()
                            && self.subflows[k].id != 0
                        {
                            self.shut_subflow(now, k, crate::wire::frame::reason::UNSPECIFIED);
                        }
                    }
                    self.remote_addrs.retain(|a| a.0 != *id);
                }
            }
            Frame::MpPrio { backup } => self.subflows[i].backup = backup,
            Frame::FastClose { key, .. } => {
                if self.keys.as_ref().is_some_and(|k| k.local_key == key) {
                    self.enter_closed(now, CloseReason::PeerAborted);
                    self.drained = true;
                } else {
                    drops.bad_hmac += 1;
                }
            }
            Frame::SubflowReset { reason, .. } => {
                let sf = &self.subflows[i];
                if !sf.is_open() {
                    return;
                }
                let refused_fast = sf.state == SubflowState::JoinSent
                    && sf.join == JoinKind::FastInitiator
                    && reason == reason::FAST_JOIN_REJECTED;
                let (path, remote, backup) = (sf.local_path, sf.remote, sf.backup);
                self.shut_subflow(now, i, reason);
                if refused_fast {
                    // The peer's window refused our DSN: join again, FAST_JOIN_IN this time
                    // (one FAST_JOIN_OUT per DATA_ACK edge).
                    self.open_subflow(now, path, remote, backup);
                }
            }
            Frame::Rto { request, rto_ms } => {
                if request {
                    self.subflows[i].ctrl_pending |= ctrl::RTO_VAL;
                }
                if let Some(v) = rto_ms {
                    self.subflows[i].peer_rto_ms = Some(v);
                }
            }
            Frame::HandshakeDone | Frame::TransportParams(_) | Frame::Cookie(_) => {}
            Frame::FastJoinReply(r) => self.on_fast_join_reply(now, i, &r, drops),
            Frame::MpJoin(_) | Frame::FastJoinOut(_) | Frame::FastJoinIn(_) => drops.unexpected += 1,
        }
    }

    fn on_synack(&mut self, now: Time, i: usize, sa: &MpJoinSynAck, drops: &mut Drops) {
        let Some(keys) = self.keys.as_ref() else { return };
        let sf = &mut self.subflows[i];
        if sf.state != SubflowState::JoinSent || !sf.local_opener {
            return;
        }
        // RFC 8684 §3.2: HMAC-B = HMAC(Key-B || Key-A, R-B || R-A), B the responder.
        let expect = join_synack_hmac(keys.remote_key, keys.local_key, sa.nonce, sf.nonce_local);
        if !ct_eq(&expect, &sa.hmac) {
            drops.bad_hmac += 1;
            sf.reset_reason = crate::wire::frame::reason::MPTCP_ERROR;
            sf.remote_cid = Some(sa.cid);
            sf.ctrl_pending = ctrl::RESET;
            self.shut_subflow(now, i, crate::wire::frame::reason::MPTCP_ERROR);
            return;
        }
        sf.remote_cid = Some(sa.cid);
        sf.nonce_remote = sa.nonce;
        sf.remote_addr_id = sa.addr_id;
        sf.backup |= sa.backup;
        sf.state = SubflowState::JoinAckSent;
        sf.ctrl_pending &= !ctrl::JOIN;
        sf.ctrl_pending |= ctrl::JOIN_ACK;
    }

    /// FAST_JOIN_REPLY (§5.11): our fast join is accepted; the subflow is established.
    fn on_fast_join_reply(&mut self, now: Time, i: usize, r: &FastJoinReply, drops: &mut Drops) {
        let Some(keys) = self.keys.as_ref() else { return };
        let sf = &mut self.subflows[i];
        if sf.state != SubflowState::JoinSent || sf.join != JoinKind::FastInitiator {
            return; // a repeat, or not ours to receive
        }
        if !fastjoin::verify_reply(&keys.fast, self.remote_token, r) {
            drops.bad_hmac += 1;
            sf.reset_reason = reason::MPTCP_ERROR;
            sf.remote_cid = Some(Cid(r.cid));
            sf.ctrl_pending = ctrl::RESET;
            self.shut_subflow(now, i, reason::MPTCP_ERROR);
            return;
        }
        sf.remote_cid = Some(Cid(r.cid));
        sf.remote_addr_id = r.addr_id;
        sf.backup |= r.backup;
        sf.state = SubflowState::Established;
        sf.ctrl_pending &= !ctrl::JOIN;
        sf.ack_now = true;
        sf.last_original_rx = now;
        let ev = Event::SubflowEstablished { id: sf.id, path: sf.local_path, backup: sf.backup };
        self.emit(ev);
    }

    fn on_join_ack(&mut self, now: Time, i: usize, hmac: &[u8; 20], drops: &mut Drops) {
        let Some(keys) = self.keys.as_ref() else { return };
        let sf = &mut self.subflows[i];
        if sf.state != SubflowState::JoinReceived {
            return;
        }
        // HMAC-A = HMAC(Key-A || Key-B, R-A || R-B), A the initiator (the peer here).
        let expect = join_ack_hmac(keys.remote_key, keys.local_key, sf.nonce_remote, sf.nonce_local);
        if !ct_eq(&expect, hmac) {
            drops.bad_hmac += 1;
            sf.reset_reason = crate::wire::frame::reason::MPTCP_ERROR;
            sf.ctrl_pending = ctrl::RESET;
            self.shut_subflow(now, i, crate::wire::frame::reason::MPTCP_ERROR);
            return;
        }
        sf.state = SubflowState::Established;
        sf.ctrl_pending &= !ctrl::SYNACK;
        sf.ack_now = true; // the fourth packet
        sf.last_original_rx = now;
        let ev = Event::SubflowEstablished { id: sf.id, path: sf.local_path, backup: sf.backup };
        self.emit(ev);
    }

    fn on_add_addr(&mut self, i: usize, a: AddAddr, drops: &mut Drops) {
        let Some(keys) = self.keys.as_ref() else { return };
        match a.hmac {
            None => {
                // An echo: our announcement arrived.
                for e in self.announce.iter_mut().filter(|e| e.0 == a.addr_id) {
                    e.2 = true;
                }
            }
            Some(h) => {
                let expect = crypto::add_addr_hmac(keys.remote_key, keys.local_key, a.addr_id, a.ip, a.port);
                if !ct_eq(&expect, &h) {
                    drops.bad_hmac += 1;
                    return;
                }
                let addr = SocketAddr::new(a.ip, a.port);
                if !self.remote_addrs.iter().any(|r| r.0 == a.addr_id && r.1 == addr) {
                    self.remote_addrs.retain(|r| r.0 != a.addr_id);
                    if self.remote_addrs.len() < 255 {
                        self.remote_addrs.push((a.addr_id, addr));
                        self.emit(Event::AddressAnnounced { addr_id: a.addr_id, addr });
                    }
                }
                if self.echo.len() < 16 {
                    self.echo.push(AddAddr { hmac: None, ..a });
                }
                self.subflows[i].ctrl_pending |= ctrl::ADDR_ECHO;
            }
        }
    }

    fn on_dss(&mut self, now: Time, i: usize, d: &Dss<'_>, drops: &mut Drops) {
        if let Some((ack, wnd)) = d.ack {
            self.on_data_ack(now, i, ack, wnd, drops);
        }
        let Some((dsn, data)) = d.mapping else { return };
        if !(self.subflows[i].established() || self.side == Side::Server && i == 0) {
            // RFC 8684 §3.2: no data before the fourth ACK.
            drops.unexpected += 1;
            return;
        }
        let end = dsn.wrapping_add(data.len() as u64);
        if !data.is_empty() {
            let before = self.recv.readable();
            let Some(new) = self.recv.insert(dsn, data) else {
                // Not reached from `handle_sealed`, which refuses such a packet before
                // acknowledging it; nor by a fast join's data, which starts at the sender's
                // DATA_ACK edge (§5.9), at or below our EDSN, and so needs no new range. A guard.
                self.counters.reassembly_refused += 1;
                tracing::debug!(dsn, len = data.len(), "reassembly full: segment refused");
                return;
            };
            if new > 0 {
                self.subflows[i].last_original_rx = now;
                if self.idle_timer_applies() {
                    let rto = self.peer_rto();
                    self.idle_timer.on_data(now, d.idle, rto);
                }
            }
            if self.recv.readable() > before {
                self.emit(Event::Readable);
            }
        }
        if end >= self.highest_rx_end {
            self.highest_rx_end = end;
            self.peer_idle = d.idle;
        }
        if d.fin && self.peer_fin.is_none() {
            self.peer_fin = Some(end);
            self.peer_fin_subflow = Some(i);
        }
        if let Some(f) = self.peer_fin {
            if !self.peer_fin_done && self.recv.nxt() == f {
                self.recv.consume_fin();
                self.peer_fin_done = true;
                self.subflows[i].ack_now = true;
                self.emit(Event::Finished);
            }
        }
    }

    fn on_data_ack(&mut self, now: Time, i: usize, ack: u64, wnd: u64, drops: &mut Drops) {
        let una = self.send.una();
        let fin_end = self.local_fin.filter(|_| self.fin_sent).map(|f| f.wrapping_add(1));
        let max = fin_end.unwrap_or(self.snd_nxt).max(self.snd_nxt);
        let adv = ack.wrapping_sub(una);
        if adv > max.wrapping_sub(una) {
            // Below our left edge (old) or above what we sent (invalid): ignore.
            if ack.wrapping_sub(una) < u64::MAX / 2 {
                drops.protocol += 1;
            }
            return;
        }
        if adv > 0 {
            let data_end = self.send.end();
            let n = self.send.ack(ack.min(data_end));
            self.counters.bytes_acked += n;
            self.subflows[i].last_original_rx = now;
            let rto = self.peer_rto();
            self.idle_timer.on_data_ack(now, rto);
            if fin_end == Some(ack) {
                self.fin_acked = true;
            }
        }
        if adv > 0 || ack == self.peer_ack {
            self.peer_ack = ack;
            self.peer_wnd = wnd;
        }
    }

    /// Subflow-level ACK (§5.3): RTT, congestion control, loss detection, pf exit.
    fn on_ack(&mut self, now: Time, i: usize, a: &Ack<'_>) {
        let max_ack_delay = self.config.max_ack_delay;
        let mut ranges = [(0u64, 0u64); 16];
        let mut n = 0;
        for r in a.ranges().take(16) {
            ranges[n] = r;
            n += 1;
        }
        let ranges = &ranges[..n];
        let sf = &mut self.subflows[i];
        if a.largest >= sf.next_pn {
            return; // acknowledges a packet never sent
        }
        let mut newly_acked = 0u64;
        let mut largest_newly: Option<SentPacket> = None;
        let mut acked_ctrl = 0u16;
        // (send time, bytes) of acknowledged ack-eliciting packets, for congestion control; past
        // 64 the last entry absorbs the rest. One pass over the sent packets, no allocation.
        let mut cc_events: [(u64, u64); 64] = [(0, 0); 64];
        let mut ncc = 0usize;
        let (mut freed_bytes, mut freed_packets) = (0u64, 0u32);
        sf.sent.retain(|p| {
            if !ranges.iter().any(|&(lo, hi)| lo <= p.pn && p.pn <= hi) {
                return true;
            }
            if p.ack_eliciting {
                freed_bytes += u64::from(p.size);
                freed_packets += 1;
                if ncc < cc_events.len() {
                    cc_events[ncc] = (p.time, u64::from(p.size));
                    ncc += 1;
                } else {
                    cc_events[ncc - 1].1 += u64::from(p.size);
                }
            }
            newly_acked += 1;
            acked_ctrl |= p.ctrl;
            if largest_newly.is_none_or(|l| p.pn > l.pn) {
                largest_newly = Some(*p);
            }
            false
        });
        sf.in_flight -= freed_bytes;
        sf.ack_eliciting_in_flight -= freed_packets;
        let progress = newly_acked > 0 || sf.largest_acked.is_none_or(|l| a.largest > l);
        if sf.largest_acked.is_none_or(|l| a.largest > l) {
            sf.largest_acked = Some(a.largest);
        }
        if !progress {
            return;
        }
        if largest_newly.is_some_and(|p| p.time > sf.last_loss_at) {
            // A packet sent after the last loss arrived: the losses are repaired.
            sf.recent_losses = 0;
        }
        if let Some(p) = largest_newly.filter(|p| p.pn == a.largest && p.ack_eliciting) {
            sf.rtt.update(now.saturating_sub(p.time), a.ack_delay.min(max_ack_delay));
        }
        // A new acknowledgement: the path works, and the peer has our fast-join reply.
        sf.validated = true;
        sf.reply_unacked = false;
        sf.rto_backoff = 0;
        sf.tlp_sent = false;
        sf.rto_start = now;
        if sf.probe == Some(Probe::Rto) {
            sf.probe = None;
        }
        if sf.pf {
            sf.pf = false;
            let id = sf.id;
            self.emit(Event::SubflowRecovered { id });
        }
        let sf = &mut self.subflows[i];
        if acked_ctrl & ctrl::JOIN_ACK != 0 && sf.state == SubflowState::JoinAckSent {
            // The fourth ACK (RFC 8684 §3.2): established.
            sf.state = SubflowState::Established;
            sf.ctrl_pending &= !ctrl::JOIN_ACK;
            sf.last_original_rx = now;
            let ev = Event::SubflowEstablished { id: sf.id, path: sf.local_path, backup: sf.backup };
            self.emit(ev);
        }
        let sf = &mut self.subflows[i];
        if acked_ctrl & ctrl::HS_DONE != 0 {
            sf.ctrl_pending &= !ctrl::HS_DONE;
        }
        // Congestion control, with the RFC 6356 coupling computed over the open subflows.
        let coupling = Coupling::compute(
            self.subflows.iter().filter(|s| s.established() && !s.pf).map(|s| (s.cc.cwnd, s.rtt.smoothed_or_default())),
        );
        let sf = &mut self.subflows[i];
        let srtt = sf.rtt.smoothed_or_default();
        for &(t, bytes) in &cc_events[..ncc] {
            sf.cc.on_ack(now, t, bytes, srtt, coupling);
        }
        self.detect_lost(now, i);
    }

    /// RFC 9002 §6.1: a packet is lost when a later one was acknowledged and it is three
    /// packets older, or older than 9/8 of the RTT.
    fn detect_lost(&mut self, now: Time, i: usize) {
        let (largest, delay) = {
            let sf = &mut self.subflows[i];
            sf.loss_time = None;
            let Some(largest) = sf.largest_acked else { return };
            (largest, (sf.rtt.latest.max(sf.rtt.srtt) * 9 / 8).max(1_000))
        };
        let mut lost_latest: Option<Time> = None;
        let mut k = 0;
        while let Some(&p) = self.subflows[i].sent.get(k) {
            if p.pn > largest {
                break;
            }
            if p.pn + 3 <= largest || p.time + delay <= now {
                let _ = self.subflows[i].sent.remove(k);
                lost_latest = Some(lost_latest.map_or(p.time, |t| t.max(p.time)));
                self.on_packet_lost(now, i, p);
            } else {
                let sf = &mut self.subflows[i];
                let t = p.time + delay;
                sf.loss_time = Some(sf.loss_time.map_or(t, |x| x.min(t)));
                k += 1;
            }
        }
        if let Some(t) = lost_latest {
            self.subflows[i].cc.on_congestion(now, t);
        }
    }

    /// A packet declared lost: its data and retransmittable frames are sent again.
    fn on_packet_lost(&mut self, now: Time, i: usize, p: SentPacket) {
        let sf = &mut self.subflows[i];
        sf.note_loss(now);
        sf.remove_from_flight(&p);
        sf.ctrl_pending |= sf.state.frames_to_resend(p.ctrl);
        if let Some(d) = p.data {
            self.queue_retransmission(i, d, false);
        }
    }

    /// Queues data for sending again. A `reinject`ion (the subflow failed or closed) marks the
    /// subflow so the scheduler prefers another one; a loss on a working subflow does not, so
    /// the retransmission goes where the scheduler sends new data (RFC 8684 §3.3.6 keeps the
    /// two apart the same way: subflow retransmission versus reinjection).
    fn queue_retransmission(&mut self, i: usize, d: DataRef, reinject: bool) {
        let una = self.send.una();
        let end = d.dsn.wrapping_add(u64::from(d.len));
        let fin_pending = d.fin && !self.fin_acked;
        if end.wrapping_sub(una) > u64::MAX / 2 || (end == una && !fin_pending) {
            return; // already acknowledged at data level
        }
        let start = if d.dsn.wrapping_sub(una) > u64::MAX / 2 { una } else { d.dsn };
        let len = end.wrapping_sub(start) as u32;
        let mask = if reinject { 1u64 << (i % 64) } else { 0 };
        self.retrans.push_back(Chunk { dsn: start, len, fin: fin_pending, mask });
    }

    /// Moves everything in flight on subflow `i` to the retransmission queue.
    fn reinject_in_flight(&mut self, now: Time, i: usize, count_lost: bool) {
        while let Some(p) = self.subflows[i].sent.pop_front() {
            if count_lost {
                self.subflows[i].note_loss(now);
            }
            let sf = &mut self.subflows[i];
            sf.remove_from_flight(&p);
            let conn_level = p.ctrl & (ctrl::ADD_ADDR | ctrl::REMOVE_ADDR | ctrl::ADDR_ECHO);
            if sf.is_open() {
                sf.ctrl_pending |= sf.state.frames_to_resend(p.ctrl);
            } else if conn_level != 0 {
                self.pend_on_any(conn_level);
            }
            if let Some(d) = p.data {
                self.queue_retransmission(i, d, true);
                self.counters.reinjections += 1;
            }
        }
    }

    /// Closes subflow `i` locally and reinjects its data.
    fn shut_subflow(&mut self, now: Time, i: usize, reason: u8) {
        if !self.subflows[i].is_open() {
            return;
        }
        let id = self.subflows[i].id;
        self.reinject_in_flight(now, i, false);
        let sf = &mut self.subflows[i];
        sf.state = SubflowState::Closed;
        sf.ctrl_pending &= ctrl::RESET | ctrl::FASTCLOSE;
        sf.probe = None;
        sf.copy = None;
        self.emit(Event::SubflowClosed { id, reason });
        if self.peer_fin_subflow == Some(i) {
            self.peer_fin_subflow = None;
        }
        if self.state == State::Established && !self.subflows.iter().any(|s| s.is_open()) {
            self.enter_closed(now, CloseReason::NoSubflow);
        }
    }

    fn check_close(&mut self, now: Time) {
        if self.state == State::Established && self.fin_acked && self.peer_fin_done {
            self.enter_closed(now, CloseReason::Graceful);
        }
    }

    // ------------------------------------------------------------------ timers

    /// The earliest time `handle_timeout` has work to do.
    pub fn poll_timeout(&self) -> Option<Time> {
        if self.drained {
            return None;
        }
        let mut t: Option<Time> = None;
        let mut min = |x: Option<Time>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |t| t.min(x)));
            }
        };
        if let Some(d) = self.drain_until {
            min(Some(d));
        }
        if let Some(hs) = self.hs.as_ref().filter(|_| self.state == State::Initial) {
            min(Some(hs.next_send));
        }
        if self.config.idle_timeout > 0 && !self.is_closed() {
            min(Some(self.last_rx + self.config.idle_timeout));
        }
        if self.idle_timer_applies() && !self.is_closed() {
            min(self.idle_timer.deadline());
        }
        if let Some(t) = self.healthy_since {
            min(Some(t + self.config.fail_back_hold));
        }
        for sf in &self.subflows {
            if !sf.is_open() {
                continue;
            }
            min(sf.ack_deadline);
            min(sf.loss_time);
            min(sf.rto_deadline(self.peer_max_ack_delay()));
            if self.config.keep_alive > 0 && sf.established() && !self.is_closed() {
                min(Some(sf.last_activity + self.config.keep_alive));
            }
        }
        t
    }

    fn peer_max_ack_delay(&self) -> u64 {
        self.peer_params.max_ack_delay_ms * 1000
    }

    pub fn handle_timeout(&mut self, now: Time) {
        if self.drained {
            return;
        }
        if self.drain_until.is_some_and(|d| d <= now) {
            self.drained = true;
            return;
        }
        if self.state == State::Initial {
            let max = self.config.max_handshake_attempts;
            if let Some(hs) = self.hs.as_mut() {
                if hs.next_send <= now {
                    if hs.attempts >= max {
                        self.enter_closed(now, CloseReason::HandshakeTimeout);
                        self.drained = true;
                        return;
                    }
                    hs.send_now = true;
                }
            }
        }
        if self.config.idle_timeout > 0 && !self.is_closed() && self.last_rx + self.config.idle_timeout <= now {
            self.enter_closed(now, CloseReason::IdleTimeout);
            self.drained = true;
            return;
        }
        if self.idle_timer.expired(now) && self.idle_timer_applies() {
            // Nothing arrived for an idle-timer period while the server had more to send
            // (its last data did not carry MP_IDLE): the paths in use are declared bad.
            self.fail_over(now, true, |_, s| !s.failover);
        }
        self.check_fail_back(now);
        if self.config.path_manager == PathManager::MultiMob && self.side == Side::Client && !self.is_closed() {
            // A failed path with nothing in flight gets a PING, so that its retransmission
            // timer probes it (with backoff) until it answers.
            for sf in self.subflows.iter_mut() {
                if sf.pf && sf.established() && !sf.backup && sf.ack_eliciting_in_flight == 0 && sf.probe.is_none() {
                    sf.ctrl_pending |= ctrl::PING;
                }
            }
        }
        let pmad = self.peer_max_ack_delay();
        for i in 0..self.subflows.len() {
            if !self.subflows[i].is_open() {
                continue;
            }
            let sf = &mut self.subflows[i];
            if sf.ack_deadline.is_some_and(|d| d <= now) {
                sf.ack_now = true;
            }
            if self.config.keep_alive > 0
                && sf.established()
                && sf.last_activity + self.config.keep_alive <= now
                && !matches!(self.state, State::Closed(_))
            {
                sf.ctrl_pending |= ctrl::PING;
                sf.last_activity = now;
            }
            if sf.loss_time.is_some_and(|t| t <= now) {
                self.detect_lost(now, i);
            }
            let sf = &mut self.subflows[i];
            if sf.rto_deadline(pmad).is_some_and(|t| t <= now) {
                self.on_retransmission_timeout(now, i);
            }
        }
    }

    fn on_retransmission_timeout(&mut self, now: Time, i: usize) {
        let max_attempts = self.config.max_handshake_attempts;
        let sf = &mut self.subflows[i];
        if !sf.tlp_sent && sf.rto_backoff == 0 && sf.rtt.has_sample && sf.state == SubflowState::Established {
            // RFC 8985 §7.3: send one probe, restart the timer.
            sf.tlp_sent = true;
            sf.probe = Some(Probe::Tail);
            sf.counters.tlp_count += 1;
            sf.rto_start = now;
            // MultiMob counts a tail loss probe as a loss.
            sf.last_loss_at = now;
            // multimob: the primary's first timeout with data pending and nothing else to fall
            // back on opens the other paths at once, without waiting for the oracle's period.
            let id = sf.id;
            let alone = !self.subflows.iter().any(|s| s.id != id && s.is_open() && !s.pf);
            if self.config.path_manager == PathManager::MultiMob
                && self.config.failover_on_timeout
                && self.side == Side::Client
                && !self.subflows[i].backup
                && alone
                && self.has_unused_path()
            {
                // The endpoint's oracle hears of it too, and declares the netpath bad for
                // every connection on it ("one connection experiences issues, others react").
                self.alert = self.netpath(i);
                self.fail_over(now, true, |_, s| s.id == id);
            }
            return;
        }
        sf.counters.rto_count += 1;
        sf.rto_backoff += 1;
        sf.rto_start = now;
        let joining =
            matches!(sf.state, SubflowState::JoinSent | SubflowState::JoinAckSent | SubflowState::JoinReceived);
        if joining && sf.rto_backoff >= max_attempts {
            self.shut_subflow(now, i, crate::wire::frame::reason::UNSPECIFIED);
            return;
        }
        let in_flight = sf.in_flight;
        sf.cc.on_rto(now, in_flight);
        let newly_pf = !sf.pf && sf.state == SubflowState::Established;
        if sf.state == SubflowState::Established {
            sf.pf = true;
        }
        sf.probe = Some(Probe::Rto);
        let id = sf.id;
        if newly_pf {
            self.emit(Event::SubflowFailed { id });
            self.open_on_demand(now);
        }
        // Everything in flight is presumed lost and goes to the retransmission queue, from
        // where the scheduler reinjects it on another subflow (RFC 8684 §3.3.6).
        self.reinject_in_flight(now, i, true);
        if self.side == Side::Client && self.state == State::Confirm && i == 0 {
            self.subflows[0].ctrl_pending |= ctrl::PING;
        }
    }

    // ------------------------------------------------------------------ sending

    /// The next datagram to send, written into `buf`.
    pub fn poll_transmit(&mut self, now: Time, buf: &mut [u8]) -> Option<Transmit> {
        if self.drained {
            return None;
        }
        if self.state == State::Initial {
            let hs = self.hs.as_mut()?;
            if !hs.send_now || buf.len() < hs.initial.len() {
                return None;
            }
            hs.send_now = false;
            hs.attempts += 1;
            hs.sent_at = now;
            hs.next_send = now + (self.config.initial_rto << (hs.attempts - 1).min(10));
            buf[..hs.initial.len()].copy_from_slice(&hs.initial);
            let sf = &self.subflows[0];
            return Some(Transmit { path: sf.local_path, remote: sf.remote, len: hs.initial.len() });
        }
        let n = self.subflows.len();
        if self.window_update && n > 0 {
            self.window_update = false;
            let i = (0..n)
                .filter(|&k| self.subflows[k].established() && !self.subflows[k].pf)
                .max_by_key(|&k| self.subflows[k].last_original_rx);
            if let Some(i) = i {
                self.subflows[i].ack_now = true;
            }
        }
        // Control first: ACKs due, pending frames, probes, redundant copies.
        for k in 0..n {
            let i = (self.rr + k) % n;
            let sf = &self.subflows[i];
            let closing_only = !sf.is_open() && sf.ctrl_pending & (ctrl::RESET | ctrl::FASTCLOSE) != 0;
            if !sf.is_open() && !closing_only {
                continue;
            }
            let urgent = sf.ack_due(now) || sf.ctrl_pending != 0 || sf.probe.is_some() || sf.copy.is_some();
            if urgent {
                // A first fast-join packet carries data when there is some (FAST_JOIN_OUT);
                // its repeats are FAST_JOIN_IN.
                let first_fast_join = sf.state == SubflowState::JoinSent
                    && sf.join == JoinKind::FastInitiator
                    && sf.ctrl_pending & ctrl::JOIN != 0
                    && sf.rto_backoff == 0;
                let seg = if first_fast_join { self.fast_join_segment() } else { None };
                if let Some(t) = self.build(now, i, seg, buf) {
                    self.rr = (i + 1) % n;
                    return Some(t);
                }
            }
        }
        if self.is_closed() {
            return None;
        }
        // Data, through the scheduler.
        let (i, seg) = self.schedule(now)?;
        self.build(now, i, Some(seg), buf)
    }

    /// The next piece of the stream to send, without taking it.
    fn peek_segment(&mut self) -> Option<Seg> {
        let una = self.send.una();
        while let Some(c) = self.retrans.front_mut() {
            let end = c.dsn.wrapping_add(u64::from(c.len));
            let acked_fin = !c.fin || self.fin_acked;
            if end.wrapping_sub(una) > u64::MAX / 2 || (end == una && acked_fin) {
                self.retrans.pop_front();
                continue;
            }
            if c.dsn.wrapping_sub(una) > u64::MAX / 2 {
                c.len = end.wrapping_sub(una) as u32;
                c.dsn = una;
            }
            return Some(Seg { dsn: c.dsn, len: u64::from(c.len), fin: c.fin, mask: c.mask, retrans: true });
        }
        let end = self.send.end();
        let limit = self.peer_ack.wrapping_add(self.peer_wnd);
        let avail = end.wrapping_sub(self.snd_nxt);
        let allowed = limit.wrapping_sub(self.snd_nxt);
        let allowed = if allowed > u64::MAX / 2 { 0 } else { allowed };
        let len = avail.min(allowed);
        let fin = self.local_fin == Some(end) && !self.fin_sent && self.snd_nxt.wrapping_add(len) == end;
        if len == 0 && !fin {
            return None;
        }
        Some(Seg { dsn: self.snd_nxt, len, fin, mask: 0, retrans: false })
    }

    /// What a FAST_JOIN_OUT carries (§5.9): the stream from our DATA_ACK edge, the oldest data
    /// the peer may lack. The peer's EDSN is never behind that edge, so the DSN always lies in
    /// its window. `None` (nothing to send, or a FAST_JOIN_OUT already sent at this edge, which
    /// the peer would refuse as a replay) means FAST_JOIN_IN.
    fn fast_join_segment(&mut self) -> Option<Seg> {
        let una = self.send.una();
        if self.fjo_sent_at == Some(una) && !self.config.faults.repeat_fast_join_dsn {
            return None;
        }
        let outstanding = self.snd_nxt.wrapping_sub(una);
        if outstanding > 0 {
            return Some(Seg { dsn: una, len: outstanding, fin: false, mask: 0, retrans: true });
        }
        self.peek_segment().filter(|s| s.len > 0 && s.dsn == una).map(|s| Seg { fin: false, ..s })
    }

    fn schedule(&mut self, _now: Time) -> Option<(usize, Seg)> {
        let seg = self.peek_segment()?;
        let payload = self.max_payload() as u64;
        let len = seg.len.min(payload).max(1) as u32;
        self.infos.clear();
        for (k, sf) in self.subflows.iter().enumerate().take(scheduler::MAX_SUBFLOWS) {
            let mut flags = Flags(0);
            flags.set(Flags::ESTABLISHED, sf.established() && sf.remote_cid.is_some());
            flags.set(Flags::POTENTIALLY_FAILED, sf.pf);
            flags.set(Flags::BACKUP, sf.backup);
            flags.set(Flags::IN_RECOVERY, sf.rto_backoff > 0);
            flags.set(Flags::ALREADY_SENT, seg.mask & (1 << k) != 0);
            flags.set(Flags::HIGH_RTO, sf.high_rto);
            flags.set(Flags::WAS_BAD, sf.was_bad);
            let room = sf.cwnd_room().min(sf.amplification_room());
            self.infos.push(SubflowInfo {
                id: sf.id,
                flags,
                iface: self.paths.get(usize::from(sf.local_path.0)).map(|p| p.iface).unwrap_or_default(),
                srtt_us: sf.rtt.smoothed_or_default().min(u64::from(u32::MAX)) as u32,
                rttvar_us: sf.rtt.rttvar.min(u64::from(u32::MAX)) as u32,
                cwnd: sf.cc.cwnd.min(u64::from(u32::MAX)) as u32,
                cwnd_room: room.min(u64::from(u32::MAX)) as u32,
                last_original_rx_us: sf.last_original_rx,
                retrans_outstanding: sf.recent_losses + u32::from(sf.pf),
            });
        }
        let s = Segment {
            len,
            answer_data_fin_on: if seg.fin { self.peer_fin_subflow } else { None },
            queued_bytes: self.send.end().wrapping_sub(self.snd_nxt),
        };
        match self.sched.pick(&self.infos, &s) {
            Pick::Send(i) if i < self.subflows.len() => Some((i, seg)),
            Pick::SendAll(mask) => {
                let mut first = None;
                for i in mask.iter() {
                    if i >= self.subflows.len() {
                        continue;
                    }
                    if first.is_none() {
                        first = Some(i);
                    } else {
                        let take = seg.len.min(payload) as u32;
                        self.subflows[i].copy =
                            Some(DataRef { dsn: seg.dsn, len: take, fin: seg.fin && u64::from(take) == seg.len });
                    }
                }
                first.map(|i| (i, seg))
            }
            _ => None,
        }
    }

    /// What a probe carries: for an RTO the oldest data to retransmit; for a tail loss probe
    /// new data if any, else the last segment sent on the subflow (RFC 8985 §7.3).
    fn probe_data(&mut self, i: usize, p: Probe) -> Option<(DataRef, bool, bool)> {
        let s = match p {
            // A copy of the oldest data awaiting retransmission; the queue keeps it, so the
            // scheduler also reinjects it on a working subflow.
            Probe::Rto => self.peek_segment().filter(|s| s.retrans)?,
            Probe::Tail => {
                // New data only on a subflow already carrying data (never on a backup subflow
                // the scheduler keeps idle); else the last segment it sent, else a bare PING.
                let last = self.subflows[i].sent.iter().rev().find_map(|p| p.data);
                let may_take_new = last.is_some() && !self.subflows[i].backup;
                match (self.peek_segment().filter(|s| !s.retrans && may_take_new), last) {
                    (Some(s), _) => s,
                    (None, Some(d)) => Seg { dsn: d.dsn, len: u64::from(d.len), fin: d.fin, mask: 0, retrans: true },
                    (None, None) => return None,
                }
            }
        };
        let d = DataRef { dsn: s.dsn, len: s.len.min(u64::from(u32::MAX)) as u32, fin: s.fin };
        Some((d, s.retrans, !s.retrans))
    }

    /// Payload bytes available for stream data in a short-header packet.
    fn max_payload(&self) -> usize {
        // header (1 + 8 + 4) + tag + an ACK (~16) + DSS overhead with DATA_ACK.
        self.mss().saturating_sub(1 + 8 + 4 + crypto::TAG_LEN + 16 + Dss::overhead(true, 65_535))
    }

    /// Builds one packet on subflow `i` with everything due there and, if given, `seg`.
    fn build(&mut self, now: Time, i: usize, seg: Option<Seg>, buf: &mut [u8]) -> Option<Transmit> {
        let mss = self.mss().min(buf.len());
        let probe_data = match self.subflows[i].probe {
            Some(p) if seg.is_none() && self.subflows[i].copy.is_none() => self.probe_data(i, p),
            _ => None,
        };
        let keys = self.keys.as_ref()?;
        let sf = &self.subflows[i];
        let joining = sf.state == SubflowState::JoinSent && sf.local_opener;
        let confirm = self.side == Side::Client && self.state == State::Confirm && i == 0;
        if !joining && sf.remote_cid.is_none() {
            return None;
        }
        let pn = sf.next_pn;
        let mut w = Writer::new(&mut buf[..mss]);
        let (hl, short_pn_len) = if joining {
            let j = Join {
                version: packet::VERSION_1,
                token: self.remote_token,
                scid: sf.local_cid,
                subflow: sf.id,
                pn: pn as u32,
            };
            (j.emit(&mut w).ok()?, 0)
        } else if confirm {
            let hs = self.hs.as_ref()?;
            let c = Confirm {
                version: packet::VERSION_1,
                dcid: sf.remote_cid?,
                scid: sf.local_cid,
                cookie: &hs.cookie,
                pn: pn as u32,
            };
            (c.emit(&mut w).ok()?, 0)
        } else {
            let len = packet::pn_len(pn, sf.largest_acked);
            (Short::emit(sf.remote_cid?, pn, len, &mut w).ok()?, len)
        };
        // Everything after the header must leave room for the tag.
        let limit = mss - crypto::TAG_LEN;
        let mut ctrl_sent = 0u16;
        let mut eliciting = false;
        let mut ack_sent = false;
        let sf = &self.subflows[i];
        // ACK.
        if !sf.rx.is_empty() && (sf.ack_due(now) || sf.unacked_eliciting > 0 || sf.ctrl_pending != 0 || seg.is_some()) {
            let delay = now.saturating_sub(sf.largest_rx_time);
            let ranges = sf.rx.iter_desc().take(8);
            if Ack::emit(&mut w, delay, ranges).is_ok() {
                ack_sent = true;
            }
        }
        let pending = sf.ctrl_pending;
        let put = |w: &mut Writer<'_>, bit: u16, f: Frame<'_>, sent: &mut u16| {
            if pending & bit != 0 && w.len() + 64 < limit && f.emit(w).is_ok() {
                *sent |= bit;
            }
        };
        let fast_joining = joining && sf.join == JoinKind::FastInitiator;
        // Data sent in a FAST_JOIN_OUT: (range, retransmission, new data).
        let mut fj_data: Option<(DataRef, bool, bool)> = None;
        if fast_joining && pending & ctrl::JOIN != 0 {
            let room = limit.saturating_sub(w.len() + FastJoinOut::HEADER_LEN + Dss::overhead(true, 0) + 16);
            let take = seg.map_or(0, |s| s.len.min(room as u64) as usize);
            match seg {
                Some(s) if take > 0 => {
                    let mut hmac = keys.fast.sign(fastjoin::Kind::Out, s.dsn, self.remote_token);
                    hmac[0] ^= u8::from(self.config.faults.forge_fast_join_hmac);
                    let (backup, addr_id) = (sf.backup, sf.local_addr_id);
                    w.varint(crate::wire::frame::ty::FAST_JOIN_OUT).ok()?;
                    w.view(FastJoinOut::HEADER_LEN, |out| {
                        FastJoinOut::emit_header(out, backup, addr_id, s.dsn, &hmac, take)
                    })
                    .ok()?;
                    if !self.send.copy_out(s.dsn, w.reserve(take).ok()?) {
                        return None;
                    }
                    ctrl_sent |= ctrl::JOIN;
                    let d = DataRef { dsn: s.dsn, len: take as u32, fin: false };
                    fj_data = Some((d, s.retrans, !s.retrans));
                }
                _ => {
                    let data_ack = self.recv.nxt();
                    let mut hmac = keys.fast.sign(fastjoin::Kind::In, data_ack, self.remote_token);
                    hmac[0] ^= u8::from(self.config.faults.forge_fast_join_hmac);
                    let f = FastJoinIn { backup: sf.backup, addr_id: sf.local_addr_id, data_ack, hmac };
                    put(&mut w, ctrl::JOIN, Frame::FastJoinIn(f), &mut ctrl_sent);
                }
            }
        } else if joining && pending & ctrl::JOIN != 0 {
            let mj = MpJoin { backup: sf.backup, addr_id: sf.local_addr_id, nonce: sf.nonce_local };
            put(&mut w, ctrl::JOIN, Frame::MpJoin(mj), &mut ctrl_sent);
        }
        if pending & ctrl::FJ_REPLY != 0 || sf.reply_unacked {
            // The reply to a FAST_JOIN_OUT acknowledges its data; to a FAST_JOIN_IN it names
            // where we send from (§5.11). It rides in every packet until acknowledged.
            let value = match sf.join {
                JoinKind::FastIn => ReplyValue::Dsn(self.send.una()),
                _ => ReplyValue::DataAck(self.recv.nxt()),
            };
            let token = self.local_token.unwrap_or_default();
            let r = fastjoin::reply(&keys.fast, token, sf.backup, sf.local_addr_id, value, sf.local_cid.0);
            if w.len() + 64 < limit && Frame::FastJoinReply(r).emit(&mut w).is_ok() {
                ctrl_sent |= ctrl::FJ_REPLY;
            }
        }
        if pending & ctrl::SYNACK != 0 {
            let sa = MpJoinSynAck {
                backup: sf.backup,
                addr_id: sf.local_addr_id,
                nonce: sf.nonce_local,
                hmac: join_synack_hmac(keys.local_key, keys.remote_key, sf.nonce_local, sf.nonce_remote),
                cid: sf.local_cid,
            };
            put(&mut w, ctrl::SYNACK, Frame::MpJoinSynAck(sa), &mut ctrl_sent);
        }
        if pending & ctrl::JOIN_ACK != 0 {
            let hmac = join_ack_hmac(keys.local_key, keys.remote_key, sf.nonce_local, sf.nonce_remote);
            put(&mut w, ctrl::JOIN_ACK, Frame::MpJoinAck { hmac }, &mut ctrl_sent);
        }
        put(&mut w, ctrl::HS_DONE, Frame::HandshakeDone, &mut ctrl_sent);
        put(&mut w, ctrl::PRIO, Frame::MpPrio { backup: sf.backup }, &mut ctrl_sent);
        if let Some(c) = sf.challenge {
            put(&mut w, ctrl::CHALLENGE, Frame::PathChallenge(c), &mut ctrl_sent);
        }
        if let Some(r) = sf.response {
            put(&mut w, ctrl::RESPONSE, Frame::PathResponse(r), &mut ctrl_sent);
        }
        put(&mut w, ctrl::RTO_REQ, Frame::Rto { request: true, rto_ms: None }, &mut ctrl_sent);
        put(&mut w, ctrl::RTO_VAL, Frame::Rto { request: false, rto_ms: Some(sf.rtt.rto() / 1000) }, &mut ctrl_sent);
        if pending & ctrl::ADD_ADDR != 0 {
            let mut any = false;
            for &(id, addr, acked) in &self.announce {
                if acked || w.len() + 64 >= limit {
                    continue;
                }
                let hmac = crypto::add_addr_hmac(keys.local_key, keys.remote_key, id, addr.ip(), addr.port());
                let f = Frame::AddAddr(AddAddr { addr_id: id, ip: addr.ip(), port: addr.port(), hmac: Some(hmac) });
                any |= f.emit(&mut w).is_ok();
            }
            if any {
                ctrl_sent |= ctrl::ADD_ADDR;
            }
        }
        if pending & ctrl::ADDR_ECHO != 0 {
            for e in &self.echo {
                if w.len() + 64 < limit && Frame::AddAddr(*e).emit(&mut w).is_ok() {
                    ctrl_sent |= ctrl::ADDR_ECHO;
                }
            }
        }
        if pending & ctrl::REMOVE_ADDR != 0 && !self.remove.is_empty() {
            let ids = &self.remove[..self.remove.len().min(255)];
            put(&mut w, ctrl::REMOVE_ADDR, Frame::RemoveAddr(ids), &mut ctrl_sent);
        }
        put(&mut w, ctrl::RESET, Frame::SubflowReset { transient: false, reason: sf.reset_reason }, &mut ctrl_sent);
        put(&mut w, ctrl::FASTCLOSE, Frame::FastClose { key: keys.remote_key, reason: 0 }, &mut ctrl_sent);
        put(&mut w, ctrl::PING, Frame::Ping, &mut ctrl_sent);
        if ctrl_sent & !(ctrl::RESET | ctrl::FASTCLOSE) != 0 {
            eliciting = true;
        }
        // Data: the scheduled segment, a probe, or a redundant copy.
        let probe = sf.probe;
        let data_ok = (sf.established() && !self.is_closed()) || confirm;
        let mut data: Option<(DataRef, bool, bool)> = None; // (range, retransmission, new data)
        if data_ok {
            if let Some(s) = seg {
                data = Some((
                    DataRef { dsn: s.dsn, len: s.len.min(u64::from(u32::MAX)) as u32, fin: s.fin },
                    s.retrans,
                    !s.retrans,
                ));
            } else if let Some(c) = sf.copy {
                data = Some((c, true, false));
            } else if probe.is_some() {
                data = probe_data;
            }
        }
        let sf = &self.subflows[i];
        let mut sent_data: Option<DataRef> = fj_data.map(|d| d.0);
        // The DATA_ACK rides in every packet of a subflow that is up, even after the
        // connection closed (the peer's DATA_FIN still needs acknowledging); a mapping needs
        // `data_ok`.
        let data = if data_ok { data } else { None };
        if sf.established() || confirm || fast_joining {
            let ack = Some((self.recv.nxt(), self.recv.window()));
            let room = limit.saturating_sub(w.len() + Dss::overhead(true, 65_535));
            match data {
                Some((d, _, _)) if room > 0 || (d.len == 0 && d.fin) => {
                    let take = u64::from(d.len).min(room as u64);
                    let fin = d.fin && take == u64::from(d.len);
                    // MP_IDLE (MultiMob): set on the segment that empties the send queue.
                    let empties = d.dsn.wrapping_add(take) == self.send.end() && self.retrans.len() <= 1;
                    let idle_flag = self.config.mp_idle && self.side == Side::Server && empties;
                    if Dss::emit_header(&mut w, ack, Some((d.dsn, take as usize)), fin, idle_flag).is_ok() {
                        if let Ok(dst) = w.reserve(take as usize) {
                            if self.send.copy_out(d.dsn, dst) {
                                sent_data = Some(DataRef { dsn: d.dsn, len: take as u32, fin });
                                eliciting = true;
                            }
                        }
                    }
                }
                _ => {
                    if ack_sent || eliciting || self.window_update {
                        let _ = Dss::emit_header(&mut w, ack, None, false, false);
                    }
                }
            }
        }
        let data = data.or(fj_data);
        if !eliciting && !ack_sent {
            // Nothing worth a packet (an ACK-only DSS with no subflow ACK is not sent alone).
            let sf = &mut self.subflows[i];
            sf.ack_now = false;
            sf.ack_deadline = None;
            if probe.is_some() {
                sf.ctrl_pending |= ctrl::PING;
            }
            return None;
        }
        // Header protection needs pn_len + payload >= 4 (§9.3).
        while short_pn_len > 0 && w.len() - hl + short_pn_len < 4 {
            w.u8(0).ok()?;
        }
        let pt_len = w.len() - hl;
        let total = hl + pt_len + crypto::TAG_LEN;
        // Anti-amplification (§10).
        if (total as u64) > self.subflows[i].amplification_room() {
            return None;
        }
        let sf_id = self.subflows[i].id;
        let sealed = if short_pn_len > 0 {
            keys.send.seal_short(sf_id, pn, buf, hl, pt_len)
        } else {
            keys.send.seal(sf_id, pn, buf, hl, pt_len)
        };
        let len = sealed.ok()?;
        // Commit: the packet goes out.
        let sf_bit = 1u64 << (i % 64);
        let sf = &mut self.subflows[i];
        sf.next_pn += 1;
        if ack_sent {
            sf.on_ack_sent();
        }
        sf.ctrl_pending &= !(ctrl_sent & !(ctrl::ADD_ADDR | ctrl::ADDR_ECHO));
        if fj_data.is_some() {
            self.fjo_sent_at = Some(self.send.una());
        }
        let sf = &mut self.subflows[i];
        if ctrl_sent & ctrl::ADD_ADDR != 0 {
            sf.ctrl_pending &= !ctrl::ADD_ADDR;
        }
        if ctrl_sent & ctrl::ADDR_ECHO != 0 {
            sf.ctrl_pending &= !ctrl::ADDR_ECHO;
            self.echo.clear();
        }
        let sf = &mut self.subflows[i];
        if ctrl_sent & ctrl::RESPONSE != 0 {
            sf.response = None;
        }
        if probe.is_some() && (seg.is_none() && sf.copy.is_none()) {
            sf.probe = None;
        }
        let was_copy = seg.is_none() && sf.copy.is_some() && probe.is_none();
        if was_copy {
            sf.copy = None;
        }
        sf.on_packet_sent(SentPacket {
            pn,
            time: now,
            size: len as u32,
            ack_eliciting: eliciting,
            data: sent_data,
            ctrl: ctrl_sent,
        });
        if let Some(d) = sent_data {
            sf.counters.data_bytes_sent += u64::from(d.len);
            let end = d.dsn.wrapping_add(u64::from(d.len));
            let retrans = data.is_some_and(|x| x.1);
            if retrans {
                sf.counters.bytes_retransmitted += u64::from(d.len);
                sf.counters.packets_retransmitted += 1;
            }
            let is_new = data.is_some_and(|x| x.2);
            if is_new {
                if end.wrapping_sub(self.snd_nxt) < u64::MAX / 2 {
                    self.snd_nxt = end;
                }
                if d.fin {
                    self.fin_sent = true;
                }
            } else if seg.is_some_and(|s| s.retrans) {
                // Taken from the retransmission queue: consume that much of its front.
                if let Some(c) = self.retrans.front_mut() {
                    if c.mask != 0 && c.mask & sf_bit == 0 {
                        self.counters.bytes_reinjected += u64::from(d.len);
                        self.subflows[i].counters.bytes_reinjected += u64::from(d.len);
                    }
                    if c.dsn == d.dsn {
                        if u64::from(d.len) >= u64::from(c.len) {
                            self.retrans.pop_front();
                        } else {
                            // The rest of the chunk was not sent here: its mask stays.
                            c.dsn = end;
                            c.len -= d.len;
                        }
                    }
                }
            }
        }
        let sf = &self.subflows[i];
        Some(Transmit { path: sf.local_path, remote: sf.remote, len })
    }
}
