//! The C ABI from C and from Python (ctypes): each runs a Siri-like exchange over two loopback
//! paths with a failover (tests/c/siri.c, tests/python/siri.py), against the shared library
//! cargo built for these tests.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

/// The directory holding the `libmpudp_ffi.so` built with this test: the test binary's own
/// (`target/<profile>/deps`; the copy one level up is refreshed only by `cargo build`).
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().to_path_buf();
    assert!(dir.join("libmpudp_ffi.so").exists(), "no libmpudp_ffi.so in {}", dir.display());
    dir
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    println!("{text}");
    assert!(out.status.success(), "{cmd:?} failed: {text}");
    text
}

#[test]
fn a_c_program_runs_a_siri_exchange_with_a_failover() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let lib = lib_dir();
    let exe = std::env::temp_dir().join(format!("mpudp-siri-c-{}", std::process::id()));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    run(Command::new(cc)
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-D_POSIX_C_SOURCE=200809L", "-o"])
        .arg(&exe)
        .arg(format!("{dir}/tests/c/siri.c"))
        .arg(format!("-I{dir}/include"))
        .arg(format!("-L{}", lib.display()))
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-lmpudp_ffi", "-lpthread"]));
    // cargo's LD_LIBRARY_PATH names target/<profile> too, whose copy of the library may be
    // older than this test's: the library is the one built with the test.
    let out = run(Command::new(&exe).env("LD_LIBRARY_PATH", &lib));
    let _ = std::fs::remove_file(&exe);
    assert!(out.trim_end().ends_with("ok"), "{out}");
}

#[test]
fn python_runs_a_siri_exchange_with_a_failover() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let lib = lib_dir().join("libmpudp_ffi.so");
    let out = run(Command::new("python3").arg(format!("{dir}/tests/python/siri.py")).arg(lib));
    assert!(out.trim_end().ends_with("ok"), "{out}");
}
