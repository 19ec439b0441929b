"""Learning-rate schedules: each sets ``optimizer.lr`` from a closed form of its step count ``t``
(``t = 0`` at construction, one more per :meth:`LRScheduler.step`), like PyTorch's ``LambdaLR``. Call
``step()`` after each optimizer step (or epoch, for epoch-based schedules)."""

from __future__ import annotations

import math

from ..errors import ArgumentTypeError, InvalidArgumentError
from ._optimizers import Optimizer


def _count(v: object, name: str, low: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < low:
        raise InvalidArgumentError(f"{name} must be an int >= {low}, not {v!r}", fix=f"{name}={max(low, 1)}")
    return v


class LRScheduler:
    """``optimizer.lr = lr_at(t)``; ``base_lr`` is the optimizer's lr when the schedule was made."""

    def __init__(self, optimizer: Optimizer) -> None:
        if not isinstance(optimizer, Optimizer):
            raise ArgumentTypeError(f"a schedule takes a vyre.optim optimizer, not {type(optimizer).__name__}",
                                    fix="StepLR(Adam(model.parameters()), step_size=10)")
        self.optimizer, self.base_lr, self.t = optimizer, optimizer.lr, 0
        optimizer.lr = self.lr_at(0)

    def lr_at(self, t: int) -> float:
        raise NotImplementedError

    def step(self) -> float:
        """Advance one step; the new learning rate (also ``optimizer.lr``)."""
        self.t += 1
        self.optimizer.lr = self.lr_at(self.t)
        return self.optimizer.lr


class StepLR(LRScheduler):
    """``base_lr * gamma ** (t // step_size)`` (PyTorch's StepLR)."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1) -> None:
        self.step_size = _count(step_size, "step_size", 1)
        if isinstance(gamma, bool) or not isinstance(gamma, int | float) or not gamma > 0:
            raise InvalidArgumentError(f"gamma must be > 0, not {gamma!r}", fix="gamma=0.1")
        self.gamma = float(gamma)
        super().__init__(optimizer)

    def lr_at(self, t: int) -> float:
        return self.base_lr * self.gamma ** (t // self.step_size)


class WarmupCosine(LRScheduler):
    """Linear warm-up then cosine decay (the transformers library's ``get_cosine_schedule_with_warmup``,
    with a floor): ``base_lr * t / warmup_steps`` for ``t < warmup_steps``, then
    ``min_lr + (base_lr - min_lr) * (1 + cos(pi * p)) / 2`` with ``p = (t - warmup_steps) / (total_steps -
    warmup_steps)`` clipped to [0, 1] (``min_lr`` after ``total_steps``)."""

    def __init__(self, optimizer: Optimizer, warmup_steps: int, total_steps: int, min_lr: float = 0.0) -> None:
        self.warmup_steps = _count(warmup_steps, "warmup_steps", 0)
        self.total_steps = _count(total_steps, "total_steps", self.warmup_steps + 1)
        if isinstance(min_lr, bool) or not isinstance(min_lr, int | float) or min_lr < 0 or min_lr > optimizer.lr:
            raise InvalidArgumentError(f"min_lr must be in [0, lr], not {min_lr!r}", fix="min_lr=0.0")
        self.min_lr = float(min_lr)
        super().__init__(optimizer)

    def lr_at(self, t: int) -> float:
        if t < self.warmup_steps:
            return self.base_lr * t / self.warmup_steps
        p = min(1.0, (t - self.warmup_steps) / (self.total_steps - self.warmup_steps))
        return self.min_lr + (self.base_lr - self.min_lr) * 0.5 * (1.0 + math.cos(math.pi * p))


__all__ = ["LRScheduler", "StepLR", "WarmupCosine"]
