"""A decoder-only transformer from vyre.nn layers: :class:`TransformerDecoderLayer` (pre-norm: causal
self-attention and an MLP, each behind a LayerNorm and added back) and :class:`GPT` (token and learned
position embeddings, the layers, a final LayerNorm and an untied output head).

The token embedding is a one-hot matmul, ``(ids == arange(V)) @ weight``, not a gather: for the small
vocabularies of character models it costs ``V`` multiply-adds per output element, its values are exact
(one product by 1, the rest by 0), and its gradient is a matmul of the one-hot transpose (fixed order,
deterministic) instead of the sort-based scatter-add of ``take``, so a whole training step traces under
``vyre.compile`` with nothing downloaded.
"""

from __future__ import annotations

from typing import Any

import vyre.array as xp
import vyre.random as vr
from vyre.array import Array

from ..errors import ArgumentTypeError, InvalidArgumentError
from . import _activations, init
from ._attention import MultiheadAttention
from ._layers import LayerNorm, Linear, _key, _size
from ._module import Module, Parameter

_ACTIVATIONS = ("gelu", "relu")


class TransformerDecoderLayer(Module):
    """``x + attn(ln1(x), causal)``, then ``+ mlp(ln2(x))`` with ``mlp = Linear(d, ff), activation,
    Linear(ff, d)`` (``dim_feedforward`` defaults to ``4 * d_model``; ``activation`` ``"gelu"``, exact, or
    ``"relu"``). Input and output ``(N, L, d_model)``. No dropout: the layer is deterministic."""

    def __init__(self, d_model: int, num_heads: int, dim_feedforward: int | None = None,
                 activation: str = "gelu", *, key: Array, dtype: Any = None) -> None:
        super().__init__()
        d = _size(d_model, "d_model", "TransformerDecoderLayer")
        ff = 4 * d if dim_feedforward is None else _size(dim_feedforward, "dim_feedforward",
                                                         "TransformerDecoderLayer")
        if activation not in _ACTIVATIONS:
            raise InvalidArgumentError(f"TransformerDecoderLayer: activation must be one of {_ACTIVATIONS}, "
                                       f"not {activation!r}", fix="activation='gelu'")
        ks = vr.split(_key(key, "TransformerDecoderLayer"), 3)
        dev = ks.device
        self.d_model, self.dim_feedforward, self.activation = d, ff, activation
        self.ln1 = LayerNorm(d, dtype=dtype, device=dev)
        self.attn = MultiheadAttention(d, num_heads, key=ks[0], dtype=dtype)
        self.ln2 = LayerNorm(d, dtype=dtype, device=dev)
        self.fc1 = Linear(d, ff, key=ks[1], dtype=dtype)
        self.fc2 = Linear(ff, d, key=ks[2], dtype=dtype)

    def forward(self, x: Array) -> Array:
        if not isinstance(x, Array) or x.ndim != 3 or x.shape[2] != self.d_model:
            raise InvalidArgumentError(f"TransformerDecoderLayer: input must be (N, L, {self.d_model}), not "
                                       f"{getattr(x, 'shape', type(x).__name__)}", fix="batch-first inputs")
        x = x + self.attn(self.ln1(x), causal=True)
        h = self.fc1(self.ln2(x))
        h = _activations.gelu(h) if self.activation == "gelu" else _activations.relu(h)
        out: Array = x + self.fc2(h)
        return out


def one_hot_embedding(ids: Array, weight: Array) -> Array:
    """Rows of ``weight`` ``(V, d)`` for integer ``ids`` of any shape, as ``one_hot(ids) @ weight``
    (see the module docstring: exact values, a matmul for a gradient). An id outside ``[0, V)`` selects no
    row and gives zeros."""
    weight = _activations.float_array(weight, "weight", "one_hot_embedding")
    if not isinstance(ids, Array) or not xp.isdtype(ids.dtype, "integral"):
        raise ArgumentTypeError(f"one_hot_embedding: ids must be an integer vyre array, not "
                                f"{getattr(ids, 'dtype', type(ids).__name__)}",
                                fix="vyre.array.asarray(ids, dtype=vyre.array.int32)")
    if weight.ndim != 2:
        raise InvalidArgumentError(f"one_hot_embedding: weight must be (V, d), not {weight.shape}",
                                   fix="a 2-d weight")
    v = weight.shape[0]
    classes = xp.arange(v, dtype=ids.dtype, device=ids.device)
    hot = xp.astype(xp.expand_dims(ids, axis=-1) == classes, weight.dtype)      # ids.shape + (V,)
    return xp.matmul(hot, weight)


class GPT(Module):
    """A decoder-only language model: ``tok_emb`` ``(vocab, d)`` and ``pos_emb`` ``(context, d)`` tables
    (N(0, 0.02), GPT-2's initialisation), ``num_layers`` :class:`TransformerDecoderLayer` (pre-norm,
    ``4 * d`` MLP), a final LayerNorm ``ln_f`` and an untied ``head`` Linear(d, vocab) (with bias).
    ``model(ids)`` maps integer ids ``(N, L)``, ``L <= context``, to logits ``(N, L, vocab)``; position
    ``i``'s logits depend on ids ``0..i`` only."""

    def __init__(self, vocab_size: int, context: int, d_model: int = 128, num_heads: int = 4,
                 num_layers: int = 2, activation: str = "gelu", *, key: Array, dtype: Any = None) -> None:
        super().__init__()
        v, c = _size(vocab_size, "vocab_size", "GPT"), _size(context, "context", "GPT")
        d, n = _size(d_model, "d_model", "GPT"), _size(num_layers, "num_layers", "GPT")
        ks = vr.split(_key(key, "GPT"), n + 3)
        self.vocab_size, self.context, self.d_model = v, c, d
        self.tok_emb = Parameter(init.normal(ks[0], (v, d), 0.02, dtype=dtype))
        self.pos_emb = Parameter(init.normal(ks[1], (c, d), 0.02, dtype=dtype))
        self.num_layers = n
        for i in range(n):   # submodules h0, h1, ...: registered by attribute assignment, in this order
            setattr(self, f"h{i}", TransformerDecoderLayer(d, num_heads, activation=activation, key=ks[3 + i],
                                                           dtype=dtype))
        self.ln_f = LayerNorm(d, dtype=dtype, device=ks.device)
        self.head = Linear(d, v, key=ks[2], dtype=dtype)

    def forward(self, ids: Array) -> Array:
        if not isinstance(ids, Array) or ids.ndim != 2 or not 1 <= ids.shape[1] <= self.context:
            raise InvalidArgumentError(f"GPT: ids must be (N, L) with 1 <= L <= {self.context}, not "
                                       f"{getattr(ids, 'shape', type(ids).__name__)}",
                                       fix=f"crop the sequence to its last {self.context} ids")
        length = ids.shape[1]
        pos = self.pos_emb.value
        x = one_hot_embedding(ids, self.tok_emb.value) + (pos if length == self.context else pos[:length])
        for i in range(self.num_layers):
            x = getattr(self, f"h{i}")(x)
        logits: Array = self.head(self.ln_f(x))
        return logits


def lm_loss(logits: Array, targets: Array) -> Array:
    """Mean next-token cross-entropy of logits ``(N, L, V)`` against integer targets ``(N, L)``."""
    if not isinstance(logits, Array) or logits.ndim != 3 or not isinstance(targets, Array) \
            or targets.shape != logits.shape[:2]:
        raise InvalidArgumentError(f"lm_loss: logits {getattr(logits, 'shape', None)} and targets "
                                   f"{getattr(targets, 'shape', None)} must be (N, L, V) and (N, L)",
                                   fix="targets = ids shifted by one position")
    v = logits.shape[2]
    return _activations.cross_entropy(xp.reshape(logits, (-1, v)), xp.reshape(targets, (-1,)))


__all__ = ["TransformerDecoderLayer", "GPT", "one_hot_embedding", "lm_loss"]
