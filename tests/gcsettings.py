"""Garbage-collector settings of the test suites and their benchmarks.

The suites allocate millions of short-lived records (Decisions, failure records, compiled table
sets); with CPython's default young-generation threshold (700 allocations) the collector runs after
a few microseconds of work each time and keeps re-scanning the long-lived catalogs. Collecting
less often (and freezing what is loaded at start) changes no result, only when memory is reclaimed.
"""

from __future__ import annotations

import gc

THRESHOLDS = (50_000, 20, 20)


def tune() -> None:
    """Freeze the objects alive now and raise the collection thresholds (idempotent)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*THRESHOLDS)
