"""``MultiheadAttention``: PyTorch's layer (batch first, no dropout inside), from array ops: one input
projection per q/k/v (the rows of ``in_proj_weight``), heads split by a reshape and a permute, scaled
dot-product attention on ``(N, heads, L, head_dim)``, and the output projection."""

from __future__ import annotations

import math
from typing import Any

import vyre.array as xp
import vyre.random as vr
from vyre.array import Array

from ..errors import InvalidArgumentError
from . import _ops, init
from ._layers import Linear, _key, _size
from ._module import Module, Parameter


class MultiheadAttention(Module):
    """Attention of ``query`` ``(N, L, E)`` over ``key`` / ``value`` ``(N, S, E)`` (both default to the
    query: self-attention) with ``num_heads`` heads of ``E / num_heads``. Parameters as PyTorch's:
    ``in_proj_weight`` ``(3E, E)`` (xavier uniform), ``in_proj_bias`` ``(3E,)`` (zeros), ``out_proj`` a
    Linear (bias zeros)."""

    def __init__(self, embed_dim: int, num_heads: int, bias: bool = True, *, key: Array, dtype: Any = None) -> None:
        super().__init__()
        e, h = _size(embed_dim, "embed_dim", "MultiheadAttention"), _size(num_heads, "num_heads", "MultiheadAttention")
        if e % h:
            raise InvalidArgumentError(f"MultiheadAttention: embed_dim {e} is not a multiple of num_heads {h}",
                                       fix="embed_dim = num_heads * head_dim")
        ks = vr.split(_key(key, "MultiheadAttention"))
        k_in, k_out = ks[0], ks[1]
        self.embed_dim, self.num_heads = e, h
        self.in_proj_weight = Parameter(init.xavier_uniform(k_in, (3 * e, e), dtype=dtype))
        self.in_proj_bias = Parameter(init.zeros((3 * e,), dtype, device=k_in.device)) if bias else None
        self.out_proj = Linear(e, e, bias=bias, key=k_out, dtype=dtype)
        if self.out_proj.bias is not None:
            self.out_proj.bias.value = init.zeros((e,), self.out_proj.bias.dtype, device=k_out.device)

    def _heads(self, x: Array, i: int) -> Array:
        e, h = self.embed_dim, self.num_heads
        w = self.in_proj_weight.value[i * e:(i + 1) * e]
        b = None if self.in_proj_bias is None else self.in_proj_bias.value[i * e:(i + 1) * e]
        y = _ops.linear(x, w, b)                                   # (N, L, E)
        n, length = x.shape[0], x.shape[1]
        return xp.permute_dims(xp.reshape(y, (n, length, h, e // h)), (0, 2, 1, 3))  # (N, h, L, d)

    def _self_heads(self, x: Array) -> tuple[Array, Array, Array]:
        """Self-attention's q, k, v from one ``(N*L, E) @ (E, 3E)`` matmul: one larger GEMM instead of three,
        and a backward pass of one weight-gradient matmul and one stack instead of three matmuls and three
        scatters of weight slices into zeros."""
        e, h = self.embed_dim, self.num_heads
        b = None if self.in_proj_bias is None else self.in_proj_bias.value
        y = _ops.linear(x, self.in_proj_weight.value, b)                       # (N, L, 3E)
        n, length = x.shape[0], x.shape[1]
        y = xp.permute_dims(xp.reshape(y, (n, length, 3, h, e // h)), (2, 0, 3, 1, 4))   # (3, N, h, L, d)
        q, k, v = xp.unstack(y, axis=0)
        return q, k, v

    def forward(self, query: Array, key: Array | None = None, value: Array | None = None, *,
                mask: Array | None = None, causal: bool = False) -> Array:
        key = query if key is None else key
        value = key if value is None else value
        for name, a in (("query", query), ("key", key), ("value", value)):
            if not isinstance(a, Array) or a.ndim != 3 or a.shape[2] != self.embed_dim:
                raise InvalidArgumentError(f"MultiheadAttention: {name} must be (N, L, {self.embed_dim}), not "
                                           f"{getattr(a, 'shape', type(a).__name__)}", fix="batch-first inputs")
        if key.shape[:2] != value.shape[:2] or key.shape[0] != query.shape[0]:
            raise InvalidArgumentError(f"MultiheadAttention: query {query.shape}, key {key.shape} and value "
                                       f"{value.shape} do not share a batch (and key/value a length)",
                                       fix="check the shapes")
        if key is query and value is query:
            q, k, v = self._self_heads(query)
        else:
            q, k, v = self._heads(query, 0), self._heads(key, 1), self._heads(value, 2)
        # q scaled before the scores' matmul, not the scores after it: under vyre.amp.autocast the matmul's
        # float16 result must hold q.k / sqrt(d), and q.k itself can pass float16's 65504 once attention sharpens
        q = q * (1.0 / math.sqrt(self.embed_dim // self.num_heads))
        o = _ops.scaled_dot_product_attention(q, k, v, mask=mask, causal=causal, scale=1.0)   # (N, h, L, d)
        n, length = query.shape[0], query.shape[1]
        o = xp.reshape(xp.permute_dims(o, (0, 2, 1, 3)), (n, length, self.embed_dim))
        out: Array = self.out_proj(o)
        return out


__all__ = ["MultiheadAttention"]
