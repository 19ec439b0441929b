"""Kernel twins of the op library's simpler ops (see twins.py): each op's registered builder pipeline
(``build(**params)``) and a kernel written with ``@vyre.kernel`` on the same inputs. Floats are compared
bit-exact where the kernel does the builder's operations in the builder's order, else within the op's
stated tolerance (``OpSpec.tolerance_of``)."""

from __future__ import annotations

import numpy as np

import vyre
from vyre import In, InOut, Out, f32, i32, tid, u32
from vyre.ops import registry
from vyre.ops.elementwise.activations import C0, C1
from vyre.ops.registry import EXACT

from .twins import Pairs, matmul, op_run, twin, zeros

RNG = np.random.default_rng(2026)
C01 = C0 * C1  # folded in Python, as the builder does
FNV_OFFSET, FNV_PRIME, CRC_POLY = 0x811C9DC5, 0x01000193, 0xEDB88320
I32_MIN = -(2**31)


def tol(op_id: str, params: dict):
    return registry.get(op_id).tolerance_of(params)


def u32s(n: int, hi: int = 2**32) -> np.ndarray:
    return RNG.integers(0, hi, n, dtype=np.uint64).astype(np.uint32)


# ---- elementwise -------------------------------------------------------------------------------
@vyre.kernel
def popcount(x: In[u32], o: Out[u32]):
    i = tid()
    o[i] = vyre.popcount(x[i])


@twin("op bits.popcount")
def _popcount(backend) -> Pairs:
    x = u32s(1001)
    (want,) = op_run(backend, "bits.popcount", {"shape": x.shape}, x)
    (got,) = popcount[len(x)](x, zeros(len(x), np.uint32), backend=backend)
    return [("o", got, want, EXACT)]


@vyre.kernel
def zip_max(x: In[i32], y: In[i32], o: Out[i32]):
    i = tid()
    o[i] = max(x[i], y[i])


@twin("op zip.max")
def _zip_max(backend) -> Pairs:
    x, y = (RNG.integers(-2**31, 2**31, 1001, dtype=np.int64).astype(np.int32) for _ in range(2))
    (want,) = op_run(backend, "zip.max", {"shape_x": x.shape, "shape_y": y.shape, "dtype": "i32"}, x, y)
    (got,) = zip_max[len(x)](x, y, zeros(len(x), np.int32), backend=backend)
    return [("o", got, want, EXACT)]


@vyre.func
def silu_of(v: f32) -> f32:
    return v / (1.0 + vyre.exp(-v))


@vyre.func
def gelu_of(v: f32) -> f32:
    u = v * (C0 + C01 * (v * v))
    return v / (1.0 + vyre.exp(u * -2.0))


@vyre.kernel
def activations(x: In[f32], silu: Out[f32], gelu: Out[f32]):
    i = tid()
    silu[i] = silu_of(x[i])
    gelu[i] = gelu_of(x[i])


@twin("op nn.silu and nn.gelu")
def _activations(backend) -> Pairs:
    x = np.concatenate([RNG.uniform(-12, 12, 997), [0.0, -0.0, 30.0, -30.0]]).astype(np.float32)
    p = {"shape": x.shape, "dtype": "f32"}
    (silu,) = op_run(backend, "nn.silu", p, x)
    (gelu,) = op_run(backend, "nn.gelu", p, x)
    s, g = activations[len(x)](x, zeros(len(x), np.float32), zeros(len(x), np.float32), backend=backend)
    return [("silu", s, silu, EXACT), ("gelu", g, gelu, EXACT)]


# ---- reductions, scans, histograms ---------------------------------------------------------------
SUM_WG = 256


@vyre.kernel(workgroup_size=SUM_WG)
def block_sum(x: In[u32], total: InOut[u32]):
    sh = vyre.shared(u32, SUM_WG)
    lid, g = vyre.local_id(), tid()
    sh[lid] = x[g] if g < len(x) else 0
    vyre.barrier()
    stride = u32(SUM_WG // 2)
    while stride > 0:
        if lid < stride:
            sh[lid] += sh[lid + stride]
        vyre.barrier()
        stride //= 2
    if lid == 0:
        vyre.atomic_add(total, 0, sh[0])  # u32 sums wrap: any order gives the same bits


@twin("op reduce.sum (u32)")
def _sum(backend) -> Pairs:
    x = u32s(1000)
    (want,) = op_run(backend, "reduce.sum", {"shape": x.shape, "dtype": "u32", "axis": None}, x)
    (got,) = block_sum[len(x)](x, zeros(1, np.uint32), backend=backend)
    return [("sum", got.reshape(()), want, EXACT)]


@vyre.kernel
def extremes(x: In[i32], hi: InOut[i32], lo: InOut[i32]):
    vyre.atomic_max(hi, 0, x[tid()])
    vyre.atomic_min(lo, 0, x[tid()])


@twin("op reduce.max and reduce.min (i32)")
def _extremes(backend) -> Pairs:
    x = RNG.integers(-2**31, 2**31, 777, dtype=np.int64).astype(np.int32)
    p = {"shape": x.shape, "dtype": "i32", "axis": None}
    (hi,) = op_run(backend, "reduce.max", p, x)
    (lo,) = op_run(backend, "reduce.min", p, x)
    g_hi, g_lo = extremes[len(x)](x, np.full(1, I32_MIN, np.int32), np.full(1, 2**31 - 1, np.int32),
                                  backend=backend)
    return [("max", g_hi.reshape(()), hi, EXACT), ("min", g_lo.reshape(()), lo, EXACT)]


@vyre.kernel
def inclusive_scan(x: In[u32], o: Out[u32]):
    i = tid()
    acc: u32 = 0
    for k in range(i + 1):  # a naive scan: one loop per element
        acc += x[k]
    o[i] = acc


@twin("op scan.inclusive (u32)")
def _scan(backend) -> Pairs:
    x = u32s(300)
    (want,) = op_run(backend, "scan.inclusive", {"n": len(x), "dtype": "u32"}, x)
    (got,) = inclusive_scan[len(x)](x, zeros(len(x), np.uint32), backend=backend)
    return [("scan", got, want, EXACT)]


@vyre.kernel
def histogram(x: In[u32], hist: InOut[u32]):
    v = x[tid()]
    if v < len(hist):  # values past the last bin are not counted
        vyre.atomic_add(hist, v, 1)


@twin("op histogram")
def _hist(backend) -> Pairs:
    x = u32s(2000, 150)
    (want,) = op_run(backend, "histogram", {"n": len(x), "bins": 100}, x)
    (got,) = histogram[len(x)](x, zeros(100, np.uint32), backend=backend)
    return [("hist", got, want, EXACT)]


# ---- memory ------------------------------------------------------------------------------------
@vyre.kernel
def gather(src: In[f32], idx: In[u32], out: Out[f32]):
    i = tid()
    j = idx[i]
    out[i] = src[j] if j < len(src) else 0.0


@twin("op memory.gather")
def _gather(backend) -> Pairs:
    src, idx = RNG.standard_normal(1000).astype(np.float32), u32s(777, 1100)  # some out of range
    (want,) = op_run(backend, "memory.gather", {"n_src": 1000, "n": 777, "dtype": "f32", "index": "u32"}, src, idx)
    (got,) = gather[len(idx)](src, idx, zeros(len(idx), np.float32), backend=backend)
    return [("out", got, want, EXACT)]


@vyre.kernel
def scatter_add(src: In[i32], idx: In[i32], out: InOut[i32]):
    i = tid()
    j = idx[i]
    if 0 <= j < i32(len(out)):
        vyre.atomic_add(out, j, src[i])


@twin("op memory.scatter_add")
def _scatter_add(backend) -> Pairs:
    src = RNG.integers(-2**31, 2**31, 777, dtype=np.int64).astype(np.int32)
    idx = RNG.integers(-5, 45, 777).astype(np.int32)
    p = {"n": 777, "size": 37, "dtype": "i32", "index": "i32"}
    (want,) = op_run(backend, "memory.scatter_add", p, src, idx)
    (got,) = scatter_add[len(src)](src, idx, zeros(37, np.int32), backend=backend)
    return [("out", got, want, EXACT)]


@vyre.kernel
def transpose(x: In[f32], out: Out[f32]):
    r, c = vyre.tid2()
    out[c, r] = x[r, c]


@twin("op memory.transpose")
def _transpose(backend) -> Pairs:
    x = RNG.standard_normal((50, 33)).astype(np.float32)
    (want,) = op_run(backend, "memory.transpose", {"rows": 50, "cols": 33, "dtype": "f32"}, x)
    (got,) = transpose[x.shape](x, zeros((33, 50), np.float32), backend=backend)
    return [("out", got, want, EXACT)]


@vyre.kernel
def embedding(table: In[f32], idx: In[u32], out: Out[f32]):
    r, c = vyre.tid2()
    j = idx[r]
    out[r, c] = table[j, c] if j < len(table) else 0.0


@twin("op nn.embedding")
def _embedding(backend) -> Pairs:
    table, idx = RNG.standard_normal((20, 33)).astype(np.float32), u32s(50, 24)
    p = {"num": 20, "dim": 33, "shape": [50], "dtype": "f32", "index": "u32"}
    (want,) = op_run(backend, "nn.embedding", p, table, idx)
    (got,) = embedding[50, 33](table, idx, zeros((50, 33), np.float32), backend=backend)
    return [("out", got, want, EXACT)]


# ---- rows: one thread per row ----------------------------------------------------------------------
@vyre.kernel
def softmax(x: In[f32], out: Out[f32]):
    r = tid()
    m = x[r, 0]
    for c in range(x.shape[1]):
        m = max(m, x[r, c])
    s = 0.0
    for c in range(x.shape[1]):
        s += vyre.exp(x[r, c] - m)
    for c in range(x.shape[1]):
        out[r, c] = vyre.exp(x[r, c] - m) / s


@twin("op softmax")
def _softmax(backend) -> Pairs:
    x = (RNG.standard_normal((7, 300)) * 5).astype(np.float32)
    p = {"rows": 7, "cols": 300}
    (want,) = op_run(backend, "softmax", p, x)
    (got,) = softmax[7](x, zeros(x.shape, np.float32), backend=backend)
    return [("out", got, want, tol("softmax", p))]


@vyre.kernel
def norms(x: In[f32], gamma: In[f32], beta: In[f32], rms: Out[f32], ln: Out[f32], eps: f32):
    r = tid()
    cols = f32(x.shape[1])
    ss, mean = 0.0, 0.0
    for c in range(x.shape[1]):
        ss += x[r, c] * x[r, c]
        mean += x[r, c]
    mean /= cols
    var = 0.0
    for c in range(x.shape[1]):
        var += (x[r, c] - mean) ** 2
    inv_rms, inv_std = vyre.rsqrt(ss / cols + eps), vyre.rsqrt(var / cols + eps)
    for c in range(x.shape[1]):
        rms[r, c] = x[r, c] * inv_rms * gamma[c]
        ln[r, c] = (x[r, c] - mean) * inv_std * gamma[c] + beta[c]


@twin("op rmsnorm and layernorm")
def _norms(backend) -> Pairs:
    x = (RNG.standard_normal((7, 300)) * 3 + 1).astype(np.float32)
    gamma, beta = RNG.standard_normal(300).astype(np.float32), RNG.standard_normal(300).astype(np.float32)
    p = {"rows": 7, "cols": 300, "eps": 1e-5}
    (rms,) = op_run(backend, "rmsnorm", p, x, gamma)
    (ln,) = op_run(backend, "layernorm", p, x, gamma, beta)
    got_rms, got_ln = norms[7](x, gamma, beta, zeros(x.shape, np.float32), zeros(x.shape, np.float32), 1e-5,
                               backend=backend)
    return [("rmsnorm", got_rms, rms, tol("rmsnorm", p)), ("layernorm", got_ln, ln, tol("layernorm", p))]


@vyre.func
def byte_at(data: In[u32], p: u32) -> u32:
    return (data[p >> 2] >> ((p & 3) * 8)) & 0xFF


@vyre.kernel
def row_hashes(data: In[u32], fnv: Out[u32], crc: Out[u32], length: u32):
    i = tid()
    h: u32 = FNV_OFFSET
    c: u32 = 0xFFFFFFFF
    for p in range(i * length, (i + 1) * length):
        byte = byte_at(data, p)
        h = (h ^ byte) * FNV_PRIME
        c ^= byte
        for _ in range(8):  # bitwise CRC-32 (the op uses a table): same bits, another method
            c = (c >> 1) ^ (CRC_POLY & (0 - (c & 1)))
    fnv[i] = h
    crc[i] = ~c


@twin("op hash.fnv1a32.rows and hash.crc32.rows")
def _hashes(backend) -> Pairs:
    rows, length = 129, 37
    data = RNG.integers(0, 256, (rows, length)).astype(np.uint8)
    p = {"rows": rows, "length": length}
    (fnv,) = op_run(backend, "hash.fnv1a32.rows", p, data)
    (crc,) = op_run(backend, "hash.crc32.rows", p, data)
    words = np.frombuffer(data.tobytes() + bytes(-data.size % 4), np.uint32)  # little-endian packed bytes
    got_fnv, got_crc = row_hashes[rows](words, zeros(rows, np.uint32), zeros(rows, np.uint32), length,
                                        backend=backend)
    return [("fnv1a32", got_fnv, fnv, EXACT), ("crc32", got_crc, crc, EXACT)]


@twin("op matmul")
def _matmul(backend) -> Pairs:
    a, b = RNG.standard_normal((33, 40)).astype(np.float32), RNG.standard_normal((40, 17)).astype(np.float32)
    p = {"m": 33, "k": 40, "n": 17}
    (want,) = op_run(backend, "matmul", p, a, b)
    (got,) = matmul[33, 17](a, b, zeros((33, 17), np.float32), backend=backend)
    return [("c", got, want, tol("matmul", p))]

