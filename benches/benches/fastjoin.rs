//! The responder's cost of one fast join: the HMAC and the replay window
//! (`cargo bench -p mp-benches --bench fastjoin`).
#![allow(clippy::unwrap_used)]

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use fastjoin::{accept_out, FastJoinOut, Keys, Kind, ReplayWindow};

fn fastjoin(c: &mut Criterion) {
    let (client, server, token) = (Keys::new(1, 2), Keys::new(2, 1), 0xabcd);
    let data = [7u8; 1000];
    let mut g = c.benchmark_group("fastjoin");
    // Verify one FAST_JOIN_OUT: HMAC-SHA256 over kind ‖ dsn ‖ token, then the window. Sixteen
    // packets are signed beforehand; the window starts afresh every sixteen, so it never fills.
    let tags: Vec<[u8; 20]> = (0..16u64).map(|k| client.sign(Kind::Out, 1000 + k, token)).collect();
    let mut k = 0usize;
    let mut window: ReplayWindow = ReplayWindow::new(0);
    g.bench_function("verify_fast_join_out", |b| {
        b.iter(|| {
            k = (k + 1) % 16;
            if k == 0 {
                window = ReplayWindow::new(0);
            }
            let dsn = 1000 + k as u64;
            let f = FastJoinOut { backup: true, addr_id: 1, dsn, hmac: tags[k], data: &data };
            accept_out(&server, token, black_box(&f), &mut window, 1500, 1 << 20)
        })
    });
    // The HMAC alone.
    g.bench_function("hmac_verify", |b| b.iter(|| server.verify(Kind::Out, black_box(1001), token, &tags[1])));
    // The window alone: move the edge, forget what fell below it, decide, remember.
    let mut w: ReplayWindow = ReplayWindow::new(0);
    let mut edsn = 0u64;
    g.bench_function("window_update", |b| {
        b.iter(|| {
            edsn += 4096;
            w.accept(black_box(edsn - 100), 1000, edsn, 8192)
        })
    });
    g.finish();
}

criterion_group!(benches, fastjoin);
criterion_main!(benches);
