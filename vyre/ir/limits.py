"""Adapter limits the validator checks programs against."""

from __future__ import annotations

import dataclasses
import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Adapter limits the validator checks against (WebGPU defaults).

    Accepts a dict with snake_case, kebab-case (wgpu-py's ``adapter.limits``) or camelCase
    keys, or any object with such attributes; unknown keys are ignored.
    """

    max_compute_invocations_per_workgroup: int = 256
    max_compute_workgroup_size_x: int = 256
    max_compute_workgroup_size_y: int = 256
    max_compute_workgroup_size_z: int = 64
    max_compute_workgroup_storage_size: int = 16384
    max_uniform_buffer_binding_size: int = 65536
    #: a buffer's binding number must be below this (WebGPU's maxBindingsPerBindGroup)
    max_bindings_per_bind_group: int = 1000
    #: storage (read, read_write, write) buffers one program may declare; None (the default): not
    #: checked (WebGPU's default is 8, adapters commonly allow more; the GPU backend checks its device's)
    max_storage_buffers_per_shader_stage: int | None = None
    #: uniform buffers per shader stage, vyre's hidden params uniform included; None: not checked
    #: (WebGPU's default is 12)
    max_uniform_buffers_per_shader_stage: int | None = None
    #: loop iterations one invocation may run in all, counted where the program fixes them (vyre.ir.trips);
    #: None: not checked. The GPU backend sets 65535 on llvmpipe (lavapipe), which ends loops silently there
    max_loop_iterations: int | None = None

    @classmethod
    def of(cls, limits: object) -> Limits:
        """``limits`` as Limits: None gives the defaults (see the class docstring for what is accepted)."""
        if limits is None:
            return cls()
        if isinstance(limits, cls):
            return limits
        names = [f.name for f in dataclasses.fields(cls)]
        if isinstance(limits, Mapping):
            items: dict[str, object] = {_snake(str(k)): v for k, v in limits.items()}
        else:
            items = {}
            for f in names:
                camel = re.sub(r"_(\w)", lambda m: m.group(1).upper(), f)
                for attr in (f, camel):
                    if hasattr(limits, attr):
                        items[f] = getattr(limits, attr)
                        break
        return cls(**{k: _count(k, v) for k, v in items.items() if k in names and v is not None})


def _count(name: str, value: object) -> int:
    """A limit as an int (a Python or numpy integer; adapters report ints); anything else is a
    ValueError naming the limit, as pydantic's was."""
    if isinstance(value, bool):
        raise ValueError(f"limit {name}: expected an integer, got {value!r}")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(f"limit {name}: expected an integer, got {value!r:.40}") from None


def _snake(key: str) -> str:
    key = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key)
    return key.replace("-", "_").lower()


__all__ = ["Limits"]
