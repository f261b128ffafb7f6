// coverage.js: the Coverage tab of a coverage-mode profile (`sonde record --mode coverage`): a
// table of source files with the lines and methods that ran, and the chosen file's source with
// each line coloured — ran (its count beside it) or never ran — and lines without code plain.
// Source text and file names come from the profiled program: they reach the page only through
// textContent.
/* exported Coverage */
/* global Fmt */

const Coverage = (() => {
  const { fmtCount, fmtPercent, el, clear, $ } = Fmt;

  let profile = null;
  /** Per file index: { lines: Map(line → hits), methods: Set, ran: Set } */
  let files = new Map();
  let shown = -1;

  function init(p) {
    profile = p;
    const calls = new Map(profile.coverage.methods.map(([m, c]) => [m, c]));
    files = new Map();
    for (const [m, file, line, hits] of profile.coverage.lines) {
      let f = files.get(file);
      if (!f) {
        f = { lines: new Map(), methods: new Set(), ran: new Set() };
        files.set(file, f);
      }
      // A line shared by several methods (a lambda on its parent's line) ran as often as all.
      f.lines.set(line, (f.lines.get(line) || 0) + hits);
      f.methods.add(m);
      if ((calls.get(m) || 0) > 0) f.ran.add(m);
    }
  }

  function hasCoverage() {
    return files.size > 0;
  }

  function ranLines(f) {
    let n = 0;
    for (const hits of f.lines.values()) if (hits > 0) n++;
    return n;
  }

  /** Draws the table (once) and the first file, or the one shown before. */
  function draw() {
    const body = $('cov-files').tBodies[0];
    if (body.rows.length === 0) {
      const order = [...files.keys()].sort((a, b) => profile.sources.files[a].localeCompare(profile.sources.files[b]));
      let lines = 0;
      let ran = 0;
      for (const file of order) {
        const f = files.get(file);
        const r = ranLines(f);
        lines += f.lines.size;
        ran += r;
        const tr = el('tr');
        tr.dataset.file = String(file);
        tr.append(
          el('td', 'c-name', profile.sources.files[file]),
          el('td', 'num', fmtCount(r)),
          el('td', 'num', fmtCount(f.lines.size)),
          el('td', 'num pct', fmtPercent(r, f.lines.size)),
          el('td', 'num', fmtCount(f.ran.size)),
          el('td', 'num', fmtCount(f.methods.size)),
        );
        tr.addEventListener('click', () => showFile(file));
        body.append(tr);
      }
      $('cov-info').textContent = fmtCount(ran) + ' of ' + fmtCount(lines) + ' lines ran (' + fmtPercent(ran, lines) + ')';
      if (order.length > 0) showFile(order[0]);
    }
  }

  function showFile(file) {
    shown = file;
    for (const tr of $('cov-files').tBodies[0].rows) tr.classList.toggle('on', tr.dataset.file === String(file));
    $('cov-file').textContent = profile.sources.files[file];
    const box = $('cov-source');
    clear(box);
    const f = files.get(file);
    const text = profile.sourceText.get(file);
    $('cov-no-text').hidden = Boolean(text);
    const count = text ? text.length : Math.max(0, ...f.lines.keys());
    for (let n = 1; n <= count; n++) {
      const hits = f.lines.get(n);
      if (!text && hits === undefined) continue;
      const kind = hits === undefined ? '' : hits > 0 ? ' cov-ran' : ' cov-never';
      const row = el('div', 'src-line' + kind);
      row.dataset.line = String(n);
      row.append(el('span', 'src-count', hits === undefined ? '' : fmtCount(hits)), el('span', 'src-no', String(n)));
      row.append(el('span', 'src-text', text ? text[n - 1] : ''));
      box.append(row);
    }
  }

  return { init, hasCoverage, draw, shownFile: () => shown };
})();
