//! One multipath connection: the first handshake (client side), joins, the data stream with
//! DSN reassembly, DATA_ACK and flow control, per-subflow loss recovery and congestion control,
//! scheduling, reinjection and closing. No I/O, no clock: every call carries `now`.

mod builder;
pub mod cc;
pub mod dsn;
mod handshake;
mod input;
mod join;
mod multimob;
mod paths;
mod recovery;
mod recv;
mod sched;
mod send;
mod subflow;
mod timers;

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
use dsn::Dsn;
use fastjoin::{Refusal, Verdict};
use recv::RecvSide;
use scheduler::{AnyScheduler, Flags, Pick, Segment, SubflowInfo};
use send::{Seg, SendSide, Sent};
use std::collections::VecDeque;
use std::net::SocketAddr;
use subflow::recovery::{Expiry, Probe, Rtt, SentPacket};
use subflow::table::{SubflowTable, MAX_SLOTS};
use subflow::{ctrl, DataRef, JoinKind, Subflow};

pub use subflow::{SubflowCounters, SubflowState};

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
    /// The address the connection was opened to (the client's view of the server): where
    /// the client's joins go.
    peer_addr: SocketAddr,
    peer_params: TransportParams,
    subflows: SubflowTable,
    opened: u32,
    send: SendSide,
    recv: RecvSide,
    sched: AnyScheduler,
    infos: Vec<SubflowInfo>,
    events: VecDeque<Event>,
    pub(crate) cid_changes: Vec<(Cid, bool)>,
    rr: usize,
    last_rx: Time,
    drain_until: Option<Time>,
    counters: ConnCounters,
    remote_addrs: Vec<(u8, SocketAddr)>,
    announce: Vec<(u8, SocketAddr, bool)>,
    echo: Vec<AddAddr>,
    remove: Vec<u8>,
    fastclose: bool,
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
            .field("subflows", &self.subflows.records())
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
    fn blank(side: Side, now: Time, config: &Config, paths: &[LocalPath], peer_addr: SocketAddr) -> Self {
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
            peer_addr,
            peer_params: TransportParams::default(),
            subflows: SubflowTable::default(),
            opened: 0,
            send: SendSide::new(config.send_buffer),
            recv: RecvSide::new(config.recv_window),
            sched,
            infos: Vec::with_capacity(scheduler::MAX_SUBFLOWS),
            events: VecDeque::new(),
            cid_changes: Vec::new(),
            rr: 0,
            last_rx: now,
            drain_until: None,
            counters: ConnCounters::default(),
            remote_addrs: Vec::new(),
            announce: Vec::new(),
            echo: Vec::new(),
            remove: Vec::new(),
            fastclose: false,
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
        sf.rec.sent.reserve((window / 512 + 64).min(4096));
        sf
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
        let mut c = Self::blank(Side::Server, now, config, paths, remote);
        c.install_keys(master.secrets(suite));
        c.set_peer_params(client_params);
        let mut sf = c.new_subflow(now, 0, SubflowState::Established, path, remote, server_cid);
        sf.remote_cid = Some(client_cid);
        // The cookie came back from the address it was sent to (§4.4): validated.
        sf.val.validated = true;
        // The HANDSHAKE took packet number 0 of subflow 0 under the s2c key (§9.2).
        sf.rec.next_pn = 1;
        sf.ctrl_pending |= ctrl::HS_DONE;
        sf.last_original_rx = now;
        sf.backup = false;
        c.subflows.insert(sf);
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
        self.send.set_start(Dsn(crypto::idsn(local_key)).add(1));
        self.recv.set_start(Dsn(crypto::idsn(remote_key)).add(1));
    }

    fn set_peer_params(&mut self, p: TransportParams) {
        self.peer_params = p;
        self.send.set_peer_window(p.initial_window);
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
        self.recv.peer_idle()
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

    /// Queues bytes for sending; returns how many were taken.
    pub fn write(&mut self, data: &[u8]) -> Result<usize, WriteError> {
        if let State::Closed(r) = self.state {
            return Err(WriteError::Closed(r));
        }
        if self.send.is_finished() {
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
        self.send.unacked()
    }

    /// Reads received bytes in order. `Ok(0)` means the peer finished (DATA_FIN) and
    /// everything was read.
    pub fn read(&mut self, out: &mut [u8]) -> Result<usize, ReadError> {
        let n = self.recv.read(out);
        if n > 0 {
            self.counters.bytes_read += n as u64;
            return Ok(n);
        }
        if self.recv.is_finished() {
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
        if !self.is_closed() {
            self.send.close();
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
        let rto = self.subflows.iter().map(|s| s.rec.rtt.rto()).max().unwrap_or(self.config.initial_rto);
        self.drain_until = Some(now + 3 * rto);
        self.emit(Event::Closed { reason });
    }

    /// Changes the backup flag of a subflow and tells the peer (MP_PRIO).
    pub fn set_backup(&mut self, id: u32, backup: bool) -> bool {
        let Some(sf) = self.subflows.iter_mut().find(|s| s.id == id && s.is_open()) else { return false };
        sf.backup = backup;
        sf.ctrl_pending |= ctrl::PRIO;
        true
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
            subflows: self.subflows.stats(subflow_stats),
        }
    }
}

/// A snapshot of subflow `s`.
fn subflow_stats(s: &Subflow) -> SubflowStats {
    SubflowStats {
        id: s.id,
        path: s.local_path,
        remote: s.remote,
        state: s.state,
        backup: s.backup,
        potentially_failed: s.pf(),
        srtt_us: s.rec.rtt.srtt,
        rttvar_us: s.rec.rtt.rttvar,
        rto_us: s.rec.rtt.rto(),
        cwnd: s.rec.cc.cwnd,
        in_flight: s.rec.in_flight,
        counters: s.counters,
    }
}
