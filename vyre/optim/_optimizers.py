"""SGD, Adam and AdamW, usable eagerly and inside ``vyre.compile``.

Each parameter's update is array expressions of the parameter, its gradient and its state (momentum
buffer, moments), so the lazy layer fuses each written array into one kernel; :meth:`Optimizer.step`
evaluates every new array of every parameter together: one submission per step. Independent arrays of one
size evaluated together share a multi-output kernel (the array layer's grouping), so a step dispatches
about one kernel per parameter plus one for the step counts.

**State on the device, updated in place.** Everything a step reads that changes between steps lives in
device arrays made with the optimizer: the moments (zeros, as PyTorch's first step makes them), and one
small vector ``[lr, t_0, ..., t_{P-1}]`` (the learning rate and each parameter's step count). The bias
corrections are computed on the device from the step counts (``1 - b^t`` as ``-expm1(t log b)``, in
float32, as PyTorch's ``capturable=True``), so a step's kernels and their inputs are the same at every
step: a compiled training step (``vyre.compile`` around forward, backward and ``opt.step``) replays
without a host value baked in. Parameters and state arrays keep their identity: a step gives the same
array objects (``p.value``, ``opt.state[i]["exp_avg"]``) the new contents, which ``vyre.compile`` writes
back into their own buffers on replay. Set ``opt.lr`` (or step a schedule) outside a compiled function:
it writes the device copy.

Gradients are explicit (no ``.grad`` on parameters, no ``zero_grad``): ``step(grads)`` takes what
``vyre.autograd.value_and_grad`` returns: a list/tuple in the optimizer's parameter order, or a dict keyed
by the names the optimizer was built with (``Adam(model.named_parameters())`` or a module). A gradient of
``None`` (or a name left out of a dict) skips that parameter this step, as PyTorch skips ``grad is None``.
``step(grads, skip_if=flag)`` (a 0-d bool array, e.g. a GradScaler's found-inf flag) leaves every
parameter and all state unchanged when the flag is true, selected on the device (no download).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

import vyre.array as xp
from vyre.array import Array

from ..backends import recording
from ..errors import ArgumentTypeError, InvalidArgumentError, TraceError
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
    """The shared part: the parameters (with names), ``lr`` (a float a schedule may change; its device copy
    is what the kernels read), per-parameter state (``state[i]``: a dict of arrays on the parameters'
    backend), the step counts and the gradient matching."""

    #: state arrays each parameter gets (zeros, the parameter's shape and dtype)
    _slots: tuple[str, ...] = ()

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
        dev = named[0][1].value.device
        for name, p in named:
            if p.value.device is not dev:
                raise InvalidArgumentError(f"{type(self).__name__}: {name!r} is on another backend than "
                                           f"{named[0][0]!r}", fix="one optimizer per backend")
        self.names: list[str] = [n for n, _ in named]
        self.params: list[Parameter] = [p for _, p in named]
        self.device = dev
        self._lr = _hyper(lr, "lr", 0.0)
        # [lr, t_0 .. t_{P-1}, skipped]: what changes between steps, read by the kernels (float32: exact counts to 2^24)
        hyper = np.zeros(len(self.params) + 2, np.float32)
        hyper[0] = self._lr
        self._hyper: Array = xp.asarray(hyper, device=dev)
        self.state: list[dict[str, Array]] = [
            {n: xp.zeros(p.shape, dtype=p.dtype, device=dev) for n in self._slots} for p in self.params]
        self._ones: Array | None = None

    @property
    def lr(self) -> float:
        """The learning rate (a float). Setting it writes the device copy the kernels read: do it outside a
        compiled function (a schedule's ``step()`` too)."""
        return self._lr

    @lr.setter
    def lr(self, value: float) -> None:
        v = _hyper(value, "lr", 0.0)
        if recording.active() is not None:
            raise TraceError("setting an optimizer's lr (or stepping a schedule) inside a compiled function would "
                             "be done once, when traced", fix="set opt.lr / call sched.step() outside vyre.compile")
        self._lr = v
        self.device.upload_resident(self._hyper.handle, np.float32(v).tobytes())

    def step_counts(self) -> list[int]:
        """Each parameter's step count (one download)."""
        return [int(t) for t in np.asarray(self._hyper)[1:-1]]

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

    def step(self, grads: Sequence[Array | None] | Mapping[str, Array | None], *,
             skip_if: Array | None = None) -> None:
        """One update of every parameter that has a gradient, evaluated at once (one submission).
        ``skip_if``: a 0-d bool array; where it is true nothing changes (see the module doc)."""
        matched = self._matched(grads)
        if skip_if is not None and (not isinstance(skip_if, Array) or skip_if.shape != ()
                                    or skip_if.dtype != xp.bool or skip_if.device is not self.device):
            raise ArgumentTypeError("step: skip_if must be a 0-d bool vyre array on the parameters' backend",
                                    fix="pass the found-inf flag (e.g. GradScaler's), or None")
        n = len(self.params)
        if all(g is not None for g in matched):
            if self._ones is None:  # 1 for every step count, 0 for lr and the skip flag
                idx = xp.arange(n + 2, device=self.device)
                self._ones = xp.astype((idx > 0) & (idx <= n), xp.float32).evaluate()
            inc = self._ones
        else:
            inc = xp.asarray(np.array([0, *(g is not None for g in matched), 0], np.float32), device=self.device)
        if skip_if is None:
            hyper = self._hyper + inc
        else:  # the counts stay, the last slot holds the flag the parameters' kernels select with
            last = xp.arange(n + 2, device=self.device) == n + 1
            hyper = xp.where(last, xp.astype(skip_if, xp.float32), xp.where(skip_if, self._hyper, self._hyper + inc))
        # computed once, first, and read as one buffer by every parameter's kernel (5 inputs, 3 outputs: one kernel)
        hyper = hyper._deferred()
        skipped = None if skip_if is None else hyper[n + 1] != 0.0
        lr = hyper[0]
        written: list[Array] = []
        for i, (p, g) in enumerate(zip(self.params, matched, strict=True)):
            if g is None:
                continue
            st = self.state[i]
            new_p, new_state = self._update(p.value, xp.astype(g, p.dtype, copy=False), st, lr, hyper[i + 1])
            if new_p.dtype != p.dtype:
                new_p = xp.astype(new_p, p.dtype)
            if skipped is not None:
                new_p = xp.where(skipped, p.value, new_p)
                new_state = {k: xp.where(skipped, st[k], v) for k, v in new_state.items()}
            written += [p.value._adopt(new_p), *(st[k]._adopt(v) for k, v in new_state.items())]
        written.append(self._hyper._adopt(hyper))
        xp.evaluate(written)

    def _update(self, p: Array, g: Array, st: dict[str, Array], lr: Array, t: Array
                ) -> tuple[Array, dict[str, Array]]:
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
        if self.momentum:
            self._slots = ("momentum_buffer",)
            for i, p in enumerate(self.params):
                self.state[i]["momentum_buffer"] = xp.zeros(p.shape, dtype=p.dtype, device=self.device)

    def _update(self, p: Array, g: Array, st: dict[str, Array], lr: Array, t: Array
                ) -> tuple[Array, dict[str, Array]]:
        lr = xp.astype(lr, p.dtype)
        if self.weight_decay:
            g = g + self.weight_decay * p
        if not self.momentum:
            return p - lr * g, {}
        # b = g on a parameter's first step (PyTorch clones the gradient), then the momentum rule
        buf = xp.where(t == 1.0, g, self.momentum * st["momentum_buffer"] + (1.0 - self.dampening) * g)
        d = g + self.momentum * buf if self.nesterov else buf
        return p - lr * d, {"momentum_buffer": buf}


class Adam(Optimizer):
    """PyTorch's Adam: ``g += weight_decay * p`` (L2), ``m = b1 m + (1 - b1) g``, ``v = b2 v + (1 - b2) g^2``,
    ``p -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)``. The bias corrections are computed on the
    device from the step count (float32, ``1 - b^t = -expm1(t log b)`` with ``log b`` from the host in
    float64), so no host value enters the kernels and later steps build nothing."""

    decoupled = False
    _slots = ("exp_avg", "exp_avg_sq")

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0) -> None:
        super().__init__(params, lr)
        if not isinstance(betas, tuple | list) or len(betas) != 2:
            raise ArgumentTypeError(f"betas must be a pair, not {betas!r}", fix="betas=(0.9, 0.999)")
        self.betas = (_hyper(betas[0], "betas[0]", 0.0, 1.0, open_hi=True),
                      _hyper(betas[1], "betas[1]", 0.0, 1.0, open_hi=True))
        self.eps = _hyper(eps, "eps", 0.0)
        self.weight_decay = _hyper(weight_decay, "weight_decay", 0.0)
        # log b in float64 (b = 0: b^t = 0 for t >= 1, -inf * t -> expm1 = -1)
        self._log_b = tuple(math.log(b) if b > 0 else -math.inf for b in self.betas)

    def _update(self, p: Array, g: Array, st: dict[str, Array], lr: Array, t: Array
                ) -> tuple[Array, dict[str, Array]]:
        b1, b2 = self.betas
        if self.weight_decay and not self.decoupled:
            g = g + self.weight_decay * p
        m = b1 * st["exp_avg"] + (1.0 - b1) * g
        v = b2 * st["exp_avg_sq"] + (1.0 - b2) * (g * g)
        c1 = -F.expm1(t * self._log_b[0])  # 1 - b1^t
        c2 = -F.expm1(t * self._log_b[1])
        step_size = xp.astype(lr / c1, p.dtype)
        inv_c2 = xp.astype(1.0 / F.sqrt(c2), p.dtype)
        base = p * (1.0 - xp.astype(lr, p.dtype) * self.weight_decay) if self.decoupled and self.weight_decay else p
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
