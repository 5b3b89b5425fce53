//! Transport parameters (PROTOCOL.md §8).

use super::codec::{varint_len, Reader, Writer};
use super::packet::Cid;
use super::Error;

/// Parameter ids (§8).
pub mod id {
    pub const MAX_DATAGRAM_SIZE: u64 = 0x01;
    pub const INITIAL_WINDOW: u64 = 0x02;
    pub const MAX_ACK_DELAY: u64 = 0x03;
    pub const IDLE_TIMEOUT: u64 = 0x04;
    pub const FAST_JOIN: u64 = 0x05;
    pub const AEAD_SUITES: u64 = 0x06;
    pub const MAX_SUBFLOWS: u64 = 0x07;
    pub const MP_IDLE: u64 = 0x08;
    pub const CID_LEN: u64 = 0x09;
    pub const TICKETS: u64 = 0x0a;
    pub const EARLY_DATA: u64 = 0x0b;
    pub const TCP_PORT: u64 = 0x0c;
    pub const REMOVE_SUBFLOW: u64 = 0x0d;
}

/// Most AEAD suites a peer may list.
pub const MAX_SUITES: usize = 8;

/// Decoded transport parameters, defaults filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransportParams {
    pub max_datagram_size: u64,
    pub initial_window: u64,
    pub max_ack_delay_ms: u64,
    pub idle_timeout_ms: u64,
    pub fast_join: bool,
    /// Suite ids in preference order; `suites[..suite_count]` are valid.
    pub suites: [u8; MAX_SUITES],
    pub suite_count: u8,
    pub max_subflows: u64,
    pub mp_idle: bool,
    /// Bytes of its CIDs that short headers sent to this endpoint carry (§3.2): 4 to 8.
    pub cid_len: u8,
    /// The sender takes resumption tickets (NEW_TICKET, §5.19).
    pub tickets: bool,
    /// In a resuming INITIAL: the client sends 0-RTT data after it; in a resumed HANDSHAKE: the
    /// server took it (§4.9).
    pub early_data: bool,
    /// Server: the port its clients open TCP carriers to (§4.11), where a fleet's balancer
    /// maps a port to each server; 0: the port the client connected to.
    pub tcp_port: u16,
    /// The sender closes its subflows that a REMOVE_SUBFLOW names (§5.21).
    pub remove_subflow: bool,
}

impl Default for TransportParams {
    fn default() -> Self {
        // AES-128-GCM first: 2.8x faster than ChaCha20-Poly1305 where the CPU has AES
        // instructions (benches/wire_crypto.rs); ChaCha20 remains for CPUs without them.
        let mut suites = [0; MAX_SUITES];
        suites[0] = 0x02;
        suites[1] = 0x01;
        Self {
            max_datagram_size: 1200,
            initial_window: 1 << 20,
            max_ack_delay_ms: 25,
            idle_timeout_ms: 30_000,
            fast_join: false,
            suites,
            suite_count: 2,
            max_subflows: 8,
            mp_idle: false,
            cid_len: 8,
            tickets: false,
            early_data: false,
            tcp_port: 0,
            remove_subflow: false,
        }
    }
}

impl TransportParams {
    /// The offered suites.
    pub fn suites(&self) -> &[u8] {
        &self.suites[..self.suite_count as usize]
    }

    /// Sets the offered suites (at most [`MAX_SUITES`], at least one).
    pub fn set_suites(&mut self, s: &[u8]) -> Result<(), Error> {
        if s.is_empty() || s.len() > MAX_SUITES {
            return Err(Error::Malformed("suite list"));
        }
        self.suites = [0; MAX_SUITES];
        self.suites[..s.len()].copy_from_slice(s);
        self.suite_count = s.len() as u8;
        Ok(())
    }

    /// Parses a parameter block. Unknown ids are skipped; duplicates and bad values are errors.
    pub fn parse(block: &[u8]) -> Result<Self, Error> {
        let mut p = TransportParams::default();
        let mut seen = 0u64;
        let mut r = Reader::new(block);
        while !r.is_empty() {
            let id = r.varint()?;
            let value = r.length_prefixed()?;
            if id < 64 {
                let bit = 1u64 << id;
                if seen & bit != 0 {
                    return Err(Error::Malformed("duplicate transport parameter"));
                }
                seen |= bit;
            }
            let as_varint = || -> Result<u64, Error> {
                let mut vr = Reader::new(value);
                let v = vr.varint()?;
                if !vr.is_empty() {
                    return Err(Error::Malformed("transport parameter length"));
                }
                Ok(v)
            };
            let flag = || -> Result<bool, Error> {
                if value.is_empty() {
                    Ok(true)
                } else {
                    Err(Error::Malformed("flag parameter with a value"))
                }
            };
            match id {
                id::MAX_DATAGRAM_SIZE => {
                    p.max_datagram_size = as_varint()?;
                    if !(1200..=65_527).contains(&p.max_datagram_size) {
                        return Err(Error::Malformed("max_datagram_size out of range"));
                    }
                }
                id::INITIAL_WINDOW => p.initial_window = as_varint()?,
                id::MAX_ACK_DELAY => {
                    p.max_ack_delay_ms = as_varint()?;
                    if p.max_ack_delay_ms >= 1 << 14 {
                        return Err(Error::Malformed("max_ack_delay out of range"));
                    }
                }
                id::IDLE_TIMEOUT => p.idle_timeout_ms = as_varint()?,
                id::FAST_JOIN => p.fast_join = flag()?,
                id::AEAD_SUITES => p.set_suites(value)?,
                id::MAX_SUBFLOWS => {
                    p.max_subflows = as_varint()?;
                    if p.max_subflows == 0 {
                        return Err(Error::Malformed("max_subflows is 0"));
                    }
                }
                id::MP_IDLE => p.mp_idle = flag()?,
                id::CID_LEN => {
                    let v = as_varint()?;
                    if !(Cid::MIN_LEN as u64..=Cid::LEN as u64).contains(&v) {
                        return Err(Error::Malformed("cid_len out of range"));
                    }
                    p.cid_len = v as u8;
                }
                id::TICKETS => p.tickets = flag()?,
                id::EARLY_DATA => p.early_data = flag()?,
                id::TCP_PORT => {
                    let v = as_varint()?;
                    if !(1..=65_535).contains(&v) {
                        return Err(Error::Malformed("tcp_port out of range"));
                    }
                    p.tcp_port = v as u16;
                }
                id::REMOVE_SUBFLOW => p.remove_subflow = flag()?,
                _ => {}
            }
        }
        Ok(p)
    }

    /// Writes every parameter that differs from its default (suites always).
    pub fn emit(&self, w: &mut Writer<'_>) -> Result<usize, Error> {
        let start = w.len();
        let d = TransportParams::default();
        let put = |w: &mut Writer<'_>, id: u64, v: u64| -> Result<(), Error> {
            w.varint(id)?;
            w.varint(varint_len(v) as u64)?;
            w.varint(v)
        };
        if self.max_datagram_size != d.max_datagram_size {
            put(w, id::MAX_DATAGRAM_SIZE, self.max_datagram_size)?;
        }
        if self.initial_window != d.initial_window {
            put(w, id::INITIAL_WINDOW, self.initial_window)?;
        }
        if self.max_ack_delay_ms != d.max_ack_delay_ms {
            put(w, id::MAX_ACK_DELAY, self.max_ack_delay_ms)?;
        }
        if self.idle_timeout_ms != d.idle_timeout_ms {
            put(w, id::IDLE_TIMEOUT, self.idle_timeout_ms)?;
        }
        if self.fast_join {
            w.varint(id::FAST_JOIN)?;
            w.varint(0)?;
        }
        w.varint(id::AEAD_SUITES)?;
        w.length_prefixed(self.suites())?;
        if self.max_subflows != d.max_subflows {
            put(w, id::MAX_SUBFLOWS, self.max_subflows)?;
        }
        if self.mp_idle {
            w.varint(id::MP_IDLE)?;
            w.varint(0)?;
        }
        if self.cid_len != d.cid_len {
            put(w, id::CID_LEN, u64::from(self.cid_len))?;
        }
        if self.tickets {
            w.varint(id::TICKETS)?;
            w.varint(0)?;
        }
        if self.early_data {
            w.varint(id::EARLY_DATA)?;
            w.varint(0)?;
        }
        if self.tcp_port != 0 {
            put(w, id::TCP_PORT, u64::from(self.tcp_port))?;
        }
        if self.remove_subflow {
            w.varint(id::REMOVE_SUBFLOW)?;
            w.varint(0)?;
        }
        Ok(w.len() - start)
    }
}
