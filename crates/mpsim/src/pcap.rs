//! A capture of every datagram entering a path, as a pcap file (LINKTYPE_RAW: IPv4 or IPv6
//! packets with a UDP header, checksums computed) for Wireshark and tshark, in virtual time
//! from the epoch. `Sim::capture` turns it on.

use crate::Time;
use std::net::SocketAddr;

/// A pcap file being written in memory.
#[derive(Debug, Clone)]
pub struct Pcap {
    bytes: Vec<u8>,
    packets: usize,
}

impl Default for Pcap {
    fn default() -> Self {
        Self::new()
    }
}

fn sum16(data: &[u8], mut acc: u32) -> u32 {
    for c in data.chunks(2) {
        acc += u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]));
    }
    acc
}

fn fold(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

impl Pcap {
    /// The global header: microsecond timestamps, snap length 65535, LINKTYPE_RAW (101).
    pub fn new() -> Self {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
        bytes.extend_from_slice(&2u16.to_le_bytes());
        bytes.extend_from_slice(&4u16.to_le_bytes());
        bytes.extend_from_slice(&0i32.to_le_bytes());
        bytes.extend_from_slice(&0u32.to_le_bytes());
        bytes.extend_from_slice(&65_535u32.to_le_bytes());
        bytes.extend_from_slice(&101u32.to_le_bytes());
        Self { bytes, packets: 0 }
    }

    /// Records a UDP datagram from `src` to `dst` at `time` (µs). Mixed families are not
    /// recorded (no such datagram exists).
    pub fn push(&mut self, time: Time, src: SocketAddr, dst: SocketAddr, payload: &[u8]) {
        let udp_len = 8 + payload.len();
        let mut ip = Vec::with_capacity(48 + payload.len());
        let pseudo = match (src, dst) {
            (SocketAddr::V4(s), SocketAddr::V4(d)) => {
                let total = (20 + udp_len) as u16;
                ip.extend_from_slice(&[0x45, 0]);
                ip.extend_from_slice(&total.to_be_bytes());
                ip.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]);
                ip.extend_from_slice(&s.ip().octets());
                ip.extend_from_slice(&d.ip().octets());
                let c = fold(sum16(&ip, 0));
                ip[10..12].copy_from_slice(&c.to_be_bytes());
                let mut p = Vec::with_capacity(12);
                p.extend_from_slice(&s.ip().octets());
                p.extend_from_slice(&d.ip().octets());
                p.extend_from_slice(&[0, 17]);
                p.extend_from_slice(&(udp_len as u16).to_be_bytes());
                p
            }
            (SocketAddr::V6(s), SocketAddr::V6(d)) => {
                ip.extend_from_slice(&[0x60, 0, 0, 0]);
                ip.extend_from_slice(&(udp_len as u16).to_be_bytes());
                ip.extend_from_slice(&[17, 64]);
                ip.extend_from_slice(&s.ip().octets());
                ip.extend_from_slice(&d.ip().octets());
                let mut p = Vec::with_capacity(40);
                p.extend_from_slice(&s.ip().octets());
                p.extend_from_slice(&d.ip().octets());
                p.extend_from_slice(&(udp_len as u32).to_be_bytes());
                p.extend_from_slice(&[0, 0, 0, 17]);
                p
            }
            _ => return,
        };
        let at = ip.len();
        ip.extend_from_slice(&src.port().to_be_bytes());
        ip.extend_from_slice(&dst.port().to_be_bytes());
        ip.extend_from_slice(&(udp_len as u16).to_be_bytes());
        ip.extend_from_slice(&[0, 0]);
        ip.extend_from_slice(payload);
        let c = match fold(sum16(&ip[at..], sum16(&pseudo, 0))) {
            0 => 0xffff,
            c => c,
        };
        ip[at + 6..at + 8].copy_from_slice(&c.to_be_bytes());
        self.bytes.extend_from_slice(&((time / 1_000_000) as u32).to_le_bytes());
        self.bytes.extend_from_slice(&((time % 1_000_000) as u32).to_le_bytes());
        self.bytes.extend_from_slice(&(ip.len() as u32).to_le_bytes());
        self.bytes.extend_from_slice(&(ip.len() as u32).to_le_bytes());
        self.bytes.extend_from_slice(&ip);
        self.packets += 1;
    }

    /// Datagrams recorded.
    pub fn packets(&self) -> usize {
        self.packets
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}
