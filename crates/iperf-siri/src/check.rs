//! What the command line is checked for before anything runs, beyond each value's own
//! parser: flags given to the wrong side, values that would run an empty test, and output
//! paths that could not be written at the end.

use crate::cli::{Cli, RunArgs};
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory};
use std::path::Path;
use std::time::Duration;

/// Flags only a client takes (a server follows the client's test parameters).
const CLIENT_ONLY: &[&str] = &[
    "time",
    "bytes",
    "reverse",
    "subflows",
    "path_manager",
    "fast_join",
    "oracle_period",
    "sloss",
    "connect_timeout",
    "server_keys",
    "insecure",
    "resume",
    "test_id",
    "plot",
    "protocol_version",
    "mode",
    "requests",
    "bursts",
    "writes",
    "write_size",
    "burst_bytes",
    "burst_gap",
    "wait",
    "response_bytes",
    "ir_bytes",
    "no_ir",
    "seed",
];

/// Flags only a server takes.
const SERVER_ONLY: &[&str] = &["bind", "one_off", "key", "max_tests", "max_silence"];

/// How a flag is written (`-n/--bytes`), from its id.
fn flag(id: &str) -> String {
    let cmd = Cli::command();
    let Some(a) = cmd.get_arguments().find(|a| a.get_id() == id) else { return id.to_string() };
    match (a.get_short(), a.get_long()) {
        (Some(s), Some(l)) => format!("-{s}/--{l}"),
        (None, Some(l)) => format!("--{l}"),
        (Some(s), None) => format!("-{s}"),
        (None, None) => id.to_string(),
    }
}

/// Refuses a flag given to the side that does not take it.
pub fn roles(args: &RunArgs, m: &ArgMatches) -> Result<(), String> {
    let given = |id: &str| m.value_source(id) == Some(ValueSource::CommandLine);
    if args.server {
        if let Some(id) = CLIENT_ONLY.iter().find(|id| given(id)) {
            return Err(format!("{} is a client option; a server follows the test the client asks for", flag(id)));
        }
    } else if args.client.is_some() {
        if let Some(id) = SERVER_ONLY.iter().find(|id| given(id)) {
            return Err(format!("{} is a server option (with -s)", flag(id)));
        }
    }
    Ok(())
}

/// Refuses values that would run an empty test or disable something silently, and an
/// output file that could not be written once the test has run.
pub fn values(args: &RunArgs) -> Result<(), String> {
    let zero = |what: &str| Err(format!("{what} must be more than 0"));
    if args.time == Some(Duration::ZERO) {
        return zero("-t/--time");
    }
    if args.bytes == Some(0) {
        return zero("-n/--bytes");
    }
    if args.workload.burst_bytes == Some(0) {
        return zero("--burst-bytes");
    }
    if args.resume && args.workload.mode != "siri" {
        return Err("--resume runs Siri-like requests, one per connection: it takes no --mode bulk".into());
    }
    if args.connect_timeout.is_zero() {
        return zero("--connect-timeout");
    }
    if args.oracle_period < Duration::from_millis(1) {
        return Err("--oracle-period must be at least 1ms".into());
    }
    if let Some(p) = &args.plot {
        writable("--plot", p)?;
    }
    if let Some(p) = &args.timeline {
        writable("--timeline", p)?;
    }
    Ok(())
}

/// Whether `path` can be written, without leaving a file behind if there was none.
pub fn writable(what: &str, path: &Path) -> Result<(), String> {
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| format!("{what} {}: {e}", path.display()))?;
    if !existed {
        let _ = std::fs::remove_file(path);
    }
    Ok(())
}
