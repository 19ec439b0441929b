# mypy: disable-error-code="valid-type,operator"
# (kernel bodies are translated, never run: their annotations are vyre's dtype markers, values, not types)
"""Philox inside ``@vyre.kernel`` bodies: ``@vyre.func`` helpers (inlined at each call) giving the same
bits as :mod:`vyre.random` for the same key words.

    import vyre
    from vyre import In, Out, f32, u32, tid
    from vyre.random import kernel as rk

    @vyre.kernel
    def noisy(key: In[u32], x: In[f32], y: Out[f32]):
        i = tid()
        y[i] = x[i] + rk.uniform(key[0], key[1], i)   # == vyre.random.uniform(key, x.shape)[i], bit for bit

* ``rk.philox4x32(c0, c1, c2, c3, k0, k1, word)``: word ``word`` (0-3) of the Philox 4x32-10 block of
  counter ``(c0, c1, c2, c3)`` under key ``(k0, k1)`` (each call computes the whole block: a kernel that
  needs several words of one block pays once per call);
* ``rk.bits(k0, k1, i)``: word ``i`` of the key's sample stream, ``vyre.random.bits(key, ...)`` element i;
* ``rk.uniform(k0, k1, i)``: ``vyre.random.uniform(key, ...)`` element i (float32 in [0, 1)).

The key is an ``In[u32]`` array argument (a key array itself, resident, or ``np.asarray(key)``). This
module loads the kernel front end (vyre.frontend); ``import vyre.random`` does not import it.
"""

from __future__ import annotations

from ..frontend import f32, func, u32

M0, M1, W0, W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85  # inlined into kernels as u32 literals
LOW16 = 0xFFFF
UNIT = 2.0**-24


@func
def mulhi(a: u32, m: u32) -> u32:
    """The high word of the 64-bit product of two u32 values (16-bit limbs, as vyre/random/_philox.py)."""
    a0 = a & LOW16
    a1 = a >> 16
    m0 = m & LOW16
    m1 = m >> 16
    p00 = a0 * m0
    p01 = a0 * m1
    p10 = a1 * m0
    mid = (p00 >> 16) + (p01 & LOW16) + (p10 & LOW16)
    return a1 * m1 + (p01 >> 16) + (p10 >> 16) + (mid >> 16)


@func
def philox4x32(c0: u32, c1: u32, c2: u32, c3: u32, k0: u32, k1: u32, word: u32) -> u32:
    """Word ``word`` of Philox 4x32-10 of counter (c0..c3) under key (k0, k1)."""
    x0, x1, x2, x3 = c0, c1, c2, c3
    y0, y1 = k0, k1
    for _ in range(10):  # a round, then the key bump (the one after the last round is unused)
        x0, x1, x2, x3 = mulhi(x2, M1) ^ x1 ^ y0, x2 * M1, mulhi(x0, M0) ^ x3 ^ y1, x0 * M0
        y0, y1 = y0 + W0, y1 + W1
    return x0 if word == 0 else (x1 if word == 1 else (x2 if word == 2 else x3))


@func
def bits(k0: u32, k1: u32, i: u32) -> u32:
    """Word ``i`` of key (k0, k1)'s sample stream: word i % 4 of the block at counter (i // 4, 0, 0, 0)."""
    return philox4x32(i >> 2, u32(0), u32(0), u32(0), k0, k1, i & 3)


@func
def uniform(k0: u32, k1: u32, i: u32) -> f32:
    """``vyre.random.uniform``'s element ``i`` for key (k0, k1): ``(bits >> 8) * 2**-24``."""
    return f32(bits(k0, k1, i) >> 8) * UNIT


__all__ = ["philox4x32", "bits", "uniform", "mulhi"]
