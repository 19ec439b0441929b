"""The functions a kernel body may call (``vyre.tid``, ``vyre.sqrt``, ``vyre.atomic_add``, ...): plain
marker objects the translator recognises by identity. Called from ordinary Python they raise KernelError.

The table :data:`MATH` maps each math marker (and the same-named functions of Python's :mod:`math`)
to the IR's unary op; :data:`ATOMICS` maps the atomic markers to the IR's atomic ops."""

from __future__ import annotations

import math

from ..ir.nodes import AtomicOp, UnOp
from .types import outside_kernel


class Intrinsic:
    """A function that only has a meaning inside a kernel body."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"vyre.{self.name}"

    def __call__(self, *args: object, **kwargs: object) -> object:
        raise outside_kernel(self.name)


# ---- thread ids, workgroup memory, barriers ----
tid = Intrinsic("tid")                 # tid(): flat index; tid(axis): index along launch axis
tid2 = Intrinsic("tid2")               # (tid(0), tid(1)) of a 2-D launch
tid3 = Intrinsic("tid3")               # (tid(0), tid(1), tid(2)) of a 3-D launch
local_id = Intrinsic("local_id")       # index inside the workgroup (flat, or along an axis)
group_id = Intrinsic("group_id")       # workgroup index along an axis
shared = Intrinsic("shared")           # tile = shared(f32, 256): a workgroup array
barrier = Intrinsic("barrier")         # workgroupBarrier()

# ---- value functions ----
select = Intrinsic("select")           # select(cond, a, b): a where cond holds, else b (both evaluated)
fma = Intrinsic("fma")                 # fma(a, b, c) = a * b + c
pow = Intrinsic("pow")                 # noqa: A001 - vyre.pow, as math.pow: float ** float
bitcast = Intrinsic("bitcast")         # bitcast(x, u32): reinterpret the 32 bits

_UNARY = {
    "sqrt": UnOp.SQRT, "rsqrt": UnOp.INVERSE_SQRT, "exp": UnOp.EXP, "exp2": UnOp.EXP2, "log": UnOp.LOG,
    "log2": UnOp.LOG2, "sin": UnOp.SIN, "cos": UnOp.COS, "tan": UnOp.TAN, "tanh": UnOp.TANH,
    "floor": UnOp.FLOOR, "ceil": UnOp.CEIL, "round": UnOp.ROUND, "trunc": UnOp.TRUNC, "fract": UnOp.FRACT,
    "sign": UnOp.SIGN, "popcount": UnOp.COUNT_ONES, "reverse_bits": UnOp.REVERSE_BITS,
    "clz": UnOp.COUNT_LEADING_ZEROS, "ctz": UnOp.COUNT_TRAILING_ZEROS,
}
sqrt, rsqrt, exp, exp2, log, log2 = (Intrinsic(n) for n in ("sqrt", "rsqrt", "exp", "exp2", "log", "log2"))
sin, cos, tan, tanh = (Intrinsic(n) for n in ("sin", "cos", "tan", "tanh"))
floor, ceil, round, trunc, fract, sign = (  # noqa: A001 - vyre.round is WGSL's round (half to even)
    Intrinsic(n) for n in ("floor", "ceil", "round", "trunc", "fract", "sign"))
popcount, reverse_bits, clz, ctz = (Intrinsic(n) for n in ("popcount", "reverse_bits", "clz", "ctz"))

#: math marker (or Python math function) -> the IR unary op
MATH: dict[object, UnOp] = {globals()[n]: op for n, op in _UNARY.items()}
MATH.update({math.sqrt: UnOp.SQRT, math.exp: UnOp.EXP, math.log: UnOp.LOG, math.log2: UnOp.LOG2,
             math.sin: UnOp.SIN, math.cos: UnOp.COS, math.tan: UnOp.TAN, math.tanh: UnOp.TANH,
             math.floor: UnOp.FLOOR, math.ceil: UnOp.CEIL, math.trunc: UnOp.TRUNC, math.fabs: UnOp.ABS})

# ---- atomics: atomic_op(array, index, value) returns the old value ----
atomic_add, atomic_sub, atomic_min, atomic_max = (
    Intrinsic(f"atomic_{n}") for n in ("add", "sub", "min", "max"))
atomic_and, atomic_or, atomic_xor, atomic_exchange = (
    Intrinsic(f"atomic_{n}") for n in ("and", "or", "xor", "exchange"))
atomic_load = Intrinsic("atomic_load")               # atomic_load(array, index)
atomic_cas = Intrinsic("atomic_cas")                 # atomic_cas(array, index, expected, value)
ATOMICS: dict[object, AtomicOp] = {
    atomic_add: AtomicOp.ADD, atomic_sub: AtomicOp.SUB, atomic_min: AtomicOp.MIN, atomic_max: AtomicOp.MAX,
    atomic_and: AtomicOp.AND, atomic_or: AtomicOp.OR, atomic_xor: AtomicOp.XOR,
    atomic_exchange: AtomicOp.EXCHANGE, atomic_load: AtomicOp.LOAD, atomic_cas: AtomicOp.COMPARE_EXCHANGE,
}

# Lookups by identity: the object asked about is anything a kernel names (a numpy array of the module's
# globals among them), whose == or hash may raise or answer elementwise; the tables' keys live for ever.
_MATH_BY_ID = {id(k): v for k, v in MATH.items()}
_ATOMICS_BY_ID = {id(k): v for k, v in ATOMICS.items()}


def math_op(obj: object) -> UnOp | None:
    """The unary op of math marker (or math function) ``obj``, or None; compared by identity."""
    return _MATH_BY_ID.get(id(obj))


def atomic_op(obj: object) -> AtomicOp | None:
    """The atomic op of atomic marker ``obj``, or None; compared by identity."""
    return _ATOMICS_BY_ID.get(id(obj))


def is_one_of(obj: object, options: tuple[object, ...]) -> bool:
    """Whether ``obj`` is one of ``options``, by identity (``obj in options`` calls ``obj == option``, which
    a numpy array answers elementwise and whose truth value then raises)."""
    return any(obj is o for o in options)


#: every public marker by name (vyre's lazy exports)
NAMES = ["tid", "tid2", "tid3", "local_id", "group_id", "shared", "barrier", "select", "fma", "pow", "bitcast",
         *_UNARY, *(f"atomic_{n}" for n in ("add", "sub", "min", "max", "and", "or", "xor", "exchange", "load",
                                            "cas"))]

__all__ = ["Intrinsic", "MATH", "ATOMICS", "NAMES", "math_op", "atomic_op", "is_one_of", *NAMES]
