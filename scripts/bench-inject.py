#!/usr/bin/env python3
"""What IL rewriting costs on CoreCLR — the error simulator (docs/INJECT.md) and coverage mode
(docs/COVERAGE.md) — in interleaved rounds:

  per call   tests/apps/Bench.cs `loop` mode: Acme.Bench.Leaf called 2*fib(N+1)-1 times from a
             loop, unprofiled; with a rule on Leaf that never fires (`@after:` beyond the run),
             so every call runs the prologue and its `calli` into the agent and returns; and in
             coverage mode (a counter per block). Reported: CPU of every process, the timed
             loop's nanoseconds per call (the program's own clock: the cost per second of
             running), and what is left of the added CPU (start-up, rewriting, the profile:
             the fixed cost).
  per method IL rewrite time per method, from the agent's log ("IL rewriting: N methods in …"):
             tests/apps/Demo.cs with coverage mode (its own code), coverage mode --all (the
             framework too), and a rule matching every method of the program (`Acme.*`).

    source target/sonde-env.sh; cargo build --release
    python3 scripts/bench-inject.py [--rounds 7] [--n 30]
"""

import argparse
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import ROOT, compile_app, cpu_of, env_file, parse  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--n", type=int, default=30)
    a = p.parse_args()
    tools = env_file()
    work = Path(tempfile.mkdtemp(prefix="sonde-bench-inject-"))
    bench = compile_app(tools["SONDE_MCS"], "Bench", work)
    demo = compile_app(tools["SONDE_MCS"], "Demo", work)
    dotnet = tools["SONDE_DOTNET"]
    sonde = str(ROOT / "target/release/sonde")
    out = str(work / "i.sonde")
    never = "Acme.Bench.Leaf=System.TimeoutException@after:1000000000000"
    args = [str(a.n), "1", "loop"]
    variants = {
        "no profiler": [dotnet, str(bench)] + args,
        "--inject (never fires)": [sonde, "record", "-q", "-o", out, "--force", "--inject", never, "--",
                                   dotnet, str(bench)] + args,
        "--mode coverage": [sonde, "record", "-q", "-o", out, "--force", "--mode", "coverage", "--",
                            dotnet, str(bench)] + args,
    }
    env = dict(os.environ)
    results = {k: ([], [], []) for k in variants}
    calls = 0
    for cmd in variants.values():  # warm-up
        cpu_of(cmd, env)
    for _ in range(a.rounds):
        for name, cmd in variants.items():
            cpu, wall, stdout = cpu_of(cmd, env)
            calls, ms = parse(stdout)
            results[name][0].append(cpu)
            results[name][1].append(wall)
            results[name][2].append(ms)
    med = {k: tuple(statistics.median(x) for x in v) for k, v in results.items()}
    base = med["no profiler"]
    print(f"Bench.exe {' '.join(args)}: {calls:,} calls of the matched method, {a.rounds} interleaved rounds, medians")
    print("| variant | CPU | CPU ÷ baseline | timed loop | ns per call | added ns per call | fixed cost |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, (cpu, wall, ms) in med.items():
        per_call = ms * 1e6 / calls
        added = (ms - base[2]) * 1e6 / calls
        fixed = (cpu - base[0]) * 1000 - (ms - base[2])
        print(f"| {name} | {cpu * 1000:.0f} ms | {cpu / base[0]:.2f} | {ms:.0f} ms | {per_call:.2f} | {added:.2f} "
              f"| {fixed:.0f} ms |")

    print()
    print("IL rewrite time per method (Demo.exe; agent log, median of the rounds)")
    print("| what is rewritten | methods | total | per method |")
    print("|---|---:|---:|---:|")
    log = work / "agent.log"
    record = [sonde, "record", "-q", "-o", out, "--force", "--agent-log", str(log)]
    rewrites = {
        "coverage (the program's code)": record + ["--mode", "coverage", "--", dotnet, str(demo)],
        "coverage --all (framework too)": record + ["--mode", "coverage", "--all", "--", dotnet, str(demo)],
        "--inject 'Acme.*=…' (every method of the program)":
            record + ["--inject", "Acme.*=System.TimeoutException@after:1000000000000", "--", dotnet, str(demo)],
    }
    for name, cmd in rewrites.items():
        seen = []
        for _ in range(a.rounds):
            log.unlink(missing_ok=True)
            cpu_of(cmd, env)
            m = re.search(r"IL rewriting: (\d+) methods in ([\d.]+) ms", log.read_text())
            if not m:
                sys.exit(f"bench-inject: no rewrite figures in the agent log for {name}")
            seen.append((int(m.group(1)), float(m.group(2))))
        methods = statistics.median(s[0] for s in seen)
        total = statistics.median(s[1] for s in seen)
        print(f"| {name} | {methods:.0f} | {total:.1f} ms | {total * 1000 / methods:.1f} µs |")


if __name__ == "__main__":
    sys.exit(main())
