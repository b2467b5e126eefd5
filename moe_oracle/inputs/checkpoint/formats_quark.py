"""Routed experts of a Quark checkpoint, as vLLM reads it (Q/quark/, vLLM 0.29.0-0.33.0; 0.29.0
reads it with its own ``get_moe_method``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping

from ...core.quant import SCHEMES, QuantScheme
from . import matching as m
from .quant_records import ExpertsQuant, excluded, family_of, str_list

if TYPE_CHECKING:
    from .quant_formats import QuantFormat

__all__ = ["quark_experts"]


def quark_experts(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """Q/quark/quark.py ``get_quant_method_target`` and quark_moe.py ``get_moe_method_target``
    (0.30.0+); vLLM 0.29.0's ``QuarkMoEMethod.get_moe_method`` reads the scheme dictionaries itself
    (:func:`_quark_v0_29`). W4A16 INT4 experts need 0.31.0, OCP MXFP8 experts 0.33.0 (facts
    ``quark_w4a16_int4_moe``, ``quark_mxfp8_moe``); OCP MXFP4 experts with dynamic FP8 or MXFP8
    activations are refused by every release (``QuarkOCP_MX_MoEMethod``)."""
    c = q.config
    if not isinstance(c.get("export"), dict):
        raise q.fail(".export", "The export key should be included in the configurations of Quark quantized model", c.get("export"), None)
    hit = m.quark_should_ignore(module, str_list(c.get("exclude")))
    if hit is not None:
        return excluded(q, hit, "Quark should_ignore_layer with check_children: a listed child ignores the whole MoE layer")
    layer_cfgs = c.get("layer_quant_config") or {}
    matched = m.quark_layer_config(module, layer_cfgs) if isinstance(layer_cfgs, dict) else None
    cfg = matched[1] if matched else c.get("global_quant_config")
    label = f"layer_quant_config[{matched[0]!r}]" if matched else "global_quant_config"
    if not isinstance(cfg, dict):
        raise q.fail(f".{label}", "must be an object", cfg)
    if cfg.get("output_tensors") or cfg.get("bias"):
        raise q.fail(f".{label}", "Currently, Quark models with output_tensors and bias quantized are not supported", {"output_tensors": cfg.get("output_tensors"), "bias": cfg.get("bias")}, None)
    w, a = cfg.get("weight"), cfg.get("input_tensors")
    src = f"{q.source}: quark {label}"
    if isinstance(w, list) or isinstance(a, list):
        if (isinstance(w, list) and len(w) > 1) or (isinstance(a, list) and len(a) > 1):
            raise q.fail(f".{label}.weight", "two-level Quark schemes (W4A8-FP8, NVFP4 lists) are not read by moe-oracle; we read FP8, OCP MX (MXFP4/MXFP8), INT8 and W4A16 INT4", w, None)
        if not q.release.holds("quark_quant_key_dispatch"):
            raise q.fail(f".{label}.weight", f"not modelled for {q.release.words}: its Quark MoE method reads a one-element scheme list as a dictionary (unwrapping starts in 0.30.0)", w, None)
        w = w[0] if isinstance(w, list) else w
        a = a[0] if isinstance(a, list) else a
    if not isinstance(w, dict):
        raise q.fail(f".{label}.weight", "Unsupported FusedMoe scheme (no weight quantization)", w, None)
    if not q.release.holds("quark_quant_key_dispatch"):
        return _quark_v0_29(q, w, a, label, src)
    wd, wq = w.get("dtype"), w.get("qscheme")
    if wd == "fp8_e4m3" and isinstance(a, dict) and a.get("dtype") == "fp8_e4m3" and not w.get("is_dynamic"):
        block = list(w.get("block_size") or [])
        if wq == "per_block" and block == [128, 128] and w.get("symmetric") is True:
            if not (a.get("is_dynamic") and a.get("qscheme") == "per_group" and a.get("group_size") == 128 and a.get("symmetric") is True):
                raise q.fail(f".{label}.input_tensors", "Unsupported FusedMoe scheme: block FP8 weights need dynamic symmetric per_group-128 FP8 inputs", dict(a), None)
            if w.get("scale_type") == "float8_e8m0fnu":
                raise q.fail(f".{label}.weight.scale_type", "Unsupported weight quant key: QuarkW8A8Fp8MoEMethod does not take kFp8Static128BlockE8M0Sym", "float8_e8m0fnu", None)
            return ExpertsQuant(SCHEMES["fp8_block"], family_of(q), weight_block_size=(128, 128), evidence=f"{src}: FP8 [128, 128] blocks, dynamic per-group activations (QuarkW8A8Fp8MoEMethod)")
        if wq in ("per_tensor", "per_channel"):
            wkey = "fp8_static_channel" if wq == "per_channel" else "fp8_static_tensor"
            if a.get("is_dynamic"):
                akey = "fp8_dynamic_token" if a.get("qscheme") == "per_channel" else "fp8_dynamic_tensor"
            elif a.get("qscheme") == "per_tensor":
                akey = "fp8_static_tensor"
            else:
                raise q.fail(f".{label}.input_tensors.qscheme", "Unsupported FusedMoe scheme: static FP8 inputs must be per_tensor", a.get("qscheme"), ["per_tensor"])
            return ExpertsQuant(QuantScheme(wkey, akey), family_of(q), evidence=f"{src}: FP8 {wq} weights, {'dynamic' if a.get('is_dynamic') else 'static'} {a.get('qscheme')} inputs (QuarkW8A8Fp8MoEMethod)")
    if isinstance(wd, str) and wd.replace("fp", "mxfp") in ("mxfp4", "mxfp8_e4m3", "mxfp6_e3m2", "mxfp6_e2m3"):
        mx = wd.replace("fp", "mxfp")
        ok = (wq == "per_group" and w.get("group_size") == 32 and w.get("scale_format") == "e8m0") or (mx == "mxfp8_e4m3" and wq == "per_block" and len(w.get("block_size") or []) == 2 and (w.get("block_size") or [0, 0])[1] == 32)
        if ok:
            if mx.startswith("mxfp6"):
                raise q.fail(f".{label}.weight.dtype", "OCP MXFP6 has no quant key in our vocabulary (we read MXFP4 and MXFP8 weights)", wd, ["fp4", "fp8_e4m3"])
            if mx == "mxfp8_e4m3" and not q.release.holds("quark_mxfp8_moe"):
                raise q.fail(f".{label}.weight.dtype", f"{q.release.words} refuses Quark OCP MXFP8 experts (QuarkOCP_MX_MoEMethod: 'Unsupported OCP MX dtype combination for MoE'; 0.33.0 adds QuarkW8A8Mxfp8MoEMethod)", wd, ["fp4"])
            wkey = "mxfp4_static" if mx == "mxfp4" else "mxfp8_static"
            akey = _quark_mx_activation(q, a, label)
            if wkey == "mxfp4_static" and akey in ("fp8_dynamic_tensor", "mxfp8_dynamic"):
                why = "'QuarkOCP_MX_MoEMethod with dynamic input scales is currently not implemented'" if akey == "fp8_dynamic_tensor" else "'Unsupported OCP MX dtype combination for MoE' (MXFP8 activations with MXFP4 weights)"
                raise q.fail(f".{label}.input_tensors", f"{q.release.words} refuses OCP MXFP4 experts with dynamic FP8 activations: {why}; it runs MXFP4 with no, static per-tensor FP8 or dynamic MXFP4 activations", dict(a), None)
            scheme = QuantScheme(wkey, akey)
            cls = "QuarkOCP_MX_MoEMethod" if wkey == "mxfp4_static" else "QuarkW8A8Mxfp8MoEMethod"
            return ExpertsQuant(scheme, family_of(q), weight_group_size=32, evidence=f"{src}: OCP {mx.upper()} weights, activations {akey or 'bf16'} ({cls})")
    if wd == "int8" and isinstance(a, dict) and a.get("dtype") == "int8" and wq in ("per_tensor", "per_channel") and w.get("symmetric") is True:
        static_in = a.get("qscheme") == "per_tensor" and not a.get("is_dynamic")
        dynamic_in = a.get("qscheme") == "per_channel" and a.get("is_dynamic") is True
        if (static_in and not w.get("is_dynamic")) or dynamic_in:
            wkey = "int8_static_channel" if wq == "per_channel" else "int8_static_tensor"
            akey = "int8_static_tensor" if static_in else ("int8_dynamic_token" if wq == "per_channel" else "int8_dynamic_tensor")
            asym = a.get("symmetric") is not True
            if asym:  # kInt8StaticTensorAsym / kInt8DynamicTokenAsym / kInt8DynamicTensorAsym
                akey += "_asym"
            return ExpertsQuant(QuantScheme(wkey, akey), family_of(q), evidence=f"{src}: INT8 W8A8{', asymmetric activations' if asym else ''} (QuarkW8A8Int8MoEMethod)")
    if wd in ("int4", "uint4") and a is None:
        if not q.release.holds("quark_w4a16_int4_moe"):
            raise q.fail(f".{label}.weight.dtype", f"{q.release.words} refuses Quark W4A16 INT4 experts ('Unsupported FusedMoe scheme'; 0.31.0 adds QuarkW4A16Int4MoEMethod)", wd, None)
        gs, sym = w.get("group_size"), w.get("symmetric")
        if not isinstance(gs, int) or gs <= 0 or not isinstance(sym, bool):
            raise q.fail(f".{label}.weight", "Quark W4A16 INT4/UINT4 configs must specify a positive weight.group_size and a boolean weight.symmetric", {"group_size": gs, "symmetric": sym}, None)
        key = ("int4_g32" if gs == 32 else "int4") + ("" if sym else "_asym") + "_w16"
        return ExpertsQuant(SCHEMES[key], family_of(q), weight_group_size=gs, evidence=f"{src}: W4A16 INT4, group {gs} (QuarkW4A16Int4MoEMethod)")
    raise q.fail(f".{label}", "Unsupported FusedMoe scheme (Quark get_moe_method_target raises); we read FP8 tensor/channel/block, OCP MXFP4/MXFP8, INT8 W8A8 and W4A16 INT4", {"weight": {k: w.get(k) for k in ("dtype", "qscheme", "group_size")}, "input_tensors": a if a is None else {k: a.get(k) for k in ("dtype", "qscheme", "is_dynamic")}}, None)


def _quark_v0_29(q: QuantFormat, w: Mapping[str, Any], a: Any, label: str, src: str) -> ExpertsQuant:
    """vLLM 0.29.0 Q/quark/quark_moe.py ``QuarkMoEMethod.get_moe_method`` (fact
    ``quark_quant_key_dispatch`` does not hold): ``_is_fp8_w8a8`` -> ``QuarkW8A8Fp8MoEMethod``
    (per-tensor or per-channel weights and activations alike; no block FP8), OCP MX ->
    ``QuarkOCP_MX_MoEMethod`` (MXFP4 weights), ``_is_static_tensor_w8a8`` /
    ``_is_dynamic_per_token_w8a8`` -> ``QuarkW8A8Int8MoEMethod`` (dynamic inputs select with the
    symmetric keys; static inputs run the legacy fused_experts path, outside any oracle: not
    modelled), else "Unsupported FusedMoe scheme"."""
    rel = q.release.words
    wd, wq = w.get("dtype"), w.get("qscheme")
    a = a if isinstance(a, dict) else None
    ad, aq, adyn = (a or {}).get("dtype"), (a or {}).get("qscheme"), bool((a or {}).get("is_dynamic"))
    if wd == "fp8_e4m3" and ad == "fp8_e4m3" and not w.get("is_dynamic") and wq in ("per_tensor", "per_channel", "per_block"):
        if wq == "per_tensor" and aq == "per_tensor":
            akey = "fp8_dynamic_tensor" if adyn else "fp8_static_tensor"
            return ExpertsQuant(QuantScheme("fp8_static_tensor", akey), family_of(q), evidence=f"{src}: FP8 per_tensor weights, {'dynamic' if adyn else 'static'} per_tensor inputs (QuarkW8A8Fp8MoEMethod, {rel})")
        if wq == "per_channel" and aq == "per_channel" and adyn:
            return ExpertsQuant(SCHEMES["fp8_channel_token"], family_of(q), evidence=f"{src}: FP8 per_channel weights, dynamic per-token inputs (QuarkW8A8Fp8MoEMethod, {rel})")
        raise q.fail(f".{label}.weight.qscheme", f"{rel} refuses these FP8 experts (QuarkW8A8Fp8MoEMethod: only per-tensor and per-channel scales for weights and activations alike, per-channel with dynamic inputs; block FP8 experts need 0.30.0)", {"weight": wq, "input_tensors": aq, "input_is_dynamic": adyn}, [["per_tensor", "per_tensor"], ["per_channel", "per_channel (dynamic)"]])
    if isinstance(wd, str) and wd in ("fp4", "fp6_e3m2", "fp6_e2m3") and wq == "per_group" and w.get("group_size") == 32 and w.get("scale_format") == "e8m0":
        if wd != "fp4":
            raise q.fail(f".{label}.weight.dtype", "OCP MXFP6 has no quant key in our vocabulary (we read MXFP4 and MXFP8 weights)", wd, ["fp4"])
        if a is None:
            return ExpertsQuant(SCHEMES["mxfp4_w16"], family_of(q), weight_group_size=32, evidence=f"{src}: OCP MXFP4 weights, no input quantization (QuarkOCP_MX_MoEMethod, {rel})")
        if ad == "fp8_e4m3" and not adyn:
            return ExpertsQuant(QuantScheme("mxfp4_static", "fp8_static_tensor"), family_of(q), weight_group_size=32, evidence=f"{src}: OCP MXFP4 weights, static FP8 inputs (QuarkOCP_MX_MoEMethod, {rel})")
        if ad == "fp4" and adyn:
            return ExpertsQuant(QuantScheme("mxfp4_static", "mxfp4_dynamic"), family_of(q), weight_group_size=32, evidence=f"{src}: OCP MXFP4 weights, dynamic MXFP4 inputs (QuarkOCP_MX_MoEMethod, {rel})")
        raise q.fail(f".{label}.input_tensors", f"{rel} refuses OCP MXFP4 experts with these inputs (QuarkOCP_MX_MoEMethod runs no, static FP8 or dynamic MXFP4 inputs)", dict(a), None)
    if wd == "int8" and ad == "int8" and wq in ("per_tensor", "per_channel") and w.get("symmetric") is True:
        if aq == "per_channel" and (a or {}).get("is_dynamic") is True:
            scheme = SCHEMES["int8_channel_token"] if wq == "per_channel" else QuantScheme("int8_static_tensor", "int8_dynamic_tensor")
            return ExpertsQuant(scheme, family_of(q), evidence=f"{src}: INT8 W8A8, dynamic inputs (QuarkW8A8Int8MoEMethod, {rel}: symmetric keys whatever the input symmetry)")
        if aq == "per_tensor" and not adyn and not w.get("is_dynamic"):
            raise q.fail(f".{label}.input_tensors.is_dynamic", f"not modelled for {rel}: static-input INT8 experts run QuarkW8A8Int8MoEMethod's legacy fused_experts path, which asks no oracle", False, [True])
    raise q.fail(f".{label}", f"{rel} refuses these experts: 'Unsupported FusedMoe scheme' (QuarkMoEMethod.get_moe_method); moe-oracle reads FP8 per-tensor/per-channel, OCP MXFP4 and dynamic INT8 W8A8 there", {"weight": {k: w.get(k) for k in ("dtype", "qscheme", "group_size")}, "input_tensors": a if a is None else {k: a.get(k) for k in ("dtype", "qscheme", "is_dynamic")}}, None)


def _quark_mx_activation(q: QuantFormat, a: Any, label: str) -> str | None:
    """Quark ``_is_w_ocp_mx_a_x(allow_static_fp8=True)`` activation key."""
    if a is None:
        return None
    if not isinstance(a, dict):
        raise q.fail(f".{label}.input_tensors", "must be an object or null", a)
    if not a.get("is_dynamic"):
        if a.get("dtype") == "fp8_e4m3" and a.get("qscheme") == "per_tensor" and a.get("symmetric") is True:
            return "fp8_static_tensor"
        raise q.fail(f".{label}.input_tensors", "Quark OCP MX quantization is incompatible with static input scales (other than symmetric per-tensor FP8)", dict(a), None)
    if a.get("dtype") == "fp8_e4m3" and a.get("qscheme") == "per_group" and a.get("group_size") == 32:
        return "mxfp8_dynamic"
    if a.get("dtype") == "fp8_e4m3":
        return "fp8_dynamic_tensor"
    if a.get("dtype") == "fp4":
        return "mxfp4_dynamic"
    raise q.fail(f".{label}.input_tensors.dtype", "activation dtype not in Quark's OCP MX map (or not in our vocabulary)", a.get("dtype"), ["fp8_e4m3", "fp4"])
