//! The client's side of the first handshake (§4.1-4.5): the INITIAL, RETRY, HANDSHAKE and
//! the resend of an unanswered INITIAL.

use super::*;

impl Connection {
    /// The client's side of a new connection: builds the INITIAL (sent by `poll_transmit`).
    pub(crate) fn new_client(
        now: Time,
        config: &Config,
        paths: &[LocalPath],
        path: PathId,
        remote: SocketAddr,
        local_cid: Cid,
    ) -> Result<Self, crypto::CryptoError> {
        let mut c = Self::blank(Side::Client, now, config, paths, remote);
        let sf = c.new_subflow(now, 0, SubflowState::JoinSent, path, remote, local_cid);
        c.subflows.insert(sf);
        c.subflows[0].val.validated = true;
        c.opened = 1;
        c.cid_changes.push((local_cid, true));
        let share = KeyShare::generate()?;
        let mut hs = ClientHs {
            share: None,
            odcid: random_cid(),
            initial: Vec::new(),
            transcript_len: 0,
            retried: false,
            cookie: Vec::new(),
            attempts: 0,
            sent_at: now,
            next_send: now,
            send_now: true,
            server: remote,
        };
        c.build_initial(&mut hs, &share, &[]);
        hs.share = Some(share);
        c.hs = Some(hs);
        Ok(c)
    }

    pub(super) fn build_initial(&self, hs: &mut ClientHs, share: &KeyShare, token: &[u8]) {
        let mut pbuf = [0u8; 128];
        let mut pw = Writer::new(&mut pbuf);
        let plen = self.config.transport_params().emit(&mut pw).unwrap_or(0);
        let size = self.config.max_datagram_size.max(packet::MIN_INITIAL_SIZE);
        let mut buf = vec![0u8; size];
        let mut w = Writer::new(&mut buf);
        let init = Initial {
            version: packet::VERSION_1,
            dcid: hs.odcid,
            scid: self.subflows[0].local_cid,
            token,
            key_share: *share.public(),
            params: &pbuf[..plen],
        };
        hs.transcript_len = init.emit(&mut w).unwrap_or(0);
        // The rest of the datagram is zero padding (§3.1: INITIALs are padded to 1200 bytes).
        buf.truncate(size);
        hs.initial = buf;
    }

    /// RETRY for the client (§4.5): checks the integrity tag, then repeats INITIAL with the token.
    pub(crate) fn handle_retry(
        &mut self,
        now: Time,
        remote: SocketAddr,
        p: &Packet<'_>,
        dgram: &[u8],
        drops: &mut Drops,
    ) {
        let Header::Retry(r) = p.header else { return };
        let Some(hs) = self.hs.as_mut() else { return };
        if self.state != State::Initial || hs.retried || remote != hs.server {
            drops.unexpected += 1;
            return;
        }
        let tag = crypto::retry_integrity_tag(&hs.odcid.0, &dgram[..p.header_len]);
        if !ct_eq(&tag, &r.tag) {
            drops.bad_retry += 1;
            return;
        }
        let Some(mut hs) = self.hs.take() else { return };
        hs.retried = true;
        if let Some(share) = hs.share.take() {
            self.build_initial(&mut hs, &share, r.token);
            hs.share = Some(share);
        }
        hs.send_now = true;
        hs.next_send = now;
        self.hs = Some(hs);
    }

    /// A HANDSHAKE that failed (a forgery, or a low-order key share) spent our key share: the
    /// attempt goes on with a fresh share and a new INITIAL without token.
    pub(super) fn restart_attempt(&mut self) {
        if let (Ok(fresh), Some(mut hs)) = (KeyShare::generate(), self.hs.take()) {
            self.build_initial(&mut hs, &fresh, &[]);
            hs.retried = false;
            hs.share = Some(fresh);
            hs.send_now = true;
            self.hs = Some(hs);
        }
    }

    /// HANDSHAKE for the client (§4.1-4.2): agree keys, open the sealed params and cookie.
    pub(crate) fn handle_handshake(
        &mut self,
        now: Time,
        remote: SocketAddr,
        p: &Packet<'_>,
        scratch: &mut [u8],
        drops: &mut Drops,
    ) {
        let Header::Handshake(h) = p.header else { return };
        if self.state != State::Initial {
            drops.unexpected += 1;
            return;
        }
        let Some(hs) = self.hs.as_mut() else { return };
        if remote != hs.server {
            drops.unexpected += 1;
            return;
        }
        let Ok(suite) = Suite::from_id(h.suite) else {
            drops.malformed += 1;
            return;
        };
        if !self.config.suites.contains(&suite) {
            drops.malformed += 1;
            return;
        }
        let th = transcript_hash(&hs.initial[..hs.transcript_len], &scratch[..Handshake::TRANSCRIPT_LEN]);
        // The key share is consumed by the agreement; keep a copy of nothing else.
        let Some(share) = hs.share.take() else { return };
        let Ok(shared) = share.agree(&h.key_share) else {
            drops.decrypt_failed += 1;
            self.restart_attempt();
            return;
        };
        let s = Master::derive(&shared, &th).secrets(suite);
        let Ok(plain) = s.s2c.open(0, u64::from(h.pn), scratch, p.header_len) else {
            // Not from the server that holds our INITIAL's transcript.
            drops.decrypt_failed += 1;
            self.restart_attempt();
            return;
        };
        let mut params = None;
        let mut cookie: &[u8] = &[];
        if Frames::validate(plain).is_err() {
            drops.malformed += 1;
            return;
        }
        for f in Frames::new(plain).flatten() {
            match f {
                Frame::TransportParams(tp) => params = TransportParams::parse(tp).ok(),
                Frame::Cookie(c) => cookie = c,
                _ => {}
            }
        }
        let (Some(params), false) = (params, cookie.is_empty()) else {
            drops.malformed += 1;
            return;
        };
        let Some(hs) = self.hs.as_mut() else { return };
        hs.cookie = cookie.to_vec();
        self.install_keys(s);
        self.set_peer_params(params);
        let sf = &mut self.subflows[0];
        sf.remote_cid = Some(h.scid);
        sf.state = SubflowState::Established;
        sf.last_original_rx = now;
        sf.ctrl_pending |= ctrl::PING;
        // The HANDSHAKE's round trip is the first RTT sample, if the INITIAL was not repeated
        // (Karn's rule: an answer to which copy is unknown).
        if let Some(hs) = self.hs.as_ref().filter(|hs| hs.attempts == 1) {
            sf.rec.rtt.update(now.saturating_sub(hs.sent_at), 0);
        }
        self.state = State::Confirm;
        self.last_rx = now;
    }
}
