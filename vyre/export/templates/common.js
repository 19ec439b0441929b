// ---- vyre export runtime (generic; the manifest and WGSL follow at the end) -------------------------
// WebGPU's numeric flags (spelled out so the module needs no globals besides a device).
const BUFFER_MAP_READ = 0x0001;
const BUFFER_COPY_SRC = 0x0004;
const BUFFER_COPY_DST = 0x0008;
const BUFFER_UNIFORM = 0x0040;
const BUFFER_STORAGE = 0x0080;
const STAGE_COMPUTE = 0x4;
const MAP_READ = 0x0001;
const U32_MAX = 4294967295;

const STORAGE_ARRAYS = { Uint32Array, Int32Array, Float32Array, Uint16Array };
const HOST_ARRAYS = { Uint32Array, Int32Array, Float32Array, Uint8Array };

/** Error of the exported module; ``kind`` is "dispatch" (bad inputs or grid) or "webgpu". */
export class VyreExportError extends Error {
  constructor(kind, message, fix) {
    super(fix ? `${message}\nFix: ${fix}` : message);
    this.name = 'VyreExportError';
    this.kind = kind;
    this.fix = fix || null;
  }
}

function dispatchError(message, fix) {
  return new VyreExportError('dispatch', message, fix);
}

// ---- f16 <-> f32 (round to nearest even, like numpy's astype(float16)) --------------------------
const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/** The f16 bit pattern nearest to the number ``x`` (ties to even; overflow to +-inf; NaN stays NaN). */
export function f32ToF16Bits(x) {
  f32Scratch[0] = x;
  const bits = u32Scratch[0];
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  let mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 | (mant >>> 13) : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    let m = mant >>> shift;
    const rest = mant & ((1 << shift) - 1);
    if (rest > half || (rest === half && (m & 1))) m += 1;
    return sign | m;
  }
  let m = mant >>> 13;
  const rest = mant & 0x1fff;
  let out = sign | (e << 10) | m;
  if (rest > 0x1000 || (rest === 0x1000 && (m & 1))) out += 1;
  return out;
}

/** The number an f16 bit pattern holds (exact). */
export function f16BitsToF32(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

// ---- host layout ---------------------------------------------------------------------------------
function bufferOf(manifest, name) {
  const b = manifest.buffers.find((x) => x.name === name);
  if (!b) throw dispatchError(`program ${manifest.program} has no buffer ${JSON.stringify(name)}`);
  return b;
}

function storageBytes(b, count) {
  // at least 4 bytes and a multiple of 4 (vyre's host layout); and at least one element: WebGPU
  // refuses to bind less than one element of a runtime-sized array
  const raw = Math.ceil((count * b.storage.element_bytes) / 4) * 4;
  let n = Math.max(4, raw, Math.ceil(b.storage.element_bytes / 4) * 4);
  if (b.binding_bytes) n = Math.max(n, b.binding_bytes);
  return n;
}

function hostValues(b, value) {
  // a plain number (or boolean) for a scalar buffer, an Array, or a TypedArray of the buffer's type
  if (typeof value === 'number' || typeof value === 'boolean') {
    if (b.host.lanes !== 1) {
      throw dispatchError(`input ${b.name}: a single number for a ${b.dtype} buffer`,
        `pass ${b.host.lanes} components per element`);
    }
    return [value];
  }
  if (Array.isArray(value)) return value;
  if (ArrayBuffer.isView(value) && !(value instanceof DataView)) {
    const want = b.host.array;
    const name = value.constructor.name;
    const ok = name === want
      || (b.dtype === 'bool' && (name === 'Uint32Array' || name === 'Int32Array'))
      || (b.host.scalar === 'f16' && (name === 'Uint16Array' || name === 'Float16Array'));
    if (!ok) {
      throw dispatchError(`input ${b.name} is a ${name}, but the buffer is declared ${b.dtype}`,
        `pass a ${want}${b.host.scalar === 'f16' ? ' (values) or a Uint16Array (f16 bits)' : ''}`);
    }
    return value;
  }
  throw dispatchError(`input ${b.name} is not an array (${typeof value})`,
    `pass a ${b.host.array} or an Array of numbers`);
}

/**
 * The storage bytes of a host value for buffer ``name``: ``{bytes: Uint8Array, count}``.
 * bool -> one u32 word per element (0/1); vec3 -> padded to 4 components; f16 -> 16-bit words
 * (a Uint16Array is taken as f16 bits, anything else as numbers rounded to f16).
 */
export function toStorage(name, value) {
  return toStorageOf(MANIFEST, bufferOf(MANIFEST, name), value);
}

function toStorageOf(manifest, b, value) {
  const values = hostValues(b, value);
  const lanes = b.host.lanes;
  if (values.length % lanes !== 0) {
    throw dispatchError(`input ${b.name} has ${values.length} components; a ${b.dtype} buffer takes ${lanes} `
      + 'per element', `pass a flat array of n*${lanes} components`);
  }
  const count = values.length / lanes;
  if (b.count !== null && count !== b.count) {
    throw dispatchError(`input ${b.name} has ${count} elements, but the buffer is declared with count=${b.count}`,
      `pass exactly ${b.count} elements`);
  }
  const bytes = new Uint8Array(storageBytes(b, count));
  const out = new STORAGE_ARRAYS[b.storage.array](bytes.buffer);
  const slanes = b.storage.lanes;
  const bits = b.storage.scalar === 'f16' && (values.constructor.name === 'Uint16Array');
  for (let i = 0; i < count; i++) {
    for (let c = 0; c < lanes; c++) {
      const v = values[i * lanes + c];
      let s;
      if (b.dtype === 'bool') s = v ? 1 : 0;
      else if (b.storage.scalar === 'f16') s = bits ? v : f32ToF16Bits(Number(v));
      else s = v;
      out[i * slanes + c] = s;
    }
  }
  return { bytes, count };
}

/**
 * The host array of ``count`` elements of buffer ``name`` from its storage bytes: bool -> Uint8Array
 * of 0/1, f16 -> Float32Array of the exact values (``{f16Bits: true}``: a Uint16Array of the bits),
 * vectors flat (vec3 without its padding), every other type its own TypedArray.
 */
export function fromStorage(name, bytes, count, options = {}) {
  return fromStorageOf(bufferOf(MANIFEST, name), bytes, count, options);
}

function fromStorageOf(b, bytes, count, { f16Bits = false } = {}) {
  if (Array.isArray(bytes)) bytes = new Uint8Array(bytes);
  const view = bytes instanceof ArrayBuffer ? bytes : bytes.buffer.slice(bytes.byteOffset,
    bytes.byteOffset + bytes.byteLength);
  const src = new STORAGE_ARRAYS[b.storage.array](view);
  const lanes = b.host.lanes;
  const slanes = b.storage.lanes;
  const f16 = b.storage.scalar === 'f16';
  const Out = f16 ? (f16Bits ? Uint16Array : Float32Array) : HOST_ARRAYS[b.host.array];
  const out = new Out(count * lanes);
  for (let i = 0; i < count; i++) {
    for (let c = 0; c < lanes; c++) {
      const v = src[i * slanes + c];
      if (b.dtype === 'bool') out[i * lanes + c] = v !== 0 ? 1 : 0;
      else if (f16 && !f16Bits) out[i * lanes + c] = f16BitsToF32(v);
      else out[i * lanes + c] = v;
    }
  }
  return out;
}

// ---- grid ----------------------------------------------------------------------------------------
/** Workgroup counts to dispatch for a logical grid: its total folded into x, y, z (each <= maxPerDim). */
export function foldGrid(grid, maxPerDim = 65535) {
  const total = grid[0] * grid[1] * grid[2];
  if (total === 0) return [0, 0, 0];
  // the smallest x that fits the total in the rows needed: the surplus is under one row
  const z = Math.ceil(total / (maxPerDim * maxPerDim));
  const y = Math.ceil(total / (maxPerDim * z));
  const x = Math.ceil(total / (y * z));
  if (z > maxPerDim) {
    throw dispatchError(`grid [${grid}] has ${total} workgroups, more than ${maxPerDim}^3 can address`,
      'use larger workgroups or a grid-stride loop');
  }
  return [x, y, z];
}

function checkGrid(grid) {
  const g = typeof grid === 'number' ? [grid] : Array.from(grid);
  if (g.length < 1 || g.length > 3) throw dispatchError(`grid [${g}] must have 1 to 3 dimensions`);
  while (g.length < 3) g.push(1);
  for (const d of g) {
    if (!Number.isSafeInteger(d) || d < 1) {
      throw dispatchError(`grid [${g}]: every dimension must be an integer >= 1`,
        'skip the dispatch when there is no work');
    }
  }
  return g;
}

// ---- device --------------------------------------------------------------------------------------
/**
 * A GPUDevice with the features and limits this program needs: from ``gpu`` (default:
 * ``navigator.gpu``; in Node.js, ``create([])`` of the npm package ``webgpu``).
 */
export async function requestDevice({ gpu = globalThis.navigator?.gpu, adapter = null, powerPreference } = {}) {
  if (!adapter) {
    if (!gpu) {
      throw new VyreExportError('webgpu', 'WebGPU is not available (no navigator.gpu)',
        'use a browser with WebGPU, or pass {gpu} (in Node.js: create([]) of the npm package webgpu)');
    }
    adapter = await gpu.requestAdapter(powerPreference ? { powerPreference } : undefined);
    if (!adapter) throw new VyreExportError('webgpu', 'requestAdapter() gave no adapter');
  }
  const missing = MANIFEST.features.filter((f) => !adapter.features.has(f));
  if (missing.length) {
    throw new VyreExportError('webgpu', `the adapter lacks feature(s) ${missing.join(', ')} that `
      + `${MANIFEST.name} needs`, 'use an adapter that has them');
  }
  const requiredLimits = {};
  for (const [key, value] of Object.entries(MANIFEST.limits)) {
    if (adapter.limits[key] !== undefined && adapter.limits[key] < value) {
      throw new VyreExportError('webgpu', `the adapter's ${key} is ${adapter.limits[key]}; ${MANIFEST.name} `
        + `needs ${value}`, 'use an adapter with higher limits');
    }
    requiredLimits[key] = value;
  }
  return adapter.requestDevice({ requiredFeatures: MANIFEST.features, requiredLimits });
}

