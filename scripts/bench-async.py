#!/usr/bin/env python3
"""What `--async` (docs/ASYNC.md) costs an await-heavy program.

Runs tests/apps/Awaits.exe N (N requests through a chain of four async methods, four awaits
suspended and resumed per request; N = 0 is the start-up alone) with no profiler, under `sonde
record` in sampling mode (default rate), the same with `--async`, and with the peer that collects
the same task events: the session with its events ignored (`SONDE_BENCH_HOOKS=empty`: what the
runtime's delivery costs alone), EventPipe's file-based session (`DOTNET_EnableEventPipe=1` with
`System.Threading.Tasks.TplEventSource:0x43:5`, what `dotnet-trace collect --providers` would ask
of the runtime; dotnet-trace itself is not installable here). In interleaved rounds; reports the
median CPU of the whole process tree (user + system: the program, the agent's threads, the
controller) for the start-up (N = 0) and for the work (N minus start-up), each as a ratio to no
profiler, and the cost per await of `--async` over sampling alone.

    source target/sonde-env.sh; cargo build --release
    python3 scripts/bench-async.py [--rounds 7] [--n 200000]
"""

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import ROOT, compile_app, cpu_of  # noqa: E402

AWAITS_PER_REQUEST = 4


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--n", type=int, default=200000)
    a = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sonde-bench-async-"))
    exe = str(compile_app(os.environ["SONDE_MCS"], "Awaits", work))
    dotnet = os.environ["SONDE_DOTNET"]
    out = str(work / "p.sonde")
    sonde = str(ROOT / "target/release/sonde")
    eventpipe_env = dict(os.environ, DOTNET_EnableEventPipe="1",
                         DOTNET_EventPipeOutputPath=str(work / "trace.nettrace"),
                         DOTNET_EventPipeConfig="System.Threading.Tasks.TplEventSource:0x43:5")
    variants = {
        "no profiler": ([dotnet, exe], os.environ),
        "sonde sampling": ([sonde, "record", "-q", "-o", out, "--force", "--", dotnet, exe], os.environ),
        "sonde sampling --async": ([sonde, "record", "-q", "-o", out, "--force", "--async", "--", dotnet, exe],
                                   os.environ),
        # The floor under Sonde's own handling: the session runs, its events are ignored.
        "--async, events received and ignored": (
            [sonde, "record", "-q", "-o", out, "--force", "--async", "--", dotnet, exe],
            dict(os.environ, SONDE_BENCH_HOOKS="empty")),
        "EventPipe to a file (TPL 0x43:5)": ([dotnet, exe], eventpipe_env),
    }
    results = {k: {0: [], a.n: []} for k in variants}
    for n in (0, a.n):  # warm-up
        for cmd, env in variants.values():
            cpu_of(cmd + [str(n)], dict(env))
    for _ in range(a.rounds):
        for n in (0, a.n):
            for name, (cmd, env) in variants.items():
                cpu, _, _ = cpu_of(cmd + [str(n)], dict(env))
                results[name][n].append(cpu)
    med = {k: (statistics.median(v[0]), statistics.median(v[a.n])) for k, v in results.items()}
    base_start, base_all = med["no profiler"]
    base_work = base_all - base_start
    awaits = a.n * AWAITS_PER_REQUEST
    print(f"Awaits.exe {a.n} ({awaits:,} awaits) on CoreCLR, {a.rounds} interleaved rounds, median CPU of all processes")
    print("| variant | start-up CPU | CPU of the work | × none | per await over none |")
    print("|---|---:|---:|---:|---:|")
    for name, (start, total) in med.items():
        w = total - start
        per = (w - base_work) / awaits * 1e9
        print(f"| {name} | {start * 1000:.0f} ms | {w * 1000:.0f} ms | {w / base_work:.3f} | {per:.0f} ns |")
    s_work = med["sonde sampling"][1] - med["sonde sampling"][0]
    a_work = med["sonde sampling --async"][1] - med["sonde sampling --async"][0]
    print(f"\n--async over sampling alone: {(a_work - s_work) * 1000:.0f} ms of work CPU, "
          f"{(a_work - s_work) / awaits * 1e9:.0f} ns per await, × {a_work / s_work:.3f}")


if __name__ == "__main__":
    sys.exit(main())
