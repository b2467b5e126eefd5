"""Load an engine or runtime table set: read (schema-checked, cached), compile, link, cache.

The records live in :mod:`moe_oracle.core.catalog`; their compilers in
:mod:`moe_oracle.core.compile`; this module puts the two together, so neither imports the other's
loader.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from . import catalog_cache
from ._resources import package_dir, runtime_table_dirs, schema_dir, table_dirs
from .catalog import Catalog, CompiledTables
from .errors import TableError
from .tables import Schemas, TableFile, cache_dir, read_tables_cached, table_set_key

__all__ = ["compile_tables", "default_catalog", "default_runtime_catalog", "load_catalog", "load_runtime_catalog"]


def compile_tables(files: Sequence[TableFile], base: CompiledTables | None = None) -> Catalog:
    """Compile schema-valid table files; return the view of the newest modelled release.

    Files are processed in sorted path order whatever order they are given in.

    Raises:
        TableError: every semantic problem found, at once.
    """
    from .compile import tableset  # compiled only when no cached catalog answers (start-up)

    compiled = tableset.compile_set(files, base)
    return compiled.view(compiled.engine.newest.version)


def _read(directories: Sequence[Path] | None, defaults: Sequence[Path], schemas: Schemas | None) -> list[TableFile]:
    dirs = list(directories) if directories is not None else list(defaults)
    root = package_dir() if directories is None else None
    files, issues = read_tables_cached(dirs, schemas, root)
    if issues:
        raise TableError(issues)
    return files


def load_catalog(directories: Sequence[Path] | None = None, schemas: Schemas | None = None) -> Catalog:
    """Load, validate and compile an engine table set (default: the tables shipped in the package).

    Returns the view of the newest modelled engine release; ``catalog.for_version("0.31.0")``
    gives another release's.

    Raises:
        TableError: every schema and semantic problem, with file, entry id and JSON path.
    """
    dirs = list(directories) if directories is not None else list(table_dirs())
    location = cache_dir() if schemas is None else None  # validators given: validate and compile afresh
    key = None
    if location is not None:
        tables_key = table_set_key(dirs, schema_dir(), package_dir() if directories is None else None)
        if tables_key is not None:
            key = hashlib.sha256(f"{tables_key}:{catalog_cache.code_fingerprint()}".encode()).hexdigest()
            cached = catalog_cache.load(location, key)
            if cached is not None:
                return cached
    catalog = compile_tables(_read(directories, table_dirs(), schemas))
    if location is not None and key is not None and table_set_key(dirs, schema_dir(), package_dir() if directories is None else None) == tables_key:
        catalog_cache.store(location, key, catalog)  # only if no table changed while it was read (see read_tables_cached)
    return catalog


def load_runtime_catalog(engine: Catalog, directories: Sequence[Path] | None = None, schemas: Schemas | None = None) -> Catalog:
    """Load the runtime table set (default: ``moe_oracle/runtime_tables``) on top of ``engine``'s tables.

    Runtime entries that ``implements`` an engine kernel inherit its checks in every view.

    Raises:
        TableError: every schema and semantic problem of the runtime tables.
    """
    assert engine.source is not None
    return compile_tables(_read(directories, runtime_table_dirs(), schemas), base=engine.source)


# The shipped catalogs live here, not in .oracle, so that a pickled Decision (.decision) can name
# the view it was evaluated on instead of carrying it: .oracle imports .decision.


@lru_cache(maxsize=1)
def default_catalog() -> Catalog:
    """The engine tables shipped with the package (immutable, so caching it shares no mutable state).

    Raises:
        TableError: the shipped tables are invalid (a packaging bug).
    """
    return load_catalog()


@lru_cache(maxsize=1)
def default_runtime_catalog() -> Catalog:
    """The runtime tables shipped with the package, on top of :func:`default_catalog`.

    Raises:
        TableError: the shipped tables are invalid (a packaging bug).
    """
    return load_runtime_catalog(default_catalog())
