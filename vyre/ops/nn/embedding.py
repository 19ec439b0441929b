"""nn.embedding and nn.embedding_bag: row lookups in a (num, dim) f32/f16 table.

nn.embedding: ``out[..., :] = table[idx[...], :]`` for u32/i32 indices of any shape ->
(*idx.shape, dim). nn.embedding_bag: PyTorch's 1-D ``indices`` + ``offsets`` form: bag b
holds ``indices[offsets[b]:offsets[b + 1]]`` (the last bag runs to the end, unless
``include_last_offset``, where the last offset closes the last bag), reduced by ``mode``
"sum" | "mean" | "max" into one row -> (bags, dim); an empty bag gives zeros (torch's rule);
``per_sample_weights`` (one per index, the table's dtype) scale the rows in mode "sum".
"max" follows torch: a bag's first row, then any strictly larger value (on integer keys of
the bits, so -0.0 == +0.0 keeps the first one and a NaN is taken only as the first value).

Out-of-range indices (>= num, or negative i32): the convenience layer raises DispatchError
before any GPU work (it sees the host arrays), and so do offsets that do not start at 0,
decrease or pass the end. The kernels never read out of bounds whatever they are given (a
resident buffer, a pipeline step): an out-of-range index reads a row of zeros (in a bag it
is a zero row: it counts in the mean and takes part in the max), and offsets are clamped
to [0, len(indices)] (a bag whose end is before its start is empty).

Kernels: one invocation per output element (a row, a column); f16 is loaded into f32 and
rounded once at the end. Tolerance: embedding and bag "max" are bit-exact (data movement);
"sum"/"mean" add at most len(indices) terms: rel(2^-21, (n + 1) * 2^-22) for |values| <= 1
(|weight * value| <= 1; the witnesses' range; it scales with the values, as for conv2d);
f16 adds its final rounding: rel(2^-10, (n + 1) * 2^-22 + 2^-24).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...backends.schedule import Pipeline
from ...errors import DispatchError
from ...ir.builder import ProgramBuilder, Val
from ..memory._common import index_in_range
from ..pipeline import single
from ..reduce.argmax import order_key
from ..registry import EXACT, OpSpec, Tolerance, Witness, register, rel

WG = 64
DTYPES = {"f32": np.float32, "f16": np.float16}
INDEX = {"u32": np.uint32, "i32": np.int32}
MODES = ("sum", "mean", "max")
F16 = frozenset({"shader-f16"})
NAN_KEY = 0xFFFFFFFF  # order_key of every NaN


def _check(op: str, num: int, dim: int, dtype: str, **counts: int) -> None:
    if dtype not in DTYPES:
        raise ValueError(f"{op}: dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    for label, v in (("num", num), ("dim", dim), *counts.items()):
        if int(v) < 1:
            raise ValueError(f"{op}: {label} must be >= 1, got {v}")


def _index_ok(op: str, index: str) -> None:
    if index not in INDEX:
        raise ValueError(f"{op}: index must be one of {sorted(INDEX)}, got {index!r}")


# ----------------------------------------------------------------------------- nn.embedding
def build_embedding(num: int, dim: int, shape: Sequence[int], dtype: str = "f32", index: str = "u32") -> Pipeline:
    shape = tuple(int(d) for d in shape)
    n = int(np.prod(shape))
    _check("nn.embedding", num, dim, dtype, indices=n)
    _index_ok("nn.embedding", index)
    total = n * dim
    b = ProgramBuilder(f"nn_embedding_{dtype}_{index}", workgroup_size=WG)
    table = b.buffer("table", dtype, count=num * dim)
    idx = b.buffer("idx", index, count=n)
    out = b.buffer("out", dtype, "write", count=total)
    i = b.global_index()
    with b.if_(i < total):
        col = b.let(i % dim)
        j, ok = index_in_range(b, idx[i / dim], index, num)
        with b.if_(ok):
            out[i] = table[j * dim + col]
        with b.else_():
            out[i] = 0.0
    return single(b.build(), grid=(-(-total // WG), 1, 1), output_shapes={"out": (*shape, dim)})


def reference_embedding(table: np.ndarray, idx: np.ndarray, *, num: int, dim: int, shape: Sequence[int],
                        dtype: str = "f32", index: str = "u32") -> list[np.ndarray]:
    t = np.asarray(table).reshape(num, dim)
    i = np.asarray(idx).astype(np.int64).reshape(-1)
    ok = (i >= 0) & (i < num)
    out = np.zeros((i.size, dim), t.dtype)
    out[ok] = t[i[ok]]
    return [out.reshape(*shape, dim)]


# ----------------------------------------------------------------------------- nn.embedding_bag
def build_bag(num: int, dim: int, n: int, n_offsets: int, dtype: str = "f32", index: str = "u32",
              offset: str = "u32", mode: str = "mean", weighted: bool = False,
              include_last_offset: bool = False) -> Pipeline:
    op = "nn.embedding_bag"
    _check(op, num, dim, dtype, indices=n, offsets=n_offsets)
    _index_ok(op, index)
    _index_ok(op, offset)
    if mode not in MODES or (weighted and mode != "sum"):
        raise ValueError(f"{op}: mode must be one of {MODES} (per_sample_weights only with 'sum'), got {mode!r}")
    bags = n_offsets - 1 if include_last_offset else n_offsets
    if bags < 1:
        raise ValueError(f"{op}: include_last_offset needs at least 2 offsets, got {n_offsets}")
    total = bags * dim
    b = ProgramBuilder(f"nn_embedding_bag_{mode}_{dtype}_{index}_{offset}{'_w' if weighted else ''}", WG)
    table = b.buffer("table", dtype, count=num * dim)
    idx = b.buffer("indices", index, count=n)
    offs = b.buffer("offsets", offset, count=n_offsets)
    wts = b.buffer("per_sample_weights", dtype, count=n) if weighted else None
    out = b.buffer("out", dtype, "write", count=total)
    i = b.global_index()
    with b.if_(i < total):
        col = b.let(i % dim)
        bag = b.let(i / dim)

        def clamped(v: Val) -> Val:  # an offset as u32 in [0, n]; a negative i32 offset clamps to 0
            if offset == "i32":
                v = b.max(v, 0).cast("u32")
            return b.min(v, n)

        start = b.let(clamped(offs[bag]), "start")
        nxt = b.min(bag + 1, n_offsets - 1)  # a valid address even for the last bag
        end = b.let(b.select(bag + 1 < n_offsets, clamped(offs[nxt]), n), "end")

        def row(k: Val) -> Val:  # f32 value of column ``col`` of the row ``indices[k]``, 0 out of range
            j, ok = index_in_range(b, idx[k], index, num)
            v = table[b.select(ok, j, 0) * dim + col]
            v = v if dtype == "f32" else v.cast("f32")
            return b.let(b.select(ok, v, 0.0))

        result: Val
        if mode == "max":
            key = b.var("u32", 0, name="key")
            best = b.var("f32", 0.0, name="best")  # an empty bag stays 0
            with b.for_range(start, end) as k:
                v = row(k)
                kv = b.let(order_key(b, v, "f32"))
                with b.if_((k == start) | ((kv > key) & (kv != NAN_KEY))):  # torch: first, or v > best
                    key.set(kv)
                    best.set(v)
            result = best
        else:
            acc = b.var("f32", 0.0, name="acc")
            with b.for_range(start, end) as k:
                v = row(k)
                if wts is not None:
                    wk = wts[k]
                    acc += v * (wk if dtype == "f32" else wk.cast("f32"))
                else:
                    acc += v
            result = acc
            if mode == "mean":  # an empty bag: 0 / 1
                result = acc / b.select(end > start, end - start, 1).cast("f32")
        out[i] = result if dtype == "f32" else result.cast("f16")
    return single(b.build(), grid=(-(-total // WG), 1, 1), output_shapes={"out": (bags, dim)})


def reference_bag(table: np.ndarray, indices: np.ndarray, offsets: np.ndarray, *maybe_weights: np.ndarray, num: int,
                  dim: int, n: int, n_offsets: int, dtype: str = "f32", index: str = "u32", offset: str = "u32",
                  mode: str = "mean", weighted: bool = False, include_last_offset: bool = False) -> list[np.ndarray]:
    t = np.asarray(table).reshape(num, dim)
    i = np.asarray(indices).astype(np.int64).reshape(-1)
    o = np.clip(np.asarray(offsets).astype(np.int64).reshape(-1), 0, n)
    ok = (i >= 0) & (i < num)
    rows = np.zeros((n, dim), t.dtype)
    rows[ok] = t[i[ok]]  # an out-of-range index: a row of zeros
    wts = np.asarray(maybe_weights[0], np.float64).reshape(-1) if weighted else np.ones(n)
    bags = n_offsets - 1 if include_last_offset else n_offsets
    out = np.zeros((bags, dim), np.float64)
    for g in range(bags):
        s, e = o[g], (o[g + 1] if g + 1 < n_offsets else n)
        if e <= s:
            continue  # an empty bag: zeros
        if mode == "max":
            best = rows[s].astype(np.float64)
            for r in rows[s + 1:e].astype(np.float64):
                with np.errstate(invalid="ignore"):
                    best = np.where(r > best, r, best)  # torch: strictly larger (never a later NaN)
            out[g] = best
        else:
            acc = (rows[s:e].astype(np.float64) * wts[s:e, None]).sum(axis=0)
            out[g] = acc / (e - s) if mode == "mean" else acc
    return [out.astype(DTYPES[dtype])]


# ----------------------------------------------------------------------------- convenience layer
def _dtype(op: str, what: str, a: np.ndarray, names: dict[str, Any], want: str) -> str:
    name = {np.dtype(v): k for k, v in names.items()}.get(a.dtype)
    if name is None:
        first = np.dtype(next(iter(names.values()))).name
        raise DispatchError(f"{op}: {what} has dtype {a.dtype}; expected {want}",
                            fix=f"pass {what}.astype(np.{first})")
    return name


def _table(op: str, table: np.ndarray) -> tuple[int, int, str]:
    dtype = _dtype(op, "table", table, DTYPES, "float32 or float16")
    if table.ndim != 2 or table.size == 0:
        raise DispatchError(f"{op}: table has shape {table.shape}; expected a non-empty (num, dim) array",
                            fix="pass the embedding table as a 2-D (num_embeddings, embedding_dim) array")
    return int(table.shape[0]), int(table.shape[1]), dtype


def _indices(op: str, what: str, idx: np.ndarray, num: int) -> str:
    index = _dtype(op, what, idx, INDEX, "uint32 or int32 (int64 is not a GPU type)")
    if idx.size == 0:
        raise DispatchError(f"{op}: {what} is empty", fix=f"pass at least one index (an empty lookup is "
                            f"np.zeros((*{what}.shape, dim)))")
    lo, hi = int(idx.min()), int(idx.max())
    if lo < 0 or hi >= num:
        bad = lo if lo < 0 else hi
        raise DispatchError(f"{op}: {what} holds {bad}, outside the table's rows 0..{num - 1}",
                            fix=f"keep every index in [0, {num}); the kernel would read such an index as "
                                "a row of zeros")
    return index


def params_embedding(table: np.ndarray, idx: np.ndarray) -> dict[str, Any]:
    num, dim, dtype = _table("nn.embedding", table)
    index = _indices("nn.embedding", "idx", idx, num)
    return {"num": num, "dim": dim, "shape": [int(d) for d in idx.shape], "dtype": dtype, "index": index}


def params_bag(table: np.ndarray, indices: np.ndarray, offsets: np.ndarray, *maybe_weights: np.ndarray,
               mode: str = "mean", include_last_offset: bool = False, **unknown: Any) -> dict[str, Any]:
    op = "nn.embedding_bag"
    if unknown:
        raise DispatchError(f"{op}: unknown parameter(s) {sorted(unknown)}",
                            fix="pass per_sample_weights as the fourth array (positionally); the keywords are "
                                "mode and include_last_offset")
    num, dim, dtype = _table(op, table)
    if indices.ndim != 1 or offsets.ndim != 1:
        raise DispatchError(f"{op}: indices {indices.shape} and offsets {offsets.shape} must be 1-D",
                            fix="use the flat form: indices.ravel() and one offset per bag (torch's 1-D input)")
    index = _indices(op, "indices", indices, num)
    offset = _dtype(op, "offsets", offsets, INDEX, "uint32 or int32")
    n, o = int(indices.size), offsets.astype(np.int64)
    if o.size == 0 or o[0] != 0 or np.any(np.diff(o) < 0) or o[-1] > n:
        raise DispatchError(f"{op}: offsets must start at 0, never decrease and stay <= len(indices) = {n}; "
                            f"got {o[:8].tolist()}{' ...' if o.size > 8 else ''}",
                            fix="offsets[b] is where bag b starts in indices (torch's rule)")
    if include_last_offset not in (True, False) or (include_last_offset and o.size < 2):
        raise DispatchError(f"{op}: include_last_offset={include_last_offset!r} with {o.size} offsets",
                            fix="pass a bool; with True, give one more offset than bags (at least 2)")
    if mode not in MODES:
        raise DispatchError(f"{op}: mode {mode!r} is not one of {MODES}", fix="pass mode='sum', 'mean' or 'max'")
    if len(maybe_weights) > 1:
        raise DispatchError(f"{op} takes table, indices, offsets and optional per_sample_weights",
                            fix="pass at most four arrays")
    if maybe_weights:
        w = maybe_weights[0]
        if mode != "sum" or w.dtype != table.dtype or w.shape != indices.shape:
            raise DispatchError(f"{op}: per_sample_weights of dtype {w.dtype} and shape {w.shape} with mode "
                                f"{mode!r}; expected mode 'sum' and {table.dtype} of shape {indices.shape}",
                                fix="give one weight per index, in the table's dtype, with mode='sum' (torch's rule)")
    return {"num": num, "dim": dim, "n": n, "n_offsets": int(o.size), "dtype": dtype, "index": index,
            "offset": offset, "mode": mode, "weighted": bool(maybe_weights),
            "include_last_offset": bool(include_last_offset)}


def _needs(params: dict[str, Any]) -> frozenset[str]:
    return F16 if params.get("dtype") == "f16" else frozenset()


def _tol_bag(params: dict[str, Any]) -> Tolerance:
    if params.get("mode") == "max":
        return EXACT
    terms = params["n"] + 1
    if params.get("dtype") == "f16":
        return rel(2.0 ** -10, terms * 2.0 ** -22 + 2.0 ** -24)
    return rel(2.0 ** -21, terms * 2.0 ** -22)


# ----------------------------------------------------------------------------- witnesses
def _table_data(r: np.random.Generator, num: int, dim: int, dtype: str, specials: bool) -> np.ndarray:
    t = r.uniform(-1, 1, (num, dim)).astype(DTYPES[dtype])
    if specials:  # exact ops: NaN, infinities and -0.0 travel bit for bit
        flat = t.reshape(-1)
        flat[r.choice(flat.size, 5, replace=False)] = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0], t.dtype)
    return t


def witnesses_embedding() -> list[Witness]:
    r = np.random.default_rng(4601)
    out = []

    def add(name: str, table: np.ndarray, idx: np.ndarray) -> None:
        index = "u32" if idx.dtype == np.uint32 else "i32"
        params = {"num": table.shape[0], "dim": table.shape[1], "shape": list(idx.shape),
                  "dtype": "f32" if table.dtype == np.float32 else "f16", "index": index}
        out.append(Witness(name, params, (table, idx)))

    add("size1", np.array([[-0.0]], np.float32), np.array([0], np.uint32))
    idx = r.integers(0, 50, (3, 11)).astype(np.uint32)
    idx[0, :4] = [0, 49, 49, 0]  # first and last rows, repeated
    add("f32_50x7_u32_3x11", _table_data(r, 50, 7, "f32", True), idx)
    add("f32_8x300_i32_in_range", _table_data(r, 8, 300, "f32", True), np.array([7, 0, 3, 3, 7], np.int32))
    # out-of-range indices reach the kernel only past the convenience layer: rows of zeros
    bad = r.integers(-60, 60, 40).astype(np.int32)
    bad[:4] = [-1, 50, -(2**31), 2**31 - 1]
    add("i32_out_of_range_rows_are_zero", _table_data(r, 50, 5, "f32", True), bad)
    add("u32_out_of_range_rows_are_zero", _table_data(r, 20, 3, "f32", False),
        np.array([20, 0xFFFFFFFF, 19, 0, 21], np.uint32))
    add("f16_30x16_u32_2x3x4", _table_data(r, 30, 16, "f16", True), r.integers(0, 30, (2, 3, 4)).astype(np.uint32))
    return out


def witnesses_bag() -> list[Witness]:
    r = np.random.default_rng(4602)
    out = []

    def add(name: str, table: np.ndarray, idx: np.ndarray, offs: np.ndarray, mode: str,
            weights: np.ndarray | None = None, last: bool = False) -> None:
        params = {"num": table.shape[0], "dim": table.shape[1], "n": idx.size, "n_offsets": offs.size,
                  "dtype": "f32" if table.dtype == np.float32 else "f16",
                  "index": "u32" if idx.dtype == np.uint32 else "i32",
                  "offset": "u32" if offs.dtype == np.uint32 else "i32", "mode": mode,
                  "weighted": weights is not None, "include_last_offset": last}
        out.append(Witness(name, params, (table, idx, offs) + ((weights,) if weights is not None else ())))

    u32, i32 = np.uint32, np.int32
    add("size1_sum", np.array([[0.5]], np.float32), np.array([0], u32), np.array([0], u32), "sum")
    idx = r.integers(0, 40, 30).astype(u32)
    idx[:3] = [0, 39, 39]
    empty = np.array([0, 3, 3, 10, 10, 10, 29, 30], u32)  # empty bags inside and at the end
    for mode in MODES:
        add(f"{mode}_empty_bags", _table_data(r, 40, 9, "f32", mode == "max"), idx, empty, mode)
    add("sum_weighted", _table_data(r, 40, 9, "f32", False), idx, empty, "sum",
        weights=r.uniform(-1, 1, 30).astype(np.float32))
    add("mean_include_last_offset_i32", _table_data(r, 40, 4, "f32", False), idx.astype(i32),
        np.array([0, 5, 5, 17, 25], i32), "mean", last=True)
    ties = np.array([[-0.0, 1.0, np.nan], [0.0, np.nan, 2.0], [0.0, 3.0, 1.0]], np.float32)
    add("max_ties_and_nan_first_wins", ties, np.array([0, 1, 2, 1, 0], u32), np.array([0, 3], u32), "max")
    # out-of-range indices and offsets reach the kernel only past the convenience layer
    bad_idx = np.array([3, -1, 12, 5, 2**31 - 1, 0], i32)
    bad_offs = np.array([-4, 2, 1, 9], i32)  # negative, decreasing, past the end: clamped
    add("sum_out_of_range_is_zero_rows", _table_data(r, 12, 3, "f32", False), bad_idx, bad_offs, "sum")
    add("f16_mean", _table_data(r, 25, 16, "f16", False), r.integers(0, 25, 20).astype(u32),
        np.array([0, 1, 7, 7, 19], u32), "mean")
    return out


register(OpSpec(
    id="nn.embedding", category="nn",
    summary="Rows of a (num, dim) f32/f16 table at u32/i32 indices of any shape -> (*idx.shape, dim); "
            "out-of-range indices: DispatchError (host), zero rows (kernel).",
    build=build_embedding, reference=reference_embedding, witnesses=witnesses_embedding,
    params_for=params_embedding, tolerance=EXACT, needs_for=_needs,
))

register(OpSpec(
    id="nn.embedding_bag", category="nn",
    summary="Bags of table rows (torch's 1-D indices + offsets) reduced by sum (optionally weighted), mean or "
            "max -> (bags, dim); empty bags give zeros.",
    build=build_bag, reference=reference_bag, witnesses=witnesses_bag, params_for=params_bag,
    tolerance=rel(2.0 ** -21, 2.0 ** -22), tolerance_for=_tol_bag, needs_for=_needs,
    tolerance_rule=lambda p: "bit-exact for mode='max', else " + (
        "rtol=2^-10 atol=(n + 1)·2^-22 + 2^-24" if p.get("dtype") == "f16" else "rtol=2^-21 atol=(n + 1)·2^-22"),
))
