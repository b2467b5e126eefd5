"""The coverage-guided sampler and the coverage report (issue 25: no kernel of the tables left
without a positive selection). Our side only: vLLM's verdict on these draws is the differential
tier's (tests/differential/test_vllm_releases.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from moe_oracle.core.oracle import default_catalog
from moe_oracle.verify.cases import Answer, Deployment
from moe_oracle.verify.coverage import UNREACHABLE, all2all_used, coverage
from moe_oracle.verify.guided import guided_all2all, guided_deployments
from moe_oracle.verify.ours import OurSide
from moe_oracle.verify.run import RELEASES

NEWEST = RELEASES[-1]


@pytest.fixture(scope="module")
def guided() -> tuple[OurSide, list[Deployment], list[str]]:
    side = OurSide(NEWEST)
    found, unreached = guided_deployments(NEWEST, per_kernel=1, side=side)
    return side, found, unreached


def test_the_guided_sampler_reaches_every_kernel_not_listed_unreachable(guided):
    side, found, unreached = guided
    vllm_kernels = {e.id for e in side.oracle.catalog.for_version(NEWEST).experts if e.provider == "vllm"}
    assert set(UNREACHABLE) <= vllm_kernels, f"UNREACHABLE names kernels the tables do not have: {sorted(set(UNREACHABLE) - vllm_kernels)}"
    assert sorted(set(unreached) - set(UNREACHABLE)) == [], "reach them in moe_oracle/verify/guided.py or say why none can in coverage.UNREACHABLE"
    # The list stays honest: a kernel the sampler now reaches is taken off it.
    assert sorted(set(UNREACHABLE) - set(unreached)) == []
    selected = {side.decide(d).kernel for d in found}
    assert selected == vllm_kernels - set(UNREACHABLE)


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
    cov = coverage([SimpleNamespace(case=dep, vllm=ok, ours=ok, agree=True)], catalog)
    assert "triton" not in cov.unreached_kernels
    assert set(UNREACHABLE).isdisjoint(cov.unreached_kernels)
    assert dict(cov.unreachable) == dict(UNREACHABLE)
    assert "deepep_high_throughput" not in cov.unreached_all2all and "passthrough" in cov.unreached_all2all
    lines = cov.lines()
    for kernel, why in UNREACHABLE.items():
        assert f"  {kernel}: unreachable: {why}" in lines
