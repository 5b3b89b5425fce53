//! Walks through the packets of docs/PROTOCOL.md with nothing but `mpcore::wire` and
//! `mpcore::crypto`: the first handshake with RETRY and a stateless cookie, data both ways, an
//! MP_JOIN with its HMACs, a FAST_JOIN_OUT carrying data, an ADD_ADDR, and the rejection of a
//! replayed and of a forged packet. Prints every packet; panics if any check fails.
//!
//! Run: `cargo run -p mpudp-core --example handshake`
//! A reading aid, not a test: its checks are its own code's. The protocol's behaviour is
//! tested through the real `Endpoint` in the simulator: a replayed JOIN from another address
//! and forged or replayed packets (`mpsim/tests/core.rs`), replayed fast joins
//! (`mpsim/tests/fastjoin.rs`), the server's key proven or refused (`mpsim/tests/identity.rs`).

use mpcore::crypto::{
    add_addr_hmac, ct_eq, join_ack_hmac, join_synack_hmac, retry_integrity_tag, token, transcript_hash, CookieKey,
    KeyShare, Master, RetryTokenKey, Secrets, Suite,
};
use mpcore::wire::frame::{AddAddr, FastJoinOut, MpJoin, MpJoinSynAck};
use mpcore::wire::packet::{self, decode_pn, Confirm, Handshake, Initial, Join, Retry, Short};
use mpcore::wire::{Cid, Dss, Frame, Frames, Header, Packet, TransportParams, Writer};
use std::net::SocketAddr;

/// What the walk-through established, for the test to check.
#[derive(Debug, Default)]
pub struct Outcome {
    pub packets: Vec<(String, usize)>,
    pub server_got: Vec<u8>,
    pub client_got: Vec<u8>,
    pub join_established: bool,
    pub fast_join_data: Vec<u8>,
    pub replay_rejected: bool,
    pub forgery_rejected: bool,
    pub add_addr_verified: bool,
    pub server_authenticated: bool,
}

fn log(out: &mut Outcome, verbose: bool, what: &str, len: usize, note: &str) {
    if verbose {
        println!("{what:<34} {len:>5} bytes  {note}");
    }
    out.packets.push((what.to_string(), len));
}

fn note(ok: bool, yes: &'static str, no: &'static str) -> &'static str {
    if ok {
        yes
    } else {
        no
    }
}

fn frames_of(plaintext: &[u8]) -> Vec<Frame<'_>> {
    Frames::new(plaintext).collect::<Result<_, _>>().expect("frames parse")
}

/// Seals a short-header packet carrying `frames` (padding to the HP sample minimum).
fn short(key: &mpcore::crypto::PacketKey, dcid: Cid, subflow: u32, pn: u64, frames: &[Frame<'_>]) -> Vec<u8> {
    let mut buf = vec![0u8; 1500];
    let mut w = Writer::new(&mut buf);
    let len = packet::pn_len(pn, None);
    let hl = Short::emit(dcid, Cid::LEN, pn, len, &mut w).expect("header");
    for f in frames {
        f.emit(&mut w).expect("frame");
    }
    while w.len() - hl + len < 4 {
        w.u8(0).expect("pad");
    }
    let pt = w.len() - hl;
    let n = key.seal_short(subflow, pn, &mut buf, hl, pt).expect("seal");
    buf.truncate(n);
    buf
}

/// Opens a short-header packet; `largest` is the largest packet number received so far.
fn open_short(key: &mpcore::crypto::PacketKey, subflow: u32, largest: Option<u64>, dgram: &[u8]) -> Option<Vec<u8>> {
    Packet::parse(dgram, Cid::LEN).ok()?;
    let mut buf = dgram.to_vec();
    let (len, t) = key.unprotect_short(&mut buf, Short::pn_offset(Cid::LEN)).ok()?;
    let pn = decode_pn(largest, t, len);
    key.open(subflow, pn, &mut buf, Short::pn_offset(Cid::LEN) + len).ok().map(|p| p.to_vec())
}

fn sealed_long(
    emit: impl FnOnce(&mut Writer<'_>) -> usize,
    frames: &[Frame<'_>],
    seal: impl FnOnce(&mut [u8], usize, usize) -> usize,
) -> Vec<u8> {
    let mut buf = vec![0u8; 1500];
    let mut w = Writer::new(&mut buf);
    let hl = emit(&mut w);
    for f in frames {
        f.emit(&mut w).expect("frame");
    }
    let pt = w.len() - hl;
    let n = seal(&mut buf, hl, pt);
    buf.truncate(n);
    buf
}

pub fn run(verbose: bool) -> Outcome {
    let mut out = Outcome::default();
    let client_addr: SocketAddr = "192.0.2.10:40000".parse().expect("addr");
    let now_ms = 1_000u64;
    let (c_cid, odcid) = (Cid([0xc1; 8]), Cid([0x0d; 8]));

    // ---- Client: INITIAL (§3.1), padded to 1200 bytes.
    let c_share = KeyShare::generate().expect("key share");
    let c_params = TransportParams { fast_join: true, mp_idle: true, ..Default::default() };
    let mut pbuf = [0u8; 64];
    let mut pw = Writer::new(&mut pbuf);
    let plen = c_params.emit(&mut pw).expect("params");
    let build_initial = |token: &[u8]| {
        let mut buf = vec![0u8; 1500];
        let mut w = Writer::new(&mut buf);
        let tl = Initial {
            version: packet::VERSION_2,
            dcid: odcid,
            scid: c_cid,
            token,
            key_share: *c_share.public(),
            params: &pbuf[..plen],
            resume: None,
        }
        .emit(&mut w)
        .expect("initial");
        w.zeros(packet::MIN_INITIAL_SIZE - tl).expect("pad");
        buf.truncate(packet::MIN_INITIAL_SIZE);
        (buf, tl)
    };
    let (initial, _) = build_initial(&[]);
    log(&mut out, verbose, "client INITIAL", initial.len(), "X25519 share, params, padding");

    // ---- Server: no token, so RETRY (§4.5) and keep nothing.
    let retry_key = RetryTokenKey::from_bytes(&[0x33; 32]);
    let Header::Initial(i) = Packet::parse(&initial, Cid::LEN).expect("parse").header else { panic!("not an INITIAL") };
    assert!(i.token.is_empty());
    let tok = retry_key.issue(now_ms, &client_addr, &i.dcid.0);
    let mut rbuf = [0u8; 128];
    let mut w = Writer::new(&mut rbuf);
    let ul = Retry { version: packet::VERSION_2, dcid: i.scid, scid: i.dcid, token: &tok, tag: [0; 16] }
        .emit_untagged(&mut w)
        .expect("retry");
    let tag = retry_integrity_tag(&i.dcid.0, w.written());
    w.bytes(&tag).expect("tag");
    let retry = rbuf[..ul + 16].to_vec();
    log(&mut out, verbose, "server RETRY", retry.len(), "stateless address validation");

    // ---- Client: checks the RETRY's tag, repeats INITIAL with the token.
    let p = Packet::parse(&retry, Cid::LEN).expect("parse retry");
    let Header::Retry(r) = p.header else { panic!("not a RETRY") };
    assert!(ct_eq(&retry_integrity_tag(&odcid.0, &retry[..p.header_len]), &r.tag), "retry tag");
    let (initial2, c_transcript_len) = build_initial(r.token);
    log(&mut out, verbose, "client INITIAL (with token)", initial2.len(), "");

    // ---- Server: token valid, so answer with HANDSHAKE + cookie; still keep nothing.
    let mut cookie_key = CookieKey::from_bytes(1, &[0x44; 32]);
    let server_identity = mpcore::ServerIdentity::from_seed(&[0x1d; 32]).expect("identity");
    let server_key = server_identity.public_key();
    let s_cid = Cid([0x5e; 8]);
    let s_hs = {
        let p = Packet::parse(&initial2, Cid::LEN).expect("parse");
        let Header::Initial(i) = p.header else { panic!() };
        assert!(retry_key.validate(i.token, now_ms + 30, 10_000, &client_addr, &i.dcid.0), "retry token");
        let params = TransportParams::parse(i.params).expect("client params");
        let suite = Suite::from_id(params.suites()[0]).expect("suite");
        let s_share = KeyShare::generate().expect("key share");
        let mut hs = Handshake {
            version: packet::VERSION_2,
            dcid: i.scid,
            scid: s_cid,
            key_share: *s_share.public(),
            suite: suite.id(),
            // The S bit (§3.1) is in TH: the signature's place is kept, then filled.
            signature: Some([0; 64]),
            psk_proof: None,
            pn: 0,
        };
        let mut hbuf = [0u8; Handshake::MAX_LEN];
        hs.emit(&mut Writer::new(&mut hbuf)).expect("hs");
        let th = transcript_hash(&initial2[..p.header_len], &hbuf[..Handshake::TRANSCRIPT_LEN]);
        // §4.6: the server's identity signs TH; the signature travels after the suite.
        hs.signature = Some(server_identity.sign_transcript(&th));
        let master = Master::derive(&s_share.agree(&i.key_share).expect("agree"), &th);
        // Cookie: issued-at, client address, master, suite (§4.4).
        let mut plain = Vec::new();
        plain.extend_from_slice(&now_ms.to_be_bytes());
        let mut a = [0u8; 19];
        let al = mpcore::crypto::encode_addr(&client_addr, &mut a);
        plain.extend_from_slice(&a[..al]);
        plain.extend_from_slice(&master.0);
        plain.push(suite.id());
        plain.extend_from_slice(i.params);
        let mut aad = Vec::new();
        aad.extend_from_slice(&packet::VERSION_2.to_be_bytes());
        aad.extend_from_slice(&s_cid.0);
        aad.extend_from_slice(&i.scid.0);
        let mut cookie = [0u8; 128];
        let cl = cookie_key.seal(&aad, &plain, &mut cookie).expect("cookie");
        let s_params = TransportParams { fast_join: true, mp_idle: true, ..Default::default() };
        let mut sp = [0u8; 64];
        let spl = s_params.emit(&mut Writer::new(&mut sp)).expect("params");
        let secrets = master.secrets(suite);
        let dgram = sealed_long(
            |w| hs.emit(w).expect("hs"),
            &[Frame::TransportParams(&sp[..spl]), Frame::Cookie(&cookie[..cl])],
            |buf, hl, pt| secrets.s2c.seal(0, 0, buf, hl, pt).expect("seal"),
        );
        dgram // the server forgets everything else: the cookie is its only memory
    };
    log(&mut out, verbose, "server HANDSHAKE", s_hs.len(), "X25519 share, Ed25519 signature, {params, cookie} sealed");
    assert!(s_hs.len() <= 3 * initial2.len(), "anti-amplification");

    // ---- Client: derives the same keys, opens the HANDSHAKE, sends CONFIRM with data.
    let p = Packet::parse(&s_hs, Cid::LEN).expect("parse hs");
    let Header::Handshake(hs) = p.header else { panic!() };
    let th = transcript_hash(&initial2[..c_transcript_len], &s_hs[..Handshake::TRANSCRIPT_LEN]);
    // The client was given the server's public key: the signature must verify before the key
    // share is used.
    let sig = hs.signature.expect("a signed HANDSHAKE");
    assert!(server_key.verifies(&th, &sig), "server signature");
    out.server_authenticated = true;
    let c_master = Master::derive(&c_share.agree(&hs.key_share).expect("agree"), &th);
    let suite = Suite::from_id(hs.suite).expect("suite");
    let c: Secrets = c_master.secrets(suite);
    let mut hsbuf = s_hs.clone();
    let pt = c.s2c.open(0, 0, &mut hsbuf, p.header_len).expect("client opens HANDSHAKE").to_vec();
    let mut cookie = Vec::new();
    for f in frames_of(&pt) {
        match f {
            Frame::Cookie(ck) => cookie = ck.to_vec(),
            Frame::TransportParams(tp) => assert!(TransportParams::parse(tp).expect("server params").fast_join),
            _ => {}
        }
    }
    let c_idsn = mpcore::crypto::idsn(c.key_client);
    let request = b"GET /siri?burst=1";
    let confirm = sealed_long(
        |w| {
            Confirm { version: packet::VERSION_2, dcid: hs.scid, scid: c_cid, cookie: &cookie, pn: 0 }
                .emit(w)
                .expect("confirm")
        },
        &[Frame::Dss(Dss::data(c_idsn.wrapping_add(1), request, false))],
        |buf, hl, pt| c.c2s.seal(0, 0, buf, hl, pt).expect("seal"),
    );
    log(&mut out, verbose, "client CONFIRM", confirm.len(), "cookie echoed, request data sealed");

    // ---- Server: rebuilds the connection from the cookie alone.
    let p = Packet::parse(&confirm, Cid::LEN).expect("parse confirm");
    let Header::Confirm(cf) = p.header else { panic!() };
    let mut aad = Vec::new();
    aad.extend_from_slice(&packet::VERSION_2.to_be_bytes());
    aad.extend_from_slice(&cf.dcid.0);
    aad.extend_from_slice(&cf.scid.0);
    let mut cbuf = [0u8; 128];
    let plain = cookie_key.open(&aad, cf.cookie, &mut cbuf).expect("cookie opens");
    // issued-at (8), then the address (family byte: 4 → 7 bytes, 6 → 19), master, suite, params.
    let at = 8 + if plain[8] == 4 { 7 } else { 19 };
    let master = Master(plain[at..at + 32].try_into().expect("32 bytes"));
    let s = master.secrets(Suite::from_id(plain[at + 32]).expect("suite"));
    let c_params_back = TransportParams::parse(&plain[at + 33..]).expect("client params from the cookie");
    assert!(c_params_back.fast_join && c_params_back.mp_idle);
    assert_eq!((s.key_client, s.key_server), (c.key_client, c.key_server), "both sides agree on the MPTCP keys");
    let mut cfbuf = confirm.clone();
    let pt = s.c2s.open(0, 0, &mut cfbuf, p.header_len).expect("server opens CONFIRM").to_vec();
    for f in frames_of(&pt) {
        if let Frame::Dss(d) = f {
            let (dsn, data) = d.mapping.expect("mapping");
            assert_eq!(dsn, c_idsn.wrapping_add(1));
            out.server_got.extend_from_slice(data);
        }
    }

    // ---- Server: first short-header packet: HANDSHAKE_DONE, DATA_ACK and the response.
    let s_idsn = mpcore::crypto::idsn(s.key_server);
    let response = b"HTTP/1.1 100 Continue";
    let data_ack = c_idsn.wrapping_add(1 + request.len() as u64);
    // Packet number 1: the HANDSHAKE took 0 of subflow 0 under the s2c key (§9.2).
    let reply = short(
        &s.s2c,
        c_cid,
        0,
        1,
        &[
            Frame::HandshakeDone,
            Frame::Dss(Dss {
                ack: Some((data_ack, 1 << 20)),
                mapping: Some((s_idsn.wrapping_add(1), response)),
                fin: false,
                idle: true,
                short_dsn: false,
                to_end: false,
            }),
        ],
    );
    log(&mut out, verbose, "server short (DONE, DSS+MP_IDLE)", reply.len(), "header-protected");
    let pt = open_short(&c.s2c, 0, None, &reply).expect("client opens short packet");
    for f in frames_of(&pt) {
        if let Frame::Dss(d) = f {
            assert_eq!(d.ack.map(|a| a.0), Some(data_ack));
            assert!(d.idle, "MP_IDLE set on the segment that empties the send queue");
            out.client_got.extend_from_slice(d.mapping.expect("mapping").1);
        }
    }

    // ---- MP_JOIN on a second path (§5.6-5.8): four packets, HMAC-B then HMAC-A.
    let (r_a, r_b) = (0x1111_2222u32, 0x3333_4444u32);
    let c_join_cid = Cid([0xc2; 8]);
    let join = sealed_long(
        |w| {
            Join { version: packet::VERSION_2, token: token(c.key_server), scid: c_join_cid, subflow: 1, pn: 0 }
                .emit(w)
                .expect("join")
        },
        &[Frame::MpJoin(MpJoin { backup: true, addr_id: 1, nonce: r_a })],
        |buf, hl, pt| c.c2s.seal(1, 0, buf, hl, pt).expect("seal"),
    );
    log(&mut out, verbose, "client JOIN (MP_JOIN, backup)", join.len(), "token in clear, sealed");
    let mut used_subflows = vec![0u32];
    let accept_join = |dgram: &[u8], used: &mut Vec<u32>| -> Option<Vec<u8>> {
        let p = Packet::parse(dgram, Cid::LEN).ok()?;
        let Header::Join(j) = p.header else { return None };
        if j.token != token(s.key_server) || used.contains(&j.subflow) {
            return None; // unknown token, or a subflow number already taken (replay)
        }
        let mut buf = dgram.to_vec();
        let pt = s.c2s.open(j.subflow, u64::from(j.pn), &mut buf, p.header_len).ok()?.to_vec();
        used.push(j.subflow);
        Some(pt)
    };
    let pt = accept_join(&join, &mut used_subflows).expect("server accepts JOIN");
    let Frame::MpJoin(mj) = frames_of(&pt)[0] else { panic!("MP_JOIN expected") };
    assert!(mj.backup);
    let s_join_cid = Cid([0x5f; 8]);
    let synack = short(
        &s.s2c,
        c_join_cid,
        1,
        0,
        &[Frame::MpJoinSynAck(MpJoinSynAck {
            backup: false,
            addr_id: 0,
            nonce: r_b,
            hmac: join_synack_hmac(s.key_server, s.key_client, r_b, mj.nonce),
            cid: s_join_cid,
        })],
    );
    log(&mut out, verbose, "server SYNACK (HMAC-B 64 bits)", synack.len(), "");
    let pt = open_short(&c.s2c, 1, None, &synack).expect("client opens SYNACK");
    let Frame::MpJoinSynAck(sa) = frames_of(&pt)[0] else { panic!() };
    assert!(ct_eq(&sa.hmac, &join_synack_hmac(c.key_server, c.key_client, sa.nonce, r_a)), "HMAC-B");
    let third = short(
        &c.c2s,
        sa.cid,
        1,
        1,
        &[Frame::MpJoinAck { hmac: join_ack_hmac(c.key_client, c.key_server, r_a, sa.nonce) }],
    );
    log(&mut out, verbose, "client ACK (HMAC-A 160 bits)", third.len(), "");
    let pt = open_short(&s.c2s, 1, Some(0), &third).expect("server opens third ACK");
    let Frame::MpJoinAck { hmac } = frames_of(&pt)[0] else { panic!() };
    assert!(ct_eq(&hmac, &join_ack_hmac(s.key_client, s.key_server, r_a, r_b)), "HMAC-A");
    let mut ackb = [0u8; 16];
    let mut aw = Writer::new(&mut ackb);
    mpcore::wire::Ack::emit(&mut aw, 0, [(0, 1)]).expect("ack");
    let al = aw.len();
    let ack = Frame::parse(&mut mpcore::wire::Reader::new(&ackb[..al])).expect("ack parses");
    let fourth = short(&s.s2c, c_join_cid, 1, 1, &[ack]);
    log(&mut out, verbose, "server ACK (fourth)", fourth.len(), "subflow established");
    out.join_established = open_short(&c.s2c, 1, Some(0), &fourth).is_some();

    // ---- FAST_JOIN_OUT (§5.9): the retransmitted request rides in the first packet.
    let fj_keys_c = fastjoin::Keys::new(c.key_client, c.key_server);
    let fj_keys_s = fastjoin::Keys::new(s.key_server, s.key_client);
    let dsn = c_idsn.wrapping_add(1);
    let tok = token(c.key_server);
    let fjo = sealed_long(
        |w| {
            Join { version: packet::VERSION_2, token: tok, scid: Cid([0xc3; 8]), subflow: 2, pn: 0 }
                .emit(w)
                .expect("join")
        },
        &[Frame::FastJoinOut(FastJoinOut {
            backup: true,
            addr_id: 2,
            dsn,
            hmac: fj_keys_c.sign(fastjoin::Kind::Out, dsn, tok),
            data: request,
        })],
        |buf, hl, pt| c.c2s.seal(2, 0, buf, hl, pt).expect("seal"),
    );
    log(&mut out, verbose, "client JOIN (FAST_JOIN_OUT+data)", fjo.len(), "data usable at once");
    let pt = accept_join(&fjo, &mut used_subflows).expect("server accepts FAST_JOIN_OUT");
    let Frame::FastJoinOut(f) = frames_of(&pt)[0] else { panic!() };
    assert!(fj_keys_s.verify(fastjoin::Kind::Out, f.dsn, tok, &f.hmac), "fast-join HMAC");
    out.fast_join_data = f.data.to_vec();

    // ---- The same datagram replayed (say from another address): refused, subflow number taken.
    out.replay_rejected = accept_join(&fjo, &mut used_subflows).is_none();
    // ---- A forged one (one bit of the sealed payload flipped), to a server that has not yet
    // seen subflow 2, so that only the AEAD stands in the way; the intact one is accepted there.
    let mut forged = fjo.clone();
    let at = forged.len() - 20;
    forged[at] ^= 0x01;
    assert!(accept_join(&fjo, &mut vec![0]).is_some(), "control: the intact packet is accepted");
    out.forgery_rejected = accept_join(&forged, &mut vec![0]).is_none();
    let n = note(out.replay_rejected, "rejected", "ACCEPTED");
    log(&mut out, verbose, "replayed FAST_JOIN_OUT", fjo.len(), n);
    let n = note(out.forgery_rejected, "rejected", "ACCEPTED");
    log(&mut out, verbose, "forged FAST_JOIN_OUT", forged.len(), n);

    // ---- ADD_ADDR (§5.12) from the server, verified by the client.
    let ip = "198.51.100.7".parse().expect("ip");
    let add = short(
        &s.s2c,
        c_cid,
        0,
        2,
        &[Frame::AddAddr(AddAddr {
            addr_id: 3,
            ip,
            port: 5201,
            hmac: Some(add_addr_hmac(s.key_server, s.key_client, 3, ip, 5201)),
        })],
    );
    let pt = open_short(&c.s2c, 0, Some(1), &add).expect("client opens ADD_ADDR");
    if let Frame::AddAddr(a) = frames_of(&pt)[0] {
        out.add_addr_verified =
            a.hmac.is_some_and(|h| ct_eq(&h, &add_addr_hmac(c.key_server, c.key_client, a.addr_id, a.ip, a.port)));
    }
    let n = note(out.add_addr_verified, "HMAC verified", "HMAC BAD");
    log(&mut out, verbose, "server ADD_ADDR", add.len(), n);
    out
}

#[allow(dead_code)]
fn main() {
    let o = run(true);
    println!();
    println!("server received {:?}", String::from_utf8_lossy(&o.server_got));
    println!("client received {:?}", String::from_utf8_lossy(&o.client_got));
    println!(
        "join established: {}, fast-join data: {:?}",
        o.join_established,
        String::from_utf8_lossy(&o.fast_join_data)
    );
}
