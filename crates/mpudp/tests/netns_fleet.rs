//! Issue 38: three servers of a fleet behind a balancer that is the kernel's own packet path
//! (the nftables ruleset `mpudp::fleet` writes), and a client with two addresses (WiFi and
//! cellular) whose one endpoint opens every connection. Root only; elsewhere the test says why
//! it skips, and `MPUDP_REQUIRE_NETNS` (set by `.ci/run`) makes a missing tool a failure.
//!
//! ```text
//!  client ns                     balancer ns                       backend ns (k = 0, 1, 2)
//!  c0 10.93.1.1 <--veth--> 10.93.1.2                 10.93.1k.1 <--veth--> 10.93.1k.2 (server k)
//!  c1 10.93.2.1 <--veth--> 10.93.2.2   service 10.93.9.1:5201 (rewritten, no conntrack)
//! ```
//!
//! The same runs over IPv6 (issue 56: the balancer's `ip6` rules, `fd00:93:S::H` for
//! `10.93.S.H`).
//!
//! What it shows: 100 connections spread over the three (none above 45 %); every join from
//! the cellular address, MP_JOIN for half of them and FAST_JOIN for the others, reaches the
//! server that owns the connection (no JOIN with a token its server does not know); a WiFi failover goes on over cellular as with one server; a drained
//! server gets no new connection while its own go on; a killed server's clients learn it at
//! their next request (a stateless reset from the server that now has its id) and connect
//! again to the others, and the others' connections do not notice.
#![allow(clippy::unwrap_used)]

mod common;

use mpudp::fleet::{Backend, Balancer};
use mpudp::{Iface, Interface, MpEndpoint, MpListener, MpStream, Options};
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};
use testbed::fleet::{nft_missing, FleetBed};
use testbed::Reap;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};

const PORT: u16 = 5201;
const SECRET: [u8; 32] = [0x5e; 32];
/// Server `k`'s own TCP port at the balancer (`Balancer::tcp_base` + k, `Server::tcp_port`).
const TCP_BASE: u16 = 6000;

/// Loads the balancer's ruleset for `backends` (one atomic `nft -f`), TCP carriers included.
fn balance(bed: &FleetBed, backends: &[Backend]) -> Result<(), String> {
    let b = Balancer {
        service: bed.service(PORT),
        servers: 3,
        backends: backends.to_vec(),
        table: "mpudp_fleet".into(),
        tcp_base: Some(TCP_BASE),
    };
    bed.balance(&b.nft_ruleset()?)
}

/// A helper process: this test binary in namespace `ns` with `MPUDP_FLEET_ROLE=role`.
struct Peer {
    /// Killed when dropped (the test kills a server so).
    _child: Reap,
    to: ChildStdin,
    from: std::io::Lines<BufReader<std::process::ChildStdout>>,
    /// Its namespace, naming its lines in the test's output (the tests run at once).
    ns: String,
}

impl Peer {
    fn start(ns: &str, role: &str, service: SocketAddr) -> Self {
        Self::start_with(ns, role, service, &[])
    }

    /// `start`, with `env` set for the helper too.
    fn start_with(ns: &str, role: &str, service: SocketAddr, env: &[(&str, &str)]) -> Self {
        let exe = std::env::current_exe().unwrap();
        let mut child: Child = Command::new("ip")
            .args(["netns", "exec", ns])
            .arg(exe)
            .args(["--ignored", "--exact", "fleet_peer", "--nocapture", "--test-threads", "1"])
            .env("MPUDP_FLEET_ROLE", role)
            .env("MPUDP_FLEET_SERVICE", service.to_string())
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let to = child.stdin.take().unwrap();
        let from = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut p = Self { _child: Reap(child), to, from, ns: ns.to_string() };
        p.until("ready");
        p
    }

    /// Sends a command; returns the lines up to its `end` line.
    fn ask(&mut self, cmd: &str) -> Vec<Vec<String>> {
        writeln!(self.to, "{cmd}").unwrap();
        self.until("end")
    }

    fn until(&mut self, last: &str) -> Vec<Vec<String>> {
        let mut lines = Vec::new();
        for line in self.from.by_ref() {
            let line = line.unwrap();
            eprintln!("{}: {line}", self.ns);
            let words: Vec<String> = line.split_whitespace().map(String::from).collect();
            if words.first().map(String::as_str) == Some(last) {
                return lines;
            }
            lines.push(words);
        }
        panic!("the helper ended before `{last}`");
    }
}

/// Whether the namespace tests cannot run here (they say why).
fn skip() -> bool {
    let why = testbed::unavailable().or_else(nft_missing);
    if let Some(why) = why {
        eprintln!("skipped: {why}");
    }
    why.is_some()
}

/// The fleet's three servers, all in service, as the balancer knows them.
fn backends(bed: &FleetBed) -> Vec<Backend> {
    let backend =
        |k: u8| Backend { id: k, addr: bed.backend_ip(k.into()).parse().unwrap(), accepting: true, alive: true };
    vec![backend(0), backend(1), backend(2)]
}

/// `conn I server K` lines: the server of each connection.
fn servers_of(lines: &[Vec<String>]) -> Vec<(usize, u8)> {
    lines
        .iter()
        .filter(|w| w.len() >= 4 && w[0] == "conn" && w[2] == "server")
        .map(|w| (w[1].parse().unwrap(), w[3].parse().unwrap()))
        .collect()
}

#[test]
fn a_fleet_of_three_behind_the_kernels_balancer() {
    if skip() {
        return;
    }
    let bed = FleetBed::new("fl", 93, 3).expect("setting up the namespaces");
    fleet_of_three(&bed, 100);
}

#[test]
fn a_fleet_of_three_behind_the_kernels_balancer_over_ipv6() {
    if skip() {
        return;
    }
    let bed = FleetBed::new_v6("fl6", 94, 3).expect("setting up the namespaces");
    fleet_of_three(&bed, 100);
}

/// Issue 56: TCP carriers through the balancer. The client's WiFi drops UDP: each connection
/// opens on cellular and joins WiFi over TCP, to the port of its own server that the server
/// named (`tcp_port`), which the balancer maps to that server alone; the requests go over
/// WiFi's TCP, and on over cellular when WiFi fails, each answered by its own server.
#[test]
fn a_fleet_carries_tcp_where_wifi_drops_udp() {
    if skip() {
        return;
    }
    let bed = FleetBed::new("flt", 92, 3).expect("setting up the namespaces");
    bed.block_udp(0, true).expect("the firewall rule");
    balance(&bed, &backends(&bed)).expect("loading the ruleset");
    let service = bed.service(PORT);
    let _servers: Vec<Peer> = (0..3).map(|k| Peer::start(bed.backend(k), &format!("server{k}"), service)).collect();
    let mut client = Peer::start(bed.client(), "client", service);
    let l = client.ask("tcp 12");
    let owner = servers_of(&l);
    let joined: Vec<f64> = l.iter().filter(|w| w[0] == "tcp").map(|w| w[2].parse().unwrap()).collect();
    eprintln!("WiFi over TCP joined after {joined:?} ms; servers {owner:?}");
    assert_eq!((owner.len(), joined.len()), (12, 12), "every connection joined WiFi over TCP and was answered");
    let used: std::collections::BTreeSet<u8> = owner.iter().map(|o| o.1).collect();
    assert!(used.len() > 1, "the connections spread over the servers: {owner:?}");
    // WiFi fails: each connection goes on over cellular, with its own server.
    bed.set_link(0, false).unwrap();
    let l = client.ask("requests");
    assert_eq!(servers_of(&l), owner, "each answered by its own server over cellular");
    client.ask("quit");
}

/// Issue 56: 0-RTT data through the balancer is taken at most once per flight, and tickets
/// outlive a key rotation across the fleet. A client's resumed first flight (its INITIAL and
/// EARLY packets, built by the protocol's core and sent by hand) is sent from the WiFi
/// address, then replayed from the cellular one: while the ticket's issuer takes new
/// connections (the balancer sends the replay there: its record refuses it), once it is
/// drained (another server: not the issuer, it takes no early data) and once it is dead. Then,
/// with keys rotating every 6 s (a ticket lives 6 s), a ticket sealed late in an epoch by one
/// server resumes a connection at another server after the rotation.
#[test]
fn early_data_through_the_balancer_is_taken_once_and_tickets_outlive_a_rotation() {
    if skip() {
        return;
    }
    let bed = FleetBed::new("flr", 91, 3).expect("setting up the namespaces");
    let mut fleet = backends(&bed);
    balance(&bed, &fleet).expect("loading the ruleset");
    let service = bed.service(PORT);
    let rotation = [("MPUDP_FLEET_ROTATION_S", "6")];
    let mut servers: Vec<Option<Peer>> =
        (0..3).map(|k| Some(Peer::start_with(bed.backend(k), &format!("server{k}"), service, &rotation))).collect();
    let mut client = Peer::start(bed.client(), "client", service);
    // (resumed, early data taken), summed over the servers alive.
    let totals = |servers: &mut Vec<Option<Peer>>| -> (u64, u64) {
        let mut t = (0, 0);
        for s in servers.iter_mut().flatten() {
            let l = s.ask("stats");
            let w = l.iter().find(|w| w[0] == "stats").unwrap();
            t.0 += w[6].parse::<u64>().unwrap();
            t.1 += w[7].parse::<u64>().unwrap();
        }
        t
    };
    let l = client.ask("capture");
    let issuer: usize = l.iter().find(|w| w[0] == "issuer").unwrap()[1].parse().unwrap();
    let before = totals(&mut servers);
    client.ask("send c0");
    let sent = totals(&mut servers);
    assert_eq!(sent.1 - before.1, 1, "the first flight's early data taken, at its issuer {issuer}");
    client.ask("send c1");
    assert_eq!(totals(&mut servers).1, sent.1, "a replay from another address: refused by the issuer's record");
    fleet[issuer].accepting = false;
    balance(&bed, &fleet).unwrap();
    client.ask("send c1");
    assert_eq!(totals(&mut servers).1, sent.1, "after a drain: another server, which takes no early data");
    drop(servers[issuer].take());
    fleet[issuer].alive = false;
    balance(&bed, &fleet).unwrap();
    let alive = totals(&mut servers);
    client.ask("send c1");
    assert_eq!(totals(&mut servers).1, alive.1, "after a kill: another server, which takes no early data");
    eprintln!("early data taken once of 4 sendings of the flight (the issuer, then drained, then dead)");
    // A ticket sealed by a server still alive, its issuer then drained: after the next
    // rotation it resumes a connection at another server.
    let l = client.ask("ticket-late-in-epoch");
    let second: usize = l.iter().find(|w| w[0] == "issuer").unwrap()[1].parse().unwrap();
    if second != issuer {
        fleet[second].accepting = false;
        balance(&bed, &fleet).unwrap();
    }
    let before = totals(&mut servers);
    let l = client.ask("resume-next-epoch");
    let (resumed, early) = {
        let t = totals(&mut servers);
        (t.0 - before.0, t.1 - before.1)
    };
    eprintln!("after the rotation: {l:?}, resumed {resumed}, early {early}");
    assert_eq!((resumed, early), (1, 0), "resumed by another server after a key rotation, at one round trip");
    client.ask("quit");
}

/// The scenario of the module's text on `bed`, with `connections` connections first.
fn fleet_of_three(bed: &FleetBed, connections: usize) {
    let mut fleet = backends(bed);
    balance(bed, &fleet).expect("loading the ruleset");
    let service = bed.service(PORT);
    let mut servers: Vec<Peer> = (0..3).map(|k| Peer::start(bed.backend(k), &format!("server{k}"), service)).collect();
    let mut client = Peer::start(bed.client(), "client", service);

    // The connections from one client endpoint, each joined from the cellular address.
    let lines = client.ask(&format!("connect {connections}"));
    let owner = servers_of(&lines);
    assert_eq!(owner.len(), connections, "every connection answered");
    let per: Vec<usize> = (0..3u8).map(|k| owner.iter().filter(|o| o.1 == k).count()).collect();
    eprintln!("connections per server: {per:?}");
    // Each connection's server is a uniform pick of three: at most the mean and four standard
    // deviations (53 % of 100; a server that takes everything, or none, fails).
    let most = connections as f64 / 3.0 + 4.0 * (connections as f64 * 2.0 / 9.0).sqrt();
    assert!(per.iter().all(|&n| (n as f64) <= most && n > 0), "spread: {per:?}");
    let stats = |servers: &mut Vec<Peer>, k: usize| -> (u64, u64, u64, u64, u64) {
        let l = servers[k].ask("stats");
        let w = l.iter().find(|w| w[0] == "stats").unwrap().clone();
        let n = |i: usize| w[i].parse::<u64>().unwrap();
        (n(1), n(2), n(3), n(6), n(7))
    };
    let mut misrouted = 0;
    for (k, &n) in per.iter().enumerate() {
        let (accepted, unknown_token, joins, _, _) = stats(&mut servers, k);
        assert_eq!(accepted as usize, n, "server {k} accepted its connections");
        assert_eq!(joins as usize, n, "server {k}: one join per connection");
        misrouted += unknown_token;
    }
    assert_eq!(misrouted, 0, "JOINs that reached a server not owning their token");

    // Resumed with 0-RTT: every resumed INITIAL names its ticket's issuer (the routing byte the
    // ticket gave), and the balancer takes it there, the one server that takes its early data
    // (issue 56). Without that byte the balancer spread them as fresh INITIALs, and about two
    // in three reached a server that resumed them at one round trip.
    const RESUMED: usize = 32;
    let before: Vec<(u64, u64)> = (0..3).map(|k| stats(&mut servers, k)).map(|s| (s.3, s.4)).collect();
    let l = client.ask(&format!("resume {RESUMED}"));
    assert_eq!(l.iter().filter(|w| w[0] == "resumed").count(), RESUMED, "every resumed connection answered");
    let after: Vec<(u64, u64)> = (0..3).map(|k| stats(&mut servers, k)).map(|s| (s.3, s.4)).collect();
    let resumed: u64 = (0..3).map(|k| after[k].0 - before[k].0).sum();
    let early: u64 = (0..3).map(|k| after[k].1 - before[k].1).sum();
    eprintln!(
        "resumed {resumed}, early data taken {early}, per server {:?}",
        (0..3).map(|k| after[k].1 - before[k].1).collect::<Vec<_>>()
    );
    assert_eq!((resumed, early), (RESUMED as u64, RESUMED as u64), "each resumed at its issuer, its 0-RTT data taken");

    // WiFi fails: every connection's next request goes on over cellular.
    bed.set_link(0, false).unwrap();
    let l = client.ask("requests");
    assert_eq!(servers_of(&l), owner, "each answered by its own server over cellular");
    bed.set_link(0, true).unwrap();
    bed.route(0).unwrap();

    // Server 2 drained: its connections go on, new ones go elsewhere.
    fleet[2].accepting = false;
    balance(bed, &fleet).unwrap();
    let l = client.ask("requests");
    assert_eq!(servers_of(&l), owner, "the drained server's connections go on");
    let l = client.ask("connect 20");
    let fresh = servers_of(&l);
    assert_eq!(fresh.len(), 20);
    assert!(fresh.iter().all(|o| o.1 != 2), "a new connection on the drained server: {fresh:?}");

    // Server 1 killed; the ruleset gives its id to a live server.
    drop(servers.remove(1));
    fleet[1].alive = false;
    balance(bed, &fleet).unwrap();
    let l = client.ask("requests");
    let answered = servers_of(&l);
    let reset: Vec<(usize, u64)> =
        l.iter().filter(|w| w[0] == "reset").map(|w| (w[1].parse().unwrap(), w[2].parse().unwrap())).collect();
    let of_1: Vec<usize> = owner.iter().chain(&fresh).filter(|o| o.1 == 1).map(|o| o.0).collect();
    assert_eq!(reset.iter().map(|r| r.0).collect::<Vec<_>>(), of_1, "exactly the dead server's clients were reset");
    assert!(answered.iter().all(|o| o.1 != 1) && answered.len() + of_1.len() == connections + 20, "{answered:?}");
    let mut ms: Vec<u64> = reset.iter().map(|r| r.1).collect();
    ms.sort_unstable();
    eprintln!("a dead server's client learned it in {} ms (median; max {} ms)", ms[ms.len() / 2], ms[ms.len() - 1]);
    // Not a performance bound (veth RTTs are microseconds): a reset, not a timeout of seconds.
    assert!(ms[ms.len() - 1] < 3_000, "{ms:?}");
    // They connect again, to the others.
    let l = client.ask(&format!("connect {}", of_1.len()));
    assert!(servers_of(&l).iter().all(|o| o.1 == 0), "server 2 is drained and 1 dead: {l:?}");
    let mut us: Vec<u64> =
        l.iter().filter(|w| w.len() >= 6 && w[4] == "answered_us").map(|w| w[5].parse().unwrap()).collect();
    us.sort_unstable();
    eprintln!("connected again and answered in {} us (median of {})", us[us.len() / 2], us.len());
    client.ask("quit");
}

/// The processes of the tests above; does nothing without their environment.
#[test]
#[ignore = "helper process of the fleet tests"]
fn fleet_peer() {
    let Ok(role) = std::env::var("MPUDP_FLEET_ROLE") else { return };
    let service: SocketAddr = std::env::var("MPUDP_FLEET_SERVICE").unwrap().parse().unwrap();
    println!();
    let rt = tokio::runtime::Runtime::new().unwrap();
    match role.strip_prefix("server") {
        Some(k) => rt.block_on(server(k.parse().unwrap(), service)),
        None => rt.block_on(client(service)),
    }
}

/// Server `k` (it takes fast joins too): answers each one-byte request with its id; `stats` prints what it accepted,
/// the JOINs whose token it did not know, and the joins it took.
async fn server(k: u8, service: SocketAddr) {
    let mut opts = Options::new().identity(common::identity()).fast_join(true).issue_tickets(true);
    opts.config_mut().server.fleet = Some(mpcore::Fleet { server: k, servers: 3, secret: SECRET });
    opts.config_mut().server.tcp_port = Some(TCP_BASE + u16::from(k));
    if let Ok(s) = std::env::var("MPUDP_FLEET_ROTATION_S") {
        // Ticket keys that rotate within the test (a ticket lives at most one epoch).
        let s: u64 = s.parse().unwrap();
        opts.config_mut().resumption.rotation_s = s;
        opts.config_mut().resumption.lifetime_s = s as u32;
    }
    let l = std::sync::Arc::new(MpListener::bind(any_address(service), opts).unwrap());
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let joins = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (l2, a2, j2) = (l.clone(), accepted.clone(), joins.clone());
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l2.accept().await {
            a2.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let j = j2.clone();
            tokio::spawn(async move {
                let mut joined = false;
                let mut req = [0u8; 1];
                while s.read_exact(&mut req).await.is_ok() {
                    if !joined && s.stats().is_some_and(|st| st.subflows.len() > 1) {
                        joined = true;
                        j.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    if s.write_all(&[k]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    println!("ready");
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(cmd)) = stdin.next_line().await {
        if cmd == "stats" {
            let a = accepted.load(std::sync::atomic::Ordering::Relaxed);
            let j = joins.load(std::sync::atomic::Ordering::Relaxed);
            let h = l.endpoint().handshake_counters();
            let d = l.drops();
            println!(
                "stats {a} {} {j} {} {} {} {}",
                d.unknown_token, h.resets_sent, d.unknown_cid, h.resumed, h.early_accepted
            );
            println!("end");
        }
    }
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}

/// The ticket `store` receives for `service`, taken out.
async fn wait_ticket(store: &mpudp::TicketStore, service: SocketAddr) -> mpcore::ResumptionTicket {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(t) = store.take(service) {
            return t;
        }
        assert!(Instant::now() < deadline, "no ticket");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// A ticket from `service`: a connection with `opts` makes one request and waits for its
/// NEW_TICKET; the issuing server's id is printed (`issuer K`).
async fn ticket_after_a_request(opts: Options, service: SocketAddr) -> mpcore::ResumptionTicket {
    let store = mpudp::TicketStore::new();
    let ep = MpEndpoint::client(opts.tickets(store.clone())).unwrap();
    let mut s = ep.connect(service).await.unwrap();
    request(&mut s).await.unwrap();
    let t = wait_ticket(&store, service).await;
    println!("issuer {}", mpcore::Steering::server_of(t.route.unwrap(), 3));
    s.shutdown().await.unwrap();
    t
}

/// The datagrams of a resumed first flight with `ticket` and a one-byte request as 0-RTT data
/// (its INITIAL and EARLY packets), as the protocol's core writes them at once.
fn first_flight(service: SocketAddr, ticket: &mpcore::ResumptionTicket) -> Vec<Vec<u8>> {
    let mut c = mpcore::Config::default();
    c.transport.server_keys = vec![common::identity().public_key()];
    c.resumption.accept = true;
    let any: SocketAddr = if service.is_ipv6() { "[::]:0".parse().unwrap() } else { "0.0.0.0:0".parse().unwrap() };
    let paths = vec![mpcore::LocalPath { addr: any, iface: Iface::Wifi, backup: false }];
    let mut ep = mpcore::Endpoint::new(c, paths, false).unwrap();
    ep.set_unix_time(0, unix_ms());
    let h = ep.connect_resuming(0, mpcore::PathId(0), service, ticket).unwrap();
    ep.conn_mut(h).unwrap().write_early(b"?").unwrap();
    let mut buf = vec![0u8; 2048];
    let mut out = Vec::new();
    while let Some(t) = ep.poll_transmit(0, &mut buf) {
        out.push(buf[..t.len].to_vec());
    }
    assert!(out.len() >= 2, "an INITIAL and an EARLY packet: {} datagrams", out.len());
    out
}

/// The wildcard address of `service`'s family, on its port.
fn any_address(service: SocketAddr) -> SocketAddr {
    let any: std::net::IpAddr = if service.is_ipv6() { "::".parse().unwrap() } else { "0.0.0.0".parse().unwrap() };
    SocketAddr::new(any, service.port())
}

/// One request on `s`: the server's id, or how the connection ended and after how long.
async fn request(s: &mut MpStream) -> Result<u8, (std::io::Error, u64)> {
    let t = Instant::now();
    let r = tokio::time::timeout(Duration::from_secs(10), async {
        s.write_all(b"?").await?;
        let mut id = [0u8; 1];
        s.read_exact(&mut id).await?;
        Ok::<u8, std::io::Error>(id[0])
    })
    .await;
    let ms = t.elapsed().as_millis() as u64;
    match r {
        Ok(Ok(id)) => Ok(id),
        Ok(Err(e)) => Err((e, ms)),
        Err(_) => Err((std::io::Error::new(std::io::ErrorKind::TimedOut, "no answer in 10 s"), ms)),
    }
}

/// The client: two endpoints on c0 (WiFi) and c1 (cellular), one joining with MP_JOIN and one
/// with FAST_JOIN; `connect N` opens N connections, from each in turn, and waits for each to
/// join c1; `requests` asks every live one once.
async fn client(service: SocketAddr) {
    let v6 = service.is_ipv6();
    let opts = |fast: bool| {
        common::client_options()
            .ipv6(v6)
            .interface(Interface::new("c0").kind(Iface::Wifi))
            .interface(Interface::new("c1").kind(Iface::Cellular))
            .monitor_interval(Duration::from_millis(50))
            .fast_join(fast)
    };
    let eps = [MpEndpoint::client(opts(false)).unwrap(), MpEndpoint::client(opts(true)).unwrap()];
    let mut conns: Vec<Option<MpStream>> = Vec::new();
    let mut flight: Vec<Vec<u8>> = Vec::new();
    let mut epoch_ticket: Option<(u64, mpcore::ResumptionTicket)> = None;
    println!("ready");
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Ok(Some(cmd)) = stdin.next_line().await {
        let words: Vec<&str> = cmd.split_whitespace().collect();
        match words.as_slice() {
            ["connect", n] => {
                for _ in 0..n.parse::<usize>().unwrap() {
                    let t = Instant::now();
                    let ep = &eps[conns.len() % 2];
                    let mut s = ep.connect(service).await.unwrap();
                    // Connected and answered: the time a client that lost its server waits
                    // after the reset.
                    request(&mut s).await.unwrap();
                    let answered = t.elapsed().as_micros();
                    let deadline = Instant::now() + Duration::from_secs(5);
                    while !s.stats().is_some_and(|st| {
                        st.subflows.iter().any(|f| f.path.0 == 1 && f.state == mpcore::SubflowState::Established)
                    }) {
                        assert!(Instant::now() < deadline, "no join on c1: {:#?}", s.stats());
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                    // The first request: the server counts the join it has seen.
                    let id = request(&mut s).await.unwrap();
                    println!("conn {} server {id} answered_us {answered}", conns.len());
                    conns.push(Some(s));
                }
            }
            ["resume", n] => {
                // Endpoints of their own with ticket stores (a resumed connection goes to its
                // ticket's issuer, so the endpoints above, whose connections must spread, keep
                // none). Fresh connections, one at a time from `fresh` (whose store is empty at
                // each connect, so that none resumes with another's ticket), give tickets of the
                // servers the balancer chose; each is moved to `resuming`'s store; as many
                // resumed connections at once then take one each, their request sent as 0-RTT
                // data. Each closes after its answer (the later steps count the first
                // connections only).
                let n: usize = n.parse().unwrap();
                let (got, kept_tickets) = (mpudp::TicketStore::new(), mpudp::TicketStore::new());
                let fresh = MpEndpoint::client(opts(false).tickets(got.clone())).unwrap();
                let resuming =
                    std::sync::Arc::new(MpEndpoint::client(opts(false).tickets(kept_tickets.clone())).unwrap());
                // The store keeps 4 tickets per server address: rounds of 4.
                for round in 0..n.div_ceil(4) {
                    let k = 4.min(n - 4 * round);
                    let mut kept = Vec::new();
                    for _ in 0..k {
                        let mut s = fresh.connect(service).await.unwrap();
                        request(&mut s).await.unwrap();
                        let deadline = Instant::now() + Duration::from_secs(10);
                        let t = loop {
                            if let Some(t) = got.take(service) {
                                break t;
                            }
                            assert!(Instant::now() < deadline, "no ticket");
                            tokio::time::sleep(Duration::from_millis(1)).await;
                        };
                        kept_tickets.insert(t);
                        kept.push(s);
                    }
                    let resumed: Vec<_> = (0..k)
                        .map(|_| {
                            let ep = resuming.clone();
                            tokio::spawn(async move {
                                let mut s = ep.connect_early(service, b"?").await.unwrap();
                                let mut id = [0u8; 1];
                                let read = tokio::time::timeout(Duration::from_secs(10), s.read_exact(&mut id));
                                read.await.unwrap().unwrap();
                                (s, id[0])
                            })
                        })
                        .collect();
                    for (i, r) in resumed.into_iter().enumerate() {
                        let (mut s, id) = r.await.unwrap();
                        println!("resumed {} server {id}", 4 * round + i);
                        s.shutdown().await.unwrap();
                    }
                    for mut s in kept {
                        s.shutdown().await.unwrap();
                    }
                }
            }
            ["capture"] => {
                // A ticket, then the resumed first flight that would carry a request as 0-RTT
                // data: built by the protocol's core, kept to be sent by hand.
                let t = ticket_after_a_request(opts(false), service).await;
                flight = first_flight(service, &t);
            }
            ["send", dev] => {
                let sock =
                    socket2::Socket::new(socket2::Domain::for_address(service), socket2::Type::DGRAM, None).unwrap();
                sock.bind_device(Some(dev.as_bytes())).unwrap();
                for d in &flight {
                    sock.send_to(d, &service.into()).unwrap();
                }
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            ["ticket-late-in-epoch"] => {
                // Issued late in a 6 s epoch, so that the next one starts well before the
                // ticket's 6 s are over (a loaded machine may take a while to resume).
                while !(4_000..5_000).contains(&(unix_ms() % 6_000)) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                let t = ticket_after_a_request(opts(false), service).await;
                epoch_ticket = Some((t.received_unix_ms / 6_000, t));
            }
            ["resume-next-epoch"] => {
                let (epoch, t) = epoch_ticket.take().unwrap();
                let received = t.received_unix_ms;
                while unix_ms() / 6_000 <= epoch {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                let store = mpudp::TicketStore::new();
                store.insert(t);
                let ep = MpEndpoint::client(opts(false).tickets(store)).unwrap();
                let mut s = ep.connect_early(service, b"?").await.unwrap();
                let mut id = [0u8; 1];
                tokio::time::timeout(Duration::from_secs(10), s.read_exact(&mut id)).await.unwrap().unwrap();
                println!("resumed at {} age_ms {}", id[0], unix_ms() - received);
                s.shutdown().await.unwrap();
            }
            ["tcp", n] => {
                // A phone whose WiFi drops UDP: connections at once from an endpoint of its
                // own, each waiting for its WiFi subflow over TCP, then one request there.
                let phone = Options::phone()
                    .server_key(common::identity().public_key())
                    .ipv6(v6)
                    .tcp_fallback(Some(Duration::from_secs(1)))
                    .interface(Interface::new("c0").kind(Iface::Wifi))
                    .interface(Interface::new("c1").kind(Iface::Cellular))
                    .monitor_interval(Duration::from_millis(50));
                let ep = std::sync::Arc::new(MpEndpoint::client(phone).unwrap());
                let tasks: Vec<_> = (0..n.parse::<usize>().unwrap())
                    .map(|_| {
                        let ep = ep.clone();
                        tokio::spawn(async move {
                            let t = Instant::now();
                            let mut s = ep.connect(service).await.unwrap();
                            let on_tcp = |st: &mpcore::ConnStats| {
                                st.subflows.iter().any(|f| {
                                    f.path.0 == 0
                                        && f.carrier == mpudp::Carrier::Tcp
                                        && f.state == mpcore::SubflowState::Established
                                })
                            };
                            while !s.stats().is_some_and(|st| on_tcp(&st)) {
                                assert!(t.elapsed() < Duration::from_secs(20), "no WiFi over TCP: {:#?}", s.stats());
                                tokio::time::sleep(Duration::from_millis(5)).await;
                            }
                            let ms = t.elapsed().as_secs_f64() * 1e3;
                            let id = request(&mut s).await.unwrap();
                            (s, id, ms)
                        })
                    })
                    .collect();
                for t in tasks {
                    let (s, id, ms) = t.await.unwrap();
                    println!("tcp {} {ms:.1}", conns.len());
                    println!("conn {} server {id}", conns.len());
                    conns.push(Some(s));
                }
            }
            ["requests"] => {
                for (i, slot) in conns.iter_mut().enumerate() {
                    let Some(s) = slot.as_mut() else { continue };
                    match request(s).await {
                        Ok(id) => println!("conn {i} server {id}"),
                        Err((e, ms)) if e.kind() == std::io::ErrorKind::ConnectionReset => {
                            println!("reset {i} {ms} {e}");
                            *slot = None;
                        }
                        Err((e, ms)) => panic!("connection {i}: {e} after {ms} ms"),
                    }
                }
            }
            ["quit"] => {
                println!("end");
                return;
            }
            _ => panic!("unknown command {cmd}"),
        }
        println!("end");
    }
}
