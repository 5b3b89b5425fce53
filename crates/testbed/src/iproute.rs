//! iproute2, run as a command.

use std::process::Command;

/// Runs `ip ARGS` (split on whitespace); its stderr on failure.
pub fn ip(args: &str) -> Result<(), String> {
    let out = Command::new("ip").args(args.split_whitespace()).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {args}: {}", String::from_utf8_lossy(&out.stderr).trim()))
    }
}
