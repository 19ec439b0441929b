"""Subgroup operations in the reference interpreter: a simulated subgroup of a chosen size.

The model (docs/builder.md, "Subgroup operations"), for a subgroup size ``S`` (a power of two,
4..128, ``ReferenceBackend(subgroup_size=32)`` by default):

* the invocations of a workgroup form subgroups of ``S`` consecutive local invocation indices:
  invocation ``local_index`` is lane ``local_index % S`` of subgroup ``local_index // S``
  (the last subgroup of a workgroup whose size is not a multiple of ``S`` is partly empty);
* an operation sees only the **active** invocations of the subgroup (those whose control flow
  reaches it; lanes that do not exist or were guarded out contribute nothing);
* reductions and scans combine the active lanes in lane order (float sums may round in another
  order on a GPU); an exclusive scan gives lane 0 the identity (+0.0 for float sums, as SPIR-V);
* a broadcast or shuffle from an inactive or out-of-range lane gives 0 here (WGSL leaves it
  indeterminate: programs must not rely on it); a ballot sets bit ``i`` of the
  ``vec4<u32>`` (word ``i // 32``) for each active lane ``i`` whose predicate is true.
"""

from __future__ import annotations

import numpy as np

from ..ir.nodes import SubgroupOp

_ADD_LIKE = {SubgroupOp.ADD, SubgroupOp.INCLUSIVE_ADD, SubgroupOp.EXCLUSIVE_ADD}
_MUL_LIKE = {SubgroupOp.MUL, SubgroupOp.INCLUSIVE_MUL, SubgroupOp.EXCLUSIVE_MUL}
_SCANS = {SubgroupOp.INCLUSIVE_ADD, SubgroupOp.EXCLUSIVE_ADD, SubgroupOp.INCLUSIVE_MUL, SubgroupOp.EXCLUSIVE_MUL}
_GATHERS = {SubgroupOp.BROADCAST, SubgroupOp.SHUFFLE, SubgroupOp.SHUFFLE_XOR, SubgroupOp.SHUFFLE_UP,
            SubgroupOp.SHUFFLE_DOWN}
_BIT_REDUCE = {SubgroupOp.AND: np.bitwise_and, SubgroupOp.OR: np.bitwise_or, SubgroupOp.XOR: np.bitwise_xor}


def valid_subgroup_size(size: object) -> bool:
    """Whether ``size`` is a subgroup size the interpreter simulates (a power of two in 4..128)."""
    return isinstance(size, int) and not isinstance(size, bool) and 4 <= size <= 128 and size & (size - 1) == 0


def _identity(op: SubgroupOp, dtype: np.dtype) -> object:
    if op in _ADD_LIKE:
        return -0.0 if dtype.kind == "f" else 0  # -0.0: the IEEE additive identity (a sum of -0.0 is -0.0)
    if op in _MUL_LIKE:
        return 1
    if op is SubgroupOp.MIN:
        return np.inf if dtype.kind == "f" else np.iinfo(dtype).max
    if op is SubgroupOp.MAX:
        return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min
    if op is SubgroupOp.AND:
        return -1 if dtype.kind == "i" else np.iinfo(dtype).max
    if op is SubgroupOp.ALL:
        return True
    return 0  # or, xor, any, gathers: False / 0


def _reduce(op: SubgroupOp, dense: np.ndarray) -> np.ndarray:
    """Combine along axis 1 (the lanes of each subgroup); f16 is combined in f32 and rounded once."""
    work = dense.astype(np.float32) if dense.dtype == np.float16 else dense
    if op is SubgroupOp.ADD:
        out = np.sum(work, axis=1, dtype=work.dtype)  # integer sums wrap
    elif op is SubgroupOp.MUL:
        out = np.prod(work, axis=1, dtype=work.dtype)
    elif op is SubgroupOp.MIN:
        out = np.min(work, axis=1)
    elif op is SubgroupOp.MAX:
        out = np.max(work, axis=1)
    elif op in _BIT_REDUCE:
        out = _BIT_REDUCE[op].reduce(work, axis=1)
    elif op is SubgroupOp.ALL:
        out = np.all(work, axis=1)
    else:  # ANY
        out = np.any(work, axis=1)
    return np.asarray(out).astype(dense.dtype)


def _scan(op: SubgroupOp, dense: np.ndarray) -> np.ndarray:
    work = dense.astype(np.float32) if dense.dtype == np.float16 else dense
    fn = np.cumsum if op in _ADD_LIKE else np.cumprod
    inclusive = fn(work, axis=1, dtype=work.dtype)
    if op in (SubgroupOp.INCLUSIVE_ADD, SubgroupOp.INCLUSIVE_MUL):
        return inclusive.astype(dense.dtype)
    first = np.full_like(inclusive[:, :1], 0 if op in _ADD_LIKE else 1)  # +0.0 like SPIR-V's scan identity
    return np.concatenate([first, inclusive[:, :-1]], axis=1).astype(dense.dtype)


def subgroup_op(op: SubgroupOp, value: np.ndarray, lane: np.ndarray | None, mask: np.ndarray,
                group: np.ndarray, pos: np.ndarray, size: int, n_groups: int) -> np.ndarray:
    """``op`` over the lanes of a chunk: ``value`` (and ``lane``) per lane or of width 1, ``mask`` the
    active lanes, ``group``/``pos`` each lane's subgroup (0..n_groups-1) and position in it."""
    n = group.shape[0]
    v = np.broadcast_to(value, (n,) + value.shape[1:])
    act_g, act_p = group[mask], pos[mask]
    if op is SubgroupOp.BALLOT:
        words = np.zeros((n_groups, 4), dtype=np.uint32)
        on = v[mask]
        g, p = act_g[on], act_p[on]
        np.bitwise_or.at(words, (g, p // 32), (np.uint32(1) << (p % 32).astype(np.uint32)))
        ballot: np.ndarray = words[group]
        return ballot
    dense = np.full((n_groups, size) + v.shape[1:], _identity(op, v.dtype), dtype=v.dtype)
    dense[act_g, act_p] = v[mask]
    result: np.ndarray
    if op in _SCANS:
        result = _scan(op, dense)[group, pos]
        return result
    if op not in _GATHERS and op is not SubgroupOp.BROADCAST_FIRST:
        result = _reduce(op, dense)[group]
        return result
    active = np.zeros((n_groups, size), dtype=bool)
    active[act_g, act_p] = True
    if op is SubgroupOp.BROADCAST_FIRST:
        result = dense[group, np.argmax(active, axis=1)[group]]
        return result
    assert lane is not None  # validated: the lane ops have a lane
    k = np.broadcast_to(lane, (n,)).astype(np.int64)
    if op is SubgroupOp.SHUFFLE_XOR:
        src = pos ^ k
    elif op is SubgroupOp.SHUFFLE_UP:
        src = pos - k
    elif op is SubgroupOp.SHUFFLE_DOWN:
        src = pos + k
    else:  # broadcast, shuffle
        src = k
    ok = (src >= 0) & (src < size)
    src = np.where(ok, src, 0)
    ok &= active[group, src]
    out = dense[group, src]
    zero = np.zeros((), dtype=v.dtype)
    return np.where(ok[:, None] if out.ndim == 2 else ok, out, zero)


__all__ = ["subgroup_op", "valid_subgroup_size"]
