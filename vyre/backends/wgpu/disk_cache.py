"""On-disk cache of lowered programs (WGSL + binding metadata), shared by every process of a user.

wgpu-py offers no pipeline binary cache to rely on, so what persists is the lowering: a hit
skips the validator and the lowering, and the backend only builds the GPU pipeline.

Where: ``VYRE_CACHE_DIR`` if set (``off`` disables the cache), else
``platformdirs.user_cache_dir("vyre")``. Entries live in ``<root>/wgsl-<contract digest>/``,
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
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import filelock

    from ...lower import LoweredProgram

ENV_VAR = "VYRE_CACHE_DIR"
FORMAT = "vyre-wgsl-cache"
VERSION = 1
LOCK_TIMEOUT_S = 10.0

log = logging.getLogger("vyre.cache")
if not any(isinstance(h, logging.NullHandler) for h in logging.getLogger("vyre").handlers):
    logging.getLogger("vyre").addHandler(logging.NullHandler())


class Counters(Protocol):
    """Where the cache counts hits, misses, writes, corrupt entries and errors (the backend's Stats)."""

    def bump(self, key: str, n: int = 1) -> None: ...


def default_root() -> Path | None:
    """The cache root from ``VYRE_CACHE_DIR`` (None when it is ``off``) or the user cache dir."""
    env = os.environ.get(ENV_VAR, "").strip()
    if env.lower() == "off":
        return None
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("vyre"))


def _digest(text: str, n: int = 16) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


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
    }


def payload_to_lowered(payload: dict[str, Any]) -> LoweredProgram:
    """The LoweredProgram of a payload; raises (KeyError, ValueError, ...) on anything malformed."""
    from ...ir.types import Access, DataType
    from ...lower import BindingInfo, LoweredProgram

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
    )


class DiskCache:
    """Lowered programs on disk (see the module docstring). Counters go to ``stats`` (a Stats dict)."""

    def __init__(self, root: Path | str, contract: str, stats: Counters):
        self.root = Path(root)
        self.contract = contract
        self.dir = self.root / f"wgsl-{_digest(contract)}"
        self.stats = stats

    @classmethod
    def from_env(cls, contract: str, stats: Counters) -> DiskCache | None:
        root = default_root()
        return None if root is None else cls(root, contract, stats)

    def path(self, fingerprint: str, scope: str) -> Path:
        return self.dir / f"{fingerprint}-{_digest(scope)}.json"

    def _lock(self) -> filelock.FileLock:
        import filelock

        return filelock.FileLock(str(self.dir / ".lock"), timeout=LOCK_TIMEOUT_S)

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
        return True

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


__all__ = ["DiskCache", "default_root", "lowered_to_payload", "payload_to_lowered", "ENV_VAR"]
