"""attention: flash-style scaled dot-product attention, O = softmax(Q K^T / sqrt(D)) V.

Shapes: q (BH, Lq, D), k and v (BH, Lk, D), f32, out (BH, Lq, D); BH is batch * heads.

Causal mask (``causal=True``): aligned to the bottom-right corner, as in FlashAttention-2
and PyTorch's ``causal_lower_right``: query i sees key j iff ``j <= i + (Lk - Lq)``. With
Lq == Lk this is the usual lower triangle; with Lq < Lk (decoding with a KV cache) the last
query sees every key. With Lq > Lk the first ``Lq - Lk`` queries see no key at all; their
output is defined as 0 (not NaN).

Kernel: one workgroup per (tile of BQ = 32 queries, head). Each query row is shared by
G = ceil(D / 32) invocations, invocation g owning the dims ``g, g + G, g + 2G, ...`` of
the row's q (pre-scaled) and output accumulator in registers. K and V are streamed in
tiles of BK keys through workgroup memory (BK chosen from D to fit 16 KiB); per tile:
the partial dot products of the G invocations go to a BQ x BK x G scratch (the only
score storage: the Lq x Lk matrix is never built), then each invocation sums them, takes
the tile's row maximum, rescales its running sum and accumulator once (online softmax)
and accumulates ``exp(s - m) * v``. Key tiles entirely above the causal diagonal of the
query tile are skipped. Three barriers per key tile (two when G == 1).

Tolerance: rel(2e-5, 2e-5): outputs are convex combinations of V rows (|v| <= 1 in the
witnesses); scores are D-term dot products summed in another order than numpy's float64
and exp is a few ulp off. Inputs must be finite (not witnessed: inf/NaN, which make whole
rows NaN in any implementation but not portably so through max()).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ...backends.schedule import Pipeline
from ...errors import DispatchError
from ...ir.builder import ProgramBuilder, Val
from ..pipeline import single
from ..registry import OpSpec, Witness, register, rel

BQ = 32  # query rows per workgroup
MAX_D = 256
WORKGROUP_BYTES = 16384


def plan(d: int) -> tuple[int, int, int]:
    """(G invocations per query row, dims per invocation, BK keys per tile) for head dim d."""
    g = -(-d // 32)
    dpt = -(-d // g)
    bk = 32
    while bk > 1 and (2 * bk * d + BQ * bk * g) * 4 > WORKGROUP_BYTES:
        bk //= 2
    return g, dpt, bk


def build(bh: int, lq: int, lk: int, d: int, causal: bool = False) -> Pipeline:
    for label, val in (("bh", bh), ("lq", lq), ("lk", lk), ("d", d)):
        if int(val) < 1:
            raise ValueError(f"attention: {label} must be >= 1, got {val}")
    if d > MAX_D:
        raise ValueError(f"attention: head dim d={d} is over {MAX_D}")
    G, DPT, BK = plan(d)
    T = BQ * G
    b = ProgramBuilder("attention_causal" if causal else "attention", workgroup_size=T)
    q = b.buffer("q", "f32", count=bh * lq * d)
    k = b.buffer("k", "f32", count=bh * lk * d)
    v = b.buffer("v", "f32", count=bh * lk * d)
    o = b.buffer("out", "f32", "write", count=bh * lq * d)
    ks = b.workgroup_array("k_tile", "f32", BK * d)
    vs = b.workgroup_array("v_tile", "f32", BK * d)
    sp = b.workgroup_array("partial", "f32", BQ * BK * G)

    lid = b.let(b.local_index(), "lid")
    i = b.let(lid / G if G > 1 else lid, "qi")  # query row in the tile
    g = b.let(lid % G if G > 1 else b.lit(0), "g")  # dim group
    head = b.let(b.workgroup_id(1), "head")
    q0 = b.let(b.workgroup_id(0) * BQ, "q0")
    qrow = b.let(q0 + i, "qrow")
    row_ok = b.let(qrow < lq, "row_ok")
    ragged = d % G != 0  # the last dim slot of some invocations lies past d
    last_ok = b.let(g + G * (DPT - 1) < d, "last_ok") if ragged else None

    def dim_ok(t: int) -> Val | None:
        return last_ok if (ragged and t == DPT - 1) else None

    scale = 1.0 / math.sqrt(d)
    q_base = b.let((head * lq + qrow) * d + g, "q_base")
    qv = []
    for t in range(DPT):
        dok = dim_ok(t)
        ok = row_ok if dok is None else (row_ok & dok)
        qv.append(b.let(b.select(ok, q[q_base + G * t], 0.0) * scale, f"qv{t}"))
    acc = [b.var("f32", 0.0, name=f"acc{t}") for t in range(DPT)]
    m = b.var("f32", float("-inf"), name="m")
    l_sum = b.var("f32", 0.0, name="l")

    n_kt = -(-lk // BK)
    kt_end: Val | int
    if causal:  # last key any row of this tile sees: q0 + BQ - 1 + (lk - lq)
        reach = b.let(q0.cast("i32") + (BQ + lk - lq), "reach")
        kt_end = b.let(b.min(b.max((reach + (BK - 1)) / BK, b.lit(0, "i32")), b.lit(n_kt, "i32")).cast("u32"),
                       "kt_end")
    else:
        kt_end = n_kt
    tile_elems = BK * d

    def visible(key: Val) -> Val:  # keys past lk are never visited (the j loops stop at the tile's end)
        return key.cast("i32") <= qrow.cast("i32") + (lk - lq)

    def score(j: Val | int) -> Val:
        base = b.let((i * BK + j) * G)
        s = sp[base]
        for gg in range(1, G):
            s = s + sp[base + gg]
        return s

    with b.for_range(0, kt_end, name="kt") as kt:
        k0 = b.let(kt * BK, "k0")
        jn = b.let(b.min(b.lit(BK), lk - k0), "jn")  # keys in this tile
        kv_base = b.let((head * lk + k0) * d, "kv_base")
        kv_left = b.let((lk - k0) * d, "kv_left")  # elements of k/v left in this head from k0
        with b.for_range(lid, tile_elems, step=T, name="e") as e:  # the tile is contiguous in k and v
            inside = b.let(e < kv_left)
            ks[e] = b.select(inside, k[kv_base + e], 0.0)
            vs[e] = b.select(inside, v[kv_base + e], 0.0)
        b.barrier()

        with b.for_range(0, jn, name="j") as j:  # partial q . k_j over this invocation's dims
            kb = b.let(j * d + g)
            part = b.var("f32", 0.0)
            for t in range(DPT):
                kv = ks[kb + G * t]
                dok = dim_ok(t)
                if dok is not None:
                    kv = b.select(dok, kv, 0.0)
                part.set(b.fma(qv[t], kv, part))
            sp[(i * BK + j) * G + g] = part
        if G > 1:
            b.barrier()

        m_tile = b.var("f32", float("-inf"), name="m_tile")
        with b.for_range(0, jn, name="j") as j:
            s = score(j)
            m_tile.set(b.max(m_tile, b.select(visible(k0 + j), s, float("-inf")) if causal else s))
        m_new = b.let(b.max(m, m_tile), "m_new")
        alpha = b.let(b.select(m_new == m, 1.0, (m - m_new).exp()), "alpha")  # -inf == -inf: nothing seen yet
        l_sum.set(l_sum * alpha)
        for t in range(DPT):
            acc[t].set(acc[t] * alpha)
        m.set(m_new)
        with b.for_range(0, jn, name="j") as j:
            e = (score(j) - m_new).exp()
            p = b.let(b.select(visible(k0 + j), e, 0.0) if causal else e, "p")
            l_sum += p
            vb = b.let(j * d + g)
            for t in range(DPT):
                vv = vs[vb + G * t]
                dok = dim_ok(t)
                if dok is not None:
                    vv = b.select(dok, vv, 0.0)
                acc[t].set(b.fma(p, vv, acc[t]))
        b.barrier()  # every read of this tile is done before the next one overwrites it

    inv = b.let(b.select(l_sum > 0.0, 1.0 / l_sum, 0.0), "inv_l")  # rows that see no key give 0
    for t in range(DPT):
        dok = dim_ok(t)
        ok = row_ok if dok is None else (row_ok & dok)
        with b.if_(ok):
            o[q_base + G * t] = acc[t] * inv
    grid = (-(-lq // BQ), bh, 1)
    return single(b.build(), grid=grid, output_shapes={"out": (bh, lq, d)})


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool = False,
              **params: Any) -> list[np.ndarray]:
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    lq, lk, d = q.shape[1], k.shape[1], q.shape[2]
    s = np.einsum("hqd,hkd->hqk", q, k) / math.sqrt(d)
    if causal:
        seen = np.arange(lk)[None, :] <= np.arange(lq)[:, None] + (lk - lq)
        s = np.where(seen[None], s, -np.inf)
    m = s.max(axis=2, keepdims=True)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    w = e / np.maximum(e.sum(axis=2, keepdims=True), np.finfo(np.float64).tiny)
    return [np.einsum("hqk,hkd->hqd", w, v).astype(np.float32)]


def params_for(q: np.ndarray, k: np.ndarray, v: np.ndarray, causal: bool = False) -> dict[str, Any]:
    for name, a in (("q", q), ("k", k), ("v", v)):
        if a.dtype != np.float32 or a.ndim != 3 or a.size == 0:
            raise DispatchError(f"attention: {name} has dtype {a.dtype} and shape {a.shape}; expected non-empty "
                                "float32 (batch*heads, length, head_dim)",
                                fix="reshape (batch, heads, L, D) to (batch*heads, L, D) and cast to float32")
    if k.shape != v.shape or k.shape[0] != q.shape[0] or k.shape[2] != q.shape[2]:
        raise DispatchError(f"attention: shapes q {q.shape}, k {k.shape}, v {v.shape} do not line up",
                            fix="k and v must be (BH, Lk, D) with q's BH and D")
    if q.shape[2] > MAX_D:
        raise DispatchError(f"attention: head dim {q.shape[2]} is over {MAX_D}", fix=f"use head_dim <= {MAX_D}")
    return {"bh": q.shape[0], "lq": q.shape[1], "lk": k.shape[1], "d": q.shape[2], "causal": bool(causal)}


def witnesses() -> list[Witness]:
    r = np.random.default_rng(4301)
    out = []
    for bh, lq, lk, d, causal in [
        (1, 1, 1, 1, True),
        (2, 17, 33, 20, False), (2, 17, 33, 20, True),  # Lq < Lk: bottom-right diagonal
        (3, 40, 24, 16, True),  # Lq > Lk: the first 16 queries see nothing -> 0
        (2, 5, 100, 128, False),  # D=128: 4 invocations per query row
        # D=80: 3 invocations per row with a ragged last dim slot; 4 query tiles, 8 key
        # tiles of 16, the causal bound skipping the tiles right of the diagonal
        (1, 100, 120, 80, True),
    ]:
        qkv = tuple(r.uniform(-1, 1, (bh, n, d)).astype(np.float32) for n in (lq, lk, lk))
        qkv = (qkv[0] * 3, qkv[1], qkv[2])  # sharper softmax than uniform weights
        name = f"{bh}x{lq}x{lk}x{d}{'_causal' if causal else ''}"
        out.append(Witness(name, {"bh": bh, "lq": lq, "lk": lk, "d": d, "causal": causal},
                           tuple(a.astype(np.float32) for a in qkv)))
    return out


register(OpSpec(
    id="attention", category="nn",
    summary="Flash-style attention softmax(Q K^T / sqrt(D)) V over (BH, L, D) f32; optional bottom-right causal mask.",
    build=build, reference=reference, witnesses=witnesses, params_for=params_for,
    tolerance=rel(2e-5, 2e-5),
))
