"""Launches of differentiable kernels on the gradient tape (``@vyre.kernel(differentiable=True)``).

A launch on vyre Arrays writes its Out arrays in place; on the tape it is the function *(float In arrays)
-> (float Out arrays)*: the Out arrays, as the launch left them, are the recorded results (their contents
before the launch are overwritten, so no gradient flows to them; an Out array the tape already holds is
refused before the launch, like any in-place change of a recorded array). Scalar parameters and integer
arrays are constants. The backward pass runs the kernel's adjoint program once per recorded launch, on
the launch's backend, with the gradients reaching its Out arrays as seeds.

The adjoint is a kernel, not vyre.array expressions: an outer tape cannot differentiate it again, so a
second derivative through a kernel is refused (InvalidArgumentError), never a silent zero. A launch of a
kernel *not* declared differentiable is recorded too: a gradient that reaches its outputs raises
InvalidArgumentError (nothing flows through it silently as a constant).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import vyre.array as xp
from vyre.array import _record

from ..errors import InvalidArgumentError
from ..frontend.diff import TAPE_NAME

if TYPE_CHECKING:
    from ..frontend.diff import Launch


def _rule(g: list[Any], out: Any, launch: Launch, arrays: tuple[Any, ...]) -> tuple[None, list[Any]]:
    """The gradients of a recorded launch's float In arrays: its adjoint program, seeded with ``g``."""
    if not launch.kernel.differentiable:  # a gradient reached its outputs: never a silent zero
        raise InvalidArgumentError(
            f"a gradient flows through kernel {launch.kernel.__name__}, which is not differentiable",
            fix="decorate it with @vyre.kernel(differentiable=True), or stop the gradient of its inputs "
                "(vyre.autograd.stop_gradient)")
    if _record.RECORDERS:
        raise InvalidArgumentError(f"a tape is recording the backward pass through kernel "
                                   f"{launch.kernel.__name__}: second derivatives through kernels are not supported",
                                   fix="differentiate the kernel once (no tape around gradient())")
    device = launch.backend
    grads = launch.backward(list(g), lambda shape: xp.zeros(shape, dtype=xp.float32, device=device))
    return None, grads


#: the launch's node on the tape (recorded by vyre/frontend/diff.py under this name)
RULES = {TAPE_NAME: _rule}

__all__ = ["RULES"]
