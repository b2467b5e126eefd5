"""The coverage-guided sampler and the coverage report (issue 25: no kernel of the tables left
without a positive selection, in every release). Our side only: vLLM's verdict on these draws is
the differential tier's (tests/differential/test_vllm_releases.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from moe_oracle.core.oracle import default_catalog
from moe_oracle.verify.cases import Answer, Deployment
from moe_oracle.verify.coverage import UNREACHABLE, all2all_backends, all2all_used, coverage, unreachable
from moe_oracle.verify.guided import can_repair, guided_all2all, guided_deployments, guided_pairs
from moe_oracle.verify.ours import OurSide
from moe_oracle.verify.run import RELEASES

NEWEST = RELEASES[-1]


@pytest.fixture(scope="module")
def guided() -> tuple[OurSide, list[Deployment], list[str]]:
    side = OurSide(NEWEST)
    found, unreached = guided_deployments(NEWEST, per_kernel=1, side=side)
    return side, found, unreached


@pytest.mark.parametrize("release", [RELEASES[0], NEWEST])
def test_the_guided_sampler_reaches_every_kernel_of_each_release_not_listed_unreachable(release):
    side = OurSide(release)
    found, unreached = guided_deployments(release, per_kernel=1, side=side)
    vllm_kernels = {e.id for e in side.oracle.catalog.for_version(release).experts if e.provider == "vllm"}
    skip = set(unreachable(release)) & vllm_kernels
    assert unreached == [], "reach them in moe_oracle/verify/guided.py or say why none can in coverage.UNREACHABLE"
    selected = {side.decide(d).kernel for d in found}
    assert selected == vllm_kernels - set(skip)
    # The list stays honest: the search, let loose on an unreachable kernel, finds nothing our
    # tables select there, except a kernel vLLM's side of the harness cannot be made to select.
    _, also = guided_deployments(release, per_kernel=1, side=side, kernels=sorted(skip))
    assert set(also) == set(skip) - {"aiter_mxfp8"}


def test_the_pair_search_reaches_a_kernel_through_each_family_that_can_select_it():
    side = OurSide(NEWEST)
    found, reached = guided_pairs(NEWEST, per_pair=1, side=side, seed=3, pool=100)
    answered = {(d.family, side.decide(d).kernel) for d in found}
    # Every pair it reports is a deployment of that family our tables answer with that kernel.
    assert {(f, k) for f, ks in reached.items() for k in ks} <= answered
    # Marlin serves FP8, MXFP8, NVFP4, MXFP4 and WNA16 layers (kernels/marlin.yaml): the per-kernel
    # search reaches it through one family, the pair search through each.
    assert {f for f, ks in reached.items() if "marlin" in ks} >= {"fp8", "nvfp4", "mxfp4", "wna16"}
    # It finds more (family, kernel) pairs than the per-kernel search over a mixed pool.
    per_kernel, _ = guided_deployments(NEWEST, per_kernel=2, side=side, seed=3)
    assert len(answered) > len({(d.family, side.decide(d).kernel) for d in per_kernel})
    # No pair exists that the family's quant scheme rules out: W4A8-FP8's oracle never asks Marlin.
    assert "marlin" not in reached["w4a8_fp8"] and "marlin" not in reached["unquantized"]


def test_a_check_that_allows_only_the_never_sentinel_is_not_repairable():
    never = SimpleNamespace(field="moe_backend", allowed=lambda: ["(none)"])
    some = SimpleNamespace(field="moe_backend", allowed=lambda: ["marlin"])
    assert not can_repair(never) and can_repair(some)
    assert not can_repair(SimpleNamespace(field="weight_quant", allowed=lambda: ["fp8_static_block128"]))


def test_every_unreachable_entry_names_a_kernel_and_releases_of_the_tables():
    for kernel, (releases, why) in UNREACHABLE.items():
        assert why and (releases is None or set(releases) <= set(RELEASES)), kernel
        for release in releases or RELEASES:
            tables = {e.id for e in default_catalog().for_version(release).experts}
            assert releases is None or kernel in tables, f"{kernel} is listed for vLLM {release}, whose tables do not have it"
        assert any(kernel in {e.id for e in default_catalog().for_version(r).experts} for r in releases or RELEASES), kernel


def test_the_all2all_backends_of_a_release_are_its_literal():
    # vLLM 0.29.0-0.34.0 vllm/config/parallel.py All2AllBackend: moonep from 0.31.0, passthrough
    # from 0.32.0, mori from 0.34.0 (and the rank-local allgather_reducescatter is no all2all kernel).
    def of(release: str) -> set[str]:
        return set(all2all_backends(default_catalog().for_version(release)))
    assert {"moonep", "passthrough", "mori", "allgather_reducescatter"}.isdisjoint(of("0.29.0"))
    assert of("0.31.0") - of("0.30.0") == {"moonep"}
    assert of("0.32.0") - of("0.31.0") == {"passthrough"}
    assert of("0.34.0") - of("0.33.0") == {"mori"}
    assert {"deepep_low_latency", "mori_high_throughput", "nixl_ep", "flashinfer_nvlink_one_sided"} <= of("0.29.0")


def test_a_kernel_only_a_substitution_selects_is_reached_through_it():
    # vLLM 0.29.0: BatchedHummingGroupedExperts never passes its own check (grouped_masked is read
    # as indexed), but Quark's OCP-MX MXFP4 method takes it as HUMMING's first class unchecked
    # (shortcut.quark_mxfp4_first_class.humming).
    side = OurSide("0.29.0")
    found, unreached = guided_deployments("0.29.0", per_kernel=1, side=side, kernels=["humming_batched"])
    assert unreached == [] and len(found) == 1
    decision = side.decide(found[0])
    assert (decision.kernel, found[0].front_end, decision.shortcut) == ("humming_batched", "quark_mxfp4", "shortcut.quark_mxfp4_first_class.humming")


def test_the_guided_all2all_search_selects_through_every_backend(guided):
    side, found, _ = guided
    backends = ["deepep_high_throughput", "mori_high_throughput", "mori_low_latency", "nixl_ep", "passthrough", "moonep"]
    extra, unreached = guided_all2all(NEWEST, backends, found, per_backend=1, side=side)
    assert unreached == []
    assert sorted(all2all_used(d) for d in extra) == sorted(backends)
    assert all(side.decide(d).kernel is not None for d in extra)


def test_passthrough_dispatches_in_any_ep_topology_and_allgather_is_no_all2all():
    base = Deployment(platform="cuda", capability=100)
    assert all2all_used(base) is None
    assert all2all_used(Deployment(platform="cuda", capability=100, use_ep=True, tp_size=8, all2all_backend="passthrough")) == "passthrough"
    assert all2all_used(Deployment(platform="cuda", capability=100, use_ep=True, tp_size=8, all2all_backend="deepep_low_latency")) is None
    assert all2all_used(Deployment(platform="cuda", capability=100, use_ep=True, dp_size=2, all2all_backend="deepep_low_latency")) == "deepep_low_latency"
    assert all2all_used(Deployment(platform="cuda", capability=100, use_ep=True, dp_size=2)) is None


def test_the_report_names_unreachable_kernels_apart_with_their_reason():
    catalog = default_catalog().for_version(NEWEST)
    dep = Deployment(platform="cuda", capability=90, use_ep=True, dp_size=2, all2all_backend="deepep_high_throughput")
    ok = Answer("ok", experts="TritonExperts", backend="TRITON", detail="triton")
    cov = coverage([SimpleNamespace(case=dep, vllm=ok, ours=ok, agree=True)], catalog, NEWEST)
    assert "triton" not in cov.unreached_kernels
    assert set(unreachable(NEWEST)).isdisjoint(cov.unreached_kernels)
    assert dict(cov.unreachable) == unreachable(NEWEST)
    assert "deepep_high_throughput" not in cov.unreached_all2all and "passthrough" in cov.unreached_all2all
    lines = cov.lines()
    for kernel, why in unreachable(NEWEST).items():
        assert f"  {kernel}: unreachable: {why}" in lines
    # A release without the backend does not count it as unreached.
    old = coverage([SimpleNamespace(case=dep, vllm=ok, ours=ok, agree=True)], default_catalog().for_version("0.29.0"), "0.29.0")
    assert "passthrough" not in old.unreached_all2all and "aiter_mxfp8" in old.unreachable


def test_a_triple_our_tables_selected_counts_until_vllm_agrees_on_it():
    catalog = default_catalog().for_version(NEWEST)
    dep = Deployment(platform="cuda", capability=90)
    ours = Answer("ok", experts="TritonExperts", backend="TRITON", detail="triton")
    theirs = Answer("ok", experts="DeepGemmExperts", backend="DEEPGEMM", detail="")
    missed = coverage([SimpleNamespace(case=dep, vllm=theirs, ours=ours, agree=False)], catalog, NEWEST)
    assert missed.unreached_triples == (("unquantized", "TritonExperts", "TRITON"),)
    not_driven = Answer("unsupported", detail="not driven")
    assert coverage([SimpleNamespace(case=dep, vllm=not_driven, ours=ours, agree=False)], catalog, NEWEST).unreached_triples == ()
    met = coverage([SimpleNamespace(case=dep, vllm=theirs, ours=ours, agree=False), SimpleNamespace(case=dep, vllm=ours, ours=ours, agree=True)], catalog, NEWEST)
    assert met.unreached_triples == () and met.selected == {("unquantized", "TritonExperts", "TRITON"): 1}


def test_a_triple_of_an_unreachable_kernel_is_not_counted_unreached():
    # CI on 1aec2c9 (vLLM 0.30.0): a random ROCm deployment with aiter and flydsl made our tables
    # select AiterMxfp8Experts, which the harness cannot make vLLM select (coverage.UNREACHABLE).
    catalog = default_catalog().for_version("0.30.0")
    dep = Deployment(platform="rocm", arch="gfx950", family="mxfp8")
    ours = Answer("ok", experts="AiterMxfp8Experts", backend="AITER_MXFP8", detail="aiter_mxfp8")
    theirs = Answer("ok", experts="Mxfp8NativeTritonExperts", backend="TRITON_MXFP8", detail="")
    cov = coverage([SimpleNamespace(case=dep, vllm=theirs, ours=ours, agree=False)], catalog, "0.30.0")
    assert cov.unreached_triples == () and "aiter_mxfp8" in cov.unreachable
    ours = Answer("ok", experts="TritonExperts", backend="TRITON", detail="triton")
    assert coverage([SimpleNamespace(case=dep, vllm=theirs, ours=ours, agree=False)], catalog, "0.30.0").unreached_triples == (("mxfp8", "TritonExperts", "TRITON"),)
