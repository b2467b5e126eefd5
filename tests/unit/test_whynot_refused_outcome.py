"""why-not fixes after which the engine selects a kernel and then refuses the layer (breakit22
finding 5): the outcome said "outranked by None"; it now names the kernel selected ahead and the
rule that refuses it. And no fix puts a layer under an online FP8 ``--quantization`` with experts
that method does not build (the fix offered fp8_tensor_static experts under fp8_per_channel)."""

from __future__ import annotations

import json

from moe_oracle.cli import main
from moe_oracle.core.engine import evaluate
from moe_oracle.core.oracle import default_catalog
from moe_oracle.core.quant import SCHEMES
from moe_oracle.explain.whynot_edits import Alternative
from moe_oracle.inputs.admissible import start_refusal
from moe_oracle.inputs.deployment import build_deployment
from moe_oracle.inputs.operator_inputs import OperatorInputs


def _qwen3_fp8():
    catalog = default_catalog()
    return catalog, build_deployment(OperatorInputs(model="qwen3-30b-a3b-fp8", gpu="H200", tp=4), catalog)


def test_the_outcome_names_the_kernel_refused_ahead_of_the_target():
    catalog, dep = _qwen3_fp8()
    # Per-tensor experts under the per-channel online method: the FP8 oracle picks FlashInfer CUTLASS,
    # which Fp8PtpcOnlineMoEMethod refuses (constraint.fp8_per_channel_backend): no winner.
    config = dep.config.with_changes(quant=SCHEMES["fp8_tensor_static"], quant_method="fp8_per_channel")
    decision = evaluate(catalog, config, dep.environment)
    assert decision.kernel is None and decision.refused is not None
    text = Alternative((), "vllm_cutlass", config, dep.environment, decision).outcome()
    assert "None" not in text
    assert f"the engine selects {decision.refused_kernel} ahead of it and then refuses the layer [constraint.fp8_per_channel_backend]" in text
    # --json says the same (breakit22b finding 6: only winner_after null).
    record = Alternative((), "vllm_cutlass", config, dep.environment, decision).to_dict()
    assert record["winner_after"] is None and record["refused_after"] == {"kernel": decision.refused_kernel, "rules": ["constraint.fp8_per_channel_backend"]}


def test_no_fix_gives_an_online_fp8_method_experts_it_does_not_build(capsys):
    catalog, dep = _qwen3_fp8()
    refusal = start_refusal(dep, catalog)
    assert refusal(dep.config.with_changes(quant=SCHEMES["fp8_tensor_static"], quant_method="fp8_per_channel"), dep.environment) is not None
    assert refusal(dep.config.with_changes(quant=SCHEMES["fp8_channel_token"], quant_method="fp8_per_channel"), dep.environment) is None
    main(["why-not", "--backend", "vllm_cutlass", "--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--tp", "4", "--json"])
    fixes = json.loads(capsys.readouterr().out)["alternatives"]
    assert fixes and all(f["winner_after"] is not None for f in fixes)
    assert not [f for f in fixes if any(e.get("after") == "fp8_per_channel" for e in f["edits"]) and "--quant fp8_channel_token" not in f["flags"]]
