"""The reference model's own derivation of the normalized record's derived fields (issue 25).

Every field here is computed from ``MoEConfig`` (and, for the FP8 weight block, the
``blocks`` of ``rules/frontends.yaml`` read by the reference model) as vLLM's source defines it;
nothing is imported from ``moe_oracle.core.normalize``, ``padding`` or the compiler: only
vocabulary (``Platform``, ``Source``, ``QUANT_KEYS`` attributes). The engine's record is compared
with these values by ``tests/property/invariants.py check_normalized_values``, and
``tests/property/test_reference_fields_catch_faults.py`` plants a wrong engine derivation of each
field and shows the invariants fail.

What vLLM defines (citations: release and path; ``Q/`` = model_executor/layers/quantization,
``L/`` = model_executor/layers/fused_moe):

* the MoE TP shard: the TP group flattened over DP, one rank per expert shard with EP
  (vLLM 0.33.0 L/config.py ``FusedMoEParallelConfig.make`` / ``flatten_tp_across_dp_and_pcp``);
* ``marlin_moe_supported``: 0.33.0 Q/utils/marlin_utils.py ``check_moe_marlin_supports_config``
  (never on ROCm; hidden % 128; group in -1/32/64/128; with tile padding only whole groups per
  shard, without it the shard a multiple of max(64, group)); tile padding is refused for runtime
  activation ordering (0.29.0 compressed_tensors_moe_wna16.py ``allow_tile_padding=not
  is_actorder``, is_actorder = GROUP or DYNAMIC; 0.29.0 Q/auto_gptq.py ``not self.desc_act``);
  per channel the ordering is a no-op (0.33.0 Q/utils/gptq_utils.py); AWQ has none and always
  allows tile padding (0.29.0-0.34.0 Q/auto_awq.py ``allow_tile_padding=True``). Unknown when the group
  size is, or when an unknown ordering decides the answer;
* ``moe_quant_method``: GPTQ and AWQ hand a layer Marlin cannot serve to MoeWNA16 (0.33.0
  Q/auto_gptq.py and Q/auto_awq.py ``get_quant_method``: ``MoeWNA16Config...get_quant_method``);
* ``mxfp4_selector``: ``quant_method: mxfp4`` is GptOssMxfp4Config only for ``model_type ==
  "gpt_oss"`` (0.33.0 Q/mxfp4.py ``override_quantization_method``), whose method calls
  ``select_mxfp4_moe_backend``; otherwise Mxfp4Config's Mxfp4MoEMethod calls
  ``select_deepseek_v4_mxfp4_moe_backend`` (Q/mxfp4.py line ~578), as the FP8 DeepSeek-V4 configs
  do; compressed-tensors MXFP4 is CompressedTensorsW4A4Mxfp4MoEMethod's own choice
  (compressed_tensors_moe_w4a4_mxfp4.py); any other method, or none, the generic selector. An
  unknown model type under ``mxfp4`` is GPT-OSS (the published ``mxfp4`` checkpoints) unless
  the layer's given fields rule GPT-OSS out (0.33.0 models/gpt_oss.py MLPBlock: swigluoai,
  biases, softmax routing, no hash routing);
* ``selector_activation_quant``: Mxfp4MoEMethod, GptOssMxfp4MoEMethod and the compressed-tensors
  MXFP4 method call ``select_mxfp4_moe_backend(moe)`` without an activation key (Q/mxfp4.py
  line ~158, compressed_tensors_moe_w4a4_mxfp4.py line ~65);
* FP8 weight blocks: the checkpoint's ``weight_block_size`` (DeepSeek's 128x128 when a block key
  does not say); ``create_weights`` checks it (0.33.0 Q/utils/fp8_utils.py
  ``validate_fp8_block_shape_moe``: shard % block_n, and shard % block_k when the *attention* TP
  group has more than one rank); the front end's block rule (rules/frontends.yaml ``blocks``)
  refines (0.33.0 L/oracle/fp8.py ``refine_fp8_moe_block_shape``: gcd of both block sides, the
  shard and the hidden size, at least ``min_block``, when the MoE TP shard cuts a block), pads
  (``pad_tp_shard_to_weight_blocks`` via ``resolve_fp8_moe_weight_block_shape``: only for an
  explicit backend none of whose kernels takes the refined block, a square block cut by an MoE
  TP > 1 shard; needs block-aligned global dims, no EP, LoRA or bias, else ValueError) or fixes
  the key's block (compressed-tensors);
* weight groups: ``create_weights`` of the WNA16 methods needs whole groups in the hidden size
  and the shard, against the hidden size the all2all kernels round up to (0.33.0
  L/all2all_utils.py ``maybe_roundup_layer_hidden_size`` runs before ``create_weights``);
* ``experts_even_across_ep``: 0.33.0 L/layer.py (EPLB: ``global_num_experts % ep_size``, with
  ``global_num_experts = num_experts + num_redundant_experts``);
* ``sequence_parallel``: 0.34.0 vllm/config/parallel.py ``use_sequence_parallel_moe`` (EP, TP > 1,
  DP > 1; its all2all list and the model class are the inputs door's, held in
  ``parallel.sequence_parallel``), which P/layer.py ``make_parallel_config`` turns into ``sp_size``;
* ``expert_placement``: 0.34.0 P/expert_map_manager.py ``ExpertMapManager.__init__``: with EP,
  ``determine_expert_placement_strategy`` keeps ``round_robin`` only for more than one expert group
  without redundant experts or EPLB, and only where ``use_all2all_kernels`` (EP and DP > 1, PCP > 1
  or sequence parallelism) implies ``needs_round_robin_routing_tables`` (DeepEP low-latency, NIXL
  EP); then ``_determine_placement_strategy`` makes it ``linear`` for ``ep_size == 1``;
* SwiGLU / SiTU parameters: the model's config values, ``none`` when unset (0.33.0
  L/routed_experts.py keeps ``swiglu_limit/alpha/beta`` as given).

Not derivable from the inputs: ``cpu_amx_fp8`` (vLLM asks the compiled extension,
``torch.ops._C.cpu_has_amx_fp8``; ``Device`` carries no such flag, so both sides state the same
assumption, false). It is still set here, not taken from the engine, so a changed engine
constant is a difference; that the assumption is right is not tested (see the module's report).
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from moe_oracle.core.config import MoEConfig
from moe_oracle.core.quant import QUANT_KEYS
from moe_oracle.core.vocab import Platform, Source

__all__ = ["DERIVED_HERE", "checkpoint_format", "derived_fields", "fp8_block_fields", "marlin_moe_fits", "serving_method"]

# vLLM's name for an override's method -> the checkpoint format the tables key on (vLLM 0.33.0
# vllm/config/model.py _verify_quantization overrides: ModelOpt FP4/MXFP8/mixed, DeepSeek-V4 FP8,
# the GPTQ/AWQ Marlin names; 0.34.0 Q/w4afp8.py hands its experts to compressed-tensors).
_OVERRIDE_FORMAT = {
    "modelopt_fp4": "modelopt", "modelopt_mxfp8": "modelopt", "modelopt_mixed": "modelopt",
    "deepseek_v4_fp8": "fp8", "auto_gptq": "gptq", "auto_awq": "awq", "awq_marlin": "awq",
    "w4afp8": "compressed-tensors",
}
_MARLIN_GROUPS = (-1, 32, 64, 128)
_RUNTIME_ORDERING = ("group", "dynamic")  # compressed-tensors ActivationOrdering GROUP / DYNAMIC
_DSV4_MXFP4_FORMATS = ("fp8", "deepseek_v4_fp8", "deepseek_v41_fp8")
_UNKEYED_MXFP4_FORMATS = ("mxfp4", "gpt_oss_mxfp4", "compressed-tensors")
_GPT_OSS_ROUTING = ("renormalize", "renormalize_naive", "default", "unspecified")

DERIVED_HERE = (
    "moe_quant_method", "marlin_moe_supported", "mxfp4_selector", "selector_activation_quant",
    "weight_block_size", "weight_block", "weight_block_aligned", "weight_block_pad_refused",
    "weight_groups_aligned", "padded_weight_groups_aligned", "experts_even_across_ep",
    "swiglu_params", "swiglu_alpha", "swiglu_beta", "situ_beta", "situ_linear_beta",
    "model_type", "architecture", "has_hash_routing", "require_decomposed", "cpu_amx_fp8",
    "expert_groups_divide", "trtllm_grouped_routing_fits", "trtllm_fp8_block_groups_fit", "expert_groups_at_most_one",
    "sequence_parallel", "expert_placement",
)
"""The record's fields this module derives (the ones the reference model once took from the engine)."""


def _trtllm_grouped_fits(config: MoEConfig) -> bool:
    n, e = config.num_expert_group, config.num_experts
    if n is None or n < 2 or e % n != 0:
        return True
    checks = (n <= 8, e // n <= 32, (config.topk_group or 0) <= 4, config.top_k <= 22, e % 4 == 0, e <= 512)
    return all(checks)


def _trtllm_fp8_block_fits(config: MoEConfig) -> bool:
    n, g, e, k = config.num_expert_group, config.topk_group, config.num_experts, config.top_k
    if n is None:
        return True
    if not n or not g:
        return False
    if e % n != 0:
        return True
    top_k_cap = 22 if e > 384 else 8
    return k <= top_k_cap and 1 <= g <= min(4, n) and k < (g * e) // n


def _expert_placement(config: MoEConfig, sequence_parallel: bool | None) -> str:
    """The placement ``ExpertMapManager`` ends with (see the module docstring)."""
    par = config.parallel
    requested = par.expert_placement_strategy
    ep_size = par.tp_size * par.pcp_size * par.dp_size if par.use_ep else 1
    use_ep = ep_size > 1  # FusedMoEParallelConfig.use_ep
    if requested != "round_robin":
        return requested
    if not use_ep:
        return "linear"  # _determine_placement_strategy: ep_size == 1
    groups = config.num_expert_group
    if not (groups is not None and groups > 1 and par.num_redundant_experts == 0 and not par.enable_eplb):
        return "linear"
    use_all2all_kernels = par.dp_size > 1 or par.pcp_size > 1 or bool(sequence_parallel)
    needs_round_robin_routing_tables = use_all2all_kernels and par.all2all_backend.value in ("deepep_low_latency", "nixl_ep")
    if use_all2all_kernels and not needs_round_robin_routing_tables:
        return "linear"
    return "round_robin"


def checkpoint_format(name: str | None) -> str | None:
    """The format the tables read for a config's ``quant_method`` (an override's name -> its format)."""
    return None if name is None else _OVERRIDE_FORMAT.get(name, name)


def _moe_shard(config: MoEConfig) -> int:
    par = config.parallel
    ranks = par.tp_size * par.pcp_size * par.dp_size
    return config.intermediate_size if (par.use_ep and ranks > 1) else config.intermediate_size // ranks


def marlin_moe_fits(config: MoEConfig) -> bool | None:
    """vLLM ``check_moe_marlin_supports_config`` for the layer (see the module docstring)."""
    if config.device.platform is Platform.ROCM:
        return False
    group = config.weight_group_size
    if group is None:
        return None
    shard = _moe_shard(config)
    if config.hidden_size % 128 or group not in _MARLIN_GROUPS:
        return False
    with_padding = group == -1 or shard % group == 0
    without_padding = shard % max(64, group) == 0
    if group == -1 or checkpoint_format(config.quant_method) == "awq":
        return with_padding  # no ordering per channel; AWQ always allows tile padding
    ordering = config.act_order
    if ordering is None:
        return with_padding if with_padding == without_padding else None
    return without_padding if ordering in _RUNTIME_ORDERING else with_padding


def serving_method(fmt: str | None, marlin: bool | None) -> str | None:
    """The quantization method that builds the MoE layer (GPTQ/AWQ fall back to MoeWNA16)."""
    if fmt not in ("gptq", "awq"):
        return fmt
    if marlin is None:
        return None
    return fmt if marlin else "moe_wna16"


def _given(config: MoEConfig, name: str) -> bool:
    """Somebody set ``name`` (a provenance that is not a default, else a non-default value)."""
    rec = next((p for p in config.provenance if p.field == name), None)
    if rec is not None:
        return rec.source is not Source.DEFAULT
    default = type(config).__dataclass_fields__[name].default
    return getattr(config, name) != default


def _rules_out_gpt_oss(config: MoEConfig) -> bool:
    if config.has_hash_routing:
        return True
    if _given(config, "routing_method") and config.routing_method.value not in _GPT_OSS_ROUTING:
        return True
    if _given(config, "activation") and config.activation.value != "swigluoai":
        return True
    return _given(config, "has_bias") and config.has_bias is False


def _mxfp4_entry(weight: str | None, fmt: str | None, config: MoEConfig) -> str:
    if weight != "mxfp4_static":
        return "none"
    if fmt == "mxfp4":
        if config.model_type == "gpt_oss":
            return "generic"
        if config.model_type is not None:
            return "deepseek_v4"
        return "deepseek_v4" if _rules_out_gpt_oss(config) else "generic"
    if fmt == "compressed-tensors":
        return "compressed_tensors"
    return "deepseek_v4" if fmt in _DSV4_MXFP4_FORMATS else "generic"


def _block_key(weight: str | None) -> bool:
    return weight is not None and QUANT_KEYS[weight].granularity.name.startswith("BLOCK")


def _divides_shard(shard: int, bn: int, bk: int, attention_tp: int) -> bool:
    return shard % bn == 0 and (attention_tp <= 1 or shard % bk == 0)


def derived_fields(config: MoEConfig, weight: str | None, activation: str | None, padded_hidden: int) -> dict[str, Any]:
    """The derived fields of one layer, before the front end's block rule (:func:`fp8_block_fields`).

    ``weight`` / ``activation``: the keys the quantization method passes (after the WNA16 rewrite);
    ``padded_hidden``: the hidden size create_weights gets.
    """
    fmt = checkpoint_format(config.quant_method)
    marlin = marlin_moe_fits(config)
    par = config.parallel
    ranks = par.tp_size * par.pcp_size * par.dp_size
    ep = ranks if (par.use_ep and ranks > 1) else 1
    shard = _moe_shard(config)
    group = config.weight_group_size
    out: dict[str, Any] = {
        "marlin_moe_supported": marlin,
        "moe_quant_method": serving_method(fmt if fmt is not None else ("none" if config.quant.weight is None else None), marlin),
        "mxfp4_selector": _mxfp4_entry(weight, fmt, config),
        "selector_activation_quant": "none" if (weight == "mxfp4_static" and fmt in _UNKEYED_MXFP4_FORMATS) else (activation or "none"),
        "weight_groups_aligned": None if group is None else (group == -1 or (config.hidden_size % group == 0 and shard % group == 0)),
        "padded_weight_groups_aligned": None if group is None else (group == -1 or (padded_hidden % group == 0 and shard % group == 0)),
        "experts_even_across_ep": ep == 1 or (config.num_experts + par.num_redundant_experts) % ep == 0,
        # vLLM 0.34.0 vllm/config/parallel.py use_sequence_parallel_moe is false unless
        # enable_expert_parallel, tensor_parallel_size > 1 and data_parallel_size > 1; where it can
        # hold, what the model class passes (parallel.sequence_parallel; None: not known).
        "sequence_parallel": par.sequence_parallel if (par.use_ep and par.tp_size > 1 and par.dp_size > 1) else False,
        "expert_placement": _expert_placement(config, par.sequence_parallel if (par.use_ep and par.tp_size > 1 and par.dp_size > 1) else False),
        "swiglu_params": not (config.swiglu_limit is None and config.swiglu_alpha is None and config.swiglu_beta is None),
        "model_type": config.model_type,
        "architecture": config.architecture,
        "has_hash_routing": config.has_hash_routing,
        "require_decomposed": config.require_decomposed,
        # FlashInfer's TRT-LLM DeepSeekV3 routing: num_experts % n_group == 0 (csrc/trtllm_fused_moe_kernel_launcher.cu).
        "expert_groups_divide": config.num_expert_group is None or config.num_experts % config.num_expert_group == 0,
        # FlashInfer's TRT-LLM routing limits (Routing::Runner, routingDeepSeek, Fp8BlockScaleLauncher::check_routing).
        "trtllm_grouped_routing_fits": _trtllm_grouped_fits(config),
        "trtllm_fp8_block_groups_fit": _trtllm_fp8_block_fits(config),
        "expert_groups_at_most_one": (config.num_expert_group or 0) < 2 and (config.topk_group or 0) < 2,
        "cpu_amx_fp8": False,  # not an input: see the module docstring
        "weight_block_pad_refused": False,
    }
    for name in ("swiglu_alpha", "swiglu_beta", "situ_beta", "situ_linear_beta"):
        value = getattr(config, name)
        out[name] = "none" if value is None else value
    if _block_key(weight):
        bn, bk = config.weight_block_size if config.weight_block_size is not None else (128, 128)
        out["weight_block_size"] = out["weight_block"] = f"{bn}x{bk}"
        out["weight_block_aligned"] = _divides_shard(shard, bn, bk, par.tp_size)
    else:
        out["weight_block_size"] = out["weight_block"] = "none"
        out["weight_block_aligned"] = True
    return out


def fp8_block_fields(v: Mapping[str, Any], rule: Mapping[str, Any], requested: tuple[str, ...] | None, refinable: tuple[str, ...]) -> dict[str, Any]:
    """The fields a front end's block rule (rules/frontends.yaml ``blocks``, its ``when`` holding)
    changes, as vLLM 0.33.0 L/oracle/fp8.py ``resolve_fp8_moe_weight_block_shape`` does.

    ``requested``: the backends an explicit ``moe_backend`` names (``None`` for auto or an
    environment override); ``refinable``: the rule's backends whose kernels take a refined block.
    """
    if "key_block" in rule:
        n, k = rule["key_block"]
        if rule.get("online"):
            # the method quantizes the BF16 weights at load: no checkpoint block, none checked
            # (vLLM 0.29.0-0.34.0 Q/online/fp8.py Fp8PerBlockOnlineMoEMethod, create_weights)
            return {"weight_block": f"{n}x{k}", "weight_block_size": "none", "weight_block_aligned": True}
        return {"weight_block": f"{n}x{k}"}
    bn, bk = (int(x) for x in v["weight_block"].split("x"))
    shard, moe_tp, hidden = v["intermediate_size_per_partition"], v["moe_tp_size"], v["hidden_size"]
    cut = shard % bn != 0 or (moe_tp > 1 and shard % bk != 0)
    refined = None
    if rule.get("refine") and cut:
        side = math.gcd(math.gcd(bn, bk), math.gcd(shard, hidden))
        refined = side if side >= rule.get("min_block", 0) else None
    if rule.get("pad") and requested is not None:
        refines = refined is not None and bool(set(requested) & set(refinable))
        if not refines and bn == bk and moe_tp > 1 and shard % bn != 0:
            if v["intermediate_size"] % bn or hidden % bn or v["ep_size"] > 1 or v["lora"] or v["has_bias"]:
                return {"weight_block_pad_refused": True}
            grown = (shard + bn - 1) // bn * bn
            return {"intermediate_size_per_partition": grown, "weight_block_aligned": _divides_shard(grown, bn, bk, v["tp_size"])}
    if refined is None:
        return {}
    return {"weight_block": f"{refined}x{refined}", "weight_block_aligned": True}
