"""The full mutation run (issue 25): 200 sampled single-edit mutants of the tables (of the 774
`moe_oracle.verify.mutate.mutants` makes) over a fresh vLLM 0.33.0 sample, held to a score of 0.95.

Marker ``mutation_full`` (deselected by default and not in ``.ci/run``: about 35 minutes on this
2-core machine): ``MOE_ORACLE_VLLM_ENV=DIR pytest -m mutation_full tests/differential -s``.
``MOE_ORACLE_MUTANTS`` resizes it. Measured 2026-12-04 (seed 7): 94 killed, 4 survived, 7 undriven,
95 equivalent (score 0.959, 32 minutes); the 4 survivors were harness artifacts (ROCm deployments of
the guided sampler without an arch), all killed after moe_oracle/verify/guided.py was fixed.
Re-run in session 11 (2026-12-04, after the LUT-B and per-release coverage table changes): 133
killed, 0 survived, 67 equivalent, but one targeted deployment where the shipped tables disagreed
with vLLM (TRT-LLM FP8 on SM 10.7), so the test failed; after that table fix: 134 killed, 0
survived, 0 undriven, 66 equivalent, no disagreement, score 1.0, in 17 minutes (niced, beside a
.ci/run).
"""

from __future__ import annotations

import os

import pytest

from tests.differential.test_mutation import run_sample

pytestmark = pytest.mark.mutation_full

MIN_FULL_SCORE = 0.95
"""Issue 25's floor: >= 95 % of the non-equivalent mutants caught on a sample of >= 200."""


def test_two_hundred_table_mutants_are_caught():
    run_sample(int(os.environ.get("MOE_ORACLE_MUTANTS", "200")), MIN_FULL_SCORE)
