#!/usr/bin/env bash
# Provides what the HTML report's browser test (crates/cli/tests/html_report.rs), the page-script
# lint and model check (crates/render/tests/page_script.rs) and the export validators in tests/js
# need, installing only what is missing:
#   - node and npm: Debian's `nodejs` and `npm`;
#   - a browser: Debian's `chromium` at /usr/bin/chromium (playwright-core drives it; no
#     browser is ever downloaded by npm or playwright);
#   - the pinned npm packages of tests/js (`npm ci` from package-lock.json), when node_modules
#     is missing or older than the lock file.
# Run as root, or as a user with sudo, for the apt-get part.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
say() { printf 'setup-web: %s\n' "$*" >&2; }

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        say "need root to run: $*"; return 1; fi
}

apt_updated=
apt_install() {
    if [ -z "$apt_updated" ]; then as_root apt-get update -qq >/dev/null; apt_updated=1; fi
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

missing=()
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
[ -x /usr/bin/chromium ] || missing+=(chromium)
if [ ${#missing[@]} -gt 0 ]; then
    say "installing Debian's ${missing[*]}"
    apt_install "${missing[@]}"
fi
[ -x /usr/bin/chromium ] || { say "/usr/bin/chromium is still missing after installing chromium"; exit 1; }
say "node: $(command -v node) ($(node --version)); chromium: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"

js="$root/tests/js"
stamp="$js/node_modules/.package-lock.json" # npm rewrites it on every install
if [ ! -f "$stamp" ] || [ "$js/package-lock.json" -nt "$stamp" ] || [ "$js/package.json" -nt "$stamp" ]; then
    say "installing the npm packages of tests/js (npm ci)"
    (cd "$js" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
else
    say "tests/js/node_modules is up to date"
fi
