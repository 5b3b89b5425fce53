//! Where output goes: stdout or `--logfile`, shared by the interval reporter and the summary.

use std::io::Write;
use std::sync::{Arc, Mutex};

#[derive(Clone)]
pub struct Out(Arc<Mutex<Box<dyn Write + Send>>>);

impl std::fmt::Debug for Out {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Out")
    }
}

impl Out {
    pub fn stdout() -> Self {
        Self(Arc::new(Mutex::new(Box::new(std::io::stdout()))))
    }

    /// Appends to `path` (as iperf3's `--logfile`).
    pub fn file(path: &std::path::Path) -> std::io::Result<Self> {
        let f = std::fs::OpenOptions::new().create(true).append(true).open(path)?;
        Ok(Self(Arc::new(Mutex::new(Box::new(f)))))
    }

    /// Writes `text` and a newline; output errors (a closed pipe) are ignored, as a
    /// measurement must not fail for them.
    pub fn line(&self, text: &str) {
        let mut w = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(w, "{text}");
        let _ = w.flush();
    }
}
