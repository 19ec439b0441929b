"""A command encoder recorded through wgpu-native's entry points: clears, copies, compute passes (one set_pipeline
/ set_bind_group per change) and timestamp resolves, for :class:`~.native.NativeDriver`'s ``recorder()``.

Behind native.py's version gate: a :class:`NativeRecorder` is made by the native driver alone, so this module
is reached only through that gate. Dispatches encoded many times (:class:`~.work.Encoded`) are turned into a
flat list of (entry point, arguments) once and replayed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .types import CData, GPUBuffer, GPUDevice, GPUQuerySet
from .work import Dispatch, Encoded

if TYPE_CHECKING:  # why: annotations only; native.py imports this module
    from .native import NativeCalls


class NativeRecorder:
    """A command encoder being recorded through wgpu-native (created inside a ``checked()`` region)."""

    __slots__ = ("_nat", "_h", "_desc", "_label")

    def __init__(self, nat: NativeCalls, device: GPUDevice, label: str) -> None:
        self._nat = nat
        self._label = label
        self._desc = nat.descriptors(label)
        self._h: CData = None
        self._h = nat.create_encoder(device._internal, self._desc[0])

    def clear(self, buffer: GPUBuffer, offset: int, size: int) -> None:
        self._nat.clear(self._h, buffer._internal, offset, size)

    def copy(self, src: GPUBuffer, src_offset: int, dst: GPUBuffer, dst_offset: int, size: int) -> None:
        self._nat.copy(self._h, src._internal, src_offset, dst._internal, dst_offset, size)

    def resolve(self, query_set: GPUQuerySet, count: int, dst: GPUBuffer, offset: int) -> None:
        self._nat.resolve(self._h, query_set._internal, 0, count, dst._internal, offset)

    def compute_pass(self, dispatches: Iterable[Dispatch], timer: tuple[GPUQuerySet, bool, bool] | None = None) -> int:
        """One compute pass over ``dispatches`` (work.Dispatch); ``timer``: (query_set, begin, end) timestamps.
        set_pipeline / set_bind_group only when they change. Returns the number of dispatches recorded."""
        nat = self._nat
        keep: tuple[CData, CData] | None = None
        if timer is None:
            desc = self._desc[1]
        else:
            desc, keep = nat.timed_pass_descriptor(self._label, *timer)
        cpass = nat.begin_pass(self._h, desc)
        del keep
        if type(dispatches) is Encoded:
            try:
                calls = dispatches.calls
                if calls is None or calls[0] is not nat:
                    calls = dispatches.calls = (nat, *self._flat(dispatches.dispatches))
                for i in range(1, len(calls), 2):
                    calls[i](cpass, *calls[i + 1])
                nat.end_pass(cpass)
            finally:
                nat.release_pass(cpass)
            return sum(1 for d in dispatches.dispatches if d.total)
        set_pipeline, set_bind_group, dispatch, null = nat.set_pipeline, nat.set_bind_group, nat.dispatch, nat.null
        n, pipeline = 0, None
        bound: list[Any] = []
        try:
            for d in dispatches:
                if not d.total:
                    continue
                if d.pipeline is not pipeline:
                    pipeline = d.pipeline
                    set_pipeline(cpass, pipeline._internal)
                    bound = [None] * len(d.bind_groups)
                for g, bg in enumerate(d.bind_groups):
                    if bound[g] is not bg:
                        set_bind_group(cpass, g, bg._internal, 0, null)
                        bound[g] = bg
                x, y, z = d.workgroups
                dispatch(cpass, x, y, z)
                n += 1
            nat.end_pass(cpass)
        finally:
            nat.release_pass(cpass)
        return n

    def _flat(self, dispatches: Iterable[Dispatch]) -> list[Any]:
        """(entry point, arguments) pairs flattened, for dispatches encoded many times (work.Encoded): the
        same calls :meth:`compute_pass` makes, with redundant set_pipeline / set_bind_group left out. The
        Dispatch objects (kept by the Encoded) keep the pipelines and bind groups alive."""
        nat = self._nat
        out: list[Any] = []
        pipeline = None
        bound: list[Any] = []
        for d in dispatches:
            if not d.total:
                continue
            if d.pipeline is not pipeline:
                pipeline = d.pipeline
                out += (nat.set_pipeline, (pipeline._internal,))
                bound = [None] * len(d.bind_groups)
            for g, bg in enumerate(d.bind_groups):
                if bound[g] is not bg:
                    out += (nat.set_bind_group, (g, bg._internal, 0, nat.null))
                    bound[g] = bg
            out += (nat.dispatch, tuple(d.workgroups))
        return out

    def finish(self) -> CData:
        """The finished command buffer handle (submit it with :meth:`~.native.NativeDriver.submit`)."""
        return self._nat.finish(self._h, self._desc[2])

    def release(self) -> None:
        h, self._h = self._h, None
        if h is not None:
            self._nat.release_encoder(h)


__all__ = ["NativeRecorder"]
