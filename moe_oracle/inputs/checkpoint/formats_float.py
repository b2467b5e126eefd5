"""Routed experts of the FP8 formats (``fp8``, DeepSeek-V4 ``deepseek_v4_fp8``, ``fbgemm_fp8``, and
0.34.0's ``w4afp8``, an FP8 config whose experts are INT4), MXFP4 (``mxfp4``, ``gpt_oss_mxfp4``) and
0.34.0's online ``lut_b_moe`` (LUT-B weights with MXFP8 activations) and the online FP8 shorthands
(``fp8_per_tensor``, ``fp8_per_block``, ``fp8_per_channel``), as vLLM 0.29.0-0.34.0 reads them
(Q/ = vllm/model_executor/layers/quantization/)."""

from __future__ import annotations

import fnmatch

from typing import TYPE_CHECKING, Any

from ...core.quant import SCHEMES, UNQUANTIZED
from . import matching as m
from .quant_records import ExpertsQuant, excluded, family_of, issue, str_list

if TYPE_CHECKING:
    from .quant_formats import QuantFormat

__all__ = ["ONLINE_FP8", "deepseek_v4_experts", "fbgemm_experts", "fp8_block", "fp8_experts", "fp8_online_experts", "lut_b_experts", "mxfp4_experts", "w4afp8_experts"]


def fp8_block(q: QuantFormat, block: Any, path: str) -> tuple[int, int]:
    if not isinstance(block, list) or len(block) != 2 or not all(isinstance(b, int) and not isinstance(b, bool) and b >= 1 for b in block):
        raise q.fail(path, "the block size of FP8 weights must be [block_n, block_k], two positive integers (Fp8Config)", block, {"length": 2})
    return (block[0], block[1])


def fp8_experts(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """Q/fp8.py ``Fp8Config.from_config`` / ``get_quant_method`` / ``Fp8MoEMethod``."""
    c = q.config
    scheme = c.get("activation_scheme")
    if scheme is None:
        raise q.fail(".activation_scheme", "Fp8Config requires activation_scheme", None, ["static", "dynamic"])
    if scheme not in ("static", "dynamic"):
        raise q.fail(".activation_scheme", "unsupported activation scheme (Fp8Config)", scheme, ["static", "dynamic"])
    block = c.get("weight_block_size")
    if block is not None:
        if not isinstance(block, list) or len(block) != 2:
            raise q.fail(".weight_block_size", "the quantization block size of weight must have 2 dimensions (Fp8Config)", block, {"length": 2})
        if scheme != "dynamic":
            raise q.fail(".activation_scheme", f"{q.release.words} refuses an FP8 block checkpoint with static activations: 'The block-wise quantization only supports dynamic activation scheme'", scheme, ["dynamic"])
    ignored = str_list(c.get("ignored_layers")) or str_list(c.get("modules_to_not_convert"))
    hit = m.vllm_is_layer_skipped(module, ignored)
    if hit is not None:
        return excluded(q, hit, "is_layer_skipped, exact mode: an ignored name containing 'experts' contains the experts prefix")
    if q.method == "deepseek_v4_fp8":
        return deepseek_v4_experts(q, block, module)
    if c.get("store_dtype") == "mxfp4":
        return ExpertsQuant(SCHEMES["mxfp4_w16"], "mxfp4", evidence=f"{q.source}: fp8 with store_dtype mxfp4: Fp8Config builds Mxfp4MoEMethod (no activation key)")
    if block is not None:
        b = fp8_block(q, block, ".weight_block_size")
        return ExpertsQuant(SCHEMES["fp8_block"], family_of(q), weight_block_size=b, evidence=f"{q.source}: fp8 with weight_block_size {list(b)}: Fp8MoEMethod (block weights, dynamic 1x{b[1]} activations)")
    if scheme == "static":
        return ExpertsQuant(SCHEMES["fp8_tensor_static"], family_of(q), evidence=f"{q.source}: fp8 per-tensor, static activations (Fp8MoEMethod)")
    return ExpertsQuant(SCHEMES["fp8_tensor_dynamic"], family_of(q), evidence=f"{q.source}: fp8 per-tensor, dynamic per-tensor activations (Fp8MoEMethod; per-token under VLLM_BATCH_INVARIANT)")


def w4afp8_experts(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """vLLM 0.34.0 Q/w4afp8.py ``W4AFP8Config``: ``from_config`` reads ``group_size`` (default 128)
    and ``ignored_layers`` / ``modules_to_not_convert``; ``get_quant_method`` gives routed experts
    that ``is_layer_skipped`` keeps ``CompressedTensorsW4A8Fp8MoEMethod`` with symmetric INT4
    group weights and dynamic FP8 per-token activations (the W4A8-FP8 keys), whose constructor
    refuses any group size but 128 (the tables' compressed-tensors W4A8-FP8 rules check it:
    ``weight_group_size``). ``-q w4afp8`` on a checkpoint without a document builds
    ``W4AFP8Config()``: the same with the defaults."""
    c = q.config
    group = c.get("group_size", 128)
    if isinstance(group, bool) or not isinstance(group, int) or group < 1:
        raise q.fail(".group_size", "W4AFP8Config's group_size must be a positive integer (INT4 weight groups)", group, {"minimum": 1})
    ignored = str_list(c.get("ignored_layers")) or str_list(c.get("modules_to_not_convert"))
    hit = m.vllm_is_layer_skipped(module, ignored)
    if hit is not None:
        return excluded(q, hit, "W4AFP8Config.get_quant_method: is_layer_skipped, exact mode")
    return ExpertsQuant(SCHEMES["w4a8_fp8"], family_of(q), weight_group_size=group,
                        evidence=f"{q.source}: w4afp8: W4AFP8Config gives the routed experts CompressedTensorsW4A8Fp8MoEMethod (symmetric INT4 weights in groups of {group}, dynamic FP8 per-token activations)")


def lut_b_experts(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """vLLM 0.34.0 ``--quantization lut_b_moe`` (vllm/config/quantization.py ``_ONLINE_SHORTHANDS``:
    ``moe=QuantSpec(weight=kLutBStatic)``, no linear spec): every routed-experts layer gets
    ``LutBOnlineMoEMethod`` (Q/online/base.py ``_ONLINE_MOE_METHODS``), LUT-B weights quantized at
    load with MXFP8 dynamic activations (Q/online/lut_b.py); the method keeps no ignore list of
    its own. Only the serve line's flag writes this document (:mod:`moe_oracle.inputs.serve_apply`)."""
    return ExpertsQuant(SCHEMES["lut_b"], family_of(q),
                        evidence=f"{q.source}: lut_b_moe: LutBOnlineMoEMethod quantizes the routed experts to LUT-B at load (3-bit codebook weights per 8x64 tile, dynamic MXFP8 activations)")


ONLINE_FP8: dict[str, tuple[str, str]] = {
    "fp8_per_tensor": ("fp8_tensor_dynamic", "Fp8PerTensorOnlineMoEMethod quantizes the routed experts at load: static per-tensor FP8 weights, dynamic per-tensor activations (per-token under VLLM_BATCH_INVARIANT from 0.33.0)"),
    "fp8_per_block": ("fp8_block", "Fp8PerBlockOnlineMoEMethod quantizes the routed experts at load: static 128x128-block FP8 weights, dynamic 1x128-group activations"),
    "fp8_per_channel": ("fp8_channel_token", "Fp8PtpcOnlineMoEMethod quantizes the routed experts at load: static per-channel FP8 weights, dynamic per-token activations"),
}
"""The online FP8 ``--quantization`` shorthands (vLLM 0.29.0-0.34.0 vllm/config/quantization.py
``_ONLINE_SHORTHANDS``) -> (the scheme their MoE method asks the FP8 oracle with, what it builds)."""


def fp8_online_experts(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """vLLM 0.29.0-0.34.0 ``--quantization fp8_per_tensor | fp8_per_block | fp8_per_channel``
    (vllm/config/quantization.py ``_ONLINE_SHORTHANDS``: ``moe=QuantSpec(weight=kFp8StaticTensorSym
    | kFp8Static128BlockSym | kFp8StaticChannelSym)``, no ignore list): every routed-experts layer
    gets the online method of Q/online/base.py ``_ONLINE_MOE_METHODS`` (Q/online/fp8.py
    ``Fp8PerTensorOnlineMoEMethod``, ``Fp8PerBlockOnlineMoEMethod``, ``Fp8PtpcOnlineMoEMethod``),
    which asks the FP8 oracle with the scheme's keys. The block is not the checkpoint's (there is
    none): rules/frontends.yaml frontend.fp8_per_block.online. Only the serve line's flag writes
    this document (:mod:`moe_oracle.inputs.serve_apply`)."""
    scheme, why = ONLINE_FP8[q.method or ""]
    return ExpertsQuant(SCHEMES[scheme], family_of(q), evidence=f"{q.source}: {q.method}: {why}")


def _dsv4_modelopt_ignored(q: QuantFormat, module: str) -> str | None:
    """The ``ignore`` pattern that keeps these NVFP4-export experts in the native MXFP4 format.

    vLLM 0.32.0+ on CUDA/ROCm quantize with ``vllm/models/deepseek_v41/quant_config.py
    DeepseekV4FP8Config`` (``Q/__init__.py get_quantization_config``), whose ``from_config``
    keeps the document's ``ignore`` list and whose ``_is_nvfp4_expert_layer`` names a layer
    ``layers.<i>.ffn.experts`` (target) or ``mtp.<k>.ffn.experts`` (draft, built as layer
    ``N + k``) and matches it with ``fnmatch.fnmatchcase``. ``module`` is our checkpoint name of
    the experts, which for DeepSeek-V4 is exactly that name.
    """
    if not q.release.holds("deepseek_v4_modelopt_ignore"):
        return None
    ignore = str_list(q.config.get("ignore"))
    name = module.removeprefix("model.")
    return next((p for p in ignore if fnmatch.fnmatchcase(name, p)), None)


def deepseek_v4_experts(q: QuantFormat, block: Any, module: str = "") -> ExpertsQuant:
    """vllm/models/deepseek_v4/quant_config.py ``DeepseekV4FP8Config.get_quant_method``: FP4 experts
    get ``Mxfp4MoEMethod``, with the activation key kMxfp8Dynamic from 0.33.0 (fact
    ``deepseek_v4_mxfp4_activation_key``; before, none); with ``moe_quant_algo`` NVFP4,
    ``ModelOptNvFp4FusedMoE``, except (0.32.0+, fact ``deepseek_v4_modelopt_ignore``) experts
    the document's ``ignore`` list names, which stay MXFP4 (:func:`_dsv4_modelopt_ignored`)."""
    dtype = q.expert_dtype or "fp4"
    if dtype not in ("fp4", "fp8"):
        raise issue(q.file, "$.expert_dtype", "Unsupported DeepSeek V4 expert_dtype (DeepseekV4FP8Config)", dtype, ["fp4", "fp8"])
    why = f"expert_dtype {dtype}" + ("" if q.expert_dtype else " (absent: vLLM assumes fp4)")
    if dtype == "fp4":
        algo = str(q.config.get("moe_quant_algo") or "").upper()
        kept = _dsv4_modelopt_ignored(q, module) if algo == "NVFP4" else None
        if kept is not None:
            why += f", moe_quant_algo NVFP4 but ignore entry {kept!r} names {module.removeprefix('model.')} (deepseek_v41/quant_config.py _is_nvfp4_expert_layer, the CUDA/ROCm class; native MXFP4 kept)"
        elif algo == "NVFP4":
            return ExpertsQuant(SCHEMES["nvfp4"], "modelopt", weight_group_size=16, evidence=f"{q.source}: deepseek_v4_fp8, {why}, moe_quant_algo NVFP4: ModelOptNvFp4FusedMoE (W4A4)")
        if not q.release.holds("deepseek_v4_mxfp4_activation_key"):
            return ExpertsQuant(SCHEMES["mxfp4_w16"], "mxfp4", evidence=f"{q.source}: deepseek_v4_fp8, {why}: Mxfp4MoEMethod with no activation key ({q.release.words}; 0.33.0 passes kMxfp8Dynamic)")
        return ExpertsQuant(SCHEMES["mxfp4_mxfp8"], "mxfp4", evidence=f"{q.source}: deepseek_v4_fp8, {why}: Mxfp4MoEMethod with activation key MXFP8 (kMxfp8Dynamic)")
    b = fp8_block(q, block, ".weight_block_size") if block is not None else None
    scheme = SCHEMES["fp8_block"] if b else SCHEMES["fp8_tensor_dynamic"]
    return ExpertsQuant(scheme, family_of(q), weight_block_size=b, evidence=f"{q.source}: deepseek_v4_fp8, {why}: Fp8MoEMethod" + (f" with {list(b)} blocks" if b else ""))


def fbgemm_experts(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """Q/fbgemm_fp8.py: ``get_quant_method`` returns nothing for RoutedExperts."""
    if "modules_to_not_convert" not in q.config or "activation_scale_ub" not in q.config:
        missing = [k for k in ("modules_to_not_convert", "activation_scale_ub") if k not in q.config]
        raise q.fail(f".{missing[0]}", "FBGEMMFp8Config requires modules_to_not_convert and activation_scale_ub", None, missing)
    return ExpertsQuant(UNQUANTIZED, None, excluded_by="(fbgemm_fp8 quantizes linear layers only)", evidence=f"{q.source}: fbgemm_fp8 gives RoutedExperts no quant method, so the experts run unquantized (FBGEMMFp8Config.get_quant_method)")


def mxfp4_experts(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """Q/mxfp4.py: every RoutedExperts gets the config's ``_make_moe_method``; no exclusion is read
    for experts. ``GptOssMxfp4Config`` (the method ``gpt_oss_mxfp4``, which its override claims for
    ``model_type: gpt_oss``) builds ``GptOssMxfp4MoEMethod``, ``Mxfp4Config`` ``Mxfp4MoEMethod``
    (vLLM 0.29.0-0.34.0 Q/mxfp4.py)."""
    listed = str_list(q.config.get("modules_to_not_convert"))
    hit = m.vllm_is_layer_skipped(module, listed)
    config_cls = "GptOssMxfp4Config" if q.method == "gpt_oss_mxfp4" else "Mxfp4Config"
    notes = (f"{hit!r} names these experts, but {config_cls} never skips RoutedExperts",) if hit else ()
    method_cls = "GptOssMxfp4MoEMethod" if q.method == "gpt_oss_mxfp4" else "Mxfp4MoEMethod"
    return ExpertsQuant(SCHEMES["mxfp4_w16"], family_of(q), weight_group_size=32, evidence=f"{q.source}: {q.method}: {method_cls} with no activation key (BF16-activation variants preferred)", notes=notes)
