"""The main job: saxpy (``y = a * x + y``) on the default adapter, checked against numpy.

Run it with ``python -m vyre.demo`` (``make demo`` installs everything first). It builds the
program with the builder, prints its WGSL, runs it on the GPU and on the reference
interpreter, and compares both with numpy. Exit status: 0 when every result matches,
1 on a mismatch, 2 when no GPU adapter is available.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from .errors import NoAdapterError
from .ir.builder import ProgramBuilder
from .ir.program import Program
from .lower import lower

# f32 saxpy: the GPU may fuse a*x+y into one fma (one rounding instead of two), so results may
# differ from numpy's by about one ulp of the product.
RTOL = 1e-5
ATOL = 1e-6


def build_saxpy(workgroup_size: int = 64) -> Program:
    """``y[i] = a * x[i] + y[i]`` for every ``i < len(y)``; ``a`` is a one-element uniform."""
    b = ProgramBuilder("saxpy", workgroup_size=workgroup_size)
    a = b.buffer("a", "f32", access="uniform", count=1)
    x = b.buffer("x", "f32")
    y = b.buffer("y", "f32", access="read_write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = a[0] * x[i] + y[i]
    return b.build()


def _check(name: str, got: np.ndarray, want: np.ndarray) -> bool:
    err = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)))) if want.size else 0.0
    print(f"{name}: max abs error {err:.3g}; first values {np.array2string(got[:4], precision=6)}")
    try:
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    except AssertionError as exc:
        print(f"{name}: MISMATCH (rtol={RTOL}, atol={ATOL})\n{exc}", file=sys.stderr)
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vyre.demo", description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=1_000_003, help="number of elements (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    # why (both): import time; `vyre wgsl vyre.demo:build_saxpy` imports this module for the builder alone,
    # without wgpu or the interpreter (~0.1 s)
    from .backends.reference import ReferenceBackend  # why: import time (above)
    from .backends.wgpu import WgpuBackend  # why: import time (above)

    program = build_saxpy()
    print(f"== WGSL of program {program.name!r} (fingerprint {program.fingerprint[:12]})")
    print(lower(program).wgsl)

    rng = np.random.default_rng(args.seed)
    a = np.array([2.5], dtype=np.float32)
    x = rng.uniform(-1.0, 1.0, args.n).astype(np.float32)
    y = rng.uniform(-1.0, 1.0, args.n).astype(np.float32)
    want = a[0] * x + y  # numpy, in f32
    print(f"== saxpy on {args.n} f32 elements: y = {a[0]} * x + y (tolerance rtol={RTOL}, atol={ATOL})")

    try:
        gpu = WgpuBackend.acquire()
    except NoAdapterError as exc:
        print(f"no GPU adapter: {exc}", file=sys.stderr)
        return 2
    info = gpu.adapter_info
    print(f"adapter: {info.get('device')} ({info.get('backend_type')}, {info.get('adapter_type')})")

    ok = True
    t0 = time.perf_counter()
    (gpu_y,) = gpu.dispatch(program, [a, x, y])
    print(f"gpu dispatch: {1e3 * (time.perf_counter() - t0):.1f} ms (first run, includes compilation)")
    ok &= _check("gpu vs numpy", gpu_y, want)

    t0 = time.perf_counter()
    (ref_y,) = ReferenceBackend().dispatch(program, [a, x, y])
    print(f"reference dispatch: {1e3 * (time.perf_counter() - t0):.1f} ms")
    ok &= _check("reference vs numpy", ref_y, want)
    ok &= _check("gpu vs reference", gpu_y, ref_y)

    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
