"""What the WGSL lowering of one program keeps while it renders: the program after the
passes, its arrays, the names in scope, the helper functions emitted so far, and the
typing environment. Shared by the expression renderer (:mod:`vyre.lower.exprs`) and the
statement renderer (:mod:`vyre.lower.wgsl`)."""

from __future__ import annotations

from typing import Any, NoReturn

from ..errors import LoweringError
from ..ir.nodes import Expr, Node
from ..ir.passes import atomic_arrays, wgsl_pipeline
from ..ir.program import Program
from ..ir.text import expr_to_text
from ..ir.types import DataType
from ..ir.typing import TypeEnv, infer
from .jinja import macros
from .layout import Array, mangle, uniform_layout


class LoweringState:
    def __init__(self, original: Program, loop_cap: int | None = None):
        self.original = original
        #: llvmpipe's loop cut-off: loops it counts are instrumented (the trap, vyre/lower/trap.py); None: off
        self.loop_cap = loop_cap
        self.trap_loops: list[str] = []  # the text of each instrumented loop, by trap number - 1
        self.program = wgsl_pipeline(original)
        self.atomics = atomic_arrays(self.program)
        self.env = TypeEnv.for_program(self.program)
        self.names: list[dict[str, tuple[str, bool]]] = [{}]  # IR name -> (WGSL name, mutable)
        self.decl_count: dict[str, int] = {}
        self.helpers: dict[str, str] = {}
        self.builtins: set[str] = set()
        self.tmp = 0
        self.arrays: dict[str, Array] = {}
        self._declare_arrays()

    # ---- errors / types ----
    def fail(self, message: str, fix: str, node: Node | None = None) -> NoReturn:
        where = ""
        if node is not None:
            where = f" (in `{expr_to_text(node)}`)"
        raise LoweringError(f"program {self.original.name!r}: {message}{where}", fix=fix)

    def type(self, e: Expr) -> DataType:
        problems: list[tuple[str, Node | None, str, str, str]] = []
        t = infer(e, self.env, report=lambda *a: problems.append(a))
        if problems or t is None:
            path, node, rule, message, fix = problems[0] if problems else ("", e, "type", "untyped expression", "")
            self.fail(message, fix or "fix the expression's types", node if node is not None else e)
        return t

    # ---- declarations ----
    def _declare_arrays(self) -> None:
        p = self.program
        seen: set[str] = set()
        for k, b in enumerate(p.sorted_buffers):
            if b.name in seen:
                self.fail(f"buffer name {b.name!r} is declared twice", "give every buffer its own name")
            seen.add(b.name)
            self.arrays[b.name] = Array(b.name, mangle("b", b.name), b.dtype, b, k, b.count, b.name in self.atomics)
        bindings = [b.binding for b in p.buffers]
        if len(set(bindings)) != len(bindings):
            self.fail(f"binding numbers repeat: {sorted(bindings)}", "give every buffer its own binding number")
        for w in p.workgroup:
            if w.name in seen:
                self.fail(f"workgroup array {w.name!r} reuses a name",
                          "give every buffer and workgroup array its own name")
            seen.add(w.name)
            if w.count < 1:
                self.fail(f"workgroup array {w.name!r} has count {w.count}", "use count >= 1")
            self.arrays[w.name] = Array(w.name, mangle("w", w.name), w.dtype, None, -1, w.count, w.name in self.atomics)
        declared = {b.name: b.dtype for b in self.original.buffers}  # before bool -> u32
        declared.update({w.name: w.dtype for w in self.original.workgroup})
        for name in sorted(self.atomics):
            a = self.arrays.get(name)
            if a is None:
                continue  # reported where it is used
            if declared[name] not in (DataType.U32, DataType.I32):
                self.fail(f"atomics on {name!r} of type {declared[name].value}", "atomics need a u32 or i32 array")
            if a.buffer is not None and not a.buffer.access.writable:
                self.fail(f"atomics on {a.buffer.access.value} buffer {name!r}",
                          f"declare {name!r} with access='read_write'")

    def array(self, name: str, node: Node) -> Array:
        a = self.arrays.get(name)
        if a is None:
            self.fail(f"buffer {name!r} is not declared", "declare it with b.buffer(...) or b.workgroup_array(...)",
                      node)
        return a

    def decl_lines(self) -> list[str]:
        out = []
        for a in self.arrays.values():
            if a.buffer is None:
                t = f"atomic<{a.dtype.value}>" if a.atomic else a.dtype.value
                out.append(f"var<workgroup> {a.wgsl}: array<{t}, {a.count}>;")
                continue
            b = a.buffer
            head = f"@group(0) @binding({b.binding})"
            if a.uniform:
                if b.count is None:
                    self.fail(f"uniform buffer {b.name!r} has no count",
                              "declare it with count=... (uniform arrays have a fixed size)")
                row, rows, _ = uniform_layout(a.dtype, b.count)
                out.append(f"{head} var<uniform> {a.wgsl}: array<{row}, {rows}>;")
            else:
                mode = "read_write" if b.access.writable else "read"
                t = f"atomic<{a.dtype.value}>" if a.atomic else a.dtype.value
                out.append(f"{head} var<storage, {mode}> {a.wgsl}: array<{t}>;")
        return out

    # ---- scopes ----
    def push(self) -> None:
        self.env.push()
        self.names.append({})

    def pop(self) -> None:
        self.env.pop()
        self.names.pop()

    def declare(self, name: str, dtype: DataType, mutable: bool) -> str:
        n = self.decl_count.get(name, 0)
        self.decl_count[name] = n + 1
        w = mangle("v", name, n)
        self.env.declare(name, dtype, mutable)
        self.names[-1][name] = (w, mutable)
        return w

    def lookup(self, name: str, node: Node) -> tuple[str, bool]:
        """(WGSL name, mutable) of the variable ``name``."""
        for scope in reversed(self.names):
            if name in scope:
                return scope[name]
        self.fail(f"variable {name!r} is not defined here", f"declare {name!r} before use", node)

    def var_type(self, name: str, node: Node) -> DataType:
        info = self.env.lookup(name)
        if info is None or info.dtype is None:
            self.fail(f"variable {name!r} is not defined here", f"declare {name!r} before use", node)
        return info.dtype

    def fresh(self) -> int:
        self.tmp += 1
        return self.tmp

    def helper(self, name: str, macro: str, template: str = "helpers.wgsl.j2", **kw: Any) -> str:
        """Emit the helper function ``name`` (once) from the macro ``macro`` of ``template``; return its name."""
        if name not in self.helpers:
            self.helpers[name] = str(getattr(macros(template), macro)(name=name, **kw)).strip("\n")
        return name


__all__ = ["LoweringState"]
