"""``vyre.nn.functional``: stateless layer functions, activations and losses, written with vyre.array
functions only (they fuse, run on every backend and vyre.autograd differentiates them). See docs/nn.md."""

from __future__ import annotations

from ._activations import (
    cross_entropy,
    erf,
    gelu,
    log_softmax,
    mse_loss,
    nll_loss,
    relu,
    sigmoid,
    silu,
    softmax,
    tanh,
)
from ._ops import (
    avg_pool2d,
    conv2d,
    dropout,
    embedding,
    layer_norm,
    linear,
    matmul,
    max_pool2d,
    rms_norm,
    scaled_dot_product_attention,
)

__all__ = ["relu", "gelu", "erf", "silu", "sigmoid", "tanh", "softmax", "log_softmax", "cross_entropy",
           "mse_loss", "nll_loss", "linear", "matmul", "conv2d", "max_pool2d", "avg_pool2d", "layer_norm", "rms_norm",
           "embedding", "dropout", "scaled_dot_product_attention"]
