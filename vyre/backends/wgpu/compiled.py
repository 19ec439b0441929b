"""The public results of compilation: :class:`CompiledProgram` (an artifact, defined backend-neutrally
in :mod:`vyre.backends.artifact`) and :class:`PersistentPipeline` (a pinned pipeline for repeated dispatch)."""

from __future__ import annotations

from ..artifact import CompiledProgram


class PersistentPipeline:
    """A compiled pipeline pinned in its backend's cache (never evicted) for repeated dispatch.

    ``dispatch(inputs, config=None)`` skips the cache lookup. After
    ``invalidate_pipeline_cache`` or a device recovery the pipeline is rebuilt (and pinned
    again) on the next dispatch. ``release()`` (or leaving a ``with`` block) unpins it.
    """

    def __init__(self, backend, pipeline):
        self._backend = backend
        self._pipeline = pipeline
        self.compiled: CompiledProgram = pipeline.artifact
        self.released = False

    @property
    def program(self):
        return self.compiled.program

    @property
    def fingerprint(self) -> str:
        return self.compiled.fingerprint

    @property
    def wgsl(self) -> str:
        return self.compiled.wgsl

    @property
    def bindings(self) -> tuple:
        return self.compiled.bindings

    @property
    def pinned(self) -> bool:
        """True while the pipeline is pinned in the backend's cache."""
        b = self._backend
        with b.lock:
            return (not self.released and b._store.cache.get(self._pipeline.key) is self._pipeline
                    and self._pipeline.pins > 0)

    def dispatch(self, inputs=None, config=None):
        return self._backend._dispatch_persistent(self, inputs, config)

    def pipeline(self, config=None):
        """The pinned GPU pipeline; rebuilt from the artifact (and pinned again) after an invalidation or a
        device recovery. DispatchError once released."""
        from ...errors import DispatchError

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

    def __exit__(self, *exc) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "released" if self.released else "pinned"
        return f"PersistentPipeline({self.compiled.name!r}, {state})"


__all__ = ["CompiledProgram", "PersistentPipeline"]
