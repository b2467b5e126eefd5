"""A wrong engine derivation of each derived field makes the invariant suite fail (issue 25).

Each test plants one wrong derivation in the engine (monkeypatching its normalization: a helper
of ``moe_oracle.core.normalize``, the block-rule step, or the record ``normalize`` returns) on a
case where the wrong derivation gives another value, and runs every engine invariant: the suite
must fail, ``normalized_values`` naming the field. The reference model derives the field itself
(tests/property/reference_fields.py); while it took the field from the engine's record, the
same plant passed (see the report of issue 25 for the run against the old model).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Callable

import pytest

from moe_oracle.core import engine as engine_module
from moe_oracle.core import normalize as normalize_module
from moe_oracle.core.environment import Environment
from moe_oracle.core.normalize import Normalized
from moe_oracle.core.quant import SCHEMES
from moe_oracle.core.vocab import All2AllBackend, Platform
from moe_oracle.inputs.hardware import GPU_CATALOG
from tests.property import invariants as inv
from tests.property.reference_fields import DERIVED_HERE
from tests.property.strategies import Case, pinned

pytestmark = pytest.mark.property

_MEMOS = (inv._decided, inv.record, inv._values, inv._judged)


@pytest.fixture(autouse=True)
def _fresh_memos():
    for memo in _MEMOS:
        memo.cache_clear()
    yield
    for memo in _MEMOS:
        memo.cache_clear()


def _failures(case: Case) -> dict[str, str]:
    """Invariant name -> its failure message, for every engine invariant that fails on ``case``."""
    out: dict[str, str] = {}
    for name, check in inv.ENGINE_INVARIANTS.items():
        try:
            check(case)
        except AssertionError as exc:
            out[name] = str(exc)
    return out


def _edit_record(monkeypatch: pytest.MonkeyPatch, edit: Callable[[Any, dict[str, Any]], None]) -> None:
    """Plant ``edit(config, values)`` after the engine's ``normalize`` (a wrong derivation of a field)."""
    real = engine_module.normalize

    def planted(config, env, *args, **kwargs):  # noqa: ANN001, ANN202 - the engine's signature
        norm = real(config, env, *args, **kwargs)
        values = dict(norm.values)
        edit(config, values)
        return Normalized(MappingProxyType(values), norm.sources, values)

    monkeypatch.setattr(engine_module, "normalize", planted)


def _after_blocks(monkeypatch: pytest.MonkeyPatch, edit: Callable[[Normalized, dict[str, Any]], None]) -> None:
    """Plant ``edit(before, values)`` after the engine's FP8 block-rule step."""
    real = engine_module.apply_block_rules

    def planted(norm, rules, requested):  # noqa: ANN001, ANN202
        out = real(norm, rules, requested)
        values = dict(out.values)
        edit(norm, values)
        return Normalized(MappingProxyType(values), out.sources, values)

    monkeypatch.setattr(engine_module, "apply_block_rules", planted)


def _set(name: str, wrong: Callable[[Any, dict[str, Any]], Any]) -> Callable[[Any, dict[str, Any]], None]:
    def edit(config: Any, values: dict[str, Any]) -> None:
        values[name] = wrong(config, values)

    return edit


_GPTQ_G128 = dict(quant=SCHEMES["int4_w16"], quant_method="gptq", weight_group_size=128, act_order="none")
_FP8_BLOCK_TP2 = dict(quant=SCHEMES["fp8_block"], quant_method="fp8", parallel__tp_size=2, intermediate_size=384)


def _plant_marlin_on_rocm(mp: pytest.MonkeyPatch) -> None:
    # Forgets check_moe_marlin_supports_config's ROCm exclusion.
    real = normalize_module._marlin_moe_supported
    mp.setattr(normalize_module, "_marlin_moe_supported", lambda config, platform: real(config, Platform.CUDA))


def _plant_selector_ignoring_model_type(mp: pytest.MonkeyPatch) -> None:
    # Takes every quant_method: mxfp4 checkpoint for GPT-OSS (GptOssMxfp4Config).
    real = normalize_module.mxfp4_selector
    mp.setattr(normalize_module, "mxfp4_selector", lambda weight, method, model_type, not_gpt_oss=None: real(weight, method, "gpt_oss", None))


def _plant_block_check_without_block_k(mp: pytest.MonkeyPatch) -> None:
    # validate_fp8_block_shape_moe's block_k test under TP dropped.
    mp.setattr(normalize_module, "_block_aligned", lambda ispp, bn, bk, tp: ispp % bn == 0)


# field -> (the case's leaves, the plant). Each case is one where the wrong derivation differs.
PLANTS: dict[str, tuple[dict[str, Any], Callable[[pytest.MonkeyPatch], None]]] = {
    # hidden 1000 is no multiple of 128: Marlin cannot serve the layer, GPTQ falls back to MoeWNA16.
    "moe_quant_method": (dict(_GPTQ_G128, hidden_size=1000), lambda mp: _edit_record(mp, _set("moe_quant_method", lambda c, v: v["quant_method"]))),
    "marlin_moe_supported": (dict(_GPTQ_G128, device=GPU_CATALOG["MI300X"].device), _plant_marlin_on_rocm),
    "mxfp4_selector": (dict(quant=SCHEMES["mxfp4_w16"], quant_method="mxfp4", model_type="deepseek_v4"), _plant_selector_ignoring_model_type),
    "selector_activation_quant": (dict(quant=SCHEMES["mxfp4_mxfp8"], quant_method="mxfp4", model_type="gpt_oss"),
                                  lambda mp: _edit_record(mp, _set("selector_activation_quant", lambda c, v: v["activation_quant"]))),
    # DeepSeek's 128x128 when the checkpoint does not say (here: read as 64x64).
    "weight_block_size": (dict(quant=SCHEMES["fp8_block"]), lambda mp: _edit_record(mp, _set("weight_block_size", lambda c, v: "64x64" if c.weight_block_size is None else v["weight_block_size"]))),
    # TP 2 cuts a 128 block of a 192 shard: refined to gcd(128, 128, 192, 2048) = 64.
    "weight_block": (dict(_FP8_BLOCK_TP2), lambda mp: _after_blocks(mp, lambda before, v: v.update(weight_block=before.values["weight_block"]))),
    # (64, 128) blocks, TP 2, shard 192: block_n divides it, block_k does not.
    "weight_block_aligned": (dict(quant=SCHEMES["fp8_block_w16"], weight_block_size=(64, 128), parallel__tp_size=2, intermediate_size=384), _plant_block_check_without_block_k),
    # An explicit non-Triton backend: the shard is padded to whole blocks, which LoRA forbids.
    "weight_block_pad_refused": (dict(_FP8_BLOCK_TP2, lora=True, moe_backend="deep_gemm"), lambda mp: _after_blocks(mp, lambda before, v: v.update(weight_block_pad_refused=False))),
    # group 128 divides the hidden size 2048 but not the shard 192.
    "weight_groups_aligned": (dict(_GPTQ_G128, intermediate_size=192), lambda mp: _edit_record(mp, _set("weight_groups_aligned", lambda c, v: c.hidden_size % c.weight_group_size == 0))),
    # DeepEP HT rounds hidden 2880 up to 3072, a multiple of 128; 2880 is not.
    "padded_weight_groups_aligned": (dict(_GPTQ_G128, hidden_size=2880, parallel__dp_size=2, parallel__use_ep=True, parallel__all2all_backend=All2AllBackend.DEEPEP_HIGH_THROUGHPUT),
                                     lambda mp: _edit_record(mp, _set("padded_weight_groups_aligned", lambda c, v: c.hidden_size % c.weight_group_size == 0 and v["intermediate_size_per_partition"] % c.weight_group_size == 0))),
    # 64 + 1 redundant experts over 2 EP ranks: uneven (the plant forgets the redundant one).
    "experts_even_across_ep": (dict(parallel__dp_size=2, parallel__use_ep=True, parallel__enable_eplb=True, parallel__num_redundant_experts=1),
                               lambda mp: _edit_record(mp, _set("experts_even_across_ep", lambda c, v: c.num_experts % v["ep_size"] == 0))),
    "swiglu_params": (dict(swiglu_alpha=1.702), lambda mp: _edit_record(mp, _set("swiglu_params", lambda c, v: c.swiglu_limit is not None))),
    "swiglu_alpha": (dict(swiglu_alpha=1.702), lambda mp: _edit_record(mp, _set("swiglu_alpha", lambda c, v: "none"))),
    "swiglu_beta": (dict(swiglu_beta=1.0), lambda mp: _edit_record(mp, _set("swiglu_beta", lambda c, v: "none"))),
    "situ_beta": (dict(situ_beta=2.0), lambda mp: _edit_record(mp, _set("situ_beta", lambda c, v: "none"))),
    "situ_linear_beta": (dict(situ_linear_beta=0.5), lambda mp: _edit_record(mp, _set("situ_linear_beta", lambda c, v: "none"))),
    "model_type": (dict(model_type="deepseek_v4"), lambda mp: _edit_record(mp, _set("model_type", lambda c, v: None))),
    "architecture": (dict(architecture="DeepseekV4ForCausalLM"), lambda mp: _edit_record(mp, _set("architecture", lambda c, v: None))),
    "has_hash_routing": (dict(has_hash_routing=True), lambda mp: _edit_record(mp, _set("has_hash_routing", lambda c, v: False))),
    "require_decomposed": (dict(require_decomposed=True), lambda mp: _edit_record(mp, _set("require_decomposed", lambda c, v: False))),
    # 60 experts in 8 groups (vLLM's router routes them ungrouped); the plant reads any grouping as dividing.
    "expert_groups_divide": (dict(num_experts=60, num_expert_group=8, topk_group=4, routing_method="deepseek_v3"),
                             lambda mp: _edit_record(mp, _set("expert_groups_divide", lambda c, v: True))),
    # DeepSeek-V3's 256 experts in 8 groups with 5 top groups (FlashInfer's grouped routing takes 4); the plant drops the topk_group limit.
    "trtllm_grouped_routing_fits": (dict(num_experts=256, num_expert_group=8, topk_group=5, routing_method="deepseek_v3"),
                                    lambda mp: _edit_record(mp, _set("trtllm_grouped_routing_fits", lambda c, v: True))),
    # top_k 10 of 256 experts: the FP8 block launcher takes 8 up to 384 experts; the plant applies the 22 of larger models.
    "trtllm_fp8_block_groups_fit": (dict(num_experts=256, top_k=10, num_expert_group=8, topk_group=4, routing_method="deepseek_v3"),
                                    lambda mp: _edit_record(mp, _set("trtllm_fp8_block_groups_fit", lambda c, v: c.top_k <= 22))),
    # Grouped softmax routing (2 of 8 groups): the plant reads only n_group <= 8 as fitting.
    "expert_groups_at_most_one": (dict(num_experts=64, num_expert_group=8, topk_group=2, routing_method="renormalize"),
                                  lambda mp: _edit_record(mp, _set("expert_groups_at_most_one", lambda c, v: True))),
    # TP 2 x DP 4 with EP and a model class that passes is_sequence_parallel; the plant forgets that
    # the class passes it (sp_size stays 1).
    "sequence_parallel": (dict(parallel__tp_size=2, parallel__dp_size=4, parallel__use_ep=True, parallel__sequence_parallel=True),
                          lambda mp: _edit_record(mp, _set("sequence_parallel", lambda c, v: False))),
    # Round-robin asked for on a layer without expert groups: vLLM places linearly; the plant
    # forgets the fallback and reads the request.
    "expert_placement": (dict(parallel__tp_size=4, parallel__use_ep=True, parallel__expert_placement_strategy="round_robin"),
                         lambda mp: _edit_record(mp, _set("expert_placement", lambda c, v: c.parallel.expert_placement_strategy))),
    # Not an input (vLLM asks its compiled extension): a changed engine constant is still caught.
    "cpu_amx_fp8": (dict(device=GPU_CATALOG["CPU_X86_64_AMX"].device), lambda mp: _edit_record(mp, _set("cpu_amx_fp8", lambda c, v: True))),
}


def test_every_derived_field_has_a_plant():
    assert sorted(PLANTS) == sorted(DERIVED_HERE)


@pytest.mark.parametrize("field", sorted(PLANTS))
def test_a_wrong_engine_derivation_fails_the_suite(monkeypatch, field):
    leaves, plant = PLANTS[field]
    case = pinned(Environment(), **leaves)
    before = inv.decide(case).normalized.values[field]
    assert _failures(case) == {}, "the unplanted case must pass every engine invariant"
    for memo in _MEMOS:
        memo.cache_clear()
    plant(monkeypatch)
    after = inv.decide(case).normalized.values[field]
    assert after != before, f"the plant does not change {field} on this case ({before!r})"
    failed = _failures(case)
    assert "normalized_values" in failed and field in failed["normalized_values"], failed


@pytest.mark.parametrize(("moe_backend", "path"), [("deep_gemm", "pad"), ("triton", "refine"), ("auto", "refine")])
def test_both_fp8_block_paths_are_compared(moe_backend, path):
    # The ci strategies draw no quant_method fp8, so the block rule's refine and pad paths are
    # held here: TP 2 cuts the 128x128 blocks of a 384 intermediate (shard 192); an explicit
    # non-Triton backend pads the shard, Triton and auto refine the block.
    case = pinned(Environment(), quant=SCHEMES["fp8_block"], quant_method="fp8", parallel__tp_size=2, intermediate_size=384, moe_backend=moe_backend)
    v = inv.decide(case).normalized.values
    reached = v["intermediate_size_per_partition"] != 192 if path == "pad" else v["weight_block"] != v["weight_block_size"]
    assert reached, f"the case does not reach the {path} path"
    assert _failures(case) == {}
