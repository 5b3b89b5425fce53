#!/usr/bin/env bash
# The public API baseline (issue 58): cargo-semver-checks (from the registry; installed here if
# missing) compares each published library crate with the baseline, the git revision in
# `.semver-baseline` (or the first argument): the last release. An accidental break of the
# API (a removed item, a field added to a struct built by literal, a feature that no longer
# turns on what it did) fails with the lint's name and the item; an intended one is a minor
# version bump before 1.0 (then move the baseline to the release's commit). With the default
# features, as an app that names none builds it: a feature that no longer turns on by default
# is a break.
#
# Not a CI stage: installing the tool compiles about 400 crates (15 minutes on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
rev=${1:-$(cat .semver-baseline)}
command -v cargo-semver-checks >/dev/null || cargo install --locked cargo-semver-checks
status=0
for p in mpudp-scheduler mpudp-oracle mpudp-fastjoin mpudp-core mpudp mpudp-linkemu; do
    echo "== $p against $rev"
    cargo semver-checks check-release -p "$p" --baseline-rev "$rev" --default-features || status=1
done
exit $status
