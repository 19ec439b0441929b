"""Capabilities of the live device (what was enabled, not just what the adapter offers)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..base import Capabilities
from .device import Device

#: Limits reported in DeviceProfile.limits.
KEY_LIMITS = (
    "max-storage-buffer-binding-size", "max-buffer-size", "max-uniform-buffer-binding-size",
    "max-compute-workgroup-size-x", "max-compute-workgroup-size-y", "max-compute-workgroup-size-z",
    "max-compute-invocations-per-workgroup", "max-compute-workgroups-per-dimension",
    "max-compute-workgroup-storage-size", "max-storage-buffers-per-shader-stage", "max-bind-groups",
)


@dataclass(frozen=True)
class DeviceProfile:
    """A backend-neutral description of the device (``to_dict()`` for logs and metrics)."""

    vendor: str
    vendor_id: int
    device: str
    device_id: int
    backend: str
    adapter_type: str
    driver: str
    features: tuple[str, ...]
    limits: dict[str, int]
    subgroup_min_size: int | None
    subgroup_max_size: int | None
    supports_f16: bool
    supports_subgroup_ops: bool
    supports_timestamps: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def max_workgroup_size(dev: Device) -> tuple[int, int, int]:
    return (dev.limit("max-compute-workgroup-size-x"), dev.limit("max-compute-workgroup-size-y"),
            dev.limit("max-compute-workgroup-size-z"))


def subgroup_size(dev: Device) -> tuple[int, int] | None:
    """(min, max) subgroup size the adapter reports, or None when unknown."""
    lo, hi = dev.info.get("subgroup_min_size"), dev.info.get("subgroup_max_size")
    return (int(lo), int(hi)) if lo and hi else None


def capabilities(dev: Device) -> Capabilities:
    """What the wgpu backend can do on this device (see :class:`vyre.backends.base.Capabilities`)."""
    f = dev.features
    return Capabilities(
        backend="wgpu", device=str(dev.info.get("device", "")), resident=True, native_pipelines=True,
        timestamps="timestamp-query" in f, f16="shader-f16" in f, subgroups="subgroup" in f,
        async_dispatch=True, max_storage_buffer_bytes=dev.limit("max-storage-buffer-binding-size"),
        max_workgroups_per_dimension=dev.limit("max-compute-workgroups-per-dimension"),
        max_workgroup_size=max_workgroup_size(dev),
        max_invocations_per_workgroup=dev.limit("max-compute-invocations-per-workgroup"),
        f64="shader-f64" in f, int64="shader-int64" in f,
        max_storage_buffers_per_stage=dev.limit("max-storage-buffers-per-shader-stage", 8))


def device_profile(dev: Device) -> DeviceProfile:
    info = dev.info
    sub = subgroup_size(dev)
    f = dev.features
    return DeviceProfile(
        vendor=info["vendor"], vendor_id=int(info.get("vendor_id", 0)), device=info["device"],
        device_id=int(info.get("device_id", 0)), backend=info["backend_type"],
        adapter_type=info["adapter_type"], driver=info["driver"], features=tuple(sorted(f)),
        limits={k: int(dev.limits[k]) for k in KEY_LIMITS if k in dev.limits},
        subgroup_min_size=sub[0] if sub else None, subgroup_max_size=sub[1] if sub else None,
        supports_f16="shader-f16" in f, supports_subgroup_ops="subgroup" in f,
        supports_timestamps="timestamp-query" in f,
    )


__all__ = ["DeviceProfile", "KEY_LIMITS", "capabilities", "device_profile", "max_workgroup_size", "subgroup_size"]
