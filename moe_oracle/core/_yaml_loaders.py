"""The YAML loaders behind :func:`moe_oracle.core.tables.safe_load` and
:func:`~moe_oracle.core.tables.safe_load_generated`.

A module of their own because they subclass PyYAML's loaders: importing :mod:`yaml` (its reader,
resolver and constructor build their regular expressions at import, ~12 ms) is paid where a YAML
document is read, not by every command that imports :mod:`moe_oracle.core.tables` for its caches.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["UniqueKeyLoader", "YamlTooLarge", "bounded_load", "flow_depth"]


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


class YamlTooLarge(ValueError):
    """A YAML document past a bound on its size once its aliases are expanded, or on its nesting."""


def flow_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` outside quoted scalars and comments: an upper bound on
    the document's flow depth (a plain scalar holding a bracket may count, which only errs long).
    PyYAML's pure-Python scanner is quadratic in open flow collections, so this linear scan runs
    before it."""
    depth = deepest = 0
    quote = ""
    comment = False
    for ch in text:
        if comment:
            comment = ch != "\n"
        elif quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "#":
            comment = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
    return deepest


def _expanded_size(root: yaml.Node, limit: int) -> None:
    """Raise :class:`YamlTooLarge` when the composed graph has more than ``limit`` nodes once its
    aliases are expanded, or refers to itself. Linear in the file: each node's expanded size is
    computed once (an alias is the same node object)."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        children = [p for c in node.value for p in (c if isinstance(c, tuple) else (c,))] if isinstance(node.value, list) else []
        if done:
            total = 1 + sum(sizes[id(c)] for c in children)
            if total > limit:
                raise YamlTooLarge(f"expands to more than {limit} YAML values through its aliases (an alias bomb)")
            sizes[key] = total
            open_nodes.discard(key)
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise YamlTooLarge("a YAML anchor refers to itself (a recursive alias)")
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)


def bounded_load(text: str, *, max_nodes: int, max_depth: int) -> Any:
    """:class:`UniqueKeyLoader`'s document, refused (:class:`YamlTooLarge`) before it is built when
    it nests flow collections deeper than ``max_depth`` or holds more than ``max_nodes`` values
    once its aliases are expanded (a few hundred bytes of anchors expand to millions of values,
    and building them takes minutes and gigabytes).

    Raises:
        YamlTooLarge: past a bound.
        yaml.YAMLError: not valid YAML, or a mapping that repeats a key.
    """
    if flow_depth(text) > max_depth:
        raise YamlTooLarge(f"YAML nesting is too deep (more than {max_depth} levels)")
    loader = UniqueKeyLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node, max_nodes)
        return loader.construct_document(node)
    finally:
        loader.dispose()
