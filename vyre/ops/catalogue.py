"""docs/ops.md, the op catalogue: the families table, then every op (generated from the registry).

``vyre.conform.catalogue_markdown()`` is :func:`catalogue_markdown`;
``python -m vyre.conform --catalogue docs/ops.md`` rewrites the page.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from .namespace import table_of
from .registry import all_ops
from .variants import GENERIC


def _esc(text: Any) -> str:
    return str(text).replace("|", "\\|")


def _params_text(spec: Any) -> str:
    parts = []
    for p in inspect.signature(spec.build).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        parts.append(p.name if p.default is p.empty else f"{p.name}={p.default!r}")
    return ", ".join(parts)


def _size(w: Any) -> int:
    return sum(int(getattr(a, "size", 0)) for a in w.inputs)


def _at(params: dict[str, Any], keys: list[str]) -> str:
    return ", ".join(f"{k}={params[k]!r}" for k in keys if k in params)


def _group_text(spec: Any, ws: list[Any]) -> str:
    """One dtype's tolerance: the rule the op declares (``tolerance_rule``) with its value at the largest
    witness (tolerance_for's, so it cannot drift); without a rule, the value when every witness has the
    same, else the values at the smallest and the largest witness."""
    tols = [spec.tolerance_of(w.params) for w in ws]
    typical = max(ws, key=_size)
    rule = spec.tolerance_rule_of(typical.params)
    if not rule and len(set(tols)) == 1:
        return str(tols[0].describe())
    varying = [k for k in ws[0].params if len({repr(w.params.get(k)) for w in ws}) > 1]
    varying += [k for w in ws for k in w.params if k not in ws[0].params and k not in varying]
    worked = spec.tolerance_of(typical.params).describe()
    if rule:
        named = [k for k in typical.params if re.search(rf"(?<![\w.]){re.escape(k)}\b", rule)] or varying
        return f"{rule} (e.g. {worked} at {_at(typical.params, named)})"
    small = min(ws, key=_size)
    return (f"depends on the params: {spec.tolerance_of(small.params).describe()} at {_at(small.params, varying)}; "
            f"{worked} at {_at(typical.params, varying)}")


def _tolerance_text(spec: Any) -> str:
    groups: dict[str, list[Any]] = {}
    for w in spec.witnesses():
        groups.setdefault(str(w.params.get("dtype", "")), []).append(w)
    seen = {k: _group_text(spec, ws) for k, ws in groups.items()}
    if len(set(seen.values())) <= 1:
        return next(iter(seen.values()), spec.tolerance.describe())
    return "; ".join(f"{k}: {v}" for k, v in seen.items())


def _needs_text(spec: Any) -> str:
    needs = set(spec.needs)
    extra = set()
    for w in spec.witnesses():
        extra |= set(spec.needs_of(w.params)) - needs
    text = ", ".join(sorted(needs))
    if extra:
        text = ", ".join(filter(None, [text, f"{', '.join(sorted(extra))} (some params)"]))
    return text


def _function(op_id: str) -> str:
    return op_id.replace(".", "_").replace("-", "_")


def families_markdown(specs: Any) -> list[str]:
    """The families table: family, namespace, its ops, and their flat names."""
    lines = [
        "## Op families",
        "",
        "Every op is also reached through its family: `vyre.ops.<family>.<name>(backend, ...)` is",
        "the same op as the flat `vyre.ops.<function>`. An id `family.rest` puts the op in",
        "`family` as `rest` with dots made underscores (`hash.crc32.rows` -> `vyre.ops.hash.crc32_rows`);",
        "ids without a family prefix (`softmax`, `matmul.batched`, `histogram`) sit in the family",
        "of their category (`vyre.ops.nn.softmax`, `vyre.ops.linalg.matmul_batched`,",
        "`vyre.ops.reduce.histogram`). Families that are subpackages are those packages (`import",
        "vyre.ops.reduce` works; an op named like a submodule, e.g. `vyre.ops.sort.topk`, is that",
        "module, callable); `dir()` of a family lists its ops.",
        "",
        "| family | namespace | ops | flat names |",
        "|--------|-----------|-----|------------|",
    ]
    for family, ops in sorted(table_of(specs).items()):
        prefixed = [n for n, op in ops.items() if _function(op) == f"{family}_{n}"]
        others = sorted(_function(op) for n, op in ops.items() if n not in prefixed)
        flat = ([f"`{family}_*`"] if prefixed else []) + [f"`{f}`" for f in others]
        lines.append(f"| {family} | `vyre.ops.{family}` | {', '.join(f'`{n}`' for n in sorted(ops))} "
                     f"| {', '.join(flat)} |")
    return lines + [""]


def variants_markdown(specs: Any) -> list[str]:
    """How kernel variants work, and each distinct variant once."""
    seen: dict[str, tuple[str, list[str]]] = {}
    for s in specs:
        for v in s.variants:
            seen.setdefault(v.name, (f"{v.describe()}: {v.summary}", []))[1].append(s.id)
    lines = [
        "## Kernel variants",
        "",
        f"An op's `build` is its generic kernel (`{GENERIC}`); it may register variants",
        "(`OpSpec.variants`, see `vyre.ops.variants`) with the features, limits and adapter types",
        "they need or suit. Each call runs the first variant that applies to the params, that the",
        "backend can run and that suits its adapter type, else the generic kernel; the reference",
        "interpreter runs the generic kernel. `variant=\"name\"` forces one (UnsupportedFeatureError",
        "when the backend cannot run it); `vyre.ops.api.last_variant(op_id)` says which ran,",
        "`vyre.ops.api.variant_for(op_id, backend, *arrays)` which would. Every variant is held to the",
        "op's numpy reference and tolerance: `python -m vyre.conform` checks each one the adapter can",
        "run (the certificate's `variants`), tests/ops/test_ops.py each on its witnesses.",
        "",
    ]
    if not seen:
        return lines + ["No op registers a variant yet.", ""]
    lines += ["| variant | what | ops |", "|---------|------|-----|"]
    for name, (text, ids) in sorted(seen.items()):
        lines.append(f"| `{name}` | {_esc(text)} | {len(ids)}: {', '.join(f'`{i}`' for i in ids)} |")
    return lines + [""]


def catalogue_markdown(specs: Any = None) -> str:
    """docs/ops.md: the families, the kernel variants, then every op with its category, summary,
    params, tolerance, needs and kernels."""
    specs = sorted(all_ops() if specs is None else specs, key=lambda s: (s.category, s.id))
    lines = [
        "# Op catalogue",
        "",
        "Generated from the registry by `vyre.conform.catalogue_markdown()`; rewrite it with",
        "`python -m vyre.conform --catalogue docs/ops.md` (tests/test_conform.py checks it is current).",
        "",
        "Call an op as `vyre.ops.<function>(backend, *arrays, **params)` or",
        "`vyre.ops.<family>.<name>(backend, *arrays, **params)`. The convenience layer",
        "derives the build params from the arrays; `vyre.ops.registry.get(id).build(**params)`",
        "gives the pipeline. Tolerances are against the op's numpy reference, per dtype where they",
        "differ. A tolerance that grows with the params is given as its rule (`OpSpec.tolerance_rule`:",
        "`rtol=2^-20 atol=k·2^-22`) with its value at the op's largest witness (`e.g. ... at k=128`,",
        "`tolerance_for` of those params); for an op that declares no rule, its values at the smallest",
        "and the largest witness. Check a result against the rule at your own params (or",
        "`vyre.ops.registry.get(id).tolerance_of(params)`), not against the worked value.",
        "`python -m vyre.conform` checks every op on every backend.",
        "",
        *families_markdown(specs),
        *variants_markdown(specs),
        "## Ops",
        "",
        f"{len(specs)} ops.",
        "",
        "| id | function | category | summary | params | tolerance | needs | kernels |",
        "|----|----------|----------|---------|--------|-----------|-------|---------|",
    ]
    for s in specs:
        kernels = ", ".join(s.variant_names())
        lines.append(f"| `{s.id}` | `{_function(s.id)}` | {s.category} | {_esc(s.summary)} | {_esc(_params_text(s))} "
                     f"| {_esc(_tolerance_text(s))} | {_esc(_needs_text(s))} | {kernels} |")
    return "\n".join(lines) + "\n"


__all__ = ["catalogue_markdown", "families_markdown", "variants_markdown"]
