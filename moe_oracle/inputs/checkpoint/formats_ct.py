"""Routed experts of a compressed-tensors checkpoint, as vLLM reads its ``config_groups`` and targets
(Q/compressed_tensors/, vLLM 0.29.0-0.33.0; what differs per release is a checkpoint fact)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Mapping

from ...core.quant import SCHEMES, UNQUANTIZED, QuantScheme
from . import matching as m
from .quant_records import ExpertsQuant, excluded, family_of, str_list

from .formats_float import fp8_block

if TYPE_CHECKING:
    from .quant_formats import QuantFormat

__all__ = ["ct_experts"]


def _ct_targets(q: QuantFormat) -> list[tuple[str, str, Mapping[str, Any]]]:
    """(target, group name, group) in the engine's insertion order, attention-only groups dropped;
    ``RoutedExperts`` aliases ``Linear`` (``_add_fused_moe_to_target_scheme_map``)."""
    groups = q.config.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise q.fail(".config_groups", "compressed-tensors config has no config_groups", groups)
    out: list[tuple[str, str, Mapping[str, Any]]] = []
    by_target: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for name, group in groups.items():
        if not isinstance(group, dict):
            raise q.fail(f".config_groups.{name}", "must be an object", group)
        targets = group.get("targets")
        if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
            raise q.fail(f".config_groups.{name}.targets", "must be a list of names, re: patterns or module classes", targets)
        if len(targets) == 1 and targets[0].endswith("Attention"):
            continue
        for t in targets:
            by_target[t] = (name, group)  # a later group replaces an earlier one's entry, as the dict does
    for t, (name, group) in by_target.items():
        out.append((t, name, group))
    if "Linear" in by_target and "RoutedExperts" not in by_target:
        out.append(("RoutedExperts", by_target["Linear"][0], by_target["Linear"][1]))
    return out


_CT_FIXED_PROJ = ("gate_proj", "up_proj", "down_proj")


def _ct_actorder(q: QuantFormat) -> None:
    """``_quantization_scheme_map_from_config``: from 0.30.0 (fact ``ct_actorder_refused``) any
    config group with targets whose weights use group/dynamic activation ordering refuses the
    checkpoint at config load, whatever the group targets."""
    if not q.release.holds("ct_actorder_refused"):
        return
    groups = q.config.get("config_groups")
    for name, group in (groups.items() if isinstance(groups, dict) else ()):
        w = group.get("weights") if isinstance(group, dict) else None
        if isinstance(w, dict) and group.get("targets") and w.get("actorder") in ("group", "dynamic"):
            raise q.fail(f".config_groups.{name}.weights.actorder", f"{q.release.words} refuses compressed-tensors group/dynamic activation ordering: 'is no longer supported' (vLLM 0.29.0 still runs it)", w.get("actorder"), [None, "static", "weight"])


def ct_experts(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """Q/compressed_tensors: ``CompressedTensorsMoEMethod.get_moe_method`` on ``<module>.0.<proj>``:
    the model's checkpoint projection names from 0.32.0, ``gate_proj``/``up_proj``/``down_proj``
    before (fact ``ct_checkpoint_proj_names``)."""
    _ct_actorder(q)
    if not q.release.holds("ct_checkpoint_proj_names"):
        proj = _CT_FIXED_PROJ
    ignore = str_list(q.config.get("ignore"))
    targets = _ct_targets(q)
    picks: list[tuple[str, str | None, str | None, Mapping[str, Any] | None]] = []
    for p in proj:
        name = f"{module}.0.{p}"
        hit = m.ct_should_ignore(name, ignore)
        if hit is not None:
            picks.append((name, hit, None, None))
            continue
        target = m.ct_find_target(name, "RoutedExperts", [t for t, _, _ in targets])
        if target is None:
            picks.append((name, None, None, None))
            continue
        gname, group = next((g, grp) for t, g, grp in targets if t == target)
        picks.append((name, None, f"{gname} (target {target!r})", group))
    # The engine compares the scheme dicts by value: (weights, input/output activations, format).
    chosen = {_ct_key(q, pick[3]) for pick in picks}
    if len(chosen) > 1:
        raise q.fail(".config_groups", "All MoE projections need to have same quantization scheme but found multiple (compressed-tensors get_moe_method)", {n: (g or ("ignored by " + str(i) if i else "no target")) for n, i, g, _ in picks}, None)
    name, ignored_by, group_label, group = picks[-1]
    if group is None:
        if ignored_by is not None:
            return excluded(q, ignored_by, "compressed-tensors should_ignore_layer on " + name)
        listed = ", ".join(t for t, _, _ in targets)
        return ExpertsQuant(UNQUANTIZED, None, excluded_by="(no config group targets these experts)", evidence=f"{q.source}: no config_groups target matches {name} (targets: {listed}), so vLLM builds UnquantizedFusedMoEMethod")
    return _ct_scheme(q, group, group_label or "", name)


def _ct_key(q: QuantFormat, group: Mapping[str, Any] | None) -> str:
    if group is None:
        return "null"
    fmt = group.get("format") or q.config.get("format")
    return json.dumps([group.get("weights"), group.get("input_activations"), group.get("output_activations"), fmt], sort_keys=True, default=str)


def _ct_scheme(q: QuantFormat, group: Mapping[str, Any], label: str, name: str) -> ExpertsQuant:
    where = f".config_groups.{label.split(' ')[0]}"
    w = group.get("weights")
    a = group.get("input_activations")
    if not isinstance(w, dict):
        return ExpertsQuant(UNQUANTIZED, None, excluded_by="(group has no weights)", evidence=f"{q.source}: group {label} quantizes no weights: unquantized")
    if a is not None and not isinstance(a, dict):
        raise q.fail(f"{where}.input_activations", "must be an object or null", a)
    fmt = group.get("format") or q.config.get("format")
    wt, wb, ws, wg = w.get("type"), w.get("num_bits"), w.get("strategy"), w.get("group_size")
    sym = w.get("symmetric", True) is not False
    actorder = w.get("actorder")
    if actorder is not None and actorder not in ("group", "weight", "static", "dynamic"):
        raise q.fail(f"{where}.weights.actorder", "not a compressed-tensors activation ordering", actorder, [None, "group", "weight", "static", "dynamic"])
    order = actorder or "none"  # the MoEConfig act_order of int weights (refused orderings never get here from 0.30.0)
    src = f"{q.source}: {label}"
    at, ab, ast, ag, adyn = (a or {}).get("type"), (a or {}).get("num_bits"), (a or {}).get("strategy"), (a or {}).get("group_size"), (a or {}).get("dynamic")
    is_nvfp4 = lambda t, b, s, g, sy: t == "float" and b == 4 and s == "tensor_group" and g == 16 and sy  # noqa: E731
    is_mxfp4 = wt == "float" and wb == 4 and ws == "group" and wg == 32 and sym
    # order of CompressedTensorsMoEMethod.get_moe_method
    if is_mxfp4 and a and at == "float" and ab == 8 and not w.get("dynamic") and adyn and ast in ("token", "group") and (a.get("symmetric", True) is not False) and q.release.holds("ct_w4a8_mxfp4_method"):
        act = "fp8_dynamic_group128" if ast == "group" and ag == 128 else ("fp8_dynamic_token" if ast == "token" else None)
        if act is None:
            raise q.fail(f"{where}.input_activations.group_size", "FP8 activation groups other than 128 have no quant key in our vocabulary", ag, [128])
        return ExpertsQuant(QuantScheme("mxfp4_static", act), family_of(q), weight_group_size=32, evidence=f"{src}: MXFP4 weights with dynamic FP8 {ast} activations (CompressedTensorsW4A8Mxfp4MoEMethod)")
    if is_mxfp4:
        why = "" if not a or q.release.holds("ct_w4a8_mxfp4_method") else f"; {q.release.words} has no W4A8 MXFP4 method (0.32.0 adds CompressedTensorsW4A8Mxfp4MoEMethod), so the activations are not keyed"
        return ExpertsQuant(SCHEMES["mxfp4_w16"], family_of(q), weight_group_size=32, evidence=f"{src}: MXFP4 weights, group 32 (CompressedTensorsW4A4Mxfp4MoEMethod; the oracle gets no activation key{why})")
    if wt == "float" and wb == 8 and ws == "group" and wg == 32 and sym and w.get("scale_dtype") in ("torch.uint8", "uint8"):
        return ExpertsQuant(SCHEMES["mxfp8"], family_of(q), weight_group_size=32, evidence=f"{src}: MXFP8 weights (CompressedTensorsW8A8Mxfp8MoEMethod)")
    if ws in ("channel", "group") and not a and not w.get("dynamic"):
        if wb not in (4, 8) or fmt != "pack-quantized":
            raise q.fail(f"{where}.weights", "For Fused MoE layers, only format pack-quantized and bits 4 or 8 are supported (compressed-tensors WNA16)", {"format": fmt, "num_bits": wb}, {"format": "pack-quantized", "num_bits": [4, 8]})
        gs = -1 if ws == "channel" else wg
        ordered = f", actorder {actorder}" if actorder else ""
        if wb == 8:
            return ExpertsQuant(SCHEMES["int8_w16"], family_of(q), weight_group_size=gs, evidence=f"{src}: INT8 weight-only, group {gs}{ordered} (CompressedTensorsWNA16MoEMethod)", act_order=order)
        key = ("int4_g32" if gs == 32 else "int4") + ("" if sym else "_asym") + "_w16"
        return ExpertsQuant(SCHEMES[key], family_of(q), weight_group_size=gs, evidence=f"{src}: INT4 weight-only, {'symmetric' if sym else 'asymmetric'}, group {gs}{ordered} (CompressedTensorsWNA16MoEMethod)", act_order=order)
    if is_nvfp4(wt, wb, ws, wg, sym):
        if a is None:
            return ExpertsQuant(SCHEMES["nvfp4_w16"], family_of(q), weight_group_size=16, evidence=f"{src}: NVFP4 weights, no input activations (CompressedTensorsW4A4Nvfp4MoEMethod, use_a16)")
        if not is_nvfp4(at, ab, ast, ag, a.get("symmetric", True) is not False):
            raise q.fail(f"{where}.input_activations", "For NVFP4 weights, input quantization must also be NVFP4 format or None for NVFP4A16", dict(a), None)
        return ExpertsQuant(SCHEMES["nvfp4"], family_of(q), weight_group_size=16, evidence=f"{src}: NVFP4 weights and activations (CompressedTensorsW4A4Nvfp4MoEMethod)")
    if wt == "float" and wb == 8 and a and at == "float" and sym and not w.get("dynamic") and ws in ("tensor", "channel", "block") and (adyn or (a.get("symmetric", True) is not False and ast == "tensor")):
        return _ct_fp8(q, w, a, src, where)
    if wt == "int" and wb == 8 and a and ab == 8 and ws in ("tensor", "channel") and ast == "token" and sym and not w.get("dynamic") and adyn:
        return ExpertsQuant(SCHEMES["int8_channel_token"], family_of(q), evidence=f"{src}: INT8 W8A8 with dynamic per-token activations (CompressedTensorsW8A8Int8MoEMethod: channel weight key)")
    if wt == "int" and wb == 4 and a and at == "float" and ab == 8 and ws == "group" and ast == "token" and sym and (a.get("symmetric", True) is not False) and adyn and not w.get("dynamic"):
        return ExpertsQuant(SCHEMES["w4a8_fp8"], family_of(q), weight_group_size=wg, evidence=f"{src}: INT4 group weights with dynamic FP8 per-token activations (CompressedTensorsW4A8Fp8MoEMethod)", act_order=order)
    if wt == "int" and wb == 4 and a and at == "int" and ab == 8 and ws in ("group", "channel") and ast == "token" and sym and adyn and not w.get("dynamic"):
        gs = -1 if ws == "channel" else wg
        key = {-1: "w4a8_int8_channel", 128: "w4a8_int8_group128", 64: "w4a8_int8_group64", 32: "w4a8_int8_group32"}.get(gs)
        if key is None:
            raise q.fail(f"{where}.weights.group_size", "W4A8-INT8 group size not in the vocabulary", gs, [-1, 32, 64, 128])
        return ExpertsQuant(SCHEMES[key], family_of(q), weight_group_size=gs, evidence=f"{src}: INT4 weights with dynamic INT8 per-token activations (CompressedTensorsW4A8Int8MoEMethod)", act_order=order)
    raise q.fail(where, "Unsupported FusedMoe scheme (compressed-tensors get_moe_method raises for these experts)", {"weights": {k: w.get(k) for k in ("type", "num_bits", "strategy", "group_size")}, "input_activations": None if a is None else {k: a.get(k) for k in ("type", "num_bits", "strategy", "dynamic")}}, None)


def _ct_fp8(q: QuantFormat, w: Mapping[str, Any], a: Mapping[str, Any], src: str, where: str) -> ExpertsQuant:
    """``CompressedTensorsW8A8Fp8MoEMethod``: tensor/tensor, channel/token or block weights."""
    ws, ast, adyn = w.get("strategy"), a.get("strategy"), bool(a.get("dynamic"))
    if ws == "block":
        b = fp8_block(q, w.get("block_structure"), f"{where}.weights.block_structure")
        return ExpertsQuant(SCHEMES["fp8_block"], family_of(q), weight_block_size=b, evidence=f"{src}: FP8 block {list(b)} weights, dynamic per-group activations (CompressedTensorsW8A8Fp8MoEMethod)")
    if ws == "tensor" and ast == "tensor":
        # Upstream hands a dynamic per-tensor activation to the oracle as kFp8Dynamic128Sym
        # (reference §5.18); as hf.py always did, we keep the key the checkpoint declares.
        scheme = SCHEMES["fp8_tensor_dynamic"] if adyn else SCHEMES["fp8_tensor_static"]
        return ExpertsQuant(scheme, family_of(q), evidence=f"{src}: FP8 per-tensor weights, {'dynamic' if adyn else 'static'} per-tensor activations (CompressedTensorsW8A8Fp8MoEMethod)")
    if ws == "channel" and ast == "token":
        if not adyn:
            raise q.fail(f"{where}.input_activations.dynamic", "For FP8 Fused MoE layer, we require either per tensor or channelwise, dynamic per token quantization", False, [True])
        return ExpertsQuant(SCHEMES["fp8_channel_token"], family_of(q), evidence=f"{src}: FP8 per-channel weights, dynamic per-token activations (CompressedTensorsW8A8Fp8MoEMethod)")
    raise q.fail(f"{where}.weights.strategy", "CompressedTensorsW8A8Fp8MoEMethod accepts tensor weights with tensor activations, channel weights with token activations, or block weights (anything else fails its assertion)", {"weights": ws, "input_activations": ast}, [["tensor", "tensor"], ["channel", "token"], ["block", "*"]])
