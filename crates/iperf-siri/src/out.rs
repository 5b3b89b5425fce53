//! Where output goes: stdout or `--logfile`, shared by the interval reporter and the summary.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Something was written on standard output (for `-J`'s error object: written only when
/// nothing else was, so that stdout stays JSON documents).
static STDOUT_USED: AtomicBool = AtomicBool::new(false);

/// Whether anything was written on standard output through an [`Out`].
pub fn stdout_used() -> bool {
    STDOUT_USED.load(Ordering::Relaxed)
}

#[derive(Clone)]
pub struct Out(Arc<Mutex<Box<dyn Write + Send>>>, bool);

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Out")
    }
}

impl Out {
    pub fn stdout() -> Self {
        Self(Arc::new(Mutex::new(Box::new(std::io::stdout()))), true)
    }

    /// Appends to `path` (as iperf3's `--logfile`).
    pub fn file(path: &std::path::Path) -> std::io::Result<Self> {
        let f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self(Arc::new(Mutex::new(Box::new(f))), false))
    }

    /// Writes `text` and a newline; output errors (a closed pipe) are ignored, as a
    /// measurement must not fail for them.
    pub fn line(&self, text: &str) {
        if self.1 {
            STDOUT_USED.store(true, Ordering::Relaxed);
        }
        let mut w = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(w, "{text}");
        let _ = w.flush();
    }
}
