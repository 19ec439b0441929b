"""``vyre.Array``: an n-d array on one backend, row-major in a resident buffer it owns (freed by
``Buffer.__del__`` when the array and the expressions reading it are gone), or pending as a lazy
elementwise expression (vyre/array/_kernels/nodes.py) or deferred work (a reduction, a pipeline) that
materialises on :meth:`Array.evaluate` or when a value is needed.

This module holds the array object's storage, attributes, host interop and in-place operators. Its
operators (arithmetic, comparisons, ``@``, indexing) and the methods that are namespace functions
(``sum``, ``astype``, ``reshape``, ``mT``, ``to_device``, ...) are the namespace's functions themselves,
bound to the class when vyre.array is imported (vyre/array/_operators.py): the modules defining them
import this one, never the other way. ``__dlpack__`` hands a host copy (WebGPU exposes no device pointers:
there is no zero-copy exchange; ``copy=False`` is a BufferError).
"""

from __future__ import annotations

import math
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from ..backends import recording
from ..backends.host import storage_nbytes
from ..errors import ArgumentTypeError, DispatchError, InvalidArgumentError, VyreError
from ._kernels.dtypes import DType, ir_type
from ._kernels.fused import Deferred, download, evaluate, explain
from ._kernels.nodes import Leaf, Node

if TYPE_CHECKING:
    from ..backends.base import Backend

_REPR_MAX = 1000  # elements shown by repr (larger arrays show shape and dtype only)


def _free(backend: Backend, handle: Any) -> None:
    try:
        backend.free_resident(handle)
    except VyreError:
        pass  # the device is gone or shut down: its buffers went with it


#: DLPack's device types (dlpack.h: kDLCPU, kDLWebGPU)
DLPACK_CPU, DLPACK_WEBGPU = 1, 15


class Buffer:
    """A resident buffer owned by arrays and by the expression leaves that read it (freed when the last
    of them is collected), so an in-place operator can give an array a new buffer while pending
    expressions keep reading the old one. ``pending``: the expression (or deferred work,
    _kernels.fused.Deferred) whose values the buffer will hold once an evaluation computes them (None when it
    holds its values, or is an output a kernel fills); a leaf captures the buffer with it, so what the
    leaf reads never depends on the array's later life."""

    __slots__ = ("handle", "pending", "_backend", "__weakref__")

    def __init__(self, backend: Backend, nbytes: int, pending: Node | Deferred | None = None, zeroed: bool = True):
        # a pending expression's buffer is written whole by its fused kernel: no need to clear a reused one
        self.handle = backend.allocate_resident(nbytes, zeroed=zeroed and pending is None)
        self.pending = pending
        self._backend = backend

    def __del__(self) -> None:
        # __del__ rather than weakref.finalize: one per array result, and finalize costs ~2 µs to set up
        try:
            _free(self._backend, self.handle)
        except Exception:  # noqa: BLE001 - interpreter shutdown (modules torn down) or a half-built Buffer
            pass


class Array:
    """An array on ``device`` (a backend). Create one with the namespace's creation functions
    (``vyre.array_api.asarray``, ``zeros``, ...), never with this constructor."""

    __slots__ = ("_dtype", "_shape", "_device", "_buf", "_expr", "__weakref__")
    __array_priority__ = 100  # numpy defers to our reflected operators

    def __init__(self, shape: tuple[int, ...], dtype: DType, device: Backend, expr: Node | None = None):
        self._shape, self._dtype, self._device = tuple(int(d) for d in shape), dtype, device
        self._buf: Buffer | None = None
        self._expr = expr

    @classmethod
    def _lazy(cls, shape: tuple[int, ...], dtype: DType, device: Backend, expr: Node) -> Array:
        """A pending array from a recorded node (``shape`` already a tuple of ints): the record path's
        constructor, without the checks of ``__init__``."""
        a = cls.__new__(cls)
        a._shape, a._dtype, a._device, a._buf, a._expr = shape, dtype, device, None, expr
        return a

    # ---- storage ----------------------------------------------------------------------------------
    def _allocate(self, zeroed: bool = True) -> Any:
        """This array's resident buffer (allocated on first call; freed when the array is collected). For a
        pending array the buffer records the expression it is to hold (see :class:`Buffer`). ``zeroed=False``:
        the caller's kernel writes every element (see ``allocate_resident``)."""
        if self._buf is None:
            self._buf = Buffer(self._device, storage_nbytes(ir_type(self._dtype), self.size), self._expr, zeroed)
        return self._buf.handle

    def _commit(self) -> None:
        """Mark a pending array materialised (its buffer now holds its values)."""
        self._expr = None  # drops the tree: its leaves may be collected now
        if self._buf is not None:
            self._buf.pending = None

    def _storage(self) -> Any:
        """The resident handle of a materialised array (see :meth:`evaluate`)."""
        if self._expr is not None or self._buf is None or self._buf.pending is not None:
            raise DispatchError("array is not materialised", fix="call x.evaluate() first")
        return self._buf.handle

    def _deferred(self) -> Array:
        """Keep this pending expression out of the trees that read it: they read its buffer instead, which
        the same submission computes first (a small value many kernels share: an optimizer's step counts)."""
        if self._expr is not None:
            self._allocate(zeroed=False)
            self._expr = None
        return self

    def _node(self) -> Node:
        """The array as an expression node: its pending tree, or a leaf reading its buffer."""
        return self._expr if self._expr is not None else Leaf(self)

    def evaluate(self) -> Array:
        """Materialise a pending expression or deferred reduction (one submission for everything it
        needs); returns self. It submits and returns without waiting for the device: a download
        (``np.asarray``, ``float``, ...) waits, as a mapped read waits for the work before it."""
        if self.is_lazy:
            evaluate([self])
        return self

    @property
    def handle(self) -> Any:
        """The :class:`~vyre.backends.handles.ResidentHandle` holding the data (evaluates first). Its
        layout is :mod:`vyre.backends.host`'s storage layout (bool as u32 words); owned by the array."""
        return self.evaluate()._storage()

    def __vyre_write_handle__(self) -> Any:
        """The buffer a kernel writes this array's new values into (the front end's
        ``WritableResidentArray``): evaluated, and this array's alone. Expression leaves recorded earlier
        share the buffer object; more references to it than ``self._buf`` and getrefcount's argument mean
        such pending readers, so the array moves to a copy first and they keep the old values."""
        h = self.handle
        if sys.getrefcount(self._buf) > 2:
            recording.rebinding(self, self._buf)
            self._buf = self.astype(self.dtype, copy=True).evaluate()._buf
            h = self.handle
        return h

    @property
    def is_lazy(self) -> bool:
        """True while the array is a pending expression or the result of deferred work (a reduction)."""
        return self._expr is not None or (self._buf is not None and self._buf.pending is not None)

    def explain(self) -> str:
        """The kernels evaluating this array would run now, with their programs (see fused.explain)."""
        return explain(self)

    # ---- attributes -------------------------------------------------------------------------------
    @property
    def dtype(self) -> DType: return self._dtype
    @property
    def shape(self) -> tuple[int, ...]: return self._shape
    @property
    def ndim(self) -> int: return len(self._shape)
    @property
    def size(self) -> int: return math.prod(self._shape)
    @property
    def nbytes(self) -> int: return self.size * self._dtype.itemsize
    @property
    def device(self) -> Backend: return self._device

    def __array_namespace__(self, *, api_version: str | None = None) -> ModuleType:
        if api_version not in (None, "2024.12", "2023.12", "2022.12"):
            raise InvalidArgumentError(f"api_version {api_version!r} is not supported", fix="use '2024.12' or None")
        return sys.modules[__name__.rpartition(".")[0]]  # vyre.array (imported before its submodules)

    # ---- host interop -----------------------------------------------------------------------------
    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """Download (``np.asarray(x)``): always a new host array."""
        if copy is False:
            raise InvalidArgumentError("vyre arrays live on a device: np.asarray needs a copy (copy=False is "
                                       "impossible)", fix="call np.asarray(x) without copy=False")
        raw = download(self)  # pending work and the read: one submission
        t = ir_type(self._dtype)
        scalar = t.storage_scalar.numpy_dtype
        # trimmed to whole elements first: an empty array's buffer is 4 bytes, not a multiple of 8 (int64)
        out = raw[: self.size * t.storage_lanes * scalar.itemsize].view(scalar)
        if self._dtype.kind == "c":  # interleaved (re, im) pairs: numpy's complex layout
            out = out.view(self._dtype)
        out = (out != 0) if self._dtype == np.bool_ else out.astype(self._dtype, copy=False)
        out = out.reshape(self._shape)
        return out if dtype is None else out.astype(dtype)

    # ---- DLPack (a host copy: WebGPU has no device pointers to share) --------------------------------
    def __dlpack_device__(self) -> tuple[int, int]:
        """``(kDLWebGPU, 0)``: DLPack's device type 15, where the data lives."""
        return (DLPACK_WEBGPU, 0)

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
        """A DLPack capsule of a **host copy** (one download), so ``np.from_dlpack(x)`` and
        ``torch.from_dlpack(x)`` work: the consumer gets CPU memory it owns. ``dl_device`` may be None or
        the CPU (``(1, 0)``); ``copy=False`` raises BufferError (WebGPU memory cannot be shared)."""
        if copy is False:
            raise BufferError("a vyre array lives in WebGPU memory, which DLPack cannot share without a copy "
                              "(pass copy=True or None: a host copy)")
        if dl_device is not None and tuple(dl_device)[0] != DLPACK_CPU:
            raise BufferError(f"vyre arrays export to DLPack as host (CPU) copies only, not to device {dl_device}")
        host = np.ascontiguousarray(self.__array__())
        kwargs: dict[str, Any] = {} if max_version is None else {"max_version": max_version}
        return host.__dlpack__(**kwargs)

    def __len__(self) -> int:
        if not self._shape:
            raise ArgumentTypeError("len() of a 0-d array", fix="a 0-d array has no length: use x.size or x.shape")
        return self._shape[0]

    def _scalar(self, kind: type) -> Any:
        if self.size != 1 or self.ndim != 0:
            raise ArgumentTypeError(f"only 0-d arrays convert to Python {kind.__name__} (shape {self._shape})",
                                    fix="reduce it first (x.sum(), x[0, ...]) or download it with np.asarray(x)")
        return kind(np.asarray(self).item())

    def __bool__(self) -> bool: return bool(self._scalar(bool))
    def __int__(self) -> int: return int(self._scalar(int))
    def __float__(self) -> float: return float(self._scalar(float))
    def __complex__(self) -> complex: return complex(self._scalar(complex))

    def __index__(self) -> int:
        if self._dtype.kind not in "iu":
            raise ArgumentTypeError(f"__index__ needs an integer array, not {self._dtype}", fix="x.astype(int32) first")
        return int(self._scalar(int))

    def __repr__(self) -> str:
        name = getattr(self._device, "name", type(self._device).__name__)
        if self.size > _REPR_MAX:
            return f"Array(shape={self._shape}, dtype={self._dtype}, device={name})"
        body = np.array2string(np.asarray(self), separator=", ", prefix="Array(")
        return f"Array({body}, dtype={self._dtype}, device={name})"

    __hash__ = None  # type: ignore[assignment]  # == is elementwise

    if TYPE_CHECKING:  # bound at import to the namespace's functions (vyre/array/_operators.py)
        def __add__(self, o: Any, /) -> Array: ...
        def __radd__(self, o: Any, /) -> Array: ...
        def __sub__(self, o: Any, /) -> Array: ...
        def __rsub__(self, o: Any, /) -> Array: ...
        def __mul__(self, o: Any, /) -> Array: ...
        def __rmul__(self, o: Any, /) -> Array: ...
        def __truediv__(self, o: Any, /) -> Array: ...
        def __rtruediv__(self, o: Any, /) -> Array: ...
        def __floordiv__(self, o: Any, /) -> Array: ...
        def __rfloordiv__(self, o: Any, /) -> Array: ...
        def __mod__(self, o: Any, /) -> Array: ...
        def __rmod__(self, o: Any, /) -> Array: ...
        def __pow__(self, o: Any, /) -> Array: ...
        def __rpow__(self, o: Any, /) -> Array: ...
        def __and__(self, o: Any, /) -> Array: ...
        def __rand__(self, o: Any, /) -> Array: ...
        def __or__(self, o: Any, /) -> Array: ...
        def __ror__(self, o: Any, /) -> Array: ...
        def __xor__(self, o: Any, /) -> Array: ...
        def __rxor__(self, o: Any, /) -> Array: ...
        def __lshift__(self, o: Any, /) -> Array: ...
        def __rlshift__(self, o: Any, /) -> Array: ...
        def __rshift__(self, o: Any, /) -> Array: ...
        def __rrshift__(self, o: Any, /) -> Array: ...
        def __lt__(self, o: Any, /) -> Array: ...
        def __le__(self, o: Any, /) -> Array: ...
        def __gt__(self, o: Any, /) -> Array: ...
        def __ge__(self, o: Any, /) -> Array: ...
        def __eq__(self, o: Any, /) -> Array: ...  # type: ignore[override]
        def __ne__(self, o: Any, /) -> Array: ...  # type: ignore[override]
        def __neg__(self) -> Array: ...
        def __pos__(self) -> Array: ...
        def __abs__(self) -> Array: ...
        def __invert__(self) -> Array: ...
        def __matmul__(self, o: Any, /) -> Array: ...
        def __rmatmul__(self, o: Any, /) -> Array: ...
        def __getitem__(self, key: Any, /) -> Array: ...
        def __setitem__(self, key: Any, value: Any, /) -> None: ...

        @property
        def mT(self) -> Array: ...  # noqa: N802 - the standard's name
        @property
        def T(self) -> Array: ...  # noqa: N802
        @property
        def wgpu_buffer(self) -> Any:
            """The ``wgpu.GPUBuffer`` holding this array's data (evaluated first), for other WebGPU code."""
        def to_device(self, device: Backend, /, *, stream: Any = None) -> Array: ...
        # numpy-style methods (not in the standard, which has functions only): the same functions
        def sum(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Array: ...
        def prod(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Array: ...
        def min(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Array: ...
        def max(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Array: ...
        def mean(self, axis: int | tuple[int, ...] | None = None, keepdims: bool = False) -> Array: ...
        def argmax(self, axis: int | None = None, keepdims: bool = False) -> Array: ...
        def argmin(self, axis: int | None = None, keepdims: bool = False) -> Array: ...
        def reshape(self, *shape: Any) -> Array: ...
        def astype(self, dtype: Any, copy: bool = True) -> Array: ...

    def _inplace(self, result: Array) -> Array:
        # The standard: in-place operators keep the dtype and shape. The result is materialised into its
        # own buffer, which this array then owns; expressions still pending on the old values keep the
        # old buffer alive through their leaves (Buffer).
        if result.dtype != self._dtype or result.shape != self._shape:
            raise InvalidArgumentError(f"in-place operation would change {self._dtype}{list(self._shape)} into "
                                       f"{result.dtype}{list(result.shape)}", fix="use the out-of-place operator")
        result.evaluate()
        recording.rebinding(self, self._buf)
        self._buf, self._expr = result._buf, None
        return self

    def _adopt(self, new: Array) -> Array:
        """This array object takes ``new``'s contents (pending or not) without evaluating: the same object
        then holds the new values, as an in-place update would (an optimizer's parameters and state).
        Expressions pending on the old values keep the old buffer through their leaves."""
        if new._dtype != self._dtype or new._shape != self._shape or new._device is not self._device:
            raise InvalidArgumentError(f"cannot update {self._dtype}{list(self._shape)} in place with "
                                       f"{new._dtype}{list(new._shape)} (or another backend's array)",
                                       fix="an array of the same shape, dtype and backend")
        if new is not self:
            recording.rebinding(self, self._buf)
            self._buf, self._expr = new._buf, new._expr
        return self

    def __iadd__(self, o: Any) -> Array: return self._inplace(self + o)
    def __isub__(self, o: Any) -> Array: return self._inplace(self - o)
    def __imul__(self, o: Any) -> Array: return self._inplace(self * o)
    def __itruediv__(self, o: Any) -> Array: return self._inplace(self / o)
    def __ifloordiv__(self, o: Any) -> Array: return self._inplace(self // o)
    def __imod__(self, o: Any) -> Array: return self._inplace(self % o)
    def __ipow__(self, o: Any) -> Array: return self._inplace(self ** o)
    def __iand__(self, o: Any) -> Array: return self._inplace(self & o)
    def __ior__(self, o: Any) -> Array: return self._inplace(self | o)
    def __ixor__(self, o: Any) -> Array: return self._inplace(self ^ o)
    def __ilshift__(self, o: Any) -> Array: return self._inplace(self << o)
    def __irshift__(self, o: Any) -> Array: return self._inplace(self >> o)



def check_array(x: Any, what: str) -> Array:
    """``x`` when it is a vyre array, else the typed error every function of the namespace gives (a TypeError)."""
    if not isinstance(x, Array):
        raise ArgumentTypeError(f"{what}: expected a vyre array, got {type(x).__name__}",
                                fix="convert with vyre.array.asarray first")
    return x


__all__ = ["Array"]
