"""Train a small character-level transformer on Python's own help topics, then sample text from it.

The corpus is ``pydoc_data.topics`` (shipped with Python: about 465,000 characters of English), its values
joined in sorted key order; the vocabulary is its sorted set of characters; the last 10% is held out. The
model is ``vyre.nn.GPT``: 2 pre-norm decoder layers (d_model 128, 4 heads, a 4x GELU MLP), learned
positions, context 128, an untied head. Every training step (forward, backward, AdamW with a warm-up and
cosine learning rate) is one ``vyre.compile`` trace replayed as one GPU submission; AdamW is written in the
step with the learning rate and bias corrections passed as an array (``vyre.optim.AdamW`` puts those host
floats into its kernel, which a replay would repeat unchanged). ``--amp`` runs the model under
``vyre.amp.autocast`` with a ``GradScaler`` (the scaler's state passed to the compiled step).

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
B1, B2, EPS, WD = 0.9, 0.999, 1e-8, 0.01

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


def learning_rate(i):
    """Linear warm-up, then cosine to 0 (vyre.optim.WarmupCosine's closed form), for step i (0-based)."""
    warm = max(1, args.warmup if args.warmup is not None else args.steps // 20)
    if i < warm:
        return args.lr * (i + 1) / warm
    p = min(1.0, (i - warm) / max(1, args.steps - warm))
    return args.lr * 0.5 * (1.0 + math.cos(math.pi * p))


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

    def loss_of(values, x, y):
        if amp is None:
            return nn.lm_loss(nn.functional_call(model, values, x), y)
        with amp.autocast():
            loss = nn.lm_loss(nn.functional_call(model, values, x), y)
        return scaler.scale(loss), loss        # differentiate the scaled loss; report the loss

    grad = value_and_grad(loss_of, has_aux=amp is not None)

    @vyre.compile
    def train_step(values, m, v, x, y, hp, scaler_state):
        """One AdamW step; hp = [lr, lr / (1 - b1^t), 1 / sqrt(1 - b2^t)] (PyTorch's AdamW)."""
        out, g = grad(values, x, y)
        if amp is not None:
            loss, g = out[1], scaler.unscale_(g)
        else:
            loss = out
        new_m = {k: B1 * m[k] + (1.0 - B1) * g[k] for k in values}
        new_v = {k: B2 * v[k] + (1.0 - B2) * (g[k] * g[k]) for k in values}
        new = {k: values[k] * (1.0 - hp[0] * WD) - hp[1] * new_m[k] / (xp.sqrt(new_v[k]) * hp[2] + EPS)
               for k in values}
        if amp is not None:    # an inf/NaN gradient: keep the old values (the step is skipped), shrink the scale
            skip = scaler.found_inf()
            new, new_m, new_v = ({k: xp.where(skip, old[k], d[k]) for k in values}
                                 for d, old in ((new, values), (new_m, m), (new_v, v)))
            scaler.update()
        return new, new_m, new_v, loss

    evaluate = vyre.compile(lambda values, x, y: nn.lm_loss(nn.functional_call(model, values, x), y))
    held = [tuple(xp.asarray(a) for a in batch(held_ids, np.random.default_rng(1), args.batch, args.context))
            for _ in range(args.eval_batches)]

    def held_out_loss(values):
        losses = [evaluate(values, x, y) for x, y in held]
        return sum(float(loss) for loss in losses) / len(losses)

    values = model.parameter_values()
    m = {k: xp.zeros_like(a) for k, a in values.items()}
    v = {k: xp.zeros_like(a) for k, a in values.items()}
    state = scaler.arrays if scaler is not None else None
    start_loss = held_out_loss(values)
    every = max(1, args.steps // 10)
    start = time.perf_counter()
    recent = []
    with tqdm(total=args.steps, desc="chars GPT", unit="step") as bar:
        for i in range(args.steps):
            t = i + 1
            lr = learning_rate(i)
            hp = xp.asarray(np.array([lr, lr / (1.0 - B1 ** t), 1.0 / math.sqrt(1.0 - B2 ** t)], np.float32))
            x, y = (xp.asarray(a) for a in batch(train_ids, rng, args.batch, args.context))
            values, m, v, loss = train_step(values, m, v, x, y, hp, state)
            recent.append(loss)
            if t % every == 0 or t == args.steps:   # reading a loss waits for the GPU: ten times a run
                train_loss = sum(float(a) for a in recent) / len(recent)
                recent = []
                bar.set_postfix(train=f"{train_loss:.3f}", held_out=f"{held_out_loss(values):.3f}")
            bar.update()
    elapsed = time.perf_counter() - start
    end_loss = held_out_loss(values)

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
        logits = np.asarray(logits_of(values, xp.asarray(window)))[0, len(ctx) - 1].astype(np.float64)
        p = np.exp((logits - logits.max()) / args.temperature)
        out.append(int(sampler.choice(len(vocab), p=p / p.sum())))

print(f"{args.steps} steps (batch {args.batch}, context {args.context}, d_model {args.d_model}, "
      f"{'mixed precision' if amp else 'float32'}) in {elapsed:.1f} s, {train_step.replays} of them replays")
print(f"train loss {train_loss:.4f}; held-out loss {start_loss:.4f} -> {end_loss:.4f}")
print("sample:", repr("".join(vocab[i] for i in out)))
ok = end_loss <= start_loss - args.min_drop and math.isfinite(end_loss)
print("held-out loss fell:", "OK" if ok else "MISMATCH")
sys.exit(0 if ok else 1)
