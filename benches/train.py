"""Training steps: time per step of a whole step (forward, backward, optimizer update), same process.

Rows (family ``train``): (a) an MLP 784-1024-1024-10, batch 512, AdamW; (b) the digits CNN (Conv2d(1, 16,
3), ReLU, MaxPool2d(2), Linear(256, 10) on 10x10 images), batch 256, Adam; (c) the character transformer of
examples/train_chars.py (2 layers, d_model 128, 4 heads, context 128), batch 32, AdamW (its torch and JAX
versions: benches/_train_transformer.py). The same batch is used at every step (the data pipeline is not what
is measured); every framework starts from the same initial weights.

* ``vyre``: the step under ``vyre.compile`` (one replayed submission), then ``backend.flush()``;
* ``vyre_eager``: the same step without ``vyre.compile``; ``vyre_amp``: compiled, under
  ``vyre.amp.autocast`` with a ``GradScaler`` (where vyre.amp exists);
* ``torch``: torch eager (``loss.backward(); opt.step()``, then synchronize), ``torch_graphs``: the whole
  step captured with ``torch.cuda.graph`` (optimizer ``capturable=True``), ``jax``: ``jax.jit`` of the step
  (value_and_grad and the same AdamW/Adam written in jax.numpy), ``block_until_ready``; all on CUDA, all in
  float32 (TF32 off in torch and JAX: vyre reaches no tensor cores through wgpu).
* On a CPU adapter (lavapipe): ``torch`` is torch eager on the CPU where torch imports, and ``numpy`` the MLP
  by hand (forward, backward and AdamW).

Each row checks that the compiled step's loss after 3 steps equals the eager step's (bit for bit) and is
within 1e-3 of torch's where torch runs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np

from ._harness import Context, Outcome, host_timing, record
from ._train_models import MODELS, Spec, jax_step, numpy_mlp_step, torch_step, vyre_init, vyre_trainer

NAME = "train"


def plan(ctx: Context) -> int:
    return len([m for m in MODELS if m.available()])


def _cpu_torch(ctx: Context) -> Any:
    """torch for a CPU eager baseline when the adapter is a CPU one (lavapipe) and torch imports; else None."""
    if "cpu" not in str(ctx.gpu.adapter_info.get("adapter_type", "")).lower():
        return None
    try:
        import torch
    except Exception:  # noqa: BLE001 - no torch: the numpy baseline stands in (the MLP)
        return None
    return torch


def _timed(ctx: Context, fn: Callable[[], object]) -> Any:
    return host_timing(fn, reps=ctx.reps, target_s=ctx.target_s * 10, max_inner=50)


def _row(ctx: Context, spec: Spec):
    import vyre

    gpu = ctx.gpu
    rng = np.random.default_rng(7)
    x, y = spec.data(rng, ctx.quick)
    base: dict[str, Outcome] = {}
    with vyre.use(gpu):
        init = vyre_init(spec)
        eager = vyre_trainer(spec, init, x, y, compiled=False)
        compiled = vyre_trainer(spec, init, x, y, compiled=True)
        amp = vyre_trainer(spec, init, x, y, compiled=True, amp=True)
        assert eager is not None and compiled is not None
        losses_e = [np.asarray(eager()) for _ in range(3)]
        losses_c = [np.asarray(compiled()) for _ in range(3)]
        same = all(a.tobytes() == b.tobytes() for a, b in zip(losses_e, losses_c, strict=True))
        check: dict[str, Any] = {"ok": same, "against": "the eager step's losses over 3 steps (bit for bit)",
                                 "losses": [float(v) for v in losses_c]}

        def run_compiled() -> None:
            compiled()
            gpu.flush()

        def run_eager() -> None:
            eager()
            gpu.flush()

        wall = _timed(ctx, run_compiled)
        base["vyre_eager"] = Outcome(_timed(ctx, run_eager), method="the same step without vyre.compile, flush")
        if amp is not None:
            def run_amp() -> None:
                amp()
                gpu.flush()
            base["vyre_amp"] = Outcome(_timed(ctx, run_amp), method="compiled, vyre.amp.autocast('float16') + "
                                                                     "GradScaler, flush")
        else:
            base["vyre_amp"] = Outcome.missing("vyre.amp not available")
    torch, dev = (ctx.base.torch, "cuda") if ctx.base.torch is not None else (_cpu_torch(ctx), "cpu")
    if torch is not None:
        t_step, t_graph, t_losses = torch_step(torch, spec, init, x, y, dev)
        base["torch"] = Outcome(_timed(ctx, t_step), method=f"torch eager on {dev}: zero_grad, loss.backward(), "
                                                             "opt.step()" + (", synchronize" if dev == "cuda" else ""))
        if t_graph is not None:
            base["torch_graphs"] = Outcome(_timed(ctx, t_graph), method="the whole step captured by torch.cuda.graph "
                                                                        "(capturable optimizer): replay, synchronize")
        else:
            base["torch_graphs"] = Outcome.missing("no CUDA device (torch on the CPU)")
        check["torch_losses"] = t_losses
        check["ok"] = check["ok"] and bool(np.allclose(check["losses"], t_losses, rtol=1e-3, atol=1e-4))
    else:
        base["torch"] = base["torch_graphs"] = Outcome.missing(ctx.base.torch_note)
    j = jax_step(spec, init, x, y)
    if isinstance(j, str):
        base["jax"] = Outcome.missing(j)
    else:
        base["jax"] = Outcome(_timed(ctx, j), method="jax.jit of value_and_grad + the optimizer, "
                                                     "block_until_ready")
    if spec.name == "mlp" and dev == "cpu":
        base["numpy"] = Outcome(_timed(ctx, numpy_mlp_step(init, x, y, spec)),
                                method="numpy float32: forward, backward and AdamW by hand")
    params = {"model": spec.describe, "batch": spec.batch(ctx.quick)}
    yield record(bench=NAME, name=f"train {spec.name} step, batch {spec.batch(ctx.quick)}",
                 metric=f"train.{spec.name}_step", params=params, unit="ms", scale=1e3,
                 vyre=Outcome(wall, method="vyre.compile of forward + value_and_grad + opt.step, flush"),
                 baselines=base, check=check)


def run(ctx: Context):
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX beside torch in one process
    for spec in MODELS:
        if spec.available():
            yield from _row(ctx, spec)
            ctx.release()
