#!/usr/bin/env python3
"""Before/after one agent change, on one program, many interleaved rounds: the bare program,
`sonde record` with this build's agent, and the same with another agent library (`SONDE_AGENT`),
CPU of the whole process tree (as `scripts/bench-cost.py` measures it) and wall time, medians.

  mcs       Mono's C# compiler (mcs.exe) on .NET 8 compiling five files: JIT-heavy, many modules
  trivial   tests/apps/ExitCode.cs: the fixed start-up cost

Usage: scripts/bench-compare.py --agent OLD/libsonde_agent.so [--program mcs|trivial]
                                [--rounds 31] [--rate 1000]
Needs: cargo build --release; scripts/setup.sh; /usr/lib/mono/4.5 (Debian's mono-mcs). Keep the
other agent in a directory only its owner can write (the agent refuses one others could).
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import ROOT, SONDE, compile_app, cpu_of, env_file  # noqa: E402

MONO_LIB = Path("/usr/lib/mono/4.5")
MCS_FILES = ["Demo", "Calls", "Harm", "Busy", "Leaves"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True, help="the other agent library")
    ap.add_argument("--program", choices=["mcs", "trivial"], default="mcs")
    ap.add_argument("--rounds", type=int, default=31)
    ap.add_argument("--rate", type=int, default=1000)
    args = ap.parse_args()
    tools = env_file()
    dotnet = tools["SONDE_DOTNET"]
    work = Path(tempfile.mkdtemp(prefix="sonde-bench-compare-"))
    if args.program == "trivial":
        command = [dotnet, str(compile_app(tools["SONDE_MCS"], "ExitCode", work)), "0"]
    else:
        busy = compile_app(tools["SONDE_MCS"], "Busy", work)
        (work / "mcs").mkdir()
        shutil.copy(MONO_LIB / "mcs.exe", work / "mcs" / "mcs.exe")
        shutil.copy(busy.with_suffix(".runtimeconfig.json"), work / "mcs" / "mcs.runtimeconfig.json")
        refs = [f"-r:{MONO_LIB / a}" for a in ("mscorlib.dll", "System.dll", "System.Core.dll")]
        sources = [str(ROOT / "tests/apps" / f"{n}.cs") for n in MCS_FILES]
        command = [dotnet, str(work / "mcs" / "mcs.exe"), "-nostdlib", *refs, "-t:library",
                   f"-out:{work / 'out.dll'}", *sources]
    base = dict(os.environ)
    other = dict(base, SONDE_AGENT=args.agent)
    record = [str(SONDE), "record", "-q", "-o", str(work / "r.sonde"), "--force", "--rate", str(args.rate), "--"]
    modes = {"baseline": ([], base), "this agent": (record, base), "the other agent": (record, other)}
    cpu = {m: [] for m in modes}
    wall = {m: [] for m in modes}
    for r in range(args.rounds):
        for m, (prefix, env) in modes.items():
            c, w, _ = cpu_of(prefix + command, env)
            cpu[m].append(c)
            wall[m].append(w)
        print(f"round {r + 1}/{args.rounds}", file=sys.stderr)
    b, bw = statistics.median(cpu["baseline"]), statistics.median(wall["baseline"])
    print(f"\n`scripts/bench-compare.py --program {args.program} --rounds {args.rounds} --rate {args.rate}`"
          f" — medians; the other agent: {args.agent}\n")
    print("| mode | CPU | vs baseline | wall | vs baseline |")
    print("|---|---:|---:|---:|---:|")
    for m in modes:
        c, w = statistics.median(cpu[m]), statistics.median(wall[m])
        print(f"| {m} | {c * 1000:.1f} ms | {(c - b) * 1000:+.1f} ms, {(c / b - 1) * 100:+.1f}% "
              f"| {w * 1000:.1f} ms | {(w / bw - 1) * 100:+.1f}% |")


if __name__ == "__main__":
    main()
