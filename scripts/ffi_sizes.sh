#!/usr/bin/env bash
# The C library's size as an Android app ships it (issue 58): built for aarch64 Linux (Android's
# ABI is alike) in release, stripped, with the default features and with none
# (`--no-default-features`: no TCP carrier, no qlog), and with none under the small profile
# (`opt-level = "s"`, fat LTO, one codegen unit; its own target directory). Prints a table. Needs
# gcc-aarch64-linux-gnu and libc6-dev-arm64-cross (.ci/run installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/aarch64_env.sh
out=$(mktemp -d)
build() { # name, cargo arguments...
    local name=$1
    shift
    cargo build --quiet --release --target "$target" -p mpudp-ffi "$@"
    aarch64-linux-gnu-strip -o "$out/$name.so" "${CARGO_TARGET_DIR:-target}/$target/release/libmpudp_ffi.so"
}
build default
build minimal --no-default-features
CARGO_PROFILE_RELEASE_OPT_LEVEL=s CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 \
    CARGO_TARGET_DIR=target/small build minimal-small --no-default-features
CARGO_PROFILE_RELEASE_OPT_LEVEL=s CARGO_PROFILE_RELEASE_LTO=fat CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 \
    CARGO_TARGET_DIR=target/small build default-small
echo "| libmpudp_ffi.so, aarch64, stripped | bytes | MB |"
echo "|---|---|---|"
for n in default minimal default-small minimal-small; do
    b=$(stat -c %s "$out/$n.so")
    printf '| %s | %d | %.2f |\n' "$n" "$b" "$(echo "$b / 1000000" | bc -l)"
done
rm -rf "$out"
