// fmt.js: numbers and small DOM helpers. The number formats mirror crates/render/src/fmt.rs so
// that the page and the text report print the same figures.
/* exported Fmt */
/* global document, window */

const Fmt = (() => {
  /** A duration with three or four significant digits, truncated (never rounded up a unit). */
  function fmtDuration(ns) {
    if (!(ns >= 0)) return '-';
    ns = Math.floor(ns);
    if (ns < 1e3) return ns + ' ns';
    if (ns < 1e6) return decimal(Math.floor(ns / 10), 'µs');
    if (ns < 1e9) return decimal(Math.floor(ns / 1e4), 'ms');
    return decimal(Math.floor(ns / 1e7), 's');
  }

  function decimal(hundredths, unit) {
    if (hundredths < 1000) {
      return Math.floor(hundredths / 100) + '.' + String(hundredths % 100).padStart(2, '0') + ' ' + unit;
    }
    const tenths = Math.floor(hundredths / 10);
    return Math.floor(tenths / 10) + '.' + (tenths % 10) + ' ' + unit;
  }

  /** A count with thousands separators: 1,234,567. */
  function fmtCount(n) {
    if (!Number.isFinite(n)) return '-';
    const s = BigInt(Math.round(n)).toString();
    return s.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  }

  /** Bytes in binary units with one decimal (1.5 MB), as `fmt::bytes` in fmt.rs. */
  function fmtBytes(n) {
    if (!(n >= 0)) return '-';
    if (n < 1024) return Math.floor(n) + ' B';
    const units = ['KB', 'MB', 'GB', 'TB'];
    let value = n / 1024;
    let unit = 0;
    while (value >= 1024 && unit + 1 < units.length) {
      value /= 1024;
      unit++;
    }
    return value.toFixed(1) + ' ' + units[unit];
  }

  /** `part` as a percentage of `whole` with one decimal, or "-" when there is no whole. */
  function fmtPercent(part, whole) {
    if (!(whole > 0)) return '-';
    return ((part * 100) / whole).toFixed(1) + '%';
  }

  /**
   * Creates an element. Text from the profile goes in only through `textContent`, so a method
   * name such as `"><img src=x onerror=alert(1)>` stays text.
   */
  function el(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  /**
   * Sizes `canvas` to `width` × `height` CSS pixels at the screen's pixel density and returns its
   * context, cleared, drawing in CSS pixels.
   */
  function sizeCanvas(canvas, width, height) {
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.width = width + 'px';
    canvas.style.height = height + 'px';
    const ctx = canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    return ctx;
  }

  /** A tooltip line: label, value and a share (may be empty). */
  function tipLine(label, value, pct) {
    const line = el('div', 'tt-line');
    line.append(el('span', 'tt-k', label), el('span', 'tt-v', value), el('span', 'tt-p', pct));
    return line;
  }

  /** Shows the tooltip `tip` beside the pointer at (clientX, clientY), inside the window. */
  function showTip(tip, clientX, clientY) {
    tip.hidden = false;
    const pad = 14;
    const box = tip.getBoundingClientRect();
    let left = clientX + pad;
    let top = clientY + pad;
    if (left + box.width > window.innerWidth - 4) left = Math.max(4, clientX - box.width - pad);
    if (top + box.height > window.innerHeight - 4) top = Math.max(4, clientY - box.height - pad);
    tip.style.left = left + 'px';
    tip.style.top = top + 'px';
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
  }

  function $(id) {
    return document.getElementById(id);
  }

  return { fmtDuration, fmtCount, fmtBytes, fmtPercent, el, clear, $, sizeCanvas, tipLine, showTip };
})();
