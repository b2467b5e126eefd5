"""ROCm's FP8 re-quantization (vLLM 0.34.0 ``VLLM_FP8_MOE_REQUANT=mxfp4``): block-FP8 experts served
by an MXFP4 backend (rules/frontends.yaml frontend.fp8.rocm_requant_mxfp4), the a16w4 request
(rules/overrides.yaml), the FP8 method built first (``source_selection``), the padding refusal
(rules/constraints.yaml constraint.fp8_requant_unpadded.*) and the variables' values."""

from __future__ import annotations

import json
from itertools import product

import tempfile
from pathlib import Path

import pytest
import yaml
from packaging.version import Version

from moe_oracle.core.padding import layer_sizes
from tests.cli_capture import cli

PACKAGE = Path(__file__).resolve().parents[2] / "moe_oracle"

MI355X = ("--gpu", "MI355X")
REQUANT = ("--env", "VLLM_FP8_MOE_REQUANT=mxfp4")


def _select(*args: str) -> dict:
    code, out, err = cli("select", "--model", "deepseek-r1", *args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_requant_serves_block_fp8_experts_with_an_mxfp4_kernel_on_rocm() -> None:
    plain = _select(*MI355X, "--tp", "8")
    requant = _select(*MI355X, "--tp", "8", *REQUANT)
    assert "mxfp4" not in plain["selected"]["kernel"]
    assert requant["selected"]["kernel"] != plain["selected"]["kernel"]
    notes = " ".join(requant["notes"])
    assert "frontend.fp8.rocm_requant_mxfp4" in notes and "(mxfp4_static, mxfp4_dynamic)" in notes
    assert "the checkpoint's own method is built first and selects" in notes


def test_requant_is_rocm_only_and_from_0_34_0() -> None:
    cuda = _select("--gpu", "H200", "--tp", "8", *REQUANT)
    assert "rocm_requant" not in " ".join(cuda["notes"])
    code, out, err = cli("select", "--model", "deepseek-r1", *MI355X, "--tp", "8", *REQUANT, "--package", "vllm==0.33.0", "--json")
    assert code == 0, err
    assert "rocm_requant" not in " ".join(json.loads(out)["notes"])


def test_a16w4_requests_the_aiter_triton_backend_under_auto_only() -> None:
    rec = _select(*MI355X, "--tp", "8", *REQUANT, "--env", "VLLM_FP8_MOE_REQUANT_ACT=A16W4", "--env", "VLLM_ROCM_USE_AITER=1")
    assert rec["requested"] == {"backends": ["aiter_triton_mxfp4_bf16"], "by": "override.fp8_requant_a16w4"}
    a4w4 = _select(*MI355X, "--tp", "8", *REQUANT, "--env", "VLLM_FP8_MOE_REQUANT_ACT=a4w4", "--env", "VLLM_ROCM_USE_AITER=1")
    a8w4 = _select(*MI355X, "--tp", "8", *REQUANT, "--env", "VLLM_ROCM_USE_AITER=1")
    # a4w4 and a8w4 ask the MXFP4 oracle the same question (Mxfp4OnlineMoEMethod's default key).
    assert a4w4["requested"] is None and a4w4["selected"]["kernel"] == a8w4["selected"]["kernel"]


def test_an_upper_case_mxfp4_is_accepted_but_not_read_as_mxfp4() -> None:
    code, out, err = cli("select", "--model", "deepseek-r1", *MI355X, "--tp", "8", "--env", "VLLM_FP8_MOE_REQUANT=MXFP4")
    assert code == 0
    assert "rocm_requant" not in out + err
    assert "VLLM_FP8_MOE_REQUANT='MXFP4' is not read as 'mxfp4'" in err


@pytest.mark.parametrize("var,value,allowed", [("VLLM_FP8_MOE_REQUANT", "fp4", "none, mxfp4"), ("VLLM_FP8_MOE_REQUANT_ACT", "w4a16", "a8w4, a4w4, a16w4")])
def test_a_value_outside_the_choices_is_refused_naming_them(var: str, value: str, allowed: str) -> None:
    code, out, err = cli("select", "--model", "deepseek-r1", *MI355X, "--tp", "8", "--env", f"{var}={value}")
    assert code == 2 and not out
    assert f"--env {var}" in err and f"Invalid value '{value}' for {var}" in err and f"allowed: {allowed}" in err


def test_the_fp8_method_built_first_refuses_for_the_whole_layer() -> None:
    """An MXFP4-only backend name is not one the FP8 oracle maps: Fp8MoEMethod, built first,
    raises before the experts are re-quantized (vLLM 0.34.0 P/oracle/fp8.py map_fp8_backend)."""
    code, out, err = cli("select", "--model", "deepseek-r1", *MI355X, "--tp", "8", *REQUANT, "--moe-backend", "aiter_triton_mxfp4_bf16")
    assert code == 1, out + err
    assert "maps to no kernel of this fp8 layer" in out + err
    # The same name under auto, set by a16w4, is the MXFP4 oracle's request: that layer selects.
    fine = _select(*MI355X, "--tp", "8", *REQUANT, "--env", "VLLM_FP8_MOE_REQUANT_ACT=a16w4", "--env", "VLLM_ROCM_USE_AITER=1")
    assert fine["selected"]["backend"] == "aiter_triton_mxfp4_bf16"


def test_a_layer_the_mxfp4_backend_pads_is_refused() -> None:
    """Qwen3-30B-A3B's 768 intermediate at TP 2 is a 384 shard: AITER_TRITON_MXFP4_BF16 (a16w4)
    rounds it to 512 and the re-quantizing create_weights refuses; AITER_MXFP4_MXFP4 (a8w4) rounds
    to 128 and serves it."""
    config = {"model_type": "qwen3_moe", "num_experts": 128, "num_experts_per_tok": 8, "hidden_size": 2048, "moe_intermediate_size": 768,
              "num_hidden_layers": 2, "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128], "activation_scheme": "dynamic"}}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "config.json"
        path.write_text(json.dumps(config))
        aiter = ("--env", "VLLM_ROCM_USE_AITER=1")
        code, out, err = cli("select", "--model", str(path), *MI355X, "--tp", "2", *REQUANT, *aiter, "--env", "VLLM_FP8_MOE_REQUANT_ACT=a16w4")
        assert code == 1 and "constraint.fp8_requant_unpadded.intermediate" in out + err, out + err
        code, out, err = cli("select", "--model", str(path), *MI355X, "--tp", "2", *REQUANT, *aiter, "--json")
        assert code == 0 and json.loads(out)["selected"]["backend"] == "aiter_mxfp4_mxfp4"


@pytest.mark.parametrize("backend", ["aiter", "aiter_triton_mxfp4_bf16", "triton", "aiter_mxfp4_mxfp4", "emulation"])
def test_the_padding_constraints_agree_with_the_round_up_rules(backend: str) -> None:
    """The constraints restate padding.MXFP4_RULES for the re-quantized layer (ROCm, no activation
    passed): for every size, a constraint fails exactly when the round-up pads."""
    table = yaml.safe_load((PACKAGE / "rules" / "constraints.yaml").read_text())
    constraints = [c for c in table["constraints"] if c["id"].startswith("constraint.fp8_requant_unpadded.")]
    assert len(constraints) == 6

    def binds(c: dict) -> bool:
        scope = c["applies_to"]
        return backend in scope["backends"] if "backends" in scope else backend not in scope["except_backends"]

    for hidden, partition in product((2048, 2560, 2880, 7168, 4096 + 32), (96, 128, 192, 256, 384, 512, 720)):
        values = {"hidden_size": hidden, "intermediate_size_per_partition": partition, "weight_quant": "mxfp4_static", "mxfp4_selector": "generic",
                  "quant_method": "fp8_requant_mxfp4", "platform": "rocm", "gpu_arch": "gfx950", "activation": "silu", "padded_hidden_size": hidden, "all2all": "none"}
        padded = layer_sizes(values, backend, Version("0.34.0")).padded
        failing = [c["id"] for c in constraints if binds(c) and values[c["field"]] % c["multiple_of"] != 0]
        assert bool(failing) == padded, (hidden, partition, failing)
