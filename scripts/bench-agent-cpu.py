#!/usr/bin/env python3
"""CPU that Sonde's own threads use while they sample a CPU-bound program (tests/apps/Busy.cs):
the agent's threads inside the profiled process (sonde-sampler, sonde-drain, sonde-ipc,
sonde-signal, read from /proc/PID/task/*/stat while it runs) and the `sonde record` controller,
as a share of one core over the run. The sampled thread's own cost is `sample_cost` (see
BENCHMARKS.md); this is the rest.

Usage: scripts/bench-agent-cpu.py [--threads 1,4] [--rates 100,1000] [--millions 4000]
                                  [--samplers timers,thread]
`timers`: the CPU clock's per-thread task-clock timers (the default where the kernel allows
them); `thread`: the sampler thread (SONDE_CPU_TIMERS=0, the fallback).
Needs: cargo build --release; scripts/setup.sh (SONDE_DOTNET, SONDE_MCS).
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import SONDE, compile_app, env_file  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(stat_path):
    fields = open(stat_path).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def agent_threads(controller_pid):
    """{thread name: CPU s} of the agent's threads in the controller's child processes."""
    found = {}
    for comm in glob.glob("/proc/[0-9]*/comm"):
        pid = comm.split("/")[2]
        try:
            if open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[1] != str(controller_pid):
                continue
            for task in glob.glob(f"/proc/{pid}/task/*"):
                name = open(task + "/comm").read().strip()
                if name.startswith("sonde"):
                    found[(pid, task, name)] = cpu_seconds(task + "/stat")
        except (OSError, IndexError):
            pass
    return found


def run(tools, exe, out, threads, rate, millions, sampler):
    cmd = [str(SONDE), "record", "-q", "--rate", str(rate), "-o", str(out), "--",
           tools["SONDE_DOTNET"], str(exe), str(threads), str(millions)]
    env = dict(os.environ)
    if sampler == "thread":
        env["SONDE_CPU_TIMERS"] = "0"
    start = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, env=env)
    last, controller = {}, 0.0
    while p.poll() is None:
        last.update(agent_threads(p.pid))
        try:
            controller = cpu_seconds(f"/proc/{p.pid}/stat")
        except OSError:
            pass
        time.sleep(0.05)
    wall = time.monotonic() - start
    if p.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed ({p.returncode})")
    by_name = {}
    for (_, _, name), seconds in last.items():
        by_name[name] = by_name.get(name, 0.0) + seconds
    return wall, by_name, controller


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default="1,4")
    ap.add_argument("--rates", default="100,1000")
    ap.add_argument("--millions", type=int, default=4000)
    ap.add_argument("--samplers", default="timers,thread")
    args = ap.parse_args()
    if not SONDE.exists():
        sys.exit("bench: build first: cargo build --release")
    tools = env_file()
    work = Path(tempfile.mkdtemp(prefix="sonde-bench-agent-cpu-"))
    exe = compile_app(tools["SONDE_MCS"], "Busy", work)
    print("| CPU clock sampled by | busy threads | rate | wall | sonde-sampler | other agent threads | controller | Sonde's threads, % of a core |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for sampler_kind in args.samplers.split(","):
        for threads in map(int, args.threads.split(",")):
            for rate in map(int, args.rates.split(",")):
                wall, by_name, controller = run(tools, exe, work / "b.sonde", threads, rate, args.millions, sampler_kind)
                sampler = by_name.pop("sonde-sampler", 0.0)
                others = sum(by_name.values())
                share = 100 * (sampler + others + controller) / wall
                print(f"| {sampler_kind} | {threads} | {rate} Hz | {wall:.2f} s | {sampler:.2f} s | {others:.2f} s | {controller:.2f} s | {share:.1f}% |")


if __name__ == "__main__":
    main()
