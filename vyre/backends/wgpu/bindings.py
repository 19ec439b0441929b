"""The Bindings part of the wgpu backend: the one place that turns a compiled pipeline, buffers and
parameter words into bound GPU state.

* :meth:`Bindings.params` is the one params-uniform cache: parameter words (a plan's hidden
  uniform, an array evaluation's scalars, a kernel's dims) -> a buffer written once, at creation
  while mapped (no queue work), never written again, so every user of the same words shares it.
  Host-data jobs, resident dispatches, async dispatches and the front ends' ``params_handle`` use
  it; a repeated dispatch writes no params and its bind groups stay valid.
* :func:`group_entries` / :meth:`Bindings.bind_group` / :meth:`Bindings.bind_all` make every bind
  group (jobs keep theirs per job slot and rebuild one only when its entries change; resident
  dispatches cache them by buffer serials; async slots own theirs).
* :attr:`Bindings.pool` is the buffer pool every binding's buffer comes from, and
  :meth:`Bindings.plan_limits` the checked limits every plan uses (:mod:`vyre.backends.planning`).

State belongs to one device generation and is dropped as a whole when the device changes. Callers
hold the device lock.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from ..planning import PlanLimits
from .device import Device
from .failures import gpu_errors
from .native import NativeCalls, native_calls
from .pipelines import CompiledPipeline
from .pool import BufferPool
from .transfer import Stats, align
from .types import GPUBindGroup, GPUBuffer

#: Bytes of the loop trap's buffer (vyre.lower.trap.TRAP_NBYTES; vyre.lower loads only when lowering).
TRAP_NBYTES = 16
#: Distinct parameter words kept (least recently used dropped; bind groups made with one keep it alive).
PARAMS_CAP = 256

#: One bind group entry: (binding number, buffer, bound size).
Entry = tuple[int, GPUBuffer, int]


def group_entries(compiled: CompiledPipeline, g: int, buffers: Sequence[GPUBuffer | None], params: GPUBuffer | None,
                  size_of: Callable[[int, GPUBuffer], int] | None = None,
                  trap: GPUBuffer | None = None) -> tuple[Entry, ...]:
    """The entries of bind group ``g`` of ``compiled``: program buffer ``k`` bound from ``buffers[k]``
    (``size_of(k, buffer)`` bytes, else the whole buffer), the hidden params uniform from ``params``, the
    loop trap's buffer (slot index -2, on adapters that cut loops short) from ``trap``."""
    out = []
    for s in compiled.groups[g]:
        if s.index < 0:
            hidden = params if s.index == -1 else trap
            assert hidden is not None, "a pipeline with a hidden binding needs its buffer"
            out.append((s.binding, hidden, hidden.size))
        else:
            buf = buffers[s.index]
            assert buf is not None, "every program buffer is bound"
            out.append((s.binding, buf, buf.size if size_of is None else size_of(s.index, buf)))
    return tuple(out)


class Bindings:
    """Params uniforms, bind groups and pooled buffers of one backend (see the module docstring)."""

    def __init__(self, dev: Device, pool: BufferPool, stats: Stats) -> None:
        self._dev = dev
        self._native: NativeCalls | Literal[False] | None = None  # looked up on first use (False: none)
        self.pool = pool
        self._stats = stats
        self._generation = -1
        self._params: OrderedDict[bytes, GPUBuffer] = OrderedDict()
        self._limits: PlanLimits | None = None
        self._trap: GPUBuffer | None = None

    def _current(self) -> None:
        gen = self._dev.generation
        if gen != self._generation:  # a new device: the old one's buffers are gone with it
            self._generation = gen
            self._params = OrderedDict()
            self._limits = None
            self._trap = None

    def trap(self) -> GPUBuffer | None:
        """The loop trap's buffer (vyre/lower/trap.py) on an adapter that cuts loops short, else None: one
        per device, zero until a loop reaches the cap; the executor reads and clears it with every readback."""
        self._current()
        if self._trap is None and self._dev.loop_cap is not None:
            import wgpu  # why: import time (the backend imports wgpu lazily: `import vyre` stays light)

            BU = wgpu.BufferUsage
            with gpu_errors(self._dev):
                self._trap = self._dev.device.create_buffer(label="vyre-loop-trap", size=TRAP_NBYTES,
                                                            usage=BU.STORAGE | BU.COPY_SRC | BU.COPY_DST)
            self._stats.bump("buffers_created")
        return self._trap

    def plan_limits(self) -> PlanLimits:
        """The limits plans on this device are checked against (computed once per device)."""
        self._current()
        lim = self._limits
        if lim is None:
            lim = self._limits = PlanLimits.of(self._dev.limits, self._dev.loop_cap)
        return lim

    # ---- the params uniform -----------------------------------------------------------------------
    def params(self, words: bytes | np.ndarray) -> GPUBuffer:
        """The buffer holding ``words`` (16-byte aligned, at least 16 bytes); bind it, never write it."""
        key = words if isinstance(words, bytes) else words.tobytes()
        self._current()
        cache = self._params
        buf = cache.get(key)
        if buf is not None:
            cache.move_to_end(key)
            return buf
        import wgpu  # the backend imports wgpu lazily: `import vyre` stays light

        BU = wgpu.BufferUsage
        size = max(16, align(len(key), 16))
        # STORAGE and COPY_SRC too: a front end binds it as any buffer of its program and may read it back
        data = np.zeros(size, np.uint8)
        data[: len(key)] = np.frombuffer(key, np.uint8)
        with gpu_errors(self._dev):  # reached from checks that run before any GPU work: a vyre error too
            buf = self._dev.device.create_buffer(label="vyre-params", size=size, mapped_at_creation=True,
                                                 usage=BU.UNIFORM | BU.STORAGE | BU.COPY_SRC | BU.COPY_DST)
            buf.write_mapped(data)
            buf.unmap()
        self._stats.bump("buffers_created")
        self._stats.bump("params_buffers_created")
        cache[key] = buf
        while len(cache) > PARAMS_CAP:
            cache.popitem(last=False)
        return buf

    # ---- bind groups --------------------------------------------------------------------------------
    def bind_group(self, compiled: CompiledPipeline, g: int, entries: Sequence[Entry], label: str) -> GPUBindGroup:
        """A new bind group ``g`` of ``compiled`` with ``entries`` (one direct wgpu-native call where the
        native gate is open: native.NativeCalls.bind_group)."""
        name, layout = f"{label}:g{g}", compiled.group_layouts[g]
        nat = self._native
        if nat is None:
            nat = self._native = native_calls() or False
        group = nat.bind_group(self._dev.device, layout, entries, name) if nat else None
        if group is None:
            group = self._dev.device.create_bind_group(
                label=name, layout=layout,
                entries=[{"binding": b, "resource": {"buffer": buf, "offset": 0, "size": size}}
                         for b, buf, size in entries])
        self._stats.bump("bind_groups_created")
        return group

    def bind_all(self, compiled: CompiledPipeline, buffers: Sequence[GPUBuffer | None], params: GPUBuffer | None,
                 label: str, size_of: Callable[[int, GPUBuffer], int] | None = None) -> tuple[GPUBindGroup, ...]:
        """Every bind group of ``compiled`` over ``buffers`` and ``params`` (see :func:`group_entries`)."""
        trap = self.trap()
        return tuple(self.bind_group(compiled, g, group_entries(compiled, g, buffers, params, size_of, trap), label)
                     for g in range(len(compiled.groups)))


__all__ = ["Bindings", "group_entries", "PARAMS_CAP", "Entry"]
