"""The shipped table files as bytes, and the strategy of hostile edits of one of them."""

from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import strategies as st

from moe_oracle.core._resources import table_dirs
from tests.fuzz.hostile import Bad, byte_edits, serialize, tree_edits
from tests.property import tally

__all__ = ["FOCUS", "PATHS", "SHIPPED", "bad_tables"]

SHIPPED: dict[str, bytes] = {f"{d.name}/{p.name}": p.read_bytes() for d in table_dirs() for p in sorted(d.glob("*.yaml"))}
PARSED = {path: yaml.safe_load(raw) for path, raw in SHIPPED.items()}
PATHS = sorted(SHIPPED)


def write_shipped(root: Path) -> list[Path]:
    """Copy the shipped tables under ``root``; returns the three table directories."""
    for path, raw in SHIPPED.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(raw)
    return table_dirs_under(root)


def table_dirs_under(root: Path) -> list[Path]:
    return [root / "kernels", root / "prepare_finalize", root / "rules"]
# Keys the compiler reads from table documents: the tree edits set them to wrong values too.
FOCUS = ("kind", "id", "backend", "interface", "activation_format", "platforms", "packages", "env", "supports", "features", "constraints", "field", "if",
         "reason", "when", "kernels", "backends", "move", "to", "fallback", "orders", "dispatch", "variables", "type", "default", "explicit", "request", "applies_to")


@st.composite
def bad_tables(draw: st.DrawFn) -> tuple[str, Bad]:
    """(display path, hostile bytes) for one table file."""
    path = draw(st.sampled_from(PATHS), label="file")
    if draw(st.booleans()):
        how, doc = draw(tree_edits(PARSED[path], focus=FOCUS))
        raw = serialize(doc, as_json=False)
        bad = Bad(how, raw)
        if draw(st.integers(0, 3)) == 0:
            more = draw(byte_edits(raw))
            bad = Bad(f"{how}; then {more.description}", more.raw)
    else:
        bad = draw(byte_edits(SHIPPED[path]))
    tally.bump("bad inputs: tables")
    return path, bad
