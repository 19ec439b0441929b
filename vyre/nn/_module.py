"""``Parameter``, ``Module``, ``Sequential`` and ``functional_call``: the containers of vyre.nn.

A :class:`Parameter` holds one vyre array in ``.value``; an optimizer replaces it (``p.value = new``),
never writes into it, and every module reads ``p.value`` when it is called, so swapping values in and out
(:func:`functional_call`, what ``vyre.autograd.value_and_grad`` needs: the arrays it differentiates are
arguments) changes what the next call computes and nothing else.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

import vyre.array as xp
from vyre.array import Array

from ..errors import ArgumentTypeError, InvalidArgumentError


def _is_float(a: Array) -> bool:
    return xp.isdtype(a.dtype, "real floating")


class Parameter:
    """A trainable array: ``value`` is a floating-point vyre array, replaced whole by an optimizer or by
    :meth:`Module.load_state_dict` (assign an array of the same shape and dtype)."""

    __slots__ = ("_value",)

    def __init__(self, value: Array) -> None:
        if not isinstance(value, Array):
            raise ArgumentTypeError(f"Parameter takes a vyre array, not {type(value).__name__}",
                                    fix="wrap the value with vyre.array.asarray first")
        if not _is_float(value):
            raise ArgumentTypeError(f"a Parameter must be floating point, not {value.dtype}",
                                    fix="astype(x, vyre.array.float32)")
        # materialised now (one submission): a parameter closed over by a compiled function is then a buffer
        # the trace binds, not an initialiser it would replay from (random keys) at every call
        self._value = value.evaluate()

    @property
    def value(self) -> Array:
        return self._value

    @value.setter
    def value(self, new: Array) -> None:
        if not isinstance(new, Array):
            raise ArgumentTypeError(f"a Parameter's value must be a vyre array, not {type(new).__name__}",
                                    fix="assign a vyre.array array")
        if new.shape != self._value.shape or new.dtype != self._value.dtype:
            raise InvalidArgumentError(f"a Parameter of shape {self._value.shape} and dtype {self._value.dtype} "
                                       f"cannot take a value of shape {new.shape} and dtype {new.dtype}",
                                       fix="assign an array of the parameter's shape and dtype")
        self._value = new

    @property
    def shape(self) -> tuple[int, ...]:
        return self._value.shape

    @property
    def dtype(self) -> Any:
        return self._value.dtype

    def __repr__(self) -> str:
        return f"Parameter(shape={self.shape}, dtype={self.dtype})"


class Module:
    """The base of every layer. Assigning a :class:`Parameter` or a :class:`Module` to an attribute
    registers it (in assignment order); :meth:`named_parameters` walks them with dotted names
    (``"0.weight"``, ``"attn.out_proj.bias"``). Subclasses define ``forward``; calling the module calls it.
    ``training`` (set by :meth:`train` / :meth:`eval`, on the whole tree) changes what Dropout does."""

    training: bool
    _parameters: dict[str, Parameter]
    _modules: dict[str, Module]

    def __init__(self) -> None:
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)

    def __setattr__(self, name: str, value: Any) -> None:
        params: dict[str, Parameter] | None = self.__dict__.get("_parameters")
        if params is None:
            raise InvalidArgumentError(f"{type(self).__name__}.__init__ must call super().__init__() before "
                                       f"assigning attributes", fix="call super().__init__() first")
        modules: dict[str, Module] = self.__dict__["_modules"]
        params.pop(name, None)
        modules.pop(name, None)
        if isinstance(value, Parameter):
            params[name] = value
        elif isinstance(value, Module):
            modules[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        self.__dict__["_parameters"].pop(name, None)
        self.__dict__["_modules"].pop(name, None)
        object.__delattr__(self, name)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} defines no forward")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # -- the tree
    def named_modules(self, prefix: str = "") -> Iterator[tuple[str, Module]]:
        """This module (named ``prefix``) and every submodule, depth first, each once."""
        seen: set[int] = set()
        stack: list[tuple[str, Module]] = [(prefix, self)]
        while stack:
            name, m = stack.pop()
            if id(m) in seen:
                continue
            seen.add(id(m))
            yield name, m
            children = list(m._modules.items())
            stack.extend((f"{name}.{k}" if name else k, c) for k, c in reversed(children))

    def children(self) -> list[Module]:
        return list(self._modules.values())

    def named_parameters(self) -> list[tuple[str, Parameter]]:
        """``(dotted name, parameter)`` for every parameter of the tree, each parameter once (a shared one
        under its first name), in registration order."""
        out: list[tuple[str, Parameter]] = []
        seen: set[int] = set()
        for mname, m in self.named_modules():
            for pname, p in m._parameters.items():
                if id(p) not in seen:
                    seen.add(id(p))
                    out.append((f"{mname}.{pname}" if mname else pname, p))
        return out

    def parameters(self) -> list[Parameter]:
        return [p for _, p in self.named_parameters()]

    def parameter_values(self) -> dict[str, Array]:
        """``{name: p.value}``: the arrays to differentiate (see :func:`functional_call`)."""
        return {k: p.value for k, p in self.named_parameters()}

    def train(self, mode: bool = True) -> Module:
        for _, m in self.named_modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self) -> Module:
        return self.train(False)

    # -- saving
    def state_dict(self) -> dict[str, Array]:
        """``{dotted name: value}`` of every parameter (the arrays themselves, not copies)."""
        return self.parameter_values()

    def load_state_dict(self, state: Mapping[str, Any], strict: bool = True) -> None:
        """Give each parameter named in ``state`` that value (a vyre array or anything numpy takes; moved to
        the parameter's backend, cast to nothing: shape and dtype must match). ``strict``: the names must
        be exactly the parameters' names. Everything is checked before any parameter changes."""
        if not isinstance(state, Mapping):
            raise ArgumentTypeError(f"load_state_dict takes a mapping of names to arrays, not {type(state).__name__}",
                                    fix="pass module.state_dict() or vyre.nn.load(path)'s result")
        params = dict(self.named_parameters())
        if strict:
            missing, unexpected = sorted(set(params) - set(state)), sorted(set(state) - set(params))
            if missing or unexpected:
                raise InvalidArgumentError(f"state dict does not match the module: missing {missing}, "
                                           f"unexpected {unexpected}", fix="pass strict=False to load a subset")
        staged: list[tuple[Parameter, Array]] = []
        for name, p in params.items():
            if name not in state:
                continue
            given = state[name]
            dev = p.value.device
            arr = given.to_device(dev) if isinstance(given, Array) else xp.asarray(np.asarray(given), device=dev)
            if arr.shape != p.shape or arr.dtype != p.dtype:
                raise InvalidArgumentError(f"{name}: the module has shape {p.shape} {p.dtype}, the state "
                                           f"{arr.shape} {arr.dtype}", fix="load a state of the same architecture")
            staged.append((p, arr))
        for p, arr in staged:
            p.value = arr

    def save(self, path: str | os.PathLike[str]) -> None:
        """The state dict as a safetensors file (values downloaded once each)."""
        save(self.state_dict(), path)

    def load(self, path: str | os.PathLike[str], strict: bool = True) -> None:
        """Load a safetensors file written by :meth:`save` (see :meth:`load_state_dict`)."""
        self.load_state_dict(load(path), strict=strict)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={type(m).__name__}" for k, m in self._modules.items())
        return f"{type(self).__name__}({inner})"


def save(state: Mapping[str, Array], path: str | os.PathLike[str]) -> None:
    """Write ``{name: array}`` to a safetensors file (``safetensors.numpy.save_file``)."""
    from safetensors.numpy import save_file  # why: loaded only to write a checkpoint

    host: dict[str, np.ndarray] = {}
    for name, a in state.items():
        if not isinstance(a, Array):
            raise ArgumentTypeError(f"{name}: save takes vyre arrays, not {type(a).__name__}",
                                    fix="pass module.state_dict()")
        host[name] = np.ascontiguousarray(np.asarray(a))
    save_file(host, os.fspath(path))


def load(path: str | os.PathLike[str]) -> dict[str, np.ndarray]:
    """A safetensors file's ``{name: numpy array}`` (give it to :meth:`Module.load_state_dict`)."""
    from safetensors.numpy import load_file  # why: loaded only to read a checkpoint

    try:
        return dict(load_file(os.fspath(path)))
    except OSError:
        raise
    except Exception as exc:  # noqa: BLE001 - safetensors' own error type for a file that is not one
        raise InvalidArgumentError(f"{os.fspath(path)!r} is not a safetensors file: {exc}",
                                   fix="pass a file written by vyre.nn.save / module.save") from None


class Sequential(Module):
    """Modules applied in order, registered as ``"0"``, ``"1"``, ... A ``key`` given to the call is split
    among the children that take one (``takes_key``: Dropout, or a Sequential holding one)."""

    def __init__(self, *modules: Module) -> None:
        super().__init__()
        for i, m in enumerate(modules):
            if not isinstance(m, Module):
                raise ArgumentTypeError(f"Sequential takes modules, not {type(m).__name__} (position {i})",
                                        fix="wrap functions in a Module, or call them in your own forward")
            setattr(self, str(i), m)

    @property
    def takes_key(self) -> bool:
        return any(getattr(m, "takes_key", False) for m in self._modules.values())

    def __len__(self) -> int:
        return len(self._modules)

    def __getitem__(self, i: int) -> Module:
        mod: Module = list(self._modules.values())[i]
        return mod

    def forward(self, x: Any, *, key: Array | None = None) -> Any:
        mods = list(self._modules.values())
        takers = [m for m in mods if getattr(m, "takes_key", False)]
        keys: dict[int, Array] = {}
        if key is not None and takers:
            from vyre.random import split

            ks = split(key, len(takers))
            keys = {id(m): ks[i] for i, m in enumerate(takers)}
        for m in mods:
            x = m(x, key=keys.get(id(m))) if getattr(m, "takes_key", False) else m(x)
        return x


def functional_call(module: Module, values: Mapping[str, Array] | Sequence[Array], *args: Any,
                    **kwargs: Any) -> Any:
    """``module(*args, **kwargs)`` computed with the given parameter values (``{name: array}`` as
    :meth:`Module.parameter_values` gives, or a sequence in :meth:`Module.parameters` order), the module's
    own values put back afterwards. This is how ``vyre.autograd.value_and_grad`` differentiates a model:
    the values are ``f``'s argument."""
    named = module.named_parameters()
    if isinstance(values, Mapping):
        unknown = sorted(set(values) - {n for n, _ in named})
        if unknown:
            raise InvalidArgumentError(f"functional_call: no parameters named {unknown}",
                                       fix="use the names of module.named_parameters()")
        pairs = [(p, values[n]) for n, p in named if n in values]
    elif isinstance(values, Sequence):
        if len(values) != len(named):
            raise InvalidArgumentError(f"functional_call: {len(values)} values for {len(named)} parameters",
                                       fix="pass one value per module.parameters() entry")
        pairs = [(p, v) for (_, p), v in zip(named, values, strict=True)]
    else:
        raise ArgumentTypeError(f"functional_call takes a dict or a sequence of arrays, not {type(values).__name__}",
                                fix="pass module.parameter_values()")
    saved = [(p, p.value) for p, _ in pairs]
    try:
        for p, v in pairs:
            p.value = v
        return module(*args, **kwargs)
    finally:
        for p, v in saved:
            p._value = v  # the saved values passed the checks when they were set



__all__ = ["Parameter", "Module", "Sequential", "functional_call", "save", "load"]
