#!/usr/bin/env bash
# Sets up everything Sonde needs on a fresh machine (installing only what is missing), builds
# it, and profiles the bundled demo program, printing its report.
#   scripts/setup.sh            set up, build, profile the demo
#   scripts/setup.sh --no-demo  set up and build only (what the test script uses)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

bash scripts/setup-runtime.sh
if [ -x scripts/setup-web.sh ]; then bash scripts/setup-web.sh; fi

if ! command -v cargo >/dev/null; then
    echo "setup: cargo (Rust) is required: https://rustup.rs" >&2
    exit 1
fi
echo "setup: building Sonde (release)" >&2
cargo build --release --workspace --quiet

[ "${1:-}" = "--no-demo" ] && exit 0

# shellcheck source=/dev/null
source target/sonde-env.sh
demo=target/demo
mkdir -p "$demo"
"$SONDE_MCS" -optimize+ -out:"$demo/Demo.exe" tests/apps/Demo.cs >/dev/null
printf '{"runtimeOptions":{"tfm":"net8.0","framework":{"name":"Microsoft.NETCore.App","version":"8.0.0"}}}' \
    >"$demo/Demo.runtimeconfig.json"
echo "setup: profiling the demo: sonde record -o $demo/demo.sonde -- dotnet $demo/Demo.exe" >&2
target/release/sonde record -o "$demo/demo.sonde" -- "$SONDE_DOTNET" "$demo/Demo.exe"
target/release/sonde report "$demo/demo.sonde" | head -n 60
echo "setup: full report: target/release/sonde report $demo/demo.sonde" >&2
