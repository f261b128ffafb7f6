// The HTML report (`sonde report --format html`) in a real headless browser: Debian's chromium,
// driven by playwright-core. Run by crates/cli/tests/html_report.rs, which records real .NET
// programs, builds a profile with hostile method names, renders both and passes the files in:
//
//   SONDE_HTML_REAL      reports of real recordings, separated by ':' (at least one)
//   SONDE_HTML_NASTY     the report whose names try to inject markup (see NASTY below)
//   SONDE_HTML_SAMPLING  optional: a sampling-mode report
//   SONDE_HTML_LINES     a sampling report of Lines.exe with its symbols; SONDE_HTML_LINES_HOT
//                        its hot line
//   SONDE_HTML_EDGE      optional: reports that must merely load cleanly (empty, absurd figures)
//   SONDE_HTML_EVENTS    reports of recordings with the runtime's events: Alloc.exe's `alloc`
//                        (file name alloc.html) and `contend` (contend.html)
//   SONDE_HTML_CALLS     a report of tests/apps/native/calls.c recorded with --call-trace=4096
//   SONDE_HTML_COVERAGE  a coverage-mode report of tests/apps/Cover.cs (Roslyn, portable PDB);
//                        SONDE_HTML_COVERAGE_MARKS its `// HITS n` and `// NEVER` lines, as
//                        `line=hits` separated by commas
//   SONDE_TEST_ARTIFACTS where screenshots go (default: target/test-artifacts)
//
// By hand: `node --test tests/js/html-report.test.mjs` with those variables set.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chromium } from 'playwright-core';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const CHROMIUM = '/usr/bin/chromium';
const ARTIFACTS = process.env.SONDE_TEST_ARTIFACTS || path.join(HERE, '../../target/test-artifacts');
const TIMEOUT = 90_000;

/**
 * The hostile names the nasty profile holds (crates/cli/tests/html_report.rs builds it with the
 * same strings; the first as its display name, docs/NAMES.md): each must show up as text, and none
 * may run.
 */
const NASTY = {
  methods: ['Acme.Program.Main.<lambda>', '"><img src=x onerror=alert(1)>', '<script>alert(2)</script>'],
  thread: '<svg onload=alert(4)>',
  type: '<img src=q onerror=alert(9)>[]',
  exception: 'Acme.<script>alert(10)</script>Exception',
};

function reports(variable, required) {
  const value = process.env[variable];
  if (!value) {
    if (required) {
      assert.fail(`${variable} is not set: run this through \`cargo test -p sonde-cli --test html_report\`, which records and renders the reports`);
    }
    return [];
  }
  const files = value.split(path.delimiter).filter(Boolean);
  for (const file of files) assert.ok(fs.existsSync(file), `${variable} names ${file}, which does not exist`);
  return files;
}

let browser;
let userDataDir;

before(async () => {
  assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: run scripts/setup.sh (it installs Debian's chromium)`);
  userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sonde-chromium-'));
  browser = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1440, height: 1000 },
    deviceScaleFactor: 1,
  });
});

after(async () => {
  await browser?.close();
  if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
});

/**
 * Opens a report and records everything that must never happen: dialogs, page errors, console
 * errors, CSP violations and requests for anything but the file itself.
 */
async function open(file) {
  const page = await browser.newPage();
  const trouble = { dialogs: [], errors: [], requests: [] };
  page.on('dialog', async (dialog) => {
    trouble.dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    await dialog.dismiss();
  });
  page.on('pageerror', (e) => trouble.errors.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') trouble.errors.push(`console ${m.type()}: ${m.text()}`);
  });
  const url = pathToFileURL(file).href;
  page.on('request', (r) => {
    if (r.url() !== url) trouble.requests.push(r.url());
  });
  // Runs before the page's own script; init scripts are exempt from the page's CSP.
  await page.addInitScript(() => {
    window.__violations = [];
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__violations.push(`${e.violatedDirective}: ${e.blockedURI} ${e.sample}`);
    });
  });
  await page.goto(url);
  await page.waitForSelector('body[data-ready="1"]', { timeout: 60_000 });
  return { page, trouble };
}

async function assertClean(page, trouble) {
  const violations = await page.evaluate(() => window.__violations);
  assert.deepEqual(trouble.dialogs, [], 'a dialog opened: something from the profile ran');
  assert.deepEqual(violations, [], 'the Content-Security-Policy blocked something');
  assert.deepEqual(trouble.errors, [], 'the page logged errors');
  assert.deepEqual(trouble.requests, [], 'the page requested something besides itself');
}

/** Non-transparent pixels on the flame graph canvas. */
function inkedPixels(page) {
  return page.evaluate(() => {
    // Read a copy, so that the page's own canvas is never read back (which Chrome warns about).
    const canvas = document.getElementById('flame');
    const copy = document.createElement('canvas');
    copy.width = canvas.width;
    copy.height = canvas.height;
    const ctx = copy.getContext('2d', { willReadFrequently: true });
    ctx.drawImage(canvas, 0, 0);
    const data = ctx.getImageData(0, 0, copy.width, copy.height).data;
    let n = 0;
    for (let i = 3; i < data.length; i += 4) if (data[i] > 0) n++;
    return n;
  });
}

/** The `data-v` figures of one column of the hot-methods table. */
function column(page, index) {
  return page.$$eval(`#hot tbody tr td:nth-child(${index})`, (cells) => cells.map((c) => Number(c.dataset.v)));
}

async function headerIndex(page, key) {
  return page.$$eval('#hot thead th', (ths, k) => ths.findIndex((th) => th.dataset.sort === k) + 1, key);
}

function sorted(values, descending) {
  for (let i = 1; i < values.length; i++) {
    if (descending ? values[i] > values[i - 1] : values[i] < values[i - 1]) return false;
  }
  return true;
}

async function exerciseReport(file, { screenshot } = {}) {
  const { page, trouble } = await open(file);
  if (screenshot) {
    // As the page first appears: hot path open, the heaviest method's callers and callees shown.
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, screenshot), fullPage: true });
  }
  const hasCalls = await page.$eval('#hot', (t) => !t.classList.contains('no-calls'));

  // The flame graph is drawn, with frames beyond the base one (and in sight, for the pointer).
  await page.$eval('#flame-card', (e) => e.scrollIntoView({ block: 'start' }));
  assert.ok((await inkedPixels(page)) > 2000, 'the flame graph canvas is blank');
  const frames = Number(await page.$eval('#flame', (c) => c.dataset.frames));
  assert.ok(frames > 2, `the flame graph drew ${frames} frames`);

  // A tooltip over a frame, then click-to-zoom on the first frame above the base, and reset.
  const box = await page.$eval('#flame', (c) => {
    const r = c.getBoundingClientRect();
    return { x: r.x, y: r.y, width: r.width, height: r.height };
  });
  const row1 = { x: box.x + 3, y: box.y + box.height - 18 * 1.5 };
  await page.mouse.move(row1.x, row1.y);
  await page.waitForSelector('#tooltip:not([hidden])');
  const tip = await page.$eval('#tooltip', (t) => t.textContent);
  assert.match(tip, /Total.*%/s, `tooltip: ${tip}`);
  assert.match(tip, /Self/);
  if (hasCalls) assert.match(tip, /Calls/);
  await page.mouse.click(row1.x, row1.y);
  assert.equal(await page.$eval('#reset', (b) => b.disabled), false, 'clicking a frame did not zoom');
  assert.ok((await page.$$('#crumbs .crumb')).length >= 2, 'no breadcrumb for the zoomed frame');
  assert.ok((await inkedPixels(page)) > 2000, 'the zoomed flame graph is blank');
  await page.click('#reset');
  assert.equal(await page.$eval('#reset', (b) => b.disabled), true, 'reset did not unzoom');
  await page.click('#mode-icicle');
  assert.equal(await page.$eval('#mode-icicle', (b) => b.getAttribute('aria-pressed')), 'true');
  assert.ok((await inkedPixels(page)) > 2000, 'the icicle graph is blank');
  await page.click('#mode-flame');

  // The hot-methods table has rows and sorts by self, total and calls.
  const rows = await page.$$eval('#hot tbody tr', (r) => r.length);
  assert.ok(rows > 0, 'the hot-methods table is empty');
  const self = await headerIndex(page, 'self');
  const total = await headerIndex(page, 'total');
  assert.ok(sorted(await column(page, self), true), 'the table is not sorted by self, heaviest first');
  await page.click('#hot th[data-sort="self"] button');
  assert.ok(sorted(await column(page, self), false), 'clicking Self again did not sort ascending');
  await page.click('#hot th[data-sort="total"] button');
  assert.ok(sorted(await column(page, total), true), 'clicking Total did not sort by total');
  assert.equal(await page.$eval('#hot th[data-sort="total"]', (th) => th.getAttribute('aria-sort')), 'descending');
  if (hasCalls) {
    const calls = await headerIndex(page, 'calls');
    await page.click('#hot th[data-sort="calls"] button');
    assert.ok(sorted(await column(page, calls), true), 'clicking Calls did not sort by calls');
  }
  await page.click('#hot th[data-sort="self"] button');

  // The call tree renders with the hot path open, and expands and collapses.
  const treeRows = () => page.$$eval('#tree .trow', (r) => r.length);
  const initial = await treeRows();
  assert.ok(initial > 0, 'the call tree is empty');
  assert.ok((await page.$$('#tree .trow.hot')).length > 0, 'the hot path is not marked');
  const closed = await page.$('#tree .trow[aria-expanded="false"] .tog');
  if (closed) {
    await closed.click();
    const opened = await treeRows();
    assert.ok(opened > initial, 'expanding a call tree row added no rows');
    await closed.click();
    assert.equal(await treeRows(), initial, 'collapsing did not remove the rows it added');
  }
  const openRow = await page.$('#tree .trow[aria-expanded="true"] .tog');
  assert.ok(openRow, 'the hot path left no row open');
  await openRow.click();
  assert.ok((await treeRows()) < initial, 'collapsing an open row removed nothing');
  await openRow.click();

  // Clicking a method opens its callers and callees; a callee or caller link drills down.
  const first = await page.$eval('#hot tbody tr .mname', (b) => b.textContent);
  await page.click('#hot tbody tr:nth-child(1) .mname');
  assert.equal(await page.$eval('#bf .bf-name', (h) => h.textContent), first);
  assert.ok(await page.$('#bf-callers'), 'no callers table');
  assert.ok(await page.$('#bf-callees'), 'no callees table');
  // A link to another method (a recursive method lists itself among its callees).
  const links = await page.$$('#bf-callees .mname, #bf-callers .mname');
  let link = null;
  for (const candidate of links) {
    if ((await candidate.textContent()) !== first) {
      link = candidate;
      break;
    }
  }
  if (link) {
    const target = await link.textContent();
    await link.click();
    assert.equal(await page.$eval('#bf .bf-name', (h) => h.textContent), target, 'the drill-down link did not navigate');
    await page.click('#bf-back');
    assert.equal(await page.$eval('#bf .bf-name', (h) => h.textContent), first, 'Back did not return');
  }
  // A method name in the call tree opens it too.
  const treeName = await page.$eval('#tree .trow .mname', (b) => b.textContent);
  await page.click('#tree .trow .mname');
  assert.equal(await page.$eval('#bf .bf-name', (h) => h.textContent), treeName);

  // Search highlights matching frames and filters the table.
  const query = first.slice(-Math.min(first.length, 6));
  await page.fill('#search', query);
  await page.press('#search', 'Enter');
  await page.waitForSelector('#match-info:not([hidden])');
  assert.match(await page.$eval('#match-info', (e) => e.textContent), /match/);
  assert.ok(Number(await page.$eval('#flame', (c) => c.dataset.matches)) > 0, 'no frame highlighted');
  const names = await page.$$eval('#hot tbody .mname', (b) => b.map((x) => x.textContent));
  assert.ok(names.length > 0 && names.every((n) => n.toLowerCase().includes(query.toLowerCase())), `filtered table: ${names}`);
  await page.fill('#search', '');
  await page.press('#search', 'Enter');
  await page.waitForSelector('#match-info', { state: 'hidden' });

  // The thread selector changes every view.
  const options = await page.$$eval('#thread option:not([disabled])', (o) => o.map((x) => x.value));
  if (options.length > 2) {
    const all = await page.$eval('#view-info', (e) => e.textContent);
    const allTree = await page.$eval('#tree', (e) => e.textContent);
    await page.selectOption('#thread', options[options.length - 1]);
    const one = await page.$eval('#view-info', (e) => e.textContent);
    assert.notEqual(one, all, 'choosing a thread did not change the view');
    assert.match(one, /^thread /);
    assert.notEqual(await page.$eval('#tree', (e) => e.textContent), allTree, 'the call tree did not change');
    assert.ok((await inkedPixels(page)) > 500, 'the flame graph of one thread is blank');
    assert.ok((await page.$$('#hot tbody tr')).length > 0, 'the table of one thread is empty');
    await page.selectOption('#thread', '-1');
    assert.equal(await page.$eval('#view-info', (e) => e.textContent), all);
  }

  // The run's facts.
  const facts = await page.$eval('#facts', (e) => e.textContent);
  for (const fact of ['Command', 'Runtime', 'Mode', 'Wall time']) assert.ok(facts.includes(fact), `facts lack ${fact}`);

  await assertClean(page, trouble);
  await page.close();
}

test('real recordings render and respond', { timeout: TIMEOUT * 3 }, async () => {
  const files = reports('SONDE_HTML_REAL', true);
  for (const [i, file] of files.entries()) {
    await exerciseReport(file, { screenshot: i === 0 ? 'html-report.png' : `html-report-${i}.png` });
  }
});

test('a sampling profile renders and responds', { timeout: TIMEOUT }, async (t) => {
  const files = reports('SONDE_HTML_SAMPLING', false);
  if (files.length === 0) {
    t.skip('SONDE_HTML_SAMPLING not set');
    return;
  }
  for (const file of files) await exerciseReport(file, { screenshot: 'html-report-sampling.png' });
});

test('source lines: the per-line table and the source beside the counts', { timeout: TIMEOUT }, async () => {
  const [file] = reports('SONDE_HTML_LINES', true);
  const hot = Number(process.env.SONDE_HTML_LINES_HOT);
  assert.ok(hot > 0, 'SONDE_HTML_LINES_HOT names the hot line');
  const { page, trouble } = await open(file);
  await page.locator('#hot tbody .mname', { hasText: 'Lines.Work' }).first().click();
  assert.equal(await page.$eval('#bf .bf-name', (h) => h.textContent), 'Lines.Work');
  // The table: hottest line first.
  const rows = await page.$$eval('#bf-lines tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  assert.ok(rows.length > 0, 'no line table');
  assert.equal(Number(rows[0][0]), hot, `the hottest line is not the work: ${JSON.stringify(rows)}`);
  // The source, embedded: the hot line with its count, as text.
  const hit = await page.$$eval('#bf-source .src-line.hit', (ls) =>
    ls.map((l) => [l.querySelector('.src-no').textContent, l.querySelector('.src-count').textContent, l.querySelector('.src-text').textContent]));
  const line = hit.find(([n]) => Number(n) === hot);
  assert.ok(line, `the source does not show line ${hot}: ${JSON.stringify(hit)}`);
  assert.ok(line[2].includes('// HOT') && line[1].length > 0, `line ${hot}: ${JSON.stringify(line)}`);
  await page.$eval('#bf-card', (c) => c.scrollIntoView());
  await page.screenshot({ path: path.join(ARTIFACTS, 'html-report-lines.png'), fullPage: true });
  await assertClean(page, trouble);
  await page.close();
});

/** The timeline's shown range, [t0, t1] in ns. */
async function timelineRange(page) {
  const range = await page.$eval('#timeline', (c) => c.dataset.range);
  return range.split('-').map(Number);
}

/** Moves the pointer along row `row` of the timeline until the tooltip shows; its text, or null. */
async function timelineTipOnRow(page, row) {
  const box = await page.$eval('#timeline', (c) => {
    const r = c.getBoundingClientRect();
    return { x: r.x, y: r.y, width: r.width };
  });
  const y = box.y + 24 + row * 22 + 11;
  for (let x = box.x + 172; x < box.x + box.width - 8; x += 3) {
    await page.mouse.move(x, y);
    if (await page.$eval('#tooltip', (t) => !t.hidden)) return page.$eval('#tooltip', (t) => t.textContent);
  }
  return null;
}

async function exerciseTimeline(page) {
  await page.click('#tab-timeline');
  assert.equal(await page.$eval('#tree-views', (e) => e.hidden), true, 'the tree views stayed on the Timeline tab');
  assert.ok(Number(await page.$eval('#timeline', (c) => c.dataset.drawn)) > 0, 'the timeline drew nothing');
  const [t0, t1] = await timelineRange(page);
  assert.equal(t0, 0);
  // The wheel zooms in around the pointer, a drag pans, Reset shows the whole run again.
  const box = await page.$eval('#timeline', (c) => {
    const r = c.getBoundingClientRect();
    return { x: r.x, y: r.y, width: r.width, height: r.height };
  });
  const mid = { x: box.x + 170 + (box.width - 178) / 2, y: box.y + box.height / 2 };
  await page.mouse.move(mid.x, mid.y);
  await page.mouse.wheel(0, -300);
  await page.waitForFunction((full) => document.getElementById('timeline').dataset.range !== full, `${t0}-${t1}`);
  const [z0, z1] = await timelineRange(page);
  assert.ok(z1 - z0 < t1 - t0 && z0 > 0 && z1 < t1, `the wheel did not zoom in around the middle: ${z0}-${z1} of ${t0}-${t1}`);
  assert.equal(await page.$eval('#tl-reset', (b) => b.disabled), false);
  await page.mouse.move(mid.x, mid.y);
  await page.mouse.down();
  await page.mouse.move(mid.x + 120, mid.y, { steps: 4 });
  await page.mouse.up();
  const [p0, p1] = await timelineRange(page);
  assert.ok(p0 < z0 && Math.abs(p1 - p0 - (z1 - z0)) <= 1, `dragging right did not pan back in time: ${p0}-${p1} from ${z0}-${z1}`);
  await page.click('#tl-reset');
  assert.deepEqual(await timelineRange(page), [t0, t1], 'Reset zoom did not show the whole run');
  await page.click('#tl-in');
  const [i0, i1] = await timelineRange(page);
  assert.ok(Math.abs(i1 - i0 - (t1 - t0) / 2) <= 1, 'Zoom in did not halve the span');
  await page.click('#tl-out');
  assert.deepEqual(await timelineRange(page), [t0, t1], 'Zoom out did not undo Zoom in');
  assert.equal(await page.$eval('#tl-reset', (b) => b.disabled), true, 'Reset zoom is enabled on the whole run');
}

test("the runtime's events: Memory, Lock waits and Timeline", { timeout: TIMEOUT * 2 }, async () => {
  for (const file of reports('SONDE_HTML_EVENTS', true)) {
    const { page, trouble } = await open(file);
    const alloc = path.basename(file) === 'alloc.html';
    const tabs = Object.fromEntries(await page.$$eval('#tabs button', (b) => b.map((x) => [x.dataset.tab, !x.disabled])));
    assert.deepEqual(tabs, { cpu: true, alloc: alloc || tabs.alloc, wait: !alloc, timeline: true, coverage: false }, `${file}: tabs`);
    const cpuTop = await page.$eval('#hot tbody tr .mname', (b) => b.textContent);
    if (alloc) {
      await page.click('#tab-alloc');
      assert.equal(await page.$eval('#alloc-card', (e) => e.hidden), false, 'no allocation table on the Memory tab');
      const types = await page.$$eval('#alloc-types tbody tr td:first-child', (c) => c.map((x) => x.textContent));
      assert.equal(types[0], 'System.Byte[]', `types by bytes: ${types}`);
      for (const t of ['System.String', 'Acme.Small']) assert.ok(types.includes(t), `no ${t}: ${types}`);
      assert.match(await page.$eval('#alloc-info', (e) => e.textContent), /estimated from [\d,]+ samples/);
      // Allocate{Bytes,Strings,Small} allocate 200, 50 and 24 MB: the tree is weighed by bytes.
      const names = await page.$$eval('#hot tbody .mname', (b) => b.map((x) => x.textContent));
      assert.equal(names[0], 'Acme.Alloc.AllocateBytes', `methods by bytes: ${names}`);
      assert.match(await page.$eval('#view-info', (e) => e.textContent), /MB$/);
      assert.match(await page.$eval('#hot-unit', (e) => e.textContent), /bytes/);
      assert.ok((await inkedPixels(page)) > 2000, 'the allocation flame graph is blank');
      fs.mkdirSync(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: path.join(ARTIFACTS, 'html-report-memory.png'), fullPage: true });
    } else {
      await page.click('#tab-wait');
      assert.equal(await page.$eval('#alloc-card', (e) => e.hidden), true);
      const names = await page.$$eval('#hot tbody .mname', (b) => b.map((x) => x.textContent));
      assert.ok(names.slice(0, 3).includes('Acme.Alloc.WaitForLock'), `methods by lock wait: ${names}`);
      assert.ok((await inkedPixels(page)) > 500, 'the lock-wait flame graph is blank');
    }
    await exerciseTimeline(page);
    // Alloc.exe collects; its collections are on the first row, each with its figures.
    if (alloc) assert.match((await timelineTipOnRow(page, 0)) || '', /GC gen\d.*Pause/s, 'no collection under the pointer');
    await page.screenshot({ path: path.join(ARTIFACTS, alloc ? 'html-report-timeline.png' : 'html-report-timeline-contend.png'), fullPage: true });
    await page.click('#tab-cpu');
    assert.equal(await page.$eval('#hot tbody tr .mname', (b) => b.textContent), cpuTop, 'back on CPU, the table changed');
    assert.equal(await page.$eval('#alloc-card', (e) => e.hidden), true);
    await assertClean(page, trouble);
    await page.close();
  }
});

test('coverage: each source line coloured by whether it ran, with its count', { timeout: TIMEOUT }, async () => {
  const [file] = reports('SONDE_HTML_COVERAGE', true);
  const marks = (process.env.SONDE_HTML_COVERAGE_MARKS || '').split(',').filter(Boolean).map((m) => m.split('=').map(Number));
  assert.ok(marks.length > 5, 'SONDE_HTML_COVERAGE_MARKS names the marked lines');
  const { page, trouble } = await open(file);
  // A coverage profile opens on its Coverage tab, with Cover.cs shown.
  assert.equal(await page.$eval('#tab-coverage', (b) => b.getAttribute('aria-selected')), 'true');
  assert.equal(await page.$eval('#tree-views', (d) => d.hidden), true);
  const files = await page.$$eval('#cov-files tbody tr', (trs) => trs.map((tr) => [...tr.cells].map((c) => c.textContent)));
  assert.equal(files.length, 1, JSON.stringify(files));
  assert.ok(files[0][0].endsWith('Cover.cs'), JSON.stringify(files));
  assert.equal(files[0][4] + ' of ' + files[0][5], '3 of 4', `methods run: ${JSON.stringify(files)}`);
  assert.match(await page.$eval('#cov-file', (h) => h.textContent), /Cover\.cs$/);
  const lines = new Map(await page.$$eval('#cov-source .src-line', (ls) =>
    ls.map((l) => [Number(l.dataset.line), [l.className, l.querySelector('.src-count').textContent, l.querySelector('.src-text').textContent]])));
  for (const [line, hits] of marks) {
    const [cls, count, text] = lines.get(line) || [];
    assert.ok(text && /HITS|NEVER/.test(text), `line ${line} is not shown with its source: ${text}`);
    assert.ok(cls.includes(hits > 0 ? 'cov-ran' : 'cov-never'), `line ${line} (${hits} hits) is ${cls}`);
    assert.equal(count, String(hits), `line ${line}`);
  }
  // Lines without code (comments, lone braces) are plain.
  const plain = [...lines.values()].filter(([cls]) => !cls.includes('cov-'));
  assert.ok(plain.length > 0, 'every line is coloured');
  await page.screenshot({ path: path.join(ARTIFACTS, 'html-report-coverage.png'), fullPage: true });
  await assertClean(page, trouble);
  await page.close();
});

test("a call trace: each thread's calls on the timeline", { timeout: TIMEOUT }, async () => {
  const [file] = reports('SONDE_HTML_CALLS', true);
  const { page, trouble } = await open(file);
  await exerciseTimeline(page);
  assert.match(await page.$eval('#tl-info', (e) => e.textContent), /call trace: the latest 4,096 events per thread/);
  // Row 0 is the collector's (empty: no runtime); then the first thread's calls, one row per
  // depth: its outermost call, then the calls it made.
  assert.match((await timelineTipOnRow(page, 1)) || '', /calls!(main|worker).*call at depth 1/s, 'no outermost call under the pointer');
  assert.match((await timelineTipOnRow(page, 2)) || '', /calls!\w+.*call at depth 2.*Duration/s, 'no call at depth 2 under the pointer');
  const labels = (await page.$eval('#timeline', (c) => c.dataset.rows)).split('\n');
  assert.ok(labels.filter((l) => l.endsWith(' calls')).length >= 5, `a block of rows per thread (main and 4 workers): ${labels}`);
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, 'html-report-call-trace.png'), fullPage: true });
  await assertClean(page, trouble);
  await page.close();
});

test('hostile names are shown as text and run nothing', { timeout: TIMEOUT }, async () => {
  const [file] = reports('SONDE_HTML_NASTY', true);
  const { page, trouble } = await open(file);

  const tableNames = await page.$$eval('#hot tbody .mname', (b) => b.map((x) => x.textContent));
  const treeNames = await page.$$eval('#tree .mname', (b) => b.map((x) => x.textContent));
  for (const name of NASTY.methods) {
    assert.ok(tableNames.includes(name), `the table does not show ${JSON.stringify(name)} as text: ${JSON.stringify(tableNames)}`);
    assert.ok(treeNames.includes(name), `the call tree does not show ${JSON.stringify(name)} as text`);
  }
  const threads = await page.$$eval('#thread option', (o) => o.map((x) => x.textContent));
  assert.ok(threads.some((t) => t.includes(NASTY.thread)), `thread names: ${threads}`);

  // Open every hostile method, hover every frame row, select every thread, search.
  for (const name of NASTY.methods) {
    const button = page.locator('#hot tbody .mname', { hasText: name }).first();
    await button.click();
    assert.equal(await page.$eval('#bf .bf-name', (h) => h.textContent), name);
  }
  const box = await page.$eval('#flame', (c) => {
    const r = c.getBoundingClientRect();
    return { x: r.x, y: r.y, width: r.width, height: r.height };
  });
  for (let y = box.y + 4; y < box.y + box.height; y += 9) {
    await page.mouse.move(box.x + box.width / 3, y);
  }
  for (const value of await page.$$eval('#thread option', (o) => o.map((x) => x.value))) {
    await page.selectOption('#thread', value);
  }
  await page.fill('#search', '<script>');
  await page.press('#search', 'Enter');
  await page.waitForSelector('#match-info:not([hidden])');

  // The events' names: an allocated type, an exception type, a module.
  await page.click('#tab-alloc');
  assert.deepEqual(await page.$$eval('#alloc-types tbody td:first-child', (c) => c.map((x) => x.textContent)), [NASTY.type]);
  await page.click('#tab-wait');
  await page.click('#tab-timeline');
  assert.deepEqual(await page.$$eval('#exception-table tbody td:first-child', (c) => c.map((x) => x.textContent)), [NASTY.exception]);
  assert.match((await timelineTipOnRow(page, 3)) || '', /alert\(10\)/, 'no throw under the pointer on the fourth row');
  assert.ok(((await timelineTipOnRow(page, 4)) || '').includes(NASTY.methods[1]), 'no call under the pointer on the fifth row');
  assert.ok(((await timelineTipOnRow(page, 5)) || '').includes(NASTY.methods[2]), 'no call under the pointer on the sixth row');
  await page.click('#tab-cpu');

  const dom = await page.evaluate(() => ({
    images: document.querySelectorAll('img, svg, iframe, object, embed').length,
    scripts: document.scripts.length,
    handlers: document.querySelectorAll('[onerror], [onload]').length,
    title: document.title,
  }));
  assert.equal(dom.images, 0, 'an element from a name was created');
  assert.equal(dom.scripts, 2, 'a script element was created (the page has exactly its data and its code)');
  assert.equal(dom.handlers, 0, 'an event-handler attribute was created');
  assert.ok(dom.title.includes('<img src=z onerror=alert(5)>'), `title: ${dom.title}`);

  fs.mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, 'html-report-nasty.png'), fullPage: true });
  // Give anything that might have been scheduled a chance to fire.
  await page.waitForTimeout(300);
  await assertClean(page, trouble);
  await page.close();
});

test('edge cases load cleanly', { timeout: TIMEOUT }, async (t) => {
  const files = reports('SONDE_HTML_EDGE', false);
  if (files.length === 0) {
    t.skip('SONDE_HTML_EDGE not set');
    return;
  }
  for (const file of files) {
    const { page, trouble } = await open(file);
    assert.ok((await inkedPixels(page)) > 0, `${file}: the flame graph canvas is blank`);
    // Every control still works.
    await page.click('#mode-icicle');
    await page.fill('#search', 'a');
    await page.press('#search', 'Enter');
    if (await page.$eval('#thread', (s) => !s.disabled)) {
      for (const value of await page.$$eval('#thread option', (o) => o.map((x) => x.value))) {
        await page.selectOption('#thread', value);
      }
    }
    await page.click('#tree-collapse');
    await page.click('#tree-hot');
    // Every tab there is something for, and the timeline's controls.
    for (const tab of await page.$$eval('#tabs button:not([disabled])', (b) => b.map((x) => x.dataset.tab))) {
      await page.click('#tab-' + tab);
      if (tab === 'timeline') {
        await page.click('#tl-in');
        await page.click('#tl-out');
      }
    }
    await assertClean(page, trouble);
    await page.close();
  }
});
