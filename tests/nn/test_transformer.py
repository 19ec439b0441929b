"""vyre.nn's decoder-only transformer (TransformerDecoderLayer, GPT) against a float64 numpy version of
the same model, its gradients against central differences, and its training step on the character corpus
of examples/train_chars.py (Python's help topics, ``pydoc_data.topics``) compiled by ``vyre.compile``.

Tolerances: forwards rtol 1e-4 / atol 2e-5 (float32 against float64, a few hundred products of O(1)
values); gradients rtol 1e-3 / atol 1e-4 (float32 backward against float64 differences, as
tests/nn/test_gradients.py); the compiled step against the eager one: bit for bit (same kernels, same order).
The helpers (corpus, batches, the AdamW trainer) are shared with test_transformer_torch.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from nn_numpy import attention, central_gradient, log_softmax

import vyre
import vyre.array as xp
import vyre.nn as nn
import vyre.optim as optim
import vyre.random as vr
from vyre.autograd import value_and_grad
from vyre.errors import ArgumentTypeError, InvalidArgumentError

RNG = np.random.default_rng(26)
WD = 0.01


# ---------------------------------------------------------------- the corpus, batches, the compiled step

def corpus() -> tuple[np.ndarray, np.ndarray, str]:
    """Python's help topics joined in sorted key order, as int32 ids into the sorted set of characters:
    (train: the first 90%, held out: the last 10%, the vocabulary)."""
    from pydoc_data.topics import topics

    text = "".join(topics[k] for k in sorted(topics))
    vocab = "".join(sorted(set(text)))
    lut = {c: i for i, c in enumerate(vocab)}
    ids = np.fromiter((lut[c] for c in text), np.int32, len(text))
    cut = int(len(ids) * 0.9)
    return ids[:cut], ids[cut:], vocab


def batch(data: np.ndarray, rng: np.random.Generator, n: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` windows of ``length`` ids at uniform random starts, and the same windows one id later."""
    starts = rng.integers(0, len(data) - length - 1, size=n)
    at = starts[:, None] + np.arange(length)
    return data[at], data[at + 1]


def trainer(model: nn.Module, lr: float, compiled: bool = True):
    """(opt, step): ``step(x, y) -> loss`` is one vyre.optim.AdamW step (weight decay 0.01 on every
    parameter, as torch.optim.AdamW on model.parameters()), the model and optimizer closed over; compiled
    by vyre.compile unless ``compiled=False``."""
    opt = optim.AdamW(model, lr=lr, weight_decay=WD)
    grad = value_and_grad(lambda values, x, y: nn.lm_loss(nn.functional_call(model, values, x), y))

    def step(x, y):
        loss, g = grad(model.parameter_values(), x, y)
        opt.step(g)
        return loss

    return opt, (vyre.compile(step) if compiled else step)


# ---------------------------------------------------------------- a float64 numpy GPT

_erf = np.vectorize(math.erf)


def _ln(x, w, b):
    d = x - x.mean(-1, keepdims=True)
    return d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) * w + b


def np_layer(p, pre, x, heads, activation="gelu"):
    n, length, e = x.shape
    h = _ln(x, p[pre + "ln1.weight"], p[pre + "ln1.bias"])
    qkv = h @ p[pre + "attn.in_proj_weight"].T + p[pre + "attn.in_proj_bias"]
    q, k, v = (qkv[..., i * e:(i + 1) * e].reshape(n, length, heads, e // heads).transpose(0, 2, 1, 3)
               for i in range(3))
    o = attention(q, k, v, causal=True).transpose(0, 2, 1, 3).reshape(n, length, e)
    x = x + o @ p[pre + "attn.out_proj.weight"].T + p[pre + "attn.out_proj.bias"]
    h = _ln(x, p[pre + "ln2.weight"], p[pre + "ln2.bias"]) @ p[pre + "fc1.weight"].T + p[pre + "fc1.bias"]
    h = 0.5 * h * (1.0 + _erf(h / math.sqrt(2.0))) if activation == "gelu" else np.maximum(h, 0.0)
    return x + h @ p[pre + "fc2.weight"].T + p[pre + "fc2.bias"]


def np_gpt(p, ids, heads, layers):
    x = p["tok_emb"][ids] + p["pos_emb"][:ids.shape[1]]
    for i in range(layers):
        x = np_layer(p, f"h{i}.", x, heads)
    return _ln(x, p["ln_f.weight"], p["ln_f.bias"]) @ p["head.weight"].T + p["head.bias"]


def np_loss(p, ids, targets, heads, layers):
    lp = log_softmax(np_gpt(p, ids, heads, layers))
    return -float(np.take_along_axis(lp, targets[..., None], axis=-1).mean())


def random_values(model, scale=0.5):
    """Parameters drawn at O(scale) (the initial embeddings' 0.02 would leave little to check), float32."""
    return {k: (RNG.standard_normal(a.shape) * scale).astype(np.float32) for k, a in model.parameter_values().items()}


# ---------------------------------------------------------------- forward, gradients

@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_layer_matches_numpy(xb, activation):
    layer = nn.TransformerDecoderLayer(16, 4, activation=activation, key=vr.key(1))
    assert layer.dim_feedforward == 64
    values = random_values(layer, 0.3)
    x = RNG.standard_normal((2, 8, 16)).astype(np.float32)
    got = nn.functional_call(layer, {k: xp.asarray(a) for k, a in values.items()}, xp.asarray(x))
    want = np_layer({k: a.astype(np.float64) for k, a in values.items()}, "", x.astype(np.float64), 4, activation)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=2e-5)


def test_gpt_matches_numpy_and_is_causal(xb):
    model = nn.GPT(11, 8, d_model=16, num_heads=2, num_layers=2, key=vr.key(2))
    values = random_values(model, 0.3)
    ids = RNG.integers(0, 11, (3, 8)).astype(np.int32)
    vals = {k: xp.asarray(a) for k, a in values.items()}
    got = np.asarray(nn.functional_call(model, vals, xp.asarray(ids)))
    want = np_gpt({k: a.astype(np.float64) for k, a in values.items()}, ids, 2, 2)
    assert got.shape == (3, 8, 11)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=2e-5)
    # a shorter input uses the first rows of pos_emb: the same logits up to rounding (another M may cut the
    # products' K differently on a GPU adapter: matmul_thin.py); later ids do not change earlier logits in
    # the same shape (masked scores are exact zeros after the softmax, so not one bit)
    short = np.asarray(nn.functional_call(model, vals, xp.asarray(ids[:, :5])))
    np.testing.assert_allclose(short, got[:, :5], rtol=1e-6, atol=1e-7)
    changed = ids.copy()
    changed[:, 5:] = (changed[:, 5:] + 1) % 11
    np.testing.assert_array_equal(np.asarray(nn.functional_call(model, vals, xp.asarray(changed)))[:, :5],
                                  got[:, :5])


def test_one_hot_embedding_is_the_gather(xb):
    w = RNG.standard_normal((7, 5)).astype(np.float32)
    ids = RNG.integers(0, 7, (3, 4)).astype(np.int32)
    got = nn.one_hot_embedding(xp.asarray(ids), xp.asarray(w))
    np.testing.assert_array_equal(np.asarray(got), w[ids])   # one product by 1, the rest by 0: exact
    np.testing.assert_array_equal(np.asarray(got), np.asarray(nn.functional.embedding(xp.asarray(ids),
                                                                                       xp.asarray(w))))


def test_gradients_match_central_differences(ref_backend):
    """Every parameter of a 1-layer GPT (d 8, 2 heads, vocab 5, 4 positions, GELU) against float64
    differences of the numpy model's mean cross-entropy, on the reference interpreter (the GPU runs the
    same rules: the compiled step below equals the eager one there, and training lowers the loss)."""
    with vyre.use(ref_backend):
        _gradients()


def _gradients():
    model = nn.GPT(5, 4, d_model=8, num_heads=2, num_layers=1, key=vr.key(3))
    values = random_values(model, 0.5)
    ids, targets = (RNG.integers(0, 5, (2, 4)).astype(np.int32) for _ in range(2))
    loss, grads = value_and_grad(lambda v, a, b: nn.lm_loss(nn.functional_call(model, v, a), b))(
        {k: xp.asarray(a) for k, a in values.items()}, xp.asarray(ids), xp.asarray(targets))
    p64 = {k: a.astype(np.float64) for k, a in values.items()}
    np.testing.assert_allclose(float(loss), np_loss(p64, ids, targets, 2, 1), rtol=1e-5)
    for name in values:
        def f(a, name=name):
            return np_loss({**p64, name: a}, ids, targets, 2, 1)
        np.testing.assert_allclose(np.asarray(grads[name]), central_gradient(f, p64[name]), rtol=1e-3, atol=1e-4,
                                   err_msg=name)


def test_bad_arguments_are_typed_errors(ref_backend):
    with vyre.use(ref_backend):
        model = nn.GPT(5, 4, d_model=8, num_heads=2, num_layers=1, key=vr.key(0))
        with pytest.raises(InvalidArgumentError, match="1 <= L <= 4"):
            model(xp.zeros((1, 5), dtype=xp.int32))
        with pytest.raises(ArgumentTypeError, match="integer"):
            model(xp.zeros((1, 4)))
        with pytest.raises(InvalidArgumentError, match="activation"):
            nn.TransformerDecoderLayer(8, 2, activation="tanh", key=vr.key(0))
        with pytest.raises(InvalidArgumentError, match="multiple of num_heads"):
            nn.GPT(5, 4, d_model=8, num_heads=3, key=vr.key(0))
        with pytest.raises(InvalidArgumentError, match=r"\(N, L, 8\)"):
            nn.TransformerDecoderLayer(8, 2, key=vr.key(0))(xp.zeros((2, 8)))
        with pytest.raises(InvalidArgumentError, match="targets"):
            nn.lm_loss(xp.zeros((1, 4, 5)), xp.zeros((1, 3), dtype=xp.int32))
        with pytest.raises(ArgumentTypeError, match="key"):
            nn.GPT(5, 4, key=0)


# ---------------------------------------------------------------- training on the corpus

SMALL = {"d_model": 32, "num_heads": 4, "num_layers": 2}
CONTEXT, BATCH = 32, 8


def _setup(gpu, seed=0):
    train, _, vocab = corpus()
    rng = np.random.default_rng(seed)
    with xp.use(gpu):
        model = nn.GPT(len(vocab), CONTEXT, **SMALL, key=vr.key(seed))
        batches = [tuple(xp.asarray(a) for a in batch(train, rng, BATCH, CONTEXT)) for _ in range(3)]
    return model, batches


def test_corpus_and_batches():
    train, held, vocab = corpus()
    total = len(train) + len(held)
    assert 400_000 < total < 600_000 and len(train) == int(total * 0.9)     # ~465,000 characters on 3.11
    assert list(vocab) == sorted(set(vocab)) and "\n" in vocab and "e" in vocab
    x, y = batch(train, np.random.default_rng(1), 4, 16)
    assert x.shape == y.shape == (4, 16) and x.dtype == np.int32
    np.testing.assert_array_equal(x[:, 1:], y[:, :-1])
    x2, _ = batch(train, np.random.default_rng(1), 4, 16)
    np.testing.assert_array_equal(x, x2)          # a seeded Generator: the same batches


def test_compiled_step_equals_eager_bit_for_bit(gpu):
    """Three AdamW steps, the trace and two replays (the learning rate changed before the last), against
    the same step run eagerly on a second model from the same key: every parameter, optimizer state array
    and loss identical to the bit."""
    runs = []
    for compiled in (False, True):
        model, batches = _setup(gpu)
        with xp.use(gpu):
            opt, step = trainer(model, 3e-3, compiled)
            losses = []
            for t, (x, y) in enumerate(batches):
                if t == 2:
                    opt.lr = 1e-3          # a schedule's change: the optimizer's device copy, no new trace
                losses.append(step(x, y))
            runs.append(([np.asarray(a).tobytes() for a in losses],
                         {k: np.asarray(a) for k, a in model.parameter_values().items()},
                         [{k: np.asarray(a) for k, a in st.items()} for st in opt.state]))
    assert (step.traces, step.replays) == (1, 2)
    (el, ev, es), (cl, cv, cs) = runs
    assert el == cl
    for k in ev:
        np.testing.assert_array_equal(cv[k], ev[k], err_msg=k)
    for se, sc in zip(es, cs, strict=True):
        for k in se:
            np.testing.assert_array_equal(sc[k], se[k], err_msg=k)


def test_training_lowers_the_held_out_loss(gpu):
    """30 compiled steps (batch 8, context 32, d 32) from the uniform guess ln(V): the held-out loss falls."""
    train, held, vocab = corpus()
    rng = np.random.default_rng(0)
    with xp.use(gpu):
        model = nn.GPT(len(vocab), CONTEXT, **SMALL, key=vr.key(0))
        evaluate = vyre.compile(lambda values, x, y: nn.lm_loss(nn.functional_call(model, values, x), y))
        hx, hy = (xp.asarray(a) for a in batch(held, np.random.default_rng(99), 32, CONTEXT))
        _, step = trainer(model, 1e-2)
        before = float(evaluate(model.parameter_values(), hx, hy))
        for _ in range(30):
            step(*(xp.asarray(a) for a in batch(train, rng, BATCH, CONTEXT)))
        after = float(evaluate(model.parameter_values(), hx, hy))
        assert step.traces == 1 and evaluate.traces == 1
    print(f"held-out loss {before:.3f} -> {after:.3f} after 30 steps (ln V = {math.log(len(vocab)):.3f})")
    assert abs(before - math.log(len(vocab))) < 0.5      # small initial weights: near the uniform guess
    assert after < before - 1.0, (before, after)
