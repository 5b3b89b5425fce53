//! A server spread over several cores (issue 19; ARCHITECTURE.md, "More than one core"): one
//! endpoint per core, every core's socket bound to the same address with `SO_REUSEPORT`, and a
//! rule that sends each datagram to the core owning its connection. The rule reads one byte:
//!
//! - a **short header** carries the DCID this server issued: its first byte (byte 1) is the
//!   core's number (`Steering::tag`);
//! - every **long header** a server receives has a connection's name at byte 5, and the rule
//!   takes it modulo the number of cores:
//!   - a **CONFIRM**'s DCID is the subflow-0 CID the answering core chose in its HANDSHAKE,
//!     tagged the same way;
//!   - a **JOIN** from any address carries the connection's token (§4.3), derived from Key-S,
//!     which depends on that CID through TH: the answering core draws CIDs until the token's
//!     first byte, modulo the number of cores, is its number (`owns_token`; about `cores`
//!     derivations, a hash each, and one key agreement);
//!   - an **INITIAL**'s DCID is the client's random original DCID, the same in its repeats
//!     and in its INITIAL after a RETRY: a connection's first packets all reach one core (the
//!     one whose retry token and cookie keys answer them), and connections spread evenly over
//!     the cores even from a single address (a NAT, one client endpoint).
//!
//! `core_of` is that rule; mpudp loads the same rule into the kernel as a classic BPF program
//! (`SO_ATTACH_REUSEPORT_CBPF`), so no datagram crosses cores in user space.
//!
//! **A fleet** (issue 38; PROTOCOL.md §2.1): servers behind a load balancer that reads the same
//! byte. Each server has an id `server` among `servers`, and the byte (the *routing byte*) names
//! both: `r = core × servers + server`, so the balancer sends it to server `r mod servers` and
//! that server's kernel to core `r / servers` (modulo its cores). With one server (id 0 of 1),
//! `r` is the core's number, as above.

use crate::wire::Cid;

/// Most cores a server may be spread over.
pub const MAX_CORES: u8 = 64;

/// Which of `cores` endpoints of one server this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Steering {
    core: u8,
    cores: u8,
    server: u8,
    servers: u8,
}

impl Steering {
    /// Core `core` of `cores` (1..=[`MAX_CORES`]); `None` if out of range.
    pub fn new(core: u8, cores: u8) -> Option<Self> {
        ((1..=MAX_CORES).contains(&cores) && core < cores).then_some(Self { core, cores, server: 0, servers: 1 })
    }

    /// The same core of server `server` among `servers` of a fleet; `None` if `server` is out
    /// of range or the routing byte cannot name every (core, server) pair (`cores × servers`
    /// at most 256).
    pub fn in_fleet(self, server: u8, servers: u8) -> Option<Self> {
        (servers >= 1 && server < servers && u16::from(self.cores) * u16::from(servers) <= 256).then_some(Self {
            server,
            servers,
            ..self
        })
    }

    /// This server's id in its fleet (0 alone).
    pub fn server(&self) -> u8 {
        self.server
    }

    /// The fleet's number of server ids (1 alone).
    pub fn servers(&self) -> u8 {
        self.servers
    }

    /// The routing byte of this core of this server: `core × servers + server`.
    pub fn routing_byte(&self) -> u8 {
        // At most (cores - 1) × servers + servers - 1 = cores × servers - 1 <= 255.
        (u16::from(self.core) * u16::from(self.servers) + u16::from(self.server)) as u8
    }

    /// This endpoint's number.
    pub fn core(&self) -> u8 {
        self.core
    }

    /// How many endpoints share the server's addresses.
    pub fn cores(&self) -> u8 {
        self.cores
    }

    /// A CID this endpoint issues: its first byte is the routing byte, which names the core
    /// (and the server of a fleet); the other seven stay random.
    pub fn tag(&self, mut cid: Cid) -> Cid {
        cid.0[0] = self.routing_byte();
        cid
    }

    /// Whether JOINs naming `token` come to this core of this server: its first byte names
    /// the server modulo the fleet's ids, and the core (divided by the ids) modulo the cores.
    pub fn owns_token(&self, token: u32) -> bool {
        let b = (token >> 24) as u8;
        Self::server_of(b, self.servers) == self.server && self.core_of_byte(b) == self.core
    }

    /// The server of a fleet of `servers` ids that routing byte `b` names: what the load
    /// balancer computes (`iperf-siri fleet-rules` prints it as a map of every byte).
    pub fn server_of(b: u8, servers: u8) -> u8 {
        b % servers.max(1)
    }

    fn core_of_byte(&self, b: u8) -> u8 {
        (b / self.servers.max(1)) % self.cores.max(1)
    }

    /// The core of this server that datagram `d` belongs to, or `None` when any core may take
    /// it (a short header whose DCID does not name one of our cores: the kernel then hashes
    /// the addresses). The kernel program computes the same.
    pub fn core_of(&self, d: &[u8]) -> Option<u8> {
        let first = *d.first()?;
        let servers = self.servers.max(1);
        if first & 0x80 == 0 {
            let core = *d.get(1)? / servers;
            return (core < self.cores).then_some(core);
        }
        Some(self.core_of_byte(*d.get(5)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_is_refused() {
        assert!(Steering::new(0, 0).is_none() && Steering::new(2, 2).is_none() && Steering::new(0, 65).is_none());
        assert_eq!(Steering::new(3, 4).map(|s| (s.core(), s.cores())), Some((3, 4)));
    }

    #[test]
    fn tags_and_tokens_follow_the_core() {
        let s = Steering::new(2, 3).unwrap();
        let cid = s.tag(Cid([9; 8]));
        assert_eq!(cid.0, [2, 9, 9, 9, 9, 9, 9, 9]);
        assert!(s.owns_token(0x0500_0000) && s.owns_token(0x0201_0203) && !s.owns_token(0x0300_0000));
        // A short header, a CONFIRM, a JOIN, an INITIAL.
        assert_eq!(s.core_of(&[0x41, 2, 0, 0]), Some(2));
        assert_eq!(s.core_of(&[0x41, 7, 0, 0]), None, "not a tag of ours: any core");
        assert_eq!(s.core_of(&[0xd8, 0x6d, 0x70, 0, 1, 1, 0]), Some(1));
        assert_eq!(s.core_of(&[0xe0, 0x6d, 0x70, 0, 1, 0x05, 0, 0, 0]), Some(2));
        assert_eq!(s.core_of(&[0xc0, 0x6d, 0x70, 0, 1, 0xfe, 1]), Some(2), "254 mod 3");
        assert_eq!(s.core_of(&[]), None);
        assert_eq!(s.core_of(&[0x41]), None, "truncated");
    }

    #[test]
    fn a_fleets_routing_byte_names_the_server_and_the_core() {
        assert!(Steering::new(0, 64).unwrap().in_fleet(0, 5).is_none(), "64 × 5 > 256");
        assert!(Steering::new(0, 1).unwrap().in_fleet(3, 3).is_none());
        // Core 1 of 2 on server 2 of 3: r = 1 × 3 + 2 = 5.
        let s = Steering::new(1, 2).unwrap().in_fleet(2, 3).unwrap();
        assert_eq!((s.routing_byte(), s.tag(Cid([9; 8])).0[0]), (5, 5));
        assert_eq!(Steering::server_of(5, 3), 2);
        assert_eq!(s.core_of(&[0x41, 5, 0, 0]), Some(1));
        assert_eq!(s.core_of(&[0x41, 2, 0, 0]), Some(0), "core 0 of server 2");
        assert_eq!(s.core_of(&[0x41, 6, 0, 0]), None, "6 / 3 = 2: no such core");
        // A JOIN's token byte: every byte this core owns, the balancer sends here.
        let owned: Vec<u8> = (0..=255u8).filter(|&b| s.owns_token(u32::from(b) << 24)).collect();
        assert_eq!(owned.len(), 42, "about 256 / 6");
        for b in owned {
            assert_eq!(Steering::server_of(b, 3), 2);
            assert_eq!(s.core_of(&[0xe0, 0x6d, 0x70, 0, 2, b, 0, 0, 0]), Some(1));
        }
        // Alone, the byte is the core's number (what a server of one id always did).
        let alone = Steering::new(2, 3).unwrap();
        assert_eq!(alone.in_fleet(0, 1), Some(alone));
        assert_eq!(alone.routing_byte(), 2);
    }
}
