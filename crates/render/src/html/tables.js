// tables.js: the hot-methods table and the caller/callee ("butterfly") panel of one method.
// Owns the table's sort and length; reads the page's state and asks main.js (`actions`) to
// select a method, go back or search.
/* exported Tables */
/* global Fmt, window */

const Tables = (() => {
  const { fmtCount, fmtPercent, el, clear, $ } = Fmt;

  const HOT_ROWS = 200;
  const EDGE_ROWS = 100;

  /** Given by `init`: the profile (model.js), the page's state and actions (main.js). */
  let profile = null;
  let state = null;
  let actions = null;

  /** The hot-methods table's own state: the column it is sorted by, and how many rows it shows. */
  const hot = { sort: { key: 'self', desc: true }, limit: HOT_ROWS };

  function init(theProfile, theState, theActions) {
    profile = theProfile;
    state = theState;
    actions = theActions;
    setupHot();
    setupButterfly();
  }

  /** The methods of the current view, filtered by the search and sorted by the chosen column. */
  function rankedMethods() {
    const s = state.view.stats;
    const names = profile.names;
    const ids = [];
    for (let m = 0; m < profile.methodCount; m++) {
      if (s.calls[m] === 0 && s.self[m] === 0 && s.total[m] === 0) continue;
      if (state.matches && !state.matches[m]) continue;
      ids.push(m);
    }
    const { key, desc } = hot.sort;
    const order = desc ? -1 : 1;
    const cmp = {
      self: (a, b) => s.self[a] - s.self[b] || s.total[a] - s.total[b] || s.calls[a] - s.calls[b],
      total: (a, b) => s.total[a] - s.total[b] || s.self[a] - s.self[b] || s.calls[a] - s.calls[b],
      calls: (a, b) => s.calls[a] - s.calls[b] || s.self[a] - s.self[b] || s.total[a] - s.total[b],
      name: (a, b) => (names[a] < names[b] ? -1 : names[a] > names[b] ? 1 : 0),
    }[key];
    ids.sort((a, b) => order * cmp(a, b) || a - b);
    return ids;
  }

  function drawHot() {
    const v = state.view;
    const s = v.stats;
    const body = $('hot').tBodies[0];
    clear(body);
    const ids = rankedMethods();
    const shown = Math.min(ids.length, hot.limit);
    for (let r = 0; r < shown; r++) {
      const m = ids[r];
      const tr = el('tr');
      tr.dataset.method = String(m);
      if (m === state.method) tr.className = 'sel';
      const name = el('td', 'c-name');
      name.append(methodLink(m));
      tr.append(name);
      if (profile.hasCalls) tr.append(numCell(fmtCount(s.calls[m]), s.calls[m], 'c-calls'));
      tr.append(numCell(profile.weightText(s.self[m]), s.self[m]));
      tr.append(barCell(s.self[m], v.whole));
      tr.append(numCell(profile.weightText(s.total[m]), s.total[m]));
      tr.append(barCell(s.total[m], v.whole));
      body.append(tr);
    }
    const what = state.matches ? 'matching methods' : 'methods';
    $('hot-info').textContent =
      ids.length > shown ? 'top ' + fmtCount(shown) + ' of ' + fmtCount(ids.length) + ' ' + what : fmtCount(ids.length) + ' ' + what;
    const more = $('hot-more');
    more.hidden = ids.length <= shown;
    more.textContent = 'Show ' + fmtCount(Math.min(ids.length - shown, 1000)) + ' more';
    for (const th of $('hot').tHead.rows[0].cells) {
      const on = th.dataset.sort === hot.sort.key;
      th.classList.toggle('sorted', on);
      th.setAttribute('aria-sort', on ? (hot.sort.desc ? 'descending' : 'ascending') : 'none');
    }
  }

  function numCell(text, value, cls) {
    const td = el('td', 'num' + (cls ? ' ' + cls : ''), text);
    td.dataset.v = String(value);
    return td;
  }

  /** A percentage with a bar behind it. */
  function barCell(part, whole) {
    const td = el('td', 'num pct');
    const pct = whole > 0 ? (part * 100) / whole : 0;
    const bar = el('span', 'bar');
    bar.style.width = Math.max(0, Math.min(100, pct)).toFixed(2) + '%';
    td.append(bar, el('span', 'pct-text', fmtPercent(part, whole)));
    td.dataset.v = String(part);
    return td;
  }

  /** A method name that opens the method's callers and callees when clicked. */
  function methodLink(m) {
    const name = profile.names[m];
    const b = el('button', 'link mname', name);
    b.type = 'button';
    b.title = name + (profile.methods[m][1] ? ' ' + profile.methods[m][1] : '');
    b.dataset.method = String(m);
    if (state.matches && state.matches[m]) b.classList.add('hit');
    b.addEventListener('click', (e) => {
      e.stopPropagation();
      actions.selectMethod(m, { scroll: true });
    });
    return b;
  }

  function setupHot() {
    if (!profile.hasCalls) $('hot').classList.add('no-calls');
    for (const th of $('hot').tHead.rows[0].cells) {
      if (!th.dataset.sort) continue;
      const b = th.querySelector('button');
      b.addEventListener('click', () => {
        const key = th.dataset.sort;
        hot.sort = { key, desc: hot.sort.key === key ? !hot.sort.desc : key !== 'name' };
        hot.limit = HOT_ROWS;
        drawHot();
      });
    }
    $('hot-more').addEventListener('click', () => {
      hot.limit += 1000;
      drawHot();
    });
  }

  /** Marks method `m`'s row as the selected one. */
  function markSelected(m) {
    for (const tr of $('hot').tBodies[0].rows) tr.classList.toggle('sel', Number(tr.dataset.method) === m);
  }

  /** Scrolls the butterfly panel into view unless it is visible already. */
  function revealPanel() {
    const card = $('bf-card');
    const box = card.getBoundingClientRect();
    if (box.top < 0 || box.top > window.innerHeight - 80) card.scrollIntoView({ block: 'start' });
  }

  /** The butterfly panel of the selected method (`state.method`). */
  function drawButterfly() {
    const v = state.view;
    const box = $('bf');
    clear(box);
    $('bf-back').disabled = state.history.length === 0;
    const m = state.method;
    if (m < 0) {
      box.append(el('p', 'hint', 'Click a method in the table, the call tree or the flame graph to see who called it and what it called.'));
      return;
    }
    const s = v.stats;
    const name = profile.names[m];
    box.append(el('h3', 'bf-name', name));
    const sub = [profile.methods[m][1], profile.moduleText(m)].filter(Boolean).join('  ·  ');
    if (sub) box.append(el('div', 'bf-sub', sub));
    const stats = el('div', 'bf-stats');
    if (profile.hasCalls) stats.append(stat('Calls', fmtCount(s.calls[m]), ''));
    stats.append(stat('Self', profile.weightLongText(s.self[m]), fmtPercent(s.self[m], v.whole)));
    stats.append(stat('Total', profile.weightLongText(s.total[m]), fmtPercent(s.total[m], v.whole)));
    box.append(stats);
    const find = el('button', 'small', 'Highlight in flame graph');
    find.type = 'button';
    find.addEventListener('click', () => actions.setSearch(name));
    box.append(find);
    if (s.calls[m] === 0 && s.self[m] === 0 && s.total[m] === 0) {
      box.append(el('p', 'hint', 'This method does not run in ' + profile.viewLabel(v) + '.'));
      return;
    }
    const { callers, callees } = profile.butterfly(v, m);
    const whole = s.total[m];
    box.append(el('h4', '', 'Called by (' + fmtCount(callers.length) + ')'));
    box.append(edgeTable(callers, whole, 'callers', null));
    box.append(el('h4', '', 'Calls into (' + fmtCount(callees.length) + ')'));
    box.append(edgeTable(callees, whole, 'callees', s.self[m]));
    drawLines(box, m);
  }

  /** Lines shown around each sampled line of the source. */
  const CONTEXT_LINES = 2;

  /**
   * The selected method's samples by source line (all threads: the lines are recorded per
   * method), and, where the page embeds the file, its source with the counts beside each line.
   */
  function drawLines(box, m) {
    const lines = profile.linesOf(m);
    const first = profile.firstLine(m);
    if (lines.length === 0 && !first) return;
    const files = profile.sources.files;
    const where = first ? files[first[0]] + ':' + first[1] : '';
    box.append(el('h4', '', 'Source lines'));
    if (where) box.append(el('div', 'bf-sub', where));
    if (lines.length === 0) {
      box.append(el('p', 'hint', profile.bySamples ? 'No sample fell in it.' : 'Tracing counts calls, not lines.'));
      return;
    }
    const self = lines.reduce((sum, l) => sum + l.self, 0);
    const table = el('table', 'edges');
    table.id = 'bf-lines';
    const head = el('tr');
    head.append(el('th', '', 'Line'), el('th', 'num', 'Self'), el('th', 'num', '%'), el('th', 'num', 'Total'));
    table.createTHead().append(head);
    const body = table.createTBody();
    for (const l of lines) {
      const tr = el('tr');
      const at = l.file === (first && first[0]) ? String(l.line) : files[l.file] + ':' + l.line;
      tr.append(el('td', 'c-name', at), numCell(fmtCount(l.self), l.self), barCell(l.self, self));
      tr.append(numCell(fmtCount(l.total), l.total));
      body.append(tr);
    }
    box.append(table);
    const file = first ? first[0] : lines[0].file;
    const text = profile.sourceText.get(file);
    if (!text) {
      box.append(el('p', 'hint', 'The source file was not readable when this report was made.'));
      return;
    }
    const counts = new Map(lines.filter((l) => l.file === file).map((l) => [l.line, l]));
    const shown = new Set();
    for (const n of counts.keys()) {
      for (let k = n - CONTEXT_LINES; k <= n + CONTEXT_LINES; k++) if (k >= 1 && k <= text.length) shown.add(k);
    }
    if (first) shown.add(first[1]);
    const pre = el('div', 'source');
    pre.id = 'bf-source';
    let previous = 0;
    for (const n of [...shown].sort((a, b) => a - b)) {
      if (previous && n > previous + 1) pre.append(el('div', 'src-gap', '⋯'));
      const row = el('div', 'src-line' + (counts.has(n) ? ' hit' : ''));
      const c = counts.get(n);
      row.append(el('span', 'src-count', c ? fmtCount(c.self) : ''), el('span', 'src-no', String(n)));
      // textContent: the source is the profiled program's, shown as text, never as markup.
      row.append(el('span', 'src-text', text[n - 1] || ''));
      pre.append(row);
      previous = n;
    }
    box.append(pre);
  }

  function stat(label, value, pct) {
    const d = el('div', 'stat');
    d.append(el('div', 'stat-k', label), el('div', 'stat-v', value));
    if (pct) d.append(el('div', 'stat-p', pct + ' of ' + profile.viewLabel(state.view)));
    return d;
  }

  /** Callers or callees of the selected method; `self` adds the method's own time as a line. */
  function edgeTable(edges, whole, id, self) {
    const hasCalls = profile.hasCalls;
    const table = el('table', 'edges');
    table.id = 'bf-' + id;
    const head = el('tr');
    head.append(el('th', '', id === 'callers' ? 'Caller' : 'Callee'));
    if (hasCalls) head.append(el('th', 'num', 'Calls'));
    head.append(el('th', 'num', profile.weightName()), el('th', 'num', '%'));
    table.createTHead().append(head);
    const body = table.createTBody();
    if (self !== null) {
      const tr = el('tr', 'self-line');
      tr.append(el('td', 'dim', '(self)'));
      if (hasCalls) tr.append(el('td', 'num', ''));
      tr.append(el('td', 'num', profile.weightText(self)), barCell(self, whole));
      body.append(tr);
    }
    const addRows = (from) => {
      const to = Math.min(edges.length, from + EDGE_ROWS);
      for (let k = from; k < to; k++) {
        const e = edges[k];
        const tr = el('tr');
        const name = el('td', 'c-name');
        name.append(e.method < 0 ? el('span', 'dim', '(thread top level)') : methodLink(e.method));
        tr.append(name);
        if (hasCalls) tr.append(numCell(fmtCount(e.calls), e.calls));
        tr.append(numCell(profile.weightText(e.total), e.total), barCell(e.total, whole));
        body.append(tr);
      }
      if (to < edges.length) {
        const tr = el('tr', 'more-line');
        const td = el('td');
        td.colSpan = hasCalls ? 4 : 3;
        const b = el('button', 'small', 'Show ' + fmtCount(edges.length - to) + ' more');
        b.type = 'button';
        b.addEventListener('click', () => {
          tr.remove();
          addRows(to);
        });
        td.append(b);
        tr.append(td);
        body.append(tr);
      }
    };
    addRows(0);
    if (edges.length === 0 && self === null) {
      const tr = el('tr');
      const td = el('td', 'dim', 'none recorded');
      td.colSpan = hasCalls ? 4 : 3;
      tr.append(td);
      body.append(tr);
    }
    return table;
  }

  function setupButterfly() {
    $('bf-back').addEventListener('click', () => actions.back());
  }

  return {
    init,
    rankedMethods,
    drawHot,
    /** The table shows its first rows again (after a new view or search). */
    resetHot() {
      hot.limit = HOT_ROWS;
    },
    markSelected,
    methodLink,
    drawButterfly,
    revealPanel,
  };
})();
