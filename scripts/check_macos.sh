#!/usr/bin/env bash
# Type-checks the driver, the binary and the C library for macOS (`cargo check --target x86_64-apple-darwin`):
# the cfg-gated parts (IP_BOUND_IF instead of SO_BINDTODEVICE, no netlink, a pipe for readiness
# instead of an eventfd) must compile there.
# ring's build script compiles C for the target, which needs Apple's SDK; a check never links,
# so a stand-in compiler that writes empty objects lets it through. Skips (saying so) when the
# target's standard library cannot be installed, except where MPUDP_REQUIRE_MACOS is set (CI):
# there it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! rustup target add x86_64-apple-darwin >/dev/null 2>&1; then
    # Where it must run (`MPUDP_REQUIRE_MACOS`, as .ci/run sets), that is a failure.
    if [ -n "${MPUDP_REQUIRE_MACOS:-}" ]; then
        echo "MPUDP_REQUIRE_MACOS is set and the x86_64-apple-darwin standard library could not be installed" >&2
        exit 1
    fi
    echo "skipped: the x86_64-apple-darwin standard library could not be installed"
    exit 0
fi
stub=$(mktemp -d)
trap 'rm -rf "$stub"' EXIT
cat >"$stub/cc" <<'CC'
#!/bin/sh
out=""
while [ $# -gt 0 ]; do case "$1" in -o) out="$2"; shift;; esac; shift; done
[ -n "$out" ] && : > "$out"
exit 0
CC
cat >"$stub/ar" <<'AR'
#!/bin/sh
for a in "$@"; do case "$a" in *.a) : > "$a";; esac; done
exit 0
AR
chmod +x "$stub/cc" "$stub/ar"
CC_x86_64_apple_darwin="$stub/cc" AR_x86_64_apple_darwin="$stub/ar" \
    cargo clippy -p mpudp -p iperf-siri -p mpudp-ffi --target x86_64-apple-darwin -- -D warnings
echo "macOS: mpudp, iperf-siri and mpudp-ffi type-check"
