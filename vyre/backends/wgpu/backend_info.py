"""WgpuBackend's read-only face: its identity (adapter, limits, features, generation), its configuration
knobs (pipeline cache capacity, pool budget, disk cache directory), its counters (``stats()``) and what the
device can do (capabilities and limits).

:class:`BackendInfo` holds these methods and properties for :class:`~.backend.WgpuBackend`, which inherits
them: each reads one of the backend's parts (no state of its own), so backend.py keeps the ways of running
work and the lifecycle.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from ..base import Capabilities
from . import caps
from .device import Device
from .executor import Executor
from .pipeline_store import PipelineStore
from .pool import BufferPool
from .resident import ResidentStore
from .stats import snapshot
from .transfer import Stats
from .types import GPUDevice, GPUQueue


class BackendInfo:
    """Identity, configuration, counters and capabilities of a :class:`~.backend.WgpuBackend` (its parts are
    set by the backend's constructor)."""

    _dev: Device
    _stats: Stats
    _store: PipelineStore
    _pool: BufferPool
    _executor: Executor
    _resident: ResidentStore

    # ---- identity, configuration and counters ---------------------------------------------------
    @property
    def adapter_info(self) -> dict[str, Any]:
        return dict(self._dev.info)

    @property
    def adapter_index(self) -> int:
        return self._dev.choice.index

    @property
    def device_limits(self) -> dict[str, int]:
        return dict(self._dev.limits)

    @property
    def features(self) -> frozenset[str]:
        """Features enabled on the device."""
        return self._dev.features

    @property
    def generation(self) -> int:
        """The device generation: bumped when the device is lost, replaced or shut down."""
        return self._dev.generation

    @property
    def lowering_contract(self) -> str:
        """The lowering version string that keys the caches."""
        return self._store.contract

    @property
    def pipeline_cache_capacity(self) -> int:
        return self._store.cache.capacity

    @pipeline_cache_capacity.setter
    def pipeline_cache_capacity(self, value: int) -> None:
        with self._dev.lock:
            self._store.cache.capacity = value

    @property
    def pool_budget_bytes(self) -> int:
        """The buffer pool's byte cap (buffers above it are destroyed, least recently used first)."""
        return self._pool.cap_bytes

    @pool_budget_bytes.setter
    def pool_budget_bytes(self, value: int) -> None:
        with self._dev.lock:
            self._pool.cap_bytes = int(value)

    @property
    def disk_cache_dir(self) -> Path | None:
        """The disk cache's directory for this lowering contract (None when the disk cache is off)."""
        disk = self._store.disk
        return disk.dir if disk is not None else None

    def device_queue(self) -> tuple[GPUDevice, GPUQueue]:
        """The live ``(GPUDevice, GPUQueue)``; hold ``backend.lock`` while using them alongside dispatches."""
        return self._dev.device, self._dev.queue

    @property
    def lock(self) -> threading.RLock:
        return self._dev.lock

    @property
    def max_storage_bytes_limit(self) -> int:
        return self._dev.limit("max-storage-buffer-binding-size")

    def stats(self) -> dict[str, Any]:
        """Counters. Flat keys (dispatches, submits, batches, buffers_created, bind_groups_created,
        bytes_uploaded, bytes_read_back, lowerings, validations, disk_cache_*, ...) and sections:
        ``pipeline_cache``, ``disk_cache``, ``buffer_pool``, ``resident``, ``adapter``."""
        with self._dev.lock:
            return snapshot(self._dev, self._stats, self._store, self._pool, self._executor, self._resident)

    def __repr__(self) -> str:
        i, dev = self._dev.info, self._dev
        state = " shut down" if dev.closed else (" lost" if dev.lost else "")
        return f"WgpuBackend([{dev.choice.index}] {i['device']!r}, {i['backend_type']}, {i['adapter_type']}{state})"

    # ---- capabilities ---------------------------------------------------------------------------
    def capabilities(self) -> Capabilities:
        """What this backend can do on this device (see :class:`vyre.backends.base.Capabilities`)."""
        return caps.capabilities(self._dev)

    def device_profile(self) -> caps.DeviceProfile:
        return caps.device_profile(self._dev)

    def supports_f16(self) -> bool:
        """shader-f16 is enabled: f16 buffers and values run natively."""
        return "shader-f16" in self._dev.features

    def supports_subgroup_ops(self) -> bool:
        """The subgroup feature is enabled on the device."""
        return "subgroup" in self._dev.features

    def supports_timestamps(self) -> bool:
        """timestamp-query is enabled (GPU timing of dispatches)."""
        return "timestamp-query" in self._dev.features

    def max_workgroup_size(self) -> tuple[int, int, int]:
        return caps.max_workgroup_size(self._dev)

    def max_compute_invocations_per_workgroup(self) -> int:
        return self._dev.limit("max-compute-invocations-per-workgroup")

    def max_storage_buffer_bytes(self) -> int:
        """The largest storage buffer binding, in bytes."""
        return self._dev.limit("max-storage-buffer-binding-size")

    def max_compute_workgroups_per_dimension(self) -> int:
        return self._dev.limit("max-compute-workgroups-per-dimension")

    def subgroup_size(self) -> tuple[int, int] | None:
        """(min, max) subgroup size the adapter reports, or None when unknown."""
        return caps.subgroup_size(self._dev)


__all__ = ["BackendInfo"]
