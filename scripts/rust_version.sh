#!/usr/bin/env bash
# Prints the workspace's declared `rust-version` (Cargo.toml), which CI builds the published
# crates with.
set -euo pipefail
cd "$(dirname "$0")/.."
sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml
