"""What the decomposition kernels (linalg_lu.py, linalg_qr.py, linalg_jacobi.py) share: one workgroup per
matrix of a batch, the matrix in global memory, a loop over the algorithm's steps whose range comes from a
small uniform buffer, and the split of those steps into several dispatches of one submission.

Why the split: llvmpipe (lavapipe) silently ends an invocation's loops after 65,535 iterations in all
(vyre/ir/trips.py). Each kernel states the loop iterations one invocation runs in each step (an upper
bound, :func:`chunks` adds one per loop entered), and the steps are cut into ranges of at most
:data:`TRIP_BUDGET` iterations, one dispatch each. The range [begin, end) is the uniform ``prm`` buffer
(``params_handle``: one shared handle per distinct range; a long factorization uploads its own, freed
after the submission, since the shared ones are an LRU of 256), so the step loop and every barrier inside it are
in workgroup-uniform control flow. The same programs run everywhere (the reference backend and the H200
too): the split is a function of the shape only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...backends.config import DispatchConfig
from ...ir.builder import ProgramBuilder
from ...ir.values import BufRef, Val
from .fused import Plan

TRIP_BUDGET = 40_000  # of llvmpipe's 65,535: room for the per-step overheads the estimates leave out
MAX_GRID = 65_535  # workgroups per grid dimension (WebGPU's default limit, lavapipe's)
SHARED_RANGES = 32  # step ranges of one call taken from the backend's shared parameter handles


def workgroup_for(n: int) -> int:
    """Threads per matrix: 64 for small matrices (a batch fills the device with workgroups), up to 256."""
    return 64 if n <= 64 else 128 if n <= 128 else 256


def per(count: int, wg: int) -> int:
    """Iterations of a loop spreading ``count`` items over ``wg`` threads (plus the loop's entry)."""
    return -(-max(count, 0) // wg) + 1


def chunks(costs: Sequence[int], budget: int | None = None) -> list[tuple[int, int]]:
    """Consecutive step ranges [begin, end) whose summed per-step ``costs`` (loop iterations of one
    invocation, the step loop's own included) stay within ``budget`` (default :data:`TRIP_BUDGET`; a
    step costing more runs alone)."""
    budget = TRIP_BUDGET if budget is None else budget
    out: list[tuple[int, int]] = []
    begin, acc = 0, 0
    for k, c in enumerate(costs):
        c += 1
        if k > begin and acc + c > budget:
            out.append((begin, k))
            begin, acc = k, 0
        acc += c
    if begin < len(costs):
        out.append((begin, len(costs)))
    return out


def grid_of(nb: int) -> tuple[int, int]:
    """The (x, y) workgroup grid for ``nb`` matrices (y when the batch passes 65,535)."""
    gx = min(nb, MAX_GRID)
    return gx, -(-nb // gx)


@dataclass
class Kernel:
    """A decomposition program being built: ``b``, its threads ``wg``, ``t`` (this thread), ``z`` (this
    workgroup's matrix) and the step range ``lo``/``hi`` (uniform)."""

    b: ProgramBuilder
    wg: int
    t: Val
    z: Val
    lo: Val
    hi: Val
    red: BufRef  # workgroup scratch for reductions (wg values of the matrix type)
    red_i: BufRef  # and their u32 indexes (argmax)

    def params(self) -> None:
        """Declare the range uniform (after the kernel's own buffers: it is bound last)."""
        prm = self.b.buffer("prm", "u32", "uniform", count=4)
        self.lo, self.hi = self.b.let(prm[0], name="lo"), self.b.let(prm[1], name="hi")

    def reduce_sum(self, v: Val) -> Val:
        """The sum over the workgroup of each thread's ``v`` (a tree in workgroup memory, unrolled; every
        thread must call it); the result is read by every thread after the last barrier."""
        b, t = self.b, self.t
        self.red[t] = v
        b.barrier()
        s = self.wg // 2
        while s >= 1:
            with b.if_(t < s):
                self.red[t] = self.red[t] + self.red[t + s]
            b.barrier()
            s //= 2
        total = b.let(self.red[0])
        b.barrier()  # every thread has read it before the scratch is reused
        return total

    def reduce_argmax(self, v: Val, i: Val) -> tuple[Val, Val]:
        """(max, its index) over the threads' (``v`` >= 0, ``i``) pairs; the first index on ties."""
        b, t = self.b, self.t
        self.red[t] = v
        self.red_i[t] = i
        b.barrier()
        s = self.wg // 2
        while s >= 1:
            with b.if_(t < s):
                a, c = self.red[t], self.red[t + s]
                ia, ic = self.red_i[t], self.red_i[t + s]
                take = b.let((c > a) | ((c == a) & (ic < ia)))
                self.red[t] = b.select(take, c, a)
                self.red_i[t] = b.select(take, ic, ia)
            b.barrier()
            s //= 2
        best, at = b.let(self.red[0]), b.let(self.red_i[0])
        b.barrier()
        return best, at


def start(name: str, wg: int, ty: str, nb: int) -> Kernel:
    """A new decomposition program: declare its buffers on ``k.b``, then :meth:`Kernel.params` (the range
    uniform, bound last), then record the steps inside ``with k.b.for_range(k.lo, k.hi) as s``."""
    b = ProgramBuilder(name, wg)
    red = b.workgroup_array("red", ty, wg)
    red_i = b.workgroup_array("red_i", "u32", wg)
    gx, _ = grid_of(nb)
    z = b.let(b.workgroup_id(0) + b.workgroup_id(1) * b.lit(gx, "u32"), name="z")
    t = b.let(b.local_index(), name="t")
    zero = b.lit(0, "u32")
    return Kernel(b, wg, t, z, zero, zero, red, red_i)


def steps(p: Plan, prog: Any, handles: list[Any], nb: int, costs: Sequence[int]) -> None:
    """Append ``prog``'s dispatches over ``handles`` (+ the range uniform) to ``p``, the steps split by
    ``costs`` (:func:`chunks`), one workgroup per matrix."""
    grid = DispatchConfig.coerce((*grid_of(nb), 1))
    ranges = chunks(costs)
    be = p.backend
    for lo, hi in ranges:
        words = np.array([lo, hi, 0, 0], np.uint32)
        if len(ranges) <= SHARED_RANGES:
            h = be.params_handle(words)
        else:  # the backend's shared parameter handles are an LRU (256): more would free the first ones
            h = be.allocate_resident(words.nbytes, zeroed=False)
            be.upload_resident(h, words)
            p.temps.append(h)  # freed after the submission
        p.steps.append((prog, [*handles, h], grid))


def eps_of(ty: str) -> float:
    """The unit roundoff of the IR float type ``ty``."""
    return float(np.finfo(np.float64 if ty == "f64" else np.float16 if ty == "f16" else np.float32).eps)


def ilog2(n: int) -> int:
    return max(1, math.ceil(math.log2(max(n, 2))))


__all__ = ["TRIP_BUDGET", "workgroup_for", "per", "chunks", "grid_of", "Kernel", "start", "steps", "eps_of", "ilog2"]
