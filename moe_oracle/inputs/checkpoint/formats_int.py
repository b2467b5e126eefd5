"""Routed experts of the integer weight-only formats (``gptq``, ``awq``, ``moe_wna16``), as vLLM
reads them (Q/gptq*.py, Q/awq*.py, Q/moe_wna16.py, vLLM 0.29.0-0.33.0)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ...core.quant import SCHEMES
from . import matching as m
from .quant_records import ExpertsQuant, excluded, family_of, require_keys, str_list

if TYPE_CHECKING:
    from .quant_formats import QuantFormat

__all__ = ["awq_experts", "gptq_desc_act", "gptq_experts", "moe_wna16_experts"]


def gptq_desc_act(q: QuantFormat, desc: Any, gs: Any, dynamic: Mapping[str, Any]) -> None:
    """``normalize_and_validate_gptq_desc_act`` (Q/utils/gptq_utils.py, 0.30.0+, fact
    ``gptq_desc_act_refused``): desc_act with groups, in the document or a positive dynamic rule,
    refuses the checkpoint; vLLM 0.29.0 runs it (activation reordering with g_idx)."""
    if not q.release.holds("gptq_desc_act_refused"):
        return
    if desc and gs != -1:
        raise q.fail(".desc_act", f"{q.release.words} refuses GPTQ group activation ordering: 'desc_act=True is no longer supported' (vLLM 0.29.0 still runs it)", desc, [False])
    for pattern, ov in dynamic.items():
        if isinstance(pattern, str) and not pattern.startswith("-:") and isinstance(ov, dict) and ov.get("desc_act", desc) and ov.get("group_size", gs) != -1:
            raise q.fail(f".dynamic.{pattern}", f"{q.release.words} refuses GPTQ group activation ordering enabled by a dynamic rule (vLLM 0.29.0 still runs it)", ov, None)


def gptq_experts(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """Q/auto_gptq.py ``AutoGPTQConfig``: ``dynamic`` rules, desc_act refusal (0.30.0+), MoE via
    Marlin (AutoGPTQMoEMethod) when the shape allows it, else MoeWNA16 (decided by the tables from
    ``weight_group_size``, ``act_order`` and the per-partition intermediate size). desc_act with
    one group per channel is a no-op (``act_order`` ``none``), as ``AutoGPTQConfig`` normalizes it."""
    require_keys(q, ("bits", "group_size", "desc_act", "sym"), "AutoGPTQConfig")
    c = q.config
    bits, gs, desc, sym = c["bits"], c["group_size"], c["desc_act"], c["sym"]
    dynamic = c.get("dynamic") or {}
    if not isinstance(dynamic, dict):
        raise q.fail(".dynamic", "must be an object of regex -> overrides", dynamic)
    gptq_desc_act(q, desc, gs, dynamic)
    if desc and gs == -1:
        desc = False  # AutoGPTQConfig.__init__: one group per output channel
    rule = m.gptq_dynamic_rule(module, dynamic)
    note = ()
    if rule is not None and rule[1] is False:
        return excluded(q, rule[0], "GPTQModel dynamic '-:' rule")
    if rule is not None:
        ov = rule[1] if isinstance(rule[1], dict) else {}
        bits, gs, sym = ov.get("bits", bits), ov.get("group_size", gs), ov.get("sym", sym)
        desc = ov["desc_act"] if isinstance(ov.get("desc_act"), bool) else desc  # override_config (0.29.0's get_moe_quant_method)
        note = (f"dynamic rule {rule[0]!r} overrides {sorted(ov)}",)
    if (bits, sym) not in ((4, True), (8, True)):
        raise q.fail(".bits", "Unsupported quantization config for AutoGPTQ MoE (bits, sym)", {"bits": bits, "sym": sym}, [{"bits": 4, "sym": True}, {"bits": 8, "sym": True}])
    scheme = SCHEMES["int8_w16"] if bits == 8 else SCHEMES["int4_g32_w16" if gs == 32 else "int4_w16"]
    order = "group" if desc and gs != -1 else "none"
    act = " (desc_act with one group per channel is a no-op)" if c["desc_act"] and gs == -1 else (f" with desc_act (activation reordering, {q.release.words})" if order == "group" else "")
    return ExpertsQuant(scheme, family_of(q), weight_group_size=gs, evidence=f"{q.source}: GPTQ {bits}-bit, group {gs}{act} (AutoGPTQMoEMethod on Marlin when hidden % 128 == 0 and the partition divides by the group, else MoeWNA16)", notes=note, act_order=order)


def awq_experts(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """Q/auto_awq.py ``AutoAWQConfig``: substring exclusion, zero points, Marlin or MoeWNA16."""
    c = q.config
    bits, gs, zp = c.get("bits", c.get("w_bit")), c.get("group_size", c.get("q_group_size")), c.get("zero_point", True)
    if bits is None or gs is None:
        raise q.fail(".bits", "AWQ requires bits (w_bit) and group_size (q_group_size)", {"bits": bits, "group_size": gs}, None)
    hit = m.vllm_is_layer_skipped(module, str_list(c.get("modules_to_not_convert")), "substring")
    if hit is not None:
        return excluded(q, hit, "AutoAWQ is_layer_skipped, substring mode")
    if bits != 4:
        raise q.fail(".bits", "AWQ MoE supports 4-bit weights", bits, [4])
    scheme = SCHEMES[("int4_g32" if gs == 32 else "int4") + ("_asym" if zp else "") + "_w16"]
    return ExpertsQuant(scheme, family_of(q), weight_group_size=gs, evidence=f"{q.source}: AWQ 4-bit, group {gs}, {'zero points' if zp else 'symmetric'} (AutoAWQMoEMethod on Marlin when the shape allows it, else MoeWNA16)")


def moe_wna16_experts(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """Q/moe_wna16.py ``MoeWNA16Config`` (``--quantization moe_wna16`` over a GPTQ/AWQ checkpoint)."""
    c = q.config
    lin = c.get("quant_method")
    if lin not in ("gptq", "awq", "awq_marlin"):
        raise q.fail(".quant_method", "moe_wna16 only support gptq and awq", lin, ["gptq", "awq"])
    require_keys(q, ("bits", "group_size"), "MoeWNA16Config")
    bits, gs = c["bits"], c["group_size"]
    order = None
    if lin == "gptq":
        dynamic = c.get("dynamic") or {}
        desc = c.get("desc_act", False)
        gptq_desc_act(q, desc, gs, dynamic if isinstance(dynamic, dict) else {})
        order = "group" if desc and gs != -1 else "none"
    zp = (not c.get("sym", True)) if lin == "gptq" else bool(c.get("zero_point"))
    skip = [] if lin == "gptq" else str_list(c.get("modules_to_not_convert"))
    hit = m.substring_skipped(module, skip)
    if hit is not None:
        return excluded(q, hit, "moe_wna16 is_layer_skipped_quant (substring)")
    if bits not in (4, 8):
        raise q.fail(".bits", "moe_wna16 supports 4- and 8-bit weights", bits, [4, 8])
    if bits == 8:
        scheme = SCHEMES["int8_w16"]
    else:
        scheme = SCHEMES[("int4_g32" if gs == 32 else "int4") + ("_asym" if zp else "") + "_w16"]
    return ExpertsQuant(scheme, family_of(q), weight_group_size=gs, evidence=f"{q.source}: --quantization moe_wna16 over {lin}: {bits}-bit, group {gs}{', zero points' if zp else ''} (MoeWNA16Method)", act_order=order)
