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

use crate::wire::Cid;

/// Most cores a server may be spread over.
pub const MAX_CORES: u8 = 64;

/// Which of `cores` endpoints of one server this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Steering {
    core: u8,
    cores: u8,
}

impl Steering {
    /// Core `core` of `cores` (1..=[`MAX_CORES`]); `None` if out of range.
    pub fn new(core: u8, cores: u8) -> Option<Self> {
        ((1..=MAX_CORES).contains(&cores) && core < cores).then_some(Self { core, cores })
    }

    /// This endpoint's number.
    pub fn core(&self) -> u8 {
        self.core
    }

    /// How many endpoints share the server's addresses.
    pub fn cores(&self) -> u8 {
        self.cores
    }

    /// A CID this endpoint issues: its first byte names the core (the other seven stay random).
    pub fn tag(&self, mut cid: Cid) -> Cid {
        cid.0[0] = self.core;
        cid
    }

    /// Whether JOINs naming `token` come to this core: its first byte, modulo the cores.
    pub fn owns_token(&self, token: u32) -> bool {
        Self::token_core(token, self.cores) == self.core
    }

    fn token_core(token: u32, cores: u8) -> u8 {
        (token >> 24) as u8 % cores
    }

    /// The core datagram `d` belongs to among `cores`, or `None` when any core may take it
    /// (a short header whose DCID is not one of ours: the kernel then hashes the addresses).
    /// The kernel program computes the same.
    pub fn core_of(d: &[u8], cores: u8) -> Option<u8> {
        let first = *d.first()?;
        if first & 0x80 == 0 {
            let tag = *d.get(1)?;
            return (tag < cores).then_some(tag);
        }
        Some(*d.get(5)? % cores.max(1))
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
        assert_eq!(Steering::core_of(&[0x41, 2, 0, 0], 3), Some(2));
        assert_eq!(Steering::core_of(&[0x41, 7, 0, 0], 3), None, "not a tag of ours: any core");
        assert_eq!(Steering::core_of(&[0xd8, 0x6d, 0x70, 0, 1, 1, 0], 3), Some(1));
        assert_eq!(Steering::core_of(&[0xe0, 0x6d, 0x70, 0, 1, 0x05, 0, 0, 0], 3), Some(2));
        assert_eq!(Steering::core_of(&[0xc0, 0x6d, 0x70, 0, 1, 0xfe, 1], 3), Some(2), "254 mod 3");
        assert_eq!(Steering::core_of(&[], 3), None);
        assert_eq!(Steering::core_of(&[0x41], 3), None, "truncated");
    }
}
