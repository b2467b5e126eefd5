"""What a differential run reached: positive selections per (family, experts class, backend
member), the all2all backends with a positive selection, and the kernels of the release's tables
no deployment selected (issue 25: independent draws leave whole regions unreached).

Reads only the run's records (both sides' answers) and the release's view of the tables; imports
no vLLM. The kernels no deployment of the CPU harness can make vLLM select are
:data:`UNREACHABLE`, each with its reason; the report names them apart from the unreached ones.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterable, Mapping

from ..core.vocab import All2AllBackend

__all__ = ["Coverage", "UNREACHABLE", "all2all_used", "coverage"]

_RANK_LOCAL = ("allgather_reducescatter",)

UNREACHABLE: Mapping[str, str] = {
    "cpu_fp8_w8a8": (
        "needs a CPU with native AMX-FP8: vLLM 0.31.0-0.34.0 P/experts/cpu_moe.py "
        "CPUExpertsFp8W8A8._supports_current_device asks its compiled extension (vllm/_cpu_ops.py "
        "cpu_has_amx_fp8); no CPU of the hardware catalog has it, so our field cpu_amx_fp8 is always "
        "false and the harness's stand-in for the query answers false"
    ),
    "lut_b_sm107": (
        "needs vLLM's compiled _moe_C op lut_b_moe_gemm (vLLM 0.34.0 vllm/_custom_ops.py "
        "lut_b_moe_gemm_supported), which the released wheel does not contain "
        "(tests/differential/test_release_sources.py), so no deployment of a released vLLM runs it: "
        "our constraint lut_b_sm107.compiled_op refuses every device, and the harness, which loads no "
        "compiled extension, answers the query false"
    ),
}
"""vLLM kernels of the tables no deployment of the harness can reach, and why (the guided sampler,
:mod:`.guided`, reaches every other one)."""


def all2all_used(dep: Any) -> str | None:
    """The all2all backend ``dep``'s layer dispatches through: ``passthrough`` under EP in any
    topology (vLLM 0.34.0 P/config.py ``use_passthrough_all2all`` is not gated on the all2all
    kernels), the others under EP with more than one DP rank (``use_all2all_kernels``); ``None``:
    none (the rank-local allgather/reduce-scatter is no all2all kernel)."""
    if not dep.use_ep:
        return None
    if dep.all2all_backend == "passthrough":
        return "passthrough"
    if dep.dp_size > 1 and dep.all2all_backend not in _RANK_LOCAL:
        return dep.all2all_backend
    return None


@dataclass(frozen=True)
class Coverage:
    """Coverage of one release's run.

    Attributes:
        selected: (family, experts class, backend member) -> agreeing positive selections.
        all2all: all2all backend -> agreeing positive selections where it dispatches (EP with DP > 1).
        unreached_kernels: ids of the release's vLLM kernels (our tables) no agreeing selection
            chose, other than the :data:`UNREACHABLE` ones.
        unreached_all2all: all2all backends with no agreeing positive selection.
        unreachable: the release's kernels of :data:`UNREACHABLE` no agreeing selection chose, with why.
    """

    selected: Mapping[tuple[str, str, str], int]
    all2all: Mapping[str, int]
    unreached_kernels: tuple[str, ...]
    unreached_all2all: tuple[str, ...]
    unreachable: Mapping[str, str] = field(default_factory=dict)

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
            "unreachable": dict(self.unreachable),
        }

    def lines(self) -> list[str]:
        """The report: the triples, the unreached kernels and all2all backends, and each
        unreachable kernel as ``unreachable: reason``."""
        out = [f"coverage: {len(self.selected)} (family, class, backend) triples over {sum(self.selected.values())} agreeing selections; "
               f"all2all without a selection: {list(self.unreached_all2all) or 'none'}; "
               f"{len(self.unreached_kernels)} vLLM kernels of the tables never selected: {list(self.unreached_kernels) or 'none'}"]
        out += [f"  {k}: unreachable: {why}" for k, why in self.unreachable.items()]
        return out


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
        used = all2all_used(r.case)
        if used is not None:
            a2a[used] += 1
    vllm_kernels = sorted(e.id for e in catalog.experts if e.provider == "vllm")
    unreached = tuple(k for k in vllm_kernels if k not in kernels and k not in UNREACHABLE)
    unreachable = {k: UNREACHABLE[k] for k in vllm_kernels if k not in kernels and k in UNREACHABLE}
    every_a2a = [b.value for b in All2AllBackend if b.value not in _RANK_LOCAL]
    return Coverage(dict(selected), dict(a2a), unreached, tuple(b for b in every_a2a if b not in a2a), MappingProxyType(unreachable))
