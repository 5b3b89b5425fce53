//! `iperf-siri demo --resume`: the "fresh connection per request" case (issue 36) without a
//! second host. One server and the userspace emulator of MultiMob's paths (WiFi: RTT 15 ms;
//! cellular: RTT 25 ms with the phone's radio, `--radio`), and on each path a client that
//! opens a new connection per request, fresh and resumed with 0-RTT alternately
//! (`iperf-siri -c --resume`'s measurement: the delay from the connect to the server's first
//! byte, and the request's delay).

use crate::cli::DemoArgs;
use crate::context::Context;
use crate::demo::{ip, CELLULAR, WIFI};
use crate::proto::{Params, PROTOCOL};
use crate::run;
use linkemu::{Emulator, PathSpec};
use mpudp::{Iface, Interface, MpListener, Options};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

pub async fn run(args: &DemoArgs) -> Result<(), String> {
    let identity = mpudp::ServerIdentity::generate().map_err(|e| format!("cannot make a key pair: {e}"))?;
    let key = identity.public_key();
    let server_opts = Options::server().identity(identity).issue_tickets(true);
    let listener = MpListener::bind(SocketAddr::new(ip(WIFI), 0), server_opts).map_err(|e| e.to_string())?;
    let cellular = PathSpec { radio: args.radio.0, ..PathSpec::multimob(Duration::from_millis(25)) };
    let paths = [(ip(WIFI), PathSpec::multimob(Duration::from_millis(15))), (ip(CELLULAR), cellular)];
    let emu = Emulator::start(ip(WIFI), listener.local_addr(), &paths).await.map_err(|e| format!("emulator: {e}"))?;
    let listener = Arc::new(listener);
    // The server: one test per connection.
    let l = listener.clone();
    let server = tokio::spawn(async move {
        while let Ok((stream, peer)) = l.accept().await {
            let lp = l.clone();
            let ctx = Context::new(Arc::new(move || lp.endpoint().paths()), l.local_addr(), peer, "lowest-rtt");
            tokio::spawn(run::server(stream, ctx, crate::VERSION));
        }
    });
    if !args.json {
        println!(
            "iperf-siri demo --resume: {} requests of each kind on each path, a new connection each ...",
            args.requests
        );
    }
    // One burst per request: the first byte does not depend on the rest of the request.
    let params = Params { bursts: 1, wait_ms: 0.0, test_id: Some("demo resume".into()), ..Params::default() };
    let mut runs = Vec::new();
    for (name, addr, kind) in
        [("WiFi, RTT 15 ms", WIFI, Iface::Wifi), ("cellular, RTT 25 ms", CELLULAR, Iface::Cellular)]
    {
        let opts =
            Options::new().interface(Interface::unbound(SocketAddr::new(ip(addr), 0)).kind(kind)).server_key(key);
        let r = run::resume::run(opts, emu.addr(), params.clone(), PROTOCOL, args.requests, "lowest-rtt", None).await?;
        runs.push((name, r));
    }
    server.abort();
    if args.json {
        let doc: Vec<serde_json::Value> =
            runs.iter().map(|(name, r)| serde_json::json!({ "path": name, "resume": r })).collect();
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "demo_resume": doc })).map_err(|e| e.to_string())?
        );
    } else {
        for (name, r) in &runs {
            println!("{name}:");
            for l in r.lines().iter().skip(1) {
                println!("  {l}");
            }
        }
    }
    Ok(())
}
