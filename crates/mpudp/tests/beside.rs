//! `examples/beside.rs`, the Siri-like request beside an upload on emulated paths with a
//! round-trip time, run briefly: both phases answer every request, no request is answered
//! faster than the path's round trip (the emulator's delay applies to it), and the upload
//! moves bytes while the requests beside it run.
#![allow(clippy::unwrap_used)]

#[allow(dead_code, unreachable_pub)]
#[path = "../examples/beside.rs"]
mod beside;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_alone_and_beside_an_upload_are_measured() {
    let args = beside::Args {
        rate_mbit: 20,
        queue_rtts: 1.0,
        requests: 5,
        gap_ms: 50,
        warmup: 0.5,
        window: None,
        cc: "lia".into(),
    };
    let run = tokio::time::timeout(std::time::Duration::from_secs(120), beside::measure(&args));
    let f = run.await.expect("the run ended within two minutes").unwrap();
    assert_eq!((f.alone.len(), f.beside.len()), (5, 5), "every request answered");
    let fastest = f.alone.iter().chain(&f.beside).min().unwrap();
    assert!(*fastest >= beside::WIFI_RTT, "a request took {fastest:?}, below the fastest path's RTT");
    assert!(f.goodput > 1.0, "the upload moved {:.1} Mbit/s beside the requests", f.goodput);
}
