"""The models of benches/train.py in vyre, torch, JAX and numpy, from one set of initial weights."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._train_transformer import jax_gpt_logits, torch_gpt, torch_lm_loss


@dataclass(frozen=True)
class Spec:
    name: str
    describe: str
    full_batch: int
    quick_batch: int
    optimizer: str  # "adamw" | "adam"
    lr: float

    def batch(self, quick: bool) -> int:
        return self.quick_batch if quick else self.full_batch

    def data(self, rng: np.random.Generator, quick: bool) -> tuple[np.ndarray, np.ndarray]:
        n = self.batch(quick)
        if self.name == "mlp":
            return rng.standard_normal((n, 784)).astype(np.float32), rng.integers(0, 10, n).astype(np.int32)
        if self.name == "cnn":
            return rng.random((n, 1, 10, 10), np.float32), rng.integers(0, 10, n).astype(np.int32)
        ids = rng.integers(0, VOCAB, (n, CONTEXT + 1)).astype(np.int32)  # next-character targets
        return ids[:, :-1].copy(), ids[:, 1:].copy()

    def available(self) -> bool:
        if self.name != "transformer":
            return True
        import vyre.nn as nn
        return hasattr(nn, "GPT")


VOCAB, CONTEXT = 96, 128  # the character transformer: about the corpus's characters, context 128

MODELS = [
    Spec("mlp", "MLP 784-1024-1024-10, ReLU, AdamW(lr 1e-3)", 512, 128, "adamw", 1e-3),
    Spec("cnn", "digits CNN: Conv2d(1,16,3), ReLU, MaxPool2d(2), Linear(256,10), Adam(lr 1e-2)", 256, 64, "adam",
         1e-2),
    Spec("transformer", "GPT: 2 layers, d_model 128, 4 heads, context 128, vocab 96, AdamW(lr 3e-3)", 32, 4,
         "adamw", 3e-3),
]


# ---- vyre --------------------------------------------------------------------------------------------
def _vyre_model(spec: Spec) -> Any:
    import vyre.nn as nn
    import vyre.random as vr

    k = vr.split(vr.key(3), 3)
    if spec.name == "transformer":
        return nn.GPT(VOCAB, CONTEXT, 128, 4, 2, key=k[0])
    if spec.name == "mlp":
        return nn.Sequential(nn.Linear(784, 1024, key=k[0]), nn.ReLU(), nn.Linear(1024, 1024, key=k[1]), nn.ReLU(),
                             nn.Linear(1024, 10, key=k[2]))
    return nn.Sequential(nn.Conv2d(1, 16, 3, key=k[0]), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(256, 10, key=k[1]))


def vyre_init(spec: Spec) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in _vyre_model(spec).parameter_values().items()}


def vyre_trainer(spec: Spec, init: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray, *, compiled: bool,
                 amp: bool = False) -> Callable[[], Any] | None:
    """A step function (returns the loss array) over a fresh model loaded with ``init``; None when
    ``amp`` is asked and vyre.amp is not there."""
    import vyre
    import vyre.array as xp
    import vyre.nn as nn
    import vyre.nn.functional as F
    import vyre.optim as optim
    from vyre.autograd import value_and_grad

    model = _vyre_model(spec)
    model.load_state_dict({k: xp.asarray(v) for k, v in init.items()})
    opt = optim.AdamW(model, lr=spec.lr) if spec.optimizer == "adamw" else optim.Adam(model, lr=spec.lr)
    xa, ya = xp.asarray(x), xp.asarray(y)
    loss_of: Any = nn.lm_loss if spec.name == "transformer" else F.cross_entropy
    if not amp:
        grad = value_and_grad(lambda values, xb, yb: loss_of(nn.functional_call(model, values, xb), yb))

        def step(xb: Any, yb: Any) -> Any:
            loss, grads = grad(model.parameter_values(), xb, yb)
            opt.step(grads)
            return loss
    else:
        try:
            from vyre.amp import GradScaler, autocast
        except ImportError:
            return None
        scaler = GradScaler()

        def scaled(values: Any, xb: Any, yb: Any) -> Any:
            with autocast("float16"):
                logits = nn.functional_call(model, values, xb)
            return scaler.scale(loss_of(logits, yb))

        sgrad = value_and_grad(scaled)

        def step(xb: Any, yb: Any) -> Any:
            loss, grads = sgrad(model.parameter_values(), xb, yb)
            scaler.step(opt, grads)
            scaler.update()
            return loss

    fn = vyre.compile(step) if compiled else step

    def call() -> Any:
        return fn(xa, ya)
    call.step = fn  # type: ignore[attr-defined]  # benches/profile_step.py reads the compiled step's trace
    return call


# ---- torch -------------------------------------------------------------------------------------------
def _torch_model(torch: Any, spec: Spec, init: dict[str, np.ndarray], dev: str = "cuda") -> Any:
    nn = torch.nn
    if spec.name == "transformer":
        net = torch_gpt(torch, VOCAB, CONTEXT)
    elif spec.name == "mlp":
        net = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    else:
        net = nn.Sequential(nn.Conv2d(1, 16, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(256, 10))
    net = net.to(dev)
    params = dict(net.named_parameters())
    assert sorted(params) == sorted(init), "the torch model's parameter names must be vyre's"
    with torch.no_grad():
        for k, v in init.items():
            params[k].copy_(torch.from_numpy(v))
    return net


def _torch_opt(torch: Any, spec: Spec, net: Any, capturable: bool) -> Any:
    cls = torch.optim.AdamW if spec.optimizer == "adamw" else torch.optim.Adam
    return cls(net.parameters(), lr=spec.lr, capturable=capturable)


def torch_step(torch: Any, spec: Spec, init: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray,
               dev: str = "cuda") -> tuple[Callable[[], None], Callable[[], None] | None, list[float]]:
    """(eager step, CUDA-graph step (None on the CPU), the eager losses of 3 steps from ``init``). float32
    throughout: TF32 off for matmuls and cuDNN convolutions (vyre has no tensor cores through wgpu)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    def loss_of(logits: Any, target: Any) -> Any:
        return torch_lm_loss(torch, logits, target)
    tx, ty = torch.from_numpy(x).to(dev), torch.from_numpy(y.astype(np.int64)).to(dev)

    net = _torch_model(torch, spec, init, dev)
    opt = _torch_opt(torch, spec, net, False)

    def one() -> Any:
        opt.zero_grad(set_to_none=True)
        loss = loss_of(net(tx), ty)
        loss.backward()
        opt.step()
        return loss

    losses = [float(one().detach()) for _ in range(3)]

    def eager() -> None:
        one()
        if dev == "cuda":
            torch.cuda.synchronize()

    if dev != "cuda":
        return eager, None, losses
    gnet = _torch_model(torch, spec, init)
    gopt = _torch_opt(torch, spec, gnet, True)
    sx, sy = tx.clone(), ty.clone()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):  # warm-up on a side stream, as torch's whole-network capture recipe
            gopt.zero_grad(set_to_none=True)
            loss_of(gnet(sx), sy).backward()
            gopt.step()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    gopt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        loss_of(gnet(sx), sy).backward()
        gopt.step()

    keep = (sx, sy, gnet, gopt)  # the graph reads and writes their memory: alive as long as the closure

    def graphed() -> None:
        assert keep
        graph.replay()
        torch.cuda.synchronize()

    return eager, graphed, losses


# ---- JAX ---------------------------------------------------------------------------------------------
def jax_step(spec: Spec, init: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray) -> Callable[[], None] | str:
    """A jitted step on a CUDA device, or why there is none."""
    try:
        import jax
        import jax.numpy as jnp
    except Exception as exc:  # noqa: BLE001 - any import failure: no baseline
        return f"jax not importable ({type(exc).__name__})"
    try:
        dev = jax.devices("gpu")[0]
    except Exception:  # noqa: BLE001
        return "jax has no GPU device"
    jax.config.update("jax_default_matmul_precision", "highest")  # float32 matmuls, not TF32
    params = {k: jax.device_put(jnp.asarray(v), dev) for k, v in init.items()}
    xj, yj = jax.device_put(jnp.asarray(x), dev), jax.device_put(jnp.asarray(y), dev)

    def forward(p: dict[str, Any], xb: Any) -> Any:
        if spec.name == "transformer":
            return jax_gpt_logits(jax, jnp, p, xb)
        if spec.name == "mlp":
            h = jax.nn.relu(xb @ p["0.weight"].T + p["0.bias"])
            h = jax.nn.relu(h @ p["2.weight"].T + p["2.bias"])
            return h @ p["4.weight"].T + p["4.bias"]
        h = jax.lax.conv_general_dilated(xb, p["0.weight"], (1, 1), "VALID") + p["0.bias"][None, :, None, None]
        h = jax.nn.relu(h)
        h = jax.lax.reduce_window(h, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")
        return h.reshape(h.shape[0], -1) @ p["4.weight"].T + p["4.bias"]

    def loss_fn(p: dict[str, Any], xb: Any, yb: Any) -> Any:
        logits = forward(p, xb)
        logp = jax.nn.log_softmax(logits.reshape(-1, logits.shape[-1]))
        return -jnp.mean(jnp.take_along_axis(logp, yb.reshape(-1)[:, None], axis=1))

    b1, b2, eps = 0.9, 0.999, 1e-8
    wd = 0.01 if spec.optimizer == "adamw" else 0.0

    @jax.jit
    def step(p: Any, m: Any, v: Any, t: Any, xb: Any, yb: Any) -> Any:
        loss, g = jax.value_and_grad(loss_fn)(p, xb, yb)
        t = t + 1.0
        m = jax.tree_util.tree_map(lambda m_, g_: b1 * m_ + (1 - b1) * g_, m, g)
        v = jax.tree_util.tree_map(lambda v_, g_: b2 * v_ + (1 - b2) * g_ * g_, v, g)
        c1, c2 = 1 - b1 ** t, 1 - b2 ** t

        def upd(p_: Any, m_: Any, v_: Any) -> Any:
            p_ = p_ * (1 - spec.lr * wd)
            return p_ - spec.lr / c1 * m_ / (jnp.sqrt(v_ / c2) + eps)
        return jax.tree_util.tree_map(upd, p, m, v), m, v, t, loss

    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    state = [params, zeros, zeros, jnp.float32(0.0)]

    def run() -> None:
        p, m, v, t, loss = step(*state, xj, yj)
        state[:] = [p, m, v, t]
        loss.block_until_ready()

    return run


# ---- numpy (the MLP) ---------------------------------------------------------------------------------
def numpy_mlp_step(init: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray, spec: Spec) -> Callable[[], None]:
    """Forward, backward and AdamW of the MLP in numpy float32."""
    p = {k: v.copy() for k, v in init.items()}
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v2 = {k: np.zeros_like(v) for k, v in p.items()}
    t = [0]
    onehot = np.eye(10, dtype=np.float32)[y]
    b1, b2, eps, wd, lr = 0.9, 0.999, 1e-8, 0.01, spec.lr

    def step() -> None:
        h1 = np.maximum(x @ p["0.weight"].T + p["0.bias"], 0)
        h2 = np.maximum(h1 @ p["2.weight"].T + p["2.bias"], 0)
        z = h2 @ p["4.weight"].T + p["4.bias"]
        e = np.exp(z - z.max(1, keepdims=True))
        dz = (e / e.sum(1, keepdims=True) - onehot) / len(y)
        g = {"4.weight": dz.T @ h2, "4.bias": dz.sum(0)}
        d2 = (dz @ p["4.weight"]) * (h2 > 0)
        g["2.weight"], g["2.bias"] = d2.T @ h1, d2.sum(0)
        d1 = (d2 @ p["2.weight"]) * (h1 > 0)
        g["0.weight"], g["0.bias"] = d1.T @ x, d1.sum(0)
        t[0] += 1
        for k in p:
            m[k] = b1 * m[k] + (1 - b1) * g[k]
            v2[k] = b2 * v2[k] + (1 - b2) * g[k] * g[k]
            p[k] = p[k] * (1 - lr * wd) - lr / (1 - b1 ** t[0]) * m[k] / (np.sqrt(v2[k] / (1 - b2 ** t[0])) + eps)

    return step
