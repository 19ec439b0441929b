"""Memory of the reference interpreter: storage buffers and workgroup arrays in storage layout,
with loads, stores and atomics over lane arrays (see :mod:`vyre.backends.interpreter`)."""

from __future__ import annotations

import numpy as np

from ..ir.nodes import AtomicOp
from ..ir.types import DataType


class Memory:
    """A storage buffer or a chunk's workgroup array, in storage layout.

    ``view`` is ``(slots,)`` for scalars or ``(slots, storage_lanes)`` for vectors, sharing
    memory with ``data``. Element ``i`` of the copy used by lane ``k`` lives at slot
    ``base[k] + i`` (``base`` is None for storage buffers, which have one copy).
    """

    def __init__(self, name: str, dtype: DataType, count: int, data: np.ndarray, base: np.ndarray | None = None,
                 copies: int = 1):
        self.name = name
        self.dtype = dtype
        self.count = count
        self.data = data
        self.base = base
        self.lanes = dtype.lanes
        slots = count * copies
        if dtype.is_vector:
            self.view = data[: slots * dtype.storage_lanes].reshape(slots, dtype.storage_lanes)
        else:
            self.view = data[:slots]

    def address(self, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(slot, in_bounds) for an index value (u32 or i32; negative i32 is out of bounds)."""
        i = index.astype(np.int64)
        ok = (i >= 0) & (i < self.count)
        slot = np.where(ok, i, 0)
        if self.base is not None:
            slot = self.base + slot
        return slot, ok

    def load(self, index: np.ndarray) -> np.ndarray:
        slot, ok = self.address(index)
        vdtype = self.dtype.numpy_dtype
        if self.count == 0:
            shape = (slot.shape[0], self.lanes) if self.lanes > 1 else (slot.shape[0],)
            return np.zeros(shape, dtype=vdtype)
        v = self.view[slot]
        if self.lanes == 3:
            v = v[:, :3]
        if not ok.all():
            v = v.copy()
            v[~np.broadcast_to(ok, slot.shape)] = 0
        out: np.ndarray = v != 0 if self.dtype is DataType.BOOL else v
        return out

    def store(self, index: np.ndarray, value: np.ndarray, mask: np.ndarray) -> None:
        slot, ok = self.address(index)
        act = mask & ok
        if self.count == 0 or not act.any():
            return
        n = act.shape[0]
        slots = np.broadcast_to(slot, (n,))[act]
        vals = np.broadcast_to(value, (n,) + value.shape[1:])[act]
        if self.dtype is DataType.BOOL:
            vals = vals.astype(np.uint32)
        if self.lanes > 1:
            self.view[slots, : self.lanes] = vals
        else:
            self.view[slots] = vals

    # ---- atomics: consistent with running the active lanes one at a time in lane order
    def atomic(self, op: AtomicOp, index: np.ndarray, value: np.ndarray | None, expected: np.ndarray | None,
               mask: np.ndarray) -> np.ndarray:
        n = mask.shape[0]
        dtype = self.dtype.numpy_dtype
        old = np.zeros(n, dtype=dtype)
        slot, ok = self.address(index)
        lanes = np.flatnonzero(mask & ok)
        if self.count == 0 or lanes.size == 0:
            return old
        addr = np.broadcast_to(slot, (n,))[lanes]
        if op is AtomicOp.LOAD:
            old[lanes] = self.view[addr]
            return old
        assert value is not None  # every atomic but load has a value (validated)
        vals = np.broadcast_to(value, (n,))[lanes]
        order = np.argsort(addr, kind="stable")  # lane order kept inside each address
        a = addr[order]
        v = vals[order]
        start = np.empty(a.size, dtype=bool)
        start[0] = True
        np.not_equal(a[1:], a[:-1], out=start[1:])
        end = np.empty(a.size, dtype=bool)
        end[-1] = True
        end[:-1] = start[1:]
        base = self.view[a]
        if op in (AtomicOp.ADD, AtomicOp.SUB):
            old_s, final = _scan_add(base, v, start, end, op is AtomicOp.SUB)
        elif op is AtomicOp.EXCHANGE:
            old_s = np.empty_like(v)
            old_s[0] = base[0]
            old_s[1:] = np.where(start[1:], base[1:], v[:-1])
            final = v[end]
        elif op is AtomicOp.COMPARE_EXCHANGE:
            assert expected is not None  # compare_exchange has an expected value (validated)
            exp = np.broadcast_to(expected, (n,))[lanes][order]
            old_s, final = _compare_exchange(base, v, exp, start, end)
        else:
            ufunc = {
                AtomicOp.MIN: np.minimum, AtomicOp.MAX: np.maximum, AtomicOp.AND: np.bitwise_and,
                AtomicOp.OR: np.bitwise_or, AtomicOp.XOR: np.bitwise_xor,
            }[op]
            incl = _segmented_scan(ufunc, v, start)
            old_s = base.copy()
            follow = ~start
            old_s[follow] = ufunc(base[follow], incl[np.flatnonzero(follow) - 1])
            final = ufunc(base[end], incl[end])
        self.view[a[end]] = final
        old[lanes[order]] = old_s
        return old


def _scan_add(base: np.ndarray, v: np.ndarray, start: np.ndarray, end: np.ndarray,
              subtract: bool) -> tuple[np.ndarray, np.ndarray]:
    """Old values and final value per address of grouped atomic add/sub (wrapping)."""
    u = v.view(np.uint32).astype(np.uint64)
    incl = np.cumsum(u, dtype=np.uint64)
    excl = incl - u
    group = np.cumsum(start) - 1
    excl = excl - excl[start][group]  # exclusive sum within the address group
    total = (excl + u)[end]
    b = base.view(np.uint32).astype(np.uint64)
    if subtract:
        old = b - excl
        final = b[end] - total
    else:
        old = b + excl
        final = b[end] + total
    return old.astype(np.uint32).view(base.dtype), final.astype(np.uint32).view(base.dtype)


def _segmented_scan(ufunc: np.ufunc, v: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Inclusive scan of ``ufunc`` restarting at every ``start`` (Hillis-Steele doubling)."""
    acc = v.copy()
    group = np.cumsum(start)
    d = 1
    while d < acc.size:
        same = group[d:] == group[:-d]
        if not same.any():
            break
        acc[d:] = np.where(same, ufunc(acc[:-d], acc[d:]), acc[d:])
        d *= 2
    return acc


def _compare_exchange(base: np.ndarray, v: np.ndarray, exp: np.ndarray, start: np.ndarray,
                      end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sequential compare-exchange; vectorized for addresses touched by one lane only."""
    single = start & end
    old = base.copy()
    final_all = np.where(single & (base == exp), v, base)
    for s in np.flatnonzero(start & ~end):
        cur = base[s]
        k = s
        while True:
            old[k] = cur
            if cur == exp[k]:
                cur = v[k]
            if end[k]:
                break
            k += 1
        final_all[k] = cur
    return old, final_all[end]


__all__ = ["Memory"]
