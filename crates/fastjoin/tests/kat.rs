//! Known answers for the fast-join HMACs, computed independently of ring with Python's
//! hashlib/hmac by `python3 crates/mpcore/tests/kat/gen_kat.py`, whose output lines are quoted
//! next to each assertion.
#![allow(clippy::unwrap_used)]

use fastjoin::{auth, Keys, Kind};

const KA: u64 = 0x0102_0304_0506_0708;
const KB: u64 = 0x1112_1314_1516_1718;
/// `token(KB) ccad45ac`: the responder's token.
const TOKEN_B: u32 = 0xccad_45ac;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

#[test]
fn fast_join_hmacs() {
    // fjo hmac 4714249c1ea5b363ba481f612ec20ba562d8710f
    let fjo = auth::hmac(KA, KB, Kind::Out, 0x0123_4567_89ab_cdef, TOKEN_B);
    assert_eq!(fjo.to_vec(), hex("4714249c1ea5b363ba481f612ec20ba562d8710f"));
    // fji hmac e33a8369ec0bcc026c0223961e4d5a79ab531ea9
    let fji = auth::hmac(KA, KB, Kind::In, 42, TOKEN_B);
    assert_eq!(fji.to_vec(), hex("e33a8369ec0bcc026c0223961e4d5a79ab531ea9"));
    // reply dsn hmac cc21448dfb3fee51a7caea0b190dbf3af49036f8
    let reply = auth::hmac(KB, KA, Kind::ReplyDsn, 7, TOKEN_B);
    assert_eq!(reply.to_vec(), hex("cc21448dfb3fee51a7caea0b190dbf3af49036f8"));

    // The precomputed keys agree with the free function, and verify in both roles.
    let client = Keys::new(KA, KB);
    let server = Keys::new(KB, KA);
    assert_eq!(client.sign(Kind::Out, 0x0123_4567_89ab_cdef, TOKEN_B), fjo);
    assert!(server.verify(Kind::Out, 0x0123_4567_89ab_cdef, TOKEN_B, &fjo));
    assert!(server.verify(Kind::In, 42, TOKEN_B, &fji));
    assert!(client.verify(Kind::ReplyDsn, 7, TOKEN_B, &reply));
}
