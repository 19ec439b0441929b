"""The Device part of the wgpu backend: adapter, device, queue, features, limits, the lock, the device
generation, loss detection and recovery.

One RLock (``lock``) serializes every use of the device and queue, so a backend may be shared by
threads. ``generation`` is bumped when the device is lost, replaced or shut down: anything made
on an older device (resident handles, pipelines, async dispatches) can tell it is stale.
"""

from __future__ import annotations

import functools
import logging
import threading
from typing import Any

from ...errors import BackendError, DeviceLostError, DispatchError, NoAdapterError, VyreError
from . import adapter as _adapter
from .failures import translate_error
from .keys import adapter_identity
from .types import GPUAdapter, GPUDevice, GPUQueue

log = logging.getLogger("vyre")

#: Optional features vyre enables whenever the adapter offers them.
WANTED_FEATURES = ("shader-f16", "subgroup", "timestamp-query", "shader-f64", "shader-int64")

#: Limits raised from the WebGPU defaults to the adapter's maxima.
RAISED_LIMITS = (
    "max-storage-buffer-binding-size",
    "max-buffer-size",
    "max-compute-workgroup-storage-size",
    "max-compute-invocations-per-workgroup",
    "max-compute-workgroup-size-x",
    "max-compute-workgroup-size-y",
    "max-compute-workgroup-size-z",
    "max-compute-workgroups-per-dimension",
    "max-storage-buffers-per-shader-stage",
)

#: Names a lowering may put in ``LoweredProgram.features`` -> the device feature they need.
FEATURE_ALIASES = {"f16": "shader-f16", "subgroups": "subgroup", "shader-f16": "shader-f16",
                   "subgroup": "subgroup", "timestamp-query": "timestamp-query",
                   # the 64-bit types (wgpu-native's extensions, not core WebGPU)
                   "f64": "shader-f64", "shader-f64": "shader-f64", "i64": "shader-int64", "u64": "shader-int64",
                   "int64": "shader-int64", "shader-int64": "shader-int64"}

SHUT_DOWN_FIX = "create a new backend: vyre.WgpuBackend.new() (WgpuBackend.shared() re-creates the shared one)"


def create_device(adapter: GPUAdapter, label: str = "vyre") -> tuple[GPUDevice, frozenset[str], dict[str, int]]:
    """Request a device with every wanted feature the adapter has and its maximal compute limits.

    Returns ``(device, features: frozenset[str], limits: dict[str, int])``.
    """
    adapter_features = set(adapter.features)
    features = [f for f in WANTED_FEATURES if f in adapter_features]
    alimits = adapter.limits
    required = {name: int(alimits[name]) for name in RAISED_LIMITS if name in alimits}
    try:
        device = adapter.request_device_sync(label=label, required_features=features, required_limits=required)
    except Exception as exc:
        err = translate_error(exc, stage="device")
        if isinstance(err, (DeviceLostError, DispatchError)):
            err = NoAdapterError(f"the adapter refused to create a device: {exc}",
                                 fix="pick another adapter (VYRE_ADAPTER or WgpuBackend.acquire_adapter)")
        raise err from None
    enabled = frozenset(str(f) for f in device.features)
    limits: dict[str, int] = {str(k): v for k, v in dict(device.limits).items()}
    return device, enabled, limits


#: llvmpipe (lavapipe) ends a shader invocation's loops after this many iterations in all, without an error
#: (Mesa gallivm's LP_MAX_TGSI_LOOP_ITERATIONS; see vyre/ir/trips.py)
LLVMPIPE_LOOP_ITERATIONS = 65535


def driver_limits(info: dict[str, Any]) -> dict[str, int]:
    """Limits a driver has beyond what WebGPU reports: llvmpipe's loop cut-off."""
    text = " ".join(str(info.get(k, "")) for k in ("device", "description", "driver", "driver_info")).lower()
    return {"max-loop-iterations": LLVMPIPE_LOOP_ITERATIONS} if "llvmpipe" in text else {}


class Device:
    """One adapter and the device opened on it (reopened in place by :meth:`recover`)."""

    def __init__(self, adapter_index: int | None = None) -> None:
        self.lock = threading.RLock()
        self.choice: _adapter.AdapterChoice = _adapter.select_adapter(adapter_index)
        self.identity = adapter_identity(self.choice.info)
        self.lost = False
        self.closed = False
        self.generation = 0
        self.device: GPUDevice = None  # once open() ran
        self.queue: GPUQueue = None
        self.features: frozenset[str] = frozenset()
        self.limits: dict[str, int] = {}
        self.adapter_limits: dict[str, int] = {}
        log.info("vyre: adapter [%d] %s, driver %r", self.choice.index, _adapter.describe(self.choice.info),
                 self.choice.info.get("driver"))

    @property
    def info(self) -> dict[str, Any]:
        return self.choice.info

    @property
    def validation_limits(self) -> dict[str, int]:
        """What the validator checks programs against: the device's limits and the driver's own."""
        return {**self.limits, **driver_limits(self.info)}

    @functools.cached_property
    def loop_cap(self) -> int | None:
        """Loop iterations per invocation after which the driver ends loops silently (llvmpipe), or None."""
        return driver_limits(self.info).get("max-loop-iterations")

    def open(self) -> None:
        """Open a device on the chosen adapter (its wanted features, maximal compute limits)."""
        adapter = self.choice.adapter
        self.device, self.features, self.limits = create_device(adapter, label="vyre")
        self.adapter_limits = {str(k): v for k, v in dict(adapter.limits).items()}
        self.queue = self.device.queue
        self.lost = False
        self.generation += 1

    def limit(self, name: str, default: int | None = None) -> int:
        value = self.limits.get(name, default)
        if value is None:
            raise KeyError(name)
        return int(value)

    # ---- state ----------------------------------------------------------------------------------
    def check_open(self) -> None:
        if self.closed:
            raise BackendError("this vyre backend was shut down (backend.shutdown()); it cannot be used any more",
                               fix=SHUT_DOWN_FIX)

    def check_alive(self) -> None:
        if self.closed:
            self.check_open()
        if self.lost:
            raise DeviceLostError("this backend's GPU device was lost",
                                  fix="call backend.try_recover() or create a new backend: vyre.WgpuBackend.new()")

    def mark_lost(self) -> None:
        """Record a device loss detected from an error: every later use raises DeviceLostError."""
        if not self.lost:
            self.lost = True
            self.generation += 1
            log.warning("vyre: the GPU device of adapter [%d] %s was lost", self.choice.index,
                        _adapter.describe(self.choice.info))

    def destroy(self) -> None:
        try:
            self.device.destroy()
        except Exception:  # noqa: BLE001 - already gone
            pass

    def shutdown(self) -> None:
        self.closed = True
        self.destroy()
        self.generation += 1

    # ---- recovery -------------------------------------------------------------------------------
    def recover(self) -> None:
        """Re-acquire the same adapter (same index, identity and limits) and open a new device. Raises
        DeviceLostError when the adapter is gone or changed. The caller drops its device state first."""
        old = self.choice
        try:
            choice = _adapter.select_adapter(old.index)
        except VyreError as exc:
            raise DeviceLostError(f"cannot recover the lost device: adapter [{old.index}] is gone: {exc.message}",
                                  fix="create a new backend: vyre.WgpuBackend.new()") from None
        if adapter_identity(choice.info) != adapter_identity(old.info):
            raise DeviceLostError(
                f"cannot recover the lost device: adapter [{old.index}] is now {_adapter.describe(choice.info)} "
                f"(driver {choice.info.get('driver')!r}), it was {_adapter.describe(old.info)} "
                f"(driver {old.info.get('driver')!r})",
                fix="create a new backend for the new adapter: vyre.WgpuBackend.new()")
        limits = {str(k): v for k, v in dict(choice.adapter.limits).items()}
        if limits != self.adapter_limits:
            changed = sorted(k for k in set(limits) | set(self.adapter_limits)
                             if limits.get(k) != self.adapter_limits.get(k))
            raise DeviceLostError(
                f"cannot recover the lost device: adapter [{old.index}] limits changed: "
                + ", ".join(f"{k}: {self.adapter_limits.get(k)} -> {limits.get(k)}" for k in changed[:8]),
                fix="create a new backend: vyre.WgpuBackend.new()")
        self.choice = choice
        try:
            self.open()
        except VyreError:
            raise
        except Exception as exc:
            raise translate_error(exc, stage="device") from None
        log.info("vyre: recovered the GPU device of adapter [%d] %s (generation %d)", choice.index,
                 _adapter.describe(choice.info), self.generation)


__all__ = ["Device", "create_device", "translate_error", "WANTED_FEATURES", "RAISED_LIMITS", "FEATURE_ALIASES",
           "SHUT_DOWN_FIX"]
