"""Asynchronous dispatch.

``dispatch_async`` checks a dispatch, hands its Work to :meth:`~.executor.Executor.launch`
(submitted, its readback buffer being mapped) and returns a :class:`PendingDispatch` at once;
``done()`` asks without blocking, ``wait(timeout)`` returns the outputs. Each dispatch in
flight owns its device buffers, params uniform, bind groups and readback buffer (a
:class:`Slot`), taken from a small pool keyed by pipeline and size classes and given back by
``wait``, so several can be in flight at once and a steady stream of them creates no GPU
object. Its inputs are written with ``queue.write_buffer`` (that does not block, unlike
mapping a shared staging buffer).

A pending dispatch remembers the device generation it was submitted on: after a device
loss its ``wait`` raises DeviceLostError.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from ...errors import DeviceLostError, DispatchError
from ...ir.types import Access
from ..host import params_words, storage_to_host
from .dispatcher import host_outputs
from .failures import gpu_errors
from .work import Dispatch, Pass, Read, Work, Write

IDLE_PER_KEY = 4
IDLE_KEYS = 32
_POLL_SLICE_S = 0.05


def _size_class(nbytes: int) -> int:
    need = max(16, (nbytes + 15) // 16 * 16)
    return 1 << (need - 1).bit_length()


def _to_host(decl, count: int, view: np.ndarray) -> np.ndarray:
    return storage_to_host(decl, view, count)


def _bytes4(data: np.ndarray) -> np.ndarray:
    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    if raw.nbytes % 4:
        raw = np.concatenate([raw, np.zeros(4 - raw.nbytes % 4, np.uint8)])
    return raw


@dataclass
class Slot:
    """Everything one dispatch in flight owns."""

    key: tuple
    compiled: object
    buffers: list  # per program buffer
    params: object
    bind_groups: tuple
    readback: object


@dataclass
class SlotPool:
    generation: int
    idle: OrderedDict = field(default_factory=OrderedDict)  # slot key -> [Slot]


class PendingDispatch:
    """A submitted dispatch. ``done()`` never blocks; ``wait(timeout=None)`` returns the outputs
    (and raises DispatchError on timeout, after which waiting again is fine)."""

    def __init__(self, runner: AsyncRunner, program, slot=None, launched=None, outputs=None):
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
                if not self._lost() and self._launched.settled(max(0.0, left)):
                    break
            if deadline is not None and time.monotonic() >= deadline:
                raise DispatchError(f"dispatch of {self.program.name!r} did not finish within {timeout} s "
                                    "(it is still running)",
                                    fix="call wait() again, with a larger timeout or none")
        return self._collect()

    def _fail(self, err: BaseException):
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

    def __init__(self, dev, store, dispatcher, executor, stats):
        self.dev = dev
        self._store = store
        self._dispatcher = dispatcher
        self._ex = executor
        self._stats = stats
        self._pool: SlotPool | None = None

    def launch(self, program, inputs, config) -> PendingDispatch:
        from .sequence import as_config

        dev = self.dev
        dev.check_alive()
        config = as_config(config)
        self._store.validate(program)
        plan, workgroups = self._dispatcher.plan(program, inputs, config)
        compiled = self._store.compiled(program)
        if plan.total_workgroups == 0:
            return PendingDispatch(self, program, outputs=host_outputs(plan))
        with dev.lock:
            dev.check_alive()
            slot = self._take(compiled, plan)
            writes = [Write(slot.buffers[b.index], 0, _bytes4(b.data)) for b in plan.buffers
                      if b.data is not None and b.data.nbytes]
            writes.append(Write(slot.params, 0, params_words(plan)))
            clears = [(slot.buffers[b.index], 0, b.nbytes) for b in plan.outputs if b.data is None]
            x, y, z = workgroups
            step = Dispatch(compiled.pipeline, slot.bind_groups, workgroups, x * y * z)
            reads = [Read(slot.buffers[b.index], 0, b.nbytes, convert=partial(_to_host, b.decl, b.count))
                     for b in plan.outputs]
            work = Work(label=config.label or f"vyre-async:{program.name}", writes=writes,
                        passes=[Pass([step], clears)], reads=reads, program=program.name, wgsl=compiled.wgsl)
            launched = self._ex.launch(work, slot.readback)
            self._stats.bump("dispatches_async")
            return PendingDispatch(self, program, slot, launched)

    def _slots(self) -> SlotPool:
        pool = self._pool
        if pool is None or pool.generation != self.dev.generation:
            pool = self._pool = SlotPool(self.dev.generation)
        return pool

    def _take(self, compiled, plan) -> Slot:
        cap = int(self.dev.limits["max-storage-buffer-binding-size"])
        sizes = tuple(b.nbytes if b.decl.access is Access.UNIFORM else min(_size_class(b.nbytes), max(b.nbytes, cap))
                      for b in plan.buffers)
        out_bytes = sum((b.nbytes + 15) // 16 * 16 for b in plan.outputs)
        key = (compiled.key, sizes, _size_class(out_bytes), len(params_words(plan)))
        idle = self._slots().idle.get(key)
        while idle:
            slot = idle.pop()
            if slot.compiled is compiled:
                return slot
        with gpu_errors(self.dev, compiled.program_name):
            return self._new(key, compiled, plan, sizes, _size_class(out_bytes))

    def _new(self, key, compiled, plan, sizes, rb_size: int) -> Slot:
        import wgpu

        BU, device = wgpu.BufferUsage, self.dev.device
        name = compiled.program_name
        buffers = []
        for b, size in zip(plan.buffers, sizes):
            uniform = b.decl.access is Access.UNIFORM
            usage = (BU.UNIFORM | BU.COPY_DST) if uniform else (BU.STORAGE | BU.COPY_SRC | BU.COPY_DST)
            buffers.append(device.create_buffer(label=f"vyre-async:{name}.{b.decl.name}",
                                                size=max(16, (size + 15) // 16 * 16), usage=usage))
        words = params_words(plan)
        params = device.create_buffer(label=f"vyre-async:{name}._vyre", size=max(16, words.nbytes),
                                      usage=BU.UNIFORM | BU.COPY_DST)
        readback = device.create_buffer(label=f"vyre-async:{name}:readback", size=rb_size,
                                        usage=BU.MAP_READ | BU.COPY_DST)
        self._stats.bump("buffers_created", len(buffers) + 2)
        groups = []
        for g, slots in enumerate(compiled.groups):
            entries = []
            for s in slots:
                buf = params if s.index < 0 else buffers[s.index]
                entries.append({"binding": s.binding, "resource": {"buffer": buf, "offset": 0, "size": buf.size}})
            groups.append(device.create_bind_group(label=f"vyre-async:{name}:g{g}",
                                                   layout=compiled.group_layouts[g], entries=entries))
            self._stats.bump("bind_groups_created")
        return Slot(key, compiled, buffers, params, tuple(groups), readback)

    def give_back(self, slot: Slot) -> None:
        pool = self._slots()
        idle = pool.idle.setdefault(slot.key, [])
        pool.idle.move_to_end(slot.key)
        if len(idle) < IDLE_PER_KEY:
            idle.append(slot)
        while len(pool.idle) > IDLE_KEYS:
            pool.idle.popitem(last=False)


__all__ = ["AsyncRunner", "PendingDispatch"]
