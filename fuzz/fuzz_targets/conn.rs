//! Coverage-guided fuzzing of the connection state machine, both ends, in the simulator: after
//! a real handshake over two paths (a resumed one whose first bytes go as 0-RTT data, so that
//! the captured flight holds a resuming INITIAL and EARLY packets), the input is a sequence
//! of operations:
//!
//! - time steps (the endpoints run their timers);
//! - the application: writes, reads, a close, an abort, a new subflow;
//! - frames of any bytes, sealed with the session keys on a chosen subflow (the peer
//!   authenticates them, so they reach the frame handlers, acknowledgements, reassembly,
//!   joins, the fast-join window and the address handling behind the AEAD);
//! - raw datagrams from the client's addresses or another one, either way;
//! - replays of captured datagrams, whole or with a byte changed;
//! - a path going down or up.
//!
//! Checked after every operation: no panic (libFuzzer catches it), at most one connection per
//! endpoint, at most `max_subflows` subflow records open per connection, the bytes the server
//! read a prefix of the bytes the client wrote, and no timer left due after the endpoints ran
//! (the simulator asserts it).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpcore::{Config, PathId, Resumption};
use mpsim::{client_addr, ms, multimob_paths, server_addr, Dir, Flow, PathEvent, Sim};
use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;

/// The input, read a byte or a slice at a time; empty reads end the run.
struct Input<'a>(&'a [u8]);

impl<'a> Input<'a> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }
    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_be_bytes([self.byte()?, self.byte()?]))
    }
    fn bytes(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.0.len());
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        a
    }
}

fn pattern(off: usize, n: usize) -> Vec<u8> {
    (off..off + n).map(|i| (i * 31 % 251) as u8).collect()
}

fuzz_target!(|data: &[u8]| {
    let resumption = Resumption { accept: true, issue: true, early_data: true, ..Resumption::default() };
    let config = Config::default().with(|c| {
        c.multipath.fast_join = true;
        c.multipath.mp_idle = true;
        c.resumption = resumption;
    });
    let Ok(mut sim) = Sim::new(7, config.clone(), config.clone(), multimob_paths()) else { return };
    // A first connection leaves the ticket; it is closed and forgotten before the one under
    // test starts.
    let first = sim.connect();
    sim.run_until(ms(300), |_| None);
    let ticket = sim.client.take_ticket(first);
    let first_server = sim.server.accept();
    if let Some(c) = sim.client.conn_mut(first) {
        c.close();
    }
    sim.client.refresh(first);
    if let Some(h) = first_server {
        if let Some(c) = sim.server.conn_mut(h) {
            c.close();
        }
        sim.server.refresh(h);
    }
    sim.run_until(ms(5_000), |_| None);
    let Some(ticket) = ticket else { return };
    assert!(sim.client.live_connections() == 0 && sim.server.live_connections() == 0);
    let captured: Rc<RefCell<Vec<(usize, Dir, Vec<u8>)>>> = Rc::default();
    let cap = captured.clone();
    sim.tap = Some(Box::new(move |_t, path, dir, b| {
        let mut c = cap.borrow_mut();
        if c.len() < 64 {
            c.push((path, dir, b.to_vec()));
        }
    }));
    let Ok(client) = sim.client.connect_resuming(sim.now, PathId(0), server_addr(), &ticket) else { return };
    let mut written = 0usize;
    if let Some(c) = sim.client.conn_mut(client) {
        written = c.write_early(&pattern(0, 1_500)).unwrap_or(0);
    }
    let mut server = None;
    let until = sim.now + ms(300);
    sim.run(until, |s| {
        server = server.or_else(|| s.server.accept());
        Flow::Wake(None)
    });
    let Some(server) = server else { return };
    let mut read = Vec::new();
    let mut buf = vec![0u8; 65_536];
    let mut input = Input(data);
    while let Some(op) = input.byte() {
        let now = sim.now;
        match op % 12 {
            0 => {
                let dt = ms(u64::from(input.byte().unwrap_or(1)) * 10);
                sim.run_until(now + dt, |_| None);
            }
            1 => {
                let n = usize::from(input.u16().unwrap_or(100));
                if let Some(c) = sim.client.conn_mut(client) {
                    if let Ok(k) = c.write(&pattern(written, n)) {
                        written += k;
                    }
                }
            }
            2 => {
                if let Some(c) = sim.server.conn_mut(server) {
                    while let Ok(n) = c.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        read.extend_from_slice(&buf[..n]);
                    }
                }
            }
            3 | 4 => {
                let sub = u32::from(input.byte().unwrap_or(0) % 4);
                let n = usize::from(input.byte().unwrap_or(0)) * 4;
                let frames = input.bytes(n);
                let (ep, h) = if op % 12 == 3 { (&mut sim.client, client) } else { (&mut sim.server, server) };
                if let Some(c) = ep.conn_mut(h) {
                    c.inject_frames(sub, frames);
                }
                ep.refresh(h);
            }
            5 | 6 => {
                let path = usize::from(input.byte().unwrap_or(0) % 2);
                let stranger = input.byte().unwrap_or(0) % 2 == 1;
                let n = usize::from(input.u16().unwrap_or(0)).min(65_527);
                let bytes = input.bytes(n).to_vec();
                let (dir, from) = if op % 12 == 5 {
                    let from: SocketAddr = if stranger { "192.0.2.9:4444".parse().unwrap() } else { client_addr(path) };
                    (Dir::Up, from)
                } else {
                    (Dir::Down, server_addr())
                };
                sim.inject(now, path, dir, from, bytes);
            }
            7 => {
                let k = usize::from(input.byte().unwrap_or(0));
                let (pos, xor) = (usize::from(input.u16().unwrap_or(0)), input.byte().unwrap_or(0));
                let pick = captured.borrow().get(k % captured.borrow().len().max(1)).cloned();
                if let Some((path, dir, mut bytes)) = pick {
                    if !bytes.is_empty() {
                        let i = pos % bytes.len();
                        bytes[i] ^= xor;
                    }
                    let from = if dir == Dir::Up { client_addr(path) } else { server_addr() };
                    sim.inject(now, path, dir, from, bytes);
                }
            }
            8 => {
                let path = usize::from(input.byte().unwrap_or(0) % 2);
                let up = input.byte().unwrap_or(0) % 2 == 1;
                sim.change(path, if up { PathEvent::Up } else { PathEvent::Down });
            }
            9 => {
                if let Some(c) = sim.client.conn_mut(client) {
                    c.close();
                }
            }
            10 => {
                if let Some(c) = sim.client.conn_mut(client) {
                    c.open_subflow(now, PathId(1), server_addr(), false);
                }
                sim.client.refresh(client);
            }
            _ => {
                if let Some(c) = sim.server.conn_mut(server) {
                    c.abort(now);
                }
            }
        }
        sim.run_until(sim.now + ms(1), |_| None);
        assert!(sim.client.live_connections() <= 1 && sim.server.live_connections() <= 1);
        for (ep, h) in [(&sim.client, client), (&sim.server, server)] {
            if let Some(c) = ep.conn(h) {
                let open = c.stats().subflows.iter().filter(|f| f.state != mpcore::SubflowState::Closed).count();
                assert!(open <= config.multipath.max_subflows, "{open} subflows open");
            }
        }
        assert!(read.len() <= written && read[..] == pattern(0, read.len())[..], "delivered bytes are a prefix");
    }
});
