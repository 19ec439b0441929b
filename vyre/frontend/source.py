"""A kernel function's source: read with :func:`inspect.getsource`, parsed with :mod:`ast`, with the
mapping back to the user's file and line, the names it can see, and the one error helper that quotes it."""

from __future__ import annotations

import ast
import builtins
import hashlib
import inspect
import os
import re
import textwrap
from collections.abc import Callable
from typing import Any, NoReturn

from ..errors import KernelError, ValidationIssue

_MISSING = object()


class Source:
    """The parsed source of one decorated function (``fn``)."""

    def __init__(self, fn: Callable[..., Any], what: str = "kernel") -> None:
        if not inspect.isfunction(fn):
            raise KernelError.at(getattr(fn, "__name__", repr(fn)), "<unknown>", 0, "",
                              f"@vyre.{what} decorates a plain Python function, got {type(fn).__name__}",
                              f"put @vyre.{what} directly above a `def`")
        self.fn = fn
        self.name = fn.__name__
        code = fn.__code__
        self.filename = code.co_filename
        self.short_file = os.path.basename(self.filename)
        try:
            lines, first = inspect.getsourcelines(fn)
        except (OSError, TypeError) as exc:
            raise KernelError.at(self.name, self.short_file, code.co_firstlineno, "",
                              f"cannot read the source of {self.name!r} ({exc})",
                              "define the kernel in a .py file (not in an interactive prompt or exec'd string)") \
                from None
        self.text = textwrap.dedent("".join(lines))
        # line k of the dedented text is line first + k - 1 of the file (the decorators included)
        self.line_offset = first - 1
        self.hash = hashlib.sha256(self.text.encode()).hexdigest()
        tree = ast.parse(self.text)
        node = tree.body[0]
        if not isinstance(node, ast.FunctionDef):
            self.fail(node, f"@vyre.{what} needs a `def` function", "write `def name(...):` (not async, no lambda)")
        self.node = node
        self.globals = fn.__globals__
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        self.outer = {k: v for k, v in _definition_locals().items() if k in used}  # keep only what it names
        self.closure: dict[str, Any] = {}
        if fn.__closure__:
            for cell_name, cell in zip(code.co_freevars, fn.__closure__):
                try:
                    self.closure[cell_name] = cell.cell_contents
                except ValueError:  # an empty cell: a name assigned later in the enclosing function
                    self.closure[cell_name] = _MISSING

    # ---- names ----
    def lookup(self, name: str) -> Any:
        """The object ``name`` refers to in the function's closure, globals or builtins (``_MISSING``)."""
        if name in self.closure:
            return self.closure[name]
        if name in self.outer:  # names of the enclosing function at the decoration (annotations)
            return self.outer[name]
        if name in self.globals:
            return self.globals[name]
        return getattr(builtins, name, _MISSING)

    def resolve(self, node: ast.expr) -> Any:
        """A constant annotation expression (names, attributes, subscripts of markers) as an object
        (None when it is not one): annotations are resolved from the source, never evaluated."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return self.resolve(ast.parse(node.value, mode="eval").body)
        if isinstance(node, ast.Name):
            return self.lookup(node.id)
        if isinstance(node, ast.Attribute):
            return getattr(self.resolve(node.value), node.attr, None)
        if isinstance(node, ast.Subscript):
            base, arg = self.resolve(node.value), self.resolve(node.slice)
            try:
                return base[arg]
            except Exception:  # noqa: BLE001  # any object may be named here (a numpy array: IndexError...)
                return None
        return None

    # ---- locations and errors ----
    def line_of(self, node: ast.AST | None) -> int:
        lineno = getattr(node, "lineno", None)
        return self.line_offset + (lineno if lineno is not None else self.node.lineno)

    def segment(self, node: ast.AST | None) -> str:
        if node is None:
            return ""
        seg = ast.get_source_segment(self.text, node) or ""
        lines = [re.sub(r"\s+#[^'\"]*$", "", ln) for ln in seg.splitlines()]
        if isinstance(node, ast.stmt) and hasattr(node, "body"):
            lines = lines[:1]  # a compound statement: its header line
        seg = " ".join(" ".join(lines).split())  # quoted on one line
        return seg if len(seg) <= 120 else seg[:117] + "..."

    def error(self, node: ast.AST | None, message: str, fix: str,
              issues: list[ValidationIssue] | None = None, kernel: str | None = None) -> KernelError:
        return KernelError.at(kernel or self.name, self.short_file, self.line_of(node), self.segment(node),
                              message, kernel_fix(fix), issues)

    def fail(self, node: ast.AST | None, message: str, fix: str) -> NoReturn:
        raise self.error(node, message, fix)


def kernel_fix(fix: str) -> str:
    """A builder-level hint (``.cast('u32')``) in kernel syntax (``u32(x)``): the IR's errors are written for
    ProgramBuilder users, and a kernel's author casts by calling the dtype."""
    fix = re.sub(r"\.cast\('(\w+)'\)", r"\1(...)", fix)
    fix = re.sub(r"\.bitcast\('(\w+)'\)", r"vyre.bitcast(x, \1)", fix)
    fix = fix.replace(" with .cast(...)", ", e.g. i32(x) or f32(x)")
    return fix.replace(".cast(...)", "a cast such as i32(x) or f32(x)")


def _definition_locals() -> dict[str, Any]:
    """The local names of the code that applied the decorator (outside vyre/frontend), when it is a function."""
    here = os.path.dirname(os.path.abspath(__file__))
    frame = inspect.currentframe()
    try:
        while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == here:
            frame = frame.f_back
        if frame is None or frame.f_locals is frame.f_globals:
            return {}
        return dict(frame.f_locals)
    finally:
        del frame


MISSING = _MISSING

__all__ = ["Source", "MISSING"]
