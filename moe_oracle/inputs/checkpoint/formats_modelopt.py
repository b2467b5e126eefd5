"""Routed experts of a ModelOpt checkpoint (``modelopt``, ``modelopt_fp4``, ``modelopt_mxfp8``,
``modelopt_mixed``), as vLLM reads it (Q/modelopt.py, vLLM 0.29.0-0.34.0)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Mapping

from ...core.quant import SCHEMES, UNQUANTIZED
from . import matching as m
from .quant_records import B12X_BLOCK_CODECS, MODELOPT_LEGACY_ALGOS, ExpertsQuant, excluded, family_of, modelopt_algo, modelopt_exclude, str_list

if TYPE_CHECKING:
    from .quant_formats import QuantFormat

__all__ = ["BLOCK_FP8_MOE_ALGOS", "MODELOPT_FP8_ALGOS", "modelopt_experts", "modelopt_mixed_experts"]


MODELOPT_FP8_ALGOS = ("FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO")


BLOCK_FP8_MOE_ALGOS = ("FP8_PB_WO", "FP8_BLOCK_SCALES")


def modelopt_experts(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """Q/modelopt.py ``ModelOptQuantConfigBase.get_quant_method`` (FP8, NVFP4, MXFP8)."""
    c = q.config
    algo = modelopt_algo(c)
    if not algo:
        raise q.fail(".quant_algo", "Missing 'quant_algo' in quantization config (ModelOpt)", None, sorted(MODELOPT_LEGACY_ALGOS))
    _legacy_fields_present(q, algo)
    hit = m.modelopt_excluded(module, modelopt_exclude(c, q.release))
    if hit is None and "ignore" not in c and not isinstance(c.get("quantization"), dict) and m.modelopt_excluded(module, str_list(c.get("exclude_modules"))) is not None:
        notes: tuple[str, ...] = (f"exclude_modules names these experts, but {q.release.words} reads only 'ignore' in a config.json ModelOpt document (exclude_modules from 0.33.0): they stay quantized",)
    else:
        notes = ()
    if hit is not None:
        return excluded(q, hit, "ModelOpt is_layer_excluded: exact, substring, then fnmatch")
    if any(s in module for s in ("vision_tower", "vision_model", "vit_large_projector")):
        return excluded(q, "(vision module)", "ModelOpt leaves vision modules unquantized")
    out = _modelopt_scheme(q, algo)
    return replace(out, notes=out.notes + notes) if notes else out


LEGACY_REQUIRED_FIELDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "modelopt_fp4": ("NVFP4", ("group_size", "kv_cache_quant_algo", "exclude_modules")),
    "modelopt_mxfp8": ("MXFP8", ("kv_cache_quant_algo", "exclude_modules")),
}
"""Keys a legacy ``{"quantization": {...}}`` document must carry, by method: (algo substring,
keys). vLLM 0.29.0-0.34.0 Q/modelopt.py ``ModelOptNvFp4Config._from_config`` /
``ModelOptMxFp8Config._from_config`` refuse the document at config time when one is absent
(a present ``null`` passes); the config.json form (``quant_method: modelopt``) is not checked."""


def _legacy_fields_present(q: QuantFormat, algo: str) -> None:
    inner = q.config.get("quantization")
    rule = LEGACY_REQUIRED_FIELDS.get(q.method)
    if rule is None or not isinstance(inner, dict) or rule[0] not in algo:
        return
    missing = [k for k in rule[1] if k not in inner]
    if missing:
        raise q.fail(".quantization", f"{q.release.words} refuses the checkpoint: '{rule[0]} quantization requires the following fields in hf_quant_config.json: {missing}' (a null value is accepted)", sorted(inner), list(rule[1]))


def _modelopt_scheme(q: QuantFormat, algo: str) -> ExpertsQuant:
    c = q.config
    if q.method == "modelopt":
        if algo not in MODELOPT_FP8_ALGOS:
            raise q.fail(".quant_algo", "Unsupported ModelOpt FP8 quant_algo for vLLM", algo, list(MODELOPT_FP8_ALGOS))
        return ExpertsQuant(SCHEMES["fp8_tensor_static"], family_of(q), evidence=f"{q.source}: ModelOpt {algo}: ModelOptFp8MoEMethod (static per-tensor weights and activations)")
    if q.method == "modelopt_fp4":
        if algo not in ("NVFP4", "W4A16_NVFP4"):
            raise q.fail(".quant_algo", "Unsupported ModelOpt NVFP4 quant_algo", algo, ["NVFP4", "W4A16_NVFP4"])
        groups = c.get("config_groups")
        weight_only = algo == "W4A16_NVFP4" or (isinstance(groups, dict) and groups and all(isinstance(g, dict) and g.get("input_activations") is None for g in groups.values()))
        if weight_only:
            why = "W4A16_NVFP4" if algo == "W4A16_NVFP4" else "NVFP4 with no input_activations in any config group: routed through W4A16"
            return ExpertsQuant(SCHEMES["nvfp4_w16"], family_of(q), weight_group_size=16, evidence=f"{q.source}: ModelOpt {why} (ModelOptNvFp4FusedMoE, use_a16)")
        return ExpertsQuant(SCHEMES["nvfp4"], family_of(q), weight_group_size=16, evidence=f"{q.source}: ModelOpt NVFP4 (ModelOptNvFp4FusedMoE, W4A4)")
    return ExpertsQuant(SCHEMES["mxfp8"], family_of(q), weight_group_size=32, evidence=f"{q.source}: ModelOpt MXFP8 (ModelOptMxFp8FusedMoE)")


def _mixed_candidates(prefix: str) -> list[str]:
    out = [prefix]
    if prefix.startswith("language_model.model."):
        out.append("model.language_model." + prefix[len("language_model.model."):])
    elif prefix.startswith("model.language_model."):
        out.append("language_model.model." + prefix[len("model.language_model."):])
    return out


def _mixed_algo(layers: Mapping[str, Any], prefix: str) -> tuple[str, str] | None:
    """``ModelOptMixedPrecisionConfig._resolve_quant_algo`` for a RoutedExperts prefix: (key, algo)."""
    def algo(key: str) -> str:
        info = layers[key]
        return str(info.get("quant_algo", "") if isinstance(info, dict) else "").upper()

    for cand in _mixed_candidates(prefix):
        if cand in layers:
            return cand, algo(cand)
    for cand in _mixed_candidates(prefix):
        for key in layers:
            if key.startswith(cand + "."):
                return key, algo(key)
    if prefix.endswith(".experts"):
        parent = prefix.rsplit(".experts", 1)[0] + "."
        for key in layers:
            if key.startswith(parent):
                return key, algo(key)
    return None


def _mixed_layer_checks(q: QuantFormat, layers: Mapping[str, Any]) -> None:
    """``ModelOptMixedPrecisionConfig.__init__``: one group size for every block-FP8 layer (from
    0.30.0, fact ``modelopt_mixed_block_fp8_moe``) and the B12X codec contract of every codec
    layer (from 0.32.0, fact ``modelopt_mixed_b12x_codecs``); any layer, not only the experts."""
    recipes = {k: v for k, v in layers.items() if isinstance(v, dict)}
    if q.release.holds("modelopt_mixed_block_fp8_moe"):
        sizes = {int(i.get("group_size", 128)) for i in recipes.values() if str(i.get("quant_algo", "")).upper() in BLOCK_FP8_MOE_ALGOS}
        if len(sizes) > 1:
            raise q.fail(".quantized_layers", f"{q.release.words} refuses the checkpoint: 'MIXED_PRECISION currently requires all block-FP8 MoE layers to use one group_size'", sorted(sizes), None)
    if q.release.holds("modelopt_mixed_b12x_codecs"):
        for prefix, recipe in recipes.items():
            codec = str(recipe.get("quant_algo", "")).upper()
            if codec in B12X_BLOCK_CODECS:
                want = {"group_size": B12X_BLOCK_CODECS[codec][0], "block_payload_bytes": B12X_BLOCK_CODECS[codec][1], "packing": "ggml"}
                if any(recipe.get(k) != v for k, v in want.items()):
                    raise q.fail(f".quantized_layers.{prefix}", f"{q.release.words} refuses the checkpoint: 'unsupported {codec} block contract'", dict(recipe), want)


def modelopt_mixed_experts(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """Q/modelopt.py ``ModelOptMixedPrecisionConfig.get_quant_method`` for RoutedExperts: block-FP8
    experts get Fp8MoEMethod from 0.30.0 (before: no MoE method); B12X codec experts get
    ModelOptBlockQuantMoEMethod from 0.32.0 (before: no MoE method), which moe-oracle does not model."""
    c = q.config
    inner = c.get("quantization")
    layers = (inner.get("quantized_layers") if isinstance(inner, dict) else c.get("quantized_layers")) or {}
    if not isinstance(layers, dict) or not layers:
        raise q.fail(".quantized_layers", "MIXED_PRECISION quant_algo requires a non-empty 'quantized_layers' mapping in the quantization config", layers or None, None)
    _mixed_layer_checks(q, layers)
    hit = m.modelopt_excluded(module, modelopt_exclude(c, q.release))
    if hit is not None:
        return excluded(q, hit, "ModelOpt is_layer_excluded: exact, substring, then fnmatch")
    found = _mixed_algo(layers, module)
    if found is None:
        return ExpertsQuant(UNQUANTIZED, None, excluded_by="(not in quantized_layers)", evidence=f"{q.source}: MIXED_PRECISION and no quantized_layers entry for {module}: the layer is left unquantized")
    key, algo = found
    src = f"{q.source}: MIXED_PRECISION quantized_layers[{key!r}] = {algo}"
    if algo in B12X_BLOCK_CODECS and q.release.holds("modelopt_mixed_b12x_codecs"):
        raise q.fail(f".quantized_layers.{key}.quant_algo", f"not modelled for {q.release.words}: B12X block-codec experts run ModelOptBlockQuantMoEMethod (Q/modelopt_block_quant.py), whose kernel choice moe-oracle does not model (no quant key for {algo} weights)", algo, None)
    if algo in BLOCK_FP8_MOE_ALGOS and q.release.holds("modelopt_mixed_block_fp8_moe"):
        sizes = {int(i.get("group_size", 128)) for i in layers.values() if isinstance(i, dict) and str(i.get("quant_algo", "")).upper() in BLOCK_FP8_MOE_ALGOS}
        b = next(iter(sizes))
        return ExpertsQuant(SCHEMES["fp8_block"], "fp8", weight_block_size=(b, b), evidence=f"{src} (Fp8MoEMethod with [{b}, {b}] blocks)")
    if algo == "FP8":
        return ExpertsQuant(SCHEMES["fp8_tensor_static"], family_of(q), evidence=f"{src} (ModelOptFp8MoEMethod)")
    if algo == "NVFP4":
        return ExpertsQuant(SCHEMES["nvfp4"], family_of(q), weight_group_size=16, evidence=f"{src} (ModelOptNvFp4FusedMoE, W4A4)")
    if algo == "W4A16_NVFP4":
        return ExpertsQuant(SCHEMES["nvfp4_w16"], family_of(q), weight_group_size=16, evidence=f"{src} (ModelOptNvFp4FusedMoE, use_a16)")
    if algo == "MXFP8":
        return ExpertsQuant(SCHEMES["mxfp8"], family_of(q), weight_group_size=32, evidence=f"{src} (ModelOptMxFp8FusedMoE)")
    return ExpertsQuant(UNQUANTIZED, None, excluded_by=f"(algo {algo} has no MoE method)", evidence=f"{src}: {q.release.words} builds no MoE method for this algorithm, so the experts run unquantized")
