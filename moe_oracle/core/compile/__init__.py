"""The table compilers (:mod:`.tableset`: ``compile_set``, ``COMPILERS``; one module per table kind;
:mod:`.link`, the per-release view).

The package itself imports nothing: a compiled catalog answered from the cache holds a reference
to :func:`.link.link` (its linker), and unpickling it must not load every compiler (their imports
are a measurable part of a warm ``select``). The names below are loaded on first use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["COMPILERS", "ENGINE_REQUIRED", "RUNTIME_KINDS", "compile_set", "versioned_items"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import tableset

        return getattr(tableset, name)
    raise AttributeError(f"module 'moe_oracle.core.compile' has no attribute {name!r}")
