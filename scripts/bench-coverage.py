#!/usr/bin/env python3
"""What coverage mode costs (docs/COVERAGE.md): tests/apps/Demo.cs, a test-suite-like workload
(tokenizing, counting, sorting, a sieve, a recursive-descent parser: many small methods full of
branches), run

  coreclr                     `dotnet Demo.exe` without a profiler
  coreclr coverage            sonde record --mode coverage (the program's own code rewritten)
  coreclr coverage --all      the framework's code rewritten too (precompiled code JIT-compiled)
  mono                        `mono Demo.exe` without a profiler
  mono coverage               sonde record --mode coverage on Mono (Mono's own counters)
  mono --profile=coverage     Mono's coverage profiler, the peer on Mono

in interleaved rounds. Reports the median CPU of all processes and wall time, and each one's
slowdown against the runtime's own baseline.

    source target/sonde-env.sh; cargo build --release
    python3 scripts/bench-coverage.py [--rounds 7]
"""

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import ROOT, compile_app, cpu_of, env_file  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=7)
    a = p.parse_args()
    tools = env_file()
    work = Path(tempfile.mkdtemp(prefix="sonde-bench-coverage-"))
    exe = compile_app(tools["SONDE_MCS"], "Demo", work)
    dotnet, mono = tools["SONDE_DOTNET"], tools.get("SONDE_MONO", "mono")
    sonde = str(ROOT / "target/release/sonde")
    out = str(work / "c.sonde")
    record = [sonde, "record", "-q", "-o", out, "--force", "--mode", "coverage"]
    variants = {
        "coreclr": [dotnet, str(exe)],
        "coreclr coverage": record + ["--", dotnet, str(exe)],
        "coreclr coverage --all": record + ["--all", "--", dotnet, str(exe)],
        "mono": [mono, str(exe)],
        "mono coverage": record + ["--", mono, str(exe)],
        "mono --profile=coverage": [mono, f"--profile=coverage:output={work / 'mono-coverage.xml'}", str(exe)],
    }
    env = dict(os.environ)
    results = {k: ([], []) for k in variants}
    for cmd in variants.values():  # warm-up
        cpu_of(cmd, env)
    for _ in range(a.rounds):
        for name, cmd in variants.items():
            cpu, wall, _ = cpu_of(cmd, env)
            results[name][0].append(cpu)
            results[name][1].append(wall)
    med = {k: (statistics.median(c), statistics.median(w)) for k, (c, w) in results.items()}
    print(f"Demo.exe, {a.rounds} interleaved rounds, medians; CPU of every process of the run")
    print("| variant | CPU | wall | CPU ÷ baseline | wall ÷ baseline |")
    print("|---|---:|---:|---:|---:|")
    for name, (cpu, wall) in med.items():
        base = med["mono" if name.startswith("mono") else "coreclr"]
        print(f"| {name} | {cpu * 1000:.0f} ms | {wall * 1000:.0f} ms | {cpu / base[0]:.2f} | {wall / base[1]:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
