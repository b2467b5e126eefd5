"""The FlashInfer one-sided payload check (rules/constraints.yaml flashinfer_nvlink_one_sided.payload,
`checked: construction`): vLLM 0.29.0-0.34.0 builds the prepare/finalize only after selecting, and
its payload follows the activations the experts take (none for weight-only schemes and for Marlin)."""

from __future__ import annotations

import pytest

from moe_oracle import MoEConfig, select
from moe_oracle.core.config import ParallelConfig
from moe_oracle.core.environment import Environment
from moe_oracle.core.oracle import default_catalog
from moe_oracle.inputs.files import parse_quant
from moe_oracle.inputs.hardware import GPU_CATALOG

RULE = "flashinfer_nvlink_one_sided.payload"


def _decide(gpu: str, quant: str):
    cfg = MoEConfig(num_experts=64, top_k=4, hidden_size=2048, intermediate_size=768, device=GPU_CATALOG[gpu].device, quant=parse_quant(quant),
                    parallel=ParallelConfig(dp_size=8, use_ep=True, all2all_backend="flashinfer_nvlink_one_sided"))
    return select(cfg, env=Environment.declared(packages=["vllm==0.34.0"]), strict=False)


def _unchecked(d) -> list[str]:
    return [w.failure.rule for w in d.warnings if w.code == "unchecked" and w.failure is not None]


def test_the_rule_is_checked_at_construction():
    assert RULE in default_catalog().construction


@pytest.mark.parametrize(("gpu", "quant"), [("A100", "fp8_tensor_dynamic"), ("H200", "int4_w16"), ("B200", "mxfp4_mxfp8")])
def test_marlin_weight_only_and_supported_payloads_build(gpu, quant):
    d = _decide(gpu, quant)
    assert d.kernel is not None and d.prepare_finalize == "flashinfer_nvlink_one_sided" and RULE not in _unchecked(d)


def test_an_unsupported_payload_is_selected_with_the_unchecked_warning():
    d = _decide("H200", "int8_channel_token")
    assert d.kernel is not None and d.kernel.split("_")[0] != "marlin"
    assert RULE in _unchecked(d)
