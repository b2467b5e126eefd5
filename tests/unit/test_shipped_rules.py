"""Behaviours of the shipped tables and doors that a first user tripped over (each was once wrong)."""

from __future__ import annotations

import json

import pytest

from moe_oracle.core.errors import ConfigError

from moe_oracle import Device, Environment, MoEConfig, ParallelConfig
from moe_oracle.cli import main
from moe_oracle.core.engine import evaluate
from moe_oracle.tools.lint import lint
from moe_oracle.core.quant import scheme_by_name
from moe_oracle.core.vocab import ReasonCode
from tests.tables_fixture import base_tables, load

B200 = Device("cuda", capability=100)


def gpt_oss(**kw):
    base = dict(num_experts=128, top_k=4, hidden_size=2880, intermediate_size=2880, device=B200, activation="swigluoai",
                quant=scheme_by_name("mxfp4_w16"), quant_method="mxfp4", swiglu_limit=7.0, has_bias=True, parallel=ParallelConfig(tp_size=8))
    base.update(kw)
    return MoEConfig(**base)


def test_afp8_backend_names_are_refused_at_start(catalog):
    # vLLM 0.33.0 map_mxfp4_backend maps flashinfer_cutlass_afp8, but KernelConfig's MoEBackend
    # literal does not accept the name (vLLM 0.29.0-0.33.0 vllm/config/kernel.py): vLLM refuses
    # it before any layer is built.
    with pytest.raises(ConfigError, match="KernelConfig.moe_backend"):
        evaluate(catalog, gpt_oss(moe_backend="flashinfer_cutlass_afp8"), Environment())


def test_mxfp8_activations_asked_for_select_the_mxfp8_variant(catalog):
    # The generic MXFP4 selector with kMxfp8Dynamic asked for: the MXFP8 variants first (CUTLASS
    # MXFP4 x MXFP8 runs on SM 100, MXFP4 x BF16 needs SM 90).
    d = evaluate(catalog, gpt_oss(quant=scheme_by_name("mxfp4_mxfp8"), quant_method=None, moe_backend="flashinfer_cutlass"), Environment())
    assert d.requested == ("flashinfer_cutlass", "flashinfer_cutlass_afp8")
    assert d.kernel == "flashinfer_cutlass_mxfp4_mxfp8"


def test_a_variant_name_on_other_weights_selects_nothing(catalog):
    cfg = MoEConfig(num_experts=256, top_k=8, hidden_size=7168, intermediate_size=2048, device=B200, routing_method="deepseek_v3",
                    quant=scheme_by_name("fp8_block"), quant_method="fp8", parallel=ParallelConfig(tp_size=8), moe_backend="flashinfer_trtllm_afp8")
    with pytest.raises(ConfigError, match="flashinfer_trtllm_afp8"):
        evaluate(catalog, cfg, Environment())


def test_eplb_without_expert_parallel_is_rejected_with_a_reason(catalog):
    d = evaluate(catalog, gpt_oss(parallel=ParallelConfig(tp_size=8, enable_eplb=True)), Environment())
    assert d.kernel is None
    assert all(any(f.rule == "constraint.eplb_needs_expert_parallel" for f in c.failures) for c in d.candidates)


def test_intermediate_size_must_shard_evenly(catalog):
    d = evaluate(catalog, gpt_oss(quant=scheme_by_name("unquantized"), quant_method=None, activation="silu", parallel=ParallelConfig(tp_size=7)), Environment())
    assert d.normalized.values["intermediate_divisible"] is False
    assert d.kernel is None and {f.code for c in d.candidates for f in c.failures} >= {ReasonCode.SHAPE_UNALIGNED}


def test_ignored_inputs_are_noted(catalog):
    d = evaluate(catalog, gpt_oss(parallel=ParallelConfig(tp_size=8, all2all_backend="deepep_low_latency")), Environment(env=(("VLLM_ROCM_USE_AITER", "yes"),)))
    assert any("deepep_low_latency has no effect" in n for n in d.notes)
    # vLLM 0.33.0 envs.py: VLLM_ROCM_USE_AITER is on only for "1"/"true" (any case).
    assert any("VLLM_ROCM_USE_AITER='yes' is read as false" in n for n in d.notes)


def test_an_int_variable_the_engine_cannot_parse_is_bad_input(catalog):
    """vLLM 0.33.0 reads VLLM_USE_DEEP_GEMM with bool(int(...)): 'ture' makes it fail at start.

    Before issue 9 it was read as false with a note (a value vLLM never runs with).
    """
    with pytest.raises(ConfigError) as info:
        evaluate(catalog, gpt_oss(), Environment(env=(("VLLM_USE_DEEP_GEMM", "ture"),)))
    assert info.value.issues[0].allowed == ["0", "1"]


def test_arch_spellings_are_one(catalog):
    assert Device("rocm", arch="GFX942") == Device("rocm", arch="gfx942")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--model", "qwen3-30b-a3b", "--tokens", "0"], "--tokens"),
        (["why-not", "--backend", "auto", "--model", "qwen3-30b-a3b", "--gpu", "H200"], "'auto' is the priority order"),
        (["run", "--model", "qwen3-30b-a3b", "--gpu", "H200"], "run executes on this machine"),
        (["select", "--model", "qwen3-30b-a3b", "--gpu", "B200", "--moe-backend", ""], "non-empty"),
    ],
)
def test_bad_cli_input_exits_2_with_a_clear_message(argv, message, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse type errors
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and message in err


def test_a_package_no_table_reads_is_a_note_with_a_did_you_mean(capsys):
    """Issue 9: any package may be declared; before, an unread name was an error (exit 2)."""
    code = main(["explain", "--model", "qwen3-30b-a3b", "--gpu", "B200", "--without", "flashinfer", "--package", "numpy==2.4.6", "--json"])
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert code == 0
    assert any("flashinfer (did you mean 'flashinfer-python'?)" in n and "numpy" in n for n in notes)


def test_lint_flags_contradictory_conditional_bounds_and_inert_adjustments(tmp_path):
    t = base_tables()
    t["kernels/slow.yaml"]["entries"][0]["constraints"].append(
        {"id": "slow.contradiction", "if": {"quant_scheme": ["fp8_block"]}, "field": "hidden_size", "min": 100, "max": 90, "reason": "shape_unsupported", "hint": "x"}
    )
    t["rules/priority.yaml"]["adjustments"].append(
        {"id": "adjust.optin_on_rocm", "when": {"platform": ["rocm"]}, "move": ["optin"], "to": "front", "kind": "performance", "reason": "x", "reference": "x"}
    )
    findings = {(f.code, f.subject) for f in lint(load(tmp_path, t), sample=False)}
    assert ("unsatisfiable", "slow:slow.contradiction") in findings
    assert ("adjustment_inert", "adjust.optin_on_rocm") in findings


def test_lint_flags_a_duplicate_rule_in_an_older_release_view(tmp_path):
    # The loaded catalog is the newest release's view (0.33.0 here); a rule bounded to older
    # releases meets its twin only in their views.
    t = base_tables()
    slow = t["kernels/slow.yaml"]["entries"][0]
    slow["constraints"].append({**slow["constraints"][0], "id": "slow.max_experts_old", "engine": {"vllm": "<0.33.0"}})
    found = {(f.code, f.subject): f.message for f in lint(load(tmp_path, t), sample=False)}
    assert found[("duplicate_rule", "slow:slow.max_experts_old")].endswith("(vLLM 0.31.0)")


def test_lint_flags_duplicate_rules_and_contradictory_adjustments(tmp_path):
    t = base_tables()
    slow = t["kernels/slow.yaml"]["entries"][0]
    slow["constraints"].append({**slow["constraints"][0], "id": "slow.max_experts_again"})
    t["rules/priority.yaml"]["adjustments"].append(
        {"id": "adjust.slow_last_on_cuda", "when": {"platform": ["cuda"]}, "move": ["slow"], "to": "back", "kind": "performance", "reason": "x", "reference": "x"}
    )
    findings = {(f.code, f.subject) for f in lint(load(tmp_path, t), sample=False)}
    assert ("duplicate_rule", "slow:slow.max_experts_again") in findings
    assert ("contradictory_adjustments", "adjust.slow_first_on_ampere/adjust.slow_last_on_cuda") in findings
    assert not any(code in ("duplicate_rule", "contradictory_adjustments") for code, _ in {(f.code, f.subject) for f in lint(load(tmp_path / "clean"), sample=False)})
