//! Every app-facing option of `mpudp::Options` is reachable from C, Kotlin and Swift, or is
//! listed in bindings/README.md as Rust-only with its reason (issue 55). A builder method added
//! to `Options` without its entry here fails this test; so does an entry whose C function is
//! missing from the header, or that a binding does not call.

use std::collections::BTreeSet;

/// Each `Options` method: the C functions that reach it, or none (Rust-only, in the README).
const COVERAGE: &[(&str, &[&str])] = &[
    ("new", &["mpu_options_new"]),
    ("phone", &["mpu_options_new"]),
    ("server", &["mpu_options_new"]),
    ("interface", &["mpu_options_add_device", "mpu_options_add_address", "mpu_options_add_fd"]),
    ("tickets", &["mpu_options_tickets"]),
    ("issue_tickets", &["mpu_options_issue_tickets"]),
    ("scheduler", &["mpu_options_scheduler"]),
    ("interface_order", &["mpu_options_interface_order"]),
    ("path_manager", &["mpu_options_path_manager"]),
    ("oracle", &["mpu_options_oracle"]),
    ("prewarm", &["mpu_options_prewarm"]),
    ("congestion", &["mpu_options_congestion"]),
    ("idle_timeout", &["mpu_options_idle_timeout"]),
    ("peer_timeout", &["mpu_options_peer_timeout"]),
    ("keep_alive", &["mpu_options_keep_alive"]),
    ("recv_window", &["mpu_options_recv_window"]),
    ("fast_join", &["mpu_options_fast_join"]),
    ("server_key", &["mpu_options_server_key"]),
    ("insecure_unauthenticated_server", &["mpu_options_insecure_unauthenticated_server"]),
    ("identity", &["mpu_options_identity_pem", "mpu_options_identity_seed"]),
    ("announce", &["mpu_options_announce"]),
    ("monitor_interval", &["mpu_options_monitor_interval"]),
    ("socket_buffer", &["mpu_options_buffers"]),
    ("send_buffer", &["mpu_options_buffers"]),
    ("connect_timeout", &["mpu_options_connect_timeout"]),
    ("other_paths_after", &["mpu_options_other_paths_after"]),
    ("tcp_fallback", &["mpu_options_tcp_fallback"]),
    ("ipv6", &["mpu_options_ipv6"]),
    ("tcp_socket_hook", &["mpu_options_tcp_socket_callback"]),
    ("without_tcp_socket_hook", &["mpu_options_tcp_socket_callback"]),
    ("qlog_dir", &["mpu_options_qlog_dir"]),
    // The library's threads (the default) or the app's calls (an endpoint with no thread).
    ("driver_thread", &["mpu_options_drive_in_calls"]),
    ("driver_thread_choice", &["mpu_options_drive_in_calls"]),
    // Rust-only; bindings/README.md says why.
    ("custom_scheduler", &[]),
    ("config_all", &[]),
    ("config", &[]),
    ("config_mut", &[]),
];

fn read(rel: &str) -> String {
    let path = format!("{}/../../{rel}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The `pub fn` names of every `impl Options` block of mpudp's options.rs.
fn options_methods() -> BTreeSet<String> {
    let src = read("crates/mpudp/src/options.rs");
    let mut names = BTreeSet::new();
    let mut rest = src.as_str();
    while let Some(at) = rest.find("\nimpl Options {") {
        let body = &rest[at + 15..];
        let mut depth = 1usize;
        let end = body
            .char_indices()
            .find(|&(_, c)| {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                depth == 0
            })
            .map_or(body.len(), |(i, _)| i);
        for line in body[..end].lines() {
            if let Some(name) = line.strip_prefix("    pub fn ").and_then(|l| l.split(['(', '<']).next()) {
                names.insert(name.to_string());
            }
        }
        rest = &body[end..];
    }
    names
}

#[test]
fn every_option_is_reachable_from_c_kotlin_and_swift_or_said_rust_only() {
    let methods = options_methods();
    assert!(methods.len() > 30, "options.rs parsed: {methods:?}");
    let listed: BTreeSet<String> = COVERAGE.iter().map(|(m, _)| m.to_string()).collect();
    let missing: Vec<_> = methods.difference(&listed).collect();
    assert!(missing.is_empty(), "Options methods without their C call (or a Rust-only entry): {missing:?}");
    let stale: Vec<_> = listed.difference(&methods).collect();
    assert!(stale.is_empty(), "entries for methods Options no longer has: {stale:?}");

    let header = read("crates/mpudp-ffi/include/mpudp.h");
    let kotlin = read("bindings/kotlin/src/main/kotlin/mpudp/MpUdp.kt");
    let swift = read("bindings/swift/Sources/MpUdp/MpUdp.swift");
    let readme = read("bindings/README.md");
    for (method, calls) in COVERAGE {
        if calls.is_empty() {
            assert!(
                readme.contains(&format!("`Options::{method}`")),
                "bindings/README.md does not say why {method} is Rust-only"
            );
        }
        for call in *calls {
            assert!(header.contains(&format!(" {call}(")), "{method}: {call} is not in mpudp.h");
            assert!(kotlin.contains(&format!("lib.{call}(")), "{method}: the Kotlin binding never calls {call}");
            assert!(swift.contains(&format!("{call}(")), "{method}: the Swift binding never calls {call}");
        }
    }
}
