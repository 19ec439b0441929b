"""The layer functions of ``vyre.nn.functional`` (linear, conv2d, pooling, norms, embedding, dropout,
attention), each built from vyre.array functions so that vyre.autograd differentiates it.

Convolution and pooling gather their windows as ``kh * kw`` strided slices of the (padded) input, stacked
on a new axis (im2col as views plus one stack kernel); a convolution is then one batched matmul against
the ``(out, in * kh * kw)`` weight, a pooling one reduction over the window axis. The slices' gradient is
the autograd's deterministic scatter of each view back, so backward is deterministic run to run too.
"""

from __future__ import annotations

import math
from typing import Any

import vyre.array as xp
from vyre.array import Array

from ..amp import _policy as _amp
from ..errors import ArgumentTypeError, InvalidArgumentError
from ._activations import float_array, softmax

# vyre.array's float functions (exp, log, sqrt, tanh) come from a tuple in its __all__ that mypy cannot
# follow: reached through an untyped alias of the namespace (autograd's rules do the same)
F: Any = xp


def pair(v: Any, name: str, fn: str, low: int) -> tuple[int, int]:
    """An int or a pair of ints, each >= ``low``."""
    vals = (v, v) if isinstance(v, int) and not isinstance(v, bool) else None
    if isinstance(v, tuple | list):
        vals = tuple(v)
    if vals is None or len(vals) != 2 or any(isinstance(t, bool) or not isinstance(t, int) for t in vals):
        raise ArgumentTypeError(f"{fn}: {name} must be an int or a pair of ints, not {v!r}", fix=f"{name}=1")
    if any(t < low for t in vals):
        raise InvalidArgumentError(f"{fn}: {name} must be >= {low}, not {v!r}", fix=f"{name}={max(low, 1)}")
    return int(vals[0]), int(vals[1])


def linear(x: Array, weight: Array, bias: Array | None = None) -> Array:
    """``x @ weight.T + bias`` (weight ``(out, in)``, PyTorch's layout)."""
    x, weight = float_array(x, "input", "linear"), float_array(weight, "weight", "linear")
    if x.ndim == 0 or weight.ndim != 2 or x.shape[-1] != weight.shape[1]:
        raise InvalidArgumentError(f"linear: input {x.shape} does not match weight {weight.shape}",
                                   fix="the input's last axis must be weight.shape[1]")
    x, weight, bias = _amp.cast("linear", x, weight, bias)  # float16 under vyre.amp.autocast
    y = xp.matmul(x, xp.matrix_transpose(weight))
    return y if bias is None else y + float_array(bias, "bias", "linear")


def _pad(x: Array, ph: int, pw: int, value: float) -> Array:
    """``x`` (N, C, H, W) with ``value`` rows and columns around H and W (concat: differentiable)."""
    n, c, h, w = x.shape
    if ph:
        band = xp.full((n, c, ph, w), value, dtype=x.dtype, device=x.device)
        x = xp.concat([band, x, band], axis=2)
    if pw:
        band = xp.full((n, c, x.shape[2], pw), value, dtype=x.dtype, device=x.device)
        x = xp.concat([band, x, band], axis=3)
    return x


def windows(x: Array, kernel: tuple[int, int], stride: tuple[int, int], padding: tuple[int, int],
            fill: float, fn: str) -> tuple[Array, int, int]:
    """``(N, C, kh*kw, Ho, Wo)``: element ``[n, c, i*kw + j, y, x]`` is the padded input at
    ``(y*sh + i, x*sw + j)``; and ``Ho``, ``Wo``."""
    if x.ndim != 4:
        raise InvalidArgumentError(f"{fn}: input must be (N, C, H, W), not shape {x.shape}", fix="NCHW input")
    (kh, kw), (sh, sw), (ph, pw) = kernel, stride, padding
    hp, wp = x.shape[2] + 2 * ph, x.shape[3] + 2 * pw
    if kh > hp or kw > wp:
        raise InvalidArgumentError(f"{fn}: kernel {kernel} larger than the padded input ({hp}, {wp})",
                                   fix="a smaller kernel or more padding")
    ho, wo = (hp - kh) // sh + 1, (wp - kw) // sw + 1
    p = _pad(x, ph, pw, fill)
    views = [p[:, :, i:i + (ho - 1) * sh + 1:sh, j:j + (wo - 1) * sw + 1:sw] for i in range(kh) for j in range(kw)]
    return (views[0][:, :, None] if len(views) == 1 else xp.stack(views, axis=2)), ho, wo


def conv2d(x: Array, weight: Array, bias: Array | None = None, stride: Any = 1, padding: Any = 0) -> Array:
    """2-D cross-correlation, NCHW (PyTorch's conv2d without dilation or groups): weight ``(O, C, kh, kw)``,
    bias ``(O,)``, zero padding. im2col as strided views, then one batched matmul."""
    x, weight = float_array(x, "input", "conv2d"), float_array(weight, "weight", "conv2d")
    if weight.ndim != 4 or x.ndim != 4 or x.shape[1] != weight.shape[1]:
        raise InvalidArgumentError(f"conv2d: input {x.shape} and weight {weight.shape} do not match",
                                   fix="input (N, C, H, W), weight (O, C, kh, kw)")
    o, c, kh, kw = weight.shape
    x, weight, bias = _amp.cast("conv2d", x, weight, bias)  # float16 under vyre.amp.autocast
    cols, ho, wo = windows(x, (kh, kw), pair(stride, "stride", "conv2d", 1), pair(padding, "padding", "conv2d", 0),
                           0.0, "conv2d")
    n = x.shape[0]
    # (N, C, kh*kw, Ho, Wo) -> (N, C*kh*kw, Ho*Wo): the row order (c, i, j) of weight.reshape(O, -1)
    y = xp.matmul(xp.reshape(weight, (o, c * kh * kw)), xp.reshape(cols, (n, c * kh * kw, ho * wo)))
    y = xp.reshape(y, (n, o, ho, wo))
    if bias is not None:
        y = y + xp.reshape(float_array(bias, "bias", "conv2d"), (o, 1, 1))
    return y


def _pool_args(kernel_size: Any, stride: Any, padding: Any, fn: str) -> tuple[tuple[int, int], ...]:
    k = pair(kernel_size, "kernel_size", fn, 1)
    s = k if stride is None else pair(stride, "stride", fn, 1)
    p = pair(padding, "padding", fn, 0)
    if p[0] * 2 > k[0] or p[1] * 2 > k[1]:
        raise InvalidArgumentError(f"{fn}: padding {p} must be at most half the kernel {k}", fix="less padding")
    return k, s, p


def max_pool2d(x: Array, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Array:
    """The max over each window (stride defaults to the kernel; padding is -inf, as PyTorch's)."""
    x = float_array(x, "input", "max_pool2d")
    k, s, p = _pool_args(kernel_size, stride, padding, "max_pool2d")
    w, _, _ = windows(x, k, s, p, -math.inf, "max_pool2d")
    return xp.max(w, axis=2)


def avg_pool2d(x: Array, kernel_size: Any, stride: Any = None, padding: Any = 0) -> Array:
    """The mean over each window, padding counted as zeros (PyTorch's ``count_include_pad=True``)."""
    x = float_array(x, "input", "avg_pool2d")
    k, s, p = _pool_args(kernel_size, stride, padding, "avg_pool2d")
    w, _, _ = windows(x, k, s, p, 0.0, "avg_pool2d")
    return xp.mean(w, axis=2)


def _norm_axes(x: Array, shape: tuple[int, ...], fn: str) -> tuple[int, ...]:
    if not shape or x.shape[x.ndim - len(shape):] != shape or len(shape) > x.ndim:
        raise InvalidArgumentError(f"{fn}: normalized shape {shape} is not the trailing shape of {x.shape}",
                                   fix="normalized_shape = input.shape[-k:]")
    return tuple(range(x.ndim - len(shape), x.ndim))


def layer_norm(x: Array, normalized_shape: Any, weight: Array | None = None, bias: Array | None = None,
               eps: float = 1e-5) -> Array:
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the trailing ``normalized_shape`` axes
    (biased variance, as PyTorch)."""
    x = float_array(x, "input", "layer_norm")
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    axes = _norm_axes(x, shape, "layer_norm")
    x, weight, bias = _amp.cast("layer_norm", x, weight, bias)  # float32 under vyre.amp.autocast
    mu = xp.mean(x, axis=axes, keepdims=True)
    d = x - mu
    y: Array = d / F.sqrt(xp.mean(d * d, axis=axes, keepdims=True) + eps)
    if weight is not None:
        y = y * weight
    return y if bias is None else y + bias


def rms_norm(x: Array, normalized_shape: Any, weight: Array | None = None, eps: float = 1e-6) -> Array:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing ``normalized_shape`` axes."""
    x = float_array(x, "input", "rms_norm")
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    axes = _norm_axes(x, shape, "rms_norm")
    x, weight = _amp.cast("rms_norm", x, weight)  # float32 under vyre.amp.autocast
    y: Array = x / F.sqrt(xp.mean(x * x, axis=axes, keepdims=True) + eps)
    return y if weight is None else y * weight


def embedding(indices: Array, weight: Array) -> Array:
    """Rows of ``weight`` ``(num, dim)`` for integer ``indices`` of any shape: ``indices.shape + (dim,)``.
    Indices are not range-checked (that would download them); the gather clamps them."""
    weight = float_array(weight, "weight", "embedding")
    if not isinstance(indices, Array) or not xp.isdtype(indices.dtype, "integral"):
        raise ArgumentTypeError(f"embedding: indices must be an integer vyre array, not "
                                f"{getattr(indices, 'dtype', type(indices).__name__)}",
                                fix="vyre.array.asarray(ids, dtype=vyre.array.int32)")
    if weight.ndim != 2:
        raise InvalidArgumentError(f"embedding: weight must be (num, dim), not {weight.shape}", fix="a 2-d weight")
    rows = xp.take(weight, xp.reshape(indices, (-1,)), axis=0)
    return xp.reshape(rows, (*indices.shape, weight.shape[1]))


def dropout(x: Array, p: float, key: Array | None, training: bool = True) -> Array:
    """Elements zeroed with probability ``p`` and the rest scaled by ``1 / (1 - p)``, from ``key``
    (``vyre.random.bernoulli``: the same key gives the same mask). Identity when not ``training`` or
    ``p == 0``."""
    x = float_array(x, "input", "dropout")
    if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0:
        raise InvalidArgumentError(f"dropout: p must be in [0, 1], not {p!r}", fix="p=0.1")
    if not training or p == 0.0:
        return x
    if key is None:
        raise InvalidArgumentError("dropout in training mode needs a key", fix="pass key=vyre.random.split(...)[i]"
                                   ", or call module.eval()")
    if p == 1.0:
        return xp.zeros_like(x)
    from vyre.random import bernoulli

    keep = bernoulli(key, 1.0 - float(p), x.shape)
    return xp.where(keep, x * (1.0 / (1.0 - float(p))), 0.0)


def scaled_dot_product_attention(q: Array, k: Array, v: Array, mask: Array | None = None,
                                 causal: bool = False, scale: float | None = None) -> Array:
    """``softmax(q @ k^T * scale + bias) @ v`` over the last two axes (leading axes batch and broadcast):
    q ``(..., L, D)``, k ``(..., S, D)``, v ``(..., S, Dv)``; ``scale`` defaults to ``1/sqrt(D)``.
    ``mask``: a boolean array broadcasting to ``(..., L, S)``, True where attention is allowed;
    ``causal``: query ``i`` sees keys ``j <= i`` (top-left aligned, PyTorch's ``is_causal``). A row with
    nothing allowed gives NaN, as PyTorch."""
    q, k, v = (float_array(a, n, "scaled_dot_product_attention") for a, n in ((q, "q"), (k, "k"), (v, "v")))
    if q.ndim < 2 or k.ndim < 2 or v.ndim < 2 or q.shape[-1] != k.shape[-1] or k.shape[-2] != v.shape[-2]:
        raise InvalidArgumentError(f"scaled_dot_product_attention: q {q.shape}, k {k.shape}, v {v.shape} "
                                   f"do not fit (..., L, D), (..., S, D), (..., S, Dv)", fix="check the shapes")
    q, k, v = _amp.cast("scaled_dot_product_attention", q, k, v)  # float16 under vyre.amp.autocast
    s = xp.matmul(q, xp.matrix_transpose(k)) * (1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale))
    allowed = None
    if causal:
        rows = xp.arange(q.shape[-2], dtype=xp.int32, device=q.device)
        cols = xp.arange(k.shape[-2], dtype=xp.int32, device=q.device)
        allowed = xp.expand_dims(rows, axis=1) >= cols
    if mask is not None:
        if not isinstance(mask, Array) or mask.dtype != xp.bool:
            raise ArgumentTypeError("scaled_dot_product_attention: mask must be a boolean vyre array",
                                    fix="True where a query may attend to a key")
        allowed = mask if allowed is None else xp.logical_and(allowed, mask)
    if allowed is not None:
        s = xp.where(allowed, s, -math.inf)
    p, v = _amp.cast("matmul", softmax(s, axis=-1), v)  # autocast: softmax in float32, p @ v in float16
    return xp.matmul(p, v)


def matmul(x1: Array, x2: Array) -> Array:
    """``vyre.array.matmul(x1, x2)`` (float operands), in float16 under ``vyre.amp.autocast``."""
    x1, x2 = float_array(x1, "x1", "matmul"), float_array(x2, "x2", "matmul")
    x1, x2 = _amp.cast("matmul", x1, x2)
    return xp.matmul(x1, x2)


__all__ = ["linear", "matmul", "conv2d", "max_pool2d", "avg_pool2d", "layer_norm", "rms_norm", "embedding", "dropout",
           "scaled_dot_product_attention", "pair", "windows"]
