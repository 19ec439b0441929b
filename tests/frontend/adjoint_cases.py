"""Differentiable kernels for tests/frontend/test_adjoint.py, each with its float64 numpy twin (the oracle:
same arithmetic, vectorized over the threads) and its inputs. Kept in a module of their own: a kernel's
source must be readable from a file."""

from __future__ import annotations

import numpy as np

import vyre
from vyre import In, Out, f32, i32, tid


@vyre.kernel(differentiable=True)
def unary(x: In[f32], out: Out[f32]):
    i = tid()
    v = x[i]
    out[i] = vyre.sin(v) * vyre.exp(0.5 * v) + vyre.tanh(v) - vyre.log(1.5 + v * v) + vyre.sqrt(2.0 + v) \
        + vyre.cos(v) / (1.0 + v * v) + abs(v) * 0.25 + vyre.rsqrt(3.0 + v) + vyre.floor(v) * v


def unary64(x):
    v = x
    return (np.sin(v) * np.exp(0.5 * v) + np.tanh(v) - np.log(1.5 + v * v) + np.sqrt(2.0 + v)
            + np.cos(v) / (1.0 + v * v) + np.abs(v) * 0.25 + 1 / np.sqrt(3.0 + v) + np.floor(v) * v)


@vyre.kernel(differentiable=True)
def binary(a: In[f32], b: In[f32], out: Out[f32], out2: Out[f32], k: f32):
    i = tid()
    p, q = a[i], b[i]
    r = p * q - p / (2.0 + q * q) + min(p, q) * k - max(p, 0.5 * q)
    r += (2.0 + p) ** q + q ** 3 + (p - 0.1 * q) % 0.7
    out[i] = r
    out2[i] = vyre.fma(p, q, r) if p > q else -r


def binary64(a, b, k):
    p, q = a, b
    r = p * q - p / (2.0 + q * q) + np.minimum(p, q) * k - np.maximum(p, 0.5 * q)
    r = r + (2.0 + p) ** q + q ** 3 + np.mod(p - 0.1 * q, 0.7)
    return r, np.where(p > q, p * q + r, -r)


@vyre.kernel(differentiable=True)
def branches(x: In[f32], y: In[f32], out: Out[f32]):
    i = tid()
    v = x[i]
    w = y[i]
    if v > 0.2:
        w = w * v
        if w < 0.1:
            v = v * 3.0
    elif v < -0.3:
        v = vyre.exp(v)
    else:
        w = w + v * v
    out[i] = v * w


def branches64(x, y):
    v, w = x.copy(), y.copy()
    a = v > 0.2
    w = np.where(a, w * v, w)
    v = np.where(a & (w < 0.1), v * 3.0, v)
    b = ~a & (x < -0.3)
    v = np.where(b, np.exp(v), v)
    c = ~a & ~b
    w = np.where(c, w + v * v, w)
    return v * w


@vyre.kernel(differentiable=True)
def horner(x: In[f32], c: In[f32], out: Out[f32], n: i32):
    i = tid()
    p = 0.0
    for k in range(n - 1, -1, -1):              # a carried product: recomputed for each reversed trip
        p = p * x[i] + c[k]
    out[i] = p


def horner64(x, c, n):
    p = np.zeros_like(x)
    for k in range(n - 1, -1, -1):
        p = p * x + c[k]
    return p


@vyre.kernel(differentiable=True)
def neighbours(x: In[f32], w: In[f32], out: Out[f32]):
    i = i32(tid())
    n = i32(len(x))
    acc = 0.0
    for d in range(-2, 3):                       # loads of other threads' elements: compare-exchange adds
        j = min(max(i + d, 0), n - 1)
        acc += w[d + 2] * vyre.sin(x[j])
    out[i] = acc * acc


def neighbours64(x, w):
    n = len(x)
    acc = np.zeros_like(x)
    for d in range(-2, 3):
        j = np.clip(np.arange(n) + d, 0, n - 1)
        acc = acc + w[d + 2] * np.sin(x[j])
    return acc * acc


@vyre.kernel(differentiable=True)
def grid2d(img: In[f32], out: Out[f32], ints: Out[i32]):
    y, x = vyre.tid2()
    v = img[y, x]
    if y == 0:
        return
    out[y, x] = v * v * f32(y) + vyre.exp(-v)
    ints[y, x] = i32(vyre.floor(v * 10.0))


def grid2d64(img):
    y = np.arange(img.shape[0])[:, None]
    return np.where(y == 0, 0.0, img * img * y + np.exp(-img))


@vyre.func
def sigmoid(v: f32) -> f32:
    return 1.0 / (1.0 + vyre.exp(-v))


@vyre.kernel(differentiable=True)
def looped_branch(x: In[f32], w: In[f32], out: Out[f32], n: i32):
    i = tid()
    acc = 0.0
    h = x[i]
    for k in range(n):                           # h is carried and read (recomputed), acc only summed
        if h > 0.0:
            acc += sigmoid(h * w[k])             # an inlined helper
        else:
            h = h + w[k]
        h = h * 0.9
    out[i] = acc + h


def looped_branch64(x, w, n):
    acc, h = np.zeros_like(x), x.copy()
    for k in range(n):
        pos = h > 0.0
        acc = acc + np.where(pos, 1 / (1 + np.exp(-h * w[k])), 0.0)
        h = np.where(pos, h, h + w[k]) * 0.9
    return acc + h


__all__ = ["looped_branch", "unary", "binary", "branches", "horner", "neighbours", "grid2d"]
