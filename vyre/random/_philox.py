"""Philox 4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC 2011) as
vyre IR, and the one program that generates blocks of it.

* :func:`mulhilo`: the 32x32 -> 64-bit product as (hi, lo) u32 words. WGSL has no multiply-high and no
  64-bit integers without an extension, so the high word is assembled from 16-bit limbs: four partial
  products, each below 2**32, summed with their carries in u32 arithmetic. Every backend computes the
  same exact integers, so every backend gives the same bits.
* :func:`philox_block`: ten rounds on a 128-bit counter under a 64-bit key (Random123's philox4x32_R
  with R = 10: round, then key bump, the last round without a bump).
* :func:`program`: one invocation per Philox block. Block ``j`` encrypts the 128-bit counter ``base + j``
  (carries propagate through the four words) and writes its four words to ``out[4j .. 4j + 3]``
  (``"bits"``), or their Box-Muller transform (``"normal"``: two standard normals per pair of words, both
  branches, as cuRAND's ``curand_normal4`` does). The key is read through an
  :class:`~vyre.array._kernels.emit.Emitter` of the key array's node (a pending key fuses into this
  program) at a runtime word offset; the counter base, the block count and that offset are parameter
  words, so one program serves every size, counter and key slice. Programs are cached in the registry's
  ``random.philox`` family.
"""

from __future__ import annotations

import math

from ..array._kernels import cache
from ..array._kernels.emit import Emitter
from ..array._kernels.float_math import log1p
from ..array._kernels.nodes import Node, collect
from ..ir.builder import ProgramBuilder
from ..ir.program import Program
from ..ir.values import Val

M0, M1 = 0xD2511F53, 0xCD9E8D57  # the round multipliers
W0, W1 = 0x9E3779B9, 0xBB67AE85  # the Weyl key increments (golden ratio, sqrt(3) - 1)
ROUNDS = 10
WORKGROUP = 64
MODES = ("bits", "normal")
N_PARAMS = 6  # counter base (4 words), number of blocks, the key's word offset in its buffer
_LOW16 = 0xFFFF


def mulhilo(b: ProgramBuilder, a: Val, m: Val | int) -> tuple[Val, Val]:
    """``(hi, lo)`` of the 64-bit product of the u32 values ``a`` and ``m`` (a Val or a constant), in u32
    arithmetic only."""
    a0 = b.let(a & _LOW16)
    a1 = b.let(a >> 16)
    if isinstance(m, int):
        m0, m1, mv = b.lit(m & _LOW16, "u32"), b.lit(m >> 16, "u32"), b.lit(m, "u32")
    else:
        m0, m1, mv = b.let(m & _LOW16), b.let(m >> 16), m
    p00 = b.let(a0 * m0)
    p01 = b.let(a0 * m1)
    p10 = b.let(a1 * m0)
    # each partial product is below 2**32; mid collects the three terms at bit 16 (below 3 * 2**16)
    mid = b.let((p00 >> 16) + (p01 & _LOW16) + (p10 & _LOW16))
    hi = b.let(a1 * m1 + (p01 >> 16) + (p10 >> 16) + (mid >> 16))
    lo = b.let(a * mv)  # u32 multiplication wraps: the low word
    return hi, lo


def philox_block(b: ProgramBuilder, ctr: list[Val], key: list[Val]) -> list[Val]:
    """The four output words of Philox 4x32-10 for counter ``ctr`` (4 u32 Vals) and ``key`` (2)."""
    c = list(ctr)
    k0, k1 = key
    for r in range(ROUNDS):
        if r:
            k0 = b.let(k0 + b.lit(W0, "u32"))
            k1 = b.let(k1 + b.lit(W1, "u32"))
        hi0, lo0 = mulhilo(b, c[0], M0)
        hi1, lo1 = mulhilo(b, c[2], M1)
        c = [b.let(hi1 ^ c[1] ^ k0), lo1, b.let(hi0 ^ c[3] ^ k1), lo0]
    return c


def add_counter(b: ProgramBuilder, base: list[Val], j: Val) -> list[Val]:
    """The 128-bit sum ``base + j`` (``base``: 4 little-endian u32 words, ``j``: u32), carries included."""
    one, zero = b.lit(1, "u32"), b.lit(0, "u32")
    out = [b.let(base[0] + j)]
    carry = b.let(b.select(out[0] < j, one, zero))
    for w in base[1:]:
        s = b.let(w + carry)
        out.append(s)
        carry = b.let(b.select(s < carry, one, zero))  # wrapped only when w was 0xFFFFFFFF and carry 1
    return out


def box_muller(b: ProgramBuilder, w0: Val, w1: Val) -> tuple[Val, Val]:
    """Two independent standard normals from two u32 words: u1 = ((w0 >> 8) + 1) / 2**24 in (0, 1] (so the
    log is finite), u2 = (w1 >> 8) / 2**24 in [0, 1); r = sqrt(-2 ln u1), (r cos 2 pi u2, r sin 2 pi u2).
    ln u1 is log1p(-v) of the exact v = 1 - u1: accurate near u1 = 1, where r is small."""
    scale = b.lit(2.0**-24, "f32")
    v = b.let((b.lit(0xFFFFFF, "u32") - (w0 >> 8)).cast("f32") * scale)
    r = b.let((b.lit(-2.0, "f32") * log1p(b, -v)).sqrt())
    theta = b.let(b.lit(2.0 * math.pi, "f32") * ((w1 >> 8).cast("f32") * scale))
    return b.let(r * theta.cos()), b.let(r * theta.sin())


_programs = cache.register("random.philox", 64, Program)


def program(key_node: Node, mode: str) -> Program:
    """The generator program for a key read through ``key_node``. Binding order: the buffers of
    ``plan.bind(key_node)``, then the :data:`N_PARAMS` parameter words, then ``out``."""
    if mode not in MODES:
        raise ValueError(f"unknown Philox output mode {mode!r}")

    def build() -> Program:
        b = ProgramBuilder(f"random_philox4x32_{mode}", WORKGROUP)
        e = Emitter(b, key_node, "key")
        prm = b.buffer("philox_params", "u32", "read", count=N_PARAMS)
        out = b.buffer("out", "u32" if mode == "bits" else "f32", "write")
        j = b.global_index()
        with b.if_(j < prm[4]):
            koff = b.let(prm[5])
            key = [b.let(e.value(koff)), b.let(e.value(koff + b.lit(1, "u32")))]
            words = philox_block(b, add_counter(b, [b.let(prm[w]) for w in range(4)], j), key)
            vals = words
            if mode == "normal":
                vals = [*box_muller(b, words[0], words[1]), *box_muller(b, words[2], words[3])]
            at = b.let(j * b.lit(4, "u32"))
            for t in range(4):
                out[at + b.lit(t, "u32") if t else at] = vals[t]
        return b.build()

    return _programs.get(("philox", mode, collect(key_node).key), build)


__all__ = ["mulhilo", "philox_block", "add_counter", "box_muller", "program", "MODES", "N_PARAMS", "WORKGROUP",
           "M0", "M1", "W0", "W1", "ROUNDS"]
