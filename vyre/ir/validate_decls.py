"""Validation of a program's declarations: workgroup size, buffers and workgroup arrays.

Part of :mod:`vyre.ir.validate` (which checks the statements and reports every issue);
:class:`Issues` collects the issues of both.
"""

from __future__ import annotations

from ..errors import ValidationIssue
from .decls import BufferDecl, WorkgroupDecl
from .limits import Limits
from .names import name_problem, suggest_name
from .nodes import Node
from .program import Program
from .text import decl_text, expr_to_text
from .types import Access, DataType

_UNIFORM_DTYPES = (DataType.U32, DataType.I32, DataType.F32, DataType.VEC4_U32, DataType.VEC4_I32,
                   DataType.VEC4_F32)


def node_text(node: Node | str | None) -> str:
    """The text an issue shows for ``node`` (a node, or text already)."""
    if node is None:
        return ""
    if isinstance(node, str):
        return node
    try:
        return expr_to_text(node)
    except Exception:  # pragma: no cover - text of a malformed node must not hide the issue
        return f"<{type(node).__name__}>"


class Issues:
    """The issues found so far, in the order they were found."""

    def __init__(self) -> None:
        self.found: list[ValidationIssue] = []

    def add(self, rule: str, path: str, node: Node | str | None, message: str, fix: str) -> None:
        self.found.append(ValidationIssue(rule, path, node_text(node), message, fix))


class DeclChecker:
    """Checks the declarations; :meth:`run` returns the buffer and workgroup array names
    (name -> path of its declaration) for the statement checker's shadowing rule."""

    def __init__(self, program: Program, limits: Limits, issues: Issues):
        self.p = program
        self.limits = limits
        self.add = issues.add
        self.names: dict[str, str] = {}  # buffer / workgroup name -> path of its declaration

    def run(self) -> dict[str, str]:
        self.workgroup_size()
        self.buffers()
        self.workgroup_arrays()
        self.grid_from()
        return self.names

    def grid_from(self) -> None:
        name = self.p.grid_from
        if name is None:
            return
        node = f"@grid_from({name})"
        buffers = {b.name: b for b in self.p.buffers}
        storage = [b.name for b in self.p.sorted_buffers if b.access is not Access.UNIFORM]
        choices = ", ".join(map(repr, storage)) or "none"
        b = buffers.get(name)
        if b is None:
            self.add("grid-from", "grid_from", node,
                     f"grid_from names {name!r}, which is not a buffer of the program",
                     f"name one of the program's storage buffers ({choices}), or leave grid_from unset")
        elif b.access is Access.UNIFORM:
            self.add("grid-from", "grid_from", node,
                     f"grid_from names uniform buffer {name!r}; the grid follows the element count of a storage "
                     "buffer (a uniform buffer holds parameters, not the work)",
                     f"name one of the program's storage buffers ({choices}), or leave grid_from unset")

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
        bindings: dict[int, int] = {}  # binding -> index of the first buffer using it
        max_binding = self.limits.max_bindings_per_bind_group
        for i, b in enumerate(self.p.buffers):
            path = f"buffers[{i}]"
            self.decl_name(b.name, path, b, "buffer")
            if b.binding < 0:
                self.add("binding", path, b, f"buffer {b.name!r} has binding {b.binding}; bindings must be >= 0",
                         "use binding numbers 0, 1, 2, ... (or let the builder number them)")
            elif b.binding >= max_binding:
                self.add("binding", path, b,
                         f"buffer {b.name!r} has binding {b.binding}, over this adapter's limit: bindings must be "
                         f"below {max_binding} (max_bindings_per_bind_group)",
                         f"use binding numbers 0, 1, 2, ... below {max_binding} (or let the builder number them)")
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
        self.buffer_counts()

    def buffer_counts(self) -> None:
        """At most max_storage_buffers_per_shader_stage storage buffers, and uniform buffers within
        max_uniform_buffers_per_shader_stage less the one vyre's hidden params uniform takes."""
        lim = self.limits
        uniform = [b.name for b in self.p.buffers if b.access is Access.UNIFORM]
        storage = [b.name for b in self.p.buffers if b.access is not Access.UNIFORM]
        if lim.max_storage_buffers_per_shader_stage is not None and \
                len(storage) > lim.max_storage_buffers_per_shader_stage:
            self.add("buffer-limit", "buffers", ", ".join(storage),
                     f"the program declares {len(storage)} storage buffers, over this adapter's limit of "
                     f"{lim.max_storage_buffers_per_shader_stage} (max_storage_buffers_per_shader_stage)",
                     "pack several arrays into one buffer (with offsets), turn small fixed-size inputs into "
                     "uniform buffers, or split the program into several dispatches")
        if lim.max_uniform_buffers_per_shader_stage is None:
            return
        most = lim.max_uniform_buffers_per_shader_stage - 1
        if len(uniform) > most:
            self.add("buffer-limit", "buffers", ", ".join(uniform),
                     f"the program declares {len(uniform)} uniform buffers; this adapter allows "
                     f"{lim.max_uniform_buffers_per_shader_stage} (max_uniform_buffers_per_shader_stage), one of "
                     f"them vyre's hidden parameters, so at most {most}",
                     "pack the parameters into one uniform buffer (e.g. a vec4<u32> array), or use access='read'")

    def uniform_decl(self, b: BufferDecl, path: str) -> None:
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
        parts: list[str] = []
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
            node = "; ".join(decl_text(w) for w in self.p.workgroup)
            self.add("workgroup-memory", "workgroup", node,
                     f"workgroup arrays need {total} bytes ({', '.join(parts)}; bool and 32-bit elements take 4 "
                     f"bytes, vec3 is padded to vec4, each array rounded up to 16), over this adapter's limit of "
                     f"{limit} bytes (max_compute_workgroup_storage_size)",
                     f"reduce the workgroup array counts so the total is at most {limit} bytes, e.g. by "
                     "processing the data in tiles")

    def decl_name(self, name: str, path: str, node: BufferDecl | WorkgroupDecl, what: str) -> None:
        prob = name_problem(name)
        if prob is not None:
            self.add("name", path, node, f"{what} name {prob}", f"rename it, e.g. to {suggest_name(name)!r}")
        if name in self.names:
            self.add("duplicate-name", path, node,
                     f"{what} name {name!r} is already used by the declaration at {self.names[name]}",
                     "give every buffer and workgroup array a distinct name")
        else:
            self.names[name] = path


__all__ = ["Issues", "DeclChecker", "node_text"]
