"""Where our refusals happen, against where vLLM's happened (issue 25's full comparison).

Each case in ``refusal_stage_cases.json`` is a deployment both sides refused in a selection-tier
run (vLLM 0.34.0 seed 6, 0.32.0 seed 4, 0.29.0 seed 1 and 0.33.0 seed 5; 3,000-5,000 deployments each, 2026-12-03) at stages that
differed before the fixes beside it: config checks that bind some kernels come before a kernel
the engine selects and refuses; FusedMoEConfig before the oracle; the EPLB gate after it (as an
``after_selection`` refusal, a shortcut's returned kernel, or the only check a kernel fails); a
shortcut that raises in the oracle; a method constructor's assert; the EPLB gate of the first kernel
that fails only late checks, before its create_weights; a release-ranged rule binding every kernel; ``create_weights`` when no
refined FP8 block (>= 32) divides the shard, also under a platform plugin's kernel (TPU:
vLLM's FP8 oracle returns NONE there, and the prepare/finalize it never builds does not stop it); FP8 blocks on a CPU or an XPU where
no kernel takes the layer (the eleven last cases, 0.31.0, 0.33.0 and 0.34.0 streams as drawn at 3a97396, 2026-12-06): the oracle
returns NONE off CUDA/ROCm instead of raising, so create_weights refuses the block shape (construction), where the
harness placed our dead end at selection because the NONE fallback's own refusal is an after-selection rule.
``vllm_stage`` and ``vllm_message`` are what the release raised, recorded from the run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moe_oracle.verify.cases import Deployment
from moe_oracle.verify.ours import OurSide

CASES = json.loads((Path(__file__).parent / "refusal_stage_cases.json").read_text())


@pytest.mark.parametrize("case", CASES, ids=[f"{c['release']}-{c['vllm_stage']}-{c['vllm_message'][:40]}" for c in CASES])
def test_our_refusal_is_at_the_stage_vllm_refused(case):
    answer = OurSide(case["release"]).answer(Deployment.from_dict(case["deployment"]))
    assert answer.status == "error", f"we select {answer.experts} where vLLM raised {case['vllm_message']}"
    assert answer.stage == case["vllm_stage"], f"ours {answer.stage} ({answer.detail[:120]}), vLLM {case['vllm_stage']} ({case['vllm_message']})"
