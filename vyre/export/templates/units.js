// ---- a unit: programs in order over named buffers (an op call, a kernel launch, an array expression) --
function base64Bytes(text) {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

function namedInputs(manifest, inputs) {
  if (inputs === undefined || inputs === null) inputs = {};
  const names = manifest.inputs.map((x) => x.name);
  let values = inputs;
  if (Array.isArray(inputs)) {
    if (inputs.length !== names.length) {
      throw dispatchError(`${manifest.name} takes ${names.length} input(s) (${names.join(', ') || 'none'}), `
        + `got ${inputs.length}`, 'pass one value per input, in order (or an object by name)');
    }
    values = Object.fromEntries(names.map((n, k) => [n, inputs[k]]));
  }
  const missing = names.filter((n) => !(n in values));
  const unknown = Object.keys(values).filter((n) => !names.includes(n));
  if (missing.length || unknown.length) {
    throw dispatchError(`${manifest.name} inputs by name: missing [${missing}], unknown [${unknown}]`,
      `pass one value for each of: ${names.join(', ')}`);
  }
  return values;
}

const SCALAR_RANGE = { u32: [0, U32_MAX], i32: [-2147483648, 2147483647] };

function scalarWord(name, dtype, v) {
  // one u32 word, as vyre packs a scalar (vyre.ir.words): f32 (and f16) by their f32 bits, i32 two's
  // complement, bool 0/1
  if (dtype === 'bool') {
    if (typeof v !== 'boolean' && v !== 0 && v !== 1) throw dispatchError(`scalar ${name} is bool, got ${v}`);
    return v ? 1 : 0;
  }
  if (typeof v !== 'number') throw dispatchError(`scalar ${name} is ${dtype}, got ${typeof v}`, 'pass a number');
  if (dtype in SCALAR_RANGE) {
    const [lo, hi] = SCALAR_RANGE[dtype];
    if (!Number.isInteger(v) || v < lo || v > hi) throw dispatchError(`scalar ${name} is ${dtype}, got ${v}`,
      `pass an integer in [${lo}, ${hi}]`);
    return v >>> 0;
  }
  f32Scratch[0] = v;
  return u32Scratch[0];
}

function wordsOf(b, values, dims) {
  const out = new Uint32Array(Math.max(1, b.words.length));
  for (const w of b.words) {
    if ('dim' in w.from) out[w.word] = dims[w.from.dim];
    else if ('value' in w.from) out[w.word] = w.from.value;
    else out[w.word] = scalarWord(w.from.input, w.dtype, values[w.from.input]);
  }
  return out;
}

function checkDims(manifest, dim) {
  const d = typeof dim === 'number' ? [dim] : Array.from(dim);
  if (d.length !== manifest.dims.rank || !d.every((x) => Number.isSafeInteger(x) && x >= 1 && x <= U32_MAX)) {
    throw dispatchError(`dim [${d}]: ${manifest.name} is launched over ${manifest.dims.rank} dimension(s) >= 1`,
      `pass {dim: [${manifest.dims.default}]}-like sizes, one thread per element of the work`);
  }
  return d;
}

/**
 * The plan of a run: element counts and staged bytes of every buffer, the launch dims, and each step's
 * logical grid, folded workgroups and params words. Options: ``dim`` (a kernel's launch dims; default
 * the export's, allowed only when the runtime-sized inputs have the export's sizes) and ``counts``
 * (element counts of runtime-sized outputs).
 */
export function plan(inputs, { dim = null, counts = {} } = {}) {
  return unitPlan(MANIFEST, inputs, { dim, counts });
}

function unitPlan(manifest, inputs, { dim = null, counts = {}, files = null } = {}) {
  const values = namedInputs(manifest, inputs);
  const staged = new Map();
  for (const b of manifest.buffers) {
    if (b.input) staged.set(b.name, toStorageOf(manifest, b, values[b.name]));
    else if (b.role === 'constant' && b.value.file) {
      // a weights file's slice (plan() without the file: zeros of the same size)
      const v = b.value;
      const bytes = files ? files[v.file].subarray(v.offset, v.offset + v.bytes) : new Uint8Array(v.bytes);
      staged.set(b.name, { bytes, count: v.count });
    } else if (b.role === 'constant') staged.set(b.name, { bytes: base64Bytes(b.value.base64), count: b.value.count });
  }
  const same = manifest.buffers.every((b) => b.count !== null || !b.input
    || staged.get(b.name).count === b.default_count);
  let dims = [];
  if (manifest.dims) {
    if (dim !== null && dim !== undefined) dims = checkDims(manifest, dim);
    else if (same) dims = manifest.dims.default.slice();
    else {
      throw dispatchError(`${manifest.name}: the inputs are not the sizes it was exported with`,
        'pass the launch dims: run(device, inputs, {dim: [...]}), as kernel[dim] takes them');
    }
  }
  const count = {};
  const rows = (b, n) => {
    // a kernel array: whole rows of the shape past its first axis (baked into the program)
    const row = (b.trailing_shape || []).reduce((a, x) => a * x, 1);
    if (n % row !== 0) {
      throw dispatchError(`${b.name} has ${n} elements, not whole rows of shape [${b.trailing_shape}]`,
        'pass whole rows, or export the kernel again for the new shape');
    }
  };
  for (const b of manifest.buffers) {
    if (b.role === 'words') {
      const words = wordsOf(b, values, dims);
      staged.set(b.name, { bytes: new Uint8Array(words.buffer), count: words.length });
    }
    if (staged.has(b.name)) {
      count[b.name] = staged.get(b.name).count;
      if (b.input) rows(b, count[b.name]);
      continue;
    }
    let n = b.count;
    if (n === null && counts[b.name] !== undefined) n = counts[b.name];
    if (n === null && same && b.default_count !== null) n = b.default_count;
    if (n === null && b.count_from) n = count[b.count_from];
    if (!Number.isSafeInteger(n) || n < 0) {
      throw dispatchError(`no element count for ${b.name}`, `pass {counts: {${b.name}: n}}`);
    }
    rows(b, n);
    count[b.name] = n;
  }
  const steps = manifest.steps.map((s) => {
    let grid;
    if (s.grid.fixed) grid = s.grid.fixed.slice();
    else {
      const ws = s.grid.workgroup_size;
      const rev = dims.slice().reverse();
      while (rev.length < 3) rev.push(1);
      grid = [0, 1, 2].map((a) => Math.ceil(rev[a] / ws[a]));
    }
    const params = new Uint32Array(s.params.words);
    params.set(grid, 0);
    params[3] = Math.min(grid[0] * grid[1] * grid[2], U32_MAX);
    // a traced step's binding: the element count it was dispatched with (a vec4 view of an f32 buffer...)
    s.bindings.forEach((x, k) => { params[4 + k] = x.elements !== undefined ? x.elements : count[x.buffer]; });
    return { grid, workgroups: foldGrid(grid), params };
  });
  return { counts: count, staged, dims, steps };
}

const UNIT_PIPELINES = new WeakMap(); // device -> [{pipeline, group0, group1}] per step

function unitPipelines(device, manifest, wgsl) {
  let hit = UNIT_PIPELINES.get(device);
  if (hit) return hit;
  const modules = wgsl.map((code, k) => device.createShaderModule({ label: `${manifest.name} shader ${k}`, code }));
  hit = manifest.steps.map((s) => {
    const label = `${manifest.name} step ${s.index} (${s.program})`;
    const group0 = device.createBindGroupLayout({ label, entries: s.bindings.map((x) => ({
      binding: x.binding, visibility: STAGE_COMPUTE, buffer: { type: x.binding_type } })) });
    const group1 = device.createBindGroupLayout({ label: `${label} params`, entries: [{
      binding: s.params.binding, visibility: STAGE_COMPUTE, buffer: { type: 'uniform' } }] });
    const layout = device.createPipelineLayout({ label, bindGroupLayouts: [group0, group1] });
    const pipeline = device.createComputePipeline({
      label, layout, compute: { module: modules[s.shader], entryPoint: s.entry_point } });
    return { pipeline, group0, group1 };
  });
  UNIT_PIPELINES.set(device, hit);
  return hit;
}

/**
 * Run every step in order, in one submission: ``inputs`` by name (arrays, and a kernel's scalars by
 * their Python names; or in ``MANIFEST.inputs`` order) -> the outputs by name. Options: ``dim``,
 * ``counts`` (see ``plan``), ``f16Bits``. Buffers that are not inputs start zeroed; a step's ``write``
 * buffers are zeroed before it, as in vyre.
 */
export async function run(device, inputs, { dim = null, counts = {}, f16Bits = false, weights = null } = {}) {
  return unitRun(device, MANIFEST, WGSL, inputs, { dim, counts, f16Bits, weights });
}

/**
 * The weights file's bytes (``MANIFEST.weights``), checked against the manifest's length and sha256:
 * ``weights`` given (an ArrayBuffer or typed array of the file, or a URL), else the file beside this
 * module (fetched once per URL; read with node:fs in Node.js). Null when the unit has no weights file.
 */
export async function loadWeights(weights = null) {
  return unitWeights(MANIFEST, weights, import.meta.url);
}

const WEIGHT_FETCHES = new Map(); // url -> Promise<Uint8Array>

async function fetchBytes(url) {
  if (url.protocol === 'file:') {
    const fs = await import('node:fs/promises');
    return new Uint8Array(await fs.readFile(url));
  }
  const r = await fetch(url);
  if (!r.ok) {
    throw new VyreExportError('weights', `${url}: HTTP ${r.status}`, 'serve the weights file beside the module');
  }
  return new Uint8Array(await r.arrayBuffer());
}

async function unitWeights(manifest, weights, base) {
  const w = manifest.weights;
  if (!w) return null;
  let bytes;
  if (weights instanceof ArrayBuffer) bytes = new Uint8Array(weights);
  else if (ArrayBuffer.isView(weights)) bytes = new Uint8Array(weights.buffer, weights.byteOffset, weights.byteLength);
  else {
    const url = new URL(weights || w.file, base);
    if (!WEIGHT_FETCHES.has(url.href)) {
      const p = fetchBytes(url);
      p.catch(() => WEIGHT_FETCHES.delete(url.href)); // a failed fetch is tried again next run
      WEIGHT_FETCHES.set(url.href, p);
    }
    bytes = await WEIGHT_FETCHES.get(url.href);
  }
  if (bytes.byteLength !== w.bytes) {
    throw new VyreExportError('weights', `${w.file} has ${bytes.byteLength} bytes, the manifest says ${w.bytes}`,
      'serve the weights file exported with this module');
  }
  if (globalThis.crypto?.subtle) { // secure contexts (https, localhost, 127.0.0.1) and Node.js
    const digest = new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', bytes));
    const hex = Array.from(digest, (x) => x.toString(16).padStart(2, '0')).join('');
    if (hex !== w.sha256) {
      throw new VyreExportError('weights', `${w.file}: sha256 ${hex} differs from the manifest's ${w.sha256}`,
        'serve the weights file exported with this module (or export again)');
    }
  }
  return { [w.file]: bytes };
}

async function unitRun(device, manifest, wgsl, inputs, { dim, counts, f16Bits, weights = null }) {
  if (!device || typeof device.createBuffer !== 'function') {
    throw new VyreExportError('webgpu', 'run() takes a GPUDevice first', 'get one with requestDevice()');
  }
  const files = await unitWeights(manifest, weights, import.meta.url);
  const p = unitPlan(manifest, inputs, { dim, counts, files });
  const maxStorage = device.limits?.maxStorageBufferBindingSize;
  device.pushErrorScope('out-of-memory');
  device.pushErrorScope('validation');
  const created = [];
  const make = (desc) => { const buf = device.createBuffer(desc); created.push(buf); return buf; };
  const reads = [];
  try {
    const pipes = unitPipelines(device, manifest, wgsl);
    const gpu = new Map();
    for (const b of manifest.buffers) {
      const st = p.staged.get(b.name);
      const size = st ? Math.max(st.bytes.byteLength, storageBytes(b, st.count)) : storageBytes(b, p.counts[b.name]);
      if (maxStorage !== undefined && size > maxStorage && !b.binding_types.every((t) => t === 'uniform')) {
        throw dispatchError(`buffer ${b.name} needs ${size} bytes, over this device's storage binding limit of `
          + `${maxStorage} bytes`, 'split the work into smaller runs');
      }
      let usage = BUFFER_COPY_SRC | BUFFER_COPY_DST;
      if (b.binding_types.some((t) => t !== 'uniform')) usage |= BUFFER_STORAGE;
      if (b.binding_types.includes('uniform')) usage |= BUFFER_UNIFORM;
      const buffer = make({ label: b.name, size, usage });
      if (st) {
        const padded = new Uint8Array(Math.ceil(st.bytes.byteLength / 4) * 4);
        padded.set(st.bytes);
        if (padded.byteLength) device.queue.writeBuffer(buffer, 0, padded);
      }
      gpu.set(b.name, buffer);
    }
    const encoder = device.createCommandEncoder({ label: manifest.name });
    manifest.steps.forEach((s, i) => {
      const q = p.steps[i];
      const params = make({ label: `${manifest.name} step ${i} _vyre`, size: q.params.byteLength,
        usage: BUFFER_UNIFORM | BUFFER_COPY_DST });
      device.queue.writeBuffer(params, 0, q.params);
      for (const name of s.zero_before) encoder.clearBuffer(gpu.get(name));
      const { pipeline, group0, group1 } = pipes[i];
      const bind0 = device.createBindGroup({ layout: group0, entries: s.bindings.map((x) => ({
        binding: x.binding, resource: { buffer: gpu.get(x.buffer) } })) });
      const bind1 = device.createBindGroup({ layout: group1, entries: [{
        binding: s.params.binding, resource: { buffer: params } }] });
      const pass = encoder.beginComputePass({ label: `${manifest.name} step ${i}` });
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, bind0);
      pass.setBindGroup(1, bind1);
      pass.dispatchWorkgroups(...q.workgroups);
      pass.end();
    });
    for (const name of manifest.outputs) {
      const src = gpu.get(name);
      const staging = make({ label: `${name} readback`, size: src.size, usage: BUFFER_MAP_READ | BUFFER_COPY_DST });
      encoder.copyBufferToBuffer(src, 0, staging, 0, src.size);
      reads.push({ b: manifest.buffers.find((x) => x.name === name), staging });
    }
    device.queue.submit([encoder.finish()]);
  } catch (e) {
    for (const buf of created) buf.destroy();
    throw e;
  } finally {
    const validation = await device.popErrorScope();
    const oom = await device.popErrorScope();
    const err = validation || oom;
    if (err) {
      for (const buf of created) buf.destroy();
      // eslint-disable-next-line no-unsafe-finally
      throw new VyreExportError('webgpu', `${manifest.name}: WebGPU error: ${err.message}`);
    }
  }
  const out = {};
  try {
    for (const { b, staging } of reads) {
      await staging.mapAsync(MAP_READ);
      const bytes = staging.getMappedRange().slice(0);
      staging.unmap();
      out[b.name] = fromStorageOf(b, bytes, p.counts[b.name], { f16Bits });
    }
  } finally {
    for (const buf of created) buf.destroy();
  }
  return out;
}
