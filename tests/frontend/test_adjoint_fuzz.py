"""A hypothesis-generated family of differentiable kernels: straight-line expressions over In arrays (own
and neighbour loads), an optional if/else on a value, an optional loop with a runtime trip count whose
carried value is a sum or a product. Each kernel is written to a file (its source must be readable), its
float64 numpy twin is rendered from the same tree; the forward matches the twin (atol 1e-4), and
``vjp`` matches central finite differences of the twin (h = 1e-6; atol 1e-3 of the largest gradient
+ 1e-4), on the reference interpreter and the GPU."""

from __future__ import annotations

import importlib.util
import itertools
import tempfile
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

N = 8
_DIR = Path(tempfile.mkdtemp(prefix="vyre_adjoint_fuzz_"))
_COUNT = itertools.count()

# (kernel syntax, numpy syntax) of the functions: kept bounded, so deep trees neither overflow nor blow up
UNARY = {"sin": ("vyre.sin({})", "np.sin({})"), "cos": ("vyre.cos({})", "np.cos({})"),
         "tanh": ("vyre.tanh({})", "np.tanh({})"), "half_sq": ("0.5 * {0} * {0}", "0.5 * {0} * {0}"),
         "hyp": ("vyre.sqrt(1.0 + {0} * {0})", "np.sqrt(1.0 + {0} * {0})"),
         "exp_tanh": ("vyre.exp(0.5 * vyre.tanh({}))", "np.exp(0.5 * np.tanh({}))"), "neg": ("-({})", "-({})")}
BINARY = {"add": ("({} + {})", "({} + {})"), "sub": ("({} - {})", "({} - {})"), "mul": ("({} * {})", "({} * {})"),
          "div": ("({0} / (1.5 + {1} * {1}))", "({0} / (1.5 + {1} * {1}))"),
          "min": ("min({}, {})", "np.minimum({}, {})"), "max": ("max({}, {})", "np.maximum({}, {})")}
LEAVES = {"a": ("a[i]", "a"), "b": ("b[i]", "b"), "c": ("c[j]", "c[jj]"), "half": ("0.5", "0.5")}
LOOP_LEAVES = {"t": ("t", "t"), "k": ("f32(k) * 0.25", "(k * 0.25)")}


def trees(leaves):
    return st.recursive(st.sampled_from(sorted(leaves)),
                        lambda kids: st.one_of(st.tuples(st.sampled_from(sorted(UNARY)), kids),
                                               st.tuples(st.sampled_from(sorted(BINARY)), kids, kids)),
                        max_leaves=5)


def render(tree, side, leaves):
    if isinstance(tree, str):
        return leaves[tree][side]
    if len(tree) == 2:
        return UNARY[tree[0]][side].format(render(tree[1], side, leaves))
    return BINARY[tree[0]][side].format(render(tree[1], side, leaves), render(tree[2], side, leaves))


@st.composite
def kernels(draw):
    base = {**LEAVES}
    inner = {**LEAVES, **LOOP_LEAVES}
    t = draw(trees(base))
    branch = draw(st.none() | st.tuples(trees({**base, "t": ("t", "t")}), trees({**base, "t": ("t", "t")})))
    loop = draw(st.none() | st.tuples(st.sampled_from(["sum", "product"]), trees(inner), trees(inner)))
    final = draw(trees({**base, "t": ("t", "t"), "acc": ("acc", "acc")}))
    k_src = ["i = tid()", "j = (i + 1) % len(a)", f"t = {render(t, 0, base)}"]
    n_src = ["jj = (np.arange(len(a)) + 1) % len(a)", f"t = {render(t, 1, base)} + 0 * a"]
    if branch is not None:
        bl = {**base, "t": ("t", "t")}
        k_src += ["if t > 0.1:", f"    t = {render(branch[0], 0, bl)}", "else:", f"    t = {render(branch[1], 0, bl)}"]
        n_src += [f"t = np.where(t > 0.1, {render(branch[0], 1, bl)}, {render(branch[1], 1, bl)}) + 0 * a"]
    k_src.append("acc = 1.0")
    n_src.append("acc = 1.0 + 0 * a")
    if loop is not None:
        kind, e1, e2 = loop
        k_src.append("for k in range(trips):")
        n_src.append("for k in range(trips):")
        if kind == "sum":
            k_src.append(f"    acc += {render(e1, 0, inner)} * {render(e2, 0, inner)}")
            n_src.append(f"    acc = acc + {render(e1, 1, inner)} * {render(e2, 1, inner)}")
        else:
            k_src.append(f"    acc = acc * 0.5 * vyre.sin({render(e1, 0, inner)}) + {render(e2, 0, inner)}")
            n_src.append(f"    acc = acc * 0.5 * np.sin({render(e1, 1, inner)}) + {render(e2, 1, inner)}")
    k_src.append(f"out[i] = {render(final, 0, {**base, 't': ('t', 't'), 'acc': ('acc', 'acc')})}")
    n_src.append(f"return {render(final, 1, {**base, 't': ('t', 't'), 'acc': ('acc', 'acc')})} + 0 * a")
    return "\n".join(k_src), "\n".join(n_src)


def load(kernel_body, numpy_body):
    name = f"fuzz_{next(_COUNT)}"
    src = ("import numpy as np\nimport vyre\nfrom vyre import In, Out, f32, i32, tid\n\n\n"
           "@vyre.kernel(differentiable=True)\n"
           "def k(a: In[f32], b: In[f32], c: In[f32], out: Out[f32], trips: i32):\n"
           + "".join(f"    {ln}\n" for ln in kernel_body.splitlines())
           + "\n\ndef twin(a, b, c, trips):\n" + "".join(f"    {ln}\n" for ln in numpy_body.splitlines()))
    path = _DIR / f"{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def fd(twin, args, wrt, seed, h=1e-6):
    g = np.zeros(N)
    for k in range(N):
        up, down = [a.copy() for a in args], [a.copy() for a in args]
        up[wrt][k] += h
        down[wrt][k] -= h
        g[k] = ((twin(*up) - twin(*down)) * seed).sum() / (2 * h)
    return g


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kernels(), st.integers(0, 3), st.integers(0, 2**31 - 1))
def test_generated_kernels_match_finite_differences(xb, source, trips, seed):
    mod = load(*source)
    rng = np.random.default_rng(seed)
    a, b, c = (rng.uniform(-1, 1, N).astype(np.float32) for _ in range(3))
    g = rng.standard_normal(N).astype(np.float32)
    twin = lambda a, b, c: mod.twin(a, b, c, trips)  # noqa: E731
    args64 = [a.astype(np.float64), b.astype(np.float64), c.astype(np.float64)]
    (out,) = mod.k[N](a, b, c, np.zeros(N, np.float32), trips, backend=xb)
    np.testing.assert_allclose(out, twin(*args64), rtol=1e-4, atol=1e-4, err_msg=source[0])
    got = mod.k.vjp(N, [a, b, c, np.zeros(N, np.float32), trips], [g], backend=xb)
    for name, k in (("a", 0), ("b", 1), ("c", 2)):
        want = fd(twin, args64, k, g.astype(np.float64))
        scale = max(1.0, float(np.abs(want).max()))
        np.testing.assert_allclose(got[name], want, rtol=0, atol=1e-3 * scale + 1e-4,
                                   err_msg=f"d/d{name}\n{source[0]}")
