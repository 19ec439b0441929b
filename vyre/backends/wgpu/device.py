"""Device creation (features, raised limits) and translation of wgpu errors into vyre errors."""

from __future__ import annotations

import re

from ...errors import (
    BackendError, DeviceLostError, DispatchError, LoweringError, NoAdapterError, OutOfMemoryError, VyreError,
)

#: Optional features vyre enables whenever the adapter offers them.
WANTED_FEATURES = ("shader-f16", "subgroup", "timestamp-query")

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

#: Names a lowering may put in ``LoweredProgram.features`` → the device feature they need.
FEATURE_ALIASES = {"f16": "shader-f16", "subgroups": "subgroup", "shader-f16": "shader-f16",
                   "subgroup": "subgroup", "timestamp-query": "timestamp-query"}


def create_device(adapter, label: str = "vyre"):
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
    limits = {str(k): v for k, v in dict(device.limits).items()}
    return device, enabled, limits


_LOST = re.compile(r"device (is |was |has been )?lost|devicelost|lost device|parent device is (lost|invalid)"
                   r"|device (is )?invalid|device_lost|vk_error_device_lost|device.{0,40}destroyed",
                   re.IGNORECASE)
_OOM = re.compile(r"out of memory|outofmemory|out_of_memory|not enough memory|allocation failed|failed to allocate"
                  r"|greater than the maximum buffer size|vk_error_out_of", re.IGNORECASE)
_WGSL_POS = re.compile(r"wgsl:(\d+):(\d+)")


def wgsl_context(message: str, wgsl: str | None) -> str:
    """The WGSL line an error message points at (``wgsl:LINE:COL``), as ``line N: text``."""
    if not wgsl:
        return ""
    m = _WGSL_POS.search(message)
    if not m:
        return ""
    line = int(m.group(1))
    lines = wgsl.splitlines()
    if not 1 <= line <= len(lines):
        return ""
    return f"WGSL line {line}: {lines[line - 1].strip()}"


def _short(message: str, limit: int = 4000) -> str:
    message = message.strip()
    return message if len(message) <= limit else message[:limit] + " ..."


def translate_error(exc: BaseException, *, stage: str, wgsl: str | None = None, program: str | None = None) -> VyreError:
    """Turn any exception raised by wgpu into the matching vyre error (vyre errors pass through).

    ``stage`` is ``"compile"`` (shader module / pipeline), ``"dispatch"`` (buffers, bind
    groups, encode, submit, readback) or ``"device"``.
    """
    if isinstance(exc, VyreError):
        return exc
    try:
        import wgpu

        oom_types: tuple = (wgpu.GPUOutOfMemoryError, MemoryError)
        validation_types: tuple = (wgpu.GPUValidationError, wgpu.GPUPipelineError)
    except Exception:  # pragma: no cover - wgpu missing
        oom_types, validation_types = (MemoryError,), ()
    message = str(exc) or type(exc).__name__
    what = f"program {program!r}: " if program else ""
    kind = type(exc).__name__
    if _LOST.search(message):
        return DeviceLostError(
            f"{what}the GPU device was lost during {stage} ({kind}): {_short(message)}",
            fix="create a new backend (vyre.WgpuBackend.acquire()) or call backend.try_recover(); "
                "if it keeps happening, the shader may run too long for the driver's watchdog: split the work",
        )
    if isinstance(exc, oom_types) or _OOM.search(message):
        return OutOfMemoryError(
            f"{what}the GPU ran out of memory during {stage} ({kind}): {_short(message)}",
            fix="use smaller buffers or split the work into several dispatches; "
                "backend.clear_cache() frees pooled buffers",
        )
    where = wgsl_context(message, wgsl)
    detail = f"{_short(message)}" + (f"\n{where}" if where else "")
    if stage == "compile":
        return LoweringError(
            f"{what}the GPU rejected the generated WGSL ({kind}): {detail}",
            fix="this is a vyre lowering bug or an adapter limit: run vyre.ir.validate on the program, "
                "inspect vyre.lower(program).wgsl, and report the program's text form",
        )
    if stage == "device":
        return BackendError(f"device error ({kind}): {detail}", fix="pick another adapter")
    if isinstance(exc, validation_types):
        return DispatchError(f"{what}the GPU rejected the dispatch ({kind}): {detail}",
                             fix="check the program's buffer sizes and the DispatchConfig against the device limits")
    return DispatchError(f"{what}dispatch failed ({kind}): {detail}",
                         fix="this is unexpected: report it with the program's text form and the adapter info")


__all__ = ["create_device", "translate_error", "wgsl_context", "WANTED_FEATURES", "RAISED_LIMITS", "FEATURE_ALIASES"]
