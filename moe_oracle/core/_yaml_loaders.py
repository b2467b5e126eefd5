"""The YAML loaders behind :func:`moe_oracle.core.tables.safe_load` and
:func:`~moe_oracle.core.tables.safe_load_generated`.

A module of their own because they subclass PyYAML's loaders: importing :mod:`yaml` (its reader,
resolver and constructor build their regular expressions at import, ~12 ms) is paid where a YAML
document is read, not by every command that imports :mod:`moe_oracle.core.tables` for its caches.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["UniqueKeyLoader"]


class _RefusesDuplicateKeys:
    """Mixin for a safe loader: a mapping that repeats a key is an error (plain YAML keeps the last one)."""

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)  # type: ignore[attr-defined]
                try:
                    first = seen.get(key)
                except TypeError:
                    continue  # an unhashable key: the base constructor reports it
                if first is not None:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark, f"found duplicate key {key!r} (first at line {first + 1})", key_node.start_mark
                    )
                seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)  # type: ignore[misc, no-any-return]


class UniqueKeyLoader(_RefusesDuplicateKeys, yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a mapping repeating a key (plain YAML keeps the last one).

    Keys brought in by a merge (``<<: *anchor``) may be overridden, as YAML specifies.

    >>> from moe_oracle.core.tables import safe_load
    >>> try:
    ...     safe_load("device: a\\nparallel: {}\\ndevice: b\\n")
    ... except yaml.YAMLError as exc:
    ...     print(exc.problem, "at line", exc.problem_mark.line + 1)
    found duplicate key 'device' (first at line 1) at line 3
    """


# libyaml's parser under the same safe constructor, where PyYAML was built with it: ~10x faster
# on the large generated facts files, whose error messages nobody reads (user input keeps the
# pure-Python loader and its messages).
_FastUniqueKeyLoader: type = type("_FastUniqueKeyLoader", (_RefusesDuplicateKeys, yaml.CSafeLoader), {}) if getattr(yaml, "__with_libyaml__", False) else UniqueKeyLoader
