"""why-not edits for every failing candidate of the backend asked about, not only the
least-failing one's first check.

FlashInfer TRT-LLM's candidates for an INT4 group-32 checkpoint on a B200 fail differently: its
BF16 kernel the quantization, its MxInt4 kernel the opt-in VLLM_USE_FLASHINFER_MOE_INT4. With
--keep quant the search edited only the first candidate's failure (the quantization, kept) and
answered a false "no change makes it eligible"; the test fails on that code.
"""

from __future__ import annotations

import json

from moe_oracle.cli import main

LAYER = ["--model", "kimi-k2.5", "--gpu", "B200", "--tp", "8"]


def test_the_opt_in_variable_is_found_under_keep_quant(capsys):
    assert main(["why-not", *LAYER, "--backend", "flashinfer_trtllm", "--keep", "quant", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["found"] and answer["kernel"] == "flashinfer_trtllm_mxint4_monolithic"
    assert [e["flag"] for e in answer["edits"]] == ["--env VLLM_USE_FLASHINFER_MOE_INT4=1"]
    # and the fix does what it claims: select with it picks that kernel
    assert main(["select", *LAYER, "--env", "VLLM_USE_FLASHINFER_MOE_INT4=1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["selected"]["kernel"] == "flashinfer_trtllm_mxint4_monolithic"
    # without the variable it is not selected (the fix is not already in force)
    assert main(["select", *LAYER, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["selected"]["kernel"] != "flashinfer_trtllm_mxint4_monolithic"
