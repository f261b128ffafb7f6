#!/usr/bin/env python3
"""Start-up of a trivial program (tests/apps/ExitCode.cs) under `sonde record`, before and after:
the bare program, this build's `sonde` with its agent, and another build's `sonde` with its agent
(the controller's share of the start-up is in it too, which `scripts/bench-compare.py`, swapping
the agent alone, leaves out). Modes interleaved round by round; medians of wall time and of the
CPU of the whole process tree (the program's threads, the agent's, the controller's), and each
one's difference from the bare program. `--rate 1` adds the same two at one sample a second:
what start-up costs without the samples of a 1 kHz run.

Usage: scripts/bench-startup.py --other OLD_DIR [--rounds 15] [--rate 1000]
OLD_DIR holds the other build's `sonde` and `libsonde_agent.so` (a directory only its owner can
write: the agent refuses one others could). Needs: cargo build --release; scripts/setup.sh.
"""
import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import SONDE, compile_app, cpu_of, env_file  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--other", required=True, help="directory of the other build's sonde and agent")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--rate", type=int, default=1000)
    args = ap.parse_args()
    tools = env_file()
    work = Path(tempfile.mkdtemp(prefix="sonde-bench-startup-"))
    program = [tools["SONDE_DOTNET"], str(compile_app(tools["SONDE_MCS"], "ExitCode", work)), "0"]
    other = Path(args.other)
    builds = {"other build": (other / "sonde", other / "libsonde_agent.so"),
              "this build": (SONDE, SONDE.parent / "libsonde_agent.so")}

    def record(build, rate):
        sonde, agent = builds[build]
        env = dict(os.environ, SONDE_AGENT=str(agent))
        return [str(sonde), "record", "-q", "-o", str(work / "r.sonde"), "--force", "--rate", str(rate), "--"], env

    modes = {"bare program": ([], dict(os.environ))}
    for build in builds:
        modes[f"{build}, {args.rate} Hz"] = record(build, args.rate)
    for build in builds:
        modes[f"{build}, 1 Hz"] = record(build, 1)
    cpu = {m: [] for m in modes}
    wall = {m: [] for m in modes}
    for r in range(args.rounds):
        for m, (prefix, env) in modes.items():
            c, w, _ = cpu_of(prefix + program, env)
            cpu[m].append(c)
            wall[m].append(w)
        print(f"round {r + 1}/{args.rounds}", file=sys.stderr)
    bc, bw = statistics.median(cpu["bare program"]), statistics.median(wall["bare program"])
    print(f"\n`scripts/bench-startup.py --other {args.other} --rounds {args.rounds} --rate {args.rate}` — medians\n")
    print("| mode | wall | vs bare | CPU, all threads | vs bare |")
    print("|---|---:|---:|---:|---:|")
    for m in modes:
        c, w = statistics.median(cpu[m]), statistics.median(wall[m])
        print(f"| {m} | {w * 1000:.1f} ms | {(w - bw) * 1000:+.1f} ms | {c * 1000:.1f} ms | {(c - bc) * 1000:+.1f} ms |")


if __name__ == "__main__":
    main()
