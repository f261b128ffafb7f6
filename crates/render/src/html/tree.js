// tree.js: the call tree, one DOM row per shown node, created only when its parent is expanded
// (children heaviest first, in chunks), so a million-node view costs only what is open. Owns its
// rows; reads the page's state, and names methods with the table's links (`Tables.methodLink`).
/* exported Tree */
/* global Fmt, Tables, document */

const Tree = (() => {
  const { fmtCount, fmtPercent, el, clear, $ } = Fmt;

  const TREE_CHUNK = 100;
  /** How deep the hot path opens by default; a deep recursion would otherwise open thousands. */
  const HOT_PATH_OPEN = 150;
  /** Indentation stops growing here; deeper rows show their depth instead. */
  const MAX_INDENT = 40;

  /** Given by `init`: the profile (model.js) and the page's state (main.js). */
  let profile = null;
  let state = null;

  /** Shown rows by view node. */
  const treeRows = new Map();

  function init(theProfile, theState) {
    profile = theProfile;
    state = theState;
    setupTree();
  }

  function drawTree() {
    const box = $('tree');
    clear(box);
    treeRows.clear();
    const v = state.view;
    if (v.n === 0) {
      box.append(el('p', 'hint', 'No calls were recorded in ' + profile.viewLabel(v) + '.'));
      return;
    }
    box.append(treeChunk(v.roots, 0, 0));
    openHotPath();
  }

  function openHotPath() {
    const v = state.view;
    const path = profile.hotPath(v);
    for (const row of treeRows.values()) row.classList.remove('hot');
    for (let k = 0; k < path.length; k++) {
      const row = treeRows.get(path[k]);
      if (!row) break;
      row.classList.add('hot');
      if (k < HOT_PATH_OPEN) expandRow(row);
    }
  }

  function treeChunk(list, start, depth) {
    const frag = document.createDocumentFragment();
    const end = Math.min(list.length, start + TREE_CHUNK);
    for (let j = start; j < end; j++) frag.append(treeRow(list[j], depth));
    if (end < list.length) frag.append(moreRow(list, end, depth));
    return frag;
  }

  function indent(cell, depth) {
    cell.style.paddingLeft = 6 + Math.min(depth, MAX_INDENT) * 16 + 'px';
    if (depth > MAX_INDENT) cell.append(el('span', 'deep', String(depth)));
  }

  function treeRow(i, depth) {
    const v = state.view;
    const m = v.method[i];
    const row = el('div', 'trow');
    row.setAttribute('role', 'treeitem');
    row.dataset.node = String(i);
    row.dataset.method = String(m);
    row.dataset.depth = String(depth);
    if (m === state.method) row.classList.add('sel');
    if (state.matches && state.matches[m]) row.classList.add('match');
    const name = el('div', 'tcell tname');
    indent(name, depth);
    const leaf = v.first[i + 1] === v.first[i];
    const tog = el('button', 'tog' + (leaf ? ' leaf' : ''), leaf ? '' : '▸');
    tog.type = 'button';
    if (leaf) tog.disabled = true;
    else tog.setAttribute('aria-label', 'expand');
    if (!leaf) row.setAttribute('aria-expanded', 'false');
    tog.addEventListener('click', () => (row.dataset.open === '1' ? collapseRow(row) : expandRow(row)));
    name.append(tog, Tables.methodLink(m));
    row.append(name);
    const whole = v.whole;
    row.append(barDiv(v.total[i], whole));
    row.append(el('div', 'tcell num', profile.weightText(v.total[i])));
    row.append(el('div', 'tcell num', profile.weightText(v.self[i])));
    if (profile.hasCalls) row.append(el('div', 'tcell num c-calls', fmtCount(v.calls[i])));
    treeRows.set(i, row);
    return row;
  }

  function barDiv(part, whole) {
    const d = el('div', 'tcell num pct');
    const bar = el('span', 'bar');
    bar.style.width = (whole > 0 ? Math.max(0, Math.min(100, (part * 100) / whole)) : 0).toFixed(2) + '%';
    d.append(bar, el('span', 'pct-text', fmtPercent(part, whole)));
    return d;
  }

  function moreRow(list, from, depth) {
    const v = state.view;
    const row = el('div', 'trow more');
    row.dataset.depth = String(depth);
    const cell = el('div', 'tcell tname');
    indent(cell, depth);
    let rest = 0;
    for (let j = from; j < list.length; j++) rest += v.total[list[j]];
    const b = el('button', 'small', 'Show ' + fmtCount(list.length - from) + ' more (' + fmtPercent(rest, v.whole) + ')');
    b.type = 'button';
    b.addEventListener('click', () => row.replaceWith(treeChunk(list, from, depth)));
    cell.append(b);
    row.append(cell);
    return row;
  }

  function expandRow(row) {
    if (row.dataset.open === '1') return;
    const i = Number(row.dataset.node);
    const kids = profile.children(state.view, i);
    if (kids.length === 0) return;
    row.dataset.open = '1';
    row.setAttribute('aria-expanded', 'true');
    const tog = row.querySelector('.tog');
    tog.textContent = '▾';
    tog.setAttribute('aria-label', 'collapse');
    row.after(treeChunk(kids, 0, Number(row.dataset.depth) + 1));
  }

  function collapseRow(row) {
    const depth = Number(row.dataset.depth);
    let next = row.nextElementSibling;
    while (next && Number(next.dataset.depth) > depth) {
      const after = next.nextElementSibling;
      if (next.dataset.node) treeRows.delete(Number(next.dataset.node));
      next.remove();
      next = after;
    }
    row.dataset.open = '0';
    row.setAttribute('aria-expanded', 'false');
    const tog = row.querySelector('.tog');
    tog.textContent = '▸';
    tog.setAttribute('aria-label', 'expand');
  }

  function setupTree() {
    if (!profile.hasCalls) $('tree-card').classList.add('no-calls');
    $('tree-hot').addEventListener('click', () => {
      drawTree();
    });
    $('tree-collapse').addEventListener('click', () => {
      const box = $('tree');
      clear(box);
      treeRows.clear();
      if (state.view.n > 0) box.append(treeChunk(state.view.roots, 0, 0));
    });
  }

  /** Marks method `m`'s rows as the selected ones. */
  function markSelected(m) {
    for (const row of treeRows.values()) row.classList.toggle('sel', Number(row.dataset.method) === m);
  }

  /** Marks the rows of the methods the search matches (`state.matches`). */
  function markMatches() {
    for (const row of treeRows.values()) {
      const hit = !!state.matches && state.matches[Number(row.dataset.method)] === 1;
      row.classList.toggle('match', hit);
      row.querySelector('.mname').classList.toggle('hit', hit);
    }
  }

  return { init, draw: drawTree, markSelected, markMatches };
})();
