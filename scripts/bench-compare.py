#!/usr/bin/env python3
"""Sonde's performance trajectory in one command: this build's agent against another one (the
previous), EventPipe's sampler and the kernel's own sampler (`perf record`) as the floor, over
four workloads, in ONE run of many interleaved rounds. Every change to the agent's sampling,
start-up or JIT paths lands with this table in BENCHMARKS.md ("How to measure a change to the
agent").

Workloads (`--workloads`, all four by default):

  loop      tests/apps/Busy.cs, one thread, MILLIONS million iterations after a 600 ms warm-up:
            CPU-bound steady state. Its wall is the program's own timing of the loop (its
            `elapsed_ms`, start-up and warm-up excluded). The rows "loop, net of start-up" give
            its CPU minus the trivial program's CPU in the same mode and round (so asking for
            the loop measures `trivial` too): perf's and the controllers' fixed costs cancel out
  trivial   tests/apps/ExitCode.cs: start-up and exit, the fixed cost
  mcs       Mono's C# compiler (mcs.exe) on .NET 8 compiling five files: JIT-heavy, many modules
  roslyn    Roslyn (target/roslyn/Microsoft.CodeAnalysis*.dll, driven by tests/tools/Csc.cs as
            the tests run it) on .NET 8 compiling tests/apps/Demo.cs: ~3x mcs's JIT work
  mono-mcs  the same mcs.exe on Mono (`mono`, SONDE_MONO) compiling the same five files: Mono's
            own sampler, JIT and AOT loads (`--mono`, or in `--workloads`; not in the default
            set). EventPipe is CoreCLR's: not run on it

Modes, each run on every workload in every round (their order rotated from round to round, so
machine noise hits all of them alike):

  bare          the program alone
  this agent    `sonde record --rate RATE` with this build's agent (target/release)
  other agent   the same controller with `--agent` (`SONDE_AGENT=OLD.so`); left out without it
  EventPipe     the runtime's own sample profiler, enabled by environment variables (dotnet-trace's
                default cpu-sampling providers, to a .nettrace file); its rate is fixed at 1 kHz
  perf          `perf record -F RATE -e task-clock --call-graph fp -o /dev/null`: the kernel's
                per-thread sampler, frame-pointer chains into a ring, no signal: the floor. perf's
                own start (it reads /proc/kallsyms) costs it ~0.25 s of CPU here, so its floor is
                the loop's own timing and the loop's CPU net of start-up, not its other rows

Figures: medians over the rounds of the wall time and of the CPU of the whole process tree (user
+ system of the command and all its descendants, `RUSAGE_CHILDREN`: for `sonde record` the
controller and the program with the agent's threads; for perf, perf itself), each against bare;
and this agent against the other, as the median of each round's ratio (both ran in that round).

Usage: scripts/bench-compare.py [--agent OLD/libsonde_agent.so] [--workloads loop,trivial,mcs,roslyn]
                                [--mono] [--rounds 15] [--rate 1000] [--millions 2000] [--markdown]
`--markdown` prints the table for BENCHMARKS.md with the date, the commit and the exact command.
Needs: cargo build --release; scripts/setup.sh (SONDE_DOTNET, SONDE_MCS, Roslyn in target/roslyn);
/usr/lib/mono/4.5 (Debian's mono-mcs) for mcs.exe; `perf` (Debian's linux-perf). Keep the other
agent in a directory only its owner can write (the agent refuses one others could).
"""
import argparse
import datetime
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench import ROOT, SONDE, compile_app, cpu_of, env_file  # noqa: E402

MONO_LIB = Path("/usr/lib/mono/4.5")
MCS_FILES = ["Demo", "Calls", "Harm", "Busy", "Leaves"]
ROSLYN_FILE = "Demo"
WORKLOADS = ["loop", "trivial", "mcs", "roslyn", "mono-mcs"]
DEFAULT_WORKLOADS = ["loop", "trivial", "mcs", "roslyn"]
# Modes that only mean something on CoreCLR: left out for the Mono workload.
CORECLR_ONLY = {"EventPipe", "this agent, signal"}
# dotnet-trace's default (cpu-sampling) profile, as scripts/bench-cost.py and bench-sampling.py
# run it: the sample profiler (1 kHz, fixed in the runtime) and the runtime's default keywords.
EVENTPIPE_CONFIG = "Microsoft-DotNETCore-SampleProfiler:0:5,Microsoft-Windows-DotNETRuntime:4c14fccbd:5"


def programs(names, tools, work, millions):
    """The command line of each workload asked for (compiled into `work`)."""
    dotnet, mcs = tools["SONDE_DOTNET"], tools["SONDE_MCS"]
    busy = compile_app(mcs, "Busy", work)  # its runtimeconfig.json serves mcs.exe too
    out = {}
    if "loop" in names:
        out["loop"] = [dotnet, str(busy), "1", str(millions)]
    if "trivial" in names:
        out["trivial"] = [dotnet, str(compile_app(mcs, "ExitCode", work)), "0"]
    if "mcs" in names or "mono-mcs" in names:
        if not (MONO_LIB / "mcs.exe").exists():
            sys.exit(f"bench-compare: no {MONO_LIB / 'mcs.exe'} (Debian's mono-mcs) for the mcs workload")
        (work / "mcs").mkdir()
        shutil.copy(MONO_LIB / "mcs.exe", work / "mcs" / "mcs.exe")
        shutil.copy(busy.with_suffix(".runtimeconfig.json"), work / "mcs" / "mcs.runtimeconfig.json")
        refs = [f"-r:{MONO_LIB / a}" for a in ("mscorlib.dll", "System.dll", "System.Core.dll")]
        sources = [str(ROOT / "tests/apps" / f"{n}.cs") for n in MCS_FILES]
        args = [str(work / "mcs" / "mcs.exe"), "-nostdlib", *refs, "-t:library", f"-out:{work / 'mcs-out.dll'}", *sources]
        if "mcs" in names:
            out["mcs"] = [dotnet, *args]
        if "mono-mcs" in names:
            mono = tools.get("SONDE_MONO") or shutil.which("mono")
            if not mono:
                sys.exit("bench-compare: no Mono (SONDE_MONO, or `mono` on PATH) for the mono-mcs workload")
            out["mono-mcs"] = [mono, *args]
    if "roslyn" in names:
        # Csc.exe beside the Roslyn DLLs, run by dotnet directly (target/roslyn/csc is a shell
        # wrapper: one more process in the tree).
        driver = Path(tools.get("SONDE_CSC", ROOT / "target/roslyn/csc")).parent / "Csc.exe"
        if not driver.exists():
            sys.exit(f"bench-compare: no {driver}: run scripts/setup-runtime.sh")
        out["roslyn"] = [dotnet, str(driver), f"-out:{work / 'roslyn-out.exe'}",
                         str(ROOT / "tests/apps" / f"{ROSLYN_FILE}.cs")]
    return out


def modes(args, work):
    """Mode -> (prefix to the program's command, environment)."""
    # Nothing of the caller's runtime or profiler settings leaks in (a SONDE_AGENT would make
    # "this agent" another one).
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SONDE_", "CORECLR_", "DOTNET_"))}
    record = [str(SONDE), "record", "-q", "-o", str(work / "r.sonde"), "--force", "--rate", str(args.rate), "--"]
    out = {"bare": ([], base), "this agent": (record, base)}
    if args.signal:
        out["this agent, signal"] = (record, dict(base, SONDE_SAMPLER="signal"))
    if args.agent:
        # An agent of another protocol version needs its own controller.
        other = [args.other_sonde or str(SONDE)] + record[1:]
        out["other agent"] = (other, dict(base, SONDE_AGENT=args.agent))
    out["EventPipe"] = ([], dict(base, DOTNET_EnableEventPipe="1", DOTNET_EventPipeConfig=EVENTPIPE_CONFIG,
                                 DOTNET_EventPipeOutputPath=str(work / "trace.nettrace")))
    perf = shutil.which("perf") or sys.exit("bench-compare: no `perf` on PATH (Debian: apt-get install linux-perf)")
    # --no-bpf-event: perf's side-band thread for BPF programs, which only costs perf's own exit
    # (about 0.7 s of wall here) and changes nothing in the program's sampling.
    out["perf"] = ([perf, "record", "-q", "--no-bpf-event", "-F", str(args.rate), "-e", "task-clock",
                    "--call-graph", "fp", "-o", "/dev/null", "--"], base)
    return out


def loop_ms(out):
    """Busy.exe's own timing of its loop."""
    m = re.search(r"elapsed_ms=([\d.]+)", out)
    if not m:
        sys.exit(f"bench-compare: unexpected output of Busy.exe: {out!r}")
    return float(m.group(1)) / 1000


def stale_build():
    """A warning when a source of the agent is newer than the release build (the table would
    name a commit it did not measure), else None."""
    lib = SONDE.parent / "libsonde_agent.so"
    if not lib.exists() or not SONDE.exists():
        sys.exit("bench-compare: build first: cargo build --release")
    built = min(lib.stat().st_mtime, SONDE.stat().st_mtime)
    for dirpath, dirs, files in os.walk(ROOT / "crates"):
        dirs[:] = [d for d in dirs if d not in ("tests", "examples", "benches")]
        for f in files:
            path = Path(dirpath) / f
            if f.endswith((".rs", ".toml")) and path.stat().st_mtime > built:
                return f"{path.relative_to(ROOT)} is newer than target/release: run cargo build --release first"
    return None


def commit():
    """`git rev-parse --short HEAD`, marked when the work tree has uncommitted changes."""
    git = lambda *a: subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True).stdout.strip()
    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + (" + uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else "")


def applies(workload, mode):
    """Whether `mode` is run on `workload` (CoreCLR's own modes are not run on Mono)."""
    return not (workload == "mono-mcs" and mode in CORECLR_ONLY)


def measure(args, progs, mode_table):
    """{(workload, mode): [(wall s, CPU s) per round]}, modes interleaved and rotated per round."""
    names = list(mode_table)
    # One untimed pass: every program bare, every mode once on the cheapest, so that the first
    # round does not pay for a cold page cache alone.
    warm = "trivial" if "trivial" in progs else next(iter(progs))
    for w, cmd in progs.items():
        cpu_of(cmd, mode_table["bare"][1])
    for m in names[1:]:
        prefix, env = mode_table[m]
        if applies(warm, m):
            cpu_of(prefix + progs[warm], env)
    runs = {(w, m): [] for w in progs for m in names if applies(w, m)}
    for r in range(args.rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for w, cmd in progs.items():
            for m in order:
                if not applies(w, m):
                    continue
                prefix, env = mode_table[m]
                cpu, wall, out = cpu_of(prefix + cmd, env)
                runs[(w, m)].append((loop_ms(out) if w == "loop" else wall, cpu))
        print(f"round {r + 1}/{args.rounds}", file=sys.stderr)
    if "loop" in progs:  # the loop's CPU net of start-up: minus trivial's, same mode and round
        for m in names:
            runs[("loop, net of start-up", m)] = [
                (None, lc - tc) for (_, lc), (_, tc) in zip(runs[("loop", m)], runs[("trivial", m)])]
    return runs


def table(runs, names):
    """Rows (workload, mode, wall, wall vs bare, CPU, CPU vs bare) and, per workload, this agent
    against the other: (workload, wall ratio, CPU ratio), medians of the rounds' ratios."""
    med = statistics.median
    rows, pairs = [], []
    order = ["loop", "loop, net of start-up", "trivial", "mcs", "roslyn", "mono-mcs"]
    for w in sorted(dict.fromkeys(w for w, _ in runs), key=order.index):
        bare = runs[(w, "bare")]
        bw = med(x for x, _ in bare) if bare[0][0] is not None else None
        bc = med(c for _, c in bare)
        for m in (m for m in names if (w, m) in runs):
            wall = med(x for x, _ in runs[(w, m)]) if bw is not None else None
            cpu = med(c for _, c in runs[(w, m)])
            if m == "bare":
                rows.append((w, m, wall, None, cpu, None))
            else:
                rows.append((w, m, wall, None if wall is None else wall / bw - 1, cpu, cpu / bc - 1))
        if "other agent" in names:
            this, other = runs[(w, "this agent")], runs[(w, "other agent")]
            wr = med(a[0] / b[0] for a, b in zip(this, other)) - 1 if bw is not None else None
            pairs.append((w, wr, med(a[1] / b[1] for a, b in zip(this, other)) - 1))
    return rows, pairs


def ms(s):
    return "" if s is None else f"{s * 1000:.1f} ms"


def pct(x):
    return "" if x is None else f"{x * 100:+.1f}%"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--agent", help="the other agent library (e.g. the previous commit's libsonde_agent.so)")
    ap.add_argument("--other-sonde", help="the controller for --agent when it speaks another protocol version "
                    "(the same build's `sonde`)")
    ap.add_argument("--signal", action="store_true",
                    help="also this agent with its signal sampler (SONDE_SAMPLER=signal), the fallback")
    ap.add_argument("--workloads", help="comma-separated, of " + ",".join(WORKLOADS) + " (default: "
                    + ",".join(DEFAULT_WORKLOADS) + ")")
    ap.add_argument("--mono", action="store_true",
                    help="the Mono workload (mono-mcs): alone, or with those --workloads names")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--rate", type=int, default=1000, help="Sonde's and perf's rate, Hz (EventPipe's is 1 kHz)")
    ap.add_argument("--millions", type=int, default=2000, help="the loop's iterations, millions (2000: ~5 s, so that start-up is a small part)")
    ap.add_argument("--markdown", action="store_true", help="print the table for BENCHMARKS.md")
    # The one-program form BENCHMARKS.md's earlier sections ran (`--program mcs`): that workload.
    ap.add_argument("--program", choices=["mcs", "trivial"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    asked = args.program or args.workloads or ("" if args.mono else ",".join(DEFAULT_WORKLOADS))
    names = [w.strip() for w in asked.split(",") if w.strip()] + (["mono-mcs"] if args.mono else [])
    unknown = [w for w in names if w not in WORKLOADS]
    if unknown or not names:
        sys.exit(f"bench-compare: --workloads: unknown {', '.join(unknown) or '(none)'}; of {','.join(WORKLOADS)}")
    if "loop" in names and "trivial" not in names:
        names.append("trivial")  # the loop's net of start-up subtracts it
    names = [w for w in WORKLOADS if w in names]
    if args.agent:
        if not Path(args.agent).is_file():
            sys.exit(f"bench-compare: --agent {args.agent}: no such file")
        args.agent = str(Path(args.agent).resolve())
    warning = stale_build()
    if warning:
        print(f"bench-compare: warning: {warning}", file=sys.stderr)
    command = "scripts/bench-compare.py" + "".join(f" {shlex.quote(a)}" for a in sys.argv[1:])
    head, today = commit(), datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")

    work = Path(tempfile.mkdtemp(prefix="sonde-bench-compare-"))
    progs = programs(names, env_file(), work, args.millions)
    mode_table = modes(args, work)
    runs = measure(args, progs, mode_table)
    shutil.rmtree(work, ignore_errors=True)
    rows, pairs = table(runs, list(mode_table))

    label = {"this agent": "sonde, this agent", "other agent": "sonde, other agent",
             "this agent, signal": "sonde, this agent, signal sampler",
             "EventPipe": "EventPipe, 1 kHz", "perf": "perf record (floor)"}
    about = (f"medians of {args.rounds} interleaved rounds, {today}, commit {head}; sonde and perf at "
             f"{args.rate} Hz; wall against bare (the loop's: its own timing of the loop), CPU of the whole "
             f"process tree against bare")
    other = f"; the other agent: {args.agent}" if args.agent else "; no other agent (--agent)"
    if args.markdown:
        print(f"\n`{command}` — {about}{other}\n")
        print("| workload | mode | wall | vs bare | CPU | vs bare |")
        print("|---|---|---:|---:|---:|---:|")
        for w, m, wall, wr, cpu, cr in rows:
            print(f"| {w} | {label.get(m, m)} | {ms(wall)} | {pct(wr)} | {ms(cpu)} | {pct(cr)} |")
        if pairs:
            print("\n| workload | this agent / other agent, wall | CPU |")
            print("|---|---:|---:|")
            for w, wr, cr in pairs:
                print(f"| {w} | {pct(wr)} | {pct(cr)} |")
    else:
        print(f"\n{command}\n{about}{other}\n")
        print(f"{'workload':<22} {'mode':<20} {'wall':>11} {'vs bare':>8} {'CPU':>11} {'vs bare':>8}")
        for w, m, wall, wr, cpu, cr in rows:
            print(f"{w:<22} {label.get(m, m):<20} {ms(wall):>11} {pct(wr):>8} {ms(cpu):>11} {pct(cr):>8}")
        if pairs:
            print("\nthis agent / other agent, median of the rounds' ratios:")
            for w, wr, cr in pairs:
                print(f"  {w:<22} wall {pct(wr) or '—':>7}   CPU {pct(cr):>7}")
    if warning:
        print(f"\nwarning: {warning}")


if __name__ == "__main__":
    main()
