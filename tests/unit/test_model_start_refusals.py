"""Parallel settings a model class refuses in its constructor (moe_oracle/inputs/model_start_refusals.py):
Beam under EPLB or sequence-parallel MoE (vLLM 0.33.0-0.34.0 vllm/models/beam/nvidia/model.py), and a
tensor-parallel size above the expert count in the MoE blocks that check it (vLLM 0.29.0-0.34.0
qwen3_moe.py, qwen2_moe.py, qwen3_next.py, minimax_m2.py, ...)."""

from __future__ import annotations

from pathlib import Path

import pytest

from moe_oracle.cli import main
from moe_oracle.core.config import ParallelConfig
from moe_oracle.core.vocab import All2AllBackend
from moe_oracle.inputs.model_start_refusals import MODEL_START_REFUSALS, ModelStartRefusal, model_start_refusal, sequence_parallel_moe

BEAM = Path(__file__).resolve().parents[2] / "examples" / "models" / "registry" / "beamforcausallm-synthetic.json"
BLAME = {"eplb": ("--eplb", None), "sequence_parallel_moe": ("--ep", None)}


def _par(backend: str, tp: int = 2, dp: int = 4, ep: bool = True, eplb: bool = False) -> ParallelConfig:
    return ParallelConfig(tp_size=tp, dp_size=dp, use_ep=ep, all2all_backend=All2AllBackend(backend), enable_eplb=eplb)


@pytest.mark.parametrize(("backend", "release", "expected"), [
    ("deepep_low_latency", "0.29.0", True),
    ("allgather_reducescatter", "0.34.0", True),
    # passthrough joins the list in 0.32.0 (vllm/config/parallel.py use_sequence_parallel_moe)
    ("passthrough", "0.31.0", False),
    ("passthrough", "0.32.0", True),
])
def test_sequence_parallel_moe_reads_each_releases_backend_list(backend, release, expected):
    assert sequence_parallel_moe(_par(backend), release) is expected


@pytest.mark.parametrize("par", [_par("deepep_low_latency", tp=1), _par("deepep_low_latency", dp=1), _par("deepep_low_latency", ep=False)])
def test_sequence_parallel_moe_needs_ep_tp_and_dp(par):
    assert sequence_parallel_moe(par, "0.34.0") is False


def test_beam_refuses_both_settings_from_0_33_0():
    sp = model_start_refusal("BeamForCausalLM", _par("deepep_low_latency"), "0.34.0", "cuda", BLAME)
    assert sp is not None and sp.path == "--ep" and "sequence-parallel MoE" in sp.message
    eplb = model_start_refusal("BeamForCausalLM", _par("deepep_low_latency", tp=1, eplb=True), "0.33.0", "rocm", BLAME)
    assert eplb is not None and eplb.path == "--eplb" and "EPLB" in eplb.message
    assert model_start_refusal("BeamForCausalLM", _par("deepep_low_latency", tp=1), "0.34.0", "cuda", BLAME) is None
    assert model_start_refusal("MixtralForCausalLM", _par("deepep_low_latency"), "0.34.0", "cuda", BLAME) is None


@pytest.mark.parametrize(("release", "platform", "refused"), [
    ("0.29.0", "cuda", True), ("0.31.0", "rocm", True),
    # 0.32.0 kept the check in the ROCm classes only; 0.33.0 dropped it
    ("0.32.0", "cuda", False), ("0.32.0", "rocm", True), ("0.33.0", "rocm", False),
])
def test_qwen4_exp_refuses_sequence_parallel_moe_where_its_classes_check(release, platform, refused):
    for arch in ("Qwen4ExpForCausalLM", "Qwen4ExpForConditionalGeneration"):
        issue = model_start_refusal(arch, _par("allgather_reducescatter"), release, platform, BLAME)
        assert (issue is not None) is refused
        assert issue is None or "Qwen4Exp HC does not support sequence-parallel MoE" in issue.message


def test_a_check_names_a_known_setting():
    with pytest.raises(ValueError, match="when"):
        ModelStartRefusal(("X",), ">=0.33.0", "lora", "m", "s")
    assert all(c.when in ("eplb", "sequence_parallel_moe", "tp_exceeds_experts") for c in MODEL_START_REFUSALS)


@pytest.mark.parametrize("command", ["select", "plan"])
def test_both_doors_refuse_beam_under_sequence_parallel_moe(command, capsys):
    assert main([command, "--model", str(BEAM), "--gpu", "H100", "--tp", "2", "--dp", "4", "--ep"]) == 2
    err = capsys.readouterr().err
    assert "bad --ep" in err and "Beam has not been validated with sequence-parallel MoE" in err


def test_beam_without_tp_is_answered(capsys):
    assert main(["plan", "--model", str(BEAM), "--gpu", "H100", "--dp", "8", "--ep"]) == 0


def test_the_serve_line_is_named_for_eplb(capsys):
    assert main(["select", "--serve", f"vllm serve {BEAM} --data-parallel-size 8 --enable-expert-parallel --enable-eplb", "--gpu", "H100"]) == 2
    err = capsys.readouterr().err
    assert "--serve --enable-eplb" in err and "run without --enable-eplb" in err


BLAME_TP = {**BLAME, "tp_exceeds_experts": ("--tp", None)}


@pytest.mark.parametrize(("arch", "release", "platform", "experts", "tp", "refused"), [
    ("Qwen3MoeForCausalLM", "0.29.0", "cuda", 128, 256, True),
    ("Qwen3MoeForCausalLM", "0.34.0", "rocm", 128, 128, False),  # tp_size > num_experts only
    ("Qwen2MoeForCausalLM", "0.31.0", "cuda", 60, 64, True),
    ("Qwen3_5MoeForConditionalGeneration", "0.33.0", "cuda", 256, 512, True),  # qwen3_next.py's block
    ("MiniMaxM2ForCausalLM", "0.34.0", "cuda", 256, 512, True),
    ("MiMoV2FlashForCausalLM", "0.34.0", "cuda", None, 512, False),  # no MoE layer, no MoE block to check
    ("Step5ForCausalLM", "0.34.0", "rocm", 16, 32, False),  # amd/model.py Step5MoE has no such check
    ("Step5ForCausalLM", "0.34.0", "cuda", 16, 32, True),
    ("Step5ForCausalLM", "0.32.0", "cuda", 16, 32, False),
    ("MixtralForCausalLM", "0.34.0", "cuda", 8, 16, False),  # mixtral.py makes no such check
])
def test_tp_above_the_expert_count_is_refused_where_the_moe_block_checks_it(arch, release, platform, experts, tp, refused):
    issue = model_start_refusal(arch, ParallelConfig(tp_size=tp), release, platform, BLAME_TP, num_experts=experts)
    assert (issue is not None) is refused
    if refused:
        assert issue.path == "--tp" and issue.value == tp and issue.keyword == "engine_refuses"
        assert f"Tensor parallel size {tp} is greater than the number of experts {experts}." in issue.message


def _few_experts(tmp_path):
    # Qwen3-30B-A3B with 4 experts: 32 attention heads, so TP 8 passes ModelConfig's head check
    # and reaches the MoE block's own (no real checkpoint has fewer experts than a TP size its heads allow).
    import json

    from moe_oracle.inputs.models import find_model

    cfg = json.loads(find_model("qwen3-30b-a3b").path.read_text(encoding="utf-8"))
    cfg.update(num_experts=4, num_experts_per_tok=2)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("command", ["select", "plan"])
def test_both_doors_refuse_qwen3_at_a_tp_above_its_experts(command, capsys, tmp_path):
    # vLLM qwen3_moe.py Qwen3MoeSparseMoeBlock: ValueError when tp_size > config.num_experts
    # (was: triton, exit 0)
    model = _few_experts(tmp_path)
    assert main([command, "--model", model, "--gpu", "H100", "--tp", "8"]) == 2
    err = capsys.readouterr().err
    assert "bad --tp" in err and "Tensor parallel size 8 is greater than the number of experts 4." in err
    assert main([command, "--model", model, "--gpu", "H100", "--tp", "4"]) == 0
    # The real checkpoint at TP 256: ModelConfig refuses the head split first, before any layer is built.
    assert main([command, "--model", "qwen3-30b-a3b", "--gpu", "H100", "--tp", "256"]) == 2
    assert "Total number of attention heads (32) must be divisible by tensor parallel size (256)." in capsys.readouterr().err


def test_the_serve_line_is_named_for_tp(capsys):
    import json

    line = "vllm serve Qwen/Qwen3-30B-A3B -tp 8 --hf-overrides '{\"num_experts\": 4, \"num_experts_per_tok\": 2}'"
    assert main(["plan", "--json", "--gpu", "H100", "--serve", line]) == 2
    issue = json.loads(capsys.readouterr().out)["issues"][0]
    assert (issue["path"], issue["keyword"], issue["value"], issue["allowed"]) == ("--serve --tensor-parallel-size", "engine_refuses", 8, {"type": "integer", "maximum": 4})
