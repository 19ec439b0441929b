"""The values of the builder API: expressions under construction (:class:`Val`), mutable
variables (:class:`MutVar`) and declared arrays (:class:`BufRef`). Made by
:class:`vyre.ir.builder.ProgramBuilder`; see its module for the conventions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, TypeAlias, overload

from ..errors import BuilderError, ValidationError, ValidationIssue
from .nodes import (
    Assign,
    Atomic,
    AtomicOp,
    Binary,
    BinOp,
    Bitcast,
    BufLen,
    Cast,
    Expr,
    Extract,
    Load,
    Store,
    Unary,
    UnOp,
    Var,
)
from .text import expr_to_text
from .types import DataType, is_integer

if TYPE_CHECKING:
    import numpy as np  # noqa: F401  (the aliases below name it)

    from .builder import ProgramBuilder

DTypeLike: TypeAlias = "DataType | str | np.dtype | type"
#: what operators and builder methods take as an expression: a Val, or a Python / numpy scalar
Operand: TypeAlias = "Val | bool | int | float | np.generic"
#: an index: a Val, or a Python / numpy integer
Index: TypeAlias = "Val | int | np.integer"


def parse_dtype(d: object, program: str = "<builder>") -> DataType:
    """``d`` as a DataType (:meth:`DataType.parse`), or a ValidationError naming the bad type: the one dtype
    check of the builder (buffers, workgroup arrays, literals, vectors, variables, casts and bitcasts)."""
    try:
        return DataType.parse(d)  # type: ignore[arg-type]
    except (ValueError, TypeError) as exc:
        issue = ValidationIssue("type", "dtype", repr(d), str(exc),
                                "name a vyre type (e.g. 'f32', 'vec4<f32>') or a numpy dtype such as np.float32")
        raise ValidationError(program, [issue]) from None


def misuse(program: str, what: str, message: str, fix: str, node: object = "", rule: str = "type") -> BuilderError:
    """The builder's error for a bad argument or out-of-order use (a ValidationError with one issue)."""
    text = node if isinstance(node, str) else repr(node)[:80]
    return BuilderError(program, [ValidationIssue(rule, what, text, message, fix)])


def python_index(program: str, value: object, what: str) -> int:
    """``value`` as a Python int, or a ValidationError: only integers index (``x[1.5]`` is not ``x[1]``)."""
    if is_integer(value):
        return int(value)
    raise misuse(program, what, f"{what} must be an integer, got {type(value).__name__} {value!r:.80}",
                 "use a Python int or an integer vyre value (e.g. v.cast('u32')); a float never indexes", value)


class Val:
    """An expression under construction. Combine with operators and methods."""

    __slots__ = ("b", "node")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, builder: ProgramBuilder, node: Expr):
        self.b = builder
        self.node = node

    # ---- typing helpers ----
    @property
    def dtype(self) -> DataType | None:
        return self.b.type_of(self.node)

    def __bool__(self) -> bool:
        raise misuse(self.b.name, "truth value", "a vyre expression has no Python truth value",
                     "use b.if_(...)/b.select(...) for conditions and &, |, ~ instead of and, or, not",
                     expr_to_text(self.node))

    def __repr__(self) -> str:
        return f"Val({expr_to_text(self.node)})"

    # ---- arithmetic ----
    def _bin(self, op: BinOp, other: object, reverse: bool = False) -> Val:
        o = self.b._coerce(other, like=self, shift=op in (BinOp.SHL, BinOp.SHR) and not reverse)
        lhs, rhs = (o.node, self.node) if reverse else (self.node, o.node)
        return Val(self.b, Binary(op=op, lhs=lhs, rhs=rhs))

    def _logic_or_bits(self, logical: BinOp, bitwise: BinOp) -> BinOp:
        return logical if self.dtype is DataType.BOOL else bitwise

    def __add__(self, o: Operand) -> Val: return self._bin(BinOp.ADD, o)
    def __radd__(self, o: Operand) -> Val: return self._bin(BinOp.ADD, o, True)
    def __sub__(self, o: Operand) -> Val: return self._bin(BinOp.SUB, o)
    def __rsub__(self, o: Operand) -> Val: return self._bin(BinOp.SUB, o, True)
    def __mul__(self, o: Operand) -> Val: return self._bin(BinOp.MUL, o)
    def __rmul__(self, o: Operand) -> Val: return self._bin(BinOp.MUL, o, True)
    def __truediv__(self, o: Operand) -> Val: return self._bin(BinOp.DIV, o)
    def __rtruediv__(self, o: Operand) -> Val: return self._bin(BinOp.DIV, o, True)
    def __mod__(self, o: Operand) -> Val: return self._bin(BinOp.REM, o)
    def __rmod__(self, o: Operand) -> Val: return self._bin(BinOp.REM, o, True)
    def __lshift__(self, o: Operand) -> Val: return self._bin(BinOp.SHL, o)
    def __rshift__(self, o: Operand) -> Val: return self._bin(BinOp.SHR, o)
    def __xor__(self, o: Operand) -> Val: return self._bin(BinOp.BIT_XOR, o)
    def __rxor__(self, o: Operand) -> Val: return self._bin(BinOp.BIT_XOR, o, True)
    def __pow__(self, o: Operand) -> Val: return self._bin(BinOp.POW, o)

    def __floordiv__(self, o: Operand) -> Val:
        raise misuse(self.b.name, "operator //", "vyre has no floor division (//)",
                     "use / : integer division in vyre truncates toward zero like WGSL", expr_to_text(self.node))

    def __and__(self, o: Operand) -> Val: return self._bin(self._logic_or_bits(BinOp.AND, BinOp.BIT_AND), o)
    def __rand__(self, o: Operand) -> Val: return self._bin(self._logic_or_bits(BinOp.AND, BinOp.BIT_AND), o, True)
    def __or__(self, o: Operand) -> Val: return self._bin(self._logic_or_bits(BinOp.OR, BinOp.BIT_OR), o)
    def __ror__(self, o: Operand) -> Val: return self._bin(self._logic_or_bits(BinOp.OR, BinOp.BIT_OR), o, True)

    def __lt__(self, o: Operand) -> Val: return self._bin(BinOp.LT, o)
    def __le__(self, o: Operand) -> Val: return self._bin(BinOp.LE, o)
    def __gt__(self, o: Operand) -> Val: return self._bin(BinOp.GT, o)
    def __ge__(self, o: Operand) -> Val: return self._bin(BinOp.GE, o)
    def __eq__(self, o: object) -> Val: return self._bin(BinOp.EQ, o)  # type: ignore[override]
    def __ne__(self, o: object) -> Val: return self._bin(BinOp.NE, o)  # type: ignore[override]

    def __neg__(self) -> Val: return self._unary(UnOp.NEG)
    def __invert__(self) -> Val: return self._unary(UnOp.NOT)
    def __abs__(self) -> Val: return self._unary(UnOp.ABS)

    def min(self, o: Operand) -> Val: return self._bin(BinOp.MIN, o)
    def max(self, o: Operand) -> Val: return self._bin(BinOp.MAX, o)
    def pow(self, o: Operand) -> Val: return self._bin(BinOp.POW, o)

    # ---- unary functions, one method per UnOp (named by its value) ----
    def _unary(self, op: UnOp) -> Val:
        return Val(self.b, Unary(op=op, arg=self.node))

    def abs(self) -> Val: return self._unary(UnOp.ABS)
    def sqrt(self) -> Val: return self._unary(UnOp.SQRT)
    def inverse_sqrt(self) -> Val: return self._unary(UnOp.INVERSE_SQRT)
    def exp(self) -> Val: return self._unary(UnOp.EXP)
    def exp2(self) -> Val: return self._unary(UnOp.EXP2)
    def log(self) -> Val: return self._unary(UnOp.LOG)
    def log2(self) -> Val: return self._unary(UnOp.LOG2)
    def sin(self) -> Val: return self._unary(UnOp.SIN)
    def cos(self) -> Val: return self._unary(UnOp.COS)
    def tan(self) -> Val: return self._unary(UnOp.TAN)
    def tanh(self) -> Val: return self._unary(UnOp.TANH)
    def floor(self) -> Val: return self._unary(UnOp.FLOOR)
    def ceil(self) -> Val: return self._unary(UnOp.CEIL)
    def round(self) -> Val: return self._unary(UnOp.ROUND)
    def trunc(self) -> Val: return self._unary(UnOp.TRUNC)
    def fract(self) -> Val: return self._unary(UnOp.FRACT)
    def sign(self) -> Val: return self._unary(UnOp.SIGN)
    def count_ones(self) -> Val: return self._unary(UnOp.COUNT_ONES)
    def reverse_bits(self) -> Val: return self._unary(UnOp.REVERSE_BITS)
    def count_leading_zeros(self) -> Val: return self._unary(UnOp.COUNT_LEADING_ZEROS)
    def count_trailing_zeros(self) -> Val: return self._unary(UnOp.COUNT_TRAILING_ZEROS)

    # ---- conversions ----
    def cast(self, dtype: DTypeLike) -> Val:
        return Val(self.b, Cast(dtype=parse_dtype(dtype, self.b.name), arg=self.node))

    def bitcast(self, dtype: DTypeLike) -> Val:
        return Val(self.b, Bitcast(dtype=parse_dtype(dtype, self.b.name), arg=self.node))

    # ---- vectors ----
    def __getitem__(self, lane: int) -> Val:
        return Val(self.b, Extract(arg=self.node, lane=python_index(self.b.name, lane, "vector lane")))

    @property
    def x(self) -> Val: return self[0]
    @property
    def y(self) -> Val: return self[1]
    @property
    def z(self) -> Val: return self[2]
    @property
    def w(self) -> Val: return self[3]


class MutVar(Val):
    """A mutable variable: ``v.set(expr)`` or ``v += expr`` emit assignments."""

    __slots__ = ()

    @property
    def name(self) -> str:
        assert isinstance(self.node, Var)  # the builder makes MutVars of variables only
        return self.node.name

    def set(self, value: Operand) -> None:
        v = self.b._coerce(value, like=self)
        self.b._emit(Assign(name=self.name, value=v.node))

    def _aug(self, op: BinOp, o: Operand) -> MutVar:
        self.set(self._bin(op, o))
        return self

    def __iadd__(self, o: Operand) -> MutVar: return self._aug(BinOp.ADD, o)
    def __isub__(self, o: Operand) -> MutVar: return self._aug(BinOp.SUB, o)
    def __imul__(self, o: Operand) -> MutVar: return self._aug(BinOp.MUL, o)
    def __itruediv__(self, o: Operand) -> MutVar: return self._aug(BinOp.DIV, o)
    def __imod__(self, o: Operand) -> MutVar: return self._aug(BinOp.REM, o)
    def __iand__(self, o: Operand) -> MutVar: return self._aug(self._logic_or_bits(BinOp.AND, BinOp.BIT_AND), o)
    def __ior__(self, o: Operand) -> MutVar: return self._aug(self._logic_or_bits(BinOp.OR, BinOp.BIT_OR), o)
    def __ixor__(self, o: Operand) -> MutVar: return self._aug(BinOp.BIT_XOR, o)
    def __ilshift__(self, o: Operand) -> MutVar: return self._aug(BinOp.SHL, o)
    def __irshift__(self, o: Operand) -> MutVar: return self._aug(BinOp.SHR, o)


class BufRef:
    """A declared buffer or workgroup array: index it to load, assign an index to store."""

    def __init__(self, builder: ProgramBuilder, name: str, dtype: DataType):
        self.b = builder
        self.name = name
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"BufRef({self.name}: {self.dtype.value})"

    def __getitem__(self, index: Index) -> Val:
        return Val(self.b, Load(buffer=self.name, index=self.b._index(index).node))

    def __setitem__(self, index: Index, value: Operand) -> None:
        v = self.b._coerce(value, dtype=self.dtype)
        self.b._emit(Store(buffer=self.name, index=self.b._index(index).node, value=v.node))

    def len(self) -> Val:
        """Element count (u32)."""
        return Val(self.b, BufLen(buffer=self.name))

    # ---- atomics: executed where written, evaluate to the old value ----
    def _atomic(self, op: AtomicOp, index: Index, value: Operand | None = None, expected: Operand | None = None,
                discard: bool = False) -> Val | None:
        node = Atomic(
            op=op, buffer=self.name, index=self.b._index(index).node,
            value=None if value is None else self.b._coerce(value, dtype=self.dtype).node,
            expected=None if expected is None else self.b._coerce(expected, dtype=self.dtype).node,
        )
        if discard:
            self.b.eval(Val(self.b, node))
            return None
        return self.b.let(Val(self.b, node), name=self.b._fresh("_old"))

    # ``discard=True`` drops the old value (an Eval statement instead of a let) and returns None.
    @overload
    def atomic_add(self, i: Index, v: Operand, discard: Literal[False] = False) -> Val: ...
    @overload
    def atomic_add(self, i: Index, v: Operand, discard: bool) -> Val | None: ...
    def atomic_add(self, i: Index, v: Operand, discard: bool = False) -> Val | None:
        return self._atomic(AtomicOp.ADD, i, v, discard=discard)

    @overload
    def atomic_sub(self, i: Index, v: Operand, discard: Literal[False] = False) -> Val: ...
    @overload
    def atomic_sub(self, i: Index, v: Operand, discard: bool) -> Val | None: ...
    def atomic_sub(self, i: Index, v: Operand, discard: bool = False) -> Val | None:
        return self._atomic(AtomicOp.SUB, i, v, discard=discard)

    @overload
    def atomic_min(self, i: Index, v: Operand, discard: Literal[False] = False) -> Val: ...
    @overload
    def atomic_min(self, i: Index, v: Operand, discard: bool) -> Val | None: ...
    def atomic_min(self, i: Index, v: Operand, discard: bool = False) -> Val | None:
        return self._atomic(AtomicOp.MIN, i, v, discard=discard)

    @overload
    def atomic_max(self, i: Index, v: Operand, discard: Literal[False] = False) -> Val: ...
    @overload
    def atomic_max(self, i: Index, v: Operand, discard: bool) -> Val | None: ...
    def atomic_max(self, i: Index, v: Operand, discard: bool = False) -> Val | None:
        return self._atomic(AtomicOp.MAX, i, v, discard=discard)

    @overload
    def atomic_and(self, i: Index, v: Operand, discard: Literal[False] = False) -> Val: ...
    @overload
    def atomic_and(self, i: Index, v: Operand, discard: bool) -> Val | None: ...
    def atomic_and(self, i: Index, v: Operand, discard: bool = False) -> Val | None:
        return self._atomic(AtomicOp.AND, i, v, discard=discard)

    @overload
    def atomic_or(self, i: Index, v: Operand, discard: Literal[False] = False) -> Val: ...
    @overload
    def atomic_or(self, i: Index, v: Operand, discard: bool) -> Val | None: ...
    def atomic_or(self, i: Index, v: Operand, discard: bool = False) -> Val | None:
        return self._atomic(AtomicOp.OR, i, v, discard=discard)

    @overload
    def atomic_xor(self, i: Index, v: Operand, discard: Literal[False] = False) -> Val: ...
    @overload
    def atomic_xor(self, i: Index, v: Operand, discard: bool) -> Val | None: ...
    def atomic_xor(self, i: Index, v: Operand, discard: bool = False) -> Val | None:
        return self._atomic(AtomicOp.XOR, i, v, discard=discard)

    @overload
    def atomic_exchange(self, i: Index, v: Operand, discard: Literal[False] = False) -> Val: ...
    @overload
    def atomic_exchange(self, i: Index, v: Operand, discard: bool) -> Val | None: ...
    def atomic_exchange(self, i: Index, v: Operand, discard: bool = False) -> Val | None:
        return self._atomic(AtomicOp.EXCHANGE, i, v, discard=discard)

    def atomic_load(self, i: Index) -> Val:
        old = self._atomic(AtomicOp.LOAD, i)
        assert old is not None  # not discarded
        return old

    @overload
    def atomic_compare_exchange(self, i: Index, expected: Operand, v: Operand,
                                discard: Literal[False] = False) -> Val: ...
    @overload
    def atomic_compare_exchange(self, i: Index, expected: Operand, v: Operand, discard: bool) -> Val | None: ...
    def atomic_compare_exchange(self, i: Index, expected: Operand, v: Operand, discard: bool = False) -> Val | None:
        """Store ``v`` if the slot holds ``expected``; evaluates to the old value."""
        return self._atomic(AtomicOp.COMPARE_EXCHANGE, i, v, expected, discard=discard)


__all__ = ["Val", "MutVar", "BufRef", "Operand", "Index", "DTypeLike", "parse_dtype", "python_index"]
