#!/usr/bin/env python3
"""Sonde's sampling benchmark: in one run, on a CPU-bound program with 1 thread and with many
busy threads (tests/apps/Busy.cs, fixed work), compares

  baseline        the program without any profiler
  sonde-100       sonde record --mode sampling --rate 100   (cpu clock)
  sonde-1000      sonde record --mode sampling --rate 1000  (cpu clock)
  eventpipe-1000  the runtime's own EventPipe sampler (what dotnet-trace uses), enabled with
                  environment variables, writing a .nettrace file. Its rate is fixed at 1 kHz
                  inside the runtime (ep_sample_profiler_set_sampling_rate), so it has no 100 Hz row.

and the same Busy.exe on Mono (`--mono`, or `--mono-only` for these rows alone):

  mono-baseline         `mono Busy.exe` without any profiler
  mono-sonde-100/1000   sonde record --mode sampling --rate 100/1000 (cpu clock): Mono's own
                        sampler thread signals the threads, Sonde walks them in its callback
  mono-empty-1000       Mono's sampler at 1 kHz with a sample callback that returns at once
                        (SONDE_BENCH_HOOKS=empty): the floor under any profiler using it
  mono-log-real-100/1000  Mono's log profiler, `--profile=log:sample-real=FREQ` (wall-clock
                        sampling, the mode Sonde uses), writing an .mlpd file
  mono-log-1000         `--profile=log:sample=1000`: its default process-time mode, which ticks on
                        the process's CPU clock (at most the kernel's tick rate, ~250 Hz)

For Sonde on Mono, "stacks" is how many stacks were walked (from the agent's log): a sample that
stands for several intervals (its thread was not signalled in time) is one stack. For Mono's log
profiler, "samples taken" is its hit count (every thread, idle ones too, from mprof-report).

Runs are interleaved (round-robin) so machine noise hits every mode alike; figures are medians.
Overhead is the program's own timed part (Stopwatch) against the baseline. The effective rate is
samples taken per second of CPU time of the sampled threads (from the profile).

With `--compare-agent PATH` (another build of libsonde_agent.so, e.g. before a change), the
sonde-1000 rows (CoreCLR and Mono) run a second time with that agent (`SONDE_AGENT=PATH`), named
`…@other`, in the same interleaved rounds.

Usage: scripts/bench-sampling.py [--rounds 5] [--threads 32] [--millions 400] [--mono | --mono-only]
                                 [--markdown] [--compare-agent PATH]
Needs: cargo build --release; scripts/setup-runtime.sh (SONDE_MONO, Mono's libmono-profiler and
mprof-report for the Mono rows).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import ROOT, SONDE, compile_app, env_file  # noqa: E402


def run(cmd, env):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"bench: {' '.join(map(str, cmd))} failed ({p.returncode}):\n{p.stderr}")
    m = re.search(r"elapsed_ms=([\d.]+)", p.stdout)
    if not m:
        sys.exit(f"bench: unexpected output {p.stdout!r}")
    return float(m.group(1))


def sonde_facts(path, log=None):
    """(samples taken, CPU s of the sampled threads, lost, stacks walked or None) of a profile."""
    report = json.loads(subprocess.run([str(SONDE), "report", path, "--format", "json"],
                                       capture_output=True, text=True, check=True).stdout)
    cpu_s = sum(t["cpu_ns"] for t in report["threads"]) / 1e9
    lost = ", ".join(f"{k} {v:,}" for k, v in report["samples_lost"].items() if v) or "0"
    stacks = None
    if log and Path(log).exists():
        m = re.search(r"samples: \d+ taken in (\d+) stacks", Path(log).read_text())
        stacks = int(m.group(1)) if m else None
    return report["samples_taken"], cpu_s, lost, stacks


def log_hits(mlpd):
    """Sample hits in a Mono log profiler output (mprof-report's summary), or None."""
    p = subprocess.run(["mprof-report", "--reports=sample", str(mlpd)], capture_output=True, text=True)
    hits = re.findall(r"(?:Unmanaged|Managed) hits:\s+(\d+)", p.stdout)
    return sum(int(h) for h in hits) if hits else None


def coreclr_modes(tools, exe, threads, args, work):
    program = [tools["SONDE_DOTNET"], str(exe), str(threads), str(args.millions)]
    eventpipe_env = {
        "DOTNET_EnableEventPipe": "1",
        "DOTNET_EventPipeOutputPath": str(work / "trace.nettrace"),
        "DOTNET_EventPipeConfig": "Microsoft-DotNETCore-SampleProfiler:0:5,Microsoft-Windows-DotNETRuntime:4c14fccbd:5",
    }
    record = [str(SONDE), "-q", "record"]
    return {
        "baseline": (program, {}, None),
        "sonde-100": (record + ["--rate", "100", "-o", str(work / f"p{threads}-100.sonde"), "--"] + program, {},
                      ("sonde", work / f"p{threads}-100.sonde", None)),
        "sonde-1000": (record + ["--rate", "1000", "-o", str(work / f"p{threads}-1000.sonde"), "--"] + program, {},
                       ("sonde", work / f"p{threads}-1000.sonde", None)),
        "eventpipe-1000": (program, eventpipe_env, ("trace", work / "trace.nettrace", None)),
    }


def mono_modes(tools, exe, threads, args, work):
    mono = tools.get("SONDE_MONO")
    if not mono:
        sys.exit("bench: SONDE_MONO is not set in target/sonde-env.sh; run scripts/setup-runtime.sh")
    program = [mono, str(exe), str(threads), str(args.millions)]
    record = [str(SONDE), "-q", "record"]
    modes = {"mono-baseline": (program, {}, None)}
    for rate in (100, 1000):
        out, log = work / f"m{threads}-{rate}.sonde", work / f"m{threads}-{rate}.log"
        modes[f"mono-sonde-{rate}"] = (record + ["--rate", str(rate), "-o", str(out), "--agent-log", str(log), "--"]
                                       + program, {}, ("sonde", out, log))
    modes["mono-empty-1000"] = (record + ["--rate", "1000", "-o", str(work / "empty.sonde"), "--"] + program,
                                {"SONDE_BENCH_HOOKS": "empty"}, None)
    for name, option in (("mono-log-real-100", "sample-real=100"), ("mono-log-real-1000", "sample-real=1000"),
                         ("mono-log-1000", "sample=1000")):
        mlpd = work / f"{name}-{threads}.mlpd"
        modes[name] = ([mono, f"--profile=log:{option},output={mlpd}"] + program[1:], {}, ("mlpd", mlpd, None))
    return modes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=32)
    ap.add_argument("--millions", type=int, default=400)
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--mono", action="store_true", help="add the Mono rows")
    ap.add_argument("--mono-only", action="store_true", help="only the Mono rows")
    ap.add_argument("--compare-agent", metavar="PATH", help="also run the sonde-1000 rows with this agent")
    args = ap.parse_args()
    if args.compare_agent and not Path(args.compare_agent).is_file():
        sys.exit(f"bench: --compare-agent {args.compare_agent}: no such file")
    if not SONDE.exists():
        sys.exit("bench: build first: cargo build --release")
    tools = env_file()
    work = Path(tempfile.mkdtemp(prefix="sonde-bench-sampling-"))
    exe = compile_app(tools["SONDE_MCS"], "Busy", work)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("SONDE_", "CORECLR_", "DOTNET_"))}
    results = []
    for threads in (1, args.threads):
        modes = {} if args.mono_only else coreclr_modes(tools, exe, threads, args, work)
        if args.mono or args.mono_only:
            modes.update(mono_modes(tools, exe, threads, args, work))
        if args.compare_agent:
            other = {"SONDE_AGENT": str(Path(args.compare_agent).resolve())}
            for m in ("sonde-1000", "mono-sonde-1000"):
                if m in modes:
                    cmd, extra, output = modes[m]
                    kind, path, log = output
                    alt = Path(str(path) + ".other")
                    alt_log = Path(str(log) + ".other") if log else None
                    cmd = [str(alt) if c == str(path) else str(alt_log) if log and c == str(log) else c for c in cmd]
                    modes[f"{m}@other"] = (cmd, {**extra, **other}, (kind, alt, alt_log))
        times = {m: [] for m in modes}
        for _ in range(args.rounds):
            for mode, (cmd, extra, _) in modes.items():
                times[mode].append(run(cmd, {**base_env, **extra}))
        med = {m: statistics.median(t) for m, t in times.items()}
        facts = {}
        for mode, (_, _, output) in modes.items():
            if output is None:
                continue
            kind, path, log = output
            if kind == "sonde":
                facts[mode] = sonde_facts(str(path), log)
            elif kind == "trace":
                facts[mode] = f"({path.stat().st_size / 1e6:.1f} MB trace)" if path.exists() else ""
            else:
                hits = log_hits(path)
                size = path.stat().st_size / 1e6 if path.exists() else 0
                facts[mode] = (f"{hits:,}" if hits is not None else "?", f"({size:.1f} MB .mlpd)")
        results.append((threads, med, facts))

    flags = " --mono-only" if args.mono_only else " --mono" if args.mono else ""
    if args.compare_agent:
        flags += " --compare-agent OTHER"
    cmdline = (f"scripts/bench-sampling.py --rounds {args.rounds} --threads {args.threads} "
               f"--millions {args.millions}{flags}")
    for threads, med, facts in results:
        if args.markdown:
            print(f"\n**Busy.exe, {threads} thread(s), {args.millions}M iterations** (`{cmdline}`, median of {args.rounds})\n")
            print("| mode | timed part | overhead | samples taken | stacks | CPU s sampled | effective rate | lost |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|")
        else:
            print(f"\nBusy.exe threads={threads}: median of {args.rounds} rounds")
        for mode, t in med.items():
            base = med["mono-baseline" if mode.startswith("mono-") else "baseline"]
            over = 100 * (t / base - 1)
            extra = ("", "", "", "", "")
            fact = facts.get(mode)
            if isinstance(fact, tuple) and len(fact) == 4:
                taken, cpu_s, lost, stacks = fact
                rate = f"{taken / cpu_s:.0f} Hz" if cpu_s else ""
                if stacks is not None and cpu_s:
                    rate += f" ({stacks / cpu_s:.0f} stacks/s)"
                extra = (f"{taken:,}", "" if stacks is None else f"{stacks:,}", f"{cpu_s:.2f}", rate, lost)
            elif isinstance(fact, tuple):
                extra = (fact[0], "", "", fact[1], "")
            elif isinstance(fact, str):
                extra = ("", "", "", fact, "")
            if args.markdown:
                print(f"| {mode} | {t:.1f} ms | {over:+.2f}% | " + " | ".join(extra) + " |")
            else:
                print(f"  {mode:<19} {t:9.1f} ms  {over:+6.2f}%  {'  '.join(e for e in extra if e)}")


if __name__ == "__main__":
    main()
