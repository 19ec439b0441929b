"""The gradient tape: records the differentiable calls made while it is active (through vyre.array's hook,
vyre/array/_record.py) and runs them backwards with the rules of vyre/autograd/rules.py.

Recording: every call of a public vyre.array function (operators and methods included) that reads a
floating-point array and gives a floating-point array is a node (name, the call's arguments bound to the
function's parameters, its output). ``watch_accessed_arrays=False`` records only calls reading a watched
array or a result of a recorded call. Arrays are keyed by ``id``: the tape holds every array it recorded, so
an id cannot be reused while the tape lives, and refuses (InvalidArgumentError) an in-place change of one.

Backward: the nodes between the sources and the target, in reverse order of recording (a topological order),
each rule giving the gradients of its inputs as more vyre.array expressions (lazy: they fuse like the forward
pass); a gradient of an input of broadcast shape is summed back over the broadcast axes; gradients reaching
one array add up.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import vyre.array as xp
from vyre.array import _record
from vyre.array._array import Array

from ..errors import ArgumentTypeError, InvalidArgumentError
from .rules import RULES, ZERO, Rule

_SIGNATURES: dict[Callable[..., Any], tuple[inspect.Signature, int]] = {}


def _params(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    """The call's arguments in the order of ``fn``'s parameters, defaults filled in (``*args``: one tuple)."""
    known = _SIGNATURES.get(fn)
    if known is None:
        sig = inspect.signature(fn)
        plain = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
                    for p in sig.parameters.values())
        known = _SIGNATURES[fn] = (sig, len(sig.parameters) if plain else -1)
    sig, plain_arity = known
    if plain_arity == len(args) and not kwargs:  # f(x1, x2, /): the arguments as given (no bind: ~4 µs)
        return list(args)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    return list(bound.arguments.values())


def _arrays(value: Any) -> list[Array]:
    if isinstance(value, Array):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, Array)]
    return []


def is_float(x: Any) -> bool:
    return isinstance(x, Array) and x.dtype.kind == "f"


def _inexact(x: Any) -> bool:
    """Floating or complex: complex calls are recorded without a rule (a gradient reaching one raises:
    there are no complex derivative rules, and the real ones would be silently wrong for complex values)."""
    return isinstance(x, Array) and x.dtype.kind in "fc"


@dataclass(eq=False, slots=True)
class Node:
    name: str
    rule: Rule | None  # None: no derivative rule (an error if a gradient reaches it)
    params: list[Any]
    outs: tuple[Array, ...]
    single: bool  # the function returned one array (not a tuple/list)


def unbroadcast(g: Array, shape: tuple[int, ...]) -> Array:
    """``g`` summed over the axes broadcasting added or stretched, to ``shape``."""
    if g.shape == shape:
        return g
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and g.shape[lead + i] != 1)
    if axes:
        g = xp.sum(g, axis=axes, keepdims=True)
    return xp.reshape(g, shape)


class GradientTape:
    """Records differentiable vyre.array calls inside ``with`` for :meth:`gradient`.

    ``persistent=False``: :meth:`gradient` may be called once, and the tape lets go of what it recorded
    then; ``persistent=True``: any number of times, until :meth:`release` (or the tape is collected).
    ``watch_accessed_arrays=True``: every call on floating-point arrays is recorded, so a gradient may be
    asked with respect to any array used inside; False: only calls reading a :meth:`watch`-ed array or a
    result of a recorded call (a smaller tape when most of the work is on constants).
    """

    def __init__(self, persistent: bool = False, watch_accessed_arrays: bool = True) -> None:
        self.persistent = persistent
        self.watch_accessed_arrays = watch_accessed_arrays
        self._nodes: list[Node] = []
        self._held: dict[int, Array] = {}  # every array the tape recorded or watched, by id
        self._tracked: set[int] = set()  # watched arrays and recorded results (watch_accessed_arrays=False)
        self._used = False

    # ---- recording ----------------------------------------------------------------------------------
    def __enter__(self) -> GradientTape:
        if self in _record.RECORDERS:
            raise InvalidArgumentError("this GradientTape is already recording", fix="use a new tape")
        _record.RECORDERS.append(self)
        _record.hold(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self in _record.RECORDERS:
            _record.RECORDERS.remove(self)

    def watch(self, x: Any) -> None:
        """Make ``x`` (an array, or a list/tuple/dict of them) a watched source: with
        ``watch_accessed_arrays=False`` only calls depending on watched arrays are recorded."""
        for a in _flatten(x)[0]:
            self._held[id(a)] = a
            self._tracked.add(id(a))
        _record.hold(self)

    def record(self, name: str, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any],
               out: Any) -> None:
        """The hook's callback (vyre/array/_record.py): one call and its result."""
        single = isinstance(out, Array)
        outs = (out,) if single else tuple(out) if isinstance(out, (tuple, list)) else ()
        if not outs or not all(isinstance(o, Array) for o in outs) or not any(_inexact(o) for o in outs):
            return
        if name in ZERO:
            return  # a constant of its inputs (floor, sign, zeros_like ...): no gradient flows back
        inputs = [a for v in (*args, *kwargs.values()) for a in _arrays(v) if _inexact(a)]
        if not inputs or any(o is a for o in outs for a in inputs):
            return  # nothing to differentiate, or the call answered an input itself (an identity)
        if not self.watch_accessed_arrays and not any(id(a) in self._tracked for a in inputs):
            return
        cplx = any(a.dtype.kind == "c" for a in (*outs, *inputs))
        node = Node(name, None if cplx else RULES.get(name), _params(fn, args, kwargs), outs, single)
        self._nodes.append(node)
        for a in inputs:
            self._held[id(a)] = a
        for o in outs:
            self._held[id(o)] = o
            self._tracked.add(id(o))

    def check_mutation(self, x: Array, value: Any) -> None:
        """Refuse changing an array this tape holds (its gradient would read the new values), or assigning
        a recorded value into any array while recording (the assignment is not differentiable)."""
        if id(x) in self._held and self._held[id(x)] is x:
            raise InvalidArgumentError(
                f"an in-place change of an array a GradientTape recorded (shape {list(x.shape)}, {x.dtype}): "
                "its gradient would read the new values",
                fix="write x = x + y (a new array) instead of x += y / x[k] = v, or finish with the tape first "
                    "(gradient() of a non-persistent tape, release() of a persistent one)")
        if self in _record.RECORDERS and isinstance(value, Array) and id(value) in self._held:
            raise InvalidArgumentError("x[k] = v with a recorded v inside a GradientTape: item assignment is not "
                                       "differentiable", fix="build the array with where(), concat() or stack()")

    def release(self) -> None:
        """Let go of everything recorded (the tape can no longer give gradients)."""
        self._nodes, self._held, self._tracked = [], {}, set()
        _record.unhold(self)

    # ---- gradients ----------------------------------------------------------------------------------
    def gradient(self, target: Array, sources: Any, output_gradients: Array | None = None) -> Any:
        """The gradient of ``target`` with respect to ``sources`` (an array, or a list/tuple/dict of them:
        the result has the same structure). A non-scalar target is differentiated as the sum of its
        elements (a seed of ones) unless ``output_gradients`` (target's shape) gives the seed. A source the
        target does not depend on gets zeros."""
        if self._used and not self.persistent:
            raise InvalidArgumentError("a non-persistent GradientTape gives one gradient() call",
                                       fix="use GradientTape(persistent=True) for several")
        if not is_float(target):
            raise ArgumentTypeError(f"gradient: the target must be a floating-point vyre array, not "
                                    f"{getattr(target, 'dtype', type(target).__name__)}",
                                    fix="differentiate a float result (x.astype(float32) first)")
        flat, rebuild = _flatten(sources)
        for s in flat:
            if not is_float(s):
                raise ArgumentTypeError(f"gradient: a source must be a floating-point vyre array, not "
                                        f"{getattr(s, 'dtype', type(s).__name__)}", fix="pass float arrays")
        if output_gradients is None:
            seed = xp.ones_like(target)
        else:
            seed = output_gradients if isinstance(output_gradients, Array) else xp.asarray(output_gradients,
                                                                                           device=target.device)
            if seed.shape != target.shape:
                raise InvalidArgumentError(f"output_gradients has shape {list(seed.shape)}, the target "
                                           f"{list(target.shape)}", fix="pass one gradient per target element")
        self._used = True
        recording = self in _record.RECORDERS
        if recording:  # the backward pass is not part of this tape (outer tapes record it: higher orders)
            _record.RECORDERS.remove(self)
        try:
            grads = self._backward(target, seed, {id(s) for s in flat})
        finally:
            if recording:
                _record.RECORDERS.append(self)
            if not self.persistent:
                self.release()
        return rebuild([grads[id(s)] if id(s) in grads else xp.zeros_like(s) for s in flat])

    def _backward(self, target: Array, seed: Array, sources: set[int]) -> dict[int, Array]:
        # the nodes that depend on a source, in recording order
        reach = set(sources)
        live: list[Node] = []
        for node in self._nodes:
            if any(id(a) in reach for p in node.params for a in _arrays(p)):
                live.append(node)
                reach.update(id(o) for o in node.outs)
        grads: dict[int, Array] = {id(target): seed}
        for node in reversed(live):
            gs = [grads.get(id(o)) for o in node.outs]
            if all(g is None for g in gs):
                continue
            for o in node.outs:
                if id(o) not in sources:
                    grads.pop(id(o), None)  # an intermediate: nothing else reads its gradient
            if node.rule is None:
                raise InvalidArgumentError(f"vyre.array.{node.name} has no derivative rule, and the gradient "
                                           "reaches it", fix="see docs/training.md for the differentiable "
                                                             "functions; wrap it in stop_gradient() if it is a "
                                                             "constant")
            g: Any
            if node.single:
                g = gs[0]
            else:
                g = [gi if gi is not None else xp.zeros_like(o) for gi, o in zip(gs, node.outs, strict=True)]
            kw = {"needs": tuple(is_float(p) and id(p) in reach for p in node.params)} if wants_needs(node.rule) else {}
            got = node.rule(g, node.outs[0] if node.single else node.outs, *node.params, **kw)
            for p, gp in zip(node.params, got, strict=False):
                if isinstance(p, (list, tuple)) and isinstance(gp, (list, tuple)):
                    for a, ga in zip(p, gp, strict=False):
                        _accumulate(grads, reach, a, ga)
                else:
                    _accumulate(grads, reach, p, gp)
        return grads


_WANTS_NEEDS: dict[Rule, bool] = {}


def wants_needs(rule: Rule) -> bool:
    """Whether a rule takes ``needs`` (which parameters want a gradient): the rules whose gradients are
    kernels that run at once (matmul's), so an input that wants none (a model's data) costs none."""
    got = _WANTS_NEEDS.get(rule)
    if got is None:
        got = _WANTS_NEEDS[rule] = "needs" in inspect.signature(rule).parameters
    return got


def _accumulate(grads: dict[int, Array], reach: set[int], a: Any, g: Any) -> None:
    if g is None or not is_float(a) or id(a) not in reach:
        return
    if not isinstance(g, Array):
        raise TypeError(f"a derivative rule gave {type(g).__name__}, not an array")  # a bug in a rule
    g = unbroadcast(g, a.shape)
    if g.dtype != a.dtype:
        g = xp.astype(g, a.dtype)
    prev = grads.get(id(a))
    grads[id(a)] = g if prev is None else prev + g


def _flatten(x: Any) -> tuple[list[Any], Callable[[Sequence[Any]], Any]]:
    """``x`` (an array, or nested lists/tuples/dicts of them) as a flat list of its leaves and the function
    building the same structure from such a list."""
    if isinstance(x, (dict, list, tuple)):
        keys = list(x) if isinstance(x, dict) else None
        parts = [_flatten(v) for v in (x.values() if isinstance(x, dict) else x)]
        sizes = [len(p[0]) for p in parts]
        kind = type(x)

        def rebuild(v: Sequence[Any]) -> Any:
            out, at = [], 0
            for (_, build), n in zip(parts, sizes, strict=True):
                out.append(build(v[at:at + n]))
                at += n
            if keys is not None:
                return dict(zip(keys, out, strict=True))
            return kind(out) if kind in (list, tuple) else list(out)

        return [leaf for p in parts for leaf in p[0]], rebuild
    return [x], lambda v: v[0]


__all__ = ["GradientTape", "unbroadcast", "is_float"]
