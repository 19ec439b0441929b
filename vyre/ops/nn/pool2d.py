"""nn.max_pool2d and nn.avg_pool2d: 2-D pooling of NCHW f32/f16 input, PyTorch's semantics.

x (N, C, H, W) -> out (N, C, OH, OW) with ``kernel`` (kh, kw), ``stride`` (default: the
kernel), ``padding`` (ph, pw) and ``ceil_mode`` exactly as torch.nn.functional.max_pool2d /
avg_pool2d: ``OH = floor_or_ceil((H + 2 ph - kh) / sh) + 1``, and with ceil_mode the last
window is dropped when it would start at or past ``H + ph`` (inside the right padding).
``padding <= kernel // 2`` (torch's rule, so every window holds an input element).

Kernel: one invocation per output element walks its window clamped to the image, row by row
(torch's scan order). f16 is loaded into f32 (exact) and rounded back once.

max: padded positions never win (they are -inf); every comparison is on integer keys of the
bits (``reduce.argmax``'s ``order_key``), so the result is exact on every adapter: the first
of equal values wins (-0.0 == +0.0, the first one's sign is kept) and NaN propagates: a NaN
always wins, the last NaN of the window is returned (torch's ``val > max || isnan(val)``).
``return_indices`` adds a second output, u32 (torch: int64), the flat ``h * W + w`` position
of the winner in its (n, c) plane; a window of only -inf returns its first in-image position.
Tolerance: bit-exact.

avg: the f32 sum of the window's in-image elements in scan order, divided by
``divisor_override`` if given, else by the window's size clipped to the padded input when
``count_include_pad`` (torch: windows of ceil_mode that reach past the right padding count
only up to it), else by the number of in-image elements. Tolerance: the sum of at most
kh*kw terms plus one division: rel(2^-21, kh*kw * 2^-22) for |x| <= 1 (the witnesses'
range; it scales with max |x|); f16 adds its final rounding: rel(2^-10, kh*kw * 2^-22 + 2^-24).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from ...backends.schedule import Pipeline
from ...errors import DispatchError
from ...ir.builder import ProgramBuilder, Val
from ..pipeline import single
from ..reduce.argmax import order_key
from ..registry import EXACT, OpSpec, Tolerance, Witness, register, rel

WG = 64
DTYPES = {"f32": np.float32, "f16": np.float16}
F16 = frozenset({"shader-f16"})
NAN_KEY = 0xFFFFFFFF  # order_key of every NaN: above +inf
NEG_INF_BITS = 0xFF800000
NEG_INF_KEY = NEG_INF_BITS ^ 0xFFFFFFFF  # order_key of -inf (a negative float: ~bits)

IntPair = int | np.integer | Sequence[int]  # an int (both axes) or an (h, w) pair
#: ((kh, kw), (sh, sw), (ph, pw), oh, ow), as :func:`geometry` returns it
Geometry = tuple[tuple[int, int], tuple[int, int], tuple[int, int], int, int]


def pair(op: str, name: str, v: Any) -> tuple[int, int]:
    """An int or an (h, w) pair of ints -> (h, w); ValueError otherwise."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return int(v), int(v)
    try:
        h, w = v
        if not all(isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in (h, w)):
            raise TypeError
    except (TypeError, ValueError):
        raise ValueError(f"{op}: {name} must be an int or an (h, w) pair of ints, got {v!r}") from None
    return int(h), int(w)


def out_size(size: int, k: int, stride: int, pad: int, ceil_mode: bool) -> int:
    """torch's pooling_output_shape (dilation 1)."""
    n = (size + 2 * pad - k + (stride - 1 if ceil_mode else 0)) // stride + 1  # floor division, like div_rtn
    if ceil_mode and (n - 1) * stride >= size + pad:
        n -= 1  # the last window would start inside the right padding
    return n


def geometry(op: str, n: int, c: int, h: int, w: int, kernel: IntPair, stride: IntPair | None, padding: IntPair,
             ceil_mode: bool) -> Geometry:
    """Checked ((kh, kw), (sh, sw), (ph, pw), oh, ow); ValueError names the broken rule."""
    kh, kw = pair(op, "kernel", kernel)
    sh, sw = pair(op, "stride", kernel if stride is None else stride)
    ph, pw = pair(op, "padding", padding)
    for label, val in (("n", n), ("c", c), ("h", h), ("w", w), ("kernel", min(kh, kw)), ("stride", min(sh, sw))):
        if int(val) < 1:
            raise ValueError(f"{op}: {label} must be >= 1, got {val}")
    if min(ph, pw) < 0 or ph > kh // 2 or pw > kw // 2:
        raise ValueError(f"{op}: padding {(ph, pw)} must be >= 0 and at most half the kernel {(kh, kw)} "
                         f"(torch's rule: at most {(kh // 2, kw // 2)})")
    oh, ow = out_size(h, kh, sh, ph, ceil_mode), out_size(w, kw, sw, pw, ceil_mode)
    if oh < 1 or ow < 1:
        raise ValueError(f"{op}: the {kh}x{kw} kernel does not fit the padded {h}x{w} input "
                         f"(output {oh}x{ow})")
    return (kh, kw), (sh, sw), (ph, pw), oh, ow


def _windows(b: ProgramBuilder, i: Val, geo: Geometry, h: int, w: int) -> tuple[Val, ...]:
    """The output element ``i``'s plane base and its window: unclamped start (i32) and clamped
    [start, end) rows and columns (u32), plus the ends clipped to the padded input (i32)."""
    (kh, kw), (sh, sw), (ph, pw), oh, ow = geo
    col = b.let(i % ow)
    row = b.let((i / ow) % oh)
    base = b.let(i / (oh * ow) * (h * w))
    y0 = b.let((row * sh).cast("i32") - ph)
    x0 = b.let((col * sw).cast("i32") - pw)
    ys, xs = b.let(b.max(y0, 0).cast("u32")), b.let(b.max(x0, 0).cast("u32"))
    ye, xe = b.let(b.min(y0 + kh, h).cast("u32")), b.let(b.min(x0 + kw, w).cast("u32"))
    ypad, xpad = b.let(b.min(y0 + kh, h + ph)), b.let(b.min(x0 + kw, w + pw))
    return base, y0, x0, ys, ye, xs, xe, ypad, xpad


def _program(kind: str, n: int, c: int, h: int, w: int, kernel: IntPair, stride: IntPair | None, padding: IntPair,
             ceil_mode: bool, dtype: str, return_indices: bool = False, count_include_pad: bool = True,
             divisor_override: int | None = None) -> Pipeline:
    op = f"nn.{kind}_pool2d"
    if dtype not in DTYPES:
        raise ValueError(f"{op}: dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    geo = geometry(op, n, c, h, w, kernel, stride, padding, ceil_mode)
    oh, ow = geo[3], geo[4]
    total = n * c * oh * ow
    b = ProgramBuilder(f"nn_{kind}_pool2d_{dtype}", workgroup_size=WG)
    x = b.buffer("x", dtype, count=n * c * h * w)
    out = b.buffer("out", dtype, "write", count=total)
    where = b.buffer("indices", "u32", "write", count=total) if return_indices else None
    i = b.global_index()
    with b.if_(i < total):
        base, y0, x0, ys, ye, xs, xe, ypad, xpad = _windows(b, i, geo, h, w)

        def load(yy: Val, xx: Val) -> Val:
            v = x[base + yy * w + xx]
            return v if dtype == "f32" else v.cast("f32")

        if kind == "max":
            key = b.var("u32", NEG_INF_KEY, name="key")
            bits = b.var("u32", NEG_INF_BITS, name="bits")
            arg = b.var("u32", ys * w + xs, name="arg")  # a window of only -inf: its first element
            with b.for_range(ys, ye) as yy:
                with b.for_range(xs, xe) as xx:
                    v = b.let(load(yy, xx))
                    raw = b.let(v.bitcast("u32"))
                    k = b.let(order_key(b, v, "f32"))
                    with b.if_((k == NAN_KEY) | (k > key)):  # NaN always wins; else strictly larger
                        key.set(k)
                        bits.set(raw)
                        arg.set(yy * w + xx)
            best = bits.bitcast("f32")
            out[i] = best if dtype == "f32" else best.cast("f16")
            if where is not None:
                where[i] = arg
        else:
            acc = b.var("f32", 0.0, name="acc")
            with b.for_range(ys, ye) as yy:
                with b.for_range(xs, xe) as xx:
                    acc += load(yy, xx)
            if divisor_override is not None:
                div = b.lit(float(divisor_override), "f32")
            elif count_include_pad:
                div = ((ypad - y0) * (xpad - x0)).cast("f32")
            else:
                div = ((ye - ys) * (xe - xs)).cast("f32")
            mean = acc / div
            out[i] = mean if dtype == "f32" else mean.cast("f16")
    shapes: dict[str, tuple[int, ...]] = {"out": (n, c, oh, ow)}
    if return_indices:
        shapes["indices"] = (n, c, oh, ow)
    return single(b.build(), grid=(-(-total // WG), 1, 1), output_shapes=shapes)


def build_max(n: int, c: int, h: int, w: int, kernel: IntPair, stride: IntPair | None = None, padding: IntPair = 0,
              ceil_mode: bool = False, dtype: str = "f32", return_indices: bool = False) -> Pipeline:
    return _program("max", n, c, h, w, kernel, stride, padding, ceil_mode, dtype, return_indices=return_indices)


def build_avg(n: int, c: int, h: int, w: int, kernel: IntPair, stride: IntPair | None = None, padding: IntPair = 0,
              ceil_mode: bool = False, dtype: str = "f32", count_include_pad: bool = True,
              divisor_override: int | None = None) -> Pipeline:
    return _program("avg", n, c, h, w, kernel, stride, padding, ceil_mode, dtype,
                    count_include_pad=count_include_pad, divisor_override=divisor_override)


# ----------------------------------------------------------------------------- numpy reference
def _taps(x: np.ndarray, geo: Geometry) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per kernel tap in scan order: (values (N, C, OH, OW), in-image mask (OH, OW), flat position)."""
    (kh, kw), (sh, sw), (ph, pw), oh, ow = geo
    h, w = x.shape[2], x.shape[3]
    for di in range(kh):
        ys = np.arange(oh) * sh - ph + di
        for dj in range(kw):
            xs = np.arange(ow) * sw - pw + dj
            ok = ((ys >= 0) & (ys < h))[:, None] & ((xs >= 0) & (xs < w))[None, :]
            yc, xc = np.clip(ys, 0, h - 1), np.clip(xs, 0, w - 1)
            yield x[:, :, yc[:, None], xc[None, :]], ok, yc[:, None] * w + xc[None, :]


def reference_max(x: np.ndarray, *, n: int, c: int, h: int, w: int, kernel: IntPair, stride: IntPair | None = None,
                  padding: IntPair = 0, ceil_mode: bool = False, dtype: str = "f32",
                  return_indices: bool = False) -> list[np.ndarray]:
    x = np.asarray(x).reshape(n, c, h, w).astype(np.float32)
    geo = geometry("nn.max_pool2d", n, c, h, w, kernel, stride, padding, ceil_mode)
    shape = (n, c, geo[3], geo[4])
    best = np.full(shape, -np.inf, np.float32)
    arg = np.full(shape, -1, np.int64)
    for v, ok, pos in _taps(x, geo):
        first = ok & (arg < 0)  # the first in-image tap: the answer for a window of only -inf
        arg = np.where(first, pos, arg)
        with np.errstate(invalid="ignore"):
            take = ok & (np.isnan(v) | (~np.isnan(best) & (v > best)))  # torch: val > max || isnan(val)
        best = np.where(take, v, best)
        arg = np.where(take, pos, arg)
    outs = [best.astype(DTYPES[dtype])]
    if return_indices:
        outs.append(arg.astype(np.uint32))
    return outs


def reference_avg(x: np.ndarray, *, n: int, c: int, h: int, w: int, kernel: IntPair, stride: IntPair | None = None,
                  padding: IntPair = 0, ceil_mode: bool = False, dtype: str = "f32", count_include_pad: bool = True,
                  divisor_override: int | None = None) -> list[np.ndarray]:
    x = np.asarray(x).reshape(n, c, h, w).astype(np.float64)
    geo = geometry("nn.avg_pool2d", n, c, h, w, kernel, stride, padding, ceil_mode)
    (kh, kw), (sh, sw), (ph, pw), oh, ow = geo
    acc = np.zeros((n, c, oh, ow))
    count = np.zeros((oh, ow))
    for v, ok, _ in _taps(x, geo):
        acc += np.where(ok, v, 0.0)
        count += ok
    y0, x0 = np.arange(oh) * sh - ph, np.arange(ow) * sw - pw
    padded = (np.minimum(y0 + kh, h + ph) - y0)[:, None] * (np.minimum(x0 + kw, w + pw) - x0)[None, :]
    div = float(divisor_override) if divisor_override is not None else (padded if count_include_pad else count)
    return [(acc / div).astype(DTYPES[dtype])]


# ----------------------------------------------------------------------------- convenience layer
def _params(op: str, x: np.ndarray, kernel_size: Any, stride: Any, padding: Any, ceil_mode: Any) -> dict[str, Any]:
    name = {np.dtype(v): k for k, v in DTYPES.items()}.get(x.dtype)
    if name is None or x.ndim != 4 or x.size == 0:
        raise DispatchError(f"{op}: x has dtype {x.dtype} and shape {x.shape}; expected a non-empty float32 or "
                            "float16 array of 4 dims (N, C, H, W)",
                            fix="pass x as float32 (or float16) in NCHW layout, e.g. x[None] for a single image")
    if any(isinstance(v, np.ndarray) for v in (kernel_size, stride, padding, ceil_mode)):
        raise DispatchError(f"{op}: an array was given where kernel_size/stride/padding/ceil_mode belong",
                            fix="pass x alone positionally and the rest as keywords, e.g. kernel_size=2")
    if not isinstance(ceil_mode, (bool, np.bool_)):
        raise DispatchError(f"{op}: ceil_mode must be a bool, got {ceil_mode!r}", fix="pass ceil_mode=True or False")
    n, c, h, w = (int(d) for d in x.shape)
    try:
        geo = geometry(op, n, c, h, w, kernel_size, stride, padding, bool(ceil_mode))
    except ValueError as exc:
        raise DispatchError(str(exc), fix="use a kernel that fits the input and padding <= kernel // 2 "
                            "(kernel, stride and padding are ints or (h, w) pairs of ints >= 1, >= 1, >= 0)") from None
    return {"n": n, "c": c, "h": h, "w": w, "kernel": list(geo[0]), "stride": list(geo[1]),
            "padding": list(geo[2]), "ceil_mode": bool(ceil_mode), "dtype": name}


def _no_unknown(op: str, unknown: dict[str, Any], known: str) -> None:
    if unknown:
        raise DispatchError(f"{op}: unknown parameter(s) {sorted(unknown)} (dilation is not supported)",
                            fix=f"pass only {known}")


def params_max(x: np.ndarray, kernel_size: Any = None, stride: Any = None, padding: Any = 0, ceil_mode: Any = False,
               return_indices: Any = False, **unknown: Any) -> dict[str, Any]:
    _no_unknown("nn.max_pool2d", unknown, "kernel_size, stride, padding, ceil_mode and return_indices")
    if kernel_size is None:
        raise DispatchError("nn.max_pool2d: kernel_size is required", fix="pass kernel_size=k or (kh, kw)")
    if not isinstance(return_indices, (bool, np.bool_)):
        raise DispatchError(f"nn.max_pool2d: return_indices must be a bool, got {return_indices!r}",
                            fix="pass return_indices=True or False")
    return {**_params("nn.max_pool2d", x, kernel_size, stride, padding, ceil_mode),
            "return_indices": bool(return_indices)}


def params_avg(x: np.ndarray, kernel_size: Any = None, stride: Any = None, padding: Any = 0, ceil_mode: Any = False,
               count_include_pad: Any = True, divisor_override: Any = None, **unknown: Any) -> dict[str, Any]:
    _no_unknown("nn.avg_pool2d", unknown,
                "kernel_size, stride, padding, ceil_mode, count_include_pad and divisor_override")
    if kernel_size is None:
        raise DispatchError("nn.avg_pool2d: kernel_size is required", fix="pass kernel_size=k or (kh, kw)")
    if not isinstance(count_include_pad, (bool, np.bool_)):
        raise DispatchError(f"nn.avg_pool2d: count_include_pad must be a bool, got {count_include_pad!r}",
                            fix="pass count_include_pad=True or False")
    if divisor_override is not None and (not isinstance(divisor_override, (int, np.integer))
                                         or isinstance(divisor_override, bool) or divisor_override < 1):
        raise DispatchError(f"nn.avg_pool2d: divisor_override must be None or an int >= 1, got {divisor_override!r}",
                            fix="leave divisor_override=None (torch's default) or pass a positive int")
    return {**_params("nn.avg_pool2d", x, kernel_size, stride, padding, ceil_mode),
            "count_include_pad": bool(count_include_pad),
            "divisor_override": None if divisor_override is None else int(divisor_override)}


def _needs(params: dict[str, Any]) -> frozenset[str]:
    return F16 if params.get("dtype") == "f16" else frozenset()


def _tol_avg(params: dict[str, Any]) -> Tolerance:
    taps = params["kernel"][0] * params["kernel"][1]
    if params.get("dtype") == "f16":
        return rel(2.0 ** -10, taps * 2.0 ** -22 + 2.0 ** -24)
    return rel(2.0 ** -21, taps * 2.0 ** -22)


# ----------------------------------------------------------------------------- witnesses
def _geo_params(n: int, c: int, h: int, w: int, kernel: Sequence[int], stride: Sequence[int], padding: Sequence[int],
                ceil_mode: bool, dtype: str) -> dict[str, Any]:
    return {"n": n, "c": c, "h": h, "w": w, "kernel": list(kernel), "stride": list(stride),
            "padding": list(padding), "ceil_mode": ceil_mode, "dtype": dtype}


# (name, (n, c, h, w), kernel, stride, padding, ceil_mode, dtype): shared by both ops
_CASES: list[tuple[str, tuple[int, int, int, int], tuple[int, int], tuple[int, int], tuple[int, int], bool, str]] = [
    ("1x1_k1", (1, 1, 1, 1), (1, 1), (1, 1), (0, 0), False, "f32"),
    ("kernel_is_input_5x7", (1, 2, 5, 7), (5, 7), (5, 7), (0, 0), False, "f32"),
    ("k3_s2_p1_n2_c3", (2, 3, 9, 11), (3, 3), (2, 2), (1, 1), False, "f32"),
    ("ceil_k3x2_s2x3_p1_past_pad", (1, 2, 10, 8), (3, 2), (2, 3), (1, 1), True, "f32"),
    ("ceil_k2_s2_odd_no_pad", (2, 1, 7, 5), (2, 2), (2, 2), (0, 0), True, "f32"),
    ("stride_gt_kernel_k2_s3", (1, 2, 8, 8), (2, 2), (3, 3), (0, 0), False, "f32"),
    ("nonsquare_k2x4_s1x2_p1x2", (1, 3, 6, 9), (2, 4), (1, 2), (1, 2), True, "f32"),
    ("f16_k3_s2_p1_ceil", (2, 2, 7, 6), (3, 3), (2, 2), (1, 1), True, "f16"),
]


def _data(r: np.random.Generator, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    return r.uniform(-1, 1, shape).astype(DTYPES[dtype])


def witnesses_max() -> list[Witness]:
    r = np.random.default_rng(4501)
    out = []
    for name, shape, k, s, p, ceil, dt in _CASES:
        x = _data(r, shape, dt)
        flat = x.reshape(-1)
        if flat.size > 8:  # specials: -inf, NaN, -0.0 next to +0.0, repeated maxima
            pos = r.choice(flat.size, 8, replace=False)
            flat[pos] = np.array([-np.inf, np.nan, -0.0, 0.0, np.inf, 0.75, 0.75, np.nan], dtype=x.dtype)
        params = {**_geo_params(*shape, k, s, p, ceil, dt), "return_indices": name != "1x1_k1"}
        out.append(Witness(name, params, (x,)))
    planes = np.zeros((1, 3, 4, 5), np.float32)
    planes[0, 0] = -np.inf  # every window only -inf: the first in-image position
    planes[0, 1] = -0.0  # ties of -0.0 and +0.0: the first one wins, sign kept
    planes[0, 1, ::2, 1::2] = 0.0
    planes[0, 2] = np.nan  # all NaN: the last NaN of each window
    out.append(Witness("all_neg_inf_zeros_nan_planes", {**_geo_params(1, 3, 4, 5, (3, 2), (1, 2), (1, 1), True, "f32"),
                                                        "return_indices": True}, (planes,)))
    return out


def witnesses_avg() -> list[Witness]:
    r = np.random.default_rng(4502)
    out = []
    for name, shape, k, s, p, ceil, dt in _CASES:
        x = _data(r, shape, dt)
        for include in ((True, False) if p != (0, 0) else (True,)):
            tag = "" if p == (0, 0) else ("_incl_pad" if include else "_excl_pad")
            params = {**_geo_params(*shape, k, s, p, ceil, dt), "count_include_pad": include,
                      "divisor_override": None}
            out.append(Witness(name + tag, params, (x,)))
    x = _data(r, (1, 2, 6, 6), "f32")
    out.append(Witness("divisor_override_5", {**_geo_params(1, 2, 6, 6, (3, 3), (2, 2), (1, 1), True, "f32"),
                                              "count_include_pad": False, "divisor_override": 5}, (x,)))
    return out


register(OpSpec(
    id="nn.max_pool2d", category="nn",
    summary="2-D max pooling of NCHW f32/f16 (kernel, stride, padding, ceil_mode; torch's semantics), NaN "
            "propagates; optional u32 argmax indices per plane.",
    build=build_max, reference=reference_max, witnesses=witnesses_max, params_for=params_max,
    tolerance=EXACT, needs_for=_needs,
))

register(OpSpec(
    id="nn.avg_pool2d", category="nn",
    summary="2-D average pooling of NCHW f32/f16 (kernel, stride, padding, ceil_mode, count_include_pad, "
            "divisor_override; torch's semantics).",
    build=build_avg, reference=reference_avg, witnesses=witnesses_avg, params_for=params_avg,
    tolerance=rel(2.0 ** -21, 2.0 ** -22), tolerance_for=_tol_avg, needs_for=_needs,
    tolerance_rule=lambda p: "rtol=2^-10 atol=kernel[0]·kernel[1]·2^-22 + 2^-24" if p.get("dtype") == "f16"
    else "rtol=2^-21 atol=kernel[0]·kernel[1]·2^-22",
))
