"""The worker: one Ray actor per adapter, holding one ``WgpuBackend`` and the programs it was sent.

A plain class (Ray wraps it with ``ray.remote`` when a pool starts), so this module imports neither Ray
nor wgpu. Programs arrive once as canonical wire bytes under their fingerprint, which is checked
again here; later calls name the fingerprint only. A call that names a program this worker does not
hold (it was restarted and lost its memory) is answered ``("missing", fingerprints)`` and the pool
sends the bytes again. Device loss: ``try_recover()`` and one more attempt; a second loss is
answered ``("lost", DeviceLostError)``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import DeviceLostError, DistributedError, VyreError
from ._ray import from_worker
from .placement import AdapterClaim, claim_adapter, describe_host

if TYPE_CHECKING:
    from ..backends.wgpu import WgpuBackend

#: One job of a worker call: (position in the caller's batch, fingerprint, inputs, config).
WireJob = tuple[int, str, Any, Any]


class AdapterWorker:
    """Runs dispatch batches and ``vyre.ops`` calls on one adapter.

    ``adapter``: an adapter index, ``None`` to claim a free one of this host (cluster placement, see
    :mod:`vyre.distributed.placement`), or ``"default"`` for ``WgpuBackend.acquire()``'s choice.
    ``backend_kwargs`` go to the backend's constructor."""

    def __init__(self, adapter: int | str | None = None, backend_kwargs: dict | None = None) -> None:
        from ..backends.wgpu import WgpuBackend  # why: import time (wgpu loads in the worker, not at import)

        self._claim: AdapterClaim | None = None
        kwargs = dict(backend_kwargs or {})
        self.backend: WgpuBackend
        if adapter == "default":
            self.backend = WgpuBackend.acquire(**kwargs)
        else:
            if adapter is None:
                self._claim = claim_adapter()
                adapter = self._claim.index
            self.backend = WgpuBackend.acquire_adapter(int(adapter), **kwargs)
        self._programs: dict[str, Any] = {}
        self._recoveries = 0
        self.state: dict[str, Any] = {}  # what functions sent with call() keep here (a model replica...)

    # ---- programs ------------------------------------------------------------------------------
    def _register(self, fingerprint: str, wire: bytes) -> VyreError | None:
        """Read and keep one program; the error it gives instead (malformed, fingerprint mismatch)."""
        from ..ir.program import Program  # why: import time (pydantic and the IR, loaded in the worker)

        try:
            program = Program.from_wire(wire)
        except VyreError as exc:
            return exc
        if program.fingerprint != fingerprint:
            return DistributedError(
                f"program {program.name!r} arrived with fingerprint {fingerprint[:16]}... but its wire bytes "
                f"hash to {program.fingerprint[:16]}...: corrupted in transit or sent by a mismatched vyre",
                fix="use the same vyre version on every node of the cluster")
        self._programs[fingerprint] = program
        return None

    def programs(self) -> list[str]:
        """Fingerprints of the programs this worker holds."""
        return sorted(self._programs)

    # ---- work ----------------------------------------------------------------------------------
    def _with_recovery(self, fn: Callable[[], Any]) -> tuple[str, Any]:
        for attempt in (0, 1):
            try:
                return "ok", fn()
            except DeviceLostError as exc:
                if attempt == 1:
                    return "lost", exc
                try:
                    self.backend.try_recover()
                    self._recoveries += 1
                except DeviceLostError as again:
                    return "lost", again
        raise AssertionError("unreachable")  # the loop always returns

    def run_batch(self, wire: dict[str, bytes], jobs: list[WireJob]) -> tuple[str, Any]:
        """``("ok", [(position, outputs or VyreError), ...])``, ``("missing", [fingerprint, ...])`` or
        ``("lost", DeviceLostError)``. ``wire`` holds the programs sent with this call."""
        refused: dict[str, VyreError] = {}
        for fp, data in wire.items():
            if fp not in self._programs:
                err = self._register(fp, data)
                if err is not None:
                    refused[fp] = err
        missing = sorted({fp for _, fp, _, _ in jobs if fp not in self._programs and fp not in refused})
        if missing:
            return "missing", missing
        runnable = [(pos, fp, inputs, config) for pos, fp, inputs, config in jobs if fp not in refused]
        batch = [(self._programs[fp], inputs) if config is None else (self._programs[fp], inputs, config)
                 for _, fp, inputs, config in runnable]
        status, outs = self._with_recovery(lambda: self.backend.dispatch_batch(batch))
        if status != "ok":
            return status, outs
        answer = [(pos, refused[fp]) for pos, fp, _, _ in jobs if fp in refused]
        answer += [(pos, out) for (pos, _, _, _), out in zip(runnable, outs)]
        return "ok", answer

    def run_op(self, name: str, kwargs: dict, *arrays: Any) -> tuple[str, Any]:
        """``vyre.ops.<name>(backend, *arrays, **kwargs)``: ``("ok", result)``, ``("lost", DeviceLostError)``
        or ``("error", the VyreError it raised)``, whose message names this worker (:meth:`where`); the
        pool raises it to the caller as it is (same class, message and fix), not wrapped by Ray."""
        from .. import ops  # why: import time (every op, loaded in the worker)

        fn = getattr(ops, name)
        try:
            return self._with_recovery(lambda: fn(self.backend, *arrays, **kwargs))
        except VyreError as exc:
            return "error", from_worker(exc, self.where())

    def call(self, fn: Callable[..., Any], *args: Any) -> tuple[str, Any]:
        """``fn(backend, state, *args)`` in this worker (``fn`` pickled by Ray: a module-level function or a
        closure cloudpickle can send), with this worker's backend current for ``vyre.array``: ``("ok",
        result)``, or ``("error", the VyreError it raised)`` naming this worker. ``state`` is a dict kept
        between calls (lost if the worker is restarted)."""
        from ..array._device import use  # why: import time (vyre.array, loaded in the worker)

        try:
            with use(self.backend):
                return "ok", fn(self.backend, self.state, *args)
        except VyreError as exc:
            return "error", from_worker(exc, self.where())

    def where(self) -> str:
        """``host H (pid P), adapter A``: this worker, as the errors it raises name it."""
        from ..backends.wgpu.adapter import describe  # why: import time (wgpu)

        host = describe_host()
        try:
            adapter = f"{self.backend.adapter_index}: {describe(self.backend.adapter_info)}"
        except Exception:  # noqa: BLE001 - a description only: never hide the error being reported
            adapter = "?"
        return f"host {host['host']} (pid {host['pid']}), adapter {adapter}"

    # ---- observability and test hooks -------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """The backend's ``stats()`` with this worker's host, pid, adapter index and name."""
        from ..backends.wgpu.adapter import describe  # why: import time (wgpu)

        info = self.backend.adapter_info
        return {**describe_host(), "adapter_index": self.backend.adapter_index, "adapter": describe(info),
                "adapter_info": info, "programs": len(self._programs), "recoveries": self._recoveries,
                "backend": self.backend.stats()}

    def lose_device(self) -> None:
        """Test hook: destroy the device as a driver reset would (the next call recovers)."""
        self.backend.force_device_lost()

    def sleep(self, seconds: float) -> None:
        """Test hook: keep this worker busy (a stand-in for a hung device) for ``seconds``."""
        time.sleep(seconds)
