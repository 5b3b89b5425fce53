#!/usr/bin/env bash
# The fuzz targets in CI (issue 34): both built, the state-machine target (`conn`) run for a
# minute and the packet parsers (`packet`) for 10 s, from empty corpora. Built the way
# cargo-fuzz builds with `--sanitizer none`, on stable Rust and without it: libFuzzer's coverage
# passes (sancov, 8-bit counters, comparison tracing) on the target's code only (`--target`
# keeps them off build scripts). No sanitizer: the fuzzed crates forbid unsafe code, so a bug is
# a panic, which libFuzzer reports as a crash (the script fails; the input is kept in fuzz/artifacts).
# Usage: scripts/fuzz.sh [SECONDS for conn, default 60]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
host=$(rustc -vV | sed -n 's/^host: //p')
export RUSTFLAGS="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares"
(cd fuzz && cargo build --release --quiet --target "$host" --target-dir ../target/fuzz)
bin="target/fuzz/$host/release"
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
mkdir -p "$corpus/conn" "$corpus/packet" "$corpus/found"
# Each fuzzer's log is kept whole and its exit status checked on its own: a fuzzer that fails
# without leaving an input (it does not start, it is killed) fails the script too.
failed=""
fuzz() {
    local name=$1
    shift
    local rc=0
    "$bin/$name" "$@" >"$corpus/$name.log" 2>&1 || rc=$?
    grep -E "^(Done|stat::number_of_executed_units|stat::peak_rss_mb)|==|panicked|SUMMARY" "$corpus/$name.log" || true
    if [ "$rc" -ne 0 ]; then
        echo "fuzz target $name exited with status $rc; its log's end:" >&2
        tail -n 20 "$corpus/$name.log" >&2
        failed="$failed $name"
    fi
}
fuzz conn -max_len=65527 -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$corpus/found/" "$corpus/conn"
fuzz packet -max_total_time=10 -print_final_stats=1 -artifact_prefix="$corpus/found/" "$corpus/packet"
# A crash, an out-of-memory or a timeout leaves its input behind: fail, and keep it.
if [ -n "$(ls -A "$corpus/found")" ]; then
    mkdir -p fuzz/artifacts
    cp "$corpus/found"/* fuzz/artifacts/
    echo "fuzzing found failing inputs, kept in fuzz/artifacts/: $(ls "$corpus/found" | tr '\n' ' ')" >&2
    exit 1
fi
if [ -n "$failed" ]; then
    echo "fuzzing failed:$failed" >&2
    exit 1
fi
echo "fuzz: conn ${secs} s and packet 10 s without a failure"
