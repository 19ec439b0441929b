"""DispatchConfig: per-dispatch options shared by every backend."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..ir.types import pad3


class DispatchConfig(BaseModel):
    """Options of one dispatch.

    grid:
        Logical number of workgroups (x, y, z). Default: enough workgroups for one
        invocation per element of the first writable buffer. Any dimension may exceed the
        adapter's per-dimension limit: the backend folds the grid into y/z and the
        built-ins (``global_index``, ``workgroup_id``, ``num_workgroups``...) still see
        the logical grid.
    counts:
        Element counts of runtime-sized ``write`` buffers (which have no input to take a
        size from), by buffer name. Default for such a buffer: the element count of the
        first input buffer.
    label:
        A debug label passed to the GPU API.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    grid: tuple[int, int, int] | None = None
    counts: dict[str, int] = Field(default_factory=dict)
    label: str | None = None

    @field_validator("grid", mode="before")
    @classmethod
    def _pad(cls, v):
        return None if v is None else pad3(v)

    @field_validator("grid")
    @classmethod
    def _positive(cls, v):
        if v is not None and any(int(g) < 0 for g in v):
            raise ValueError(f"grid dimensions must be >= 0, got {v}")
        return v


__all__ = ["DispatchConfig"]
