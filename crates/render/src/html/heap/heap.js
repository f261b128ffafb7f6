// heap.js: the heap snapshot's page (crates/render/src/heap_html.rs) and the heap diff's. Reads
// the `sonde.heaphtml/1` data block: a snapshot's report (`sonde.heap/1`) with the retention
// paths of its top types, or a diff (`sonde.heapdiff/1`) with its suspects. Every name from the
// program goes in with `textContent` (Fmt.el), never as markup.
/* exported Heap */
/* global Fmt, document */

const Heap = (() => {
  const { fmtDuration, fmtCount, fmtBytes, fmtPercent, el, clear, $ } = Fmt;

  /** Table rows drawn at first, and added by each "Show more". */
  const ROWS = 200;
  /** Dominator rows "Open largest" opens at most. */
  const OPEN_LARGEST = 40;

  let data = null;
  /** The search box's text, lower case. */
  let filter = '';
  /** The type whose paths are shown. */
  let selected = null;
  /** Redraws the current view's table (after the search changes). */
  let redraw = () => {};

  function start() {
    data = JSON.parse($('sonde-data').textContent);
    if (data.schema !== 'sonde.heaphtml/1') throw new Error('not a heap page: ' + data.schema);
    if (data.kind === 'heapdiff') startDiff();
    else startReport();
    const search = $('search');
    search.addEventListener('input', () => {
      filter = search.value.trim().toLowerCase();
      redraw();
    });
    document.addEventListener('keydown', (e) => {
      if (e.key === '/' && document.activeElement !== search) {
        e.preventDefault();
        search.focus();
      }
    });
    document.body.dataset.ready = '1';
  }

  // ---- Shared pieces ----

  /** `'name'` for a POSIX shell: the commands the page suggests can be pasted as they are. */
  function shellQuote(s) {
    return /^[A-Za-z0-9_./:=@,+-]+$/.test(s) ? s : "'" + s.replace(/'/g, "'\\''") + "'";
  }

  /** `n` objects, in the singular when there is one. */
  function objects(n) {
    return fmtCount(n) + (n === 1 ? ' object' : ' objects');
  }

  function signed(n, format) {
    return (n > 0 ? '+' : n < 0 ? '-' : '') + format(Math.abs(n));
  }

  /** A cell with a change, coloured by its sign. */
  function changeCell(n, format) {
    return el('td', 'num' + (n > 0 ? ' grew' : n < 0 ? ' shrank' : ''), signed(n, format));
  }

  /** A root as the text report shows it (crates/heap/src/text.rs, `root_label`). */
  function rootLabel(kind, name) {
    const words = kind.replace(/_/g, ' ');
    if (kind !== 'static' && (name.startsWith(words) || (kind === 'finalizer_queue' && name.startsWith('finalizer')))) {
      return name;
    }
    return words + ' ' + name;
  }

  function fact(box, key, value, wide) {
    const f = el('div', 'fact' + (wide ? ' wide' : ''));
    f.append(el('div', 'fact-k', key), el('div', 'fact-v', value));
    box.append(f);
  }

  function warn(text) {
    $('warnings').append(el('div', 'warning', text));
  }

  /** A path's steps as a list: the root, then each object with the field it is reached through. */
  function pathList(steps) {
    const list = el('ol');
    for (const step of steps) {
      const item = el('li');
      if (step.kind === 'root') {
        item.append(el('span', 'root', rootLabel(step.root_kind || '', step.root_name || '')));
      } else {
        if (step.field) item.append(el('span', 'field', '.' + step.field + ' '));
        item.append(el('span', 'ty', step.type === null || step.type === undefined ? '?' : step.type));
        if (step.repeated) item.append(el('span', 'flag', '(repeated)'));
        if (step.more) item.append(el('span', 'flag', '→ … more steps'));
      }
      list.append(item);
    }
    return list;
  }

  /** Sorts `rows` by the table's `sort` (`keys` gives each column's value) and marks its header. */
  function sortRows(table, rows, sort, keys) {
    const key = keys[sort.key];
    const order = sort.desc ? -1 : 1;
    rows.sort((a, b) => {
      const x = key(a);
      const y = key(b);
      if (typeof x === 'string') return order * (x < y ? -1 : x > y ? 1 : 0);
      return order * (x - y);
    });
    for (const th of table.tHead.rows[0].cells) {
      const on = th.dataset.sort === sort.key;
      th.classList.toggle('sorted', on);
      if (on) th.setAttribute('aria-sort', sort.desc ? 'descending' : 'ascending');
      else th.removeAttribute('aria-sort');
    }
  }

  /** Header buttons that sort `table` by their column (a second click reverses), then `draw`. */
  function sortable(table, sort, draw) {
    for (const th of table.tHead.rows[0].cells) {
      if (!th.dataset.sort) continue;
      th.querySelector('button').addEventListener('click', () => {
        if (sort.key === th.dataset.sort) sort.desc = !sort.desc;
        else {
          sort.key = th.dataset.sort;
          sort.desc = th.dataset.sort !== 'name';
        }
        draw();
      });
    }
  }

  /** The "Show N more" button under a table. */
  function moreButton(button, shown, total, onClick) {
    button.hidden = shown >= total;
    button.textContent = 'Show ' + fmtCount(Math.min(ROWS, total - shown)) + ' more of ' + fmtCount(total - shown);
    button.onclick = onClick;
  }

  function markSelected(table, name) {
    for (const tr of table.tBodies[0].rows) tr.classList.toggle('sel', tr.dataset.name === name);
  }

  // ---- One snapshot ----

  function startReport() {
    const r = data.report;
    $('heap-view').hidden = false;
    $('source').textContent = 'sonde report ' + shellQuote(data.files[0]);
    const facts = $('facts');
    fact(facts, 'Runtime', r.runtime);
    fact(facts, 'Process', String(r.pid));
    fact(facts, 'Reachable objects', fmtCount(r.objects));
    fact(facts, 'Reachable bytes', fmtBytes(r.bytes));
    fact(facts, 'Types', fmtCount(r.types.length));
    fact(facts, 'Pause', fmtDuration(r.pause_ns));
    if (r.unreachable_objects > 0) {
      fact(facts, 'Unreachable (left out)', objects(r.unreachable_objects) + ', ' + fmtBytes(r.unreachable_bytes));
    }
    if (r.missing_references > 0) {
      warn(fmtCount(r.missing_references) + ' references and roots the runtime reported point to objects the snapshot does not have: what they hold is not counted.');
    }
    $('foot').textContent = 'Sonde heap snapshot of process ' + r.pid + ' (' + data.files[0] + ').';
    setupTypes(r);
    setupDominators(r);
    drawRoots(r);
    const first = r.types[0];
    if (first) selectType(first.name);
  }

  const types = { sort: { key: 'retained', desc: true }, limit: ROWS };

  function setupTypes(r) {
    const table = $('types');
    sortable(table, types.sort, drawTypes);
    table.tBodies[0].addEventListener('click', (e) => {
      const tr = e.target.closest('tr');
      if (tr && tr.dataset.name !== undefined) selectType(tr.dataset.name);
    });
    redraw = () => {
      types.limit = ROWS;
      drawTypes();
    };
    drawTypes();
  }

  function drawTypes() {
    const r = data.report;
    const table = $('types');
    const rows = r.types.filter((t) => !filter || t.name.toLowerCase().includes(filter));
    sortRows(table, rows, types.sort, {
      name: (t) => t.name,
      count: (t) => t.count,
      bytes: (t) => t.bytes,
      retained: (t) => t.retained_bytes,
    });
    const body = table.tBodies[0];
    clear(body);
    const shown = Math.min(rows.length, types.limit);
    for (let i = 0; i < shown; i++) {
      const t = rows[i];
      const tr = el('tr');
      tr.dataset.name = t.name;
      if (t.name === selected) tr.classList.add('sel');
      const name = el('td');
      name.append(typeLink(t.name));
      tr.append(name, el('td', 'num', fmtCount(t.count)), el('td', 'num', fmtBytes(t.bytes)), el('td', 'num', fmtBytes(t.retained_bytes)));
      tr.append(barCell(t.retained_bytes, r.bytes, 'td'));
      body.append(tr);
    }
    $('types-info').textContent =
      (filter ? fmtCount(rows.length) + ' of ' : '') + fmtCount(r.types.length) + ' types with a reachable instance';
    moreButton($('types-more'), shown, rows.length, () => {
      types.limit += ROWS;
      drawTypes();
    });
  }

  function typeLink(name) {
    const b = el('button', 'link', name);
    b.type = 'button';
    b.dataset.type = name;
    b.addEventListener('click', (e) => {
      e.stopPropagation();
      selectType(name);
    });
    return b;
  }

  function barCell(part, whole, tag) {
    const d = el(tag, (tag === 'div' ? 'tcell ' : '') + 'num pct');
    const bar = el('span', 'bar');
    bar.style.width = (whole > 0 ? Math.max(0, Math.min(100, (part * 100) / whole)) : 0).toFixed(2) + '%';
    d.append(bar, el('span', 'pct-text', fmtPercent(part, whole)));
    return d;
  }

  /** Shows the paths of type `name` beside the tables. */
  function selectType(name) {
    selected = name;
    markSelected($('types'), name);
    const r = data.report;
    const box = $('paths');
    clear(box);
    box.dataset.type = name;
    box.append(el('h3', 'sel-name', name));
    const row = r.types.find((t) => t.name === name);
    if (row) {
      const stats = el('div', 'bf-stats');
      for (const [k, v] of [['Count', fmtCount(row.count)], ['Bytes', fmtBytes(row.bytes)], ['Retained', fmtBytes(row.retained_bytes)]]) {
        const s = el('div', 'stat');
        s.append(el('div', 'stat-k', k), el('div', 'stat-v', v));
        stats.append(s);
      }
      box.append(stats);
    }
    let paths = null;
    let more = null;
    const embedded = data.type_paths.find((p) => p.type === name);
    if (r.paths && r.paths_type === name) {
      // Asked for with --paths: all its groups.
      paths = r.paths;
    } else if (embedded) {
      paths = embedded.paths;
      more = embedded;
    }
    if (paths === null) {
      box.dataset.embedded = '0';
      box.append(
        el('p', 'note', 'The paths of this type are not in the page, which holds those of the ' + fmtCount(data.path_types) + ' types that retain the most. To list them:'),
        el('code', 'cmd-hint', 'sonde report ' + shellQuote(data.files[0]) + ' --paths ' + shellQuote(name)),
      );
      return;
    }
    box.dataset.embedded = '1';
    if (paths.length === 0) box.append(el('p', 'note', 'No instance is reachable from a root.'));
    for (const p of paths) {
      const div = el('div', 'path');
      const head = el('div', 'path-head');
      head.append(el('b', null, objects(p.objects)), el('span', null, fmtBytes(p.bytes)));
      div.append(head, pathList(p.steps));
      box.append(div);
    }
    if (more && more.more_paths > 0) {
      box.append(
        el('p', 'note', fmtCount(more.more_paths) + ' more paths (' + objects(more.more_objects) + ', ' + fmtBytes(more.more_bytes) + '): all of them with'),
        el('code', 'cmd-hint', 'sonde report ' + shellQuote(data.files[0]) + ' --paths ' + shellQuote(name)),
      );
    }
    box.append(el('p', 'note', 'Each path is the shortest from a root to the objects; objects with the same path shape are counted together.'));
  }

  // ---- The dominator tree: rows made when their parent opens ----

  /** The tree flattened: per node its type, figures and children's ids. */
  const dom = { ty: [], retained: [], bytes: [], kids: [], roots: [], total: 0 };

  function setupDominators(r) {
    const add = (row) => {
      const id = dom.ty.length;
      dom.ty.push(row.type);
      dom.retained.push(row.retained_bytes);
      dom.bytes.push(row.bytes);
      dom.kids.push([]);
      for (const child of row.children) dom.kids[id].push(add(child));
      return id;
    };
    for (const row of r.dominators) dom.roots.push(add(row));
    dom.total = r.bytes;
    $('dom-info').textContent = objects(dom.ty.length) + ' shown, the largest first';
    $('dom-open').addEventListener('click', openLargest);
    $('dom-collapse').addEventListener('click', drawDominators);
    drawDominators();
  }

  function drawDominators() {
    const box = $('dom');
    clear(box);
    if (dom.roots.length === 0) {
      box.append(el('p', 'hint', 'No object is reachable from a root.'));
      return;
    }
    for (const id of dom.roots) box.append(domRow(id, 0));
  }

  function domRow(id, depth) {
    const row = el('div', 'trow');
    row.setAttribute('role', 'treeitem');
    row.dataset.node = String(id);
    row.dataset.depth = String(depth);
    const name = el('div', 'tcell tname');
    name.style.paddingLeft = 6 + Math.min(depth, 40) * 16 + 'px';
    const leaf = dom.kids[id].length === 0;
    const tog = el('button', 'tog' + (leaf ? ' leaf' : ''), leaf ? '' : '▸');
    tog.type = 'button';
    if (leaf) tog.disabled = true;
    else {
      tog.setAttribute('aria-label', 'expand');
      row.setAttribute('aria-expanded', 'false');
    }
    tog.addEventListener('click', () => (row.dataset.open === '1' ? collapse(row) : expand(row)));
    name.append(tog, typeLink(dom.ty[id]));
    row.append(name, barCell(dom.retained[id], dom.total, 'div'));
    row.append(el('div', 'tcell num', fmtBytes(dom.retained[id])), el('div', 'tcell num', fmtBytes(dom.bytes[id])));
    return row;
  }

  function expand(row) {
    if (row.dataset.open === '1') return;
    const id = Number(row.dataset.node);
    if (dom.kids[id].length === 0) return;
    row.dataset.open = '1';
    row.setAttribute('aria-expanded', 'true');
    const tog = row.querySelector('.tog');
    tog.textContent = '▾';
    tog.setAttribute('aria-label', 'collapse');
    const depth = Number(row.dataset.depth) + 1;
    const frag = document.createDocumentFragment();
    for (const kid of dom.kids[id]) frag.append(domRow(kid, depth));
    row.after(frag);
  }

  function collapse(row) {
    const depth = Number(row.dataset.depth);
    let next = row.nextElementSibling;
    while (next && Number(next.dataset.depth) > depth) {
      const after = next.nextElementSibling;
      next.remove();
      next = after;
    }
    row.dataset.open = '0';
    row.setAttribute('aria-expanded', 'false');
    const tog = row.querySelector('.tog');
    tog.textContent = '▸';
    tog.setAttribute('aria-label', 'expand');
  }

  /** Opens the chain of largest children from the largest top object. */
  function openLargest() {
    drawDominators();
    let row = $('dom').querySelector('.trow');
    for (let k = 0; row && k < OPEN_LARGEST; k++) {
      const id = Number(row.dataset.node);
      if (dom.kids[id].length === 0) break;
      expand(row);
      row = row.nextElementSibling;
    }
  }

  function drawRoots(r) {
    const body = $('roots').tBodies[0];
    const shown = Math.min(r.roots.length, ROWS);
    for (let i = 0; i < shown; i++) {
      const root = r.roots[i];
      const tr = el('tr');
      tr.append(el('td', 'mono', rootLabel(root.kind, root.name)), el('td', 'num', fmtCount(root.count)), el('td', 'num', fmtBytes(root.bytes)));
      body.append(tr);
    }
    $('roots-info').textContent =
      (shown < r.roots.length ? 'the first ' + fmtCount(shown) + ' of ' : '') + fmtCount(r.roots.length) + ' roots by kind and name';
  }

  // ---- Two snapshots compared ----

  const changes = { sort: { key: 'bytes', desc: true }, limit: ROWS };

  function startDiff() {
    const d = data.diff;
    $('diff-view').hidden = false;
    $('tab-heap').textContent = 'Heap diff';
    $('source').textContent = 'sonde diff ' + data.files.map(shellQuote).join(' ');
    let count = 0;
    let bytes = 0;
    let changed = 0;
    for (const t of d.types) {
      count += t.count_change;
      bytes += t.bytes_change;
      if (t.count_change !== 0 || t.bytes_change !== 0 || t.retained_change !== 0) changed++;
    }
    const facts = $('facts');
    fact(facts, 'Base', data.files[0]);
    fact(facts, 'New', data.files[1]);
    fact(facts, 'Objects', signed(count, fmtCount));
    fact(facts, 'Bytes', signed(bytes, fmtBytes));
    fact(facts, 'Types changed', fmtCount(changed) + ' of ' + fmtCount(d.types.length));
    $('foot').textContent = 'Sonde heap diff: ' + data.files[1] + ' compared with ' + data.files[0] + '.';
    const table = $('changes');
    sortable(table, changes.sort, drawChanges);
    table.tBodies[0].addEventListener('click', (e) => {
      const tr = e.target.closest('tr');
      if (tr && tr.dataset.name !== undefined) selectSuspect(tr.dataset.name);
    });
    $('changed-only').addEventListener('change', () => {
      changes.limit = ROWS;
      drawChanges();
    });
    redraw = () => {
      changes.limit = ROWS;
      drawChanges();
    };
    const list = $('suspect-list');
    for (const s of d.suspects) {
      const b = el('button', null, s.name);
      b.type = 'button';
      b.dataset.type = s.name;
      b.addEventListener('click', () => selectSuspect(s.name));
      list.append(b);
    }
    drawChanges();
    if (d.suspects.length > 0) selectSuspect(d.suspects[0].name);
    else $('suspect').append(el('p', 'hint', 'No type has more instances in the new snapshot.'));
  }

  function drawChanges() {
    const d = data.diff;
    const only = $('changed-only').checked;
    const table = $('changes');
    const rows = d.types.filter(
      (t) => (!only || t.count_change !== 0 || t.bytes_change !== 0 || t.retained_change !== 0) && (!filter || t.name.toLowerCase().includes(filter)),
    );
    sortRows(table, rows, changes.sort, {
      name: (t) => t.name,
      count: (t) => t.count_change,
      bytes: (t) => t.bytes_change,
      retained: (t) => t.retained_change,
    });
    const body = table.tBodies[0];
    clear(body);
    const shown = Math.min(rows.length, changes.limit);
    for (let i = 0; i < shown; i++) {
      const t = rows[i];
      const tr = el('tr');
      tr.dataset.name = t.name;
      if (t.name === selected) tr.classList.add('sel');
      const name = el('td');
      const b = el('button', 'link', t.name);
      b.type = 'button';
      name.append(b);
      tr.append(name, el('td', 'num', fmtCount(t.base_count) + ' → ' + fmtCount(t.new_count)));
      tr.append(changeCell(t.count_change, fmtCount), changeCell(t.bytes_change, fmtBytes), changeCell(t.retained_change, fmtBytes));
      body.append(tr);
    }
    $('changes-info').textContent = fmtCount(rows.length) + ' of ' + fmtCount(d.types.length) + ' types';
    moreButton($('changes-more'), shown, rows.length, () => {
      changes.limit += ROWS;
      drawChanges();
    });
  }

  /** Shows where the new instances of `name` are held, or how to find out. */
  function selectSuspect(name) {
    selected = name;
    markSelected($('changes'), name);
    for (const b of $('suspect-list').children) b.classList.toggle('on', b.dataset.type === name);
    const box = $('suspect');
    clear(box);
    box.dataset.type = name;
    box.append(el('h3', 'sel-name', name));
    const suspect = data.diff.suspects.find((s) => s.name === name);
    if (!suspect) {
      box.dataset.embedded = '0';
      box.append(
        el('p', 'note', 'The page holds the paths of the ' + fmtCount(data.diff.suspects.length) + ' types whose count grew the most. The paths of this one in the new snapshot:'),
        el('code', 'cmd-hint', 'sonde report ' + shellQuote(data.files[1]) + ' --paths ' + shellQuote(name)),
      );
      return;
    }
    box.dataset.embedded = '1';
    box.append(el('p', 'note', signed(suspect.count_change, fmtCount) + ' instances. The path shapes whose count changed, base → new:'));
    if (suspect.paths.length === 0) box.append(el('p', 'note', 'No path shape changed its count.'));
    for (const p of suspect.paths) {
      const div = el('div', 'path');
      const head = el('div', 'path-head');
      head.append(
        el('b', null, signed(p.objects_change, fmtCount) + (Math.abs(p.objects_change) === 1 ? ' object' : ' objects')),
        el('span', null, fmtCount(p.base_objects) + ' → ' + fmtCount(p.new_objects)),
        el('span', null, signed(p.bytes_change, fmtBytes)),
      );
      div.append(head, pathList(p.steps));
      box.append(div);
    }
  }

  return { start };
})();
