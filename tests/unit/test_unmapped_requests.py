"""A ``moe_backend`` name that maps to no kernel of the layer gets a true dead end, and why-not
refuses a name that maps to no kernel at all.

On the parent commit, DeepSeek-R1 (FP8) on B200 with ``--moe-backend rdna3`` (or
``deep_gemm_mega_moe``: names vLLM 0.33.0 accepts, but its FP8 oracle maps to nothing) said
"moe_backend = rdna3, allowed one of [aiter]" (the first kernel's request check only, although the
FP8 map accepts triton, deep_gemm, cutlass ...) and that no change helps, though dropping
``--moe-backend`` does; ``why-not --backend deep_gemm_mega_moe`` (``aiter_mega_moe``,
``flydsl``) printed "makes  eligible" with an empty name and "backend": [] in JSON.
"""

from __future__ import annotations

import json

import pytest

from moe_oracle.explain.whynot import why_not
from moe_oracle.cli import main
from moe_oracle.core.errors import ConfigError
from moe_oracle.core.oracle import Oracle, default_catalog
from tests.unit.test_why_not_ranking import _config

R1 = ["--model", "deepseek-r1", "--gpu", "B200", "--tp", "8"]
FP8_NAMES = ["auto", "aiter", "cutlass", "deep_gemm", "flashinfer_cutlass", "flashinfer_trtllm", "hpc", "humming", "marlin", "triton"]


@pytest.mark.parametrize("name", ["rdna3", "deep_gemm_mega_moe"])
def test_the_dead_end_says_the_name_maps_to_no_kernel_and_to_drop_it(name, capsys):
    assert main(["select", *R1, "--moe-backend", name]) == 1  # the outcome is unchanged: the engine raises
    out = capsys.readouterr().out
    assert out.startswith(f"Requested backend {name} (moe_backend) maps to no kernel of this fp8 layer for vLLM 0.34.0")
    assert "allowed one of [aiter]" not in out and "no change of a few inputs" not in out
    assert f"moe_backend = {name}, allowed one of [auto, aiter, cutlass, deep_gemm" in out
    assert "it reads auto or one of aiter, cutlass, deep_gemm, flashinfer_cutlass, flashinfer_trtllm, hpc, humming, marlin, triton" in out
    assert "drop --moe-backend" in out
    assert "--moe-backend auto  [cost 1" in out
    assert main(["select", *R1]) == 0  # the fix is true


def test_select_json_blocking_lists_what_the_family_reads(capsys):
    assert main(["select", *R1, "--moe-backend", "rdna3", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert [(b["field"], b["observed"], b["allowed"], b["rules"]) for b in out["blocking"]] == [("moe_backend", "rdna3", FP8_NAMES, ["request.fp8"])]
    assert out["fixes"] and any(f["flags"] == "--moe-backend auto" and f["winner_after"] for f in out["fixes"])


@pytest.mark.parametrize("name", ["deep_gemm_mega_moe", "aiter_mega_moe", "flydsl"])
def test_why_not_refuses_a_name_that_maps_to_no_kernel(name, capsys):
    assert main(["why-not", "--backend", name, *R1]) == 2
    captured = capsys.readouterr()
    assert "makes  eligible" not in captured.out
    assert f"(got '{name}')" in captured.err and "names no kernel" in captured.err and "allowed: aiter" in captured.err
    assert main(["why-not", "--backend", name, *R1, "--json"]) == 2
    text = capsys.readouterr().out
    assert '"backend": []' not in text and json.loads(text)["issues"][0]["value"] == name
    with pytest.raises(ConfigError) as info:
        why_not(Oracle(default_catalog()), _config("deepseek-r1", "B200", tp_size=8), name)
    issue = info.value.issues[0]
    assert issue.path == "--backend" and issue.value == name and "triton" in issue.allowed and name not in issue.allowed
