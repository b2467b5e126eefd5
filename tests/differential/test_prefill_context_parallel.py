"""Prefill context parallelism against each release's own code: deployments with ``-pcp 2``.

The harness gives the release's ``ParallelConfig`` the PCP size (its EPLB and, in 0.29.0,
PCP-with-DP checks run) and builds ``FusedMoEParallelConfig`` as ``make`` does for rank 0 with
PCP in the flattened TP / EP group (:meth:`moe_oracle.verify.vllm_side.VllmSide.parallel_config`);
our side selects with ``ParallelConfig.pcp_size``. Seeded random deployments (every family) with
PCP 2, plus the report's EPLB deployments: TP = 1, PCP = 2, DP = 1 with EP and EPLB (accepted)
and TP = PCP = DP = 1 (refused at start). Every answer must agree (status, class, format, backend
member, refusal stage, prepare/finalize), as in the main tier.

Deselected by default (marker ``differential``); needs ``$MOE_ORACLE_VLLM_ENV``.
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from moe_oracle.verify.cases import Deployment
from moe_oracle.verify.run import RELEASES, verify
from moe_oracle.verify.space import random_deployments

pytestmark = pytest.mark.differential

CASES = 60
"""Random deployments per release (about 20 s a release on two workers)."""

REPORTED = Deployment(platform="cuda", capability=90, tp_size=1, dp_size=1, pcp_size=2, use_ep=True, enable_eplb=True)
ALL_ONE = replace(REPORTED, pcp_size=1)
WITH_DP = Deployment(platform="cuda", capability=90, tp_size=1, dp_size=2, pcp_size=2, use_ep=True)



@pytest.mark.parametrize("release", RELEASES)
def test_pcp_deployments_agree_with_the_release(vllm_env, release):
    cases = [replace(d, pcp_size=2) for d in random_deployments(CASES, seed=RELEASES.index(release) + 101) if d.tp_size * d.dp_size <= 8]
    cases += [REPORTED, ALL_ONE, WITH_DP]
    rel = verify(vllm_env, [release], cases, jobs=max(1, os.cpu_count() or 1)).releases[0]
    summary = rel.summary()
    shown = "\n".join(f"  {r.case.to_dict()}: vLLM {r.vllm.status} {r.vllm.experts or r.vllm.detail[:120]} | ours {r.ours.status} {r.ours.experts or r.ours.detail[:120]}" for r in rel.unexplained[:10])
    assert not rel.unexplained, f"vLLM {release}: {len(rel.unexplained)} disagreements:\n{shown}"
    assert summary["prepare_finalize"]["unreviewed"] == 0, summary["prepare_finalize"]["pairs"]
    stages = summary["refusal_stages"]
    assert stages["same_stage"] == stages["both_refuse"], stages["pairs"]
    by_case = {r.case: r for r in rel.records}
    assert by_case[REPORTED].vllm.status == "ok" and by_case[REPORTED].ours.status == "ok"
    assert by_case[ALL_ONE].vllm.status == "error" and by_case[ALL_ONE].vllm.stage == "config" and by_case[ALL_ONE].ours.stage == "config"
    assert "EPLB requires tensor, prefill-context, or data parallelism" in by_case[ALL_ONE].vllm.detail
    refused = by_case[WITH_DP].vllm.status == "error"
    assert refused is (release == "0.29.0") and (by_case[WITH_DP].ours.status == "error") is refused
