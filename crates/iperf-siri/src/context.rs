//! What a side of a test needs besides its stream: where its paths' counters come from, its
//! addresses, its interval reporting and its clock. Built by the command line (`lib.rs`) and
//! the demo, read by the runs and the report.

use crate::out::Out;
use crate::slots::TestActivity;
use mpudp::PathInfo;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The local paths' counters, from whichever handle owns the endpoint.
pub type PathsFn = Arc<dyn Fn() -> Vec<PathInfo> + Send + Sync>;

/// What a side needs besides the stream.
#[derive(Clone)]
pub struct Context {
    pub paths: PathsFn,
    /// Interval reports every this long (zero: none).
    pub interval: Duration,
    /// Where interval lines go while the test runs (`None`: collect only, for JSON or the
    /// demo).
    pub live: Option<Out>,
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub verbose: bool,
    /// This side's scheduler, for the results.
    pub scheduler: String,
    /// When the test began: the client's connect, the server's accept. Times in reports
    /// count from here.
    pub started: Instant,
    /// A server: the longest silence a test's workload may declare (`--max-silence`).
    pub max_silence: Duration,
    /// A server: the test's slot (its client's last frame, the signal that ends it for
    /// another client), when the server shares slots.
    pub activity: Option<Arc<TestActivity>>,
}

impl Context {
    /// A quiet context (no intervals, nothing live) starting now.
    pub fn new(paths: PathsFn, local: SocketAddr, remote: SocketAddr, scheduler: &str) -> Self {
        Self {
            paths,
            interval: Duration::ZERO,
            live: None,
            local,
            remote,
            verbose: false,
            scheduler: scheduler.to_string(),
            started: Instant::now(),
            max_silence: crate::slots::MAX_SILENCE,
            activity: None,
        }
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").field("interval", &self.interval).field("remote", &self.remote).finish()
    }
}
