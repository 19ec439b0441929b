"""The baselines of the benches, imported lazily: torch and cupy (with a CUDA device), Taichi (its Vulkan
backend, vyre/benches/_taichi.py) and the raw wgpu-py device (benches/_raw.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ._harness import Timing, calibrated

if TYPE_CHECKING:
    from ._raw import RawWgpu


def _try_torch() -> tuple[Any, str]:
    """(the torch module, "") with a CUDA device, else (None, why not)."""
    try:
        import torch
    except Exception as exc:  # noqa: BLE001 - any import failure means "no baseline"
        return None, f"torch not importable ({type(exc).__name__})"
    try:
        if not torch.cuda.is_available():
            return None, f"torch {torch.__version__} has no CUDA device"
    except Exception as exc:  # noqa: BLE001
        return None, f"torch CUDA check failed: {exc}"
    return torch, ""


def _try_cupy() -> tuple[Any, str]:
    """(the cupy module, "") with a CUDA device, else (None, why not)."""
    try:
        import cupy
    except Exception as exc:  # noqa: BLE001
        return None, f"cupy not importable ({type(exc).__name__})"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None, "cupy sees no CUDA device"
    except Exception as exc:  # noqa: BLE001
        return None, f"cupy has no usable CUDA device ({type(exc).__name__})"
    return cupy, ""


class Baselines:
    """The baselines importable in this process (torch and cupy only with a CUDA device, taichi only
    once ``ti.init(arch=ti.vulkan)`` worked: benches/_taichi.py)."""

    torch: Any  # the torch module, or None (then torch_note says why)
    torch_note: str
    cupy: Any  # the cupy module, or None (then cupy_note says why)
    cupy_note: str
    taichi: Any  # the taichi module (initialised on Vulkan), or None (then taichi_note says why)
    taichi_note: str

    def __init__(self, adapter_index: int, use: set[str] | None = None):
        self.torch, self.torch_note = _try_torch() if use is None or "torch" in use else (None, "disabled")
        self.cupy, self.cupy_note = _try_cupy() if use is None or "cupy" in use else (None, "disabled")
        from ._taichi import _try_taichi  # here: benches/_taichi.py imports this module

        self.taichi, self.taichi_note = _try_taichi() if use is None or "taichi" in use else (None, "disabled")
        self._adapter_index = adapter_index
        self._raw: RawWgpu | None = None  # made on first use
        if self.torch is not None:
            # f32 matmul baseline: true fp32 (no TF32), as the reference number
            self.torch.backends.cuda.matmul.allow_tf32 = False
            self.torch.backends.cudnn.allow_tf32 = False

    @property
    def raw(self) -> RawWgpu:
        if self._raw is None:
            from ._raw import RawWgpu  # imports _harness: made on first use
            self._raw = RawWgpu(self._adapter_index)
        return self._raw

    def describe(self) -> dict:
        out = {"numpy": {"available": True, "version": np.__version__}}
        if self.torch is not None:
            out["torch"] = {"available": True, "version": self.torch.__version__,
                            "device": self.torch.cuda.get_device_name(0), "tf32": False}
        else:
            out["torch"] = {"available": False, "note": self.torch_note}
        if self.cupy is not None:
            props = self.cupy.cuda.runtime.getDeviceProperties(0)
            name = props.get("name", b"")
            out["cupy"] = {"available": True, "version": self.cupy.__version__,
                           "device": name.decode() if isinstance(name, bytes) else str(name)}
        else:
            out["cupy"] = {"available": False, "note": self.cupy_note}
        if self.taichi is not None:
            from ._taichi import describe

            out["taichi"] = describe(self.taichi)
        else:
            out["taichi"] = {"available": False, "note": self.taichi_note}
        import wgpu

        out["raw_wgpu"] = {"available": True, "version": wgpu.__version__}
        return out

    # -- CUDA timing ---------------------------------------------------------------------
    def torch_kernel(self, fn: Callable[[], object], *, reps: int, target_s: float, max_k: int = 1000) -> Timing:
        """CUDA-event time per call of ``fn`` over k back-to-back calls."""
        torch = self.torch

        def sample(k: int) -> float:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            for _ in range(k):
                fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3 / k

        return calibrated(sample, reps=reps, target_s=target_s, max_k=max_k,
                          method="CUDA events over k back-to-back launches")

    def cupy_kernel(self, fn: Callable[[], object], *, reps: int, target_s: float, max_k: int = 1000) -> Timing:
        cp = self.cupy

        def sample(k: int) -> float:
            start, end = cp.cuda.Event(), cp.cuda.Event()
            cp.cuda.Device().synchronize()
            start.record()
            for _ in range(k):
                fn()
            end.record()
            end.synchronize()
            return cp.cuda.get_elapsed_time(start, end) / 1e3 / k

        return calibrated(sample, reps=reps, target_s=target_s, max_k=max_k,
                          method="CUDA events over k back-to-back launches")

    def torch_sync(self) -> None:
        self.torch.cuda.synchronize()

    def cupy_sync(self) -> None:
        self.cupy.cuda.Device().synchronize()


__all__ = ["Baselines"]
