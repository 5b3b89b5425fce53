//! The command line, in iperf3's conventions, and its translation into a test's parameters
//! and the transport's options. Every mistake becomes one line naming the flag and the fix.

use crate::proto::{Mode, Params};
use clap::{Args, Parser, Subcommand};
use mpudp::{Iface, Interface, Options, PathManager, PublicKey, ServerIdentity};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

/// Measures Siri-like request/response delay (or bulk throughput) over the multipath
/// transport, between a server (`-s`) and a client (`-c HOST`), in iperf3's conventions.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "iperf-siri",
    version,
    disable_version_flag = true,
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true
)]
pub struct Cli {
    /// Print the version (as iperf3: -v).
    #[arg(short = 'v', long, action = clap::ArgAction::Version)]
    pub version: Option<bool>,
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Subcommand, Debug, Clone)]
pub enum Command {
    /// One process, no second host: the Siri workload over two emulated paths (WiFi 15 ms,
    /// cellular 25 ms RTT, 10 Mbit/s), WiFi failing between two requests, with lowest-RTT +
    /// fullmesh, backup, and MultiMob side by side.
    Demo(DemoArgs),
    /// Write a key pair for a server to FILE (PEM, readable by its owner only) and print its
    /// public key, one base64 line, for the clients (`-c HOST --server-key KEY`).
    Keygen(KeygenArgs),
    /// Print the nftables ruleset of a stateless balancer in front of a fleet of servers
    /// (`-s --fleet ID/IDS`), for `nft -f`: datagrams go to their connection's server by
    /// the routing byte, INITIALs to the servers that take new connections.
    FleetRules(crate::fleet::FleetRulesArgs),
    /// Draw a connection's qlog (`--qlog DIR` wrote it) as a timeline: one lane per subflow
    /// (packets sent, received, lost; what happened to it), the transport's decisions and the
    /// cellular radio's state.
    Timeline(TimelineArgs),
}

#[derive(Args, Debug, Clone)]
pub struct TimelineArgs {
    /// The connection's qlog (`.sqlog`).
    pub log: PathBuf,
    /// Where to write the picture.
    pub svg: PathBuf,
    /// The local paths that are cellular (their packets drive the radio's lane).
    #[arg(long, value_name = "N,M", value_delimiter = ',', default_value = "1")]
    pub cellular: Vec<u64>,
    /// The radio model: `lte`, `nr` or `none`.
    #[arg(long, default_value = "lte", value_parser = parse_radio)]
    pub radio: Radio,
}

#[derive(Args, Debug, Clone)]
pub struct KeygenArgs {
    /// Where to write the private key (refused if it exists).
    pub file: PathBuf,
}

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// Run as a server.
    #[arg(short = 's', long, conflicts_with = "client")]
    pub server: bool,
    /// Run as a client, connecting to HOST.
    #[arg(short = 'c', long, value_name = "HOST")]
    pub client: Option<String>,
    /// Server port (UDP).
    #[arg(short = 'p', long, default_value_t = 5201, allow_hyphen_values = true)]
    pub port: u16,
    /// Server: the address to listen on (default: every IPv4 address).
    #[arg(short = 'B', long = "bind", value_name = "ADDR")]
    pub bind: Option<IpAddr>,
    /// Server: handle one test, then exit.
    #[arg(short = '1', long = "one-off")]
    pub one_off: bool,
    /// Server: tests run at once (1 to 1000; at most half of them from one address, three
    /// quarters from one network); when every slot is taken, the test silent longest (2 s at
    /// least) is ended for a new client, else it is told the server is busy. Concurrent tests
    /// share the server's links: give 1 for iperf3's one test at a time.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1000), allow_hyphen_values = true)]
    pub max_tests: u32,
    /// Server: the longest silence a test's workload may declare (its burst gap or its wait
    /// between requests; 1 s to 1 h); a test that declares more is refused.
    #[arg(long, value_name = "SECONDS", default_value = "30", value_parser = parse_max_silence, allow_hyphen_values = true)]
    pub max_silence: Duration,
    /// Test length in seconds: bulk mode sends this long (default 10); siri mode starts no
    /// request after it (default: until --requests are done).
    #[arg(short = 't', long, value_name = "SECONDS", value_parser = parse_seconds, allow_hyphen_values = true)]
    pub time: Option<Duration>,
    /// Bulk mode: bytes to send instead of a time (K, M, G suffixes, as iperf3).
    #[arg(short = 'n', long, value_name = "BYTES", value_parser = parse_bytes, allow_hyphen_values = true)]
    pub bytes: Option<u64>,
    /// Seconds between interval reports (0: none).
    #[arg(short = 'i', long, value_name = "SECONDS", default_value = "1", value_parser = parse_seconds, allow_hyphen_values = true)]
    pub interval: Duration,
    /// Output JSON (iperf3's layout: start, intervals, end; plus `requests`).
    #[arg(short = 'J', long)]
    pub json: bool,
    /// Write the output to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub logfile: Option<PathBuf>,
    /// More detail: subflows, congestion state, drops.
    #[arg(short = 'V', long)]
    pub verbose: bool,
    /// Reverse: the server sends (bulk mode) .
    #[arg(short = 'R', long)]
    pub reverse: bool,
    /// Client interfaces, the first the primary path: device names (bound with
    /// SO_BINDTODEVICE) or local IP addresses, each optionally `@wifi`, `@cellular` or
    /// `@wired` (default: guessed from the name; addresses: first wifi, others cellular).
    #[arg(short = 'm', long, value_name = "IF1,IF2", value_delimiter = ',')]
    pub subflows: Vec<String>,
    /// Packet scheduler (this side's; client and server choose independently). Default: the
    /// phone presets': a client's `priority` under `--path-manager multimob`, `lowest-rtt`
    /// otherwise; a server's `last-received` (it answers on the subflow the client used last).
    #[arg(long, value_parser = parse_scheduler)]
    pub scheduler: Option<String>,
    /// Client: how subflows are opened. `multimob` is MultiMob whole (Options::phone): the
    /// `priority` scheduler, FAST_JOIN and MP_IDLE, keep-alives on the primary only.
    #[arg(long, default_value = "fullmesh", value_parser = ["fullmesh", "backup", "multimob", "on-demand"])]
    pub path_manager: String,
    /// Carry data in the first packet of a new subflow (MultiMob's FAST_JOIN). A server
    /// always accepts fast joins; a client uses them only with this flag.
    #[arg(long)]
    pub fast_join: bool,
    /// Congestion control: lia (coupled), olia, cubic, reno, or ledbat (a background transfer that
    /// keeps the path's queue near half the base RTT).
    #[arg(long, default_value = "lia", value_parser = mpudp::CongestionControl::NAMES)]
    pub cc: String,
    /// multimob: the oracle's period Ts.
    #[arg(long, value_name = "DURATION", default_value = "500ms", value_parser = parse_duration, allow_hyphen_values = true)]
    pub oracle_period: Duration,
    /// multimob: the smoothed loss rate that declares a path bad (sloss).
    #[arg(long, value_name = "RATE", default_value_t = 0.25, value_parser = parse_rate, allow_hyphen_values = true)]
    pub sloss: f64,
    /// Client: where UDP gets no answer for this long, use TCP on that interface (the first
    /// handshake, and joins; PROTOCOL.md §4.11); `off`: UDP only. A server accepts TCP always.
    #[arg(long, value_name = "DURATION|off", default_value = "1s", value_parser = parse_fallback)]
    pub tcp_fallback: Fallback,
    /// Seconds to wait for the server's answer before giving up.
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = parse_seconds, allow_hyphen_values = true)]
    pub connect_timeout: Duration,
    /// Server: its key pair (PEM, as `iperf-siri keygen FILE` writes). Without it the server
    /// makes one at start and prints its public key.
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,
    /// Server: one of a fleet behind a balancer (`iperf-siri fleet-rules`): its id and the
    /// fleet's number of ids, as `1/3`. Every server of the fleet takes the same `--key`.
    #[arg(long, value_name = "ID/IDS", value_parser = crate::fleet::parse_member, requires = "fleet_secret")]
    pub fleet: Option<(u8, u8)>,
    /// Server: the fleet's shared secret, 64 hex digits in FILE (its RETRY, cookie, ticket and
    /// stateless reset keys derive from it).
    #[arg(long, value_name = "FILE", requires = "fleet")]
    pub fleet_secret: Option<PathBuf>,
    /// Server of a fleet: the balancer's TCP ports (`fleet-rules --tcp-base PORT`): this
    /// server's is PORT + its id; it names it to its clients for their TCP carriers, where a
    /// network drops UDP, and listens there too.
    #[arg(long, value_name = "PORT", requires = "fleet")]
    pub fleet_tcp_base: Option<u16>,
    /// Client: the server's public key (base64, as the server or `keygen` prints it); may be
    /// repeated (a server rotating its key). A server that cannot prove it is refused.
    #[arg(long = "server-key", value_name = "KEY", value_parser = parse_public_key)]
    pub server_keys: Vec<PublicKey>,
    /// Client: do not authenticate the server (anyone on the path could sit in the middle).
    #[arg(long, conflicts_with = "server_keys")]
    pub insecure: bool,
    /// Client: each request on a new connection, alternately fresh (a full handshake) and
    /// resumed with the last connection's ticket, its test request sent with the first
    /// packet (0-RTT); reports the delay to the server's first byte both ways (siri mode).
    #[arg(long)]
    pub resume: bool,
    /// A label carried in the output.
    #[arg(long, value_name = "ID")]
    pub test_id: Option<String>,
    /// Draw the CDF of the request delays into an SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Write the connection's event log (qlog, JSON-SEQ) into DIR, one `.sqlog` file per
    /// connection (for qvis, or `iperf-siri timeline`).
    #[arg(long, value_name = "DIR")]
    pub qlog: Option<PathBuf>,
    /// Draw the connection's timeline (its qlog: subflows, packets, losses, decisions, the
    /// radio, the requests) into an SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub timeline: Option<PathBuf>,
    #[command(flatten)]
    pub workload: Workload,
    /// The control protocol version to announce (tests of the version check).
    #[arg(long, hide = true)]
    pub protocol_version: Option<u16>,
}

/// The Siri-like workload (MultiMob's seeds; BRIEF.md).
#[derive(Args, Debug, Clone)]
pub struct Workload {
    /// siri: request/response delay; bulk: throughput.
    #[arg(long, default_value = "siri", value_parser = ["siri", "bulk"])]
    pub mode: String,
    /// Requests to run (siri mode; 1 to 1,000,000; default 10, or as many as -t allows when -t
    /// is given).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..), allow_hyphen_values = true)]
    pub requests: Option<u32>,
    /// Bursts per request.
    #[arg(long, default_value_t = 9, value_parser = clap::value_parser!(u32).range(1..=255), allow_hyphen_values = true)]
    pub bursts: u32,
    /// Writes per burst (the published client: 9, about 2,500 bytes).
    #[arg(long, default_value_t = 9, value_parser = clap::value_parser!(u32).range(1..=1000), allow_hyphen_values = true)]
    pub writes: u32,
    /// Write sizes, uniform in MIN..MAX bytes.
    #[arg(long, value_name = "MIN..MAX", default_value = "50..500", value_parser = parse_range, allow_hyphen_values = true)]
    pub write_size: (u32, u32),
    /// Bytes per burst instead of a number of writes (the last write is cut to fit). A burst,
    /// however given, is at most 16 MiB less 6 bytes (the protocol's frame limit).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes, allow_hyphen_values = true)]
    pub burst_bytes: Option<u64>,
    /// Time between two bursts of a request (at most 1 h).
    #[arg(long, value_name = "DURATION", default_value = "300ms", value_parser = parse_duration, allow_hyphen_values = true)]
    pub burst_gap: Duration,
    /// The user's wait after a final response, before the next request (at most 1 h).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration, allow_hyphen_values = true)]
    pub wait: Duration,
    /// Bytes of the final response (at most 16 MiB less 5 bytes).
    #[arg(long, value_name = "BYTES", default_value = "750", value_parser = parse_bytes, allow_hyphen_values = true)]
    pub response_bytes: u64,
    /// Bytes of each intermediate response ("100 Continue").
    #[arg(long, value_name = "BYTES", default_value = "100", value_parser = parse_bytes, allow_hyphen_values = true)]
    pub ir_bytes: u64,
    /// No intermediate responses.
    #[arg(long)]
    pub no_ir: bool,
    /// Seed of the write sizes.
    #[arg(long, default_value_t = 1, allow_hyphen_values = true)]
    pub seed: u64,
}

#[derive(Args, Debug, Clone)]
pub struct DemoArgs {
    /// Requests per run.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(2..))]
    pub requests: u32,
    /// The user's wait between requests.
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = parse_duration)]
    pub wait: Duration,
    /// WiFi fails halfway through the wait after this many answered requests.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    pub fail_after: u32,
    /// WiFi comes back halfway through the wait after this many (0: never).
    #[arg(long, default_value_t = 5)]
    pub restore_after: u32,
    /// The phone's cellular radio in the emulator: `lte` (promotion 0.26 s, paging 1.28 s,
    /// tail 11.6 s), `nr` (5G standalone) or `none` (always connected).
    #[arg(long, default_value = "lte", value_parser = parse_radio)]
    pub radio: Radio,
    /// Draw the three delay CDFs into an SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Draw the MultiMob run's timeline (from its client's qlog) into an SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub timeline: Option<PathBuf>,
    /// Output JSON: each run's full report.
    #[arg(short = 'J', long)]
    pub json: bool,
    /// Instead: a new connection per request, fresh and resumed with 0-RTT alternately,
    /// over the emulated WiFi and cellular paths (`--requests` of each kind on each).
    #[arg(long)]
    pub resume: bool,
}

/// The demo's radio model (`--radio`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Radio(pub Option<oracle::radio::Profile>);

/// `lte`, `nr` or `none`.
pub fn parse_radio(s: &str) -> Result<Radio, String> {
    match s.trim() {
        "none" => Ok(Radio(None)),
        name => oracle::radio::Profile::by_name(name)
            .map(|p| Radio(Some(p)))
            .ok_or_else(|| format!("unknown radio {name:?}: lte, nr or none")),
    }
}

/// Seconds, as iperf3 takes them (`10`, `0.5`), or with a unit (`300ms`, `2s`).
pub fn parse_seconds(s: &str) -> Result<Duration, String> {
    match s.trim().parse::<f64>() {
        Ok(v) => secs(v),
        Err(_) => parse_duration(s),
    }
}

/// `--max-silence`: 1 s to an hour.
fn parse_max_silence(s: &str) -> Result<Duration, String> {
    let d = parse_seconds(s)?;
    if !(Duration::from_secs(1)..=Duration::from_secs(3600)).contains(&d) {
        return Err("must be 1 s to 1 h".into());
    }
    Ok(d)
}

/// A duration with a unit: `300ms`, `5s`, `1.5s`, `250us`; a bare number is seconds.
/// `--tcp-fallback`: a bound, or none (`off`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fallback(pub Option<Duration>);

fn parse_fallback(s: &str) -> Result<Fallback, String> {
    match s {
        "off" => Ok(Fallback(None)),
        s => parse_duration(s).map(|d| Fallback(Some(d))),
    }
}

pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix("us") {
        (n, 1e-6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num.trim().parse().map_err(|_| format!("'{s}' is not a duration (say 300ms or 5s)"))?;
    secs(v * scale)
}

fn secs(v: f64) -> Result<Duration, String> {
    if !v.is_finite() || !(0.0..=86_400.0 * 365.0).contains(&v) {
        return Err(format!("{v} seconds is out of range"));
    }
    Ok(Duration::from_secs_f64(v))
}

/// Bytes with iperf3's suffixes: K, M, G (powers of 1024), upper or lower case.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M') => (&t[..t.len() - 1], 1 << 20),
        Some('G') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let v: f64 = num.parse().map_err(|_| format!("'{s}' is not a byte count (say 750, 64K or 1M)"))?;
    if !v.is_finite() || v < 0.0 || v * mult as f64 > 1e15 {
        return Err(format!("'{s}' is out of range"));
    }
    Ok((v * mult as f64) as u64)
}

fn parse_range(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("'{s}' is not a size range (say 50..500)");
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    let a: u32 = a.trim().parse().map_err(|_| bad())?;
    let b: u32 = b.trim().parse().map_err(|_| bad())?;
    if a == 0 || a > b || b > 65_000 {
        return Err(format!("'{s}': sizes must satisfy 1 <= MIN <= MAX <= 65000"));
    }
    Ok((a, b))
}

fn parse_public_key(s: &str) -> Result<PublicKey, String> {
    s.parse::<PublicKey>().map_err(|e| format!("{e} (the server prints its key as one base64 line)"))
}

fn parse_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 1.0 => Ok(v),
        _ => Err(format!("'{s}' is not a rate in (0, 1]")),
    }
}

fn parse_scheduler(s: &str) -> Result<String, String> {
    scheduler::AnyScheduler::from_name(s).map(|_| s.to_string()).map_err(|e| e.to_string())
}

impl RunArgs {
    /// The test's parameters, as the client announces them to the server.
    pub fn params(&self, protocol: u16) -> Result<Params, String> {
        let w = &self.workload;
        let mode = if w.mode == "bulk" { Mode::Bulk } else { Mode::Siri };
        if mode == Mode::Siri && self.bytes.is_some() {
            return Err("-n/--bytes applies to --mode bulk; siri mode runs --requests or -t".into());
        }
        if mode == Mode::Siri && self.reverse {
            return Err("-R applies to --mode bulk; in siri mode the server already answers".into());
        }
        if self.interval > Duration::ZERO && self.interval < Duration::from_millis(100) {
            return Err("-i must be 0 (no intervals) or at least 0.1 s".into());
        }
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let p = Params {
            protocol,
            mode,
            reverse: self.reverse,
            requests: match (mode, self.time) {
                (Mode::Siri, None) => Some(w.requests.unwrap_or(10)),
                (Mode::Siri, Some(_)) => w.requests,
                (Mode::Bulk, _) => None,
            },
            duration_s: match (mode, self.time, self.bytes) {
                (Mode::Bulk, None, None) => Some(10.0),
                (_, t, _) => t.map(|t| t.as_secs_f64()),
            },
            bytes: self.bytes,
            bursts: w.bursts,
            writes: w.writes,
            write_min: w.write_size.0,
            write_max: w.write_size.1,
            burst_bytes: w.burst_bytes,
            burst_gap_ms: ms(w.burst_gap),
            wait_ms: ms(w.wait),
            response_bytes: u32::try_from(w.response_bytes).unwrap_or(u32::MAX),
            ir_bytes: u32::try_from(w.ir_bytes).unwrap_or(u32::MAX),
            ir: !w.no_ir,
            seed: w.seed,
            test_id: self.test_id.clone(),
            scheduler: self.scheduler(true),
            path_manager: self.path_manager.clone(),
            fast_join: self.fast_join,
            subflows: self.subflows.clone(),
        };
        p.validate()?;
        Ok(p)
    }

    /// This side's scheduler: the one asked for, else the presets' (see `--scheduler`).
    pub fn scheduler(&self, client: bool) -> String {
        let pm = PathManager::from_name(&self.path_manager).unwrap_or_default();
        match (&self.scheduler, client, pm) {
            (Some(s), _, _) => s.clone(),
            (None, true, PathManager::MultiMob) => "priority".into(),
            (None, true, _) => "lowest-rtt".into(),
            (None, false, _) => "last-received".into(),
        }
    }

    /// The server's identity: `--key`'s, else a new one (`true`: made now).
    pub fn identity(&self) -> Result<(ServerIdentity, bool), String> {
        match &self.key {
            Some(f) => {
                let text = std::fs::read_to_string(f).map_err(|e| format!("--key {}: {e}", f.display()))?;
                let id = ServerIdentity::from_pem(&text).map_err(|e| format!("--key {}: {e}", f.display()))?;
                Ok((id, false))
            }
            None => ServerIdentity::generate().map(|id| (id, true)).map_err(|e| format!("cannot make a key pair: {e}")),
        }
    }

    /// Where the connection's qlog goes: `--qlog DIR`, or for `--timeline` alone a directory
    /// of this process's own under the system's temporary directory.
    pub fn qlog_dir(&self) -> Option<PathBuf> {
        self.qlog.clone().or_else(|| {
            self.timeline.as_ref().map(|_| std::env::temp_dir().join(format!("iperf-siri-{}", std::process::id())))
        })
    }

    /// The transport's options for this side.
    pub fn options(&self, client: bool) -> Result<Options, String> {
        if client && self.server_keys.is_empty() && !self.insecure {
            return Err(
                "the server is not authenticated: give --server-key KEY (the server prints it) or --insecure".into()
            );
        }
        let pm = PathManager::from_name(&self.path_manager).unwrap_or_default();
        let multimob = client && pm == PathManager::MultiMob;
        let base = match (client, multimob) {
            (true, true) => Options::phone(),
            (true, false) => Options::new(),
            (false, _) => Options::server(),
        };
        let mut o = base
            .scheduler(&self.scheduler(client))
            .connect_timeout(self.connect_timeout)
            .tcp_fallback(self.tcp_fallback.0.filter(|_| client))
            // A server accepts fast joins; a client offers them under multimob or when asked.
            .fast_join(!client || multimob || self.fast_join);
        if let Some(dir) = self.qlog_dir() {
            o = o.qlog_dir(dir);
        }
        let fleet = if client { None } else { crate::fleet::member(self.fleet, self.fleet_secret.as_ref())? };
        let c = o.config_mut();
        c.server.tcp_port = match (self.fleet, self.fleet_tcp_base) {
            (Some((id, _)), Some(base)) if !client => {
                Some(base.checked_add(u16::from(id)).ok_or("--fleet-tcp-base: the server's port is past 65535")?)
            }
            _ => None,
        };
        c.server.fleet = fleet;
        c.transport.congestion = mpudp::CongestionControl::from_name(&self.cc).unwrap_or_default();
        c.multipath.oracle.period = self.oracle_period.as_micros().max(1) as u64;
        c.multipath.oracle.loss_threshold = self.sloss;
        if client {
            c.transport.server_keys.clone_from(&self.server_keys);
            c.transport.unauthenticated_server = self.insecure;
            c.multipath.path_manager = pm;
            // Every path but the primary is a backup path under `backup` and, as the phone
            // preset has it, under `multimob`.
            let backup_all = matches!(c.multipath.path_manager, PathManager::Backup | PathManager::MultiMob);
            for (k, spec) in self.subflows.iter().enumerate() {
                o = o.interface(interface(spec, k, backup_all)?);
            }
        }
        Ok(o)
    }
}

/// The address of a `-m` entry given as an address (not a device name).
pub fn interface_ip(spec: &str) -> Option<IpAddr> {
    spec.rsplit_once('@').map_or(spec, |(n, _)| n).trim().parse().ok()
}

/// One `-m` entry: `NAME`, `ADDR`, either with `@kind`.
pub fn interface(spec: &str, index: usize, backup_all: bool) -> Result<Interface, String> {
    let (name, kind) = match spec.rsplit_once('@') {
        Some((n, k)) => (n.trim(), Some(k.trim())),
        None => (spec.trim(), None),
    };
    if name.is_empty() {
        return Err(format!("-m: an empty interface name in the list (say -m wlan0,rmnet0; got '{spec}')"));
    }
    let kind = match kind {
        None => None,
        Some("wifi") => Some(Iface::Wifi),
        Some("cellular") => Some(Iface::Cellular),
        Some("wired") => Some(Iface::Wired),
        Some(k) => return Err(format!("-m: unknown interface kind '{k}' in '{spec}' (wifi, cellular or wired)")),
    };
    let i = match name.parse::<IpAddr>() {
        Ok(ip) => {
            let default = if index == 0 { Iface::Wifi } else { Iface::Cellular };
            Interface::unbound(SocketAddr::new(ip, 0)).kind(kind.unwrap_or(default))
        }
        Err(_) => {
            if !mpudp::interface_exists(name) {
                return Err(format!("-m: no interface named '{name}' on this host (see `ip link`)"));
            }
            let i = Interface::new(name);
            match kind {
                Some(k) => i.kind(k),
                None => i,
            }
        }
    };
    Ok(i.backup(backup_all && index > 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("iperf-siri").chain(args.iter().copied()))
    }

    #[test]
    fn defaults_are_the_seeds() {
        let c = parse(&["-c", "host"]).expect("parses");
        assert_eq!(c.run.port, 5201);
        let p = c.run.params(1).expect("valid");
        assert_eq!(p, Params::default());
        assert_eq!(p.mode, Mode::Siri);
        assert_eq!(p.requests, Some(10));
        assert_eq!((p.bursts, p.writes, p.write_min, p.write_max), (9, 9, 50, 500));
        assert_eq!((p.burst_gap_ms, p.wait_ms), (300.0, 5000.0));
        assert_eq!((p.response_bytes, p.ir_bytes, p.ir), (750, 100, true));
        assert_eq!(p.scheduler, "lowest-rtt");
        assert_eq!(p.path_manager, "fullmesh");
        assert!(!p.fast_join);
    }

    #[test]
    fn every_flag_reaches_the_parameters() {
        let c = parse(&[
            "-c",
            "h",
            "-p",
            "6000",
            "-t",
            "30",
            "-i",
            "0.5",
            "-J",
            "-V",
            "-m",
            "10.0.0.1,10.0.0.2@wired",
            "--scheduler",
            "last-received",
            "--path-manager",
            "multimob",
            "--fast-join",
            "--no-ir",
            "--test-id",
            "walk-1",
            "--requests",
            "3",
            "--bursts",
            "4",
            "--writes",
            "2",
            "--write-size",
            "10..20",
            "--burst-gap",
            "100ms",
            "--wait",
            "1.5s",
            "--response-bytes",
            "1K",
            "--ir-bytes",
            "50",
            "--seed",
            "7",
            "--cc",
            "olia",
            "--server-key",
            "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=",
        ])
        .expect("parses");
        assert_eq!(c.run.port, 6000);
        assert_eq!(c.run.interval, Duration::from_millis(500));
        assert!(c.run.json && c.run.verbose);
        assert_eq!(c.run.subflows, ["10.0.0.1", "10.0.0.2@wired"]);
        let p = c.run.params(1).expect("valid");
        assert_eq!(p.duration_s, Some(30.0));
        assert_eq!((p.bursts, p.writes, p.write_min, p.write_max), (4, 2, 10, 20));
        assert_eq!((p.burst_gap_ms, p.wait_ms, p.response_bytes, p.ir_bytes), (100.0, 1500.0, 1024, 50));
        assert!(!p.ir && p.fast_join);
        assert_eq!(p.test_id.as_deref(), Some("walk-1"));
        assert_eq!((p.scheduler.as_str(), p.path_manager.as_str(), p.seed), ("last-received", "multimob", 7));
        let o = c.run.options(true).expect("valid");
        assert_eq!(o.config().multipath.path_manager, PathManager::MultiMob);
        assert!(o.config().multipath.fast_join);
        assert_eq!(o.config().transport.congestion, mpudp::CongestionControl::Olia);
        assert_eq!(o.config().transport.server_keys[0].to_string(), "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=");
        assert!(!o.config().transport.unauthenticated_server);
        // The phone preset under multimob, the server's preset on the other side.
        let phone = parse(&["-c", "h", "--path-manager", "multimob", "--insecure"]).expect("parses").run;
        let o = phone.options(true).expect("valid");
        assert!(o.config().transport.unauthenticated_server && o.config().transport.server_keys.is_empty());
        assert_eq!(
            (o.config().multipath.scheduler.as_str(), o.config().multipath.fast_join, o.config().multipath.mp_idle),
            ("priority", true, true)
        );
        assert_eq!(o.config().transport.keep_alive, mpudp::Config::phone().transport.keep_alive);
        // TCP where UDP gets no answer: after 1 s by default, off on request.
        assert_eq!(o.config().multipath.tcp_after, Some(1_000_000));
        let udp_only = parse(&["-c", "h", "--insecure", "--tcp-fallback", "off"]).expect("parses").run;
        assert_eq!(udp_only.options(true).expect("valid").config().multipath.tcp_after, None);
        let server = parse(&["-s"]).expect("parses").run;
        assert_eq!(server.options(false).expect("valid").config().multipath.scheduler, "last-received");
    }

    #[test]
    fn bulk_defaults_to_ten_seconds_and_takes_bytes() {
        let p = parse(&["-c", "h", "--mode", "bulk"]).expect("parses").run.params(1).expect("valid");
        assert_eq!((p.mode, p.duration_s, p.bytes, p.requests), (Mode::Bulk, Some(10.0), None, None));
        let p = parse(&["-c", "h", "--mode", "bulk", "-n", "2M", "-R"]).expect("parses").run.params(1).expect("ok");
        assert_eq!((p.duration_s, p.bytes, p.reverse), (None, Some(2 << 20), true));
    }

    #[test]
    fn mistakes_are_refused() {
        for bad in [
            &["-c", "h", "-p", "70000"][..],
            &["-c", "h", "--scheduler", "fastest"],
            &["-c", "h", "--path-manager", "mesh"],
            &["-c", "h", "-t", "ten"],
            &["-c", "h", "--write-size", "500..50"],
            &["-c", "h", "--wait", "-1s"],
            &["-c", "h", "--requests", "0"],
            &["-c", "h", "-n", "12Q"],
            &["-s", "-c", "h"],
            &["-c", "h", "--sloss", "2"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
        let c = parse(&["-c", "h", "-n", "1M"]).expect("parses");
        assert!(c.run.params(1).unwrap_err().contains("--mode bulk"));
        let c = parse(&["-c", "h", "-m", "eth0@radio", "--insecure"]).expect("parses");
        assert!(c.run.options(true).unwrap_err().contains("unknown interface kind"));
        let c = parse(&["-c", "h", "-m", "no-such-if0", "--insecure"]).expect("parses");
        assert!(c.run.options(true).unwrap_err().contains("no interface named 'no-such-if0'"));
        // No key and no --insecure; both at once; a key that is not one.
        let c = parse(&["-c", "h"]).expect("parses");
        assert!(c.run.options(true).unwrap_err().contains("--server-key"));
        assert!(
            parse(&["-c", "h", "--insecure", "--server-key", "11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="]).is_err()
        );
        assert!(parse(&["-c", "h", "--server-key", "AAAA"]).is_err());
    }

    #[test]
    fn sizes_and_durations() {
        assert_eq!(parse_bytes("64K"), Ok(65_536));
        assert_eq!(parse_bytes("1.5m"), Ok(1_572_864));
        assert_eq!(parse_duration("300ms"), Ok(Duration::from_millis(300)));
        assert_eq!(parse_fallback("off"), Ok(Fallback(None)));
        assert_eq!(parse_fallback("2s"), Ok(Fallback(Some(Duration::from_secs(2)))));
        assert!(parse_fallback("sometimes").is_err());
        assert_eq!(parse_seconds("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_seconds("250ms"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("nan").is_err());
    }

    #[test]
    fn address_entries_default_to_wifi_then_cellular() {
        let a = interface("127.0.0.1", 0, true).expect("valid");
        let b = interface("127.0.0.2", 1, true).expect("valid");
        let dbg = format!("{a:?} {b:?}");
        assert!(dbg.contains("Wifi") && dbg.contains("Cellular"), "{dbg}");
        assert!(format!("{b:?}").contains("backup: true"), "{b:?}");
        assert!(format!("{a:?}").contains("backup: false"), "{a:?}");
    }
}
