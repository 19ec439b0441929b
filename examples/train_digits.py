"""Train a small CNN on scikit-learn's digits (1,797 8x8 images) and print its held-out accuracy.

The model is vyre.nn modules (Conv2d 1->16 3x3, ReLU, MaxPool2d 2, Linear 256->10); gradients come from
vyre.autograd.value_and_grad; the whole training step (forward, backward, Adam) is one ``vyre.compile``
trace, replayed as one GPU submission per mini-batch. Adam is written inside the step with the learning
rate (a cosine schedule) and the bias corrections passed as an array argument, so a replay uses this
step's values. Exits 1 below 97% held out. ``--epochs N`` (default 15) trains longer or shorter.
Needs scikit-learn (the data set) and tqdm (the progress bar).
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
import vyre.nn.functional as F
import vyre.random as vr
from vyre.autograd import value_and_grad

try:
    from sklearn.datasets import load_digits
except ImportError:
    print("train_digits needs scikit-learn for the data set: pip install scikit-learn")
    sys.exit(1)

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=15)
args = parser.parse_args()
BATCH, LR, B1, B2, EPS = 100, 0.02, 0.9, 0.999, 1e-8

gpu = vyre.WgpuBackend.acquire()
digits = load_digits()
# padded once here to 10x10: the same as Conv2d(padding=1), without padding every batch in every step
images = np.pad((digits.data / 16.0).astype(np.float32).reshape(-1, 1, 8, 8), ((0, 0), (0, 0), (1, 1), (1, 1)))
labels = digits.target.astype(np.int32)
order = np.asarray(vr.permutation(vr.key(1797), len(labels), device=gpu))  # a fixed split
train, test = order[:1400], order[1400:]

with xp.use(gpu):
    k1, k2 = (vr.split(vr.key(0))[i] for i in range(2))
    model = nn.Sequential(nn.Conv2d(1, 16, 3, key=k1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(16 * 4 * 4, 10, key=k2))
    grad = value_and_grad(lambda values, x, y: F.cross_entropy(nn.functional_call(model, values, x), y))

    @vyre.compile
    def train_step(values, m, v, x, y, hp):
        """One Adam step on one mini-batch; hp = [lr / (1 - b1^t), 1 / sqrt(1 - b2^t)]."""
        loss, g = grad(values, x, y)
        m = {k: B1 * m[k] + (1.0 - B1) * g[k] for k in values}
        v = {k: B2 * v[k] + (1.0 - B2) * (g[k] * g[k]) for k in values}
        values = {k: values[k] - hp[0] * m[k] / (xp.sqrt(v[k]) * hp[1] + EPS) for k in values}
        return values, m, v, loss

    batches = [(xp.asarray(images[train[j:j + BATCH]]), xp.asarray(labels[train[j:j + BATCH]]))
               for j in range(0, len(train), BATCH)]
    values = model.parameter_values()
    m = {k: xp.zeros_like(a) for k, a in values.items()}
    v = {k: xp.zeros_like(a) for k, a in values.items()}
    steps = args.epochs * len(batches)
    start = time.perf_counter()
    with tqdm(total=steps, desc="digits CNN", unit="step") as bar:
        for i in range(steps):
            lr = LR * 0.5 * (1.0 + math.cos(math.pi * i / steps))
            t = i + 1
            hp = xp.asarray(np.array([lr / (1.0 - B1 ** t), 1.0 / math.sqrt(1.0 - B2 ** t)], np.float32))
            x, y = batches[i % len(batches)]
            values, m, v, loss = train_step(values, m, v, x, y, hp)
            if t % len(batches) == 0:  # reading the loss waits for the GPU: once an epoch
                bar.set_postfix(loss=f"{float(loss):.4f}")
            bar.update()
    elapsed = time.perf_counter() - start
    logits = nn.functional_call(model, values, xp.asarray(images[test]))
    predicted = np.asarray(xp.argmax(logits, axis=1))

accuracy = float((predicted == labels[test]).mean())
print(f"{steps} steps ({args.epochs} epochs of {len(batches)} batches of {BATCH}) in {elapsed:.1f} s, "
      f"{train_step.replays} of them replays of one trace")
print(f"held-out accuracy: {accuracy:.4f} on {len(test)} images: {'OK' if accuracy >= 0.97 else 'MISMATCH'}")
sys.exit(0 if accuracy >= 0.97 else 1)
