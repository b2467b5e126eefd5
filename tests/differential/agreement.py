"""One helper the differential tests of pinned cases share: both sides on a case list."""

from __future__ import annotations

import os
from typing import Any, Sequence

from moe_oracle.verify.run import VllmEnv, verify


def agree_on(env: VllmEnv, release: str, cases: Sequence[Any]) -> tuple[dict[Any, Any], str]:
    """Run ``cases`` through both sides for ``release``; fail on any unexplained disagreement.

    Returns ({deployment: record}, every record as one line per case, for assertion messages).
    """
    rel = verify(env, [release], list(cases), jobs=max(1, min(2, os.cpu_count() or 1))).releases[0]
    shown = "\n".join(f"  {r.case.to_dict()}: vLLM {r.vllm.status} {r.vllm.stage} {r.vllm.experts or r.vllm.detail[:160]} {r.vllm.prepare_finalize} | "
                      f"ours {r.ours.status} {r.ours.stage} {r.ours.experts or r.ours.detail[:160]} {r.ours.prepare_finalize}" for r in rel.records)
    assert not rel.unexplained, f"vLLM {release}: disagreements:\n{shown}"
    return {r.case: r for r in rel.records}, shown
