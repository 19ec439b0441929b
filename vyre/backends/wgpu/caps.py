"""Capabilities of the live device (what was enabled, not just what the adapter offers)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..base import Capabilities

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
    limits: dict
    subgroup_min_size: int | None
    subgroup_max_size: int | None
    supports_f16: bool
    supports_subgroup_ops: bool
    supports_timestamps: bool

    def to_dict(self) -> dict:
        return asdict(self)


class CapabilitiesMixin:
    """Needs: _features (frozenset), _limits (dict), _choice (AdapterChoice)."""

    def supports_f16(self) -> bool:
        """shader-f16 is enabled: f16 buffers and values run natively."""
        return "shader-f16" in self._features

    def supports_subgroup_ops(self) -> bool:
        """The subgroup feature is enabled on the device."""
        return "subgroup" in self._features

    def supports_timestamps(self) -> bool:
        """timestamp-query is enabled (GPU timing of dispatches)."""
        return "timestamp-query" in self._features

    def max_workgroup_size(self) -> tuple[int, int, int]:
        return tuple(int(self._limits[f"max-compute-workgroup-size-{a}"]) for a in "xyz")  # type: ignore[return-value]

    def max_compute_invocations_per_workgroup(self) -> int:
        return int(self._limits["max-compute-invocations-per-workgroup"])

    def max_storage_buffer_bytes(self) -> int:
        """The largest storage buffer binding, in bytes."""
        return int(self._limits["max-storage-buffer-binding-size"])

    def max_compute_workgroups_per_dimension(self) -> int:
        return int(self._limits["max-compute-workgroups-per-dimension"])

    def subgroup_size(self) -> tuple[int, int] | None:
        """(min, max) subgroup size the adapter reports, or None when unknown."""
        info = self._choice.info
        lo, hi = info.get("subgroup_min_size"), info.get("subgroup_max_size")
        return (int(lo), int(hi)) if lo and hi else None

    def capabilities(self) -> Capabilities:
        """What this backend can do on this device (see :class:`vyre.backends.base.Capabilities`)."""
        return Capabilities(
            backend="wgpu", device=str(self._choice.info.get("device", "")), resident=True, native_pipelines=True,
            timestamps=self.supports_timestamps(), f16=self.supports_f16(), subgroups=self.supports_subgroup_ops(),
            async_dispatch=True, max_storage_buffer_bytes=self.max_storage_buffer_bytes(),
            max_workgroups_per_dimension=self.max_compute_workgroups_per_dimension(),
            max_workgroup_size=self.max_workgroup_size(),
            max_invocations_per_workgroup=self.max_compute_invocations_per_workgroup())

    def device_profile(self) -> DeviceProfile:
        info = self._choice.info
        sub = self.subgroup_size()
        return DeviceProfile(
            vendor=info["vendor"], vendor_id=int(info.get("vendor_id", 0)), device=info["device"],
            device_id=int(info.get("device_id", 0)), backend=info["backend_type"],
            adapter_type=info["adapter_type"], driver=info["driver"], features=tuple(sorted(self._features)),
            limits={k: int(self._limits[k]) for k in KEY_LIMITS if k in self._limits},
            subgroup_min_size=sub[0] if sub else None, subgroup_max_size=sub[1] if sub else None,
            supports_f16=self.supports_f16(), supports_subgroup_ops=self.supports_subgroup_ops(),
            supports_timestamps=self.supports_timestamps(),
        )


__all__ = ["CapabilitiesMixin", "DeviceProfile", "KEY_LIMITS"]
