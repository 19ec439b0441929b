"""``vyre info``: the WebGPU adapters, and the features and key limits of the one vyre would use."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from ..errors import NoAdapterError
from ._common import RUNTIME, CliError

#: The limits a compute user asks about first (all of the adapter's are in --json).
KEY_LIMITS = (
    "max-buffer-size", "max-storage-buffer-binding-size", "max-uniform-buffer-binding-size",
    "max-storage-buffers-per-shader-stage", "max-compute-workgroup-storage-size",
    "max-compute-invocations-per-workgroup", "max-compute-workgroup-size-x", "max-compute-workgroup-size-y",
    "max-compute-workgroup-size-z", "max-compute-workgroups-per-dimension",
)


def _plain(v: Any) -> Any:
    return v if isinstance(v, (int, float, str, bool)) or v is None else str(v)


def gather() -> dict[str, Any]:
    """Every adapter (index, name, backend, type, driver) and the chosen one's features and limits."""
    from ..backends.wgpu.adapter import ENV_VAR, adapter_info, choose, enumerate_adapters  # why: import time (wgpu)

    adapters = enumerate_adapters()
    listing = []
    for i, a in enumerate(adapters):
        inf = adapter_info(a)
        listing.append({"index": i, "name": inf["device"], "backend": inf["backend_type"],
                        "type": inf["adapter_type"], "driver": inf["driver"], "vendor": inf["vendor"]})
    forced = os.environ.get(ENV_VAR)
    doc: dict[str, Any] = {"adapters": listing, "env": {ENV_VAR: forced}, "chosen": None}
    try:
        choice = choose(adapters, forced)
    except NoAdapterError as exc:
        doc["error"] = str(exc).splitlines()[0]
        return doc
    limits = {str(k): _plain(v) for k, v in dict(choice.adapter.limits).items()}
    doc["chosen"] = {"index": choice.index, "name": choice.info["device"], "info": choice.info,
                     "features": sorted(str(f) for f in choice.adapter.features),
                     "key_limits": {k: limits.get(k) for k in KEY_LIMITS}, "limits": limits}
    return doc


def _text(doc: dict[str, Any]) -> str:
    lines = ["adapters:"]
    w = max([len(a["name"]) for a in doc["adapters"]] + [4])
    for a in doc["adapters"]:
        mark = "*" if doc["chosen"] and a["index"] == doc["chosen"]["index"] else " "
        lines.append(f" {mark}[{a['index']}] {a['name']:<{w}}  {a['backend']:<8} {a['type']:<13} {a['driver']}")
    if not doc["adapters"]:
        lines.append("  (none)")
    forced = doc["env"].get("VYRE_ADAPTER")
    how = f"VYRE_ADAPTER={forced}" if forced else "the best one; set VYRE_ADAPTER=<index or name> to choose"
    chosen = doc["chosen"]
    if chosen is None:
        lines.append(f"chosen: none ({doc.get('error', 'no usable adapter')})")
        return "\n".join(lines)
    lines.append(f"chosen: [{chosen['index']}] {chosen['name']} ({how})")
    lines.append(f"features ({len(chosen['features'])}): " + ", ".join(chosen["features"]))
    lines.append("key limits:")
    for k, v in chosen["key_limits"].items():
        lines.append(f"  {k:<40} {v}")
    return "\n".join(lines)


@click.command("info")
@click.option("--json", "as_json", is_flag=True, help="print everything (all limits too) as JSON")
def info(as_json: bool) -> None:
    """List the WebGPU adapters (index, name, backend, type, driver) and show the features and key limits of
    the one vyre uses (marked *; VYRE_ADAPTER chooses another). Exit status 1 when none is usable."""
    doc = gather()
    click.echo(json.dumps(doc, indent=1, sort_keys=True) if as_json else _text(doc))
    if doc["chosen"] is None:
        raise CliError(doc.get("error", "no usable WebGPU adapter"), RUNTIME)


COMMANDS = [info]
