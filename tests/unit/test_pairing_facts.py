"""Our prepare/finalize pairing against the facts of vLLM's ``maybe_make_prepare_finalize``.

vLLM builds the prepare/finalize (P/F) of a layer after selecting its experts, in
``P/all2all_utils.py maybe_make_prepare_finalize`` (P/ = vllm/model_executor/layers/fused_moe/).
It needs process groups, so the differential harness cannot run it; this test states, per
release, which P/F class each dispatch kind gets for each experts interface and activation
format, and which combinations get none (vLLM then fails to build the kernel:
``FusedMoEKernel`` refuses a monolithic/modular mix, the experts constructor a format mismatch),
and checks that our engine tables pair exactly so in that release's view.

The facts are also checked against each release's source, in the differential tier
(tests/differential/test_release_sources.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from moe_oracle.core.loading import load_catalog
from moe_oracle.core.vocab import ActivationFormat

RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0")
SRC = "P/all2all_utils.py maybe_make_prepare_finalize"


@dataclass(frozen=True)
class Fact:
    """In ``releases``, experts of (interface, format) under ``dispatch`` get ``upstream`` (``None``: no P/F).

    ``via`` is the name the function calls (the class, or the factory that returns it);
    ``platform``: the branch holds only there (``None``: any platform the P/F runs on).
    """

    releases: str
    dispatch: str
    interface: str
    format: str
    upstream: str | None
    via: str | None
    source: str
    platform: str | None = None


MOD, MONO, STD, BAT, PAD = "modular", "monolithic", "standard", "batched_experts", "padded_standard"
_ALL2ALL_MODULAR = (
    # dispatch, class, branch, releases
    ("deepep_high_throughput", "DeepEPHTPrepareAndFinalize", "moe.use_deepep_ht_kernels", ">=0.29.0"),
    ("deepep_v2", "DeepEPV2PrepareAndFinalize", "moe.use_deepep_v2_kernels", ">=0.29.0,<0.34.0"),
    ("moonep", "MoonEPPrepareAndFinalize", "moe.use_moonep_kernels", ">=0.31.0"),
    ("mori_high_throughput", "MoriPrepareAndFinalize", "moe.use_mori_kernels", ">=0.29.0,<0.34.0"),
    ("mori_low_latency", "MoriPrepareAndFinalize", "moe.use_mori_kernels", ">=0.29.0,<0.34.0"),
    # 0.34.0 splits the branch: the deprecated names stay MoRI EPv1 (FusedMoEParallelConfig.use_mori_epv1_kernels).
    ("mori_high_throughput", "MoriPrepareAndFinalize", "moe.use_mori_epv1_kernels", ">=0.34.0"),
    ("mori_low_latency", "MoriPrepareAndFinalize", "moe.use_mori_epv1_kernels", ">=0.34.0"),
    # --all2all mori (0.34.0+): dispatch mori_epv1 / mori_epv2 as resolve_mori_all2all resolves it (core/mori.py).
    ("mori_epv1", "MoriPrepareAndFinalize", "moe.use_mori_epv1_kernels", ">=0.34.0"),
    ("mori_epv2", "MoriEPv2PrepareAndFinalize", "moe.use_mori_epv2_kernels", ">=0.34.0"),
    ("flashinfer_nvlink_two_sided", "FlashInferNVLinkTwoSidedPrepareAndFinalize", "moe.use_fi_nvl_two_sided_kernels", ">=0.29.0"),
    ("flashinfer_nvlink_one_sided", "FlashInferNVLinkOneSidedPrepareAndFinalize", "moe.use_fi_nvl_one_sided_kernels", ">=0.29.0"),
)
_ALL2ALL_BATCHED = (
    ("deepep_low_latency", "DeepEPLLPrepareAndFinalize", "moe.use_deepep_ll_kernels"),
    ("nixl_ep", "NixlEPPrepareAndFinalize", "moe.use_nixl_ep_kernels"),
)

FACTS: list[Fact] = [
    # No all2all kernels, one DP rank: make_moe_prepare_and_finalize_no_dp_ep(use_monolithic).
    Fact(">=0.29.0", "none", MOD, STD, "MoEPrepareAndFinalizeNoDPEPModular", "make_moe_prepare_and_finalize_no_dp_ep", f"{SRC}: not use_all2all_kernels, dp_size == 1"),
    Fact(">=0.29.0", "none", MONO, STD, "MoEPrepareAndFinalizeNoDPEPMonolithic", "make_moe_prepare_and_finalize_no_dp_ep", f"{SRC}: not use_all2all_kernels, dp_size == 1 (use_monolithic)"),
    # DP > 1 without expert parallelism, and the allgather_reducescatter all2all: naive DP/EP.
    Fact(">=0.29.0", "allgather_reducescatter", MOD, STD, "MoEPrepareAndFinalizeNaiveDPEPModular", "make_moe_prepare_and_finalize_naive_dp_ep", f"{SRC}: dp_size > 1 without all2all kernels; use_ag_rs_all2all_kernels"),
    Fact(">=0.29.0", "allgather_reducescatter", MONO, STD, "MoEPrepareAndFinalizeNaiveDPEPMonolithic", "make_moe_prepare_and_finalize_naive_dp_ep", f"{SRC}: as above (use_monolithic)"),
    # The opt-in XPU batched path, before the DP check: moe_backend == "batched_triton" on XPU.
    Fact(">=0.29.0", "none", MOD, BAT, "BatchedPrepareAndFinalize", "BatchedPrepareAndFinalize", f"{SRC}: is_xpu() and moe_backend == 'batched_triton'", platform="xpu"),
    Fact(">=0.29.0", "allgather_reducescatter", MOD, BAT, "BatchedPrepareAndFinalize", "BatchedPrepareAndFinalize", f"{SRC}: is_xpu() and moe_backend == 'batched_triton' (DP without expert parallelism)", platform="xpu"),
]
for _dispatch, _cls, _branch, _rel in _ALL2ALL_MODULAR:
    FACTS += [
        Fact(_rel, _dispatch, MOD, STD, _cls, _cls, f"{SRC}: {_branch}"),
        # The all2all branches build modular P/Fs whatever use_monolithic says: FusedMoEKernel then
        # refuses monolithic experts (P/modular_kernel.py "must both be either monolithic or non-monolithic").
        Fact(_rel, _dispatch, MONO, STD, None, None, f"{SRC}: {_branch} (modular only); P/modular_kernel.py FusedMoEKernel"),
        # A standard-format P/F cannot feed batched experts (their constructor needs max_num_tokens).
        Fact(_rel, _dispatch, MOD, BAT, None, None, f"{SRC}: {_branch} returns a standard-format P/F"),
    ]
for _dispatch, _cls, _branch in _ALL2ALL_BATCHED:
    FACTS += [
        Fact(">=0.29.0", _dispatch, MOD, BAT, _cls, _cls, f"{SRC}: {_branch}"),
        Fact(">=0.29.0", _dispatch, MONO, STD, None, None, f"{SRC}: {_branch} (modular only)"),
        Fact(">=0.29.0", _dispatch, MOD, STD, None, None, f"{SRC}: {_branch} returns a batched-format P/F"),
    ]
# vLLM 0.34.0: DeepEP v2 produces PaddedStandard (P/prepare_finalize/deepep_v2.py); the experts format
# must be a superset of the P/F's (P/modular_kernel.py FusedMoEActivationFormat.is_superset, checked in
# FusedMoEExperts.is_supported_config and P/oracle/base.py make_moe_kernel): PaddedStandard experts take
# every Standard P/F too, Standard experts no longer take DeepEP v2.
_V2 = f"{SRC}: moe.use_deepep_v2_kernels (0.34.0 P/prepare_finalize/deepep_v2.py: PaddedStandard)"
FACTS += [
    Fact(">=0.34.0", "deepep_v2", MOD, PAD, "DeepEPV2PrepareAndFinalize", "DeepEPV2PrepareAndFinalize", _V2),
    Fact(">=0.34.0", "deepep_v2", MOD, STD, None, None, _V2 + "; a Standard experts class is not a superset of PaddedStandard"),
    Fact(">=0.34.0", "deepep_v2", MONO, STD, None, None, _V2 + " (modular only)"),
    Fact(">=0.34.0", "deepep_v2", MOD, BAT, None, None, _V2),
    Fact(">=0.34.0", "none", MOD, PAD, "MoEPrepareAndFinalizeNoDPEPModular", "make_moe_prepare_and_finalize_no_dp_ep", f"{SRC}: not use_all2all_kernels, dp_size == 1 (PaddedStandard is a superset of Standard)"),
    Fact(">=0.34.0", "allgather_reducescatter", MOD, PAD, "MoEPrepareAndFinalizeNaiveDPEPModular", "make_moe_prepare_and_finalize_naive_dp_ep", f"{SRC}: dp_size > 1 without all2all kernels (PaddedStandard is a superset of Standard)"),
    Fact(">=0.34.0", "deepep_high_throughput", MOD, PAD, "DeepEPHTPrepareAndFinalize", "DeepEPHTPrepareAndFinalize", f"{SRC}: moe.use_deepep_ht_kernels (PaddedStandard is a superset of Standard)"),
    Fact(">=0.34.0", "deepep_low_latency", MOD, PAD, None, None, f"{SRC}: moe.use_deepep_ll_kernels returns a batched-format P/F"),
    Fact(">=0.34.0", "mori_epv1", MOD, PAD, "MoriPrepareAndFinalize", "MoriPrepareAndFinalize", f"{SRC}: moe.use_mori_epv1_kernels (PaddedStandard is a superset of Standard)"),
    Fact(">=0.34.0", "mori_epv2", MOD, PAD, "MoriEPv2PrepareAndFinalize", "MoriEPv2PrepareAndFinalize", f"{SRC}: moe.use_mori_epv2_kernels (0.34.0 P/prepare_finalize/mori_epv2.py: Standard; PaddedStandard is a superset)"),
]
FACTS += [
    Fact(">=0.29.0", d, MONO, BAT, None, None, f"{SRC}: no monolithic batched P/F exists")
    for d in ("none", "allgather_reducescatter", "deepep_high_throughput", "deepep_low_latency", "deepep_v2", "mori_high_throughput", "nixl_ep")
]


def _view(version: str):
    return load_catalog().for_version(version)


def _ours(view, dispatch: str, interface: str, fmt: str) -> dict[str, frozenset[str]]:
    """P/F upstream class -> the platforms it runs on, among the view's entries serving the combination."""
    out: dict[str, frozenset[str]] = {}
    for pf in view.prepare_finalize:
        # experts of format ``fmt`` take a P/F whose format ``fmt`` is a superset of (vLLM 0.34.0; equality before)
        if pf.interface.value == interface and ActivationFormat(fmt).is_superset(pf.activation_format) and dispatch in pf.dispatch:
            plats = pf.declared.get("platforms") or {}
            out[pf.upstream] = frozenset(plats)
    return out


@pytest.mark.parametrize("release", RELEASES)
def test_our_pairing_follows_vllm(release):
    view = _view(release)
    version = Version(release)
    checked = 0
    for fact in FACTS:
        if version not in SpecifierSet(fact.releases):
            continue
        ours = _ours(view, fact.dispatch, fact.interface, fact.format)
        where = f"vLLM {release} {fact.source}"
        if fact.upstream is None:
            assert not ours, f"{where}: no P/F for {fact.interface} {fact.format} experts under {fact.dispatch}, ours pairs {sorted(ours)}"
        else:
            assert fact.upstream in ours, f"{where}: {fact.interface} {fact.format} experts under {fact.dispatch} get {fact.upstream}; ours {sorted(ours)}"
            if fact.platform is not None:
                assert ours[fact.upstream] == {fact.platform}, f"{where}: {fact.upstream} only on {fact.platform}, ours on {sorted(ours[fact.upstream])}"
        checked += 1
    assert checked >= 30


def test_moonep_pairs_only_from_0_31():
    assert not _ours(_view("0.30.0"), "moonep", MOD, STD)
    assert "MoonEPPrepareAndFinalize" in _ours(_view("0.31.0"), "moonep", MOD, STD)
