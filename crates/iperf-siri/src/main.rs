//! `iperf-siri`: Siri-like request/response delay measurement (issue 8).
//!
//! The measurement tool needs the connection state machine and the driver, which are not built
//! yet. Until then the binary reports its version and refuses every other invocation with a
//! one-line message and exit code 2, never pretending to measure.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("-v") | Some("--version") => {
            println!(
                "iperf-siri {} (protocol version {:#010x})",
                env!("CARGO_PKG_VERSION"),
                mpcore::wire::packet::VERSION_1
            );
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!("iperf-siri: the measurement modes are not implemented yet (see issue 8); try --version");
            ExitCode::from(2)
        }
    }
}
