"""``GradScaler``: dynamic loss scaling, PyTorch's semantics, with every piece of state on the device.

The scale (float32) and the growth tracker (int32) are 0-d device arrays, and ``update`` computes their new
values with array expressions (``where``) and writes them into the same array objects: nothing is read on
the host, so a step with a scaler runs inside ``vyre.compile`` (pass :attr:`GradScaler.arrays` to the
compiled function as an argument: a replay then gives those objects their new contents, as it does for any
argument written in place). ``unscale_`` is one kernel per gradient that writes the unscaled gradient and
ORs a found-inf flag (an atomic on one word shared by every gradient of the call, so the OR is exact and
run-to-run identical); the flag becomes a 0-d bool array, and ``step`` passes it to the optimizer as
``skip_if``, which selects the old parameters and state on the device when it is set.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import vyre.array as xp
from vyre.array import Array

from ..backends import recording
from ..errors import ArgumentTypeError, InvalidArgumentError
from ._kernels import assign as _assign
from ._kernels import unscale as _unscale


def _snapshot(a: Array) -> Array:
    """A materialised copy of ``a``: what scale/unscale_ read instead of the state array, so that no pending
    expression reads the state's buffer and ``update`` can write into it in place."""
    c = xp.asarray(a, copy=True)
    c.evaluate()
    return c


def _write(s: Array, t: Array, new_s: Any, new_t: Any) -> None:
    """The scale and growth tracker get ``new_s`` and ``new_t`` (0-d arrays or numbers) in their own buffers
    (bound as handles: no copy-on-write), so a vyre.compile replay repeats the write whether the state arrays
    are arguments or closed over. Pending expressions on the state would see the new values: the scaler
    reads only snapshots (:func:`_snapshot`)."""
    vals = [xp.asarray(v, dtype=d, device=s.device) for v, d in ((new_s, xp.float32), (new_t, xp.int32))]
    xp.evaluate(vals)
    _assign[1](vals[0].handle, vals[1].handle, s.handle, t.handle, backend=s.device)


def _factor(v: Any, name: str, ok: bool, want: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or not ok:
        raise InvalidArgumentError(f"GradScaler: {name} must be {want}, not {v!r}", fix=f"a {name} {want}")
    return float(v)


class GradScaler:
    """Dynamic loss scaling (PyTorch's ``torch.amp.GradScaler``): ``scale(loss)`` multiplies the loss by
    the scale; ``unscale_(grads)`` divides the gradients by it and records whether any is inf/NaN;
    ``step(optimizer, grads)`` unscales (unless ``unscale_`` ran since the last ``update``) and steps,
    skipped on the device when an inf/NaN was found; ``update()`` multiplies the scale by
    ``backoff_factor`` after a skipped step, by ``growth_factor`` after ``growth_interval`` steps in a row
    without one (if the result is finite), as PyTorch's ``_amp_update_scale_``. The factors are applied
    in float32 (PyTorch rounds a float64 product to float32: the same for powers of two). Gradients are
    multiplied by the scale's float32 reciprocal, as PyTorch's are; above 2^126 it is subnormal, which a GPU
    may flush to zero (WGSL allows it; the H200 does).
    ``enabled=False`` makes every method a pass-through. ``device``: where the state lives (default: the
    loss's device at the first ``scale``, or the current device for :attr:`arrays`)."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True, *, device: Any = None) -> None:
        self._init_scale = _factor(init_scale, "init_scale", isinstance(init_scale, int | float) and init_scale > 0,
                                   "a finite number > 0")
        self._growth_factor = _factor(growth_factor, "growth_factor",
                                      isinstance(growth_factor, int | float) and growth_factor > 1, "a number > 1")
        self._backoff_factor = _factor(backoff_factor, "backoff_factor",
                                       isinstance(backoff_factor, int | float) and 0 < backoff_factor < 1,
                                       "a number in (0, 1)")
        if isinstance(growth_interval, bool) or not isinstance(growth_interval, int) or growth_interval < 1:
            raise InvalidArgumentError(f"GradScaler: growth_interval must be an int >= 1, not {growth_interval!r}",
                                       fix="growth_interval=2000")
        self._growth_interval = growth_interval
        self._enabled = bool(enabled)
        self._device = device
        self._init_tracker = 0
        self._scale: Array | None = None
        self._growth_tracker: Array | None = None
        self._found: list[Array] = []  # this iteration's found-inf flags (0-d bool), one per unscale
        self._user_unscaled = False  # unscale_ was called since the last update

    # ---- state ----------------------------------------------------------------------------------------
    def _init(self, device: Any) -> tuple[Array, Array]:
        if self._scale is None or self._growth_tracker is None:
            dev = device if self._device is None else self._device
            # not recorded: made inside vyre.compile they are closed-over buffers of the trace (bound as they
            # are, updated in place by every replay), not temporaries a replay would give buffers of its own
            with recording.paused():
                self._scale = xp.full((), self._init_scale, dtype=xp.float32, device=dev)
                self._growth_tracker = xp.full((), self._init_tracker, dtype=xp.int32, device=dev)
                xp.evaluate([self._scale, self._growth_tracker])
        return self._scale, self._growth_tracker

    @property
    def arrays(self) -> dict[str, Array]:
        """The device state, ``{"scale": 0-d float32, "growth_tracker": 0-d int32}`` (created now if need
        be). ``update`` writes new contents into these same objects, so passing this dict as an argument of a
        ``vyre.compile`` function lets every replay update them."""
        if not self._enabled:
            raise InvalidArgumentError("GradScaler(enabled=False) has no state arrays",
                                       fix="check scaler.is_enabled() first")
        from ..array._device import current_backend  # why: the current device, as array creation picks it

        s, t = self._init(current_backend(self._device))
        return {"scale": s, "growth_tracker": t}

    def is_enabled(self) -> bool:
        return self._enabled

    def get_scale(self) -> float:
        """The current scale as a Python float (a download: not inside ``vyre.compile``); 1.0 when disabled."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale)

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = _factor(new_factor, "growth_factor", new_factor > 1, "a number > 1")

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = _factor(new_factor, "backoff_factor", 0 < new_factor < 1, "a number in (0, 1)")

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        if isinstance(new_interval, bool) or not isinstance(new_interval, int) or new_interval < 1:
            raise InvalidArgumentError(f"GradScaler: growth_interval must be an int >= 1, not {new_interval!r}",
                                       fix="growth_interval=2000")
        self._growth_interval = new_interval

    # ---- the step ---------------------------------------------------------------------------------------
    def scale(self, outputs: Any) -> Any:
        """``outputs`` (an array, or a list/tuple of arrays) times the scale (float32)."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Array):
            s, _ = self._init(outputs.device)
            return outputs * _snapshot(s)
        if isinstance(outputs, list | tuple):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ArgumentTypeError(f"GradScaler.scale takes a vyre array or a list/tuple of them, not "
                                f"{type(outputs).__name__}", fix="pass the loss")

    def _unscale(self, grads: Any) -> tuple[Any, Array]:
        items: list[tuple[Any, Any]]
        if isinstance(grads, Mapping):
            items = list(grads.items())
        elif isinstance(grads, Sequence) and not isinstance(grads, str | Array):
            items = list(enumerate(grads))
        else:
            raise ArgumentTypeError(f"GradScaler: gradients must be a list, tuple or dict, not {type(grads).__name__}",
                                    fix="pass what value_and_grad returned")
        arrays = [g for _, g in items if g is not None]
        for name, g in items:
            if g is None:
                continue
            if not isinstance(g, Array) or not xp.isdtype(g.dtype, "real floating"):
                raise ArgumentTypeError(f"GradScaler: the gradient {name!r} is not a floating-point vyre array",
                                        fix="pass the gradients value_and_grad returned")
            if g.dtype != xp.float32:
                raise InvalidArgumentError(f"GradScaler: the gradient {name!r} is {g.dtype}: unscaling float16 "
                                           f"gradients loses what scaling kept (PyTorch refuses them too)",
                                           fix="keep float32 master weights: autocast casts them per op")
            if g.device is not arrays[0].device:
                raise InvalidArgumentError("GradScaler: gradients on two backends", fix="one device per scaler")
        dev = arrays[0].device if arrays else (self._device if self._device is not None else None)
        if dev is None:
            from ..array._device import current_backend  # why: no gradient to take the device from
            dev = current_backend()
        s, _ = self._init(dev)
        inv = xp.reshape(1.0 / s, (1,))
        inv.evaluate()  # its own buffer: nothing pending reads the scale's (see _write)
        flag = xp.zeros((1,), dtype=xp.uint32, device=dev)
        out: dict[Any, Any] = {}
        for name, g in items:
            if g is None or g.size == 0:
                out[name] = g
                continue
            u = xp.empty((g.size,), dtype=xp.float32, device=dev)
            _unscale[g.size](xp.reshape(g, (g.size,)), inv, u, flag)
            out[name] = xp.reshape(u, g.shape)
        found = xp.reshape(flag, ()) != 0
        self._found.append(found)
        if isinstance(grads, Mapping):
            return out, found
        values = [out[k] for k, _ in items]
        return (tuple(values) if isinstance(grads, tuple) else values), found

    def unscale_(self, grads: Any) -> Any:
        """``grads`` (a list, tuple or dict of float32 arrays or None) divided by the scale, one fused kernel
        per gradient that also records whether any element is inf or NaN. Returns the unscaled gradients
        (same structure); ``step`` then takes them (or what you made of them: clipped) as they are."""
        if not self._enabled:
            return grads
        out, _ = self._unscale(grads)
        self._user_unscaled = True
        return out

    def found_inf(self) -> Array:
        """Whether this iteration's unscales found an inf/NaN: a 0-d bool array (no download)."""
        if not self._found:
            raise InvalidArgumentError("GradScaler: no gradients were unscaled since the last update()",
                                       fix="call scaler.unscale_(grads) or scaler.step(optimizer, grads) first")
        found = self._found[0]
        for f in self._found[1:]:
            found = xp.logical_or(found, f)
        return found

    def step(self, optimizer: Any, grads: Any) -> Any:
        """``optimizer.step(unscaled, skip_if=found_inf)``: ``grads`` are unscaled first unless ``unscale_``
        was called since the last ``update()`` (then they are taken as unscaled). Disabled: a plain step."""
        if not self._enabled:
            return optimizer.step(grads)
        if self._user_unscaled:
            found = self.found_inf()
        else:
            grads, found = self._unscale(grads)
        return optimizer.step(grads, skip_if=found)

    def update(self, new_scale: float | Array | None = None) -> None:
        """The scale for the next iteration, from this iteration's found-inf flags (PyTorch's
        ``_amp_update_scale_``), computed and written on the device; or ``new_scale`` (a number or a 0-d
        array) as it is. Clears the flags."""
        if not self._enabled:
            return
        if new_scale is not None:
            s, t = self._init(new_scale.device if isinstance(new_scale, Array) else self._device)
            if isinstance(new_scale, Array):
                if new_scale.shape not in ((), (1,)) or not xp.isdtype(new_scale.dtype, "real floating"):
                    raise InvalidArgumentError(f"GradScaler.update: new_scale must be a float or a one-element "
                                               f"float array, not shape {new_scale.shape}", fix="update(1024.0)")
                _write(s, t, xp.astype(xp.reshape(new_scale, ()), xp.float32), _snapshot(t))
            else:
                _write(s, t, _factor(new_scale, "new_scale", new_scale > 0, "a finite number > 0"), _snapshot(t))
        else:
            found = self.found_inf()
            s, t = self._init(found.device)
            successful = t + 1
            grown = s * self._growth_factor
            grow = xp.logical_and(xp.logical_not(found), successful == self._growth_interval)
            new_s = xp.where(found, s * self._backoff_factor,
                             xp.where(xp.logical_and(grow, xp.isfinite(grown)), grown, s))
            new_t = xp.where(xp.logical_or(found, grow), 0, successful)
            _write(s, t, new_s, new_t)
        self._found = []
        self._user_unscaled = False

    # ---- checkpoints ------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """PyTorch's keys: scale, growth_factor, backoff_factor, growth_interval, _growth_tracker (downloads
        the two arrays); empty when disabled."""
        if not self._enabled:
            return {}
        tracker = self._init_tracker if self._growth_tracker is None else int(self._growth_tracker)
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": tracker}

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`'s values (into the same state arrays, when they exist)."""
        if not self._enabled:
            return
        if not state_dict:
            raise InvalidArgumentError("GradScaler.load_state_dict: the state dict is empty (saved from a "
                                       "disabled GradScaler?)", fix="load a state_dict() of an enabled scaler")
        missing = sorted({"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"}
                         - set(state_dict))
        if missing:
            raise InvalidArgumentError(f"GradScaler.load_state_dict: missing {missing}", fix="pass state_dict()")
        scale = _factor(state_dict["scale"], "scale", state_dict["scale"] > 0, "a finite number > 0")
        self.set_growth_factor(state_dict["growth_factor"])
        self.set_backoff_factor(state_dict["backoff_factor"])
        self.set_growth_interval(state_dict["growth_interval"])
        tracker = state_dict["_growth_tracker"]
        if isinstance(tracker, bool) or not isinstance(tracker, int) or tracker < 0:
            raise InvalidArgumentError(f"GradScaler.load_state_dict: _growth_tracker must be an int >= 0, not "
                                       f"{tracker!r}", fix="pass state_dict()")
        self._init_scale, self._init_tracker = scale, tracker
        if self._scale is not None and self._growth_tracker is not None:
            _write(self._scale, self._growth_tracker, scale, tracker)

    def __repr__(self) -> str:
        return (f"GradScaler(growth_factor={self._growth_factor}, backoff_factor={self._backoff_factor}, "
                f"growth_interval={self._growth_interval}, enabled={self._enabled})")


__all__ = ["GradScaler"]
