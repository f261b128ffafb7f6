#!/usr/bin/env python3
"""What a heap snapshot costs (issue 40): `sonde heap --pid` of tests/apps/Leak.cs holding N
sessions (each session: the object, its name, a 1,000-byte buffer — 3 objects), for several N.

Per size, medians of --rounds snapshots of one running program: the program's pause (the forced
collection and the runtime's walk, `pause_ns`), the whole command's wall time (attach, walk,
naming, the controller's decoding, dominators, paths, the file, the summary, detach), the
controller's CPU and peak memory (RUSAGE_CHILDREN, ru_maxrss), and the program's resident memory
before and after the snapshots (the agent holds no copy of the graph: its queue is at most 16
pieces of 64 KB).

Usage: scripts/bench-heap.py [--sizes 10000,100000,300000] [--rounds 3]
Needs: cargo build --release -p sonde-agent -p sonde-cli; scripts/setup.sh.
"""
import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import SONDE, compile_app, env_file  # noqa: E402


def rss_kb(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,100000,300000")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    tools = env_file()
    work = Path(tempfile.mkdtemp(prefix="sonde-bench-heap-"))
    exe = compile_app(tools["SONDE_MCS"], "Leak", work)
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        stop = work / f"stop-{size}"
        leak = subprocess.Popen([tools["SONDE_DOTNET"], str(exe), str(size), str(stop)], stdout=subprocess.PIPE, text=True)
        assert leak.stdout.readline().strip() == "ready"
        rss_before = rss_kb(leak.pid)
        pause, wall, cpu, peak, objects = [], [], [], [], 0
        for r in range(args.rounds):
            out = work / f"{size}-{r}.heap"
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.monotonic()
            subprocess.run([str(SONDE), "heap", "--pid", str(leak.pid), "-o", str(out), "--force"], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wall.append(time.monotonic() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
            peak.append(after.ru_maxrss)  # the largest child so far, in KB
            report = json.loads(subprocess.run([str(SONDE), "report", str(out), "--format", "json"], check=True,
                                               capture_output=True, text=True).stdout)
            pause.append(report["pause_ns"] / 1e6)
            objects = report["objects"] + report["unreachable_objects"]
            print(f"size {size} round {r + 1}/{args.rounds}", file=sys.stderr)
        rss_after = rss_kb(leak.pid)
        stop.write_text("")
        leak.wait()
        rows.append((size, objects, statistics.median(pause), statistics.median(wall), statistics.median(cpu),
                     max(peak) / 1024, rss_before / 1024, rss_after / 1024))
    print(f"\n`scripts/bench-heap.py --sizes {args.sizes} --rounds {args.rounds}` — medians\n")
    print("| sessions | objects | program paused | `sonde heap` wall | controller CPU | controller peak RSS (max so far) | program RSS before → after |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for size, objects, p, w, c, peak, before, after in rows:
        print(f"| {size:,} | {objects:,} | {p:.1f} ms | {w:.2f} s | {c:.2f} s | {peak:.0f} MB | {before:.0f} → {after:.0f} MB |")


if __name__ == "__main__":
    main()
