"""Hypothesis strategies for random valid vyre programs and their inputs (the fuzzer of issue 9).

:func:`fuzz_cases` draws a :class:`FuzzCase`: a :class:`~vyre.ir.program.Program` built straight
from IR nodes, its input arrays and an explicit grid. Every program is meant to pass
``vyre.validate`` (a failure is a bug of this generator, see ``test_generated_programs_validate``)
and to have one defined result on every conforming backend, up to the float model:

* Shapes: one workgroup size and grid per program, ``n`` invocations in all; every output buffer
  has exactly ``n`` elements and an invocation stores only to its own element ``out[global_index]``
  (loads from outputs also read only the own element), so there is no race.
* Loads from input buffers (``read`` runtime-sized, ``uniform`` fixed count) index ``u32 % len(buf)``:
  never out of bounds.
* Loops always end: a ``for`` counts from a small literal towards ``end % C`` (C a small literal) with a
  positive step, or down from a small i32 literal with a negative step; every ``while`` is
  ``while (wN > 0u && cond)`` and its body starts with ``wN = wN - 1u`` (wN assigned nowhere else).
* Workgroup memory, race-free: ``barrier; wg[local_index] = v; barrier; let r = wg[i % size]``, at the
  top level of the body (uniform control flow) and before any ``return``.
* Atomics, order-independent: "private" buffers (``n`` elements, every op at ``global_index``: the old
  values are deterministic and may be used), "shared" buffers and workgroup arrays (a few slots, one
  commutative op family per array: add/sub, and, or, xor, min or max; old values are never used,
  except an ``atomic_load`` after a barrier in workgroup memory). Atomics are always the whole value
  of a ``let``/``eval`` (never inside ``&&``/``||``, which short-circuit on the GPU only).
* Integer division by zero, shifts by >= 32, overflow, float->int casts of anything are defined in
  vyre (docs/architecture.md "Value semantics"); floats may be anything, the float model judges them.

Families (``FAMILIES``) weight the features so that each test function stresses one area; every
family can still draw every type and statement the area needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from vyre.backends.config import DispatchConfig
from vyre.ir.decls import BufferDecl, WorkgroupDecl
from vyre.ir.nodes import (
    FLOAT_UNOPS,
    INT_UNOPS,
    SUBGROUP_BUILTINS,
    Assign,
    Atomic,
    AtomicOp,
    Barrier,
    BarrierScope,
    Binary,
    BinOp,
    Bitcast,
    Break,
    BufLen,
    Builtin,
    BuiltinName,
    Cast,
    Continue,
    Eval,
    Extract,
    Fma,
    For,
    If,
    Let,
    Lit,
    Load,
    Return,
    Select,
    Store,
    Unary,
    UnOp,
    Var,
    VarDecl,
    VecNew,
    While,
)
from vyre.ir.program import Program
from vyre.ir.types import Access, DataType

D = DataType
U32, I32, F32, F16, BOOL = D.U32, D.I32, D.F32, D.F16, D.BOOL
I32_MIN, I32_MAX, U32_MAX = -(2**31), 2**31 - 1, 2**32 - 1

FAMILIES = ("scalar", "float", "control", "memory", "vector")

_WG_SIZES = [(1, 1, 1), (4, 1, 1), (8, 1, 1), (16, 1, 1), (32, 1, 1), (64, 1, 1), (4, 2, 1), (2, 2, 2),
             (8, 4, 1), (3, 1, 1)]
_GRIDS = [(1, 1, 1), (2, 1, 1), (3, 1, 1), (1, 2, 1), (2, 2, 1), (1, 1, 2), (2, 1, 2), (4, 1, 1)]
MAX_INVOCATIONS = 256
#: WebGPU's default maxStorageBuffersPerShaderStage: programs stay portable to any adapter
MAX_STORAGE_BUFFERS = 8

# atomic op families whose final memory contents do not depend on the order of the lanes; the last one
# writes a single constant C per array: exchange(C) leaves C, compare_exchange(e, C) leaves C exactly when
# some lane's e equals the initial value (lanes expecting C rewrite C), in any order
_COMMUTATIVE = [(AtomicOp.ADD, AtomicOp.SUB), (AtomicOp.AND,), (AtomicOp.OR,), (AtomicOp.XOR,), (AtomicOp.MIN,),
                (AtomicOp.MAX,), (AtomicOp.EXCHANGE, AtomicOp.COMPARE_EXCHANGE)]
_ALL_ATOMIC = [AtomicOp.ADD, AtomicOp.SUB, AtomicOp.MIN, AtomicOp.MAX, AtomicOp.AND, AtomicOp.OR, AtomicOp.XOR,
               AtomicOp.EXCHANGE, AtomicOp.COMPARE_EXCHANGE, AtomicOp.LOAD]

_ARITH = [BinOp.ADD, BinOp.SUB, BinOp.MUL, BinOp.DIV, BinOp.REM, BinOp.MIN, BinOp.MAX]
_BITS = [BinOp.BIT_AND, BinOp.BIT_OR, BinOp.BIT_XOR]
_COMPARE = [BinOp.EQ, BinOp.NE, BinOp.LT, BinOp.LE, BinOp.GT, BinOp.GE]


@dataclass(frozen=True)
class Features:
    """What one family of programs may contain (weights are relative frequencies)."""

    scalars: tuple[DataType, ...]
    vectors: tuple[DataType, ...] = ()
    control: int = 1  # weight of if/for/while/break/continue/return statements
    memory: bool = False  # workgroup arrays, barriers, shared atomics
    private_atomics: bool = False
    max_stmts: int = 24
    max_depth: int = 3  # expression depth


def family_features(family: str, f16: bool) -> Features:
    """The feature set of a family; f16 types only when the adapter has shader-f16."""
    halves = (F16,) if f16 else ()
    vec_int = (D.VEC2_U32, D.VEC3_U32, D.VEC4_U32, D.VEC2_I32, D.VEC3_I32, D.VEC4_I32)
    vec_f = (D.VEC2_F32, D.VEC3_F32, D.VEC4_F32) + ((D.VEC2_F16, D.VEC4_F16) if f16 else ())
    if family == "scalar":
        return Features((U32, I32, BOOL), control=1)
    if family == "float":
        return Features((F32, U32, I32, BOOL) + halves, control=1)
    if family == "control":
        # integers twice as often as f32: float decisions (NaN, rounding) leave whole programs unspecified
        return Features((U32, I32, BOOL, U32, I32, F32), control=5, max_stmts=32, private_atomics=True)
    if family == "memory":
        return Features((U32, I32, BOOL, F32), vectors=(D.VEC2_U32, D.VEC3_F32, D.VEC4_I32), control=2, memory=True,
                        private_atomics=True, max_stmts=32)
    if family == "vector":
        return Features((U32, I32, F32, BOOL) + halves, vectors=vec_int + vec_f, control=1)
    raise ValueError(f"unknown family {family!r}; one of {FAMILIES}")


@dataclass
class FuzzCase:
    program: Program
    inputs: list[np.ndarray]
    config: DispatchConfig
    family: str
    invocations: int

    def describe(self, limit: int = 64) -> str:
        """Program text, grid and inputs, for failure messages."""
        lines = [self.program.to_text(), f"grid={self.config.grid} (invocations={self.invocations})"]
        with np.printoptions(threshold=limit, linewidth=120, floatmode="unique"):
            for decl, arr in zip(self.program.input_buffers, self.inputs):
                lines.append(f"input {decl.name} ({decl.dtype.value}, {decl.access.value}): {arr.tolist()!r}"
                             if arr.size <= limit else f"input {decl.name} ({decl.dtype.value}): {arr!r}")
        return "\n".join(lines)


# --------------------------------------------------------------------------- literals and input values
_U32_EDGES = [0, 1, 2, 3, 5, 7, 16, 31, 32, 33, 255, 256, 65535, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, U32_MAX]
_I32_EDGES = [0, 1, -1, 2, -2, 3, 7, -7, 16, 31, 32, 33, -33, 1000, -1000, I32_MAX, I32_MIN, I32_MIN + 1]
_F_NICE = [0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 3.0, -3.0, 10.0, 0.25, 100.0, -2.5, 1.5]
_F32_SPECIAL = [float("nan"), float("inf"), float("-inf"), -0.0, 1e-40, -1e-40, 3.4028234663852886e38,
                -3.4028234663852886e38, 1.1754943508222875e-38, 1e30, -1e30, 1e-30, 16777217.0, 2.0**31, 2.0**32]
_F16_SPECIAL = [float("nan"), float("inf"), float("-inf"), -0.0, 6e-8, 65504.0, -65504.0, 6.1e-5, 2049.0]


def _lit_value(draw, t: DataType) -> bool | int | float:
    if t is BOOL:
        return draw(st.booleans())
    if t is U32:
        return draw(st.one_of(st.integers(0, 8), st.sampled_from(_U32_EDGES), st.integers(0, U32_MAX)))
    if t is I32:
        return draw(st.one_of(st.integers(-8, 8), st.sampled_from(_I32_EDGES), st.integers(I32_MIN, I32_MAX)))
    width = 16 if t is F16 else 32
    special = _F16_SPECIAL if t is F16 else _F32_SPECIAL
    v = draw(st.one_of(st.sampled_from(_F_NICE), st.floats(-100, 100, width=width), st.sampled_from(special),
                       st.floats(width=width)))
    return float(np.float16(v)) if t is F16 else float(np.float32(v))


def _nice(rng: np.random.Generator, scalar: DataType, size: int) -> np.ndarray:
    if scalar is BOOL:
        return rng.integers(0, 2, size).astype(bool)
    pick = rng.integers(0, 10, size)
    if scalar is U32:
        small = rng.integers(0, 20, size)
        mid = rng.integers(0, 100000, size)
        big = rng.integers(0, 2**32, size, dtype=np.uint64)
        return np.where(pick < 5, small, np.where(pick < 8, mid, big)).astype(np.uint32)
    if scalar is I32:
        small = rng.integers(-20, 20, size)
        mid = rng.integers(-100000, 100000, size)
        big = rng.integers(I32_MIN, I32_MAX, size, endpoint=True)
        return np.where(pick < 5, small, np.where(pick < 8, mid, big)).astype(np.int32)
    ints = rng.integers(-10, 11, size).astype(np.float64)
    mod = np.round(rng.uniform(-100, 100, size), 2)
    wide = rng.uniform(-1, 1, size) * 10.0 ** rng.integers(-6, 7 if scalar is F32 else 4, size)
    zero = np.where(rng.integers(0, 2, size) == 0, 0.0, -0.0) if scalar is F32 else np.zeros(size)
    v = np.where(pick < 3, ints, np.where(pick < 6, mod, np.where(pick < 9, wide, zero)))
    if scalar is F32:
        huge = rng.choice([1e30, -1e30, 1e-30, 3e9, -3e9, 1e-20], size)
        v = np.where(rng.integers(0, 20, size) == 0, huge, v)
    return v.astype(scalar.numpy_dtype)


def _specials(scalar: DataType) -> list:
    if scalar is U32:
        return [U32_MAX, 0x80000000, 0x7FFFFFFF, 0]
    if scalar is I32:
        return [I32_MIN, I32_MAX, -1, 0]
    if scalar is BOOL:
        return [True, False]
    return _F16_SPECIAL if scalar is F16 else _F32_SPECIAL


@st.composite
def input_arrays(draw, decl: BufferDecl, size: int) -> np.ndarray:
    """``size`` elements for ``decl``: mostly nice finite values from a seeded numpy generator, some
    special values (NaN, inf, -0.0, subnormals, integer extremes) planted by hypothesis (so they shrink)."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    lanes = decl.dtype.lanes
    scalar = decl.dtype.scalar
    flat = _nice(rng, scalar, size * lanes)
    specials = _specials(scalar)
    n_special = draw(st.sampled_from([0, 0, 0, 1, 2, 4]))
    for _ in range(n_special):
        pos = draw(st.integers(0, flat.size - 1))
        with np.errstate(over="ignore"):
            flat[pos] = scalar.numpy_dtype.type(draw(st.sampled_from(specials)))
    if draw(st.integers(0, 9)) == 0:  # a whole buffer of one value (zeros, a special)
        with np.errstate(over="ignore"):
            flat[:] = scalar.numpy_dtype.type(draw(st.sampled_from([0, *specials[:2]])))
    return flat.reshape(size, lanes) if lanes > 1 else flat


# --------------------------------------------------------------------------- the program generator
@dataclass
class _Name:
    name: str
    dtype: DataType
    assignable: bool  # a var that statements may assign (not a while counter)


@dataclass
class _SharedAtomics:
    name: str
    dtype: DataType
    count: int
    ops: tuple[AtomicOp, ...]
    workgroup: bool
    const: Lit | None = None  # exchange/compare_exchange families: every lane writes this one value


@dataclass
class _State:
    scopes: list[list[_Name]] = field(default_factory=lambda: [[]])
    stmts: int = 0
    loop_depth: int = 0
    block_depth: int = 0
    returns_allowed: bool = True


def _lit(v: bool | int | float, t: DataType) -> Lit:
    return Lit(dtype=t, value=v)


def _u(v: int) -> Lit:
    return Lit(dtype=U32, value=v)


GI = Builtin(name=BuiltinName.GLOBAL_INDEX)
LI = Builtin(name=BuiltinName.LOCAL_INDEX)


class _Gen:
    def __init__(self, draw, features: Features, invocations: int, workgroup_size: tuple[int, int, int]):
        self.draw = draw
        self.f = features
        self.n = invocations
        self.wg_size = workgroup_size
        self.wg_n = workgroup_size[0] * workgroup_size[1] * workgroup_size[2]
        self.counter = 0
        self.s = _State()
        self.inputs: list[BufferDecl] = []  # read / uniform
        self.outputs: list[BufferDecl] = []  # write / read_write, n elements, own slot only
        self.private: list[BufferDecl] = []  # read_write atomic buffers, n elements, own slot only
        self.shared: list[_SharedAtomics] = []
        self.workgroup: list[WorkgroupDecl] = []
        self.binding = 0

    # ---- helpers ----
    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def pick(self, seq):
        # sampled_from: st.integers(0, len - 1) came out far from uniform here (some of 18 unary ops never in
        # 300 programs); both shrink to the first element. Over indexes, not the elements: hypothesis labels a
        # sampled_from by its elements' reprs, and a lambda's repr holds its address, which made derandomized
        # runs differ from run to run.
        return seq[self.draw(st.sampled_from(range(len(seq))))]

    def chance(self, k: int) -> bool:
        """True with probability 1/k (shrinks to False)."""
        return self.draw(st.integers(0, k - 1)) == k - 1

    def buffer(self, prefix: str, dtype: DataType, access: Access, count: int | None) -> BufferDecl:
        decl = BufferDecl(name=self.fresh(prefix), binding=self.binding, dtype=dtype, access=access, count=count)
        self.binding += 1
        return decl

    def types(self) -> list[DataType]:
        return list(self.f.scalars) + list(self.f.vectors)

    def names(self, t: DataType | None = None, assignable: bool = False) -> list[_Name]:
        out = [n for scope in self.s.scopes for n in scope]
        if t is not None:
            out = [n for n in out if n.dtype == t]
        if assignable:
            out = [n for n in out if n.assignable]
        return out

    def declare(self, name: str, dtype: DataType, assignable: bool) -> None:
        self.s.scopes[-1].append(_Name(name, dtype, assignable))

    # ---- declarations ----
    def declare_buffers(self) -> None:
        types = self.types()
        for _ in range(self.draw(st.integers(1, 3))):
            t = self.pick(types)
            uniformable = t in (U32, I32, F32, D.VEC4_U32, D.VEC4_I32, D.VEC4_F32)
            if uniformable and self.chance(3):
                self.inputs.append(self.buffer("u", t, Access.UNIFORM, self.draw(st.integers(1, 8))))
            else:
                self.inputs.append(self.buffer("in", t, Access.READ, None))
        for _ in range(self.draw(st.integers(1, 3))):
            t = self.pick(types)
            if self.chance(3):
                self.outputs.append(self.buffer("io", t, Access.READ_WRITE, None))
            else:
                self.outputs.append(self.buffer("out", t, Access.WRITE, self.n))
        if self.f.private_atomics and self.chance(2):
            self.private.append(self.buffer("pa", self.pick([U32, I32]), Access.READ_WRITE, None))
        if self.f.memory:
            for _ in range(self.draw(st.integers(0, min(2, MAX_STORAGE_BUFFERS - self.storage_buffers())))):
                decl = self.buffer("sa", self.pick([U32, I32]), Access.READ_WRITE, self.draw(st.integers(1, 4)))
                self.inputs.append(decl)  # read_write: supplied by the host, returned as an output
                self.shared.append(self.shared_family(decl.name, decl.dtype, decl.count or 1, workgroup=False))

    # ---- expressions ----
    def expr(self, t: DataType, depth: int | None = None) -> object:
        if depth is None:
            depth = self.draw(st.integers(0, self.f.max_depth))
        if depth <= 0 or self.draw(st.integers(0, 2)) == 0:
            return self.leaf(t)
        return self.composite(t, depth - 1)

    def index(self, length: object) -> object:
        """A u32 in [0, length): ``e % length`` (length is a non-zero u32 expression)."""
        if self.chance(2):
            base = GI if self.chance(2) else self.expr(U32, 1)
        else:
            base = self.expr(U32, 2)
        return Binary(op=BinOp.REM, lhs=base, rhs=length)

    def leaf(self, t: DataType) -> object:
        opts: list = [lambda: self.literal(t)]
        named = self.names(t)
        if named:
            opts += [lambda: Var(name=self.pick(named).name)] * 3
        loadable = [b for b in self.inputs if b.dtype == t and b.name not in {s.name for s in self.shared}]
        if loadable:
            def load():
                b = self.pick(loadable)
                return Load(buffer=b.name, index=self.index(BufLen(buffer=b.name)))
            opts += [load] * 2
        own = [b for b in self.outputs + self.private if b.dtype == t]
        if own:
            opts.append(lambda: Load(buffer=self.pick(own).name, index=GI))
        if t is U32:
            opts.append(self.builtin)
            opts.append(lambda: BufLen(buffer=self.pick(self.inputs + self.outputs + self.private).name))
        return self.pick(opts)()

    def literal(self, t: DataType) -> object:
        if t.is_vector:
            return VecNew(dtype=t, args=[_lit(_lit_value(self.draw, t.scalar), t.scalar)])
        return _lit(_lit_value(self.draw, t), t)

    def builtin(self) -> object:
        # not the subgroup built-ins: their values depend on the adapter's subgroup size, which the reference
        # only simulates (tests/backends/test_subgroup_backends.py covers them)
        name = self.pick([n for n in BuiltinName if n not in SUBGROUP_BUILTINS])
        if name in (BuiltinName.GLOBAL_ID, BuiltinName.LOCAL_ID, BuiltinName.WORKGROUP_ID,
                    BuiltinName.NUM_WORKGROUPS):
            return Builtin(name=name, axis=self.draw(st.integers(0, 2)))
        return Builtin(name=name)

    def other_type(self, lanes: int, exclude: DataType | None = None, allow_bool: bool = True) -> DataType:
        cands = [d for d in self.types() if d.lanes == lanes and d != exclude and (allow_bool or not d.is_bool)]
        if not cands:
            cands = [d for d in (U32, I32, F32) if lanes == 1] or [DataType.vector(U32, lanes)]
        return self.pick(cands)

    def composite(self, t: DataType, depth: int) -> object:
        opts: list = []
        e = lambda tt=t: self.expr(tt, depth)  # noqa: E731
        if t is BOOL:
            opts += [self.compare(depth)] * 3
            opts.append(lambda: Binary(op=self.pick([BinOp.AND, BinOp.OR]), lhs=e(), rhs=e()))
            opts.append(lambda: Unary(op=UnOp.NOT, arg=e()))
            opts.append(lambda: Cast(dtype=BOOL, arg=self.expr(self.other_type(1, BOOL), depth)))
        else:
            unops = [UnOp.ABS]
            if t.is_signed:
                unops.append(UnOp.NEG)
            if t.is_float or t.scalar is I32:
                unops.append(UnOp.SIGN)
            if t.is_int:
                unops += [UnOp.NOT, *sorted(INT_UNOPS, key=lambda o: o.value)]
            if t.is_float:
                unops += sorted(FLOAT_UNOPS, key=lambda o: o.value)
            opts += [lambda: Unary(op=self.pick(unops), arg=e())] * 2
            opts += [lambda: self.arith(t, depth)] * 3
            if t.is_int:
                opts.append(lambda: Binary(op=self.pick(_BITS), lhs=e(), rhs=e()))
                opts.append(lambda: Binary(op=self.pick([BinOp.SHL, BinOp.SHR]), lhs=e(),
                                           rhs=e(DataType.vector(U32, t.lanes))))
            if t.is_float:
                opts.append(lambda: Binary(op=BinOp.POW, lhs=e(), rhs=e()))
                opts.append(lambda: Fma(a=e(), b=e(), c=e()))
            opts.append(lambda: Cast(dtype=t, arg=self.expr(self.other_type(t.lanes, t), depth)))
            opts.append(lambda: self.bitcast(t, depth))
            if t.is_vector:
                opts.append(lambda: VecNew(dtype=t, args=[self.expr(t.scalar, depth) for _ in range(t.lanes)]))
            else:
                vecs = [v for v in self.f.vectors if v.scalar == t]
                if vecs:
                    def extract():
                        v = self.pick(vecs)
                        return Extract(arg=self.expr(v, depth), lane=self.draw(st.integers(0, v.lanes - 1)))
                    opts.append(extract)
        opts.append(lambda: Select(cond=self.expr(BOOL, depth), if_true=e(), if_false=e()))
        return self.pick(opts)()

    def compare(self, depth: int):
        def make():
            s = self.pick([d for d in self.f.scalars])
            ops = [BinOp.EQ, BinOp.NE] if s is BOOL else _COMPARE
            return Binary(op=self.pick(ops), lhs=self.expr(s, depth), rhs=self.expr(s, depth))
        return make

    def arith(self, t: DataType, depth: int) -> object:
        op = self.pick(_ARITH)
        lt = rt = t
        if t.is_vector and op not in (BinOp.MIN, BinOp.MAX) and self.chance(3):
            if self.chance(2):
                lt = t.scalar
            else:
                rt = t.scalar
        return Binary(op=op, lhs=self.expr(lt, depth), rhs=self.expr(rt, depth))

    def bitcast(self, t: DataType, depth: int) -> object:
        bits = t.lanes * (16 if t.scalar is F16 else 32)
        cands = []
        for d in self.types():
            if d.is_bool or d == t:
                continue
            if d.lanes * (16 if d.scalar is F16 else 32) == bits:
                cands.append(d)
        if not cands:
            cands = [t]
        return Bitcast(dtype=t, arg=self.expr(self.pick(cands), depth))

    # ---- statements ----
    def block(self, budget: int) -> list:
        self.s.scopes.append([])
        self.s.block_depth += 1
        out = []
        for _ in range(self.draw(st.integers(0 if self.s.block_depth > 1 else 1, budget))):
            if self.s.stmts >= self.f.max_stmts:
                break
            out.extend(self.stmt())
        self.s.block_depth -= 1
        self.s.scopes.pop()
        return out

    def stmt(self) -> list:
        self.s.stmts += 1
        kinds = ["store", "let", "var", "assign", "store"]
        nested = self.s.block_depth < 4
        if nested:
            kinds += ["if"] * self.f.control
            kinds += ["for", "while"] * ((self.f.control + 1) // 2)
        if self.s.loop_depth > 0:
            kinds += ["break", "continue"] * ((self.f.control + 1) // 2)
        if self.s.returns_allowed:
            kinds += ["return"] * ((self.f.control + 2) // 3)
        if self.private:
            kinds += ["private_atomic"] * 2
        if self.shared:
            kinds += ["shared_atomic"] * 2
        kind = self.pick(kinds)
        return getattr(self, "stmt_" + kind)()

    def stmt_store(self) -> list:
        out = self.pick(self.outputs)
        return [Store(buffer=out.name, index=GI, value=self.expr(out.dtype))]

    def stmt_let(self) -> list:
        t = self.pick(self.types())
        value = self.expr(t)
        name = self.fresh("v")
        self.declare(name, t, False)
        return [Let(name=name, value=value)]

    def stmt_var(self) -> list:
        t = self.pick(self.types())
        value = None if self.chance(4) else self.expr(t)
        name = self.fresh("m")
        self.declare(name, t, True)
        return [VarDecl(name=name, dtype=t, value=value)]

    def stmt_assign(self) -> list:
        targets = self.names(assignable=True)
        if not targets:
            return self.stmt_var()
        tgt = self.pick(targets)
        return [Assign(name=tgt.name, value=self.expr(tgt.dtype))]

    def stmt_if(self) -> list:
        cond = self.expr(BOOL)
        then = self.block(4)
        otherwise = self.block(3) if self.chance(2) else []
        return [If(cond=cond, then=then, otherwise=otherwise)]

    def loop_body(self, budget: int, pre: list, declare: tuple[str, DataType] | None = None) -> list:
        self.s.loop_depth += 1
        self.s.scopes.append([])
        if declare is not None:
            self.declare(declare[0], declare[1], False)
        body = pre + self.block(budget)
        self.s.scopes.pop()
        self.s.loop_depth -= 1
        return body

    def stmt_for(self) -> list:
        var = self.fresh("k")
        if self.chance(3):  # count down (i32 only: a u32 counter could wrap past 0)
            t = I32
            start = _lit(self.draw(st.integers(0, 6)), I32)
            end = _lit(self.draw(st.integers(-3, 2)), I32) if self.chance(2) else Binary(
                op=BinOp.REM, lhs=self.expr(I32, 1), rhs=_lit(self.draw(st.integers(1, 4)), I32))
            step = -self.draw(st.integers(1, 3))
        else:
            t = self.pick([U32, I32])
            start = _lit(self.draw(st.integers(0, 3)), t)
            bound = _lit(self.draw(st.integers(1, 6)), t)
            end = bound if self.chance(2) else Binary(op=BinOp.REM, lhs=self.expr(t, 1), rhs=bound)
            step = self.draw(st.integers(1, 3))
        body = self.loop_body(4, [], (var, t))
        return [For(var=var, start=start, end=end, step=step, body=body)]

    def stmt_while(self) -> list:
        counter = self.fresh("w")
        init = VarDecl(name=counter, dtype=U32, value=_u(self.draw(st.integers(0, 5))))
        guard = Binary(op=BinOp.GT, lhs=Var(name=counter), rhs=_u(0))
        cond = guard if self.chance(2) else Binary(op=BinOp.AND, lhs=guard, rhs=self.expr(BOOL, 2))
        dec = Assign(name=counter, value=Binary(op=BinOp.SUB, lhs=Var(name=counter), rhs=_u(1)))
        self.declare(counter, U32, False)
        body = self.loop_body(4, [dec])
        return [init, While(cond=cond, body=body)]

    def _guarded(self, stmts: list) -> list:
        if self.chance(4):
            return stmts
        return [If(cond=self.expr(BOOL, 2), then=stmts)]

    def stmt_break(self) -> list:
        return self._guarded([Break()])

    def stmt_continue(self) -> list:
        return self._guarded([Continue()])

    def stmt_return(self) -> list:
        pre = self.stmt_store() if self.chance(2) else []
        return self._guarded(pre + [Return()])

    def atomic_value(self, t: DataType) -> object:
        return self.expr(t, 2)

    def stmt_private_atomic(self) -> list:
        buf = self.pick(self.private)
        op = self.pick(_ALL_ATOMIC)
        value = None if op is AtomicOp.LOAD else self.atomic_value(buf.dtype)
        expected = self.atomic_value(buf.dtype) if op is AtomicOp.COMPARE_EXCHANGE else None
        node = Atomic(op=op, buffer=buf.name, index=GI, value=value, expected=expected)
        if self.chance(3):
            return [Eval(value=node)]
        name = self.fresh("a")
        self.declare(name, buf.dtype, False)
        return [Let(name=name, value=node)]

    def shared_family(self, name: str, t: DataType, count: int, workgroup: bool) -> _SharedAtomics:
        ops = self.pick(_COMMUTATIVE)
        const = _lit(_lit_value(self.draw, t), t) if AtomicOp.EXCHANGE in ops else None
        return _SharedAtomics(name, t, count, ops, workgroup, const)

    def shared_atomic(self, sa: _SharedAtomics) -> object:
        op = self.pick(sa.ops)
        value = sa.const if sa.const is not None else self.atomic_value(sa.dtype)
        expected = self.atomic_value(sa.dtype) if op is AtomicOp.COMPARE_EXCHANGE else None
        return Eval(value=Atomic(op=op, buffer=sa.name, index=self.index(_u(sa.count)), value=value,
                                 expected=expected))

    def stmt_shared_atomic(self) -> list:
        sa = self.pick([s for s in self.shared if not s.workgroup])
        return [self.shared_atomic(sa)]

    # ---- workgroup memory (top level only) ----
    def workgroup_exchange(self) -> list:
        """barrier; wg[lid] = v; barrier; let r = wg[i % size]: race-free through workgroup memory."""
        t = self.pick([d for d in self.types() if not d.uses_f16] or [U32])
        wg = WorkgroupDecl(name=self.fresh("wg"), dtype=t, count=self.wg_n)
        self.workgroup.append(wg)
        scope = self.pick([BarrierScope.WORKGROUP, BarrierScope.WORKGROUP, BarrierScope.STORAGE])
        out = [Barrier(scope=BarrierScope.WORKGROUP), Store(buffer=wg.name, index=LI, value=self.expr(t)),
               Barrier(scope=scope)]
        if scope is BarrierScope.STORAGE:
            out.append(Barrier(scope=BarrierScope.WORKGROUP))
        for _ in range(self.draw(st.integers(1, 2))):
            name = self.fresh("r")
            idx = self.index(_u(self.wg_n)) if self.chance(2) else Binary(
                op=BinOp.REM, lhs=Binary(op=BinOp.ADD, lhs=LI, rhs=_u(self.draw(st.integers(1, 5)))),
                rhs=_u(self.wg_n))
            out.append(Let(name=name, value=Load(buffer=wg.name, index=idx)))
            self.declare(name, t, False)
            if not self.chance(4):
                out.extend(self.publish(name, t))
        return out

    def workgroup_atomics(self) -> list:
        """Init slots, barrier, commutative atomics by every lane (maybe under ifs), barrier, atomic loads."""
        t = self.pick([U32, I32])
        count = self.draw(st.integers(1, min(4, self.wg_n)))
        wg = WorkgroupDecl(name=self.fresh("wa"), dtype=t, count=count)
        self.workgroup.append(wg)
        sa = self.shared_family(wg.name, t, count, workgroup=True)
        init = If(cond=Binary(op=BinOp.LT, lhs=LI, rhs=_u(count)),
                  then=[Store(buffer=wg.name, index=LI, value=self.expr(t, 1))])
        out = [Barrier(), init, Barrier()]
        for _ in range(self.draw(st.integers(1, 3))):
            out.extend(self._guarded([self.shared_atomic(sa)]) if self.chance(2) else [self.shared_atomic(sa)])
        out.append(Barrier())
        name = self.fresh("r")
        out.append(Let(name=name, value=Atomic(op=AtomicOp.LOAD, buffer=wg.name, index=self.index(_u(count)))))
        self.declare(name, t, False)
        if not self.chance(4):
            out.extend(self.publish(name, t))
        return out

    def storage_buffers(self) -> int:
        return sum(b.access is not Access.UNIFORM for b in self.inputs + self.outputs + self.private)

    def publish(self, name: str, t: DataType) -> list:
        """Store a value read from workgroup memory into a new output of its own (so it is compared), or into
        an output of its type when the program already has WebGPU's default limit of 8 storage buffers."""
        if self.storage_buffers() >= MAX_STORAGE_BUFFERS:
            same = [o for o in self.outputs if o.dtype == t]
            return [Store(buffer=self.pick(same).name, index=GI, value=Var(name=name))] if same else []
        out = BufferDecl(name=self.fresh("wout"), binding=self.binding, dtype=t, access=Access.WRITE, count=self.n)
        self.binding += 1
        self.outputs.append(out)
        return [Store(buffer=out.name, index=GI, value=Var(name=name))]

    def workgroup_phase(self) -> list:
        """A workgroup-memory pattern, sometimes repeated by a loop with literal (uniform) bounds."""
        pattern = self.workgroup_atomics if self.chance(3) else self.workgroup_exchange
        if not self.chance(3):
            return pattern()
        var = self.fresh("k")
        self.s.scopes.append([])
        self.declare(var, U32, False)
        body = pattern()
        self.s.scopes.pop()
        return [For(var=var, start=_u(0), end=_u(self.draw(st.integers(1, 3))), step=1, body=body)]

    def body(self) -> list:
        n_top = self.draw(st.integers(1, 8))
        wg_slots: set[int] = set()
        if self.f.memory:
            for _ in range(self.draw(st.integers(0, 2))):
                wg_slots.add(self.draw(st.integers(0, n_top - 1)))
        last_wg = max(wg_slots, default=-1)
        out: list = []
        for i in range(n_top):
            self.s.returns_allowed = i > last_wg
            if i in wg_slots:
                out.extend(self.workgroup_phase())
            elif self.s.stmts < self.f.max_stmts:
                out.extend(self.stmt())
        # every output gets at least one store at the end (unless a lane returned)
        for o in self.outputs:
            if self.chance(2):
                out.append(Store(buffer=o.name, index=GI, value=self.expr(o.dtype)))
        return out


@st.composite
def programs(draw, family: str = "scalar", f16: bool = False) -> tuple[Program, int, tuple[int, int, int]]:
    """A random valid program of ``family``: (program, invocations, grid)."""
    features = family_features(family, f16)
    while True:
        wg = draw(st.sampled_from(_WG_SIZES))
        grid = draw(st.sampled_from(_GRIDS))
        n = wg[0] * wg[1] * wg[2] * grid[0] * grid[1] * grid[2]
        if n <= MAX_INVOCATIONS:
            break
    g = _Gen(draw, features, n, wg)
    g.declare_buffers()
    body = g.body()
    buffers = g.inputs + g.outputs + g.private
    program = Program(name=f"fuzz_{family}", buffers=sorted(buffers, key=lambda b: b.binding),
                      workgroup=g.workgroup, workgroup_size=wg, body=body)
    return program, n, grid


@st.composite
def fuzz_cases(draw, family: str = "scalar", f16: bool = False) -> FuzzCase:
    """A program of ``family`` with inputs for every readable buffer and an explicit grid."""
    program, n, grid = draw(programs(family, f16))
    inputs = []
    for decl in program.input_buffers:
        if decl.count is not None:
            size = decl.count
        elif decl.access is Access.READ_WRITE:
            size = n  # outputs and private atomics: one element per invocation
        else:
            size = draw(st.sampled_from([1, 2, 3, 7, n, n + 5, 2 * n + 1]))
        inputs.append(draw(input_arrays(decl, size)))
    return FuzzCase(program, inputs, DispatchConfig(grid=grid), family, n)


__all__ = ["FAMILIES", "Features", "FuzzCase", "family_features", "fuzz_cases", "input_arrays", "programs",
           "MAX_INVOCATIONS"]
