#!/usr/bin/env python3
"""`scripts/bench-compare.py`'s rounds for any command: the bare command, `sonde record` with this
build's agent, and the same with another agent library (`SONDE_AGENT`), interleaved round by
round; CPU of the whole process tree and wall time, medians. For programs bench-compare.py does
not build, such as Roslyn compiling one file:

  scripts/bench-compare-command.py --agent OLD/libsonde_agent.so [--rounds 11] [--rate 1000] \\
      -- target/roslyn/csc -out:/tmp/Demo.exe tests/apps/Demo.cs

Needs: cargo build --release; scripts/setup.sh. The command must exit 0.
"""
import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import SONDE, cpu_of  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True, help="the other agent library")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        sys.exit("bench-compare-command: no command")
    out = Path(tempfile.mkdtemp(prefix="sonde-bench-command-")) / "r.sonde"
    base = dict(os.environ)
    record = [str(SONDE), "record", "-q", "-o", str(out), "--force", "--rate", str(args.rate), "--"]
    modes = {"baseline": ([], base), "this agent": (record, base),
             "the other agent": (record, dict(base, SONDE_AGENT=args.agent))}
    cpu = {m: [] for m in modes}
    wall = {m: [] for m in modes}
    for r in range(args.rounds):
        for m, (prefix, env) in modes.items():
            c, w, _ = cpu_of(prefix + command, env)
            cpu[m].append(c)
            wall[m].append(w)
        print(f"round {r + 1}/{args.rounds}", file=sys.stderr)
    b, bw = statistics.median(cpu["baseline"]), statistics.median(wall["baseline"])
    print(f"\n`{' '.join(command)}`, {args.rounds} rounds at {args.rate} Hz — medians; the other agent: {args.agent}\n")
    print("| mode | CPU | vs baseline | wall | vs baseline |")
    print("|---|---:|---:|---:|---:|")
    for m in modes:
        c, w = statistics.median(cpu[m]), statistics.median(wall[m])
        print(f"| {m} | {c * 1000:.1f} ms | {(c / b - 1) * 100:+.1f}% | {w * 1000:.1f} ms | {(w / bw - 1) * 100:+.1f}% |")


if __name__ == "__main__":
    main()
