"""Sequence-parallel MoE (moe_oracle/inputs/sequence_parallel.py, ``ParallelConfig.sequence_parallel``,
the normalized field ``sequence_parallel``).

vLLM 0.29.0-0.34.0: a model class that passes ``is_sequence_parallel=use_sequence_parallel_moe``
(deepseek_v2.py ``DeepseekV2MoE``, qwen3_moe.py ``Qwen3MoeSparseMoeBlock``) gets ``sp_size = tp_size``
(P/layer.py ``make_parallel_config``), and ``TrtLlmFp8ExpertsMonolithic._supports_parallel_config``
refuses it (P/experts/trtllm_fp8_moe.py). The QA report: DeepSeek-R1 on B200 with TP 2, DP 4 and EP
was answered with the monolithic kernel.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from moe_oracle.cli import main
from moe_oracle.core.config import ParallelConfig
from moe_oracle.core.errors import ConfigError
from moe_oracle.core.vocab import All2AllBackend
from moe_oracle.inputs.files import config_from_document
from moe_oracle.inputs.sequence_parallel import SEQUENCE_PARALLEL_CLASSES, model_passes_sequence_parallel, model_sequence_parallel, parallel_with_sequence_parallel

RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0")


def _par(backend: str = "allgather_reducescatter", tp: int = 2, dp: int = 4, ep: bool = True) -> ParallelConfig:
    return ParallelConfig(tp_size=tp, dp_size=dp, use_ep=ep, all2all_backend=All2AllBackend(backend))


def _models():
    from pathlib import Path

    return Path(__file__).resolve().parents[2] / "examples" / "models"


def _select(capsys, *args: str) -> str:
    assert main(["select", *args]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize(("model", "args"), [
    ("deepseek-r1", ("--model", "deepseek-r1", "--tp", "2", "--dp", "4", "--ep")),
    ("qwen3-30b-a3b-fp8", ("--model", "qwen3-30b-a3b-fp8", "--tp", "2", "--dp", "4", "--ep")),
    ("serve deepseek-r1", ("--serve", "vllm serve deepseek-ai/DeepSeek-R1 -tp 2 -dp 4 --enable-expert-parallel")),
], ids=lambda v: v if isinstance(v, str) else None)
def test_qa_report_no_monolithic_trtllm_under_sequence_parallelism(capsys, model, args, release):
    out = _select(capsys, *args, "--gpu", "B200", "--package", f"vllm=={release}")
    assert not out.startswith("flashinfer_trtllm_fp8_monolithic"), out
    assert "naive_dp_ep_monolithic" not in out, out


def test_without_tp_there_is_no_sequence_parallelism_and_the_monolithic_kernel_stays(capsys):
    out = _select(capsys, "--model", "deepseek-r1", "--gpu", "B200", "--tp", "1", "--dp", "8", "--ep")
    assert out.startswith("flashinfer_trtllm_fp8_monolithic") and "naive_dp_ep_monolithic" in out, out


def test_a_class_that_passes_nothing_keeps_the_monolithic_kernel(capsys, tmp_path):
    config = json.loads((_models() / "deepseek-r1.json").read_text())
    config["architectures"] = ["Glm4MoeForCausalLM"]  # same layer, a class that passes no is_sequence_parallel
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    out = _select(capsys, "--model", str(path), "--gpu", "B200", "--tp", "2", "--dp", "4", "--ep")
    assert out.startswith("flashinfer_trtllm_fp8_monolithic"), out


def test_plan_answers_every_layer_without_the_monolithic_kernel(capsys):
    assert main(["plan", "--model", "deepseek-r1", "--gpu", "B200", "--tp", "2", "--dp", "4", "--ep"]) == 0
    out = capsys.readouterr().out
    assert "flashinfer_trtllm_fp8_monolithic" not in out and "flashinfer_trtllm_fp8 [" in out, out


@pytest.mark.parametrize(("architecture", "lora", "expected"), [
    ("DeepseekV3ForCausalLM", False, True), ("DeepSeekMTPModel", False, True), ("Qwen3MoeForCausalLM", False, True),
    ("GptOssForCausalLM", False, True), ("GptOssForCausalLM", True, False),  # gpt_oss.py: `and lora_config is None`
    ("MixtralForCausalLM", False, False), ("Glm4MoeForCausalLM", False, False),
    ("NotReadForCausalLM", False, None), (None, False, None),
])
def test_model_classes_that_pass_it(architecture, lora, expected):
    for release in RELEASES:
        assert model_passes_sequence_parallel(architecture, release, lora) is expected


def test_a_per_platform_class_is_known_only_where_read():
    assert model_passes_sequence_parallel("DeepseekV32ForCausalLM", "0.34.0", platform="cuda") is True
    assert model_passes_sequence_parallel("DeepseekV32ForCausalLM", "0.34.0", platform="rocm") is None


def test_deepseek_v3_2_on_b200(capsys):
    out = _select(capsys, "--model", "deepseek-v3.2", "--gpu", "B200", "--tp", "2", "--dp", "4", "--ep")
    assert not out.startswith("flashinfer_trtllm_fp8_monolithic"), out


@pytest.mark.parametrize("par", [_par(tp=1), _par(dp=1), _par(ep=False), _par("flashinfer_nvlink_two_sided"), _par("moonep")])
def test_deployments_without_use_sequence_parallel_moe_are_false_for_any_class(par):
    assert model_sequence_parallel("DeepseekV3ForCausalLM", par, "0.34.0") is False
    assert model_sequence_parallel(None, par, "0.34.0") is False


def test_passthrough_is_in_the_list_from_0_32_0():
    assert model_sequence_parallel("DeepseekV3ForCausalLM", _par("passthrough"), "0.31.0") is False
    assert model_sequence_parallel("DeepseekV3ForCausalLM", _par("passthrough"), "0.32.0") is True


def test_an_unread_class_stays_unknown_with_a_note():
    par, note = parallel_with_sequence_parallel(_par(), "NotReadForCausalLM", "0.34.0")
    assert par.sequence_parallel is None and note is not None and "NotReadForCausalLM" in note
    kept, none = parallel_with_sequence_parallel(replace(_par(), sequence_parallel=False), "DeepseekV3ForCausalLM", "0.34.0")
    assert kept.sequence_parallel is False and none is None


def test_normalized_field_is_false_where_no_class_can_pass_it():
    from moe_oracle.core.normalize import normalize
    from moe_oracle.core.environment import Environment
    from moe_oracle.core.config import Device, MoEConfig

    base = MoEConfig(num_experts=8, top_k=2, hidden_size=256, intermediate_size=256, device=Device("cuda", capability=100), parallel=replace(_par(), sequence_parallel=True))
    env = Environment((("vllm", "0.34.0"),), frozenset(), True, ())

    def value(config: MoEConfig):
        return normalize(config, env, (), ()).values["sequence_parallel"]

    assert value(base) is True
    assert value(base.with_changes(parallel__tp_size=1)) is False  # an edit of a term needs no second edit
    assert value(base.with_changes(parallel__sequence_parallel=None)) is None


def test_a_config_file_setting_it_true_without_its_terms_is_refused():
    from moe_oracle.core.loading import load_catalog

    doc = {"model": {"num_experts": 8, "top_k": 2, "hidden_size": 256, "intermediate_size": 256},
           "device": {"platform": "cuda", "capability": 100}, "parallel": {"tp_size": 1, "dp_size": 4, "use_ep": True, "sequence_parallel": True}}
    with pytest.raises(ConfigError) as err:
        config_from_document(doc, load_catalog(), file="layer.yaml")
    assert err.value.issues[0].path == "$.parallel.sequence_parallel"


def test_every_listed_architecture_is_a_registered_moe_architecture():
    from moe_oracle.inputs.checkpoint.architectures import VLLM_MOE_ARCHITECTURES

    listed = [a for entry in SEQUENCE_PARALLEL_CLASSES for a in entry.architectures]
    assert len(listed) == len(set(listed))
    assert set(listed) <= set(VLLM_MOE_ARCHITECTURES)
