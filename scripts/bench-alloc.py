#!/usr/bin/env python3
"""What recording the runtime's events costs an allocation-heavy program (BENCHMARKS.md,
"Runtime events: allocations and contention").

Runs tests/apps/Alloc.exe alloc R (R rounds of 280 MB allocated in three types; R = 0 runs the
start-up alone) with no profiler, under `sonde record` in sampling mode with `--events none`
(sampling alone), with the default events (collections, exceptions, contention), with
`--events all` (allocations too) and with `--alloc-sampling exact` (every allocation counted)
— on CoreCLR also with the runtime's EventPipe session running but its events ignored
(`SONDE_BENCH_HOOKS=empty`: the floor under Sonde's own handling),
and under the peers that record the same events: on CoreCLR, EventPipe's own file-based
collection (`DOTNET_EnableEventPipe`, the provider and keywords Sonde's session asks for:
Microsoft-Windows-DotNETRuntime:0x4001:5, what `dotnet-trace collect --providers` would ask
for); on Mono, its log profiler with allocations (`--profile=log:alloc`). Interleaved rounds;
medians of wall time and of the CPU time of every process (user + system of the whole tree,
`RUSAGE_CHILDREN`). The start-up runs give the fixed cost; the difference between the two sizes
the cost of the work.

    source target/sonde-env.sh
    cargo build --release
    python3 scripts/bench-alloc.py [--mono] [--rounds 7] [--size 4]
"""

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import ROOT, compile_app, cpu_of  # noqa: E402


def run(cmd, env=None):
    cpu, wall, _ = cpu_of(cmd, {**os.environ, **(env or {})})
    return wall, cpu


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mono", action="store_true")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--size", type=int, default=4, help="allocation rounds of the program")
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="sonde-bench-alloc-")
    exe = str(compile_app(os.environ["SONDE_MCS"], "Alloc", Path(work)))
    runtime = os.environ["SONDE_MONO"] if a.mono else os.environ["SONDE_DOTNET"]
    sonde = str(ROOT / "target/release/sonde")
    out = os.path.join(work, "p.sonde")

    def variants(size):
        program = [runtime, exe, "alloc", str(size)]
        v = {
            "no profiler": (program, None),
            "sonde, --events none": ([sonde, "record", "-q", "-o", out, "--force", "--events", "none", "--", *program], None),
            "sonde, default events": ([sonde, "record", "-q", "-o", out, "--force", "--", *program], None),
            "sonde, --events all": ([sonde, "record", "-q", "-o", out, "--force", "--events", "all", "--", *program], None),
            # Every allocation counted (ObjectAllocated on CoreCLR: start-up only, and the JIT
            # leaves its fast allocators; on Mono the same allocation event, every one counted).
            "sonde, --alloc-sampling exact": (
                [sonde, "record", "-q", "-o", out, "--force", "--alloc-sampling", "exact", "--", *program], None),
        }
        if not a.mono:
            # The floor under Sonde's allocation events: the runtime's session alone, its events
            # received and ignored.
            v["sonde, events received and ignored"] = (
                [sonde, "record", "-q", "-o", out, "--force", "--events", "all", "--", *program],
                {"SONDE_BENCH_HOOKS": "empty"})
        if a.mono:
            mlpd = os.path.join(work, "p.mlpd")
            v["Mono log profiler, alloc"] = ([runtime, f"--profile=log:alloc,output={mlpd}", exe, "alloc", str(size)], None)
        else:
            v["EventPipe to a file (0x4001:5)"] = (program, {
                "DOTNET_EnableEventPipe": "1",
                "DOTNET_EventPipeConfig": "Microsoft-Windows-DotNETRuntime:0x4001:5",
                "DOTNET_EventPipeOutputPath": os.path.join(work, "p.nettrace"),
            })
        return v

    sizes = [0, a.size]
    results = {}
    for _ in range(2):  # warm-up
        for size in sizes:
            for cmd, env in variants(size).values():
                run(cmd, env)
    for _ in range(a.rounds):
        for size in sizes:
            for name, (cmd, env) in variants(size).items():
                wall, cpu = run(cmd, env)
                results.setdefault((size, name), ([], []))
                results[(size, name)][0].append(wall)
                results[(size, name)][1].append(cpu)
    med = {k: (statistics.median(w), statistics.median(c)) for k, (w, c) in results.items()}
    rt = "Mono" if a.mono else "CoreCLR"
    print(f"Alloc.exe alloc {a.size} ({a.size * 280} MB allocated) on {rt}, {a.rounds} interleaved rounds, medians")
    print("| variant | start-up CPU | CPU of the work | × none | wall of the work | × none |")
    print("|---|---:|---:|---:|---:|---:|")
    base_w = med[(a.size, "no profiler")][0] - med[(0, "no profiler")][0]
    base_c = med[(a.size, "no profiler")][1] - med[(0, "no profiler")][1]
    for name in variants(0):
        w0, c0 = med[(0, name)]
        w, c = med[(a.size, name)]
        print(f"| {name} | {c0 * 1000:.0f} ms | {(c - c0) * 1000:.0f} ms | {(c - c0) / base_c:.3f} "
              f"| {(w - w0) * 1000:.0f} ms | {(w - w0) / base_w:.3f} |")


if __name__ == "__main__":
    sys.exit(main())
