"""``vyre cache info|prune|clear``: the on-disk cache of lowered programs (:mod:`vyre.backends.wgpu.disk_cache`)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import click

from ._common import USAGE, CliError, track

_UNITS = {"": 1, "b": 1, "k": 2**10, "kb": 2**10, "kib": 2**10, "m": 2**20, "mb": 2**20, "mib": 2**20,
          "g": 2**30, "gb": 2**30, "gib": 2**30}
_SPANS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_size(text: str) -> int:
    """``500M``, ``1.5G``, ``2048k``, ``123`` (bytes) -> bytes."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not m or m[2].lower() not in _UNITS:
        raise click.BadParameter(f"{text!r}: expected a size such as 500M, 2G or 100k")
    return int(float(m[1]) * _UNITS[m[2].lower()])


def parse_age(text: str) -> float:
    """``30d``, ``12h``, ``45m``, ``2w``, ``90s`` -> seconds (a bare number is days)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", text.lower())
    if not m:
        raise click.BadParameter(f"{text!r}: expected an age such as 30d, 12h, 45m or 2w")
    return float(m[1]) * _SPANS[m[2] or "d"]


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _ago(t: float | None, now: float) -> str:
    if t is None:
        return "-"
    s = max(0.0, now - t)
    for span, unit in ((86400, "d"), (3600, "h"), (60, "min")):
        if s >= span:
            return f"{s / span:.1f} {unit} ago"
    return f"{s:.0f} s ago"


# why (each vyre.backends.wgpu import below): import time; vyre.backends.wgpu loads pydantic and the IR (~0.7 s),
# which every other command would pay for
def _root() -> Path:
    from ..backends.wgpu.disk_cache import ENV_VAR, default_root  # why: import time (above)

    root = default_root()
    if root is None:
        raise CliError(f"the disk cache is off ({ENV_VAR}=off)", USAGE)
    return root


def _current_dir() -> str:
    """The directory name of this vyre's lowering contract (without opening a GPU)."""
    from ..backends.wgpu.disk_cache import contract_dir_name  # why: import time (above)
    from ..backends.wgpu.keys import lowering_contract  # why: import time (above)

    return contract_dir_name(lowering_contract(None))


@click.group("cache")
@click.pass_context
def cache(ctx: click.Context) -> None:
    """The on-disk cache of lowered programs (VYRE_CACHE_DIR, default the user cache directory; capped at
    VYRE_CACHE_MAX_MB MiB, default 256, pruned least recently used first when vyre writes to it)."""
    track(ctx)


@cache.command("info")
@click.option("--json", "as_json", is_flag=True, help="print it as JSON")
def info(as_json: bool) -> None:
    """Where the cache is, its size, entries and ages, per lowering contract directory."""
    from ..backends.wgpu.disk_cache import default_max_bytes, scan  # why: import time (above)

    root = _root()
    s, now, current = scan(root), time.time(), _current_dir()
    cap = default_max_bytes()
    doc: dict[str, Any] = {
        "root": str(root), "entries": len(s.entries), "bytes": s.total_bytes, "max_bytes": cap,
        "oldest": s.oldest(), "newest": s.newest(),
        "dirs": [{"name": name, "current": name == current, "entries": len(es), "bytes": sum(e.size for e in es),
                  "oldest": min((e.mtime for e in es), default=None),
                  "newest": max((e.mtime for e in es), default=None)} for name, es in s.dirs.items()],
    }
    if as_json:
        click.echo(json.dumps(doc, indent=1, sort_keys=True))
        return
    click.echo(f"cache: {root}")
    click.echo(f"size: {_human(s.total_bytes)} in {len(s.entries)} entries (cap {_human(cap) if cap else 'none'})")
    click.echo(f"least recently used: {_ago(s.oldest(), now)}; most recently: {_ago(s.newest(), now)}")
    for d in doc["dirs"]:
        tag = " (this vyre)" if d["current"] else " (another vyre version: stale)"
        click.echo(f"  {d['name']}{tag}: {d['entries']} entries, {_human(d['bytes'])}, "
                   f"last used {_ago(d['newest'], now)}")


@cache.command("prune")
@click.option("--max-age", "max_age", metavar="AGE", default="30d", show_default=True,
              help="delete entries unused for longer (30d, 12h, 45m, 2w; 0 keeps every age)")
@click.option("--max-size", "max_size", metavar="SIZE", default=None,
              help="then delete the least recently used entries down to SIZE (500M, 1G) [default: the cap, "
                   "VYRE_CACHE_MAX_MB or 256 MiB]")
def prune(max_age: str, max_size: str | None) -> None:
    """Delete old entries and keep the cache under a size (each directory under its lock: safe while
    other processes use the cache)."""
    from ..backends.wgpu.disk_cache import default_max_bytes  # why: import time (above)
    from ..backends.wgpu.disk_cache import prune as do_prune  # why: import time (above)

    age = parse_age(max_age)
    size = parse_size(max_size) if max_size is not None else default_max_bytes()
    r = do_prune(_root(), max_age_s=age or None, max_bytes=size)
    click.echo(f"removed {r.removed} entries ({_human(r.freed_bytes)}); kept {r.kept} ({_human(r.kept_bytes)})")


@cache.command("clear")
def clear() -> None:
    """Delete every entry (each directory under its lock: safe while other processes use the cache)."""
    from ..backends.wgpu.disk_cache import clear as do_clear  # why: import time (above)

    r = do_clear(_root())
    click.echo(f"removed {r.removed} entries ({_human(r.freed_bytes)})"
               + (f"; {r.kept} in use meanwhile were kept" if r.kept else ""))


COMMANDS = [cache]
