"""A whole checkpoint: every layer with its kind, its experts' quantization and MoE fields.

:func:`read_checkpoint` combines the family rules (:mod:`.families`), the layer layout
(:mod:`.layout`), the shared MoE fields (:mod:`.aliases`) and the quantization resolved per
experts module (:mod:`.quant_formats`) into a frozen :class:`Checkpoint`. Deployment does not
enter here; :mod:`moe_oracle.explain.plan` adds device and parallelism and asks the oracle.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import PurePath
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Mapping

from ...core.config import Provenance
from ...core.errors import ConfigError, InputIssue
from ...core.vocab import Activation, DType, Source
from .aliases import read_moe_fields
from .architectures import SUBCONFIG_WRAPPERS, VLLM_MOE_ARCHITECTURES, architecture_notes
from .families import FAMILIES, GENERIC, Family, family_for, layer_prefix
from .layout import LayerSpec, layer_layout
from .quant_formats import ExpertsQuant, QuantFormat, read_quant_format
from .releases import ReaderRelease

if TYPE_CHECKING:
    from ...core.versions import EngineRelease

__all__ = ["Checkpoint", "CheckpointLayer", "read_checkpoint"]


@dataclass(frozen=True)
class CheckpointLayer:
    """One decoder layer of the checkpoint.

    Attributes:
        spec: index, name, kind, role, module names and why.
        quant: the routed experts' quantization (MoE layers), else ``None``.
        shared_excluded_by: the pattern that leaves this layer's shared experts unquantized,
            ``None`` when they follow the checkpoint scheme or do not exist.
        kwargs: MoEConfig checkpoint keyword arguments (MoE layers), else ``None``.
        provenance: provenance of those fields.
    """

    spec: LayerSpec
    quant: ExpertsQuant | None
    shared_excluded_by: str | None
    kwargs: Mapping[str, Any] | None
    provenance: tuple[Provenance, ...] = ()


@dataclass(frozen=True)
class Checkpoint:
    """A model checkpoint as one vLLM release builds it, before deployment.

    Attributes:
        name: ``_name_or_path``, else the file's name (the directory of a ``config.json``),
            else ``architectures[0]``.
        file: config.json path (for messages).
        model_type: text-model ``model_type``; top_model_type: the top-level one.
        architecture: ``architectures[0]``.
        family: the engine family used (``generic`` for an unknown ``model_type``).
        quant: the quantization document and method.
        layers: target layers then draft (MTP) layers.
        notes: caveats (generic fields used, documents not read, MTP modules dropped ...).
        release: the vLLM release it is read for.
    """

    name: str | None
    file: str | None
    model_type: str | None
    top_model_type: str | None
    architecture: str | None
    family: Family
    quant: QuantFormat
    layers: tuple[CheckpointLayer, ...]
    notes: tuple[str, ...]
    release: ReaderRelease = ReaderRelease.of(None)

    def moe_layers(self) -> tuple[CheckpointLayer, ...]:
        return tuple(layer for layer in self.layers if layer.spec.is_moe)

    def representative(self) -> CheckpointLayer:
        """The layer ``explain --model`` describes: the first routed (not hash-routed) target
        MoE layer, else the first MoE layer of any kind.

        Raises:
            ConfigError: the model has no MoE layer.
        """
        moe = self.moe_layers()
        for layer in moe:
            if layer.spec.role == "target" and layer.spec.kind == "moe":
                return layer
        if moe:
            return moe[0]
        raise ConfigError([InputIssue("$.num_hidden_layers", "the model has no MoE layer in its layout", None, None, self.file)])


def _text_config(cfg: Mapping[str, Any], file: str | None) -> tuple[dict[str, Any], Mapping[str, Any] | None, str]:
    """The text model's config merged over the top level, the text config itself, its JSON path.

    An omni model (Qwen3-Omni) nests it one level deeper, in ``thinker_config.text_config``:
    vLLM builds only the thinker (registry: ``Qwen3OmniMoeForConditionalGeneration`` ->
    ``qwen3_omni_moe_thinker``), so the talker's config is not read. A DeepSeek-VL2 checkpoint
    (DeepSeek-VL2, DeepSeek-OCR 1/2, Unlimited-OCR) holds it in ``language_config``, which vLLM
    0.29.0-0.34.0 ``transformers_utils/configs/deepseek_vl2.py`` ``DeepseekVLV2Config`` makes its
    ``text_config`` (a ``DeepseekV2Config``) and the wrapper builds as its language model. A
    checkpoint whose remote config class keeps it in ``llm_config`` (InternVL chat, Skywork-R1V,
    Nemotron-VL) has it read as ``text_config``: vLLM 0.29.0-0.34.0 ``transformers_utils/config.py``
    ``_maybe_remap_hf_config_attrs`` copies ``llm_config`` to ``text_config`` where the config has
    none (``_CONFIG_ATTRS_MAPPING``).
    """
    text = cfg.get("text_config")
    path = "$.text_config"
    thinker = cfg.get("thinker_config")
    if text is None and thinker is not None:
        if not isinstance(thinker, dict):
            raise ConfigError([InputIssue("$.thinker_config", "must be an object", thinker, None, file)])
        text, path = thinker.get("text_config"), "$.thinker_config.text_config"
    if text is None and cfg.get("language_config") is not None:
        text, path = cfg["language_config"], "$.language_config"
    if text is None and cfg.get("llm_config") is not None:
        text, path = cfg["llm_config"], "$.llm_config"
    if text is None:
        return dict(cfg), None, "$."
    if not isinstance(text, dict):
        raise ConfigError([InputIssue(path, "must be an object", text, None, file)])
    merged = {k: v for k, v in cfg.items() if k not in ("text_config", "vision_config", "thinker_config", "talker_config", "code2wav_config",
                                                         "language_config", "llm_config", "projector_config")}
    merged.update(text)
    return merged, text, path + "."


def read_checkpoint(
    cfg: Mapping[str, Any],
    *,
    file: str | None = None,
    beside: Mapping[str, Any] | None = None,
    override: Mapping[str, Any] | None = None,
    user_quantization: str | None = None,
    layers_required: bool = True,
    release: "EngineRelease | str | ReaderRelease | None" = None,
    platform: str | None = None,
    override_file: str | None = None,
    beside_file: str | None = None,
) -> Checkpoint:
    """Read a Hugging Face ``config.json`` into a :class:`Checkpoint`, as vLLM ``release`` builds it.

    Args:
        cfg: parsed config.json.
        file: its path, for messages.
        beside: ``hf_quant_config.json`` found beside it (read as vLLM reads it: only when
            config.json carries no quantization document).
        override: an ``hf_quant_config.json`` given explicitly; replaces the document.
        user_quantization: vLLM ``--quantization`` (``moe_wna16``).
        layers_required: ``False`` lets a config without ``num_hidden_layers`` describe one
            MoE layer (``explain``); a plan needs every layer.
        release: the vLLM release the answer is for (an ``EngineRelease`` is read by its
            stand-in, :meth:`ReaderRelease.of`); ``None``: the newest modelled release.
        platform: the device's platform value (``cuda``, ``rocm`` ...), for model classes that
            differ by platform; ``None``: as the CUDA class builds it.
        override_file, beside_file: the files ``override`` and ``beside`` came from, named by a
            problem in their document (``None``: ``file``).

    Raises:
        ConfigError: a missing or malformed field, a quantization or model the release refuses,
            or a format not read here; each names the field, the value and what is allowed, and
            a refusal names the release.
    """
    rel = ReaderRelease.of(release)
    text_cfg, text, path = _text_config(cfg, file)
    top_mt, read_notes = _read_model_type(cfg, rel, file)
    if text is None and top_mt is not None:
        text_cfg["model_type"] = top_mt
    text_mt = text_cfg.get("model_type") if isinstance(text_cfg.get("model_type"), str) else None
    for mt, where in ((top_mt, "$.model_type"), (text_mt, f"{path}model_type")):
        if mt in ("deepseek_v41", "deepseek_v41_text") and not rel.holds("deepseek_v41_model"):
            raise ConfigError([InputIssue(where, f"{rel.words} has no DeepSeek-V4.1 model (vllm/models/deepseek_v41 and its registry entries start in vLLM 0.30.0)", mt, None, file)])
    family = family_for(text_mt, top_mt)
    arch = _first_architecture(cfg)
    lm_arch, arch_notes = _language_model_architecture(arch, text, path, rel)
    by_arch = VLLM_MOE_ARCHITECTURES.get(lm_arch) if lm_arch else None
    if family is GENERIC and by_arch is not None and by_arch.family is not None:
        family = next(f for f in FAMILIES if f.name == by_arch.family)
        arch_notes.append(f"model_type {text_mt or top_mt!r} is not one of family {family.name}'s; read as {family.name} because vLLM builds {lm_arch} with that model class ({by_arch.module})")
    arch_notes += read_notes + list(architecture_notes(lm_arch, family, rel))
    if family.name == "step3p5" and not rel.holds("step3p5_transformers_config"):
        family = replace(family, defaults=MappingProxyType({**family.defaults, "scoring_func": "softmax"}))
    if family.name == "laguna" and rel.holds("laguna_renormalize_always"):
        family = replace(family, renormalize=True)
    if family.name == "beam" and not rel.holds("beam_vllm_config"):
        family = replace(family, defaults=MappingProxyType({**family.defaults, "n_group": 8, "topk_group": 4, "routed_scaling_factor": 2.5}))
        arch_notes.append(f"{rel.words} builds Beam through its Transformers backend (no vllm/models/beam before 0.33.0) with transformers' BeamConfig defaults: "
                          "3 dense layers then sparse where mlp_layer_types is absent, n_group 8 and topk_group 4 (grouped top-k), routed_scaling_factor 2.5")
    if family.name == "zaya" and not rel.holds("zaya_native_model"):
        family = replace(family, router_fp32=False)
        arch_notes.append(f"{rel.words} builds ZAYA through its Transformers backend (no zaya.py before 0.34.0): router logits in the model dtype, the top-k from ZAYA's own router as external routing")
    text_cfg, key_notes = _nested_keys(family, text_cfg, path, file)
    arch_notes += key_notes
    filled = {**{k: v for k, v in family.defaults.items()}, **{k: v for k, v in text_cfg.items() if v is not None}}
    name = cfg.get("_name_or_path") or _file_name(file) or arch
    fields = read_moe_fields(text_cfg, family, file=file, path=path, model_type=text_mt, architecture=arch, release=rel, platform=platform)
    expert_dtype = text_cfg.get("expert_dtype")
    if expert_dtype is not None and expert_dtype not in ("fp4", "fp8"):
        raise ConfigError([InputIssue(f"{path}expert_dtype", "Unsupported DeepSeek V4 expert_dtype", expert_dtype, ["fp4", "fp8"], file)])
    quant = read_quant_format(cfg, text_cfg=text, beside=beside, override=override, user_quantization=user_quantization, model_type=text_mt, expert_dtype=expert_dtype, file=file, release=rel, override_file=override_file, beside_file=beside_file)
    prefix, inferred = layer_prefix(family, top_mt, text is not None)
    specs, layout_notes = layer_layout(family, filled, prefix, file=file, path=path, layers_required=layers_required, release=rel)
    _refuse_dense_mlp_activation(family, filled, specs, path, file)
    notes = arch_notes + list(fields.notes) + list(layout_notes) + list(quant.notes) + list(family.notes)
    if family.name == "laguna" and text_cfg.get("moe_apply_router_weight_on_input"):
        notes.append("moe_apply_router_weight_on_input = true is not modelled: vLLM's laguna.py passes it to FusedMoE, and kernels that refuse router weights on the input are not ruled out")
    if family.name == "bailing_moe_v3" and text_cfg.get("expert_swiglu_limit_list") is not None:
        notes.append("expert_swiglu_limit_list (per layer) not modelled: vLLM's bailing_moe_v3.py gives a layer with a non-zero limit the swiglustep activation and that limit; the plan reads silu and no limit")
    if family.name == "exaone_moe" and text_cfg.get("swiglu_limits") is not None:
        notes.append("swiglu_limits (per layer) not modelled: vLLM's exaone_moe.py passes each layer its own swiglu_limit (none where <= 0); the plan reads no limit")
    if inferred:
        notes.append(f"module names assumed to be {prefix}.<i>.{family.experts if family is not GENERIC else 'mlp.experts'} (family {family.name}): exclusion patterns are matched against these names")
    if expert_dtype is not None and quant.method != "deepseek_v4_fp8":
        notes.append(f"expert_dtype {expert_dtype!r} is read only by vLLM's DeepSeek-V4 FP8 config; with quant_method {quant.declared!r} it has no effect")
    layers = []
    cache: dict[tuple[Any, ...], Mapping[str, Any]] = {}
    draft_over, draft_prov = _draft_overrides(family, text_cfg, fields.kwargs, path, file)
    for spec in specs:
        if not spec.is_moe:
            layers.append(CheckpointLayer(spec, None, None, None))
            continue
        assert spec.experts is not None
        q = quant.experts(spec.experts, family.proj_on.get(platform or "cuda", family.proj) if family is not GENERIC else ("gate_proj", "up_proj", "down_proj"))
        hash_layer = spec.kind == "hash_moe"
        draft = spec.role == "draft" and bool(draft_over)
        limit = _layer_limit(family, text_cfg, spec.index)
        key = (q.scheme, q.method, q.weight_block_size, q.weight_group_size, q.act_order, hash_layer, draft, limit is not None)
        if key not in cache:
            kwargs = dict(fields.kwargs)
            if draft:
                kwargs.update(draft_over)
            if limit is not None:
                kwargs["activation"] = Activation(family.limit_activation)
            kwargs["quant"] = q.scheme
            if q.method is not None:
                kwargs["quant_method"] = q.method
            if q.weight_block_size is not None:
                kwargs["weight_block_size"] = q.weight_block_size
            if q.weight_group_size is not None and q.scheme.weight is not None:
                kwargs["weight_group_size"] = q.weight_group_size
            if q.act_order is not None and q.scheme.weight is not None:
                kwargs["act_order"] = q.act_order
            if hash_layer:
                kwargs["has_hash_routing"] = True
                kwargs.pop("has_correction_bias", None)
            cache[key] = MappingProxyType(kwargs)
        prov = list(fields.provenance)
        if draft:
            prov += draft_prov
        if limit is not None:
            prov.append(Provenance("activation", Source.INFERRED, f"config.{path[2:]}swiglu_limits[{spec.index}] = {limit}: {family.source.split(';')[0].split(' (')[0]} passes {family.limit_activation}"))
        prov.append(Provenance("quant", Source.INFERRED, q.evidence))
        if q.method is not None:
            prov.append(Provenance("quant_method", Source.CHECKPOINT, f"{quant.source}: quant_method {quant.declared!r} ({quant.method}); MoE method family {q.method}"))
        if q.weight_block_size is not None:
            prov.append(Provenance("weight_block_size", Source.CHECKPOINT, f"{quant.source}: {list(q.weight_block_size)}"))
        if "weight_group_size" in cache[key]:
            prov.append(Provenance("weight_group_size", Source.CHECKPOINT, f"{quant.source}: group size {q.weight_group_size}"))
        if "act_order" in cache[key]:
            prov.append(Provenance("act_order", Source.CHECKPOINT, f"{quant.source}: activation ordering {q.act_order} (GPTQ desc_act / compressed-tensors weights.actorder)"))
        if hash_layer:
            prov = [p for p in prov if p.field != "has_correction_bias"]
            prov.append(Provenance("has_hash_routing", Source.INFERRED, f"{spec.why}; hash layers build no e_score_correction_bias (DeepseekV4MoE)"))
        shared = quant.shared_excluded_by(spec.shared) if spec.shared else None
        layers.append(CheckpointLayer(spec, q, shared, cache[key], _dedupe(prov)))
    if not any(layer.spec.is_moe for layer in layers):
        raise ConfigError([InputIssue(f"{path}num_hidden_layers", "the layout has no MoE layer (check first_k_dense_replace, moe_layer_freq, mlp_only_layers, decoder_sparse_step)", text_cfg.get("num_hidden_layers"), None, file)])
    return Checkpoint(name if isinstance(name, str) else None, file, text_mt, top_mt, arch, family, quant, tuple(layers), tuple(dict.fromkeys(notes)), rel)


MODEL_TYPE_BY_ARCHITECTURE: Mapping[str, str] = MappingProxyType({
    "LongcatFlashForCausalLM": "longcat_flash",
    "LongcatFlashNgramForCausalLM": "longcat_flash",
})
"""The model_type vLLM gives a config.json that has none, by ``architectures[0]`` (FACTS
``model_type_by_architecture``: vLLM 0.32.0-0.34.0 transformers_utils/config.py
``_ARCHITECTURE_TO_MODEL_TYPE``)."""


def _refuse_dense_mlp_activation(family: Family, cfg: Mapping[str, Any], specs: Any, path: str, file: str | None) -> None:
    """A ``hidden_act`` the family's dense MLP refuses (:attr:`Family.mlp_hidden_acts`), where the
    model builds one: a dense target layer, or a shared expert (``mlp_shared_key`` above 0).

    Raises:
        ConfigError: naming ``hidden_act``, with vLLM's 'Unsupported activation'.
    """
    act = cfg.get("hidden_act")
    if not family.mlp_hidden_acts or act is None or act in family.mlp_hidden_acts:
        return
    dense = [spec.name for spec in specs if spec.role == "target" and spec.kind == "dense"]
    shared = family.mlp_shared_key is not None and isinstance(cfg.get(family.mlp_shared_key), int) and cfg[family.mlp_shared_key] > 0
    if not dense and not shared:
        return  # every layer is MoE and none has a shared expert: the MLP class is never built
    built = f"dense layers {dense[0]}.. ({len(dense)})" if dense else f"a shared expert ({family.mlp_shared_key} = {cfg[family.mlp_shared_key]})"
    raise ConfigError([InputIssue(f"{path}hidden_act", f"{family.name} model class refuses it building its dense MLP for {built} ({family.source.split(';')[0]}: 'Unsupported activation')",
                                  act, list(family.mlp_hidden_acts), file)])


def _read_model_type(cfg: Mapping[str, Any], rel: ReaderRelease, file: str | None) -> tuple[str | None, list[str]]:
    """The top-level ``model_type`` vLLM reads config.json with, and what the answer says about it.

    vLLM 0.29.0-0.34.0 ``HFConfigParser.parse`` (transformers_utils/config.py) hands config.json to
    transformers' ``AutoConfig``, which has no config class to read a config.json without
    ``model_type`` by (transformers 5.10.4, the lowest these releases admit, and 5.20.2, the environment's): it raises
    "Unrecognized model in ... Should have a `model_type` key", unless ``auto_map`` names a remote
    config class and ``--trust-remote-code`` is given. From 0.32.0 vLLM first maps
    ``architectures[0]`` to a model_type (:data:`MODEL_TYPE_BY_ARCHITECTURE`). A draft's
    ``speculators_config`` makes it a ``speculators`` config, which is not read here.

    A config.json without ``model_type`` that no release maps is refused by every release too; it
    is still read from its fields (hand-written configs, ``explain`` of one layer), with a note
    that says vLLM refuses it.

    Raises:
        ConfigError: no ``model_type`` and an architecture a later release maps, in a release
            that does not (0.29.0-0.31.0), and no remote config class: the release refuses the
            config at read time where the answer could be mistaken for a working one.
    """
    mt = cfg.get("model_type")
    if isinstance(mt, str):
        return mt, []
    arch = _first_architecture(cfg)
    mapped = MODEL_TYPE_BY_ARCHITECTURE.get(arch) if arch else None
    if mapped is not None and rel.holds("model_type_by_architecture"):
        return mapped, [f"config.json has no model_type: {rel.words} reads it as model_type {mapped!r} by its architecture {arch} (transformers_utils/config.py _ARCHITECTURE_TO_MODEL_TYPE)"]
    auto_map = cfg.get("auto_map")
    if isinstance(auto_map, Mapping) and "AutoConfig" in auto_map:
        return None, [f"config.json has no model_type: {rel.words} reads it only with --trust-remote-code, through its remote config class ({auto_map['AutoConfig']}), which moe-oracle does not run; the fields are read as written"]
    if cfg.get("speculators_config") is not None:
        return None, []
    refusal = (f"{rel.words} refuses a config.json without model_type when it reads the config (vllm/transformers_utils/config.py HFConfigParser.parse: "
               f"transformers' AutoConfig raises 'Should have a `model_type` key' unless auto_map names a remote config class for --trust-remote-code)")
    if mapped is not None:
        raise ConfigError([InputIssue("$.model_type", f"{refusal}; vLLM 0.32.0 and later read {arch} as model_type {mapped!r}", None,
                                      ["a model_type string", "auto_map.AutoConfig with --trust-remote-code"], file)])
    return None, [f"{refusal}; moe-oracle reads the fields as written (a hand-written config), so set model_type as the checkpoint does"]


def _first_architecture(cfg: Mapping[str, Any]) -> str | None:
    """``architectures[0]`` where it is a string, else ``None``."""
    archs = cfg.get("architectures")
    return archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None


def _language_model_architecture(arch: str | None, text: Mapping[str, Any] | None, path: str, rel: ReaderRelease) -> tuple[str | None, list[str]]:
    """The architecture vLLM builds the MoE layers with, and what the answer says about it.

    For a wrapper of :data:`.architectures.SUBCONFIG_WRAPPERS` that the release registers, the
    language model is the class its sub-config's ``architectures`` names (``text`` is that
    sub-config, read from ``path``): vLLM 0.29.0-0.34.0 ``init_vllm_registered_model(hf_config=
    config.text_config)`` / ``VllmConfig.with_hf_config``. A sub-config without ``architectures``
    gets transformers' causal-LM class of its ``model_type``, which the family of that
    ``model_type`` stands for: ``None`` is returned and the family is read from ``model_type``.
    Any other architecture is returned as it is.
    """
    wrapper = SUBCONFIG_WRAPPERS.get(arch) if arch else None
    if wrapper is None or text is None or not wrapper.registered(rel.version):
        return arch, []
    inner = _first_architecture(text)
    where = path.rstrip(".")
    source = f"{rel.words} model_executor/models/{wrapper.module}.py: init_vllm_registered_model(hf_config={wrapper.sub_config})"
    if inner is None:
        return None, [f"{arch} builds its language model from {where} ({source}); {where} names no architectures, so vLLM takes transformers' causal-LM class of its model_type ({text.get('model_type')!r}) and the layers are read by that model_type"]
    return inner, [f"{arch} builds its language model from {where} ({source}): {inner}, whose family and notes apply"]


def _layer_limit(family: Family, cfg: Mapping[str, Any], index: int) -> Any:
    """The per-layer ``swiglu_limits`` entry that switches this layer's activation
    (:attr:`Family.limit_activation`), ``None`` where it does not."""
    if family.limit_activation is None:
        return None
    limits = cfg.get("swiglu_limits") or []
    value = limits[index] if isinstance(limits, list) and index < len(limits) else None
    return value if value not in (None, 0) else None


def _draft_overrides(family: Family, cfg: Mapping[str, Any], kwargs: Mapping[str, Any], path: str, file: str | None) -> tuple[dict[str, Any], list[Provenance]]:
    """The MoE fields draft layers take from their own keys (:attr:`Family.draft_fields`).

    Raises:
        ConfigError: a draft key that is not a positive integer, or a draft top-k above its
            expert count.
    """
    over: dict[str, Any] = {}
    prov: list[Provenance] = []
    if family.draft_router_fp32 is False and family.router_fp32:
        fp32 = cfg.get("moe_router_dtype") == "float32"
        over["router_logits_dtype"] = DType.FLOAT32 if fp32 else kwargs["in_dtype"]
        why = f"config.{path[2:]}moe_router_dtype = float32" if fp32 else f"no moe_router_dtype float32: the model dtype {kwargs['in_dtype'].value}"
        prov.append(Provenance("router_logits_dtype", Source.INFERRED, f"draft layers: {why} (the speculative config renames model_type {family.model_types[0]} to deepseek_mtp, so deepseek_v2.py _get_moe_router_dtype's float32 for {family.model_types[0]} does not apply)"))
    for name, keys in family.draft_fields.items():
        key = next((k for k in keys if cfg.get(k)), None)
        if key is None:
            continue
        value = cfg[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError([InputIssue(f"{path}{key}", "must be a positive integer", value, {"minimum": 1}, file)])
        over[name] = value
        prov.append(Provenance(name, Source.CHECKPOINT, f"config.{path[2:]}{key} (draft layers; {family.source.split(';')[0]})"))
    if over.get("top_k", kwargs.get("top_k", 0)) > over.get("num_experts", kwargs.get("num_experts", 0)):
        raise ConfigError([InputIssue(f"{path}{family.draft_fields.get('top_k', ('top_k',))[0]}", "draft experts per token exceed the draft experts", over.get("top_k", kwargs.get("top_k")), {"maximum": over.get("num_experts", kwargs.get("num_experts"))}, file)])
    return over, prov


def _nested_keys(family: Family, cfg: dict[str, Any], path: str, file: str | None) -> tuple[dict[str, Any], list[str]]:
    """``cfg`` with the generic keys a family's model class reads from nested objects
    (:attr:`Family.keys`) filled in, where config.json does not set them at the top.

    Raises:
        ConfigError: a nested object on the way is not an object.
    """
    if not family.keys:
        return cfg, []
    out = dict(cfg)
    read = []
    for key, dotted in family.keys.items():
        if out.get(key) is not None:
            continue
        node: Any = cfg
        parts = dotted.split(".")
        for i, part in enumerate(parts):
            if node is None:
                break
            if not isinstance(node, Mapping):
                raise ConfigError([InputIssue(f"{path}{'.'.join(parts[:i])}", "must be an object", node, None, file)])
            node = node.get(part)
        if node is not None:
            out[key] = node
            read.append(f"{key} from {dotted}")
    notes = [f"{family.name}: read " + ", ".join(read) + f" ({family.source.split(';')[0].split(' (')[0]})"] if read else []
    return out, notes


def _file_name(file: str | None) -> str | None:
    """``DIR`` for ``DIR/config.json``, the stem otherwise (the shipped examples' names)."""
    if not file:
        return None
    path = PurePath(file)
    return path.parent.name or None if path.name == "config.json" else path.stem


def _dedupe(prov: list[Provenance]) -> tuple[Provenance, ...]:
    by_field: dict[str, Provenance] = {}
    for p in prov:
        by_field[p.field] = p
    return tuple(by_field[k] for k in sorted(by_field))
