"""The compiled-catalog cache: a compiled :class:`~moe_oracle.core.catalog.Catalog`, pickled, keyed by
the bytes of its tables and schemas and by the code that compiled it.

Compiling the shipped tables (checks, value tables, gate buckets, the newest release's view) takes
~100 ms on a 2-core machine, a third of a CLI call; unpickling the result takes ~20 ms. The key is
the sha256 of the validated-table cache key (every table and schema byte,
:func:`moe_oracle.core.tables.table_set_key`) and of the path, size and modification time of every
``.py`` file of this package (as Python's own bytecode cache trusts them) and of the interpreter's
and ``packaging``'s versions (the pickle holds ``packaging`` specifiers and versions), so editing a
table, a schema or the compiler, or sharing the cache directory between environments, misses. The entry's first line is the sha256 of the pickle, so a damaged
entry is never loaded.

Trust: the entry lives in the same per-user cache directory as the validated-table cache
(``$MOE_ORACLE_CACHE_DIR``, ``$XDG_CACHE_HOME/moe-oracle`` or ``~/.cache/moe-oracle``) and is
loaded with :mod:`pickle`, so whoever can write that directory can run code as you, exactly as
with Python's ``__pycache__``. ``MOE_ORACLE_NO_CACHE`` set to ``1``, ``true``, ``yes`` or ``on``
(any case) disables it, as does any value not understood (``0``, ``false``, ``no``, ``off`` or
unset leave it on; see
:func:`moe_oracle.core.tables.cache_disabled`). Any failure to read or write
only costs speed.
"""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import packaging

from . import pickling
from ._resources import package_dir

if TYPE_CHECKING:
    from .catalog import Catalog

__all__ = ["code_fingerprint", "load", "store"]

_FORMAT = 1
_KEEP = 8


def code_fingerprint() -> str:
    """sha256 over the interpreter's and ``packaging``'s versions and (relative path, size, mtime)
    of every ``.py`` file of the package."""
    root = package_dir()
    digest = hashlib.sha256(f"moe-oracle-compiled-{_FORMAT};{sys.version};packaging {packaging.__version__};".encode())
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                st = os.stat(path)
                digest.update(f"{os.path.relpath(path, root)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return digest.hexdigest()


def _path(location: Path, key: str) -> Path:
    return location / f"catalog-{key}.pickle"


def load(location: Path, key: str) -> "Catalog | None":
    """The catalog stored under ``key``, or ``None`` (no entry, or one that fails its digest)."""
    try:
        with open(_path(location, key), "rb") as handle:
            digest = handle.readline().strip().decode("ascii")
            body = handle.read()
    except (OSError, UnicodeDecodeError):  # unreadable, or a first line that is no digest
        return None
    if digest != hashlib.sha256(body).hexdigest():
        return None
    # The entry is ~40,000 objects, none of them garbage: the collections their allocation would
    # trigger (each one over every object the process holds) cost twice the unpickling itself.
    enabled = gc.isenabled()
    gc.disable()
    try:
        catalog = pickle.loads(body)
    except Exception:  # noqa: BLE001 - an entry written by other code is a miss, never an error
        return None
    finally:
        if enabled:
            gc.enable()
    if gc.get_freeze_count() == 0:
        # Then the young-generation collections would walk all of them twice (~30 ms) only to
        # move them to the oldest generation, where a long-lived value belongs: put them there
        # directly (freeze then unfreeze: every tracked object to the oldest generation; skipped
        # when the process keeps objects frozen, which unfreeze would release).
        gc.freeze()
        gc.unfreeze()
    return catalog


def store(location: Path, key: str, catalog: "Catalog") -> None:
    """Write ``catalog`` under ``key`` (atomically; a read-only or full directory is ignored)."""
    body = pickling.dumps(catalog)  # compiled tables hold read-only mappings (MappingProxyType)
    import tempfile  # writing only (a miss); a warm call does not import it (shutil, random)

    try:
        location.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=location, prefix=".catalog-", suffix=".pickle")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(hashlib.sha256(body).hexdigest().encode("ascii") + b"\n" + body)
        os.replace(tmp, _path(location, key))
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return
    _prune(location, keep=_KEEP)


def _prune(location: Path, keep: int) -> None:
    """Remove all but the ``keep`` most recently written entries (each is ~2 MB; a table edit or a
    code change leaves the old one behind)."""
    try:
        entries = sorted(location.glob("catalog-*.pickle"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for old in entries[keep:]:
            old.unlink()
    except OSError:
        pass
