"""Launching a kernel: the launch dims -> workgroup size and grid, the arguments -> a specialization
key, the input arrays and the packed params uniform, and the call of the backend (``dispatch``, or
``dispatch_resident`` when the arrays are ResidentHandles or ``vyre.Array`` objects: an Array is evaluated
and its own buffer bound, Out/InOut Arrays are written in place). What a launch asks of a vyre.Array is
:mod:`.resident` (a structural protocol: vyre.array is never imported here)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..backends.config import DispatchConfig
from ..backends.default import default_backend
from ..backends.handles import ResidentHandle
from ..errors import ArgumentTypeError, DeviceMismatchError, InvalidArgumentError
from ..ir.program import Program
from ..ir.types import Access, DataType
from ..ir.words import pack_scalars
from .build import ParamSpec, Spec
from .resident import ResidentArray, is_resident_array, write_handle
from .types import ArrayType, DType

if TYPE_CHECKING:
    from ..backends.base import Backend

#: An array argument as bound: a numpy array, a ResidentHandle, or a resident array (a vyre.Array).
ArrayArg = np.ndarray | ResidentHandle | ResidentArray

#: the workgroup size vyre picks per launch rank
WORKGROUP_SIZES = {1: (256, 1, 1), 2: (16, 16, 1), 3: (8, 8, 4)}


def check_dim(name: str, dim: object) -> tuple[int, ...]:
    """``dim`` as a tuple of 1-3 ints >= 1 (before any GPU work): another type is an ArgumentTypeError, a
    dimension outside 1 .. 2**32-1 an InvalidArgumentError."""
    dims = (dim,) if isinstance(dim, (int, np.integer)) else dim
    ok = isinstance(dims, (tuple, list)) and 1 <= len(dims) <= 3 and all(
        isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_)) for d in dims)
    if not ok:
        raise ArgumentTypeError(f"kernel {name}: invalid dim {dim!r}: expected an int or a tuple of 1 to 3 ints",
                            fix="e.g. dim=n, dim=(h, w) or dim=(d, h, w): one thread per element of the work")
    out = tuple(int(d) for d in dims)  # type: ignore[attr-defined]  # checked above
    if min(out) < 1 or max(out) > 2**32 - 1:
        raise InvalidArgumentError(f"kernel {name}: dim {out} has a dimension outside 1 .. 2**32-1",
                            fix="give every dimension >= 1 (skip the launch when there is no work)")
    return out


def grid_for(dims: tuple[int, ...], ws: tuple[int, int, int]) -> tuple[int, int, int]:
    """Workgroups per axis: the last launch axis runs along x (the backend folds big grids)."""
    rev = tuple(reversed(dims)) + (1,) * (3 - len(dims))
    return (-(-rev[0] // ws[0]), -(-rev[1] // ws[1]), -(-rev[2] // ws[2]))


@dataclass
class Bound:
    """The arguments of one launch, checked: the specialization and what the backend gets."""

    spec: Spec
    arrays: list[tuple[ParamSpec, ArrayArg, tuple[int, ...]]]  # (param, numpy array, handle or vyre Array, shape)
    words: np.ndarray
    resident: bool
    device: Backend | None = None  # the backend of the vyre Arrays among the arguments (None without any)


def bind(name: str, params: Sequence[tuple[str, ArrayType | DType]], inputs: Any, dims: tuple[int, ...],
         ws: tuple[int, int, int] | None) -> Bound:
    """Check ``inputs`` (a sequence in parameter order, or a dict by name) against the parameters."""
    names = [p for p, _ in params]
    if isinstance(inputs, Mapping):
        missing = [n for n in names if n not in inputs]
        extra = [k for k in inputs if k not in names]
        if missing or extra:
            raise ArgumentTypeError(f"kernel {name}: inputs dict " + (f"misses {missing}" if missing else "") +
                                    (" and " if missing and extra else "") +
                                    (f"has unknown {extra}" if extra else ""),
                                    fix=f"give exactly the parameters {names}")
        values = [inputs[n] for n in names]
    else:
        values = list(inputs)
        if len(values) != len(names):
            raise ArgumentTypeError(f"kernel {name} takes {len(names)} argument(s) {names}, got {len(values)}",
                                    fix="pass one value per parameter, in order (or inputs={'name': value})")
    specs: list[ParamSpec] = []
    arrays: list[tuple[ParamSpec, ArrayArg, tuple[int, ...]]] = []
    words = list(dims)
    kinds = set()
    for (pname, kind), v in zip(params, values):
        if isinstance(kind, ArrayType):
            arr, shape, resident = _array_arg(name, pname, kind, v)
            kinds.add(resident)
            p = ParamSpec(pname, kind, len(shape), tuple(shape[1:]))
            specs.append(p)
            arrays.append((p, arr, shape))
        else:
            words.append(_scalar_word(name, pname, kind, v))
            specs.append(ParamSpec(pname, kind))
    if len(kinds) > 1:
        raise ArgumentTypeError(f"kernel {name}: mixes numpy arrays with resident ones (ResidentHandles or vyre "
                                "Arrays)", fix="pass every array as a numpy array, or every one resident: upload "
                                               "numpy arrays with vyre.array.asarray(x, device=backend)")
    devices = {id(a.device): a.device for _, a, _ in arrays if is_resident_array(a)}
    if len(devices) > 1:
        raise DeviceMismatchError(f"kernel {name}: vyre Arrays on {len(devices)} different backends",
                                  fix="move them to one backend with x.to_device(backend)")
    spec = Spec(tuple(specs), len(dims), ws or WORKGROUP_SIZES[len(dims)])
    return Bound(spec, arrays, np.array(words, dtype=np.uint32), kinds == {True},
                 next(iter(devices.values()), None))


def check_backend(name: str, backend: object) -> None:
    """``backend=`` of a launch: None or a backend object (what :class:`vyre.backends.base.Backend` describes,
    e.g. ``vyre.WgpuBackend.shared()`` or ``vyre.ReferenceBackend()``), else an ArgumentTypeError."""
    if backend is None:
        return
    cls = type(backend)
    known = _BACKEND_CLASSES.get(cls)
    if known is None:
        known = _BACKEND_CLASSES[cls] = all(callable(getattr(cls, m, None)) for m in _BACKEND_MEMBERS)
    if not known:
        hint = (" (a backend object, not its name)" if isinstance(backend, str) else "")
        raise ArgumentTypeError(f"kernel {name}: backend={backend!r:.60} is a {cls.__name__}, not a vyre backend{hint}",
                                fix="pass a backend object: backend=vyre.WgpuBackend.shared() (the GPU) or "
                                    "backend=vyre.ReferenceBackend(), or leave backend= out for "
                                    "vyre.default_backend() (VYRE_BACKEND=gpu|reference picks it)")


#: the methods of a backend a launch calls; a class with them all is taken as a backend (checked once per class)
_BACKEND_MEMBERS = ("dispatch", "dispatch_resident", "params_handle")
_BACKEND_CLASSES: dict[type, bool] = {}


def backend_for(name: str, bound: Bound, backend: Backend | None) -> Backend:
    """The launch's backend: ``backend``, else the Arrays' backend, else :func:`vyre.default_backend`."""
    if bound.device is not None:
        if backend is not None and backend is not bound.device:
            raise DeviceMismatchError(f"kernel {name}: launched on {backend!r} with vyre Arrays on {bound.device!r}",
                                      fix="leave backend= out (the Arrays' backend is used) or move the arrays")
        return bound.device
    if backend is None:
        backend = default_backend()
    return backend


def _array_handle(p: ParamSpec, a: ResidentArray) -> ResidentHandle:
    """The handle to bind for resident array ``a`` (evaluated first). A written array whose buffer is also
    read by pending expressions (recorded before the launch) moves to a copy first, so they keep the old
    values (:func:`.resident.write_handle`)."""
    assert isinstance(p.kind, ArrayType)
    return a.handle if p.kind.access is Access.READ else write_handle(a, f"kernel parameter {p.name!r}")


def _array_arg(name: str, pname: str, kind: ArrayType, v: object) -> tuple[ArrayArg, tuple[int, ...], bool]:
    want = kind.dtype
    if is_resident_array(v):
        _check_array(name, pname, kind, v, "the vyre Array",
                     f"convert it: vyre.array.astype(x, vyre.array.{want.numpy.name})")
        return v, tuple(v.shape), True
    if isinstance(v, ResidentHandle) or (isinstance(v, tuple) and len(v) == 2 and isinstance(v[0], ResidentHandle)):
        handle, shape = (v, None) if isinstance(v, ResidentHandle) else v
        size = want.numpy.itemsize if want.dtype is not DataType.BOOL else 4
        shape = (handle.nbytes // size,) if shape is None else tuple(int(s) for s in shape)
        if not shape or math.prod(shape) * size > handle.nbytes:
            raise InvalidArgumentError(f"kernel {name}: the handle for {pname!r} ({handle.nbytes} bytes) cannot "
                                       f"hold shape {shape} of {want.name}",
                                       fix="pass (handle, shape) with a shape that fits")
        return handle, shape, True
    if not isinstance(v, np.ndarray):
        raise ArgumentTypeError(f"kernel {name}: {pname!r} ({kind!r}) needs a numpy array, a vyre Array or a "
                                f"ResidentHandle, got {type(v).__name__}",
                                fix=f"pass np.asarray(value, dtype=np.{want.numpy.name})")
    _check_array(name, pname, kind, v, "the array", f"convert it: x.astype(np.{want.numpy.name})")
    return v, tuple(v.shape), False


def _check_array(name: str, pname: str, kind: ArrayType, v: np.ndarray | ResidentArray, what: str,
                 dtype_fix: str) -> None:
    """dtype and rank checks shared by numpy arrays and vyre Arrays."""
    if v.dtype != kind.dtype.numpy:
        raise ArgumentTypeError(f"kernel {name}: {pname!r} is {kind!r} but {what} is {v.dtype}", fix=dtype_fix)
    if v.ndim < 1 or v.ndim > 3 or v.size == 0:
        raise InvalidArgumentError(f"kernel {name}: {pname!r} has shape {v.shape}: arrays have 1 to 3 dimensions "
                                   "and at least one element", fix="reshape the array")


def _scalar_word(name: str, pname: str, kind: DType, v: Any) -> int:
    """One u32 word of the params uniform (:func:`vyre.ir.words.pack_scalars`: floats by their f32 bits, i32
    by its two's complement), after checking the value against the parameter's type."""
    d = kind.dtype
    is_bool = isinstance(v, (bool, np.bool_))
    is_int = isinstance(v, (int, np.integer)) and not is_bool
    is_float = isinstance(v, (float, np.floating))
    fix = f"pass a Python {'bool' if d is DataType.BOOL else ('int' if d.is_int else 'number')}"
    if d is DataType.BOOL:
        if not is_bool:
            raise ArgumentTypeError(f"kernel {name}: {pname!r} is bool_, got {v!r:.40}", fix=fix)
        return _word("b", bool(v))
    if d.is_int:
        lo, hi = (0, 2**32 - 1) if d is DataType.U32 else (-(2**31), 2**31 - 1)
        if not is_int or not lo <= int(v) <= hi:
            err = ArgumentTypeError if not is_int else InvalidArgumentError
            raise err(f"kernel {name}: {pname!r} is {d.value}, got {v!r:.40}", fix=f"pass an int in [{lo}, {hi}]")
        return _word("u" if d is DataType.U32 else "i", int(v))
    if not (is_int or is_float):
        raise ArgumentTypeError(f"kernel {name}: {pname!r} is {d.value}, got {v!r:.40}", fix=fix)
    return _word("f", np.float32(v))  # numpy's rounding: past float32's range is inf, as in the shader


def _word(kind: str, value: object) -> int:
    return int.from_bytes(pack_scalars(kind, (value,)), "little")


def run(name: str, program: Program, bound: Bound, dims: tuple[int, ...], backend: Backend,
        params_handle: ResidentHandle | None = None) -> list[np.ndarray] | None:
    """Dispatch ``program``; returns the outputs (one per Out/InOut parameter), or None when resident."""
    grid = grid_for(dims, bound.spec.workgroup_size)
    counts = {}
    for (_, _, shape), decl in zip(bound.arrays, program.sorted_buffers):
        n = math.prod(shape)
        if bound.resident or decl.access is Access.WRITE:
            counts[decl.name] = n
    config = DispatchConfig(grid=grid, counts=counts)
    if bound.resident:
        handles: list[ResidentHandle] = []
        for p, arr, _ in bound.arrays:
            if is_resident_array(arr):
                handles.append(_array_handle(p, arr))
            else:
                assert isinstance(arr, ResidentHandle)  # bind(): every array of a resident launch is resident
                handles.append(arr)
        assert params_handle is not None  # Kernel.launch uploads the params of every resident launch
        handles.append(params_handle)
        backend.dispatch_resident(program, handles, config)
        return None
    inputs = [np.ascontiguousarray(arr).reshape(-1) for p, arr, _ in bound.arrays
              if isinstance(p.kind, ArrayType) and p.kind.access is not Access.WRITE]
    outs = backend.dispatch(program, inputs + [bound.words], config)
    result = []
    writers = [(p, arr, shape) for p, arr, shape in bound.arrays
               if isinstance(p.kind, ArrayType) and p.kind.access is not Access.READ]
    for (_, arr, shape), out in zip(writers, outs):
        out = out.reshape(shape)
        assert isinstance(arr, np.ndarray)  # bind(): a launch that is not resident has numpy arrays only
        if arr.flags.writeable:
            # numba-style: k[n](x, out) fills out, a strided view (big[::2]) included: through the view
            np.copyto(arr, out)
            out = arr
        result.append(out)
    return result


__all__ = ["WORKGROUP_SIZES", "check_dim", "check_backend", "grid_for", "Bound", "bind", "backend_for", "run"]
