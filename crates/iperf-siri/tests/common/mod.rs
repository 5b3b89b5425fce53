//! What the binary's end-to-end tests share: the binary, the test key, a server on a free
//! port, the client, JSON output.
#![allow(dead_code, clippy::unwrap_used)]

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_iperf-siri");

/// One test of this file at a time: each measures delays and paths on loopback, and a
/// neighbour's load (a killed peer's timeouts, a squatter's connections) would show up as a
/// slow primary path that the transport rightly leaves.
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

/// The key pair every test server proves (`iperf-siri keygen` wrote it once, in a temporary
/// directory), and its public key for the clients.
pub fn key() -> &'static (String, String) {
    static KEY: std::sync::OnceLock<(String, String)> = std::sync::OnceLock::new();
    KEY.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("iperf-siri-test-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("server.key");
        let _ = std::fs::remove_file(&file);
        let out = run(&["keygen", file.to_str().unwrap()]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let public = String::from_utf8(out.stdout).unwrap().trim().to_string();
        (file.to_str().unwrap().to_string(), public)
    })
}

/// Runs the binary with the test server's key before `args`.
pub fn client(args: &[&str]) -> Output {
    Command::new(BIN).args(["--server-key", key().1.as_str()]).args(args).output().unwrap()
}

/// A server on a free port (`-p 0`) with the test key; returns it and its port, read from its
/// first lines.
pub fn server(extra: &[&str]) -> (Child, u16) {
    let mut child = Command::new(BIN)
        .args(["-s", "-p", "0", "-i", "0", "--key", key().0.as_str()])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let port = loop {
        let line = lines.next().expect("the server prints its port").unwrap();
        if let Some(p) = line.strip_prefix("Server listening on ") {
            break p.split_whitespace().next().unwrap().parse().unwrap();
        }
    };
    // Keep draining the server's output so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
    std::thread::spawn(move || for _ in err.by_ref() {});
    (child, port)
}

pub fn json(out: &Output) -> Value {
    assert!(out.status.success(), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}
