"""WgpuBackend: the public face of vyre's WebGPU backend, a thin facade over composed parts.

* :class:`~.device.Device`: adapter, device, queue, limits, features, the lock, the
  generation, loss detection and recovery.
* :class:`~.pipeline_store.PipelineStore`: validation memo, lowering, disk cache, pipeline LRU,
  bind-group layouts.
* :class:`~.executor.Executor`: the one path from a :class:`~.work.Work` (writes, passes of
  dispatches, reads) to results: encode, submit, wait, map, read, timestamps, and the
  translation of every wgpu failure into a vyre error.
* :class:`~.resident.ResidentStore`: resident handles, their buffers, generation checks.
* :class:`~.bindings.Bindings`: the one params-uniform cache, bind-group creation, the buffer pool and
  the plan limits (every plan is made by :func:`vyre.backends.planning.plan_step`).
* Builders of Work, one per way of running work: :class:`~.jobs.JobRunner` and
  :class:`~.dispatcher.Dispatcher` (dispatch, compiled, timed, batch), :class:`~.async_dispatch.AsyncRunner`,
  :class:`~.escape.RawWgsl`, :class:`~.sequence.Sequences` (resident dispatch and sequences),
  :class:`~.pipeline_run.OpPipelines` (op pipelines).

Every public method checks its arguments before any GPU work and raises vyre errors only. The
public API is wide (about sixty methods and properties), each a few lines delegating to a part: the
identity, configuration, counters and capabilities are inherited from
:class:`~.backend_info.BackendInfo` (backend_info.py), the lifecycle and the ways of running work are here.
The device and queue are used under one RLock (``lock``), so a backend may be shared by threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ...errors import DispatchError, NoAdapterError, VyreError
from ...ir.nodes import UnOp
from ...ir.program import Program
from ..artifact import CompiledProgram
from ..base import Backend
from ..config import DispatchConfig
from ..handles import ResidentHandle
from ..recording import recordable
from ..schedule import Pipeline
from .async_dispatch import AsyncRunner, PendingDispatch
from .backend_info import BackendInfo
from .bindings import Bindings
from .captured import Captured
from .compiled import PersistentPipeline
from .device import Device
from .disk_cache import DiskCache
from .dispatcher import Dispatcher, coerce_config
from .escape import WARM_WGSL, RawWgsl, probe_op
from .executor import Executor
from .interop import SharedDevice, check_device
from .jobs import JobRunner
from .keys import lowering_contract
from .loop_trap import LoopTrap
from .pipeline_run import OpPipelines
from .pipeline_store import PipelineStore
from .pipelines import DEFAULT_CAPACITY, CompiledPipeline
from .pool import DEFAULT_CAP, BufferPool
from .resident import ResidentStore
from .sequence import Sequences
from .timestamps import TimedDispatch
from .transfer import MIN_STAGING, Stats
from .types import GPUDevice

if TYPE_CHECKING:
    from ...lower import LoweredProgram  # why: import time (vyre.lower loads jinja2 and its templates on first use)

_USE_ENV = object()

@recordable  # vyre.compile sees the resident work done on it (vyre/backends/recording.py)
class WgpuBackend(BackendInfo, Backend):
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
    _shared: ClassVar[WgpuBackend | None] = None
    _shared_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, adapter_index: int | None = None, *, lower: Callable[[Program], LoweredProgram] | None = None,
                 pipeline_cache_capacity: int = DEFAULT_CAPACITY, pool_cap_bytes: int = DEFAULT_CAP,
                 disk_cache: Any = _USE_ENV, _device: Device | None = None) -> None:
        self._stats = stats = Stats()
        self._dev = dev = _device if _device is not None else Device(adapter_index)
        contract = lowering_contract(lower)
        if disk_cache is _USE_ENV:
            disk = DiskCache.from_env(contract, stats) if lower is None else None
        elif disk_cache is False or disk_cache is None:
            disk = None
        else:
            disk = DiskCache(disk_cache, contract, stats)
        self._store = store = PipelineStore(dev, stats, lower, contract, disk, pipeline_cache_capacity,
                                            release=self._release_pipeline)
        dev.open()
        self._pool = BufferPool(dev.device, stats, int(pool_cap_bytes))
        self._bindings = bindings = Bindings(dev, self._pool, stats)
        self._executor = ex = Executor(dev, stats)
        self._dispatcher = Dispatcher(dev, store, bindings, JobRunner(dev, store, ex, bindings, stats))
        self._async = AsyncRunner(dev, store, self._dispatcher, ex, bindings, stats)
        self._raw = RawWgsl(dev, store, self._dispatcher.runner)
        self._resident = ResidentStore(dev, store, bindings, stats)
        self._sequences = Sequences(dev, self._resident, ex, stats)
        self._pipelines = OpPipelines(dev, self._resident, ex)
        self._attach()

    def _attach(self) -> None:
        """Point the parts at the device just opened (first use, and after a recovery)."""
        self._pool.clear(self._dev.device)  # a pool made for an older device holds nothing usable
        self._store.attach()
        self._executor.attach()
        cap = self._store.loop_cap()
        self._executor.trap = None if cap is None else LoopTrap(self._bindings, self._store, cap)

    def _release_pipeline(self, pipeline: CompiledPipeline) -> None:
        """Called by the pipeline cache for each pipeline that leaves it: its buffers go back to the pool."""
        if "_dispatcher" in self.__dict__:  # not during construction
            pipeline.release_resources(self._pool)
            self._dispatcher.forget(pipeline)

    # ---- construction and lifecycle -------------------------------------------------------------
    @classmethod
    def acquire(cls, **kwargs: Any) -> WgpuBackend:
        """The best adapter (never OpenGL when a native one exists), or the one ``VYRE_ADAPTER`` names."""
        return cls(**kwargs)

    @classmethod
    def acquire_adapter(cls, index: int, **kwargs: Any) -> WgpuBackend:
        """Bind to adapter ``index`` of ``wgpu.gpu.enumerate_adapters_sync()``. Raises NoAdapterError."""
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise NoAdapterError(f"adapter index must be an int, got {index!r}", fix="pass 0, 1, ...")
        return cls(adapter_index=int(index), **kwargs)

    @classmethod
    def new(cls, adapter_index: int | None = None, **kwargs: Any) -> WgpuBackend:
        """A fresh backend of its own (its own device, caches and pool)."""
        return cls(adapter_index, **kwargs)

    @classmethod
    def from_device(cls, device: GPUDevice, **kwargs: Any) -> WgpuBackend:
        """A backend over an existing ``wgpu.GPUDevice`` (e.g. pygfx's), shared: never destroyed by vyre
        (see vyre/backends/wgpu/interop.py for the limits)."""
        check_device(device)
        return cls(_device=SharedDevice(device), **kwargs)

    @classmethod
    def shared(cls) -> WgpuBackend:
        """The process-wide backend (thread-safe); a shut-down one is replaced, a lost one recovered."""
        with cls._shared_lock:
            s = cls._shared
            if s is not None and s._dev.lost and not s._dev.closed:
                try:
                    s.try_recover()
                except VyreError:
                    s = None
            if s is None or s._dev.closed or s._dev.lost:
                s = cls.acquire()
                cls._shared = s
            return s

    def _drop_device_state(self) -> None:
        """Forget everything tied to the current device (memory caches, pooled buffers, staging)."""
        self._store.forget()
        self._pool.clear()
        self._executor.staging.reset()
        self._dispatcher.forget()

    def device_lost(self) -> bool:
        """True after the device was lost (and before a successful :meth:`try_recover`)."""
        return self._dev.lost

    @property
    def is_shut_down(self) -> bool:
        return self._dev.closed

    def force_device_lost(self) -> None:
        """Test hook: destroy the device and mark the backend lost (every use then raises DeviceLostError)."""
        with self._dev.lock:
            self._dev.check_open()
            self._dev.mark_lost()
            self._drop_device_state()
            self._dev.destroy()

    def try_recover(self) -> None:
        """After a loss: reopen the same adapter (same identity and limits; DeviceLostError if it changed)
        with empty memory caches (the disk cache stays). Does nothing when the device is not lost."""
        with self._dev.lock:
            self._dev.check_open()
            if not self._dev.lost:
                return
            self._drop_device_state()
            self._dev.recover()
            self._attach()

    def shutdown(self) -> None:
        """Release every device resource; idempotent; any later use raises BackendError."""
        with self._dev.lock:
            if self._dev.closed:
                return
            self._drop_device_state()
            self._executor.staging.release()
            self._dev.shutdown()

    def flush(self) -> None:
        """Wait until all submitted GPU work is done."""
        with self._dev.lock:
            self._dev.check_alive()
            self._executor.wait_idle()

    def clear_cache(self) -> None:
        """Drop compiled pipelines and lowerings, pooled device buffers and staging buffers (memory only)."""
        with self._dev.lock:
            self._store.cache.clear()
            self._async.clear()
            self._pool.clear()
            self._resident.release_spare()
            self._executor.staging.release()

    # ---- dispatch ---------------------------------------------------------------------------------
    def dispatch(self, program: Program, inputs: Any = None, config: DispatchConfig | None = None) -> list[np.ndarray]:
        """Run ``program`` once: one array per input buffer (binding order, or a dict by name) in, the
        read_write and write buffers out (the contracts of every method: vyre.backends.base.Backend)."""
        self._dev.check_alive()
        self._store.validate(program)
        store = self._store
        return self._dispatcher.dispatch(program, inputs, config, lambda cfg: store.compiled(program, cfg))

    def dispatch_batch(self, jobs: Any) -> list[list[np.ndarray] | VyreError]:
        """One result per ``(program, inputs[, config])`` job: its outputs, or the VyreError it raised."""
        return self._dispatcher.batch(jobs, self._stats)

    def dispatch_async(self, program: Program, inputs: Any = None, config: DispatchConfig | None = None
                       ) -> PendingDispatch:
        """Submit a dispatch and return at once; ``.wait()`` on the result gives the outputs."""
        return self._async.launch(program, inputs, config)

    def dispatch_timed(self, program: Program, inputs: Any = None, config: DispatchConfig | None = None
                       ) -> TimedDispatch:
        """Dispatch and wait: ``TimedDispatch(outputs, gpu_ns, source, wall_ns)`` (``source``: "timestamp"
        or "wall-clock" where the adapter has no timestamp queries)."""
        return self._dispatcher.timed(program, inputs, config)

    def dispatch_wgsl(self, wgsl: str, inputs: Any, output_sizes: Any, workgroups: Any, *,
                      entry_point: str = "main", output_dtypes: Any = None) -> list[np.ndarray]:
        """Run raw WGSL (inputs at bindings 0..k-1 read-only, then one zeroed read_write buffer per output
        size; see vyre/backends/wgpu/escape.py). Returns one array per output."""
        return self._raw.dispatch(wgsl, inputs, output_sizes, workgroups, entry_point=entry_point,
                                  output_dtypes=output_dtypes)

    def probe_op(self, op: UnOp | str, values: Any) -> np.ndarray:
        """Run the f32 unary ``op`` (a UnOp or its name) over ``values``; returns the GPU's float32 results."""
        return probe_op(self, op, values)

    # ---- compilation ------------------------------------------------------------------------------
    def validate(self, program: Program) -> None:
        """Raise ValidationError when ``program`` is invalid under this device's limits (cached)."""
        self._store.validate(program)

    def lower_program(self, program: Program, config: DispatchConfig | None = None) -> LoweredProgram:
        """The program's LoweredProgram: from the memory LRU, the disk cache or the lowering."""
        return self._store.lower(program, config)

    def compile(self, program: Program, config: DispatchConfig | None = None) -> CompiledProgram:
        """Validate, lower and build the pipeline now; the artifact (WGSL, bindings...) for dispatch_compiled."""
        self._dev.check_alive()
        config = coerce_config(config)
        self._store.validate(program)
        return self._store.artifact(self._store.compiled(program, config))

    def compile_persistent(self, program: Program, config: DispatchConfig | None = None) -> PersistentPipeline:
        """Compile and pin the pipeline (never evicted from the LRU); ``.dispatch(inputs, config=None)``."""
        self._dev.check_alive()
        config = coerce_config(config)
        self._store.validate(program)
        with self._dev.lock:  # held from lookup to pin, so no other thread evicts it in between
            p = self._store.compiled(program, config)
            self._store.artifact(p)
            p.pins += 1
            return PersistentPipeline(self, p)

    def dispatch_compiled(self, compiled: CompiledProgram | PersistentPipeline, inputs: Any = None,
                          config: DispatchConfig | None = None) -> list[np.ndarray]:
        """Dispatch a :class:`CompiledProgram` (from :meth:`compile`) or a PersistentPipeline."""
        if isinstance(compiled, PersistentPipeline):
            return compiled.dispatch(inputs, config)
        if not isinstance(compiled, CompiledProgram):
            raise DispatchError(f"dispatch_compiled takes a CompiledProgram, got {type(compiled).__name__}",
                                fix="pass the result of backend.compile(program)")
        store = self._store
        return self._dispatcher.dispatch(compiled.program, inputs, config, lambda cfg: store.pipeline_for(compiled))

    def _dispatch_persistent(self, pp: PersistentPipeline, inputs: Any, config: Any) -> list[np.ndarray]:
        if pp._backend is not self:
            raise DispatchError("this PersistentPipeline belongs to another backend",
                                fix="dispatch it on the backend that compiled it")
        return self._dispatcher.dispatch(pp.compiled.program, inputs, config, pp.pipeline)

    def prepare(self, programs: Any = None) -> list[CompiledProgram] | None:
        """Warm-up. Without arguments: create the staging buffers and run one tiny
        raw-WGSL dispatch (wgpu-py parses the C types of every call once per process, a few hundred ms,
        otherwise paid by the first compile). With a list of programs: compile them all."""
        self._dev.check_alive()
        if programs is None:
            with self._dev.lock:
                self._dev.check_alive()
                self._executor.staging.ensure_upload(MIN_STAGING)
                self._executor.staging.ensure_readback(MIN_STAGING)
                self.dispatch_wgsl(WARM_WGSL, [np.zeros(4, np.uint32)], [4], 1)
            return None
        return [self.compile(p) for p in programs]

    def invalidate_pipeline_cache(self, fingerprints: Any = None) -> int:
        """Drop pipelines (pinned ones too), lowerings, validation results and disk entries, all or those of
        ``fingerprints``; returns how many pipelines left memory."""
        return self._store.invalidate(fingerprints)

    # ---- resident buffers -------------------------------------------------------------------------
    def allocate_resident(self, nbytes: int, label: str | None = None, *, zeroed: bool = True) -> ResidentHandle:
        """A new zero-filled resident buffer of ``nbytes`` bytes (a positive multiple of 4). ``zeroed=False``:
        the caller writes every byte before reading any (a freed buffer is then reused without a clear)."""
        with self._dev.lock:
            return self._resident.allocate(nbytes, label, zeroed)

    def free_resident(self, handle: ResidentHandle) -> None:
        """Release a resident buffer. Freeing it twice (or an unknown handle) raises DispatchError."""
        with self._dev.lock:
            self._resident.free(handle)

    def params_handle(self, words: bytes | np.ndarray) -> ResidentHandle:
        """A resident handle holding ``words`` (32-bit parameter words: an array evaluation's scalars, a
        kernel's dims), shared by every caller with the same words and written once. The backend owns it:
        never free or write it; bind it to a read or uniform buffer."""
        with self._dev.lock:
            return self._resident.params_handle(words)

    def upload_resident(self, handle: ResidentHandle, data: Any, offset: int = 0) -> None:
        """Write ``data`` (bytes, numpy, any buffer) at byte ``offset``; offset and size multiples of 4."""
        self.upload_resident_many([(handle, data, offset)])

    def upload_resident_many(self, uploads: Any) -> None:
        """Several ``(handle, data, offset)`` (or ``(handle, data)``) uploads as one staging operation."""
        with self._dev.lock:
            work = self._resident.upload_work(uploads)
            if work.writes:
                self._executor.run(work)

    def download_resident(self, handle: ResidentHandle, out: np.ndarray | None = None) -> np.ndarray:
        """The whole buffer as a uint8 array, or written into ``out`` (C-contiguous, exactly ``handle.nbytes``
        bytes: a reused array skips the page faults of fresh host memory)."""
        return self.download_resident_ranges([handle], None if out is None else [out])[0]

    def download_resident_range(self, handle: ResidentHandle, offset: int, nbytes: int,
                                out: np.ndarray | None = None) -> np.ndarray:
        return self.download_resident_ranges([(handle, offset, nbytes)], None if out is None else [out])[0]

    def download_resident_ranges(self, ranges: Any, outs: Any = None) -> list[np.ndarray]:
        """Each ``(handle, offset, nbytes)`` (or whole handle) as a uint8 array (or into ``outs``), in one map."""
        with self._dev.lock:
            return self._executor.run(self._resident.download_work(ranges, outs))

    def dispatch_resident(self, program: Program, handles: Any, config: DispatchConfig | None = None) -> None:
        """Run ``program`` over resident buffers (one handle per buffer, binding order); no transfer, no wait."""
        self._sequences.dispatch_resident(program, handles, config)

    def dispatch_resident_sequence(self, steps: Any, read: Any = None) -> list[np.ndarray]:
        """``(program, handles[, grid])`` steps in one pass and one submit; ``read``: ranges to return after."""
        return self._sequences.run(steps, (), 0, read, timed=False)

    def dispatch_resident_repeated_sequence(self, prefix: Any, repeated: Any, repeat_count: int,
                                            read: Any = None) -> list[np.ndarray]:
        """``prefix`` once, then ``repeated`` ``repeat_count`` times, as one sequence."""
        return self._sequences.run(prefix, repeated, repeat_count, read, timed=False)

    def dispatch_resident_sequence_timed(self, steps: Any, read: Any = None) -> TimedDispatch:
        """``dispatch_resident_sequence`` that waits and reports the GPU time of the pass."""
        return self._sequences.run(steps, (), 0, read, timed=True)

    def capture_resident_sequence(self, steps: Any, clears: Any = ()) -> Captured:
        """``steps`` checked once and replayed by ``.run(...)`` (vyre/backends/captured.py)."""
        return self._sequences.capture(steps, list(clears))

    def run_pipeline(self, pipeline: Pipeline, inputs: Any) -> list[np.ndarray]:
        """An op pipeline in one submission; the outputs of ``vyre.backends.schedule.run_pipeline``."""
        return self._pipelines.run(pipeline, inputs)


__all__ = ["WgpuBackend"]
