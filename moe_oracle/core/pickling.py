"""Pickling records that hold read-only mappings (``types.MappingProxyType``), which pickle
cannot name: the compiled catalog (:mod:`moe_oracle.core.catalog_cache`) and a
:class:`~moe_oracle.core.decision.Decision`, which carries the catalog view it was evaluated on.

:class:`Pickler` rebuilds each mapping proxy over a plain ``dict`` copy through its own dispatch
table; the process-wide :mod:`copyreg` table is left alone, so no other code's pickling changes.
"""

from __future__ import annotations

import io
import pickle
from types import MappingProxyType
from typing import Any

__all__ = ["Pickler", "dumps"]


def _mapping_proxy(items: dict[Any, Any]) -> MappingProxyType:
    return MappingProxyType(items)


class Pickler(pickle.Pickler):
    """A pickler that writes a ``MappingProxyType`` as the proxy over a copy of its mapping."""

    dispatch_table = {MappingProxyType: lambda m: (_mapping_proxy, (dict(m),))}


def dumps(obj: Any, protocol: int = pickle.HIGHEST_PROTOCOL) -> bytes:
    """``pickle.dumps(obj)`` through :class:`Pickler`; ``pickle.loads`` reads it back."""
    buffer = io.BytesIO()
    Pickler(buffer, protocol=protocol).dump(obj)
    return buffer.getvalue()
