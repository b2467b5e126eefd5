"""MoE layer fields from a Hugging Face config, across the spellings model families use.

:func:`read_moe_fields` turns the text-model config (``text_config`` merged over the top
level, family defaults filled in) into MoEConfig keyword arguments that every routed-MoE
layer of the model shares, each with its provenance. Per-layer differences (quantization,
hash routing) are applied by :mod:`moe_oracle.inputs.checkpoint.model`.

Where the engine's model class hard-codes an input (Mixtral renormalizes, Nemotron-H scores
with sigmoid and always has a correction bias, Gemma-4 routes with its own function) the
family record wins over config.json, and the evidence says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ...core.config import Provenance, grouping_problems
from ...core.errors import ConfigError, InputIssue
from ...core.vocab import Activation, DType, RoutingMethod, Source
from .families import GENERIC, Family
from .releases import ReaderRelease

__all__ = [
    "EXPERT_ALIASES",
    "SCALING_ALIASES",
    "SCORING_ALIASES",
    "TOP_K_ALIASES",
    "MoEFields",
    "read_moe_fields",
    "routing_method_type",
]

EXPERT_ALIASES = ("n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts")
# ``top_k`` is not an alias: transformers < 5 serializes the generation default top_k = 50
# into many config.json files (Kimi-K2.5, Kimi-K3 carry it beside the real field).
TOP_K_ALIASES = ("num_experts_per_tok", "num_experts_per_token", "top_k_experts", "experts_per_token", "moe_topk", "moe_k")
SCORING_ALIASES = ("scoring_func", "moe_router_activation_func", "moe_router_activation", "router_score_function", "router_scoring_func")
SCALING_ALIASES = ("routed_scaling_factor", "router_scaling_factor", "moe_router_scaling_factor", "route_scale")
RENORMALIZE_ALIASES = ("norm_topk_prob", "moe_renormalize", "renormalize")
GROUP_ALIASES = ("n_group", "num_expert_group")
INTERMEDIATE_ALIASES = ("moe_intermediate_size", "expert_intermediate_size", "intermediate_size")
LATENT_ALIASES = ("routed_expert_hidden_size", "moe_latent_size")
ACTIVATION_ALIASES = ("mlp_hidden_act", "hidden_act", "hidden_activation", "activation_function")
SWIGLU_LIMIT_ALIASES = ("swiglu_limit", "moe_swiglu_limit")
SITU_BETA_ALIASES = ("activation_situ_beta", "situ_beta")
SITU_LINEAR_ALIASES = ("activation_situ_linear_beta", "situ_linear_beta")

_ACTS = {
    "silu": Activation.SILU, "swish": Activation.SILU, "swiglu": Activation.SILU, "gelu": Activation.GELU,
    "gelu_pytorch_tanh": Activation.GELU_TANH, "gelu_new": Activation.GELU_TANH, "gelu_tanh": Activation.GELU_TANH,
    "relu2": Activation.RELU2, "situ": Activation.SITU, "swigluoai": Activation.SWIGLUOAI,
    "swigluoai_uninterleave": Activation.SWIGLUOAI_UNINTERLEAVE, "swiglustep": Activation.SWIGLUSTEP,
}
_SCORINGS = ("softmax", "sigmoid", "sqrtsoftplus")


def routing_method_type(scoring_func: str, renormalize: bool, num_expert_group: int | None, has_e_score_bias: bool, *, routed_scaling_factor: float | None = 1.0, release: "ReaderRelease | str | None" = None) -> RoutingMethod:
    """``get_routing_method_type`` (vllm/model_executor/layers/fused_moe/config.py) of vLLM
    ``release`` (:meth:`ReaderRelease.of`; ``None``: the newest modelled).

    0.31.0 dropped the ``routed_scaling_factor`` argument (fact ``routing_minimax2_any_scale``):
    sigmoid + bias + renormalize without groups is MiniMax2 whatever the scale (the kernel applies
    it as routeScale); 0.29.0-0.30.0 answer MiniMax2 only for a scale of 1.0 (or ``None``), else
    Unspecified. ``routed_scaling_factor``: the value the model class passes its router.

    >>> routing_method_type("sigmoid", True, 8, True).value
    'deepseek_v3'
    >>> routing_method_type("sigmoid", True, None, True).value
    'minimax2'
    >>> routing_method_type("sigmoid", True, None, True, routed_scaling_factor=2.0, release="0.30.0").value
    'unspecified'
    """
    if scoring_func == "sqrtsoftplus":
        return RoutingMethod.DEEPSEEK_V4 if renormalize else RoutingMethod.UNSPECIFIED
    if has_e_score_bias:
        if scoring_func != "sigmoid" or not renormalize:
            return RoutingMethod.UNSPECIFIED
        if (num_expert_group or 0) > 0:
            return RoutingMethod.DEEPSEEK_V3
        if ReaderRelease.of(release).holds("routing_minimax2_any_scale") or routed_scaling_factor in (None, 1.0):
            return RoutingMethod.MINIMAX2
        return RoutingMethod.UNSPECIFIED
    if scoring_func == "sigmoid":
        return RoutingMethod.SIGMOID_RENORM if renormalize else RoutingMethod.SIGMOID
    if scoring_func == "softmax":
        return RoutingMethod.RENORMALIZE_NAIVE if renormalize else RoutingMethod.DEFAULT
    return RoutingMethod.UNSPECIFIED


@dataclass(frozen=True)
class MoEFields:
    """Fields shared by every routed-MoE layer of one model.

    Attributes:
        kwargs: MoEConfig keyword arguments (checkpoint half).
        provenance: source and evidence per field.
        notes: what the answer rests on when the family is unknown, and other caveats.
        has_correction_bias: the routed layers carry ``e_score_correction_bias`` (hash-routed
            DeepSeek-V4 layers do not; the plan clears it there).
    """

    kwargs: Mapping[str, Any]
    provenance: tuple[Provenance, ...]
    notes: tuple[str, ...]
    has_correction_bias: bool


class _Reader:
    def __init__(self, cfg: Mapping[str, Any], file: str | None, path: str, defaults: Mapping[str, Any], family: Family) -> None:
        self.cfg, self.file, self.path, self.defaults, self.family = cfg, file, path, defaults, family
        self.kwargs: dict[str, Any] = {}
        self.prov: list[Provenance] = []
        self.notes: list[str] = []
        self.release: ReaderRelease = ReaderRelease.of(None)
        self.platform: str | None = None

    def put(self, name: str, value: Any, source: Source, evidence: str) -> None:
        self.kwargs[name] = value
        self.prov.append(Provenance(name, source, evidence))

    def fail(self, key: str, message: str, value: Any = None, allowed: Any = None) -> ConfigError:
        return ConfigError([InputIssue(f"{self.path}{key}", message, value, allowed, self.file)])

    def first(self, keys: tuple[str, ...]) -> tuple[str | None, Any, Source]:
        """First present alias; then the family default (source ``default``)."""
        for key in keys:
            if self.cfg.get(key) is not None:
                return key, self.cfg[key], Source.CHECKPOINT
        for key in keys:
            if self.defaults.get(key) is not None:
                return key, self.defaults[key], Source.DEFAULT
        return None, None, Source.DEFAULT

    def where(self, key: str, source: Source) -> str:
        if source is Source.DEFAULT:
            return f"{key} = {self.defaults.get(key)!r} (absent; default of {self.family.source.split(';')[-1].strip() or 'the config class'})"
        return f"config.{self.path[2:]}{key}"

    def int_(self, key: str, value: Any, minimum: int = 1) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= 2**40:
            raise self.fail(key, f"must be an integer from {minimum} to 2**40", value, {"minimum": minimum, "maximum": 2**40})
        return value

    def float_(self, key: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value in (float("inf"), float("-inf")):
            raise self.fail(key, "must be a finite number", value, {"type": "number"})
        return float(value)


def read_moe_fields(cfg: Mapping[str, Any], family: Family, *, file: str | None = None, path: str = "$.", model_type: str | None = None, architecture: str | None = None, release: "ReaderRelease | str | None" = None, platform: str | None = None) -> MoEFields:
    """MoEConfig checkpoint fields shared by the routed layers.

    Args:
        cfg: text-model config (``text_config`` merged over the top level).
        family: engine family (defaults and hard-coded inputs).
        file: path for error messages.
        path: JSON path prefix of ``cfg`` (``$.text_config.``).
        model_type: text-model ``model_type``; architecture: ``architectures[0]``.
        release: the vLLM release the answer is for (its ``get_routing_method_type``).
        platform: the device's platform (``cuda``, ``rocm`` ...), where a family's model class
            differs by platform (:attr:`Family.scale_to_output_on`); ``None``: the CUDA class.

    Raises:
        ConfigError: no MoE layer, a missing dimension, or a value outside the vocabulary,
            naming the field (as spelled in the file), the value and what is allowed.
    """
    r = _Reader(cfg, file, path, family.defaults, family)
    r.release = ReaderRelease.of(release)
    r.platform = platform
    if family is GENERIC:
        r.notes.append(f"unknown model_type {model_type!r}: routing rests on the generic fields {', '.join(SCORING_ALIASES[:1] + RENORMALIZE_ALIASES[:1] + GROUP_ALIASES[:1])}, topk_method and use_routing_bias; the activation on {ACTIVATION_ALIASES[1]}")
    key, num, src = r.first(EXPERT_ALIASES)
    if num is None or (isinstance(num, int) and not isinstance(num, bool) and num <= 1):
        raise r.fail("num_experts", "the model config declares no MoE layer (none of " + ", ".join(EXPERT_ALIASES) + " is > 1)", num, None)
    r.put("num_experts", r.int_(key, num), src, r.where(key, src))
    key, top_k, src = r.first(TOP_K_ALIASES)
    if top_k is None:
        raise r.fail("num_experts_per_tok", "MoE config without experts per token (" + ", ".join(TOP_K_ALIASES) + ")", None, None)
    r.put("top_k", r.int_(key, top_k), src, r.where(key, src))
    if top_k > r.kwargs["num_experts"]:
        raise r.fail(key, "experts per token exceed the number of experts", top_k, {"maximum": r.kwargs["num_experts"]})
    if cfg.get("hidden_size") is None:
        raise r.fail("hidden_size", "missing hidden_size", None, None)
    hidden = r.int_("hidden_size", cfg["hidden_size"])
    key, latent, _ = r.first(LATENT_ALIASES)
    if latent is not None:
        r.put("hidden_size", r.int_(key, latent), Source.INFERRED, f"config.{path[2:]}{key} = {latent}: latent MoE, the experts run at this width (model hidden_size {hidden})")
    else:
        r.put("hidden_size", hidden, Source.CHECKPOINT, f"config.{path[2:]}hidden_size")
    inter_keys = ("intermediate_size",) if family.name == "minimax_m3" else INTERMEDIATE_ALIASES
    dense_width = family.expert_width_is_intermediate or family.name in EXPERTS_SIZED_BY_INTERMEDIATE
    if family is not GENERIC and not dense_width:
        inter_keys = inter_keys[:-1]  # the model class reads the expert key, never intermediate_size
        _refuse_null_expert_width(r, inter_keys)
    key, inter, src = r.first(inter_keys)
    if inter is None:
        if family is not GENERIC and not dense_width:
            raise _missing_expert_width(r, model_type)
        raise r.fail("moe_intermediate_size", "missing moe_intermediate_size / intermediate_size", None, None)
    exact = key != "intermediate_size" or dense_width
    r.put("intermediate_size", r.int_(key, inter), Source.CHECKPOINT if exact else Source.INFERRED, r.where(key, src) + ("" if exact else " (no moe_intermediate_size: taken as the expert width)"))
    dtype = cfg.get("torch_dtype", cfg.get("dtype"))
    if dtype is None:
        r.put("in_dtype", DType.BFLOAT16, Source.DEFAULT, "no torch_dtype in the config; assumed bfloat16")
    elif dtype in ("bfloat16", "float16", "float32"):
        r.put("in_dtype", DType(dtype), Source.CHECKPOINT, f"config.{path[2:]}{'torch_dtype' if 'torch_dtype' in cfg else 'dtype'}")
    else:
        raise r.fail("torch_dtype", "model dtype not in the vocabulary", dtype, ["bfloat16", "float16", "float32"])
    _activation(r)
    bias = _routing(r)
    _router_dtype(r)
    if model_type:
        r.put("model_type", model_type, Source.CHECKPOINT, f"config.{path[2:]}model_type")
    if architecture:
        r.put("architecture", architecture, Source.CHECKPOINT, "config.architectures[0]")
    _substitution(r)
    return MoEFields(dict(r.kwargs), tuple(r.prov), tuple(r.notes), bias)


EXPERTS_SIZED_BY_INTERMEDIATE = ("minimax_m3", "mixtral", "gpt_oss", "minimax_m2", "llama4", "phimoe", "olmoe")
"""Families whose model class sizes its experts by ``intermediate_size`` (besides those marked
:attr:`Family.expert_width_is_intermediate`); every other family's reads ``moe_intermediate_size``
(or the key :attr:`Family.keys` names), e.g. vLLM 0.34.0 qwen3_moe.py ``FusedMoE(intermediate_size=config.moe_intermediate_size)``."""


def _expert_key(r: _Reader) -> str:
    """The expert-width key as the family's config.json spells it."""
    return r.family.keys.get("moe_intermediate_size", "moe_intermediate_size")


def _refuse_null_expert_width(r: _Reader, keys: tuple[str, ...]) -> None:
    """An explicit ``null`` expert width: vLLM hands ``None`` to ``FusedMoE`` and fails building it.

    Raises:
        ConfigError: naming the key.
    """
    for key in keys:
        if key in r.cfg and r.cfg[key] is None and not any(r.cfg.get(k) is not None for k in keys):
            raise r.fail(key, f"null: vLLM's {r.family.name} model class sizes its experts by this key and fails on null; give the experts' intermediate size (an integer)", None, {"type": "integer", "minimum": 1})


def _missing_expert_width(r: _Reader, model_type: str | None) -> ConfigError:
    """No expert width in config.json, for a family whose model class reads the expert key:
    vLLM takes the transformers config class's default for the model_type, which this tool
    reads only where the family records it (:attr:`Family.defaults`); ``intermediate_size`` is the
    dense MLP's width, never the experts'."""
    key = _expert_key(r)
    dense = r.cfg.get("intermediate_size")
    return r.fail(key, f"missing: vLLM's {r.family.name} model class sizes its experts by {key} (not intermediate_size"
                       + (f" = {dense}, the dense MLP's width" if dense is not None else "")
                       + f"); without it vLLM takes the default of the transformers config class of model_type {model_type!r}, which this tool does not read: give {key} in config.json",
                  None, {"type": "integer", "minimum": 1})


def _refuse_hidden_act(r: _Reader, key: str | None, act: Any) -> None:
    """A ``hidden_act`` the model class refuses while building its MoE layers (:attr:`Family.hidden_acts`).

    Raises:
        ConfigError: naming the key, with vLLM's 'Unsupported activation'.
    """
    fam = r.family
    if act is not None and fam.hidden_acts and act not in fam.hidden_acts:
        raise r.fail(key or "hidden_act", f"{fam.name} model class refuses it ({fam.source.split(';')[0]}: 'Unsupported activation')", act, list(fam.hidden_acts))


def _activation(r: _Reader) -> None:
    fam = r.family
    if fam.name == "gpt_oss":
        r.put("activation", Activation.SWIGLUOAI, Source.INFERRED, f"{fam.source}: swigluoai with gate/up interleaved in w13")
        r.put("has_bias", True, Source.INFERRED, "model_type gpt_oss: experts carry gate_up_proj_bias and down_proj_bias")
    elif fam.activation is not None:
        key, act, _ = r.first(ACTIVATION_ALIASES)
        _refuse_hidden_act(r, key, act)
        r.put("activation", Activation(fam.activation), Source.INFERRED, f"{fam.source}: the model class's MoE activation is {fam.activation} whatever config.json says" + (f" (config.{key} = {act})" if key else ""))
    else:
        key, act, src = r.first(ACTIVATION_ALIASES)
        if act is None:
            r.put("activation", Activation.SILU, Source.DEFAULT, "no hidden_act in the config; assumed silu")
        else:
            if not isinstance(act, str) or act not in _ACTS:
                raise r.fail(key or "hidden_act", "activation not in the MoE vocabulary", act, sorted(_ACTS))
            _refuse_hidden_act(r, key, act)
            base = _ACTS[act]
            if fam.name == "nemotron_h":
                r.put("activation", Activation(f"{base.value}_no_mul"), Source.INFERRED, f"config.{key} = {act}; Nemotron-H experts are non-gated (up_proj and down_proj only; vLLM NemotronHMoE)")
            else:
                r.put("activation", base, Source.CHECKPOINT if act == base.value else Source.INFERRED, f"{r.where(key, src)} = {act}" + ("" if base is Activation.SITU else " (gated)"))
    act = r.kwargs["activation"]
    if act in (Activation.SWIGLUOAI, Activation.SWIGLUOAI_UNINTERLEAVE, Activation.SILU, Activation.SWIGLUSTEP):
        unread = []
        for name, keys in (("swiglu_limit", SWIGLU_LIMIT_ALIASES), ("swiglu_alpha", ("swiglu_alpha",)), ("swiglu_beta", ("swiglu_beta",))):
            key, value, src = r.first(keys)
            if value is None:
                continue
            if fam.passes_swiglu:
                r.put(name, r.float_(key, value), src, r.where(key, src))
            else:
                unread.append(f"{key} = {value}")
        if unread:
            r.notes.append(f"{', '.join(unread)} not passed to FusedMoE ({fam.source.split(';')[0]}): the layer's swiglu parameters are None, as vLLM's FusedMoEConfig holds them")
    if act is Activation.SITU:
        for name, keys in (("situ_beta", SITU_BETA_ALIASES), ("situ_linear_beta", SITU_LINEAR_ALIASES)):
            key, value, src = r.first(keys)
            if value is None:
                r.notes.append(f"SiTU activation without {keys[0]}: kernels that accept only some SiTU parameters cannot be checked")
            else:
                r.put(name, r.float_(key, value), src, r.where(key, src))


def _routing(r: _Reader) -> bool:
    """Routing inputs; returns whether routed layers carry a correction bias."""
    fam, cfg = r.family, r.cfg
    if fam.routing is not None:
        r.put("routing_method", RoutingMethod(fam.routing), Source.INFERRED, f"{fam.source}: the model class routes with its own function")
        return False
    evidence: list[str] = []
    if fam.scoring is not None:
        scoring = fam.scoring
        evidence.append(f"scoring {scoring} ({fam.name} model class)")
    else:
        key, scoring, src = r.first(SCORING_ALIASES)
        if scoring is None:
            scoring = "softmax"
            evidence.append("no scoring field: softmax")
        else:
            if scoring not in _SCORINGS:
                raise r.fail(key, "router scoring function not in the vocabulary", scoring, list(_SCORINGS))
            evidence.append(f"{key}={scoring}" + (" (default)" if src is Source.DEFAULT else ""))
    if fam.renormalize is not None:
        renormalize = fam.renormalize
        evidence.append(f"renormalize={renormalize} ({fam.name} model class)")
    else:
        key, value, src = r.first(RENORMALIZE_ALIASES)
        renormalize = bool(value) if value is not None else False
        evidence.append(f"{key}={renormalize}" + (" (default)" if src is Source.DEFAULT else "") if key else "no norm_topk_prob: no renormalization")
        if renormalize and fam.renormalize_scorings and scoring not in fam.renormalize_scorings:
            renormalize = False
            evidence.append(f"renormalize=False: the {fam.name} model class renormalizes only with scoring {' / '.join(fam.renormalize_scorings)}")
    _refuse_null_groups(r)
    key, groups, gsrc = r.first(GROUP_ALIASES)
    if fam.fixed_groups is not None:
        key, groups, gsrc = None, fam.fixed_groups[0], Source.INFERRED
        evidence.append(f"num_expert_group={groups}, topk_group={fam.fixed_groups[1]} (the {fam.name} model class passes them whatever config.json says)")
    elif groups is not None:
        groups = r.int_(key, groups, minimum=0)
        if fam.grouped:
            evidence.append(f"{key}={groups}" + (" (default)" if gsrc is Source.DEFAULT else "") + f" (use_grouped_topk=True in the {fam.name} model class)")
        elif cfg.get("use_grouped_topk") is False:
            evidence.append(f"use_grouped_topk=false: {key} not used")
            groups = None
        else:
            evidence.append(f"{key}={groups}" + (" (default)" if gsrc is Source.DEFAULT else ""))
    method = cfg.get("topk_method", r.defaults.get("topk_method"))
    if method == "greedy" and groups is not None:
        if fam.grouped:
            # DeepseekV2MoE reads topk_method only for the correction bias; whether the groups
            # route degenerately is the router factory's call (create_fused_moe_router).
            evidence.append(f"topk_method=greedy not read for the grouping (the {fam.name} model class passes the groups)")
        else:
            evidence.append("topk_method=greedy: no expert groups")
            groups = None
    bias = False
    if fam.bias is not None:
        bias = fam.bias
        if bias:
            evidence.append(f"e_score_correction_bias always built ({fam.name} model class)")
    elif method == "noaux_tc":
        bias = True
        evidence.append("topk_method=noaux_tc (e_score_correction_bias)")
    else:
        key, flag, src = r.first(("use_routing_bias", "moe_router_enable_expert_bias"))
        if flag:
            bias = True
            evidence.append(f"{key}=true" + (" (default)" if src is Source.DEFAULT else ""))
    skey, rsf, ssrc = r.first(SCALING_ALIASES)
    to_output = (r.platform or "cuda") in fam.scale_to_output_on
    passed = (r.float_(skey, rsf) if rsf is not None else 1.0) if fam.passes_routed_scale and not to_output else 1.0
    if to_output:
        if fam.name == "minimax_m3":
            r.notes.append(f"{fam.name} on {r.platform}: the model class applies routed_scaling_factor to the MoE output and hands its router 1.0; "
                           "read with AITER fused shared experts off (VLLM_ROCM_USE_AITER_FUSION_SHARED_EXPERTS unset, its default: with it set on gfx950 without EP the class routes through grouped top-k instead, which is not modelled)")
        else:
            r.notes.append(f"{fam.name}: the model class applies routed_scaling_factor to the MoE output (apply_routed_scale_to_output) and hands its router 1.0")
    no_groups = None
    if groups == 0:
        no_groups = _zero_groups(r, key or GROUP_ALIASES[0], bias, passed)
        groups = None
    routing = routing_method_type(scoring, renormalize, groups, bias, routed_scaling_factor=passed, release=r.release)
    bias_evidence = evidence[-1]
    if no_groups:
        evidence.append(no_groups)
    if bias and scoring == "sigmoid" and renormalize and not (groups or 0) and not r.release.holds("routing_minimax2_any_scale"):
        why = f" (the {fam.name} model class passes none)" if not fam.passes_routed_scale else f" (the {fam.name} model class on {r.platform} applies the scale to the MoE output)" if to_output else ""
        evidence.append(f"routed_scaling_factor passed to the router {passed:g}{why} ({r.release.words}: MiniMax2 only at 1.0)")
    r.put("routing_method", routing, Source.INFERRED, f"get_routing_method_type ({r.release.words}): " + ", ".join(evidence))
    if bias:
        r.put("has_correction_bias", True, Source.INFERRED, bias_evidence)
    if groups is not None and fam.fixed_groups is not None:
        why = f"{fam.source.split(' (')[0]}: the model class passes num_expert_group={fam.fixed_groups[0]}, topk_group={fam.fixed_groups[1]} whatever config.json says"
        r.put("num_expert_group", fam.fixed_groups[0], Source.INFERRED, why)
        r.put("topk_group", fam.fixed_groups[1], Source.INFERRED, why)
    elif groups is not None:
        r.put("num_expert_group", groups, gsrc, r.where(key, gsrc) if key else "")
        tkey, tg, tsrc = r.first(("topk_group",))
        if tg is not None:
            r.put("topk_group", r.int_("topk_group", tg, minimum=0), tsrc, r.where("topk_group", tsrc))
        # Named as config.json spells them (MoEConfig, which knows the device too, would say num_expert_group).
        for name, message, value, allowed in grouping_problems(r.kwargs["num_experts"], groups, r.kwargs.get("topk_group"), names=(key or GROUP_ALIASES[0], "topk_group"), platform=r.platform)[:1]:
            raise r.fail(name, message, value, allowed)
    if rsf is not None:
        r.put("routed_scaling_factor", r.float_(skey, rsf), ssrc, r.where(skey, ssrc))
    return bias


NULL_GROUPS_SOURCE = "vLLM 0.29.0-0.34.0 model_executor/layers/fused_moe/router/router_factory.py create_fused_moe_router"
"""Where an explicit ``null`` group count fails (see :func:`_refuse_null_groups`)."""


def _refuse_null_groups(r: _Reader) -> None:
    """An explicit ``n_group: null`` (or ``topk_group: null``) where the model class builds
    grouped top-k from it: the config class keeps the ``None`` (transformers 5.20.2
    ``DeepseekV3Config(n_group=None).n_group`` is ``None``; its default 8 is for an absent key),
    the model class hands it on (vLLM 0.29.0-0.34.0 deepseek_v2.py
    ``num_expert_group=getattr(config, "n_group", 1)`` with ``use_grouped_topk=True``; glm4_moe.py,
    AXK1.py, ... ``config.n_group``), and :data:`NULL_GROUPS_SOURCE` raises "num_expert_group and
    topk_group must be provided when use_grouped_topk is True" when the layer is built (on CPU from
    0.30.0 ``CPURouter`` is built instead and asserts ``num_expert_group is not None`` when it first
    routes, router/cpu_router.py). The classes this applies to are the ones whose config class has
    a default for the key (the family's ``defaults``); a class that passes fixed groups
    (``fixed_groups``) or groups only when both keys are set reads no ``null``. Where the config
    class's own default is ``None`` (transformers 5.20.2 ``DeepseekV2Config``: ``n_group`` and
    ``topk_group``, for ``model_type: deepseek_v2``), an absent key is refused as a null one.

    Raises:
        ConfigError: naming the key as config.json spells it.
    """
    fam = r.family
    if fam.fixed_groups is not None or (not fam.grouped and r.cfg.get("use_grouped_topk") is False):
        return  # fixed groups, or no grouped top-k (Kimi-K3: use_grouped_topk=config.use_grouped_topk)
    for keys in (GROUP_ALIASES, ("topk_group",)):
        if any(r.cfg.get(k) is not None for k in keys):
            continue
        null = next((k for k in keys if k in r.cfg and r.cfg[k] is None), None)
        default = next((r.defaults[k] for k in keys if r.defaults.get(k) is not None), None)
        if null is not None and default is not None:
            raise r.fail(null, f"null: the {fam.name} model class builds grouped top-k from it, and the config class keeps null (its default {default!r} is for an absent key), "
                               f"so {NULL_GROUPS_SOURCE} raises 'num_expert_group and topk_group must be provided when use_grouped_topk is True' when vLLM builds the layer "
                               f"(on CPU, CPURouter asserts when it first routes); give the count (an integer), or leave the key out for {default!r}", None, {"type": "integer", "minimum": 1})
        # A config class whose default is None (DeepseekV2Config's n_group and topk_group) gives the
        # model class None for an absent key as for a null one.
        none_default = next((k for k in keys if k in r.defaults and r.defaults[k] is None), None)
        if default is None and none_default is not None:
            key = null or none_default
            config_class = fam.source.split(";")[-1].strip()
            said = "null" if null is not None else "absent"
            raise r.fail(key, f"{said}: the {fam.name} model class builds grouped top-k from it, and {config_class} defaults it to None, "
                              f"so {NULL_GROUPS_SOURCE} raises 'num_expert_group and topk_group must be provided when use_grouped_topk is True' when vLLM builds the layer "
                              f"(on CPU, CPURouter asserts when it first routes); give the count (an integer; 1 for no expert groups)", None, {"type": "integer", "minimum": 1})


ZERO_GROUPS_SOURCE = "vLLM 0.29.0-0.34.0 model_executor/layers/fused_moe/router/router_factory.py create_fused_moe_router"
"""Where ``n_group: 0`` is read as no expert groups (see :func:`_zero_groups`)."""


def _zero_groups(r: _Reader, key: str, bias: bool, passed: float) -> str:
    """The evidence that a config.json's ``n_group: 0`` means no expert groups here, or the
    refusal naming why vLLM fails on it.

    vLLM 0.29.0-0.34.0 read 0 groups as none where they read the count: ``get_routing_method_type``
    (fused_moe/config.py: ``(num_expert_group or 0) > 0``), ``ExpertMapManager`` (``> 1``), the
    TRT-LLM monolithic kernels (``num_expert_group or 0``). A model class that asks for grouped
    top-k hands both counts to :data:`ZERO_GROUPS_SOURCE`, which builds the ungrouped router when
    the grouping is degenerate (``num_expert_group <= 1 and topk_group <= 1``), the ungrouped
    router can apply the scale (``routed_scaling_factor == 1.0`` or a correction bias) and the
    routing method is the ungrouped one (always, for 0 groups). Otherwise it raises
    (``topk_group`` missing) or builds ``GroupedTopKRouter``, whose ``valid_grouping`` takes the
    experts modulo 0 groups when it routes (grouped_topk_router.py); on CPU the grouped top-k
    reshapes the scores into 0 groups (0.29.0 experts/cpu_moe.py ``grouped_topk``, 0.30.0-0.34.0
    router/cpu_router.py ``CPURouter``). Either fails at vLLM's start-up profile run. (A monolithic
    kernel routes inside itself and would not call that router: not modelled, refused.)

    Raises:
        ConfigError: naming ``key`` (as config.json spells it), 0, and why.
    """
    _, tg, _ = r.first(("topk_group",))
    if tg is not None:
        tg = r.int_("topk_group", tg, minimum=0)
    platform = r.platform or "cuda"
    if platform == "cpu":
        why = "on CPU vLLM's grouped top-k reshapes the router scores into 0 groups (0.29.0 experts/cpu_moe.py grouped_topk, 0.30.0-0.34.0 router/cpu_router.py CPURouter) and fails at start"
    elif tg is None:
        why = f"without topk_group {ZERO_GROUPS_SOURCE} raises 'num_expert_group and topk_group must be provided when use_grouped_topk is True'"
    elif tg > 1:
        why = f"topk_group {tg} is not a degenerate grouping (topk_group <= 1), so {ZERO_GROUPS_SOURCE} builds GroupedTopKRouter, whose valid_grouping takes the experts modulo 0 groups when it routes: vLLM fails at start"
    elif not bias and passed != 1.0:
        why = f"the router is handed routed_scaling_factor {passed:g} and no correction bias, which only GroupedTopKRouter applies ({ZERO_GROUPS_SOURCE}), and its valid_grouping takes the experts modulo 0 groups when it routes: vLLM fails at start"
    else:
        return f"{key}=0, topk_group={tg}: no expert groups ({ZERO_GROUPS_SOURCE} routes a degenerate grouping ungrouped; get_routing_method_type reads 0 groups as none)"
    raise r.fail(key, f"0 expert groups (with topk_group {tg}) are no grouping only where vLLM's router skips grouping: a degenerate grouping (topk_group 0 or 1), a routed scale of 1.0 or a correction bias, off CPU; here {why}", 0, {"minimum": 1})


def _router_dtype(r: _Reader) -> None:
    fam = r.family
    if fam.name == "bailing_moe_v25" and r.cfg.get("router_dtype") not in (None, "fp32"):
        r.put("router_logits_dtype", DType.BFLOAT16, Source.CHECKPOINT, f"config.{r.path[2:]}router_dtype = {r.cfg.get('router_dtype')!r}: bfloat16 router logits ({fam.source.split(';')[0]})")
    elif fam.router_fp32:
        r.put("router_logits_dtype", DType.FLOAT32, Source.INFERRED, f"{fam.source}: the gate computes float32 router logits")
    elif fam.name in ("deepseek_v3", "glm5_next") and r.cfg.get("moe_router_dtype") == "float32":
        r.put("router_logits_dtype", DType.FLOAT32, Source.CHECKPOINT, f"config.{r.path[2:]}moe_router_dtype = float32 (deepseek_v2.py _get_moe_router_dtype)")


def _substitution(r: _Reader) -> None:
    """MoNE-pruned checkpoints substitute experts after routing: from vLLM 0.33.0 (fact
    ``expert_substitution``; P/expert_substitution.py) the layer then needs a decomposed backend.
    Earlier releases read neither field: the layer is selected as an ordinary MoE layer."""
    cfg = r.cfg
    comp = cfg.get("compression_config")
    transform = comp.get("transform_config") if isinstance(comp, dict) else None
    if cfg.get("approximate_experts"):
        field, why = f"config.{r.path[2:]}approximate_experts is set", "expert substitution adjusts routes after routing (P/expert_substitution.py)"
    elif isinstance(transform, dict) and transform.get("expert_substitution"):
        field, why = "config.compression_config.transform_config.expert_substitution", "routes adjusted after routing (P/expert_substitution.py)"
    else:
        return
    if r.release.holds("expert_substitution"):
        r.put("require_decomposed", True, Source.INFERRED, f"{field}: {why}")
    else:
        r.notes.append(f"{field}, but {r.release.words} has no expert substitution (P/expert_substitution.py starts in 0.33.0): it is not read, and the layer is selected as an ordinary MoE layer")
