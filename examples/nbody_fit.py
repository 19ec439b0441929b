"""Fit initial velocities through 50 steps of an n-body simulation: a differentiable kernel on the tape.

``step`` is one semi-implicit Euler step of N softened-gravity bodies in 2-D, written as an ordinary
``@vyre.kernel(differentiable=True)``; vyre generates its adjoint from the IR. Fifty launches on vyre Arrays
inside a ``GradientTape``, then the loss (array code), give d loss / d v0 in one backward pass (50 adjoint
launches). The gradient is checked against central finite differences of a float64 numpy simulation, then
gradient descent fits v0 so that the bodies end where a hidden v0 sends them.
"""

import sys

import numpy as np

import vyre
import vyre.array as xp
import vyre.autograd as ag
from vyre import In, Out, f32, tid

N, STEPS, DT, EPS = 8, 50, 0.01, 0.05


@vyre.kernel(differentiable=True)
def step(px: In[f32], py: In[f32], vx: In[f32], vy: In[f32], m: In[f32], dt: f32, eps: f32,
         px2: Out[f32], py2: Out[f32], vx2: Out[f32], vy2: Out[f32]):
    i = tid()
    ax = 0.0
    ay = 0.0
    for j in range(len(px)):               # every body pulls on body i (itself: dx = dy = 0, no force)
        dx = px[j] - px[i]
        dy = py[j] - py[i]
        r2 = dx * dx + dy * dy + eps
        s = m[j] / (r2 * vyre.sqrt(r2))
        ax += dx * s
        ay += dy * s
    nvx = vx[i] + dt * ax
    nvy = vy[i] + dt * ay
    vx2[i] = nvx
    vy2[i] = nvy
    px2[i] = px[i] + dt * nvx
    py2[i] = py[i] + dt * nvy


def simulate(p0, v0, m, device=None):
    """The final positions after STEPS launches (vyre Arrays in, vyre Arrays out)."""
    px, py = p0
    vx, vy = v0
    for _ in range(STEPS):
        out = [xp.empty((N,), dtype=xp.float32, device=device) for _ in range(4)]
        step[N](px, py, vx, vy, m, DT, EPS, *out)
        px, py, vx, vy = out
    return px, py


def loss_and_grad(p0, v0, m, target, device=None):
    """The loss (squared distance of the final positions to ``target``) and its gradient in v0."""
    with ag.GradientTape() as tape:
        px, py = simulate(p0, v0, m, device)
        loss = xp.sum((px - target[0]) ** 2 + (py - target[1]) ** 2)
    return loss, tape.gradient(loss, list(v0))


def simulate64(p0, v0, m):
    """The same simulation in float64 numpy: the finite-difference oracle."""
    p, v = np.array(p0, np.float64), np.array(v0, np.float64)
    for _ in range(STEPS):
        d = p[:, None, :] - p[:, :, None]                      # d[:, i, j] = p_j - p_i
        r2 = (d ** 2).sum(0) + EPS
        a = (d * (m[None, None, :] / (r2 * np.sqrt(r2)))).sum(2)
        v = v + DT * a
        p = p + DT * v
    return p


def problem(seed=0):
    rng = np.random.default_rng(seed)
    p0 = rng.uniform(-1, 1, (2, N)).astype(np.float32)
    m = rng.uniform(0.02, 0.06, N).astype(np.float32)  # gentle gravity: a smooth fit
    v_true = rng.uniform(-1, 1, (2, N)).astype(np.float32)
    return p0, m, v_true, simulate64(p0, v_true, m).astype(np.float32)


def fd_gradient(p0, v0, m, target, h=1e-4):
    def loss(v):
        return ((simulate64(p0, v, m) - target) ** 2).sum()
    g = np.zeros_like(v0, dtype=np.float64)
    for k in np.ndindex(v0.shape):
        e = np.zeros_like(g)
        e[k] = h
        g[k] = (loss(v0 + e) - loss(v0 - e)) / (2 * h)
    return g


def main():
    p0, m, v_true, target = problem()
    dev = vyre.default_backend()
    P = [xp.asarray(p0[0], device=dev), xp.asarray(p0[1], device=dev)]
    M = xp.asarray(m, device=dev)
    T = [xp.asarray(target[0], device=dev), xp.asarray(target[1], device=dev)]
    v = np.zeros((2, N), np.float32)
    _, g = loss_and_grad(P, [xp.asarray(v[0], device=dev), xp.asarray(v[1], device=dev)], M, T, dev)
    got = np.stack([np.asarray(gi) for gi in g])
    want = fd_gradient(p0, v.astype(np.float64), m.astype(np.float64), target.astype(np.float64))
    err = np.abs(got - want).max() / np.abs(want).max()
    print(f"d loss / d v0 through {STEPS} steps vs float64 central differences: max rel. error {err:.1e}")
    first = None
    for _ in range(8):
        loss, g = loss_and_grad(P, [xp.asarray(v[0], device=dev), xp.asarray(v[1], device=dev)], M, T, dev)
        first = float(loss) if first is None else first
        v = v - 1.5 * np.stack([np.asarray(gi) for gi in g])
    final = float(loss)
    print(f"fit v0: loss {first:.4f} -> {final:.2e} in 8 steps; max |v0 - v_true| {np.abs(v - v_true).max():.3f}")
    ok = err < 2e-3 and final < 1e-3 * first
    print("OK" if ok else "MISMATCH")
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
