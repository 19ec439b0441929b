"""Bind groups through wgpu-native: one ``wgpuDeviceCreateBindGroup`` call per group, for the eager path's
bindings (vyre/backends/wgpu/bindings.py reaches it as ``NativeCalls.bind_group``).

Behind native.py's version gate: :class:`NativeBindGroups` is made by :class:`~.native.NativeCalls` alone,
so this module is reached only through that gate. wgpu-py builds a bind group's descriptor through checked
structs: ~90 µs per group on lavapipe's host, the largest cost of an eager training step (564 groups per
transformer step on the H200); here the descriptor is filled directly and the handle wrapped as wgpu-py's own
GPUBindGroup (which releases it when collected).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .types import GPUBuffer, GPUDevice

if TYPE_CHECKING:  # why: annotations only; native.py imports this module
    from .native import NativeCalls


class NativeBindGroups:
    """``nat.bind_group(device, layout, entries, label)``: wgpu-native's entry point and wgpu-py's types it needs."""

    __slots__ = ("_nat", "_create", "_group_type", "_device_type", "_method")

    def __init__(self, nat: NativeCalls, api: Any, lib: Any) -> None:
        self._nat = nat
        self._create = lib.wgpuDeviceCreateBindGroup
        self._group_type = api.GPUBindGroup
        self._device_type = api.GPUDevice
        self._method = api.GPUDevice.create_bind_group

    def __call__(self, device: GPUDevice, layout: Any, entries: Sequence[tuple[int, GPUBuffer, int]],
                 label: str) -> Any:
        """A bind group of ``layout`` over ``entries`` ((binding, buffer, size), offsets 0) made by one direct
        call, as a wgpu-py GPUBindGroup (it releases the handle when collected); None where ``device`` is not a
        plain wgpu-native device with wgpu-py's own ``create_bind_group`` (a patched one sees every call)."""
        dt = type(device)
        if dt is not self._device_type or dt.create_bind_group is not self._method or not device._internal:
            return None
        nat = self._nat
        ffi = nat.ffi
        arr = ffi.new("WGPUBindGroupEntry[]", len(entries))  # zeroed: no sampler, no texture view
        for e, (binding, buf, size) in zip(arr, entries):
            e.binding, e.buffer, e.offset, e.size = binding, buf._internal, 0, size
        text = label.encode()
        name = ffi.new("char[]", text)
        desc = ffi.new("WGPUBindGroupDescriptor *")
        desc.label.data, desc.label.length = name, len(text)
        desc.layout, desc.entryCount, desc.entries = layout._internal, len(entries), arr
        with nat.checked():
            handle = self._create(device._internal, desc)
        return self._group_type(label, handle, device)


__all__ = ["NativeBindGroups"]
