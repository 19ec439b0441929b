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
from collections.abc import Iterator
from dataclasses import replace
from enum import Enum
from typing import TYPE_CHECKING, TypeVar

from ..errors import ValidationError
from .decls import BufferDecl, WorkgroupDecl
from .nodes import (
    Barrier,
    BarrierScope,
    Break,
    Builtin,
    BuiltinName,
    Continue,
    Eval,
    Expr,
    Fma,
    For,
    If,
    Let,
    Lit,
    Return,
    Select,
    Stmt,
    Var,
    VarDecl,
    VecNew,
    While,
)
from .program import Program
from .subgroups import SubgroupMethods
from .types import _NUMPY_NAMES, Access, DataType, is_integer, is_numpy_scalar
from .typing import TypeEnv, infer
from .validate import validate as _validate
from .values import BufRef, DTypeLike, Index, MutVar, Operand, Val, misuse, parse_dtype, python_index

if TYPE_CHECKING:
    import numpy as np


def _dt(d: DTypeLike, program: str = "<builder>") -> DataType:
    """``d`` as a DataType: the builder's one dtype check (see :func:`vyre.ir.values.parse_dtype`)."""
    return parse_dtype(d, program)


def _bad_arg(program: str, what: str, value: object, expected: str, fix: str) -> ValidationError:
    """The builder's error for a bad argument (wrong type or value) of one of its methods."""
    return misuse(program, what, f"{what} must be {expected}, got {type(value).__name__} {value!r:.80}", fix, value)


def _int_arg(program: str, what: str, value: object, fix: str, *, optional: bool = False) -> int | None:
    """``value`` as a Python int (None passes when ``optional``); a bool, float or str is a ValidationError."""
    if value is None and optional:
        return None
    if is_integer(value):
        return int(value)
    raise _bad_arg(program, what, value, "an int" + (" or None" if optional else ""), fix)


def _name_arg(program: str, what: str, value: object, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if isinstance(value, str):
        return value
    raise _bad_arg(program, what, value, "a str" + (" or None" if optional else ""),
                   "give a name such as 'x' (a valid WGSL identifier)")


def _workgroup_size(program: str, ws: object) -> tuple[int, int, int]:
    dims = ws if isinstance(ws, (tuple, list)) else (ws,)
    if not 1 <= len(dims) <= 3 or not all(is_integer(d) for d in dims):
        raise _bad_arg(program, "workgroup_size", ws, "an int or a tuple of 1 to 3 ints",
                       "e.g. workgroup_size=64 or workgroup_size=(8, 8)")
    x, y, z = (int(d) for d in tuple(dims) + (1,) * (3 - len(dims)))
    return (x, y, z)


E = TypeVar("E", bound=Enum)


def _enum_arg(program: str, what: str, enum: type[E], value: object) -> E:
    try:
        return enum(value)
    except (ValueError, TypeError):
        choices = ", ".join(repr(m.value) for m in enum)
        raise _bad_arg(program, what, value, f"one of {choices}", f"use one of {choices}") from None


def _numpy_scalar_dtype(v: object) -> DataType | None:
    """The vyre type of a numpy scalar of a 32-bit (or 16-bit) type vyre has (float32, float16, int32, uint32,
    bool), else None. A 64-bit numpy scalar acts as the Python number it is (np.float64 -> f32 as before the
    64-bit types existed): ask for f64/i64/u64 explicitly."""
    if is_numpy_scalar(v):
        d = _NUMPY_NAMES.get(v.dtype.name)
        return None if d is None or d.is_64bit else d
    return None


class ProgramBuilder(SubgroupMethods):
    """Collects declarations and statements, then :meth:`build` returns a validated Program."""

    def __init__(self, name: str, workgroup_size: int | tuple[int, ...] = 64, *,
                 grid_from: str | BufRef | None = None):
        """``grid_from`` names the buffer (or is the :class:`BufRef`) whose element count drives the default
        grid: one invocation per element (see :class:`vyre.ir.program.Program`); it may also be set later
        with :meth:`set_grid_from`."""
        self.name = _name_arg("<builder>", "program name", name) or ""
        self.workgroup_size = _workgroup_size(self.name, workgroup_size)
        self.grid_from: str | None = None
        if grid_from is not None:
            self.set_grid_from(grid_from)
        self._buffers: list[BufferDecl] = []
        self._workgroup: list[WorkgroupDecl] = []
        self._blocks: list[list[Stmt]] = [[]]
        self._env = TypeEnv()
        self._counter = 0

    # ---- declarations ----
    def set_grid_from(self, buffer: str | BufRef) -> None:
        """Let ``buffer`` (its name or :class:`BufRef`) drive the default grid: one invocation per element."""
        name = buffer.name if isinstance(buffer, BufRef) else buffer
        self.grid_from = _name_arg(self.name, "grid_from", name)

    def buffer(self, name: str, dtype: DTypeLike, access: str | Access = "read", *, count: int | None = None,
               binding: int | None = None) -> BufRef:
        """Declare a buffer. Bindings default to declaration order (0, 1, 2, ...)."""
        name = _name_arg(self.name, "buffer name", name) or ""
        count = _int_arg(self.name, "buffer count", count, "give count as an int >= 1, or None for a buffer sized "
                         "at dispatch", optional=True)
        binding = _int_arg(self.name, "binding", binding, "give binding as an int >= 0, or omit it",
                           optional=True)
        if binding is None:
            binding = max((b.binding for b in self._buffers), default=-1) + 1
        decl = BufferDecl(name=name, binding=binding, dtype=_dt(dtype, self.name),
                          access=_enum_arg(self.name, "access", Access, access), count=count)
        self._buffers.append(decl)
        self._env.buffers[name] = decl
        return BufRef(self, name, decl.dtype)

    def workgroup_array(self, name: str, dtype: DTypeLike, count: int) -> BufRef:
        """Declare a ``var<workgroup>`` array of ``count`` elements shared by a workgroup."""
        name = _name_arg(self.name, "workgroup array name", name) or ""
        n = _int_arg(self.name, "workgroup array count", count, "give count as an int >= 1")
        assert n is not None  # not optional
        decl = WorkgroupDecl(name=name, dtype=_dt(dtype, self.name), count=n)
        self._workgroup.append(decl)
        self._env.workgroup[name] = decl
        return BufRef(self, name, decl.dtype)

    # ---- built-ins ----
    def _axis_builtin(self, name: BuiltinName, axis: int) -> Val:
        a = _int_arg(self.name, f"{name.value} axis", axis, "use axis 0 (x), 1 (y) or 2 (z)")
        if a not in (0, 1, 2):
            raise _bad_arg(self.name, f"{name.value} axis", axis, "0, 1 or 2", "use axis 0 (x), 1 (y) or 2 (z)")
        return Val(self, Builtin(name=name, axis=a))

    def global_id(self, axis: int = 0) -> Val: return self._axis_builtin(BuiltinName.GLOBAL_ID, axis)
    def local_id(self, axis: int = 0) -> Val: return self._axis_builtin(BuiltinName.LOCAL_ID, axis)
    def workgroup_id(self, axis: int = 0) -> Val: return self._axis_builtin(BuiltinName.WORKGROUP_ID, axis)
    def num_workgroups(self, axis: int = 0) -> Val: return self._axis_builtin(BuiltinName.NUM_WORKGROUPS, axis)
    def global_index(self) -> Val: return Val(self, Builtin(name=BuiltinName.GLOBAL_INDEX))
    def local_index(self) -> Val: return Val(self, Builtin(name=BuiltinName.LOCAL_INDEX))

    # ---- expressions ----
    def lit(self, value: bool | int | float | np.generic, dtype: DTypeLike | None = None) -> Val:
        """A typed literal. Without dtype: bool→bool, int→u32 (i32 if negative), float→f32."""
        if is_numpy_scalar(value):  # a numpy bool, integer or float (kinds b, i, u, f); others are refused
            bad = _numpy_scalar_dtype(value) is None and value.dtype.kind not in "biuf"
        else:
            bad = not isinstance(value, (bool, int, float))
        if bad:
            raise _bad_arg(self.name, "literal", value, "a Python or numpy bool, int or float",
                           "e.g. b.lit(1.5) or b.lit(3, 'u32')")
        if dtype is None:
            dtype = _numpy_scalar_dtype(value)
            if dtype is None:
                if isinstance(value, bool):
                    dtype = DataType.BOOL
                elif isinstance(value, int):
                    dtype = DataType.U32 if value >= 0 else DataType.I32
                else:
                    dtype = DataType.F32
        d = _dt(dtype, self.name)
        v = value.item() if is_numpy_scalar(value) else value
        if d.is_float and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        return Val(self, Lit(dtype=d, value=v))

    def select(self, cond: Operand, if_true: Operand, if_false: Operand) -> Val:
        """``if_true`` where ``cond`` holds, else ``if_false`` (both evaluated)."""
        c = self._coerce(cond, dtype=DataType.BOOL)
        t, f = self._pair(if_true, if_false)
        return Val(self, Select(cond=c.node, if_true=t.node, if_false=f.node))

    def min(self, a: Operand, b: Operand) -> Val:
        x, y = self._pair(a, b)
        return x.min(y)

    def max(self, a: Operand, b: Operand) -> Val:
        x, y = self._pair(a, b)
        return x.max(y)

    def fma(self, a: Operand, b: Operand, c: Operand) -> Val:
        like = next((v for v in (a, b, c) if isinstance(v, Val)), None)
        x, y, z = (self._coerce(v, like=like) for v in (a, b, c))
        return Val(self, Fma(a=x.node, b=y.node, c=z.node))

    def vec(self, dtype: DTypeLike, *components: Operand) -> Val:
        """Build a vector from its components, or splat one scalar."""
        d = _dt(dtype, self.name)
        args = [self._coerce(c, dtype=d.scalar).node for c in components]
        return Val(self, VecNew(dtype=d, args=args))

    def cast(self, value: Operand, dtype: DTypeLike) -> Val:
        return self._coerce(value).cast(dtype)

    # ---- statements ----
    def let(self, value: Operand, name: str | None = None) -> Val:
        """Bind an immutable name to a value; returns the name as a value."""
        v = self._coerce(value)
        name = _name_arg(self.name, "let name", name, optional=True) or self._fresh("t")
        dtype = self.type_of(v.node)
        self._emit(Let(name=name, value=v.node))
        if dtype is not None:
            self._env.declare(name, dtype, False)
        return Val(self, Var(name=name))

    def var(self, dtype: DTypeLike, init: Operand | None = None, name: str | None = None) -> MutVar:
        """Declare a mutable variable (zero-initialised without ``init``)."""
        d = _dt(dtype, self.name)
        name = _name_arg(self.name, "var name", name, optional=True) or self._fresh("v")
        value = None if init is None else self._coerce(init, dtype=d).node
        self._emit(VarDecl(name=name, dtype=d, value=value))
        self._env.declare(name, d, True)
        return MutVar(self, Var(name=name))

    def assign(self, var: MutVar, value: Operand) -> None:
        var.set(value)

    def store(self, buf: BufRef, index: Index, value: Operand) -> None:
        buf[index] = value

    def eval(self, value: Val) -> None:
        """Evaluate an expression for its side effect (atomics)."""
        self._emit(Eval(value=self._coerce(value).node))

    def barrier(self, scope: str = "workgroup") -> None:
        """``workgroupBarrier()`` (or ``storageBarrier()`` with scope="storage")."""
        self._emit(Barrier(scope=_enum_arg(self.name, "barrier scope", BarrierScope, scope)))

    def break_(self) -> None: self._emit(Break())
    def continue_(self) -> None: self._emit(Continue())
    def return_(self) -> None: self._emit(Return())

    @contextlib.contextmanager
    def if_(self, cond: Operand) -> Iterator[None]:
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
            raise misuse(self.name, "else_", "b.else_() must directly follow a `with b.if_(...)` block "
                         "(one else per if)", "write `with b.else_():` right after the `with b.if_(...):` block",
                         rule="control-flow")
        body = self._open()
        try:
            yield
        finally:
            self._close()
        block[-1] = replace(block[-1], otherwise=body)

    @contextlib.contextmanager
    def for_range(self, start: Operand, end: Operand, step: int = 1, name: str | None = None) -> Iterator[Val]:
        """``for (var k = start; k < end; k += step)``; yields ``k``. Integer bounds are u32 unless one is i32."""
        like = next((v for v in (start, end) if isinstance(v, Val)), None)
        s = self._coerce(start, like=like)
        e = self._coerce(end, like=s)
        step_n = _int_arg(self.name, "for_range step", step, "give the step as a non-zero int, e.g. step=2")
        assert step_n is not None  # not optional
        name = _name_arg(self.name, "for_range name", name, optional=True) or self._fresh("k")
        body = self._open()
        dtype = self.type_of(s.node)
        if dtype is not None:
            self._env.declare(name, dtype, False)
        try:
            yield Val(self, Var(name=name))
        finally:
            self._close()
        self._emit(For(var=name, start=s.node, end=e.node, step=step_n, body=body))

    @contextlib.contextmanager
    def while_(self, cond: Operand) -> Iterator[None]:
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
            raise misuse(self.name, "build", "build() called inside an open if_/for_range/while_ block",
                         "call b.build() after every `with` block of the builder has closed", rule="control-flow")
        program = Program(
            name=self.name, buffers=list(self._buffers), workgroup=list(self._workgroup),
            workgroup_size=self.workgroup_size, body=list(self._blocks[0]), grid_from=self.grid_from,
        )
        if validate:
            _validate(program)
        return program

    # ---- internals ----
    def _fresh(self, prefix: str) -> str:
        self._counter += 1
        return f"{prefix}{self._counter}"

    def _emit(self, stmt: Stmt) -> None:
        self._blocks[-1].append(stmt)

    def _open(self) -> list[Stmt]:
        self._blocks.append([])
        self._env.push()
        return self._blocks[-1]

    def _close(self) -> None:
        self._blocks.pop()
        self._env.pop()

    def type_of(self, node: Expr) -> DataType | None:
        problems: list[object] = []
        t = infer(node, self._env, report=lambda *a: problems.append(a))
        return None if problems else t

    def _index(self, index: Index) -> Val:
        if isinstance(index, Val):
            return index
        i = python_index(self.name, index, "buffer index")
        return self.lit(i, DataType.I32 if i < 0 else DataType.U32)

    def _pair(self, a: Operand, b: Operand) -> tuple[Val, Val]:
        if isinstance(a, Val):
            return a, self._coerce(b, like=a)
        if isinstance(b, Val):
            return self._coerce(a, like=b), b
        return self._coerce(a), self._coerce(b)

    def _coerce(self, value: object, *, like: Val | None = None, dtype: DataType | None = None,
                shift: bool = False) -> Val:
        if isinstance(value, Val):
            return value
        if isinstance(value, BufRef):
            raise misuse(self.name, "operand", f"buffer {value.name!r} used as a value",
                         f"index it, e.g. {value.name}[i] (or {value.name}.len() for its element count)", value.name)
        if shift:
            dtype = DataType.U32
        if dtype is None and like is not None:
            lt = like.dtype
            dtype = lt.scalar if lt is not None else None
        if dtype is not None and dtype.is_vector:
            dtype = dtype.scalar
        if isinstance(value, (bool, int, float)) or is_numpy_scalar(value):
            return self.lit(value, dtype)
        raise misuse(self.name, "operand", f"cannot use {type(value).__name__} {value!r:.80} in a vyre expression",
                     "use a vyre value, or a Python/numpy bool, int or float", value)


__all__ = ["ProgramBuilder", "Val", "MutVar", "BufRef"]
