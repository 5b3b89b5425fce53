# Sourced by the scripts that cross-build for aarch64 Linux (arm64.sh, ffi_sizes.sh): the
# target, its linker and C toolchain (gcc-aarch64-linux-gnu), and qemu to run its binaries.
target=aarch64-unknown-linux-gnu
rustup target add "$target" >/dev/null
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc
export AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"
