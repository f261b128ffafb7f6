// flame.js: the flame graph (root at the bottom) or icicle (root at the top) on a <canvas>.
// Each redraw lays out only the frames at least MIN_WIDTH px wide: children are sorted heaviest
// first, so the walk stops at the first narrow child and a million-node view costs no more than
// what is visible. Names reach the canvas only through fillText. Owns its zoom, mode and layout;
// reads the page's state and asks main.js (`actions.selectMethod`) to select a clicked method.
/* exported Flame */
/* global Fmt, document, window, getComputedStyle, requestAnimationFrame */

const Flame = (() => {
  const { fmtCount, fmtPercent, el, clear, $, sizeCanvas, tipLine, showTip } = Fmt;

  const ROW = 18;
  const MIN_WIDTH = 0.5;
  const ROOT = -1; // the synthetic frame under everything: the whole view
  /** Rows drawn at most (a canvas of 1,000s of rows costs 100s of MB); deeper needs a zoom. */
  const MAX_ROWS = 400;
  /** Ancestors of the zoomed frame drawn at most. */
  const ANCESTOR_ROWS = 12;
  const FRAMEWORK = /^(System|Microsoft|Internal|Interop|Mono)\./;
  /** The runtime's work for the program (`[jit] …`, `[gc]`): a colour of its own. */
  const WORK = /^\[(jit|gc|type load)\]/;

  /** Given by `init`: the profile (model.js), the page's state and actions (main.js). */
  let profile = null;
  let state = null;
  let actions = null;

  const flame = {
    icicle: false,
    zoom: ROOT,
    hover: null,
    // Laid-out frames of the last draw: node (ROOT for the base frame), x, width and row.
    node: [],
    x: [],
    w: [],
    row: [],
    rows: 1,
    colours: [],
    widths: null,
    shortNames: [],
  };

  function init(theProfile, theState, theActions) {
    profile = theProfile;
    state = theState;
    actions = theActions;
    flame.colours = new Array(profile.methodCount);
    flame.widths = new Float32Array(profile.methodCount).fill(NaN);
    flame.shortNames = new Array(profile.methodCount);
    setupFlame();
  }

  function flameWeight(v, i) {
    return i === ROOT ? v.whole : v.total[i];
  }

  /** Where each visible frame goes, for view `v` zoomed on `flame.zoom`. */
  function flameLayout(v, width) {
    const { node, x, w, row } = flame;
    node.length = x.length = w.length = row.length = 0;
    const add = (i, fx, fw, r) => {
      node.push(i);
      x.push(fx);
      w.push(fw);
      row.push(r);
    };
    add(ROOT, 0, width, 0);
    const zoom = flame.zoom;
    // The zoomed frame and its ancestors span the whole width. Zoomed deep into a recursion, only
    // its nearest ancestors are drawn: rows 1..skip are left out (the breadcrumbs name them).
    const skip = zoom === ROOT ? 0 : Math.max(0, v.depth[zoom] + 1 - ANCESTOR_ROWS);
    flame.skip = skip;
    if (zoom !== ROOT) {
      for (let a = zoom; a >= 0 && v.depth[a] + 1 > skip; a = v.parent[a]) add(a, 0, width, v.depth[a] + 1 - skip);
    }
    let deepest = zoom === ROOT ? 0 : v.depth[zoom] + 1 - skip;
    let cut = false;
    const whole = flameWeight(v, zoom);
    if (whole > 0) {
      const scale = width / whole;
      const stackN = [];
      const stackX = [];
      const place = (list, x0) => {
        let cx = x0;
        for (let j = 0; j < list.length; j++) {
          const fw = v.total[list[j]] * scale;
          if (!(fw >= MIN_WIDTH)) break; // heaviest first: the rest are narrower still
          stackN.push(list[j]);
          stackX.push(cx);
          cx += fw;
        }
      };
      place(zoom === ROOT ? v.roots : profile.children(v, zoom), 0);
      while (stackN.length > 0) {
        const i = stackN.pop();
        const fx = stackX.pop();
        const r = v.depth[i] + 1 - skip;
        if (r >= MAX_ROWS) {
          cut = true;
          continue;
        }
        add(i, fx, v.total[i] * scale, r);
        if (r > deepest) deepest = r;
        place(profile.children(v, i), fx);
      }
    }
    flame.rows = deepest + 1;
    flame.cut = cut;
  }

  function hashName(s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
    return h >>> 0;
  }

  /** Warm colours for the program's own code, cool ones for the framework, violet for the
   * runtime's work; stable per name. */
  function colourOf(m) {
    let c = flame.colours[m];
    if (c === undefined) {
      const name = profile.names[m];
      const h = hashName(name);
      if (WORK.test(name)) {
        c = 'hsl(' + (265 + (h % 25)) + ',' + (40 + ((h >>> 8) % 20)) + '%,' + (70 + ((h >>> 16) % 8)) + '%)';
      } else if (FRAMEWORK.test(name)) {
        c = 'hsl(' + (195 + (h % 30)) + ',' + (45 + ((h >>> 8) % 20)) + '%,' + (68 + ((h >>> 16) % 10)) + '%)';
      } else {
        c = 'hsl(' + (8 + (h % 42)) + ',' + (78 + ((h >>> 8) % 17)) + '%,' + (58 + ((h >>> 16) % 10)) + '%)';
      }
      flame.colours[m] = c;
    }
    return c;
  }

  /** Draws the current view; `keepScroll` keeps the flame graph's scroll position. */
  function drawFlame({ keepScroll = false } = {}) {
    const v = state.view;
    const canvas = $('flame');
    const wrap = $('flame-wrap');
    const width = Math.max(200, wrap.clientWidth);
    flameLayout(v, width);
    const height = flame.rows * ROW;
    const ctx = sizeCanvas(canvas, width, height);
    const css = getComputedStyle(document.documentElement);
    const ink = css.getPropertyValue('--flame-ink').trim() || '#1d1d1f';
    const base = css.getPropertyValue('--flame-base').trim() || '#c9ced6';
    const dim = css.getPropertyValue('--flame-dim').trim() || '#e4e6ea';
    const hit = css.getPropertyValue('--flame-match').trim() || '#b04fd9';
    const ring = css.getPropertyValue('--flame-selected').trim() || '#1d1d1f';
    ctx.font = '12px ' + (css.getPropertyValue('--mono').trim() || 'monospace');
    ctx.textBaseline = 'middle';
    const matches = state.matches;
    let matched = 0;
    const { node, x, w, row } = flame;
    for (let k = 0; k < node.length; k++) {
      const i = node[k];
      const m = i === ROOT ? -1 : v.method[i];
      const y = flame.icicle ? row[k] * ROW : (flame.rows - 1 - row[k]) * ROW;
      let fill = m < 0 ? base : colourOf(m);
      if (matches && m >= 0) {
        if (matches[m]) {
          fill = hit;
          matched++;
        } else {
          fill = dim;
        }
      }
      ctx.fillStyle = fill;
      const fw = w[k] > 1.5 ? w[k] - 1 : w[k];
      ctx.fillRect(x[k], y, fw, ROW - 1);
      if (m >= 0 && m === state.method && w[k] > 3) {
        ctx.strokeStyle = ring;
        ctx.lineWidth = 1.5;
        ctx.strokeRect(x[k] + 0.75, y + 0.75, fw - 1.5, ROW - 2.5);
      }
      if (w[k] > 28) {
        let label = m < 0 ? profile.viewLabel(v) : profile.names[m];
        if (m < 0 && flame.skip > 0) label += '  ·  ' + fmtCount(flame.skip) + ' outer frames not shown';
        const text = fitText(ctx, label, m, w[k] - 8);
        if (text) {
          ctx.fillStyle = matches && m >= 0 && matches[m] ? '#fff' : ink;
          ctx.fillText(text, x[k] + 4, y + ROW / 2);
        }
      }
    }
    canvas.dataset.frames = String(node.length);
    canvas.dataset.matches = String(matched);
    $('flame-cut').hidden = !flame.cut;
    drawCrumbs();
    if (!flame.icicle && !keepScroll) wrap.scrollTop = wrap.scrollHeight;
  }

  /**
   * `label` if it fits in `room` px; else the method without its namespace (`Sorter.Merge` for
   * `Acme.Demo.Sorter.Merge`), cut with an ellipsis if need be; empty when not even a few letters
   * fit.
   */
  function fitText(ctx, label, m, room) {
    let full = m >= 0 ? flame.widths[m] : NaN;
    if (Number.isNaN(full)) {
      full = ctx.measureText(label).width;
      if (m >= 0) flame.widths[m] = full;
    }
    if (full <= room) return label;
    if (m >= 0) {
      const short = shortName(m);
      if (short.length < label.length) {
        label = short;
        full = ctx.measureText(label).width;
        if (full <= room) return label;
      }
    }
    let n = Math.floor((label.length * room) / full) - 1;
    if (n < 3) return '';
    let text = label.slice(0, n) + '…';
    while (n > 3 && ctx.measureText(text).width > room) text = label.slice(0, --n) + '…';
    return n >= 3 ? text : '';
  }

  /** A method's name without its namespace: the type (and nesting) and the method. */
  function shortName(m) {
    let short = flame.shortNames[m];
    if (short === undefined) {
      const name = profile.names[m];
      const bang = name.lastIndexOf('!');
      const match = /[^.]+\.\.?[^.]+$/.exec(name);
      short = bang >= 0 ? name.slice(bang + 1) : match ? match[0] : name;
      flame.shortNames[m] = short;
    }
    return short;
  }

  function drawCrumbs() {
    const v = state.view;
    const crumbs = $('crumbs');
    clear(crumbs);
    const chain = [];
    for (let a = flame.zoom; a >= 0; a = v.parent[a]) chain.push(a);
    chain.push(ROOT);
    chain.reverse();
    const shown = chain.length > 6 ? [chain[0], null, ...chain.slice(-4)] : chain;
    shown.forEach((i, k) => {
      if (k > 0) crumbs.append(el('span', 'sep', '›'));
      if (i === null) {
        crumbs.append(el('span', 'more', '…'));
        return;
      }
      const label = i === ROOT ? profile.viewLabel(v) : profile.names[v.method[i]];
      const b = el('button', 'crumb' + (i === flame.zoom ? ' here' : ''), label);
      b.title = label;
      b.addEventListener('click', () => zoomTo(i));
      crumbs.append(b);
    });
    $('reset').disabled = flame.zoom === ROOT;
  }

  function zoomTo(i, { keepScroll = false } = {}) {
    flame.zoom = i;
    drawFlame({ keepScroll });
  }

  /** The laid-out frame under canvas point (px, py), as an index into the layout, or -1. */
  function frameAt(px, py) {
    const r = flame.icicle ? Math.floor(py / ROW) : flame.rows - 1 - Math.floor(py / ROW);
    const { x, w, row } = flame;
    for (let k = 0; k < row.length; k++) {
      if (row[k] === r && px >= x[k] && px < x[k] + w[k]) return k;
    }
    return -1;
  }

  function showTooltip(k, clientX, clientY) {
    const v = state.view;
    const tip = $('tooltip');
    const i = flame.node[k];
    clear(tip);
    const whole = v.whole;
    if (i === ROOT) {
      tip.append(el('div', 'tt-name', profile.viewLabel(v)));
      tip.append(tipLine(profile.weightName(), profile.weightLongText(whole), '100%'));
      if (profile.hasCalls) tip.append(tipLine('Calls', fmtCount(v.allCalls), ''));
    } else {
      const m = v.method[i];
      tip.append(el('div', 'tt-name', profile.names[m]));
      const sub = [profile.methods[m][1], profile.moduleText(m)].filter(Boolean).join('  ·  ');
      if (sub) tip.append(el('div', 'tt-sub', sub));
      tip.append(tipLine('Total', profile.weightLongText(v.total[i]), fmtPercent(v.total[i], whole)));
      tip.append(tipLine('Self', profile.weightLongText(v.self[i]), fmtPercent(v.self[i], whole)));
      if (profile.hasCalls) tip.append(tipLine('Calls', fmtCount(v.calls[i]), ''));
      if (flame.zoom !== ROOT && i !== flame.zoom) {
        const z = flameWeight(v, flame.zoom);
        tip.append(tipLine('Of zoomed frame', fmtPercent(v.total[i], z), ''));
      }
      tip.append(el('div', 'tt-hint', 'Click to zoom · the method’s callers and callees are shown on the right'));
    }
    showTip(tip, clientX, clientY);
  }

  function setupFlame() {
    const canvas = $('flame');
    const point = (e) => {
      const r = canvas.getBoundingClientRect();
      return frameAt(e.clientX - r.left, e.clientY - r.top);
    };
    canvas.addEventListener('mousemove', (e) => {
      const k = point(e);
      canvas.classList.toggle('pointing', k >= 0);
      if (k < 0) $('tooltip').hidden = true;
      else showTooltip(k, e.clientX, e.clientY);
    });
    canvas.addEventListener('mouseleave', () => {
      $('tooltip').hidden = true;
    });
    canvas.addEventListener('click', (e) => {
      const k = point(e);
      if (k < 0) return;
      const i = flame.node[k];
      const v = state.view;
      if (i !== ROOT) actions.selectMethod(v.method[i], { scroll: false, redraw: false });
      zoomTo(i === flame.zoom && i !== ROOT ? (v.parent[i] < 0 ? ROOT : v.parent[i]) : i, { keepScroll: true });
    });
    $('reset').addEventListener('click', () => zoomTo(ROOT));
    const mode = (icicle) => {
      flame.icicle = icicle;
      $('mode-flame').classList.toggle('on', !icicle);
      $('mode-icicle').classList.toggle('on', icicle);
      $('mode-flame').setAttribute('aria-pressed', String(!icicle));
      $('mode-icicle').setAttribute('aria-pressed', String(icicle));
      drawFlame();
    };
    $('mode-flame').addEventListener('click', () => mode(false));
    $('mode-icicle').addEventListener('click', () => mode(true));
    let pending = false;
    window.addEventListener('resize', () => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => {
        pending = false;
        drawFlame({ keepScroll: true });
      });
    });
  }

  return {
    init,
    draw: drawFlame,
    /** Back to the whole view, without drawing (the next draw shows it). */
    unzoom() {
      flame.zoom = ROOT;
    },
    /** Back to the whole view, drawn. */
    zoomOut() {
      zoomTo(ROOT);
    },
    zoomed() {
      return flame.zoom !== ROOT;
    },
  };
})();
