#!/usr/bin/env python3
"""What `sonde daemon` costs (docs/CONTINUOUS.md): N service-like .NET processes
(tests/apps/Steady.cs: 5 ms of work every 100 ms, for the whole run) on CoreCLR, without and
with the daemon profiling all of them at its default rate and pushing every 10 s to a loopback
stand-in for Pyroscope (tests/pyroscope/server.py), in alternating rounds.

Per round: the processes start together; after a warm-up (the daemon attaches within its first
scans) the CPU time of every process is read from /proc at the start and the end of a steady
window, and the daemon's own, so that the fixed cost of attaching is apart from the cost per
second. Reported: the processes' CPU per second in the window with and without the daemon (the
overhead), the work they did (rounds), and the daemon's CPU as a share of one core.

    source target/sonde-env.sh; cargo build --release
    python3 scripts/bench-daemon.py [--processes 20] [--rounds 3] [--window 30]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import ROOT, compile_app, env_file  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    """utime + stime of a process (all its threads), in seconds; None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def agent_threads_s(pid):
    """CPU time of the agent's own threads in process `pid` (named `sonde-…`), in seconds, exact
    (schedstat's nanoseconds); 0 once it is gone."""
    total = 0
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return 0
    for task in tasks:
        try:
            if (task / "comm").read_text().startswith("sonde-"):
                total += int((task / "schedstat").read_text().split()[0])
        except OSError:
            pass
    return total / 1e9


def one_round(dotnet, exe, n, warmup, window, daemon_cmd, env):
    daemon = None
    if daemon_cmd:
        daemon = subprocess.Popen(daemon_cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(1)
    seconds = warmup + window + 5
    procs = []
    for i in range(n):
        e = dict(env, SONDE_APP=f"steady-{i}")
        procs.append(subprocess.Popen([dotnet, str(exe), str(seconds), "5", "100"], env=e, stdout=subprocess.PIPE,
                                      text=True))
    time.sleep(warmup)
    start = [cpu_s(p.pid) for p in procs]
    a0 = sum(agent_threads_s(p.pid) for p in procs)
    d0 = cpu_s(daemon.pid) if daemon else 0
    time.sleep(window)
    end = [cpu_s(p.pid) for p in procs]
    a1 = sum(agent_threads_s(p.pid) for p in procs)
    d1 = cpu_s(daemon.pid) if daemon else 0
    rounds = 0
    for p in procs:
        out, _ = p.communicate(timeout=120)
        rounds += int(out.split("rounds=")[1].split()[0])
    daemon_total = 0
    if daemon:
        daemon_total = cpu_s(daemon.pid) or 0
        daemon.terminate()
        daemon.communicate(timeout=60)
    used = sum(e - s for s, e in zip(start, end))
    return used / window, rounds, (d1 - d0) / window, daemon_total, (a1 - a0) / window / n


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--processes", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warmup", type=int, default=15)
    p.add_argument("--window", type=int, default=30)
    a = p.parse_args()
    tools = env_file()
    work = Path(tempfile.mkdtemp(prefix="sonde-bench-daemon-"))
    exe = compile_app(tools["SONDE_MCS"], "Steady", work)
    dotnet = tools["SONDE_DOTNET"]
    server = subprocess.Popen([sys.executable, str(ROOT / "tests/pyroscope/server.py"), str(work / "server")],
                              stdout=subprocess.PIPE, text=True)
    port = int(server.stdout.readline().split()[1])
    daemon_cmd = [str(ROOT / "target/release/sonde"), "daemon", "--push", f"http://127.0.0.1:{port}",
                  "--include", "steady-*"]
    env = dict(os.environ)
    results = {"none": [], "daemon": []}
    for _ in range(a.rounds):
        results["none"].append(one_round(dotnet, exe, a.processes, a.warmup, a.window, None, env))
        results["daemon"].append(one_round(dotnet, exe, a.processes, a.warmup, a.window, daemon_cmd, env))
    server.terminate()
    med = lambda k, i: statistics.median(r[i] for r in results[k])  # noqa: E731
    base, prof = med("none", 0), med("daemon", 0)
    print(f"{a.processes} Steady.exe processes (5 ms of work per 100 ms), {a.rounds} alternating rounds, medians;"
          f" steady window of {a.window} s after {a.warmup} s")
    print("| | processes' CPU per second | work (rounds) | daemon's CPU (share of a core) |")
    print("|---|---:|---:|---:|")
    print(f"| no profiler | {base * 1000:.1f} ms | {med('none', 1):,.0f} | – |")
    print(f"| `sonde daemon` (97 Hz, push every 10 s) | {prof * 1000:.1f} ms | {med('daemon', 1):,.0f} |"
          f" {med('daemon', 2) * 100:.2f}% |")
    print()
    print(f"overhead on the processes: {(prof - base) / base * 100:+.2f}% of their CPU;"
          f" work done {(med('daemon', 1) - med('none', 1)) / med('none', 1) * 100:+.2f}%")
    print(f"the daemon's CPU over a whole round (attaching included): {med('daemon', 3):.2f} s")
    agent = med("daemon", 4)
    print(f"the agent's threads in each process (exact, schedstat): {agent * 1000:.3f} ms/s,"
          f" {agent * a.processes / base * 100:.2f}% of the processes' CPU without a profiler")


if __name__ == "__main__":
    sys.exit(main())
