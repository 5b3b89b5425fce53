//! The Kotlin binding (bindings/kotlin, over JNA) compiled and run on the JVM: the Siri-like
//! exchange with a failover of tests/c/siri.c, from Kotlin. Needs `kotlinc` and JNA's jar
//! (Debian: kotlin, libjna-java; .ci/run installs them). Without them the test says it skips,
//! unless MPUDP_REQUIRE_KOTLIN=1 (CI sets it), where it fails. It loads the library this test
//! was built beside (a debug build), or the one in `MPUDP_FFI_LIB_DIR`: CI runs it against the
//! release library too, where undefined behaviour at the boundary shows (issue 55: a Kotlin
//! `true` crossing as a C `bool` held -1).
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

const JNA: &str = "/usr/share/java/jna.jar";
/// kotlinx-coroutines (Debian: libkotlinx-coroutines-java), for the coroutine API (Async.kt),
/// and the atomicfu classes it needs at run time (libkotlinx-atomicfu-java, which Debian's
/// package does not pull in).
const COROUTINES: &str = "/usr/share/java/kotlinx-coroutines-core.jar";
const ATOMICFU: &str = "/usr/share/java/atomicfu.jar";

fn has(cmd: &str) -> bool {
    Command::new(cmd).arg("-version").output().is_ok()
}

#[test]
fn kotlin_runs_a_siri_exchange_with_a_failover() {
    let jars = [JNA, COROUTINES, ATOMICFU];
    if !(has("kotlinc") && has("java") && jars.iter().all(|j| Path::new(j).exists())) {
        let msg = format!(
            "SKIPPED: kotlinc, java or one of {jars:?} missing \
             (apt-get install kotlin libjna-java libkotlinx-coroutines-java libkotlinx-atomicfu-java)"
        );
        assert!(std::env::var_os("MPUDP_REQUIRE_KOTLIN").is_none(), "{msg}");
        eprintln!("{msg}");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bindings/kotlin/src");
    let lib: PathBuf = match std::env::var_os("MPUDP_FFI_LIB_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => std::env::current_exe().unwrap().parent().unwrap().to_path_buf(),
    };
    let so = lib.join("libmpudp_ffi.so");
    assert!(so.exists(), "no library at {}", so.display());
    println!("library: {}", so.display());
    let jar = std::env::temp_dir().join(format!("mpudp-kotlin-{}.jar", std::process::id()));
    let out = Command::new("kotlinc")
        .arg(root.join("main/kotlin/mpudp/MpUdp.kt"))
        .arg(root.join("main/kotlin/mpudp/Async.kt"))
        .arg(root.join("test/kotlin/SiriTest.kt"))
        .arg(root.join("test/kotlin/AsyncTest.kt"))
        .arg(root.join("test/kotlin/FailoverApp.kt"))
        .args(["-nowarn", "-cp", &format!("{JNA}:{COROUTINES}"), "-d"])
        .arg(&jar)
        .output()
        .unwrap();
    assert!(out.status.success(), "kotlinc: {}", String::from_utf8_lossy(&out.stderr));
    let kotlin_stdlib = ["/usr/share/java/kotlin-stdlib.jar", "/usr/share/kotlin/lib/kotlin-stdlib.jar"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("/usr/share/java/kotlin-stdlib.jar");
    let cp = format!("{}:{JNA}:{COROUTINES}:{ATOMICFU}:{kotlin_stdlib}", jar.display());
    let run = |main: &str| {
        let out = Command::new("java")
            .arg(format!("-Djna.library.path={}", lib.display()))
            .args(["-cp", &cp, main])
            .output()
            .unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        println!("{main}:\n{text}");
        out.status.success() && text.trim_end().ends_with("ok")
    };
    let (siri, coroutines, app) = (run("SiriTestKt"), run("AsyncTestKt"), run("FailoverAppKt"));
    let _ = std::fs::remove_file(&jar);
    assert!(siri, "the Siri-like exchange failed (output above)");
    assert!(coroutines, "the coroutines' test failed (output above)");
    assert!(app, "the app of issue 55 (20 connections, WiFi down and up) failed (output above)");
}
