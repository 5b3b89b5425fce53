//! The server's side of the first handshake (PROTOCOL.md §4): stateless answers to INITIALs
//! (a RETRY under load, else a HANDSHAKE, resumed when its ticket is taken, §4.8) and the
//! connection a CONFIRM's cookie creates; and the other datagrams of no connection: short
//! headers a fleet's server resets, and the resets a client gets (§3.4).

use super::{Connection, Endpoint, HandshakeCounters, STATELESS_QUEUE};
use crate::conn::{EarlyStart, MAX_EARLY_DATA};
use crate::crypto::Suite;
use crate::handshake;
use crate::wire::packet::RESET_TOKEN_LEN;
use crate::wire::{Cid, Header, Packet};
use crate::{PathId, Time};
use std::net::SocketAddr;

impl Endpoint {
    /// The server's first-handshake work so far.
    pub fn handshake_counters(&self) -> HandshakeCounters {
        self.handshakes
    }

    /// The most key agreements answered at once: a tenth of a second's worth (at least 16), so
    /// that a burst of them (about 100 µs each) never holds established connections' packets
    /// back for long.
    pub(super) fn hs_burst(rate: f64) -> f64 {
        (rate / 10.0).max(16.0)
    }

    /// Whether an INITIAL without a token must be answered with a RETRY: always under
    /// `require_retry`, and while more than `retry_above` HANDSHAKEs per second are asked for
    /// (the token bucket is empty).
    fn must_retry(&mut self, now: Time) -> bool {
        let rate = f64::from(self.config.server.retry_above);
        if self.config.server.require_retry {
            return true;
        }
        if rate == 0.0 {
            return false;
        }
        !self.hs_bucket.refill(now, rate, Self::hs_burst(rate))
    }

    /// An INITIAL: answer statelessly with RETRY or HANDSHAKE (§4.1).
    pub(super) fn server_initial(&mut self, now: Time, path: PathId, remote: SocketAddr, p: &Packet<'_>, dgram: &[u8]) {
        if !self.server {
            self.drops.unexpected += 1;
            return;
        }
        // Stateless answers wait for the driver in a bounded queue: beyond it, an INITIAL is
        // shed (its client repeats it), so that a flood cannot grow memory.
        if self.stateless.len() >= STATELESS_QUEUE {
            self.handshakes.shed += 1;
            self.drops.refused += 1;
            return;
        }
        if !self.limiter.allow(now, &remote) {
            self.handshakes.over_source_limit += 1;
            self.drops.refused += 1;
            return;
        }
        // The client's address is validated by a token this server issued to it (§4.5), or by
        // TCP's own handshake when the INITIAL came over a TCP carrier: there no RETRY is asked
        // and a token is not checked (it names the client's UDP path, whose port is another).
        // A token that fails (the client's INITIAL carries the token of the one RETRY it took
        // on every path, and it names that path's address only) is counted (`bad_token`); the
        // INITIAL is answered as one without a token while this server asks no RETRY, and
        // dropped while it does: the client takes one RETRY per attempt (RFC 9000 §8.1.2), and
        // a RETRY would record a 0-RTT binder that the copy on the token's own path carries too.
        let proven = self.rx_carrier == crate::Carrier::Tcp;
        let token = if proven || dgram.len() < crate::wire::packet::MIN_INITIAL_SIZE {
            None
        } else {
            handshake::retry_token_valid(now, remote, p, &self.config, &self.keys)
        };
        let require_retry = !proven && token != Some(true) && self.must_retry(now);
        if token == Some(false) {
            self.drops.count(crate::DropReason::BadToken);
            if require_retry {
                return;
            }
        }
        let routes = &self.routes;
        let (tickets, unix_ms) = (&self.tickets, self.clock.unix_ms(now));
        let early_ok = self.config.resumption.early_data && self.config.transport.recv_window as u64 >= MAX_EARLY_DATA;
        let (strikes, started) = (&self.strikes, self.clock.unix_ms(0));
        let answer = handshake::answer_initial(
            now,
            remote,
            p,
            dgram,
            &self.config,
            &mut self.keys,
            &mut self.rng,
            require_retry,
            |c| routes.cid_taken(c),
            |t| routes.token_taken(t),
            |ticket, age| tickets.as_ref()?.take(unix_ms, ticket, age),
            |binder, issued_ms| {
                // A ticket from before this endpoint started (a fleet's secret outlives a
                // restart) may come with a first flight captured before, which the record,
                // kept in memory, never saw: no early data until every such flight's age is
                // out of the window (§4.9).
                let before_start = issued_ms < started && unix_ms < started.saturating_add(crate::strikes::KEEP_MS);
                early_ok && !before_start && strikes.admit(binder, unix_ms)
            },
        );
        match answer {
            Ok(a) => {
                if require_retry {
                    self.handshakes.retries += 1;
                } else {
                    self.handshakes.answered += 1;
                    self.hs_bucket.take();
                }
                match a.resumption {
                    handshake::Resumption::Taken => self.handshakes.resumed += 1,
                    handshake::Resumption::Declined => self.handshakes.resumption_declined += 1,
                    handshake::Resumption::NotOffered => {}
                }
                if let Some(e) = a.early {
                    self.accept_early(now, path, remote, e, &a.datagram, dgram);
                }
                self.stateless.push_back((path, remote, a.datagram, self.rx_carrier));
            }
            Err(r) => self.drops.count(r),
        }
    }

    /// A CONFIRM for no known connection: open the cookie and create the connection (§4.4).
    pub(super) fn server_confirm(&mut self, now: Time, path: PathId, remote: SocketAddr, p: &Packet<'_>, dgram: &[u8]) {
        let Header::Confirm(c) = p.header else { return };
        if !self.server {
            self.drops.unknown_cid += 1;
            return;
        }
        if self.routes.closed(&c.dcid) {
            self.drops.cookie_replay += 1;
            return;
        }
        let a = match handshake::open_cookie(now, remote, &c, &self.keys.cookie, &self.config) {
            Ok(a) => a,
            Err(r) => {
                self.drops.count(r);
                return;
            }
        };
        let secrets = a.master.secrets(a.suite);
        let cids = (c.scid, c.dcid);
        let Some(mut conn) = self.server_conn(now, (path, remote), secrets, a.client_params, cids, a.resumed) else {
            return;
        };
        // The connection is kept only if the CONFIRM's own payload authenticates and applies.
        let scratch = &mut self.scratch[..dgram.len()];
        scratch.copy_from_slice(dgram);
        if let Err(r) = conn.handle_sealed(now, (path, self.rx_carrier), remote, p.header, p.header_len, scratch) {
            self.drops.count(r);
            return;
        }
        let idx = self.welcome(now, conn, &a.master.resumption(), a.suite, a.client_params.tickets);
        tracing::debug!(%remote, idx, "connection accepted from a cookie");
    }

    /// A server connection from its secrets, the client's parameters and the (client, server)
    /// CIDs; `None` (counted) if its token is another connection's here (§4.3).
    fn server_conn(
        &mut self,
        now: Time,
        (path, remote): (PathId, SocketAddr),
        secrets: crate::crypto::Secrets,
        client_params: crate::wire::TransportParams,
        cids: (crate::wire::Cid, crate::wire::Cid),
        resumed: bool,
    ) -> Option<Connection> {
        let rng = self.rng.fork();
        let conn = Connection::new_server(
            now,
            &self.config,
            &self.paths,
            (path, self.rx_carrier),
            remote,
            secrets,
            client_params,
            cids,
            resumed,
            rng,
        );
        if conn.local_token().is_some_and(|t| self.routes.token_taken(t)) {
            self.drops.refused += 1;
            return None;
        }
        Some(conn)
    }

    /// A server connection is made: its ticket (if its client takes them), its routes, and
    /// the application's queue of accepted connections. Returns its slot.
    fn welcome(
        &mut self,
        now: Time,
        mut conn: Connection,
        resumption: &[u8; 32],
        suite: Suite,
        tickets: bool,
    ) -> usize {
        conn.with_paths(|p, cx| p.announce_configured(cx));
        if let (Some(t), true) = (&self.tickets, tickets) {
            let identity = self.config.server.identity.as_ref().map_or([0; 32], |id| id.public_key().0);
            // A fleet's server names itself for the balancer: the routing byte of the
            // connection's CIDs, which the client's resumed INITIAL will carry (§4.9).
            let route = self.config.server.fleet.as_ref().and(conn.local_cids().next()).map(|c| c.0[0]);
            if let Some(body) = t.issue(self.clock.unix_ms(now), resumption, suite, identity, route, &mut self.rng) {
                conn.queue_ticket(body);
            }
        }
        let h = self.insert(conn);
        self.accept.push_back(h);
        h.index()
    }

    /// A 0-RTT INITIAL whose early data is taken (PROTOCOL.md §4.9): the connection is made
    /// now, its EARLY packets routed to it by the original DCID, and the application can read
    /// them and answer in the server's first flight.
    fn accept_early(
        &mut self,
        now: Time,
        path: PathId,
        remote: SocketAddr,
        e: handshake::EarlyAnswer,
        handshake: &[u8],
        initial: &[u8],
    ) {
        let suite = e.secrets.c2s.suite();
        let resumption = e.secrets.resumption;
        let tickets = e.client_params.tickets;
        let cids = (e.client_cid, e.server_cid);
        let Some(mut conn) = self.server_conn(now, (path, remote), e.secrets, e.client_params, cids, true) else {
            return;
        };
        let odcid = (!self.routes.cid_taken(&e.odcid)).then_some(e.odcid);
        let initial_hash = crate::crypto::sha256(initial);
        let initial_len = initial.len() as u64;
        conn.start_early(EarlyStart { key: e.key, odcid, handshake: handshake.to_vec(), initial_len, initial_hash });
        let idx = self.welcome(now, conn, &resumption, suite, tickets);
        if let Some(odcid) = odcid {
            self.routes.add_cid(odcid, idx);
        }
        self.handshakes.early_accepted += 1;
    }

    /// An INITIAL whose original DCID routes to a connection made at a 0-RTT INITIAL: its
    /// client did not get the HANDSHAKE, which goes again (within the address's budget).
    pub(super) fn initial_again(&mut self, idx: usize, path: PathId, remote: SocketAddr, p: &Packet<'_>, dgram: &[u8]) {
        let Header::Initial(i) = p.header else { return };
        if self.stateless.len() >= STATELESS_QUEUE {
            self.handshakes.shed += 1;
            self.drops.refused += 1;
            return;
        }
        let hash = crate::crypto::sha256(dgram);
        let again =
            self.conns.get_mut(idx).and_then(|c| c.handshake_again(remote, (&i.dcid, &hash), dgram.len() as u64));
        match again {
            Some(hs) => self.stateless.push_back((path, remote, hs, self.rx_carrier)),
            None => self.drops.unexpected += 1,
        }
    }
}

impl Endpoint {
    /// A short header of `len` bytes for CID `dcid`, which no connection here has: a fleet's
    /// server resets it (`reset::Resetter`, within its budget), while its stateless queue has room.
    pub(super) fn unknown_short(&mut self, now: Time, path: PathId, remote: SocketAddr, dcid: &Cid, len: usize) {
        self.drops.unknown_cid += 1;
        let Some(r) = self.resetter.as_mut().filter(|_| self.server) else { return };
        if self.stateless.len() >= STATELESS_QUEUE {
            return;
        }
        if let Some(out) = r.reset_for(now, dcid, len) {
            self.handshakes.resets_sent += 1;
            self.stateless.push_back((path, remote, out, self.rx_carrier));
        }
    }

    /// A STATELESS_RESET with `token` arrived: the client's connection that holds the token
    /// loses the subflows it names (and ends if none is left). A server ignores resets.
    pub(super) fn on_reset(&mut self, now: Time, token: &[u8; RESET_TOKEN_LEN]) {
        // A client endpoint has few connections: a scan, on a packet that is never the
        // steady state (a forged one costs its receiver a scan and nothing else).
        let found = (!self.server)
            .then(|| {
                self.conns
                    .indexes()
                    .find(|&i| self.conns.get(i).is_some_and(|c| c.path_layer().is_reset_by(c.side(), token)))
            })
            .flatten();
        let Some(idx) = found else {
            self.drops.unknown_cid += 1;
            return;
        };
        if let Some(c) = self.conns.get_mut(idx) {
            c.with_paths(|p, cx| p.on_stateless_reset(cx, now, token));
            self.handshakes.resets_received += 1;
        }
        self.apply_events(idx, now);
    }
}
