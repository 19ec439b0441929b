"""Evaluating lazy arrays: one generated program per pending tree, all of them in one submission.

* :func:`program_for` builds (or finds) the program of a tree, cached by its structural key
  (:func:`vyre.array._kernels.nodes.collect`) in the registry's ``fused`` family (vyre/array/_kernels/
  cache.py): a loop repeating one expression builds nothing after the first time. The vec4 variant is
  vyre/array/_kernels/vec4.py.
* :func:`plan` orders the pending arrays (cut-out subtrees first) into resident steps; :func:`evaluate`
  runs them with one ``dispatch_resident_sequence``. Kernels that need materialised inputs call
  ``plan(arrays, backend, nodes)``, append their own steps to ``plan.steps`` and call ``plan.run()`` (one
  submission). The work is keyed by buffers, not arrays: a cut-out leaf captured its array's buffer and
  expression when it was recorded (:class:`vyre.array._kernels.nodes.Leaf`), so mutating the array later changes
  nothing a pending expression reads, and shared work is computed once.
* Tree limits (:data:`MAX_NODES`, :data:`MAX_LEAVES`): an operation whose tree would pass them cuts its
  largest lazy operand out as a leaf (materialised first, in the same submission). So a 10,000-op chain
  becomes ~10,000/64 kernels of bounded size, with no recursion on deep trees.
* :func:`fusion_stats`: the registry's build and hit totals, the kernels dispatched and the submissions.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ...ir.builder import ProgramBuilder
from ...ir.program import Program
from . import cache
from .dtypes import ir_type
from .emit import Emitter
from .nodes import Leaf, Map, Node, collect, scalar_words
from .vec4 import vec4_program

if TYPE_CHECKING:
    from ...backends.base import Backend
    from .._array import Array, Buffer

MAX_NODES = 64  # nodes per fused tree (shared subtrees counted each time they are read)
MAX_LEAVES = 6  # distinct input buffers: 6 + parameters + output = 8, WebGPU's default per-stage limit
WORKGROUP = 256

_lock = threading.Lock()
_stats = {"kernels_dispatched": 0, "submissions": 0}


def fusion_stats() -> dict[str, int]:
    """Counters since start (or :func:`reset_fusion_stats`): ``kernels_built`` (programs and pipelines
    generated: the misses of every family of the program-cache registry), ``program_cache_hits``,
    ``kernels_dispatched``, ``submissions`` (one per evaluation). Per family: ``_kernels.cache.stats()``."""
    built, hits = cache.totals()
    with _lock:
        return {"kernels_built": built, "kernels_dispatched": _stats["kernels_dispatched"],
                "submissions": _stats["submissions"], "program_cache_hits": hits}


def reset_fusion_stats() -> None:
    """Zero the counters of :func:`fusion_stats` (cached programs stay cached)."""
    cache.reset_stats()
    with _lock:
        for k in _stats:
            _stats[k] = 0


_programs = cache.register("fused", 1024, Program)


def program_for(node: Node) -> tuple[Program, list[Leaf], bytes | None]:
    """The program computing ``node`` into an ``out`` buffer (one invocation per element, grid from
    ``out``), its leaf arrays (binding order) and the parameter words (None without scalars)."""
    c = collect(node)

    def build() -> Program:  # the vec4 variant where valid: a function of the key (see vec4.py)
        vec = vec4_program(node, WORKGROUP)
        if vec is not None:
            return vec
        b = ProgramBuilder("array_fused", WORKGROUP)
        e = Emitter(b, node)
        n = node.count
        out = b.buffer("out", ir_type(node.dtype), "write", count=max(1, n))
        b.set_grid_from(out)
        i = b.global_index()
        with b.if_(i < b.lit(n, "u32")):
            out[i] = e.value(i)
        return b.build()

    prog = _programs.get(c.key, build)
    return prog, c.leaves, scalar_words(c.scalars) if c.scalars else None


MAX_GROUP = 4  # outputs of one multi-output kernel (an optimizer step: parameter and two moments)
GROUP_NODES = 4 * MAX_NODES  # nodes of all its trees together (shared subtrees emitted once per tree)
_groups = cache.register("fused_group", 256, Program)


def group_program(nodes: list[Node]) -> tuple[Program, list[Leaf], bytes | None]:
    """One program computing every tree of ``nodes`` (same element count, none reading another's buffer)
    into buffers ``out0``, ``out1``, ... after the shared leaves and parameters: the kernel an optimizer
    step's parameter and moments fuse into. Cached by the trees' structural key like :func:`program_for`."""
    group = Map("__group__", tuple(nodes), nodes[0].dtype, nodes[0].shape)  # only its leaves/scalars/key
    c = collect(group)

    def build() -> Program:
        b = ProgramBuilder("array_fused_multi", WORKGROUP)
        e = Emitter(b, group)
        n = nodes[0].count
        outs = [b.buffer(f"out{k}", ir_type(m.dtype), "write", count=max(1, n)) for k, m in enumerate(nodes)]
        b.set_grid_from(outs[0])
        i = b.global_index()
        with b.if_(i < b.lit(n, "u32")):
            for out, m in zip(outs, nodes):
                out[i] = e._emit(m, i)
        return b.build()

    prog = _groups.get(c.key, build)
    return prog, c.leaves, scalar_words(c.scalars) if c.scalars else None


def storage_limit(be: Any) -> int:
    """The storage buffers one kernel may bind on ``be`` (its device's limit; 8, WebGPU's default, where
    a backend does not say). Asked once per backend and kept on it (an id-keyed table could outlive it)."""
    got = getattr(be, "_vyre_storage_limit", None)
    if got is None:
        got = int(getattr(be.capabilities(), "max_storage_buffers_per_stage", 8))
        try:
            be._vyre_storage_limit = got
        except AttributeError:  # a backend with slots: asked again next time (a frozen dataclass read)
            pass
    return int(got)


def _joinable(group: list[tuple[Buffer, Node]], buf: Buffer, node: Node, limit: int = 8) -> bool:
    """Whether ``node`` (filling ``buf``) can join the multi-output kernel of ``group``."""
    if not group:
        return True
    first = group[0][1]
    if (node.count != first.count or len(group) >= MAX_GROUP
            or sum(m.size for _, m in group) + node.size > GROUP_NODES):
        return False
    members = {id(b) for b, _ in group} | {id(buf)}
    if any(not members.isdisjoint(m.leaf_ids) for _, m in group) or not members.isdisjoint(node.leaf_ids):
        return False  # one reads another's buffer: a kernel of its own, after
    leaves = frozenset().union(node.leaf_ids, *(m.leaf_ids for _, m in group))
    scalars = bool(node.scalars) or any(m.scalars for _, m in group)
    # the device's storage buffers: leaves, parameters, outputs, and llvmpipe's loop-trap buffer if a loop
    trap = any(_loops(m) for m in (node, *(m for _, m in group)))
    return len(leaves) + int(scalars) + len(group) + 1 + int(trap) <= limit


def _loops(node: Node) -> bool:
    """Whether ``node``'s kernel code has a loop (integer ``pow``: square and multiply): llvmpipe's loop
    trap then binds one more storage buffer."""
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, Map) and n.op == "pow" and n.dtype.kind in "iu":
            return True
        todo.extend(n.children())
    return False


def cut(args: list[Node], arrays: list[Any]) -> list[Node]:
    """Children for a new node: while the tree would pass the limits, replace the largest inlined lazy
    operand (``arrays[k]`` is the Array behind ``args[k]``, or None for a scalar) by a Leaf of it."""
    args = list(args)
    while True:
        size = 1 + sum(a.size for a in args)
        leaves = frozenset().union(*(a.leaf_ids for a in args))
        if size <= MAX_NODES and len(leaves) <= MAX_LEAVES:
            return args
        k = max((k for k, a in enumerate(args) if not isinstance(a, Leaf) and arrays[k] is not None),
                key=lambda k: args[k].size, default=None)
        if k is None:
            return args  # only leaves: nothing more to cut (at most one leaf per operand)
        args[k] = Leaf(arrays[k])


@dataclass
class Plan:
    """Resident steps materialising pending arrays, then any steps a caller appends; ``run`` submits them
    all at once, marks the buffers filled and the arrays materialised; ``temps`` (handles a caller adds)
    are freed after it."""

    backend: Backend
    steps: list[Any] = field(default_factory=list)
    done: list[Any] = field(default_factory=list)  # arrays to commit after run
    filled: list[Any] = field(default_factory=list)  # Buffers whose pending expression the steps compute
    temps: list[Any] = field(default_factory=list)  # handles to free after run

    def bind(self, source: Emitter | Node) -> list[Any]:
        """The handles for the buffers an Emitter of ``source`` (an Emitter, or its node) declared: its
        leaves, then its parameter buffer (the backend's ``params_handle``); put them in a step in that order."""
        c = source if isinstance(source, Emitter) else collect(source)
        handles = [leaf.handle() for leaf in c.leaves]
        if c.scalars:
            handles.append(self.backend.params_handle(scalar_words(c.scalars)))
        return handles

    def run(self, read: list[Any] | None = None) -> list[np.ndarray]:
        got: list[np.ndarray] = []
        try:
            if self.steps:
                got = self.backend.dispatch_resident_sequence(self.steps, read)
                with _lock:
                    _stats["submissions"] += 1
                    _stats["kernels_dispatched"] += len(self.steps)
            for buf in self.filled:  # only after success: on failure the work stays pending
                buf.pending = None
            for a in self.done:
                a._commit()
        finally:
            for h in self.temps:
                self.backend.free_resident(h)
            self.done, self.steps, self.temps, self.filled = [], [], [], []
        return got


def _pending_leaves(node: Node, out: list[Buffer]) -> None:
    """Append the pending buffers ``node``'s leaves read."""
    for leaf in node.leafseq:
        if leaf.buf.pending is not None:
            out.append(leaf.buf)


def pending_buffers(nodes: Sequence[Node]) -> list[Buffer]:
    """The pending buffers (lazy arrays cut out as leaves) that ``nodes`` read directly."""
    out: list[Buffer] = []
    for node in nodes:
        _pending_leaves(node, out)
    return out


@dataclass(frozen=True)
class Deferred:
    """Work that fills a buffer, recorded but not submitted (a buffer's ``pending``, like an expression):
    ``build(plan, handle)`` appends the steps writing ``handle`` to ``plan``; ``nodes`` are the trees
    those steps fuse (their pending leaves are computed first, in the same plan). A kernel that returns
    a new array defers itself this way, so its consumer's submission includes it: ``float(x.sum())`` is
    one submission and one wait (the reduction and the download of its result)."""

    nodes: tuple[Node, ...]
    build: Callable[[Plan, Any], None]
    fills: tuple[Buffer, ...] = ()  # every buffer the steps fill (work shared by several outputs: built once)


def defer(out: Array, nodes: Sequence[Node], build: Callable[[Plan, Any], None], *, zeroed: bool = True) -> Array:
    """Make ``out`` (a new array) pending on ``build`` (see :class:`Deferred`); returns ``out``.
    ``zeroed=False``: the steps write every element of ``out`` (a reused buffer is not cleared first)."""
    out._allocate(zeroed)
    assert out._buf is not None and out._expr is None
    out._buf.pending = Deferred(tuple(nodes), build)
    return out


def _deps(pending: Node | Deferred) -> list[Buffer]:
    return pending_buffers(pending.nodes if isinstance(pending, Deferred) else [pending])


def _pending_order(roots: list[Buffer]) -> list[Buffer]:
    """``roots`` and the pending buffers their expressions need, each once, dependencies first."""
    order: list[Buffer] = []
    seen: set[int] = set()
    stack: list[tuple[Buffer, bool]] = [(b, False) for b in reversed(roots)]
    while stack:
        buf, expanded = stack.pop()
        if expanded:
            order.append(buf)
            continue
        if id(buf) in seen or buf.pending is None:
            continue
        seen.add(id(buf))
        stack.append((buf, True))
        deps = _deps(buf.pending)
        stack.extend((d, False) for d in deps if id(d) not in seen)
    return order


def plan(arrays: list[Array], backend: Backend | None = None, nodes: Sequence[Node] = ()) -> Plan:
    """A :class:`Plan` that materialises every pending array among ``arrays`` and the pending leaves
    ``nodes`` read (and whatever those need). ``backend``: that of the arrays (given when ``arrays`` may
    be empty)."""
    be: Any = backend if backend is not None else (arrays[0].device if arrays else None)
    p = Plan(be)
    if len(arrays) == 1 and not nodes:  # the common case: one fresh tree over materialised leaves
        a = arrays[0]
        expr = a._expr
        if (expr is not None and a._buf is None and expr.count
                and all(leaf.buf.pending is None for leaf in expr.leafseq)):
            a._allocate()
            assert a._buf is not None
            p.done.append(a)
            p.filled.append(a._buf)
            prog, leaves, words = program_for(expr)
            handles = [leaf.buf.handle for leaf in leaves]
            if words is not None:
                handles.append(be.params_handle(words))
            handles.append(a._buf.handle)
            p.steps.append((prog, handles))
            return p
    roots: list[Buffer] = []
    for a in arrays:
        if a._expr is not None:
            a._allocate()
            assert a._buf is not None
            p.done.append(a)
            roots.append(a._buf)  # already filled through a leaf when its pending is None: commit only
        elif a._buf is not None and a._buf.pending is not None:
            roots.append(a._buf)  # deferred work
    roots.extend(pending_buffers(nodes))
    built: set[int] = set()
    limit = storage_limit(be)
    # consecutive independent trees of one element count share a kernel (several outputs): an optimizer's
    # new parameter and moments are one dispatch, not three
    group: list[tuple[Buffer, Node]] = []
    for buf in _pending_order(roots):
        node = buf.pending
        assert node is not None
        p.filled.append(buf)
        if isinstance(node, Deferred):
            _flush(p, group)
            if id(node) not in built:
                built.add(id(node))
                node.build(p, buf.handle)
                p.filled.extend(node.fills)
            continue
        if node.count == 0:
            continue
        if not _joinable(group, buf, node, limit):
            _flush(p, group)
        group.append((buf, node))
    _flush(p, group)
    return p


def _flush(p: Plan, group: list[tuple[Buffer, Node]]) -> None:
    """Append the step(s) of ``group`` (one tree: its own program; several: one multi-output kernel); empty it."""
    if not group:
        return
    be = p.backend
    if len(group) == 1:
        buf, node = group[0]
        prog, leaves, words = program_for(node)
    else:
        prog, leaves, words = group_program([n for _, n in group])
    handles = [leaf.handle() for leaf in leaves]
    if words is not None:
        handles.append(be.params_handle(words))
    p.steps.append((prog, [*handles, *(b.handle for b, _ in group)]))
    group.clear()


def plan_for_node(node: Node, backend: Backend) -> Plan:
    """A :class:`Plan` that materialises only the lazy arrays cut out of ``node`` (its pending leaves),
    not ``node`` itself: a consumer that fuses ``node`` into its own program (an
    :class:`~vyre.array._kernels.emit.Emitter`) starts from this, appends its step(s) with ``plan.bind(emitter)``
    and calls ``run`` -- one submission."""
    return plan([], backend, [node])


def evaluate(arrays: list[Array]) -> None:
    """Materialise ``arrays`` (and what they need) in one submission. This submits and returns: it does
    not wait for the device (a download, ``np.asarray(x)``, or ``backend.flush()`` waits)."""
    pending = [a for a in arrays if a.is_lazy]
    if pending:
        plan(pending).run()


def download(array: Array) -> np.ndarray:
    """``array``'s buffer as raw bytes (uint8; the storage layout of vyre.backends.host). Pending work is
    submitted with the read: one submission and one wait."""
    if array.is_lazy:
        p = plan([array])
        h = array._allocate()
        if p.steps:
            return p.run([h])[0]
        p.run()  # nothing to compute (filled through a leaf, or empty): commit only
    return array.device.download_resident(array._storage())


def explain(array: Array) -> str:
    """What evaluating ``array`` would run now: the number of kernels and each program's text."""
    if not array.is_lazy:
        return "materialised: 0 kernels"
    p = plan([array])  # built, never run: nothing is marked done
    try:
        parts = [f"{len(p.steps)} kernel(s) in one submission"]
        for k, step in enumerate(p.steps):
            prog, handles = step[0], step[1]
            parts.append(f"-- kernel {k}: {prog.name} over {len(handles)} buffer(s), "
                         f"fingerprint {prog.fingerprint[:12]}\n{prog.to_text()}")
    finally:
        for h in p.temps:
            p.backend.free_resident(h)
    return "\n".join(parts)


__all__ = ["fusion_stats", "reset_fusion_stats", "program_for", "plan", "plan_for_node", "Plan",
           "evaluate",
           "pending_buffers", "Deferred", "defer", "download",
           "explain", "cut",
           "MAX_NODES", "MAX_LEAVES"]
