"""Adapter enumeration and choice.

Ranking (best first): discrete GPU > integrated GPU > virtual GPU > CPU (lavapipe, WARP...)
> unknown, always on a native backend (Vulkan, Metal, D3D12) before anything else: an
OpenGL/GLES/D3D11 adapter is only chosen when no native one exists.

``VYRE_ADAPTER`` forces the choice: an index into ``wgpu.gpu.enumerate_adapters_sync()``
or a case-insensitive substring of the adapter's name (its ``device`` string; the backend
and vendor are matched too, so ``VYRE_ADAPTER=vulkan`` works).

Nothing here runs at import time, and ``wgpu`` is only imported inside functions.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ...errors import NoAdapterError
from .runtime_dir import ensure_runtime_dir
from .types import GPUAdapter

ENV_VAR = "VYRE_ADAPTER"

NATIVE_BACKENDS = frozenset({"Vulkan", "Metal", "D3D12"})
UNUSABLE_BACKENDS = frozenset({"Null", "Undefined"})
_TYPE_RANK = {"DiscreteGPU": 4, "IntegratedGPU": 3, "VirtualGPU": 2, "CPU": 1}

INSTALL_HINT = (
    "install a Vulkan driver: on a machine without a GPU use Mesa's lavapipe CPU driver "
    "(Debian/Ubuntu: `apt-get install mesa-vulkan-drivers`; Fedora: `dnf install mesa-vulkan-drivers`), "
    "or use vyre.ReferenceBackend, which needs no GPU"
)


@dataclass(frozen=True)
class AdapterChoice:
    index: int
    adapter: GPUAdapter
    info: dict[str, Any]


def adapter_info(adapter: GPUAdapter) -> dict[str, Any]:
    """The adapter's identity as a plain dict (device, vendor, backend_type, adapter_type, description, driver,
    vendor_id, device_id, subgroup_min_size, subgroup_max_size; unknown subgroup sizes are None)."""
    raw = adapter.info
    get = raw.get if hasattr(raw, "get") else (lambda k, d=None: getattr(raw, k, d))
    description = str(get("description", "") or "")
    return {
        "device": str(get("device", "") or ""),
        "vendor": str(get("vendor", "") or ""),
        "backend_type": str(get("backend_type", "") or ""),
        "adapter_type": str(get("adapter_type", "") or ""),
        "description": description,
        "driver": str(get("driver", "") or description),
        "vendor_id": int(get("vendor_id", 0) or 0),
        "device_id": int(get("device_id", 0) or 0),
        # wgpu-py 0.32 spells these "stackgroup_*"; later versions "subgroup_*"
        "subgroup_min_size": int(get("subgroup_min_size", 0) or get("stackgroup_min_size", 0) or 0) or None,
        "subgroup_max_size": int(get("subgroup_max_size", 0) or get("stackgroup_max_size", 0) or 0) or None,
    }


def describe(info: dict[str, Any]) -> str:
    return f"{info['device'] or '?'} ({info['backend_type']}, {info['adapter_type']})"


def is_usable(info: dict[str, Any]) -> bool:
    return info["backend_type"] not in UNUSABLE_BACKENDS


def rank(info: dict[str, Any]) -> tuple[int, int]:
    """Sort key, larger is better."""
    native = 1 if info["backend_type"] in NATIVE_BACKENDS else 0
    return (native, _TYPE_RANK.get(info["adapter_type"], 0))


def enumerate_adapters() -> list[GPUAdapter]:
    """``wgpu.gpu.enumerate_adapters_sync()``, with failures turned into NoAdapterError.

    A missing or invalid ``XDG_RUNTIME_DIR`` is replaced by a private directory first (see
    :mod:`.runtime_dir`), so that the Vulkan loader starts quietly."""
    ensure_runtime_dir()
    try:
        import wgpu  # why: lazy (importing vyre must not import wgpu), and a failing import is a NoAdapterError

        return list(wgpu.gpu.enumerate_adapters_sync())
    except Exception as exc:  # wgpu-native missing, loader crash...
        raise NoAdapterError(f"could not enumerate WebGPU adapters: {type(exc).__name__}: {exc}",
                             fix=INSTALL_HINT) from None


def _no_adapter(detail: str) -> NoAdapterError:
    return NoAdapterError(
        f"no usable WebGPU adapter: {detail}. vyre needs a Vulkan, Metal or D3D12 adapter; "
        "without a GPU, lavapipe (Mesa's Vulkan CPU driver) works: "
        "`apt-get install mesa-vulkan-drivers` on Debian/Ubuntu (a missing XDG_RUNTIME_DIR is no cause: vyre "
        "gives the process a private one)",
        fix=INSTALL_HINT,
    )


def choose(adapters: list[GPUAdapter], forced: str | None = None) -> AdapterChoice:
    """Pick the best usable adapter, or the one ``forced`` (``VYRE_ADAPTER``) names."""
    infos = [adapter_info(a) for a in adapters]
    listing = "; ".join(f"[{i}] {describe(inf)}" for i, inf in enumerate(infos)) or "none found"
    if forced is not None and forced.strip() != "":
        key = forced.strip()
        if key.lstrip("-").isdigit():
            return pick_index(adapters, int(key), source=f"{ENV_VAR}={forced}")
        needle = key.lower()
        matches = [
            i for i, inf in enumerate(infos)
            if is_usable(inf) and needle in " ".join(
                (inf["device"], inf["backend_type"], inf["vendor"], inf["description"])).lower()
        ]
        if not matches:
            raise NoAdapterError(
                f"{ENV_VAR}={forced!r} matches no usable adapter (adapters: {listing})",
                fix=f"set {ENV_VAR} to an adapter index or a substring of one of the names above, or unset it",
            )
        best = max(matches, key=lambda i: (rank(infos[i]), -i))
        return AdapterChoice(best, adapters[best], infos[best])
    usable = [i for i, inf in enumerate(infos) if is_usable(inf)]
    if not usable:
        raise _no_adapter(f"adapters enumerated: {listing}")
    best = max(usable, key=lambda i: (rank(infos[i]), -i))
    return AdapterChoice(best, adapters[best], infos[best])


def pick_index(adapters: list[GPUAdapter], index: int, source: str = "acquire_adapter") -> AdapterChoice:
    infos = [adapter_info(a) for a in adapters]
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(adapters):
        if not adapters:
            raise _no_adapter(f"{source}: adapter index {index!r} requested, but no adapter was enumerated")
        listing = "; ".join(f"[{i}] {describe(inf)}" for i, inf in enumerate(infos))
        raise NoAdapterError(
            f"{source}: adapter index {index!r} is out of range; adapters: {listing}",
            fix=f"use an index from 0 to {len(adapters) - 1}",
        )
    info = infos[index]
    if not is_usable(info):
        raise NoAdapterError(f"{source}: adapter [{index}] {describe(info)} cannot run compute work",
                             fix="pick another adapter index")
    return AdapterChoice(index, adapters[index], info)


def select_adapter(index: int | None = None) -> AdapterChoice:
    """Enumerate adapters and choose one: ``index`` if given, else ``VYRE_ADAPTER``, else the best."""
    adapters = enumerate_adapters()
    if index is not None:
        return pick_index(adapters, index)
    return choose(adapters, os.environ.get(ENV_VAR))


__all__ = ["AdapterChoice", "adapter_info", "choose", "pick_index", "select_adapter", "enumerate_adapters",
           "rank", "INSTALL_HINT", "ENV_VAR"]
