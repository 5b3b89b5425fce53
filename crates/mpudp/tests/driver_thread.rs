//! Where an endpoint's driver runs (`Options::driver_thread`, issue 40): on a multi-thread
//! runtime, by default, a driver thread (one per core at most, taken in turn); on a
//! current-thread runtime, or when asked, a task of the caller's runtime. The streams work the
//! same either way.
//!
//! One test, run step by step: it counts this process's threads by name.
#![allow(clippy::unwrap_used)]

use mpudp::{MpListener, MpStream, Options, ServerIdentity};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// This process's threads named as the driver's.
fn driver_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim_end() == "mpudp-driver")
        .count()
}

/// A client and a server endpoint (each with `opts`), 2 MB each way, checked byte for byte;
/// returns the driver threads counted while both were open.
async fn exchange(opts: Options) -> usize {
    let id = ServerIdentity::from_seed(&[7; 32]).unwrap();
    let l = MpListener::bind("127.0.0.1:0".parse().unwrap(), opts.clone().identity(id.clone())).unwrap();
    let addr = l.local_addr();
    let (c, accepted) = tokio::join!(MpStream::connect(addr, opts.server_key(id.public_key())), l.accept());
    let (mut c, mut s) = (c.unwrap(), accepted.unwrap().0);
    let during = driver_threads();
    let data: Vec<u8> = (0..2_000_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    let (d1, d2) = (data.clone(), data.clone());
    let up = tokio::spawn(async move {
        c.write_all(&d1).await.unwrap();
        c.shutdown().await.unwrap();
        let mut back = Vec::new();
        c.read_to_end(&mut back).await.unwrap();
        back
    });
    let mut got = Vec::new();
    s.read_to_end(&mut got).await.unwrap();
    s.write_all(&d2).await.unwrap();
    s.shutdown().await.unwrap();
    assert!(got == data, "the upload arrived intact");
    assert!(up.await.unwrap() == data, "the download arrived intact");
    during
}

fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

#[test]
fn on_a_multi_thread_runtime_the_drivers_run_on_at_most_one_thread_per_core() {
    assert_eq!(driver_threads(), 0);
    // Current-thread runtime: the drivers are tasks.
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    assert_eq!(rt.block_on(exchange(Options::new())), 0, "a current-thread runtime runs the drivers as tasks");
    drop(rt);
    // Multi-thread runtime, asked for tasks.
    let rt = multi_thread();
    assert_eq!(rt.block_on(exchange(Options::new().driver_thread(false))), 0, "driver_thread(false)");
    // Multi-thread runtime, the default: the client's and the server's drivers each take a
    // driver thread in turn, as many as there are cores at most; more endpoints start no more.
    let cores = std::thread::available_parallelism().unwrap().get();
    assert_eq!(rt.block_on(exchange(Options::new())), cores.min(2), "a driver thread each, up to one per core");
    for _ in 0..2 {
        rt.block_on(exchange(Options::new()));
    }
    assert_eq!(driver_threads(), cores.min(6), "six endpoints: no more threads than cores");
    drop(rt);
}
