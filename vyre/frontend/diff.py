"""Differentiable kernels (``@vyre.kernel(differentiable=True)``): the adjoint Program of a specialization
(:func:`vyre.ir.adjoint.adjoint`, with its refusals turned into KernelErrors at the kernel's source line),
the vector-Jacobian product of one launch on numpy arrays (:meth:`Kernel.vjp`), and the record a launch on
vyre Arrays leaves on the gradient tapes of the calling thread (:class:`Launch`, differentiated by
vyre/autograd/_kernels.py). Neither vyre.array nor vyre.autograd is imported here."""

from __future__ import annotations

import ast
import math
import re
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..backends.config import DispatchConfig
from ..errors import InvalidArgumentError, ValidationError
from ..ir.adjoint import Adjoint, adjoint
from ..ir.program import Program
from ..ir.types import Access
from .build import ParamSpec, Spec
from .launch import Bound, grid_for, run
from .source import Source
from .types import ArrayType, f32

if TYPE_CHECKING:
    from ..backends.base import Backend

Origin = dict[int, tuple[Source, ast.AST]]


def adjoint_of(name: str, src: Source, program: Program, origin: Origin, atomic: frozenset[str]) -> Adjoint:
    """:func:`vyre.ir.adjoint.adjoint`, its ValidationError (rule "adjoint") as a KernelError at the line."""
    try:
        return adjoint(program, atomic=atomic)
    except ValidationError as exc:
        if not exc.issues or exc.issues[0].rule != "adjoint":
            raise
        issue = exc.issues[0]
        node = _statement(program, origin, issue.path)
        raise src.error(node, "not differentiable: " + issue.message, issue.fix, kernel=name) from None


def _statement(program: Program, origin: Origin, path: str) -> ast.AST | None:
    """The Python statement of the IR statement at ``path`` (``body[3].then[0]``), or of its innermost
    enclosing statement that has one; None (the def line) for a buffer or workgroup declaration."""
    obj: object = program
    found = None
    for field_, idx in re.findall(r"(\w+)\[(\d+)\]", path):
        seq = getattr(obj, field_, None)
        if not isinstance(seq, list) or int(idx) >= len(seq):
            break
        obj = seq[int(idx)]
        at = origin.get(id(obj))
        if at is not None:
            found = at[1]
    return found


def buffer_names(program: Program, bound: Bound) -> dict[str, str]:
    """Parameter name -> the forward program's buffer name (bound arrays are in binding order)."""
    return {p.name: decl.name for (p, _, _), decl in zip(bound.arrays, program.sorted_buffers)}


@dataclass
class Launch:
    """One recorded launch: enough to run its adjoint later (the arrays it read are held by the tape)."""

    kernel: Any  # the Kernel (decorator.py), typed loosely: decorator.py imports this module
    spec: Spec
    dims: tuple[int, ...]
    words: np.ndarray
    backend: Backend
    program: Program
    bound: Bound

    @property
    def names(self) -> dict[str, str]:
        return buffer_names(self.program, self.bound)

    def in_params(self) -> list[tuple[ParamSpec, Any, tuple[int, ...]]]:
        return [a for a in self.bound.arrays if isinstance(a[0].kind, ArrayType) and a[0].kind.access is Access.READ]

    def float_outs(self) -> list[tuple[ParamSpec, Any, tuple[int, ...]]]:
        return [a for a in self.bound.arrays if isinstance(a[0].kind, ArrayType)
                and a[0].kind.access is Access.WRITE and a[0].kind.dtype.dtype.is_float]

    def float_ins(self) -> list[tuple[ParamSpec, Any, tuple[int, ...]]]:
        return [a for a in self.in_params() if isinstance(a[0].kind, ArrayType) and a[0].kind.dtype.dtype.is_float]

    def backward(self, seeds: list[Any], zeros: Any) -> list[Any]:
        """The gradients of the float In arrays (vyre Arrays) from ``seeds``, one per float Out array;
        ``zeros(shape)`` makes a zero-filled f32 Array on the launch's backend."""
        adj = self.kernel._adjoint(self.spec, self.program, self.dims)
        names = self.names
        arrays: list[tuple[ParamSpec, Any, tuple[int, ...]]] = []
        for p, arr, shape in self.in_params():
            arrays.append((p, arr, shape))
        for (p, _, shape), seed in zip(self.float_outs(), seeds, strict=True):
            arrays.append((ParamSpec(p.name, ArrayType(Access.READ, f32)), seed, shape))
        grads = []
        for p, _, shape in self.float_ins():
            g = zeros(shape)
            grads.append(g)
            arrays.append((ParamSpec(p.name, ArrayType(Access.READ_WRITE, f32)), g, shape))
        assert [names.get(p.name) for p, _, _ in self.in_params()] == list(adj.inputs)
        bound = Bound(self.spec, arrays, self.words, True, self.backend)
        from .decorator import _padded  # why: decorator.py imports this module

        run(self.kernel.__name__, adj.program, bound, self.dims, self.backend,
            self.backend.params_handle(_padded(self.words)))
        return grads


def vjp_numpy(kernel: Any, program: Program, bound: Bound, dims: tuple[int, ...], backend: Backend,
              grads: Any) -> dict[str, np.ndarray]:
    """:meth:`Kernel.vjp` on numpy arrays: one dispatch of the adjoint program."""
    adj: Adjoint = kernel._adjoint(bound.spec, program, dims)
    outs = [p for p, _, _ in bound.arrays if isinstance(p.kind, ArrayType) and p.kind.access is Access.WRITE
            and p.kind.dtype.dtype.is_float]
    shapes = {p.name: shape for p, _, shape in bound.arrays}
    given = grads if isinstance(grads, dict) else dict(zip([p.name for p in outs], grads, strict=True)) \
        if isinstance(grads, (list, tuple)) and len(grads) == len(outs) else None
    if given is None or set(given) != {p.name for p in outs}:
        raise InvalidArgumentError(f"kernel {kernel.__name__}: vjp needs one gradient per float Out parameter "
                                   f"{[p.name for p in outs]}", fix="pass grads={'out': array, ...} or a list in order")
    inputs: list[np.ndarray] = []
    for p, arr, _ in bound.arrays:
        if isinstance(p.kind, ArrayType) and p.kind.access is Access.READ:
            inputs.append(np.ascontiguousarray(arr).reshape(-1))
    for p in outs:
        g = np.asarray(given[p.name], dtype=np.float32)
        if g.shape != shapes[p.name]:
            raise InvalidArgumentError(f"kernel {kernel.__name__}: the gradient of {p.name!r} has shape {g.shape}, "
                                       f"the array {shapes[p.name]}", fix="pass one gradient per element")
        inputs.append(np.ascontiguousarray(g).reshape(-1))
    ins = [(p, shape) for p, _, shape in bound.arrays if isinstance(p.kind, ArrayType)
           and p.kind.access is Access.READ and p.kind.dtype.dtype.is_float]
    for p, shape in ins:
        dt = np.uint32 if buffer_names(program, bound)[p.name] in adj.atomic else np.float32
        inputs.append(np.zeros(math.prod(shape), dt))
    got = backend.dispatch(adj.program, inputs + [bound.words],
                           DispatchConfig(grid=grid_for(dims, bound.spec.workgroup_size), counts={}))
    return {p.name: np.asarray(g).view(np.float32).reshape(shape) for (p, shape), g in zip(ins, got, strict=True)}


#: the name a recorded launch has on a tape (vyre/autograd/_kernels.py registers its derivative rule)
TAPE_NAME = "autograd.kernel"


def launched(launch: Launch, arrays: tuple[Any, ...]) -> None:
    """The signature a tape binds a recorded launch's parameters with: the launch, its float In arrays."""


def record(kernel: Any, program: Program, bound: Bound, dims: tuple[int, ...], backend: Backend) -> None:
    """After a launch on vyre Arrays: the launch, as one call, handed to each recorder (a gradient tape) of
    the calling thread, through vyre.array's recording hook (looked up, never imported: no recorder can
    exist before vyre.array is loaded)."""
    rec = sys.modules.get("vyre.array._record")
    if rec is None or not rec.RECORDERS:
        return
    launch = Launch(kernel, bound.spec, dims, bound.words, backend, program, bound)
    ins = tuple(arr for _, arr, _ in launch.float_ins())
    outs = tuple(arr for _, arr, _ in launch.float_outs())
    if not outs:
        return
    for r in list(rec.RECORDERS.mine()):
        r.record(TAPE_NAME, launched, (launch, ins), {}, outs)


__all__ = ["adjoint_of", "vjp_numpy", "record", "launched", "Launch", "buffer_names", "TAPE_NAME"]
