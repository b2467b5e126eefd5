"""why-not ranks fewer and less disruptive changes first, shows ties and alternatives, and keeps
what the operator says to keep (issue 9).

On the parent commit a DP8+EP redeployment and the --ep flag both cost 1 and the redeployment
was generated first, so MiniMax-M2 at TP8 was told to "switch attention to DP8" although TP8 +
EP (the published recipe) works; one answer only, no --keep, and print(result) dumped the dataclass.
"""

from __future__ import annotations

import json

from moe_oracle.explain.whynot import why_not
from moe_oracle.cli import main
from moe_oracle.core.config import MoEConfig, ParallelConfig
from moe_oracle.core.environment import Environment
from moe_oracle.inputs.hardware import lookup_hardware
from moe_oracle.inputs.hf import from_hf_config, load_hf_config
from moe_oracle.inputs.models import resolve_model_path
from moe_oracle.core.oracle import Oracle, default_catalog
from moe_oracle.explain.whynot_edits import COSTS, category

MINIMAX = ["--model", "minimax-m2", "--gpu", "H200", "--tp", "8"]


def _config(model: str, gpu: str, **parallel) -> MoEConfig:
    ck = from_hf_config(load_hf_config(resolve_model_path(model)))
    return MoEConfig(device=lookup_hardware(gpu).device, parallel=ParallelConfig(**parallel), **ck.kwargs)


def test_minimax_m2_gets_the_ep_flag_before_a_redeployment(capsys):
    code = main(["why-not", "--backend", "flashinfer_cutlass", *MINIMAX, "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0
    assert result["alternatives"][0]["flags"] == "--ep" and result["alternatives"][0]["cost"] == COSTS["flag"]
    # Besides --ep, one flag more: requesting the backend, for which vLLM 0.31.0+ pads the FP8 TP
    # shard to whole blocks (tests/unit/test_fix_lists.py); no redeployment comes before them.
    assert all(a["cost"] >= COSTS["redeploy"] or a["flags"] == "--moe-backend flashinfer_cutlass" for a in result["alternatives"][1:])


def test_up_to_n_alternatives_cheapest_first_none_a_superset():
    r = why_not(Oracle(default_catalog()), _config("minimax-m2", "H200", tp_size=8), "flashinfer_trtllm", Environment(), n=4)
    costs = [a.cost for a in r.alternatives]
    assert 1 < len(costs) <= 4 and costs == sorted(costs)
    keys = [frozenset(e.flag() for e in a.edits) for a in r.alternatives]
    assert not any(a < b for a in keys for b in keys)


def test_ties_are_marked(capsys):
    main(["why-not", "--backend", "flashinfer_trtllm", *MINIMAX])
    out = capsys.readouterr().out
    assert out.count(", tie]") >= 2  # B200 and B300 (both Blackwell) with --ep cost the same


def test_keep_forbids_a_category(capsys):
    code = main(["why-not", "--backend", "flashinfer_trtllm", *MINIMAX, "--keep", "device", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 1 and not result["found"] and result["keep"] == ["device", "model"]
    code = main(["why-not", "--backend", "flashinfer_cutlass", *MINIMAX, "--keep", "parallel,device", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert all(category(e["target"]) not in ("parallel", "device") for a in result["alternatives"] for e in a["edits"])


def test_unknown_keep_category_is_bad_input(capsys):
    assert main(["why-not", "--backend", "triton", *MINIMAX, "--keep", "gpu"]) == 2
    assert capsys.readouterr().err.startswith("moe-oracle: error: bad --keep")


def test_one_device_candidate_per_architecture():
    """H100, H200, H20, H800 and GH200 are one GPU to suggest (SM 9.0), not five ties."""
    from moe_oracle.explain.whynot_moves import _architectures

    archs = [(d.platform, d.capability, d.arch, d.cpu_amx) for _, d in _architectures()]
    assert len(archs) == len(set(archs))
    assert sum(1 for name, _ in _architectures() if name in ("H100", "H200", "H20", "H800", "GH200")) == 1


def test_the_result_prints_readably():
    r = why_not(Oracle(default_catalog()), _config("minimax-m2", "H200", tp_size=8), "flashinfer_cutlass", Environment())
    text = str(r)
    # The name flashinfer_cutlass requests MXFP4's MXFP8 variant backend too (rules/aliases.yaml).
    assert text.startswith("flashinfer_cutlass/flashinfer_cutlass_afp8 becomes eligible") and "1. --ep" in text and "WhyNot(" not in text


def test_a_tp_that_does_not_divide_the_expert_size_gets_parallel_fixes(capsys, tmp_path):
    """intermediate_divisible is derived from the parallel layout: no move set it, so select and
    why-not said no change helps (Qwen3-30B-A3B at TP 5: 768 % 5 != 0); the fixes move what it is
    computed from, and --ep (moe TP 1) comes first. (The checkpoint gets 40 attention heads: its
    own 32 refuse TP 5 at start, ModelConfig.verify_with_parallel_config.)"""
    cfg = json.loads(resolve_model_path("qwen3-30b-a3b").read_text(encoding="utf-8"))
    cfg["num_attention_heads"] = 40
    (tmp_path / "config.json").write_text(json.dumps(cfg), encoding="utf-8")
    assert main(["select", "--model", str(tmp_path / "config.json"), "--gpu", "H200", "--tp", "5"]) == 1
    out = capsys.readouterr().out
    assert "intermediate_divisible = false" in out and "no change of a few inputs" not in out
    assert "  1. --ep  [cost 1] -> triton selected" in out
    r = why_not(Oracle(default_catalog()), _config("deepseek-r1", "H200", tp_size=3), "triton", Environment(), n=3)
    assert r.found and r.alternatives[0].cost == COSTS["flag"]
    assert all(a.config.parallel.use_ep or 2048 % (a.config.parallel.tp_size * a.config.parallel.dp_size) == 0 for a in r.alternatives)
