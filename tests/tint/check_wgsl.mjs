// Compile WGSL with Dawn's Tint, a second compiler besides wgpu's naga.
//
//   node check_wgsl.mjs SOURCES [--no-pipeline] [--out=FILE]
//
// SOURCES is a directory of *.wgsl files (each named by its file name) or a JSON file: either
// {"name": "wgsl", ...} or [{"name": ..., "wgsl": ...}, ...]. One null-backend device (Dawn without
// a GPU) is created with every feature vyre's WGSL may enable that the adapter offers, and the
// adapter's limits. For each source: createShaderModule + getCompilationInfo (Tint's parser and
// resolver), then createComputePipeline with layout "auto" on entry point "main" (bindings, entry
// point, workgroup size), both inside error scopes. A pipeline error that only says a limit of the
// null adapter is exceeded gets type "limit" and does not fail the source.
//
// Output (to FILE, else stdout, where Dawn also logs its warnings): one JSON line per source, {"name", "ok", "messages": [{"type", "line", "col", "message",
// "stage"}]} ("stage": "shader" or "pipeline"; ok is false when any message is an error), then a
// last line {"summary": {"checked", "failed", "webgpu", "node", "features"}}. Exit code 0 when
// every source compiled, 1 when some did not, 2 when the checker itself could not run.
import { closeSync, openSync, readFileSync, readdirSync, statSync, writeSync } from 'node:fs';
import { basename, join } from 'node:path';
import { createRequire } from 'node:module';

const WANTED_FEATURES = ['shader-f16', 'subgroups'];
const ENTRY_POINT = 'main';
const LIMIT = /exceeds the maximum/;

function fail(message) {
  process.stderr.write(`check_wgsl: ${message}\n`);
  process.exit(2);
}

function loadSources(path) {
  let st;
  try {
    st = statSync(path);
  } catch (e) {
    fail(`cannot read ${path}: ${e.message}`);
  }
  if (st.isDirectory()) {
    return readdirSync(path).filter((f) => f.endsWith('.wgsl')).sort()
      .map((f) => ({ name: basename(f, '.wgsl'), wgsl: readFileSync(join(path, f), 'utf8') }));
  }
  const doc = JSON.parse(readFileSync(path, 'utf8'));
  if (Array.isArray(doc)) return doc.map((d) => ({ name: String(d.name), wgsl: String(d.wgsl) }));
  return Object.entries(doc).map(([name, wgsl]) => ({ name, wgsl: String(wgsl) }));
}

const args = process.argv.slice(2);
const pipelines = !args.includes('--no-pipeline');
const outArg = args.find((a) => a.startsWith('--out='));
const paths = args.filter((a) => !a.startsWith('--'));
if (paths.length !== 1) fail('usage: node check_wgsl.mjs DIR_OR_JSON [--no-pipeline] [--out=FILE]');
const out = outArg ? openSync(outArg.slice('--out='.length), 'w') : 1;
const emit = (doc) => writeSync(out, JSON.stringify(doc) + '\n');
const sources = loadSources(paths[0]);

let webgpu;
try {
  webgpu = await import('webgpu');
} catch (e) {
  fail(`cannot load the webgpu package (run: npm ci --prefix tests/tint): ${e.message}`);
}
const version = createRequire(import.meta.url)('webgpu/package.json').version;
Object.assign(globalThis, webgpu.globals);
const gpu = webgpu.create(['backend=null']);
const adapter = await gpu.requestAdapter();
if (!adapter) fail('the null backend gave no adapter');
const features = WANTED_FEATURES.filter((f) => adapter.features.has(f));
const requiredLimits = {};
for (const key in adapter.limits) {
  if (typeof adapter.limits[key] === 'number') requiredLimits[key] = adapter.limits[key];
}

// A fresh device every BATCH sources: dawn.node crashes (futex/mutex assertions, segfaults) once
// about a thousand shader modules were created on one device.
const BATCH = 100;
async function newDevice() {
  const fresh = await gpu.requestAdapter();  // an adapter gives one device
  if (!fresh) fail('the null backend gave no adapter');
  const dev = await fresh.requestDevice({ requiredFeatures: features, requiredLimits });
  dev.addEventListener('uncapturederror', (ev) => {
    process.stderr.write(`check_wgsl: uncaptured error: ${ev.error.message}\n`);
  });
  return dev;
}

let failed = 0;
let device = null;
for (const [index, { name, wgsl }] of sources.entries()) {
  if (index % BATCH === 0) {
    if (device) device.destroy();
    device = await newDevice();
  }
  const messages = [];
  device.pushErrorScope('validation');
  const module = device.createShaderModule({ code: wgsl, label: name });
  const info = await module.getCompilationInfo();
  const moduleError = await device.popErrorScope();
  for (const m of info.messages) {
    messages.push({ type: m.type, line: m.lineNum, col: m.linePos, message: m.message, stage: 'shader' });
  }
  if (moduleError && !info.messages.some((m) => m.type === 'error')) {
    messages.push({ type: 'error', line: 0, col: 0, message: moduleError.message, stage: 'shader' });
  }
  if (pipelines && !messages.some((m) => m.type === 'error')) {
    device.pushErrorScope('validation');
    device.pushErrorScope('internal');
    device.createComputePipeline({ label: name, layout: 'auto', compute: { module, entryPoint: ENTRY_POINT } });
    for (const err of [await device.popErrorScope(), await device.popErrorScope()]) {
      if (!err) continue;
      // A device limit of the null adapter (e.g. 8 storage buffers per stage, WebGPU's default) is
      // no WGSL problem: report it with type "limit", which does not fail the source.
      const type = LIMIT.test(err.message) ? 'limit' : 'error';
      messages.push({ type, line: 0, col: 0, message: err.message.trim(), stage: 'pipeline' });
    }
  }
  const ok = !messages.some((m) => m.type === 'error');
  if (!ok) failed += 1;
  emit({ name, ok, messages });
}
emit({ summary: { checked: sources.length, failed, webgpu: version, node: process.version, features } });
if (out !== 1) closeSync(out);
if (device) device.destroy();
// dawn.node can keep the event loop alive: leave explicitly once the output is flushed.
process.exitCode = failed ? 1 : 0;
process.stdout.write('', () => process.exit(process.exitCode));
