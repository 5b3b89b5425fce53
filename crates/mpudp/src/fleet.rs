//! A fleet of servers behind a stateless load balancer (issue 38; PROTOCOL.md §2.1): the
//! balancer is the Linux kernel's own packet path, an nftables ruleset this module writes.
//!
//! Every datagram a client sends carries one *routing byte* that names its server: byte 1 of a
//! short header (the first byte of the DCID), byte 5 of a CONFIRM (its DCID) or of a JOIN (its
//! token's first byte), `r mod servers`. An INITIAL or EARLY packet carries the client's random
//! original DCID there instead: the balancer spreads those over the servers that take new
//! connections, by the same byte (the repeats of an INITIAL, and its EARLY packets, keep it).
//!
//! The rules rewrite the destination address, stateless, in the prerouting hook at the raw
//! priority, with connection tracking off for the service's traffic (`notrack`): conntrack
//! would pin a client's address and port to the first server it chose, and one client socket
//! carries several connections (a phone's endpoint does), each of its own server. The
//! servers' answers come back through the balancer (its address is their route) and get the
//! service's address as their source. Draining a server (no new connection, the old ones
//! finish) or taking a dead one out (its id then goes to a live server, which answers every
//! packet of its connections with a stateless reset) is one atomic `nft -f` of a new ruleset.
//!
//! TCP carriers (PROTOCOL.md §4.11), where a client's network drops UDP: the balancer cannot
//! read a stream's routing byte (a SYN carries none), so with `tcp_base` each server `k` has
//! a port of its own at the balancer, `tcp_base + k`, which it names to its clients
//! (`Server::tcp_port`) for their TCP joins; a carrier to the service's own port (a first
//! handshake over TCP, no server chosen yet) goes to a server that takes new connections by a
//! hash of the client's address and port, the same for every packet of the stream.
//!
//! Why nftables and not IPVS: IPVS schedules by addresses and ports, or by a firewall mark
//! that nftables would have to set from the same byte anyway, and it keeps a connection table
//! of its own that pins a client's address and port to one server, as conntrack does. nftables
//! alone reads the byte and rewrites the address with no state: a balancer that restarts, or
//! a second one beside it, routes every packet the same way.

use std::fmt::Write;
use std::net::{IpAddr, SocketAddr};

/// A server of the fleet, as the balancer knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backend {
    /// Its id in the fleet's routing byte (`mpcore::Fleet::server`).
    pub id: u8,
    /// Where the balancer sends its datagrams (the port is the service's), of the service's
    /// family.
    pub addr: IpAddr,
    /// Takes new connections (false: drained, its connections finish).
    pub accepting: bool,
    /// Alive (false: its id goes to a live server, which resets its connections).
    pub alive: bool,
}

/// The balancer's configuration.
#[derive(Clone, Debug)]
pub struct Balancer {
    /// The service's address, which clients connect to: IPv4 (an `ip` table) or IPv6 (an
    /// `ip6` table); a service on both families is two balancers, one table each.
    pub service: SocketAddr,
    /// The fleet's number of ids (`mpcore::Fleet::servers`).
    pub servers: u8,
    /// The servers, by id.
    pub backends: Vec<Backend>,
    /// The nftables table's name.
    pub table: String,
    /// TCP carriers: server `k`'s own port is `tcp_base + k` (`None`: the rules carry UDP only).
    pub tcp_base: Option<u16>,
}

impl Balancer {
    /// Checks what the ruleset needs: at least one live server that takes connections, ids
    /// below `servers`, none twice.
    pub fn validate(&self) -> Result<(), String> {
        if self.servers == 0 {
            return Err("the fleet needs at least one server id".into());
        }
        if let Some(base) = self.tcp_base {
            let last = u32::from(base) + u32::from(self.servers) - 1;
            if base == 0 || last > 65_535 || (u32::from(base)..=last).contains(&u32::from(self.service.port())) {
                return Err(format!(
                    "TCP ports {base}-{last} (one per server id) must be ports, apart from the service's {}",
                    self.service.port()
                ));
            }
        }
        let mut seen = [false; 256];
        for b in &self.backends {
            if b.id >= self.servers || std::mem::replace(&mut seen[usize::from(b.id)], true) {
                return Err(format!("server id {} is out of range (fleet of {}) or given twice", b.id, self.servers));
            }
        }
        if let Some(b) = self.backends.iter().find(|b| b.addr.is_ipv6() != self.service.is_ipv6()) {
            return Err(format!("server {} at {} is not of the service's family ({})", b.id, b.addr, self.service));
        }
        if !self.backends.iter().any(|b| b.alive && b.accepting) {
            return Err("no live server takes new connections".into());
        }
        Ok(())
    }

    /// Where each routing byte's packets go: server `r mod servers`; an id no live server
    /// has goes to a live one (which resets the connections it does not know).
    pub fn by_routing_byte(&self) -> Vec<IpAddr> {
        let live: Vec<&Backend> = self.backends.iter().filter(|b| b.alive).collect();
        (0..=255u8)
            .map(|r| {
                let id = mpcore::Steering::server_of(r, self.servers);
                match live.iter().find(|b| b.id == id) {
                    Some(b) => b.addr,
                    None => live[usize::from(r) % live.len().max(1)].addr,
                }
            })
            .collect()
    }

    /// Where each first byte of a resumed INITIAL's (or an EARLY packet's) DCID goes: the
    /// client wrote there the routing byte of the server that issued its ticket (PROTOCOL.md
    /// §2.1, §4.9), so to that server while it takes new connections (the one that takes the
    /// ticket's 0-RTT data); to the open servers in turn (as a fresh INITIAL) when it is
    /// drained or dead, where the connection resumes at one round trip.
    pub fn by_resumed_byte(&self) -> Vec<IpAddr> {
        let open = self.by_initial_byte();
        (0..=255u8)
            .map(|r| {
                let id = mpcore::Steering::server_of(r, self.servers);
                match self.backends.iter().find(|b| b.id == id && b.alive && b.accepting) {
                    Some(b) => b.addr,
                    None => open[usize::from(r)],
                }
            })
            .collect()
    }

    /// Where each first byte of an INITIAL's random DCID goes: the live servers that take
    /// new connections, in turn.
    pub fn by_initial_byte(&self) -> Vec<IpAddr> {
        let open: Vec<IpAddr> = self.backends.iter().filter(|b| b.alive && b.accepting).map(|b| b.addr).collect();
        (0..=255usize).map(|r| open[r % open.len().max(1)]).collect()
    }

    /// The ruleset, for `nft -f`: it replaces the table atomically.
    pub fn nft_ruleset(&self) -> Result<String, String> {
        self.validate()?;
        let (vip, port, t) = (self.service.ip(), self.service.port(), &self.table);
        // The rules' family: `ip` or `ip6` (the payload offsets are the same: `@th` counts
        // from the transport header).
        let ip = if self.service.is_ipv6() { "ip6" } else { "ip" };
        let map = |to: Vec<IpAddr>| {
            let items: Vec<String> = to.iter().enumerate().map(|(r, a)| format!("{r} : {a}")).collect();
            format!("{{ {} }}", items.join(", "))
        };
        let backends: Vec<String> = self.backends.iter().map(|b| b.addr.to_string()).collect();
        let by_routing_byte = map(self.by_routing_byte());
        let mut s = String::new();
        let _ = writeln!(s, "# mpudp fleet balancer: {} server ids, service {}", self.servers, self.service);
        for b in &self.backends {
            let state = match (b.alive, b.accepting) {
                (false, _) => "dead: its id goes to a live server",
                (true, false) => "drained: no new connection",
                (true, true) => "in service",
            };
            let _ = writeln!(s, "#   server {} at {}: {state}", b.id, b.addr);
        }
        let _ = writeln!(s, "table {ip} {t}\ndelete table {ip} {t}\ntable {ip} {t} {{");
        let _ = writeln!(s, "  chain prerouting {{\n    type filter hook prerouting priority raw; policy accept;");
        let _ = writeln!(s, "    # No connection tracking: one client socket carries connections of several servers.");
        let _ = writeln!(s, "    {ip} daddr {vip} udp dport {port} notrack");
        let _ = writeln!(s, "    {ip} saddr {{ {} }} udp sport {port} notrack", backends.join(", "));
        let _ = writeln!(s, "    # The payload starts at bit 64 of the transport header (after UDP's 8 bytes).");
        let _ = writeln!(s, "    # Short header (first bit 0): byte 1, the DCID's routing byte.");
        let _ = writeln!(
            s,
            "    {ip} daddr {vip} udp dport {port} @th,64,1 0 {ip} daddr set @th,72,8 map {by_routing_byte}"
        );
        let _ = writeln!(
            s,
            "    # A resumed INITIAL (type 0, R: its last bit) and EARLY (5): byte 5, the issuer's routing byte."
        );
        let resumed = map(self.by_resumed_byte());
        let _ = writeln!(
            s,
            "    {ip} daddr {vip} udp dport {port} @th,64,1 1 @th,66,3 0 @th,71,1 1 {ip} daddr set @th,104,8 map {resumed}"
        );
        let _ = writeln!(
            s,
            "    {ip} daddr {vip} udp dport {port} @th,64,1 1 @th,66,3 5 {ip} daddr set @th,104,8 map {resumed}"
        );
        let _ = writeln!(s, "    # Any other INITIAL: byte 5, the client's random DCID, over the open servers.");
        let _ = writeln!(
            s,
            "    {ip} daddr {vip} udp dport {port} @th,64,1 1 @th,66,3 0 {ip} daddr set @th,104,8 map {}",
            map(self.by_initial_byte())
        );
        let _ = writeln!(s, "    # CONFIRM and JOIN: byte 5, the server's CID or its token.");
        let _ = writeln!(
            s,
            "    {ip} daddr {vip} udp dport {port} @th,64,1 1 {ip} daddr set @th,104,8 map {by_routing_byte}"
        );
        if let Some(base) = self.tcp_base {
            let last = u32::from(base) + u32::from(self.servers) - 1;
            let ports = format!("{{ {port}, {base}-{last} }}");
            let _ =
                writeln!(s, "    # TCP carriers: to server k's own port, {base} + k; to {port}, a first handshake,");
            let _ = writeln!(s, "    # by a hash of the client's address and port over the open servers.");
            let _ = writeln!(s, "    {ip} daddr {vip} tcp dport {ports} notrack");
            let _ = writeln!(s, "    {ip} saddr {{ {} }} tcp sport {ports} notrack", backends.join(", "));
            let by_port: Vec<String> = self
                .by_routing_byte()
                .iter()
                .take(usize::from(self.servers))
                .enumerate()
                .map(|(k, a)| format!("{} : {a}", u32::from(base) + k as u32))
                .collect();
            let _ = writeln!(
                s,
                "    {ip} daddr {vip} tcp dport {base}-{last} {ip} daddr set tcp dport map {{ {} }}",
                by_port.join(", ")
            );
            let open: Vec<IpAddr> = self.backends.iter().filter(|b| b.alive && b.accepting).map(|b| b.addr).collect();
            let _ = writeln!(
                s,
                "    {ip} daddr {vip} tcp dport {port} {ip} daddr set jhash {ip} saddr . tcp sport mod {} map {}",
                open.len(),
                map(open.clone())
            );
            let _ = writeln!(s, "    {ip} saddr {{ {} }} tcp sport {ports} {ip} saddr set {vip}", backends.join(", "));
        }
        let _ = writeln!(s, "    # The servers' answers leave from the service's address.");
        let _ = writeln!(s, "    {ip} saddr {{ {} }} udp sport {port} {ip} saddr set {vip}", backends.join(", "));
        let _ = writeln!(s, "  }}\n}}");
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn fleet() -> Balancer {
        let b = |id, last| Backend { id, addr: Ipv4Addr::new(10, 0, id, last).into(), accepting: true, alive: true };
        Balancer {
            service: "10.9.9.9:443".parse().unwrap(),
            servers: 3,
            backends: vec![b(0, 2), b(1, 2), b(2, 2)],
            table: "mpudp".into(),
            tcp_base: None,
        }
    }

    #[test]
    fn bytes_go_to_their_server_and_a_dead_ones_to_a_live_one() {
        let mut f = fleet();
        let by = f.by_routing_byte();
        assert!((0..=255usize).all(|r| by[r] == IpAddr::from(Ipv4Addr::new(10, 0, (r % 3) as u8, 2))));
        assert_eq!(f.by_resumed_byte(), by, "a resumed INITIAL goes to its ticket's issuer");
        f.backends[1].accepting = false;
        let initial = f.by_initial_byte();
        assert!(!initial.contains(&Ipv4Addr::new(10, 0, 1, 2).into()), "drained: no INITIAL");
        let resumed = f.by_resumed_byte();
        assert!(!resumed.contains(&Ipv4Addr::new(10, 0, 1, 2).into()), "drained: no resumed INITIAL");
        assert!((0..=255usize).filter(|r| r % 3 != 1).all(|r| resumed[r] == by[r]), "the others' still go to them");
        assert_eq!(f.by_routing_byte(), by, "drained: its connections still reach it");
        let drained = f.nft_ruleset().unwrap();
        for want in ["notrack", "@th,104,8 map", "drained"] {
            assert!(drained.contains(want), "{want:?} in the drained fleet's rules:\n{drained}");
        }
        f.backends[1].alive = false;
        let by = f.by_routing_byte();
        assert!(!by.contains(&Ipv4Addr::new(10, 0, 1, 2).into()), "dead: nothing goes there");
        assert_eq!(by[0], IpAddr::from(Ipv4Addr::new(10, 0, 0, 2)));
        // (Each on its own: `a && b && c || d` held whenever `d` did, issue 56.)
        let dead = f.nft_ruleset().unwrap();
        for want in ["notrack", "@th,104,8 map", "dead"] {
            assert!(dead.contains(want), "{want:?} in the rules without the dead server:\n{dead}");
        }
        f.backends[0].accepting = false;
        f.backends[2].alive = false;
        assert!(f.nft_ruleset().is_err(), "no server takes connections");
        f.backends.push(Backend { id: 3, addr: Ipv4Addr::LOCALHOST.into(), accepting: true, alive: true });
        assert!(f.validate().is_err(), "id 3 of 3");
    }

    #[test]
    fn an_ipv6_service_gets_ip6_rules_and_mixed_families_are_refused() {
        let b6 = |id: u8| Backend {
            id,
            addr: Ipv6Addr::new(0xfd00, 0, 0, u16::from(id), 0, 0, 0, 2).into(),
            accepting: true,
            alive: true,
        };
        let mut f = Balancer {
            service: "[fd00::9:1]:5201".parse().unwrap(),
            servers: 3,
            backends: vec![b6(0), b6(1), b6(2)],
            table: "mpudp6".into(),
            tcp_base: Some(6200),
        };
        let text = f.nft_ruleset().unwrap();
        for want in [
            "table ip6 mpudp6 {",
            "ip6 daddr fd00::9:1 udp dport 5201 notrack",
            "ip6 daddr set @th,72,8 map",
            "ip6 saddr set fd00::9:1",
            "0 : fd00::2",
            "tcp dport 6200-6202 ip6 daddr set tcp dport map { 6200 : fd00::2, 6201 : fd00:0:0:1::2",
            "ip6 daddr set jhash ip6 saddr . tcp sport mod 3 map",
        ] {
            assert!(text.contains(want), "{want:?} in:\n{text}");
        }
        assert!(!text.contains(" ip daddr") && !text.contains("table ip "), "no IPv4 rule:\n{text}");
        f.tcp_base = Some(5200);
        assert!(f.validate().unwrap_err().contains("apart from the service's"), "5200-5202 holds 5201");
        f.tcp_base = Some(6200);
        f.backends[1].addr = Ipv4Addr::new(10, 0, 1, 2).into();
        assert!(f.validate().unwrap_err().contains("family"));
        // nftables itself accepts the rules, TCP's included (where `nft` runs with the rights
        // to check).
        f.backends[1] = b6(1);
        let text = f.nft_ruleset().unwrap();
        let check = std::process::Command::new("nft")
            .args(["-c", "-f", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn();
        match check {
            Ok(mut c) => {
                use std::io::Write as _;
                let _ = c.stdin.take().map(|mut i| i.write_all(text.as_bytes()));
                let out = c.wait_with_output().unwrap();
                let err = String::from_utf8_lossy(&out.stderr);
                if !out.status.success()
                    && (err.contains("Operation not permitted") || err.contains("Permission denied"))
                {
                    eprintln!("SKIPPED the nft -c check: {err}");
                } else {
                    assert!(out.status.success(), "nft -c refused the IPv6 rules: {err}\n{text}");
                }
            }
            Err(e) => eprintln!("SKIPPED the nft -c check: no nft ({e})"),
        }
    }
}
