//! What the application's handles and the driver task share: the endpoint, the handles'
//! wakers and news, the paths as the driver sees them, and the application's requests about
//! interfaces.

use crate::options::Interface;
use mpcore::{CloseReason, ConnHandle, Endpoint, Event, Iface, Time};
use oracle::energy::{Energy, Meter, Model};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard};
use std::task::Waker;
use std::time::{Duration, Instant};

/// Datagrams and bytes through one local path's socket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounters {
    /// Datagrams handed to the kernel.
    pub datagrams_sent: u64,
    /// Their UDP payload bytes.
    pub bytes_sent: u64,
    /// Datagrams read from the socket.
    pub datagrams_received: u64,
    /// Their UDP payload bytes.
    pub bytes_received: u64,
    /// sendmsg calls (one per GSO batch).
    pub send_calls: u64,
    /// recvmmsg calls that returned data.
    pub recv_calls: u64,
    /// Datagrams the kernel refused to send (the link is down, no route): lost, like a drop
    /// on the path, and recovered by the protocol.
    pub send_errors: u64,
    /// Datagrams dropped because the socket stayed full while more than a GSO batch waited
    /// (a drop-tail queue in front of the socket; the protocol sees them as lost).
    pub queue_drops: u64,
    /// Errors reading the socket (ICMP errors reported on it, among others).
    pub recv_errors: u64,
    /// Up/down transitions of the interface seen by the driver (or said by the application).
    pub link_changes: u64,
    /// A server spread over cores (`MpListener::bind_cores`): datagrams that reached this
    /// core's socket but belong to another core's connection (the kernel steers each
    /// datagram, but a GRO batch, or a GSO batch over loopback, goes whole to the core of its
    /// first datagram), handed to that core.
    pub forwarded: u64,
    /// TCP carriers (PROTOCOL.md §4.11) opened (a client's) or accepted (a server's) on this
    /// path.
    pub tcp_opened: u64,
    /// TCP carriers refused: a connect that failed, a server's limit, a stream not ours.
    pub tcp_refused: u64,
    /// TCP carriers closed: ended by the peer, failed, or idle for a minute.
    pub tcp_closed: u64,
}

/// One local path as the driver sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct PathInfo {
    /// The device the socket is bound to (`SO_BINDTODEVICE`), if any.
    pub device: Option<String>,
    /// The socket's local address.
    pub addr: SocketAddr,
    /// The interface's kind (WiFi, cellular, wired), given or guessed from its name.
    pub kind: Iface,
    /// Subflows on this path are backup subflows.
    pub backup: bool,
    /// The link was up at the last check (and the application did not say it is down).
    pub up: bool,
    /// The address is gone (the interface lost it, or went away): the path is closed, and its
    /// slot may be reused for a later address, with new counters.
    pub removed: bool,
    /// What went through its socket.
    pub io: IoCounters,
    /// When the first datagram crossed this path, either way.
    pub first_packet: Option<Instant>,
    /// A cellular path's radio energy since the endpoint was built, by the LTE model of
    /// Huang et al. ([`oracle::energy`]) over every datagram sent and received; `None` for
    /// other kinds of interface.
    pub radio: Option<Energy>,
    /// The place of its interface among the endpoint's (the first is the primary).
    pub(crate) order: usize,
}

impl PathInfo {
    /// A slot no path has used.
    pub(crate) fn vacant() -> Self {
        Self {
            device: None,
            addr: SocketAddr::from(([0, 0, 0, 0], 0)),
            kind: Iface::Other,
            backup: false,
            up: false,
            removed: true,
            io: IoCounters::default(),
            first_packet: None,
            radio: None,
            order: usize::MAX,
        }
    }
}

/// What the application's handles and the driver share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves the endpoint as consistent as mpcore left it;
        // the state machine itself never panics on input.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Wakers and news of one connection.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    pub(crate) read: Option<Waker>,
    pub(crate) write: Option<Waker>,
    pub(crate) connect: Option<Waker>,
    pub(crate) close: Option<Waker>,
    pub(crate) connected: bool,
    pub(crate) closed: Option<CloseReason>,
    /// Events not yet read by `MpStream::events` (at most `conn_event::QUEUE` once it is
    /// read, `conn_event::UNREAD` before).
    pub(crate) events: std::collections::VecDeque<crate::conn_event::ConnEvent>,
    pub(crate) events_lost: u64,
    /// Someone reads the events (`Events` was made).
    pub(crate) events_read: bool,
    pub(crate) events_waker: Option<Waker>,
    /// Every handle of the stream was dropped: bytes that arrive now are never read.
    pub(crate) orphaned: bool,
    /// The application's handles on it (the stream's, its event streams'): the slot is freed
    /// once none is left and the endpoint forgot the connection.
    pub(crate) users: u32,
}

/// What the application asks of the driver about interfaces (`MpEndpoint`'s methods); the
/// driver applies it on its next turn.
#[derive(Debug)]
pub(crate) enum Command {
    /// The application says the named interface is up or down (its OS's connectivity
    /// callbacks); down wins over the link state until it says up again.
    SetUp {
        name: String,
        up: bool,
    },
    Add(Interface),
    Remove {
        name: String,
    },
    /// Read the interfaces afresh (the OS said something changed).
    Refresh,
    /// The application's word on the named interface's link quality.
    Hint {
        name: String,
        hint: mpcore::LinkHint,
    },
}

#[derive(Debug)]
pub(crate) struct State {
    pub(crate) ep: Endpoint,
    pub(crate) epoch: Instant,
    /// Per connection the application holds or the endpoint knows (not per connection ever made).
    slots: HashMap<ConnHandle, Slot>,
    /// Connections with a writer waiting for room (looked at on each dispatch).
    writers: Vec<ConnHandle>,
    pub(crate) driver: Option<Waker>,
    pub(crate) accepted: VecDeque<ConnHandle>,
    pub(crate) accept_waker: Option<Waker>,
    /// Application handles alive (endpoints, listeners, streams); the driver ends when none
    /// is left and every connection has drained.
    pub(crate) refs: usize,
    /// Per local path (by `PathId`), as the driver sees it.
    pub(crate) paths: Vec<PathInfo>,
    /// Per path: every datagram's time and size, summed up by the energy model (cellular
    /// paths only; `first_packet` is kept for every path).
    pub(crate) meters: Vec<Meter>,
    /// The application's requests, for the driver.
    pub(crate) commands: VecDeque<Command>,
    /// Tasks waiting for a usable path (`connect` before any interface has an address).
    pub(crate) path_waker: Option<Waker>,
    /// The names of the endpoint's interfaces (for the application's requests).
    pub(crate) names: Vec<String>,
    /// The driver task has ended.
    pub(crate) stopped: bool,
    pub(crate) idle_waker: Option<Waker>,
    /// Live connections at the last `dispatch`.
    pub(crate) live: usize,
    /// A server spread over cores: every core's shared state, by core number (set once all
    /// are built), and the datagrams other cores handed to this one.
    pub(crate) peers: Vec<std::sync::Weak<Shared>>,
    pub(crate) inbox: VecDeque<(mpcore::PathId, SocketAddr, Vec<u8>, super::handoff::Via)>,
    /// Other cores' answers over the TCP carriers this core holds: (path, peer, record).
    pub(crate) tcp_back: VecDeque<(usize, SocketAddr, Vec<u8>)>,
    /// Which core holds the TCP carrier of the peers whose records other cores handed here.
    pub(crate) relays: super::handoff::Relays,
    /// Times the driver task ran (each a wake-up of its thread when the endpoint is idle).
    pub(crate) wakeups: u64,
    /// The last `dispatch` woke a reader.
    pub(crate) woke_reader: bool,
    /// `Options::qlog_dir`: the connections' event logs, written after each round.
    #[cfg(feature = "qlog")]
    pub(crate) qlog: Option<super::qlog::QlogFiles>,
    /// `Options::tickets`: where the tickets servers give go.
    pub(crate) tickets: Option<crate::TicketStore>,
}

/// What happened to a path's TCP carriers since its counters were updated (`driver::tcp`).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct TcpEvents {
    pub(crate) opened: u64,
    pub(crate) refused: u64,
    pub(crate) closed: u64,
    pub(crate) dropped: u64,
}

impl State {
    pub(crate) fn new(ep: Endpoint, epoch: Instant, paths: Vec<PathInfo>, names: Vec<String>) -> Self {
        Self {
            ep,
            epoch,
            slots: HashMap::new(),
            writers: Vec::new(),
            driver: None,
            accepted: VecDeque::new(),
            accept_waker: None,
            refs: 1,
            meters: vec![Meter::new(Model::default(), 0); paths.len()],
            paths,
            stopped: false,
            idle_waker: None,
            live: 0,
            commands: VecDeque::new(),
            peers: Vec::new(),
            inbox: VecDeque::new(),
            tcp_back: VecDeque::new(),
            relays: Default::default(),
            path_waker: None,
            names,
            wakeups: 0,
            woke_reader: false,
            #[cfg(feature = "qlog")]
            qlog: None,
            tickets: None,
        }
    }

    /// Microseconds since the endpoint was built: the core's clock.
    pub(crate) fn now(&self) -> Time {
        self.epoch.elapsed().as_micros() as Time
    }

    pub(crate) fn instant(&self, t: Time) -> Instant {
        self.epoch + Duration::from_micros(t)
    }

    /// A snapshot of the paths, indexed by `PathId` (removed ones included, with what they
    /// carried until their slot is reused), with their first packet and radio energy up to now.
    pub(crate) fn path_infos(&self) -> Vec<PathInfo> {
        let now = self.now();
        let mut v = self.paths.clone();
        for (info, meter) in v.iter_mut().zip(&self.meters) {
            info.first_packet = meter.first_packet().map(|t| self.instant(t));
            info.radio = (info.kind == Iface::Cellular).then(|| meter.estimate(now));
        }
        v
    }

    /// Installs path `p`'s view (a new address), with new counters, growing the table.
    pub(crate) fn set_path(&mut self, p: usize, info: PathInfo) {
        if self.paths.len() <= p {
            self.paths.resize_with(p + 1, PathInfo::vacant);
            self.meters.resize_with(p + 1, || Meter::new(Model::default(), 0));
        }
        self.paths[p] = info;
        self.meters[p] = Meter::new(Model::default(), self.now());
        wake(&mut self.path_waker);
    }

    /// The path to connect from: the first one up, of the first interface configured.
    pub(crate) fn primary(&self) -> Option<mpcore::PathId> {
        (0..self.paths.len())
            .filter(|&p| !self.paths[p].removed && self.paths[p].up)
            .min_by_key(|&p| self.paths[p].order)
            .map(|p| mpcore::PathId(p as u8))
    }

    /// Counts `count` datagrams of `bytes` in all on path `p` at `now`.
    pub(crate) fn count(&mut self, p: usize, now: Time, up: bool, count: usize, bytes: usize) {
        let io = &mut self.paths[p].io;
        if up {
            io.datagrams_sent += count as u64;
            io.bytes_sent += bytes as u64;
        } else {
            io.datagrams_received += count as u64;
            io.bytes_received += bytes as u64;
        }
        self.meters[p].packet(now, up, bytes);
    }

    /// Queues the application's request `c` about interface `name` for the driver.
    pub(crate) fn command(&mut self, name: &str, c: Command) -> crate::error::Result<()> {
        use crate::error::Error;
        if self.stopped {
            return Err(Error::EndpointClosed);
        }
        if !self.names.iter().any(|n| n == name) {
            return Err(Error::NoSuchInterface { name: name.to_string() });
        }
        self.commands.push_back(c);
        self.wake_driver();
        Ok(())
    }

    pub(crate) fn wake_driver(&self) {
        if let Some(w) = &self.driver {
            w.wake_by_ref();
        }
    }

    pub(crate) fn slot(&mut self, h: ConnHandle) -> &mut Slot {
        self.slots.entry(h).or_default()
    }

    /// A handle of the application starts using connection `h`'s slot.
    pub(crate) fn attach_slot(&mut self, h: ConnHandle) {
        self.slot(h).users += 1;
    }

    /// A handle of the application is done with connection `h`'s slot.
    pub(crate) fn detach_slot(&mut self, h: ConnHandle) {
        let slot = self.slot(h);
        slot.users = slot.users.saturating_sub(1);
        self.reclaim(h);
    }

    /// Frees connection `h`'s slot if nobody uses it and the endpoint forgot the connection;
    /// the table shrinks when it is mostly empty.
    fn reclaim(&mut self, h: ConnHandle) {
        if self.ep.conn(h).is_some() || self.slots.get(&h).is_none_or(|s| s.users > 0) {
            return;
        }
        self.slots.remove(&h);
        if self.slots.capacity() > 64 && self.slots.len() < self.slots.capacity() / 4 {
            self.slots.shrink_to(self.slots.len() * 2);
        }
    }

    /// Slots held (`MpEndpoint::tracked_connections`).
    pub(crate) fn slots_held(&self) -> usize {
        self.slots.len()
    }

    /// Hands the endpoint's events and accepted connections to the handles waiting for them.
    pub(crate) fn dispatch(&mut self) {
        #[cfg(feature = "qlog")]
        if let Some(q) = self.qlog.as_mut() {
            q.collect(&mut self.ep);
        }
        while let Some((h, ev)) = self.ep.poll_event() {
            if ev == Event::TicketReceived {
                if let Some(t) = self.tickets.as_ref().and_then(|_| self.ep.take_ticket(h)) {
                    self.tickets.iter().for_each(|s| s.insert(t.clone()));
                }
            }
            let path = match ev {
                Event::Verdict { path, .. } | Event::SubflowEstablished { path, .. } => Some(path),
                _ => ev.subflow().and_then(|id| self.ep.conn(h)?.subflow_path(id)),
            };
            let slot = self.slot(h);
            if ev == Event::Forgotten {
                #[cfg(feature = "qlog")]
                if let Some(q) = self.qlog.as_mut() {
                    q.finish(h);
                }
                self.reclaim(h);
                continue;
            }
            if ev != Event::Readable {
                use crate::conn_event::{QUEUE, UNREAD};
                let bound = if slot.events_read { QUEUE } else { UNREAD };
                if slot.events.len() >= bound {
                    slot.events.pop_front();
                    slot.events_lost += 1;
                }
                // Unread, the queue takes its whole (small) room at its first event: it never
                // grows afterwards, in a transfer's steady state or ever.
                if slot.events.capacity() < UNREAD {
                    slot.events.reserve_exact(UNREAD - slot.events.len());
                }
                slot.events.push_back(crate::conn_event::ConnEvent { at: Instant::now(), event: ev, path });
                wake(&mut slot.events_waker);
            }
            match ev {
                Event::Connected => {
                    slot.connected = true;
                    wake(&mut slot.connect);
                }
                Event::Readable if slot.orphaned => {
                    // Nobody will read: reset, as TCP does for data after a close. Only if
                    // bytes are waiting: the event may be older than the application's last
                    // read (the driver reports events after a round in which the lock was
                    // released around its system calls), and a stream that read everything
                    // and closed must close gracefully.
                    let now = self.now();
                    if let Some(c) = self.ep.conn_mut(h).filter(|c| c.readable() > 0) {
                        c.abort(now);
                    }
                }
                Event::Readable | Event::Finished => {
                    let woke = slot.read.is_some();
                    wake(&mut slot.read);
                    self.woke_reader |= woke;
                }
                Event::Closed { reason } => {
                    slot.closed = Some(reason);
                    for w in
                        [&mut slot.read, &mut slot.write, &mut slot.connect, &mut slot.close, &mut slot.events_waker]
                    {
                        wake(w);
                    }
                }
                other => tracing::debug!(conn = %h, event = ?other, "connection event"),
            }
        }
        // A connection drained (the endpoint forgot it): whoever waits for idleness checks.
        let live = self.ep.live_connections();
        if live < self.live {
            wake(&mut self.idle_waker);
        }
        self.live = live;
        while let Some(h) = self.ep.accept() {
            self.accepted.push_back(h);
            wake(&mut self.accept_waker);
        }
        // Writers blocked on a full send buffer: acknowledgements may have made room, and they
        // are woken once it is a good share of the buffer (`Connection::write_space`). Only the
        // blocked ones are looked at (not every connection: an idle one costs nothing here).
        let mut k = 0;
        while k < self.writers.len() {
            let h = self.writers[k];
            let room = self.ep.conn(h).is_none_or(|c| c.write_space() || c.is_closed());
            let slot = self.slot(h);
            if room || slot.write.is_none() {
                wake(&mut slot.write);
                self.writers.swap_remove(k);
            } else {
                k += 1;
            }
        }
    }

    /// A writer of connection `h` waits for room in its send buffer.
    pub(crate) fn wait_write(&mut self, h: ConnHandle, w: &Waker) {
        let slot = self.slot(h);
        let first = slot.write.is_none();
        store(&mut slot.write, w);
        if first && !self.writers.contains(&h) {
            self.writers.push(h);
        }
    }

    pub(crate) fn wake_all(&mut self) {
        for s in self.slots.values_mut() {
            for w in [&mut s.read, &mut s.write, &mut s.connect, &mut s.close, &mut s.events_waker] {
                wake(w);
            }
        }
        for w in [&mut self.accept_waker, &mut self.idle_waker, &mut self.path_waker] {
            wake(w);
        }
    }
}

/// Keeps `w` in `slot` without cloning it again when it is the same task.
pub(crate) fn store(slot: &mut Option<Waker>, w: &Waker) {
    match slot {
        Some(old) if old.will_wake(w) => {}
        _ => *slot = Some(w.clone()),
    }
}

pub(crate) fn wake(slot: &mut Option<Waker>) {
    if let Some(w) = slot.take() {
        w.wake();
    }
}
