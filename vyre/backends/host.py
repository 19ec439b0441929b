"""Host-side dispatch planning shared by every backend.

Turns (program, inputs, config) into a :class:`DispatchPlan`: every buffer's element
count and storage bytes, and the logical grid. All input checking happens here, before
any GPU work, and raises :class:`vyre.errors.DispatchError`.

Storage layout (what the GPU sees, what the reference interpreter works on):
    * bool is one u32 word (0 or 1);
    * vec3 elements are padded to 4 components (WGSL array stride is 16 bytes);
    * every buffer is at least 4 bytes and a multiple of 4 bytes (f16 arrays are padded).

Hidden parameters (a uniform at ``@group(1) @binding(0)``, see :func:`params_words`)::

    struct VyreParams { grid: vec4<u32>, lens: array<vec4<u32>, L> }

``grid.xyz`` is the logical grid, ``grid.w`` its total workgroup count, and
``lens[k / 4][k % 4]`` the element count of the k-th buffer in binding order
(``L = max(1, ceil(n_buffers / 4))``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import DispatchError
from ..ir.program import BufferDecl, Program
from ..ir.types import Access, DataType
from .config import DispatchConfig
from .grid import MAX_WORKGROUPS_PER_DIM, GridFacts, default_grid, fold_grid, grid_for_count


@dataclass
class BufferPlan:
    decl: BufferDecl
    index: int  # position in binding order
    count: int  # logical element count
    nbytes: int  # bytes to allocate (>= 4, multiple of 4)
    data: np.ndarray | None  # input in storage layout (1-D, storage dtype), None for write-only

    @property
    def is_input(self) -> bool:
        return self.decl.access.readable

    @property
    def is_output(self) -> bool:
        return self.decl.access.writable


@dataclass
class DispatchPlan:
    program: Program
    buffers: list[BufferPlan]  # binding order
    grid: tuple[int, int, int]  # logical workgroups

    @property
    def total_workgroups(self) -> int:
        x, y, z = self.grid
        return x * y * z

    @property
    def outputs(self) -> list[BufferPlan]:
        return [b for b in self.buffers if b.is_output]


def storage_dtype(dtype: DataType) -> np.dtype:
    return dtype.storage_scalar.numpy_dtype


def storage_nbytes(dtype: DataType, count: int) -> int:
    raw = count * dtype.element_nbytes
    return max(4, (raw + 3) // 4 * 4)


def check_outs(outs: Iterable[np.ndarray | None] | None, sizes: Sequence[int]) -> list[np.ndarray | None] | None:
    """Validate caller-owned download targets (one per range, None allocates) before any copy."""
    if outs is None:
        return None
    outs = list(outs)
    if len(outs) != len(sizes):
        raise DispatchError(f"download: {len(sizes)} range(s) but {len(outs)} output array(s)",
                            fix="pass one output array (or None) per range")
    for k, (o, n) in enumerate(zip(outs, sizes)):
        if o is None:
            continue
        if not isinstance(o, np.ndarray) or not o.flags.c_contiguous or not o.flags.writeable:
            raise DispatchError(f"download: output {k} must be a writeable C-contiguous numpy array",
                                fix="pass np.empty(nbytes, np.uint8) (or any dtype of that many bytes)")
        if o.nbytes != n:
            raise DispatchError(f"download: output {k} holds {o.nbytes} bytes, the range has {n}",
                                fix=f"pass an array of exactly {n} bytes")
    return outs


def as_u8(data: Any, what: str) -> np.ndarray:
    """A 1-D contiguous uint8 view of an array or any buffer-protocol object (its raw bytes).

    Shared by both backends' resident uploads, so bad data fails the same way on each.
    """
    if isinstance(data, np.ndarray):
        arr = data
    else:
        try:
            arr = np.asarray(memoryview(data))
        except TypeError:
            raise DispatchError(f"{what}: {type(data).__name__} is not a buffer",
                                fix="pass a numpy array, bytes, bytearray or memoryview") from None
    if arr.dtype.hasobject:
        raise DispatchError(f"{what}: an array of dtype {arr.dtype} holds Python objects, not raw data",
                            fix="convert it to a numeric numpy array first (e.g. np.asarray(x, dtype=np.float32))")
    return np.ascontiguousarray(arr).reshape(-1).view(np.uint8)


def _as_array(name: str, value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    try:
        return np.asarray(memoryview(value))
    except TypeError:
        pass
    try:
        return np.asarray(value)
    except Exception as exc:  # pragma: no cover - numpy accepts nearly anything
        raise DispatchError(f"input {name!r} is not an array: {exc}") from None


def _python_scalar(decl: BufferDecl, value: bool | int | float) -> np.ndarray:
    """A Python number for a scalar buffer as a 1-element array of the buffer's dtype (numpy scalars
    already are 0-d arrays of their own dtype); a value the type cannot hold exactly is refused."""
    d = decl.dtype
    ok = d.lanes == 1 and (
        isinstance(value, bool) if d is DataType.BOOL
        else not isinstance(value, bool) and (isinstance(value, (int, float)) if d.is_float else isinstance(value, int))
    )
    if ok and not d.is_float and d is not DataType.BOOL:
        info = np.iinfo(d.numpy_dtype)
        ok = info.min <= value <= info.max
    arr = np.zeros(1, dtype=d.numpy_dtype)
    if ok:
        with np.errstate(over="ignore"):
            try:
                arr[0] = value
            except OverflowError:
                ok = False
        if ok and d.is_float and not np.isfinite(arr[0]):
            ok = not math.isfinite(value)  # inf/nan stay themselves; a finite value must not overflow
    if not ok:
        raise DispatchError(f"input {decl.name!r}: {type(value).__name__} {value!r} does not fit the "
                            f"buffer's type {d.value}",
                            fix=f"pass a numpy array of dtype {d.numpy_dtype} or a Python value of that type")
    return arr


#: Scalar non-bool types -> their numpy dtype: the ones whose host array is already in storage layout.
_PLAIN: dict[DataType, np.dtype] = {d: d.numpy_dtype for d in DataType if d.lanes == 1 and d is not DataType.BOOL}


def host_to_storage(decl: BufferDecl, value: Any) -> tuple[np.ndarray, int]:
    """Check one host input against its declaration; return (storage array, element count)."""
    if type(value) is np.ndarray and value.ndim == 1:  # fast path: already in storage layout
        want = _PLAIN.get(decl.dtype)
        if want is not None and value.dtype == want and value.flags.c_contiguous:
            count = value.shape[0]
            if decl.count is None or count == decl.count:
                return value, count
    d = decl.dtype
    want = d.numpy_dtype
    python_number = isinstance(value, (bool, int, float)) and not isinstance(value, np.generic)
    arr = _python_scalar(decl, value) if python_number else _as_array(decl.name, value)
    if arr.dtype != want:
        raise DispatchError(
            f"input {decl.name!r} has dtype {arr.dtype}, but the buffer is declared {d.value}",
            fix=f"pass a numpy array of dtype {want} (e.g. arr.astype(np.{want.name}))",
        )
    lanes = d.lanes
    if lanes == 1:
        if arr.ndim > 1:
            arr = arr.reshape(-1)
        count = arr.size
    else:
        if arr.ndim == 2 and arr.shape[-1] == lanes:
            count = arr.size // lanes
        elif arr.ndim == 1 and arr.size % lanes == 0:
            count = arr.size // lanes
        else:
            raise DispatchError(
                f"input {decl.name!r} has shape {arr.shape}; a {d.value} buffer takes shape (n, {lanes}) "
                f"or a flat array of n*{lanes} components",
                fix=f"reshape it, e.g. arr.reshape(-1, {lanes})",
            )
        arr = arr.reshape(count, lanes)
    if decl.count is not None and count != decl.count:
        raise DispatchError(
            f"input {decl.name!r} has {count} elements, but the buffer is declared with count={decl.count}",
            fix=f"pass exactly {decl.count} elements",
        )
    if d is DataType.BOOL:
        arr = arr.astype(np.uint32)
    if lanes == 3:
        padded = np.zeros((count, 4), dtype=arr.dtype)
        padded[:, :3] = arr
        arr = padded
    return np.ascontiguousarray(arr).reshape(-1), count


def storage_to_host(decl: BufferDecl, raw: np.ndarray | bytes | bytearray | memoryview, count: int) -> np.ndarray:
    """Turn storage bytes (or a storage-dtype array) back into the host array of ``count`` elements."""
    d = decl.dtype
    want = _PLAIN.get(d)
    if want is not None and type(raw) is np.ndarray and raw.ndim == 1:  # fast path: scalar, not bool
        return raw.view(want)[:count].copy()
    sd = storage_dtype(d)
    flat = np.frombuffer(raw, dtype=sd) if not isinstance(raw, np.ndarray) else raw.view(sd).reshape(-1)
    n = count * d.storage_lanes
    flat = flat[:n]
    if d.lanes == 1:
        out = flat
    else:
        out = flat.reshape(count, d.storage_lanes)[:, : d.lanes]
    if d is DataType.BOOL:
        mask: np.ndarray = out != 0
        return mask
    return np.array(out, copy=True)


def pack_bytes(data: np.ndarray) -> np.ndarray:
    """Byte data as u32 words: 4 bytes per word, little-endian, the last word zero-padded."""
    flat = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    words = np.zeros((flat.size + 3) // 4 * 4, dtype=np.uint8)
    words[: flat.size] = flat
    return words.view("<u4").astype(np.uint32)


def pipeline_input(dtype: DataType, value: Any) -> np.ndarray:
    """The caller's array for an op-pipeline buffer of ``dtype``: a uint8 array for a u32 buffer is
    byte data (see :func:`pack_bytes`); an N-d array for a vector buffer is flattened in C order
    (a (64, 100) f32 array feeds a vec4<f32> buffer of 1600 elements); anything else is unchanged."""
    a = np.asarray(value)
    if a.dtype == np.uint8 and dtype is DataType.U32:
        return pack_bytes(a)
    if dtype.is_vector and a.ndim != 1:
        return a.reshape(-1)
    return a


def _normalize_inputs(program: Program, inputs: Any) -> list[Any]:
    ins = program.input_buffers
    if inputs is None:
        inputs = []
    if isinstance(inputs, Mapping):
        unknown = sorted(set(inputs) - {b.name for b in ins})
        missing = [b.name for b in ins if b.name not in inputs]
        if unknown or missing:
            raise DispatchError(
                f"program {program.name!r} inputs by name: missing {missing}, unknown {unknown}",
                fix="pass one array for each of: " + ", ".join(b.name for b in ins),
            )
        return [inputs[b.name] for b in ins]
    if isinstance(inputs, np.ndarray) or not isinstance(inputs, Sequence):
        inputs = [inputs]
    if len(inputs) != len(ins):
        raise DispatchError(
            f"program {program.name!r} takes {len(ins)} input(s) ({', '.join(b.name for b in ins) or 'none'}), "
            f"got {len(inputs)}",
            fix="pass one array per read, read_write or uniform buffer, in binding order (or a dict by name)",
        )
    return list(inputs)


def _check_binding_size(decl: BufferDecl, nbytes: int, max_storage_bytes: int | None) -> None:
    if max_storage_bytes is not None and decl.access is not Access.UNIFORM and nbytes > max_storage_bytes:
        raise DispatchError(
            f"buffer {decl.name!r} needs {nbytes} bytes, over this adapter's storage binding limit "
            f"of {max_storage_bytes} bytes",
            fix="split the work into smaller dispatches",
        )


def _finish_plan(program: Program, plans: list[BufferPlan], config: DispatchConfig) -> DispatchPlan:
    """The plan with its logical grid: the configured one, else :func:`default_grid`."""
    grid = config.grid if config.grid is not None else default_grid(program, plans, _layout(program).grid)
    return DispatchPlan(program=program, buffers=plans, grid=grid)


class _Layout:
    """What planning needs of a program that does not depend on the inputs (computed once per program)."""

    __slots__ = ("program", "decls", "inputs", "input_names", "names", "specs", "has_input", "grid")

    def __init__(self, program: Program) -> None:
        self.program = program
        self.decls = program.sorted_buffers
        self.inputs = [d for d in self.decls if d.access.readable]  # == program.input_buffers
        self.input_names = frozenset(d.name for d in self.inputs)
        self.names = frozenset(d.name for d in program.buffers)
        self.has_input = bool(self.inputs)
        # per buffer in binding order: (decl, index, readable, element bytes, storage-size checked?)
        self.specs = [(d, k, d.access.readable, d.dtype.element_nbytes, d.access is not Access.UNIFORM)
                      for k, d in enumerate(self.decls)]
        self.grid = GridFacts(program)  # what the default grid depends on


_LAYOUTS: dict[int, tuple[Program, _Layout]] = {}
_LAYOUTS_MAX = 1024
_DEFAULT_CONFIG = DispatchConfig()


def _layout(program: Program) -> _Layout:
    """The program's :class:`_Layout`, cached by identity (the entry holds the program, so its id is not
    reused while cached; programs are immutable)."""
    hit = _LAYOUTS.get(id(program))
    if hit is not None and hit[0] is program:
        return hit[1]
    lay = _Layout(program)
    if len(_LAYOUTS) >= _LAYOUTS_MAX:
        for key in list(_LAYOUTS)[: _LAYOUTS_MAX // 2]:  # oldest first
            _LAYOUTS.pop(key, None)
    _LAYOUTS[id(program)] = (program, lay)
    return lay


def plan_dispatch(program: Program, inputs: Any, config: DispatchConfig | None = None,
                  max_storage_bytes: int | None = None) -> DispatchPlan:
    """Check inputs against the program and size every buffer. Raises DispatchError."""
    config = config or _DEFAULT_CONFIG
    lay = _layout(program)
    if type(inputs) in (list, tuple) and len(inputs) == len(lay.inputs):
        values = inputs  # the common case of _normalize_inputs (no copy needed: only read here)
    else:
        values = _normalize_inputs(program, inputs)
    staged: dict[str, tuple[np.ndarray, int]] = {}
    for decl, value in zip(lay.inputs, values):
        staged[decl.name] = host_to_storage(decl, value)
    counts = config.counts
    if counts:
        unknown = sorted(set(counts) - lay.names)
        if unknown:
            raise DispatchError(f"DispatchConfig.counts names unknown buffer(s) {unknown}",
                                fix="use names of the program's write buffers")
    first_input_count = staged[lay.inputs[0].name][1] if lay.has_input else None
    plans: list[BufferPlan] = []
    for decl, k, readable, elem, checked in lay.specs:
        if readable:
            data, count = staged[decl.name]
        else:
            data = None
            if decl.count is not None:
                count = decl.count
            elif decl.name in counts:
                count = int(counts[decl.name])
            elif first_input_count is not None:
                count = first_input_count
            else:
                raise DispatchError(
                    f"write buffer {decl.name!r} is runtime-sized and the program has no input to size it from",
                    fix=f"declare it with count=..., or pass DispatchConfig(counts={{{decl.name!r}: n}})",
                )
            if count < 0:
                raise DispatchError(f"count of {decl.name!r} must be >= 0, got {count}")
        nbytes = max(4, (count * elem + 3) // 4 * 4)  # storage_nbytes
        if checked and max_storage_bytes is not None and nbytes > max_storage_bytes:
            _check_binding_size(decl, nbytes, max_storage_bytes)
        plans.append(BufferPlan(decl=decl, index=k, count=count, nbytes=nbytes, data=data))
    return _finish_plan(program, plans, config)


def params_words(plan: DispatchPlan) -> np.ndarray:
    """The hidden uniform's contents (u32 words), see the module docstring."""
    n = len(plan.buffers)
    L = max(1, math.ceil(n / 4))
    words = np.zeros(4 + 4 * L, dtype=np.uint32)
    words[0:3] = plan.grid
    words[3] = min(plan.total_workgroups, 2**32 - 1)
    for b in plan.buffers:
        words[4 + b.index] = b.count
    return words



def plan_resident(program: Program, nbytes: Sequence[int], config: DispatchConfig | None = None,
                  max_storage_bytes: int | None = None) -> DispatchPlan:
    """Size every buffer of a dispatch over resident buffers of ``nbytes`` bytes (binding order).

    Element count of each buffer: ``config.counts[name]`` if given, else the declared
    ``count``, else as many whole elements as its resident buffer holds. The storage bytes
    of that count must fit in the resident buffer. No data is attached (``data`` is None).
    Raises DispatchError.
    """
    config = config or DispatchConfig()
    decls = program.sorted_buffers
    sizes = [int(n) for n in nbytes]
    if len(sizes) != len(decls):
        raise DispatchError(
            f"program {program.name!r} has {len(decls)} buffer(s) ({', '.join(d.name for d in decls) or 'none'}), "
            f"got {len(sizes)} resident handle(s)",
            fix="pass one handle per buffer in binding order, write buffers included",
        )
    unknown = sorted(set(config.counts) - {d.name for d in decls})
    if unknown:
        raise DispatchError(f"DispatchConfig.counts names unknown buffer(s) {unknown}",
                            fix="use names of the program's buffers")
    plans: list[BufferPlan] = []
    for k, (decl, size) in enumerate(zip(decls, sizes)):
        if decl.name in config.counts:
            count = int(config.counts[decl.name])
            if decl.count is not None and count != decl.count:
                raise DispatchError(f"DispatchConfig.counts gives {decl.name!r} {count} elements, "
                                    f"but it is declared with count={decl.count}",
                                    fix="drop the count of a buffer declared with a fixed count")
            if count < 0:
                raise DispatchError(f"count of {decl.name!r} must be >= 0, got {count}")
        elif decl.count is not None:
            count = decl.count
        else:
            count = size // decl.dtype.element_nbytes
        need = storage_nbytes(decl.dtype, count)
        if need > size:
            raise DispatchError(
                f"buffer {decl.name!r} ({decl.dtype.value}) needs {need} bytes for {count} elements, "
                f"but its resident buffer holds {size} bytes",
                fix="allocate a larger resident buffer or give a smaller count in DispatchConfig.counts",
            )
        _check_binding_size(decl, need, max_storage_bytes)
        plans.append(BufferPlan(decl=decl, index=k, count=count, nbytes=need, data=None))
    return _finish_plan(program, plans, config)


__all__ = [
    "as_u8", "check_outs",
    "BufferPlan", "DispatchPlan", "MAX_WORKGROUPS_PER_DIM", "plan_dispatch", "fold_grid", "params_words",
    "host_to_storage", "storage_to_host", "storage_nbytes", "storage_dtype", "default_grid",
    "grid_for_count",
    "plan_resident",
]
