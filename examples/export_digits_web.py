"""Train the digits CNN (as examples/train_digits.py does) and export its forward pass for a web page.

Writes into examples/digits_web/ (or ``--out DIR``): ``digits_cnn.js`` (a dependency-free ES module: every
program of the forward pass, run with WebGPU), ``digits_cnn.safetensors`` (the trained weights, beside the
module), ``digits_cnn.json`` (the manifest), ``digits_cnn.<k>.wgsl`` and ``digits.json`` (32 held-out digits,
their labels and the classes vyre predicts for them in Python). ``index.html`` (hand-written, not generated)
draws those digits, lets you draw one, and classifies them in the browser:

    cd examples/digits_web && python -m http.server 8000     # then open http://localhost:8000 in Chrome

The export is ``vyre.export.export_function(forward, images, ...)``: ``forward`` is traced on a batch of 32
padded 10x10 images and every program it runs (im2col, matmuls, max-pool, argmax) is exported in order,
with the weights it closes over. Checks itself: the exported unit run by vyre gives the forward pass's
classes (logits within 1e-5), and the held-out accuracy is at least 95%; exits 1 otherwise.
``--epochs N`` (default 15). Needs scikit-learn (the data set).
"""

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

import vyre
import vyre.array as xp
import vyre.nn as nn
import vyre.nn.functional as F
import vyre.random as vr
from vyre.autograd import value_and_grad
from vyre.export import export_function, from_function

try:
    from sklearn.datasets import load_digits
except ImportError:
    print("export_digits_web needs scikit-learn for the data set: pip install scikit-learn")
    sys.exit(1)

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--epochs", type=int, default=15)
parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "digits_web")
args = parser.parse_args()
BATCH, LR, B1, B2, EPS, SHOWN = 100, 0.02, 0.9, 0.999, 1e-8, 32

gpu = vyre.WgpuBackend.acquire()
digits = load_digits()
# padded once to 10x10: the same as Conv2d(padding=1); the page pads the same way
images = np.pad((digits.data / 16.0).astype(np.float32).reshape(-1, 1, 8, 8), ((0, 0), (0, 0), (1, 1), (1, 1)))
labels = digits.target.astype(np.int32)
order = np.asarray(vr.permutation(vr.key(1797), len(labels), device=gpu))  # the split of train_digits.py
train, test = order[:1400], order[1400:]

with xp.use(gpu):
    k1, k2 = (vr.split(vr.key(0))[i] for i in range(2))
    model = nn.Sequential(nn.Conv2d(1, 16, 3, key=k1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(16 * 4 * 4, 10, key=k2))
    grad = value_and_grad(lambda values, x, y: F.cross_entropy(nn.functional_call(model, values, x), y))

    @vyre.compile
    def train_step(values, m, v, x, y, hp):
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
    for i in range(steps):
        lr = LR * 0.5 * (1.0 + math.cos(math.pi * i / steps))
        t = i + 1
        hp = xp.asarray(np.array([lr / (1.0 - B1 ** t), 1.0 / math.sqrt(1.0 - B2 ** t)], np.float32))
        values, m, v, _ = train_step(values, m, v, *batches[i % len(batches)], hp)
    trained = {k: a.evaluate() for k, a in values.items()}

    def forward(images):
        logits = nn.functional_call(model, trained, images)
        return {"logits": logits, "classes": xp.argmax(logits, axis=1)}

    predicted = np.asarray(forward(xp.asarray(images[test]))["classes"])
    shown = images[test[:SHOWN]]
    manifest = export_function(forward, shown, out_dir=args.out, name="digits_cnn")
    # the same unit, run by vyre: what the module must reproduce in the browser
    unit_out = from_function(forward, shown).run(gpu, {"images": shown})
    direct = {k: np.asarray(a) for k, a in forward(xp.asarray(shown)).items()}

(args.out / "digits.json").write_text(json.dumps({
    "images": [[int(p) for p in d] for d in digits.data[test[:SHOWN]].astype(int)],
    "labels": labels[test[:SHOWN]].tolist(), "vyre_classes": direct["classes"].tolist(),
    "vyre_logits": np.round(direct["logits"], 6).tolist()}) + "\n", encoding="utf-8")
accuracy = float((predicted == labels[test]).mean())
same = bool(np.array_equal(unit_out["classes"], direct["classes"]))
err = float(np.abs(unit_out["logits"] - direct["logits"]).max())
size = sum(p.stat().st_size for p in args.out.iterdir() if p.name.startswith("digits"))
print(f"{steps} training steps; held-out accuracy {accuracy:.4f} on {len(test)} images")
print(f"exported {manifest.name} and {len(list(args.out.glob('digits_cnn.*.wgsl')))} WGSL files, "
      f"{size / 1024:.0f} KiB in all, into {args.out}")
ok = accuracy >= 0.95 and same and err <= 1e-5
print(f"the exported unit run by vyre: same classes {same}, logits max abs error {err:.2e}: "
      f"{'OK' if ok else 'MISMATCH'}")
sys.exit(0 if ok else 1)
