// The browser check's page (tests/export/browser.py): one GPU device, every job of jobs.json in turn.
// Each job imports an exported module, runs it on inputs fetched from the server and POSTs the outputs
// (base64 of the returned TypedArrays) to /result; /done gets the summary.
const post = (path, doc) => fetch(path, { method: 'POST', body: JSON.stringify(doc) });

const ARRAYS = { Float32Array, Uint32Array, Int32Array, Uint8Array, Uint16Array };

function toBase64(view) {
  const bytes = new Uint8Array(view.buffer, view.byteOffset, view.byteLength);
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

async function input(spec) {
  if ('scalar' in spec) return spec.scalar;
  if ('length' in spec) return new ARRAYS[spec.array](spec.length);
  const bytes = await (await fetch(spec.file)).arrayBuffer();
  return new ARRAYS[spec.array](bytes);
}

// a whole page (examples/digits_web/index.html) in a same-origin iframe: its text once `until` has changed
// from what the page first shows (the page requests its own device)
async function pageText(job) {
  const frame = document.createElement('iframe');
  frame.src = job.page;
  document.body.append(frame);
  await new Promise((ok) => { frame.onload = ok; });
  const deadline = performance.now() + (job.timeout_ms || 120000);
  for (;;) {
    const el = frame.contentDocument.querySelector(job.until);
    const text = el ? el.textContent : '';
    if (text && text !== job.initial) { frame.remove(); return text; }
    if (performance.now() > deadline) { frame.remove(); throw new Error(`${job.page}: ${job.until} still "${text}"`); }
    await new Promise((ok) => setTimeout(ok, 100));
  }
}

async function device() {
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) throw new Error('requestAdapter() gave no adapter');
  const keys = ['maxStorageBuffersPerShaderStage', 'maxComputeWorkgroupStorageSize', 'maxStorageBufferBindingSize',
    'maxBufferSize', 'maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupSizeX', 'maxComputeWorkgroupSizeY',
    'maxComputeWorkgroupSizeZ', 'maxUniformBuffersPerShaderStage'];
  const requiredLimits = Object.fromEntries(keys.filter((k) => adapter.limits[k] !== undefined)
    .map((k) => [k, adapter.limits[k]]));
  const requiredFeatures = ['shader-f16', 'subgroups'].filter((f) => adapter.features.has(f));
  const dev = await adapter.requestDevice({ requiredFeatures, requiredLimits });
  const info = adapter.info || {};
  return { dev, adapter: { vendor: info.vendor, architecture: info.architecture, fallback: info.isFallbackAdapter ?? adapter.isFallbackAdapter,
    features: [...adapter.features], limits: requiredLimits } };
}

const t0 = performance.now();
let done = 0;
let adapterInfo = null;
try {
  const { jobs } = await (await fetch('./jobs.json')).json();
  const { dev, adapter } = await device();
  adapterInfo = adapter;
  let lost = null;
  dev.lost.then((e) => { lost = `device lost: ${e.message}`; });
  for (const job of jobs) {
    const t = performance.now();
    await post('/start', { id: job.id });
    try {
      if (lost) throw new Error(lost);
      if (job.page) {
        await post('/result', { id: job.id, outputs: {}, text: await pageText(job), ms: performance.now() - t });
        done += 1;
        continue;
      }
      const mod = await import(job.module);
      const inputs = {};
      for (const [name, spec] of Object.entries(job.inputs)) inputs[name] = await input(spec);
      const got = await mod.run(dev, inputs, job.options || {});
      const outputs = {};
      for (const [name, arr] of Object.entries(got)) {
        outputs[name] = { array: arr.constructor.name, base64: toBase64(arr) };
      }
      await post('/result', { id: job.id, outputs, ms: performance.now() - t });
    } catch (e) {
      await post('/result', { id: job.id, error: `${e.name}: ${e.message}`, ms: performance.now() - t });
    }
    done += 1;
  }
  await post('/done', { jobs: done, ms: performance.now() - t0, adapter: adapterInfo });
} catch (e) {
  await post('/done', { jobs: done, ms: performance.now() - t0, adapter: adapterInfo, error: `${e.name}: ${e.message}` });
}
