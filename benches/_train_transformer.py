"""The character transformer of benches/train.py (vyre.nn.GPT: pre-norm decoder layers, exact GELU, untied
head) in torch and in JAX, with vyre's parameter names (``h0.attn.in_proj_weight``, ...) so one set of
initial weights loads into all three. LayerNorm eps 1e-5 as torch's and vyre's."""

from __future__ import annotations

from typing import Any

import numpy as np

D, HEADS, LAYERS = 128, 4, 2


def torch_gpt(torch: Any, vocab: int, context: int) -> Any:
    """An untrained torch module whose named parameters match vyre.nn.GPT's."""
    nn = torch.nn

    class Layer(nn.Module):  # type: ignore[name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
            self.attn = nn.MultiheadAttention(D, HEADS, batch_first=True)
            self.fc1, self.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

        def forward(self, x: Any, mask: Any) -> Any:
            h = self.ln1(x)
            x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
            return x + self.fc2(nn.functional.gelu(self.fc1(self.ln2(x))))

    class GPT(nn.Module):  # type: ignore[name-defined]
        def __init__(self) -> None:
            super().__init__()
            self.tok_emb = nn.Parameter(torch.zeros(vocab, D))
            self.pos_emb = nn.Parameter(torch.zeros(context, D))
            for i in range(LAYERS):
                setattr(self, f"h{i}", Layer())
            self.ln_f = nn.LayerNorm(D)
            self.head = nn.Linear(D, vocab)

        def forward(self, ids: Any) -> Any:
            length = ids.shape[1]
            mask = torch.ones(length, length, dtype=torch.bool, device=ids.device).triu(1)  # True: masked
            x = self.tok_emb[ids] + self.pos_emb[:length]
            for i in range(LAYERS):
                x = getattr(self, f"h{i}")(x, mask)
            return self.head(self.ln_f(x))

    return GPT()


def torch_lm_loss(torch: Any, logits: Any, targets: Any) -> Any:
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def jax_gpt_logits(jax: Any, jnp: Any, p: dict[str, Any], ids: Any) -> Any:
    """vyre.nn.GPT's forward in jax.numpy over a parameter dict with vyre's names."""
    def ln(x: Any, name: str) -> Any:
        mu = jnp.mean(x, -1, keepdims=True)
        var = jnp.mean((x - mu) ** 2, -1, keepdims=True)
        return (x - mu) / jnp.sqrt(var + 1e-5) * p[f"{name}.weight"] + p[f"{name}.bias"]

    n, length = ids.shape
    dh = D // HEADS
    causal = jnp.tril(jnp.ones((length, length), bool))
    x = p["tok_emb"][ids] + p["pos_emb"][:length]
    for i in range(LAYERS):
        a = f"h{i}.attn"
        h = ln(x, f"h{i}.ln1")
        qkv = h @ p[f"{a}.in_proj_weight"].T + p[f"{a}.in_proj_bias"]
        q, k, v = (t.reshape(n, length, HEADS, dh).transpose(0, 2, 1, 3) for t in jnp.split(qkv, 3, -1))
        s = jnp.where(causal, q @ k.transpose(0, 1, 3, 2) / np.sqrt(dh), -jnp.inf)
        o = (jax.nn.softmax(s, -1) @ v).transpose(0, 2, 1, 3).reshape(n, length, D)
        x = x + o @ p[f"{a}.out_proj.weight"].T + p[f"{a}.out_proj.bias"]
        h = ln(x, f"h{i}.ln2") @ p[f"h{i}.fc1.weight"].T + p[f"h{i}.fc1.bias"]
        x = x + jax.nn.gelu(h, approximate=False) @ p[f"h{i}.fc2.weight"].T + p[f"h{i}.fc2.bias"]
    return ln(x, "ln_f") @ p["head.weight"].T + p["head.bias"]
