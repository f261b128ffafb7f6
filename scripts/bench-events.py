#!/usr/bin/env python3
"""What the runtime events (docs/EVENTS.md) cost a program that throws and collects a lot.

Runs tests/apps/Events.exe N (N + N + N/2 exceptions thrown and caught, 10 induced collections,
64 MB allocated) with no profiler, under a Sonde build from before the events (`--before DIR`,
a release `sonde` built from an earlier commit), and under this build, all in sampling mode at the
default rate, in interleaved rounds. Reports the median wall time and the median CPU time of the
whole process tree (user + system, `RUSAGE_CHILDREN`: the program, the agent's threads and the
controller), and each as a ratio to no profiler. This build also runs with `--events none`
(sampling alone).

    source target/sonde-env.sh
    python3 scripts/bench-events.py [--before /tmp/wt-prev/target/release/sonde] [--mono] [--rounds 11] [--n 20000]
"""

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import ROOT, compile_app, cpu_of  # noqa: E402


def run(cmd):
    cpu, wall, _ = cpu_of(cmd, dict(os.environ))
    return wall, cpu


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--before", help="a release `sonde` built before the events (optional)")
    p.add_argument("--mono", action="store_true")
    p.add_argument("--rounds", type=int, default=11)
    p.add_argument("--n", type=int, default=20000)
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="sonde-bench-events-")
    exe = str(compile_app(os.environ["SONDE_MCS"], "Events", Path(work)))
    runtime = os.environ["SONDE_MONO"] if a.mono else os.environ["SONDE_DOTNET"]
    program = [runtime, exe, str(a.n)]
    out = os.path.join(work, "p.sonde")
    now = str(ROOT / "target/release/sonde")
    variants = {"no profiler": program}
    if a.before:
        variants["before (no events)"] = [a.before, "record", "-q", "-o", out, "--force", "--", *program]
    variants["--events none"] = [now, "record", "-q", "-o", out, "--force", "--events", "none", "--", *program]
    variants["with events"] = [now, "record", "-q", "-o", out, "--force", "--", *program]
    results = {k: ([], []) for k in variants}
    for _ in range(2):  # warm-up
        for cmd in variants.values():
            run(cmd)
    for _ in range(a.rounds):
        for name, cmd in variants.items():
            wall, cpu = run(cmd)
            results[name][0].append(wall)
            results[name][1].append(cpu)
    base_wall = statistics.median(results["no profiler"][0])
    base_cpu = statistics.median(results["no profiler"][1])
    print(f"Events.exe {a.n} on {'Mono' if a.mono else 'CoreCLR'}, {a.rounds} interleaved rounds, medians")
    print("| variant | wall | × none | CPU (all processes) | × none |")
    print("|---|---:|---:|---:|---:|")
    for name, (walls, cpus) in results.items():
        w, c = statistics.median(walls), statistics.median(cpus)
        print(f"| {name} | {w * 1000:.0f} ms | {w / base_wall:.3f} | {c * 1000:.0f} ms | {c / base_cpu:.3f} |")


if __name__ == "__main__":
    sys.exit(main())
