//! ns per operation for the per-packet work of the wire format and its protection:
//! parse and emit of a full data packet (short header, ACK, DSS with 1,100 bytes of data),
//! seal and open of a 1200-byte packet (both suites), the AES-128-GCM seal and open of a full
//! 1,472-byte datagram's plaintext as 1,449 bytes (a partial last block) and as 1,440 (whole
//! blocks, what `PacketBuilder::whole_blocks` makes of it: issue 57), and the fast-join HMAC
//! check.
//!
//! Run: `cargo bench -p mp-benches --bench wire_crypto`

use criterion::measurement::WallTime;
use criterion::{black_box, criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use mpcore::crypto::{Master, PacketKey, Suite};
use mpcore::wire::packet::Short;
use mpcore::wire::{Ack, Cid, Dss, Frame, Frames, Packet, Writer};

const DATA: [u8; 1100] = [0x5a; 1100];
/// The default CID length (`Config::transport.cid_len`).
const CID_LEN: usize = 4;

/// Emits a data packet's plaintext: short header, ACK with 3 ranges, DSS with DATA_ACK and
/// 1,100 bytes of data. Returns the total length.
fn emit_data_packet(buf: &mut [u8], pn: u64) -> usize {
    let mut w = Writer::new(buf);
    let _ = Short::emit(Cid([7; 8]), CID_LEN, pn, 2, &mut w);
    let _ = Ack::emit(&mut w, 1234, [(990, 1000), (900, 980), (850, 880)]);
    // A bulk data packet as version 2 sends it: short DSN, data to the end.
    let dss = Frame::Dss(Dss {
        ack: Some((1 << 40, 1 << 20)),
        mapping: Some((1 << 41, &DATA[..])),
        fin: false,
        idle: false,
        short_dsn: true,
        to_end: true,
    });
    let _ = dss.emit(&mut w);
    w.len()
}

fn parse_data_packet(bytes: &[u8]) -> usize {
    let mut n = 0;
    if let Ok(p) = Packet::parse(bytes, CID_LEN) {
        // The plaintext frames start after the 2-byte packet number.
        for f in Frames::new(&p.payload[2..]) {
            match f {
                Ok(Frame::Dss(d)) => n += d.mapping.map_or(0, |(_, data)| data.len()),
                Ok(Frame::Ack(a)) => n += a.ranges().count(),
                Ok(_) => {}
                Err(_) => break,
            }
        }
    }
    n
}

fn wire(c: &mut Criterion) {
    let mut g = c.benchmark_group("wire");
    let mut buf = [0u8; 1500];
    g.bench_function("emit_data_packet", |b| b.iter(|| emit_data_packet(black_box(&mut buf), black_box(77))));
    let n = emit_data_packet(&mut buf, 77);
    let pkt = buf[..n].to_vec();
    assert_eq!(parse_data_packet(&pkt), 1100 + 3);
    g.bench_function("parse_data_packet", |b| b.iter(|| parse_data_packet(black_box(&pkt))));
    g.finish();
}

/// Benches the seal of a short-header packet with `pt_len` bytes of plaintext (the 7-byte
/// header, the tag after it) and its open, which includes the copy of the sealed datagram and
/// the header protection's removal.
fn seal_and_open(g: &mut BenchmarkGroup<'_, WallTime>, key: &PacketKey, (seal, open): (&str, &str), pt_len: usize) {
    let hl = Short::pn_offset(CID_LEN) + 2;
    let mut buf = vec![0u8; hl + pt_len + 16];
    let mut pn = 0u64;
    g.bench_function(seal, |b| {
        b.iter(|| {
            pn += 1;
            let mut w = Writer::new(&mut buf);
            let _ = Short::emit(Cid([1; 8]), CID_LEN, pn, 2, &mut w);
            key.seal_short(3, pn, black_box(&mut buf), hl, pt_len)
        })
    });
    let mut w = Writer::new(&mut buf);
    let _ = Short::emit(Cid([1; 8]), CID_LEN, 5, 2, &mut w);
    let n = key.seal_short(3, 5, &mut buf, hl, pt_len).expect("seal");
    assert_eq!(n, buf.len());
    let sealed = buf.clone();
    g.bench_function(open, |b| {
        b.iter(|| {
            buf.copy_from_slice(&sealed);
            let (len, _) = key.unprotect_short(&mut buf, Short::pn_offset(CID_LEN)).expect("hp");
            key.open(3, 5, black_box(&mut buf), Short::pn_offset(CID_LEN) + len).map(|p| p.len())
        })
    });
}

fn crypto(c: &mut Criterion) {
    let mut g = c.benchmark_group("crypto");
    g.throughput(Throughput::Bytes(1200));
    for suite in [Suite::ChaCha20Poly1305, Suite::Aes128Gcm] {
        let keys = Master([3u8; 32]).secrets(suite);
        let name = match suite {
            Suite::ChaCha20Poly1305 => "chacha20poly1305",
            Suite::Aes128Gcm => "aes128gcm",
        };
        // A 1200-byte datagram: 7-byte header, 1177 bytes of plaintext, 16-byte tag.
        let pt_len = 1200 - Short::pn_offset(CID_LEN) - 2 - 16;
        seal_and_open(&mut g, &keys.c2s, (&format!("seal_1200/{name}"), &format!("open_1200/{name}")), pt_len);
    }
    g.finish();
    // A full packet where 1,472 bytes may go (net.sh's datagrams): its plaintext of 1,449 bytes
    // ends in a partial AES block; of 1,440, whole blocks (`PacketBuilder::whole_blocks`).
    let mut g = c.benchmark_group("full_packet");
    let keys = Master([3u8; 32]).secrets(Suite::Aes128Gcm);
    for (name, pt_len) in
        [("partial_block_1449", 1472 - Short::pn_offset(CID_LEN) - 2 - 16), ("whole_blocks_1440", 1440)]
    {
        g.throughput(Throughput::Bytes(pt_len as u64));
        seal_and_open(&mut g, &keys.c2s, (&format!("seal/{name}"), &format!("open/{name}")), pt_len);
    }
    g.finish();
}

criterion_group!(benches, wire, crypto);
criterion_main!(benches);
