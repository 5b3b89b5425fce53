//! A path's TCP carrier (PROTOCOL.md §4.11) as the protocol above it sees one: a reliable,
//! in-order pipe. One per path and direction (the simulator has one client).
//!
//! - It shares the path's bottleneck (rate, delay) with the path's UDP datagrams.
//! - A firewall that drops UDP (`PathEvent::Firewall`) lets it through; the path MTU does not
//!   apply (TCP segments the records).
//! - A datagram the path would lose is not lost: it arrives a retransmission later (TCP's
//!   minimum RTO, 200 ms in Linux, and a round trip), and everything after it waits behind it
//!   (head-of-line blocking).
//! - Its queue never overflows (TCP's window and the sender's socket buffer hold the excess;
//!   the client's socket then fills, as `local_uplink_queue` models for UDP).
//! - An outage (`PathEvent::Down`) drops what enters, as it does for UDP: the simulator does
//!   not model a TCP connection outliving an outage.
//!
//! The handshake of the TCP connection itself is not modelled: a client's first record waits
//! one round trip more in a real network (SYN, SYN-ACK).

use crate::{Delivery, Sim, Verdict};
use mpcore::{Carrier, PathId, Time};
use std::cmp::Reverse;
use std::net::SocketAddr;

/// The least time TCP takes to repair a loss beyond the round trip (Linux's `TCP_RTO_MIN`).
const TCP_RTO_MIN: Time = 200_000;

impl Sim {
    /// A record enters path `k`'s TCP carrier (towards the server if `from_client`).
    pub(crate) fn enter_tcp(
        &mut self,
        from_client: bool,
        k: usize,
        (src, dst): (SocketAddr, SocketAddr),
        bytes: Vec<u8>,
    ) -> Verdict {
        let now = self.now;
        let d = usize::from(!from_client);
        let lost = self.rng.chance(self.paths[k].cfg.loss);
        let p = &mut self.paths[k];
        if !p.up {
            return Verdict::Outage;
        }
        let cfg = p.cfg;
        let busy = p.busy_until[d].max(now);
        let tx = if cfg.rate_bps > 0 { (bytes.len() as u64 * 8 * 1_000_000).div_ceil(cfg.rate_bps) } else { 0 };
        p.busy_until[d] = busy + tx;
        let mut at = busy + tx + cfg.delay + if from_client { cfg.uplink_extra } else { 0 };
        if lost {
            at += TCP_RTO_MIN + 2 * cfg.delay;
        }
        // In order: nothing overtakes what went before it.
        at = at.max(p.tcp_last[d]);
        p.tcp_last[d] = at;
        let (to_server, from) = if from_client { (true, p.nat.unwrap_or(src)) } else { (false, src) };
        let local = if from_client { PathId(0) } else { self.client_path_for(k, Some(dst)) };
        self.seq += 1;
        let carrier = Carrier::Tcp;
        self.queue.push(Reverse(Delivery { at, seq: self.seq, to_server, path: k, local, from, bytes, carrier }));
        Verdict::Delivered
    }
}
