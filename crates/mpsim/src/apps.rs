//! Applications for simulations: a bulk transfer with a digest check.

use crate::{Flow, Sim};
use mpcore::{ConnHandle, Event, Time};

/// Sends `data` from the client to the server (or the reverse), closes, and records what the
/// other side read and when.
#[derive(Debug)]
pub struct Bulk {
    pub data: Vec<u8>,
    /// Server to client instead of client to server.
    pub download: bool,
    pub written: usize,
    pub received: Vec<u8>,
    pub client: Option<ConnHandle>,
    pub server: Option<ConnHandle>,
    pub finished_at: Option<Time>,
    /// (time, bytes received so far) at every read, for stall measurements.
    pub progress: Vec<(Time, usize)>,
    pub events: Vec<(Time, bool, Event)>,
    buf: Vec<u8>,
}

impl Bulk {
    pub fn new(data: Vec<u8>, download: bool) -> Self {
        Self {
            data,
            download,
            written: 0,
            received: Vec::new(),
            client: None,
            server: None,
            finished_at: None,
            progress: Vec::new(),
            events: Vec::new(),
            buf: vec![0u8; 64 * 1024],
        }
    }

    /// Drives both sides; pass as the `app` of [`Sim::run_until`].
    pub fn step(&mut self, sim: &mut Sim) -> Option<Time> {
        let now = sim.now;
        if self.client.is_none() {
            self.client = Some(sim.connect());
        }
        while let Some((_, e)) = sim.client.poll_event() {
            self.events.push((now, true, e));
        }
        while let Some((_, e)) = sim.server.poll_event() {
            self.events.push((now, false, e));
        }
        if self.server.is_none() {
            self.server = sim.server.accept();
        }
        let (tx_ep, tx_h, rx_ep, rx_h) = if self.download {
            (&mut sim.server, self.server, &mut sim.client, self.client)
        } else {
            (&mut sim.client, self.client, &mut sim.server, self.server)
        };
        if let Some(c) = tx_h.and_then(|h| tx_ep.conn_mut(h)) {
            if c.is_established() || !self.download {
                while self.written < self.data.len() {
                    match c.write(&self.data[self.written..]) {
                        Ok(n) => self.written += n,
                        Err(_) => break,
                    }
                }
                if self.written == self.data.len() {
                    c.close();
                }
            }
        }
        if let Some(c) = rx_h.and_then(|h| rx_ep.conn_mut(h)) {
            loop {
                match c.read(&mut self.buf) {
                    Ok(0) => {
                        if self.finished_at.is_none() {
                            self.finished_at = Some(now);
                        }
                        break;
                    }
                    Ok(n) => {
                        self.received.extend_from_slice(&self.buf[..n]);
                        self.progress.push((now, self.received.len()));
                    }
                    Err(_) => break,
                }
            }
        }
        None
    }

    /// Drives both sides and stops the run once the receiver has read everything and the
    /// DATA_FIN.
    pub fn drive(&mut self, sim: &mut Sim) -> Flow {
        self.step(sim);
        if self.finished_at.is_some() {
            Flow::Done
        } else {
            Flow::Wake(None)
        }
    }

    /// The longest time without progress between `from` and the end.
    pub fn longest_stall(&self, from: Time) -> Time {
        let mut last = from;
        let mut worst = 0;
        for &(t, _) in self.progress.iter().filter(|p| p.0 >= from) {
            worst = worst.max(t - last);
            last = t;
        }
        worst
    }
}

/// Deterministic pseudo-random bytes.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut r = crate::Rng::new(seed);
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        v.extend_from_slice(&r.next_u64().to_le_bytes());
    }
    v.truncate(len);
    v
}
