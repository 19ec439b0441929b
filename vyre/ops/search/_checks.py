"""Input checks shared by ``search.knn`` and ``FlatIndex``: typed errors with a fix, raised before
any GPU work."""

from __future__ import annotations

import numpy as np

from ...errors import DispatchError

METRICS = ("ip", "l2")


def check_metric(where: str, metric: object) -> str:
    if metric not in METRICS:
        raise DispatchError(f"{where}: metric must be 'ip' (largest inner product first) or 'l2' (smallest "
                            f"squared L2 distance first), got {metric!r}", fix="pass metric='ip' or metric='l2'")
    return str(metric)


def check_dim(where: str, dim: object) -> int:
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or int(dim) < 1:
        raise DispatchError(f"{where}: dim must be an int >= 1, got {dim!r}", fix="pass the vectors' length, e.g. 128")
    return int(dim)


def check_vectors(where: str, label: str, x: object, dim: int | None, *, allow_empty: bool = False) -> np.ndarray:
    """A C-contiguous (rows, dim) float32 array of finite values; ``dim=None`` accepts any width."""
    if not isinstance(x, np.ndarray):
        raise DispatchError(f"{where}: {label} must be a numpy array, got {type(x).__name__}",
                            fix=f"pass np.asarray({label}, dtype=np.float32)")
    if x.dtype != np.float32:
        raise DispatchError(f"{where}: {label} has dtype {x.dtype}, expected float32",
                            fix=f"pass {label}.astype(np.float32)")
    want = f"(rows, {dim})" if dim is not None else "(rows, dim)"
    if x.ndim != 2 or (dim is not None and x.shape[1] != dim) or x.shape[1] == 0:
        raise DispatchError(f"{where}: {label} has shape {x.shape}, expected {want}",
                            fix=f"pass a 2-D array of shape {want}" + (" (one vector: x.reshape(1, -1))"
                                                                       if x.ndim == 1 else ""))
    if x.shape[0] == 0 and not allow_empty:
        raise DispatchError(f"{where}: {label} has no rows", fix=f"pass at least one vector in {label}")
    if not np.isfinite(x).all():
        raise DispatchError(f"{where}: {label} contains NaN or infinity, which have no portable rank",
                            fix=f"replace them first, e.g. np.nan_to_num({label})")
    return np.ascontiguousarray(x)


def check_k(where: str, k: object, n: int) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise DispatchError(f"{where}: k must be an int, got {k!r}", fix="pass k=10, for example")
    k = int(k)
    if n < 1:
        raise DispatchError(f"{where}: the database is empty", fix="add vectors before searching")
    if not 1 <= k <= n:
        raise DispatchError(f"{where}: k={k} is outside 1..{n} (the database holds {n} vectors)",
                            fix=f"pass k between 1 and {n}")
    return k


__all__ = ["METRICS", "check_metric", "check_dim", "check_vectors", "check_k"]
