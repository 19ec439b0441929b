"""``vyre.optim``: optimizers (SGD with momentum / Nesterov / weight decay, Adam, AdamW), learning-rate
schedules (StepLR, WarmupCosine) and gradient clipping by global norm, on vyre arrays. See docs/nn.md.

Gradients are explicit: ``opt.step(grads)`` takes the list or dict that ``vyre.autograd.value_and_grad``
returns (no ``.grad`` on parameters, no ``zero_grad``) and updates each parameter's ``.value`` in place (the
same array object takes the new contents), so a whole training step compiles with ``vyre.compile``;
``opt.step(grads, skip_if=flag)`` skips on the device (a found-inf flag).
"""

from __future__ import annotations

from ._clip import clip_grad_norm
from ._optimizers import SGD, Adam, AdamW, Optimizer
from ._schedules import LRScheduler, StepLR, WarmupCosine

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "LRScheduler", "StepLR", "WarmupCosine", "clip_grad_norm"]
