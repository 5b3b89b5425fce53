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
    /// Set by [`Bulk::paced`]: `(bytes per write, time between writes)`, and the next write.
    pace: Option<(usize, Time)>,
    next_write: Time,
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
            pace: None,
            next_write: 0,
            buf: vec![0u8; 64 * 1024],
        }
    }

    /// An upload written `chunk` bytes at a time, one write every `gap`, from `start` on.
    pub fn paced(data: Vec<u8>, chunk: usize, gap: Time, start: Time) -> Self {
        Self { pace: Some((chunk.max(1), gap)), next_write: start, ..Self::new(data, false) }
    }

    /// Drives both sides; pass as the `app` of [`Sim::run_until`].
    pub fn step(&mut self, sim: &mut Sim) -> Option<Time> {
        let now = sim.now;
        pump(sim, &mut self.client, &mut self.server, &mut self.events);
        let (tx_ep, tx_h, rx_ep, rx_h) = if self.download {
            (&mut sim.server, self.server, &mut sim.client, self.client)
        } else {
            (&mut sim.client, self.client, &mut sim.server, self.server)
        };
        if let Some(c) = tx_h.and_then(|h| tx_ep.conn_mut(h)) {
            if c.is_established() || !self.download {
                match self.pace {
                    None => {
                        while self.written < self.data.len() {
                            match c.write(&self.data[self.written..]) {
                                Ok(n) => self.written += n,
                                Err(_) => break,
                            }
                        }
                    }
                    Some((chunk, gap)) if now >= self.next_write && self.written < self.data.len() => {
                        let end = (self.written + chunk).min(self.data.len());
                        if let Ok(n) = c.write(&self.data[self.written..end]) {
                            self.written += n;
                            self.next_write = now + gap;
                        }
                    }
                    Some(_) => {}
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
        // A write due now that could not be made (the window is full, or the connection is
        // gone) waits for the next event, not for a time already past (which would spin).
        (self.pace.is_some() && self.written < self.data.len()).then_some(self.next_write).filter(|&t| t > now)
    }

    /// Drives both sides and stops the run once the receiver has read everything and the
    /// DATA_FIN.
    pub fn drive(&mut self, sim: &mut Sim) -> Flow {
        let wake = self.step(sim);
        if self.finished_at.is_some() {
            Flow::Done
        } else {
            Flow::Wake(wake)
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

/// Connects the client once, accepts at the server once, and collects both sides' events as
/// `(time, at the client, event)`.
pub fn pump(
    sim: &mut Sim,
    client: &mut Option<ConnHandle>,
    server: &mut Option<ConnHandle>,
    events: &mut Vec<(Time, bool, Event)>,
) {
    let now = sim.now;
    if client.is_none() {
        *client = Some(sim.connect());
    }
    while let Some((_, e)) = sim.client.poll_event() {
        events.push((now, true, e));
    }
    while let Some((_, e)) = sim.server.poll_event() {
        events.push((now, false, e));
    }
    if server.is_none() {
        *server = sim.server.accept();
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

/// The Siri-like workload of the seeds (BRIEF.md): a request is `bursts` bursts of about
/// `burst_bytes` sent as `writes` writes of uniform `min_write..=max_write` bytes, `gap`
/// apart; after each burst but the last the server answers with an intermediate response,
/// after the last with the final response; then the user waits `wait`.
#[derive(Clone, Copy, Debug)]
pub struct SiriConfig {
    pub requests: usize,
    pub bursts: usize,
    pub writes: usize,
    pub min_write: usize,
    pub max_write: usize,
    pub gap: Time,
    pub wait: Time,
    pub final_bytes: usize,
    pub ir_bytes: usize,
    /// Intermediate responses on (`--no-ir` turns them off).
    pub ir: bool,
    /// Time of the first request.
    pub start: Time,
}

impl Default for SiriConfig {
    fn default() -> Self {
        Self {
            requests: 10,
            bursts: 9,
            writes: 9,
            min_write: 50,
            max_write: 500,
            gap: crate::ms(300),
            wait: crate::ms(5_000),
            final_bytes: 750,
            ir_bytes: 100,
            ir: true,
            start: crate::ms(200),
        }
    }
}

/// One request's measured delays.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestResult {
    /// When its first burst started.
    pub start: Time,
    /// End of the last burst to the first byte of the final response (the seeds' delay).
    pub delay: Option<Time>,
    /// Per burst but the last: end of the burst to the first byte of its intermediate response.
    pub ir_delays: Vec<Option<Time>>,
}

impl RequestResult {
    /// The largest delay over every burst of the request (intermediate and final responses).
    pub fn max_burst_delay(&self) -> Option<Time> {
        let fin = self.delay?;
        Some(self.ir_delays.iter().flatten().copied().fold(fin, Time::max))
    }
}

/// Burst header: length of the burst's body (u16), burst index (u8), last flag (u8).
const BURST_HDR: usize = 4;

/// Client and server of the Siri workload over one connection.
#[derive(Debug)]
pub struct Siri {
    pub cfg: SiriConfig,
    rng: crate::Rng,
    pub client: Option<ConnHandle>,
    pub server: Option<ConnHandle>,
    pub results: Vec<RequestResult>,
    pub events: Vec<(Time, bool, Event)>,
    // Client.
    next_burst_at: Time,
    burst: usize,
    pending_out: Vec<u8>,
    /// Expected responses: (bytes left, burst end time, final?, first byte seen).
    expect: std::collections::VecDeque<(usize, Time, bool, bool)>,
    waiting_final: bool,
    // Server.
    inbuf: Vec<u8>,
    server_out: Vec<u8>,
    buf: Vec<u8>,
}

impl Siri {
    pub fn new(cfg: SiriConfig, seed: u64) -> Self {
        Self {
            cfg,
            rng: crate::Rng::new(seed),
            client: None,
            server: None,
            results: Vec::new(),
            events: Vec::new(),
            next_burst_at: cfg.start,
            burst: 0,
            pending_out: Vec::new(),
            expect: std::collections::VecDeque::new(),
            waiting_final: false,
            inbuf: Vec::new(),
            server_out: Vec::new(),
            buf: vec![0u8; 16 * 1024],
        }
    }

    /// The burst the client writes next in the current request (0 between requests).
    pub fn next_burst(&self) -> usize {
        self.burst
    }

    /// Whether every request got its final response.
    pub fn finished(&self) -> bool {
        self.results.len() == self.cfg.requests && self.results.iter().all(|r| r.delay.is_some())
    }

    /// Drives both sides; pass to [`Sim::run`].
    pub fn drive(&mut self, sim: &mut Sim) -> Flow {
        let wake = self.step(sim);
        if self.finished() {
            Flow::Done
        } else {
            Flow::Wake(wake)
        }
    }

    fn step(&mut self, sim: &mut Sim) -> Option<Time> {
        let now = sim.now;
        pump(sim, &mut self.client, &mut self.server, &mut self.events);
        self.client_step(sim, now);
        self.server_step(sim);
        let more = self.results.len() < self.cfg.requests || self.burst > 0;
        if more && !self.waiting_final && now < self.next_burst_at {
            return Some(self.next_burst_at);
        }
        None
    }

    fn client_step(&mut self, sim: &mut Sim, now: Time) {
        let Some(c) = self.client.and_then(|h| sim.client.conn_mut(h)) else { return };
        // Read responses, stamping the first byte of each.
        loop {
            match c.read(&mut self.buf) {
                Ok(0) | Err(_) => break,
                Ok(mut n) => {
                    while n > 0 {
                        let Some(front) = self.expect.front_mut() else { break };
                        if !front.3 {
                            front.3 = true;
                            let d = now - front.1;
                            if let Some(r) = self.results.last_mut() {
                                if front.2 {
                                    r.delay = Some(d);
                                } else {
                                    r.ir_delays.push(Some(d));
                                }
                            }
                        }
                        let take = n.min(front.0);
                        front.0 -= take;
                        n -= take;
                        if front.0 == 0 {
                            let was_final = front.2;
                            self.expect.pop_front();
                            if was_final {
                                self.waiting_final = false;
                                self.next_burst_at = now + self.cfg.wait;
                            }
                        }
                    }
                }
            }
        }
        // Flush what an earlier burst could not write.
        if !self.pending_out.is_empty() {
            if let Ok(n) = c.write(&self.pending_out) {
                self.pending_out.drain(..n);
            }
        }
        if self.waiting_final || now < self.next_burst_at || self.results.len() >= self.cfg.requests && self.burst == 0
        {
            return;
        }
        if self.burst == 0 {
            self.results.push(RequestResult { start: now, ..Default::default() });
        }
        // One burst: header, then `writes` writes of uniform size.
        let last = self.burst + 1 == self.cfg.bursts;
        let sizes: Vec<usize> = (0..self.cfg.writes)
            .map(|_| self.rng.range(self.cfg.min_write as u64, self.cfg.max_write as u64) as usize)
            .collect();
        let body: usize = sizes.iter().sum();
        let mut out = Vec::with_capacity(BURST_HDR + body);
        out.extend_from_slice(&(body as u16).to_be_bytes());
        out.push(self.burst as u8);
        out.push(u8::from(last));
        for (k, s) in sizes.iter().enumerate() {
            out.extend(std::iter::repeat_n(b'a' + (k as u8 % 26), *s));
        }
        self.pending_out.extend_from_slice(&out);
        if let Ok(n) = c.write(&self.pending_out) {
            self.pending_out.drain(..n);
        }
        if last {
            self.expect.push_back((self.cfg.final_bytes, now, true, false));
            self.waiting_final = true;
            self.burst = 0;
        } else {
            if self.cfg.ir {
                self.expect.push_back((self.cfg.ir_bytes, now, false, false));
            }
            self.burst += 1;
            self.next_burst_at = now + self.cfg.gap;
        }
    }

    fn server_step(&mut self, sim: &mut Sim) {
        let Some(c) = self.server.and_then(|h| sim.server.conn_mut(h)) else { return };
        loop {
            match c.read(&mut self.buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => self.inbuf.extend_from_slice(&self.buf[..n]),
            }
        }
        while self.inbuf.len() >= BURST_HDR {
            let body = usize::from(u16::from_be_bytes([self.inbuf[0], self.inbuf[1]]));
            if self.inbuf.len() < BURST_HDR + body {
                break;
            }
            let last = self.inbuf[3] != 0;
            self.inbuf.drain(..BURST_HDR + body);
            if last {
                self.server_out.extend(std::iter::repeat_n(b'F', self.cfg.final_bytes));
            } else if self.cfg.ir {
                self.server_out.extend(std::iter::repeat_n(b'i', self.cfg.ir_bytes));
            }
        }
        if !self.server_out.is_empty() {
            if let Ok(n) = c.write(&self.server_out) {
                self.server_out.drain(..n);
            }
        }
    }
}

/// A light background connection: the client writes 1,200 bytes every 100 ms (12 KB/s, as in
/// MultiMob's threshold experiment); the server reads and discards. Connects on creation, so
/// create it before any other application connects.
#[derive(Debug)]
pub struct Trickle {
    pub client: ConnHandle,
    pub server: Option<ConnHandle>,
    next: Time,
    buf: Vec<u8>,
}

impl Trickle {
    pub fn new(sim: &mut Sim) -> Self {
        Self { client: sim.connect(), server: None, next: 0, buf: vec![0; 65_536] }
    }

    /// Writes when due and reads what arrived; returns when it next wants to run.
    /// Runs `app` beside this background traffic until `app` is done or `deadline`; returns
    /// whether it finished.
    pub fn beside(&mut self, sim: &mut Sim, app: &mut Siri, deadline: Time) -> bool {
        sim.run(deadline, |s| {
            let next = self.step(s);
            match app.drive(s) {
                Flow::Done => Flow::Done,
                Flow::Wake(t) => Flow::Wake(Some(t.unwrap_or(u64::MAX).min(next))),
            }
        })
    }

    pub fn step(&mut self, sim: &mut Sim) -> Time {
        if self.server.is_none() {
            self.server = sim.server.accept();
        }
        if sim.now >= self.next {
            self.next = sim.now + 100_000;
            if let Some(c) = sim.client.conn_mut(self.client) {
                let _ = c.write(&[0x5a; 1200]);
            }
        }
        if let Some(c) = self.server.and_then(|h| sim.server.conn_mut(h)) {
            while matches!(c.read(&mut self.buf), Ok(n) if n > 0) {}
        }
        self.next
    }
}
