#!/usr/bin/env bash
# Runs every test of the project against real runtimes: sets up what is missing (no demo),
# builds the workspace (the agent library must sit next to the `sonde` binary the tests run),
# then runs the tests. A missing runtime makes the tests fail, never skip.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/setup.sh --no-demo
# shellcheck source=/dev/null
source target/sonde-env.sh
cargo build --workspace --quiet
cargo test --workspace
