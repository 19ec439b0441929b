"""The tiled multi-pass reduction kernel every reduction op is built from.

The input is viewed as (outer, length, inner) and reduced along ``length``; output m is
(o, c) = (m // inner, m % inner), M = outer * inner outputs. Each pass is one Step:

* a workgroup is ``wx`` outputs x ``wy`` lanes (powers of two, wx * wy = 256); the grid is
  (blocks, tiles). Lane ``ly`` of block ``blk`` folds positions blk*wy + ly, then every
  blocks*wy further (a grid-stride loop in registers). Loads are coalesced: the lanes of one
  output are adjacent invocations when rows are contiguous (inner == 1), adjacent outputs
  (consecutive columns) are when inner > 1;
* then a tree over the wy lanes in workgroup memory with a barrier per level (sequential
  addressing: at level s lanes ly < s fold in lane ly + s; unrolled at build time; lane 0
  keeps its running value in a register), and lane 0 writes one partial per (output, block)
  into a row-major (M, blocks) buffer;
* while blocks > 1 the next pass reduces those partials as rows of length ``blocks``.
  ``blocks`` is capped so that a pass launches at most MAX_WORKGROUPS workgroups: a whole
  buffer of up to 4M elements takes at most 16 elements per lane, larger ones loop longer,
  and any input within the storage limit needs two passes (the loop allows more).

vec4 loads: the first pass loads vec4 whenever rows are contiguous (inner == 1) and
length % 4 == 0, so every row starts on a vec4 boundary (``host_inputs`` flattens N-d
arrays fed to a vector buffer). Strided columns (inner > 1) load scalars: their lanes are
already coalesced across adjacent columns. Partials are scalar: the pass that writes them
stores one element per (output, block), and a pipeline buffer has one element type.

A reduction is described by a :class:`Reducer`: its state (one or more components, e.g.
(key, index) for argmax), the identity, how an element becomes a state (``lift``), how two
states combine (associative and commutative) and how the final state becomes the output.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...backends.schedule import BufferSpec, Pipeline, Step
from ...errors import DispatchError
from ...ir.builder import ProgramBuilder, Val
from ...ir.program import Program
from ...ir.types import DataType

WG = 256  # invocations per workgroup
ITEMS = 16  # loads per lane the first pass aims for before it adds blocks
MIN_ITEMS = 4  # loads per lane below which fewer lanes serve one output
COALESCE = 32  # consecutive columns a workgroup covers when reducing a strided axis
MAX_WORKGROUPS = 1024  # workgroups one pass launches at most (more work per lane beyond)

DTYPES = ("u32", "i32", "f32")
NUMPY = {"u32": np.uint32, "i32": np.int32, "f32": np.float32}

#: A reduction state: one value per component (``Reducer.state``).
State = tuple[Val, ...]


@dataclass(frozen=True)
class Reducer:
    """How one reduction folds its elements.

    ``lift(b, value, position) -> state`` turns one element (and its position along the
    reduced axis, u32) into a state; ``combine(b, a, c) -> state`` must be associative and
    commutative (lanes meet in no particular index order); ``finish(b, state) -> value``
    gives the output (default: the first component).
    """

    name: str
    dtype: str  # input element type
    state: tuple[str, ...]  # element types of the state components
    identity: tuple[int | float, ...]  # identity of each component
    out: str  # output element type
    lift: Callable[[ProgramBuilder, Val, Val], State]
    combine: Callable[[ProgramBuilder, State, State], State]
    finish: Callable[[ProgramBuilder, State], Val] | None = None


@dataclass(frozen=True)
class Geometry:
    """One pass: reduce M = outer * inner rows of ``length`` (in units of ``vec`` elements)."""

    outer: int
    length: int
    inner: int
    vec: int
    wx: int  # outputs per workgroup
    wy: int  # lanes per output
    blocks: int  # workgroups per output along the reduced axis

    @property
    def outputs(self) -> int:
        return self.outer * self.inner

    @property
    def units(self) -> int:
        return self.length // self.vec

    @property
    def tiles(self) -> int:
        return -(-self.outputs // self.wx)

    @property
    def lanes_adjacent(self) -> bool:
        """Adjacent invocations are lanes of one output (rows contiguous) or adjacent outputs."""
        return self.inner == 1

    @property
    def depth(self) -> int:
        """Longest chain of combines from an element to a partial (for float error budgets)."""
        serial = -(-self.units // (self.wy * self.blocks))
        return serial + (2 if self.vec == 4 else 0) + int(math.log2(self.wy))


def _pow2(n: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, n))))


def geometry(outer: int, length: int, inner: int, vec: int = 1) -> Geometry:
    units = length // vec
    wy = min(WG, _pow2(-(-units // MIN_ITEMS)))
    if inner > 1:  # keep enough consecutive columns per workgroup for coalesced loads
        wy = min(wy, WG // min(COALESCE, _pow2(inner)))
    wx = WG // wy
    tiles = -(-(outer * inner) // wx)
    blocks = max(1, min(-(-units // (wy * ITEMS)), MAX_WORKGROUPS // tiles))
    return Geometry(outer, length, inner, vec, wx, wy, blocks)


def collapse(shape: tuple[int, ...], axis: int | None) -> tuple[int, int, int]:
    """(outer, length, inner) view of ``shape`` reduced along ``axis`` (None: everything)."""
    if axis is None:
        return 1, math.prod(shape), 1
    return math.prod(shape[:axis]), shape[axis], math.prod(shape[axis + 1:])


def result_shape(shape: tuple[int, ...], axis: int | None) -> tuple[int, ...]:
    return () if axis is None else tuple(shape[:axis]) + tuple(shape[axis + 1:])


def plan(shape: tuple[int, ...], axis: int | None) -> list[Geometry]:
    """The passes of a reduction of ``shape`` along ``axis``."""
    outer, length, inner = collapse(shape, axis)
    vec = 4 if inner == 1 and length % 4 == 0 else 1
    passes = [geometry(outer, length, inner, vec)]
    while passes[-1].blocks > 1:
        passes.append(geometry(passes[-1].outputs, passes[-1].blocks, 1))
    return passes


def depth(shape: tuple[int, ...], axis: int | None) -> int:
    """Longest chain of float roundings from an element to an output, over all passes."""
    return sum(g.depth for g in plan(shape, axis))


def _lets(b: ProgramBuilder, values: Sequence[Val]) -> State:
    return tuple(b.let(v) for v in values)


def _combine_all(b: ProgramBuilder, red: Reducer, states: list[State]) -> State:
    """Combine a list of states pairwise (a balanced tree)."""
    while len(states) > 1:
        states = [_lets(b, red.combine(b, states[k], states[k + 1])) if k + 1 < len(states) else states[k]
                  for k in range(0, len(states), 2)]
    return states[0]


def _pass_program(red: Reducer, g: Geometry, level: int, final: bool) -> Program:
    wx, wy, M = g.wx, g.wy, g.outputs
    b = ProgramBuilder(f"reduce_{red.name}_{red.dtype}_pass{level}", WG)
    if level == 0:
        in_dtype = f"vec4<{red.dtype}>" if g.vec == 4 else red.dtype
        ins = [b.buffer("x", in_dtype, count=g.outer * g.length * g.inner // g.vec)]
    else:
        ins = [b.buffer(f"in{k}", dt, count=M * g.length) for k, dt in enumerate(red.state)]
    if final:
        outs = [b.buffer("out", red.out, "write", count=M)]
    else:
        outs = [b.buffer(f"part{k}", dt, "write", count=M * g.blocks) for k, dt in enumerate(red.state)]

    lid = b.local_index()
    if g.lanes_adjacent:
        lx, ly = b.let(lid >> int(math.log2(wy)), "lx"), b.let(lid & (wy - 1), "ly")
    else:
        lx, ly = b.let(lid & (wx - 1), "lx"), b.let(lid >> int(math.log2(wx)), "ly")
    m = b.let(b.workgroup_id(1) * wx + lx, "m")
    blk = b.let(b.workgroup_id(0), "blk")
    acc = [b.var(dt, b.lit(v, dt), name=f"acc{k}") for k, (dt, v) in enumerate(zip(red.state, red.identity))]

    def fold(item: State) -> None:
        new = _lets(b, red.combine(b, tuple(acc), item))
        for a, v in zip(acc, new):
            a.set(v)

    # grid-stride loop over this lane's positions of row m
    with b.if_(m < M):
        if level == 0 and g.inner > 1:
            base = b.let((m / g.inner) * (g.length * g.inner) + m % g.inner, "base")
        else:
            base = b.let(m * g.units, "base")
        with b.for_range(blk * wy + ly, g.units, step=g.blocks * wy, name="r") as r:
            if level > 0:
                fold(tuple(buf[base + r] for buf in ins))
            elif g.vec == 4:
                v = b.let(ins[0][base + r], "v")
                pos = b.let(r * 4, "pos")
                fold(_combine_all(b, red, [_lets(b, red.lift(b, v[j], pos + j)) for j in range(4)]))
            else:
                index = base + r if g.inner == 1 else base + r * g.inner
                fold(_lets(b, red.lift(b, ins[0][index], r)))

    # tree over the wy lanes of each output, sequential addressing
    if wy > 1:
        sh = [b.workgroup_array(f"sh{k}", dt, WG) for k, dt in enumerate(red.state)]
        slot = b.let(ly * wx + lx, "slot")
        for arr, a in zip(sh, acc):
            arr[slot] = a
        b.barrier()
        s = wy // 2
        while s >= 1:
            with b.if_(ly < s):
                fold(tuple(arr[slot + s * wx] for arr in sh))
                if s > 1:
                    for arr, a in zip(sh, acc):
                        arr[slot] = a
            if s > 1:
                b.barrier()
            s //= 2

    with b.if_((ly == 0) & (m < M)):
        if final:
            outs[0][m] = red.finish(b, tuple(acc)) if red.finish else acc[0]
        else:
            for buf, a in zip(outs, acc):
                buf[m * g.blocks + blk] = a
    return b.build()


def build_pipeline(red: Reducer, shape: tuple[int, ...], axis: int | None) -> Pipeline:
    passes = plan(shape, axis)
    first = passes[0]
    x_dtype = DataType.parse(f"vec4<{red.dtype}>" if first.vec == 4 else red.dtype)
    buffers = {"x": BufferSpec(x_dtype, math.prod(shape) // first.vec)}
    steps = []
    current: tuple[str, ...] = ("x",)
    for level, g in enumerate(passes):
        final = level == len(passes) - 1
        outs: tuple[str, ...]
        if final:
            outs = ("out",)
            buffers["out"] = BufferSpec(DataType.parse(red.out), g.outputs)
        else:
            outs = tuple(f"partial{level}_{k}" for k in range(len(red.state)))
            for name, dt in zip(outs, red.state):
                buffers[name] = BufferSpec(DataType.parse(dt), g.outputs * g.blocks)
        steps.append(Step(_pass_program(red, g, level, final), current + outs, (g.blocks, g.tiles, 1)))
        current = outs
    return Pipeline(
        name=f"reduce.{red.name}", buffers=buffers, inputs=("x",), outputs=("out",), steps=tuple(steps),
        output_shapes={"out": result_shape(shape, axis)},
    )


# ----------------------------------------------------------------------------- params
def check_params(shape: Sequence[int], dtype: str, axis: int | None) -> tuple[tuple[int, ...], str, int | None]:
    """Normalise build params (shape as a tuple, axis non-negative or None); ValueError if bad."""
    shape = tuple(int(s) for s in shape)
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {DTYPES}, got {dtype!r}")
    if any(s < 1 for s in shape):
        raise ValueError(f"every dimension must be >= 1, got shape {shape}")
    if axis is not None:
        axis = int(axis)
        if not -len(shape) <= axis < len(shape):
            raise ValueError(f"axis {axis} is out of range for shape {shape}")
        axis %= len(shape)
    return shape, dtype, axis


def params_from_array(op_id: str, x: np.ndarray, axis: int | None = None,
                      dtypes: Sequence[str] = DTYPES) -> dict[str, Any]:
    """Build params for the convenience layer, or DispatchError with a fix."""
    names = {np.dtype(NUMPY[d]): d for d in dtypes}
    if x.dtype not in names:
        raise DispatchError(f"{op_id} takes {', '.join(dtypes)} arrays, got {x.dtype}",
                            fix="convert the input, e.g. x.astype(np.float32)")
    if x.size == 0:
        raise DispatchError(f"{op_id} of an empty array", fix="pass at least one element")
    if x.ndim == 0:
        x = x.reshape(1)
    if axis is not None and not -x.ndim <= int(axis) < x.ndim:
        raise DispatchError(f"{op_id}: axis {axis} is out of range for an array of shape {x.shape}",
                            fix=f"pass axis=None or an axis in [-{x.ndim}, {x.ndim})")
    return {"shape": tuple(int(s) for s in x.shape), "dtype": names[x.dtype],
            "axis": None if axis is None else int(axis) % x.ndim}


# Witness shapes shared by the reductions, (name, shape, axis): size 1, not a multiple of
# 256 (scalar and vec4 loads), a multi-block whole buffer (vec4), then (spread over the
# types) rows (vec4 and scalar) and columns of odd 2-D shapes, an N-d axis, multi-block
# strided columns and rows (vec4), and a multi-block N-d whole buffer (scalar loads).
WitnessShapes = list[tuple[str, tuple[int, ...], int | None]]
BASE_SHAPES: WitnessShapes = [("one", (1,), None), ("n1001", (1001,), None), ("n1000_vec4", (1000,), None),
               ("large_vec4", (1 << 18,), None)]
AXIS_SHAPES: WitnessShapes = [
               ("rows_3x1000", (3, 1000), 1), ("cols_3x1000", (3, 1000), 0), ("cols_1000x3", (1000, 3), 0),
               ("rows_1000x3", (1000, 3), 1), ("nd_2x5x7x3_axis2", (2, 5, 7, 3), 2),
               ("cols_multiblock_20000x5", (20000, 5), 0), ("rows_multiblock_4x50000", (4, 50000), -1),
               ("whole_nd_3x70001", (3, 70001), None)]


def reshaped(x: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """A witness or user input viewed with the build shape."""
    return np.asarray(x).reshape(tuple(shape))
