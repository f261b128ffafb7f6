#!/usr/bin/env python3
"""Benchmark of the HTML report on a big profile (issue 4: a 1,000,000-node profile must render
to HTML in under 2 s, and the page must stay responsive).

  1. builds `sonde` and the `synthetic_profile` example in release mode;
  2. writes a synthetic traced profile (default 1,000,000 nodes, 8 threads, 4,000 methods;
     see crates/render/examples/synthetic_profile.rs);
  3. times `sonde report FILE --format html -o OUT` end to end (load + validate + render + write),
     median and best of --runs;
  4. with --browser, loads the page in headless chromium (playwright-core from tests/js) and
     reports when its data was parsed, when the first view was built and drawn, when the page was
     ready, and how long switching to one thread, back to all threads, and a search take.

Usage: scripts/bench-html.py [--nodes 1000000] [--runs 5] [--browser] [--markdown]
Needs: cargo; for --browser, scripts/setup-web.sh (node, tests/js/node_modules, /usr/bin/chromium).
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SONDE = ROOT / "target/release/sonde"
EXAMPLE = ROOT / "target/release/examples/synthetic_profile"

BROWSER_SCRIPT = r"""
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
const require = createRequire(process.argv[3]); // tests/js/package.json
const { chromium } = require('playwright-core');
const file = process.argv[2];
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sonde-bench-chromium-'));
const context = await chromium.launchPersistentContext(dir, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1440, height: 1000 },
});
try {
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  const t0 = Date.now();
  await page.goto(pathToFileURL(file).href, { timeout: 120000 });
  await page.waitForSelector('body[data-ready="1"]', { timeout: 120000 });
  const ready = Date.now() - t0;
  const marks = await page.evaluate(() =>
    Object.fromEntries(performance.getEntriesByType('mark').map((m) => [m.name, m.startTime])));
  const timed = (fn) => page.evaluate(fn);
  const oneThread = await timed(() => {
    const s = document.getElementById('thread');
    const t = performance.now();
    s.value = s.options[1].value;
    s.dispatchEvent(new Event('change'));
    return performance.now() - t;
  });
  const allAgain = await timed(() => {
    const s = document.getElementById('thread');
    const t = performance.now();
    s.value = '-1';
    s.dispatchEvent(new Event('change'));
    return performance.now() - t;
  });
  await page.fill('#search', 'Method12');
  const search = await timed(() => {
    const t = performance.now();
    document.getElementById('search').dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter' }));
    return performance.now() - t;
  });
  const heap = await page.evaluate(() => (performance.memory ? performance.memory.usedJSHeapSize : 0));
  console.log(JSON.stringify({ ready, marks, oneThread, allAgain, search, heap, errors }));
} finally {
  await context.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
"""


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--browser", action="store_true", help="also time the page in headless chromium")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()

    print("bench-html: building sonde and the synthetic_profile example (release)", file=sys.stderr)
    run(["cargo", "build", "--release", "--quiet", "-p", "sonde-cli", "--bin", "sonde"], cwd=ROOT)
    run(["cargo", "build", "--release", "--quiet", "-p", "sonde-render", "--example", "synthetic_profile"], cwd=ROOT)

    with tempfile.TemporaryDirectory(prefix="sonde-bench-html-") as tmp:
        profile = Path(tmp) / "big.sonde"
        html = Path(tmp) / "big.html"
        made = run([str(EXAMPLE), str(profile), str(args.nodes)], capture_output=True, text=True).stdout.strip()
        print(f"bench-html: {made}", file=sys.stderr)

        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            run([str(SONDE), "report", str(profile), "--format", "html", "-o", str(html)])
            times.append(time.perf_counter() - start)
        size_mb = html.stat().st_size / 1e6
        profile_mb = profile.stat().st_size / 1e6

        browser = None
        if args.browser:
            script = Path(tmp) / "load.mjs"
            script.write_text(BROWSER_SCRIPT)
            out = run(["node", str(script), str(html), str(ROOT / "tests/js/package.json")],
                      capture_output=True, text=True)
            browser = json.loads(out.stdout.strip().splitlines()[-1])

    median, best = statistics.median(times), min(times)
    rows = [
        ("nodes", f"{args.nodes:,}"),
        ("profile file", f"{profile_mb:.1f} MB"),
        ("HTML file", f"{size_mb:.1f} MB"),
        (f"sonde report --format html (median of {args.runs})", f"{median:.3f} s"),
        ("best", f"{best:.3f} s"),
    ]
    if browser:
        marks = browser["marks"]
        rows += [
            ("page: script starts (HTML parsed)", f"{marks.get('sonde:start', 0) / 1000:.2f} s"),
            ("page: data parsed and decoded", f"{marks.get('sonde:decoded', 0) / 1000:.2f} s"),
            ("page: all-threads view built", f"{marks.get('sonde:view', 0) / 1000:.2f} s"),
            ("page: first draw done", f"{marks.get('sonde:drawn', 0) / 1000:.2f} s"),
            ("page: ready (from navigation)", f"{browser['ready'] / 1000:.2f} s"),
            ("switch to one thread", f"{browser['oneThread']:.0f} ms"),
            ("back to all threads (cached)", f"{browser['allAgain']:.0f} ms"),
            ("search", f"{browser['search']:.0f} ms"),
        ]
        if browser["heap"]:
            rows.append(("JS heap after use", f"{browser['heap'] / 1e6:.0f} MB"))
        if browser["errors"]:
            rows.append(("page errors", "; ".join(browser["errors"])))
    if args.markdown:
        print("| measure | value |\n| --- | --- |")
        for k, v in rows:
            print(f"| {k} | {v} |")
    else:
        width = max(len(k) for k, _ in rows)
        for k, v in rows:
            print(f"{k:<{width}}  {v}")
    if median >= 2.0:
        print(f"bench-html: FAIL: {median:.3f} s is not under 2 s", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
