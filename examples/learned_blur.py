"""Learn the 3x3 weights of a 2-D blur by gradient descent through a differentiable kernel.

``blur`` is a ``@vyre.kernel(differentiable=True)`` over the image (a 2-D launch, clamped edges). A hidden
set of weights blurs an image into the target; starting from zeros, gradient descent on the mean squared
error recovers them. The gradient (through the generated adjoint: compare-exchange f32 adds into the 9
weights, shared by every thread) is first checked against central finite differences in float64 numpy.
"""

import sys

import numpy as np

import vyre
import vyre.array as xp
import vyre.autograd as ag
from vyre import In, Out, f32, i32

H, W = 24, 32


@vyre.kernel(differentiable=True)
def blur(img: In[f32], w: In[f32], out: Out[f32]):
    y, x = vyre.tid2()
    h, wd = i32(len(img)), i32(img.shape[1])
    acc = 0.0
    for dy in range(-1, 2):
        for dx in range(-1, 2):
            yy = min(max(i32(y) + dy, 0), h - 1)     # clamp to the image
            xx = min(max(i32(x) + dx, 0), wd - 1)
            acc += w[(dy + 1) * 3 + dx + 1] * img[yy, xx]
    out[y, x] = acc


def blur64(img, w):
    """The same blur in float64 numpy (the oracle)."""
    p = np.pad(np.asarray(img, np.float64), 1, mode="edge")
    w = np.asarray(w, np.float64).reshape(3, 3)
    return sum(w[a, b] * p[a:a + img.shape[0], b:b + img.shape[1]] for a in range(3) for b in range(3))


def loss_and_grad(img, w, target):
    with ag.GradientTape() as tape:
        (out,) = [xp.empty(img.shape, dtype=xp.float32, device=img.device)]
        blur[img.shape](img, w, out)
        loss = xp.mean((out - target) ** 2)
    return loss, tape.gradient(loss, w)


def problem(seed=0):
    rng = np.random.default_rng(seed)
    img = rng.random((H, W), dtype=np.float32)
    w_true = np.array([0.05, 0.1, 0.05, 0.1, 0.4, 0.1, 0.05, 0.1, 0.05], np.float32)
    return img, w_true, blur64(img, w_true).astype(np.float32)


def main():
    img, w_true, target = problem()
    dev = vyre.default_backend()
    pic, T = xp.asarray(img, device=dev), xp.asarray(target, device=dev)
    w = np.zeros(9, np.float32)
    _, g = loss_and_grad(pic, xp.asarray(w, device=dev), T)
    h = 1e-4
    fd = np.array([(((blur64(img, w + h * e) - target) ** 2).mean() - ((blur64(img, w - h * e) - target) ** 2).mean())
                   / (2 * h) for e in np.eye(9)])
    err = np.abs(np.asarray(g) - fd).max() / np.abs(fd).max()
    print(f"d loss / d w vs float64 central differences: max rel. error {err:.1e}")
    first, vel = None, np.zeros_like(w)
    for _ in range(60):  # gradient descent with heavy-ball momentum
        loss, g = loss_and_grad(pic, xp.asarray(w, device=dev), T)
        first = float(loss) if first is None else first
        vel = 0.8 * vel - 0.25 * np.asarray(g)
        w = w + vel
    final = float(loss)
    print(f"learned weights {np.round(w, 3)}: loss {first:.3e} -> {final:.1e}, max |w - w_true| "
          f"{np.abs(w - w_true).max():.1e}")
    ok = err < 1e-3 and final < 1e-3 * first and np.abs(w - w_true).max() < 0.05
    print("OK" if ok else "MISMATCH")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
