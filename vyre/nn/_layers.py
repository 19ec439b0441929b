"""The layers of vyre.nn: each holds its :class:`Parameter` objects and calls vyre.nn.functional with
their current ``.value`` (read at call time, so an optimizer's replacement takes effect on the next call).
Layers with random initial values take ``key=`` (a vyre.random key), PyTorch's default initialisation
drawn from it."""

from __future__ import annotations

import math
from typing import Any

import vyre.array as xp
import vyre.random as vr
from vyre.array import Array

from ..errors import ArgumentTypeError, InvalidArgumentError
from . import _activations, _ops, init
from ._module import Module, Parameter


def _size(v: Any, name: str, cls: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise InvalidArgumentError(f"{cls}: {name} must be a positive int, not {v!r}", fix=f"{name}=16")
    return int(v)


def _key(key: Any, cls: str) -> Array:
    if not isinstance(key, Array):
        raise ArgumentTypeError(f"{cls} draws its initial values from a key: pass key=, not {type(key).__name__}",
                                fix="key=vyre.random.key(0) (split one key for several layers)")
    return key


class Linear(Module):
    """``y = x @ weight.T + bias``; weight ``(out, in)`` and bias from U(-1/sqrt(in), 1/sqrt(in))
    (PyTorch's default)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, *, key: Array,
                 dtype: Any = None) -> None:
        super().__init__()
        fi, fo = _size(in_features, "in_features", "Linear"), _size(out_features, "out_features", "Linear")
        ks = vr.split(_key(key, "Linear"))
        kw, kb = ks[0], ks[1]
        bound = 1.0 / math.sqrt(fi)
        self.in_features, self.out_features = fi, fo
        self.weight = Parameter(init.uniform(kw, (fo, fi), -bound, bound, dtype))
        self.bias = Parameter(init.uniform(kb, (fo,), -bound, bound, dtype)) if bias else None

    def forward(self, x: Array) -> Array:
        return _ops.linear(x, self.weight.value, None if self.bias is None else self.bias.value)


class Conv2d(Module):
    """NCHW convolution (no dilation, no groups): weight ``(out, in, kh, kw)``, bias ``(out,)``, both from
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with ``fan_in = in * kh * kw`` (PyTorch's default)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: Any, stride: Any = 1, padding: Any = 0,
                 bias: bool = True, *, key: Array, dtype: Any = None) -> None:
        super().__init__()
        ci, co = _size(in_channels, "in_channels", "Conv2d"), _size(out_channels, "out_channels", "Conv2d")
        self.kernel_size = _ops.pair(kernel_size, "kernel_size", "Conv2d", 1)
        self.stride = _ops.pair(stride, "stride", "Conv2d", 1)
        self.padding = _ops.pair(padding, "padding", "Conv2d", 0)
        ks = vr.split(_key(key, "Conv2d"))
        kw, kb = ks[0], ks[1]
        bound = 1.0 / math.sqrt(ci * self.kernel_size[0] * self.kernel_size[1])
        self.weight = Parameter(init.uniform(kw, (co, ci, *self.kernel_size), -bound, bound, dtype))
        self.bias = Parameter(init.uniform(kb, (co,), -bound, bound, dtype)) if bias else None

    def forward(self, x: Array) -> Array:
        return _ops.conv2d(x, self.weight.value, None if self.bias is None else self.bias.value,
                           self.stride, self.padding)


class MaxPool2d(Module):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        _ops._pool_args(kernel_size, stride, padding, "MaxPool2d")  # checked now, not at the first call

    def forward(self, x: Array) -> Array:
        return _ops.max_pool2d(x, self.kernel_size, self.stride, self.padding)


class AvgPool2d(Module):
    def __init__(self, kernel_size: Any, stride: Any = None, padding: Any = 0) -> None:
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        _ops._pool_args(kernel_size, stride, padding, "AvgPool2d")

    def forward(self, x: Array) -> Array:
        return _ops.avg_pool2d(x, self.kernel_size, self.stride, self.padding)


def _normalized(shape: Any, cls: str) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, int) and not isinstance(shape, bool) else tuple(shape)
    for d in dims:
        _size(d, "normalized_shape", cls)
    if not dims:
        raise InvalidArgumentError(f"{cls}: normalized_shape must not be empty", fix="normalized_shape=dim")
    return dims


class LayerNorm(Module):
    """Normalises the trailing ``normalized_shape`` axes; ``weight`` ones and ``bias`` zeros when
    ``elementwise_affine``."""

    def __init__(self, normalized_shape: Any, eps: float = 1e-5, elementwise_affine: bool = True, *,
                 dtype: Any = None, device: Any = None) -> None:
        super().__init__()
        self.normalized_shape, self.eps = _normalized(normalized_shape, "LayerNorm"), float(eps)
        self.weight = Parameter(init.ones(self.normalized_shape, dtype, device=device)) if elementwise_affine else None
        self.bias = Parameter(init.zeros(self.normalized_shape, dtype, device=device)) if elementwise_affine else None

    def forward(self, x: Array) -> Array:
        return _ops.layer_norm(x, self.normalized_shape, None if self.weight is None else self.weight.value,
                               None if self.bias is None else self.bias.value, self.eps)


class RMSNorm(Module):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing axes; ``weight`` ones."""

    def __init__(self, normalized_shape: Any, eps: float = 1e-6, elementwise_affine: bool = True, *,
                 dtype: Any = None, device: Any = None) -> None:
        super().__init__()
        self.normalized_shape, self.eps = _normalized(normalized_shape, "RMSNorm"), float(eps)
        self.weight = Parameter(init.ones(self.normalized_shape, dtype, device=device)) if elementwise_affine else None

    def forward(self, x: Array) -> Array:
        return _ops.rms_norm(x, self.normalized_shape, None if self.weight is None else self.weight.value, self.eps)


class Embedding(Module):
    """A ``(num_embeddings, embedding_dim)`` table from N(0, 1) (PyTorch's default); rows by index."""

    def __init__(self, num_embeddings: int, embedding_dim: int, *, key: Array, dtype: Any = None) -> None:
        super().__init__()
        n, d = _size(num_embeddings, "num_embeddings", "Embedding"), _size(embedding_dim, "embedding_dim", "Embedding")
        self.weight = Parameter(init.normal(_key(key, "Embedding"), (n, d), 1.0, dtype=dtype))

    def forward(self, indices: Array) -> Array:
        return _ops.embedding(indices, self.weight.value)


class Dropout(Module):
    """Zeroes elements with probability ``p`` in training (a vyre.random key per call: ``m(x, key=k)``);
    the identity after ``eval()``."""

    takes_key = True

    def __init__(self, p: float = 0.5) -> None:
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0:
            raise InvalidArgumentError(f"Dropout: p must be in [0, 1], not {p!r}", fix="p=0.1")
        self.p = float(p)

    def forward(self, x: Array, key: Array | None = None) -> Array:
        return _ops.dropout(x, self.p, key, self.training)


class ReLU(Module):
    def forward(self, x: Array) -> Array:
        return _activations.relu(x)


class GELU(Module):
    """GELU, exact (``approximate="none"``, through nn.functional.erf) or the tanh form."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise InvalidArgumentError(f"GELU: approximate must be 'none' or 'tanh', not {approximate!r}",
                                       fix="approximate='tanh'")
        self.approximate = approximate

    def forward(self, x: Array) -> Array:
        return _activations.gelu(x, self.approximate)


class SiLU(Module):
    def forward(self, x: Array) -> Array:
        return _activations.silu(x)


class Sigmoid(Module):
    def forward(self, x: Array) -> Array:
        return _activations.sigmoid(x)


class Tanh(Module):
    def forward(self, x: Array) -> Array:
        return _activations.tanh(x)


class Flatten(Module):
    """Axes ``start_dim`` to the last merged into one (a reshape: no copy), ``(N, C, H, W) -> (N, C*H*W)``."""

    def __init__(self, start_dim: int = 1) -> None:
        super().__init__()
        if isinstance(start_dim, bool) or not isinstance(start_dim, int):
            raise ArgumentTypeError(f"Flatten: start_dim must be an int, not {start_dim!r}", fix="start_dim=1")
        self.start_dim = start_dim

    def forward(self, x: Array) -> Array:
        if not isinstance(x, Array) or not -x.ndim <= self.start_dim < max(x.ndim, 1):
            raise InvalidArgumentError(f"Flatten: start_dim {self.start_dim} out of range for "
                                       f"{getattr(x, 'shape', type(x).__name__)}", fix="start_dim=1")
        d = self.start_dim % x.ndim
        return xp.reshape(x, (*x.shape[:d], -1))


__all__ = ["ReLU", "GELU", "SiLU", "Sigmoid", "Tanh", "Flatten",
           "Linear", "Conv2d", "MaxPool2d", "AvgPool2d", "LayerNorm", "RMSNorm", "Embedding", "Dropout"]
