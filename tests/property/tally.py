"""Counts of what the property and fuzz tests tried, reported at the end of the session.

Strategies bump ``configs`` for every (MoEConfig, Environment) pair they generate; fuzz
tests bump ``bad inputs: <door>`` for every malformed input they feed a loader. tests/conftest.py
prints the totals in pytest's terminal summary (under pytest-xdist, each worker's counts are
merged into the controller's first) and writes them as JSON to ``$MOE_ORACLE_TEST_COUNTS`` when
that is set (CI).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any, Mapping

__all__ = ["bump", "merge", "report_lines", "snapshot", "terminal_summary", "write_json"]

_COUNTS: Counter[str] = Counter()
_written = False
_reported = False


def bump(what: str, n: int = 1) -> None:
    """Add ``n`` to counter ``what`` (``"configs"``, ``"bad inputs: tables"`` ...)."""
    _COUNTS[what] += n


def merge(counts: Mapping[str, int]) -> None:
    """Add another process's counters (a pytest-xdist worker's :func:`snapshot`)."""
    _COUNTS.update(counts)


def snapshot() -> Mapping[str, int]:
    return dict(_COUNTS)


def report_lines(prefix: str) -> list[str]:
    """One line per counter whose name starts with ``prefix``, then their total."""
    items = sorted((k, v) for k, v in _COUNTS.items() if k.startswith(prefix))
    if not items:
        return []
    lines = [f"{k}: {v}" for k, v in items]
    if len(items) > 1:
        lines.append(f"{prefix.rstrip(': ')} (total): {sum(v for _, v in items)}")
    return lines


def terminal_summary(terminalreporter: Any, profile: str) -> None:
    """Print every counter once per session and write the JSON file."""
    global _reported
    if _reported:
        return
    _reported = True
    lines = [f"generated {line}" for line in report_lines("configs")] + [f"tried {line}" for line in report_lines("bad inputs")]
    if lines:
        terminalreporter.write_sep("-", f"moe_oracle property and fuzz tests (hypothesis profile {profile})")
        for line in lines:
            terminalreporter.write_line(line)
    write_json()


def write_json() -> None:
    """Write every counter to ``$MOE_ORACLE_TEST_COUNTS`` (merged with what is there), once per session."""
    global _written
    target = os.environ.get("MOE_ORACLE_TEST_COUNTS")
    if not target or _written:
        return
    _written = True
    try:
        with open(target, encoding="utf-8") as handle:
            merged = Counter(json.load(handle))
    except (OSError, ValueError):
        merged = Counter()
    merged.update(_COUNTS)
    with open(target, "w", encoding="utf-8") as handle:
        json.dump(dict(sorted(merged.items())), handle, indent=2)
