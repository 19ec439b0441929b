"""WGSL text of IR expressions: one ``visit_<Expr class>`` per expression class.

Operators map onto small format tables; i32 division/remainder, float-to-int casts, f16
bitcasts and uniform loads go through helper functions emitted once per shader
(:meth:`vyre.lower.state.LoweringState.helper`).
"""

from __future__ import annotations

from ..ir.nodes import (
    EXPR_TYPES,
    Atomic,
    AtomicOp,
    Binary,
    BinOp,
    Bitcast,
    BufLen,
    Builtin,
    BuiltinName,
    Cast,
    Expr,
    Extract,
    Fma,
    Lit,
    Load,
    Select,
    Subgroup,
    SubgroupOp,
    Unary,
    UnOp,
    Var,
    VecNew,
)
from ..ir.traverse import Visitor, expr_children
from ..ir.types import DataType
from . import wide
from .layout import AXES, bare, is_atom, tag, uniform_layout
from .literals import literal
from .state import LoweringState

UNARY_FN = {
    UnOp.ABS: "abs", UnOp.SQRT: "sqrt", UnOp.INVERSE_SQRT: "inverseSqrt", UnOp.EXP: "exp", UnOp.EXP2: "exp2",
    UnOp.LOG: "log", UnOp.LOG2: "log2", UnOp.SIN: "sin", UnOp.COS: "cos", UnOp.TAN: "tan", UnOp.TANH: "tanh",
    UnOp.FLOOR: "floor", UnOp.CEIL: "ceil", UnOp.ROUND: "round", UnOp.TRUNC: "trunc", UnOp.FRACT: "fract",
    UnOp.SIGN: "sign", UnOp.COUNT_ONES: "countOneBits", UnOp.REVERSE_BITS: "reverseBits",
    UnOp.COUNT_LEADING_ZEROS: "countLeadingZeros", UnOp.COUNT_TRAILING_ZEROS: "countTrailingZeros",
}
BINARY_OP = {
    BinOp.ADD: "+", BinOp.SUB: "-", BinOp.MUL: "*", BinOp.DIV: "/", BinOp.REM: "%",
    BinOp.BIT_AND: "&", BinOp.BIT_OR: "|", BinOp.BIT_XOR: "^", BinOp.SHL: "<<", BinOp.SHR: ">>",
    BinOp.EQ: "==", BinOp.NE: "!=", BinOp.LT: "<", BinOp.LE: "<=", BinOp.GT: ">", BinOp.GE: ">=",
    BinOp.AND: "&&", BinOp.OR: "||",
}
BINARY_FN = {BinOp.MIN: "min", BinOp.MAX: "max", BinOp.POW: "pow"}
ATOMIC_FN = {
    AtomicOp.ADD: "atomicAdd", AtomicOp.SUB: "atomicSub", AtomicOp.MIN: "atomicMin", AtomicOp.MAX: "atomicMax",
    AtomicOp.AND: "atomicAnd", AtomicOp.OR: "atomicOr", AtomicOp.XOR: "atomicXor",
    AtomicOp.EXCHANGE: "atomicExchange",
}

SUBGROUP_FN = {
    SubgroupOp.ADD: "subgroupAdd", SubgroupOp.MUL: "subgroupMul", SubgroupOp.MIN: "subgroupMin",
    SubgroupOp.MAX: "subgroupMax", SubgroupOp.AND: "subgroupAnd", SubgroupOp.OR: "subgroupOr",
    SubgroupOp.XOR: "subgroupXor", SubgroupOp.ALL: "subgroupAll", SubgroupOp.ANY: "subgroupAny",
    SubgroupOp.INCLUSIVE_ADD: "subgroupInclusiveAdd", SubgroupOp.EXCLUSIVE_ADD: "subgroupExclusiveAdd",
    SubgroupOp.INCLUSIVE_MUL: "subgroupInclusiveMul", SubgroupOp.EXCLUSIVE_MUL: "subgroupExclusiveMul",
    SubgroupOp.BROADCAST: "subgroupBroadcast", SubgroupOp.BROADCAST_FIRST: "subgroupBroadcastFirst",
    SubgroupOp.SHUFFLE: "subgroupShuffle", SubgroupOp.SHUFFLE_XOR: "subgroupShuffleXor",
    SubgroupOp.SHUFFLE_UP: "subgroupShuffleUp", SubgroupOp.SHUFFLE_DOWN: "subgroupShuffleDown",
    SubgroupOp.BALLOT: "subgroupBallot",
}


class ExprRenderer(Visitor[str], covers=EXPR_TYPES):
    """Renders expressions of the program in ``st`` (types from its environment)."""

    def __init__(self, st: LoweringState):
        self.st = st

    def root(self, e: Expr) -> str:
        """Render a statement-level expression: type-check the whole tree once, then render."""
        self.st.type(e)
        return self.visit(e)

    def visit_Lit(self, e: Lit) -> str:
        return literal(e.dtype, e.value)

    def visit_Var(self, e: Var) -> str:
        return self.st.lookup(e.name, e)[0]

    def index(self, e: Expr) -> str:
        return bare(self.visit(e))

    def visit_Load(self, e: Load) -> str:
        a = self.st.array(e.buffer, e)
        i = self.index(e.index)
        if a.atomic:
            return f"atomicLoad(&{a.wgsl}[{i}])"
        if a.uniform:
            if self.st.type(e.index) is DataType.I32:
                i = f"u32({i})"
            _, _, kind = uniform_layout(a.dtype, a.count or 0)
            fn = self.st.helper(f"_ld_{a.wgsl}", "uniform_load", array=a.wgsl, dtype=a.dtype.value, layout=kind)
            return f"{fn}({i})"
        return f"{a.wgsl}[{i}]"

    def visit_BufLen(self, e: BufLen) -> str:
        a = self.st.array(e.buffer, e)
        if a.count is not None:
            return f"{a.count}u"
        return f"_vyre.lens[{a.index // 4}].{AXES[a.index % 4]}"

    def visit_Builtin(self, e: Builtin) -> str:
        n = e.name
        axis = None if e.axis is None else AXES[e.axis]
        if n is BuiltinName.LOCAL_INDEX:
            return "_lidx"
        if n is BuiltinName.SUBGROUP_INVOCATION_ID:
            self.st.builtins.add("sgid")
            return "_sgid"
        if n is BuiltinName.SUBGROUP_SIZE:
            self.st.builtins.add("sgsize")
            return "_sgsize"
        if n is BuiltinName.GLOBAL_INDEX:
            self.st.builtins.add("gidx")
            return "_gidx"
        if n is BuiltinName.LOCAL_ID:
            return f"_lid.{axis}"
        if n is BuiltinName.NUM_WORKGROUPS:
            return f"_vyre.grid.{axis}"
        if n is BuiltinName.WORKGROUP_ID:
            self.st.builtins.add("wgid")
            return f"_wgid.{axis}"
        self.st.builtins.update(("wgid", "gid"))
        return f"_gid.{axis}"

    def runtime(self, e: Expr, text: str) -> str:
        """``text`` (the WGSL of ``e``) made a runtime value when ``e`` is a constant expression (see
        templates/runtime.wgsl.j2). The passes already bind the left operand of an operation on
        constants to a let; an integer divisor must not be a constant either (a zero one is a
        WGSL shader-creation error)."""
        if not is_const(e):
            return text
        t = self.st.type(e)
        fn = self.st.helper(f"_rt_{tag(t)}", "runtime_value", template="runtime.wgsl.j2", dtype=t.value)
        return f"{fn}({text})"

    def visit_Unary(self, e: Unary) -> str:
        a = self.visit(e.arg)
        if e.op is UnOp.NEG:
            return f"(-{a})"
        if e.op is UnOp.NOT:
            return f"(!{a})" if self.st.type(e.arg) is DataType.BOOL else f"(~{a})"
        return wide.unary(self, e, a) or f"{UNARY_FN[e.op]}({a})"

    def visit_Binary(self, e: Binary) -> str:
        lhs, rhs = self.visit(e.lhs), self.visit(e.rhs)
        if e.op in (BinOp.DIV, BinOp.REM) and self.st.type(e).is_int:
            rhs = self.runtime(e.rhs, rhs)  # a constant zero divisor is a WGSL shader-creation error
        if (w := wide.binary(self, e, lhs, rhs)) is not None:
            return w
        if e.op in (BinOp.DIV, BinOp.REM) and self.st.type(e).scalar is DataType.I32:
            return self.signed_divrem(e, lhs, rhs)
        if e.op is BinOp.REM and self.st.type(e).is_float:
            return self.float_rem(e, lhs, rhs)
        if e.op in BINARY_FN:
            return f"{BINARY_FN[e.op]}({lhs}, {rhs})"
        return f"({lhs} {BINARY_OP[e.op]} {rhs})"

    def signed_divrem(self, e: Binary, lhs: str, rhs: str) -> str:
        """i32 division/remainder through a helper that never divides by 0 or -1."""
        t = self.st.type(e)
        if self.st.type(e.lhs) != t:
            lhs = f"{t.value}({lhs})"
        if self.st.type(e.rhs) != t:
            rhs = f"{t.value}({rhs})"
        rem = e.op is BinOp.REM
        u = DataType.vector(DataType.U32, t.lanes)
        one, zero = (f"{t.value}(1i)", f"{t.value}(0i)") if t.is_vector else ("1i", "0i")
        uzero = f"{u.value}(0u)" if t.is_vector else "0u"
        fn = self.st.helper(f"_{'rem' if rem else 'div'}_{tag(t)}", "int_divrem", dtype=t.value, udtype=u.value,
                         one=one, zero=zero, uzero=uzero, rem=rem)
        return f"{fn}({lhs}, {rhs})"

    def float_rem(self, e: Binary, lhs: str, rhs: str) -> str:
        """Float ``%`` through the exact remainder helper (see templates/float_rem.wgsl.j2)."""
        t = self.st.type(e)
        if self.st.type(e.lhs) != t:
            lhs = f"{t.value}({lhs})"
        if self.st.type(e.rhs) != t:
            rhs = f"{t.value}({rhs})"
        base = self.st.helper("_rem_f32", "float_rem", template="float_rem.wgsl.j2", fmax="0x1.fffffep+127f")
        if t is DataType.F32:
            return f"{base}({lhs}, {rhs})"
        fn = self.st.helper(f"_rem_{tag(t)}", "float_rem_cast", template="float_rem.wgsl.j2", dtype=t.value,
                            scalar_fn=base, lanes=t.lanes)
        return f"{fn}({lhs}, {rhs})"

    def visit_Select(self, e: Select) -> str:
        f, t, c = self.visit(e.if_false), self.visit(e.if_true), self.visit(e.cond)
        dt = self.st.type(e.if_true)
        if dt in _MASKED_SELECT and _register_only(e.if_true) and _register_only(e.if_false) and not is_const(e.cond):
            # lavapipe miscompiles a select between two constants (select(0u, 0xBF800000u, c) gave 0x80000000
            # where c is false, as if rewritten to -f32(c); an if/else too): the condition's bit mask picks the
            # bits instead, which it compiles right (and is the same value everywhere). Arms that read no memory
            # qualify (the passes bind constants to lets, which the driver folds back)
            mask = f"(0u - u32({c}))"
            if dt is DataType.U32:
                return f"({f} ^ (({t} ^ {f}) & {mask}))"
            tb, fb = f"bitcast<u32>({t})", f"bitcast<u32>({f})"
            return f"bitcast<{dt.value}>({fb} ^ (({tb} ^ {fb}) & {mask}))"
        return f"select({f}, {t}, {c})"

    def visit_Cast(self, e: Cast) -> str:
        dst = e.dtype
        src = self.st.type(e.arg)
        a = self.visit(e.arg)
        if src is DataType.BOOL and dst is DataType.BOOL:
            return a
        if src is DataType.BOOL:
            return f"select({literal(dst, 0)}, {literal(dst, 1)}, {a})"
        if dst is DataType.BOOL:
            return f"({a} != {literal(src, 0)})"
        if (w := wide.cast(self, e, a)) is not None:
            return w
        if src.is_float and dst.is_int:
            if src.uses_f16:  # exact widening first; one helper per f32-based shape
                src32 = DataType.vector(DataType.F32, src.lanes)
                a = f"{src32.value}({a})"
                src = src32
            usrc = DataType.vector(DataType.U32, src.lanes)
            signed = dst.scalar is DataType.I32
            fn = self.st.helper(
                f"_cvt_{tag(src)}_{tag(dst)}", "float_to_int", src=src.value, dst=dst.value, usrc=usrc.value,
                # x >= hi_limit saturates; anything else is clamped into [lo_clamp, hi_clamp] (the
                # target's bounds and the largest f32 below hi_limit) and then converts exactly
                hi_limit="2147483648.0f" if signed else "4294967296.0f",
                lo_clamp="-2147483648.0f" if signed else "0.0f",
                hi_clamp="2147483520.0f" if signed else "4294967040.0f",
                hi_value=literal(dst.scalar, 2**31 - 1 if signed else 2**32 - 1),
            )
            return f"{fn}({a})"
        return f"{dst.value}({a})"

    def visit_Bitcast(self, e: Bitcast) -> str:
        dst = e.dtype
        src = self.st.type(e.arg)
        a = self.visit(e.arg)
        if src == dst:
            return f"{dst.value}({a})"
        if (w := wide.bitcast(self, src, dst, a)) is not None:
            return w
        if not src.uses_f16 and not dst.uses_f16:
            return f"bitcast<{dst.value}>({a})"
        # naga cannot bitcast between 32-bit types and vectors of f16: go through pack/unpack
        if src.uses_f16:
            words = DataType.vector(DataType.U32, dst.lanes)
            fn = self.st.helper(f"_bc_{tag(src)}_{tag(words)}", "f16_to_words", src=src.value, lanes=src.lanes)
            return fn + f"({a})" if dst == words else f"bitcast<{dst.value}>({fn}({a}))"
        words = DataType.vector(DataType.U32, src.lanes)
        fn = self.st.helper(f"_bc_{tag(words)}_{tag(dst)}", "words_to_f16", dst=dst.value, lanes=dst.lanes)
        return f"{fn}({a})" if src == words else f"{fn}(bitcast<{words.value}>({a}))"

    def visit_Fma(self, e: Fma) -> str:
        return f"fma({self.visit(e.a)}, {self.visit(e.b)}, {self.visit(e.c)})"

    def visit_VecNew(self, e: VecNew) -> str:
        return f"{e.dtype.value}({', '.join(self.visit(x) for x in e.args)})"

    def visit_Extract(self, e: Extract) -> str:
        a = self.visit(e.arg)
        if not is_atom(a):
            a = f"({a})"
        return f"{a}.{AXES[e.lane]}"

    def visit_Subgroup(self, e: Subgroup) -> str:
        args = [bare(self.visit(e.value))]
        if e.lane is not None:
            args.append(bare(self.visit(e.lane)))
        return f"{SUBGROUP_FN[e.op]}({', '.join(args)})"

    def visit_Atomic(self, e: Atomic) -> str:  # pragma: no cover - the passes leave atomics only in let/eval
        self.st.fail("an atomic nested in an expression reached the lowering",
                  "bind the atomic to a let (the builder does this)", e)


#: Expressions that are WGSL const-expressions when all their operands are.
_CONST_OPS = (Unary, Binary, Cast, Bitcast, Fma, Select, VecNew, Extract)


#: Scalar types whose select between constants is lowered as a bit mask (see ExprRenderer.visit_Select).
_MASKED_SELECT = frozenset({DataType.U32, DataType.I32, DataType.F32})


def _register_only(e: Expr) -> bool:
    """Whether ``e`` reads no memory (literals, variables and arithmetic on them): the arms of a select that a
    driver may see as constants."""
    return isinstance(e, (Lit, Var)) or (isinstance(e, _CONST_OPS) and all(_register_only(c) for c in
                                                                          expr_children(e)))


def is_const(e: Expr) -> bool:
    """Whether ``e`` lowers to a WGSL const-expression (literals and operations on them only)."""
    if isinstance(e, Lit):
        return True
    return isinstance(e, _CONST_OPS) and all(is_const(c) for c in expr_children(e))


__all__ = ["ExprRenderer", "ATOMIC_FN", "is_const"]
