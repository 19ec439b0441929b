// Run modules written by vyre's exporter (vyre/export) in Node.js on Dawn's null backend.
//
//   node run_exported.mjs JOBS.json --out=RESULTS.jsonl
//
// JOBS.json: {"runs": [...], "calls": [...]}.
// * A run {"id", "module", "inputs": {name: {"array": "Float32Array", "file": PATH} | {"array", "length"}},
//   "grid": [..] | null, "counts": {...}} imports the module (a file path), gets a device from its
//   requestDevice({gpu}) on the null backend (a fresh one every few runs) and awaits run(device, inputs,
//   {grid, counts}) inside validation, internal and out-of-memory error scopes, with an uncapturederror
//   listener. The null backend runs no shader, so the outputs' values are meaningless; their types and
//   lengths are reported. Result: {"id", "ok", "error", "scoped": [...], "uncaptured": [...],
//   "outputs": {name: {"type", "length"}}, "plan": the module's plan() (grid, workgroups, params words,
//   counts)}, or {"id", "ok": false, "skipped": why} when the null adapter lacks a feature or limit
//   the module's requestDevice() asks for.
// * A call {"id", "module", "fn", "args": [...]} awaits the module's exported function fn(...args) and
//   reports {"id", "value"} (TypedArrays as plain arrays) or {"id", "error", "kind"}.
// A last line {"summary": {...}}. Exit code 0; any other when the driver itself failed.
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const outArg = args.find((a) => a.startsWith('--out='));
const out = outArg ? openSync(outArg.slice('--out='.length), 'w') : 1;
const emit = (doc) => writeSync(out, JSON.stringify(doc) + '\n');
const jobs = JSON.parse(readFileSync(args.find((a) => !a.startsWith('--')), 'utf8'));

const webgpu = await import('webgpu');
const gpu = webgpu.create(['backend=null']);
const modules = new Map();
async function load(path) {
  if (!modules.has(path)) modules.set(path, await import(pathToFileURL(path).href));
  return modules.get(path);
}

// JSON-ready: TypedArrays as plain arrays, recursively
function plain(v) {
  if (ArrayBuffer.isView(v)) return Array.from(v);
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

for (const call of jobs.calls || []) {
  const mod = await load(call.module);
  try {
    const value = await mod[call.fn](...call.args);
    emit({ id: call.id, value: plain(value) });
  } catch (e) {
    emit({ id: call.id, error: String(e.message), kind: e.kind || e.name });
  }
}

const ARRAYS = { Float32Array, Int32Array, Uint32Array, Uint16Array, Uint8Array };
function inputOf(spec) {
  const T = ARRAYS[spec.array];
  if (spec.file) {
    const bytes = readFileSync(spec.file);
    return new T(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  }
  return new T(spec.length);
}

const BATCH = 50; // a fresh device now and then: dawn.node grows unstable with many objects on one device
let device = null;
let used = 0;
let uncaptured = [];
let done = 0;
for (const job of jobs.runs || []) {
  const mod = await load(job.module);
  if (!device || used >= BATCH || mod.MANIFEST.features.length || Object.keys(mod.MANIFEST.limits).length) {
    if (device) device.destroy();
    device = null;
    try {
      device = await mod.requestDevice({ gpu });
    } catch (e) {
      emit({ id: job.id, ok: false, skipped: String(e.message) });
      continue;
    }
    used = 0;
    device.addEventListener('uncapturederror', (ev) => uncaptured.push(ev.error.message));
  }
  used += 1;
  uncaptured = [];
  const inputs = {};
  for (const [name, spec] of Object.entries(job.inputs)) inputs[name] = inputOf(spec);
  device.pushErrorScope('validation');
  device.pushErrorScope('internal');
  device.pushErrorScope('out-of-memory');
  let error = null;
  const outputs = {};
  let plan = null;
  try {
    const p = mod.plan(inputs, { grid: job.grid, counts: job.counts || {} });
    plan = { grid: p.grid, workgroups: p.workgroups, params: Array.from(p.params),
      bytes: p.buffers.map((q) => (q.bytes ? q.bytes.byteLength : null)), counts: p.buffers.map((q) => q.count) };
    const result = await mod.run(device, inputs, { grid: job.grid, counts: job.counts || {} });
    for (const [name, v] of Object.entries(result)) outputs[name] = { type: v.constructor.name, length: v.length };
  } catch (e) {
    error = `${e.kind || e.name}: ${e.message}`;
  }
  const scoped = [];
  for (let k = 0; k < 3; k++) {
    const err = await device.popErrorScope();
    if (err) scoped.push(err.message);
  }
  await device.queue.onSubmittedWorkDone();
  done += 1;
  emit({ id: job.id, ok: !error && !scoped.length && !uncaptured.length, error, scoped, uncaptured, outputs, plan });
}
if (device) device.destroy();
const version = JSON.parse(readFileSync(new URL('./node_modules/webgpu/package.json', import.meta.url))).version;
emit({ summary: { runs: done, calls: (jobs.calls || []).length, webgpu: version, node: process.version } });
if (out !== 1) closeSync(out);
process.stdout.write('', () => process.exit(0));
