"""Launches of differentiable kernels on the gradient tape (``@vyre.kernel(differentiable=True)``).

A launch on vyre Arrays writes its Out arrays in place; on the tape it is the function *(float In arrays)
-> (float Out arrays)*: the Out arrays, as the launch left them, are the recorded results (their contents
before the launch are overwritten, so no gradient flows to them; an Out array the tape already holds is
refused before the launch, like any in-place change of a recorded array). Scalar parameters and integer
arrays are constants. The backward pass runs the kernel's adjoint program once per recorded launch, on
the launch's backend, with the gradients reaching its Out arrays as seeds.

The adjoint is a kernel, not vyre.array expressions: an outer tape cannot differentiate it again, so a
second derivative through a kernel is refused (InvalidArgumentError), never a silent zero.
"""

from __future__ import annotations

from typing import Any

import vyre.array as xp
from vyre.array import _record

from ..errors import InvalidArgumentError
from ..frontend.diff import Launch

NAME = "autograd.kernel"  # autograd's own node (docs/differentiable.md), like autograd.scatter_add


def _launch(launch: Launch, arrays: tuple[Any, ...]) -> None:
    """The signature the tape binds a launch's parameters with: the launch, then its float In arrays."""


def _rule(g: list[Any], out: Any, launch: Launch, arrays: tuple[Any, ...]) -> tuple[None, list[Any]]:
    if _record.RECORDERS:
        raise InvalidArgumentError(f"a tape is recording the backward pass through kernel "
                                   f"{launch.kernel.__name__}: second derivatives through kernels are not supported",
                                   fix="differentiate the kernel once (no tape around gradient())")
    device = launch.backend
    grads = launch.backward(list(g), lambda shape: xp.zeros(shape, dtype=xp.float32, device=device))
    return None, grads


RULES = {NAME: _rule}


def record(launch: Launch) -> None:
    """Hand ``launch`` to every tape recording in this thread (as one call of :data:`NAME`)."""
    ins = tuple(arr for _, arr, _ in launch.float_ins())
    outs = tuple(arr for _, arr, _ in launch.float_outs())
    if not outs:
        return
    for r in list(_record.RECORDERS.mine()):
        r.record(NAME, _launch, (launch, ins), {}, outs)


__all__ = ["RULES", "NAME", "record"]
