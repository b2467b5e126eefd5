"""What ``--help`` and the refusals say matches what the commands take.

Before: ``plan --quantization`` took only moe_wna16 and its help did not say so; ``plan --help``
cited "vLLM 0.33.0 SpeculativeConfig" while answers default to 0.34.0; ``why-not --backend
bogus`` listed ``auto`` and names (``aiter_mega_moe``, ...) that why-not then refused.
"""

from __future__ import annotations

import json

import pytest

from moe_oracle.core.errors import ConfigError
from moe_oracle.core.requests import resolve_request
from moe_oracle.explain.whynot import why_not
from moe_oracle import MoEConfig, Oracle
from moe_oracle.core.config import Device
from tests.cli_capture import cli


def test_plan_help_says_what_quantization_takes_and_cites_every_release() -> None:
    _, out, _ = cli("plan", "--help")
    text = " ".join(out.split())
    assert "the one value taken is moe_wna16" in text
    assert "vLLM 0.33.0 SpeculativeConfig" not in text and "vLLM 0.29.0-0.34.0 vllm/config/speculative.py SpeculativeConfig.moe_backend" in text
    code, _, err = cli("plan", "--model", "deepseek-r1", "--gpu", "H200", "--quantization", "fp8")
    assert code == 2 and "invalid choice: 'fp8' (choose from 'moe_wna16')" in err


@pytest.mark.parametrize("name", ["bogus", "auto"])
def test_why_not_lists_only_the_backends_it_answers(name: str) -> None:
    code, out, _ = cli("why-not", "--backend", name, "--model", "deepseek-r1", "--gpu", "H200", "--json")
    assert code == 2
    allowed = json.loads(out)["issues"][0]["allowed"]
    assert "auto" not in allowed and not {"aiter_mega_moe", "deep_gemm_mega_moe", "flashinfer_moe_ep_mega_cutedsl"} & set(allowed)
    catalog = Oracle.default().catalog
    assert all(resolve_request(catalog, n, "--backend") for n in allowed)  # why_not's two gates: a name, mapping to a kernel


def test_a_name_why_not_refuses_for_mapping_to_no_kernel_is_not_offered() -> None:
    cfg = MoEConfig(num_experts=8, top_k=2, hidden_size=4096, intermediate_size=14336, device=Device("cuda", capability=90))
    with pytest.raises(ConfigError) as exc:
        why_not(Oracle.default(), cfg, "aiter_mega_moe")
    assert "names no kernel" in exc.value.issues[0].message and "aiter_mega_moe" not in exc.value.issues[0].allowed
