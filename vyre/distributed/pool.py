"""The adapter pool: one worker actor per WebGPU adapter, on one machine or across a Ray cluster.

``local_pool()`` starts Ray on this machine (unless it runs already) with one worker per adapter of
the host; ``Pool()`` joins a running cluster and places its workers by the custom resource
``vyre_adapter`` (``ray start --resources '{"vyre_adapter": N}'`` on each node). Workers are Ray
actors with ``max_restarts``/``max_task_retries``: a worker that dies is restarted and its unfinished
calls run again. See docs/distributed.md.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ArgumentTypeError, DistributedError, InvalidArgumentError
from . import arrays
from ._ray import INSTALL_FIX, as_vyre_error, ray
from .batch import BatchRun
from .placement import RESOURCE, host_adapters
from .worker import AdapterWorker

DEFAULT_TIMEOUT_S = 600.0


def _positive(name: str, value: Any, kind: type = int) -> Any:
    """``value`` when it is a positive ``kind``: another type is an ArgumentTypeError, a value <= 0 an
    InvalidArgumentError (issue 27's rule: also the TypeError/ValueError Python code expects)."""
    typed = isinstance(value, (int, float) if kind is float else int) and not isinstance(value, bool)
    if not typed or not value > 0:
        err = InvalidArgumentError if typed else ArgumentTypeError
        raise err(f"{name} must be a positive {kind.__name__}, got {value!r}", fix=f"pass {name}=1 or more")
    return value


class Pool:
    """Worker actors on a running Ray cluster, one per ``vyre_adapter`` unit (or ``actors`` of them).

    ``address``: passed to ``ray.init`` when this process is not connected yet (``"auto"``: the local
    node's cluster). ``adapters``: one entry per worker: an adapter index, ``None`` (claim a free adapter
    of the node the worker lands on; such workers ask Ray for one ``vyre_adapter`` unit) or ``"default"``.
    ``timeout_s`` bounds every wait; ``max_restarts`` is Ray's restart budget per worker;
    ``chunk_bytes``/``chunk_jobs`` bound one worker call of a batch; ``node_id`` pins every worker to
    that Ray node (``local_pool`` pins them to this one)."""

    def __init__(self, actors: int | None = None, *, address: str | None = None,
                 adapters: list[int | str | None] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                 max_restarts: int = 3, chunk_bytes: int = 64 << 20, chunk_jobs: int = 32,
                 backend_kwargs: dict | None = None, node_id: str | None = None) -> None:
        r = ray()
        self.timeout_s = float(_positive("timeout_s", timeout_s, float))
        self.chunk_bytes = _positive("chunk_bytes", chunk_bytes)
        self.chunk_jobs = _positive("chunk_jobs", chunk_jobs)
        if isinstance(max_restarts, bool) or not isinstance(max_restarts, int):
            raise ArgumentTypeError(f"max_restarts must be an int >= 0, got {max_restarts!r}",
                                    fix="pass max_restarts=3")
        if max_restarts < 0:
            raise InvalidArgumentError(f"max_restarts must be an int >= 0, got {max_restarts!r}",
                                       fix="pass max_restarts=3")
        if adapters is not None and not adapters:
            raise InvalidArgumentError("a pool needs at least one worker, got adapters=[]", fix="pass adapters=[0]")
        self._owns_ray = False
        if not r.is_initialized():
            try:
                r.init(address=address, ignore_reinit_error=True, logging_level="warning")
            except Exception as exc:  # noqa: BLE001 - no cluster at that address, bad address...
                raise DistributedError(f"could not connect to the Ray cluster {address!r}: {exc}",
                                       fix="start it with `ray start --head --resources '{\"vyre_adapter\": N}'`, "
                                           "or use vyre.distributed.local_pool() on one machine") from None
            self._owns_ray = True  # address=None started a local instance: stop it with the pool
        if adapters is None:
            if actors is None:
                actors = int(r.cluster_resources().get(RESOURCE, 0))
                if actors == 0:
                    if self._owns_ray:
                        r.shutdown()
                    raise DistributedError(f"no node of the Ray cluster offers the {RESOURCE!r} resource",
                                           fix=f"start each node with `ray start --resources '{{\"{RESOURCE}\": N}}'` "
                                               "(N: its adapters), or pass adapters=[...]")
            adapters = [None] * _positive("actors", actors)
        remote = r.remote(AdapterWorker)
        self._workers = []
        for a in adapters:
            opts: dict[str, Any] = {"num_cpus": 0, "max_restarts": max_restarts, "max_task_retries": max_restarts}
            if a is None:
                opts["resources"] = {RESOURCE: 1}
            if node_id is not None:
                from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # why: optional (Ray)

                opts["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
            self._workers.append(remote.options(**opts).remote(a, backend_kwargs))
        self._known: list[set[str]] = [set() for _ in self._workers]
        self._closed = False
        try:
            self._call_all("ready", lambda w: w.programs.remote())
        except BaseException:
            self.shutdown()
            raise

    # ---- plumbing ----------------------------------------------------------------------------------
    @property
    def size(self) -> int:
        """Number of workers."""
        return len(self._workers)

    @property
    def workers(self) -> list[Any]:
        """The workers' Ray actor handles, in pool order (shard order)."""
        return list(self._workers)

    def _check_open(self) -> None:
        if self._closed:
            raise DistributedError("this pool was shut down", fix="start a new pool")

    def _call_all(self, what: str, call: Any) -> list:
        r = ray()
        refs = [call(w) for w in self._workers]
        try:
            return list(r.get(refs, timeout=self.timeout_s))
        except Exception as exc:  # noqa: BLE001 - Ray's failures become vyre errors
            raise as_vyre_error(exc, f"{what} ({self.size} worker(s))") from None

    def call_each(self, fn: Any, args: list[tuple[Any, ...]] | None = None, *, what: str = "call") -> list:
        """``fn(backend, state, *args[k])`` on worker k (every worker; ``args`` one tuple per worker, or
        None: no arguments), in parallel; the results in pool order. A VyreError raised in a worker is
        raised here as it is (see :meth:`AdapterWorker.call`)."""
        self._check_open()
        if args is not None and len(args) != self.size:
            raise InvalidArgumentError(f"call_each: {len(args)} argument tuples for {self.size} workers",
                                       fix="one tuple per worker (pool.size)")
        per = args if args is not None else [()] * self.size
        got = iter(per)
        answers = self._call_all(what, lambda w: w.call.remote(fn, *next(got)))
        out = []
        for status, value in answers:
            if status != "ok":
                raise value
            out.append(value)
        return out

    # ---- batches -----------------------------------------------------------------------------------
    def submit_batch(self, jobs: Any) -> BatchRun:
        """Start ``jobs`` on the workers and return at once; ``.result()`` waits (see :meth:`dispatch_batch`)."""
        self._check_open()
        return BatchRun(self, jobs)

    def dispatch_batch(self, jobs: Any, *, timeout_s: float | None = None) -> list:
        """One result per ``(program, inputs[, config])`` job, in the caller's order: its outputs, or the
        VyreError it raised, as ``WgpuBackend.dispatch_batch``. Jobs are spread over the workers by
        estimated bytes; each program's wire bytes travel once per worker."""
        return self.submit_batch(jobs).result(timeout_s)

    def map(self, program: Any, inputs: Any, config: Any = None, *, timeout_s: float | None = None) -> list:
        """``[outputs of program on x for x in inputs]``; raises the first job's error, as ``map`` would."""
        results = self.dispatch_batch([(program, x, config) for x in inputs], timeout_s=timeout_s)
        for out in results:
            if isinstance(out, BaseException):
                raise out
        return results

    # ---- sharded array operations (vyre/distributed/arrays.py) ---------------------------------------
    def elementwise(self, op: str, *xs: Any, timeout_s: float | None = None, **kwargs: Any) -> Any:
        """An elementwise ``vyre.ops`` op (``"zip.add"``, ``"map_sqrt"``...) over rows split across workers."""
        return arrays.elementwise(self, op, xs, kwargs, timeout_s)

    def matmul(self, a: Any, b: Any, *, timeout_s: float | None = None) -> np.ndarray:
        """``a @ b`` (f32): rows of ``a`` split across workers, ``b`` put in the object store once."""
        return arrays.matmul(self, a, b, timeout_s)

    def reduce(self, op: str, x: Any, *, timeout_s: float | None = None) -> np.ndarray:
        """``sum``/``prod``/``min``/``max`` of all of ``x``: per-worker partials combined in shard order."""
        return arrays.reduce(self, op, x, timeout_s)

    def scan(self, x: Any, *, exclusive: bool = False, timeout_s: float | None = None) -> np.ndarray:
        """Prefix sum of flattened ``x``: per-shard inclusive scans plus the preceding shards' totals."""
        return arrays.scan(self, x, exclusive, timeout_s)

    def sort(self, x: Any, *, timeout_s: float | None = None) -> np.ndarray:
        """Ascending sort of u32 keys: per-shard ``sort.radix``, then a k-way merge on the host."""
        return arrays.sort(self, x, timeout_s)

    # ---- observability and lifecycle -------------------------------------------------------------
    def stats(self) -> list[dict]:
        """Every worker's ``stats()`` (host, pid, adapter index and name, programs held, device recoveries,
        and the backend's counters under ``"backend"``); a worker that does not answer gets ``"error"``."""
        self._check_open()
        r = ray()
        out = []
        for i, w in enumerate(self._workers):
            try:
                out.append({"worker": i, **r.get(w.stats.remote(), timeout=self.timeout_s)})
            except Exception as exc:  # noqa: BLE001 - report, do not raise: stats are for diagnosis
                err = as_vyre_error(exc, f"stats of worker {i}")
                out.append({"worker": i, "error": f"{err.code}: {err.message}"})
        return out

    def shutdown(self) -> None:
        """Stop the workers (and Ray, when :func:`local_pool` started it). Idempotent."""
        if self._closed:
            return
        self._closed = True
        r = ray()
        for w in self._workers:
            try:
                r.kill(w, no_restart=True)
            except Exception:  # noqa: BLE001, S110 - already gone
                pass
        if self._owns_ray and r.is_initialized():
            r.shutdown()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        return f"vyre.distributed.Pool({self.size} worker(s){', shut down' if self._closed else ''})"


def local_pool(actors: int | None = None, *, num_cpus: int | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
               max_restarts: int = 3, **kwargs: Any) -> Pool:
    """A pool on this machine: Ray started here (``num_cpus``, no dashboard) unless this process is
    connected already, and one worker per adapter of the host (:func:`~vyre.distributed.placement.host_adapters`).

    ``actors`` picks the number of workers: on a host with one adapter (lavapipe, one GPU) several
    workers share it; on a host with several, workers take the adapters in turn. The pool stops Ray
    on ``shutdown()`` when it started it."""
    r = ray()
    indices = host_adapters()
    count = len(indices) if actors is None else _positive("actors", actors)
    started = False
    if not r.is_initialized():
        try:
            r.init(num_cpus=num_cpus, include_dashboard=False, ignore_reinit_error=True, logging_level="warning",
                   resources={RESOURCE: len(indices)})
        except Exception as exc:  # noqa: BLE001 - Ray could not start here
            raise DistributedError(f"could not start Ray on this machine: {exc}", fix=INSTALL_FIX) from None
        started = True
    try:
        pool = Pool(adapters=[indices[i % len(indices)] for i in range(count)], timeout_s=timeout_s,
                    max_restarts=max_restarts, node_id=r.get_runtime_context().get_node_id(), **kwargs)
    except BaseException:
        if started:
            r.shutdown()
        raise
    pool._owns_ray = started
    return pool
