"""Every ``moe_backend`` value a hint names is one the release's KernelConfig accepts.

breakit18 finding 5: hints said "reaches this one only by moe_backend=flashinfer_trtllm_afp8" and
"request it with moe_backend=moonep", names vLLM 0.29.0-0.34.0 vllm/config/kernel.py MoEBackend does
not hold. The accepted names come from the tables (``Catalog.accepted_names``), not from this file.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

import pytest

from moe_oracle.core.oracle import default_catalog

_NAMED = re.compile(r"(?:moe_backend=|--moe-backend )([a-z0-9_]+(?:\|[a-z0-9_]+)*)")
_TEXT_FIELDS = ("hint", "reason", "label", "notes")


def _texts(value, seen):
    """Every hint-like string reachable from ``value`` (the view's own records, not its source)."""
    if id(value) in seen or value is None or isinstance(value, (int, float, bool, bytes)):
        return
    seen.add(id(value))
    if dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            if f.name == "source":
                continue
            item = getattr(value, f.name)
            if isinstance(item, str):
                if f.name in _TEXT_FIELDS:
                    yield item
            else:
                yield from _texts(item, seen)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _texts(item, seen)
    elif isinstance(value, (tuple, list, frozenset, set)):
        for item in value:
            yield from _texts(item, seen)


CATALOG = default_catalog()
RELEASES = [str(r.version) for r in CATALOG.engine.releases]


@pytest.mark.parametrize("release", RELEASES)
def test_hints_name_only_moe_backend_values_the_release_accepts(release):
    view = CATALOG.for_version(release)
    accepted = view.accepted_names
    assert accepted, "the tables declare the release's accepted moe_backend names"
    texts = list(_texts(view, set()))
    assert any("moe_backend=" in t for t in texts), "the walk reaches the hints"
    bad = sorted({(name, t[:160]) for t in texts for m in _NAMED.finditer(t) for name in m.group(1).split("|") if name not in accepted})
    assert not bad, bad


def test_moonep_names_its_all2all_backend():
    view = CATALOG.for_version("0.33.0")
    hints = [c.hint for o in view.orders for b, c in o.excluded.items() if b == "moonep"]
    assert hints and all("--all2all-backend moonep" in h for h in hints)
