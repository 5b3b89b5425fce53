#!/usr/bin/env bash
# The protocol on a phone's CPU: cross-builds for aarch64-unknown-linux-gnu and runs, under
# qemu-user, the tests of the protocol crates (mpcore, scheduler, fastjoin, oracle, mpsim but
# its hour-long `day`, which .ci/run runs once),
# mpudp's loopback and allocation tests, and the C ABI's test program: the state machine, its crypto (ring's ARMv8 code) and
# the zero-allocation hot paths on ARM64. Release build (debug code under qemu is 5-10x slower);
# the debug-only overflow checks run natively in the main test command.
#
# Needs gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user (.ci/run installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/aarch64_env.sh
# The whole workspace builds for ARM64 (its libraries, the binary and the C library)...
cargo build --release --target "$target" --workspace --quiet
# ...and its protocol runs there.
cargo test --release --target "$target" -p mpudp-core -p mpudp-scheduler -p mpudp-fastjoin -p mpudp-oracle
# mpsim's tests, but for `day` (an hour of a phone's life: .ci/run runs it once, natively).
mpsim_tests=()
for t in crates/mpsim/tests/*.rs; do
    name=$(basename "$t" .rs)
    [ "$name" = day ] || mpsim_tests+=(--test "$name")
done
cargo test --release --target "$target" -p mpsim --lib "${mpsim_tests[@]}"
cargo test --release --target "$target" -p mpudp --test loopback --test no_alloc
# The C library as an app on an ARM64 Linux device links it: the C test program against the
# cross-built libmpudp_ffi.so, run under qemu (the Siri-like exchange with a failover).
lib="target/$target/release"
exe=$(mktemp)
trap 'rm -f "$exe"' EXIT
aarch64-linux-gnu-gcc -std=c11 -Wall -Wextra -Werror -D_POSIX_C_SOURCE=200809L -o "$exe" \
    crates/mpudp-ffi/tests/c/siri.c -Icrates/mpudp-ffi/include -L"$lib" -lmpudp_ffi -lpthread
LD_LIBRARY_PATH="$lib" qemu-aarch64 -L /usr/aarch64-linux-gnu "$exe"
echo "aarch64: the workspace builds; the protocol crates' tests, mpudp's loopback and allocation tests and the C ABI's test program pass under qemu"
