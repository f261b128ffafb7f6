// Runs the HTML report's model (crates/render/src/html/model.js, with fmt.js before it, in one
// strict function scope as the page does) under node on data blocks of real reports, and prints
// what the page computes from each as JSON. Run by crates/render/tests/page_script.rs, which
// compares it with `--format json` and with crates/profile/src/analysis.rs.
//
//   node tests/js/page-model.mjs DATA.json...   (each file: the page's `sonde-data` block)
//
// Prints one JSON array, an element per file: { weight, nodes: {self, total, calls}, views },
// with a view for all threads merged (thread -1) and one per thread, each holding its whole,
// its calls, per-method [calls, self, total], every method's callers and callees as
// [method, calls, total] (-1 for a thread's top level), and, for one thread's view, its hot
// path as node ids of the profile; and `measures`, the tree weighed by bytes allocated (`alloc`)
// and by lock wait (`wait`) where the profile has them: per-node self and total, per-method
// self and total of all threads merged.

import fs from 'node:fs';
import path from 'node:path';
import vm from 'node:vm';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const DIR = path.join(HERE, '../../crates/render/src/html');
const part = (name) => fs.readFileSync(path.join(DIR, name), 'utf8');

// No `document`, `window` or `performance` in the context: loading a profile needs no browser.
const Model = vm.runInNewContext("(function () {\n'use strict';\n" + part('fmt.js') + part('model.js') + 'return Model;\n})();\n', {});

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error('usage: node page-model.mjs DATA.json...');
  process.exit(2);
}

const out = files.map((file) => {
  const profile = Model.load(JSON.parse(fs.readFileSync(file, 'utf8')));
  const nodes = profile.nodes;
  const views = [-1, ...profile.threads.map((_, t) => t)].map((t) => {
    const v = profile.view(t);
    const M = profile.methodCount;
    const methods = [];
    const callers = [];
    const callees = [];
    for (let m = 0; m < M; m++) {
      methods.push([v.stats.calls[m], v.stats.self[m], v.stats.total[m]]);
      const b = profile.butterfly(v, m);
      callers.push(b.callers.map((e) => [e.method, e.calls, e.total]));
      callees.push(b.callees.map((e) => [e.method, e.calls, e.total]));
    }
    let hotPath = null;
    if (v.thread >= 0) {
      // A thread's view keeps the thread's nodes in profile order: map back to profile ids.
      const ids = [];
      for (let i = 0; i < nodes.n; i++) if (nodes.thread[i] === v.thread) ids.push(i);
      hotPath = profile.hotPath(v).map((k) => ids[k]);
    }
    return { thread: t, viewThread: v.thread, whole: v.whole, calls: v.allCalls, methods, callers, callees, hotPath };
  });
  // The Memory and Lock-wait tabs: the tree weighed by bytes allocated and by lock wait, all
  // threads merged: per-node self and total, per-method self and total.
  const measures = {};
  for (const measure of ['alloc', 'wait']) {
    if (!profile.hasMeasure(measure)) continue;
    profile.setMeasure(measure);
    const v = profile.view(-1);
    const methods = [];
    for (let m = 0; m < profile.methodCount; m++) methods.push([v.stats.self[m], v.stats.total[m]]);
    measures[measure] = { unit: profile.unit, nodes: { self: Array.from(profile.nodes.self), total: Array.from(profile.nodes.total) }, whole: v.whole, methods };
  }
  profile.setMeasure('cpu');
  return {
    weight: profile.bySamples ? 'samples' : 'ns',
    nodes: { self: Array.from(nodes.self), total: Array.from(nodes.total), calls: Array.from(nodes.calls) },
    views,
    measures,
  };
});
console.log(JSON.stringify(out));
