"""SGD, Adam and AdamW. Each parameter's update is array expressions of the parameter, its gradient and
its state (momentum buffer, moments: vyre arrays), so the lazy layer fuses each written array into one
kernel; :meth:`Optimizer.step` evaluates every new array of every parameter together: one submission per
step. Independent arrays of one size evaluated together share a multi-output kernel (the array layer's
grouping), so a step dispatches one kernel per parameter: SGD (with momentum: the buffer and the parameter),
Adam/AdamW (m, v, parameter), each tree recomputing what it needs of the others from the old values.

Gradients are explicit (no ``.grad`` on parameters, no ``zero_grad``): ``step(grads)`` takes what
``vyre.autograd.value_and_grad`` returns: a list/tuple in the optimizer's parameter order, or a dict keyed
by the names the optimizer was built with (``Adam(model.named_parameters())`` or a module). A gradient of
``None`` (or a name left out of a dict) skips that parameter this step, as PyTorch skips ``grad is None``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import vyre.array as xp
from vyre.array import Array

from ..errors import ArgumentTypeError, InvalidArgumentError
from ..nn._module import Module, Parameter

# vyre.array's float functions come from a tuple in its __all__ that mypy cannot follow
F: Any = xp


def _hyper(v: Any, name: str, lo: float, hi: float = math.inf, *, open_hi: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < lo or v > hi \
            or (open_hi and v == hi):
        raise InvalidArgumentError(f"{name} must be a number in [{lo}, {hi}{')' if open_hi else ']'}, not {v!r}",
                                   fix=f"a valid {name}")
    return float(v)


class Optimizer:
    """The shared part: the parameters (with names), ``lr`` (a float a schedule may change), per-parameter
    state (``state[i]``: a dict of arrays and the step count) and the gradient matching."""

    def __init__(self, params: Module | Iterable[Parameter] | Iterable[tuple[str, Parameter]]
                 | Mapping[str, Parameter], lr: float) -> None:
        named: list[tuple[str, Any]]
        if isinstance(params, Module):
            named = list(params.named_parameters())
        elif isinstance(params, Mapping):
            named = list(params.items())
        else:
            items: list[Any] = list(params)
            if all(isinstance(p, Parameter) for p in items):
                named = [(str(i), p) for i, p in enumerate(items)]
            elif all(isinstance(p, tuple) and len(p) == 2 for p in items):
                named = [(str(n), p) for n, p in items]  # named_parameters() pairs
            else:
                raise ArgumentTypeError(f"{type(self).__name__} takes Parameters, (name, Parameter) pairs, a dict "
                                        f"or a Module", fix="pass module.parameters()")
        for name, p in named:
            if not isinstance(p, Parameter):
                raise ArgumentTypeError(f"{type(self).__name__}: {name!r} is a {type(p).__name__}, not a Parameter",
                                        fix="pass module.parameters() or module.named_parameters()")
        if not named:
            raise InvalidArgumentError(f"{type(self).__name__} got no parameters", fix="pass model.parameters()")
        self.names: list[str] = [n for n, _ in named]
        self.params: list[Parameter] = [p for _, p in named]
        self.lr = _hyper(lr, "lr", 0.0)
        self.state: list[dict[str, Any]] = [{"step": 0} for _ in self.params]

    def _matched(self, grads: Sequence[Array | None] | Mapping[str, Array | None]) -> list[Array | None]:
        if isinstance(grads, Mapping):
            unknown = sorted(set(grads) - set(self.names))
            if unknown:
                raise InvalidArgumentError(f"step: gradients for unknown parameters {unknown}",
                                           fix=f"use the optimizer's names: {self.names[:4]}...")
            out = [grads.get(n) for n in self.names]
        elif isinstance(grads, Sequence) and not isinstance(grads, str | Array):
            if len(grads) != len(self.params):
                raise InvalidArgumentError(f"step: {len(grads)} gradients for {len(self.params)} parameters",
                                           fix="one gradient (or None) per parameter, in order")
            out = list(grads)
        else:
            raise ArgumentTypeError(f"step takes a list or dict of gradients, not {type(grads).__name__}",
                                    fix="pass what value_and_grad returned")
        for name, p, g in zip(self.names, self.params, out, strict=True):
            if g is None:
                continue
            if not isinstance(g, Array):
                raise ArgumentTypeError(f"step: the gradient of {name!r} is a {type(g).__name__}, not a vyre array",
                                        fix="pass vyre arrays")
            if g.shape != p.shape:
                raise InvalidArgumentError(f"step: the gradient of {name!r} has shape {g.shape}, the parameter "
                                           f"{p.shape}", fix="gradients in the parameters' order")
            if g.device is not p.value.device:
                raise InvalidArgumentError(f"step: the gradient of {name!r} is on another backend",
                                           fix="compute gradients where the parameters live")
        return out

    def step(self, grads: Sequence[Array | None] | Mapping[str, Array | None]) -> None:
        """One update of every parameter that has a gradient; evaluated at once (one submission)."""
        matched = self._matched(grads)
        written: list[Array] = []
        for i, (p, g) in enumerate(zip(self.params, matched, strict=True)):
            if g is None:
                continue
            st = self.state[i]
            st["step"] += 1
            new_p, new_state = self._update(p.value, xp.astype(g, p.dtype, copy=False), st)
            st.update(new_state)
            p.value = new_p
            written += [new_p, *new_state.values()]
        if written:
            xp.evaluate(written)

    def _update(self, p: Array, g: Array, st: dict[str, Any]) -> tuple[Array, dict[str, Array]]:
        raise NotImplementedError


class SGD(Optimizer):
    """PyTorch's SGD: ``g += weight_decay * p``; with momentum ``b = momentum * b + (1 - dampening) * g``
    (``b = g`` on the first step), then ``g = g + momentum * b`` (Nesterov) or ``g = b``; ``p -= lr * g``."""

    def __init__(self, params: Any, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False) -> None:
        super().__init__(params, lr)
        self.momentum = _hyper(momentum, "momentum", 0.0)
        self.dampening = _hyper(dampening, "dampening", 0.0, 1.0)
        self.weight_decay = _hyper(weight_decay, "weight_decay", 0.0)
        if nesterov and (self.momentum == 0.0 or self.dampening != 0.0):
            raise InvalidArgumentError("Nesterov momentum needs momentum > 0 and dampening 0",
                                       fix="SGD(params, lr, momentum=0.9, nesterov=True)")
        self.nesterov = bool(nesterov)

    def _update(self, p: Array, g: Array, st: dict[str, Any]) -> tuple[Array, dict[str, Array]]:
        if self.weight_decay:
            g = g + self.weight_decay * p
        if not self.momentum:
            return p - self.lr * g, {}
        buf = g if "momentum_buffer" not in st else \
            self.momentum * st["momentum_buffer"] + (1.0 - self.dampening) * g
        d = g + self.momentum * buf if self.nesterov else buf
        return p - self.lr * d, {"momentum_buffer": buf}


class Adam(Optimizer):
    """PyTorch's Adam: ``g += weight_decay * p`` (L2), ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2``,
    ``p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)``. The bias corrections are computed in
    float64 on the host each step and enter the kernel as parameters (no rebuild per step)."""

    decoupled = False

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0) -> None:
        super().__init__(params, lr)
        if not isinstance(betas, tuple | list) or len(betas) != 2:
            raise ArgumentTypeError(f"betas must be a pair, not {betas!r}", fix="betas=(0.9, 0.999)")
        self.betas = (_hyper(betas[0], "betas[0]", 0.0, 1.0, open_hi=True),
                      _hyper(betas[1], "betas[1]", 0.0, 1.0, open_hi=True))
        self.eps = _hyper(eps, "eps", 0.0)
        self.weight_decay = _hyper(weight_decay, "weight_decay", 0.0)

    def _update(self, p: Array, g: Array, st: dict[str, Any]) -> tuple[Array, dict[str, Array]]:
        b1, b2 = self.betas
        t = st["step"]
        if self.weight_decay and not self.decoupled:
            g = g + self.weight_decay * p
        m0, v0 = st.get("exp_avg"), st.get("exp_avg_sq")
        m = (1.0 - b1) * g if m0 is None else b1 * m0 + (1.0 - b1) * g
        v = (1.0 - b2) * (g * g) if v0 is None else b2 * v0 + (1.0 - b2) * (g * g)
        step_size = self.lr / (1.0 - b1 ** t)
        inv_c2 = 1.0 / math.sqrt(1.0 - b2 ** t)
        base = p * (1.0 - self.lr * self.weight_decay) if self.decoupled and self.weight_decay else p
        new_p: Array = base - step_size * m / (F.sqrt(v) * inv_c2 + self.eps)
        return new_p, {"exp_avg": m, "exp_avg_sq": v}


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter; PyTorch's AdamW): ``p *= 1 - lr *
    weight_decay`` before the Adam step, the gradient untouched. ``weight_decay`` defaults to 0.01."""

    decoupled = True

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.01) -> None:
        super().__init__(params, lr, betas, eps, weight_decay)


__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]
