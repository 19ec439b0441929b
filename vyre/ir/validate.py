"""The validator: every rule a program must satisfy before lowering.

:func:`check` returns every problem as a :class:`~vyre.errors.ValidationIssue`;
:func:`validate` raises one :class:`~vyre.errors.ValidationError` listing them all.
Each issue has a stable ``rule`` id (see :data:`RULES`), the ``path`` of the node
(``body[3].then[0].value``, ``buffers[2]``, ``workgroup_size``), the node's text form,
a message and a fix hint. Expression typing is :func:`vyre.ir.typing.infer`; barrier
uniformity is :mod:`vyre.ir.uniformity`.

Where rules overlap: a store into a ``read`` or ``uniform`` buffer is ``readonly-store``; an
atomic on a ``uniform`` buffer is ``uniform-misuse``; an atomic on a ``read``/``write`` buffer
or on a non-u32/i32 array is ``atomic-type``. A name that equals a buffer/workgroup array name
or one already in scope is ``shadowed`` (WGSL allows some shadowing; vyre does not).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

from ..errors import ValidationError, ValidationIssue
from .nodes import STMT_TYPES
from .program import Program
from .text import expr_to_text, stmt_head
from .types import Access, DataType
from .typing import TypeEnv, infer
from .uniformity import expr_depth, nonuniform_barriers, walk_expr

# Nesting limits: WGSL allows 127 nested brace blocks per function (the generated shader adds its own),
# and the wire format (pydantic serialisation) stops at about 250 nested nodes in total.
MAX_BLOCK_DEPTH = 64
MAX_EXPR_DEPTH = 160

RULES = {
    "type": "every expression and statement is well typed",
    "undefined": "every variable and buffer is declared before use",
    "shadowed": "a let/var/for name is not already visible, and is not a buffer or workgroup array name",
    "name": "names are valid WGSL identifiers, not WGSL keywords/predeclared names, not `__...` or `_vyre...`",
    "assign-immutable": "only `var` variables are assigned",
    "readonly-store": "stores go only into read_write/write buffers and workgroup arrays",
    "uniform-misuse": "uniform buffers have a fixed count, a u32/i32/f32 (or vec4) dtype, fit the limit, and no atomics",
    "atomic-type": "atomics only on u32/i32 read_write buffers or workgroup arrays",
    "barrier-uniformity": "every invocation of a workgroup reaches each barrier",
    "control-flow": "break/continue only inside a loop",
    "for-step": "a for-loop step is a non-zero i32",
    "workgroup-size": "workgroup size dims are >= 1, within the per-axis limits, product within the invocation limit",
    "workgroup-memory": "workgroup arrays have count >= 1 and fit the workgroup storage limit together",
    "duplicate-binding": "binding numbers are unique",
    "binding": "binding numbers are >= 0",
    "duplicate-name": "buffer and workgroup array names are unique",
    "buffer-count": "a declared buffer count is >= 1",
    "nesting": f"blocks nest at most {MAX_BLOCK_DEPTH} deep and expressions at most {MAX_EXPR_DEPTH} deep",
}


# --------------------------------------------------------------------------- limits
class Limits(BaseModel):
    """Adapter limits the validator checks against (WebGPU defaults).

    Accepts a dict with snake_case, kebab-case (wgpu-py's ``adapter.limits``) or camelCase
    keys, or any object with such attributes; unknown keys are ignored.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    max_compute_invocations_per_workgroup: int = 256
    max_compute_workgroup_size_x: int = 256
    max_compute_workgroup_size_y: int = 256
    max_compute_workgroup_size_z: int = 64
    max_compute_workgroup_storage_size: int = 16384
    max_uniform_buffer_binding_size: int = 65536

    @classmethod
    def of(cls, limits) -> "Limits":
        if limits is None:
            return cls()
        if isinstance(limits, cls):
            return limits
        if isinstance(limits, Mapping):
            items = {_snake(str(k)): v for k, v in limits.items()}
        else:
            items = {}
            for f in cls.model_fields:
                camel = re.sub(r"_(\w)", lambda m: m.group(1).upper(), f)
                for attr in (f, camel):
                    if hasattr(limits, attr):
                        items[f] = getattr(limits, attr)
                        break
        return cls.model_validate({k: v for k, v in items.items() if k in cls.model_fields and v is not None})


def _snake(key: str) -> str:
    key = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key)
    return key.replace("-", "_").lower()


# --------------------------------------------------------------------------- names
_WGSL_KEYWORDS = """
alias break case const const_assert continue continuing default diagnostic discard else enable false fn for
if let loop override requires return struct switch true var while
""".split()
_WGSL_RESERVED = """
NULL Self abstract active alignas alignof as asm asm_fragment async attribute auto await become
binding_array cast catch class co_await co_return co_yield coherent column_major common compile
compile_fragment concept const_cast consteval constexpr constinit crate debugger decltype delete demote
demote_to_helper do dynamic_cast enum explicit export extends extern external fallthrough filter final
finally friend from fxgroup get goto groupshared highp impl implements import inline instanceof interface
layout lowp macro macro_rules match mediump meta mod module move mut mutable namespace new nil noexcept
noinline nointerpolation noperspective null nullptr of operator package packoffset partition pass patch
pixelfragment precise precision premerge priv protected pub public readonly ref regardless register
reinterpret_cast require resource restrict self set shared sizeof smooth snorm static static_assert
static_cast std subroutine super target template this thread_local throw trait try type typedef typeid
typename typeof union unless unorm unsafe unsized use using varying virtual volatile wgsl where with
writeonly yield
""".split()
# Predeclared names the generated shader may use: shadowing them would break it.
_WGSL_PREDECLARED = """
bool f16 f32 i32 u32 vec2 vec3 vec4 vec2i vec3i vec4i vec2u vec3u vec4u vec2f vec3f vec4f vec2h vec3h vec4h
mat2x2 mat2x3 mat2x4 mat3x2 mat3x3 mat3x4 mat4x2 mat4x3 mat4x4 array atomic ptr sampler sampler_comparison
function private workgroup uniform storage handle read write read_write
abs acos acosh all any arrayLength asin asinh atan atan2 atanh bitcast ceil clamp cos cosh
countLeadingZeros countOneBits countTrailingZeros cross degrees determinant distance dot exp exp2
extractBits faceForward firstLeadingBit firstTrailingBit floor fma fract frexp insertBits inverseSqrt
ldexp length log log2 max min mix modf normalize pow quantizeToF16 radians reflect refract reverseBits
round saturate select sign sin sinh smoothstep sqrt step tan tanh transpose trunc
atomicLoad atomicStore atomicAdd atomicSub atomicMax atomicMin atomicAnd atomicOr atomicXor
atomicExchange atomicCompareExchangeWeak workgroupBarrier storageBarrier textureBarrier
workgroupUniformLoad pack4x8snorm pack4x8unorm pack2x16snorm pack2x16unorm pack2x16float
unpack4x8snorm unpack4x8unorm unpack2x16snorm unpack2x16unorm unpack2x16float
""".split()
_KEYWORDS = frozenset(_WGSL_KEYWORDS) | frozenset(_WGSL_RESERVED)
_PREDECLARED = frozenset(_WGSL_PREDECLARED)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be used for a variable, buffer or workgroup array (None if it can)."""
    if not isinstance(name, str) or not _IDENT.match(name):
        return (f"{name!r} is not a valid identifier: use ASCII letters, digits and underscores, "
                "not starting with a digit")
    if name == "_":
        return "`_` alone is not an identifier in WGSL"
    if name.startswith("__"):
        return f"{name!r} starts with `__`, which WGSL reserves"
    if name.startswith("_vyre"):
        return f"{name!r} starts with `_vyre`, which is reserved for names in vyre's generated code"
    if name in _KEYWORDS:
        return f"{name!r} is a WGSL keyword or reserved word"
    if name in _PREDECLARED:
        return f"{name!r} is a predeclared WGSL name (type, built-in function or enumerant) the shader needs"
    return None


def _suggest(name) -> str:
    s = re.sub(r"[^A-Za-z0-9_]", "_", str(name)).lstrip("_") or "x"
    if s[0].isdigit():
        s = "v" + s
    if name_problem(s) is not None:
        s += "_"
    if name_problem(s) is not None:  # e.g. still reserved after the suffix
        s = "v_" + s
    return s


# --------------------------------------------------------------------------- checker
@dataclass
class _Decl:
    kind: str  # "let", "var" or "for"
    path: str


_INDEX_TYPES = (DataType.U32, DataType.I32)
_UNIFORM_DTYPES = (DataType.U32, DataType.I32, DataType.F32, DataType.VEC4_U32, DataType.VEC4_I32,
                   DataType.VEC4_F32)
_KIND_WORD = {"let": "a `let` binding", "var": "a `var`", "for": "a for-loop variable"}


def _text(node) -> str:
    if node is None:
        return ""
    if isinstance(node, str):
        return node
    try:
        return stmt_head(node) if isinstance(node, STMT_TYPES) else expr_to_text(node)
    except Exception:  # pragma: no cover - text of a malformed node must not hide the issue
        return f"<{type(node).__name__}>"


class _Checker:
    def __init__(self, program: Program, limits: Limits):
        self.p = program
        self.limits = limits
        self.issues: list[ValidationIssue] = []
        self.env = TypeEnv.for_program(program)
        self.decls: list[dict[str, _Decl]] = [{}]  # parallel to env.scopes
        self.loop_depth = 0
        self.block_depth = -1  # the program body is depth 0
        self.too_deep = False

    def add(self, rule: str, path: str, node, message: str, fix: str) -> None:
        self.issues.append(ValidationIssue(rule, path, _text(node), message, fix))

    def report(self, path, node, rule, message, fix) -> None:  # typing's report callback
        self.add(rule, path, node, message, fix)

    def run(self) -> list[ValidationIssue]:
        self.workgroup_size()
        self.buffers()
        self.workgroup_arrays()
        self.block(self.p.body, "body")
        if self.too_deep:
            return self.issues  # the uniformity walk recurses through blocks and prints expressions
        for prob in nonuniform_barriers(self.p):
            self.add("barrier-uniformity", prob.path, prob.barrier,
                     f"the barrier at {prob.path} may not be reached by every invocation of the workgroup: "
                     f"{prob.reason}",
                     "every invocation of a workgroup must reach each barrier: move the barrier out of the "
                     "branch/loop (compute what differs first, barrier at top level, then branch), or make the "
                     "condition/bounds workgroup-uniform (literals, len(...), workgroup_id, num_workgroups, "
                     "uniform-buffer loads, and variables assigned only such values); replace an early "
                     "non-uniform return/break with a flag checked after the barrier")
        return self.issues

    # ---- declarations -------------------------------------------------------
    def workgroup_size(self) -> None:
        ws = tuple(self.p.workgroup_size)
        node = "@workgroup_size({})".format(", ".join(str(d) for d in ws))
        lim = self.limits
        axis_limits = (lim.max_compute_workgroup_size_x, lim.max_compute_workgroup_size_y,
                       lim.max_compute_workgroup_size_z)
        ok = True
        for axis, (d, hi) in enumerate(zip(ws, axis_limits)):
            if d < 1:
                ok = False
                self.add("workgroup-size", f"workgroup_size[{axis}]", node,
                         f"workgroup size {'xyz'[axis]} is {d}; every dimension must be >= 1",
                         f"set workgroup_size {'xyz'[axis]} to 1 or more (unused dimensions are 1)")
            elif d > hi:
                ok = False
                self.add("workgroup-size", f"workgroup_size[{axis}]", node,
                         f"workgroup size {'xyz'[axis]} is {d}, over this adapter's limit of {hi} "
                         f"(max_compute_workgroup_size_{'xyz'[axis]})",
                         f"use a workgroup size {'xyz'[axis]} of at most {hi}")
        total = ws[0] * ws[1] * ws[2]
        if ok and total > lim.max_compute_invocations_per_workgroup:
            self.add("workgroup-size", "workgroup_size", node,
                     f"the workgroup has {ws[0]}*{ws[1]}*{ws[2]} = {total} invocations, over this adapter's limit "
                     f"of {lim.max_compute_invocations_per_workgroup} (max_compute_invocations_per_workgroup)",
                     f"shrink workgroup_size so that x*y*z <= {lim.max_compute_invocations_per_workgroup}, "
                     "e.g. 64 or (16, 16, 1)")

    def buffers(self) -> None:
        self.names: dict[str, str] = {}  # buffer / workgroup name -> path of its declaration
        bindings: dict[int, int] = {}  # binding -> index of the first buffer using it
        for i, b in enumerate(self.p.buffers):
            path = f"buffers[{i}]"
            self.decl_name(b.name, path, b, "buffer")
            if b.binding < 0:
                self.add("binding", path, b, f"buffer {b.name!r} has binding {b.binding}; bindings must be >= 0",
                         "use binding numbers 0, 1, 2, ... (or let the builder number them)")
            elif b.binding in bindings:
                j = bindings[b.binding]
                self.add("duplicate-binding", path, b,
                         f"buffer {b.name!r} uses binding {b.binding}, already used by buffer "
                         f"{self.p.buffers[j].name!r} (buffers[{j}])",
                         f"give {b.name!r} an unused binding number (or omit binding= to number buffers in order)")
            else:
                bindings[b.binding] = i
            if b.count is not None and b.count < 1:
                self.add("buffer-count", path, b, f"buffer {b.name!r} declares count={b.count}; a count must be >= 1",
                         "declare count >= 1, or count=None for a buffer sized at dispatch")
            if b.access is Access.UNIFORM:
                self.uniform_decl(b, path)

    def uniform_decl(self, b, path: str) -> None:
        if b.count is None:
            self.add("uniform-misuse", path, b,
                     f"uniform buffer {b.name!r} has no count; uniform buffers must have a fixed element count",
                     f"declare it with count=N (e.g. b.buffer({b.name!r}, {b.dtype.value!r}, access='uniform', "
                     "count=1)), or use access='read' for a runtime-sized array")
        if b.dtype not in _UNIFORM_DTYPES:
            self.add("uniform-misuse", path, b,
                     f"uniform buffer {b.name!r} has dtype {b.dtype.value}; uniform buffers hold only u32, i32, f32 "
                     "or vec4 of those",
                     "use access='read' (a storage buffer) for this dtype, or convert the data to u32/i32/f32 "
                     "(or a vec4 of those) on the host")
        elif b.count is not None and b.count >= 1:
            nbytes = -(-b.count * b.dtype.element_nbytes // 16) * 16
            if nbytes > self.limits.max_uniform_buffer_binding_size:
                self.add("uniform-misuse", path, b,
                         f"uniform buffer {b.name!r} takes {nbytes} bytes, over this adapter's limit of "
                         f"{self.limits.max_uniform_buffer_binding_size} (max_uniform_buffer_binding_size)",
                         "use access='read' (a storage buffer) for large data")

    def workgroup_arrays(self) -> None:
        total = 0
        parts = []
        for i, w in enumerate(self.p.workgroup):
            path = f"workgroup[{i}]"
            self.decl_name(w.name, path, w, "workgroup array")
            if w.count < 1:
                self.add("workgroup-memory", path, w,
                         f"workgroup array {w.name!r} declares count={w.count}; a count must be >= 1",
                         "declare a count of 1 or more elements")
                continue
            nbytes = -(-w.count * w.dtype.element_nbytes // 16) * 16  # WebGPU rounds each up to 16 bytes
            total += nbytes
            parts.append(f"{w.name}: {nbytes}")
        limit = self.limits.max_compute_workgroup_storage_size
        if total > limit:
            node = "; ".join(stmt_head(w) for w in self.p.workgroup)
            self.add("workgroup-memory", "workgroup", node,
                     f"workgroup arrays need {total} bytes ({', '.join(parts)}; bool and 32-bit elements take 4 "
                     f"bytes, vec3 is padded to vec4, each array rounded up to 16), over this adapter's limit of "
                     f"{limit} bytes (max_compute_workgroup_storage_size)",
                     f"reduce the workgroup array counts so the total is at most {limit} bytes, e.g. by "
                     "processing the data in tiles")

    def decl_name(self, name: str, path: str, node, what: str) -> None:
        prob = name_problem(name)
        if prob is not None:
            self.add("name", path, node, f"{what} name {prob}", f"rename it, e.g. to {_suggest(name)!r}")
        if name in self.names:
            self.add("duplicate-name", path, node,
                     f"{what} name {name!r} is already used by the declaration at {self.names[name]}",
                     "give every buffer and workgroup array a distinct name")
        else:
            self.names[name] = path

    # ---- scopes -------------------------------------------------------------
    def push(self) -> None:
        self.env.push()
        self.decls.append({})

    def pop(self) -> None:
        self.env.pop()
        self.decls.pop()

    def lookup(self, name: str) -> _Decl | None:
        for scope in reversed(self.decls):
            if name in scope:
                return scope[name]
        return None

    def declare(self, name: str, dtype: DataType | None, kind: str, path: str, stmt) -> None:
        what = _KIND_WORD[kind]
        prob = name_problem(name)
        if prob is not None:
            self.add("name", path, stmt, f"the name of {what} {prob}", f"rename it, e.g. to {_suggest(name)!r}")
        prev = self.lookup(name)
        if name in self.names:
            self.add("shadowed", path, stmt,
                     f"{what} named {name!r} hides the buffer/workgroup array {name!r} ({self.names[name]})",
                     f"rename the {kind} (e.g. to {name + '_v'!r}) so {name!r} keeps meaning the array")
        elif prev is not None:
            self.add("shadowed", path, stmt,
                     f"{what} named {name!r} shadows {_KIND_WORD[prev.kind]} of the same name declared at "
                     f"{prev.path}; vyre rejects shadowing to keep programs readable",
                     f"rename one of them (e.g. {name + '2'!r}), or assign to the existing one if it is a var")
        self.env.declare(name, dtype, kind == "var")  # dtype None: unknown, no follow-up errors
        self.decls[-1][name] = _Decl(kind, path)

    # ---- expressions --------------------------------------------------------
    def expr(self, e, path: str) -> DataType | None:
        depth = expr_depth(e)
        if depth > MAX_EXPR_DEPTH:
            self.too_deep = True
            text = _text(e)
            self.add("nesting", path, text if len(text) <= 200 else text[:200] + "...",
                     f"this expression nests {depth} levels deep, over vyre's limit of {MAX_EXPR_DEPTH}",
                     "bind partial results to names with b.let(...) (e.g. accumulate a long sum in a var "
                     "inside a for_range loop) so that no single expression nests that deep")
            return None
        t = infer(e, self.env, path, self.report)
        for node, p in walk_expr(e, path):
            if node.kind == "atomic":
                self.atomic_access(node, p)
        return t

    def atomic_access(self, e, path: str) -> None:
        decl = self.env.buffers.get(e.buffer)
        if decl is None or decl.access is Access.READ_WRITE:
            return  # workgroup arrays and read_write buffers are fine; undeclared is reported by typing
        op = f"atomic_{e.op.value}"
        if decl.access is Access.UNIFORM:
            self.add("uniform-misuse", path, e,
                     f"{op} on uniform buffer {e.buffer!r}: uniform buffers cannot be used by atomics",
                     f"declare {e.buffer!r} with access='read_write' (a storage buffer) to use atomics on it")
        else:
            self.add("atomic-type", path, e,
                     f"{op} on {decl.access.value!r} buffer {e.buffer!r}: atomics need a read_write buffer "
                     "or a workgroup array",
                     f"declare {e.buffer!r} with access='read_write'")

    def expect(self, t: DataType | None, want: DataType, path: str, node, what: str, fix: str) -> None:
        if t is not None and t != want:
            self.add("type", path, node, f"{what} must be {want.value}, found {t.value}", fix)

    # ---- statements ---------------------------------------------------------
    def block(self, stmts, path: str) -> None:
        if self.block_depth >= MAX_BLOCK_DEPTH and stmts:
            self.too_deep = True
            self.add("nesting", path, stmts[0],
                     f"statements are nested more than {MAX_BLOCK_DEPTH} blocks deep (if/for/while inside each "
                     "other) here", "flatten the control flow: combine conditions with & and |, or split the "
                     "work into several programs")
            return
        self.block_depth += 1
        self.push()
        for i, s in enumerate(stmts):
            getattr(self, "s_" + s.kind)(s, f"{path}[{i}]")
        self.pop()
        self.block_depth -= 1

    def s_let(self, s, path):
        t = self.expr(s.value, path + ".value")
        self.declare(s.name, t, "let", path, s)

    def s_var(self, s, path):
        if s.value is not None:
            t = self.expr(s.value, path + ".value")
            if t is not None and t != s.dtype:
                self.add("type", path + ".value", s.value,
                         f"var {s.name!r} is declared {s.dtype.value} but initialised with a {t.value} value",
                         f"cast the initial value with .cast('{s.dtype.value}'), or declare the var as {t.value}")
        self.declare(s.name, s.dtype, "var", path, s)

    def s_assign(self, s, path):
        t = self.expr(s.value, path + ".value")
        d = self.lookup(s.name)
        if d is None:
            if s.name in self.names:
                self.add("assign-immutable", path, s,
                         f"{s.name!r} is a buffer/workgroup array, not a variable; it cannot be assigned as a whole",
                         f"store into one element instead: {s.name}[i] = value")
            else:
                self.add("undefined", path, s, f"assignment to {s.name!r}, which is not declared here",
                         f"declare it first with b.var(dtype, init, name={s.name!r}), or check the spelling")
            return
        if d.kind != "var":
            fix = ("declare it with b.var(dtype, init) instead of b.let(...)" if d.kind == "let" else
                   "a for-loop variable only advances by the step; copy it into a var (b.var('u32', k)) "
                   "and assign that, or use a while_ loop")
            self.add("assign-immutable", path, s,
                     f"assignment to {s.name!r}, which is {_KIND_WORD[d.kind]} (declared at {d.path}) and cannot "
                     "be changed", fix)
            return
        info = self.env.lookup(s.name)
        if info is not None and info.dtype is not None and t is not None and t != info.dtype:
            self.add("type", path + ".value", s.value,
                     f"var {s.name!r} is {info.dtype.value} but the assigned value is {t.value}",
                     f"cast the value with .cast('{info.dtype.value}')")

    def s_store(self, s, path):
        it = self.expr(s.index, path + ".index")
        if it is not None and it not in _INDEX_TYPES:
            self.add("type", path + ".index", s.index, f"an index must be u32 or i32, found {it.value}",
                     "cast the index with .cast('u32')")
        vt = self.expr(s.value, path + ".value")
        dtype = self.env.array_dtype(s.buffer)
        if dtype is None:
            self.add("undefined", path, s, f"store into {s.buffer!r}, which is not a declared buffer or workgroup array",
                     "declare it with b.buffer(...) or b.workgroup_array(...), or check the spelling")
            return
        decl = self.env.buffers.get(s.buffer)
        if decl is not None and not decl.access.writable:
            kind = "uniform" if decl.access is Access.UNIFORM else "read-only"
            self.add("readonly-store", path, s,
                     f"store into {kind} buffer {s.buffer!r} (access={decl.access.value!r}); "
                     "only read_write and write buffers can be stored to",
                     f"declare {s.buffer!r} with access='read_write' (or 'write' if the shader never reads it), "
                     "or store the result into an output buffer")
        if vt is not None and vt != dtype:
            self.add("type", path + ".value", s.value,
                     f"{s.buffer!r} holds {dtype.value} but the stored value is {vt.value}",
                     f"cast the value with .cast('{dtype.value}')")

    def s_if(self, s, path):
        self.expect(self.expr(s.cond, path + ".cond"), DataType.BOOL, path + ".cond", s.cond,
                    "an if condition", "compare it, e.g. (x != 0)")
        self.block(s.then, path + ".then")
        self.block(s.otherwise, path + ".otherwise")

    def s_while(self, s, path):
        self.expect(self.expr(s.cond, path + ".cond"), DataType.BOOL, path + ".cond", s.cond,
                    "a while condition", "compare it, e.g. (x != 0)")
        self.loop(s.body, path)

    def s_for(self, s, path):
        st = self.expr(s.start, path + ".start")
        et = self.expr(s.end, path + ".end")
        fix = "use u32 (or i32) bounds of one type, e.g. with .cast('u32')"
        var_t = None
        if st is not None and st not in _INDEX_TYPES:
            self.add("type", path + ".start", s.start, f"a for-loop start must be u32 or i32, found {st.value}", fix)
        elif et is not None and et not in _INDEX_TYPES:
            self.add("type", path + ".end", s.end, f"a for-loop end must be u32 or i32, found {et.value}", fix)
        elif st is not None and et is not None and st != et:
            self.add("type", path, s, f"for-loop bounds differ in type: start is {st.value}, end is {et.value}", fix)
        else:
            var_t = st
        if s.step == 0:
            self.add("for-step", path + ".step", s, "a for-loop step of 0 never advances the loop",
                     "use a non-zero step: positive counts up (k < end), negative counts down (k > end)")
        elif not -(2**31) <= s.step < 2**31:
            self.add("for-step", path + ".step", s, f"for-loop step {s.step} does not fit in i32",
                     "use a step between -2147483648 and 2147483647")
        self.push()
        self.declare(s.var, var_t, "for", path, s)
        self.loop(s.body, path)
        self.pop()

    def loop(self, body, path):
        self.loop_depth += 1
        self.block(body, path + ".body")
        self.loop_depth -= 1

    def _jump(self, s, path):
        if self.loop_depth == 0:
            self.add("control-flow", path, s, f"`{s.kind}` outside a loop",
                     f"put `{s.kind}` inside a for_range/while_ body, or use return_() to end the invocation")

    s_break = s_continue = _jump

    def s_return(self, s, path):
        pass

    def s_barrier(self, s, path):
        pass  # uniformity is checked by vyre.ir.uniformity

    def s_eval(self, s, path):
        self.expr(s.value, path + ".value")


# --------------------------------------------------------------------------- API
def check(program: Program, limits=None) -> list[ValidationIssue]:
    """Every problem of ``program`` (empty when it is valid)."""
    return _Checker(program, Limits.of(limits)).run()


def validate(program: Program, limits=None) -> None:
    """Raise :class:`vyre.errors.ValidationError` listing every problem of ``program``."""
    issues = check(program, limits)
    if issues:
        raise ValidationError(program.name, issues)


__all__ = ["RULES", "MAX_BLOCK_DEPTH", "MAX_EXPR_DEPTH", "Limits", "name_problem", "check", "validate"]
