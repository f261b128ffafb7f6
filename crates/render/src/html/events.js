// events.js: the runtime's events — the Memory tab's allocations by type, and the Timeline tab:
// a canvas with one row for the collector (each collection a span, its pause darker), one for
// module loads and one per thread (JIT compilations as spans, throws as ticks), then, with a call
// trace (`sonde record --call-trace`), each traced thread's calls as a flame chart (one row per
// depth, callers above callees), over the run's wall time. The timeline zooms around the pointer with the wheel (or the buttons, or a
// double-click), pans by dragging, and names what is under the pointer in the tooltip. Names
// from the profile (threads, exception types, modules) reach the canvas only through fillText
// and the tables only through textContent.
/* exported Events */
/* global Fmt, document, window, getComputedStyle, requestAnimationFrame */

const Events = (() => {
  const { fmtDuration, fmtCount, fmtBytes, fmtPercent, el, clear, $, sizeCanvas, tipLine, showTip } = Fmt;

  const ROW = 22;
  const AXIS = 24;
  const LABEL = 170;
  /** Never zoom in beyond this many nanoseconds across the whole width. */
  const MIN_SPAN = 100;
  /** The deepest call-trace level drawn per thread (deeper calls are left out, and counted). */
  const MAX_DEPTH_ROWS = 32;

  let profile = null;

  const tl = {
    rows: [],
    end: 1,
    t0: 0,
    t1: 1,
    /** Drawn marks of the last draw, for the tooltip: row, x from, x to, the item. */
    hits: [],
    drag: null,
  };

  function init(theProfile) {
    profile = theProfile;
    tl.rows = timelineRows();
    let end = profile.run.wall_ns;
    for (const row of tl.rows) for (const item of row.items) if (item.end > end) end = item.end;
    tl.end = Math.max(end, MIN_SPAN);
    tl.t0 = 0;
    tl.t1 = tl.end;
    setupTimeline();
  }

  /** Whether there is anything to put on a timeline. */
  function hasTimeline() {
    return tl.rows.some((row) => row.items.length > 0);
  }

  /** The timeline's rows: the collector, the loader, then each thread with events, by thread id. */
  function timelineRows() {
    const ev = profile.events;
    const gc = {
      label: 'GC',
      items: ev.gc.collections.map(([gen, reason, kind, start, end, pause, heap]) => ({
        kind: 'gc',
        start,
        end: Math.max(end, start),
        gen,
        reason,
        gcKind: kind,
        pause,
        heap,
      })),
    };
    const loader = { label: 'module loads', items: ev.modules.map(([name, at]) => ({ kind: 'load', start: at, end: at, name })) };
    const byTid = new Map();
    for (const [kind, tid, start, end, type] of ev.timeline.events) {
      let items = byTid.get(tid);
      if (!items) byTid.set(tid, (items = []));
      if (kind === 0) items.push({ kind: 'jit', start, end: Math.max(end, start) });
      else items.push({ kind: 'throw', start, end: start, name: (ev.exceptions[type] || ['?'])[0] });
    }
    const labels = new Map(profile.threads.map((t, i) => [t[0], profile.threadLabel(i)]));
    const threads = Array.from(byTid.keys())
      .sort((a, b) => a - b)
      .map((tid) => ({ label: labels.get(tid) || 'thread ' + tid, items: byTid.get(tid) }));
    return [gc, loader, ...threads, ...callRows(labels)].filter((row, i) => i === 0 || row.items.length > 0);
  }

  /** The call trace's rows: per traced thread, one row per depth. */
  function callRows(labels) {
    const rows = [];
    tl.callsHidden = 0;
    for (const [tid, , calls] of ev().calls.threads) {
      const levels = [];
      for (const [method, depth, start, end, flags] of calls) {
        if (depth < 1 || depth > MAX_DEPTH_ROWS) {
          tl.callsHidden++;
          continue;
        }
        while (levels.length < depth) levels.push([]);
        levels[depth - 1].push({ kind: 'call', start, end: Math.max(end, start), method, depth, flags });
      }
      const name = labels.get(tid) || 'thread ' + tid;
      levels.forEach((items, d) => rows.push({ label: d === 0 ? name + ' calls' : '  depth ' + (d + 1), items }));
    }
    return rows;
  }

  function ev() {
    return profile.events;
  }

  /** A method's name as reports show it (text only: drawn with fillText, set with textContent). */
  function displayName(method) {
    const name = profile.names[method];
    return name === undefined ? '?' : name;
  }

  // ---- Memory: allocations by type -------------------------------------------------------

  function drawAllocations() {
    const alloc = profile.events.alloc;
    const body = $('alloc-types').tBodies[0];
    clear(body);
    let whole = 0;
    for (const [, bytes] of alloc.types) whole += bytes;
    const types = alloc.types.slice().sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
    for (const [name, bytes, count] of types) {
      const tr = el('tr');
      tr.append(el('td', 'mono', name));
      const b = el('td', 'num', fmtBytes(bytes));
      b.dataset.v = String(bytes);
      tr.append(b);
      const pct = el('td', 'num pct');
      const bar = el('span', 'bar');
      bar.style.width = whole > 0 ? Math.min(100, (bytes * 100) / whole).toFixed(1) + '%' : '0';
      pct.append(bar, el('span', 'pct-text', fmtPercent(bytes, whole)));
      tr.append(pct);
      const c = el('td', 'num', fmtCount(count));
      c.dataset.v = String(count);
      tr.append(c);
      tr.append(el('td', 'num', count > 0 ? fmtBytes(bytes / count) : '-'));
      body.append(tr);
    }
    const sampled = 'estimated from ' + fmtCount(alloc.samples) + ' samples, about one per ' + fmtBytes(alloc.sample_bytes) + ' allocated';
    const how =
      alloc.sampling === 'exact'
        ? 'every allocation counted'
        : alloc.sampling === 'sampled'
          ? alloc.exact_by_type
            ? 'every allocation counted by type; the tree ' + sampled
            : sampled
          : 'not recorded (sonde record --events alloc)';
    $('alloc-info').textContent = fmtBytes(whole) + ' in ' + fmtCount(types.length) + (types.length === 1 ? ' type' : ' types') + ' · ' + how;
  }

  // ---- Runtime events: collections by generation, exceptions by type -----------------------

  function drawSummaries() {
    const ev = profile.events;
    const gcBody = $('gc-table').tBodies[0];
    clear(gcBody);
    const pauses = [0, 0, 0];
    const maxes = [0, 0, 0];
    for (const [gen, , , , , pause] of ev.gc.collections) {
      const g = Math.min(2, Math.max(0, gen));
      pauses[g] += pause;
      maxes[g] = Math.max(maxes[g], pause);
    }
    ev.gc.count_by_gen.forEach((count, gen) => {
      const tr = el('tr');
      tr.append(el('td', '', 'gen' + gen), el('td', 'num', fmtCount(count)), el('td', 'num', fmtDuration(pauses[gen])), el('td', 'num', fmtDuration(maxes[gen])));
      gcBody.append(tr);
    });
    const exBody = $('exception-table').tBodies[0];
    clear(exBody);
    const exceptions = ev.exceptions.slice().sort((a, b) => b[1] - a[1]);
    for (const [name, thrown, caught] of exceptions) {
      const tr = el('tr');
      tr.append(el('td', 'mono', name), el('td', 'num', fmtCount(thrown)), el('td', 'num', fmtCount(caught)));
      exBody.append(tr);
    }
    $('exception-none').hidden = exceptions.length > 0;
    $('exception-table').hidden = exceptions.length === 0;
  }

  // ---- Timeline ----------------------------------------------------------------------------

  function colours() {
    const css = getComputedStyle(document.documentElement);
    const get = (name, fallback) => css.getPropertyValue(name).trim() || fallback;
    return {
      ink: get('--ink', '#1f2328'),
      muted: get('--muted', '#636c76'),
      line: get('--line', '#e2e5e9'),
      soft: get('--soft', '#f0f2f5'),
      gc: get('--tl-gc', '#e8a33d'),
      pause: get('--tl-pause', '#c0392b'),
      jit: get('--tl-jit', '#3b7dd8'),
      throwMark: get('--tl-throw', '#c2185b'),
      load: get('--tl-load', '#2e9e6a'),
      calls: ['#e07b39', '#d9a23b', '#c9603a', '#e8b04a', '#d4873f', '#bf7a30'],
      mono: get('--mono', 'monospace'),
    };
  }

  /** A tick step of 1, 2 or 5 × 10^k ns giving about `target` ticks over `span`. */
  function tickStep(span, target) {
    const raw = span / target;
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
    return 10 * p;
  }

  function drawTimeline() {
    const canvas = $('timeline');
    const wrap = $('tl-wrap');
    const width = Math.max(LABEL + 200, wrap.clientWidth);
    const height = AXIS + tl.rows.length * ROW + 4;
    const ctx = sizeCanvas(canvas, width, height);
    const c = colours();
    ctx.font = '12px ' + c.mono;
    ctx.textBaseline = 'middle';
    const plot = width - LABEL - 8;
    const span = tl.t1 - tl.t0;
    const xOf = (t) => LABEL + ((t - tl.t0) / span) * plot;

    // The axis: times from the agent's start.
    const step = tickStep(span, Math.max(2, Math.floor(plot / 110)));
    ctx.fillStyle = c.muted;
    ctx.strokeStyle = c.line;
    ctx.lineWidth = 1;
    for (let t = Math.ceil(tl.t0 / step) * step; t <= tl.t1; t += step) {
      const x = Math.round(xOf(t)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, AXIS - 6);
      ctx.lineTo(x, height);
      ctx.stroke();
      ctx.fillText(fmtDuration(t), x + 3, AXIS / 2);
    }

    tl.hits = [];
    let drawn = 0;
    tl.rows.forEach((row, r) => {
      const y = AXIS + r * ROW;
      if (r % 2 === 1) {
        ctx.fillStyle = c.soft;
        ctx.fillRect(LABEL, y, plot, ROW);
      }
      ctx.fillStyle = c.ink;
      ctx.save();
      ctx.beginPath();
      ctx.rect(0, y, LABEL - 6, ROW);
      ctx.clip();
      ctx.fillText(row.label, 6, y + ROW / 2);
      ctx.restore();
      ctx.save();
      ctx.beginPath();
      ctx.rect(LABEL, y, plot, ROW);
      ctx.clip();
      for (const item of row.items) {
        if (item.end < tl.t0 || item.start > tl.t1) continue;
        const x0 = xOf(item.start);
        const x1 = Math.max(xOf(item.end), x0 + 1);
        drawn++;
        if (item.kind === 'gc') {
          ctx.fillStyle = c.gc;
          ctx.fillRect(x0, y + 3, x1 - x0, ROW - 6);
          if (item.pause > 0) {
            // The pause, drawn at the collection's start (where the runtime suspends).
            const pw = Math.max(1, (Math.min(item.pause, item.end - item.start) / span) * plot);
            ctx.fillStyle = c.pause;
            ctx.fillRect(x0, y + 3, pw, ROW - 6);
          }
        } else if (item.kind === 'jit') {
          ctx.fillStyle = c.jit;
          ctx.fillRect(x0, y + 5, x1 - x0, ROW - 10);
        } else if (item.kind === 'call') {
          // Coloured by function, so that calls of one function look alike.
          ctx.fillStyle = c.calls[item.method % c.calls.length];
          ctx.fillRect(x0, y + 1, x1 - x0, ROW - 2);
          if (x1 - x0 > 30) {
            ctx.save();
            ctx.beginPath();
            ctx.rect(Math.max(x0, LABEL), y, x1 - Math.max(x0, LABEL) - 2, ROW);
            ctx.clip();
            ctx.fillStyle = c.ink;
            ctx.fillText(displayName(item.method), Math.max(x0, LABEL) + 3, y + ROW / 2);
            ctx.restore();
          }
        } else {
          ctx.fillStyle = item.kind === 'throw' ? c.throwMark : c.load;
          ctx.fillRect(Math.round(x0) - 1, y + 2, 2, ROW - 4);
        }
        tl.hits.push([r, x0 - 2, x1 + 2, item]);
      }
      ctx.restore();
    });
    canvas.dataset.drawn = String(drawn);
    // The rows' labels, one per line (what the tests read; an attribute's value, never markup).
    canvas.dataset.rows = tl.rows.map((row) => row.label).join('\n');
    canvas.dataset.range = Math.round(tl.t0) + '-' + Math.round(tl.t1);
    $('tl-reset').disabled = tl.t0 === 0 && tl.t1 === tl.end;
    $('tl-in').disabled = span <= MIN_SPAN;
    const calls = ev().calls;
    const overwritten = calls.threads.reduce((sum, t) => sum + t[1], 0);
    $('tl-info').textContent =
      fmtDuration(tl.t0) + ' – ' + fmtDuration(tl.t1) + ' of ' + fmtDuration(tl.end) +
      (ev().timeline.dropped > 0 ? ' · ' + fmtCount(ev().timeline.dropped) + ' events not kept' : '') +
      (calls.threads.length > 0 ? ' · call trace: the latest ' + fmtCount(calls.per_thread) + ' events per thread' + (overwritten > 0 ? ' (' + fmtCount(overwritten) + ' earlier ones not kept)' : '') : '') +
      (tl.callsHidden > 0 ? ' · ' + fmtCount(tl.callsHidden) + ' calls deeper than ' + MAX_DEPTH_ROWS + ' not drawn' : '');
  }

  /** Shows [t0, t1] (clamped to the run, at least MIN_SPAN wide) and redraws. */
  function show(t0, t1) {
    let span = Math.min(tl.end, Math.max(MIN_SPAN, t1 - t0));
    if (t0 < 0) t0 = 0;
    if (t0 + span > tl.end) t0 = tl.end - span;
    tl.t0 = Math.max(0, t0);
    tl.t1 = tl.t0 + span;
    drawTimeline();
  }

  /** Zooms by `factor` (< 1 zooms in) keeping time `at` where it is. */
  function zoom(factor, at) {
    const span = tl.t1 - tl.t0;
    const fixed = at === undefined ? tl.t0 + span / 2 : at;
    const share = (fixed - tl.t0) / span;
    const next = span * factor;
    show(fixed - share * next, fixed - share * next + next);
  }

  function timeAt(px) {
    const plot = $('timeline').clientWidth - LABEL - 8;
    return tl.t0 + ((px - LABEL) / plot) * (tl.t1 - tl.t0);
  }

  function itemAt(px, py) {
    const r = Math.floor((py - AXIS) / ROW);
    let best = null;
    for (const [row, x0, x1, item] of tl.hits) {
      if (row === r && px >= x0 && px <= x1 && (!best || x1 - x0 < best[1])) best = [item, x1 - x0];
    }
    return best && best[0];
  }

  function showItem(item, clientX, clientY) {
    const tip = $('tooltip');
    clear(tip);
    if (item.kind === 'gc') {
      tip.append(el('div', 'tt-name', 'GC gen' + item.gen + ' (' + item.reason + ', ' + item.gcKind + ')'));
      tip.append(tipLine('At', fmtDuration(item.start), ''));
      tip.append(tipLine('Duration', fmtDuration(item.end - item.start), ''));
      tip.append(tipLine('Pause', fmtDuration(item.pause), ''));
      if (item.heap > 0) tip.append(tipLine('Heap after', fmtBytes(item.heap), ''));
    } else if (item.kind === 'call') {
      tip.append(el('div', 'tt-name', displayName(item.method)));
      tip.append(el('div', 'tt-sub', 'call at depth ' + item.depth + (item.flags & 1 ? ', entered before the trace' : '') + (item.flags & 2 ? ', still running' : '')));
      tip.append(tipLine('At', fmtDuration(item.start), ''));
      tip.append(tipLine('Duration', fmtDuration(item.end - item.start), ''));
    } else if (item.kind === 'jit') {
      tip.append(el('div', 'tt-name', 'JIT compilation'));
      tip.append(tipLine('At', fmtDuration(item.start), ''));
      tip.append(tipLine('Duration', fmtDuration(item.end - item.start), ''));
    } else {
      tip.append(el('div', 'tt-name', item.name));
      tip.append(el('div', 'tt-sub', item.kind === 'throw' ? 'exception thrown' : 'module loaded'));
      tip.append(tipLine('At', fmtDuration(item.start), ''));
    }
    showTip(tip, clientX, clientY);
  }

  function setupTimeline() {
    const canvas = $('timeline');
    const local = (e) => {
      const r = canvas.getBoundingClientRect();
      return [e.clientX - r.left, e.clientY - r.top];
    };
    canvas.addEventListener(
      'wheel',
      (e) => {
        const [px] = local(e);
        if (px < LABEL) return;
        e.preventDefault();
        zoom(e.deltaY < 0 ? 0.8 : 1.25, timeAt(px));
      },
      { passive: false },
    );
    canvas.addEventListener('dblclick', (e) => {
      const [px] = local(e);
      if (px >= LABEL) zoom(0.5, timeAt(px));
    });
    canvas.addEventListener('mousedown', (e) => {
      const [px] = local(e);
      if (px >= LABEL) tl.drag = { x: px, t0: tl.t0, t1: tl.t1 };
    });
    window.addEventListener('mouseup', () => {
      tl.drag = null;
      canvas.classList.remove('dragging');
    });
    canvas.addEventListener('mousemove', (e) => {
      const [px, py] = local(e);
      if (tl.drag) {
        canvas.classList.add('dragging');
        const plot = canvas.clientWidth - LABEL - 8;
        const dt = ((px - tl.drag.x) / plot) * (tl.drag.t1 - tl.drag.t0);
        show(tl.drag.t0 - dt, tl.drag.t1 - dt);
        $('tooltip').hidden = true;
        return;
      }
      const item = itemAt(px, py);
      if (item) showItem(item, e.clientX, e.clientY);
      else $('tooltip').hidden = true;
    });
    canvas.addEventListener('mouseleave', () => {
      $('tooltip').hidden = true;
    });
    $('tl-in').addEventListener('click', () => zoom(0.5));
    $('tl-out').addEventListener('click', () => zoom(2));
    $('tl-reset').addEventListener('click', () => show(0, tl.end));
    let pending = false;
    window.addEventListener('resize', () => {
      if (pending || $('timeline-card').hidden) return;
      pending = true;
      requestAnimationFrame(() => {
        pending = false;
        drawTimeline();
      });
    });
  }

  return { init, hasTimeline, drawAllocations, drawSummaries, drawTimeline };
})();
