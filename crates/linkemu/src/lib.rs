//! A userspace link emulator for one host (this kernel has no netem): a UDP relay that stands
//! between a multipath client and a server, with one emulated path per client source address.
//!
//! The client sends to the relay's front address. A datagram's source IP selects the path
//! (say 127.0.0.1 is WiFi, 127.0.0.2 cellular); for each client source the relay opens an
//! upstream socket towards the server, so the server sees one remote per subflow, as it
//! would behind two access networks. Each path and direction is a bottleneck: a rate, a
//! drop-tail queue bounded in time, a one-way delay, random loss, and a switch that takes
//! the path down (everything dropped, both ways) and up again. A path may carry a phone's
//! cellular radio (`PathSpec::radio`, `oracle::radio`): a datagram the client sends while it is
//! idle waits for its promotion, one for the client waits for paging and the promotion, and
//! the same state machine gives the radio's energy (`Emulator::radio_energy`). The radio is
//! asked when the relay sees a datagram (one for the client at the time it reaches the far
//! end of the bottleneck), so it sees each direction in time order.

mod rng;
pub use rng::Rng;

use oracle::radio::{Energy, Profile, Radio};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// One emulated path, the same both ways.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathSpec {
    pub one_way: Duration,
    /// Bits per second (0: unlimited).
    pub rate_bps: u64,
    /// The longest a datagram may wait in the bottleneck queue before being dropped.
    pub queue: Duration,
    /// Probability that a datagram is lost.
    pub loss: f64,
    /// The client's cellular radio on this path (`None`: always connected).
    pub radio: Option<Profile>,
}

impl PathSpec {
    /// The MultiMob emulation: `rtt` round trip at 10 Mbit/s with a queue of one
    /// bandwidth-delay product (which in time is one RTT).
    pub fn multimob(rtt: Duration) -> Self {
        Self { one_way: rtt / 2, rate_bps: 10_000_000, queue: rtt, loss: 0.0, radio: None }
    }

    /// This path with a cellular radio of `profile` at the client.
    pub fn with_radio(self, profile: Profile) -> Self {
        Self { radio: Some(profile), ..self }
    }
}

/// Per path: datagrams forwarded and dropped.
#[derive(Debug, Default)]
pub struct PathCounters {
    pub forwarded: AtomicU64,
    pub dropped: AtomicU64,
}

#[derive(Debug)]
struct Path {
    source: IpAddr,
    spec: PathSpec,
    down: AtomicBool,
    /// Loss probability in millionths (changed at run time).
    loss_ppm: AtomicU64,
    counters: PathCounters,
    up: Mutex<Pipe>,
    down_pipe: Mutex<Pipe>,
    radio: Option<Mutex<Radio>>,
    /// The radio's time zero.
    epoch: Instant,
}

impl Path {
    /// When the radio lets a datagram that reaches it at `at` cross (`at` without a radio),
    /// and records it as carried.
    fn through_radio(&self, up: bool, at: Instant, len: usize) -> Instant {
        let Some(r) = &self.radio else { return at };
        let mut r = r.lock().unwrap_or_else(|e| e.into_inner());
        let t = at.saturating_duration_since(self.epoch).as_micros() as u64;
        let air = if up { r.uplink(t) } else { r.downlink(t) };
        r.carried(air, up, len);
        self.epoch + Duration::from_micros(air)
    }
}

/// One direction's bottleneck: when its link is free again.
#[derive(Debug)]
struct Pipe {
    busy_until: Option<Instant>,
    rng: Rng,
}

impl Pipe {
    fn new(seed: u64) -> Self {
        Self { busy_until: None, rng: Rng::new(seed) }
    }

    /// When a datagram of `len` bytes arriving now leaves the far end, or `None` if it is
    /// dropped (queue full or random loss).
    fn admit(&mut self, spec: &PathSpec, loss: f64, len: usize, now: Instant) -> Option<Instant> {
        if loss > 0.0 && self.rng.chance() < loss {
            return None;
        }
        let start = self.busy_until.map_or(now, |b| b.max(now));
        if start - now > spec.queue {
            return None;
        }
        let bits = (len as u64 * 8).saturating_mul(1_000_000_000);
        let tx = Duration::from_nanos(bits.checked_div(spec.rate_bps).unwrap_or(0));
        self.busy_until = Some(start + tx);
        Some(start + tx + spec.one_way)
    }
}

struct Delayed {
    at: Instant,
    socket: Arc<UdpSocket>,
    to: SocketAddr,
    data: Vec<u8>,
}

/// A running emulator; dropping it stops the relay.
#[derive(Debug)]
pub struct Emulator {
    front: SocketAddr,
    paths: Arc<Vec<Path>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Emulator {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Emulator {
    /// Relays datagrams sent to a new front address (on `front_ip`) to `server`, one path per
    /// client source address in `paths`. Datagrams from any other source are dropped.
    pub async fn start(front_ip: IpAddr, server: SocketAddr, paths: &[(IpAddr, PathSpec)]) -> std::io::Result<Self> {
        let front = Arc::new(UdpSocket::bind(SocketAddr::new(front_ip, 0)).await?);
        let addr = front.local_addr()?;
        let paths: Arc<Vec<Path>> = Arc::new(
            paths
                .iter()
                .enumerate()
                .map(|(k, (ip, spec))| Path {
                    source: *ip,
                    spec: *spec,
                    down: AtomicBool::new(false),
                    loss_ppm: AtomicU64::new((spec.loss * 1e6) as u64),
                    counters: PathCounters::default(),
                    up: Mutex::new(Pipe::new(0x9e37_79b9 + k as u64)),
                    down_pipe: Mutex::new(Pipe::new(0x7f4a_7c15 + k as u64)),
                    radio: spec.radio.map(|p| Mutex::new(Radio::new(p, 0, 0))),
                    epoch: Instant::now(),
                })
                .collect(),
        );
        // One delay line for every path and direction, released in order of due time.
        let (tx, rx) = mpsc::unbounded_channel::<Delayed>();
        let mut tasks = vec![tokio::spawn(release(rx))];
        let relay = Relay {
            front: front.clone(),
            server,
            paths: paths.clone(),
            tx,
            upstream: HashMap::new(),
            downstream: Vec::new(),
        };
        tasks.push(tokio::spawn(relay.run()));
        Ok(Self { front: addr, paths, tasks })
    }

    /// Where clients send.
    pub fn addr(&self) -> SocketAddr {
        self.front
    }

    /// Takes path `k` down (every datagram dropped, both ways) or brings it back.
    pub fn set_down(&self, k: usize, down: bool) {
        if let Some(p) = self.paths.get(k) {
            p.down.store(down, Ordering::Relaxed);
        }
    }

    pub fn set_loss(&self, k: usize, loss: f64) {
        if let Some(p) = self.paths.get(k) {
            p.loss_ppm.store((loss.clamp(0.0, 1.0) * 1e6) as u64, Ordering::Relaxed);
        }
    }

    /// The energy of path `k`'s radio from the emulator's start until now, if it has one.
    pub fn radio_energy(&self, k: usize) -> Option<Energy> {
        let p = self.paths.get(k)?;
        let r = p.radio.as_ref()?.lock().unwrap_or_else(|e| e.into_inner());
        Some(r.energy(Instant::now().saturating_duration_since(p.epoch).as_micros() as u64))
    }

    /// (forwarded, dropped) datagrams on path `k`, both directions.
    pub fn counters(&self, k: usize) -> (u64, u64) {
        self.paths.get(k).map_or((0, 0), |p| {
            (p.counters.forwarded.load(Ordering::Relaxed), p.counters.dropped.load(Ordering::Relaxed))
        })
    }
}

/// Sends each delayed datagram at its due time, earliest first (a heap: the paths' delays
/// differ, so admission order is not due order).
async fn release(mut rx: mpsc::UnboundedReceiver<Delayed>) {
    let mut heap: std::collections::BinaryHeap<Due> = std::collections::BinaryHeap::new();
    let mut seq = 0u64;
    loop {
        let next = heap.peek().map(|d| d.0);
        tokio::select! {
            item = rx.recv() => match item {
                Some(d) => {
                    seq += 1;
                    heap.push(Due(d.at, seq, d));
                }
                None => return,
            },
            _ = sleep_opt(next) => {
                let now = Instant::now();
                while heap.peek().is_some_and(|d| d.0 <= now) {
                    if let Some(Due(_, _, d)) = heap.pop() {
                        let _ = d.socket.try_send_to(&d.data, d.to);
                    }
                }
            }
        }
    }
}

async fn sleep_opt(at: Option<Instant>) {
    match at {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// Heap entry: earliest due first, then admission order.
struct Due(Instant, u64, Delayed);

impl PartialEq for Due {
    fn eq(&self, o: &Self) -> bool {
        (self.0, self.1) == (o.0, o.1)
    }
}
impl Eq for Due {}
impl PartialOrd for Due {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Due {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (o.0, o.1).cmp(&(self.0, self.1))
    }
}

struct Relay {
    front: Arc<UdpSocket>,
    server: SocketAddr,
    paths: Arc<Vec<Path>>,
    tx: mpsc::UnboundedSender<Delayed>,
    /// Client source → its upstream socket towards the server.
    upstream: HashMap<SocketAddr, Arc<UdpSocket>>,
    /// The tasks relaying each upstream socket's answers; they end with the relay.
    downstream: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for Relay {
    fn drop(&mut self) {
        for t in &self.downstream {
            t.abort();
        }
    }
}

impl Relay {
    async fn run(mut self) {
        let mut buf = vec![0u8; 65_536];
        loop {
            let Ok((n, from)) = self.front.recv_from(&mut buf).await else { continue };
            let Some(k) = self.paths.iter().position(|p| p.source == from.ip()) else { continue };
            let up = match self.upstream.get(&from) {
                Some(s) => s.clone(),
                None => {
                    let local = if self.server.is_ipv6() { "[::1]:0" } else { "127.0.0.1:0" };
                    let Ok(s) = UdpSocket::bind(local.parse::<SocketAddr>().expect("a literal")).await else {
                        continue;
                    };
                    let s = Arc::new(s);
                    self.upstream.insert(from, s.clone());
                    self.downstream.push(tokio::spawn(downstream(
                        s.clone(),
                        self.front.clone(),
                        from,
                        k,
                        self.paths.clone(),
                        self.tx.clone(),
                    )));
                    s
                }
            };
            forward(&self.paths[k], true, &buf[..n], up, self.server, &self.tx);
        }
    }
}

/// Server → client on one upstream socket.
async fn downstream(
    up: Arc<UdpSocket>,
    front: Arc<UdpSocket>,
    client: SocketAddr,
    k: usize,
    paths: Arc<Vec<Path>>,
    tx: mpsc::UnboundedSender<Delayed>,
) {
    let mut buf = vec![0u8; 65_536];
    while let Ok((n, _)) = up.recv_from(&mut buf).await {
        forward(&paths[k], false, &buf[..n], front.clone(), client, &tx);
    }
}

fn forward(
    p: &Path,
    up: bool,
    data: &[u8],
    socket: Arc<UdpSocket>,
    to: SocketAddr,
    tx: &mpsc::UnboundedSender<Delayed>,
) {
    let now = Instant::now();
    let loss = p.loss_ppm.load(Ordering::Relaxed) as f64 / 1e6;
    let due = if p.down.load(Ordering::Relaxed) {
        None
    } else if up {
        // The phone's radio first (a promotion), then the bottleneck.
        let air = p.through_radio(true, now, data.len());
        p.up.lock().unwrap_or_else(|e| e.into_inner()).admit(&p.spec, loss, data.len(), air)
    } else {
        // The bottleneck, then the radio (paging and a promotion for an idle phone).
        let at = p.down_pipe.lock().unwrap_or_else(|e| e.into_inner()).admit(&p.spec, loss, data.len(), now);
        at.map(|at| p.through_radio(false, at, data.len()))
    };
    match due {
        Some(at) => {
            p.counters.forwarded.fetch_add(1, Ordering::Relaxed);
            let _ = tx.send(Delayed { at, socket, to, data: data.to_vec() });
        }
        None => {
            p.counters.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> PathSpec {
        PathSpec {
            one_way: Duration::from_millis(10),
            rate_bps: 8_000_000,
            queue: Duration::from_millis(5),
            loss: 0.0,
            radio: None,
        }
    }

    #[test]
    fn the_bottleneck_paces_queues_and_drops() {
        let now = Instant::now();
        let mut p = Pipe::new(1);
        // 1,000 bytes at 8 Mbit/s take 1 ms, then 10 ms of delay.
        assert_eq!(p.admit(&spec(), 0.0, 1000, now), Some(now + Duration::from_millis(11)));
        assert_eq!(p.admit(&spec(), 0.0, 1000, now), Some(now + Duration::from_millis(12)));
        // The queue holds 5 ms: four more wait at most 5 ms, the next is dropped.
        for _ in 0..4 {
            assert!(p.admit(&spec(), 0.0, 1000, now).is_some());
        }
        assert_eq!(p.admit(&spec(), 0.0, 1000, now), None);
        // Once the link has drained, a datagram goes through at once.
        let later = now + Duration::from_secs(1);
        assert_eq!(p.admit(&spec(), 0.0, 1000, later), Some(later + Duration::from_millis(11)));
    }

    #[test]
    fn random_loss_is_near_its_rate() {
        let mut p = Pipe::new(7);
        let mut s = spec();
        s.rate_bps = 0;
        let now = Instant::now();
        let lost = (0..10_000).filter(|_| p.admit(&s, 0.3, 100, now).is_none()).count();
        assert!((2_700..3_300).contains(&lost), "{lost}");
    }

    /// A path without a rate limit, `one_way_ms` each way.
    fn unlimited(one_way_ms: u64) -> PathSpec {
        PathSpec { one_way: Duration::from_millis(one_way_ms), rate_bps: 0, queue: Duration::from_secs(1), ..spec() }
    }

    #[tokio::test]
    async fn relays_with_delay_per_source_and_drops_when_down() {
        let server = UdpSocket::bind("127.0.0.1:0").await.expect("binds");
        let saddr = server.local_addr().expect("bound");
        let fast = unlimited(5);
        let slow = unlimited(40);
        let ip1: IpAddr = "127.0.0.1".parse().expect("literal");
        let ip2: IpAddr = "127.0.0.2".parse().expect("literal");
        let emu = Emulator::start(ip1, saddr, &[(ip1, fast), (ip2, slow)]).await.expect("starts");
        let c1 = UdpSocket::bind("127.0.0.1:0").await.expect("binds");
        let c2 = UdpSocket::bind("127.0.0.2:0").await.expect("binds");
        let mut buf = [0u8; 64];
        // The least of three round trips: a loaded machine (CI's) may stall one, never shorten it.
        for (c, min, max) in [(&c1, 10, 60), (&c2, 80, 200)] {
            let mut least = u128::MAX;
            for _ in 0..3 {
                let t = std::time::Instant::now();
                c.send_to(b"ping", emu.addr()).await.expect("sends");
                let (n, from) = server.recv_from(&mut buf).await.expect("relayed");
                assert_eq!(&buf[..n], b"ping");
                server.send_to(b"pong", from).await.expect("sends");
                let (n, back) = c.recv_from(&mut buf).await.expect("relayed back");
                assert_eq!((&buf[..n], back), (&b"pong"[..], emu.addr()));
                least = least.min(t.elapsed().as_millis());
            }
            assert!((min..max).contains(&least), "rtt {least} ms not in {min}..{max}");
        }
        emu.set_down(0, true);
        c1.send_to(b"lost", emu.addr()).await.expect("sends");
        assert!(tokio::time::timeout(Duration::from_millis(100), server.recv_from(&mut buf)).await.is_err());
        assert_eq!(emu.counters(0), (6, 1));
        emu.set_down(0, false);
        c1.send_to(b"again", emu.addr()).await.expect("sends");
        let (n, _) = server.recv_from(&mut buf).await.expect("relayed");
        assert_eq!(&buf[..n], b"again");
    }

    /// A path with an LTE radio: the first datagram of an idle phone waits for the promotion
    /// (0.26 s), the answer and a second exchange right after pass at once; one promotion in
    /// the radio's energy.
    #[tokio::test]
    async fn a_radio_path_delays_the_first_datagram_by_the_promotion() {
        let server = UdpSocket::bind("127.0.0.1:0").await.expect("binds");
        let saddr = server.local_addr().expect("bound");
        let spec = unlimited(5).with_radio(Profile::LTE);
        let ip: IpAddr = "127.0.0.1".parse().expect("literal");
        let emu = Emulator::start(ip, saddr, &[(ip, spec)]).await.expect("starts");
        let c = UdpSocket::bind("127.0.0.1:0").await.expect("binds");
        let mut buf = [0u8; 64];
        let mut rtts = Vec::new();
        for _ in 0..4 {
            let t = std::time::Instant::now();
            c.send_to(b"ping", emu.addr()).await.expect("sends");
            let (_, from) = server.recv_from(&mut buf).await.expect("relayed");
            server.send_to(b"pong", from).await.expect("sends");
            c.recv_from(&mut buf).await.expect("relayed back");
            rtts.push(t.elapsed().as_millis());
        }
        // At least one promotion, and not two (530 ms): a loaded machine may stall an exchange,
        // so the bound above is loose and the connected radio's is the least of three.
        assert!((265..530).contains(&rtts[0]), "the promotion: {rtts:?}");
        assert!(rtts[1..].iter().min() < Some(&100), "connected: {rtts:?}");
        let e = emu.radio_energy(0).expect("a radio");
        assert_eq!(e.promotions, 1);
        assert!(e.above_idle_joules > 0.26 * 1.2, "{e:?}");
        assert!(emu.radio_energy(1).is_none());
    }
}
