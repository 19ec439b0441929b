"""``vyre.autograd``: reverse-mode differentiation of vyre.array code (docs/training.md).

Two faces, one mechanism: :class:`GradientTape` records the differentiable vyre.array calls made inside
``with`` (through vyre.array's hook, vyre/array/_record.py) and :meth:`GradientTape.gradient` runs them
backwards with the rule table (vyre/autograd/rules.py); :func:`grad` and :func:`value_and_grad` are
functions built on a tape. :func:`stop_gradient` cuts a value off.

A floor above vyre.array: vyre.array never imports this package.
"""

from __future__ import annotations

from typing import Any

import vyre.array as xp
from vyre.array import _record
from vyre.array._array import Array

from ..errors import ArgumentTypeError
from . import _kernels
from ._scatter import scatter_add
from ._tape import GradientTape
from ._transforms import grad, value_and_grad
from .rules import RULES, ZERO

RULES.update(_kernels.RULES)  # launches of differentiable kernels (vyre/autograd/_kernels.py)


def _stop_gradient(x: Any) -> Any:
    if not isinstance(x, Array):
        raise ArgumentTypeError(f"stop_gradient takes a vyre array, not {type(x).__name__}",
                                fix="pass a vyre.array array")
    return xp.astype(x, x.dtype, copy=True)  # a new array (lazy, it fuses) that no tape connects to x


stop_gradient = _record.recorded(_stop_gradient, "stop_gradient")
stop_gradient.__doc__ = "``x``'s values as a new array through which no gradient flows (a constant to every tape)."

__all__ = ["GradientTape", "grad", "value_and_grad", "stop_gradient", "scatter_add", "RULES", "ZERO"]
