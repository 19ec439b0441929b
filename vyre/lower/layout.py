"""What the lowering knows about names and memory layout: WGSL identifiers for IR names,
how a buffer or workgroup array appears in the shader, and the vec4-row layout of uniform
buffers."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..ir.decls import BufferDecl
from ..ir.types import Access, DataType

AXES = "xyzw"

# --------------------------------------------------------------------------- names
_IDENT = re.compile(r"[A-Za-z0-9_]+")


def mangle(prefix: str, name: str, n: int = 0) -> str:
    tag = "" if n == 0 else str(n)
    if _IDENT.fullmatch(name):
        return f"{prefix}{tag}_{name}"
    return f"{prefix}x{tag}_{name.encode('utf-8').hex()}"


def bare(text: str) -> str:
    """Drop one pair of parentheses around the whole expression (for statement-level uses)."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for k, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0 and k != len(text) - 1:
                return text
    return text[1:-1]


def is_atom(text: str) -> bool:
    """True for an identifier, or a call / indexing whose parentheses / brackets close at the end."""
    m = re.match(r"[A-Za-z_][A-Za-z0-9_<>]*", text)
    if m is None:
        return False
    rest = text[m.end():]
    if not rest:
        return True
    if rest[0] not in "([" or rest[-1] not in ")]":
        return False
    depth = 0
    for k, ch in enumerate(rest):
        depth += ch in "(["
        depth -= ch in ")]"
        if depth == 0 and k != len(rest) - 1:
            return False
    return True


def tag(d: DataType) -> str:
    return d.value.replace("<", "").replace(">", "")



# --------------------------------------------------------------------------- arrays
@dataclass(frozen=True)
class Array:
    """A buffer or workgroup array as the shader sees it."""

    name: str  # IR name
    wgsl: str  # WGSL identifier
    dtype: DataType  # element type after the passes (bool buffers are u32 here)
    buffer: BufferDecl | None  # None for workgroup arrays
    index: int  # position in binding order (buffers only)
    count: int | None
    atomic: bool

    @property
    def uniform(self) -> bool:
        return self.buffer is not None and self.buffer.access is Access.UNIFORM

    @property
    def writable(self) -> bool:
        return self.buffer is None or self.buffer.access.writable


# --------------------------------------------------------------------------- uniform layout
def uniform_layout(dtype: DataType, count: int) -> tuple[str, int, str]:
    """(WGSL element type, array length, load-helper kind) of a uniform buffer.

    Uniform arrays need a 16-byte stride, so elements are packed into ``vec4`` rows
    exactly as the host lays them out (see ``DataType.element_nbytes``).
    """
    s, lanes = dtype.scalar, dtype.lanes
    n = max(count, 1)
    if s is DataType.F16:
        if lanes == 1:
            return "vec4<u32>", math.ceil(n / 8), "f16x1"
        if lanes == 2:
            return "vec4<u32>", math.ceil(n / 4), "f16x2"
        return "vec4<u32>", math.ceil(n / 2), f"f16x{lanes}"
    row = f"vec4<{s.value}>"
    if lanes == 1:
        return row, math.ceil(n / 4), "x1"
    if lanes == 2:
        return row, math.ceil(n / 2), "x2"
    return row, n, f"x{lanes}"


def uniform_binding_nbytes(decl: BufferDecl) -> int:
    """Bytes the WGSL declaration of a uniform buffer spans (a multiple of 16).

    The buffer bound there must be at least this large, which can exceed the host's
    ``storage_nbytes`` (e.g. one f32 is 4 bytes of data but a 16-byte ``vec4`` row)."""
    dtype = decl.dtype.storage_scalar if decl.dtype is DataType.BOOL else decl.dtype
    _, rows, _ = uniform_layout(dtype, decl.count or 0)
    return 16 * rows


__all__ = ["AXES", "Array", "bare", "is_atom", "mangle", "tag", "uniform_binding_nbytes", "uniform_layout"]
