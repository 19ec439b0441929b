"""``vyre.amp``: mixed precision. :class:`autocast` runs vyre.nn's matmul-like ops in float16 (float32
sums) and keeps softmax, norms and losses in float32; :class:`GradScaler` scales the loss so that float16
gradients do not underflow, unscales the gradients with one fused pass each (finding inf/NaN), skips the
optimizer step when it found any and adapts the scale as PyTorch's does. See docs/amp.md.

Importing vyre.amp loads only the policy (no vyre.array); ``GradScaler`` loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._policy import FLOAT16_OPS, FLOAT32_OPS, autocast, get_autocast_dtype, is_autocast_enabled

if TYPE_CHECKING:
    from ._scaler import GradScaler


def __getattr__(name: str) -> Any:
    if name == "GradScaler":
        from ._scaler import GradScaler

        globals()[name] = GradScaler
        return GradScaler
    raise AttributeError(f"module 'vyre.amp' has no attribute {name!r}")


__all__ = ["autocast", "GradScaler", "is_autocast_enabled", "get_autocast_dtype", "FLOAT16_OPS", "FLOAT32_OPS"]
