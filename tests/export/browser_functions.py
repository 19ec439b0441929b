"""The browser check's traced functions (``vyre.export.export_function``): a 2-layer MLP and a softmax with a
bool mask (weights closed over), the digits CNN trained in the session, the committed example page
(examples/digits_web/: its module on its own digits, and index.html itself), and a tampered weights file.

* **function**: each exported module, run in the browser on inputs from a fixed seed, against the same
  function called by vyre on the session's GPU and against numpy (float64) under the stated tolerances.
* **cnn**: the digits CNN trained here (5 epochs of 14 mini-batches, Adam with a cosine rate: about 96% held
  out, 2-4 s on lavapipe), its forward pass exported on the first ``CNN_BATCH`` held-out digits; the browser
  must give **the same predicted classes** as vyre's forward pass (bit-exact) and logits within
  ``CNN_TOL`` of it and of a float64 numpy forward pass.
* **page**: examples/digits_web/digits_cnn.js as committed, on the 32 digits of its digits.json, against vyre's
  forward pass with the committed weights (safetensors) and the classes the page stores; and index.html
  loaded in an iframe, whose status line must report every prediction the same as vyre's.
* **tampered-weights**: the CNN module beside a copy of its weights with one bit flipped: it must refuse
  to run (the manifest's sha256).
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
from browser_cases import Case, load_manifest, tolerance_for

import vyre
import vyre.array as xp
import vyre.nn as nn
import vyre.nn.functional as F
import vyre.random as vr
from vyre.autograd import value_and_grad
from vyre.export import export_function
from vyre.ops.registry import EXACT, rel

PAGE = Path(__file__).resolve().parents[2] / "examples" / "digits_web"
CNN_BATCH = 360
CNN_EPOCHS = 5
#: logits of the browser against vyre on lavapipe (the same programs: FMA contraction apart) and against
#: float64 numpy (f32 sums of 9 and 256 products)
CNN_TOL = rel(1e-4, 2e-5)
B1, B2, EPS = 0.9, 0.999, 1e-8


def _digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        if os.environ.get("CI") == "true":
            raise
        return None  # scikit-learn (a test extra) missing locally: no digits cases (tests/extras.py's rule)
    d = load_digits()
    x = np.pad((d.data / 16.0).astype(np.float32).reshape(-1, 1, 8, 8), ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = d.target.astype(np.int32)
    order = np.asarray(vr.permutation(vr.key(1797), len(y), device=vyre.ReferenceBackend()))
    return x[order[:1400]], y[order[:1400]], x[order[1400:]], y[order[1400:]]


def cnn() -> nn.Module:
    k1, k2 = (vr.split(vr.key(0))[i] for i in range(2))
    return nn.Sequential(nn.Conv2d(1, 16, 3, key=k1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(16 * 4 * 4, 10, key=k2))


def train_cnn(gpu: Any, xtr: np.ndarray, ytr: np.ndarray, epochs: int = CNN_EPOCHS) -> tuple[nn.Module, dict]:
    """tests/nn/test_digits_cnn.py's training, shorter: (model, trained values)."""
    with xp.use(gpu):
        model = cnn()
        grad = value_and_grad(lambda values, x, y: F.cross_entropy(nn.functional_call(model, values, x), y))

        @vyre.compile
        def step(values, m, v, x, y, hp):
            _, g = grad(values, x, y)
            m = {k: B1 * m[k] + (1.0 - B1) * g[k] for k in values}
            v = {k: B2 * v[k] + (1.0 - B2) * (g[k] * g[k]) for k in values}
            return {k: values[k] - hp[0] * m[k] / (xp.sqrt(v[k]) * hp[1] + EPS) for k in values}, m, v

        batches = [(xp.asarray(xtr[j:j + 100]), xp.asarray(ytr[j:j + 100])) for j in range(0, len(ytr), 100)]
        values = model.parameter_values()
        m = {k: xp.zeros_like(a) for k, a in values.items()}
        v = {k: xp.zeros_like(a) for k, a in values.items()}
        steps = epochs * len(batches)
        for i in range(steps):
            lr = 0.02 * 0.5 * (1.0 + math.cos(math.pi * i / steps))
            hp = np.array([lr / (1.0 - B1 ** (i + 1)), 1.0 / math.sqrt(1.0 - B2 ** (i + 1))], np.float32)
            values, m, v = step(values, m, v, *batches[i % len(batches)], xp.asarray(hp))
        return model, {k: a.evaluate() for k, a in values.items()}


def cnn_numpy(w: dict[str, np.ndarray], x: np.ndarray) -> np.ndarray:
    """The CNN's logits in float64 numpy (Conv2d 3x3 valid on the padded images, ReLU, MaxPool 2, Linear)."""
    x = x.astype(np.float64)
    n = len(x)
    cols = np.stack([x[:, 0, dy:dy + 8, dx:dx + 8] for dy in range(3) for dx in range(3)], axis=-1)  # n,8,8,9
    conv = cols @ w["0.weight"].reshape(16, 9).T.astype(np.float64) + w["0.bias"]  # n,8,8,16
    act = np.maximum(conv, 0).transpose(0, 3, 1, 2)  # n,16,8,8
    pooled = act.reshape(n, 16, 4, 2, 4, 2).max(axis=(3, 5)).reshape(n, 256)
    return pooled @ w["4.weight"].T.astype(np.float64) + w["4.bias"]


def _forward(model: nn.Module, values: dict) -> Any:
    def forward(images):
        logits = nn.functional_call(model, values, images)
        return {"logits": logits, "classes": xp.argmax(logits, axis=1)}
    return forward


def _case(cat: Any, family: str, label: str, path: Path, inputs: dict, want: dict, tol: dict) -> Case:
    return cat.add(family, label, path, inputs, want, tol)


def function_cases(cat: Any) -> None:
    """The MLP and the softmax, exported by export_function (weights closed over, in the safetensors file)."""
    gpu = cat.gpu
    rng = np.random.default_rng(2028)
    x = rng.standard_normal((256, 64)).astype(np.float32)
    w1, b1 = (rng.standard_normal((64, 32)) / 8).astype(np.float32), rng.standard_normal(32).astype(np.float32)
    w2, b2 = (rng.standard_normal((32, 10)) / 6).astype(np.float32), rng.standard_normal(10).astype(np.float32)
    with xp.use(gpu):
        weights = {k: xp.asarray(v) for k, v in {"w1": w1, "b1": b1, "w2": w2, "b2": b2}.items()}

        def mlp(x):
            h = xp.maximum(x @ weights["w1"] + weights["b1"], 0.0)
            return h @ weights["w2"] + weights["b2"]

        def softmax_rows(x):
            z = x - xp.max(x, axis=1, keepdims=True)
            e = xp.exp(z)
            return {"p": e / xp.sum(e, axis=1, keepdims=True), "big": x > 0.5}

        h = np.maximum(x.astype(np.float64) @ w1 + b1, 0)
        e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
        for fn, label, ref, tol in [
                (mlp, "mlp 64-32-10 (relu)", {"out": (h @ w2 + b2).astype(np.float32)}, rel(1e-4, 1e-5)),
                (softmax_rows, "softmax rows + bool mask", {"p": (e / e.sum(axis=1, keepdims=True)).astype(np.float32),
                                                             "big": x > 0.5}, rel(1e-4, 1e-6))]:
            cid = cat.next_id(f"function {fn.__name__}")
            path = export_function(fn, x, out_dir=cat.root, name=cid)
            got = fn(xp.asarray(x))
            got = got if isinstance(got, dict) else {"out": got}
            vy = {k: np.asarray(a) for k, a in got.items()}
            steps = len(load_manifest(path)["steps"])
            _case(cat, "function", f"{label} ({steps} steps)", path, {"x": x}, {"numpy": ref, "vyre": vy},
                  {k: tolerance_for(r.dtype, tol) for k, r in ref.items()})


def digits_cases(cat: Any) -> None:
    """The trained CNN, the committed page's module and index.html, a tampered weights file."""
    data = _digits()
    if data is None:
        return
    xtr, ytr, xte, yte = data
    gpu = cat.gpu
    model, trained = train_cnn(gpu, xtr, ytr)
    images = xte[:CNN_BATCH]
    cid = cat.next_id("cnn digits")
    with xp.use(gpu):
        forward = _forward(model, trained)
        path = export_function(forward, images, out_dir=cat.root, name=cid)
        vy = {k: np.asarray(a) for k, a in forward(xp.asarray(images)).items()}
    accuracy = float((vy["classes"] == yte[:CNN_BATCH]).mean())
    assert accuracy >= 0.9, f"the digits CNN trained to {accuracy:.3f} only"
    ref = cnn_numpy({k: np.asarray(a) for k, a in trained.items()}, images).astype(np.float32)
    c = _case(cat, "cnn", f"digits CNN forward, {CNN_BATCH} held-out images ({accuracy:.1%} right in vyre)", path,
              {"images": images}, {"vyre": vy, "numpy": {"logits": ref}},
              {"logits": CNN_TOL, "classes": EXACT})
    page_cases(cat, gpu)
    tampered_weights(cat, c)


def page_cases(cat: Any, gpu: Any) -> None:
    from safetensors.numpy import load_file

    dest = cat.root / "digits_web"
    shutil.copytree(PAGE, dest)
    manifest = load_manifest(dest / "digits_cnn.json")
    doc = json.loads((dest / "digits.json").read_text(encoding="utf-8"))
    batch = manifest["about"]["inputs"]["images"]["shape"][0]
    images = np.zeros((batch, 1, 10, 10), np.float32)
    images[:len(doc["images"]), 0, 1:9, 1:9] = np.asarray(doc["images"], np.float32).reshape(-1, 8, 8) / 16.0
    # the model's tensors (named after the arrays the forward pass closes over: trained.0.weight ...); the
    # file also holds a fused kernel's parameter words
    weights = {k.split(".", 1)[1]: v for k, v in load_file(dest / "digits_cnn.safetensors").items()
               if re.fullmatch(r"\w+\.\d\.(weight|bias)", k)}
    assert sorted(weights) == ["0.bias", "0.weight", "4.bias", "4.weight"], sorted(weights)
    with xp.use(gpu):
        vy = {k: np.asarray(a) for k, a in
              _forward(cnn(), {k: xp.asarray(v) for k, v in weights.items()})(xp.asarray(images)).items()}
    assert vy["classes"][:len(doc["labels"])].tolist() == doc["vyre_classes"], "digits.json is stale"
    c = Case(f"page_{len(cat.cases):03d}", "page", f"examples/digits_web/digits_cnn.js on its {batch} digits",
             "digits_web/digits_cnn.js", manifest, {"images": images}, {},
             {"vyre": vy, "numpy": {"logits": cnn_numpy(weights, images).astype(np.float32)}},
             {"logits": CNN_TOL, "classes": EXACT})
    cat.cases.append(c)
    html = Case(f"page_html_{len(cat.cases):03d}", "page-html", "examples/digits_web/index.html", "", {}, {}, {},
                {"page": {"shown": len(doc["labels"])}}, {},
                job={"page": "./digits_web/index.html", "until": "#status", "initial": "Loading…"})
    cat.cases.append(html)


PAGE_STATUS = re.compile(r"(\d+) of (\d+) held-out digits right \((\d+) predictions the same as vyre's")


def tampered_weights(cat: Any, of: Case) -> None:
    """``of``'s module and manifest in a folder of their own beside its weights with one bit flipped."""
    dest = cat.root / "tampered_weights"
    dest.mkdir()
    stem = Path(of.module).stem
    for suffix in (".js", ".json"):
        shutil.copy(cat.root / f"{stem}{suffix}", dest / f"{stem}{suffix}")
    raw = bytearray((cat.root / f"{stem}.safetensors").read_bytes())
    first = next(b for b in of.manifest["buffers"] if b["role"] == "constant")["value"]
    raw[first["offset"] + 3] ^= 0x80  # the sign of the first weight
    (dest / f"{stem}.safetensors").write_bytes(bytes(raw))
    cat.cases.append(Case(f"tampered_weights_{of.id}", "tampered-weights", f"{of.label}: a weight's sign flipped",
                          f"tampered_weights/{stem}.js", of.manifest, of.inputs, of.options, of.want, of.tolerance))


__all__ = ["function_cases", "digits_cases", "cnn_numpy", "train_cnn", "PAGE_STATUS", "CNN_TOL", "CNN_BATCH"]
