//! `Options::qlog_dir`: every connection's qlog event log (PROTOCOL.md §13) in a file of its
//! own, `DIR/<client|server>-<endpoint start, unix ms>-<endpoint number>-<connection>.sqlog`,
//! appended after each round of the driver and closed when the endpoint forgets the
//! connection (its last records included, however it ended).
//!
//! The records are taken under the endpoint's lock and written through a 64 KiB buffer per
//! file, so a round costs a system call only when a buffer fills (or a connection closes). A
//! file that cannot be written is counted and given up; the connection is not affected.

use mpcore::{ConnHandle, Endpoint, Side};
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug)]
pub(crate) struct QlogFiles {
    dir: PathBuf,
    /// The endpoint's start (unix ms) and its number among this process's endpoints: two
    /// endpoints writing to one directory (the cores of one server) never share a file name.
    stamp: u128,
    seq: u64,
    files: HashMap<ConnHandle, Option<BufWriter<File>>>,
    buf: Vec<u8>,
    handles: Vec<ConnHandle>,
    /// Files that could not be created or written.
    pub(crate) errors: u64,
}

impl QlogFiles {
    pub(crate) fn new(dir: PathBuf) -> std::io::Result<Self> {
        std::fs::create_dir_all(&dir)?;
        let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
        static ENDPOINTS: AtomicU64 = AtomicU64::new(0);
        let seq = ENDPOINTS.fetch_add(1, Ordering::Relaxed);
        Ok(Self { dir, stamp, seq, files: HashMap::new(), buf: Vec::new(), handles: Vec::new(), errors: 0 })
    }

    /// Appends what every connection logged since the last call to its file, and the last
    /// records of those forgotten since.
    pub(crate) fn collect(&mut self, ep: &mut Endpoint) {
        self.handles.clear();
        self.handles.extend(ep.handles());
        for k in 0..self.handles.len() {
            let h = self.handles[k];
            let Some(c) = ep.conn_mut(h) else { continue };
            self.buf.clear();
            c.take_qlog(&mut self.buf);
            let side = if c.side() == Side::Client { "client" } else { "server" };
            // A closed connection's log is complete but for its drain: on disk at once.
            let closed = c.is_closed();
            let buf = std::mem::take(&mut self.buf);
            self.write(h, side, &buf, closed);
            self.buf = buf;
        }
        for (h, tail) in ep.take_forgotten_qlogs() {
            // Its file exists unless its whole log came now (it never had a round of its own).
            let side = if ep.is_server() { "server" } else { "client" };
            self.write(h, side, &tail, true);
        }
    }

    fn write(&mut self, h: ConnHandle, side: &str, records: &[u8], flush: bool) {
        if records.is_empty() {
            return;
        }
        let (dir, stamp, seq) = (&self.dir, self.stamp, self.seq);
        let file = self.files.entry(h).or_insert_with(|| {
            let path = dir.join(format!("{side}-{stamp}-{seq}-{h}.sqlog"));
            File::create(&path)
                .map_err(|e| tracing::warn!(path = %path.display(), error = %e, "qlog file not created"))
                .ok()
                .map(|f| BufWriter::with_capacity(64 << 10, f))
        });
        let failed = match file {
            Some(f) => f.write_all(records).is_err() || (flush && f.flush().is_err()),
            None => true,
        };
        if failed {
            self.errors += 1;
            *file = None;
        }
    }

    /// Connection `h` was forgotten: its file is complete.
    pub(crate) fn finish(&mut self, h: ConnHandle) {
        if let Some(Some(mut f)) = self.files.remove(&h) {
            if f.flush().is_err() {
                self.errors += 1;
            }
        }
    }
}

impl Drop for QlogFiles {
    fn drop(&mut self) {
        for f in self.files.values_mut().flatten() {
            let _ = f.flush();
        }
    }
}
