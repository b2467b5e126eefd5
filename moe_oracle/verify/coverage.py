"""What a differential run reached: positive selections per (family, experts class, backend
member), the all2all backends with a positive selection, and the kernels of the release's tables
no deployment selected (issue 25: independent draws leave whole regions unreached).

Reads only the run's records (both sides' answers) and the release's view of the tables; imports
no vLLM.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..core.vocab import All2AllBackend

__all__ = ["Coverage", "coverage"]

_RANK_LOCAL = ("allgather_reducescatter",)


@dataclass(frozen=True)
class Coverage:
    """Coverage of one release's run.

    Attributes:
        selected: (family, experts class, backend member) -> agreeing positive selections.
        all2all: all2all backend -> agreeing positive selections where it dispatches (EP with DP > 1).
        unreached_kernels: ids of the release's vLLM kernels (our tables) no agreeing selection chose.
        unreached_all2all: all2all backends with no agreeing positive selection.
    """

    selected: Mapping[tuple[str, str, str], int]
    all2all: Mapping[str, int]
    unreached_kernels: tuple[str, ...]
    unreached_all2all: tuple[str, ...]

    def below(self, n: int) -> dict[tuple[str, str, str], int]:
        """The reached (family, class, member) triples selected fewer than ``n`` times."""
        return {k: v for k, v in self.selected.items() if v < n}

    def summary(self) -> dict[str, Any]:
        return {
            "triples": len(self.selected),
            "selections": sum(self.selected.values()),
            "all2all_reached": sorted(self.all2all),
            "unreached_all2all": list(self.unreached_all2all),
            "unreached_kernels": list(self.unreached_kernels),
        }


def coverage(records: Iterable[Any], catalog: Any) -> Coverage:
    """The coverage of ``records`` (:class:`.run.Record`) against ``catalog`` (the release's view)."""
    selected: Counter[tuple[str, str, str]] = Counter()
    a2a: Counter[str] = Counter()
    kernels: set[str] = set()
    for r in records:
        if not (r.agree and r.vllm.status == "ok"):
            continue
        selected[(r.case.family, r.vllm.experts or "", r.vllm.backend or "")] += 1
        kernels.add(r.ours.detail)
        dep = r.case
        if dep.use_ep and dep.dp_size > 1 and dep.tp_size * dep.dp_size > 1:
            a2a[dep.all2all_backend] += 1
    vllm_kernels = sorted(e.id for e in catalog.experts if e.provider == "vllm")
    unreached = tuple(k for k in vllm_kernels if k not in kernels)
    every_a2a = [b.value for b in All2AllBackend if b.value not in _RANK_LOCAL]
    return Coverage(dict(selected), dict(a2a), unreached, tuple(b for b in every_a2a if b not in a2a))
