#!/usr/bin/env python3
"""Sonde's tracing benchmark harness: one run compares, on the call-heavy Bench.exe,

  baseline        the program without any profiler
  loaded          Sonde's agent loaded, no method hooked (--exclude '*'): the cost of the
                  profiler's JIT flags (inlining disabled) alone
  floor-empty     hooks on every call that return at once
  floor-clock     hooks that only read the clock (rdtsc) on enter and leave: the floor under
                  any exactly-timed tracer
  exact           sonde record --timing exact (default)
  sampled         sonde record --timing sampled

Runs are interleaved (round-robin) so machine noise hits every mode alike; each figure is the
median over the rounds. Overheads are per call, against the baseline; ratios compare the per-call
overhead with the clock floor. Memory: the profiled process's peak RSS with 1x and 10x the calls.

Usage: scripts/bench.py [--rounds 7] [--n 30] [--reps 4] [--markdown]
Needs: target/release/{sonde,libsonde_agent.so} (cargo build --release) and target/sonde-env.sh
(scripts/setup-runtime.sh).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SONDE = ROOT / "target/release/sonde"


def env_file():
    env = {}
    path = ROOT / "target/sonde-env.sh"
    if not path.exists():
        sys.exit("bench: run scripts/setup-runtime.sh first (no target/sonde-env.sh)")
    for line in path.read_text().splitlines():
        m = re.match(r"export (\w+)='(.*)'", line)
        if m:
            env[m.group(1)] = m.group(2)
    return env


def compile_app(mcs, name, out):
    exe = out / f"{name}.exe"
    subprocess.run([mcs, "-optimize+", f"-out:{exe}", str(ROOT / f"tests/apps/{name}.cs")], check=True,
                   stdout=subprocess.DEVNULL)
    (out / f"{name}.runtimeconfig.json").write_text(
        '{"runtimeOptions":{"tfm":"net8.0","framework":{"name":"Microsoft.NETCore.App","version":"8.0.0"}}}')
    return exe


def descendants(pid):
    """PIDs of all processes below `pid` (from /proc)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                ppid = int(stat[stat.rindex(")") + 2:].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, ValueError):
                pass
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in children.get(p, []):
            out.append(c)
            todo.append(c)
    return out


def peak_rss_kb(pid):
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def run(cmd, env, watch_memory=False):
    """Runs cmd; returns (stdout, peak RSS in kB of the dotnet process, wall seconds)."""
    start = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    if watch_memory:
        while p.poll() is None:
            for pid in [p.pid] + descendants(p.pid):
                try:
                    if "dotnet" in Path(f"/proc/{pid}/comm").read_text():
                        peak = max(peak, peak_rss_kb(pid))
                except OSError:
                    pass
            time.sleep(0.005)
    out, err = p.communicate()
    if p.returncode != 0:
        sys.exit(f"bench: {' '.join(map(str, cmd))} failed ({p.returncode}):\n{err}")
    return out, peak, time.perf_counter() - start


def parse(out):
    m = re.search(r"calls=(\d+) elapsed_ms=([\d.]+)", out)
    if not m:
        sys.exit(f"bench: unexpected output: {out!r}")
    return int(m.group(1)), float(m.group(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = ap.parse_args()
    if not SONDE.exists():
        sys.exit("bench: build first: cargo build --release")
    tools = env_file()
    dotnet, mcs = tools["SONDE_DOTNET"], tools["SONDE_MCS"]
    work = Path(tempfile.mkdtemp(prefix="sonde-bench-"))
    exe = compile_app(mcs, "Bench", work)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("SONDE_", "CORECLR_", "DOTNET_"))}
    # Tiered compilation makes the first calls of a short run slower than the rest; with it off,
    # every mode runs fully optimised code from the first call and the comparison is fair.
    base_env["DOTNET_TieredCompilation"] = "0"
    program = [dotnet, str(exe), str(args.n), str(args.reps)]
    profile = str(work / "p.sonde")
    record = [str(SONDE), "-q", "record", "-o", profile]
    modes = {
        "baseline": (program, {}),
        "loaded": (record + ["--exclude", "*", "--"] + program, {}),
        "floor-empty": (record + ["--"] + program, {"SONDE_BENCH_HOOKS": "empty"}),
        "floor-clock": (record + ["--"] + program, {"SONDE_BENCH_HOOKS": "clock"}),
        "exact": (record + ["--timing", "exact", "--"] + program, {}),
        "sampled": (record + ["--timing", "sampled", "--"] + program, {}),
    }
    times = {m: [] for m in modes}
    calls = None
    for _ in range(args.rounds):
        for mode, (cmd, extra) in modes.items():
            out, _, _ = run(cmd, {**base_env, **extra})
            c, ms = parse(out)
            calls = c
            times[mode].append(ms)

    med = {m: statistics.median(t) for m, t in times.items()}
    per_call = {m: med[m] * 1e6 / calls for m in med}
    over = {m: per_call[m] - per_call["baseline"] for m in med}

    # Memory grows with distinct call paths, not calls: same tree, 10x the calls.
    mem = {}
    for reps in (args.reps, args.reps * 10):
        cmd = record + ["--"] + [dotnet, str(exe), str(args.n), str(reps)]
        _, peak, _ = run(cmd, base_env, watch_memory=True)
        nodes = len(json.loads(subprocess.run([str(SONDE), "report", profile, "--format", "json"],
                                              capture_output=True, text=True, check=True).stdout)["nodes"])
        mem[reps] = (peak, nodes, calls // args.reps * reps)
    base_peak = {}
    for reps in (args.reps, args.reps * 10):
        _, peak, _ = run([dotnet, str(exe), str(args.n), str(reps)], base_env, watch_memory=True)
        base_peak[reps] = peak

    cmdline = f"scripts/bench.py --rounds {args.rounds} --n {args.n} --reps {args.reps}"
    floor = over["floor-clock"]
    rows = []
    for m in modes:
        ratio_base = med[m] / med["baseline"]
        ratio_floor = over[m] / floor if floor > 0 and m in ("exact", "sampled", "floor-clock") else None
        rows.append((m, med[m], per_call[m], over[m], ratio_base, ratio_floor))
    if args.markdown:
        print(f"Command: `{cmdline}` — Bench.exe Fib({args.n}) x {args.reps} = {calls:,} calls, "
              f"median of {args.rounds} interleaved rounds, DOTNET_TieredCompilation=0.\n")
        print("| mode | median time | ns/call | overhead ns/call | time vs baseline | overhead vs clock floor |")
        print("|---|---:|---:|---:|---:|---:|")
        for m, t, pc, o, rb, rf in rows:
            print(f"| {m} | {t:.1f} ms | {pc:.2f} | {o:.2f} | {rb:.2f}x | {'' if rf is None else f'{rf:.2f}x'} |")
        print("\n| run | calls | call-tree nodes | peak RSS (profiled) | peak RSS (no profiler) |")
        print("|---|---:|---:|---:|---:|")
        for reps, (peak, nodes, c) in mem.items():
            print(f"| Fib({args.n}) x {reps} | {c:,} | {nodes:,} | {peak / 1024:.1f} MiB | {base_peak[reps] / 1024:.1f} MiB |")
    else:
        print(f"{cmdline}: {calls:,} calls per run, median of {args.rounds} rounds")
        print(f"{'mode':<12} {'median':>10} {'ns/call':>8} {'overhead':>9} {'vs base':>8} {'vs floor':>9}")
        for m, t, pc, o, rb, rf in rows:
            print(f"{m:<12} {t:>8.1f}ms {pc:>8.2f} {o:>9.2f} {rb:>7.2f}x {'' if rf is None else f'{rf:>8.2f}x'}")
        for reps, (peak, nodes, c) in mem.items():
            print(f"memory: {c:,} calls -> {nodes:,} nodes, peak RSS {peak / 1024:.1f} MiB "
                  f"(no profiler {base_peak[reps] / 1024:.1f} MiB)")


if __name__ == "__main__":
    main()
