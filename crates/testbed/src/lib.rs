//! Two hosts on one machine for the tests that need real interfaces: a client and a server
//! network namespace joined by two veth pairs, set up with iproute2 and deleted on drop.
//!
//! ```text
//!  client ns                             server ns
//!  c0 10.N.1.1/24  <--veth-->  s0 10.N.1.2/24
//!  c1 10.N.2.1/24  <--veth-->  s1 10.N.2.2/24      lo 10.N.9.1/32 (the server)
//! ```
//!
//! The server's address is reachable over either link (a /32 route per client link, `c0`
//! preferred); a socket bound to a device takes the route through that device. Each test
//! picks its own `N` and the namespaces carry the process id, so tests can run in parallel.

pub mod fleet;
mod iproute;

pub use iproute::ip;

use std::process::{Child, Command};

/// Why the namespace tests cannot run here, if they cannot (the test then says so and skips).
/// Where they must run (`MPUDP_REQUIRE_NETNS` set, as `.ci/run` does), a reason is a failure:
/// this panics with it.
pub fn unavailable() -> Option<&'static str> {
    let why = missing();
    if let (Some(why), Some(_)) = (why, std::env::var_os("MPUDP_REQUIRE_NETNS")) {
        panic!("MPUDP_REQUIRE_NETNS is set, and the namespace tests cannot run: {why}");
    }
    why
}

fn missing() -> Option<&'static str> {
    let root = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("Uid:")).map(|l| l.split_whitespace().nth(2) == Some("0")))
        .unwrap_or(false);
    if !root {
        return Some("creating network namespaces and veth pairs needs root");
    }
    if Command::new("ip").arg("-V").output().is_err() {
        return Some("iproute2's `ip` is not installed");
    }
    None
}

/// The namespaces and their links.
#[derive(Debug)]
pub struct Testbed {
    pub client: String,
    pub server: String,
    net: u8,
}

impl Testbed {
    /// Namespaces `{tag}-c{pid}` and `{tag}-s{pid}` on the addresses `10.{net}.*`.
    pub fn new(tag: &str, net: u8) -> Result<Self, String> {
        let t = Self::linked(tag, net)?;
        let (c, s) = (&t.client, &t.server);
        for k in 0..2 {
            ip(&format!("-n {c} addr add 10.{net}.{}.1/24 dev c{k}", k + 1))?;
            ip(&format!("-n {s} addr add 10.{net}.{}.2/24 dev s{k}", k + 1))?;
        }
        t.links_up()?;
        ip(&format!("-n {s} addr add {}/32 dev lo", t.server_ip()))?;
        t.route(0)?;
        t.route(1)?;
        Ok(t)
    }

    /// The two namespaces and their two veth pairs, without addresses, links down.
    fn linked(tag: &str, net: u8) -> Result<Self, String> {
        let id = std::process::id();
        let t = Testbed { client: format!("{tag}-c{id}"), server: format!("{tag}-s{id}"), net };
        let (c, s) = (&t.client, &t.server);
        ip(&format!("netns add {c}"))?;
        ip(&format!("netns add {s}"))?;
        for n in [c, s] {
            ip(&format!("-n {n} link set lo up"))?;
        }
        for k in 0..2 {
            ip(&format!("link add c{k} netns {c} type veth peer name s{k} netns {s}"))?;
        }
        Ok(t)
    }

    fn links_up(&self) -> Result<(), String> {
        for k in 0..2 {
            ip(&format!("-n {} link set c{k} up", self.client))?;
            ip(&format!("-n {} link set s{k} up", self.server))?;
        }
        Ok(())
    }

    /// The same namespaces with the links a phone meets where cellular is IPv6-only: `c0` has
    /// only IPv4 (`10.N.1.1/24`, the WiFi), `c1` only IPv6 (`fd00:N:2::1/64`, the cellular);
    /// the server has `10.N.9.1` and `fd00:N:9::1` on its loopback, each reachable through the
    /// one link of its family.
    pub fn dual_stack(tag: &str, net: u8) -> Result<Self, String> {
        let t = Self::linked(tag, net)?;
        let (c, s) = (&t.client, &t.server);
        ip(&format!("-n {c} addr add 10.{net}.1.1/24 dev c0"))?;
        ip(&format!("-n {s} addr add 10.{net}.1.2/24 dev s0"))?;
        // `nodad`: usable at once (duplicate address detection would hold it for a second).
        ip(&format!("-n {c} -6 addr add fd00:{net}:2::1/64 dev c1 nodad"))?;
        ip(&format!("-n {s} -6 addr add fd00:{net}:2::2/64 dev s1 nodad"))?;
        t.links_up()?;
        ip(&format!("-n {s} addr add {}/32 dev lo", t.server_ip()))?;
        ip(&format!("-n {s} -6 addr add {}/128 dev lo nodad", t.server_ip6()))?;
        t.route(0)?;
        ip(&format!("-n {c} -6 route replace {}/128 via fd00:{net}:2::2 dev c1", t.server_ip6()))?;
        Ok(t)
    }

    /// The server's IPv6 address (of [`Testbed::dual_stack`]), on its loopback.
    pub fn server_ip6(&self) -> String {
        format!("fd00:{}:9::1", self.net)
    }

    /// The server's address, on its loopback.
    pub fn server_ip(&self) -> String {
        format!("10.{}.9.1", self.net)
    }

    /// (Re)installs the client's route to the server through `c{k}` (as DHCP would after a
    /// link comes back).
    pub fn route(&self, k: usize) -> Result<(), String> {
        ip(&format!("-n {} route replace {}/32 dev c{k} metric {}", self.client, self.server_ip(), 10 + k))
    }

    /// Takes the client's link `c{k}` down or up.
    pub fn set_link(&self, k: usize, up: bool) -> Result<(), String> {
        ip(&format!("-n {} link set c{k} {}", self.client, if up { "up" } else { "down" }))
    }

    /// A firewall in the client's namespace drops every UDP datagram in and out of `c{k}`
    /// (`true`), as a hotel or enterprise network that blocks UDP does, or lets them pass
    /// again (`false`); TCP and the link are untouched. nftables, one transaction each.
    pub fn block_udp(&self, k: usize, on: bool) -> Result<(), String> {
        fleet::block_udp_in(&self.client, k, on)
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        let _ = ip(&format!("netns del {}", self.client));
        let _ = ip(&format!("netns del {}", self.server));
    }
}

/// A child process killed and reaped when the test ends, passed or failed.
#[derive(Debug)]
pub struct Reap(pub Child);

impl Drop for Reap {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
