// Checks Sonde's exports with independent consumers:
//   *.speedscope.json  validated with ajv against the file-format schema shipped in the
//                      `speedscope` npm package, then read back the way speedscope reads it;
//   *.pb.gz            gunzipped with node's zlib and decoded with Datadog's `pprof-format`;
//   *.trace.json       parsed by Chrome DevTools' own trace engine (`@paulirish/trace_engine`),
//                      whose threads must hold the complete events.
// For a file F, the optional F.expect.json says what a consumer must find in it (profiles and
// their stacks by name for speedscope; sample types, samples, stacks and labels for pprof; the
// threads, by name, with their complete events' names, starts and durations, for a trace).
//
// Usage: node tests/js/validate-exports.mjs FILE...   (exit 1 on the first broken file)

import { readFileSync, existsSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import Ajv from 'ajv';
import { Profile } from 'pprof-format';

const here = dirname(fileURLToPath(import.meta.url));
const schemaPath = join(here, 'node_modules/speedscope/dist/release/file-format-schema.json');

class Invalid extends Error {}

function check(condition, message) {
    if (!condition) throw new Invalid(message);
}

function same(actual, expected, what) {
    check(isDeepStrictEqual(actual, expected),
        `${what}:\n  expected ${JSON.stringify(expected)}\n  found    ${JSON.stringify(actual)}`);
}

let validateSpeedscope;
function speedscope(file, expect) {
    if (!validateSpeedscope) {
        const ajv = new Ajv({ allErrors: true });
        validateSpeedscope = ajv.compile(JSON.parse(readFileSync(schemaPath, 'utf8')));
    }
    const data = JSON.parse(readFileSync(file, 'utf8'));
    if (!validateSpeedscope(data)) {
        throw new Invalid(`does not match speedscope's schema: ${JSON.stringify(validateSpeedscope.errors, null, 1)}`);
    }
    // What the schema cannot say but speedscope's importer relies on.
    const frames = data.shared.frames;
    check(Number.isInteger(data.activeProfileIndex) && data.activeProfileIndex >= 0
        && data.activeProfileIndex < data.profiles.length, 'activeProfileIndex names no profile');
    const profiles = data.profiles.map((p, i) => {
        const frame = (f, where) => {
            check(Number.isInteger(f) && f >= 0 && f < frames.length, `profile ${i} ${where}: no frame ${f}`);
            return frames[f].name;
        };
        if (p.type === 'evented') return evented(p, i, frame);
        check(p.type === 'sampled', `profile ${i} is ${p.type}, neither evented nor sampled`);
        check(p.samples.length === p.weights.length, `profile ${i}: ${p.samples.length} stacks, ${p.weights.length} weights`);
        let sum = 0;
        for (const w of p.weights) {
            check(w > 0, `profile ${i}: weight ${w} (speedscope drops zero weights)`);
            sum += w;
        }
        check(p.endValue - p.startValue === sum, `profile ${i}: endValue ${p.endValue} is not the sum of weights ${sum}`);
        const stacks = p.samples.map((stack, j) => stack.map(f => frame(f, `stack ${j}`)));
        return { name: p.name, unit: p.unit, stacks, weights: p.weights };
    });
    if (expect) {
        same(profiles.map(p => p.name), expect.profiles.map(p => p.name), 'profile names');
        expect.profiles.forEach((e, i) => same(profiles[i], e, `profile ${i} (${e.name})`));
        same(data.activeProfileIndex, expect.activeProfileIndex, 'activeProfileIndex');
    }
    return `${data.profiles.length} profiles, ${frames.length} frames`;
}

// An evented profile read the way speedscope's CallTreeProfileBuilder reads it: every stretch of
// time between two events is a sample of the stack open during it. Its importer refuses times
// that go back, a close that does not name the frame on top, and frames left open; Sonde's
// exports also leave no time without a frame open and end at endValue.
function evented(p, i, frame) {
    const open = [];
    const stacks = [];
    const weights = [];
    let last = p.startValue;
    p.events.forEach((e, j) => {
        const name = frame(e.frame, `event ${j}`);
        check(e.at >= last, `profile ${i} event ${j}: at ${e.at}, before the previous event at ${last}`);
        if (e.at > last) {
            check(open.length > 0, `profile ${i} event ${j}: time ${last}..${e.at} with no frame open`);
            stacks.push(open.map(f => frame(f, 'stack')));
            weights.push(e.at - last);
        }
        last = e.at;
        if (e.type === 'O') {
            open.push(e.frame);
        } else {
            const top = open.pop();
            check(top === e.frame, `profile ${i} event ${j}: closes ${name} while ${top === undefined ? 'nothing' : frame(top, 'top')} is open`);
        }
    });
    check(open.length === 0, `profile ${i}: ${open.length} frames left open`);
    check(last === p.endValue, `profile ${i}: endValue ${p.endValue}, last event at ${last}`);
    return { name: p.name, unit: p.unit, stacks, weights };
}

function pprof(file, expect) {
    const p = Profile.decode(gunzipSync(readFileSync(file)));
    const strings = p.stringTable.strings;
    check(strings[0] === '', 'string 0 must be ""');
    const str = (index, what) => {
        const i = Number(index);
        check(Number.isInteger(i) && i >= 0 && i < strings.length, `${what}: string ${index} out of ${strings.length}`);
        return strings[i];
    };
    const functions = new Map();
    for (const f of p.function) {
        const id = Number(f.id);
        check(id !== 0 && !functions.has(id), `function id ${id} is 0 or repeated`);
        str(f.systemName, `function ${id} system name`);
        str(f.filename, `function ${id} file name`);
        functions.set(id, str(f.name, `function ${id} name`));
    }
    const locations = new Map();
    for (const l of p.location) {
        const id = Number(l.id);
        check(id !== 0 && !locations.has(id), `location id ${id} is 0 or repeated`);
        check(l.line.length > 0, `location ${id} has no line`);
        locations.set(id, l.line.map(line => {
            const name = functions.get(Number(line.functionId));
            check(name !== undefined, `location ${id} names function ${line.functionId}, which is not defined`);
            // A source line where the location has one: `Name:42`.
            return Number(line.line) === 0 ? name : `${name}:${Number(line.line)}`;
        }));
    }
    const sampleTypes = p.sampleType.map(vt => `${str(vt.type, 'sample type')}/${str(vt.unit, 'sample unit')}`);
    const samples = p.sample.map((s, i) => {
        check(s.value.length === sampleTypes.length, `sample ${i}: ${s.value.length} values for ${sampleTypes.length} types`);
        const stack = s.locationId.flatMap(id => {
            const names = locations.get(Number(id));
            check(names !== undefined, `sample ${i} names location ${id}, which is not defined`);
            return names;
        });
        const labels = Object.fromEntries(s.label.map(l => [str(l.key, 'label key'), str(l.str, 'label value')]));
        return { stack, values: s.value.map(Number), labels };
    });
    if (expect) {
        same(sampleTypes, expect.sampleTypes, 'sample types');
        same(str(p.defaultSampleType, 'default sample type'), expect.defaultSampleType, 'default sample type');
        same(samples.length, expect.samples.length, 'number of samples');
        expect.samples.forEach((e, i) => same(samples[i], e, `sample ${i}`));
        same(Number(p.durationNanos), expect.durationNanos, 'duration');
        same(Number(p.timeNanos), expect.timeNanos, 'time');
    }
    return `${samples.length} samples of ${sampleTypes.join(', ')}, ${p.location.length} locations, ${p.function.length} functions`;
}

// Chrome's trace event format, as DevTools reads it: its engine builds the process's threads
// from the events, named by the `thread_name` metadata, with the complete (`X`) events as
// entries.
async function trace(file, expect) {
    // The engine's geometry code wants the browser's DOMRect.
    globalThis.DOMRect ??= class DOMRect {
        constructor(x = 0, y = 0, width = 0, height = 0) { Object.assign(this, { x, y, width, height }); }
    };
    const Trace = await import('@paulirish/trace_engine/models/trace/trace.js');
    const data = JSON.parse(readFileSync(file, 'utf8'));
    check(Array.isArray(data.traceEvents), 'no traceEvents array');
    const model = Trace.TraceModel.Model.createWithAllHandlers();
    await model.parse(data.traceEvents);
    const parsed = model.parsedTrace();
    check(parsed, 'the trace engine parsed nothing');
    const processes = [...parsed.data.Renderer.processes.values()];
    check(processes.length === 1, `${processes.length} processes, expected one`);
    const threads = {};
    let entries = 0;
    for (const thread of processes[0].threads.values()) {
        threads[thread.name] = thread.entries.map(e => [e.name, e.ts, e.dur]);
        entries += thread.entries.length;
    }
    if (expect) {
        same(Object.keys(threads).sort(), Object.keys(expect.threads).sort(), 'threads with entries');
        for (const [name, events] of Object.entries(expect.threads)) same(threads[name], events, `thread ${name}`);
    }
    return `${Object.keys(threads).length} threads, ${entries} complete events`;
}

const files = process.argv.slice(2);
if (files.length === 0) {
    console.error('usage: node validate-exports.mjs FILE.speedscope.json|FILE.pb.gz|FILE.trace.json ...');
    process.exit(2);
}
for (const file of files) {
    const expectFile = `${file}.expect.json`;
    const expect = existsSync(expectFile) ? JSON.parse(readFileSync(expectFile, 'utf8')) : undefined;
    try {
        let summary;
        if (file.endsWith('.speedscope.json')) summary = speedscope(file, expect);
        else if (file.endsWith('.pb.gz')) summary = pprof(file, expect);
        else if (file.endsWith('.trace.json')) summary = await trace(file, expect);
        else throw new Invalid('unknown kind of export (expected .speedscope.json, .pb.gz or .trace.json)');
        console.log(`ok ${file}: ${summary}${expect ? ', as expected' : ''}`);
    } catch (e) {
        if (!(e instanceof Invalid)) throw e;
        console.error(`INVALID ${file}: ${e.message}`);
        process.exit(1);
    }
}
