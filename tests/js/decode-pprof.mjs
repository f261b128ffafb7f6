// decode-pprof.mjs FILE...: decodes each gzip-compressed pprof with Datadog's `pprof-format` (an
// independent decoder) and prints one JSON line per file: its sample types, and per sample type
// the total and the value of each leaf function — what crates/cli/tests/push.rs checks Sonde's
// pushed profiles with.
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { Profile } from 'pprof-format';

for (const file of process.argv.slice(2)) {
  let bytes = readFileSync(file);
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) bytes = gunzipSync(bytes);
  const p = Profile.decode(bytes);
  const s = (i) => p.stringTable.strings[Number(i)];
  const types = p.sampleType.map((t) => `${s(t.type)}/${s(t.unit)}`);
  const functions = new Map(p.function.map((f) => [Number(f.id), s(f.name)]));
  const locations = new Map(p.location.map((l) => [Number(l.id), l.line.length ? functions.get(Number(l.line[0].functionId)) : '?']));
  const totals = types.map(() => 0);
  const leaves = types.map(() => ({}));
  for (const sample of p.sample) {
    const leaf = locations.get(Number(sample.locationId[0]));
    sample.value.forEach((v, k) => {
      totals[k] += Number(v);
      leaves[k][leaf] = (leaves[k][leaf] || 0) + Number(v);
    });
  }
  console.log(JSON.stringify({ file, types, totals, leaves, duration_nanos: Number(p.durationNanos), time_nanos: String(p.timeNanos) }));
}
