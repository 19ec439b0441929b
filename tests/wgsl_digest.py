"""A digest of the WGSL vyre generates: every op witness (each kernel variant), every parity program
and a fixed set of array evaluations, so a refactor can show the generated shaders are byte-identical.

Run ``python tests/wgsl_digest.py`` (needs an adapter for the array part: array kernels are built
when an expression is evaluated); it prints a sha256 per family and over all, and with
``--list FILE`` writes one ``family sha256`` line per distinct shader. Compare two runs' output.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
# compiled pipelines loaded from the disk cache are never rendered: every shader must be lowered here
os.environ["VYRE_CACHE_DIR"] = "off"


def _ops(render: Callable) -> None:
    from vyre.ops import registry

    for spec in registry.all_ops():
        builders = [spec.build] + [v.build for v in spec.variants]
        for w in spec.witnesses():
            for build in builders:
                try:
                    pipe = build(**w.params)
                except Exception:  # noqa: BLE001 - a variant that does not apply to these params
                    continue
                for p in pipe.programs:
                    render(p)


def _parity(render: Callable) -> None:
    from programs import CASES

    for case in CASES:
        program = case.build()[0]
        render(program)


def _arrays() -> None:
    import vyre.array as va

    rng = np.random.default_rng(0)
    a32 = rng.standard_normal((64, 48)).astype(np.float32)
    b32 = rng.standard_normal((64, 48)).astype(np.float32)
    c32 = rng.standard_normal((48, 32)).astype(np.float32)
    i32 = rng.integers(-50, 50, (1000,)).astype(np.int32)
    a, b, c, i = va.asarray(a32), va.asarray(b32), va.asarray(c32), va.asarray(i32)
    out = [
        (a * 2 + b) * a - 1, va.sum(a * b), va.sum(a, axis=0), va.sum(a, axis=1), va.max(a, axis=0),
        va.mean(a), va.std(a, axis=1), va.cumulative_sum(a, axis=1), a @ c, va.exp(a), va.tanh(b),
        va.maximum(a, b), va.where(a > b, a, b), va.argmax(a, axis=1), va.sort(i), va.argsort(i),
        va.unique_values(i), va.concat([a, b], axis=0), va.reshape(a, (48, 64)) + 1, a.T * 2, a[3:10, ::2],
        va.take(i, va.asarray(np.array([3, 1, 2], np.int32))), va.astype(a, va.int32), i % 7, i // 3,
        va.linspace(0, 1, 100), va.arange(1000) * 3, va.searchsorted(va.sort(i), i), va.clip(a, -0.5, 0.5),
        va.prod(b[:4, :4], axis=0), va.any(a > 3), va.all(a < 4), va.round(a * 10), va.tril(a[:16, :16]),
    ]
    for x in out:
        np.asarray(x)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", type=Path, help="write one 'family sha256' line per distinct shader here")
    ap.add_argument("--no-arrays", action="store_true", help="leave out the array part (no adapter needed)")
    args = ap.parse_args()

    import vyre.lower.wgsl as wgsl_mod

    seen: dict[str, set[str]] = {}
    family = ["ops"]
    original = wgsl_mod.render

    def record(program, *args, **kwargs):
        out = original(program, *args, **kwargs)
        seen.setdefault(family[0], set()).add(hashlib.sha256(out.wgsl.encode()).hexdigest())
        return out

    import vyre.lower as lower_pkg

    # lower() looks render up in vyre.lower, where it was imported by name
    wgsl_mod.render = lower_pkg.render = record  # type: ignore[attr-defined]
    try:
        _ops(record)
        family[0] = "parity"
        _parity(record)
        if not args.no_arrays:
            family[0] = "arrays"
            _arrays()
    finally:
        wgsl_mod.render = lower_pkg.render = original  # type: ignore[attr-defined]
    lines = sorted(f"{fam} {h}" for fam, hs in seen.items() for h in hs)
    for fam in sorted(seen):
        digest = hashlib.sha256("\n".join(sorted(seen[fam])).encode()).hexdigest()
        print(f"{fam}: {len(seen[fam])} shaders, sha256 {digest[:16]}")
    print(f"all: {len(lines)} shaders, sha256 {hashlib.sha256(chr(10).join(lines).encode()).hexdigest()[:16]}")
    if args.list:
        args.list.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
