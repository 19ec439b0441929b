"""Expressions of a kernel body -> builder values, with the kernel's type rules (no silent promotion,
Python literals take the other operand's type) and Python's ``//`` and ``%`` on integers."""

from __future__ import annotations

import ast
import contextlib
import math
import operator
import types as pytypes
from collections.abc import Iterator
from typing import Any, NoReturn

import numpy as np

from ..errors import KernelError, ValidationError
from ..ir.builder import ProgramBuilder
from ..ir.names import name_problem, suggest_name
from ..ir.nodes import Binary, BinOp, Expr, Lit, Select
from ..ir.types import DataType
from ..ir.typing import infer
from ..ir.values import Val
from . import funcs
from . import intrinsics as K
from .arith import CMP, PY_OPS, binop
from .calls import call
from .resident import is_resident_array
from .source import MISSING, Source
from .types import DType
from .values import Array, Const, Frame, Local, Shape, Value

#: numpy dtype name -> the kernel's marker (for the hint of an array the kernel reads without a parameter)
_MARKERS = {"float32": "f32", "float16": "f16", "int32": "i32", "uint32": "u32", "bool": "bool_"}

_MIX_FIX = "cast one operand so both have the same type, e.g. f32(i) or u32(k) (vyre never promotes silently)"


class KBuilder(ProgramBuilder):
    """The builder plus what the translator needs: the current block, to take back statements."""

    def block(self) -> list[Any]:
        return self._blocks[-1]


class ExprTranslator:
    """Translation state and the expression half of the translator (statements: :mod:`.stmts`)."""

    b: KBuilder
    kernel_name: str

    def __init__(self, source: Source, builder: KBuilder) -> None:
        self.b = builder
        self.kernel_name = source.name
        self.src = source
        self.frame = Frame()
        self.used: set[str] = set()
        self.origin: dict[int, tuple[Source, ast.AST]] = {}
        self.funcs: list[object] = []  # the @vyre.func helpers being inlined (recursion check)
        self.rank = 1
        self.tids: list[Val] = []
        self.dims: list[Val] = []
        self.local_ids: list[Val] = []
        self.group_ids: list[Val] = []

    # ---- errors ----
    def fail(self, node: ast.AST | None, message: str, fix: str) -> NoReturn:
        raise self.src.error(node, message, fix, kernel=self.kernel_name)

    @contextlib.contextmanager
    def at(self, node: ast.AST) -> Iterator[None]:
        """Re-raise a builder/validation error raised while translating ``node`` as a KernelError there."""
        try:
            yield
        except KernelError:
            raise
        except ValidationError as exc:
            issue = exc.issues[0] if exc.issues else None
            msg = issue.message if issue else exc.message
            raise self.src.error(node, msg, issue.fix if issue else (exc.fix or ""), exc.issues,
                                 kernel=self.kernel_name) from exc

    def fresh(self, base: str) -> str:
        """A program-wide unique IR name close to ``base``."""
        name = base if name_problem(base) is None else suggest_name(base)
        cand, k = name, 1
        while cand in self.used:
            k += 1
            cand = f"{name}_{k}"
        self.used.add(cand)
        return cand

    # ---- types ----
    def typed(self, v: Val, node: ast.AST) -> DataType:
        """The type of ``v``, or a KernelError with the type checker's message."""
        problems: list[tuple[Any, ...]] = []
        t = infer(v.node, self.b._env, report=lambda *a: problems.append(a))
        if problems or t is None:
            _, _, _, message, fix = problems[0] if problems else (None, None, None, "the type is unknown", "")
            self.fail(node, message, fix)
        return t

    def lit(self, c: Const, dtype: DataType | None, node: ast.AST) -> Val:
        """The constant ``c`` as a typed literal (its default type when ``dtype`` is None)."""
        d = dtype or c.default_dtype
        v = c.value
        if d.is_vector:
            d = d.scalar
        if isinstance(v, bool) != (d is DataType.BOOL):
            self.fail(node, f"{v!r} cannot be used as a {d.value} value",
                      "compare to get a bool (x != 0), or cast a bool with u32(flag)")
        if isinstance(v, float) and d.is_int:
            self.fail(node, f"the float {v!r} cannot be used as an {d.value} value",
                      "write an integer literal, or cast the other operand to a float (f32(...))")
        if d.is_int:
            lo, hi = (0, 2**32 - 1) if d is DataType.U32 else (-(2**31), 2**31 - 1)
            if not lo <= int(v) <= hi:
                if d is DataType.U32 and -(2**31) <= int(v) < 0:
                    self.fail(node, f"{v} does not fit in u32 [{lo}, {hi}]: the other operand is a u32 (len(), "
                              ".shape[k] and the thread ids are u32), which holds no negative number",
                              "make the u32 operand signed, e.g. i32(len(x)) - 1 or i32(i) + "
                              f"{v} (casting {v} itself to i32 would mix i32 with u32)")
                self.fail(node, f"{v} does not fit in {d.value} [{lo}, {hi}]",
                          "use a value in range, or give the constant a type that holds it, e.g. "
                          f"{'u32' if 0 <= int(v) < 2**32 else 'f32'}({v})")
        return self.b.lit(v, d)

    def val(self, node: ast.expr, dtype: DataType | None = None) -> Val:
        """``node`` as a typed value (a constant gets ``dtype`` or its default type)."""
        return self.as_val(self.expr(node), node, dtype)

    def as_val(self, v: Value, node: ast.AST, dtype: DataType | None = None) -> Val:
        if isinstance(v, Const):
            return self.lit(v, dtype, node)
        if isinstance(v, Val):
            if dtype is not None and self.typed(v, node) != dtype:
                found = self.typed(v, node).value
                if dtype is DataType.BOOL:
                    self.fail(node, f"a condition (and `and`/`or`/`not`) needs a bool, found {found}",
                              "compare it, e.g. n != 0 (numbers have no truth value in a kernel)")
                self.fail(node, f"expected a {dtype.value} value, found {found}", f"cast it: {_marker(dtype)}(...)")
            return v
        if isinstance(v, Array):
            self.fail(node, f"the array {v.name!r} is used as a value", f"index it, e.g. {v.name}[i]")
        self.fail(node, f"{_describe(v)} is not a value", "use a number, a variable or an array element")

    def pair(self, a: Value, b: Value, node: ast.AST) -> tuple[Val, Val, DataType]:
        """Two operands of one type: a constant takes the other's type; two values must agree."""
        if isinstance(a, Const) and not isinstance(b, Const):
            vb = self.as_val(b, node)
            t = self.typed(vb, node)
            return self.lit(a, t, node), vb, t
        va = self.as_val(a, node)
        ta = self.typed(va, node)
        if isinstance(b, Const):
            return va, self.lit(b, ta, node), ta
        vb = self.as_val(b, node)
        tb = self.typed(vb, node)
        if ta != tb:
            self.fail(node, f"the operands have different types: {ta.value} and {tb.value}", _MIX_FIX)
        return va, vb, ta

    def let(self, v: Val, base: str = "t") -> Val:
        if isinstance(v.node, (Lit,)) or type(v.node).__name__ in ("Var", "Builtin"):
            return v
        return self.b.let(v, name=self.fresh(base))

    # ---- dispatch on the node ----
    def expr(self, node: ast.expr) -> Value:
        method = getattr(self, "e_" + type(node).__name__, None)
        if method is None:
            self.fail(node, f"{_node_name(node)} is not supported in a kernel",
                      "use arithmetic, comparisons, calls of vyre functions, array indexing and names")
        with self.at(node):
            return method(node)

    def e_Constant(self, node: ast.Constant) -> Value:
        if isinstance(node.value, (bool, int, float)):
            return Const(node.value)
        self.fail(node, f"a {type(node.value).__name__} constant is not supported in a kernel",
                  "kernels compute with numbers and bools only")

    def e_Name(self, node: ast.Name) -> Value:
        local = self.frame.lookup(node.id)
        if isinstance(local, Local):
            return local.val
        if local is not None:
            return local
        if node.id in self.frame.gone:
            self.fail(node, f"{node.id!r} was assigned inside a block (line {self.frame.gone[node.id]}) and is "
                      "not defined after it", f"assign {node.id} before the if/for/while (e.g. {node.id} = 0)")
        return self.static(node, self.src.lookup(node.id), node.id)

    def static(self, node: ast.AST, obj: object, name: str) -> Value:
        """A name of the function's globals/closure: constants inline, markers stay markers."""
        if obj is MISSING:
            self.fail(node, f"name {name!r} is not defined", "define it, or assign it before use")
        if isinstance(obj, (bool, int, float, np.bool_, np.integer, np.floating)):
            return Const(obj.item() if isinstance(obj, np.generic) else obj)
        if _is_static(obj) or isinstance(obj, funcs.Func):
            return obj
        if K.is_one_of(obj, (int, float, bool)):
            self.fail(node, f"Python's {name}() is not a kernel cast", "cast with vyre's dtypes: f32(x), i32(x), "
                      "u32(x), bool_(x)")
        if isinstance(obj, np.ndarray) or is_resident_array(obj):
            dt = getattr(obj, "dtype", None)
            marker = _MARKERS.get(str(dt), "f32")
            self.fail(node, f"{name!r} is an array ({type(obj).__name__} of shape {tuple(obj.shape)}, {dt}) from "
                      "outside the kernel, which a kernel cannot read: it sees only the arrays it is given",
                      f"pass it as a parameter: add `{name.split('.')[-1]}: In[{marker}]` to the kernel's parameters "
                      "and the array to the launch's arguments")
        self.fail(node, f"{name!r} is {_describe(obj)}, which a kernel cannot use",
                  "kernels may use int/float/bool constants, vyre functions, @vyre.func helpers and math "
                  "functions; pass data as parameters")

    def e_Attribute(self, node: ast.Attribute) -> Value:
        base = self.expr(node.value)
        if isinstance(base, Array) and node.attr == "shape":
            return Shape(base)
        if _is_module(base):
            obj = getattr(base, node.attr, MISSING)
            return self.static(node, obj, f"{getattr(base, '__name__', '?')}.{node.attr}")
        self.fail(node, f"attribute {node.attr!r} of {_describe(base)} is not supported",
                  "use x.shape[k] of an array, or vyre.<function>")

    def e_BinOp(self, node: ast.BinOp) -> Value:
        return self.binop(node.op, self.expr(node.left), self.expr(node.right), node)

    def binop(self, op: ast.operator, a: Value, b: Value, node: ast.AST) -> Value:
        """``a op b`` with the kernel's type rules (see :mod:`.arith`)."""
        return binop(self, op, a, b, node)

    def checked(self, v: Val, node: ast.AST) -> Val:
        self.typed(v, node)
        return v


    def e_UnaryOp(self, node: ast.UnaryOp) -> Value:
        v = self.expr(node.operand)
        op = type(node.op)
        if isinstance(v, Const):
            if op is ast.Not:
                if not isinstance(v.value, bool):
                    self.fail(node, "`not` needs a bool", "compare first, e.g. not (n != 0)")
                return Const(not v.value)
            fold: dict[type, Any] = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}
            return Const(fold[op](v.value))
        x = self.as_val(v, node)
        t = self.typed(x, node)
        if op is ast.UAdd:
            return x
        if op is ast.Not:
            if t is not DataType.BOOL:
                self.fail(node, f"`not` needs a bool, found {t.value}", "compare first, e.g. not (x != 0)")
            return ~x
        if op is ast.Invert:
            if not t.is_int:
                self.fail(node, f"~ needs an integer, found {t.value}", "use `not` on bools")
            return ~x
        return self.checked(-x, node)

    def e_BoolOp(self, node: ast.BoolOp) -> Value:
        vals = [self.val(v, DataType.BOOL) for v in node.values]
        out = vals[0]
        for v in vals[1:]:
            out = Val(self.b, Binary(op=BinOp.AND if isinstance(node.op, ast.And) else BinOp.OR,
                                     lhs=out.node, rhs=v.node))
        return out

    def e_Compare(self, node: ast.Compare) -> Value:
        left = self.expr(node.left)
        result: Val | None = None
        for k, (op, right_node) in enumerate(zip(node.ops, node.comparators)):
            right = self.expr(right_node)
            if type(op) not in CMP:
                self.fail(node, f"the comparison {type(op).__name__} is not supported", "use < <= > >= == !=")
            if k < len(node.ops) - 1 and isinstance(right, Val):
                right = self.let(right, "mid")  # a chained comparison evaluates the middle once
            if isinstance(left, Const) and isinstance(right, Const):
                c: Val = self.b.lit(bool(PY_OPS[type(op)](left.value, right.value)))
            else:
                va, vb, t = self.pair(left, right, node)
                c = self.checked(Val(self.b, Binary(op=CMP[type(op)], lhs=va.node, rhs=vb.node)), node)
            result = c if result is None else (result & c)
            left = right
        assert result is not None
        return result

    def e_IfExp(self, node: ast.IfExp) -> Value:
        cond = self.val(node.test, DataType.BOOL)
        if _has_effects(node.body, self) or _has_effects(node.orelse, self):
            return self.lazy_ifexp(cond, node)
        a, b, t = self.pair(self.expr(node.body), self.expr(node.orelse), node)
        return Val(self.b, Select(cond=cond.node, if_true=a.node, if_false=b.node))

    def lazy_ifexp(self, cond: Val, node: ast.IfExp) -> Val:
        """``a if c else b`` where a side has an atomic or a helper call: an if/else into a variable."""
        mark = len(self.b.block())
        sides = [self.expr(node.body), self.expr(node.orelse)]
        typed = [self.typed(self.as_val(v, n), n) for v, n in zip(sides, (node.body, node.orelse))
                 if not isinstance(v, Const)]
        first = sides[0]
        t = typed[0] if typed or not isinstance(first, Const) else first.default_dtype
        del self.b.block()[mark:]  # the probe only found the type
        out = self.b.var(t, name=self.fresh("sel"))
        with self.b.if_(cond):
            out.set(self.val(node.body, t))
        with self.b.else_():
            out.set(self.val(node.orelse, t))
        return out

    def e_Subscript(self, node: ast.Subscript) -> Value:
        base = self.expr(node.value)
        if isinstance(base, Shape):
            k = self.expr(node.slice)
            if not isinstance(k, Const) or not isinstance(k.value, int) or not 0 <= k.value < base.array.ndim:
                self.fail(node, f"shape index must be a constant from 0 to {base.array.ndim - 1}",
                          "write x.shape[0], x.shape[1], ...")
            return self.shape(base.array, k.value, node)
        if not isinstance(base, Array):
            self.fail(node, f"{_describe(base)} cannot be indexed", "index an array parameter or a shared array")
        return base.ref[self.index(base, node.slice, node)]

    def shape(self, arr: Array, k: int, node: ast.AST) -> Value:
        if arr.shared_count is not None:
            return Const(arr.shared_count)
        if k > 0:
            return Const(arr.trailing[k - 1])
        n = arr.ref.len()
        inner = math.prod(arr.trailing)
        return n if inner == 1 else n / self.b.lit(inner, DataType.U32)

    def index(self, arr: Array, idx: ast.expr, node: ast.AST) -> Val:
        """The flat element index of ``arr[idx]`` (row-major over the array's dimensions)."""
        parts = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        if isinstance(idx, ast.Slice) or any(isinstance(p, ast.Slice) for p in parts):
            self.fail(node, "slices are not supported", "index one element: x[i] or img[y, x]")
        if len(parts) != arr.ndim:
            self.fail(node, f"{arr.name!r} has {arr.ndim} dimension(s), indexed with {len(parts)}",
                      f"give {arr.ndim} indices, e.g. {arr.name}[{', '.join('ijk'[:arr.ndim])}]")
        vals = [self.expr(p) for p in parts]
        if arr.ndim == 1:
            v = vals[0]
            if isinstance(v, Const) and isinstance(v.value, int) and not isinstance(v.value, bool) and v.value >= 0:
                return self.b.lit(v.value, DataType.U32)
            out = self.as_val(v, parts[0])
            if self.typed(out, parts[0]) not in (DataType.U32, DataType.I32):
                self.fail(parts[0], "an index must be an integer", "cast it: u32(x) (a float never indexes)")
            return out
        flat: Val | None = None
        for k, (v, p) in enumerate(zip(vals, parts)):
            u = self.as_val(v, p, None if not isinstance(v, Const) else DataType.U32)
            t = self.typed(u, p)
            if t is DataType.I32:
                u = u.cast("u32")
            elif t is not DataType.U32:
                self.fail(p, "an index must be an integer", "cast it: u32(x) (a float never indexes)")
            flat = u if flat is None else flat * self.b.lit(arr.trailing[k - 1], DataType.U32) + u
        assert flat is not None
        return flat

    def e_Call(self, node: ast.Call) -> Value:
        return call(self, node)

    def callee(self, node: ast.Call) -> object:
        """What ``node`` calls: a marker, a builtin or a helper (never a value)."""
        fn = self.expr(node.func)
        if isinstance(fn, (Val, Const, Array, Shape)):
            self.fail(node, f"{_describe(fn)} is not callable", "call vyre functions or @vyre.func helpers")
        return fn

    def e_Tuple(self, node: ast.Tuple) -> Value:
        self.fail(node, "tuples are only supported in `a, b = c, d` and as n-D indices", "assign each name alone")

    def bind(self, name: str, local: Local | Array | Const) -> None:
        self.frame.scopes[-1][name] = local


def _marker(d: DataType) -> str:
    return {DataType.BOOL: "bool_"}.get(d, d.value)


def _node_name(node: ast.AST) -> str:
    names = {"ListComp": "a list comprehension", "GeneratorExp": "a generator expression",
             "SetComp": "a set comprehension", "DictComp": "a dict comprehension", "Lambda": "a lambda",
             "JoinedStr": "an f-string", "List": "a list", "Dict": "a dict", "Set": "a set",
             "NamedExpr": "the := operator", "Await": "await", "Yield": "yield", "Starred": "*unpacking",
             "Slice": "a slice"}
    return names.get(type(node).__name__, type(node).__name__)


def _describe(obj: object) -> str:
    if isinstance(obj, Array):
        return f"the array {obj.name!r}"
    if isinstance(obj, (Const, Val)):
        return "a value"
    if isinstance(obj, pytypes.ModuleType):
        return f"the module {obj.__name__}"
    if callable(obj):
        return f"the function {getattr(obj, '__module__', None) or '?'}.{getattr(obj, '__qualname__', obj)}"
    text = repr(obj)
    return f"{type(obj).__name__} {text if len(text) <= 60 else text[:57] + '...'}"


def _is_module(obj: object) -> bool:
    return isinstance(obj, pytypes.ModuleType) and getattr(obj, "__name__", "").split(".")[0] in ("vyre", "math")


def _is_static(obj: object) -> bool:
    """Objects a kernel may name: vyre markers and modules, math functions and the Python builtins used."""
    if isinstance(obj, (K.Intrinsic, DType)) or _is_module(obj):
        return True
    try:
        hash(obj)
    except TypeError:
        return False  # a list, dict, array...
    return K.math_op(obj) is not None or K.is_one_of(obj, (range, len, min, max, abs, _kernel_decorator()))


def _kernel_decorator() -> object:
    from .decorator import kernel  # why: a cycle (decorator -> build -> exprs)
    return kernel


def _has_effects(node: ast.AST, tr: ExprTranslator) -> bool:
    """Whether ``node`` calls an atomic or a @vyre.func helper (then it may not be evaluated eagerly)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            try:
                f = tr.callee(sub)
            except KernelError:
                continue
            if K.atomic_op(f) is not None or isinstance(f, funcs.Func):
                return True
    return False


__all__ = ["ExprTranslator", "KBuilder", "Expr"]
