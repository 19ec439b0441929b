"""WgpuBackend: runs vyre programs on a WebGPU device through wgpu-py.

One dispatch = validate (cached per program) → plan (all input checks, no GPU work) →
lower (cached per fingerprint) → feature check → pipeline (cached per (fingerprint,
lowering_version)) → reuse/grow the pipeline's device buffers → upload → one command
encoder holding the uploads' copies, one compute pass and the copies of every output into
a reused MAP_READ staging buffer → one submit → one map → numpy.

The device and queue are used under one RLock, so a backend may be shared by threads
(their dispatches are serialized). Every wgpu exception is translated into a vyre error.
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import numpy as np

from ...errors import (
    DeviceLostError, DispatchError, LoweringError, NoAdapterError, UnsupportedFeatureError, VyreError,
)
from ...ir.types import Access
from ..config import DispatchConfig
from ..host import DispatchPlan, fold_grid, params_words, plan_dispatch, storage_to_host
from .adapter import AdapterChoice, select_adapter
from .device import FEATURE_ALIASES, create_device, translate_error
from .pipelines import CompiledPipeline, PipelineCache, compile_pipeline
from .transfer import ALIGN, Staging, Stats, align, as_bytes4, device_buffer_size

_MISSING = object()


def _find_validate():
    try:
        from ...ir.validate import validate
    except ModuleNotFoundError as exc:
        if exc.name in ("vyre.ir.validate",):
            return None
        raise
    return validate


def _default_lower(program):
    try:
        from ...lower import lower
    except ImportError as exc:
        raise LoweringError(f"the lowering (vyre.lower.lower) is not available: {exc}",
                            fix="install vyre completely (vyre/lower must provide lower())") from None
    return lower(program)


def _program_features(program) -> set[str]:
    """Device features a program needs, judged from its declarations (the lowering may add more)."""
    need: set[str] = set()
    if any(b.dtype.uses_f16 for b in program.buffers) or any(w.dtype.uses_f16 for w in program.workgroup):
        need.add("shader-f16")
    return need


_FEATURE_FIX = {
    "shader-f16": "use f32 buffers and values instead of f16 (or run on an adapter with shader-f16; "
                  "backend.supports_f16() tells)",
    "subgroup": "avoid subgroup operations on this adapter",
}


class WgpuBackend:
    """A vyre backend on a real WebGPU adapter (any Vulkan/Metal/D3D12 GPU, or lavapipe on a CPU).

    Create with :meth:`acquire` (best adapter, or the one ``VYRE_ADAPTER`` names) or
    :meth:`acquire_adapter` (an index into ``wgpu.gpu.enumerate_adapters_sync()``).
    """

    name = "wgpu"
    #: Inputs of one dispatch totalling more bytes than this go through the mapped staging
    #: buffer; smaller ones use queue.write_buffer (cheaper than a map round trip).
    upload_map_threshold = 512 << 10
    #: With the mapped path on, buffers smaller than this still use queue.write_buffer.
    upload_small_buffer = 64 << 10
    #: Pooled device buffers (kept per compiled pipeline for reuse) above this total are released,
    #: least recently used pipeline first.
    pool_budget_bytes = 1 << 30

    _shared: "WgpuBackend | None" = None
    _shared_lock = threading.Lock()

    def __init__(self, adapter_index: int | None = None, *, lower: Callable | None = None):
        self._lock = threading.RLock()
        self._stats = Stats()
        self._choice: AdapterChoice = select_adapter(adapter_index)
        self._lower_fn = lower or _default_lower
        self._validate_fn: Any = _MISSING
        self._validated: set[str] = set()
        self._lost = False
        self._use_clock = 0
        #: Device generation: bumped when the device is lost and when a new one is opened, so
        #: anything tied to an older device (resident handles, pipelines) can tell it is stale.
        self._generation = 0
        self._open_device()

    # ---- construction -------------------------------------------------------
    @classmethod
    def acquire(cls) -> "WgpuBackend":
        """The best adapter (discrete > integrated > native CPU > other; never OpenGL when a native
        backend exists), or the one ``VYRE_ADAPTER`` (an index or a name substring) names."""
        return cls()

    @classmethod
    def acquire_adapter(cls, index: int) -> "WgpuBackend":
        """Bind to adapter ``index`` of ``wgpu.gpu.enumerate_adapters_sync()``. Raises NoAdapterError."""
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise NoAdapterError(f"adapter index must be an int, got {index!r}", fix="pass 0, 1, ...")
        return cls(adapter_index=int(index))

    @classmethod
    def shared(cls) -> "WgpuBackend":
        """One process-wide backend (created on first use)."""
        with cls._shared_lock:
            if cls._shared is None or cls._shared._lost:
                cls._shared = cls.acquire()
            return cls._shared

    def _open_device(self) -> None:
        self._device, self._features, self._limits = create_device(self._choice.adapter, label="vyre")
        self._queue = self._device.queue
        self._staging = Staging(self._device, self._stats, self._limits.get("max-buffer-size"))
        self._cache = PipelineCache()
        self._lost = False
        self._generation += 1

    # ---- identity and capabilities -----------------------------------------
    @property
    def adapter_info(self) -> dict:
        return dict(self._choice.info)

    @property
    def adapter_index(self) -> int:
        return self._choice.index

    @property
    def device_limits(self) -> dict:
        return dict(self._limits)

    @property
    def features(self) -> frozenset[str]:
        """Features enabled on the device."""
        return self._features

    def supports_f16(self) -> bool:
        return "shader-f16" in self._features

    def supports_subgroup_ops(self) -> bool:
        return "subgroup" in self._features

    @property
    def max_storage_buffer_bytes(self) -> int:
        return int(self._limits["max-storage-buffer-binding-size"])

    @property
    def max_workgroup_size(self) -> tuple[int, int, int]:
        return tuple(int(self._limits[f"max-compute-workgroup-size-{a}"]) for a in "xyz")  # type: ignore[return-value]

    @property
    def max_compute_workgroups_per_dimension(self) -> int:
        return int(self._limits["max-compute-workgroups-per-dimension"])

    @property
    def max_compute_invocations_per_workgroup(self) -> int:
        return int(self._limits["max-compute-invocations-per-workgroup"])

    def device_queue(self):
        """The live ``(GPUDevice, GPUQueue)``; hold ``backend.lock`` while using them alongside dispatches."""
        return self._device, self._queue

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    def stats(self) -> dict:
        """Counters: pipelines cached/compiled/hits, buffers and bind groups created, dispatches, bytes moved."""
        with self._lock:
            s = dict(self._stats)
            s["pipelines_cached"] = len(self._cache)
            s["pipelines_compiled"] = self._cache.compiled
            s["pipeline_cache_hits"] = self._cache.hits
            s["lowerings_cached"] = len(self._cache.lowered)
            s["pooled_bytes"] = sum(p.resources.nbytes() for p in self._cache.pipelines.values())
            s["staging_bytes"] = sum(b.size for b in (self._staging.upload, self._staging.readback) if b is not None)
            return s

    def __repr__(self) -> str:
        i = self._choice.info
        return f"WgpuBackend([{self._choice.index}] {i['device']!r}, {i['backend_type']}, {i['adapter_type']})"

    # ---- cache control and device loss ----------------------------------------
    def clear_cache(self) -> None:
        """Drop compiled pipelines, pooled device buffers, bind groups and staging buffers."""
        with self._lock:
            self._cache.clear()
            self._staging.release()

    def _mark_lost(self) -> None:
        """Record a device loss detected from an error: every later use raises DeviceLostError."""
        if not self._lost:
            self._lost = True
            self._generation += 1

    def device_lost(self) -> bool:
        return self._lost

    def force_device_lost(self) -> None:
        """Test hook: destroy the device and mark the backend lost (dispatch then raises DeviceLostError)."""
        with self._lock:
            self._lost = True
            self._generation += 1
            self._cache = PipelineCache()
            self._staging.reset()
            try:
                self._device.destroy()
            except Exception:
                pass

    def try_recover(self) -> None:
        """Create a fresh device on the same adapter and drop every cache."""
        with self._lock:
            try:
                self._choice = select_adapter(self._choice.index)
                self._open_device()
            except VyreError:
                raise
            except Exception as exc:
                raise translate_error(exc, stage="device") from None

    def _check_alive(self) -> None:
        if self._lost:
            raise DeviceLostError("this backend's GPU device was lost",
                                  fix="call backend.try_recover() or create a new vyre.WgpuBackend.acquire()")

    # ---- compile -------------------------------------------------------------
    def _validate(self, program) -> None:
        fp = program.fingerprint
        if fp in self._validated:
            return
        if self._validate_fn is _MISSING:
            self._validate_fn = _find_validate()
        if self._validate_fn is not None:
            self._validate_fn(program, limits=self.device_limits)
        self._validated.add(fp)

    def lower_program(self, program):
        """The program's LoweredProgram (cached per fingerprint)."""
        fp = program.fingerprint
        lowered = self._cache.lowered.get(fp)
        if lowered is None:
            try:
                lowered = self._lower_fn(program)
            except VyreError:
                raise
            except Exception as exc:
                raise LoweringError(f"lowering program {program.name!r} failed: {type(exc).__name__}: {exc}",
                                    fix="report this lowering bug with the program's text form") from exc
            self._cache.lowered[fp] = lowered
        return lowered

    def _check_features(self, program, lowered) -> None:
        need = _program_features(program)
        need |= {FEATURE_ALIASES.get(str(f), str(f)) for f in (getattr(lowered, "features", None) or ())}
        missing = sorted(need - self._features)
        if missing:
            info = self._choice.info
            raise UnsupportedFeatureError(
                f"program {program.name!r} needs device feature(s) {missing}, which adapter "
                f"{info['device']!r} ({info['backend_type']}) does not offer",
                fix="; ".join(_FEATURE_FIX.get(m, f"run on an adapter with {m}") for m in missing),
            )

    def compile(self, program) -> CompiledPipeline:
        """Validate, lower and build the compute pipeline now (cached), without dispatching."""
        self._check_alive()
        self._validate(program)
        return self._compiled(program)

    prepare = compile

    def _compiled(self, program) -> CompiledPipeline:
        lowered = self.lower_program(program)
        self._check_features(program, lowered)
        key = (program.fingerprint, str(getattr(lowered, "lowering_version", "")))
        with self._lock:
            self._check_alive()
            compiled = self._cache.pipelines.get(key)
            if compiled is not None:
                self._cache.hits += 1
                return compiled
            try:
                compiled = compile_pipeline(self._device, program, lowered, key)
            except DeviceLostError:
                self._mark_lost()
                raise
            self._cache.pipelines[key] = compiled
            self._cache.compiled += 1
            return compiled

    # ---- dispatch --------------------------------------------------------------
    def dispatch(self, program, inputs=None, config: DispatchConfig | None = None) -> list[np.ndarray]:
        """Run ``program`` once. ``inputs``: one array per read/read_write/uniform buffer in binding
        order (or a dict by name). Returns the read_write and write buffers in binding order."""
        self._check_alive()
        if config is not None and not isinstance(config, DispatchConfig):
            try:
                config = DispatchConfig.model_validate(config)
            except Exception as exc:
                raise DispatchError(f"invalid dispatch config {config!r}: {exc}",
                                    fix="pass a vyre.DispatchConfig") from None
        self._validate(program)
        plan = plan_dispatch(program, inputs, config, max_storage_bytes=self.max_storage_bytes_limit)
        self._check_uniform_sizes(plan)
        groups = fold_grid(plan.grid, self.max_compute_workgroups_per_dimension)
        compiled = self._compiled(program)
        if plan.total_workgroups == 0:
            return _host_outputs(plan)
        label = (config.label if config is not None else None) or f"vyre:{program.name}"
        with self._lock:
            self._check_alive()
            if self._cache.pipelines.get(compiled.key) is not compiled:  # caches dropped meanwhile
                compiled = self._compiled(program)
            try:
                return self._run(compiled, plan, groups, label)
            except BaseException as exc:
                self._staging.reset()  # a failure (or ^C) may have left a staging buffer mapped
                compiled.resources.last_words = None
                if not isinstance(exc, Exception):
                    raise
                err = translate_error(exc, stage="dispatch", wgsl=compiled.wgsl, program=program.name)
                if isinstance(err, DeviceLostError):
                    self._mark_lost()
                if err is exc:
                    raise
                raise err from exc

    @property
    def max_storage_bytes_limit(self) -> int:
        return int(self._limits["max-storage-buffer-binding-size"])

    def _check_uniform_sizes(self, plan: DispatchPlan) -> None:
        limit = int(self._limits.get("max-uniform-buffer-binding-size", 65536))
        for b in plan.buffers:
            if b.decl.access is Access.UNIFORM and align(b.nbytes, 16) > limit:
                raise DispatchError(
                    f"uniform buffer {b.decl.name!r} needs {b.nbytes} bytes, over this adapter's uniform "
                    f"binding limit of {limit} bytes",
                    fix="declare it with access='read' (a read-only storage buffer) instead",
                )

    def _ensure_resources(self, compiled: CompiledPipeline, plan: DispatchPlan, words: np.ndarray) -> list:
        import wgpu

        BU = wgpu.BufferUsage
        res = compiled.resources
        dev = self._device
        bufs = res.buffers
        if len(bufs) < len(plan.buffers):
            bufs.extend([None] * (len(plan.buffers) - len(bufs)))
        created = False
        storage_cap = self.max_storage_bytes_limit
        uniform_cap = int(self._limits.get("max-uniform-buffer-binding-size", 65536))
        retired = []
        for b in plan.buffers:
            cur = bufs[b.index]
            need = max(16, align(b.nbytes, 16))
            if cur is not None and cur.size >= need:
                continue
            uniform = b.decl.access is Access.UNIFORM
            size = device_buffer_size(b.nbytes, uniform, uniform_cap if uniform else storage_cap)
            usage = (BU.UNIFORM | BU.COPY_DST) if uniform else (BU.STORAGE | BU.COPY_SRC | BU.COPY_DST)
            bufs[b.index] = dev.create_buffer(label=f"{compiled.program_name}.{b.decl.name}", size=size, usage=usage)
            created = True
            self._stats.bump("buffers_created")
            if cur is not None:
                retired.append(cur)
        if res.params is None or res.params.size < words.nbytes:
            if res.params is not None:
                retired.append(res.params)
            res.params = dev.create_buffer(label=f"{compiled.program_name}._vyre", size=max(16, words.nbytes),
                                           usage=BU.UNIFORM | BU.COPY_DST)
            res.last_words = None
            self._stats.bump("buffers_created")
        key = (*bufs, res.params)
        if res.bind_groups == [] or key != res.bind_key:
            groups = []
            for g, slots in enumerate(compiled.groups):
                entries = []
                for s in slots:
                    buf = res.params if s.index < 0 else bufs[s.index]
                    entries.append({"binding": s.binding, "resource": {"buffer": buf, "offset": 0, "size": buf.size}})
                groups.append(dev.create_bind_group(label=f"{compiled.program_name}:g{g}",
                                                    layout=compiled.group_layouts[g], entries=entries))
                self._stats.bump("bind_groups_created")
            res.bind_groups = groups
            res.bind_key = key
        for old in retired:
            old.destroy()
        if created:
            self._trim_pool(keep=compiled)
        return bufs

    def _trim_pool(self, keep: CompiledPipeline) -> None:
        """Release the pooled buffers of the least recently used pipelines while the pool is over budget."""
        pipelines = list(self._cache.pipelines.values())
        total = sum(p.resources.nbytes() for p in pipelines)
        if total <= self.pool_budget_bytes:
            return
        for p in sorted(pipelines, key=lambda p: p.last_used):
            if p is keep or not p.resources.buffers:
                continue
            total -= p.resources.nbytes()
            p.resources.release()
            self._stats.bump("pool_releases")
            if total <= self.pool_budget_bytes:
                break

    def _run(self, compiled: CompiledPipeline, plan: DispatchPlan, groups: tuple[int, int, int], label: str):
        dev, queue, staging = self._device, self._queue, self._staging
        words = params_words(plan)
        bufs = self._ensure_resources(compiled, plan, words)
        res = compiled.resources

        # uploads: small ones by queue.write_buffer, large ones through the mapped staging buffer
        items = [(bufs[b.index], as_bytes4(b.data)) for b in plan.buffers if b.data is not None and b.data.nbytes]
        total_in = sum(d.nbytes for _, d in items)
        mapped = []
        if total_in > self.upload_map_threshold:
            mapped = [(buf, d) for buf, d in items if d.nbytes >= self.upload_small_buffer]
            direct = [(buf, d) for buf, d in items if d.nbytes < self.upload_small_buffer]
        else:
            direct = items
        for buf, d in direct:
            queue.write_buffer(buf, 0, d)
        self._stats.bump("uploads_direct", len(direct))
        self._stats.bump("uploads_mapped", len(mapped))
        if res.last_words is None or not np.array_equal(res.last_words, words):
            res.last_words = None
            queue.write_buffer(res.params, 0, words)
            res.last_words = words
        encoder = dev.create_command_encoder(label=label)
        if mapped:
            need = sum(align(d.nbytes, ALIGN) for _, d in mapped)
            st = staging.map_upload(need)
            copies, off = [], 0
            try:
                for buf, d in mapped:
                    st.write_mapped(d, off)
                    copies.append((off, buf, d.nbytes))
                    off += align(d.nbytes, ALIGN)
            finally:
                st.unmap()
            for off, buf, n in copies:
                encoder.copy_buffer_to_buffer(st, off, buf, 0, n)
        self._stats.bump("bytes_uploaded", total_in + words.nbytes)

        outs = plan.outputs
        for b in outs:
            if b.data is None:  # write-only: zero-initialised (the pooled buffer holds old data)
                encoder.clear_buffer(bufs[b.index], 0, b.nbytes)

        cpass = encoder.begin_compute_pass(label=label)
        cpass.set_pipeline(compiled.pipeline)
        for g, bg in enumerate(res.bind_groups):
            cpass.set_bind_group(g, bg)
        cpass.dispatch_workgroups(*groups)
        cpass.end()

        total_out = sum(align(b.nbytes, ALIGN) for b in outs)
        offsets = []
        if outs:
            rb = staging.ensure_readback(total_out)
            off = 0
            for b in outs:
                encoder.copy_buffer_to_buffer(bufs[b.index], 0, rb, off, b.nbytes)
                offsets.append(off)
                off += align(b.nbytes, ALIGN)
        queue.submit([encoder.finish()])
        self._stats.bump("dispatches")
        compiled.uses += 1
        self._use_clock += 1
        compiled.last_used = self._use_clock
        if not outs:
            self._wait_idle()
            return []
        rb = staging.map_readback(total_out)
        results = []
        try:
            for b, off in zip(outs, offsets):
                mv = rb.read_mapped(off, b.nbytes, copy=False)
                results.append(storage_to_host(b.decl, mv, b.count))
                del mv
        finally:
            rb.unmap()
        self._stats.bump("bytes_read_back", sum(b.nbytes for b in outs))
        return results

    def _wait_idle(self) -> None:
        """Wait for submitted work (``on_submitted_work_done_sync`` is broken in wgpu-py 0.32): clear a few
        bytes of the readback buffer in a new submission and map it (mapping waits for that submission)."""
        rb = self._staging.ensure_readback(16)
        enc = self._device.create_command_encoder(label="vyre-fence")
        enc.clear_buffer(rb, 0, 16)
        self._queue.submit([enc.finish()])
        self._staging.map_readback(16)
        rb.unmap()

    def flush(self) -> None:
        """Wait until all submitted GPU work is done."""
        with self._lock:
            self._check_alive()
            try:
                self._wait_idle()
            except Exception as exc:
                self._staging.reset()
                raise translate_error(exc, stage="dispatch") from exc

    shutdown = clear_cache


def _host_outputs(plan: DispatchPlan) -> list[np.ndarray]:
    """Outputs of a dispatch with zero workgroups: write buffers zero, read_write buffers unchanged."""
    outs = []
    for b in plan.outputs:
        raw = b.data if b.data is not None else np.zeros(b.nbytes, dtype=np.uint8)
        outs.append(storage_to_host(b.decl, raw, b.count))
    return outs


__all__ = ["WgpuBackend"]
