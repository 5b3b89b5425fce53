//! A fleet behind a balancer (issue 38): a client namespace with two links to a balancer
//! namespace, and `n` backend namespaces behind it, each on a link of its own. The balancer
//! forwards (its address is the backends' route) and runs whatever nftables ruleset it is
//! given; the service's address is on no interface: only the balancer's rules make it
//! reachable.
//!
//! ```text
//!  client ns                    balancer ns                      backend ns k
//!  c0 10.N.1.1 <--veth--> 10.N.1.2
//!  c1 10.N.2.1 <--veth--> 10.N.2.2   10.N.(10+k).1 <--veth--> 10.N.(10+k).2
//!                  service 10.N.9.1 (rewritten by the ruleset)
//! ```
//!
//! [`FleetBed::new_v6`] makes the same over IPv6: `10.N.S.H` becomes `fd00:N:S::H`.

use crate::ip;
use std::io::Write;
use std::process::{Command, Stdio};

/// The namespaces, deleted on drop: `names[0]` the client, `[1]` the balancer, `[2 + k]`
/// backend `k`.
#[derive(Debug)]
pub struct FleetBed {
    pub names: Vec<String>,
    net: u8,
    v6: bool,
}

impl Drop for FleetBed {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = ip(&format!("netns del {n}"));
        }
    }
}

impl FleetBed {
    /// Namespaces `{tag}{role}-{pid}` on the addresses `10.{net}.*`, with `backends` (1..=100)
    /// backends.
    pub fn new(tag: &str, net: u8, backends: usize) -> Result<Self, String> {
        Self::make(tag, net, backends, false)
    }

    /// The same over IPv6 (issue 56): `fd00:{net}:S::H` where IPv4 has `10.{net}.S.H`.
    pub fn new_v6(tag: &str, net: u8, backends: usize) -> Result<Self, String> {
        Self::make(tag, net, backends, true)
    }

    /// Host `host` of subnet `subnet`, in the bed's family.
    fn addr(&self, subnet: usize, host: u8) -> String {
        match self.v6 {
            false => format!("10.{}.{subnet}.{host}", self.net),
            true => format!("fd00:{}:{subnet}::{host}", self.net),
        }
    }

    /// An address with its prefix, for `ip addr add` (no duplicate address detection: an
    /// IPv6 address is usable at once).
    fn with_prefix(&self, subnet: usize, host: u8) -> String {
        match self.v6 {
            false => format!("{}/24", self.addr(subnet, host)),
            true => format!("{}/64 nodad", self.addr(subnet, host)),
        }
    }

    fn make(tag: &str, net: u8, backends: usize, v6: bool) -> Result<Self, String> {
        let pid = std::process::id();
        let mut names = vec![format!("{tag}c-{pid}"), format!("{tag}lb-{pid}")];
        names.extend((0..backends).map(|k| format!("{tag}b{k}-{pid}")));
        let bed = Self { names, net, v6 };
        for n in &bed.names {
            ip(&format!("netns add {n}"))?;
            ip(&format!("-n {n} link set lo up"))?;
        }
        let (c, lb) = (bed.client(), bed.balancer());
        for k in 0..2 {
            let (a, b) = (format!("c{k}"), format!("l{k}"));
            ip(&format!("link add {a} netns {c} type veth peer name {b} netns {lb}"))?;
            ip(&format!("-n {c} addr add {} dev {a}", bed.with_prefix(k + 1, 1)))?;
            ip(&format!("-n {lb} addr add {} dev {b}", bed.with_prefix(k + 1, 2)))?;
            ip(&format!("-n {c} link set {a} up"))?;
            ip(&format!("-n {lb} link set {b} up"))?;
            bed.route(k)?;
        }
        for k in 0..backends {
            let ns = bed.backend(k);
            let (a, b) = (format!("b{k}"), format!("lb{k}"));
            ip(&format!("link add {a} netns {ns} type veth peer name {b} netns {lb}"))?;
            ip(&format!("-n {ns} addr add {} dev {a}", bed.with_prefix(10 + k, 2)))?;
            ip(&format!("-n {lb} addr add {} dev {b}", bed.with_prefix(10 + k, 1)))?;
            ip(&format!("-n {ns} link set {a} up"))?;
            ip(&format!("-n {lb} link set {b} up"))?;
            ip(&format!("-n {ns} route add default via {}", bed.addr(10 + k, 1)))?;
        }
        let forward = if v6 { "net.ipv6.conf.all.forwarding=1" } else { "net.ipv4.ip_forward=1" };
        run(&["ip", "netns", "exec", lb, "sysctl", "-qw", forward], None)?;
        Ok(bed)
    }

    pub fn client(&self) -> &str {
        &self.names[0]
    }

    pub fn balancer(&self) -> &str {
        &self.names[1]
    }

    pub fn backend(&self, k: usize) -> &str {
        &self.names[2 + k]
    }

    /// Backend `k`'s address.
    pub fn backend_ip(&self, k: usize) -> String {
        self.addr(10 + k, 2)
    }

    /// The service's address (on no interface).
    pub fn service_ip(&self) -> String {
        self.addr(9, 1)
    }

    /// The service's address and `port`, as a socket address (`[v6]:port` in IPv6).
    pub fn service(&self, port: u16) -> std::net::SocketAddr {
        let ip: std::net::IpAddr = self.service_ip().parse().expect("the bed's own address");
        std::net::SocketAddr::new(ip, port)
    }

    /// (Re)installs the client's route to the service through `c{k}` (`c0` preferred), as
    /// DHCP would after a link comes back.
    pub fn route(&self, k: usize) -> Result<(), String> {
        let c = self.client();
        let host = if self.v6 { 128 } else { 32 };
        let cmd = format!(
            "-n {c} route replace {}/{host} via {} dev c{k} metric {}",
            self.service_ip(),
            self.addr(k + 1, 2),
            10 * (k + 1)
        );
        // A link just set up: IPv6 puts its prefix's route back a moment later (the gateway
        // has "no route" until then).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
        loop {
            match ip(&cmd) {
                Err(e) if e.contains("No route to host") && std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                r => return r,
            }
        }
    }

    /// Takes the client's link `c{k}` down or up.
    /// Over IPv6 the kernel drops the link's addresses when it goes down; they come back with
    /// it, as a network's router advertisement would give them.
    pub fn set_link(&self, k: usize, up: bool) -> Result<(), String> {
        ip(&format!("-n {} link set c{k} {}", self.client(), if up { "up" } else { "down" }))?;
        if up && self.v6 {
            ip(&format!("-n {} addr replace {} dev c{k}", self.client(), self.with_prefix(k + 1, 1)))?;
        }
        Ok(())
    }

    /// Drops UDP on the client's link `c{k}` (nftables in the client's namespace; `on` false
    /// lets it through again): a WiFi that carries only TCP.
    pub fn block_udp(&self, k: usize, on: bool) -> Result<(), String> {
        block_udp_in(self.client(), k, on)
    }

    /// Loads `ruleset` into the balancer (`nft -f -`: one transaction).
    pub fn balance(&self, ruleset: &str) -> Result<(), String> {
        run(&["ip", "netns", "exec", self.balancer(), "nft", "-f", "-"], Some(ruleset))
    }
}

/// Why the fleet tests cannot run here (no `nft`), if they cannot; where they must
/// (`MPUDP_REQUIRE_NETNS`), this panics instead.
pub fn nft_missing() -> Option<&'static str> {
    let missing = Command::new("nft").arg("--version").output().is_err();
    if missing && std::env::var_os("MPUDP_REQUIRE_NETNS").is_some() {
        panic!("MPUDP_REQUIRE_NETNS is set, and nftables' `nft` is not installed");
    }
    missing.then_some("nftables' `nft` is not installed")
}

/// Drops UDP on link `c{k}` of namespace `ns` (nftables' own table there; `on` false lets it
/// through again): a WiFi that carries only TCP.
pub fn block_udp_in(ns: &str, k: usize, on: bool) -> Result<(), String> {
    let table = format!("mpudp_block_c{k}");
    let ruleset = if on {
        format!(
            "table inet {table} {{\n\
             \tchain out {{ type filter hook output priority 0; oifname \"c{k}\" meta l4proto udp drop; }}\n\
             \tchain in {{ type filter hook input priority 0; iifname \"c{k}\" meta l4proto udp drop; }}\n\
             }}\n"
        )
    } else {
        format!("delete table inet {table}\n")
    };
    run(&["ip", "netns", "exec", ns, "nft", "-f", "-"], Some(&ruleset))
}

/// Runs `args` with `stdin` given; its stderr on failure.
pub fn run(args: &[&str], stdin: Option<&str>) -> Result<(), String> {
    let mut child = Command::new(args[0])
        .args(&args[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if let (Some(text), Some(mut to)) = (stdin, child.stdin.take()) {
        to.write_all(text.as_bytes()).map_err(|e| e.to_string())?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}
