"""A why-not search that stops at its bound does not state that no change exists.

`why-not --backend flashinfer_trtllm` for DeepSeek-R1 on an A100 with DP 8, EP, DeepEP LL and
LoRA: the search stops after 400 edit sets, yet --gpu B200 --all2all allgather_reducescatter
--no-lora (3 changes) makes the backend run. The old text, "No change of at most 4 inputs makes
... eligible", stated as a fact what the search had not shown; this test fails on it.
"""

from __future__ import annotations

import json

from moe_oracle.cli import main
from moe_oracle.explain.whynot_search import MAX_EXPANSIONS

LAYER = ["--model", "deepseek-r1", "--gpu", "A100", "--dp", "8", "--ep", "--all2all", "deepep_low_latency", "--lora"]


def test_a_bounded_search_says_it_stopped(capsys):
    main(["why-not", "--backend", "flashinfer_trtllm", *LAYER, "--json"])
    answer = json.loads(capsys.readouterr().out)
    assert not answer["found"] and answer["explored"] == MAX_EXPANSIONS  # the premise: the bound was hit
    main(["why-not", "--backend", "flashinfer_trtllm", *LAYER])
    out = capsys.readouterr().out
    assert "No change of at most" not in out
    assert f"the search stopped at its bound of {MAX_EXPANSIONS} edit sets" in out
    # and a change does exist: the claim "may exist" is not idle
    assert main(["select", "--model", "deepseek-r1", "--gpu", "B200", "--dp", "8", "--ep", "--all2all", "allgather_reducescatter", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["selected"]["backend"] == "flashinfer_trtllm"
