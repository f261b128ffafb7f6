#!/usr/bin/env python3
"""Where the agent's CPU goes in `perf record -g` runs of `sonde record`: each sample (CPU time
of the whole process tree, frame-pointer call chains) put in one row, by thread and by the first
of the agent's steps found on its stack (the agent is built with frame pointers; libc and the
runtime are not always, so some of the drain's samples have no agent frame: "drain: rest").

  perf record -F 5000 -g -o F -- sonde record -q -o r.sonde -- dotnet PROGRAM ...
  scripts/perf-agent-split.py "before=F_before*" "after=F_after*"

Prints a Markdown table: each row's share of each run's samples, min–max (median) over a group's
runs; the rows for Mono's callbacks (`mono PROGRAM`) and for the drain's Mono steps are empty on
CoreCLR, and the other way round. The last rows: the agent in all (its threads, and its frames on
the program's threads), and the agent's library as the leaf of a sample (`perf report --sort
dso`'s figure).
"""
import collections
import glob
import re
import statistics
import subprocess
import sys


def samples(path):
    """(thread name, [(symbol, dso)] leaf first) of each sample of a perf.data file."""
    out = subprocess.run(["perf", "script", "-i", path, "-F", "comm,ip,sym,dso"],
                         capture_output=True, text=True).stdout
    comm, frames = None, []
    for line in out.splitlines() + [""]:
        if not line.strip():
            if comm is not None:
                yield comm, frames
            comm, frames = None, []
        elif not line.startswith((" ", "\t")):
            comm, frames = line.strip(), []
        else:
            parts = line.strip().split(None, 1)
            m = re.match(r"(.*) \((.*)\)$", parts[1] if len(parts) > 1 else "")
            frames.append((m.group(1), m.group(2)) if m else (parts[-1], ""))


def kind(comm):
    if comm.startswith(("sonde-drain", "sonde-sampler")):
        return comm[:13]
    if comm.startswith("sonde-"):
        return "other agent threads"
    return "controller" if comm == "sonde" else "program"


def has(*names):
    return lambda frames: any(n in s for s, _ in frames for n in names)


ROWS = [
    ("program threads: JITCompilationStarted/Finished", "program",
     has("callback::jit_compilation_finished", "callback::jit_compilation_started")),
    ("program threads: signal handler", "program", has("handler::on_signal")),
    ("program threads: other callbacks (cached searches, module loads, shutdown)", "program",
     has("sonde_clr::callback::")),
    ("program threads: Mono's jit_begin/jit_done", "program",
     has("sonde_mono::profiler::jit_begin", "sonde_mono::profiler::jit_done")),
    ("program threads: Mono's sample_hit (the walk)", "program", has("sonde_mono::profiler::sample_hit")),
    ("program threads: Mono's other callbacks (threads, GC, exceptions, shutdown)", "program",
     has("sonde_mono::profiler::")),
    ("drain: native symbol tables", "sonde-drain", has("NativeNames", "native_symbol", "sonde_symbols", "_dl_addr")),
    ("drain: naming methods (module files' metadata)", "sonde-drain",
     has("ClrFrames::names", "ClrFrames::managed", "FrameResolver>::compiling", "MonoFrames::names")),
    ("drain: Mono's noted methods and code, taken in", "sonde-drain", has("Noted::take_in", "mono::sampling::noted")),
    ("drain: IL maps (GetILToNativeMapping3)", "sonde-drain", has("il_to_native_map")),
    ("drain: which addresses are code (images: mappings, JIT code)", "sonde-drain",
     has("Images::verdict", "ClrFrames::verdict")),
    ("drain: GetFunctionFromIP, code versions, reads", "sonde-drain",
     has("function_from_ip", "code_containing", "learn_shape", "process_vm_readv")),
    ("drain: frames, trees, lines (per sample)", "sonde-drain", has("Ring::drain", "drain::drain")),
    ("drain: rest", "sonde-drain", lambda f: True),
    ("sonde-sampler", "sonde-sampler", lambda f: True),
    ("other agent threads", "other agent threads", lambda f: True),
    ("controller (sonde)", "controller", lambda f: True),
]


LIBRARY = "libsonde_agent.so"


def shares(path):
    total, count, leaf = 0, collections.Counter(), 0
    for comm, frames in samples(path):
        total += 1
        k = kind(comm)
        row = next((name for name, kk, pred in ROWS if kk == k and pred(frames)), None)
        if row:
            count[row] += 1
        if frames and frames[0][1].endswith(LIBRARY):
            leaf += 1
    found = {name: 100 * count[name] / max(total, 1) for name, _, _ in ROWS}
    found[LIBRARY] = 100 * leaf / max(total, 1)
    return total, found


def span(values):
    lo, hi = f"{min(values):.2f}", f"{max(values):.2f}"
    if lo == hi:
        return f"{lo}%"
    return f"{lo}–{hi}% ({statistics.median(values):.2f}%)"


def main():
    groups = {}
    for arg in sys.argv[1:]:
        name, pattern = arg.split("=", 1)
        groups[name] = [shares(p) for p in sorted(glob.glob(pattern))]
    print("| share of the samples (process tree) | " + " | ".join(groups) + " |")
    print("|---|" + "---:|" * len(groups))
    for name, _, _ in ROWS:
        print(f"| {name} | " + " | ".join(span([s[name] for _, s in runs]) for runs in groups.values()) + " |")
    agent = lambda s: sum(v for k, v in s.items() if not k.startswith("controller") and k != LIBRARY)
    print("| **the agent in all** | " + " | ".join(span([agent(s) for _, s in runs]) for runs in groups.values()) + " |")
    print(f"| {LIBRARY} as the leaf (any thread) | " + " | ".join(span([s[LIBRARY] for _, s in runs]) for runs in groups.values()) + " |")
    print("| samples per run | " + " | ".join(", ".join(str(t) for t, _ in runs) for runs in groups.values()) + " |")


if __name__ == "__main__":
    main()
