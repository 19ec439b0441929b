"""docs/arrays.md runs as written: its python blocks run in order in one namespace (on the default backend,
the GPU adapter here), and a ``text`` block right after a python block is exactly what that block prints."""

from __future__ import annotations

from doc_pages import DOCS, blocks, run_page

PAGE = DOCS / "arrays.md"


def test_arrays_page_runs_and_prints_what_it_shows(gpu, tmp_path, capsys):
    ran, checked = run_page(PAGE, tmp_path, capsys)
    assert ran >= 10
    assert checked == sum(kind == "text" for kind, _ in blocks(PAGE)) >= 8  # every output shown is checked


#: Every name of the standard's main namespace (2024.12): functions, dtypes and constants.
STANDARD = """abs acos acosh add asin asinh atan atan2 atanh bitwise_and bitwise_left_shift bitwise_invert bitwise_or
bitwise_right_shift bitwise_xor ceil clip conj copysign cos cosh divide equal exp expm1 floor floor_divide greater
greater_equal hypot imag isfinite isinf isnan less less_equal log log1p log2 log10 logaddexp logical_and
logical_not logical_or logical_xor maximum minimum multiply negative nextafter not_equal positive pow real
reciprocal remainder round sign signbit sin sinh square sqrt subtract tan tanh trunc
arange asarray empty empty_like eye from_dlpack full full_like linspace meshgrid ones ones_like tril triu zeros
zeros_like astype can_cast finfo iinfo isdtype result_type
broadcast_arrays broadcast_shapes broadcast_to concat expand_dims flip moveaxis permute_dims repeat reshape roll
squeeze stack tile unstack take take_along_axis matmul matrix_transpose tensordot vecdot
argmax argmin count_nonzero nonzero searchsorted where unique_all unique_counts unique_inverse unique_values
argsort sort cumulative_prod cumulative_sum max mean min prod std sum var all any diff
__array_api_version__ __array_namespace_info__ bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32
float64 complex64 complex128 e inf nan newaxis pi""".split()


def test_gaps_name_every_missing_standard_name():
    import vyre.array as xp

    gaps = PAGE.read_text(encoding="utf-8").split("## Gaps", 1)[1]
    missing = [n for n in STANDARD if not hasattr(xp, n)]
    unlisted = [n for n in missing if f"`{n}`" not in gaps]
    assert not unlisted, f"docs/arrays.md's Gaps section does not name {unlisted}"
    # and it lists nothing as missing that exists by now (the "Not written yet" line)
    not_yet = gaps.split("**Not written yet**", 1)[1].split("\n* ", 1)[0]
    stale = [n for n in STANDARD if f"`{n}`" in not_yet and hasattr(xp, n)]
    assert not stale, f"docs/arrays.md's Gaps section says {stale} are not written, but they exist"


#: The linalg extension's functions (2024.12).
LINALG = """cholesky cross det diagonal eigh eigvalsh inv matmul matrix_norm matrix_power matrix_rank
matrix_transpose outer pinv qr slogdet solve svd svdvals tensordot trace vecdot vector_norm""".split()


def test_gaps_name_every_missing_linalg_function():
    import vyre.array as xp

    gaps = PAGE.read_text(encoding="utf-8").split("## Gaps", 1)[1]
    missing = [n for n in LINALG if not hasattr(xp.linalg, n)]
    if not missing:  # every function exists (the decompositions run on the device): no bullet
        assert "**linalg extension**" not in gaps, "every linalg function exists: drop the Gaps bullet"
        return
    section = gaps.split("**linalg extension**", 1)[1].split("\n* ", 1)[0]
    assert not [n for n in missing if f"`{n}`" not in section], "the linalg bullet misses some"
    assert not [n for n in LINALG if f"`{n}`" in section and hasattr(xp.linalg, n)
                and n not in ("matrix_norm", "matrix_power")], "the linalg bullet lists functions that exist"
