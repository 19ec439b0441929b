"""What a user runs, as one exportable unit: programs in order over named buffers, with their grids.

A :class:`Unit` is an op call, a kernel launch or a fused array expression reduced to what another
WebGPU runtime needs: named buffers (inputs, outputs, intermediates, constants, and ``words``
uniforms that the runtime assembles from named scalars and the launch dims), steps (a program, the
buffer bound to each of its bindings, and a grid rule), and the names the caller passes and gets back.
:func:`vyre.export.export_unit` writes it (manifest + WGSL + one ES module); :meth:`Unit.run` runs the
same unit on a vyre backend (the round trip the browser check compares against).

Builders: :func:`from_pipeline` (any :class:`~vyre.backends.schedule.Pipeline`), :func:`from_op` (an
op call: ``vyre.ops`` builds the pipeline from the arrays), :func:`from_kernel` (a ``@vyre.kernel``
launch). A fused array expression comes from ``vyre.array.program_of`` (vyre/array/_export_view.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..backends.config import DispatchConfig
from ..backends.host import plan_dispatch
from ..backends.schedule import BufferSpec, Pipeline, Step, host_inputs, zeros
from ..errors import ArgumentTypeError, InvalidArgumentError
from ..ir.program import Program
from ..ir.types import Access, DataType
from ..ir.words import pack_scalars

#: buffer roles: what the caller passes (input), gets (output), what stays inside (intermediate), what the
#: export carries (constant, its bytes in the manifest) and uniforms of named words (words)
ROLES = ("input", "output", "inout", "intermediate", "constant", "words")


@dataclass(frozen=True)
class UnitBuffer:
    """One buffer of a unit. ``count`` None: sized at run time (from the input, or ``counts``)."""

    name: str
    dtype: DataType
    count: int | None
    role: str
    value: np.ndarray | None = None  # a constant's host array
    words: tuple[dict[str, Any], ...] = ()  # a words buffer's layout: {word, name, dtype, from}
    count_from: str | None = None  # a runtime-sized output: the input whose count it takes by default
    default_count: int | None = None  # a runtime-sized buffer's count at export (a kernel's arrays)
    trailing: tuple[int, ...] = ()  # a kernel array's shape past its first axis: baked into the program
    shape: tuple[int, ...] = ()  # a traced constant's array shape (the weights file's tensor shape)


@dataclass(frozen=True)
class UnitStep:
    """``program`` with unit buffer ``bind[k]`` at its k-th binding (binding order). ``grid``: the logical
    grid, fixed at export; None with ``grid_dims``: from the launch dims (a kernel), ``ceil(dim / ws)``."""

    program: Program
    bind: tuple[str, ...]
    grid: tuple[int, int, int] | None
    grid_dims: bool = False
    counts: tuple[int, ...] | None = None  # per binding, its element count there (a traced step); None: the buffer's


@dataclass(frozen=True)
class Unit:
    """Steps over named buffers (see the module docstring). ``inputs``: the names the caller passes, in
    order (buffers and scalars); ``scalars``: name -> dtype of the scalar inputs (packed into words
    buffers); ``dims``: a kernel's launch ``{"rank", "workgroup_size", "default"}`` or None."""

    name: str
    kind: str
    buffers: dict[str, UnitBuffer]
    steps: tuple[UnitStep, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    scalars: dict[str, DataType] = field(default_factory=dict)
    dims: dict[str, Any] | None = None
    output_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    about: dict[str, Any] = field(default_factory=dict)  # what it was made from (op id, params, tolerance...)

    # ---- the same unit on a vyre backend -------------------------------------------------------
    def words_of(self, buf: UnitBuffer, scalars: Mapping[str, Any], dims: Sequence[int]) -> np.ndarray:
        """The u32 words of words buffer ``buf`` for these scalar values and launch dims."""
        out = np.zeros(max(1, len(buf.words)), np.uint32)
        for w in buf.words:
            src = w["from"]
            if "dim" in src:
                out[w["word"]] = dims[src["dim"]]
            elif "value" in src:
                out[w["word"]] = src["value"]
            else:
                d = DataType(w["dtype"])
                kind = {DataType.BOOL: "b", DataType.I32: "i", DataType.U32: "u"}.get(d, "f")
                v = scalars[src["input"]]
                out[w["word"]] = int.from_bytes(pack_scalars(kind, (np.float32(v) if kind == "f" else v,)), "little")
        return out

    def pipeline(self, values: Mapping[str, Any], dims: Sequence[int] | None = None,
                 counts: Mapping[str, int] | None = None) -> tuple[Pipeline, list[Any]]:
        """This unit as a vyre Pipeline of fixed sizes for these inputs, and the pipeline's input list:
        the caller's arrays, the constants and the words buffers (constants and words are inputs too)."""
        same = all(np.asarray(values[b.name]).size == (b.default_count or 0) * b.dtype.lanes
                   for b in self.buffers.values() if b.count is None and b.role in ("input", "inout"))
        if dims is None and self.dims is not None and not same:
            raise InvalidArgumentError(f"{self.name}: the inputs are not the sizes it was exported with",
                                       fix="pass the launch dims (dims=...), as kernel[dim] takes them")
        dims = tuple(dims if dims is not None else (self.dims or {}).get("default", ()))
        scal = {n: values[n] for n in self.scalars}
        specs: dict[str, BufferSpec] = {}
        ins: list[str] = []
        arrays: list[Any] = []
        for b in self.buffers.values():
            if b.role in ("input", "inout"):
                arr = np.asarray(values[b.name])
                n = arr.size // b.dtype.lanes if b.count is None else b.count
                check_rows(self.name, b, n)
                ins.append(b.name)
                arrays.append(arr)
            elif b.role == "constant":
                assert b.value is not None
                n, arr = b.count or 0, b.value
                ins.append(b.name)
                arrays.append(arr)
            elif b.role == "words":
                arr = self.words_of(b, scal, dims)
                n = arr.size
                ins.append(b.name)
                arrays.append(arr)
            else:
                got: int | None = b.count if b.count is not None else (counts or {}).get(b.name)
                if got is None and same and b.default_count is not None:
                    got = b.default_count
                if got is None and b.count_from is not None:
                    got = specs[b.count_from].count
                if got is None:
                    raise InvalidArgumentError(f"{self.name}: give the element count of output {b.name!r}",
                                               fix=f"counts={{{b.name!r}: n}}")
                n = got
            check_rows(self.name, b, int(n))
            specs[b.name] = BufferSpec(b.dtype, int(n))
        steps = []
        for s in self.steps:
            grid = s.grid
            if s.grid_dims:
                grid = kernel_grid(dims, s.program.workgroup_size)
            steps.append(Step(s.program, s.bind, grid))
        outs = tuple(n for n in self.outputs)
        pipe = Pipeline(self.name, specs, tuple(ins), outs, tuple(steps), dict(self.output_shapes))
        return pipe, arrays

    def run(self, backend: Any, values: Mapping[str, Any], dims: Sequence[int] | None = None,
            counts: Mapping[str, int] | None = None) -> dict[str, np.ndarray]:
        """Run the unit on ``backend`` (``backend.run_pipeline``; a traced function's over resident buffers, as
        it was traced): outputs by name."""
        if self.kind == "function":
            from .traced import run_function_unit  # why: traced.py builds on this module

            return run_function_unit(self, backend, values)
        pipe, arrays = self.pipeline(values, dims, counts)
        got = backend.run_pipeline(pipe, host_inputs(pipe, arrays))
        return dict(zip(self.outputs, got))


def check_rows(unit: str, b: UnitBuffer, count: int) -> None:
    """A kernel array's element count must be whole rows of its trailing shape (the program bakes it in)."""
    row = math.prod(b.trailing)
    if b.trailing and count % row:
        raise InvalidArgumentError(f"{unit}: {b.name} has {count} elements, not whole rows of shape "
                                   f"{list(b.trailing)} (the shape past the first axis it was exported with)",
                                   fix="pass whole rows, or export the kernel again for the new shape")


def kernel_grid(dims: Sequence[int], ws: tuple[int, int, int]) -> tuple[int, int, int]:
    """A kernel launch's grid (``vyre.frontend.launch.grid_for``): the last launch axis along x."""
    rev = tuple(reversed(tuple(dims))) + (1,) * (3 - len(dims))
    return (-(-rev[0] // ws[0]), -(-rev[1] // ws[1]), -(-rev[2] // ws[2]))


def fixed_grid(program: Program, counts: Sequence[int], grid: tuple[int, int, int] | None) -> tuple[int, int, int]:
    """The logical grid vyre dispatches ``program`` with for these element counts (binding order): ``grid``
    when given, else vyre's default rule (``plan_dispatch`` on zeros; DispatchError where it refuses)."""
    if grid is not None:
        return tuple(grid)  # type: ignore[return-value]
    decls = program.sorted_buffers
    ins = [zeros(BufferSpec(d.dtype, n)) for d, n in zip(decls, counts) if d.access.readable]
    sizes = {d.name: n for d, n in zip(decls, counts) if not d.access.readable}
    return plan_dispatch(program, ins, DispatchConfig(counts=sizes)).grid


def from_pipeline(pipe: Pipeline, *, name: str | None = None, kind: str = "pipeline",
                  about: Mapping[str, Any] | None = None) -> Unit:
    """A unit of a vyre Pipeline (every buffer count fixed): each step's grid fixed now (its own, or the
    default rule for its buffers' counts), every buffer an input, output, inout or intermediate."""
    if not isinstance(pipe, Pipeline):
        raise ArgumentTypeError(f"expected a vyre Pipeline, got {type(pipe).__name__}",
                                fix="build one with vyre.ops.api.pipeline_for(op_id, params) or "
                                    "vyre.ops.pipeline.single(program)")
    pipe.check()
    buffers: dict[str, UnitBuffer] = {}
    for n, spec in pipe.buffers.items():
        role = ("inout" if n in pipe.outputs else "input") if n in pipe.inputs else \
            "output" if n in pipe.outputs else "intermediate"
        buffers[n] = UnitBuffer(n, spec.dtype, spec.count, role)
    steps = []
    for s in pipe.steps:
        counts = [pipe.buffers[n].count for n in s.bind]
        steps.append(UnitStep(s.program, tuple(s.bind), fixed_grid(s.program, counts, s.grid)))
    return Unit(name or pipe.name, kind, buffers, tuple(steps), tuple(pipe.inputs), tuple(pipe.outputs),
                output_shapes=dict(pipe.output_shapes), about=dict(about or {}))


def from_op(op_id: str, *arrays: Any, variant: str | None = None, **kwargs: Any) -> Unit:
    """The unit of the op call ``vyre.ops.<op>(backend, *arrays, **kwargs)``: the pipeline its params
    build (kernel ``variant``; default the generic kernel, which every adapter runs), with every program
    in order, its grids and the buffers shared between steps. The inputs are the pipeline's (an op that
    converts arrays first, e.g. complex64 as f32 pairs, takes the converted form: ``about["to_device"]``)."""
    from ..ops import variants as V  # why: import time (the op registry)
    from ..ops.api import pipeline_for
    from ..ops.registry import get

    spec = get(op_id)
    params = spec.params_for(*(np.asarray(a) for a in arrays), **kwargs)
    pipe = pipeline_for(op_id, params, variant or V.GENERIC)
    tol = spec.tolerance_of(params)
    return from_pipeline(pipe, name=op_id, kind="op", about={
        "op": op_id, "variant": variant or V.GENERIC, "params": _plain(params),
        "tolerance": {"kind": tol.kind, "ulp": tol.ulp, "rtol": tol.rtol, "atol": tol.atol,
                      "text": tol.describe()},
        "to_device": spec.to_device is not None})


def _plain(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    return str(v)


def from_kernel(kernel: Any, *args: Any, dim: Any, **named: Any) -> Unit:
    """The unit of the launch ``kernel[dim](*args)`` (or ``**named``): its program for these argument
    types and shapes; the arrays by their Python parameter names (runtime-sized: any number of rows of
    the same trailing shape, which the program bakes in, as ``kernel[dim]`` specializes on it); the
    scalars by name (packed into the ``kparams`` uniform with the dims); the grid from the dims given at
    run time, as ``kernel[dim]`` computes it."""
    from ..frontend.decorator import Kernel  # why: import time (the frontend)
    from ..frontend.launch import bind, check_dim
    from ..frontend.types import ArrayType

    if not isinstance(kernel, Kernel):
        raise ArgumentTypeError(f"expected a @vyre.kernel, got {type(kernel).__name__}",
                                fix="decorate the function with @vyre.kernel")
    dims = check_dim(kernel.__name__, dim)
    bound = bind(kernel.__name__, kernel.params, named or args, dims, kernel.workgroup_size)
    program = kernel.program(*args, dim=dim, **named)
    decls = program.sorted_buffers
    buffers: dict[str, UnitBuffer] = {}
    bind_names: list[str] = []
    scalars: dict[str, DataType] = {}
    arrays = iter(bound.arrays)
    for (pname, kind) in kernel.params:
        if isinstance(kind, ArrayType):
            spec, _, shape = next(arrays)
            role = {Access.READ: "input", Access.WRITE: "output", Access.READ_WRITE: "inout"}[kind.access]
            buffers[pname] = UnitBuffer(pname, kind.dtype.dtype, None, role, default_count=math.prod(shape),
                                        trailing=tuple(spec.trailing))
            bind_names.append(pname)
        else:
            scalars[pname] = kind.dtype
    rank = len(dims)
    words = [{"word": k, "name": f"dim[{k}]", "dtype": "u32", "from": {"dim": k}} for k in range(rank)]
    words += [{"word": rank + j, "name": n, "dtype": d.value, "from": {"input": n}}
              for j, (n, d) in enumerate(scalars.items())]
    kp = decls[len(bind_names)]
    buffers["kparams"] = UnitBuffer("kparams", DataType.U32, kp.count, "words", words=tuple(words))
    bind_names.append("kparams")
    assert len(decls) == len(bind_names)  # build_program: one buffer per array parameter, then kparams
    shapes = {p.name: list(s) for p, _, s in bound.arrays}
    # the caller passes every parameter but the Out arrays (sized by counts, default their export size)
    names = tuple(n for n, _ in kernel.params if n in scalars or buffers[n].role != "output")
    outputs = tuple(n for n in bind_names if buffers[n].role in ("output", "inout"))
    step = UnitStep(program, tuple(bind_names), None, grid_dims=True)
    return Unit(kernel.__name__, "kernel", buffers, (step,), names, outputs, scalars,
                {"rank": rank, "workgroup_size": list(program.workgroup_size), "default": list(dims)},
                about={"kernel": kernel.__name__, "shapes": shapes,
                       "elements": {n: math.prod(s) for n, s in shapes.items()}})


__all__ = ["Unit", "UnitBuffer", "UnitStep", "ROLES", "from_pipeline", "from_op", "from_kernel", "kernel_grid",
           "fixed_grid"]
