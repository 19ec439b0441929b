"""``backend.stats()``: the counters and a snapshot of every part, as one plain dict."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # why: annotations only; the backend that imports this module imports these
    from .device import Device
    from .executor import Executor
    from .pipeline_store import PipelineStore
    from .pool import BufferPool
    from .resident import ResidentStore

#: Counters stats() always reports (0 until they happen).
_COUNTERS = ("dispatches", "submits", "batches", "buffers_created", "bind_groups_created", "bind_group_layouts_created",
             "bytes_uploaded", "bytes_read_back", "uploads_direct", "uploads_mapped", "uploads_skipped", "lowerings",
             "validations", "disk_cache_hits", "disk_cache_misses", "disk_cache_writes", "disk_cache_corrupt",
             "disk_cache_errors", "pool_releases", "invalidations", "resident_dispatches")

#: Extra sections a higher layer adds (the op layer's tuner: ``tuning``): name -> fn(adapter_info) -> dict.
_SECTIONS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {}


def add_section(name: str, fn: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Add ``stats()[name] = fn(adapter_info)`` to every snapshot (this layer cannot import the op layer)."""
    _SECTIONS[name] = fn


_ADAPTER_KEYS = ("vendor", "vendor_id", "device", "device_id", "backend_type", "adapter_type", "driver")


def snapshot(dev: Device, counters: dict[str, int], store: PipelineStore, pool: BufferPool, executor: Executor,
             resident: ResidentStore) -> dict[str, Any]:
    """Flat counters plus sections ``pipeline_cache``, ``disk_cache``, ``buffer_pool``, ``resident``, ``adapter``."""
    s: dict[str, Any] = dict(counters)
    pc = store.cache.snapshot()
    pool_s = pool.snapshot()
    s["pipelines_cached"] = pc["entries"]
    s["pipelines_compiled"] = pc["compiled"]
    s["pipeline_cache_hits"] = pc["hits"]
    s["lowerings_cached"] = pc["lowerings"]
    s["pooled_bytes"] = pool_s["bytes"]
    s["staging_bytes"] = executor.staging.bytes()
    s["pipeline_cache"] = pc
    disk = store.disk
    s["disk_cache"] = {
        "enabled": disk is not None, "dir": str(disk.dir) if disk is not None else None,
        **{k: counters.get(f"disk_cache_{k}", 0) for k in ("hits", "misses", "writes", "corrupt", "errors")},
    }
    s["buffer_pool"] = pool_s
    s["resident"] = {"bytes": resident.nbytes, "handles": resident.handles}
    for key in _COUNTERS:
        s.setdefault(key, 0)
    s["adapter"] = {**{k: dev.info.get(k) for k in _ADAPTER_KEYS}, "index": dev.choice.index}
    s["driver"] = executor.driver.name  # "native" (wgpu-native entry points) or "public" (wgpu-py's API)
    s["generation"] = dev.generation
    s["device_lost"] = dev.lost
    s["shut_down"] = dev.closed
    for name, fn in list(_SECTIONS.items()):
        try:
            s[name] = fn(dict(dev.info))
        except Exception as exc:  # noqa: BLE001 - a section must never break stats()
            s[name] = {"error": f"{type(exc).__name__}: {exc}"}
    return s


__all__ = ["snapshot", "add_section"]
