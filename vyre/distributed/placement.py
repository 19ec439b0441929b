"""Which WebGPU adapters a host has, and how a worker claims one of them.

Ray sees CUDA devices, not WebGPU adapters, so vyre places workers itself: on a cluster every node
offers a custom resource ``vyre_adapter`` (one unit per adapter), each worker asks for one unit and,
once on its node, claims a free adapter index with an exclusive file lock. The lock dies with the
worker process, so a restarted worker (or a new one) can claim the index again.
"""

from __future__ import annotations

import fcntl
import os
import socket
import tempfile
from pathlib import Path
from typing import Any

from ..errors import DistributedError, NoAdapterError

RESOURCE = "vyre_adapter"


def host_adapters() -> list[int]:
    """Indices (into ``wgpu.gpu.enumerate_adapters_sync()``) of the adapters one worker each should use.

    The native hardware adapters (Vulkan/Metal/D3D12, not a CPU driver); where there is none, the one
    adapter ``WgpuBackend.acquire()`` would pick (lavapipe on a machine without a GPU). ``VYRE_ADAPTER``,
    when set, names the only one. NoAdapterError when there is no usable adapter at all."""
    from ..backends.wgpu.adapter import (  # why: import time (wgpu: `import vyre.distributed` loads none)
        ENV_VAR,
        NATIVE_BACKENDS,
        adapter_info,
        choose,
        enumerate_adapters,
        is_usable,
    )

    adapters = enumerate_adapters()
    forced = os.environ.get(ENV_VAR, "").strip()
    if forced:
        return [choose(adapters, forced).index]
    infos = [adapter_info(a) for a in adapters]
    hardware = [i for i, inf in enumerate(infos)
                if is_usable(inf) and inf["backend_type"] in NATIVE_BACKENDS and inf["adapter_type"] != "CPU"]
    if hardware:
        return hardware
    return [choose(adapters).index]


def _lock_dir() -> Path:
    path = Path(tempfile.gettempdir()) / f"vyre-adapters-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


class AdapterClaim:
    """An exclusive claim on one adapter index of this host, held while the object (the worker) lives."""

    def __init__(self, index: int, fd: int) -> None:
        self.index = index
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __del__(self) -> None:
        self.release()


def claim_adapter(candidates: list[int] | None = None) -> AdapterClaim:
    """Claim the first free adapter index of ``candidates`` (default: :func:`host_adapters`) on this host.

    DistributedError when every one is taken: the node offers more ``vyre_adapter`` units than it has
    adapters."""
    indices = host_adapters() if candidates is None else list(candidates)
    if not indices:
        raise NoAdapterError("this host has no adapter for a vyre worker",
                             fix="install a Vulkan driver, or start the node without the vyre_adapter resource")
    directory = _lock_dir()
    for index in indices:
        fd = os.open(directory / f"{index}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return AdapterClaim(index, fd)
    raise DistributedError(
        f"every adapter of this host ({indices}) is already used by a vyre worker",
        fix=f"start the node with --resources '{{\"{RESOURCE}\": {len(indices)}}}' at most (one unit per adapter)")


def describe_host() -> dict[str, Any]:
    """Host name and process id of this worker (for ``pool.stats()``)."""
    return {"host": socket.gethostname(), "pid": os.getpid()}
