//! The two ends of a test over one `MpStream`: the client runs the workload and measures
//! ([`client`]), the server follows the client's parameters and answers ([`server`]), and
//! both report their counters at intervals while it runs (`intervals`).

mod client;
mod intervals;
pub mod resume;
mod server;

pub use client::client;
pub(crate) use server::linger;
pub use server::server;

use crate::proto::ProtoError;
use crate::report::{self, Report, SideResults};
use mpudp::PathInfo;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Bulk mode's frame body.
const CHUNK: usize = 64 * 1024;
/// How long a server waits for a HELLO, and either side for the peer's END and RESULTS once
/// its own part is done.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the server waits for a connected client's test request (HELLO).
const HELLO_TIMEOUT: Duration = Duration::from_secs(3);
/// How much longer than the workload's longest silence (a burst gap, or the user's wait
/// after a response) the server waits for the client's next frame before it takes the client
/// for gone and frees the test's slot: the transport's peer timeout, so that a client whose
/// OS suspended it for seconds (a phone) keeps its test. A slot a dead client holds is freed
/// sooner for a client that waits for it (`slots`).
const LIVENESS_MARGIN: Duration = Duration::from_secs(10);

/// A test that did not complete: why, and what was measured until then.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub partial: Option<Box<Report>>,
}

impl Failure {
    fn new(message: impl Into<String>) -> Self {
        Self { message: message.into(), partial: None }
    }
}

impl From<ProtoError> for Failure {
    fn from(e: ProtoError) -> Self {
        Self::new(e.to_string())
    }
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Self {
        Self::new(e.to_string())
    }
}

/// Counters shared by the workload, the reader and the interval reporter.
#[derive(Debug, Default)]
struct Progress {
    bytes_sent: u64,
    bytes_received: u64,
    answered: u32,
    /// The longest final-response delay since the last interval report.
    interval_max_delay: Option<f64>,
}

type Shared = Arc<Mutex<Progress>>;

fn lock(p: &Shared) -> std::sync::MutexGuard<'_, Progress> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}

/// This side's results: application bytes, the connection's subflows, the paths' counters
/// over the test (`start`/`end` snapshots; empty slices leave interfaces out).
fn side_results(
    scheduler: &str,
    g: &Progress,
    stats: Option<mpudp::ConnStats>,
    start: &[PathInfo],
    end: &[PathInfo],
    t0: Instant,
) -> SideResults {
    SideResults {
        version: crate::VERSION.to_string(),
        seconds: t0.elapsed().as_secs_f64(),
        bytes_sent: g.bytes_sent,
        bytes_received: g.bytes_received,
        answered: g.answered,
        scheduler: scheduler.to_string(),
        connection: stats.as_ref().map(report::ConnectionReport::from),
        interfaces: report::interfaces(start, end, t0),
    }
}
