"""The autocast policy: which ``vyre.nn`` ops run in float16 and which in float32, and the context that
turns it on (``autocast``, a context variable: per thread and per asyncio task, as PyTorch's is per thread).

vyre.nn calls :func:`cast` at the top of each listed op (``x, w, b = _amp.cast("linear", x, w, b)``); with
no autocast block active that is one context-variable read. The op lists follow PyTorch's CUDA autocast:
matmul-like ops ("autocast to float16": their float32 inputs are cast to float16; vyre's float16 matmul
sums in float32) and ops that need range or precision ("autocast to float32": reductions behind softmax,
norms, losses: their float16 inputs are cast up). Every other op runs in the dtype of its inputs (mixed
float16/float32 operands promote to float32, as the array API standard says). The casts are ordinary
``vyre.array.astype`` calls, so a tape records them and gradients reach float32 master weights in float32.

This module imports nothing heavy: vyre.array is imported on first use.
"""

from __future__ import annotations

import contextvars
import functools
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import InvalidArgumentError, UnsupportedDTypeError

F = TypeVar("F", bound=Callable[..., Any])

#: Ops whose float32 inputs autocast casts to float16 (PyTorch's "autocast to float16" list, as vyre.nn has them).
FLOAT16_OPS = frozenset({"linear", "conv2d", "matmul", "scaled_dot_product_attention"})
#: Ops whose float16 inputs autocast casts to float32 (PyTorch's "autocast to float32" list, as vyre.nn has them).
FLOAT32_OPS = frozenset({"softmax", "log_softmax", "layer_norm", "rms_norm", "cross_entropy", "nll_loss",
                         "mse_loss"})


@dataclass(frozen=True, slots=True)
class _State:
    enabled: bool
    fallback: str | None  # "float32": devices without shader-f16 run the float16 ops in float32


_state: contextvars.ContextVar[_State | None] = contextvars.ContextVar("vyre_autocast", default=None)
_f16: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()  # backend -> has shader-f16


def _has_f16(device: Any) -> bool:
    ok = _f16.get(device)
    if ok is None:
        ok = _f16[device] = bool(device.capabilities().f16)
    return ok


def check_device(device: Any, fallback: str | None = None) -> bool:
    """Whether autocast runs float16 ops in float16 on ``device`` (a backend): True when it has
    ``shader-f16``; without it False if ``fallback == "float32"``, else an UnsupportedDTypeError."""
    if _has_f16(device):
        return True
    if fallback == "float32":
        return False
    raise UnsupportedDTypeError(f"autocast(dtype='float16') needs the shader-f16 feature, which {device!r} lacks",
                                fix="run on an adapter with shader-f16 (VYRE_ADAPTER), or pass "
                                    "autocast(fallback='float32') to run in float32 there (a no-op)")


def _dtype_name(dtype: Any) -> str:
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None) or getattr(dtype, "__name__", None)
    if name in ("float16", "half"):
        return "float16"
    if name == "bfloat16":
        raise UnsupportedDTypeError("autocast: vyre has no bfloat16 (WebGPU has no such type)",
                                    fix="autocast(dtype='float16')")
    raise InvalidArgumentError(f"autocast: dtype must be 'float16', not {dtype!r}", fix="autocast(dtype='float16')")


class autocast:  # noqa: N801 - PyTorch's name, used as a function
    """``with vyre.amp.autocast():`` runs vyre.nn's matmul-like ops (linear, conv2d, matmul,
    scaled_dot_product_attention and so MultiheadAttention) in float16 with float32 sums, and keeps softmax,
    norms and losses in float32 (:data:`FLOAT16_OPS`, :data:`FLOAT32_OPS`). Blocks nest; the innermost
    wins, so ``autocast(enabled=False)`` inside turns it off. Per thread (and asyncio task): other threads
    are not affected. Also a decorator: ``@autocast()`` runs each call of the function inside a block.

    Entering checks the device (``device=``, else the current one: the innermost ``vyre.use`` block or the
    default backend) for ``shader-f16``: without it an UnsupportedDTypeError, unless ``fallback="float32"``,
    which makes autocast a no-op on such devices (ops run in float32 there). Arrays on other devices are
    checked the same way when an op casts them.
    """

    def __init__(self, dtype: Any = "float16", enabled: bool = True, *, device: Any = None,
                 fallback: str | None = None) -> None:
        if not isinstance(enabled, bool):
            raise InvalidArgumentError(f"autocast: enabled must be a bool, not {enabled!r}", fix="enabled=True")
        if fallback not in (None, "float32"):
            raise InvalidArgumentError(f"autocast: fallback must be None or 'float32', not {fallback!r}",
                                       fix="fallback='float32' (float32 on devices without shader-f16)")
        self.dtype = _dtype_name(dtype)
        self.enabled = enabled
        self.device = device
        self.fallback = fallback
        # per thread: one autocast object may be entered by several threads at once
        self._tokens: dict[int, list[contextvars.Token[_State | None]]] = {}

    def __enter__(self) -> autocast:
        if self.enabled:
            from ..array._device import current_backend  # why: vyre.amp stays free of vyre.array at import
            check_device(current_backend(self.device), self.fallback)
        self._tokens.setdefault(threading.get_ident(), []).append(_state.set(_State(self.enabled, self.fallback)))
        return self

    def __exit__(self, *exc: object) -> None:
        tid = threading.get_ident()
        stack = self._tokens[tid]
        _state.reset(stack.pop())
        if not stack:
            del self._tokens[tid]

    def __call__(self, fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with autocast(self.dtype, self.enabled, device=self.device, fallback=self.fallback):
                return fn(*args, **kwargs)
        return wrapper  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"autocast(dtype={self.dtype!r}, enabled={self.enabled}, fallback={self.fallback!r})"


def is_autocast_enabled(device: Any = None) -> bool:
    """Whether the innermost autocast block of this thread is enabled; with ``device`` (a backend), whether
    float16 ops would run in float16 there (False on a device without shader-f16 under ``fallback``)."""
    st = _state.get()
    if st is None or not st.enabled:
        return False
    return device is None or check_device(device, st.fallback)


def get_autocast_dtype() -> str:
    """The dtype autocast casts to: ``"float16"`` (vyre's only lower-precision float)."""
    return "float16"


def cast(op: str, *arrays: Any) -> Any:
    """``arrays`` as ``op`` takes them under the current autocast policy (a tuple, in order; None and
    non-float entries pass through): float32 to float16 for :data:`FLOAT16_OPS`, float16 to float32 for
    :data:`FLOAT32_OPS`. Without an enabled autocast block: ``arrays`` unchanged."""
    st = _state.get()
    if st is None or not st.enabled:
        return arrays
    import vyre.array as xp  # why: already loaded by any caller holding arrays; not at import time

    src: Any
    dst: Any
    if op in FLOAT16_OPS:
        src, dst = xp.float32, xp.float16
    elif op in FLOAT32_OPS:
        src, dst = xp.float16, xp.float32
    else:
        raise InvalidArgumentError(f"autocast: {op!r} is on neither list", fix=f"one of {sorted(FLOAT16_OPS)} "
                                   f"or {sorted(FLOAT32_OPS)}")
    out = []
    for a in arrays:
        if isinstance(a, xp.Array) and a.dtype == src and (dst == xp.float32 or check_device(a.device, st.fallback)):
            a = xp.astype(a, dst)
        out.append(a)
    return tuple(out)


__all__ = ["autocast", "is_autocast_enabled", "get_autocast_dtype", "cast", "check_device", "FLOAT16_OPS",
           "FLOAT32_OPS"]
