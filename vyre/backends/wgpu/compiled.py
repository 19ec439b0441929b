"""The public results of compilation: :class:`CompiledProgram` (an artifact, defined backend-neutrally
in :mod:`vyre.backends.artifact`) and :class:`PersistentPipeline` (a pinned pipeline for repeated dispatch)."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import DispatchError
from ...ir.program import Program
from ..artifact import CompiledProgram

if TYPE_CHECKING:  # why: annotations only; the backend module imports this one
    from .backend import WgpuBackend
    from .pipelines import CompiledPipeline


class PersistentPipeline:
    """A compiled pipeline pinned in its backend's cache (never evicted) for repeated dispatch.

    ``dispatch(inputs, config=None)`` skips the cache lookup. After
    ``invalidate_pipeline_cache`` or a device recovery the pipeline is rebuilt (and pinned
    again) on the next dispatch. ``release()`` (or leaving a ``with`` block) unpins it.
    """

    def __init__(self, backend: WgpuBackend, pipeline: CompiledPipeline) -> None:
        self._backend = backend
        self._pipeline = pipeline
        assert pipeline.artifact is not None  # compile_persistent pins the pipeline of an artifact
        self.compiled: CompiledProgram = pipeline.artifact
        self.released = False
        art = self.compiled  # a frozen artifact: its fields, as the artifact's own attributes
        self.program: Program = art.program
        self.fingerprint: str = art.fingerprint
        self.wgsl: str = art.wgsl
        self.bindings: tuple[Any, ...] = art.bindings

    @property
    def pinned(self) -> bool:
        """True while the pipeline is pinned in the backend's cache."""
        b = self._backend
        with b.lock:
            return (not self.released and b._store.cache.get(self._pipeline.key) is self._pipeline
                    and self._pipeline.pins > 0)

    def dispatch(self, inputs: Any = None, config: Any = None) -> list[np.ndarray]:
        return self._backend._dispatch_persistent(self, inputs, config)

    def pipeline(self, config: Any = None) -> CompiledPipeline:
        """The pinned GPU pipeline; rebuilt from the artifact (and pinned again) after an invalidation or a
        device recovery. DispatchError once released."""
        b = self._backend
        if self.released:
            raise DispatchError(f"persistent pipeline {self.compiled.name!r} was released",
                                fix="call backend.compile_persistent(program) again")
        store = b._store
        with b.lock:
            p = self._pipeline
            if store.cache.get(p.key) is not p:  # invalidated, or a new device
                p = store.pipeline_for(self.compiled)
                p.pins += 1
                self._pipeline = p
            return p

    def release(self) -> None:
        with self._backend.lock:
            if not self.released:
                self.released = True
                self._pipeline.pins = max(0, self._pipeline.pins - 1)

    def __enter__(self) -> PersistentPipeline:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self.released else "pinned"
        return f"PersistentPipeline({self.compiled.name!r}, {state})"


__all__ = ["CompiledProgram", "PersistentPipeline"]
