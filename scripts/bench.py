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

and the same Bench.exe on Mono (`--mono`, or `--mono-only` for these rows alone):

  mono-baseline     `mono Bench.exe` without any profiler
  mono-floor-empty  Sonde's module loaded, every call instrumented, callbacks that return at once:
                    Mono's own enter/leave machinery (JIT-emitted call + mono_profiler_raise_*)
  mono-floor-clock  callbacks that only read the clock on enter and leave
  mono-exact        sonde record --mode tracing --timing exact
  mono-sampled      sonde record --mode tracing --timing sampled
  mono-log-calls    Mono's own log profiler, `mono --profile=log:calls` (issue 5's peer: Sonde's
                    tracing should cost at most 1/10 of it per call)

Runs are interleaved (round-robin) so machine noise hits every mode alike; each figure is the
median over the rounds. Overheads are per call, against the baseline; ratios compare the per-call
overhead with the clock floor (CoreCLR) or with log:calls (Mono). Memory: the profiled process's
peak RSS with 1x and 10x the calls.

With `--compare-agent PATH` (another build of libsonde_agent.so, e.g. before a change), the exact
and sampled rows run a second time with that agent (`SONDE_AGENT=PATH`), named `…@other`, in the
same interleaved rounds: a before/after comparison that machine noise hits alike.

Usage: scripts/bench.py [--rounds 7] [--n 30] [--reps 4] [--mono | --mono-only] [--markdown]
                        [--compare-agent PATH]
Needs: target/release/{sonde,libsonde_agent.so} (cargo build --release) and target/sonde-env.sh
(scripts/setup-runtime.sh; SONDE_MONO and Mono's libmono-profiler for the Mono rows).
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


def cpu_of(cmd, env):
    """(CPU seconds of the whole process tree, wall seconds, stdout) of `cmd`, which must exit 0:
    the user + system time it and its descendants used, from RUSAGE_CHILDREN's growth (the
    child is reaped before it is read)."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate()
    wall = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{err[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, out


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


def mono_modes(tools, exe, args, record, work):
    """The Mono rows: the same Bench.exe under `mono`, with Sonde's tracing and Mono's log profiler."""
    mono = tools.get("SONDE_MONO")
    if not mono:
        sys.exit("bench: SONDE_MONO is not set in target/sonde-env.sh; run scripts/setup-runtime.sh")
    program = [mono, str(exe), str(args.n), str(args.reps)]
    log_calls = [mono, f"--profile=log:calls,output={work / 'calls.mlpd'}"] + program[1:]
    return {
        "mono-baseline": (program, {}),
        "mono-floor-empty": (record + ["--"] + program, {"SONDE_BENCH_HOOKS": "empty"}),
        "mono-floor-clock": (record + ["--"] + program, {"SONDE_BENCH_HOOKS": "clock"}),
        "mono-exact": (record + ["--timing", "exact", "--"] + program, {}),
        "mono-sampled": (record + ["--timing", "sampled", "--"] + program, {}),
        "mono-log-calls": (log_calls, {}),
    }


def print_mono(args, med, per_call, over, calls):
    """The Mono table: overheads against `mono` alone, ratios against `--profile=log:calls`."""
    cmdline = f"scripts/bench.py --mono --rounds {args.rounds} --n {args.n} --reps {args.reps}"
    if args.compare_agent:
        cmdline += " --compare-agent OTHER"
    log = over["mono-log-calls"]
    mono = [m for m in med if m.startswith("mono-")]
    rows = [(m, med[m], per_call[m], over[m], med[m] / med["mono-baseline"],
             over[m] / log if log > 0 and m != "mono-baseline" else None) for m in mono]
    if args.markdown:
        print(f"Command: `{cmdline}` — Bench.exe Fib({args.n}) x {args.reps} = {calls:,} calls on Mono, "
              f"median of {args.rounds} interleaved rounds.\n")
        print("| mode | median time | ns/call | overhead ns/call | time vs baseline | overhead vs log:calls |")
        print("|---|---:|---:|---:|---:|---:|")
        for m, t, pc, o, rb, rl in rows:
            print(f"| {m} | {t:.1f} ms | {pc:.2f} | {o:.2f} | {rb:.2f}x | {'' if rl is None else f'{rl:.3f}x'} |")
        print()
    else:
        print(f"{cmdline}: {calls:,} calls per run on Mono, median of {args.rounds} rounds")
        print(f"{'mode':<17} {'median':>10} {'ns/call':>8} {'overhead':>9} {'vs base':>8} {'vs log:calls':>13}")
        for m, t, pc, o, rb, rl in rows:
            print(f"{m:<17} {t:>8.1f}ms {pc:>8.2f} {o:>9.2f} {rb:>7.2f}x {'' if rl is None else f'{rl:>12.3f}x'}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--markdown", action="store_true", help="print a Markdown table")
    ap.add_argument("--mono", action="store_true", help="add the Mono rows")
    ap.add_argument("--mono-only", action="store_true", help="only the Mono rows")
    ap.add_argument("--compare-agent", metavar="PATH", help="also run the exact and sampled rows with this agent")
    args = ap.parse_args()
    if args.compare_agent and not Path(args.compare_agent).is_file():
        sys.exit(f"bench: --compare-agent {args.compare_agent}: no such file")
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
    # Every Sonde row here is tracing (sampling, the default mode, has scripts/bench-sampling.py).
    record = [str(SONDE), "-q", "record", "--mode", "tracing", "-o", profile]
    coreclr_modes = {
        "baseline": (program, {}),
        "loaded": (record + ["--exclude", "*", "--"] + program, {}),
        "floor-empty": (record + ["--"] + program, {"SONDE_BENCH_HOOKS": "empty"}),
        "floor-clock": (record + ["--"] + program, {"SONDE_BENCH_HOOKS": "clock"}),
        "exact": (record + ["--timing", "exact", "--"] + program, {}),
        "sampled": (record + ["--timing", "sampled", "--"] + program, {}),
    }
    modes = {} if args.mono_only else dict(coreclr_modes)
    if args.mono or args.mono_only:
        modes.update(mono_modes(tools, exe, args, record, work))
    if args.compare_agent:
        other = {"SONDE_AGENT": str(Path(args.compare_agent).resolve())}
        for m in ("exact", "sampled", "mono-exact", "mono-sampled"):
            if m in modes:
                cmd, extra = modes[m]
                modes[f"{m}@other"] = (cmd, {**extra, **other})
                if m in coreclr_modes:
                    coreclr_modes[f"{m}@other"] = modes[f"{m}@other"]
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
    base = {m: per_call["mono-baseline" if m.startswith("mono-") else "baseline"] for m in med}
    over = {m: per_call[m] - base[m] for m in med}
    if "mono-baseline" in med:
        print_mono(args, med, per_call, over, calls)
    if args.mono_only:
        return

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
    if args.compare_agent:
        cmdline += " --compare-agent OTHER"
    floor = over["floor-clock"]
    rows = []
    for m in coreclr_modes:
        ratio_base = med[m] / med["baseline"]
        ratio_floor = over[m] / floor if floor > 0 and m in ("exact", "sampled", "floor-clock", "exact@other", "sampled@other") else None
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
