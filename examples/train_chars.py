"""Train a small character-level transformer on Python's own help topics, then sample text from it.

The corpus is ``pydoc_data.topics`` (shipped with Python: about 465,000 characters of English), its values
joined in sorted key order; the vocabulary is its sorted set of characters; the last 10% is held out. The
model is ``vyre.nn.GPT``: 2 pre-norm decoder layers (d_model 128, 4 heads, a 4x GELU MLP), learned
positions, context 128, an untied head. Every training step (forward, backward, AdamW with a warm-up and
cosine learning rate: ``vyre.optim.AdamW`` and ``WarmupCosine``) is one ``vyre.compile`` trace replayed as
one GPU submission, the model and optimizer closed over, their state updated in place on the device.
``--amp`` runs the model under ``vyre.amp.autocast`` with a ``GradScaler`` (a step with an inf/NaN gradient
is skipped on the device and the scale backs off).

Prints the train and held-out loss, then ``--sample`` characters drawn at ``--temperature`` from a seeded
numpy Generator. Exits 1 unless the held-out loss fell below the starting one by ``--min-drop``.
Smaller and shorter: ``--steps 20 --d-model 32 --context 32 --batch 8``. Needs tqdm (the progress bar).
"""

import argparse
import math
import sys
import time

import numpy as np
from tqdm import tqdm

import vyre
import vyre.array as xp
import vyre.nn as nn
import vyre.optim as optim
import vyre.random as vr
from vyre.autograd import value_and_grad

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--steps", type=int, default=1000)
parser.add_argument("--batch", type=int, default=32)
parser.add_argument("--context", type=int, default=128)
parser.add_argument("--d-model", type=int, default=128)
parser.add_argument("--heads", type=int, default=4)
parser.add_argument("--layers", type=int, default=2)
parser.add_argument("--lr", type=float, default=3e-3)
parser.add_argument("--warmup", type=int, default=None, help="warm-up steps (default: 5%% of --steps)")
parser.add_argument("--eval-batches", type=int, default=8, help="held-out batches for the held-out loss")
parser.add_argument("--sample", type=int, default=300, help="characters to sample after training")
parser.add_argument("--temperature", type=float, default=0.8)
parser.add_argument("--prompt", default="The ")
parser.add_argument("--seed", type=int, default=0)
parser.add_argument("--min-drop", type=float, default=0.5, help="the held-out loss must fall at least this much")
parser.add_argument("--amp", action="store_true", help="mixed precision: vyre.amp.autocast + GradScaler")
args = parser.parse_args()

# ---- the corpus: ids into the sorted set of characters, a fixed split -----------------------------------
from pydoc_data.topics import topics  # noqa: E402 - after argparse: --help needs no corpus

text = "".join(topics[k] for k in sorted(topics))
vocab = "".join(sorted(set(text)))
lut = {c: i for i, c in enumerate(vocab)}
ids = np.fromiter((lut[c] for c in text), np.int32, len(text))
cut = int(len(ids) * 0.9)
train_ids, held_ids = ids[:cut], ids[cut:]
if any(c not in lut for c in args.prompt):
    print(f"the prompt has characters outside the corpus: {sorted(set(args.prompt) - set(lut))}")
    sys.exit(2)


def batch(data, rng, n, length):
    """``n`` windows of ``length`` ids at random starts, and the same windows one id later."""
    at = rng.integers(0, len(data) - length - 1, size=n)[:, None] + np.arange(length)
    return data[at], data[at + 1]


amp = scaler = None
if args.amp:
    try:
        import vyre.amp as amp
    except ImportError:
        print("--amp needs vyre.amp (autocast, GradScaler), which this vyre does not have yet")
        sys.exit(2)
    scaler = amp.GradScaler()

gpu = vyre.default_backend()  # the GPU adapter; also where vyre.amp's scaler launches its kernels
rng = np.random.default_rng(args.seed)
with xp.use(gpu):
    model = nn.GPT(len(vocab), args.context, args.d_model, args.heads, args.layers, key=vr.key(args.seed))

    opt = optim.AdamW(model, lr=args.lr, weight_decay=0.01)
    warm = max(1, args.warmup if args.warmup is not None else args.steps // 20)
    sched = optim.WarmupCosine(opt, warm, args.steps)

    def loss_of(values, x, y):
        if amp is None:
            return nn.lm_loss(nn.functional_call(model, values, x), y)
        with amp.autocast():
            loss = nn.lm_loss(nn.functional_call(model, values, x), y)
        return scaler.scale(loss), loss        # differentiate the scaled loss; report the loss

    grad = value_and_grad(loss_of, has_aux=amp is not None)

    @vyre.compile
    def train_step(x, y):
        """One AdamW step on one batch; the model, optimizer and scaler are closed over (their state stays
        on the device and a replay updates it in place)."""
        out, g = grad(model.parameter_values(), x, y)
        if amp is None:
            opt.step(g)
            return out
        scaler.step(opt, g)                    # unscaled; skipped on the device when an inf/NaN was found
        scaler.update()
        return out[1]

    evaluate = vyre.compile(lambda values, x, y: nn.lm_loss(nn.functional_call(model, values, x), y))
    held = [tuple(xp.asarray(a) for a in batch(held_ids, np.random.default_rng(1), args.batch, args.context))
            for _ in range(args.eval_batches)]

    def held_out_loss():
        losses = [evaluate(model.parameter_values(), x, y) for x, y in held]
        return sum(float(loss) for loss in losses) / len(losses)

    start_loss = held_out_loss()
    every = max(1, args.steps // 10)
    start = time.perf_counter()
    recent = []
    with tqdm(total=args.steps, desc="chars GPT", unit="step") as bar:
        for i in range(args.steps):
            t = i + 1
            x, y = (xp.asarray(a) for a in batch(train_ids, rng, args.batch, args.context))
            recent.append(train_step(x, y))
            sched.step()                           # the next lr: written to the optimizer's device copy
            if t % every == 0 or t == args.steps:   # reading a loss waits for the GPU: ten times a run
                train_loss = sum(float(a) for a in recent) / len(recent)
                recent = []
                bar.set_postfix(train=f"{train_loss:.3f}", held_out=f"{held_out_loss():.3f}")
            bar.update()
    elapsed = time.perf_counter() - start
    end_loss = held_out_loss()
    if not math.isfinite(end_loss):
        print(f"the held-out loss is {end_loss} after {args.steps} steps: MISMATCH")
        sys.exit(1)

    # ---- sampling: one compiled forward over a fixed (1, context) window ----------------------------
    # the window is left-aligned and padded on the right: position p's logits see ids 0..p only (causal),
    # so the padding never matters and every call has one shape (one trace, replays after it)
    logits_of = vyre.compile(lambda values, window: nn.functional_call(model, values, window))
    sampler = np.random.default_rng(args.seed)
    out = [lut[c] for c in args.prompt]
    for _ in range(args.sample):
        ctx = out[-args.context:]
        window = np.zeros((1, args.context), np.int32)
        window[0, :len(ctx)] = ctx
        logits = np.asarray(logits_of(model.parameter_values(), xp.asarray(window)))[0, len(ctx) - 1].astype(np.float64)
        p = np.exp((logits - logits.max()) / args.temperature)
        out.append(int(sampler.choice(len(vocab), p=p / p.sum())))

print(f"{args.steps} steps (batch {args.batch}, context {args.context}, d_model {args.d_model}, "
      f"{'mixed precision' if amp else 'float32'}) in {elapsed:.1f} s, {train_step.replays} of them replays")
print(f"train loss {train_loss:.4f}; held-out loss {start_loss:.4f} -> {end_loss:.4f}"
      + (f"; loss scale {scaler.get_scale():g}" if scaler is not None else ""))
print("sample:", repr("".join(vocab[i] for i in out)))
ok = end_loss <= start_loss - args.min_drop and math.isfinite(end_loss)
if scaler is not None and scaler.get_scale() < 1.0:   # every recent step found an inf/NaN and was skipped
    print(f"the loss scale fell to {scaler.get_scale():g}: float16 overflowed in the forward pass")
    ok = False
print("held-out loss fell:", "OK" if ok else "MISMATCH")
sys.exit(0 if ok else 1)
