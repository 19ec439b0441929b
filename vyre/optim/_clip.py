"""``clip_grad_norm``: gradients scaled so that their global L2 norm is at most ``max_norm`` (PyTorch's
``clip_grad_norm_``: ``coef = min(1, max_norm / (norm + 1e-6))``), without a download: the norm and the
coefficient stay arrays, and each clipped gradient is one more fused multiply."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import vyre.array as xp
from vyre.array import Array

from ..errors import ArgumentTypeError, InvalidArgumentError

F: Any = xp  # the float functions, through an untyped alias (mypy cannot follow their __all__ tuple)



def clip_grad_norm(grads: Any, max_norm: float, eps: float = 1e-6) -> tuple[Any, Array]:
    """``(clipped, norm)``: ``grads`` (a list, tuple or dict of arrays; None entries stay None) times
    ``min(1, max_norm / (norm + eps))``, in the same structure, and ``norm`` (a 0-d float32 array: the
    norm before clipping, ``sqrt`` of the sum of every element's square)."""
    if isinstance(max_norm, bool) or not isinstance(max_norm, int | float) or not max_norm > 0 \
            or not math.isfinite(max_norm):
        raise InvalidArgumentError(f"max_norm must be a finite number > 0, not {max_norm!r}", fix="max_norm=1.0")
    if isinstance(grads, Mapping):
        keys: list[Any] = list(grads)
        vals = [grads[k] for k in keys]
    elif isinstance(grads, Sequence) and not isinstance(grads, str | Array):
        keys, vals = list(range(len(grads))), list(grads)
    else:
        raise ArgumentTypeError(f"clip_grad_norm takes a list, tuple or dict of arrays, not {type(grads).__name__}",
                                fix="pass what value_and_grad returned")
    present = [g for g in vals if g is not None]
    for g in present:
        if not isinstance(g, Array) or not xp.isdtype(g.dtype, "real floating"):
            raise ArgumentTypeError(f"clip_grad_norm: gradients must be floating vyre arrays, not "
                                    f"{getattr(g, 'dtype', type(g).__name__)}", fix="pass vyre arrays")
    if not present:
        raise InvalidArgumentError("clip_grad_norm: no gradients", fix="pass at least one array")
    total: Array | None = None
    for g in present:
        sq = xp.sum(xp.astype(g, xp.float32) ** 2)
        total = sq if total is None else total + sq
    norm: Array = F.sqrt(total)
    coef = xp.minimum(max_norm / (norm + float(eps)), 1.0)
    clipped = [None if g is None else g * xp.astype(coef, g.dtype) for g in vals]
    if isinstance(grads, Mapping):
        return dict(zip(keys, clipped, strict=True)), norm
    return (tuple(clipped) if isinstance(grads, tuple) else clipped), norm


__all__ = ["clip_grad_norm"]
