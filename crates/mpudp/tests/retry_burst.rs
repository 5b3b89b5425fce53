//! Many connects at once through one client socket to a server that asks every one for a RETRY
//! (a loaded server: more than `retry_above` handshakes a second). Every token the server
//! issued must come back intact: none dropped as `bad_token`, every connect answered.
#![allow(clippy::unwrap_used)]

use mpudp::{Interface, MpEndpoint, MpListener, Options, ServerIdentity};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_retried_connects_keeps_every_token() {
    let id = ServerIdentity::from_seed(&[7; 32]).unwrap();
    let key = id.public_key();
    let mut sopts = Options::server().identity(id);
    sopts.config_mut().server.initials_per_source = 0;
    sopts.config_mut().server.require_retry = true;
    let l = MpListener::bind("127.0.0.1:0".parse().unwrap(), sopts).unwrap();
    let addr = l.local_addr();
    let server_ep = l.endpoint().clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = l.accept().await {
            held.push(s);
        }
    });
    let ep = MpEndpoint::client(
        Options::new().server_key(key).interface(Interface::unbound("127.0.0.1:0".parse().unwrap())),
    )
    .unwrap();
    let n = 2000;
    let mut set = tokio::task::JoinSet::new();
    let mut up = Vec::new();
    let mut failed = Vec::new();
    let mut started = 0;
    while up.len() + failed.len() < n {
        while started < n && set.len() < 256 {
            let ep = ep.clone();
            set.spawn(async move { tokio::time::timeout(Duration::from_secs(20), ep.connect(addr)).await });
            started += 1;
        }
        match set.join_next().await.unwrap().unwrap() {
            Ok(Ok(s)) => up.push(s),
            Ok(Err(e)) => failed.push(e.to_string()),
            Err(_) => failed.push("no connection in 20 s".into()),
        }
    }
    let drops = server_ep.drops();
    eprintln!("up {}, failed {}, server drops: {}", up.len(), failed.len(), drops.summary());
    assert_eq!(drops.bad_token, 0, "tokens the server issued came back altered: {}", drops.summary());
    assert!(failed.is_empty(), "{} connects failed: {:?}", failed.len(), &failed[..failed.len().min(3)]);
}
