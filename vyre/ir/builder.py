"""Builder API: write vyre programs with Python operators instead of node constructors.

Example::

    b = ProgramBuilder("saxpy", workgroup_size=64)
    a = b.buffer("a", "f32", access="uniform", count=1)
    x = b.buffer("x", "f32")
    y = b.buffer("y", "f32", access="read_write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = a[0] * x[i] + y[i]
    program = b.build()

Conventions:
    * ``&``, ``|``, ``~`` are logical on bool values and bitwise on integers
      (Python's ``and``/``or``/``not`` cannot be overloaded; using them on a value raises).
    * Python numbers take the type of the other operand.
    * Atomics (``buf.atomic_add(i, v)``, ...) run where they are written and return the old value.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np

from .nodes import (
    Assign, Atomic, AtomicOp, Barrier, BarrierScope, Binary, BinOp, Bitcast, Break, BufLen, Builtin,
    BuiltinName, Cast, Continue, Extract, Fma, For, If, Let, Lit, Load, Return, Select, Store, Unary,
    UnOp, Var, VarDecl, VecNew, While,
)
from .program import BufferDecl, Program, WorkgroupDecl
from .types import Access, DataType
from .typing import TypeEnv, infer
from .validate import validate as _validate

DTypeLike = DataType | str


def _dt(d: DTypeLike) -> DataType:
    return DataType.parse(d)


def _numpy_scalar_dtype(v) -> DataType | None:
    if isinstance(v, np.generic):
        return {
            np.dtype(np.uint32): DataType.U32, np.dtype(np.int32): DataType.I32,
            np.dtype(np.float32): DataType.F32, np.dtype(np.float16): DataType.F16,
            np.dtype(np.bool_): DataType.BOOL,
        }.get(v.dtype)
    return None


class Val:
    """An expression under construction. Combine with operators and methods."""

    __slots__ = ("b", "node")
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, builder: "ProgramBuilder", node):
        self.b = builder
        self.node = node

    # ---- typing helpers ----
    @property
    def dtype(self) -> DataType | None:
        return self.b.type_of(self.node)

    def __bool__(self):
        raise TypeError(
            "a vyre expression has no Python truth value: use b.if_(...)/b.select(...) for conditions "
            "and &, |, ~ instead of and, or, not"
        )

    def __repr__(self) -> str:
        from .text import expr_to_text

        return f"Val({expr_to_text(self.node)})"

    # ---- arithmetic ----
    def _bin(self, op: BinOp, other, reverse=False) -> "Val":
        o = self.b._coerce(other, like=self, shift=op in (BinOp.SHL, BinOp.SHR) and not reverse)
        lhs, rhs = (o.node, self.node) if reverse else (self.node, o.node)
        return Val(self.b, Binary(op=op, lhs=lhs, rhs=rhs))

    def __add__(self, o): return self._bin(BinOp.ADD, o)
    def __radd__(self, o): return self._bin(BinOp.ADD, o, True)
    def __sub__(self, o): return self._bin(BinOp.SUB, o)
    def __rsub__(self, o): return self._bin(BinOp.SUB, o, True)
    def __mul__(self, o): return self._bin(BinOp.MUL, o)
    def __rmul__(self, o): return self._bin(BinOp.MUL, o, True)
    def __truediv__(self, o): return self._bin(BinOp.DIV, o)
    def __rtruediv__(self, o): return self._bin(BinOp.DIV, o, True)
    def __mod__(self, o): return self._bin(BinOp.REM, o)
    def __rmod__(self, o): return self._bin(BinOp.REM, o, True)
    def __lshift__(self, o): return self._bin(BinOp.SHL, o)
    def __rshift__(self, o): return self._bin(BinOp.SHR, o)
    def __xor__(self, o): return self._bin(BinOp.BIT_XOR, o)
    def __rxor__(self, o): return self._bin(BinOp.BIT_XOR, o, True)
    def __pow__(self, o): return self._bin(BinOp.POW, o)

    def __floordiv__(self, o):
        raise TypeError("use / : integer division in vyre truncates toward zero like WGSL")

    def __and__(self, o):
        return self._bin(BinOp.AND if self.dtype is DataType.BOOL else BinOp.BIT_AND, o)

    def __rand__(self, o):
        return self._bin(BinOp.AND if self.dtype is DataType.BOOL else BinOp.BIT_AND, o, True)

    def __or__(self, o):
        return self._bin(BinOp.OR if self.dtype is DataType.BOOL else BinOp.BIT_OR, o)

    def __ror__(self, o):
        return self._bin(BinOp.OR if self.dtype is DataType.BOOL else BinOp.BIT_OR, o, True)

    def __lt__(self, o): return self._bin(BinOp.LT, o)
    def __le__(self, o): return self._bin(BinOp.LE, o)
    def __gt__(self, o): return self._bin(BinOp.GT, o)
    def __ge__(self, o): return self._bin(BinOp.GE, o)
    def __eq__(self, o): return self._bin(BinOp.EQ, o)  # type: ignore[override]
    def __ne__(self, o): return self._bin(BinOp.NE, o)  # type: ignore[override]

    def __neg__(self): return Val(self.b, Unary(op=UnOp.NEG, arg=self.node))
    def __invert__(self): return Val(self.b, Unary(op=UnOp.NOT, arg=self.node))
    def __abs__(self): return Val(self.b, Unary(op=UnOp.ABS, arg=self.node))

    def min(self, o) -> "Val": return self._bin(BinOp.MIN, o)
    def max(self, o) -> "Val": return self._bin(BinOp.MAX, o)
    def pow(self, o) -> "Val": return self._bin(BinOp.POW, o)

    # ---- conversions ----
    def cast(self, dtype: DTypeLike) -> "Val":
        return Val(self.b, Cast(dtype=_dt(dtype), arg=self.node))

    def bitcast(self, dtype: DTypeLike) -> "Val":
        return Val(self.b, Bitcast(dtype=_dt(dtype), arg=self.node))

    # ---- vectors ----
    def __getitem__(self, lane: int) -> "Val":
        return Val(self.b, Extract(arg=self.node, lane=int(lane)))

    x = property(lambda self: self[0])
    y = property(lambda self: self[1])
    z = property(lambda self: self[2])
    w = property(lambda self: self[3])


def _unary_method(op: UnOp):
    def method(self: Val) -> Val:
        return Val(self.b, Unary(op=op, arg=self.node))

    method.__name__ = op.value
    method.__doc__ = f"``{op.value}(self)``"
    return method


for _op in UnOp:
    if _op not in (UnOp.NEG, UnOp.NOT, UnOp.ABS):
        setattr(Val, _op.value, _unary_method(_op))
Val.abs = _unary_method(UnOp.ABS)  # type: ignore[attr-defined]


class MutVar(Val):
    """A mutable variable: ``v.set(expr)`` or ``v += expr`` emit assignments."""

    __slots__ = ()

    @property
    def name(self) -> str:
        return self.node.name

    def set(self, value) -> None:
        v = self.b._coerce(value, like=self)
        self.b._emit(Assign(name=self.node.name, value=v.node))

    def _aug(self, op: BinOp, o) -> "MutVar":
        self.set(self._bin(op, o))
        return self

    def __iadd__(self, o): return self._aug(BinOp.ADD, o)
    def __isub__(self, o): return self._aug(BinOp.SUB, o)
    def __imul__(self, o): return self._aug(BinOp.MUL, o)
    def __itruediv__(self, o): return self._aug(BinOp.DIV, o)
    def __imod__(self, o): return self._aug(BinOp.REM, o)
    def __iand__(self, o): return self._aug(BinOp.AND if self.dtype is DataType.BOOL else BinOp.BIT_AND, o)
    def __ior__(self, o): return self._aug(BinOp.OR if self.dtype is DataType.BOOL else BinOp.BIT_OR, o)
    def __ixor__(self, o): return self._aug(BinOp.BIT_XOR, o)
    def __ilshift__(self, o): return self._aug(BinOp.SHL, o)
    def __irshift__(self, o): return self._aug(BinOp.SHR, o)


class BufRef:
    """A declared buffer or workgroup array: index it to load, assign an index to store."""

    def __init__(self, builder: "ProgramBuilder", name: str, dtype: DataType):
        self.b = builder
        self.name = name
        self.dtype = dtype

    def __repr__(self) -> str:
        return f"BufRef({self.name}: {self.dtype.value})"

    def __getitem__(self, index) -> Val:
        return Val(self.b, Load(buffer=self.name, index=self.b._index(index).node))

    def __setitem__(self, index, value) -> None:
        v = self.b._coerce(value, dtype=self.dtype)
        self.b._emit(Store(buffer=self.name, index=self.b._index(index).node, value=v.node))

    def len(self) -> Val:
        """Element count (u32)."""
        return Val(self.b, BufLen(buffer=self.name))

    # ---- atomics: executed where written, evaluate to the old value ----
    def _atomic(self, op: AtomicOp, index, value=None, expected=None, discard=False) -> Val | None:
        node = Atomic(
            op=op, buffer=self.name, index=self.b._index(index).node,
            value=None if value is None else self.b._coerce(value, dtype=self.dtype).node,
            expected=None if expected is None else self.b._coerce(expected, dtype=self.dtype).node,
        )
        if discard:
            self.b.eval(Val(self.b, node))
            return None
        return self.b.let(Val(self.b, node), name=self.b._fresh("_old"))

    # ``discard=True`` drops the old value (an Eval statement instead of a let).
    def atomic_add(self, i, v, discard=False): return self._atomic(AtomicOp.ADD, i, v, discard=discard)
    def atomic_sub(self, i, v, discard=False): return self._atomic(AtomicOp.SUB, i, v, discard=discard)
    def atomic_min(self, i, v, discard=False): return self._atomic(AtomicOp.MIN, i, v, discard=discard)
    def atomic_max(self, i, v, discard=False): return self._atomic(AtomicOp.MAX, i, v, discard=discard)
    def atomic_and(self, i, v, discard=False): return self._atomic(AtomicOp.AND, i, v, discard=discard)
    def atomic_or(self, i, v, discard=False): return self._atomic(AtomicOp.OR, i, v, discard=discard)
    def atomic_xor(self, i, v, discard=False): return self._atomic(AtomicOp.XOR, i, v, discard=discard)
    def atomic_exchange(self, i, v, discard=False): return self._atomic(AtomicOp.EXCHANGE, i, v, discard=discard)
    def atomic_load(self, i): return self._atomic(AtomicOp.LOAD, i)

    def atomic_compare_exchange(self, i, expected, v, discard=False) -> Val | None:
        """Store ``v`` if the slot holds ``expected``; evaluates to the old value."""
        return self._atomic(AtomicOp.COMPARE_EXCHANGE, i, v, expected, discard=discard)


class ProgramBuilder:
    """Collects declarations and statements, then :meth:`build` returns a validated Program."""

    def __init__(self, name: str, workgroup_size: int | tuple[int, ...] = 64):
        self.name = name
        self.workgroup_size = workgroup_size
        self._buffers: list[BufferDecl] = []
        self._workgroup: list[WorkgroupDecl] = []
        self._blocks: list[list] = [[]]
        self._env = TypeEnv()
        self._counter = 0

    # ---- declarations ----
    def buffer(self, name: str, dtype: DTypeLike, access: str | Access = "read", *, count: int | None = None,
               binding: int | None = None) -> BufRef:
        """Declare a buffer. Bindings default to declaration order (0, 1, 2, ...)."""
        if binding is None:
            binding = max((b.binding for b in self._buffers), default=-1) + 1
        decl = BufferDecl(name=name, binding=binding, dtype=_dt(dtype), access=Access(access), count=count)
        self._buffers.append(decl)
        self._env.buffers[name] = decl
        return BufRef(self, name, decl.dtype)

    def workgroup_array(self, name: str, dtype: DTypeLike, count: int) -> BufRef:
        """Declare a ``var<workgroup>`` array of ``count`` elements shared by a workgroup."""
        decl = WorkgroupDecl(name=name, dtype=_dt(dtype), count=count)
        self._workgroup.append(decl)
        self._env.workgroup[name] = decl
        return BufRef(self, name, decl.dtype)

    # ---- built-ins ----
    def global_id(self, axis: int = 0) -> Val: return Val(self, Builtin(name=BuiltinName.GLOBAL_ID, axis=axis))
    def local_id(self, axis: int = 0) -> Val: return Val(self, Builtin(name=BuiltinName.LOCAL_ID, axis=axis))
    def workgroup_id(self, axis: int = 0) -> Val: return Val(self, Builtin(name=BuiltinName.WORKGROUP_ID, axis=axis))
    def num_workgroups(self, axis: int = 0) -> Val: return Val(self, Builtin(name=BuiltinName.NUM_WORKGROUPS, axis=axis))
    def global_index(self) -> Val: return Val(self, Builtin(name=BuiltinName.GLOBAL_INDEX))
    def local_index(self) -> Val: return Val(self, Builtin(name=BuiltinName.LOCAL_INDEX))

    # ---- expressions ----
    def lit(self, value, dtype: DTypeLike | None = None) -> Val:
        """A typed literal. Without dtype: bool→bool, int→u32 (i32 if negative), float→f32."""
        if dtype is None:
            dtype = _numpy_scalar_dtype(value)
            if dtype is None:
                if isinstance(value, bool):
                    dtype = DataType.BOOL
                elif isinstance(value, int):
                    dtype = DataType.U32 if value >= 0 else DataType.I32
                else:
                    dtype = DataType.F32
        d = _dt(dtype)
        value = value.item() if isinstance(value, np.generic) else value
        if d.is_float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        return Val(self, Lit(dtype=d, value=value))

    def select(self, cond, if_true, if_false) -> Val:
        """``if_true`` where ``cond`` holds, else ``if_false`` (both evaluated)."""
        c = self._coerce(cond, dtype=DataType.BOOL)
        t, f = self._pair(if_true, if_false)
        return Val(self, Select(cond=c.node, if_true=t.node, if_false=f.node))

    def min(self, a, b) -> Val:
        a, b = self._pair(a, b)
        return a.min(b)

    def max(self, a, b) -> Val:
        a, b = self._pair(a, b)
        return a.max(b)

    def fma(self, a, b, c) -> Val:
        like = next((v for v in (a, b, c) if isinstance(v, Val)), None)
        a, b, c = (self._coerce(v, like=like) for v in (a, b, c))
        return Val(self, Fma(a=a.node, b=b.node, c=c.node))

    def vec(self, dtype: DTypeLike, *components) -> Val:
        """Build a vector from its components, or splat one scalar."""
        d = _dt(dtype)
        args = [self._coerce(c, dtype=d.scalar).node for c in components]
        return Val(self, VecNew(dtype=d, args=args))

    def cast(self, value, dtype: DTypeLike) -> Val:
        return self._coerce(value).cast(dtype)

    # ---- statements ----
    def let(self, value, name: str | None = None) -> Val:
        """Bind an immutable name to a value; returns the name as a value."""
        v = self._coerce(value)
        name = name or self._fresh("t")
        dtype = self.type_of(v.node)
        self._emit(Let(name=name, value=v.node))
        if dtype is not None:
            self._env.declare(name, dtype, False)
        return Val(self, Var(name=name))

    def var(self, dtype: DTypeLike, init=None, name: str | None = None) -> MutVar:
        """Declare a mutable variable (zero-initialised without ``init``)."""
        d = _dt(dtype)
        name = name or self._fresh("v")
        value = None if init is None else self._coerce(init, dtype=d).node
        self._emit(VarDecl(name=name, dtype=d, value=value))
        self._env.declare(name, d, True)
        return MutVar(self, Var(name=name))

    def assign(self, var: MutVar, value) -> None:
        var.set(value)

    def store(self, buf: BufRef, index, value) -> None:
        buf[index] = value

    def eval(self, value: Val) -> None:
        """Evaluate an expression for its side effect (atomics)."""
        from .nodes import Eval

        self._emit(Eval(value=self._coerce(value).node))

    def barrier(self, scope: str = "workgroup") -> None:
        """``workgroupBarrier()`` (or ``storageBarrier()`` with scope="storage")."""
        self._emit(Barrier(scope=BarrierScope(scope)))

    def break_(self) -> None: self._emit(Break())
    def continue_(self) -> None: self._emit(Continue())
    def return_(self) -> None: self._emit(Return())

    @contextlib.contextmanager
    def if_(self, cond) -> Iterator[None]:
        c = self._coerce(cond, dtype=DataType.BOOL)
        body = self._open()
        try:
            yield
        finally:
            self._close()
        self._emit(If(cond=c.node, then=body))

    @contextlib.contextmanager
    def else_(self) -> Iterator[None]:
        """The else branch of the ``if_`` written just before it."""
        block = self._blocks[-1]
        if not block or not isinstance(block[-1], If) or block[-1].otherwise:
            raise SyntaxError("b.else_() must directly follow a `with b.if_(...)` block")
        body = self._open()
        try:
            yield
        finally:
            self._close()
        block[-1] = block[-1].model_copy(update={"otherwise": body})

    @contextlib.contextmanager
    def for_range(self, start, end, step: int = 1, name: str | None = None) -> Iterator[Val]:
        """``for (var k = start; k < end; k += step)``; yields ``k``. Integer bounds are u32 unless one is i32."""
        like = next((v for v in (start, end) if isinstance(v, Val)), None)
        s = self._coerce(start, like=like)
        e = self._coerce(end, like=s)
        name = name or self._fresh("k")
        body = self._open()
        dtype = self.type_of(s.node)
        if dtype is not None:
            self._env.declare(name, dtype, False)
        try:
            yield Val(self, Var(name=name))
        finally:
            self._close()
        self._emit(For(var=name, start=s.node, end=e.node, step=int(step), body=body))

    @contextlib.contextmanager
    def while_(self, cond) -> Iterator[None]:
        c = self._coerce(cond, dtype=DataType.BOOL)
        body = self._open()
        try:
            yield
        finally:
            self._close()
        self._emit(While(cond=c.node, body=body))

    # ---- result ----
    def build(self, validate: bool = True) -> Program:
        if len(self._blocks) != 1:
            raise SyntaxError("build() called inside an open if_/for_range/while_ block")
        program = Program(
            name=self.name, buffers=list(self._buffers), workgroup=list(self._workgroup),
            workgroup_size=self.workgroup_size, body=list(self._blocks[0]),
        )
        if validate:
            _validate(program)
        return program

    # ---- internals ----
    def _fresh(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def _emit(self, stmt) -> None:
        self._blocks[-1].append(stmt)

    def _open(self) -> list:
        self._blocks.append([])
        self._env.push()
        return self._blocks[-1]

    def _close(self) -> None:
        self._blocks.pop()
        self._env.pop()

    def type_of(self, node) -> DataType | None:
        problems: list = []
        t = infer(node, self._env, report=lambda *a: problems.append(a))
        return None if problems else t

    def _index(self, index) -> Val:
        if isinstance(index, Val):
            return index
        return self.lit(int(index), DataType.I32 if int(index) < 0 else DataType.U32)

    def _pair(self, a, b) -> tuple[Val, Val]:
        if isinstance(a, Val):
            return a, self._coerce(b, like=a)
        if isinstance(b, Val):
            return self._coerce(a, like=b), b
        return self._coerce(a), self._coerce(b)

    def _coerce(self, value: Any, *, like: Val | None = None, dtype: DataType | None = None,
                shift: bool = False) -> Val:
        if isinstance(value, Val):
            return value
        if isinstance(value, BufRef):
            raise TypeError(f"buffer {value.name!r} used as a value: index it, e.g. {value.name}[i]")
        if shift:
            dtype = DataType.U32
        if dtype is None and like is not None:
            lt = like.dtype
            dtype = lt.scalar if lt is not None else None
        if dtype is not None and dtype.is_vector:
            dtype = dtype.scalar
        if isinstance(value, (bool, int, float, np.generic)):
            return self.lit(value, dtype)
        raise TypeError(f"cannot use {type(value).__name__} {value!r} in a vyre expression")


__all__ = ["ProgramBuilder", "Val", "MutVar", "BufRef"]
