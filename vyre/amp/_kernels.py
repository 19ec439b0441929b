"""GradScaler's two kernels, in vyre's kernel language (``@vyre.kernel``: annotations are vyre's array and
scalar types, which mypy cannot read as Python types; hence the file-level mypy codes below).

* ``unscale``: ``out = g * inv[0]``, and ``found[0] |= 1`` where ``g`` is inf or NaN, one pass per gradient.
* ``assign``: the scale and growth tracker written into their own buffers (no copy-on-write).
"""
# mypy: disable-error-code="valid-type, index, operator, no-untyped-def"

from __future__ import annotations

from ..frontend.decorator import kernel
from ..frontend.intrinsics import atomic_or, bitcast, tid
from ..frontend.types import In, InOut, Out, f32, i32, u32

EXP = 0x7F800000  # float32 exponent bits: all set for inf and NaN (a bit test: no NaN comparison to optimise away)


@kernel
def unscale(g: In[f32], inv: In[f32], out: Out[f32], found: InOut[u32]):
    i = tid()
    v = g[i]
    if (bitcast(v, u32) & EXP) == EXP:
        atomic_or(found, 0, 1)
    out[i] = v * inv[0]


@kernel
def assign(new_s: In[f32], new_t: In[i32], s: Out[f32], t: Out[i32]):
    s[0] = new_s[0]
    t[0] = new_t[0]


__all__ = ["unscale", "assign"]
