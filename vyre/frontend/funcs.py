"""``@vyre.func`` helpers: functions a kernel calls, inlined at each call.

A helper's parameters are typed by their annotations (a dtype marker, or ``In[...]``/``InOut[...]`` for
arrays) or, unannotated, by the call's arguments. It may ``return`` a value as its last statement only."""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..ir.values import Val
from .source import Source
from .types import ArrayType, DType, outside_kernel
from .values import Array, Const, Frame, Local, Value

if TYPE_CHECKING:
    from .stmts import Translator


class Func:
    """A ``@vyre.func`` helper. Calling it from ordinary Python raises; kernels inline it."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        functools.update_wrapper(self, fn)
        self._source: Source | None = None

    @property
    def source(self) -> Source:
        if self._source is None:
            self._source = Source(self.fn, "func")
        return self._source

    def __call__(self, *args: object) -> object:
        raise outside_kernel(self.__name__)

    def __repr__(self) -> str:
        return f"<vyre.func {self.__name__}>"


def func(fn: Callable[..., Any]) -> Func:
    """Mark ``fn`` as a helper that ``@vyre.kernel`` bodies (and other helpers) may call; it is inlined."""
    return Func(fn)


def inline(tr: Translator, f: Func, call: ast.Call) -> Value:
    """Translate ``f``'s body at the call ``call``; the value of its final ``return`` (or 0)."""
    if any(f is g for g in tr.funcs):
        tr.fail(call, f"{f.__name__} calls itself (recursion), which kernels cannot do",
                "write the recursion as a loop")
    src = f.source
    fdef = src.node
    a = fdef.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.kw_defaults:
        raise src.error(fdef, "helpers take plain positional parameters (no defaults, *args, **kwargs or "
                        "keyword-only)", "list every parameter and pass each at the call", kernel=tr.kernel_name)
    params = a.posonlyargs + a.args
    if len(params) != len(call.args):
        tr.fail(call, f"{f.__name__} takes {len(params)} argument(s), got {len(call.args)}", "check the call")
    values = [tr.expr(x) for x in call.args]
    caller_src, caller_frame = tr.src, tr.frame
    frame = Frame()
    ann_of = [None if p.annotation is None else src.resolve(p.annotation) for p in params]
    for p, v, ann, node in zip(params, values, ann_of, call.args):
        if isinstance(ann, ArrayType) or isinstance(v, Array):
            if not isinstance(v, Array):
                tr.fail(node, f"parameter {p.arg!r} of {f.__name__} is an array", "pass an array")
            if isinstance(ann, ArrayType) and ann.dtype.dtype != v.dtype:
                tr.fail(node, f"{p.arg!r} expects {ann!r}, got a {v.dtype.value} array", "pass a matching array")
            frame.scopes[0][p.arg] = v
            continue
        if ann is not None and not isinstance(ann, DType):
            raise src.error(p, "a helper parameter is annotated with a dtype marker or In/Out/InOut[...]",
                            "e.g. x: f32", kernel=tr.kernel_name)
        dtype = ann.dtype if isinstance(ann, DType) else None
        if isinstance(v, Const) and dtype is not None and dtype.is_float and isinstance(v.value, int):
            v = Const(float(v.value))
        val = tr.as_val(v, node, dtype)
        t = tr.typed(val, node)
        var = tr.b.var(t, val, name=tr.fresh(f"{f.__name__}_{p.arg}"))
        local = Local(var.name, t, var, what="parameter")
        frame.scopes[0][p.arg] = local
    body = list(fdef.body)
    final = body.pop() if body and isinstance(body[-1], ast.Return) else None
    assert final is None or isinstance(final, ast.Return)
    ret_ann = None
    tr.funcs.append(f)
    tr.src, tr.frame = src, frame
    try:
        if fdef.returns is not None:
            ret_ann = src.resolve(fdef.returns)
        tr.body(body)
        if not isinstance(final, ast.Return) or final.value is None:
            return Const(0)
        with tr.at(final):
            out = tr.expr(final.value)
            if isinstance(ret_ann, DType):
                out = tr.as_val(out, final, ret_ann.dtype if not isinstance(out, Const) or
                                not (ret_ann.dtype.is_float and isinstance(out.value, int)) else ret_ann.dtype)
            if isinstance(out, Val):
                out = tr.let(out, f"{f.__name__}_ret")
            elif not isinstance(out, Const):
                tr.fail(final, "a helper returns a number or a value", "return an expression")
            return out
    finally:
        tr.funcs.pop()
        tr.src, tr.frame = caller_src, caller_frame


def returns(tr: Translator, node: ast.Return) -> None:
    """A ``return`` in a helper that is not its last statement."""
    tr.fail(node, "a helper may only return as its last statement",
            "compute the result into a variable and return it at the end")


__all__ = ["Func", "func", "inline", "returns"]
