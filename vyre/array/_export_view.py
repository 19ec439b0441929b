"""``program_of(expr)``: the programs a lazy array expression would run, as one exportable unit.

What :func:`vyre.array._kernels.fused.plan` would submit for ``expr`` (the cut-out subtrees first, then
the tree itself), without running it and without touching the arrays: each step a fused program with
its leaves, its scalar words (``in_p``) and its output, as a :class:`vyre.export.Unit` that
``vyre.export.export_unit`` writes (or ``vyre.export.export_array(expr, out_dir)`` in one call).

Arrays named in ``inputs`` are the unit's inputs; every other materialised array the expression reads
is a constant of the unit (its values downloaded now: weights, a closure's arrays). Work that is not an
elementwise tree (a reduction, a matmul, a sort: deferred kernels) is refused: export those ops with
``vyre.export.export_op``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..backends.host import storage_to_host
from ..errors import ArgumentTypeError, InvalidArgumentError, UnsupportedFeatureError
from ..ir.program import BufferDecl
from ..ir.types import Access
from ._array import Array
from ._kernels.dtypes import ir_type
from ._kernels.fused import _pending_order, pending_buffers, program_for
from ._kernels.nodes import Node, collect

if TYPE_CHECKING:
    from ..export.unit import Unit, UnitBuffer, UnitStep


def program_of(expr: Array, inputs: Mapping[str, Array] | None = None) -> Unit:
    """The unit of what evaluating the lazy array ``expr`` would run now (see the module docstring). Its
    output is ``out`` (``expr``'s shape); its inputs are ``inputs``' names, in that order."""
    from ..export.unit import Unit  # why: import time (vyre.export loads the lowering and jinja2)

    if not isinstance(expr, Array):
        raise ArgumentTypeError(f"program_of() takes a vyre array, got {type(expr).__name__}",
                                fix="pass an expression of vyre arrays, e.g. program_of(x * 2 + y)")
    node = expr._expr
    if node is None:
        raise InvalidArgumentError("program_of(): the array is materialised: there is no expression to export",
                                   fix="pass the expression before it is evaluated (or printed, or downloaded)")
    names: dict[int, str] = {}
    for n, a in (inputs or {}).items():
        if not isinstance(a, Array) or a._buf is None or a._expr is not None or a._buf.pending is not None:
            raise InvalidArgumentError(f"program_of(): input {n!r} is not a materialised vyre array",
                                       fix="name arrays that hold their values (vyre.array.asarray(...))")
        names[id(a._buf)] = n
    backend = expr.device
    order = _pending_order(pending_buffers([node]))
    buffers: dict[str, UnitBuffer] = {}
    by_buf: dict[int, str] = {}
    steps: list[UnitStep] = []
    for k, buf in enumerate(order):
        pending = buf.pending
        if not isinstance(pending, Node):
            raise UnsupportedFeatureError("program_of(): the expression reads deferred work (a reduction, a "
                                          "matmul, a sort...), which is not one fused program",
                                          fix="export that op with vyre.export.export_op and the elementwise "
                                              "rest with program_of, or evaluate it first")
        by_buf[id(buf)] = f"t{k}"
        steps.append(_step(pending, f"t{k}", "intermediate", buffers, by_buf, names, backend))
    steps.append(_step(node, "out", "output", buffers, by_buf, names, backend))
    order_in = [n for n in (inputs or {}) if n in buffers]
    unknown = [n for n in (inputs or {}) if n not in buffers]
    if unknown:
        raise InvalidArgumentError(f"program_of(): the expression does not read input(s) {unknown}",
                                   fix="name only arrays the expression reads")
    return Unit("array_expr", "array", buffers, tuple(steps), tuple(order_in), ("out",),
                output_shapes={"out": tuple(expr.shape)},
                about={"shape": list(expr.shape), "dtype": str(expr.dtype), "kernels": len(steps)})


def _step(node: Node, out_name: str, role: str, buffers: dict[str, UnitBuffer], by_buf: dict[int, str],
          names: dict[int, str], backend: Any) -> UnitStep:
    from ..export.unit import UnitBuffer, UnitStep, fixed_grid  # why: as in program_of

    prog, leaves, words = program_for(node)
    decls = prog.sorted_buffers
    bind: list[str] = []
    for leaf, decl in zip(leaves, decls):
        key = id(leaf.buf)
        name = by_buf.get(key) or names.get(key)
        if name is None:  # a materialised array nobody named: its values travel with the export
            name = by_buf[key] = f"c{sum(b.role == 'constant' for b in buffers.values())}"
            count = max(1, math.prod(leaf.shape))
            host = storage_to_host(BufferDecl(name=name, binding=0, dtype=ir_type(leaf.dtype), access=Access.READ,
                                              count=count),
                                   np.asarray(backend.download_resident(leaf.buf.handle)), count)
            buffers[name] = UnitBuffer(name, decl.dtype, decl.count, "constant", value=host.reshape(-1))
        elif name not in buffers:
            buffers[name] = UnitBuffer(name, decl.dtype, decl.count, "input")
        _same(buffers[name], decl)
        bind.append(name)
    if words is not None:
        c = collect(node)
        values = np.frombuffer(words, np.uint32).copy()
        pname = f"{out_name}_p"
        docs = tuple({"word": k, "name": f"scalar[{k}]", "dtype": ir_type(s.dtype).value, "value": _py(s.value),
                      "from": {"value": int(values[k])}} for k, s in enumerate(c.scalars))
        decl = decls[len(leaves)]
        buffers[pname] = UnitBuffer(pname, decl.dtype, decl.count, "constant", value=values, words=docs)
        bind.append(pname)
    out = decls[len(bind)]
    buffers[out_name] = UnitBuffer(out_name, out.dtype, out.count, role)
    bind.append(out_name)
    counts = [buffers[n].count or 0 for n in bind]
    return UnitStep(prog, tuple(bind), fixed_grid(prog, counts, None))


def _same(b: UnitBuffer, decl: BufferDecl) -> None:
    if (b.dtype, b.count) != (decl.dtype, decl.count):
        raise UnsupportedFeatureError(f"program_of(): buffer {b.name} is read as {decl.dtype.value}[{decl.count}] "
                                      f"and as {b.dtype.value}[{b.count}] by two kernels",
                                      fix="evaluate part of the expression first")


def _py(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


__all__ = ["program_of"]
