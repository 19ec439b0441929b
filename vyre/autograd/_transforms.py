"""``grad`` and ``value_and_grad`` (the JAX/MLX style) on the tape: ``f`` runs under a GradientTape and
the tape differentiates its value with respect to the arguments named by ``argnums``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import vyre.array as xp
from vyre.array._array import Array

from ..errors import ArgumentTypeError, InvalidArgumentError
from ._tape import GradientTape, _flatten, is_float


def _nums(argnums: int | Sequence[int]) -> tuple[tuple[int, ...], bool]:
    if isinstance(argnums, int):
        return (argnums,), True
    nums = tuple(argnums)
    if not nums or not all(isinstance(n, int) for n in nums):
        raise ArgumentTypeError(f"argnums must be an int or a non-empty sequence of ints, not {argnums!r}",
                                fix="argnums=0 or argnums=(0, 1)")
    return nums, False


def _separate(args: list[Any], nums: tuple[int, ...]) -> None:
    """An array given as two differentiated arguments (f(x, x)) becomes two arrays: one gradient each."""
    seen: set[int] = set()
    for i in nums:
        flat, rebuild = _flatten(args[i])
        fresh = []
        for a in flat:
            if isinstance(a, Array) and id(a) in seen:
                a = xp.astype(a, a.dtype, copy=True)  # a copy: its own gradient
            seen.add(id(a))
            fresh.append(a)
        args[i] = rebuild(fresh)


def value_and_grad(f: Callable[..., Any], argnums: int | Sequence[int] = 0,
                   has_aux: bool = False) -> Callable[..., tuple[Any, Any]]:
    """``f`` returning ``(value, gradient)``: ``value`` is ``f(*args)`` (a 0-d float array; with
    ``has_aux``, ``f`` returns ``(value, aux)`` and the result is ``((value, aux), gradient)``), the
    gradient is with respect to ``args[argnums]`` (an array or a list/tuple/dict of arrays: the gradient has
    its structure; a tuple of them for a sequence ``argnums``)."""
    nums, single = _nums(argnums)

    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
        given = list(args)
        for i in nums:
            if not -len(given) <= i < len(given):
                raise InvalidArgumentError(f"argnums {i} but f was called with {len(given)} positional argument(s)",
                                           fix="pass the differentiated arguments positionally")
        _separate(given, nums)
        sources = [given[i] for i in nums]
        with GradientTape() as tape:
            tape.watch(sources)
            out = f(*given, **kwargs)
        if has_aux:
            if not isinstance(out, tuple) or len(out) != 2:
                raise ArgumentTypeError("has_aux=True: f must return (value, aux)", fix="return a pair")
            value, aux = out
        else:
            value, aux = out, None
        if not is_float(value) or value.ndim != 0:
            tape.release()
            raise ArgumentTypeError(f"grad: f must return a 0-d floating-point array, not "
                                    f"{getattr(value, 'shape', type(value).__name__)}",
                                    fix="reduce it (e.g. .sum() or .mean()), or use GradientTape with "
                                        "output_gradients for a vector-Jacobian product")
        grads = tape.gradient(value, sources)
        g = grads[0] if single else tuple(grads)
        return ((value, aux), g) if has_aux else (value, g)

    return run


def grad(f: Callable[..., Any], argnums: int | Sequence[int] = 0, has_aux: bool = False) -> Callable[..., Any]:
    """``f``'s gradient function (see :func:`value_and_grad`); with ``has_aux``: ``(gradient, aux)``."""
    vg = value_and_grad(f, argnums, has_aux)

    @functools.wraps(f)
    def run(*args: Any, **kwargs: Any) -> Any:
        out, g = vg(*args, **kwargs)
        return (g, out[1]) if has_aux else g

    return run


__all__ = ["grad", "value_and_grad"]
