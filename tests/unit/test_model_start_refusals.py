"""Parallel settings a model class refuses in its constructor (moe_oracle/inputs/model_start_refusals.py):
Beam under EPLB or sequence-parallel MoE (vLLM 0.33.0-0.34.0 vllm/models/beam/nvidia/model.py)."""

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
    assert all(c.when in ("eplb", "sequence_parallel_moe") for c in MODEL_START_REFUSALS)


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
