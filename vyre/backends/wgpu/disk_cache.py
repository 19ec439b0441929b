"""On-disk cache of lowered programs (WGSL + binding metadata), shared by every process of a user.

wgpu-py offers no pipeline binary cache to rely on, so what persists is the lowering: a hit
skips the validator and the lowering, and the backend only builds the GPU pipeline.

Where: ``VYRE_CACHE_DIR`` if set (``off`` disables the cache), else
``platformdirs.user_cache_dir("vyre")`` (the root of :mod:`vyre.backends.user_cache`, shared with the
op layer's tuning store). Entries live in ``<root>/wgsl-<contract digest>/``,
so a new lowering contract (``vyre.lower.LOWERING_VERSION`` or vyre's version) starts an
empty directory and old entries go stale. One entry per (program fingerprint, codegen key,
device-limits digest): ``<fingerprint>-<scope digest>.json``, holding
``{"format", "version", "contract", "sha256", "payload"}`` where ``payload`` is a JSON string
and ``sha256`` its digest.

Writes are atomic: a temp file in the same directory, fsync, ``os.replace``, under a
``filelock.FileLock`` on ``<dir>/.lock``. Reads check format, contract, fingerprint and
checksum: anything else (truncated, garbled, foreign) is counted as ``disk_cache_corrupt``,
deleted and rebuilt, never served. Cache I/O errors never fail a dispatch: they are counted
(``disk_cache_errors``) and the entry is simply not cached.

Size: the whole root (every contract's directory) is capped at ``VYRE_CACHE_MAX_MB`` MiB (default
:data:`DEFAULT_MAX_MB`; ``0`` lifts the cap). A process checks the total at its first write and then
every :data:`CAP_CHECK_EVERY` writes, and when it is over the cap deletes the least recently used
entries (a hit refreshes an entry's modification time) down to :data:`PRUNE_TO` of it, so the cache
never grows without bound. :func:`scan`, :func:`prune` and :func:`clear` (``vyre cache info|prune|clear``)
work on the same files under the same per-directory locks; deleting a complete entry never corrupts a
cache in use (a reader that loses the race sees a miss and lowers again).

Logging (logger ``vyre.cache``): hits, misses and writes at DEBUG; a corrupt entry (with its
path and what was wrong) and any I/O error at WARNING. Nothing is printed: like any library, vyre
leaves handlers to the application (``logging.basicConfig()`` shows the warnings); the ``vyre``
logger has a NullHandler so that unconfigured programs stay quiet.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..user_cache import ENV_VAR, LOCK_TIMEOUT_S, default_root, file_lock

if TYPE_CHECKING:
    import filelock

    from ...lower import LoweredProgram

FORMAT = "vyre-wgsl-cache"
VERSION = 1
MAX_ENV_VAR = "VYRE_CACHE_MAX_MB"
DEFAULT_MAX_MB = 256  # about 50 000 entries of ~5 KiB
CAP_CHECK_EVERY = 100  # writes between two checks of the total size, per process
PRUNE_TO = 0.8  # over the cap, prune down to this fraction of it (not to re-prune at the next write)
STALE_TMP_S = 3600.0  # a temp file this old is a crashed writer's leftover
DIR_PREFIX = "wgsl-"

log = logging.getLogger("vyre.cache")
if not any(isinstance(h, logging.NullHandler) for h in logging.getLogger("vyre").handlers):
    logging.getLogger("vyre").addHandler(logging.NullHandler())


class Counters(Protocol):
    """Where the cache counts hits, misses, writes, corrupt entries and errors (the backend's Stats)."""

    def bump(self, key: str, n: int = 1) -> None: ...


def default_max_bytes() -> int | None:
    """The size cap from ``VYRE_CACHE_MAX_MB`` (None when it is 0), else :data:`DEFAULT_MAX_MB` MiB."""
    env = os.environ.get(MAX_ENV_VAR, "").strip()
    try:
        mb = float(env) if env else float(DEFAULT_MAX_MB)
    except ValueError:
        log.warning("%s=%r is not a number of MiB; using %d", MAX_ENV_VAR, env, DEFAULT_MAX_MB)
        mb = float(DEFAULT_MAX_MB)
    return None if mb <= 0 else int(mb * 2**20)


def _digest(text: str, n: int = 16) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def contract_dir_name(contract: str) -> str:
    """The name of a lowering contract's directory under the root (``wgsl-<digest>``)."""
    return f"{DIR_PREFIX}{_digest(contract)}"


# ---- LoweredProgram <-> payload ---------------------------------------------------------
def lowered_to_payload(lowered: LoweredProgram) -> dict[str, Any]:
    return {
        "wgsl": lowered.wgsl,
        "entry_point": lowered.entry_point,
        "bindings": [
            {"group": int(b.group), "binding": int(b.binding), "name": b.name, "kind": str(b.kind),
             "dtype": b.dtype.value, "access": b.access.value,
             "atomic": bool(b.atomic)}
            for b in lowered.bindings
        ],
        "features": sorted(str(f) for f in lowered.features),
        "workgroup_size": [int(w) for w in lowered.workgroup_size],
        "fingerprint": lowered.fingerprint,
        "lowering_version": lowered.lowering_version,
        **({"trap_loops": list(lowered.trap_loops)} if lowered.trap_loops else {}),  # absent: no loop trap
    }


def payload_to_lowered(payload: dict[str, Any]) -> LoweredProgram:
    """The LoweredProgram of a payload; raises (KeyError, ValueError, ...) on anything malformed."""
    from ...ir.types import Access, DataType  # why: import time (the IR types and vyre.lower load on first use)
    from ...lower import BindingInfo, LoweredProgram  # why: import time, as above

    bindings = tuple(
        BindingInfo(int(b["group"]), int(b["binding"]), str(b["name"]), str(b["kind"]),
                    DataType(b["dtype"]), Access(b["access"]), bool(b["atomic"]))
        for b in payload["bindings"]
    )
    wx, wy, wz = (int(w) for w in payload["workgroup_size"])
    return LoweredProgram(
        wgsl=str(payload["wgsl"]), entry_point=str(payload["entry_point"]), bindings=bindings,
        features=frozenset(str(f) for f in payload["features"]),
        workgroup_size=(wx, wy, wz),
        fingerprint=str(payload["fingerprint"]), lowering_version=str(payload["lowering_version"]),
        trap_loops=tuple(str(t) for t in payload.get("trap_loops", ())),
    )


class DiskCache:
    """Lowered programs on disk (see the module docstring). Counters go to ``stats`` (a Stats dict)."""

    def __init__(self, root: Path | str, contract: str, stats: Counters):
        self.root = Path(root)
        self.contract = contract
        self.dir = self.root / contract_dir_name(contract)
        self.stats = stats
        self.max_bytes = default_max_bytes()
        self._writes = 0

    @classmethod
    def from_env(cls, contract: str, stats: Counters) -> DiskCache | None:
        root = default_root()
        return None if root is None else cls(root, contract, stats)

    def path(self, fingerprint: str, scope: str) -> Path:
        return self.dir / f"{fingerprint}-{_digest(scope)}.json"

    def _lock(self) -> filelock.FileLock:
        return file_lock(self.dir / ".lock", timeout=LOCK_TIMEOUT_S)

    # ---- read ----------------------------------------------------------------------------
    def load(self, fingerprint: str, scope: str) -> LoweredProgram | None:
        """The LoweredProgram stored for (fingerprint, scope), or None (miss, or corrupt entry deleted)."""
        path = self.path(fingerprint, scope)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            self.stats.bump("disk_cache_misses")
            log.debug("disk cache miss: %s", path)
            return None
        except OSError as exc:
            self.stats.bump("disk_cache_errors")
            self.stats.bump("disk_cache_misses")
            log.warning("disk cache: cannot read %s (%s); lowering again", path, exc)
            return None
        try:
            lowered = self._decode(raw, fingerprint)
        except Exception as exc:
            self.stats.bump("disk_cache_corrupt")
            self.stats.bump("disk_cache_misses")
            log.warning("disk cache: corrupt entry %s (%s: %s); deleted, lowering again",
                        path, type(exc).__name__, exc)
            self._discard(path, raw)
            return None
        self.stats.bump("disk_cache_hits")
        log.debug("disk cache hit: %s", path)
        try:
            os.utime(path)  # least recently *used* goes first when the cache is pruned
        except OSError:
            pass
        return lowered

    def _decode(self, raw: bytes, fingerprint: str) -> LoweredProgram:
        doc = json.loads(raw.decode("utf-8"))
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
            raise ValueError("not a vyre cache entry")
        if doc.get("contract") != self.contract:
            raise ValueError("entry of another lowering contract")
        text = doc["payload"]
        if not isinstance(text, str) or hashlib.sha256(text.encode("utf-8")).hexdigest() != doc.get("sha256"):
            raise ValueError("checksum mismatch")
        payload = json.loads(text)
        if payload.get("fingerprint") != fingerprint:
            raise ValueError("entry of another program")
        return payload_to_lowered(payload)

    def _discard(self, path: Path, seen: bytes) -> None:
        """Delete a corrupt entry, unless another process replaced it meanwhile."""
        try:
            with self._lock():
                if path.read_bytes() == seen:
                    path.unlink()
        except FileNotFoundError:
            pass
        except Exception as exc:
            self.stats.bump("disk_cache_errors")
            log.warning("disk cache: cannot delete corrupt entry %s (%s)", path, exc)

    # ---- write ---------------------------------------------------------------------------
    def store(self, fingerprint: str, scope: str, lowered: LoweredProgram) -> bool:
        """Write the entry atomically. Returns False (and counts an error) when it could not."""
        text = json.dumps(lowered_to_payload(lowered), sort_keys=True, separators=(",", ":"))
        doc = {"format": FORMAT, "version": VERSION, "contract": self.contract,
               "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(), "payload": text}
        data = json.dumps(doc, sort_keys=True).encode("utf-8")
        path = self.path(fingerprint, scope)
        tmp = None
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            with self._lock():
                fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=self.dir)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, path)
                tmp = None
        except Exception as exc:
            self.stats.bump("disk_cache_errors")
            log.warning("disk cache: cannot write %s (%s); the lowering is not cached", path, exc)
            return False
        finally:
            if tmp is not None:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
        self.stats.bump("disk_cache_writes")
        log.debug("disk cache write: %s", path)
        self._writes += 1
        if self._writes % CAP_CHECK_EVERY == 1 or CAP_CHECK_EVERY <= 1:
            self.enforce_cap()
        return True

    def enforce_cap(self) -> int:
        """Prune the whole root down to :data:`PRUNE_TO` of the cap when it is over the cap; returns the
        number of entries deleted (errors are counted and logged, never raised)."""
        cap = self.max_bytes
        if cap is None:
            return 0
        try:
            if scan(self.root).total_bytes <= cap:
                return 0
            result = prune(self.root, max_bytes=int(cap * PRUNE_TO))
        except Exception as exc:
            self.stats.bump("disk_cache_errors")
            log.warning("disk cache: cannot prune %s (%s)", self.root, exc)
            return 0
        log.debug("disk cache over %d bytes: pruned %d entries", cap, result.removed)
        return result.removed

    def remove(self, fingerprints: Iterable[str] | None = None) -> int:
        """Delete every entry of this contract (``fingerprints`` None) or those of the given programs."""
        if not self.dir.is_dir():
            return 0
        n = 0
        wanted = None if fingerprints is None else set(fingerprints)
        try:
            with self._lock():
                for path in self.dir.glob("*.json"):
                    if path.name.startswith(".tmp-"):
                        continue
                    if wanted is None or path.name.split("-", 1)[0] in wanted:
                        path.unlink(missing_ok=True)
                        n += 1
        except Exception as exc:
            self.stats.bump("disk_cache_errors")
            log.warning("disk cache: cannot remove entries in %s (%s)", self.dir, exc)
        return n

    def entries(self) -> list[Path]:
        return sorted(p for p in self.dir.glob("*.json") if not p.name.startswith(".tmp-")) if self.dir.is_dir() else []


# ---- the whole root: scan, prune, clear (``vyre cache``) --------------------------------------
@dataclass(frozen=True)
class Entry:
    path: Path
    size: int
    mtime: float


@dataclass
class Summary:
    """What :func:`scan` found: every entry of every contract directory under ``root``."""

    root: Path
    entries: list[Entry] = field(default_factory=list)
    dirs: dict[str, list[Entry]] = field(default_factory=dict)  # directory name -> its entries

    @property
    def total_bytes(self) -> int:
        return sum(e.size for e in self.entries)

    def oldest(self) -> float | None:
        return min((e.mtime for e in self.entries), default=None)

    def newest(self) -> float | None:
        return max((e.mtime for e in self.entries), default=None)


@dataclass(frozen=True)
class PruneResult:
    removed: int
    freed_bytes: int
    kept: int
    kept_bytes: int


def _dirs(root: Path) -> Iterator[Path]:
    if root.is_dir():
        yield from sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith(DIR_PREFIX))


def _dir_entries(d: Path) -> list[Entry]:
    out = []
    for p in d.glob("*.json"):
        if p.name.startswith(".tmp-"):
            continue
        try:
            st = p.stat()
        except FileNotFoundError:  # deleted meanwhile
            continue
        out.append(Entry(p, st.st_size, st.st_mtime))
    return sorted(out, key=lambda e: e.path.name)


def scan(root: Path | str) -> Summary:
    """Every entry under ``root`` (each contract directory), with size and modification time."""
    summary = Summary(Path(root))
    for d in _dirs(summary.root):
        entries = _dir_entries(d)
        summary.dirs[d.name] = entries
        summary.entries.extend(entries)
    return summary


def _dir_lock(d: Path) -> filelock.FileLock:
    return file_lock(d / ".lock", timeout=LOCK_TIMEOUT_S)


def _delete(victims: list[Entry]) -> tuple[int, int]:
    """Delete entries, each directory's under its lock, skipping any rewritten since it was scanned."""
    by_dir: dict[Path, list[Entry]] = {}
    for e in victims:
        by_dir.setdefault(e.path.parent, []).append(e)
    removed = freed = 0
    for d, entries in by_dir.items():
        with _dir_lock(d):
            for e in entries:
                try:
                    if e.path.stat().st_mtime != e.mtime:
                        continue  # written or used again meanwhile: keep it
                    e.path.unlink()
                except FileNotFoundError:
                    continue
                removed += 1
                freed += e.size
    return removed, freed


def _remove_stale_tmp(root: Path, now: float) -> None:
    for d in _dirs(root):
        for p in d.glob(".tmp-*"):
            try:
                if now - p.stat().st_mtime > STALE_TMP_S:
                    p.unlink()
            except OSError:
                pass


def prune(root: Path | str, *, max_age_s: float | None = None, max_bytes: int | None = None,
          now: float | None = None) -> PruneResult:
    """Delete the entries under ``root`` unused for more than ``max_age_s`` seconds, then the least
    recently used ones until the rest takes at most ``max_bytes`` (either may be None), and crashed
    writers' temp files older than an hour. Takes each directory's lock; never deletes a lock file."""
    root = Path(root)
    now = time.time() if now is None else now
    summary = scan(root)
    entries = sorted(summary.entries, key=lambda e: e.mtime)  # least recently used first
    def too_old(e: Entry) -> bool:
        return max_age_s is not None and now - e.mtime > max_age_s

    victims = [e for e in entries if too_old(e)]
    rest = [e for e in entries if not too_old(e)]
    if max_bytes is not None:
        total = sum(e.size for e in rest)
        k = 0
        while k < len(rest) and total > max_bytes:
            total -= rest[k].size
            k += 1
        victims += rest[:k]
        rest = rest[k:]
    removed, freed = _delete(victims)
    _remove_stale_tmp(root, now)
    kept = len(entries) - removed
    return PruneResult(removed, freed, kept, summary.total_bytes - freed)


def clear(root: Path | str) -> PruneResult:
    """Delete every entry under ``root`` (each directory under its lock; the directories and their lock
    files stay, so a process waiting on a lock keeps a valid one)."""
    summary = scan(root)
    removed, freed = _delete(summary.entries)
    return PruneResult(removed, freed, len(summary.entries) - removed, summary.total_bytes - freed)


__all__ = ["DiskCache", "default_root", "default_max_bytes", "lowered_to_payload", "payload_to_lowered", "scan",
           "contract_dir_name", "prune", "clear", "Summary", "Entry", "PruneResult", "ENV_VAR", "MAX_ENV_VAR",
           "DEFAULT_MAX_MB"]
