// The heap snapshot's HTML page (`sonde report FILE.heap --format html`) and the heap diff's
// (`sonde diff A.heap B.heap --format html`) in a real headless browser: Debian's chromium,
// driven by playwright-core. Run by crates/cli/tests/heap_html.rs, which snapshots tests/apps/Leak.cs
// for real, builds snapshots whose names try to inject markup, renders them and passes the pages in:
//
//   SONDE_HEAP_REAL        the page of a snapshot of Leak.exe holding 1,000 sessions
//   SONDE_HEAP_PATHS       the same snapshot's page made with `--paths SONDE_HEAP_PATHS_TYPE`, a
//                          type whose paths the page would not hold otherwise
//   SONDE_HEAP_DIFF        the diff page of Leak.exe with 1,000 sessions, then 3,000
//   SONDE_HEAP_NASTY       the page of a snapshot whose names are NASTY's
//   SONDE_HEAP_NASTY_DIFF  the diff page of two such snapshots
//   SONDE_TEST_ARTIFACTS   where screenshots go (default: target/test-artifacts)
//
// By hand: `node --test tests/js/heap-report.test.mjs` with those variables set.

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

/** The hostile names of the nasty snapshots (crates/cli/tests/heap_html.rs builds them). */
const NASTY = {
  type: '</script><img src=x onerror=alert(1)>',
  field: '<!--<script>alert(2)//',
  root: 'Acme.</SCRIPT ><svg onload=alert(3)>',
  holder: "Acme.Holder'\"<iframe src=javascript:alert(4)>",
};

function pageFile(variable) {
  const file = process.env[variable];
  if (!file) assert.fail(`${variable} is not set: run this through \`cargo test -p sonde-cli --test heap_html\`, which makes the pages`);
  assert.ok(fs.existsSync(file), `${variable} names ${file}, which does not exist`);
  return file;
}

let browser;
let userDataDir;

before(async () => {
  assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: run scripts/setup.sh (it installs Debian's chromium)`);
  userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sonde-chromium-'));
  browser = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1440, height: 1000 },
    deviceScaleFactor: 1,
  });
});

after(async () => {
  await browser?.close();
  if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
});

/**
 * Opens a page and records everything that must never happen: dialogs, page errors, console
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
  assert.deepEqual(trouble.dialogs, [], 'a dialog opened: something from the snapshot ran');
  assert.deepEqual(violations, [], 'the Content-Security-Policy blocked something');
  assert.deepEqual(trouble.errors, [], 'the page logged errors');
  assert.deepEqual(trouble.requests, [], 'the page requested something besides itself');
  const injected = await page.evaluate(() => document.querySelectorAll('img, svg, iframe, object, embed').length);
  assert.equal(injected, 0, 'a name became an element');
}

/** The types table's rows: name and the figures as shown. */
function typeRows(page, table = 'types') {
  return page.evaluate((id) => [...document.getElementById(id).tBodies[0].rows].map((tr) => [...tr.cells].map((c) => c.textContent)), table);
}

/** The dominator tree's shown rows: [depth, type]. */
function domRows(page) {
  return page.evaluate(() => [...document.querySelectorAll('#dom .trow')].map((r) => [Number(r.dataset.depth), r.querySelector('button.link').textContent]));
}

async function clickType(page, table, name) {
  await page.locator(`#${table} tbody tr`).filter({ has: page.getByRole('button', { name, exact: true }) }).first().click();
}

test('a real snapshot: types sort, a type shows its paths, the dominator tree opens and closes', { timeout: TIMEOUT }, async () => {
  const { page, trouble } = await open(pageFile('SONDE_HEAP_REAL'));
  try {
    const rows = await typeRows(page);
    assert.ok(rows.length > 50, `the table shows the types (${rows.length})`);
    assert.ok(rows.some((r) => r[0] === 'Acme.Session' && r[1] === '1,000'), 'Acme.Session, 1,000 of them');
    // Retained, the largest first; then by count.
    const retained = await page.evaluate(() => JSON.parse(document.getElementById('sonde-data').textContent).report.types.map((t) => t.retained_bytes));
    assert.deepEqual(retained, [...retained].sort((a, b) => b - a));
    await page.click('#types th[data-sort="count"] button');
    const byCount = await page.evaluate(() => [...document.getElementById('types').tBodies[0].rows].map((tr) => Number(tr.cells[1].textContent.replace(/,/g, ''))));
    assert.deepEqual(byCount, [...byCount].sort((a, b) => b - a), 'sorted by count');
    assert.equal(await page.getAttribute('#types th[data-sort="count"]', 'aria-sort'), 'descending');

    // A type: its paths from the static cache.
    await clickType(page, 'types', 'Acme.Session');
    await page.waitForSelector('#paths[data-type="Acme.Session"][data-embedded="1"]');
    const paths = await page.textContent('#paths');
    assert.match(paths, /static Acme\.Cache\.Items/);
    assert.match(paths, /System\.Collections\.Generic\.Dictionary<string, Acme\.Session>/);
    assert.match(paths, /1,000 objects/);
    assert.equal(await page.locator('#types tr.sel').count(), 1, 'the row is selected');

    // A type beyond the embedded ones: the page says how to get its paths.
    const far = await page.evaluate(() => {
      const d = JSON.parse(document.getElementById('sonde-data').textContent);
      const embedded = new Set(d.type_paths.map((p) => p.type));
      return d.report.types.find((t) => !embedded.has(t.name)).name;
    });
    await page.fill('#search', far);
    await clickType(page, 'types', far);
    await page.waitForSelector('#paths[data-embedded="0"]');
    const hint = await page.textContent('#paths .cmd-hint');
    assert.ok(hint.startsWith('sonde report ') && hint.includes('--paths') && hint.includes(far), hint);
    await page.fill('#search', '');

    // The dominator tree: the top objects, closed; open the largest, then close it again.
    const top = await domRows(page);
    assert.ok(top.length > 0 && top.every(([depth]) => depth === 0), JSON.stringify(top));
    assert.equal(top[0][1], 'System.Collections.Generic.Dictionary<string, Acme.Session>');
    const first = page.locator('#dom .trow').first();
    await first.locator('.tog').click();
    assert.equal(await first.getAttribute('aria-expanded'), 'true');
    const opened = await domRows(page);
    assert.deepEqual(opened[1], [1, 'System.Collections.Generic.Dictionary+Entry<string, Acme.Session>[]']);
    // A dominated object's type is a link to its paths too.
    await page.locator('#dom .trow').nth(1).locator('button.link').click();
    await page.waitForSelector('#paths[data-type="System.Collections.Generic.Dictionary+Entry<string, Acme.Session>[]"]');
    await page.click('#dom-open');
    assert.ok((await domRows(page)).some(([depth, ty]) => depth === 2 && ty === 'Acme.Session'), 'open largest reaches the sessions');
    await page.screenshot({ path: path.join(ARTIFACTS, 'heap-report.png'), fullPage: false });
    await page.locator('#dom .trow').first().locator('.tog').click();
    assert.deepEqual(await domRows(page), top, 'closed again');

    const roots = await page.textContent('#roots');
    assert.match(roots, /static Acme\.Cache\.Items/);
    await assertClean(page, trouble);
  } finally {
    await page.close();
  }
});

test('the type of --paths has its paths in the page, whatever it retains', { timeout: TIMEOUT }, async () => {
  const far = process.env.SONDE_HEAP_PATHS_TYPE;
  assert.ok(far, 'SONDE_HEAP_PATHS_TYPE is not set');
  const { page, trouble } = await open(pageFile('SONDE_HEAP_PATHS'));
  try {
    const embedded = await page.evaluate(() => JSON.parse(document.getElementById('sonde-data').textContent).type_paths.map((p) => p.type));
    assert.ok(!embedded.includes(far), `${far} is among the top types: the test needs one beyond them`);
    await page.fill('#search', far);
    await clickType(page, 'types', far);
    await page.waitForSelector('#paths[data-embedded="1"]');
    assert.equal(await page.getAttribute('#paths', 'data-type'), far);
    assert.ok((await page.locator('#paths .path').count()) > 0, 'its paths are shown');
    await assertClean(page, trouble);
  } finally {
    await page.close();
  }
});

test('hostile names in a snapshot show as text and run nothing', { timeout: TIMEOUT }, async () => {
  const { page, trouble } = await open(pageFile('SONDE_HEAP_NASTY'));
  try {
    const rows = await typeRows(page);
    assert.ok(rows.some((r) => r[0] === NASTY.type), JSON.stringify(rows));
    await clickType(page, 'types', NASTY.type);
    await page.waitForSelector('#paths[data-embedded="1"]');
    const steps = await page.evaluate(() => [...document.querySelectorAll('#paths .path li')].map((li) => li.textContent));
    assert.deepEqual(steps, ['static ' + NASTY.root, NASTY.holder, '.' + NASTY.field + ' ' + NASTY.type]);
    assert.equal(await page.getAttribute('#paths', 'data-type'), NASTY.type);
    await page.locator('#dom .trow').first().locator('.tog').click();
    assert.deepEqual((await domRows(page)).map((r) => r[1]), [NASTY.holder, NASTY.type, NASTY.type]);
    assert.ok((await page.textContent('#roots')).includes('static ' + NASTY.root));
    await assertClean(page, trouble);
  } finally {
    await page.close();
  }
});

test('a real diff: the change table and where the new sessions are held', { timeout: TIMEOUT }, async () => {
  const { page, trouble } = await open(pageFile('SONDE_HEAP_DIFF'));
  try {
    const rows = await typeRows(page, 'changes');
    const session = rows.find((r) => r[0] === 'Acme.Session');
    assert.deepEqual(session.slice(1, 3), ['1,000 → 3,000', '+2,000']);
    const suspects = await page.evaluate(() => [...document.querySelectorAll('#suspect-list button')].map((b) => b.textContent));
    assert.ok(suspects.includes('Acme.Session'), JSON.stringify(suspects));
    await page.click('#suspect-list button[data-type="Acme.Session"]');
    await page.waitForSelector('#suspect[data-type="Acme.Session"][data-embedded="1"]');
    const text = await page.textContent('#suspect');
    assert.match(text, /\+2,000 objects/);
    assert.match(text, /1,000 → 3,000/);
    assert.match(text, /static Acme\.Cache\.Items/);
    // Sorting by the count's change puts the largest growth first.
    await page.click('#changes th[data-sort="count"] button');
    const counts = (await typeRows(page, 'changes')).map((r) => Number(r[2].replace(/[+,]/g, '')));
    assert.deepEqual(counts, [...counts].sort((a, b) => b - a));
    // A type without paths in the page: the command that lists them in the new snapshot.
    const other = rows.find((r) => !suspects.includes(r[0]))[0];
    await clickType(page, 'changes', other);
    await page.waitForSelector('#suspect[data-embedded="0"]');
    assert.ok((await page.textContent('#suspect .cmd-hint')).includes('--paths'));
    await page.screenshot({ path: path.join(ARTIFACTS, 'heap-diff.png'), fullPage: false });
    await assertClean(page, trouble);
  } finally {
    await page.close();
  }
});

test('hostile names in a diff show as text and run nothing', { timeout: TIMEOUT }, async () => {
  const { page, trouble } = await open(pageFile('SONDE_HEAP_NASTY_DIFF'));
  try {
    const rows = await typeRows(page, 'changes');
    assert.ok(rows.some((r) => r[0] === NASTY.type), JSON.stringify(rows));
    await page.waitForSelector('#suspect[data-embedded="1"]');
    assert.equal(await page.getAttribute('#suspect', 'data-type'), NASTY.type);
    const steps = await page.evaluate(() => [...document.querySelectorAll('#suspect .path li')].map((li) => li.textContent));
    assert.deepEqual(steps, ['static ' + NASTY.root, NASTY.holder, '.' + NASTY.field + ' ' + NASTY.type]);
    await assertClean(page, trouble);
  } finally {
    await page.close();
  }
});
