"""Statements of a kernel body -> builder statements: assignments (locals keep the type of their first
assignment), stores, if/elif/else, ``for ... in range``, while, break/continue/return."""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Iterator

from ..ir.types import DataType
from ..ir.values import MutVar, Val
from . import funcs
from . import intrinsics as K
from .calls import atomic
from .exprs import ExprTranslator
from .types import DType
from .values import Array, Const, Local, Value


class Translator(ExprTranslator):
    """Translates a function body (the kernel's, and inlined helpers') statement by statement."""

    def body(self, stmts: list[ast.stmt]) -> None:
        for s in stmts:
            self.stmt(s)

    def stmt(self, node: ast.stmt) -> None:
        method = getattr(self, "s_" + type(node).__name__, None)
        if method is None:
            self.fail(node, f"the `{_stmt_name(node)}` statement is not supported in a kernel",
                      "kernels use assignments, if/elif/else, for ... in range(...), while, break, continue, "
                      "return and calls")
        block = self.b.block()
        mark = len(block)
        with self.at(node):
            method(node)
        for s in block[mark:]:  # for validation errors of the whole program: IR statement -> this line
            self.origin.setdefault(id(s), (self.src, node))

    @contextlib.contextmanager
    def scope(self) -> Iterator[None]:
        """A Python block: names first assigned in it are gone after it (the IR scopes them)."""
        self.frame.scopes.append({})
        try:
            yield
        finally:
            closed = self.frame.scopes.pop()
            for name, v in closed.items():
                if isinstance(v, Local) and v.what == "variable":
                    self.frame.gone.setdefault(name, v.line)

    # ---- simple statements ----
    def s_Pass(self, node: ast.Pass) -> None:
        pass

    def s_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        if isinstance(node.value, ast.Call):
            fn = self.callee(node.value)
            op = K.atomic_op(fn)
            if op is not None:
                atomic(self, op, node.value, discard=True)
                return
            self.expr(node.value)
            return
        self.fail(node, "an expression statement has no effect", "assign it, or delete the line")

    def s_Break(self, node: ast.Break) -> None:
        self.b.break_()

    def s_Continue(self, node: ast.Continue) -> None:
        self.b.continue_()

    def s_Return(self, node: ast.Return) -> None:
        if self.funcs:
            funcs.returns(self, node)
            return
        if node.value is not None:
            self.fail(node, "a kernel returns no value", "store results into an Out/InOut array; write `return`")
        self.b.return_()

    # ---- assignments ----
    def s_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) != 1:
            self.fail(node, "chained assignment (a = b = ...) is not supported", "assign each name separately")
        target = node.targets[0]
        if isinstance(target, ast.Tuple):
            self.unpack(target, node.value, node)
            return
        if isinstance(target, ast.Name) and isinstance(node.value, ast.Call):
            fn = self.callee(node.value)
            if fn is K.shared:
                self.shared(target.id, node.value)
                return
        self.assign(target, self.expr(node.value), node)

    def unpack(self, target: ast.Tuple, value: ast.expr, node: ast.AST) -> None:
        names = target.elts
        fn = self.callee(value) if isinstance(value, ast.Call) else None
        if fn is K.tid2 or fn is K.tid3:
            n = 2 if fn is K.tid2 else 3
            if (isinstance(value, ast.Call) and value.args) or len(names) != n or self.rank != n:
                self.fail(node, f"tid{n}() unpacks into {n} names in a {n}-D launch (this launch is "
                          f"{self.rank}-D)", f"write {', '.join('yxz'[:n])} = vyre.tid{n}()")
            vals: list[object] = list(self.tids)
        elif isinstance(value, ast.Tuple) and len(value.elts) == len(names):
            vals = [self.expr(v) for v in value.elts]
            # evaluate all first (a copy even of a plain variable: `a, b = b, a`)
            vals = [self.b.let(v, name=self.fresh("tup")) if isinstance(v, Val) else v for v in vals]
        else:
            self.fail(node, "tuple assignment needs a tuple of the same length (or vyre.tid2()/tid3())",
                      "write a, b = x, y")
        for t, v in zip(names, vals):
            self.assign(t, v, node)

    def assign(self, target: ast.expr, value: object, node: ast.AST, declared: DataType | None = None) -> None:
        if isinstance(target, ast.Subscript):
            arr = self.expr(target.value)
            if not isinstance(arr, Array):
                self.fail(node, "only array elements can be assigned by index", "x[i] = value for an array x")
            if not arr.writable:
                self.fail(node, f"{arr.name!r} is an In[...] array (read-only)", "annotate it InOut[...] or Out[...]")
            idx = self.index(arr, target.slice, target)
            arr.ref[idx] = self.as_val(value, node, arr.dtype)
            return
        if not isinstance(target, ast.Name):
            self.fail(node, f"cannot assign to {type(target).__name__}", "assign to a name or an array element")
        name = target.id
        cur = self.frame.lookup(name)
        if isinstance(cur, Local):
            if not cur.mutable:
                self.fail(node, f"{name!r} is a {cur.what} and cannot be assigned",
                          f"copy it into a new variable first: {name}2 = {name}")
            if declared is not None and declared != cur.dtype:
                self.fail(node, f"{name!r} is already a {cur.dtype.value}", "use a new name for the other type")
            v = self.as_val(value, node, cur.dtype if isinstance(value, Const) else None)
            t = self.typed(v, node)
            if t != cur.dtype:
                line = cur.line
                self.fail(node, f"{name!r} is a {cur.dtype.value} (first assigned on line {line}), assigned a "
                          f"{t.value} here", f"cast the value: {_cast_name(cur.dtype)}(...)")
            assert isinstance(cur.val, MutVar)
            cur.val.set(v)
            return
        if cur is not None:
            self.fail(node, f"{name!r} is an array or constant and cannot be assigned", "use another name")
        v = self.as_val(value, node, declared)
        t = declared or self.typed(v, node)
        if t.is_vector:
            self.fail(node, "vector locals are not supported", "use scalars")
        var = self.b.var(t, v, name=self.fresh(name))
        local = Local(var.name, t, var)
        local.line = self.src.line_of(node)
        self.bind(name, local)
        self.frame.gone.pop(name, None)

    def s_AnnAssign(self, node: ast.AnnAssign) -> None:
        ann = self.expr(node.annotation)
        if not isinstance(ann, DType):
            self.fail(node, "a local's annotation must be a dtype marker", "e.g. acc: f32 = 0")
        if node.value is None:
            if not isinstance(node.target, ast.Name) or self.frame.lookup(node.target.id) is not None:
                self.fail(node, "an annotation without a value declares a new local", "e.g. acc: f32 = 0")
            self.assign(node.target, Const(False) if ann.dtype is DataType.BOOL else Const(0), node, ann.dtype)
            return
        value = self.expr(node.value)
        if isinstance(value, Const) and ann.dtype.is_float and isinstance(value.value, int) \
                and not isinstance(value.value, bool):
            value = Const(float(value.value))
        self.assign(node.target, value, node, ann.dtype)

    def s_AugAssign(self, node: ast.AugAssign) -> None:
        target = node.target
        if isinstance(target, ast.Name):
            cur = self.expr(target)
            new = self.binop(node.op, cur, self.expr(node.value), node)
            self.assign(target, new, node)
            return
        if not isinstance(target, ast.Subscript):
            self.fail(node, "augmented assignment to this target is not supported", "x += v or a[i] += v")
        arr = self.expr(target.value)
        if not isinstance(arr, Array):
            self.fail(node, "only array elements can be assigned by index", "x[i] += v for an array x")
        if not arr.writable:
            self.fail(node, f"{arr.name!r} is an In[...] array (read-only)", "annotate it InOut[...]")
        idx = self.let(self.index(arr, target.slice, target), "idx")  # the index is evaluated once
        new = self.binop(node.op, arr.ref[idx], self.expr(node.value), node)
        arr.ref[idx] = self.as_val(new, node, arr.dtype)

    def shared(self, name: str, call: ast.Call) -> None:
        if len(call.args) != 2 or call.keywords:
            self.fail(call, "vyre.shared takes (dtype, count)", "e.g. tile = vyre.shared(f32, 256)")
        d, n = self.expr(call.args[0]), self.expr(call.args[1])
        if not isinstance(d, DType) or not isinstance(n, Const) or not isinstance(n.value, int) or n.value < 1:
            self.fail(call, "vyre.shared needs a dtype marker and a constant count >= 1",
                      "e.g. tile = vyre.shared(f32, 256) (a module constant works as the count)")
        if len(self.frame.scopes) > 1 or self.funcs:
            self.fail(call, "workgroup arrays are declared at the top level of the kernel", "move it out of blocks")
        ref = self.b.workgroup_array(self.fresh(name), d.dtype, n.value)
        self.bind(name, Array(name, ref, d.dtype, shared_count=n.value))

    # ---- control flow ----
    def s_If(self, node: ast.If) -> None:
        cond = self.val(node.test, DataType.BOOL)
        with self.b.if_(cond), self.scope():
            self.body(node.body)
        if node.orelse:
            with self.b.else_(), self.scope():
                self.body(node.orelse)

    def s_While(self, node: ast.While) -> None:
        if node.orelse:
            self.fail(node, "while ... else is not supported", "drop the else (use a flag)")
        mark = len(self.b.block())
        cond = self.val(node.test, DataType.BOOL)
        if len(self.b.block()) == mark:
            with self.b.while_(cond), self.scope():
                self.body(node.body)
            return
        # the condition needs statements (a helper, floor division): re-evaluate them each trip
        del self.b.block()[mark:]
        with self.b.while_(True), self.scope():
            with self.b.if_(~self.val(node.test, DataType.BOOL)):
                self.b.break_()
            self.body(node.body)

    def check_signed_range(self, start: Value, stop: Value, start_n: ast.expr | None, stop_n: ast.expr,
                           it: ast.Call) -> None:
        """``range(len(x) - 1, -1, -1)``: a negative constant bound with a u32 one (len(), shapes and thread
        ids are u32) needs a signed loop, whose fix names the u32 bound cast to i32."""
        for const, other, other_n in ((start, stop, stop_n), (stop, start, start_n)):
            if (isinstance(const, Const) and isinstance(const.value, int) and not isinstance(const.value, bool)
                    and const.value < 0 and isinstance(other, Val) and other_n is not None
                    and self.typed(other, other_n) is DataType.U32):
                bound = ast.get_source_segment(self.src.text, other_n) or ast.unparse(other_n)
                fixed = [ast.unparse(a) for a in it.args]
                fixed[list(it.args).index(other_n)] = _signed(other_n)
                self.fail(it, f"range() over {bound} (a u32) and {const.value} (negative): a u32 loop variable "
                          "cannot count below 0",
                          f"make the loop signed by casting the u32 bound to i32: range({', '.join(fixed)})")

    def s_For(self, node: ast.For) -> None:
        if node.orelse:
            self.fail(node, "for ... else is not supported", "drop the else (use a flag)")
        it = node.iter
        if not (isinstance(it, ast.Call) and self.callee(it) is range and not it.keywords
                and 1 <= len(it.args) <= 3):
            self.fail(it, "a kernel loops over range(...) only", "for i in range(n) / range(a, b) / range(a, b, step)")
        if not isinstance(node.target, ast.Name):
            self.fail(node.target, "the loop variable must be one name", "for i in range(n): ...")
        args = it.args
        start_n, stop_n = (args[0], args[1]) if len(args) >= 2 else (None, args[0])
        step = 1
        if len(args) == 3:
            s = self.expr(args[2])
            if not isinstance(s, Const) or not isinstance(s.value, int) or isinstance(s.value, bool) or s.value == 0:
                self.fail(args[2], "the step of range() must be a constant non-zero int", "e.g. range(0, n, 2)")
            step = s.value
        start = self.expr(start_n) if start_n is not None else Const(0)
        stop = self.expr(stop_n)
        self.check_signed_range(start, stop, start_n, stop_n, it)
        a, b, t = self.pair(start, stop, it)
        if not t.is_int:
            self.fail(it, f"range() needs integers, found {t.value}", "cast the bounds: range(u32(n))")
        b = self.let(b, "stop")  # Python evaluates the bound once
        name = node.target.id
        with self.b.for_range(a, b, step, name=self.fresh(name)) as k, self.scope():
            self.bind(name, Local(str(getattr(k.node, "name", name)), t, k, mutable=False, what="loop variable"))
            self.body(node.body)


def _signed(node: ast.expr) -> str:
    """The source of ``node`` made i32: ``len(x) - 1`` -> ``i32(len(x)) - 1`` (its left operand cast when it
    is arithmetic with a constant, so the constant takes the type i32), else ``i32(node)``."""
    if isinstance(node, ast.BinOp) and not isinstance(node.left, ast.Constant):
        op = ast.unparse(node)[len(ast.unparse(node.left)):]
        if isinstance(node.left, (ast.Name, ast.Call, ast.Attribute, ast.Subscript)) and op.startswith(" "):
            return f"i32({ast.unparse(node.left)}){op}"
    return f"i32({ast.unparse(node)})"


def _cast_name(d: DataType) -> str:
    return "bool_" if d is DataType.BOOL else d.value


def _stmt_name(node: ast.stmt) -> str:
    names = {"Try": "try", "With": "with", "Global": "global", "Nonlocal": "nonlocal", "FunctionDef": "def",
             "ClassDef": "class", "Delete": "del", "Import": "import", "ImportFrom": "from ... import",
             "Raise": "raise", "Assert": "assert", "AsyncFor": "async for", "AsyncWith": "async with",
             "Match": "match", "TryStar": "try"}
    return names.get(type(node).__name__, type(node).__name__)


__all__ = ["Translator"]
