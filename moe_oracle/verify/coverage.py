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

__all__ = ["Coverage", "UNREACHABLE", "all2all_backends", "all2all_used", "coverage", "unreachable"]

_RANK_LOCAL = ("allgather_reducescatter",)

UNREACHABLE: Mapping[str, tuple[frozenset[str] | None, str]] = {
    "cpu_fp8_w8a8": (None, (
        "needs a CPU with native AMX-FP8: vLLM 0.31.0-0.34.0 P/experts/cpu_moe.py "
        "CPUExpertsFp8W8A8._supports_current_device asks its compiled extension (vllm/_cpu_ops.py "
        "cpu_has_amx_fp8); no CPU of the hardware catalog has it, so our field cpu_amx_fp8 is always "
        "false and the harness's stand-in for the query answers false"
    )),
    "lut_b_sm107": (None, (
        "needs vLLM's compiled _moe_C op lut_b_moe_gemm (vLLM 0.34.0 vllm/_custom_ops.py "
        "lut_b_moe_gemm_supported), which the released wheel does not contain "
        "(tests/differential/test_release_sources.py), so no deployment of a released vLLM runs it: "
        "our constraint lut_b_sm107.compiled_op refuses every device, and the harness, which loads no "
        "compiled extension, answers the query false"
    )),
    "aiter_mxfp8": (frozenset({"0.29.0", "0.30.0"}), (
        "needs is_aiter_mxfp8_moe_available() (vLLM 0.29.0-0.30.0 P/experts/aiter_mxfp8_moe.py): "
        "flydsl's is_flydsl_available() and a tuned config file (aiter/configs/model_configs/"
        "minimax_m3_mxfp8_tuned_fmoe.csv) that only AITER builds with ROCm/aiter#3811 ship; the "
        "harness's aiter stand-in has no file tree and its flydsl query raises, so vLLM answers "
        "Mxfp8NativeTritonExperts where our tables (aiter and flydsl present) select "
        "AiterMxfp8Experts: the tables assume such a build, which no package version names"
    )),
}
"""vLLM kernels of the tables no deployment of the harness can make vLLM select, and why: kernel ->
(the releases it holds for, ``None``: every release whose tables have the kernel; the reason).
The guided sampler (:mod:`.guided`) reaches every other one and skips these."""


def unreachable(release: str) -> dict[str, str]:
    """:data:`UNREACHABLE` for ``release``: kernel -> reason.

    >>> sorted(unreachable("0.29.0")), sorted(unreachable("0.34.0"))
    (['aiter_mxfp8', 'cpu_fp8_w8a8', 'lut_b_sm107'], ['cpu_fp8_w8a8', 'lut_b_sm107'])
    """
    return {k: why for k, (releases, why) in UNREACHABLE.items() if releases is None or release in releases}


def all2all_backends(catalog: Any) -> tuple[str, ...]:
    """The all2all backends (other than the rank-local one) ``catalog``'s release accepts: those
    no unconditional start-time rule on ``all2all_backend`` refuses (vLLM's ``All2AllBackend``
    literal of that release: ``moonep`` from 0.31.0, ``passthrough`` from 0.32.0, ``mori`` from
    0.34.0; vLLM 0.29.0-0.34.0 vllm/config/parallel.py)."""
    rules = [c for c in catalog.global_constraints if c.field == "all2all_backend" and not c.condition and not c.deny and c.predicate is not None]
    return tuple(b.value for b in All2AllBackend if b.value not in _RANK_LOCAL and all(c.predicate.test(b.value) for c in rules))


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
        unreachable: the release's kernels of :data:`UNREACHABLE` (for that release) no agreeing
            selection chose, with why.
        unreached_triples: (family, experts class, backend member) triples our tables selected on
            a compared deployment of the run (so the tables can select them) with no agreeing
            positive selection (every such deployment a disagreement or a reviewed divergence),
            other than those of the :data:`UNREACHABLE` kernels.
    """

    selected: Mapping[tuple[str, str, str], int]
    all2all: Mapping[str, int]
    unreached_kernels: tuple[str, ...]
    unreached_all2all: tuple[str, ...]
    unreachable: Mapping[str, str] = field(default_factory=dict)
    unreached_triples: tuple[tuple[str, str, str], ...] = ()

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
            "unreached_triples": [list(t) for t in self.unreached_triples],
            "unreachable": dict(self.unreachable),
        }

    def lines(self) -> list[str]:
        """The report: the triples, the unreached kernels and all2all backends, and each
        unreachable kernel as ``unreachable: reason``."""
        out = [f"coverage: {len(self.selected)} (family, class, backend) triples over {sum(self.selected.values())} agreeing selections "
               f"({len(self.below(2))} selected once; {len(self.unreached_triples)} our tables selected without an agreeing one: {list(self.unreached_triples) or 'none'}); "
               f"all2all without a selection: {list(self.unreached_all2all) or 'none'}; "
               f"{len(self.unreached_kernels)} vLLM kernels of the tables never selected: {list(self.unreached_kernels) or 'none'}"]
        out += [f"  {k}: unreachable: {why}" for k, why in self.unreachable.items()]
        return out


def coverage(records: Iterable[Any], catalog: Any, release: str) -> Coverage:
    """The coverage of ``records`` (:class:`.run.Record`) against ``catalog`` (vLLM ``release``'s view)."""
    selected: Counter[tuple[str, str, str]] = Counter()
    a2a: Counter[str] = Counter()
    kernels: set[str] = set()
    why_not = unreachable(release)
    ours: set[tuple[str, str, str]] = set()
    for r in records:
        # An unreachable kernel (why_not) is one the harness cannot make vLLM select: our
        # selecting it is counted there, not as a triple without an agreeing selection.
        if r.ours.status == "ok" and r.vllm.status != "unsupported" and r.ours.detail not in why_not:
            ours.add((r.case.family, r.ours.experts or "", r.ours.backend or ""))
        if not (r.agree and r.vllm.status == "ok"):
            continue
        selected[(r.case.family, r.vllm.experts or "", r.vllm.backend or "")] += 1
        kernels.add(r.ours.detail)
        used = all2all_used(r.case)
        if used is not None:
            a2a[used] += 1
    vllm_kernels = sorted(e.id for e in catalog.experts if e.provider == "vllm")
    unreached = tuple(k for k in vllm_kernels if k not in kernels and k not in why_not)
    explained = {k: why_not[k] for k in vllm_kernels if k not in kernels and k in why_not}
    return Coverage(dict(selected), dict(a2a), unreached, tuple(b for b in all2all_backends(catalog) if b not in a2a), MappingProxyType(explained),
                    tuple(sorted(ours - set(selected))))
