//! What the table-printing benches read of a process from Linux's `/proc` (0 elsewhere): its
//! resident memory, and a process's or a thread's CPU time.
#![allow(dead_code)] // each bench uses a part

/// This process's resident memory, KiB.
pub fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    statm.split_whitespace().nth(1).and_then(|p| p.parse::<u64>().ok()).unwrap_or(0) * 4
}

/// The CPU time (user and system) of the process or thread whose `/proc` directory is `dir`
/// (`/proc/PID`, `/proc/PID/task/TID`), seconds.
pub fn cpu_seconds(dir: &std::path::Path) -> f64 {
    let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |r| r.1);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| f.get(n - 3).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    (field(14) + field(15)) as f64 / 100.0
}

/// Process `pid`'s CPU time, seconds.
pub fn process_cpu(pid: u32) -> f64 {
    cpu_seconds(&std::path::Path::new("/proc").join(pid.to_string()))
}

/// The calling thread's `/proc` directory, for [`cpu_seconds`] from another thread.
pub fn this_thread() -> Option<std::path::PathBuf> {
    std::fs::read_link("/proc/thread-self").ok().map(|t| std::path::Path::new("/proc").join(t))
}
