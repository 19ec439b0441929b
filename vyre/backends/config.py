"""DispatchConfig: per-dispatch options shared by every backend."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..errors import DispatchError

#: Largest value of one grid dimension and of the grid's total workgroup count: the hidden params
#: uniform holds them as u32 words.
MAX_GRID_WORKGROUPS = 2**32 - 1

_GRID_FIX = "give the grid as an int or a tuple of up to three ints >= 1, e.g. grid=(64, 4)"


#: (type, grid as given with element types) -> its DispatchConfig (see coerce)
_GRID_CONFIGS: dict[tuple[Any, ...], DispatchConfig] = {}
_GRID_CONFIGS_CAP = 4096


def _is_int(v: object) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def check_grid(grid: Any) -> tuple[int, int, int]:
    """``grid`` (an int or 1-3 ints) as an (x, y, z) triple, or a DispatchError saying what is wrong."""
    dims = (grid,) if _is_int(grid) else grid
    if not isinstance(dims, (tuple, list)) or not 1 <= len(dims) <= 3 or not all(_is_int(g) for g in dims):
        raise DispatchError(f"invalid grid {grid!r}: expected an int or a tuple of 1 to 3 ints", fix=_GRID_FIX)
    x, y, z = (int(g) for g in tuple(dims) + (1,) * (3 - len(dims)))
    if min(x, y, z) < 0:
        raise DispatchError(f"invalid grid {grid!r}: dimensions must be >= 1", fix=_GRID_FIX)
    if min(x, y, z) == 0:
        # a zero grid would run nothing and hand the inputs back as if they were results
        raise DispatchError(f"grid {grid!r} has a dimension of 0: the dispatch would run no workgroup and return "
                            "its inputs unchanged as outputs",
                            fix="give every grid dimension >= 1 (unused dimensions are 1), or skip the dispatch "
                                "when there is no work")
    if x * y * z > MAX_GRID_WORKGROUPS:
        raise DispatchError(
            f"grid {(x, y, z)} has {x * y * z} workgroups, more than the {MAX_GRID_WORKGROUPS} a dispatch can address",
            fix="use larger workgroups, a grid-stride loop or several dispatches")
    return (x, y, z)


class DispatchConfig(BaseModel):
    """Options of one dispatch.

    grid:
        Logical number of workgroups (x, y, z): an int or a tuple of up to three ints >= 1
        (a 0 would run nothing and return the inputs as outputs: DispatchError), at most
        2**32 - 1 workgroups in all. Default (:func:`vyre.backends.host.default_grid`, the
        same on every path): ``ceil(count / workgroup invocations)`` workgroups along x, where
        ``count`` is the element count of the program's ``grid_from`` buffer when it names
        one; else of the first writable buffer, but only where that cannot silently cover
        part of the work: a program reading ``global_id``, ``workgroup_id`` or
        ``num_workgroups`` along y or z, or one with a readable storage (non-uniform) buffer
        larger than its first writable buffer, raises DispatchError before any GPU work
        (fix: pass a grid, or build the program with ``grid_from='name'``). Any dimension may exceed the
        adapter's per-dimension limit: the backend folds the grid into y/z and the
        built-ins (``global_index``, ``workgroup_id``, ``num_workgroups``...) still see
        the logical grid.
    counts:
        Element counts of runtime-sized ``write`` buffers (which have no input to take a
        size from), by buffer name. Default for such a buffer: the element count of the
        first input buffer.
    label:
        A debug label passed to the GPU API.

    Every invalid field raises :class:`vyre.errors.DispatchError`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    grid: tuple[int, int, int] | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    label: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _check(cls, data: Any) -> Any:
        # All checks here, raising DispatchError (pydantic lets it through): pydantic's own
        # ValidationError never reaches the caller.
        if not isinstance(data, dict):
            raise DispatchError(f"invalid dispatch config {data!r}", fix="pass a vyre.DispatchConfig")
        extra = sorted(set(data) - set(cls.model_fields))
        if extra:
            raise DispatchError(f"DispatchConfig has no field(s) {', '.join(map(repr, extra))}",
                                fix="the fields are grid, counts and label")
        out = dict(data)
        if out.get("grid") is not None:
            out["grid"] = check_grid(out["grid"])
        counts = out.get("counts")
        if counts is not None:
            if not isinstance(counts, dict) or not all(isinstance(k, str) for k in counts):
                raise DispatchError(f"invalid counts {counts!r}: expected a dict of buffer name -> int",
                                    fix="e.g. counts={'out': 1024}")
            bad = {k: v for k, v in counts.items() if not _is_int(v) or not 0 <= int(v) <= MAX_GRID_WORKGROUPS}
            if bad:
                raise DispatchError(f"invalid counts {bad!r}: element counts are ints from 0 to {MAX_GRID_WORKGROUPS}",
                                    fix="e.g. counts={'out': 1024}")
            out["counts"] = {k: int(v) for k, v in counts.items()}
        label = out.get("label")
        if label is not None and not isinstance(label, str):
            raise DispatchError(f"invalid label {label!r}: expected a str or None", fix="e.g. label='my-kernel'")
        return out

    @classmethod
    def coerce(cls, config: Any, what: str = "dispatch config") -> DispatchConfig | None:
        """``config`` as a DispatchConfig: None stays None, an int or a tuple is a grid, a dict the fields.

        The one conversion of every dispatch path (dispatch, dispatch_resident, sequence steps,
        batches, async, timed, compile; both backends); anything invalid raises DispatchError.
        """
        if config is None or isinstance(config, DispatchConfig):
            return config
        if _is_int(config) or isinstance(config, (tuple, list)):
            # grids repeat (every evaluation of a reduction passes the same tuples): one frozen config each,
            # built once, so the per-dispatch plan memo (keyed by the config object) finds it again
            key = (type(config), tuple([(type(v), v) for v in config])) \
                if isinstance(config, (tuple, list)) else (type(config), config)  # types: True is not 1
            hit = _GRID_CONFIGS.get(key) if cls is DispatchConfig else None
            if hit is not None:
                return hit
            try:
                made = cls(grid=config)
            except DispatchError as exc:
                raise DispatchError(f"{what}: {exc.message}", fix=exc.fix) from None
            if cls is DispatchConfig:
                if len(_GRID_CONFIGS) >= _GRID_CONFIGS_CAP:
                    _GRID_CONFIGS.clear()
                _GRID_CONFIGS[key] = made
            return made
        if isinstance(config, dict):
            return cls.model_validate(config)
        raise DispatchError(f"{what}: invalid config {config!r}",
                            fix="pass a vyre.DispatchConfig, a grid (an int or a tuple of up to three ints) or None")


#: The default config, shared (it is frozen).
DEFAULT_CONFIG = DispatchConfig()


__all__ = ["DispatchConfig", "DEFAULT_CONFIG", "MAX_GRID_WORKGROUPS", "check_grid"]
