"""Translation of any exception raised by wgpu into the matching vyre error (the one place that decides)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, NoReturn

from ...errors import (
    BackendError,
    DeviceLostError,
    DispatchError,
    LoweringError,
    OutOfMemoryError,
    VyreError,
)

if TYPE_CHECKING:  # why: annotations only; device.py imports this module (translate_error)
    from .device import Device

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


def translate_error(exc: BaseException, *, stage: str, wgsl: str | None = None,
                    program: str | None = None) -> VyreError:
    """Turn any exception raised by wgpu into the matching vyre error (vyre errors pass through).

    ``stage`` is ``"compile"`` (shader module / pipeline), ``"dispatch"`` (buffers, bind
    groups, encode, submit, readback) or ``"device"``.
    """
    if isinstance(exc, VyreError):
        return exc
    try:
        import wgpu  # why: import time (the backend imports wgpu lazily: `import vyre` stays light)

        oom_types: tuple[type[BaseException], ...] = (wgpu.GPUOutOfMemoryError, MemoryError)
        validation_types: tuple[type[BaseException], ...] = (wgpu.GPUValidationError, wgpu.GPUPipelineError)
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
            fix="the program passed validation under this device's limits (binding numbers, buffer counts, "
                "workgroup size and memory), so this is a vyre lowering bug or an adapter limit vyre does not "
                "check yet: run vyre.ir.validate on the program, "
                "inspect vyre.lower(program).wgsl, and report the program's text form",
        )
    if stage == "device":
        return BackendError(f"device error ({kind}): {detail}", fix="pick another adapter")
    if isinstance(exc, validation_types):
        return DispatchError(f"{what}the GPU rejected the dispatch ({kind}): {detail}",
                             fix="check the program's buffer sizes and the DispatchConfig against the device limits")
    return DispatchError(f"{what}dispatch failed ({kind}): {detail}",
                         fix="this is unexpected: report it with the program's text form and the adapter info")


def translated(exc: BaseException, dev: Device, program: str | None = None, *, stage: str = "dispatch",
               wgsl: str | None = None) -> BaseException:
    """The vyre error for ``exc`` (:func:`translate_error`; a BaseException that is no Exception, such as
    KeyboardInterrupt, is kept), and a lost device marked lost on ``dev``: the one way every part of the
    backend turns a wgpu failure into what its caller sees."""
    if not isinstance(exc, Exception):
        return exc
    err = translate_error(exc, stage=stage, wgsl=wgsl, program=program)
    if isinstance(err, DeviceLostError):
        dev.mark_lost()
    return err


def raise_translated(exc: BaseException, dev: Device, program: str | None = None, *, stage: str = "dispatch",
                     wgsl: str | None = None) -> NoReturn:
    """Raise :func:`translated` of ``exc`` (chained to it when it is a new error)."""
    err = translated(exc, dev, program, stage=stage, wgsl=wgsl)
    if err is exc:
        raise exc
    raise err from exc


@contextmanager
def gpu_errors(dev: Device, program: str | None = None, stage: str = "dispatch") -> Iterator[None]:
    """Raise wgpu failures of the block as vyre errors (:func:`raise_translated`)."""
    try:
        yield
    except Exception as exc:
        raise_translated(exc, dev, program, stage=stage)


__all__ = ["translate_error", "translated", "raise_translated", "wgsl_context", "gpu_errors"]
