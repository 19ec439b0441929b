"""vyre.amp.autocast: which vyre.nn ops run in float16 and which in float32, nesting, enabled=False, the
decorator, per-thread state, the typed error on a device without shader-f16 (a reference backend whose
capabilities say so) and its float32 fallback; values against numpy on float16-rounded inputs, both
backends."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest

import vyre
import vyre.array as xp
import vyre.nn as nn
import vyre.nn.functional as F
import vyre.random as vr
from vyre import amp
from vyre.errors import InvalidArgumentError, UnsupportedDTypeError


class NoF16Backend(vyre.ReferenceBackend):
    """The reference interpreter reporting no shader-f16 (as an adapter without the feature does)."""

    def capabilities(self):
        return dataclasses.replace(super().capabilities(), f16=False)


def _f32(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def test_matmul_like_ops_run_in_float16_with_float32_sums(xb):
    rng = np.random.default_rng(0)
    x, w, b = _f32(rng, 5, 24), _f32(rng, 7, 24), _f32(rng, 7)
    img, k = _f32(rng, 2, 3, 6, 6), _f32(rng, 4, 3, 3, 3)
    with xp.use(xb):
        with amp.autocast():
            y = F.linear(xp.asarray(x), xp.asarray(w), xp.asarray(b))
            c = F.conv2d(xp.asarray(img), xp.asarray(k), padding=1)
            m = F.matmul(xp.asarray(x), xp.asarray(w.T))
        assert (y.dtype, c.dtype, m.dtype) == (xp.float16,) * 3
        y32 = F.linear(xp.asarray(x), xp.asarray(w), xp.asarray(b))  # outside: float32 as before
        assert y32.dtype == xp.float32
        got_y, got_m = np.asarray(y).astype(np.float64), np.asarray(m).astype(np.float64)
    h = lambda a: a.astype(np.float16).astype(np.float64)  # noqa: E731 - the inputs as autocast rounds them
    want = h(x) @ h(w).T
    # float32 sums of float16 products (exact in float32), one rounding of the sum to float16 (2^-11
    # relative) and the float16 bias add (another 2^-11 of the result): 2^-9 of max |y| covers both
    scale = np.abs(want).max()
    np.testing.assert_allclose(got_m, want, rtol=0, atol=2.0 ** -9 * scale)
    np.testing.assert_allclose(got_y, want + h(b), rtol=0, atol=2.0 ** -9 * scale)


def test_softmax_norms_and_losses_run_in_float32(xb):
    rng = np.random.default_rng(1)
    h16 = _f32(rng, 4, 6).astype(np.float16)
    labels = np.array([0, 5, 2, 3], np.int32)
    with xp.use(xb):
        a = xp.asarray(h16)
        outside = F.softmax(a)
        with amp.autocast():
            outs = {"softmax": F.softmax(a), "log_softmax": F.log_softmax(a), "layer_norm": F.layer_norm(a, 6),
                    "rms_norm": F.rms_norm(a, 6), "cross_entropy": F.cross_entropy(a, xp.asarray(labels)),
                    "nll_loss": F.nll_loss(a, xp.asarray(labels)), "mse_loss": F.mse_loss(a, a * 0.5)}
        assert outside.dtype == xp.float16  # without autocast an op keeps its input's dtype
        assert {k: v.dtype for k, v in outs.items()} == {k: xp.float32 for k in outs}
        assert set(outs) == amp.FLOAT32_OPS
        sm = np.asarray(outs["softmax"])
        ce = float(outs["cross_entropy"])
    x = h16.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(sm, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    lsm = np.log(e / e.sum(axis=1, keepdims=True))
    assert ce == pytest.approx(-lsm[np.arange(4), labels].mean(), rel=1e-5)


def test_attention_and_multihead_attention(xb):
    rng = np.random.default_rng(2)
    q, k, v = _f32(rng, 2, 5, 8), _f32(rng, 2, 7, 8), _f32(rng, 2, 7, 8)
    with xp.use(xb):
        mha = nn.MultiheadAttention(8, 2, key=vr.key(3))
        with amp.autocast():
            o = F.scaled_dot_product_attention(xp.asarray(q), xp.asarray(k), xp.asarray(v))
            z = mha(xp.asarray(q))
        assert (o.dtype, z.dtype) == (xp.float16, xp.float16)
        z32 = np.asarray(mha(xp.asarray(q)))
        got = np.asarray(o).astype(np.float64)
    h = lambda a: a.astype(np.float16).astype(np.float64)  # noqa: E731
    s = h(q) @ h(k).transpose(0, 2, 1) / np.sqrt(8)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    # scores rounded to float16 (2^-11 relative, |s| <= ~4: softmax moves by ~2^-9), p rounded to float16,
    # the output rounded: 4e-3 of the output's scale
    np.testing.assert_allclose(got, h(p) @ h(v), rtol=0, atol=4e-3 * np.abs(v).max())
    np.testing.assert_allclose(np.asarray(z).astype(np.float32), z32, rtol=0, atol=1e-2 * np.abs(z32).max())


def test_nesting_enabled_false_and_decorator(xb):
    x, w = xp.ones((2, 3), device=xb), xp.ones((4, 3), device=xb)
    assert not amp.is_autocast_enabled()
    with xp.use(xb):
        with amp.autocast():
            assert amp.is_autocast_enabled() and amp.is_autocast_enabled(xb)
            with amp.autocast(enabled=False):
                assert not amp.is_autocast_enabled()
                assert F.linear(x, w).dtype == xp.float32
                with amp.autocast():
                    assert F.linear(x, w).dtype == xp.float16
                assert not amp.is_autocast_enabled()
            assert F.linear(x, w).dtype == xp.float16
        assert not amp.is_autocast_enabled()

        @amp.autocast()
        def forward(a, b):
            assert amp.is_autocast_enabled()
            return F.linear(a, b)

        assert forward(x, w).dtype == xp.float16 and forward.__name__ == "forward"
        assert not amp.is_autocast_enabled()
        assert amp.get_autocast_dtype() == "float16"
        assert amp.autocast(xp.float16).dtype == amp.autocast(np.float16).dtype == "float16"


def test_each_thread_has_its_own_state(ref_backend):
    seen: dict[str, object] = {}
    inside, release = threading.Event(), threading.Event()

    def other():
        inside.wait(5)
        seen["flag"] = amp.is_autocast_enabled()
        seen["dtype"] = F.linear(xp.ones((2, 3), device=ref_backend), xp.ones((4, 3), device=ref_backend)).dtype
        release.set()

    t = threading.Thread(target=other)
    t.start()
    with amp.autocast(device=ref_backend):
        inside.set()
        release.wait(30)
        assert amp.is_autocast_enabled()
    t.join(30)
    assert seen == {"flag": False, "dtype": xp.float32}


def test_one_autocast_object_entered_by_several_threads(ref_backend):
    ctx = amp.autocast(device=ref_backend)
    barrier, seen = threading.Barrier(4), []

    def worker():
        with ctx:
            barrier.wait(10)  # all four inside the same object's block at once
            seen.append(amp.is_autocast_enabled())
        seen.append(amp.is_autocast_enabled())

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(seen) == [False] * 4 + [True] * 4 and not amp.is_autocast_enabled()


def test_without_shader_f16_a_typed_error_or_the_documented_fallback(ref_backend):
    dev = NoF16Backend()
    with pytest.raises(UnsupportedDTypeError, match="shader-f16") as err:
        with amp.autocast(device=dev):
            pass
    assert err.value.fix and "fallback='float32'" in err.value.fix
    assert not amp.is_autocast_enabled()  # the failed enter left nothing behind
    with xp.use(dev), pytest.raises(UnsupportedDTypeError):
        amp.autocast().__enter__()  # the current device (the innermost vyre.use) is checked
    x, w = xp.ones((2, 3), device=dev), xp.ones((4, 3), device=dev)
    with amp.autocast(device=dev, fallback="float32"):  # a no-op there: float32 throughout
        assert amp.is_autocast_enabled() and not amp.is_autocast_enabled(dev)
        assert F.linear(x, w).dtype == xp.float32
        # arrays on a device that has float16 are still cast
        assert F.linear(xp.ones((2, 3), device=ref_backend), xp.ones((4, 3), device=ref_backend)).dtype == xp.float16
    with amp.autocast(device=ref_backend), pytest.raises(UnsupportedDTypeError):
        F.linear(x, w)  # entered on a float16 device, an op on arrays of one without: checked per device


def test_bad_arguments_are_typed_errors():
    with pytest.raises(UnsupportedDTypeError, match="bfloat16"):
        amp.autocast("bfloat16")
    with pytest.raises(InvalidArgumentError, match="float16"):
        amp.autocast("float32")
    with pytest.raises(InvalidArgumentError, match="fallback"):
        amp.autocast(fallback="float64")
    with pytest.raises(InvalidArgumentError, match="enabled"):
        amp.autocast(enabled=1)  # type: ignore[arg-type]


def test_gradients_reach_float32_weights_close_to_float32(xb):
    """An MLP and a conv layer, loss through cross_entropy: the gradients under autocast are float32 and
    within 2% of max |g| of the float32 gradients (float16 rounds activations and weights to 2^-11 relative;
    the backward matmuls run in float16 too)."""
    rng = np.random.default_rng(4)
    params = {"k": _f32(rng, 4, 1, 3, 3) * 0.5, "w1": _f32(rng, 16, 4 * 16) * 0.2, "b1": _f32(rng, 16) * 0.1,
              "w2": _f32(rng, 10, 16) * 0.3, "b2": _f32(rng, 10) * 0.1}
    img, labels = _f32(rng, 6, 1, 6, 6), rng.integers(0, 10, 6).astype(np.int32)

    def loss_fn(p, x, y):
        h = F.relu(F.conv2d(x, p["k"], stride=1, padding=0))                  # (6, 4, 4, 4)
        h = F.relu(F.linear(xp.reshape(h, (6, 64)), p["w1"], p["b1"]))
        return F.cross_entropy(F.linear(h, p["w2"], p["b2"]), y)

    with xp.use(xb):
        p = {n: xp.asarray(a) for n, a in params.items()}
        x, y = xp.asarray(img), xp.asarray(labels)
        vg = vyre.value_and_grad(loss_fn)
        l32, g32 = vg(p, x, y)
        with amp.autocast():
            l16, g16 = vg(p, x, y)
        assert l16.dtype == xp.float32 and all(g.dtype == xp.float32 for g in g16.values())
        assert float(l16) == pytest.approx(float(l32), rel=1e-2)
        for n in params:
            want = np.asarray(g32[n])
            np.testing.assert_allclose(np.asarray(g16[n]), want, rtol=0, atol=2e-2 * np.abs(want).max(), err_msg=n)
