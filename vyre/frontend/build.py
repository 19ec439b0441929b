"""One specialization of a kernel -> a validated Program: buffers for the array parameters, one
uniform for the launch dims and the scalar parameters, thread ids along the launch axes, the body,
and the guard ``if any tid >= dim: return`` (left out when the kernel has a barrier)."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from ..errors import ValidationError
from ..ir.nodes import Barrier, If, Return
from ..ir.program import Program
from ..ir.traverse import iter_stmts
from ..ir.types import Access, DataType
from .exprs import KBuilder
from .source import Source
from .stmts import Translator
from .types import ArrayType, DType
from .values import Array, Local


@dataclass(frozen=True)
class ParamSpec:
    """One parameter of one specialization: an array (dtype, ndim, baked trailing shape) or a scalar."""

    name: str
    kind: ArrayType | DType
    ndim: int = 0
    trailing: tuple[int, ...] = ()

    @property
    def is_array(self) -> bool:
        return isinstance(self.kind, ArrayType)


@dataclass(frozen=True)
class Spec:
    """What a Program is specialized on (the kernel's cache key, with the source hash)."""

    params: tuple[ParamSpec, ...]
    rank: int
    workgroup_size: tuple[int, int, int]


def param_annotations(src: Source) -> list[tuple[str, ArrayType | DType]]:
    """The kernel's parameters and their annotations (resolved through its globals, never evaluated)."""
    a = src.node.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.kw_defaults or a.posonlyargs:
        src.fail(src.node, "kernel parameters are plain positional parameters (no defaults, *args, **kwargs, "
                 "keyword-only or positional-only markers)", "list every parameter with an annotation")
    out: list[tuple[str, ArrayType | DType]] = []
    for p in a.args:
        if p.annotation is None:
            src.fail(p, f"parameter {p.arg!r} has no annotation",
                     f"annotate it: {p.arg}: In[f32] (an array) or {p.arg}: u32 (a scalar)")
        ann = src.resolve(p.annotation)
        if not isinstance(ann, (ArrayType, DType)):
            src.fail(p, f"parameter {p.arg!r} is annotated with {ann!r:.60}",
                     "use In[dt], Out[dt] or InOut[dt] for arrays and f32, f16, i32, u32 or bool_ for scalars")
        out.append((p.arg, ann))
    if src.node.returns is not None and not (isinstance(src.node.returns, ast.Constant)
                                             and src.node.returns.value is None):
        src.fail(src.node.returns, "a kernel returns nothing", "write results into Out/InOut arrays")
    return out


def build_program(src: Source, spec: Spec, origin: dict[int, tuple[Source, ast.AST]] | None = None) -> Program:
    """The validated Program of one specialization; ``origin`` (when given) receives the map from each IR
    statement's ``id`` to the Python statement it came from (the adjoint transform's errors name it)."""
    b = KBuilder(src.name, workgroup_size=spec.workgroup_size)
    tr = Translator(src, b)
    tr.rank = r = spec.rank
    for p in spec.params:
        if isinstance(p.kind, ArrayType):
            ref = b.buffer(tr.fresh(p.name), p.kind.dtype.dtype, p.kind.access)
            tr.bind(p.name, Array(p.name, ref, p.kind.dtype.dtype, p.ndim, p.trailing,
                                  writable=p.kind.access is not Access.READ))
    scalars = [p for p in spec.params if not p.is_array]
    words = b.buffer(tr.fresh("kparams"), "u32", access="uniform", count=r + len(scalars))
    tr.dims = [words[k] for k in range(r)]
    tr.tids = [b.global_id(r - 1 - k) for k in range(r)]  # the last launch axis runs along x
    tr.local_ids = [b.local_id(r - 1 - k) for k in range(r)]
    tr.group_ids = [b.workgroup_id(r - 1 - k) for k in range(r)]
    for j, p in enumerate(scalars):
        assert isinstance(p.kind, DType)
        w, d = words[r + j], p.kind.dtype
        if d is DataType.BOOL:
            v = w != 0
        elif d is DataType.U32:
            v = w
        else:  # i32 and f32 by their bits, f16 through f32
            v = w.bitcast("i32" if d is DataType.I32 else "f32")
            v = v.cast("f16") if d is DataType.F16 else v
        val = b.let(v, name=tr.fresh(p.name))
        tr.bind(p.name, Local(p.name, d, val, mutable=False, what="scalar parameter"))
    tr.body(src.node.body)
    top = b.block()
    if not any(isinstance(s, Barrier) for s in iter_stmts(top)):
        out = tr.tids[0] >= tr.dims[0]
        for k in range(1, r):
            out = out | (tr.tids[k] >= tr.dims[k])
        top.insert(0, If(cond=out.node, then=[Return()]))
    if origin is not None:
        origin.update(tr.origin)
    try:
        return b.build()
    except ValidationError as exc:
        where = _node_for(tr, exc)
        at_src, node = where if where is not None else (src, None)
        raise at_src.error(node, "the program built from the kernel failed validation: " + "; ".join(
            i.message for i in exc.issues), exc.issues[0].fix if exc.issues else "", exc.issues) from exc


def _node_for(tr: Translator, exc: ValidationError) -> tuple[Source, ast.AST] | None:
    """The Python statement whose IR statement an issue's path names (None: the def line)."""
    for issue in exc.issues:
        obj: object = tr.b.block()
        found = None
        for field_, idx in re.findall(r"(\w+)\[(\d+)\]", issue.path):
            seq = obj if field_ == "body" and isinstance(obj, list) else getattr(obj, field_, None)
            if not isinstance(seq, list) or int(idx) >= len(seq):
                break
            obj = seq[int(idx)]
            found = tr.origin.get(id(obj), found)
        if found is not None:
            return found
    return None


__all__ = ["ParamSpec", "Spec", "param_annotations", "build_program"]
