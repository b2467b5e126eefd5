"""vLLM 0.34.0's online ``--quantization lut_b_moe`` (Q/online/lut_b.py ``LutBOnlineMoEMethod``): LUT-B
weights with MXFP8 activations, the experts class fixed by the method's constructor
(kernels/lut_b.yaml, rules priority.lut_b, request.lut_b, constraint.lut_b_bias). The answers were
written from the release's source; the differential tier's ``lut_b`` front end holds them to vLLM
0.34.0's own constructor and ``make_lut_b_moe_kernel``."""

from __future__ import annotations

import json

import pytest

from moe_oracle.core.config import Device, MoEConfig, ParallelConfig
from moe_oracle.core.environment import Environment
from moe_oracle.core.engine import evaluate
from moe_oracle.core.oracle import default_catalog
from moe_oracle.core.quant import SCHEMES
from moe_oracle.core.errors import ConfigError
from moe_oracle.inputs.checkpoint import read_checkpoint
from moe_oracle.inputs.quant_checks import config_quant_method_issue
from tests.cli_capture import cli

SERVE = "vllm serve qwen3-30b-a3b -q lut_b_moe"
NEW = ("--package", "vllm==0.34.0")


def _env(release: str = "0.34.0") -> Environment:
    return Environment((("vllm", release),), frozenset(), True, ())


def _layer(**changes) -> MoEConfig:
    base = dict(num_experts=128, top_k=8, hidden_size=2048, intermediate_size=768, device=Device("cuda", capability=100),
                quant=SCHEMES["lut_b"], quant_method="lut_b_moe")
    base.update(changes)
    return MoEConfig(**base)


def _decide(config: MoEConfig, release: str = "0.34.0"):
    return evaluate(default_catalog(), config, _env(release))


def _select(*args: str) -> tuple[int, dict | None, str]:
    code, out, err = cli("select", "--serve", *args, *NEW, "--json")
    return code, (json.loads(out) if out.strip() else None), err


def test_the_flag_gives_the_routed_experts_lut_b_with_mxfp8_activations_and_the_emulation_on_b200() -> None:
    code, rec, err = _select(SERVE, "--gpu", "B200")
    assert code == 0, err
    assert rec["selected"]["kernel"] == "lut_b_emulation"
    assert rec["selected"]["adapter"].endswith(":LutBEmulationTritonExperts")
    assert any("LutBOnlineMoEMethod" in n for n in rec["notes"])


def test_the_native_kernel_is_not_in_the_released_binary_so_sm107_emulates_too() -> None:
    decision = _decide(_layer(device=Device("cuda", capability=107)))
    assert decision.kernel == "lut_b_emulation"
    native = next(c for c in decision.candidates if c.kernel == "lut_b_sm107")
    assert [f.rule for f in native.failures] == ["lut_b_sm107.compiled_op"]
    # Elsewhere the device itself rules it out first.
    other = next(c for c in _decide(_layer()).candidates if c.kernel == "lut_b_sm107")
    assert "lut_b_sm107.platform" in {f.rule for f in other.failures} or any(f.code.value == "sm_unsupported" and f.rule != "lut_b_sm107.compiled_op" for f in other.failures)


def test_native_alignment_rules_follow_the_method_s_native_shape() -> None:
    native = next(c for c in _decide(_layer(device=Device("cuda", capability=107), hidden_size=2880, intermediate_size=2880)).candidates if c.kernel == "lut_b_sm107")
    assert {"lut_b_sm107.hidden_alignment", "lut_b_sm107.intermediate_alignment"} <= {f.rule for f in native.failures}


@pytest.mark.parametrize("backend", ["triton", "flashinfer_cutlass", "marlin"])
def test_a_moe_backend_other_than_auto_or_emulation_is_refused(backend: str) -> None:
    code, rec, _ = _select(f"{SERVE} --moe-backend {backend}", "--gpu", "B200")
    assert code == 1 and rec["selected"] is None
    assert "request.lut_b" in json.dumps(rec)


def test_emulation_is_taken_when_requested() -> None:
    code, rec, err = _select(f"{SERVE} --moe-backend emulation", "--gpu", "B200")
    assert code == 0, err
    assert rec["selected"]["kernel"] == "lut_b_emulation"


def test_expert_bias_is_refused_by_the_method() -> None:
    decision = _decide(_layer(has_bias=True))
    assert decision.kernel is None
    assert all("constraint.lut_b_bias" in {f.rule for f in c.failures} for c in decision.candidates if c.kernel.startswith("lut_b"))


def test_lora_and_flashinfer_nvlink_leave_no_lut_b_experts() -> None:
    assert _decide(_layer(lora=True)).kernel is None
    nvl = _layer(parallel=ParallelConfig(dp_size=2, use_ep=True, all2all_backend="flashinfer_nvlink_two_sided"))
    assert _decide(nvl).kernel is None


def test_more_than_992_padded_experts_leave_no_lut_b_experts() -> None:
    assert _decide(_layer(num_experts=992)).kernel == "lut_b_emulation"
    assert _decide(_layer(num_experts=1000)).kernel is None


def test_rocm_refuses_the_method_at_start() -> None:
    code, rec, _ = _select(SERVE, "--gpu", "MI355X")
    assert code == 2 and rec["error"] == "ConfigError"
    assert "lut_b_moe quantization is currently not supported in rocm" in json.dumps(rec["issues"])


def test_no_lut_b_kernel_exists_before_0_34() -> None:
    assert not any(c.kernel.startswith("lut_b") for c in _decide(_layer(), "0.33.0").candidates)


def test_a_config_file_may_name_lut_b_moe_only_where_the_release_has_it() -> None:
    assert config_quant_method_issue("lut_b_moe", "0.34.0") is None
    assert "Unknown quantization method" in config_quant_method_issue("lut_b_moe", "0.33.0").message


def test_a_checkpoint_document_naming_lut_b_moe_is_refused() -> None:
    cfg = {"model_type": "qwen3_moe", "num_hidden_layers": 2, "hidden_size": 2048, "moe_intermediate_size": 768, "num_experts": 16,
           "num_experts_per_tok": 2, "quantization_config": {"quant_method": "lut_b_moe"}}
    with pytest.raises(ConfigError, match="online --quantization shorthand"):
        read_checkpoint(cfg, release="0.34.0")
