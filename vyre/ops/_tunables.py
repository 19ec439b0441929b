"""What the tuner (:mod:`vyre.ops.tuning`) may vary, per op: a declarative :class:`Tunable`.

A tunable op says which build params a caller may name to opt out (``keys``), how its params fall
into shape classes (one stored winner per adapter and class), which :class:`Setting` s (a kernel
variant plus build params) are worth measuring for a class, representative shapes to tune ahead of
time and the inputs to measure on. Two kinds exist:

* :func:`gemm_tunable` (``matmul``, ``matmul.batched``, ``matmul.f16``): the GEMM tile shape
  (``tile_m, tile_n, tile_k, reg_m, reg_n``) among a handful of valid :class:`GemmTiles` around
  ``default_tiles``; classes are log2 buckets of m, n, k (and the batch) plus how aligned they are
  (tiles dividing the output evenly, vec4 paths or neither), since both change the kernel.
* :func:`variant_tunable` (the elementwise ops of :data:`ELEMENTWISE_OPS`, whose ``cpu-x4`` variant
  does 4 elements per invocation against the generic kernel's 1, and ``reduce.sum`` with its
  ``subgroup`` variant): which of the op's kernel variants runs, by log2 bucket of the element
  count (and dtype). The elementwise and reduction kernels have no workgroup-size or
  elements-per-invocation param (256 invocations are fixed in their builders): the tuner varies
  what exists.

Another op opts in with :func:`register_tunable` (e.g. ``register_tunable(gemm_tunable("my.gemm"))``
from its module, for a GEMM whose build takes the tile params).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .linalg._gemm import DEEP, LARGE, NARROW, SMALL, GemmTiles, default_tiles
from .linalg.matmul import TILE_KEYS
from .registry import all_ops
from .variants import GENERIC, AdapterFacts, choose

# tile shapes measured beside the default (each valid under GemmTiles.check: <= 256 invocations, <= 16 KiB)
GEMM_CANDIDATES = (SMALL, DEEP, LARGE, NARROW, GemmTiles(32, 32, 16, 4, 4), GemmTiles(128, 64, 8, 8, 8),
                   GemmTiles(64, 128, 8, 8, 8), GemmTiles(64, 64, 8, 4, 4))


@dataclass(frozen=True)
class Setting:
    """One candidate: the kernel ``variant`` and the build ``params`` it adds to the caller's."""

    variant: str = GENERIC
    params: tuple[tuple[str, int], ...] = ()

    @classmethod
    def of(cls, variant: str = GENERIC, params: Mapping[str, int] | None = None) -> Setting:
        return cls(variant, tuple(sorted((k, int(v)) for k, v in (params or {}).items())))

    @classmethod
    def from_json(cls, doc: dict) -> Setting:
        return cls.of(doc["variant"], doc["params"])

    def to_json(self) -> dict:
        return {"variant": self.variant, "params": dict(self.params)}

    def label(self) -> str:
        p = dict(self.params)
        if set(TILE_KEYS) <= set(p):
            tiles = f"{p['tile_m']}x{p['tile_n']}x{p['tile_k']}/{p['reg_m']}x{p['reg_n']}"
            return tiles if self.variant == GENERIC else f"{self.variant} {tiles}"
        extra = " ".join(f"{k}={v}" for k, v in self.params)
        return f"{self.variant} {extra}".strip()


@dataclass(frozen=True)
class Tunable:
    """How one op is tuned (see the module doc).

    ``shape_class(params)``: the class label (None: these params are not tuned);
    ``candidates(params, facts, quick)``: the settings to measure, the one an untuned call runs first;
    ``check(params, setting, facts)``: None when a stored setting can run these params, else why not
    (checked at every use, so a stale entry falls back to the default instead of failing);
    ``shapes(quick)``: representative shapes tuned ahead of time; ``params_of(shape)``: their params;
    ``inputs(params, rng)``: the arrays to validate and time on.
    """

    op_id: str
    keys: tuple[str, ...]
    shape_class: Callable[[dict], str | None]
    candidates: Callable[[dict, AdapterFacts, bool], list[Setting]]
    check: Callable[[dict, Setting, AdapterFacts], str | None]
    shapes: Callable[[bool], list[tuple[int, ...]]]
    params_of: Callable[[tuple[int, ...]], dict]
    inputs: Callable[[dict, np.random.Generator], tuple[np.ndarray, ...]]
    summary: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)


def bucket(n: int) -> int:
    """ceil(log2(n)) (0 for 1): the power-of-two bucket a size falls in."""
    return max(0, int(n) - 1).bit_length()


def _uniform(dtype: Any) -> Callable[[tuple[int, ...], np.random.Generator], np.ndarray]:
    return lambda shape, rng: rng.uniform(-1, 1, shape).astype(dtype)


# ---- GEMM tiles -----------------------------------------------------------------------------
def _gemm_class(p: dict) -> str:
    m, n, k = int(p["m"]), int(p["n"]), int(p["k"])
    align = "x64" if m % 64 == 0 and n % 64 == 0 and k % 4 == 0 else "v4" if k % 4 == 0 and n % 4 == 0 else "s"
    head = f"b{bucket(p['batch'])}-" if "batch" in p else ""
    return f"{head}m{bucket(m)}-n{bucket(n)}-k{bucket(k)}-{align}"


def _tiles_setting(t: GemmTiles) -> Setting:
    return Setting.of(GENERIC, t.as_params())


def _gemm_candidates(p: dict, facts: AdapterFacts, quick: bool) -> list[Setting]:
    m, n, k = int(p["m"]), int(p["n"]), int(p["k"])
    first = default_tiles(m, n, k)
    out = [first]
    for t in GEMM_CANDIDATES:
        # tiles far larger than the matrix only add padding work
        if t not in out and t.tile_m <= max(32, 2 ** bucket(m)) and t.tile_n <= max(32, 2 ** bucket(n)):
            out.append(t)
    return [_tiles_setting(t) for t in (out[:3] if quick else out)]


def _gemm_check(p: dict, s: Setting, facts: AdapterFacts) -> str | None:
    if s.variant != GENERIC or set(dict(s.params)) != set(TILE_KEYS):
        return f"not a tile setting: {s}"
    try:
        GemmTiles(**dict(s.params)).check()
    except (TypeError, ValueError) as exc:
        return str(exc)
    return None


def gemm_tunable(op_id: str, *, batched: bool = False, dtype: Any = np.float32,
                 shapes: Callable[[bool], list[tuple[int, ...]]] | None = None) -> Tunable:
    """The tile tuner of a GEMM op whose build takes ``m, k, n`` (``batch`` first when ``batched``) and
    the :data:`TILE_KEYS`, with inputs ``a`` (m, k) and ``b`` (k, n) of ``dtype``."""
    def default_shapes(quick: bool) -> list[tuple[int, ...]]:
        sizes: list[tuple[int, ...]] = [(64, 64, 64), (256, 256, 256)] if quick else \
            [(256, 256, 256), (1024, 1024, 1024), (2048, 2048, 2048), (4096, 4096, 4096), (4000, 4000, 4000)]
        if batched:
            return [(4, *s) for s in sizes[:2]]
        return sizes

    def params_of(shape: tuple[int, ...]) -> dict:
        if batched:
            b, m, k, n = shape
            return {"batch": b, "m": m, "k": k, "n": n}
        m, k, n = shape
        return {"m": m, "k": k, "n": n}

    def inputs(p: dict, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        lead = (p["batch"],) if batched else ()
        make = _uniform(dtype)
        return make(lead + (p["m"], p["k"]), rng), make(lead + (p["k"], p["n"]), rng)

    return Tunable(op_id, TILE_KEYS, _gemm_class, _gemm_candidates, _gemm_check, shapes or default_shapes,
                   params_of, inputs, summary="GEMM tile shape (tile_m x tile_n x tile_k / reg_m x reg_n)")


# ---- kernel variants ------------------------------------------------------------------------
def variant_tunable(spec: Any, kind: str) -> Tunable:
    """The variant tuner of ``spec``: ``kind`` ``"zip"`` (params shape_x, shape_y, dtype), ``"map"`` (shape,
    dtype) or ``"reduce"`` (shape, dtype, axis)."""
    def size(p: dict) -> int:
        if kind == "zip":
            return math.prod(np.broadcast_shapes(tuple(p["shape_x"]), tuple(p["shape_y"])))
        return math.prod(p["shape"])

    def shape_class(p: dict) -> str | None:
        tag = ""
        if kind == "zip" and tuple(p["shape_x"]) != tuple(p["shape_y"]):
            tag = "-bcast"
        elif kind == "reduce" and p.get("axis") is not None:
            shape, axis = tuple(p["shape"]), int(p["axis"])
            tag = f"-l{bucket(shape[axis])}-i{bucket(math.prod(shape[axis + 1:]))}"
        return f"{p['dtype']}-n{bucket(size(p))}{tag}"

    def runnable(p: dict, name: str, facts: AdapterFacts) -> str | None:
        if name == GENERIC:
            return None
        v = next((v for v in spec.variants if v.name == name), None)
        if v is None:
            return f"{spec.id} has no variant {name!r}"
        if not v.applies_to(p):
            return f"variant {name!r} does not handle these params"
        lacks = v.missing(facts)
        return f"the adapter lacks {', '.join(lacks)}" if lacks else None

    def candidates(p: dict, facts: AdapterFacts, quick: bool) -> list[Setting]:
        first = choose(spec, p, facts)  # what an untuned call runs first (the tuner's default)
        names = [first] + [n for n in [GENERIC] + [v.name for v in spec.variants] if n != first]
        return [Setting.of(n) for n in names if runnable(p, n, facts) is None]

    def check(p: dict, s: Setting, facts: AdapterFacts) -> str | None:
        return "unexpected params" if s.params else runnable(p, s.variant, facts)

    def shapes(quick: bool) -> list[tuple[int, ...]]:
        return [(1 << 16,), (1 << 18,)] if quick else [(1 << 16,), (1 << 20,), (1 << 24,)]

    def params_of(shape: tuple[int, ...]) -> dict:
        if kind == "zip":
            return {"shape_x": shape, "shape_y": shape, "dtype": "f32"}
        if kind == "reduce":
            return {"shape": shape, "dtype": "f32", "axis": None}
        return {"shape": shape, "dtype": "f32"}

    def inputs(p: dict, rng: np.random.Generator) -> tuple[np.ndarray, ...]:
        make = _uniform(np.float32)
        if kind == "zip":
            return make(tuple(p["shape_x"]), rng), make(tuple(p["shape_y"]), rng)
        return (make(tuple(p["shape"]), rng),)

    return Tunable(spec.id, (), shape_class, candidates, check, shapes, params_of, inputs,
                   summary=f"kernel variant ({', '.join(spec.variant_names())})")


# ---- the table ------------------------------------------------------------------------------
#: Ops ``vyre tune`` tunes when none are named (others with a tunable are tuned on request).
DEFAULT_OPS = ("matmul", "matmul.batched", "matmul.f16", "zip.add", "map.exp", "nn.gelu", "reduce.sum")

#: Elementwise ops tuned over their variants: f32 ops that take any input in [-1, 1] (what the tuner
#: measures on); another one opts in with ``register_tunable(variant_tunable(spec, "zip" | "map"))``.
ELEMENTWISE_OPS = ("zip.add", "zip.sub", "zip.mul", "zip.min", "zip.max", "map.neg", "map.abs", "map.exp",
                   "map.exp2", "map.sin", "map.cos", "map.tanh", "map.floor", "map.ceil", "map.trunc", "map.round",
                   "nn.gelu", "nn.silu")

_EXTRA: dict[str, Tunable] = {}
_TABLE: dict[str, Tunable] | None = None
_LOCK = threading.Lock()


def register_tunable(t: Tunable) -> Tunable:
    """Make ``t.op_id`` tunable (an op module may call this at import)."""
    global _TABLE
    with _LOCK:
        _EXTRA[t.op_id] = t
        _TABLE = None
    return t


def _build_table() -> dict[str, Tunable]:
    out: dict[str, Tunable] = {}
    specs = {s.id: s for s in all_ops()}
    for op_id, batched, dtype in (("matmul", False, np.float32), ("matmul.batched", True, np.float32),
                                  ("matmul.f16", False, np.float16)):
        if op_id in specs:
            out[op_id] = gemm_tunable(op_id, batched=batched, dtype=dtype)
    for op_id in ELEMENTWISE_OPS:
        spec = specs.get(op_id)
        if spec is not None and "cpu-x4" in {v.name for v in spec.variants}:
            out[op_id] = variant_tunable(spec, "zip" if op_id.startswith("zip.") else "map")
    if "reduce.sum" in specs:
        out["reduce.sum"] = variant_tunable(specs["reduce.sum"], "reduce")
    out.update(_EXTRA)
    return out


def tunables() -> dict[str, Tunable]:
    """{op id: Tunable} of every tunable op (built on first use, after the op modules are loaded)."""
    global _TABLE
    table = _TABLE
    if table is None:
        built = _build_table()
        with _LOCK:
            if _TABLE is None:
                _TABLE = {**built, **_EXTRA}
            table = _TABLE
    return table


__all__ = ["TILE_KEYS", "GEMM_CANDIDATES", "DEFAULT_OPS", "ELEMENTWISE_OPS", "Setting", "Tunable", "bucket",
           "gemm_tunable", "variant_tunable", "register_tunable", "tunables"]
