#!/usr/bin/env bash
# The protocol on a phone's CPU: cross-builds for aarch64-unknown-linux-gnu and runs, under
# qemu-user, the tests of the protocol crates (mpcore, scheduler, fastjoin, oracle, mpsim) and
# mpudp's loopback and allocation tests: the state machine, its crypto (ring's ARMv8 code) and
# the zero-allocation hot paths on ARM64. Release build (debug code under qemu is 5-10x slower);
# the debug-only overflow checks run natively in the main test command.
#
# Needs gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user (.ci/run installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
target=aarch64-unknown-linux-gnu
rustup target add "$target" >/dev/null
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc
export AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"
# The whole workspace builds for ARM64 (its libraries, the binary and the C library)...
cargo build --release --target "$target" --workspace --quiet
# ...and its protocol runs there.
cargo test --release --target "$target" -p mpcore -p scheduler -p fastjoin -p oracle -p mpsim
cargo test --release --target "$target" -p mpudp --test loopback --test no_alloc
echo "aarch64: the workspace builds; the protocol crates' tests and mpudp's loopback and allocation tests pass under qemu"
