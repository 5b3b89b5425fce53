//! What the namespace tests share: running this test binary as a helper process in a
//! namespace, the server that hashes what it receives, and the upload's pseudo-random bytes.
#![allow(clippy::unwrap_used, dead_code)]

use mpudp::{MpListener, Options, ServerIdentity};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, ChildStdout, Command, Stdio};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Runs this test binary in namespace `ns` as the ignored helper test `helper`, with
/// `role_var=role` in its environment; its stdin and stdout are piped.
pub fn exec(ns: &str, helper: &str, role_var: &str, role: &str) -> Child {
    exec_as(ns, None, helper, role_var, role)
}

/// `exec`, as user `uid` (its group the same number, no supplementary groups, no
/// capabilities: an app's process) when given, with util-linux's `setpriv`.
pub fn exec_as(ns: &str, uid: Option<u32>, helper: &str, role_var: &str, role: &str) -> Child {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns]);
    if let Some(u) = uid {
        cmd.arg("setpriv").arg(format!("--reuid={u}")).arg(format!("--regid={u}")).args([
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
        ]);
    }
    cmd.arg(exe)
        .args(["--ignored", "--exact", helper, "--nocapture", "--test-threads", "1"])
        .env(role_var, role)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// Runs the server helper (`helper` with `role_var=server`) in namespace `ns` and waits until
/// it prints `listening`. Its stdout stays open in the returned reader (the harness prints
/// its summary there when the helper ends).
pub fn start_server(ns: &str, helper: &str, role_var: &str) -> (testbed::Reap, BufReader<ChildStdout>) {
    let mut server = testbed::Reap(exec(ns, helper, role_var, "server"));
    let mut out = BufReader::new(server.0.stdout.take().unwrap());
    // The test harness prints its own lines first.
    let mut line = String::new();
    while line.trim() != "listening" {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the server helper ended before listening");
    }
    (server, out)
}

/// The test server's identity (the same in every process), and the options of a client
/// given its key.
pub fn identity() -> ServerIdentity {
    ServerIdentity::from_seed(&[7; 32]).unwrap()
}

pub fn client_options() -> Options {
    Options::new().server_key(identity().public_key())
}

/// Accepts one connection on `addr` (proving [`identity`]), reads it to the end, answers with
/// the SHA-256 of what it read, and closes. Prints `listening` once bound.
pub async fn hashing_server(addr: SocketAddr, opts: Options) {
    let l = MpListener::bind(addr, opts.identity(identity())).unwrap();
    println!("listening");
    let (s, _) = l.accept().await.unwrap();
    hash_to_end(s).await;
}

/// Reads `s` to its end, answers with the SHA-256 of what it read, and closes.
async fn hash_to_end(mut s: mpudp::MpStream) {
    let mut hash = ring::digest::Context::new(&ring::digest::SHA256);
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = s.read(&mut buf).await.unwrap();
        if n == 0 {
            break;
        }
        hash.update(&buf[..n]);
    }
    s.write_all(hash.finish().as_ref()).await.unwrap();
    s.shutdown().await.unwrap();
    s.closed().await;
}

/// Byte `i` of the answer to request `r` of the Siri-like exchanges.
pub fn byte_at(r: usize, i: usize) -> u8 {
    (r * 31 + i * 7) as u8
}

/// Answers each request of `s` (2,004 bytes, the first its number) with 20,000 bytes, until
/// the client's end of stream; then ends its own and waits for the close.
pub async fn answer_requests(mut s: mpudp::MpStream) {
    let mut req = [0u8; 2004];
    while s.read_exact(&mut req).await.is_ok() {
        let r = usize::from(req[0]);
        s.write_all(&response(r)).await.unwrap();
    }
    s.shutdown().await.unwrap();
    s.closed().await;
}

/// The answer to request `r`: 20,000 bytes.
fn response(r: usize) -> Vec<u8> {
    (0..20_000).map(|i| byte_at(r, i)).collect()
}

/// Sends request `r` (1 to 255) on `s`, reads its answer (within 10 s), checks every byte and
/// prints `answered R MS`, as the namespace tests' clients do.
pub async fn request(s: &mut mpudp::MpStream, r: usize) {
    let mut req = vec![0u8; 2004];
    req[0] = r as u8;
    let t = std::time::Instant::now();
    s.write_all(&req).await.unwrap();
    let mut resp = vec![0u8; 20_000];
    tokio::time::timeout(std::time::Duration::from_secs(10), s.read_exact(&mut resp)).await.unwrap().unwrap();
    assert!(resp.iter().enumerate().all(|(i, &b)| b == byte_at(r, i)), "response {r} intact");
    println!("answered {r} {:.2}", t.elapsed().as_secs_f64() * 1e3);
}

/// `answer_requests` until a request numbered 0; then reads an upload to its end and answers
/// with its SHA-256 (`hashing_server`'s part).
pub async fn answer_then_hash(mut s: mpudp::MpStream) {
    let mut req = [0u8; 2004];
    loop {
        if s.read_exact(&mut req).await.is_err() {
            s.shutdown().await.unwrap();
            s.closed().await;
            return;
        }
        match usize::from(req[0]) {
            0 => break,
            r => s.write_all(&response(r)).await.unwrap(),
        }
    }
    hash_to_end(s).await;
}

/// Fills `chunk` with the next pseudo-random bytes of the upload (xorshift, state `x`).
pub fn fill(x: &mut u64, chunk: &mut [u8]) {
    for b in chunk.iter_mut() {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *b = *x as u8;
    }
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The helper test's body: runs `server` or `client` as the environment's `role_var` says
/// (nothing without it, as when the test harness runs the ignored helper itself).
pub fn run_role<S, C>(role_var: &str, server: impl FnOnce() -> S, client: impl FnOnce() -> C)
where
    S: std::future::Future<Output = ()>,
    C: std::future::Future<Output = ()>,
{
    let Ok(role) = std::env::var(role_var) else { return };
    // The harness printed "test NAME ... " without a newline: start the protocol's lines on a
    // line of their own.
    println!();
    let rt = tokio::runtime::Runtime::new().unwrap();
    match role.as_str() {
        "server" => rt.block_on(server()),
        "client" => rt.block_on(client()),
        other => panic!("unknown role {other}"),
    }
}
