"""vyre.amp.GradScaler: the update rule against a numpy reimplementation of PyTorch's ``_amp_update_scale_``
over scripted sequences of finite and non-finite gradients (bit-exact: float32 scale, int tracker), and
against torch.amp.GradScaler where torch is installed; the fused unscale (values, inf/-inf/NaN found in
any gradient, None entries, structures); step's skip_if; state_dict; the disabled pass-through; errors."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import vyre.array as xp
import vyre.optim as optim
from vyre import amp, nn
from vyre.errors import ArgumentTypeError, InvalidArgumentError

INF, NAN = float("inf"), float("nan")


def torch_rule(scale: np.float32, tracker: int, found: bool, growth: float, backoff: float, interval: int
               ) -> tuple[np.float32, int]:
    """PyTorch's _amp_update_scale_ (aten/src/ATen/native/cuda/AmpKernels.cu): a float32 scale times a
    double factor, rounded to float32 once; an int tracker. (vyre multiplies in float32: the same bits for
    the factors here, which are powers of two.)"""
    if found:
        return np.float32(np.float64(scale) * backoff), 0
    successful = tracker + 1
    if successful == interval:
        with np.errstate(over="ignore"):  # 2^128 rounds to inf: the growth PyTorch refuses
            grown = np.float32(np.float64(scale) * growth)
        return (grown if np.isfinite(grown) else scale), 0
    return scale, successful


# (init_scale, growth, backoff, interval, flags): growth past float32's range is refused (2^127 * 2 = inf)
SCRIPTS = [
    (2.0 ** 16, 2.0, 0.5, 3, [0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0]),
    (2.0 ** 125, 2.0, 0.5, 2, [0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]),
    (3.0, 4.0, 0.25, 1, [0, 1, 1, 0, 0, 1, 0]),
    (1.0, 2.0, 0.5, 4, [1] * 12 + [0] * 9),  # backed off 12 times, then growing again
]


def _grads(flag: int, k: int) -> dict[str, object]:
    g = {"a": xp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3) * 1024.0), "b": None,
         "c": xp.asarray(np.float32(2.0 ** 20))}
    if flag:
        bad = (INF, -INF, NAN)[k % 3]
        g["a"] = xp.asarray(np.array([[1, 2, 3], [4, bad, 6]], np.float32))
    return g


@pytest.mark.parametrize("script", SCRIPTS, ids=range(len(SCRIPTS)))
def test_update_follows_torchs_rule(xb, script):
    init, growth, backoff, interval, flags = script
    with xp.use(xb):
        scaler = amp.GradScaler(init, growth, backoff, interval)
        scale, tracker = np.float32(init), 0
        for k, flag in enumerate(flags):
            u = scaler.unscale_(_grads(flag, k))
            assert bool(scaler.found_inf()) is bool(flag)
            if not flag and scale <= 2.0 ** 126:  # the unscaled values: g * (1 / scale), float32 (above 2^126
                # the reciprocal is subnormal, which a GPU may flush to zero: WGSL allows it, the H200 does)
                inv = np.float32(1.0) / scale
                np.testing.assert_array_equal(np.asarray(u["c"]), np.float32(2.0 ** 20) * inv)
            assert u["b"] is None
            scaler.update()
            scale, tracker = torch_rule(scale, tracker, bool(flag), growth, backoff, interval)
            arrays = scaler.arrays
            assert np.asarray(arrays["scale"]).tobytes() == scale.tobytes(), k
            assert int(arrays["growth_tracker"]) == tracker, k
        assert scaler.get_scale() == float(scale)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed (not in CI)")
@pytest.mark.parametrize("script", SCRIPTS, ids=range(len(SCRIPTS)))
def test_update_matches_torch_grad_scaler(ref_backend, script):
    import torch

    init, growth, backoff, interval, flags = script
    ts = torch.amp.GradScaler("cpu", init_scale=init, growth_factor=growth, backoff_factor=backoff,
                              growth_interval=interval)
    p = torch.nn.Parameter(torch.zeros(2, 3))
    opt = torch.optim.SGD([p], lr=0.0)
    with xp.use(ref_backend):
        vs = amp.GradScaler(init, growth, backoff, interval)
        for k, flag in enumerate(flags):
            g = _grads(flag, k)
            ts.scale(torch.tensor(1.0))  # torch creates its scale here (and asserts it exists in step)
            p.grad = torch.from_numpy(np.asarray(g["a"]).copy())
            ts.step(opt)
            ts.update()
            vs.unscale_(g)
            vs.update()
            want = ts.state_dict()
            got = vs.state_dict()
            assert np.float32(got["scale"]).tobytes() == np.float32(want["scale"]).tobytes(), k
            assert got["_growth_tracker"] == want["_growth_tracker"], k


def test_unscale_values_and_structures(xb):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 7)).astype(np.float32), rng.standard_normal(300).astype(np.float32)
    with xp.use(xb):
        scaler = amp.GradScaler(init_scale=8.0)
        loss = scaler.scale(xp.asarray(np.float32(1.25)))
        assert float(loss) == 10.0
        assert [float(v) for v in scaler.scale([xp.asarray(1.0), xp.asarray(2.0)])] == [8.0, 16.0]
        out = scaler.unscale_([xp.asarray(a * 8), None, xp.asarray(b.reshape(20, 15) * 8).T])  # a strided view
        assert isinstance(out, list) and out[1] is None
        np.testing.assert_array_equal(np.asarray(out[0]), a)  # exact: powers of two
        np.testing.assert_array_equal(np.asarray(out[2]), b.reshape(20, 15).T)
        assert not bool(scaler.found_inf())
        scaler.update()
        t = scaler.unscale_((xp.asarray(a), xp.asarray(np.where(np.arange(300) == 299, NAN, b))))
        assert isinstance(t, tuple) and bool(scaler.found_inf())  # one NaN, in the last element of the second
        with pytest.raises(InvalidArgumentError, match="float16"):
            scaler.unscale_([xp.asarray(a, dtype=xp.float16)])
        with pytest.raises(ArgumentTypeError):
            scaler.unscale_(xp.asarray(a))  # not a structure of gradients
        with pytest.raises(ArgumentTypeError):
            scaler.scale(1.0)


def test_step_skips_on_the_device_and_update_needs_a_check(xb):
    class Recorder:
        def __init__(self):
            self.calls = []

        def step(self, grads, skip_if=None):
            self.calls.append((grads, skip_if))

    with xp.use(xb):
        scaler, opt = amp.GradScaler(init_scale=4.0), Recorder()
        with pytest.raises(InvalidArgumentError, match="update"):
            scaler.update()  # nothing unscaled: PyTorch asserts the same
        scaler.step(opt, [xp.asarray([4.0, 8.0])])
        grads, skip = opt.calls[-1]
        assert np.asarray(grads[0]).tolist() == [1.0, 2.0] and skip.shape == () and not bool(skip)
        scaler.update()
        # unscale_ first (to clip, say): step takes what it is given as unscaled
        u = scaler.unscale_([xp.asarray([INF, 8.0])])
        clipped = [xp.clip(u[0], -1.0, 1.0)]
        scaler.step(opt, clipped)
        assert opt.calls[-1][0] is clipped and bool(opt.calls[-1][1])
        scaler.update()
        assert scaler.get_scale() == 2.0
        scaler.update(new_scale=1024.0)
        assert scaler.get_scale() == 1024.0
        scaler.update(new_scale=xp.asarray(3.0))
        assert scaler.get_scale() == 3.0


def test_step_with_vyre_optim_keeps_parameters_and_state_when_skipped(xb):
    with xp.use(xb):
        layer = nn.Linear(3, 2, key=__import__("vyre").random.key(0))
        opt = optim.Adam(layer, lr=0.1)
        scaler = amp.GradScaler(init_scale=2.0)
        before = {k: np.asarray(v) for k, v in layer.parameter_values().items()}
        bad = {k: xp.full(v.shape, INF) for k, v in layer.parameter_values().items()}
        scaler.step(opt, bad)
        scaler.update()
        after = {k: np.asarray(v) for k, v in layer.parameter_values().items()}
        assert all(np.array_equal(before[k], after[k]) for k in before)
        assert scaler.get_scale() == 1.0
        good = {k: xp.full(v.shape, 2.0) for k, v in layer.parameter_values().items()}
        scaler.step(opt, good)
        scaler.update()
        moved = {k: np.asarray(v) for k, v in layer.parameter_values().items()}
        # the first real Adam step moves every parameter by lr (sign of the gradient): the skipped one left
        # the step count and the moments at their start
        for k in before:
            np.testing.assert_allclose(moved[k], before[k] - 0.1, rtol=0, atol=1e-6)


def test_state_dict_round_trip_and_disabled(xb):
    with xp.use(xb):
        a = amp.GradScaler(init_scale=64.0, growth_interval=5)
        a.unscale_([xp.asarray([1.0])])
        a.update()
        sd = a.state_dict()
        assert sd == {"scale": 64.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 5,
                      "_growth_tracker": 1}
        b = amp.GradScaler()
        b.load_state_dict(sd)
        assert b.state_dict() == sd
        arrays = b.arrays  # created now, from the loaded values; a later load writes into the same arrays
        b.load_state_dict({**sd, "scale": 8.0, "_growth_tracker": 3})
        assert float(arrays["scale"]) == 8.0 and int(arrays["growth_tracker"]) == 3
        with pytest.raises(InvalidArgumentError, match="empty"):
            b.load_state_dict({})

        off = amp.GradScaler(enabled=False)
        loss = xp.asarray(3.0)
        g = [xp.asarray([INF])]
        assert off.scale(loss) is loss and off.unscale_(g) is g and off.get_scale() == 1.0
        assert off.state_dict() == {} and not off.is_enabled()
        off.update()
    for bad in ({"init_scale": 0.0}, {"growth_factor": 1.0}, {"backoff_factor": 1.0}, {"growth_interval": 0},
                {"init_scale": INF}):
        with pytest.raises(InvalidArgumentError):
            amp.GradScaler(**bad)
