"""``vyre tune``: measure the tunable ops' candidate kernels on this adapter and store the winners
(:mod:`vyre.ops.tuning`); ``--show`` lists the store, ``--clear`` empties it."""

from __future__ import annotations

import json
import re
from typing import Any

import click

from ._common import USAGE, CliError


def _ms(t: float | None) -> str:
    return "-" if t is None else f"{t * 1e3:.4g} ms"


def parse_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """``matmul=4096x4096x4096`` -> ("matmul", (4096, 4096, 4096))."""
    m = re.fullmatch(r"\s*([\w.\-]+)\s*=\s*(\d+(?:\s*x\s*\d+)*)\s*", text)
    if not m:
        raise click.BadParameter(f"{text!r}: expected OP=DIMS such as matmul=1024x1024x1024 or zip.add=1048576")
    return m[1], tuple(int(d) for d in m[2].split("x"))


def _show(as_json: bool) -> None:
    from ..ops import _tuning_store as S  # why: import time (logging, tempfile...: for this command only)

    store = S.current()
    doc = store.document()
    if as_json:
        click.echo(json.dumps({"store": str(store.path) if store.path else None, **doc}, indent=1, sort_keys=True))
        return
    click.echo(f"tuning store: {store.path if store.path else 'off'}")
    if not doc["adapters"]:
        click.echo("  no entries")
    from ..ops._tunables import Setting  # why: import time (numpy, pydantic and the IR)

    for akey, a in sorted(doc["adapters"].items()):
        click.echo(f"adapter {akey}: {S.describe_adapter(a['adapter'])}")
        for _, e in sorted(a["entries"].items()):
            click.echo(f"  {e.get('op')} {e.get('class')}: {Setting.from_json(e['setting']).label()} "
                       f"({_ms(e.get('time_s'))}, {e.get('method', '?')}, shape {e.get('shape')}, "
                       f"tuner {e.get('tuner')})")


def _print_result(r: Any) -> None:
    head = f"{r.op_id} {r.label} (shape {'x'.join(map(str, r.shape))})"
    if not r.candidates:
        click.echo(f"{head}: {r.note}")
        return
    click.echo(f"{head}: {r.method}")
    for c in r.candidates:
        mark = "*" if r.winner is not None and c.setting == r.winner else " "
        state = _ms(c.time_s) if c.ok else f"FAILED: {c.error}"
        click.echo(f"  {mark} {c.setting.label():<24} {state}")
    if r.winner is not None:
        click.echo(f"  winner: {r.winner.label()}" + (" (stored)" if r.stored else ""))
    elif r.note:
        click.echo(f"  {r.note}")


@click.command("tune")
@click.option("--ops", "ops", metavar="OP[,OP...]", default=None,
              help="ops to tune (default: matmul, matmul.batched, matmul.f16, zip.add, map.exp, nn.gelu, reduce.sum)")
@click.option("--shape", "shapes", metavar="OP=DIMS", multiple=True,
              help="a representative shape to tune OP at (repeatable): matmul=MxKxN, "
                   "matmul.batched=BxMxKxN, elementwise and reduce ops =N")
@click.option("--quick", is_flag=True, help="small shapes, 3 candidates per GEMM class, short timings")
@click.option("--show", is_flag=True, help="list the stored winners (every adapter) and do nothing else")
@click.option("--clear", is_flag=True, help="delete every stored winner (every adapter) and do nothing else")
@click.option("--json", "as_json", is_flag=True, help="print the results as JSON")
def tune(ops: str | None, shapes: tuple[str, ...], quick: bool, show: bool, clear: bool, as_json: bool) -> int:
    """Measure candidate kernels of the tunable ops (GEMM tiles, kernel variants) per shape class on this
    adapter (VYRE_ADAPTER chooses), validate each against the op's reference and store the fastest for
    later processes (tuning.json in the cache directory; VYRE_TUNING_FILE overrides)."""
    from ..ops import _tuning_store as S  # why: import time (as in _show)

    if clear:
        if S.current().path is None:
            raise CliError(f"the tuning store is off ({S.ENV_VAR}=off or VYRE_CACHE_DIR=off)", USAGE)
        n = S.current().clear()
        click.echo(f"removed {n} tuned entries from {S.current().path}")
        return 0
    if show:
        _show(as_json)
        return 0
    from .. import WgpuBackend  # why: import time (wgpu)
    from ..ops.tuning import tune as run_tune  # why: import time (the op registry)

    names = [o.strip() for o in ops.split(",") if o.strip()] if ops else None
    classes: dict[str, list[tuple[int, ...]]] = {}
    for text in shapes:
        op, dims = parse_shape(text)
        classes.setdefault(op, []).append(dims)
    if classes and names is None:
        names = list(classes)
    from ..ops._tunables import tunables  # why: import time (numpy, pydantic and the IR)

    unknown = sorted(set(names or ()) - set(tunables()))
    if unknown:
        raise CliError(f"not tunable: {', '.join(unknown)} (tunable ops: {', '.join(sorted(tunables()))})", USAGE)
    backend = WgpuBackend.acquire()
    if not as_json:
        click.echo(f"adapter: {S.describe_adapter(S.adapter_of(backend))}")
        click.echo(f"store: {S.current().path}")
    results = run_tune(backend, names, classes or None, quick=quick, progress=None if as_json else _print_result)
    if as_json:
        click.echo(json.dumps([r.to_json() for r in results], indent=1))
    else:
        stored = sum(r.stored for r in results)
        click.echo(f"{stored} of {len(results)} classes stored")
    return 0


COMMANDS = [tune]
