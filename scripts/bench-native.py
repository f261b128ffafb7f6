#!/usr/bin/env python3
"""What tracing a native program through its compiler-inserted hooks costs (docs/NATIVE.md):
Sonde against uftrace, the Linux peer that uses the same `-finstrument-functions` hooks.

Builds tests/apps/native/hot.c with `gcc -O2 -finstrument-functions` (3N calls of tiny functions)
and runs it with no profiler (glibc's empty hooks), under `sonde record` (tracing, exact timing)
with its call trace (`--call-trace`: each thread's latest 65,536 events in a ring) and under
`uftrace record` (its default: every call to a trace file, read afterwards by `uftrace
report`), in interleaved rounds. Reports the median CPU of all processes and wall time, and the
cost per call over no profiler; checks that both tools count the same calls per function.

    source target/sonde-env.sh; cargo build --release
    python3 scripts/bench-native.py [--rounds 7] [--n 3000000] [--other OTHER/target/release/sonde]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import ROOT, cpu_of  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--n", type=int, default=3000000)
    p.add_argument("--other", help="another build's sonde binary (its agent beside it) to compare in the same "
                                   "interleaved rounds, e.g. the previous commit's target/release/sonde")
    a = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sonde-bench-native-"))
    exe = work / "hot"
    subprocess.run(["gcc", "-O2", "-finstrument-functions", "-o", str(exe), str(ROOT / "tests/apps/native/hot.c")],
                   check=True)
    sonde = str(ROOT / "target/release/sonde")
    out = str(work / "p.sonde")
    trace = str(work / "uftrace.data")
    variants = {
        "no profiler": [str(exe)],
        "sonde record (tracing, exact)": [sonde, "record", "-q", "-o", out, "--force", "--", str(exe)],
        "sonde record --call-trace": [sonde, "record", "-q", "-o", str(work / "t.sonde"), "--force", "--call-trace",
                                      "--", str(exe)],
        "uftrace record": ["uftrace", "record", "-d", trace, str(exe)],
    }
    envs = {name: dict(os.environ) for name in variants}
    if a.other:
        name = "sonde record, other build"
        variants[name] = [a.other] + variants["sonde record (tracing, exact)"][1:]
        envs[name] = dict(os.environ)
    sizes = (0, a.n)
    results = {k: {n: ([], []) for n in sizes} for k in variants}
    for name, cmd in variants.items():  # warm-up
        cpu_of(cmd + [str(a.n)], envs[name])
    for _ in range(a.rounds):
        for n in sizes:
            for name, cmd in variants.items():
                cpu, wall, _ = cpu_of(cmd + [str(n)], envs[name])
                results[name][n][0].append(cpu)
                results[name][n][1].append(wall)
    calls = 3 * a.n
    med = {k: {n: (statistics.median(v[n][0]), statistics.median(v[n][1])) for n in sizes} for k, v in results.items()}
    work = {k: (m[a.n][0] - m[0][0], m[a.n][1] - m[0][1]) for k, m in med.items()}
    base_cpu, base_wall = work["no profiler"]
    print(f"hot {a.n} ({calls:,} calls), gcc -O2 -finstrument-functions, {a.rounds} interleaved rounds, medians;"
          " start-up = the run with 0 calls, calls = the difference")
    print("| variant | start-up CPU (all processes) | CPU of the calls | wall of the calls | CPU per call over none |"
          " wall per call over none |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, (c, w) in work.items():
        print(f"| {name} | {med[name][0][0] * 1000:.0f} ms | {c * 1000:.0f} ms | {w * 1000:.0f} ms | "
              f"{(c - base_cpu) / calls * 1e9:.1f} ns | {(w - base_wall) / calls * 1e9:.1f} ns |")
    # The same counts from both tools.
    cpu_of(variants["sonde record (tracing, exact)"] + [str(a.n)], dict(os.environ))
    cpu_of(variants["uftrace record"] + [str(a.n)], dict(os.environ))
    report = subprocess.run([sonde, "report", out, "--format", "json"], check=True, capture_output=True, text=True)
    import json
    sonde_calls = {m["name"].split("!")[-1]: m["calls"] for m in json.loads(report.stdout)["methods"]}
    uf = subprocess.run(["uftrace", "report", "-d", trace, "-f", "call"], check=True, capture_output=True, text=True)
    uf_calls = {}
    for line in uf.stdout.splitlines():
        m = re.match(r"\s*(\d+)\s+(\S+)$", line)
        if m:
            uf_calls[m.group(2)] = int(m.group(1))
    print("\ncalls per function: sonde", {k: sonde_calls.get(k) for k in ("main", "mid", "leaf")},
          "uftrace", {k: uf_calls.get(k) for k in ("main", "mid", "leaf")})


if __name__ == "__main__":
    sys.exit(main())
