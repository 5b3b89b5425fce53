#!/usr/bin/env bash
# The phone targets type-check with a real C compiler: `cargo clippy -D warnings` of mpudp and
# the C library (mpudp-ffi) for aarch64-linux-android and aarch64-apple-ios, so that their cfg
# branches (Android's Linux driver without the NDK's headers; iOS's IP_BOUND_IF, no netlink)
# compile, and ring's C and assembly for ARMv8 compile with clang for each target. Nothing is
# linked: that needs the Android NDK (its libc and linker) and Apple's SDK, neither of which
# exists for this Linux machine. Needs clang (.ci/run installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
for target in aarch64-linux-android aarch64-apple-ios; do
    rustup target add "$target" >/dev/null
done
# ring's C and assembly include <stddef.h>, <stdint.h>, <assert.h> (for static_assert),
# <string.h> (memcpy and friends) and, for Apple, <TargetConditionals.h> besides its own headers: clang's freestanding versions of the
# first two serve any target (-nostdlibinc keeps this host's glibc headers out); the others
# stand in for the SDK's with the same declarations (ring builds with NDEBUG: assert is
# nothing). Android's API level 21 is the oldest Rust supports. For iOS, cc-rs asks xcrun for
# the SDK unless SDKROOT names one: the shim directory stands in (nothing is read from it).
shim=$(mktemp -d)
trap 'rm -rf "$shim"' EXIT
printf '#define static_assert _Static_assert\n#define assert(x) ((void)0)\n' >"$shim/assert.h"
cat >"$shim/string.h" <<'H'
#include <stddef.h>
void *memcpy(void *, const void *, size_t);
void *memmove(void *, const void *, size_t);
void *memset(void *, int, size_t);
int memcmp(const void *, const void *, size_t);
H
# Apple's SDK names the platform in <TargetConditionals.h>: an iPhone, not the simulator.
printf '#define TARGET_OS_MAC 1\n#define TARGET_OS_IPHONE 1\n#define TARGET_OS_IOS 1\n#define TARGET_OS_OSX 0\n#define TARGET_OS_SIMULATOR 0\n' >"$shim/TargetConditionals.h"
flags="-ffreestanding -nostdlibinc -isystem $shim"
CC_aarch64_linux_android="clang" CFLAGS_aarch64_linux_android="--target=aarch64-linux-android21 $flags" \
    AR_aarch64_linux_android="llvm-ar" \
    cargo clippy --quiet -p mpudp -p mpudp-ffi --target aarch64-linux-android -- -D warnings
echo "aarch64-linux-android: mpudp and mpudp-ffi type-check (ring's C compiled by clang)"
SDKROOT="$shim" CC_aarch64_apple_ios="clang" CFLAGS_aarch64_apple_ios="$flags" \
    AR_aarch64_apple_ios="llvm-ar" \
    cargo clippy --quiet -p mpudp -p mpudp-ffi --target aarch64-apple-ios -- -D warnings
echo "aarch64-apple-ios: mpudp and mpudp-ffi type-check (ring's C compiled by clang)"
