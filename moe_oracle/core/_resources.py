"""Where the shipped data lives: table directories inside the package, schemas beside it.

In a wheel the schemas are installed as ``moe_oracle/schemas/``; in a source
checkout (editable install, tests) they are the top-level ``schemas/`` folder.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["PACKAGE_VERSION", "examples_dir", "package_dir", "runtime_table_dirs", "schema_dir", "table_dirs"]


PACKAGE_VERSION = "0.1.0"
"""This package's own version (``moe_oracle.__version__``; pyproject.toml says the same)."""


def package_dir() -> Path:
    """The installed ``moe_oracle`` package directory (this module lives in ``moe_oracle/core/``)."""
    return Path(__file__).resolve().parent.parent


def schema_dir() -> Path:
    inside = package_dir() / "schemas"
    if inside.is_dir():
        return inside
    beside = package_dir().parent / "schemas"
    if beside.is_dir():
        return beside
    raise FileNotFoundError(f"moe_oracle schemas not found in {inside} or {beside}: broken installation")


def examples_dir() -> Path:
    """Shipped example model configs (``examples/models`` in a checkout, ``moe_oracle/examples/models`` in a wheel)."""
    for base in (package_dir() / "examples", package_dir().parent / "examples"):
        if (base / "models").is_dir():
            return base / "models"
    raise FileNotFoundError("moe_oracle example models not found: broken installation")


def table_dirs() -> tuple[Path, Path, Path]:
    """(kernels, prepare_finalize, rules) directories of the embedded catalog."""
    base = package_dir()
    return base / "kernels", base / "prepare_finalize", base / "rules"


def runtime_table_dirs() -> tuple[Path, Path, Path]:
    """(kernels, prepare_finalize, rules) directories of the runtime table set (what our runtime builds)."""
    base = package_dir() / "runtime_tables"
    return base / "kernels", base / "prepare_finalize", base / "rules"
