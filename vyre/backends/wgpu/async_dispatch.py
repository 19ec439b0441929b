"""Asynchronous dispatch.

``dispatch_async`` checks a dispatch, hands its Work to :meth:`~.executor.Executor.launch`
(submitted, its readback buffer being mapped) and returns a :class:`PendingDispatch` at once;
``done()`` asks without blocking, ``wait(timeout)`` returns the outputs. Each dispatch in
flight owns its device buffers (from the backend's buffer pool), bind groups and readback buffer
(a :class:`Slot`), kept in a small pool keyed by pipeline and size classes and given back by
``wait``, so several can be in flight at once and a steady stream of them creates no GPU
object; the params uniform is the shared one of :class:`~.bindings.Bindings` for its words.
Its inputs are written with ``queue.write_buffer`` (that does not block, unlike mapping a
shared staging buffer).

A pending dispatch remembers the device generation it was submitted on: after a device
loss its ``wait`` raises DeviceLostError.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NoReturn

import numpy as np

from ...errors import DeviceLostError, DispatchError
from ...ir.program import BufferDecl, Program
from ...ir.types import Access
from ..config import DispatchConfig
from ..host import DispatchPlan, storage_to_host
from .bindings import Bindings
from .device import Device
from .dispatcher import Dispatcher, host_outputs
from .executor import Executor, Launched
from .failures import gpu_errors
from .pipeline_store import PipelineStore
from .pipelines import CompiledPipeline
from .pool import size_class
from .transfer import Stats, as_bytes4
from .types import GPUBindGroup, GPUBuffer
from .work import Dispatch, Pass, Read, Work, Write

IDLE_PER_KEY = 4
IDLE_KEYS = 32
_POLL_SLICE_S = 0.05


def _to_host(decl: BufferDecl, count: int, view: np.ndarray) -> np.ndarray:
    return storage_to_host(decl, view, count)


@dataclass
class Slot:
    """Everything one dispatch in flight owns (its params uniform is shared: Bindings.params)."""

    key: tuple[Any, ...]
    compiled: CompiledPipeline
    buffers: list[GPUBuffer]  # per program buffer, from the buffer pool
    bind_groups: tuple[GPUBindGroup, ...]
    readback: GPUBuffer


@dataclass
class SlotPool:
    generation: int
    idle: OrderedDict[tuple[Any, ...], list[Slot]] = field(default_factory=OrderedDict)  # slot key -> [Slot]


class PendingDispatch:
    """A submitted dispatch. ``done()`` never blocks; ``wait(timeout=None)`` returns the outputs
    (and raises DispatchError on timeout, after which waiting again is fine)."""

    def __init__(self, runner: AsyncRunner, program: Program, slot: Slot | None = None,
                 launched: Launched | None = None, outputs: list[np.ndarray] | None = None) -> None:
        self._runner = runner
        self.program = program
        self._slot, self._launched = slot, launched
        self._generation = runner.dev.generation
        self._outputs = outputs
        self._error: BaseException | None = None

    def __repr__(self) -> str:
        state = "done" if self._outputs is not None else ("failed" if self._error else "pending")
        return f"PendingDispatch({self.program.name!r}, {state})"

    def _lost(self) -> bool:
        dev = self._runner.dev
        return dev.generation != self._generation or dev.lost

    def done(self) -> bool:
        """True once ``wait`` would return (or raise) without blocking."""
        if self._outputs is not None or self._error is not None or self._lost():
            return True
        with self._runner.dev.lock:
            assert self._launched is not None  # None only with outputs (returned above)
            return self._lost() or self._launched.settled(0)

    def wait(self, timeout: float | None = None) -> list[np.ndarray]:
        if self._outputs is not None:
            return self._outputs
        if self._error is not None:
            raise self._error
        deadline = None if timeout is None else time.monotonic() + max(0.0, float(timeout))
        dev = self._runner.dev
        while True:
            if self._lost():
                if dev.closed:
                    try:
                        dev.check_open()  # raises BackendError: shut down
                    except Exception as exc:  # noqa: BLE001
                        self._fail(exc)
                self._fail(DeviceLostError(f"dispatch of {self.program.name!r} was in flight when the GPU device "
                                           "was lost; its results are gone",
                                           fix="call backend.try_recover() and dispatch again"))
            left = _POLL_SLICE_S if deadline is None else min(_POLL_SLICE_S, deadline - time.monotonic())
            with dev.lock:
                if self._outputs is not None:
                    return self._outputs
                assert self._launched is not None  # None only with outputs (returned above)
                if not self._lost() and self._launched.settled(max(0.0, left)):
                    break
            if deadline is not None and time.monotonic() >= deadline:
                raise DispatchError(f"dispatch of {self.program.name!r} did not finish within {timeout} s "
                                    "(it is still running)",
                                    fix="call wait() again, with a larger timeout or none")
        return self._collect()

    def _fail(self, err: BaseException) -> NoReturn:
        self._error = err
        self._slot = None
        raise err

    def _collect(self) -> list[np.ndarray]:
        runner = self._runner
        with runner.dev.lock:
            if self._outputs is not None:  # another thread collected them meanwhile
                return self._outputs
            if self._error is not None:
                raise self._error
            if self._lost():
                self._fail(DeviceLostError(f"the GPU device was lost before the results of {self.program.name!r} "
                                           "were read", fix="call backend.try_recover() and dispatch again"))
            assert self._launched is not None and self._slot is not None  # None only with outputs (returned above)
            try:
                outs = self._launched.results()
            except Exception as exc:  # noqa: BLE001 - already a vyre error (the executor translated it)
                self._fail(exc)
            runner.give_back(self._slot)
            self._slot = None
            self._outputs = outs
            return outs


class AsyncRunner:
    """Builds the Work of async dispatches on their own slots and launches it."""

    def __init__(self, dev: Device, store: PipelineStore, dispatcher: Dispatcher, executor: Executor,
                 bindings: Bindings, stats: Stats) -> None:
        self.dev = dev
        self._store = store
        self._dispatcher = dispatcher
        self._ex = executor
        self._bindings = bindings
        self._stats = stats
        self._pool: SlotPool | None = None

    def launch(self, program: Program, inputs: Any, config: DispatchConfig | None) -> PendingDispatch:
        dev = self.dev
        dev.check_alive()
        config = DispatchConfig.coerce(config) or DispatchConfig()
        self._store.validate(program)
        step = self._dispatcher.plan(program, inputs, config)
        plan, workgroups = step.plan, step.workgroups
        compiled = self._store.compiled(program)
        if plan.total_workgroups == 0:
            return PendingDispatch(self, program, outputs=host_outputs(plan))
        with dev.lock:
            dev.check_alive()
            slot = self._take(compiled, plan, step.wbytes)
            writes = [Write(slot.buffers[b.index], 0, as_bytes4(b.data)) for b in plan.buffers
                      if b.data is not None and b.data.nbytes]
            clears = [(slot.buffers[b.index], 0, b.nbytes) for b in plan.outputs if b.data is None]
            x, y, z = workgroups
            dispatch = Dispatch(compiled.pipeline, slot.bind_groups, workgroups, x * y * z)
            reads = [Read(slot.buffers[b.index], 0, b.nbytes, convert=partial(_to_host, b.decl, b.count))
                     for b in plan.outputs]
            work = Work(label=config.label or f"vyre-async:{program.name}", writes=writes,
                        passes=[Pass([dispatch], clears)], reads=reads, program=program.name, wgsl=compiled.wgsl)
            launched = self._ex.launch(work, slot.readback)
            self._stats.bump("dispatches_async")
            return PendingDispatch(self, program, slot, launched)

    def _slots(self) -> SlotPool:
        pool = self._pool
        if pool is None or pool.generation != self.dev.generation:
            pool = self._pool = SlotPool(self.dev.generation)
        return pool

    def _take(self, compiled: CompiledPipeline, plan: DispatchPlan, wbytes: bytes) -> Slot:
        limits = self.dev.limits
        caps = {"uniform": int(limits.get("max-uniform-buffer-binding-size", 65536)),
                "storage": int(limits["max-storage-buffer-binding-size"])}
        kinds = tuple("uniform" if b.decl.access is Access.UNIFORM else "storage" for b in plan.buffers)
        sizes = tuple(size_class(b.nbytes, caps[kind]) for b, kind in zip(plan.buffers, kinds))
        # 16 bytes more: the executor appends the loop trap's word on adapters that have one
        rb_size = size_class(sum((b.nbytes + 15) // 16 * 16 for b in plan.outputs) + 16)
        # the params uniform is part of the bind groups: slots with other words have other groups
        key = (compiled.key, sizes, rb_size, wbytes)
        idle = self._slots().idle.get(key)
        while idle:
            slot = idle.pop()
            if slot.compiled is compiled and self._pooled(slot):
                return slot
        with gpu_errors(self.dev, compiled.program_name):
            return self._new(key, compiled, plan, kinds, rb_size, wbytes)

    def _new(self, key: tuple[Any, ...], compiled: CompiledPipeline, plan: DispatchPlan, kinds: tuple[str, ...],
             rb_size: int, wbytes: bytes) -> Slot:
        import wgpu  # the backend imports wgpu lazily: `import vyre` stays light

        name = compiled.program_name
        limits = self.dev.limits
        pool = self._bindings.pool
        buffers = [pool.acquire(kind, b.nbytes, int(limits["max-uniform-buffer-binding-size" if kind == "uniform"
                                                           else "max-storage-buffer-binding-size"]),
                                label=f"vyre-async:{name}.{b.decl.name}")
                   for b, kind in zip(plan.buffers, kinds)]
        readback = self.dev.device.create_buffer(label=f"vyre-async:{name}:readback", size=rb_size,
                                                 usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        self._stats.bump("buffers_created")
        groups = self._bindings.bind_all(compiled, buffers, self._bindings.params(wbytes), f"vyre-async:{name}")
        return Slot(key, compiled, buffers, groups, readback)

    def give_back(self, slot: Slot) -> None:
        pool = self._slots()
        if not self._pooled(slot):  # the buffer pool was cleared (clear_cache) while it ran
            slot.readback.destroy()
            return
        idle = pool.idle.setdefault(slot.key, [])
        pool.idle.move_to_end(slot.key)
        if len(idle) < IDLE_PER_KEY:
            idle.append(slot)
        else:
            self._drop(slot)
        while len(pool.idle) > IDLE_KEYS:
            for old in pool.idle.popitem(last=False)[1]:
                self._drop(old)

    def clear(self) -> None:
        """Drop the idle slots (``clear_cache``)."""
        pool = self._slots()
        for slots in pool.idle.values():
            for slot in slots:
                self._drop(slot)
        pool.idle.clear()

    def _pooled(self, slot: Slot) -> bool:
        """Whether the buffer pool still holds the slot's buffers (clear_cache and a new device empty it)."""
        pool = self._bindings.pool
        return all(pool.owns(b) for b in slot.buffers)

    def _drop(self, slot: Slot) -> None:
        """A slot no longer kept: its buffers go back to the pool, its readback buffer is destroyed."""
        if self._pooled(slot):
            for buf in slot.buffers:
                self._bindings.pool.release(buf)
        slot.readback.destroy()


__all__ = ["AsyncRunner", "PendingDispatch"]
