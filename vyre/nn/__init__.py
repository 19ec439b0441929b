"""``vyre.nn``: modules, layer functions (:mod:`vyre.nn.functional`) and initialisers (:mod:`vyre.nn.init`)
on vyre.array, so vyre.autograd differentiates them and they run on every backend. See docs/nn.md.

* :class:`Parameter`: a trainable array in ``.value``, replaced whole (``p.value = new``) by optimizers;
  modules read ``.value`` at call time.
* :class:`Module`: parameters and submodules registered by attribute assignment; ``parameters()``,
  ``named_parameters()``, ``parameter_values()``, ``train()`` / ``eval()``, ``state_dict()`` /
  ``load_state_dict()``, ``save(path)`` / ``load(path)`` (safetensors files).
* :func:`functional_call`: a module called with given parameter values (what ``value_and_grad`` needs).
* Layers: Linear, Conv2d, MaxPool2d, AvgPool2d, LayerNorm, RMSNorm, Embedding, Dropout,
  MultiheadAttention, Sequential; activation modules ReLU, GELU, SiLU, Sigmoid, Tanh, and Flatten.
* A decoder-only transformer: TransformerDecoderLayer (pre-norm, causal), GPT, one_hot_embedding, lm_loss.
"""

from __future__ import annotations

from . import functional, init
from ._attention import MultiheadAttention
from ._layers import (
    GELU,
    AvgPool2d,
    Conv2d,
    Dropout,
    Embedding,
    Flatten,
    LayerNorm,
    Linear,
    MaxPool2d,
    ReLU,
    RMSNorm,
    Sigmoid,
    SiLU,
    Tanh,
)
from ._module import Module, Parameter, Sequential, functional_call, load, save
from ._transformer import GPT, TransformerDecoderLayer, lm_loss, one_hot_embedding

__all__ = ["Module", "Parameter", "Sequential", "functional_call", "save", "load", "functional", "init",
           "Linear", "Conv2d", "MaxPool2d", "AvgPool2d", "LayerNorm", "RMSNorm", "Embedding", "Dropout",
           "MultiheadAttention", "ReLU", "GELU", "SiLU", "Sigmoid", "Tanh", "Flatten",
           "TransformerDecoderLayer", "GPT", "one_hot_embedding", "lm_loss"]
