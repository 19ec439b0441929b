"""The host side of the loop trap (the shader side is vyre/lower/trap.py), on adapters that end loops
silently after a cap (llvmpipe: 65,535 iterations per invocation in all).

Lowerings on such an adapter count the iterations of every loop the driver counts; an invocation that
reaches the cap writes a code naming its program and loop into one small device buffer
(:meth:`~.bindings.Bindings.trap`). The executor copies that buffer into the readback of every submission
that reads anything and clears it in the same submission; :meth:`LoopTrap.error` turns a code it finds
into a DispatchError naming the program and the loop. A resident dispatch reads nothing: its trap waits in
the buffer and is raised by the next download (every result computed since is then suspect anyway).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import DispatchError
from .types import GPUBuffer

if TYPE_CHECKING:  # why: annotations only (bindings and pipeline_store import the executor's modules)
    from .bindings import Bindings
    from .pipeline_store import PipelineStore

#: Bytes of the trap buffer (vyre.lower.trap.TRAP_NBYTES; vyre.lower loads only when lowering).
TRAP_NBYTES = 16


class LoopTrap:
    """The trap buffer of the current device and the names of the trapped loops."""

    def __init__(self, bindings: Bindings, store: PipelineStore, cap: int) -> None:
        self._bindings = bindings
        self._store = store
        self.cap = cap

    def buffer(self) -> GPUBuffer | None:
        return self._bindings.trap()

    def error(self, code: int) -> DispatchError:
        """The error of a trap code read back from the device."""
        from ...lower.trap import decode  # why: import time (vyre.lower is loaded once anything is lowered)

        tag, loop = decode(code)
        name, loops = self._store.traps.get(tag, ("?", ()))
        what = f"loop {loop} (`{loops[loop - 1]}`)" if 0 < loop <= len(loops) else f"loop {loop}"
        return DispatchError(
            f"program {name!r}: {what} reached this adapter's limit of {self.cap} loop iterations per invocation "
            "(llvmpipe ends an invocation's loops there without an error), so the results of this submission, and "
            "of resident work since the last download, are wrong; they were not returned",
            fix="run it on a GPU adapter, or give each invocation fewer loop iterations (more invocations, less "
                "work per dispatch; a bound from a buffer length or a parameter counts here too)")


__all__ = ["LoopTrap", "TRAP_NBYTES"]
