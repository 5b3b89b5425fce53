//! Coverage-guided fuzzing of every parser a datagram meets on receipt: the header, the frames
//! of the payload (as if it had decrypted to those bytes), transport parameters, and header
//! protection removal plus AEAD opening with a fixed key.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpcore::crypto::{Master, Suite};
use mpcore::wire::packet::{decode_pn, Short};
use mpcore::wire::{Frame, Frames, Header, Packet, TransportParams, Writer};

fuzz_target!(|data: &[u8]| {
    // The CID length a receiver expects (4..=8) from the first byte's low bits.
    let cid_len = 4 + usize::from(data.first().copied().unwrap_or(0) % 5);
    if let Ok(p) = Packet::parse(data, cid_len) {
        assert!(p.header_len <= data.len());
        match p.header {
            Header::Initial(i) => {
                let _ = TransportParams::parse(i.params);
            }
            Header::Short(_) => {
                let keys = Master([7u8; 32]).secrets(Suite::ChaCha20Poly1305);
                let mut buf = data.to_vec();
                if let Ok((len, t)) = keys.c2s.unprotect_short(&mut buf, Short::pn_offset(cid_len)) {
                    let pn = decode_pn(Some(1000), t, len);
                    let _ = keys.c2s.open(0, pn, &mut buf, Short::pn_offset(cid_len) + len);
                }
            }
            _ => {}
        }
    }
    // The payload parser on raw bytes, and emit → parse of whatever parsed.
    let mut out = [0u8; 4096];
    for f in Frames::new(data) {
        let Ok(f) = f else { break };
        let mut w = Writer::new(&mut out);
        if f.emit(&mut w).is_ok() {
            let n = w.len();
            let again = Frame::parse(&mut mpcore::wire::Reader::new(&out[..n]));
            assert_eq!(again, Ok(f));
        }
        if let Frame::TransportParams(p) = f {
            let _ = TransportParams::parse(p);
        }
    }
});
