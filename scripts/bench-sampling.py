#!/usr/bin/env python3
"""Sonde's sampling benchmark: in one run, on a CPU-bound program with 1 thread and with many
busy threads (tests/apps/Busy.cs, fixed work), compares

  baseline        the program without any profiler
  sonde-100       sonde record --mode sampling --rate 100   (cpu clock)
  sonde-1000      sonde record --mode sampling --rate 1000  (cpu clock)
  eventpipe-1000  the runtime's own EventPipe sampler (what dotnet-trace uses), enabled with
                  environment variables, writing a .nettrace file. Its rate is fixed at 1 kHz
                  inside the runtime (ep_sample_profiler_set_sampling_rate), so it has no 100 Hz row.

Runs are interleaved (round-robin) so machine noise hits every mode alike; figures are medians.
Overhead is the program's own timed part (Stopwatch) against the baseline. The effective rate is
samples taken per second of CPU time of the sampled threads (from the profile).

Usage: scripts/bench-sampling.py [--rounds 5] [--threads 32] [--millions 400] [--markdown]
Needs: cargo build --release; scripts/setup-runtime.sh.
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=32)
    ap.add_argument("--millions", type=int, default=400)
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    if not SONDE.exists():
        sys.exit("bench: build first: cargo build --release")
    tools = env_file()
    work = Path(tempfile.mkdtemp(prefix="sonde-bench-sampling-"))
    exe = compile_app(tools["SONDE_MCS"], "Busy", work)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("SONDE_", "CORECLR_", "DOTNET_"))}
    eventpipe_env = {
        "DOTNET_EnableEventPipe": "1",
        "DOTNET_EventPipeOutputPath": str(work / "trace.nettrace"),
        "DOTNET_EventPipeConfig": "Microsoft-DotNETCore-SampleProfiler:0:5,Microsoft-Windows-DotNETRuntime:4c14fccbd:5",
    }
    results = []
    for threads in (1, args.threads):
        program = [tools["SONDE_DOTNET"], str(exe), str(threads), str(args.millions)]
        profiles = {rate: str(work / f"p{threads}-{rate}.sonde") for rate in (100, 1000)}
        modes = {
            "baseline": (program, {}),
            "sonde-100": ([str(SONDE), "-q", "record", "--rate", "100", "-o", profiles[100], "--"] + program, {}),
            "sonde-1000": ([str(SONDE), "-q", "record", "--rate", "1000", "-o", profiles[1000], "--"] + program, {}),
            "eventpipe-1000": (program, eventpipe_env),
        }
        times = {m: [] for m in modes}
        for _ in range(args.rounds):
            for mode, (cmd, extra) in modes.items():
                times[mode].append(run(cmd, {**base_env, **extra}))
        med = {m: statistics.median(t) for m, t in times.items()}
        rates = {}
        for rate, path in profiles.items():
            report = json.loads(subprocess.run([str(SONDE), "report", path, "--format", "json"],
                                               capture_output=True, text=True, check=True).stdout)
            cpu_s = sum(t["cpu_ns"] for t in report["threads"]) / 1e9
            lost = sum(report["samples_lost"].values())
            rates[rate] = (report["samples_taken"], cpu_s, lost)
        trace_mb = (work / "trace.nettrace").stat().st_size / 1e6 if (work / "trace.nettrace").exists() else 0
        results.append((threads, med, rates, trace_mb))

    cmdline = f"scripts/bench-sampling.py --rounds {args.rounds} --threads {args.threads} --millions {args.millions}"
    for threads, med, rates, trace_mb in results:
        base = med["baseline"]
        if args.markdown:
            print(f"\n**Busy.exe, {threads} thread(s), {args.millions}M iterations** (`{cmdline}`, median of {args.rounds})\n")
            print("| mode | timed part | overhead | samples taken | CPU s sampled | effective rate | lost |")
            print("|---|---:|---:|---:|---:|---:|---:|")
        else:
            print(f"\nBusy.exe threads={threads}: median of {args.rounds} rounds")
        for mode, t in med.items():
            over = 100 * (t / base - 1)
            extra = ("", "", "", "")
            if mode.startswith("sonde-"):
                taken, cpu_s, lost = rates[int(mode.split("-")[1])]
                extra = (f"{taken:,}", f"{cpu_s:.2f}", f"{taken / cpu_s:.0f} Hz" if cpu_s else "", f"{lost}")
            elif mode.startswith("eventpipe"):
                extra = ("", "", f"({trace_mb:.1f} MB trace)", "")
            if args.markdown:
                print(f"| {mode} | {t:.1f} ms | {over:+.2f}% | {extra[0]} | {extra[1]} | {extra[2]} | {extra[3]} |")
            else:
                print(f"  {mode:<15} {t:9.1f} ms  {over:+6.2f}%  {' '.join(e for e in extra if e)}")


if __name__ == "__main__":
    main()
