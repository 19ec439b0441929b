"""float64 numpy references of vyre.nn's layers, shared by tests/nn (the forward tests and the
gradient tests' central differences)."""

from __future__ import annotations

import math

import numpy as np


def conv2d(x, w, b, stride, pad):
    x = np.pad(np.asarray(x, np.float64), ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    o, _, kh, kw = w.shape
    ho, wo = (x.shape[2] - kh) // stride[0] + 1, (x.shape[3] - kw) // stride[1] + 1
    out = np.zeros((x.shape[0], o, ho, wo))
    for i in range(ho):
        for j in range(wo):
            patch = x[:, :, i * stride[0]:i * stride[0] + kh, j * stride[1]:j * stride[1] + kw]
            out[:, :, i, j] = np.einsum("nckl,ockl->no", patch, w)
    return out + (0 if b is None else b[None, :, None, None])


def pool(x, k, s, p, op, fill):
    x = np.pad(np.asarray(x, np.float64), ((0, 0), (0, 0), (p, p), (p, p)), constant_values=fill)
    ho, wo = (x.shape[2] - k) // s + 1, (x.shape[3] - k) // s + 1
    out = np.zeros(x.shape[:2] + (ho, wo))
    for i in range(ho):
        for j in range(wo):
            out[:, :, i, j] = op(x[:, :, i * s:i * s + k, j * s:j * s + k], axis=(2, 3))
    return out


def log_softmax(x, axis=-1):
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def attention(q, k, v, causal=False):
    s = q @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    return np.exp(log_softmax(s)) @ v


def central_gradient(f, x, h=1e-6):
    """d f / d x of a scalar float64 function by central differences (float64 throughout)."""
    x = np.array(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        old = x[i]
        x[i] = old + h
        up = f(x)
        x[i] = old - h
        g[i] = (up - f(x)) / (2 * h)
        x[i] = old
    return g
