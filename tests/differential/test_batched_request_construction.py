"""``--moe-backend batched_triton`` without a batched all2all, against each release's own code.

vLLM's unquantized oracle selects BatchedTritonExperts for the request (the batched format is
peeked from ``moe_backend``), but ``maybe_make_prepare_finalize`` builds a batched P/F only for
DeepEP low-latency, NIXL EP and, with no all2all kernels, on XPU (P/all2all_utils.py); elsewhere
building the kernel raises (0.34.0 P/oracle/base.py make_moe_kernel; 0.29.0-0.33.0 the method's
make_unquantized_moe_kernel). The harness asks the release's ``maybe_make_prepare_finalize``
for the P/F and answers a format the experts cannot take as a refusal at construction
(:meth:`moe_oracle.verify.vllm_side.VllmSide.answer`); ours must refuse there too.

Deselected by default (marker ``differential``); needs ``$MOE_ORACLE_VLLM_ENV``.
"""

from __future__ import annotations

import os

import pytest

from moe_oracle.verify.cases import Deployment
from moe_oracle.verify.run import RELEASES, verify

pytestmark = pytest.mark.differential

_BASE = dict(platform="cuda", capability=90, family="unquantized", front_end="unquantized", moe_backend="batched_triton")
REFUSED = (
    Deployment(**_BASE, tp_size=2),  # no all2all: MoEPrepareAndFinalizeNoDPEPModular
    Deployment(**_BASE, dp_size=2),  # DP without EP: the naive DP/EP P/F
    Deployment(**_BASE, dp_size=2, use_ep=True, all2all_backend="allgather_reducescatter"),
    Deployment(**_BASE, dp_size=2, use_ep=True, all2all_backend="deepep_high_throughput", packages=("deep_ep",)),
    Deployment(**{**_BASE, "platform": "rocm", "capability": None, "arch": "gfx942"}, tp_size=2),
)
BUILT = (
    Deployment(**_BASE, dp_size=2, use_ep=True, all2all_backend="deepep_low_latency", packages=("deep_ep",)),
)


@pytest.mark.parametrize("release", RELEASES)
def test_batched_triton_without_a_batched_all2all_is_refused_at_construction(vllm_env, release):
    rel = verify(vllm_env, [release], REFUSED + BUILT, jobs=max(1, os.cpu_count() or 1)).releases[0]
    by_case = {r.case: r for r in rel.records}
    for dep in REFUSED:
        r = by_case[dep]
        assert (r.vllm.status, r.vllm.stage) == ("error", "construction"), (dep.to_dict(), r.vllm)
        assert (r.ours.status, r.ours.stage) == ("error", "construction"), (dep.to_dict(), r.ours)
    for dep in BUILT:
        r = by_case[dep]
        assert r.vllm.status == r.ours.status == "ok" and r.vllm.experts == r.ours.experts == "BatchedTritonExperts", (r.vllm, r.ours)
        assert r.vllm.same_pf(r.ours), (r.vllm.prepare_finalize, r.ours.prepare_finalize)
