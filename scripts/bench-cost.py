#!/usr/bin/env python3
"""What sampling costs, counting the CPU of every thread and process Sonde adds, split into a
fixed start-up cost and a cost per second of the program's work; Sonde against EventPipe's
sampler (what dotnet-trace uses) in the same interleaved rounds.

Each run's CPU is the whole process tree's (user + system, `wait4`'s rusage of the command: for
`sonde record` that is the controller plus the profiled program with every thread in it, the
agent's included). Wall time is reported beside it, but the CPU is the figure.

  start-up     CPU of a trivial program (tests/apps/ExitCode.cs) minus the baseline's
  per second   CPU of Busy.exe (tests/apps/Busy.cs, 1 thread, steady state after its warm-up)
               with LONG minus SHORT millions of iterations, divided by the baseline's same
               difference, minus 1: the CPU added per CPU-second of the program's work, with
               start-up, warm-up and exit cancelled out
  mcs          Mono's C# compiler (mcs.exe) run on .NET 8, compiling five files: a real, JIT-heavy
               program (every method compiled once, many modules), CPU and wall against the baseline

  --mono       also the same mcs.exe on Mono: Sonde (fixed cost at 1 Hz, 100 Hz, 1 kHz) against
               Mono's own log profiler in sample mode (`--profile=log:sample`), and the share of
               the 1 kHz profile's samples that land in Sonde's own library (issue 11, item 16)

Usage: scripts/bench-cost.py [--rounds 9] [--short 300] [--long 1500] [--markdown] [--mono]
Needs: cargo build --release; scripts/setup.sh (SONDE_DOTNET, SONDE_MCS); /usr/lib/mono/4.5
(Debian's mono-mcs) for mcs.exe and its reference assemblies.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import ROOT, SONDE, compile_app, cpu_of, env_file  # noqa: E402

MONO_LIB = Path("/usr/lib/mono/4.5")
MCS_FILES = ["Demo", "Calls", "Harm", "Busy", "Leaves"]


def modes(tools, work):
    dotnet = tools["SONDE_DOTNET"]
    base = dict(os.environ)
    sonde = lambda rate: (
        [str(SONDE), "record", "-q", "-o", str(work / "run.sonde"), "--force", "--rate", str(rate), "--"],
        base,
    )
    eventpipe = dict(base)
    eventpipe.update(
        {
            "DOTNET_EnableEventPipe": "1",
            "DOTNET_EventPipeOutputPath": str(work / "trace.nettrace"),
            # dotnet-trace's default (cpu-sampling) profile: the sample profiler at 1 kHz and
            # the runtime's default keywords.
            "DOTNET_EventPipeConfig": "Microsoft-DotNETCore-SampleProfiler:0:5,Microsoft-Windows-DotNETRuntime:4c14fccbd:5",
        }
    )
    no_events = ([*sonde(1000)[0][:-1], "--events", "none", "--"], base)
    return {
        "baseline": ([], base),
        "sonde-100": sonde(100),
        "sonde-1000": sonde(1000),
        # The runtime events' share: the same sampling without them (the default records
        # collections, exceptions, JIT and module loads).
        "sonde-1000-noevents": no_events,
        "eventpipe-1000": ([], eventpipe),
    }, dotnet


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--short", type=int, default=300, help="millions of iterations, short Busy run")
    ap.add_argument("--long", type=int, default=1500, help="millions of iterations, long Busy run")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--mono", action="store_true", help="also mcs.exe on Mono, against Mono's log profiler")
    ap.add_argument("--compare-agent", metavar="PATH", help="also run sonde-1000 with this agent")
    args = ap.parse_args()
    tools = env_file()
    work = Path(tempfile.mkdtemp(prefix="sonde-bench-cost-"))
    busy = compile_app(tools["SONDE_MCS"], "Busy", work)
    trivial = compile_app(tools["SONDE_MCS"], "ExitCode", work)
    mcs_dir = work / "mcs"
    mcs_dir.mkdir()
    shutil.copy(MONO_LIB / "mcs.exe", mcs_dir / "mcs.exe")
    shutil.copy(busy.with_suffix(".runtimeconfig.json"), mcs_dir / "mcs.runtimeconfig.json")
    refs = [f"-r:{MONO_LIB / a}" for a in ("mscorlib.dll", "System.dll", "System.Core.dll")]
    sources = [str(ROOT / "tests/apps" / f"{n}.cs") for n in MCS_FILES]
    mcs_args = ["-nostdlib", *refs, "-t:library", f"-out:{work / 'out.dll'}", *sources]

    mode_table, dotnet = modes(tools, work)
    if args.compare_agent:
        prefix, env = mode_table["sonde-1000"]
        other = dict(env)
        other["SONDE_AGENT"] = args.compare_agent
        mode_table["sonde-1000@other"] = (prefix, other)
    programs = {
        "trivial": [dotnet, str(trivial), "0"],
        "short": [dotnet, str(busy), "1", str(args.short)],
        "long": [dotnet, str(busy), "1", str(args.long)],
        "mcs": [dotnet, str(mcs_dir / "mcs.exe"), *mcs_args],
    }
    cpu = {(m, p): [] for m in mode_table for p in programs}
    wall = {(m, p): [] for m in mode_table for p in programs}
    for r in range(args.rounds):
        for p, cmd in programs.items():
            for m, (prefix, env) in mode_table.items():
                c, w, _ = cpu_of(prefix + cmd, env)
                cpu[(m, p)].append(c)
                wall[(m, p)].append(w)
        print(f"round {r + 1}/{args.rounds}", file=sys.stderr)

    med = lambda d, k: statistics.median(d[k])
    base_work = med(cpu, ("baseline", "long")) - med(cpu, ("baseline", "short"))
    rows = []
    for m in mode_table:
        fixed = med(cpu, (m, "trivial")) - med(cpu, ("baseline", "trivial"))
        work_cpu = med(cpu, (m, "long")) - med(cpu, (m, "short"))
        per_second = work_cpu / base_work - 1
        mcs_cpu = med(cpu, (m, "mcs")) / med(cpu, ("baseline", "mcs")) - 1
        mcs_wall = med(wall, (m, "mcs")) / med(wall, ("baseline", "mcs")) - 1
        rows.append((m, med(cpu, (m, "trivial")), fixed, work_cpu, per_second, med(cpu, (m, "mcs")), mcs_cpu, mcs_wall))

    print()
    print(
        f"`scripts/bench-cost.py --rounds {args.rounds} --short {args.short} --long {args.long}` — "
        f"medians of {args.rounds} interleaved rounds; CPU = user + system of the whole process tree"
    )
    print()
    print(
        "| mode | trivial program CPU | fixed start-up cost | Busy CPU, long − short | CPU per second of work "
        "| mcs.exe CPU | mcs.exe CPU vs baseline | mcs.exe wall vs baseline |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for m, triv, fixed, work_cpu, per_second, mcs, mcs_cpu, mcs_wall in rows:
        print(
            f"| {m} | {triv * 1000:.0f} ms | {fixed * 1000:+.0f} ms | {work_cpu:.3f} s | {per_second * 100:+.2f}% "
            f"| {mcs * 1000:.0f} ms | {mcs_cpu * 100:+.1f}% | {mcs_wall * 100:+.1f}% |"
        )
    spread = {m: (min(cpu[(m, "long")]), max(cpu[(m, "long")])) for m in mode_table}
    print()
    print("Spread of the long Busy run's CPU (min–max): " + ", ".join(f"{m} {a:.2f}–{b:.2f} s" for m, (a, b) in spread.items()))
    if args.mono:
        mono_mcs(args.rounds, work, mcs_dir / "mcs.exe", mcs_args)
    shutil.rmtree(work, ignore_errors=True)


def mono_mcs(rounds, work, mcs, mcs_args):
    """mcs.exe on Mono: Sonde against Mono's log profiler in sample mode, interleaved rounds."""
    import json

    mono = shutil.which("mono") or sys.exit("--mono: no `mono` on PATH")
    profile = work / "mono.sonde"
    sonde = lambda rate: [str(SONDE), "record", "-q", "-o", str(profile), "--force", "--rate", str(rate), "--", mono]
    table = {
        "baseline": [mono],
        "sonde-1": sonde(1),
        "sonde-100": sonde(100),
        "sonde-1000": sonde(1000),
        "mono-log-sample": [mono, f"--profile=log:sample,nodefaults,output={work / 'mono.mlpd'}"],
    }
    cpu = {m: [] for m in table}
    wall = {m: [] for m in table}
    own = []  # per 1 kHz run: (samples in Sonde's library, all samples)
    for r in range(rounds):
        for m, prefix in table.items():
            c, w, _ = cpu_of(prefix + [str(mcs), *mcs_args], dict(os.environ))
            cpu[m].append(c)
            wall[m].append(w)
            if m == "sonde-1000":
                out = subprocess.run([str(SONDE), "report", str(profile), "--format", "json"], capture_output=True, text=True, check=True)
                methods = json.loads(out.stdout)["methods"]
                mine = sum(x["self_samples"] for x in methods if "libmono-profiler-sonde" in x["name"] + x["module"])
                own.append((mine, sum(x["self_samples"] for x in methods)))
        print(f"mono round {r + 1}/{rounds}", file=sys.stderr)
    med = statistics.median
    b, bw = med(cpu["baseline"]), med(wall["baseline"])
    print()
    print(f"mcs.exe on Mono ({mono}): medians of {rounds} interleaved rounds; CPU of the whole process tree")
    print()
    print("| mode | CPU | vs baseline | wall | vs baseline |")
    print("|---|---:|---:|---:|---:|")
    for m in table:
        c, w = med(cpu[m]), med(wall[m])
        print(f"| {m} | {c * 1000:.0f} ms | {(c / b - 1) * 100:+.1f}% | {w * 1000:.0f} ms | {(w / bw - 1) * 100:+.1f}% |")
    mine, total = sum(a for a, _ in own), sum(t for _, t in own)
    print()
    print(f"Samples in Sonde's own library (`[native] libmono-profiler-sonde.so`), sonde-1000: {mine} of {total} ({mine / max(total, 1) * 100:.1f}%)")


if __name__ == "__main__":
    main()
