// model.js: the embedded profile decoded into typed arrays, and the views over it (all threads
// merged, or one thread) with the same recursion-aware aggregation as
// crates/profile/src/analysis.rs (crates/render/tests/page_script.rs checks that they agree).
// Everything here is linear in the number of nodes (plus the sorting of each node's children): a
// traced profile can hold millions of nodes.
// `Model.load(data)` returns a `Profile`; the other parts receive it from main.js and read it,
// and never change it.
/* exported Model */
/* global Fmt */

const Model = (() => {
  const { fmtCount, fmtDuration, fmtBytes } = Fmt;

  /** The profile of one data block (`sonde.html/1`, written by crates/render/src/html/data.rs). */
  class Profile {
    constructor(data) {
      this.run = data.run;
      /** Sampling profiles weigh frames by samples; tracing profiles by time. */
      this.bySamples = data.weight === 'samples';
      this.hasCalls = Array.isArray(data.nodes.calls);
      /** [calls, total_ns, total_samples] over all threads. */
      this.totals = data.totals;
      /** [assembly, module file] per module index. */
      this.modules = data.modules;
      /** [name, signature, module index] per method id. */
      this.methods = data.methods;
      this.methodCount = this.methods.length;
      this.names = this.methods.map((m) => m[0]);
      /** [os_tid, name or null, wall_ns, cpu_user_ns, cpu_kernel_ns] per thread id. */
      this.threads = data.threads;
      this.nodes = decodeNodes(data.nodes, this.hasCalls);
      data.nodes = null; // the typed arrays replace the (much larger) parsed arrays
      /** The runtime's events (data.rs `events`): allocations, collections, the timeline. */
      this.events = data.events;
      /** Source lines (data.rs `sources`): files, first lines, samples by line, embedded text. */
      this.sources = data.sources || { files: [], first: [], lines: [], text: [] };
      /** Coverage mode (data.rs `coverage`): `[method, calls]` and `[method, file, line, hits]`. */
      this.coverage = data.coverage || { methods: [], lines: [] };
      this.sourceText = new Map(this.sources.text.map(([file, lines]) => [file, lines]));
      /**
       * What the tree is weighed by: `cpu` (samples or time, as recorded), `alloc` (bytes
       * allocated, the Memory tab) or `wait` (time waiting for locks). Each has its own nodes
       * (same tree, other figures) and views.
       */
      this.measure = 'cpu';
      this.measureNodes = new Map([['cpu', this.nodes]]);
      this.views = new Map();
    }

    /** Whether any node has a figure of `measure`. */
    hasMeasure(measure) {
      if (measure === 'cpu') return true;
      const pairs = measure === 'alloc' ? this.events.node_alloc : this.events.node_wait;
      return pairs.some(([i, w]) => i >= 0 && i < this.nodes.n && w > 0);
    }

    /** Weighs the tree by `measure` from now on (`view` then returns views of it). */
    setMeasure(measure) {
      let nodes = this.measureNodes.get(measure);
      if (!nodes) {
        const cpu = this.measureNodes.get('cpu');
        nodes = measuredNodes(cpu, measure === 'alloc' ? this.events.node_alloc : this.events.node_wait);
        this.measureNodes.set(measure, nodes);
      }
      this.measure = measure;
      this.nodes = nodes;
    }

    /** The unit of the current measure: `samples`, `ns` or `bytes`. */
    get unit() {
      if (this.measure === 'alloc') return 'bytes';
      if (this.measure === 'wait') return 'ns';
      return this.bySamples ? 'samples' : 'ns';
    }

    /** What a frame's whole weight is called in the current measure. */
    weightName() {
      if (this.measure === 'alloc') return 'Allocated';
      if (this.measure === 'wait') return 'Lock wait';
      return this.bySamples ? 'Samples' : 'Time';
    }

    /** The view of one thread (`t` >= 0) or of all threads merged (`t` = -1), built once. */
    view(t) {
      if (this.threads.length === 1) t = 0;
      const key = this.measure + ':' + t;
      let view = this.views.get(key);
      if (!view) {
        view = t >= 0 ? threadView(this.nodes, t) : mergedView(this.nodes);
        finishView(view);
        view.stats = methodStats(view, this.methodCount);
        view.thread = t;
        this.views.set(key, view);
      }
      return view;
    }

    /** The children of node `i` of view `v`, heaviest first. */
    children(v, i) {
      return v.kids.subarray(v.first[i], v.first[i + 1]);
    }

    /**
     * The butterfly of method `x` in view `v`: who called it and what it called, each edge with
     * its calls and recursion-aware time (an edge counts only nodes with no ancestor on the same
     * edge), heaviest first. A caller of -1 means the method ran as a thread's top-level call.
     */
    butterfly(v, x) {
      const M = this.methodCount;
      const inCalls = new Float64Array(M + 1);
      const inTotal = new Float64Array(M + 1);
      const inSeen = new Uint8Array(M + 1);
      const inOnPath = new Int32Array(M + 1);
      const outCalls = new Float64Array(M);
      const outTotal = new Float64Array(M);
      const outSeen = new Uint8Array(M);
      const outOnPath = new Int32Array(M);
      const path = new Int32Array(v.maxDepth + 2);
      const { method, parent } = v;
      let sp = 0;
      for (let k = 0; k < v.n; k++) {
        const i = v.pre[k];
        const d = v.depth[i];
        while (sp > d) {
          const j = path[--sp];
          const pj = parent[j];
          if (method[j] === x) inOnPath[pj < 0 ? 0 : method[pj] + 1]--;
          if (pj >= 0 && method[pj] === x) outOnPath[method[j]]--;
        }
        const p = parent[i];
        if (method[i] === x) {
          const c = p < 0 ? 0 : method[p] + 1;
          inSeen[c] = 1;
          inCalls[c] += v.calls[i];
          if (inOnPath[c] === 0) inTotal[c] += v.total[i];
          inOnPath[c]++;
        }
        if (p >= 0 && method[p] === x) {
          const c = method[i];
          outSeen[c] = 1;
          outCalls[c] += v.calls[i];
          if (outOnPath[c] === 0) outTotal[c] += v.total[i];
          outOnPath[c]++;
        }
        path[sp++] = i;
      }
      const callers = [];
      for (let c = 0; c <= M; c++) {
        if (inSeen[c]) callers.push({ method: c - 1, calls: inCalls[c], total: inTotal[c] });
      }
      const callees = [];
      for (let c = 0; c < M; c++) {
        if (outSeen[c]) callees.push({ method: c, calls: outCalls[c], total: outTotal[c] });
      }
      const heaviest = (a, b) => b.total - a.total || b.calls - a.calls || a.method - b.method;
      callers.sort(heaviest);
      callees.sort(heaviest);
      return { callers, callees };
    }

    /**
     * The hot path: from the heaviest root down through the heaviest child, while that child
     * holds at least half of its parent's weight (as `hot_path` in analysis.rs).
     */
    hotPath(v) {
      const path = [];
      if (v.roots.length === 0 || !(v.total[v.roots[0]] > 0)) return path;
      let i = v.roots[0];
      path.push(i);
      for (;;) {
        const kids = this.children(v, i);
        if (kids.length === 0) break;
        const c = kids[0];
        if (!(v.total[c] > 0) || v.total[c] < 0.5 * v.total[i]) break;
        path.push(c);
        i = c;
      }
      return path;
    }

    threadLabel(t) {
      const [tid, name] = this.threads[t];
      return name ? 'thread ' + tid + ' (' + name + ')' : 'thread ' + tid;
    }

    viewLabel(v) {
      return v.thread < 0 ? 'all threads' : this.threadLabel(v.thread);
    }

    /** The module (assembly and file) of a method, as text. */
    /** Method `m`'s first line as `[file index, line]`, or null without symbols. */
    firstLine(m) {
      const found = this.sources.first.find((f) => f[0] === m);
      return found ? [found[1], found[2]] : null;
    }

    /** Method `m`'s samples by line: `{file, line, self, total}`, hottest first (all threads). */
    linesOf(m) {
      return this.sources.lines
        .filter((l) => l[0] === m)
        .map(([, file, line, self, total]) => ({ file, line, self, total }))
        .sort((a, b) => b.self - a.self || b.total - a.total || a.line - b.line);
    }

    moduleText(m) {
      const mod = this.modules[this.methods[m][2]];
      if (!mod) return '';
      return mod[0] && mod[1] && mod[0] !== mod[1] ? mod[0] + ' · ' + mod[1] : mod[0] || mod[1] || '';
    }

    /** A weight (time, samples or bytes) for a table cell: the column header names the unit. */
    weightText(w) {
      const unit = this.unit;
      return unit === 'samples' ? fmtCount(w) : unit === 'bytes' ? fmtBytes(w) : fmtDuration(w);
    }

    /** A weight with its unit, for sentences and tooltips. */
    weightLongText(w) {
      if (this.unit !== 'samples') return this.weightText(w);
      const text = fmtCount(w) + (w === 1 ? ' sample' : ' samples');
      const every = this.run.sample_interval_ns;
      return every > 0 ? text + ' (≈ ' + fmtDuration(w * every) + ')' : text;
    }
  }

  /**
   * The embedded node table is compact: each node's parent as the distance back to it (0 for a
   * thread's top-level call), the thread only for top-level calls (children inherit it), and
   * each total as its difference from self + the children's totals (almost always 0, so only the
   * non-zero ones are listed).
   */
  function decodeNodes(nd, hasCalls) {
    const n = nd.method.length;
    const parent = new Int32Array(n);
    const thread = new Int32Array(n);
    const method = Int32Array.from(nd.method);
    const self = Float64Array.from(nd.self);
    const total = Float64Array.from(nd.self);
    const calls = hasCalls ? Float64Array.from(nd.calls) : new Float64Array(n);
    let root = 0;
    for (let i = 0; i < n; i++) {
      const back = nd.parent[i];
      if (back === 0) {
        parent[i] = -1;
        thread[i] = nd.thread[root++];
      } else {
        parent[i] = i - back;
        thread[i] = thread[i - back];
      }
    }
    for (const [i, d] of nd.adjust) total[i] += d;
    // Parents precede their children, so one backward pass completes every total.
    for (let i = n - 1; i >= 0; i--) {
      if (parent[i] >= 0) total[parent[i]] += total[i];
    }
    return { n, parent, thread, method, calls, self, total };
  }

  /**
   * The tree of `cpu` weighed by sparse `[node, figure]` pairs (a node's own share: its figure
   * where it was the innermost frame), totals summed up the tree. Pairs naming no node are
   * ignored.
   */
  function measuredNodes(cpu, pairs) {
    const { n, parent } = cpu;
    const self = new Float64Array(n);
    for (const [i, w] of pairs) if (i >= 0 && i < n && w > 0) self[i] += w;
    const total = Float64Array.from(self);
    for (let i = n - 1; i >= 0; i--) if (parent[i] >= 0) total[parent[i]] += total[i];
    return { ...cpu, self, total };
  }

  function emptyView(capacity) {
    return {
      n: 0,
      parent: new Int32Array(capacity),
      method: new Int32Array(capacity),
      calls: new Float64Array(capacity),
      self: new Float64Array(capacity),
      total: new Float64Array(capacity),
    };
  }

  function trimView(v) {
    for (const key of ['parent', 'method', 'calls', 'self', 'total']) v[key] = v[key].slice(0, v.n);
    return v;
  }

  /** One thread's nodes as recorded. */
  function threadView(src, t) {
    let count = 0;
    for (let i = 0; i < src.n; i++) if (src.thread[i] === t) count++;
    const v = emptyView(count);
    const map = new Int32Array(src.n);
    for (let i = 0; i < src.n; i++) {
      if (src.thread[i] !== t) continue;
      const k = v.n++;
      map[i] = k;
      v.parent[k] = src.parent[i] < 0 ? -1 : map[src.parent[i]];
      v.method[k] = src.method[i];
      v.calls[k] = src.calls[i];
      v.self[k] = src.self[i];
      v.total[k] = src.total[i];
    }
    return v;
  }

  /**
   * All threads merged: nodes with the same chain of methods from the root become one node.
   * Merging keeps every figure of the analysis: a method's recursion-aware total depends only on
   * the methods above each node, which merging preserves. The (merged parent, method) pairs are
   * looked up in an open-addressing hash table of typed arrays: a Map of a million entries takes
   * several times longer.
   */
  function mergedView(src) {
    const v = emptyView(src.n);
    const map = new Int32Array(src.n);
    let size = 16;
    while (size < src.n * 2) size *= 2;
    const mask = size - 1;
    const slotParent = new Int32Array(size); // merged parent + 2; 0 marks an empty slot
    const slotMethod = new Int32Array(size);
    const slotNode = new Int32Array(size);
    for (let i = 0; i < src.n; i++) {
      const p = src.parent[i] < 0 ? -1 : map[src.parent[i]];
      const m = src.method[i];
      let h = Math.imul(p + 2, 0x9e3779b1) ^ Math.imul(m + 1, 0x85ebca6b);
      h = (h ^ (h >>> 15)) & mask;
      while (slotParent[h] !== 0 && (slotParent[h] !== p + 2 || slotMethod[h] !== m)) h = (h + 1) & mask;
      let k;
      if (slotParent[h] === 0) {
        k = v.n++;
        slotParent[h] = p + 2;
        slotMethod[h] = m;
        slotNode[h] = k;
        v.parent[k] = p;
        v.method[k] = m;
      } else {
        k = slotNode[h];
      }
      map[i] = k;
      v.calls[k] += src.calls[i];
      v.self[k] += src.self[i];
      v.total[k] += src.total[i];
    }
    return trimView(v);
  }

  /** Children lists (heaviest first), roots, a preorder walk with depths, and the view's totals. */
  function finishView(v) {
    const n = v.n;
    const { parent, total } = v;
    const first = new Int32Array(n + 1);
    let nroots = 0;
    for (let i = 0; i < n; i++) {
      if (parent[i] < 0) nroots++;
      else first[parent[i] + 1]++;
    }
    for (let i = 0; i < n; i++) first[i + 1] += first[i];
    const kids = new Int32Array(n - nroots);
    const next = first.slice(0, n);
    const roots = new Int32Array(nroots);
    let r = 0;
    for (let i = 0; i < n; i++) {
      if (parent[i] < 0) roots[r++] = i;
      else kids[next[parent[i]]++] = i;
    }
    const heaviest = (a, b) => total[b] - total[a] || a - b;
    for (let i = 0; i < n; i++) {
      const from = first[i];
      const to = first[i + 1];
      if (to - from > 24) {
        kids.subarray(from, to).sort(heaviest);
        continue;
      }
      // Most nodes have a few children: an insertion sort without a comparator call is faster.
      for (let j = from + 1; j < to; j++) {
        const c = kids[j];
        const w = total[c];
        let k = j - 1;
        while (k >= from && (total[kids[k]] < w || (total[kids[k]] === w && kids[k] > c))) {
          kids[k + 1] = kids[k];
          k--;
        }
        kids[k + 1] = c;
      }
    }
    roots.sort(heaviest);

    const pre = new Int32Array(n);
    const depth = new Int32Array(n);
    const stack = new Int32Array(n);
    let sp = 0;
    let k = 0;
    let maxDepth = 0;
    for (let j = roots.length - 1; j >= 0; j--) stack[sp++] = roots[j];
    while (sp > 0) {
      const i = stack[--sp];
      pre[k++] = i;
      const d = parent[i] < 0 ? 0 : depth[parent[i]] + 1;
      depth[i] = d;
      if (d > maxDepth) maxDepth = d;
      for (let j = first[i + 1] - 1; j >= first[i]; j--) stack[sp++] = kids[j];
    }
    let whole = 0;
    for (const root of roots) whole += total[root];
    let calls = 0;
    for (let i = 0; i < n; i++) calls += v.calls[i];
    Object.assign(v, { first, kids, roots, pre, depth, maxDepth, whole, allCalls: calls });
  }

  /**
   * Per-method calls, self and total of a view. A total counts only outermost occurrences (nodes
   * with no ancestor of the same method), so recursion is not counted twice.
   */
  function methodStats(v, M) {
    const calls = new Float64Array(M);
    const self = new Float64Array(M);
    const total = new Float64Array(M);
    const onPath = new Int32Array(M);
    const path = new Int32Array(v.maxDepth + 2);
    let sp = 0;
    for (let k = 0; k < v.n; k++) {
      const i = v.pre[k];
      const d = v.depth[i];
      while (sp > d) onPath[v.method[path[--sp]]]--;
      const m = v.method[i];
      calls[m] += v.calls[i];
      self[m] += v.self[i];
      if (onPath[m] === 0) total[m] += v.total[i];
      onPath[m]++;
      path[sp++] = i;
    }
    return { calls, self, total };
  }

  return {
    /** Decodes a parsed data block; takes its node arrays (they are set to null once decoded). */
    load(data) {
      return new Profile(data);
    },
  };
})();
