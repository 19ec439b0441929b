// ---- one program: its default grid, params words and run ---------------------------------------
function countsArray(manifest, counts) {
  // counts by name (object) or in binding order (array) -> array in binding order
  if (Array.isArray(counts)) return counts;
  return manifest.buffers.map((b) => {
    const c = counts[b.name];
    if (c === undefined) throw dispatchError(`no element count for buffer ${b.name}`);
    return c;
  });
}

/**
 * The logical grid vyre's default rule gives for these element counts (by name, or an array in
 * binding order): one invocation per element of the grid_from buffer, else of the first writable
 * buffer where that cannot silently cover part of the work (else a VyreExportError asking for an
 * explicit grid), like vyre.backends.host.default_grid.
 */
export function defaultGrid(counts) {
  return defaultGridOf(MANIFEST, counts);
}

function defaultGridOf(manifest, counts) {
  const g = manifest.grid;
  const all = countsArray(manifest, counts);
  const countOf = (name) => all[manifest.buffers.findIndex((b) => b.name === name)];
  const forCount = (c) => [Math.max(1, Math.ceil(c / g.invocations_per_workgroup)), 1, 1];
  if (g.default === 'fixed') return g.fixed.slice();
  const fix = 'pass an explicit grid (run(device, inputs, {grid: [gx, gy, gz]})), or export a program built with '
    + "grid_from='name'";
  if (g.default === 'explicit') {
    throw dispatchError(`program ${manifest.program} has no grid: it reads ${g.needs_explicit_grid}, so its grid `
      + 'has a y/z shape vyre cannot infer', 'pass an explicit grid, e.g. {grid: [gx, gy]} with one workgroup per tile');
  }
  const basis = countOf(g.buffer);
  const bigger = g.refuse_if_larger.filter((n) => countOf(n) > basis);
  if (bigger.length) {
    throw dispatchError(`program ${manifest.program} has no grid, and the default (one invocation per element of `
      + `${g.buffer}, ${basis} elements) would not cover the larger input buffer(s) `
      + bigger.map((n) => `${n} (${countOf(n)})`).join(', '), fix);
  }
  return forCount(basis);
}

/** The hidden params uniform (``@group(1) @binding(0)``) as u32 words: grid, total, element counts. */
export function paramsWords(grid, counts) {
  return paramsWordsOf(MANIFEST, checkGrid(grid), countsArray(MANIFEST, counts));
}

function paramsWordsOf(manifest, grid, counts) {
  const words = new Uint32Array(manifest.params.words);
  words.set(grid, 0);
  words[3] = Math.min(grid[0] * grid[1] * grid[2], U32_MAX);
  counts.forEach((c, k) => { words[4 + k] = c; });
  return words;
}

const PIPELINES = new WeakMap(); // device -> {pipeline, layouts}

function pipelineOf(device, manifest, wgsl) {
  let hit = PIPELINES.get(device);
  if (hit) return hit;
  const entries = manifest.buffers.map((b) => ({
    binding: b.binding, visibility: STAGE_COMPUTE, buffer: { type: b.binding_type },
  }));
  const group0 = device.createBindGroupLayout({ label: `${manifest.name} buffers`, entries });
  const group1 = device.createBindGroupLayout({
    label: `${manifest.name} params`,
    entries: [{ binding: manifest.params.binding, visibility: STAGE_COMPUTE, buffer: { type: 'uniform' } }],
  });
  const module = device.createShaderModule({ label: manifest.name, code: wgsl });
  const layout = device.createPipelineLayout({ label: manifest.name, bindGroupLayouts: [group0, group1] });
  const pipeline = device.createComputePipeline({
    label: manifest.name, layout, compute: { module, entryPoint: manifest.entry_point },
  });
  hit = { pipeline, group0, group1 };
  PIPELINES.set(device, hit);
  return hit;
}

function inputsByName(manifest, inputs) {
  const ins = manifest.buffers.filter((b) => b.input);
  if (inputs === undefined || inputs === null) inputs = [];
  let values;
  if (Array.isArray(inputs)) {
    if (inputs.length !== ins.length) {
      throw dispatchError(`program ${manifest.program} takes ${ins.length} input(s) `
        + `(${ins.map((b) => b.name).join(', ') || 'none'}), got ${inputs.length}`,
        'pass one array per read, read_write or uniform buffer, in binding order (or an object by name)');
    }
    values = inputs;
  } else {
    const missing = ins.filter((b) => !(b.name in inputs)).map((b) => b.name);
    const unknown = Object.keys(inputs).filter((n) => !ins.some((b) => b.name === n));
    if (missing.length || unknown.length) {
      throw dispatchError(`program ${manifest.program} inputs by name: missing [${missing}], unknown [${unknown}]`,
        `pass one array for each of: ${ins.map((b) => b.name).join(', ')}`);
    }
    values = ins.map((b) => inputs[b.name]);
  }
  return new Map(ins.map((b, k) => [b.name, values[k]]));
}

/** Storage bytes and element count of every buffer (binding order), and the logical grid. */
export function plan(inputs, { grid = null, counts = {} } = {}) {
  return planOf(MANIFEST, inputs, { grid, counts });
}

function planOf(manifest, inputs, { grid = null, counts = {} } = {}) {
  const values = inputsByName(manifest, inputs);
  const unknown = Object.keys(counts).filter((n) => !manifest.buffers.some((b) => b.name === n));
  if (unknown.length) {
    throw dispatchError(`counts names unknown buffer(s) [${unknown}]`, "use names of the program's write buffers");
  }
  const staged = new Map();
  for (const b of manifest.buffers) {
    if (b.input) staged.set(b.name, toStorageOf(manifest, b, values.get(b.name)));
  }
  const buffers = manifest.buffers.map((b) => {
    if (b.input) return { ...staged.get(b.name), buffer: b };
    let count;
    if (b.count !== null) count = b.count;
    else if (counts[b.name] !== undefined) count = counts[b.name];
    else if (b.count_from !== null && b.count_from !== undefined) count = staged.get(b.count_from).count;
    else {
      throw dispatchError(`write buffer ${b.name} is runtime-sized and the program has no input to size it from`,
        `pass {counts: {${b.name}: n}}`);
    }
    if (!Number.isSafeInteger(count) || count < 0) throw dispatchError(`count of ${b.name} must be >= 0, got ${count}`);
    return { bytes: null, count, buffer: b };
  });
  const all = buffers.map((p) => p.count);
  const logical = grid !== null && grid !== undefined ? checkGrid(grid) : defaultGridOf(manifest, all);
  return { buffers, grid: logical, workgroups: foldGrid(logical), params: paramsWordsOf(manifest, logical, all) };
}

/**
 * Run the program once: ``inputs`` (read, read_write and uniform buffers, in binding order or by
 * name) -> the outputs (read_write and write buffers) in binding order, as an object by name.
 * Options: ``grid`` (logical workgroups; default: vyre's default rule), ``counts`` (element counts
 * of runtime-sized write buffers), ``f16Bits`` (return f16 outputs as Uint16Array bits).
 * WebGPU validation errors are thrown as VyreExportError (kind "webgpu").
 */
export async function run(device, inputs, { grid = null, counts = {}, f16Bits = false } = {}) {
  return runOf(device, MANIFEST, WGSL, inputs, { grid, counts, f16Bits });
}

async function runOf(device, manifest, wgsl, inputs, { grid, counts, f16Bits }) {
  if (!device || typeof device.createBuffer !== 'function') {
    throw new VyreExportError('webgpu', 'run() takes a GPUDevice first', 'get one with requestDevice()');
  }
  const p = planOf(manifest, inputs, { grid, counts });
  const maxStorage = device.limits?.maxStorageBufferBindingSize;
  device.pushErrorScope('out-of-memory');
  device.pushErrorScope('validation');
  const created = [];
  const make = (desc) => { const buf = device.createBuffer(desc); created.push(buf); return buf; };
  let reads = [];
  try {
    const { pipeline, group0, group1 } = pipelineOf(device, manifest, wgsl);
    const entries = p.buffers.map((q) => {
      const b = q.buffer;
      const size = q.bytes ? q.bytes.byteLength : storageBytes(b, q.count);
      if (b.binding_type !== 'uniform' && maxStorage !== undefined && size > maxStorage) {
        throw dispatchError(`buffer ${b.name} needs ${size} bytes, over this device's storage binding limit of `
          + `${maxStorage} bytes`, 'split the work into smaller dispatches');
      }
      const usage = b.binding_type === 'uniform' ? BUFFER_UNIFORM | BUFFER_COPY_DST
        : BUFFER_STORAGE | BUFFER_COPY_SRC | BUFFER_COPY_DST;
      const buffer = make({ label: b.name, size, usage });
      if (q.bytes) device.queue.writeBuffer(buffer, 0, q.bytes);
      return { binding: b.binding, resource: { buffer } };
    });
    const params = make({ label: '_vyre', size: p.params.byteLength, usage: BUFFER_UNIFORM | BUFFER_COPY_DST });
    device.queue.writeBuffer(params, 0, p.params);
    const bind0 = device.createBindGroup({ layout: group0, entries });
    const bind1 = device.createBindGroup({
      layout: group1, entries: [{ binding: manifest.params.binding, resource: { buffer: params } }],
    });
    const encoder = device.createCommandEncoder({ label: manifest.name });
    const pass = encoder.beginComputePass({ label: manifest.name });
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bind0);
    pass.setBindGroup(1, bind1);
    pass.dispatchWorkgroups(...p.workgroups);
    pass.end();
    reads = p.buffers.map((q, k) => [q, entries[k].resource.buffer]).filter(([q]) => q.buffer.output).map(([q, src]) => {
      const size = src.size;
      const staging = make({ label: `${q.buffer.name} readback`, size, usage: BUFFER_MAP_READ | BUFFER_COPY_DST });
      encoder.copyBufferToBuffer(src, 0, staging, 0, size);
      return { q, staging };
    });
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
    for (const { q, staging } of reads) {
      await staging.mapAsync(MAP_READ);
      const bytes = staging.getMappedRange().slice(0);
      staging.unmap();
      out[q.buffer.name] = fromStorageOf(q.buffer, bytes, q.count, { f16Bits });
    }
  } finally {
    for (const buf of created) buf.destroy();
  }
  return out;
}
