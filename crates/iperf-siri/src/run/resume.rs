//! `iperf-siri -c HOST --resume`: the "fresh connection per request" case of an app that
//! opens a connection for each request (after a long idle, a restart, a server that forgot
//! it). Each request runs on a new connection, alternately fresh (the full handshake: the
//! test request goes once the HANDSHAKE came) and resumed with the ticket the previous
//! resumed connection left, its test request sent with the first packet as 0-RTT data
//! (PROTOCOL.md §4.8-4.9). What is measured, per connection: the delay from the connect to
//! the server's first byte (its answer to the test request), and the request's
//! request-response delay as in every test.

use super::client::{after_hello, read_answer};
use crate::context::Context;
use crate::proto::{self, Params};
use mpudp::{MpEndpoint, Options, TicketStore};
use serde::Serialize;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One request's connection.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// Opened with a ticket the server took.
    pub resumed: bool,
    /// Bytes of the test request that the server took as 0-RTT data.
    pub early_bytes: u64,
    /// From the connect to the server's first byte (ms).
    pub first_byte_ms: f64,
    /// The request's request-response delay (ms).
    pub delay_ms: Option<f64>,
}

/// Both kinds of connection, alternated: `fresh[k]` ran just before `resumed[k]`.
#[derive(Debug, Default, Serialize)]
pub struct Results {
    pub fresh: Vec<Sample>,
    pub resumed: Vec<Sample>,
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

impl Results {
    /// The lines of the text report.
    pub fn lines(&self) -> Vec<String> {
        let first = |s: &[Sample]| median(s.iter().map(|x| x.first_byte_ms).collect());
        let delay = |s: &[Sample]| median(s.iter().filter_map(|x| x.delay_ms).collect());
        let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1} ms"));
        let taken = self.resumed.iter().filter(|s| s.resumed && s.early_bytes > 0).count();
        let ratio = match (first(&self.resumed), first(&self.fresh)) {
            (Some(r), Some(f)) if f > 0.0 => format!("{:.2}", r / f),
            _ => "-".into(),
        };
        vec![
            format!("- - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - - -"),
            format!(
                "A new connection per request: {} fresh, {} resumed, alternated",
                self.fresh.len(),
                self.resumed.len()
            ),
            format!("                     first byte (median)   request delay (median)"),
            format!("fresh handshake      {:>19}   {:>22}", ms(first(&self.fresh)), ms(delay(&self.fresh))),
            format!("resumed, 0-RTT       {:>19}   {:>22}", ms(first(&self.resumed)), ms(delay(&self.resumed))),
            format!(
                "first byte, resumed / fresh: {ratio}; resumed with early data taken: {taken} of {}",
                self.resumed.len()
            ),
        ]
    }
}

/// One request on a new connection of `ep`, its test request sent with `connect_early` (as
/// 0-RTT data when the endpoint has a ticket for the server).
async fn one(
    ep: &Arc<MpEndpoint>,
    remote: SocketAddr,
    params: &Params,
    protocol: u16,
    scheduler: &str,
) -> Result<Sample, String> {
    let hello = proto::hello(protocol, params).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let stream = ep.connect_early(remote, &hello).await.map_err(|e| e.to_string())?;
    let (mut r, w) = stream.into_split();
    let version = read_answer(&mut r, protocol).await.map_err(|f| f.message)?;
    let first_byte_ms = started.elapsed().as_secs_f64() * 1e3;
    let (resumed, early_bytes) = w.stats().map_or((false, 0), |s| (s.resumed, s.early_bytes));
    let paths_ep = ep.clone();
    let ctx =
        Context { started, ..Context::new(Arc::new(move || paths_ep.paths()), ep.local_addr(), remote, scheduler) };
    let report = after_hello(r, w, params.clone(), version, ctx, None).await.map_err(|f| f.message)?;
    let delay_ms = report.requests.first().and_then(|q| q.delay_ms);
    Ok(Sample { resumed, early_bytes, first_byte_ms, delay_ms })
}

/// Runs `n` requests of each kind against `remote`.
pub async fn run(
    opts: Options,
    remote: SocketAddr,
    params: Params,
    protocol: u16,
    n: u32,
    scheduler: &str,
    progress: Option<crate::out::Out>,
) -> Result<Results, String> {
    let params = Params { requests: Some(1), duration_s: None, ..params };
    let store = TicketStore::new();
    let fresh = Arc::new(MpEndpoint::client(opts.clone()).map_err(|e| e.to_string())?);
    let resuming = Arc::new(MpEndpoint::client(opts.tickets(store.clone())).map_err(|e| e.to_string())?);
    // A first connection leaves the first ticket (not counted).
    one(&resuming, remote, &params, protocol, scheduler).await?;
    let mut out = Results::default();
    for k in 0..n {
        for (ep, into) in [(&fresh, &mut out.fresh), (&resuming, &mut out.resumed)] {
            // The ticket of the last resumed connection comes with its first packets.
            let deadline = Instant::now() + Duration::from_secs(2);
            while std::ptr::eq(ep, &resuming) && store.is_empty() && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let s = one(ep, remote, &params, protocol, scheduler).await?;
            if let Some(o) = &progress {
                let kind = if s.resumed { "resumed" } else { "fresh" };
                o.line(&format!("[{:>3}] {kind:<8} first byte {:>7.1} ms", k + 1, s.first_byte_ms));
            }
            into.push(s);
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        fresh.wait_idle().await;
        resuming.wait_idle().await;
    })
    .await;
    Ok(out)
}
