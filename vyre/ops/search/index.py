"""FlatIndex: a FAISS-style flat (brute-force) index whose database lives on the device.

``index = FlatIndex(backend, dim, metric="ip"|"l2")``; ``index.add(vectors)`` appends (f32, shape
(m, dim)); ``D, I = index.search(queries, k)`` gives the k best per query (``D`` f32 (q, k):
inner products, or **squared** L2 distances; ``I`` u32 (q, k) database rows, in add order; ties:
lower index first); ``index.ntotal``; ``index.reset()`` empties it and frees the device memory.
Works on every backend with resident buffers (``WgpuBackend``, ``ReferenceBackend``).

Searches run the ``search.knn`` kernels (``_knn``, ``_plan``: distances and top-k fused, the
distance matrix never in memory; ``1 <= k <= ntotal``, in rounds of 64 results beyond k = 64) over
resident buffers: only the queries go up and only D and I come back. The programs depend on
``dim``, ``k`` and the metric, not on the sizes, so a growing index compiles nothing new. For
``l2`` the database's squared norms are kept next to it, recomputed on the device after each add.

Growth doubles the capacity: a new buffer, the old rows copied on the device, the old buffer
freed. Every argument is checked before any device work, and a call that raises leaves the index
as it was (``ntotal`` and the stored vectors).
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from ...backends.base import Backend
from ...backends.config import DispatchConfig
from ...backends.host import storage_nbytes
from ...errors import DispatchError
from ...ir.builder import ProgramBuilder
from ...ir.program import Program
from ._checks import check_dim, check_k, check_metric, check_vectors
from ._knn import WG, knn_grids, norms_program, vec4_rows
from ._plan import search_plan

MIN_CAPACITY = 64  # rows


@cache
def _copy_program() -> Program:
    """dst[i] = src[i] for the first len(dst) u32 words: the device-side copy when the index grows."""
    b = ProgramBuilder("search_index_copy", WG)
    src = b.buffer("src", "u32")
    dst = b.buffer("dst", "u32", access="read_write")
    b.set_grid_from(dst)
    i = b.global_index()
    with b.if_(i < dst.len()):
        dst[i] = src[i]
    return b.build()


class FlatIndex:
    """A flat index of ``dim``-dimensional f32 vectors on ``backend`` (module doc)."""

    def __init__(self, backend: Backend, dim: int, metric: str = "ip") -> None:
        self.dim = check_dim("FlatIndex", dim)
        self.metric = check_metric("FlatIndex", metric)
        caps = backend.capabilities()
        if not caps.resident:
            raise DispatchError(f"FlatIndex needs resident buffers; backend {caps.backend!r} has none",
                                fix="use WgpuBackend or ReferenceBackend")
        self.backend = backend
        self._max_bytes = int(caps.max_storage_buffer_bytes)
        self._words = self.dim // 4 if vec4_rows(self.dim) else self.dim  # buffer elements per row
        self._ntotal = 0
        self._capacity = 0
        self._db: Any = None  # resident handle: capacity x dim f32
        self._norms: Any = None  # resident handle: capacity f32 (l2 only)

    @property
    def ntotal(self) -> int:
        """Number of vectors in the index."""
        return self._ntotal

    def __repr__(self) -> str:
        return f"FlatIndex(dim={self.dim}, metric={self.metric!r}, ntotal={self._ntotal})"

    # ---- adding -------------------------------------------------------------------------
    def add(self, vectors: np.ndarray) -> None:
        """Append ``vectors`` (float32, shape (m, dim), finite); they get indices ntotal .. ntotal+m-1."""
        x = check_vectors("FlatIndex.add", "vectors", vectors, self.dim, allow_empty=True)
        m = x.shape[0]
        if m == 0:
            return
        need = self._ntotal + m
        if need * self.dim * 4 > self._max_bytes:
            raise DispatchError(f"FlatIndex.add: {need} vectors of dim {self.dim} take {need * self.dim * 4} bytes, "
                                f"over this backend's storage buffer limit of {self._max_bytes} bytes",
                                fix="split the database over several indexes (shards) and merge their results")
        if need > self._capacity:
            self._grow(max(need, 2 * self._capacity, MIN_CAPACITY))
        self.backend.upload_resident(self._db, x, self._ntotal * self.dim * 4)
        if self.metric == "l2":
            grid = knn_grids(need, 1, 1)["xnorm"]
            self.backend.dispatch_resident(norms_program(self.dim), [self._db, self._norms],
                                           DispatchConfig(grid=grid, counts={"x": need * self._words, "out": need}))
        self._ntotal = need

    def _grow(self, capacity: int) -> None:
        """Move the rows into buffers of ``capacity`` rows (copied on the device); on failure the old
        buffers stay in place."""
        capacity = min(capacity, self._max_bytes // (self.dim * 4))
        be = self.backend
        db = be.allocate_resident(capacity * self.dim * 4, label="FlatIndex.database")
        norms = None
        try:
            if self.metric == "l2":
                norms = be.allocate_resident(capacity * 4, label="FlatIndex.norms")
            if self._ntotal:
                words = self._ntotal * self.dim
                be.dispatch_resident(_copy_program(), [self._db, db],
                                     DispatchConfig(grid=-(-words // WG), counts={"src": words, "dst": words}))
        except BaseException:
            be.free_resident(db)
            if norms is not None:
                be.free_resident(norms)
            raise
        self._free()
        self._db, self._norms, self._capacity = db, norms, capacity

    # ---- searching ----------------------------------------------------------------------
    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """The k best database vectors of each query: ``(D, I)``, float32 and uint32 arrays of shape
        (q, k), best first (ip: largest inner product; l2: smallest squared distance)."""
        if self._ntotal == 0:
            raise DispatchError("FlatIndex.search: the index is empty", fix="index.add(vectors) before searching")
        qs = check_vectors("FlatIndex.search", "queries", queries, self.dim)
        k = check_k("FlatIndex.search", k, self._ntotal)
        q, n = qs.shape[0], self._ntotal
        plan = search_plan(n, self.dim, q, k, self.metric, database_norms=False)
        be = self.backend
        own = {"database": self._db, "xnorm": self._norms}  # the index's resident buffers
        sizes = {name: storage_nbytes(dtype, count) for name, (dtype, count) in plan.buffers.items()
                 if name not in own}
        for name, nbytes in sizes.items():
            if nbytes > self._max_bytes:
                raise DispatchError(f"FlatIndex.search: {q} queries need a {nbytes}-byte {name} buffer, over the "
                                    f"storage buffer limit of {self._max_bytes} bytes",
                                    fix="search fewer queries per call")
        h: dict[str, Any] = {}
        try:
            for name, nbytes in sizes.items():
                h[name] = be.allocate_resident(nbytes, label=f"FlatIndex.{name}")
            be.upload_resident(h["queries"], qs)
            handles = {**h, **own}
            steps = []
            for program, bind, grid in plan.steps:
                counts = {decl.name: plan.buffers[name][1] for decl, name in zip(program.sorted_buffers, bind)}
                steps.append((program, [handles[name] for name in bind], DispatchConfig(grid=grid, counts=counts)))
            raw_d, raw_i = be.dispatch_resident_sequence(steps, read=[h["distances"], h["indices"]])
        finally:
            for handle in h.values():
                be.free_resident(handle)
        return raw_d.view(np.float32).reshape(q, k).copy(), raw_i.view(np.uint32).reshape(q, k).copy()

    # ---- lifetime -----------------------------------------------------------------------
    def reset(self) -> None:
        """Remove every vector and free the device memory (the index stays usable)."""
        self._free()
        self._db = self._norms = None
        self._ntotal = self._capacity = 0

    def _free(self) -> None:
        for handle in (self._db, self._norms):
            if handle is not None:
                self.backend.free_resident(handle)


__all__ = ["FlatIndex"]
