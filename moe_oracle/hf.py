"""Build the checkpoint half of a MoEConfig from a Hugging Face ``config.json``.

Every inferred field records its evidence (which keys, which rule), so the
Decision shows why the oracle believes a model routes with DeepSeek-V3 grouped
top-k or uses SwiGLU-OAI. Rules follow vLLM main 00f7f258:

* routing: ``get_routing_method_type(scoring_func, top_k, renormalize,
  num_expert_group, has_e_score_bias, routed_scaling_factor)`` (``P/config.py``),
  with the model classes' own inputs (Mixtral and gpt-oss renormalize; Llama-4 uses
  its custom top-1 sigmoid router; Nemotron-H and DeepSeek-V3 carry a correction bias);
* quantization: the keys each quant method passes to its oracle (reference §1.3).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from .config import Provenance
from .errors import ConfigError, InputIssue
from .quant import SCHEMES, QuantScheme
from .vocab import Activation, DType, RoutingMethod, Source

__all__ = ["CheckpointFields", "from_hf_config", "load_hf_config", "routing_method_type"]


@dataclass(frozen=True)
class CheckpointFields:
    """Checkpoint-derived MoEConfig keyword arguments plus their provenance.

    ``kwargs`` can be passed to :class:`~moe_oracle.config.MoEConfig` together with the
    deployment fields; ``provenance`` records source and evidence per field.
    """

    kwargs: Mapping[str, Any]
    provenance: tuple[Provenance, ...]
    model_type: str | None
    name: str | None


MAX_CONFIG_BYTES = 4 * 1024 * 1024


def load_hf_config(path: str | Path, flag: str = "--model") -> dict[str, Any]:
    """Read a ``config.json`` (or ``hf_quant_config.json``).

    Raises:
        ConfigError: unreadable, not UTF-8, not JSON, or not a JSON object.
    """
    path = Path(path)
    try:
        with path.open("rb") as handle:  # bounded: a device such as /dev/zero never ends
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except (OSError, ValueError) as exc:  # ValueError: a NUL or unencodable character in the path
        raise ConfigError([InputIssue(flag, f"cannot read model config: {getattr(exc, 'strerror', None) or exc}", str(path), None, str(path))]) from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError([InputIssue("$", f"file is larger than {MAX_CONFIG_BYTES} bytes", None, None, str(path), keyword="size")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError([InputIssue("$", f"not UTF-8 (invalid byte at offset {exc.start})", None, None, str(path), keyword="encoding")]) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError([InputIssue(f"$ (line {exc.lineno}, column {exc.colno})", f"not valid JSON: {exc.msg}", None, None, str(path), keyword="json")]) from None
    except RecursionError:
        raise ConfigError([InputIssue("$", "JSON nesting is too deep", None, None, str(path), keyword="json")]) from None
    except ValueError as exc:  # not a JSONDecodeError: an integer literal past Python's 4300-digit limit
        raise ConfigError([InputIssue("$", f"not valid JSON: {exc}", None, None, str(path), keyword="json")]) from None
    if not isinstance(data, dict):
        raise ConfigError([InputIssue("$", "a model config must be a JSON object", type(data).__name__, None, str(path), keyword="type")])
    return data


def routing_method_type(scoring_func: str, renormalize: bool, num_expert_group: int | None, has_e_score_bias: bool, routed_scaling_factor: float | None) -> RoutingMethod:
    """vLLM ``get_routing_method_type`` (reference §1.5).

    >>> routing_method_type("sigmoid", True, 8, True, 2.5).value
    'deepseek_v3'
    >>> routing_method_type("softmax", True, None, False, None).value
    'renormalize_naive'
    """
    if scoring_func == "sqrtsoftplus":
        return RoutingMethod.DEEPSEEK_V4 if renormalize else RoutingMethod.UNSPECIFIED
    if has_e_score_bias:
        if scoring_func != "sigmoid" or not renormalize:
            return RoutingMethod.UNSPECIFIED
        if (num_expert_group or 0) > 0:
            return RoutingMethod.DEEPSEEK_V3
        if routed_scaling_factor in (None, 1.0):
            return RoutingMethod.MINIMAX2
        return RoutingMethod.UNSPECIFIED
    if scoring_func == "sigmoid":
        return RoutingMethod.SIGMOID_RENORM if renormalize else RoutingMethod.SIGMOID
    if scoring_func == "softmax":
        return RoutingMethod.RENORMALIZE_NAIVE if renormalize else RoutingMethod.DEFAULT
    return RoutingMethod.UNSPECIFIED


class _Recorder:
    def __init__(self, file: str | None) -> None:
        self.kwargs: dict[str, Any] = {}
        self.prov: list[Provenance] = []
        self.file = file

    def put(self, name: str, value: Any, source: Source, evidence: str) -> None:
        self.kwargs[name] = value
        self.prov.append(Provenance(name, source, evidence))

    def fail(self, path: str, message: str, value: Any = None, allowed: Any = None) -> None:
        raise ConfigError([InputIssue(path, message, value, allowed, self.file)])


def _first(cfg: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    for key in keys:
        if key in cfg and cfg[key] is not None:
            return key, cfg[key]
    return None, None


def _int(rec: _Recorder, key: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        rec.fail(f"$.{key}", "must be an integer", value)
    if not minimum <= value <= 2**40:
        rec.fail(f"$.{key}", f"must be an integer from {minimum} to 2**40", value, {"minimum": minimum, "maximum": 2**40})
    return value


def _float(rec: _Recorder, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value in (float("inf"), float("-inf")):
        rec.fail(f"$.{key}", "must be a finite number", value, {"type": "number"})
    return float(value)


_NUM_EXPERTS = ("n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts")
_TOP_K = ("num_experts_per_tok", "experts_per_token", "moe_topk", "top_k")
_ACTS = {"silu": Activation.SILU, "swish": Activation.SILU, "gelu": Activation.GELU, "gelu_pytorch_tanh": Activation.GELU_TANH, "gelu_new": Activation.GELU_TANH, "gelu_tanh": Activation.GELU_TANH, "relu2": Activation.RELU2}
_NON_GATED_MODELS = {"nemotron_h": "Nemotron-H experts are non-gated (up_proj and down_proj only; vLLM NemotronHMoE)"}
_RENORMALIZE_BY_MODEL = {
    "mixtral": "vLLM MixtralMoE routes with renormalize=True",
    "gpt_oss": "vLLM GptOssForCausalLM routes with renormalize=True",
    "minimax_m2": "vLLM MiniMaxM2 routes with renormalize=True",
}
_SIGMOID_MODELS = {"nemotron_h": "vLLM NemotronHMoE scores with sigmoid"}
_BIAS_MODELS = {"nemotron_h": "vLLM NemotronHMoE always has gate.e_score_correction_bias"}


def _activation(rec: _Recorder, cfg: Mapping[str, Any], model_type: str | None) -> None:
    if model_type == "gpt_oss":
        rec.put("activation", Activation.SWIGLUOAI, Source.INFERRED, "model_type gpt_oss: vLLM uses swigluoai with gate/up interleaved in w13 (alpha 1.702)")
        rec.put("swiglu_alpha", 1.702, Source.INFERRED, "gpt-oss SwiGLU alpha (vLLM GptOssForCausalLM)")
        if "swiglu_limit" in cfg:
            rec.put("swiglu_limit", _float(rec, "swiglu_limit", cfg["swiglu_limit"]), Source.CHECKPOINT, "config.swiglu_limit")
        rec.put("has_bias", True, Source.INFERRED, "model_type gpt_oss: experts carry gate_up_proj_bias and down_proj_bias")
        return
    key, act = _first(cfg, ("mlp_hidden_act", "hidden_act", "hidden_activation", "activation_function"))
    if act is None:
        rec.put("activation", Activation.SILU, Source.DEFAULT, "no hidden_act in the config; assumed silu")
        return
    if not isinstance(act, str) or act not in _ACTS:
        rec.fail(f"$.{key}", "activation not in the MoE vocabulary", act, sorted(_ACTS))
    base = _ACTS[act]
    if model_type in _NON_GATED_MODELS:
        value = Activation(f"{base.value}_no_mul")
        rec.put("activation", value, Source.INFERRED, f"config.{key}={act}; {_NON_GATED_MODELS[model_type]}")
    else:
        rec.put("activation", base, Source.CHECKPOINT if act == base.value else Source.INFERRED, f"config.{key}={act} (gated)")


def _routing(rec: _Recorder, cfg: Mapping[str, Any], model_type: str | None) -> None:
    if model_type in ("llama4", "llama4_text"):
        rec.put("routing_method", RoutingMethod.LLAMA4, Source.INFERRED, "model_type llama4: Llama4MoE.custom_routing_function (top-1 then sigmoid)")
        return
    evidence = []
    scoring = cfg.get("scoring_func")
    if scoring is not None:
        evidence.append(f"scoring_func={scoring}")
    elif model_type in _SIGMOID_MODELS:
        scoring = "sigmoid"
        evidence.append(_SIGMOID_MODELS[model_type])
    else:
        scoring = "softmax"
        evidence.append("no scoring_func: softmax")
    if "norm_topk_prob" in cfg:
        renormalize = bool(cfg["norm_topk_prob"])
        evidence.append(f"norm_topk_prob={renormalize}")
    elif model_type in _RENORMALIZE_BY_MODEL:
        renormalize = True
        evidence.append(_RENORMALIZE_BY_MODEL[model_type])
    else:
        renormalize = False
        evidence.append("no norm_topk_prob: no renormalization")
    groups = cfg.get("n_group")
    topk_group = cfg.get("topk_group")
    if groups is not None:
        # Checked before get_routing_method_type compares it with 0.
        groups = _int(rec, "n_group", groups, minimum=0)
        evidence.append(f"n_group={groups}")
    bias = False
    if cfg.get("topk_method") == "noaux_tc":
        bias = True
        evidence.append("topk_method=noaux_tc (e_score_correction_bias)")
    elif cfg.get("use_routing_bias"):
        bias = True
        evidence.append("use_routing_bias=true")
    elif cfg.get("moe_router_enable_expert_bias"):
        bias = True
        evidence.append("moe_router_enable_expert_bias=true")
    elif model_type in _BIAS_MODELS:
        bias = True
        evidence.append(_BIAS_MODELS[model_type])
    rsf = cfg.get("routed_scaling_factor")
    method = routing_method_type(scoring, renormalize, groups, bias, rsf)
    rec.put("routing_method", method, Source.INFERRED, "get_routing_method_type: " + ", ".join(evidence))
    if bias:
        rec.put("has_correction_bias", True, Source.INFERRED, evidence[-1])
    if groups is not None:
        rec.put("num_expert_group", groups, Source.CHECKPOINT, "config.n_group")
    if topk_group is not None:
        rec.put("topk_group", _int(rec, "topk_group", topk_group, minimum=0), Source.CHECKPOINT, "config.topk_group")
    if rsf is not None:
        rec.put("routed_scaling_factor", _float(rec, "routed_scaling_factor", rsf), Source.CHECKPOINT, "config.routed_scaling_factor")


def _experts_excluded(patterns: Any) -> str | None:
    for pattern in patterns or ():
        if isinstance(pattern, str) and (".experts" in pattern or pattern.endswith("experts")):
            return pattern
    return None


def _quant(rec: _Recorder, cfg: Mapping[str, Any], quant_cfg: Mapping[str, Any] | None) -> None:
    q = cfg.get("quantization_config")
    source_desc = "config.quantization_config"
    if quant_cfg is not None:
        q = quant_cfg.get("quantization", quant_cfg)
        source_desc = "hf_quant_config.json"
        if isinstance(q, dict) and "quant_algo" in q:
            q = {**q, "quant_method": "modelopt"}
    if q is None:
        rec.put("quant", SCHEMES["unquantized"], Source.INFERRED, "no quantization_config: unquantized")
        return
    if not isinstance(q, dict):
        rec.fail("$.quantization_config", "must be an object", q)
    method = q.get("quant_method")
    patterns = q.get("modules_to_not_convert") or q.get("ignore") or q.get("exclude_modules")
    if patterns is not None and not isinstance(patterns, list):
        rec.fail("$.quantization_config.modules_to_not_convert", "the modules left unquantized must be a list of names", patterns)
    excluded = _experts_excluded(patterns)
    if excluded:
        rec.put("quant", SCHEMES["unquantized"], Source.INFERRED, f"{source_desc} excludes the experts ({excluded!r})")
        return
    rec.put("quant_method", method, Source.CHECKPOINT, f"{source_desc}.quant_method")
    scheme, why = _scheme(rec, method, q)
    rec.put("quant", scheme, Source.INFERRED, f"{source_desc}: {why}")


def _scheme(rec: _Recorder, method: Any, q: Mapping[str, Any]) -> tuple[QuantScheme, str]:
    if method == "fp8":
        block = q.get("weight_block_size")
        static = q.get("activation_scheme", "dynamic") == "static"
        if block is not None:
            if not isinstance(block, list) or block != [128, 128]:
                rec.fail("$.quantization_config.weight_block_size", "only 128x128 weight blocks are in the vocabulary", block, [[128, 128]])
            return SCHEMES["fp8_block"], "fp8 with weight_block_size [128, 128] (Fp8MoEMethod: FP8-Blk)"
        return (SCHEMES["fp8_tensor_static"], "fp8 per-tensor, static activations") if static else (SCHEMES["fp8_tensor_dynamic"], "fp8 per-tensor, dynamic activations (FP8-T-DT)")
    if method == "mxfp4":
        return SCHEMES["mxfp4_w16"], "mxfp4 with no MoE activation quantization declared: the BF16-activation variants (MXFP4-W16) are preferred"
    if method == "modelopt":
        algo = str(q.get("quant_algo", "")).upper()
        table = {"NVFP4": "nvfp4", "FP8": "fp8_tensor_static", "W4A16_NVFP4": "nvfp4_w16", "MXFP8": "mxfp8"}
        if algo not in table:
            rec.fail("$.quantization.quant_algo", "ModelOpt algorithm not in the vocabulary", algo, sorted(table))
        return SCHEMES[table[algo]], f"ModelOpt quant_algo {algo}"
    if method == "compressed-tensors":
        return _compressed_tensors(rec, q)
    if method in ("gptq", "awq"):
        bits = q.get("bits", q.get("w_bit"))
        if bits == 8:
            return SCHEMES["int8_w16"], f"{method} 8-bit weights"
        if bits == 4:
            asym = method == "awq" or q.get("sym") is False
            return SCHEMES["int4_asym_w16" if asym else "int4_w16"], f"{method} 4-bit weights ({'asymmetric' if asym else 'symmetric'})"
        rec.fail("$.quantization_config.bits", f"{method} bit width not in the vocabulary", bits, [4, 8])
    rec.fail("$.quantization_config.quant_method", "quantization method not in the vocabulary", method, ["fp8", "mxfp4", "modelopt", "compressed-tensors", "gptq", "awq"])
    raise AssertionError("unreachable")


def _compressed_tensors(rec: _Recorder, q: Mapping[str, Any]) -> tuple[QuantScheme, str]:
    groups = q.get("config_groups") or {}
    if not isinstance(groups, dict) or not groups:
        rec.fail("$.quantization_config.config_groups", "compressed-tensors config has no config_groups", groups)
    name, group = next(iter(groups.items()))
    where = f"$.quantization_config.config_groups.{name}"
    if not isinstance(group, dict):
        rec.fail(where, "must be an object", group)
    w = group.get("weights") or {}
    a = group.get("input_activations")
    for part, value in (("weights", w), ("input_activations", a)):
        if value is not None and not isinstance(value, dict):
            rec.fail(f"{where}.{part}", "must be an object", value)
    if w.get("type") == "float" and w.get("num_bits") == 8:
        strategy = w.get("strategy")
        wkey = {"channel": "fp8_static_channel", "tensor": "fp8_static_tensor", "block": "fp8_static_block128"}.get(strategy) if isinstance(strategy, str) else None
        if wkey is None:
            rec.fail(f"$.quantization_config.config_groups.{name}.weights.strategy", "fp8 weight strategy not in the vocabulary", w.get("strategy"), ["channel", "tensor", "block"])
        akey = None
        if a:
            strategy, dynamic = a.get("strategy"), bool(a.get("dynamic"))
            if wkey == "fp8_static_block128" or strategy == "group":
                akey = "fp8_dynamic_group128"
            elif strategy == "token":
                akey = "fp8_dynamic_token"
            elif strategy == "tensor":
                # Upstream maps *dynamic* per-tensor to kFp8Dynamic128Sym (reference §5.18);
                # we keep the scheme the checkpoint declares.
                akey = "fp8_dynamic_tensor" if dynamic else "fp8_static_tensor"
        scheme = QuantScheme(wkey, akey)
        return scheme, f"compressed-tensors weights {w.get('strategy')} fp8, activations {a.get('strategy') if a else 'none'}{' dynamic' if a and a.get('dynamic') else ''}"
    if w.get("type") == "int" and w.get("num_bits") in (4, 8) and not a:
        gs = w.get("group_size")
        if w["num_bits"] == 8:
            return SCHEMES["int8_w16"], "compressed-tensors int8 weight-only"
        asym = w.get("symmetric") is False
        key = ("int4_g32" if gs == 32 else "int4") + ("_asym" if asym else "") + "_w16"
        return SCHEMES[key], f"compressed-tensors int4 weight-only, group {gs}"
    rec.fail(f"$.quantization_config.config_groups.{name}", "compressed-tensors scheme not in the vocabulary", {"weights": w.get("type"), "bits": w.get("num_bits")}, None)
    raise AssertionError("unreachable")


def from_hf_config(cfg: Mapping[str, Any], *, file: str | None = None, quant_cfg: Mapping[str, Any] | None = None) -> CheckpointFields:
    """Checkpoint fields of the MoE layers of a Hugging Face model config.

    Args:
        cfg: parsed ``config.json``; a multimodal config's ``text_config`` is used when present.
        file: path for error messages.
        quant_cfg: parsed ``hf_quant_config.json`` (ModelOpt), overriding ``quantization_config``.

    Raises:
        ConfigError: the model has no MoE layers, or a field is missing or outside the vocabulary.
    """
    rec = _Recorder(file)
    text = cfg.get("text_config") if isinstance(cfg.get("text_config"), dict) else None
    layer_cfg = {**cfg, **text} if text else dict(cfg)
    prefix = "text_config." if text else ""
    model_type = layer_cfg.get("model_type") if isinstance(layer_cfg.get("model_type"), str) else None
    key, num = _first(layer_cfg, _NUM_EXPERTS)
    if num is None or (isinstance(num, int) and not isinstance(num, bool) and num <= 1):
        rec.fail(f"$.{prefix}num_experts", "the model config declares no MoE layer (none of " + ", ".join(_NUM_EXPERTS) + " is > 1)", num, None)
    rec.put("num_experts", _int(rec, prefix + key, num), Source.CHECKPOINT, f"config.{prefix}{key}")
    key, top_k = _first(layer_cfg, _TOP_K)
    if top_k is None:
        rec.fail(f"$.{prefix}num_experts_per_tok", "MoE config without a top-k (num_experts_per_tok)", None, None)
    rec.put("top_k", _int(rec, prefix + key, top_k), Source.CHECKPOINT, f"config.{prefix}{key}")
    if top_k > rec.kwargs["num_experts"]:
        rec.fail(f"$.{prefix}{key}", "experts per token exceed the number of experts", top_k, {"maximum": rec.kwargs["num_experts"]})
    if "hidden_size" not in layer_cfg:
        rec.fail(f"$.{prefix}hidden_size", "missing hidden_size", None, None)
    rec.put("hidden_size", _int(rec, prefix + "hidden_size", layer_cfg["hidden_size"]), Source.CHECKPOINT, f"config.{prefix}hidden_size")
    key, inter = _first(layer_cfg, ("moe_intermediate_size", "intermediate_size"))
    if inter is None:
        rec.fail(f"$.{prefix}moe_intermediate_size", "missing moe_intermediate_size / intermediate_size", None, None)
    rec.put("intermediate_size", _int(rec, prefix + key, inter), Source.CHECKPOINT if key == "moe_intermediate_size" else Source.INFERRED, f"config.{prefix}{key}" + ("" if key == "moe_intermediate_size" else " (no moe_intermediate_size: the expert width)"))
    dtype = layer_cfg.get("torch_dtype", layer_cfg.get("dtype"))
    if dtype is None:
        rec.put("in_dtype", DType.BFLOAT16, Source.DEFAULT, "no torch_dtype in the config; assumed bfloat16")
    elif dtype in ("bfloat16", "float16", "float32"):
        rec.put("in_dtype", DType(dtype), Source.CHECKPOINT, f"config.{prefix}torch_dtype")
    else:
        rec.fail(f"$.{prefix}torch_dtype", "model dtype not in the vocabulary", dtype, ["bfloat16", "float16", "float32"])
    _activation(rec, layer_cfg, model_type)
    _routing(rec, layer_cfg, model_type)
    _quant(rec, cfg, quant_cfg)
    architectures = cfg.get("architectures")
    name = cfg.get("_name_or_path") or (architectures[0] if isinstance(architectures, list) and architectures else None)
    return CheckpointFields(rec.kwargs, tuple(rec.prov), model_type, name if isinstance(name, str) else None)
