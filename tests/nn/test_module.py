"""Module bookkeeping (registration, names, train/eval, functional_call), state dicts through safetensors
files, and the initialisers' bounds and statistics."""

from __future__ import annotations

import math

import numpy as np
import pytest
from safetensors.numpy import load_file

import vyre.array as xp
import vyre.nn as nn
import vyre.random as vr
from vyre.errors import ArgumentTypeError, InvalidArgumentError


class Block(nn.Module):
    def __init__(self, key):
        super().__init__()
        ks = vr.split(key, 3)
        self.proj = nn.Linear(4, 4, key=ks[0])
        self.norm = nn.LayerNorm(4)
        self.seq = nn.Sequential(nn.Linear(4, 3, key=ks[1]), nn.Dropout(0.1))
        self.scale = nn.Parameter(vr.uniform(ks[2], (3,)))
        self.tied = self.proj  # a module reachable twice: its parameters listed once

    def forward(self, x, key=None):
        return self.seq(self.norm(self.proj(x)), key=key) * self.scale.value


def test_registration_names_and_modes(xb):
    m = Block(vr.key(0))
    names = [n for n, _ in m.named_parameters()]
    # a module's own parameters first, then its submodules' depth first (PyTorch's order)
    assert names == ["scale", "proj.weight", "proj.bias", "norm.weight", "norm.bias", "seq.0.weight", "seq.0.bias"]
    assert len(m.parameters()) == 7 and list(m.parameter_values()) == names
    assert all(sub.training for _, sub in m.named_modules())
    m.eval()
    assert not any(sub.training for _, sub in m.named_modules())
    m.train()
    assert m.seq[1].training
    m.proj = None                 # unregistered by reassignment: the Linear is now reached as "tied" only
    assert [n for n, _ in m.named_parameters()] == ["scale", "norm.weight", "norm.bias", "seq.0.weight",
                                                    "seq.0.bias", "tied.weight", "tied.bias"]


def test_parameter_value_replacement(xb):
    p = nn.Parameter(xp.zeros((2, 3)))
    p.value = xp.ones((2, 3))
    assert float(p.value.sum()) == 6.0
    with pytest.raises(InvalidArgumentError):
        p.value = xp.ones((3, 2))
    with pytest.raises(ArgumentTypeError):
        p.value = np.ones((2, 3), dtype=np.float32)
    with pytest.raises(ArgumentTypeError):
        nn.Parameter(xp.asarray([1, 2]))


def test_functional_call_swaps_values_and_restores(xb):
    lin = nn.Linear(3, 2, key=vr.key(1))
    x = xp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3))
    own = np.asarray(lin(x))
    zeros = {k: xp.zeros_like(v) for k, v in lin.parameter_values().items()}
    np.testing.assert_array_equal(np.asarray(nn.functional_call(lin, zeros, x)), np.zeros((2, 2), np.float32))
    np.testing.assert_array_equal(np.asarray(lin(x)), own)            # the module's values are back
    by_order = [xp.ones_like(p.value) for p in lin.parameters()]
    np.testing.assert_array_equal(np.asarray(nn.functional_call(lin, by_order, x)), [[4.0, 4.0], [13.0, 13.0]])
    with pytest.raises(InvalidArgumentError):
        nn.functional_call(lin, {"nope": xp.zeros(2)}, x)
    with pytest.raises(InvalidArgumentError):
        nn.functional_call(lin, by_order[:1], x)


def test_state_dict_round_trip_through_safetensors(xb, tmp_path):
    a, b = Block(vr.key(0)), Block(vr.key(1))
    x = xp.asarray(np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32))
    a.eval(), b.eval()
    assert not np.allclose(np.asarray(a(x)), np.asarray(b(x)))
    path = tmp_path / "block.safetensors"
    a.save(path)
    on_disk = load_file(str(path))
    assert sorted(on_disk) == sorted(a.state_dict())
    np.testing.assert_array_equal(on_disk["seq.0.weight"], np.asarray(a.seq[0].weight.value))
    b.load(path)
    np.testing.assert_array_equal(np.asarray(b(x)), np.asarray(a(x)))
    assert b.proj.weight.value.device is xb


def test_load_state_dict_checks_before_changing_anything(xb):
    m = Block(vr.key(0))
    before = {k: np.asarray(v) for k, v in m.state_dict().items()}
    bad = dict(before)
    bad["scale"] = np.zeros(4, dtype=np.float32)            # wrong shape, listed last
    bad["proj.weight"] = np.zeros((4, 4), dtype=np.float32)  # fine, but must not be applied
    with pytest.raises(InvalidArgumentError):
        m.load_state_dict(bad)
    np.testing.assert_array_equal(np.asarray(m.proj.weight.value), before["proj.weight"])
    with pytest.raises(InvalidArgumentError):
        m.load_state_dict({"proj.weight": before["proj.weight"]})             # strict: names missing
    m.load_state_dict({"proj.weight": np.zeros((4, 4), np.float32)}, strict=False)
    assert float(xp.sum(xp.abs(m.proj.weight.value))) == 0.0
    with pytest.raises(ArgumentTypeError):
        m.load_state_dict([1, 2])


def test_init_bounds_and_statistics(xb):
    k = vr.key(4)
    shape = (64, 32, 3, 3)
    fi, fo = nn.init.fans(shape)
    assert (fi, fo) == (32 * 9, 64 * 9) and nn.init.fans((5,)) == (5, 5)
    xu = np.asarray(nn.init.xavier_uniform(k, shape, gain=2.0)).astype(np.float64)
    a = 2.0 * math.sqrt(6.0 / (fi + fo))
    assert np.abs(xu).max() <= a and np.abs(xu).max() > 0.99 * a
    assert abs(xu.std() - a / math.sqrt(3)) < 0.02 * a
    xn = np.asarray(nn.init.xavier_normal(k, shape)).astype(np.float64)
    assert abs(xn.std() / math.sqrt(2.0 / (fi + fo)) - 1) < 0.03
    ku = np.asarray(nn.init.kaiming_uniform(k, shape, nonlinearity="relu")).astype(np.float64)
    b = math.sqrt(2.0) * math.sqrt(3.0 / fi)
    assert np.abs(ku).max() <= b and abs(ku.std() - b / math.sqrt(3)) < 0.02 * b
    kn = np.asarray(nn.init.kaiming_normal(k, shape, mode="fan_out")).astype(np.float64)
    assert abs(kn.std() / (nn.init.calculate_gain("leaky_relu", 0.0) / math.sqrt(fo)) - 1) < 0.03
    again = nn.init.xavier_uniform(k, shape)  # the same key, the same values
    np.testing.assert_array_equal(np.asarray(again), np.asarray(nn.init.xavier_uniform(k, shape)))
    assert float(nn.init.zeros((3, 2)).sum()) == 0.0 and float(nn.init.ones(4).sum()) == 4.0
    with pytest.raises(InvalidArgumentError):
        nn.init.kaiming_normal(k, shape, mode="fan_mid")
    with pytest.raises(InvalidArgumentError):
        nn.init.zeros((2, -1))
