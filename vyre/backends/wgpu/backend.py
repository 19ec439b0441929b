"""WgpuBackend: runs vyre programs on a WebGPU device through wgpu-py.

One dispatch = validate (cached) → plan (all input checks, no GPU work) → pipeline (memory
LRU → disk cache of lowerings → lowering; see compile.py) → buffers of the pipeline's job
slot (from the pool; reused when the shape repeats, so no create_buffer/create_bind_group)
→ one command encoder with the uploads' copies, one compute pass and the copies of every
output into the reused MAP_READ staging buffer → one submit → one map → numpy (execute.py).

The class is assembled from one mixin per concern: compile.py (compilation and caches),
execute.py (encode/submit/readback), batch.py, escape.py (raw WGSL, probe_op), caps.py
(capabilities), lifecycle.py (shared/new/shutdown/flush, device loss and recovery).

The device and queue are used under one RLock (``_lock``), so a backend may be shared by
threads (their GPU work is serialized). Every wgpu exception is translated into a vyre error.
"""

from __future__ import annotations

import threading
from typing import Callable

import numpy as np

from ...errors import DispatchError, LoweringError, NoAdapterError
from ...ir.types import Access
from ..config import DispatchConfig
from ..host import DispatchPlan, fold_grid, plan_dispatch, storage_to_host
from . import adapter as _adapter
from .async_dispatch import AsyncMixin
from .batch import BatchMixin
from .caps import CapabilitiesMixin
from .compile import CompileMixin
from .device import create_device
from .disk_cache import DiskCache
from .escape import EscapeMixin
from .execute import ExecutorMixin, job_from_plan
from .keys import adapter_identity, lowering_contract
from .lifecycle import LifecycleMixin
from .pipelines import DEFAULT_CAPACITY, LayoutCache, PipelineCache
from .pool import DEFAULT_CAP, BufferPool
from .resident import ResidentMixin
from .transfer import Staging, Stats, align, as_bytes4


def _default_lower(program):
    try:
        from ...lower import lower
    except ImportError as exc:
        raise LoweringError(f"the lowering (vyre.lower.lower) is not available: {exc}",
                            fix="install vyre completely (vyre/lower must provide lower())") from None
    return lower(program)


_USE_ENV = object()

#: Remembered repeat dispatches per backend (see WgpuBackend._dispatch_via).
REPEAT_CAPACITY = 256


def _repeat_key(program, inputs) -> tuple | None:
    """(fingerprint, dtype, length, ...) of a dispatch whose inputs are all 1-D contiguous numpy arrays, else
    None. Planning is a function of the program and these (with no config and the same device)."""
    if type(inputs) is not list and type(inputs) is not tuple:
        return None
    fp = program.__dict__.get("fingerprint")  # the cached property, computed by validation
    if fp is None:
        return None
    key = [fp]
    for v in inputs:
        if type(v) is not np.ndarray or v.ndim != 1 or not v.flags.c_contiguous:
            return None
        key.append(v.dtype)
        key.append(v.shape[0])
    return tuple(key)

#: Counters stats() always reports (0 until they happen).
_COUNTERS = ("dispatches", "submits", "batches", "buffers_created", "bind_groups_created", "bind_group_layouts_created",
             "bytes_uploaded", "bytes_read_back", "uploads_direct", "uploads_mapped", "uploads_skipped", "lowerings",
             "validations",
             "disk_cache_hits", "disk_cache_misses", "disk_cache_writes", "disk_cache_corrupt", "disk_cache_errors",
             "pool_releases", "invalidations")


class WgpuBackend(ResidentMixin, AsyncMixin, CompileMixin, ExecutorMixin, BatchMixin, EscapeMixin,
                 CapabilitiesMixin, LifecycleMixin):
    """A vyre backend on a real WebGPU adapter (any Vulkan/Metal/D3D12 GPU, or lavapipe on a CPU).

    Create with :meth:`acquire` (best adapter, or the one ``VYRE_ADAPTER`` names),
    :meth:`acquire_adapter` (an index into ``wgpu.gpu.enumerate_adapters_sync()``),
    :meth:`new` (a fresh backend) or :meth:`shared` (the process-wide one).

    Keyword options: ``lower`` (a custom lowering function; the disk cache is then off unless
    ``disk_cache`` is given), ``pipeline_cache_capacity`` (default 256), ``pool_cap_bytes``
    (default 1 GiB), ``disk_cache`` (a directory, ``False`` for none; default: ``VYRE_CACHE_DIR``
    or the user cache dir).
    """

    name = "wgpu"

    def __init__(self, adapter_index: int | None = None, *, lower: Callable | None = None,
                 pipeline_cache_capacity: int = DEFAULT_CAPACITY, pool_cap_bytes: int = DEFAULT_CAP,
                 disk_cache=_USE_ENV):
        self._lock = threading.RLock()
        self._stats = Stats()
        self._choice: _adapter.AdapterChoice = _adapter.select_adapter(adapter_index)
        self._lower_fn = lower or _default_lower
        self._contract = lowering_contract(lower)
        self._identity = adapter_identity(self._choice.info)
        #: (fingerprint, dtype, length, ...) -> (job, its input binds, _plan_limits()): see _dispatch_via
        self._repeats: dict[tuple, tuple] = {}
        self._cache = PipelineCache(pipeline_cache_capacity, release=self._release_pipeline)
        self._pool_cap = int(pool_cap_bytes)
        self._pool: BufferPool | None = None
        self._layouts: LayoutCache | None = None
        if disk_cache is _USE_ENV:
            self._disk = DiskCache.from_env(self._contract, self._stats) if lower is None else None
        elif disk_cache is False or disk_cache is None:
            self._disk = None
        else:
            self._disk = DiskCache(disk_cache, self._contract, self._stats)
        self._init_compile_state()
        self._lost = False
        self._closed = False
        self._use_clock = 0
        #: Device generation: bumped when the device is lost and when a new one is opened, so
        #: anything tied to an older device (resident handles, pipelines) can tell it is stale.
        self._generation = 0
        self._open_device()

    # ---- construction -------------------------------------------------------
    @classmethod
    def acquire(cls, **kwargs) -> "WgpuBackend":
        """The best adapter (discrete > integrated > native CPU > other; never OpenGL when a native
        backend exists), or the one ``VYRE_ADAPTER`` (an index or a name substring) names."""
        return cls(**kwargs)

    @classmethod
    def acquire_adapter(cls, index: int, **kwargs) -> "WgpuBackend":
        """Bind to adapter ``index`` of ``wgpu.gpu.enumerate_adapters_sync()``. Raises NoAdapterError."""
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise NoAdapterError(f"adapter index must be an int, got {index!r}", fix="pass 0, 1, ...")
        return cls(adapter_index=int(index), **kwargs)

    def _open_device(self) -> None:
        adapter = self._choice.adapter
        self._device, self._features, self._limits = create_device(adapter, label="vyre")
        self._adapter_limits = {str(k): v for k, v in dict(adapter.limits).items()}
        self._queue = self._device.queue
        self._staging = Staging(self._device, self._stats, self._limits.get("max-buffer-size"))
        if self._pool is None:
            self._pool = BufferPool(self._device, self._stats, self._pool_cap)
            self._layouts = LayoutCache(self._device, self._stats)
        else:
            self._pool.clear(self._device)
            self._layouts.clear(self._device)
        self._cache.clear()
        self._repeats.clear()
        self._lost = False
        self._generation += 1

    def _release_pipeline(self, pipeline) -> None:
        """Called by the pipeline cache for each pipeline that leaves it: its buffers go back to the pool."""
        if self._pool is not None:
            pipeline.release_resources(self._pool)
        stale = [k for k, entry in self._repeats.items() if entry[0].compiled is pipeline]
        for k in stale:
            self._repeats.pop(k, None)

    # ---- identity, configuration and counters ------------------------------------
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

    @property
    def lowering_contract(self) -> str:
        """The lowering version string that keys the caches."""
        return self._contract

    @property
    def pipeline_cache_capacity(self) -> int:
        return self._cache.capacity

    @pipeline_cache_capacity.setter
    def pipeline_cache_capacity(self, value: int) -> None:
        with self._lock:
            self._cache.capacity = value

    @property
    def pool_budget_bytes(self) -> int:
        """The buffer pool's byte cap (buffers above it are destroyed, least recently used first)."""
        return self._pool.cap_bytes

    @pool_budget_bytes.setter
    def pool_budget_bytes(self, value: int) -> None:
        with self._lock:
            self._pool_cap = self._pool.cap_bytes = int(value)

    @property
    def disk_cache_dir(self):
        """The disk cache's directory for this lowering contract (None when the disk cache is off)."""
        return self._disk.dir if self._disk is not None else None

    def device_queue(self):
        """The live ``(GPUDevice, GPUQueue)``; hold ``backend.lock`` while using them alongside dispatches."""
        return self._device, self._queue

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    @property
    def max_storage_bytes_limit(self) -> int:
        return int(self._limits["max-storage-buffer-binding-size"])

    def stats(self) -> dict:
        """Counters. Flat keys (dispatches, submits, batches, buffers_created, bind_groups_created,
        bytes_uploaded, bytes_read_back, lowerings, validations, disk_cache_*, ...) and sections:
        ``pipeline_cache``, ``disk_cache``, ``buffer_pool``, ``resident``, ``adapter``."""
        with self._lock:
            s = dict(self._stats)
            pc = self._cache.snapshot()
            pool = self._pool.snapshot()
            s["pipelines_cached"] = pc["entries"]
            s["pipelines_compiled"] = pc["compiled"]
            s["pipeline_cache_hits"] = pc["hits"]
            s["lowerings_cached"] = pc["lowerings"]
            s["pooled_bytes"] = pool["bytes"]
            s["staging_bytes"] = sum(b.size for b in (self._staging.upload, self._staging.readback) if b is not None)
            s["pipeline_cache"] = pc
            s["disk_cache"] = {
                "enabled": self._disk is not None,
                "dir": str(self._disk.dir) if self._disk is not None else None,
                **{k: self._stats.get(f"disk_cache_{k}", 0) for k in ("hits", "misses", "writes", "corrupt", "errors")},
            }
            s["buffer_pool"] = pool
            rb = getattr(self, "_resident_bytes", 0)
            rh = getattr(self, "_resident_handles", 0)
            s["resident"] = {"bytes": int(rb() if callable(rb) else rb),
                             "handles": int(rh if isinstance(rh, int) else len(rh))}
            for key in _COUNTERS:
                s.setdefault(key, 0)
            s["adapter"] = {**{k: self._choice.info.get(k) for k in
                               ("vendor", "vendor_id", "device", "device_id", "backend_type", "adapter_type", "driver")},
                            "index": self._choice.index}
            s["generation"] = self._generation
            s["device_lost"] = self._lost
            s["shut_down"] = self._closed
            return s

    def __repr__(self) -> str:
        i = self._choice.info
        state = " shut down" if self._closed else (" lost" if self._lost else "")
        return f"WgpuBackend([{self._choice.index}] {i['device']!r}, {i['backend_type']}, {i['adapter_type']}{state})"

    # ---- dispatch --------------------------------------------------------------
    def dispatch(self, program, inputs=None, config: DispatchConfig | None = None) -> list[np.ndarray]:
        """Run ``program`` once. ``inputs``: one array per read/read_write/uniform buffer in binding
        order (or a dict by name). Returns the read_write and write buffers in binding order."""
        self._check_alive()
        self._validate(program)
        return self._dispatch_via(program, inputs, config, lambda cfg: self._compiled(program, cfg))

    def _coerce_config(self, config) -> DispatchConfig | None:
        if config is None or isinstance(config, DispatchConfig):
            return config
        try:
            return DispatchConfig.model_validate(config)
        except Exception as exc:
            raise DispatchError(f"invalid dispatch config {config!r}: {exc}",
                                fix="pass a vyre.DispatchConfig") from None

    def _dispatch_via(self, program, inputs, config, get_pipeline) -> list[np.ndarray]:
        """Plan (every input check, no GPU work), get the pipeline with ``get_pipeline(config)``, run.

        A dispatch without config whose inputs are 1-D contiguous arrays of the same dtypes and
        lengths as an earlier successful one of the same program reuses that dispatch's job
        (:meth:`_run_repeat`): the plan is a function of exactly those, so it is skipped."""
        self._check_alive()
        key = compiled = None
        if config is None:
            key = _repeat_key(program, inputs)
            if key is not None:
                entry = self._repeats.get(key)
                if entry is not None and entry[2] == self._plan_limits():
                    compiled = get_pipeline(None)
                    if entry[0].compiled is compiled:
                        out = self._run_repeat(entry, inputs)
                        if out is not None:
                            return out
        else:
            config = self._coerce_config(config)
        plan = plan_dispatch(program, inputs, config, max_storage_bytes=self.max_storage_bytes_limit)
        self._check_uniform_sizes(plan)
        groups = fold_grid(plan.grid, self.max_compute_workgroups_per_dimension())
        if compiled is None:
            compiled = get_pipeline(config)
        if plan.total_workgroups == 0:
            return self._host_outputs(plan)
        label = (config.label if config is not None else None) or f"vyre:{program.name}"
        with self._lock:
            self._check_alive()
            if compiled.generation != self._generation:  # built on a device since replaced
                compiled = get_pipeline(config)
            job = job_from_plan(compiled, plan, groups, label)
            out = self._run_jobs([job])[0]
            if key is not None:
                self._remember_repeat(key, job, plan, inputs)
            return out

    def _plan_limits(self) -> tuple:
        """The device limits a plan's checks depend on."""
        lim = self._limits
        return (lim.get("max-storage-buffer-binding-size"), lim.get("max-uniform-buffer-binding-size"),
                lim.get("max-compute-workgroups-per-dimension"))

    def _run_repeat(self, entry, inputs) -> list[np.ndarray] | None:
        """Run a remembered job with new input data (None: it went stale, plan again)."""
        job, input_binds, _ = entry
        with self._lock:
            self._check_alive()
            if job.compiled.generation != self._generation:
                return None
            try:
                for bind, value in zip(input_binds, inputs):
                    bind.data = as_bytes4(value) if value.nbytes else None
                return self._run_jobs([job])[0]
            finally:
                for bind in input_binds:
                    bind.data = None  # hold no caller array

    def _remember_repeat(self, key, job, plan: DispatchPlan, inputs) -> None:
        """Keep ``job`` for dispatches with the same key, when its plan took every input array as it is."""
        plans = [b for b in plan.buffers if b.is_input]
        if len(plans) != len(inputs) or any(b.data is not v for b, v in zip(plans, inputs)):
            return  # an input was converted (bool, vec3, non-contiguous...): plan every time
        input_binds = [job.binds[k] for k, b in enumerate(plan.buffers) if b.is_input]
        for bind in input_binds:
            bind.data = None
        job.reuse = True  # the next runs prepare it (execute.Prepared)
        repeats = self._repeats
        if len(repeats) >= REPEAT_CAPACITY:
            for k in list(repeats)[: REPEAT_CAPACITY // 2]:
                repeats.pop(k, None)
        repeats[key] = (job, input_binds, self._plan_limits())

    def _check_uniform_sizes(self, plan: DispatchPlan) -> None:
        limit = int(self._limits.get("max-uniform-buffer-binding-size", 65536))
        for b in plan.buffers:
            if b.decl.access is Access.UNIFORM and align(b.nbytes, 16) > limit:
                raise DispatchError(
                    f"uniform buffer {b.decl.name!r} needs {b.nbytes} bytes, over this adapter's uniform "
                    f"binding limit of {limit} bytes",
                    fix="declare it with access='read' (a read-only storage buffer) instead",
                )

    @staticmethod
    def _host_outputs(plan: DispatchPlan) -> list[np.ndarray]:
        """Outputs of a dispatch with zero workgroups: write buffers zero, read_write buffers unchanged."""
        outs = []
        for b in plan.outputs:
            raw = b.data if b.data is not None else np.zeros(b.nbytes, dtype=np.uint8)
            outs.append(storage_to_host(b.decl, raw, b.count))
        return outs


__all__ = ["WgpuBackend"]
