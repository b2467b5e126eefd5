"""What vLLM 0.33.0 hard-codes per model family: layer layout, module names, routing inputs.

A :class:`Family` records, for one group of Hugging Face ``model_type`` values, how the
engine's model class decides which decoder layers carry routed experts, what the experts
module is called in the checkpoint (exclusion lists are written in those names), which
routing and activation inputs the class passes to ``FusedMoE`` regardless of config.json,
how its MTP (next-n) draft layers are laid out, and the defaults the transformers config
class supplies when config.json omits a field. A ``model_type`` not listed falls back to
:data:`GENERIC`, and the plan says which generic fields its answer rests on.

Sources: vLLM 0.33.0 ``vllm/model_executor/models/{deepseek_v2,qwen3_moe,qwen3_5,qwen3_next,
llama4,mixtral,gpt_oss,minimax_m2,nemotron_h,nemotron_h_mtp,gemma4}.py`` (and, checked against
0.33.0 and 0.34.0 by the model-construction tier, ``{qwen3_vl_moe,dbrx,jamba,granitemoe,
granitemoeshared,granitemoehybrid,ernie45_moe,ernie_mtp,glm4_moe_lite,glm4_moe_lite_mtp}.py``, and on
0.29.0-0.34.0 ``{step3p5,laguna,mellum,zaya}.py``, ``vllm/models/{qwen4_exp,step5}``) and
``vllm/models/{deepseek_v4,kimi_k3,minimax_m3}/nvidia/{model,mtp}.py``, ``vllm/config/
speculative.py hf_config_override``; defaults from transformers 5.20.2 config classes and
``vllm/transformers_utils/configs/minimax_m3.py``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Mapping

__all__ = ["FAMILIES", "GENERIC", "Family", "family_for", "layer_prefix"]


@dataclass(frozen=True)
class Family:
    """Engine knowledge about one model family.

    Attributes:
        name: short name (``deepseek_v3``).
        model_types: text-model ``model_type`` values it covers.
        layout: how MoE layers are chosen: ``first_k_dense`` (``first_k_dense_replace`` and
            ``moe_layer_freq``, int or per-layer list), ``sparse_step`` (``mlp_only_layers``
            and ``decoder_sparse_step``), ``first_k`` (``first_k_dense_replace`` only), ``interleave`` (``interleave_moe_layer_step``),
            ``hybrid_pattern`` (``hybrid_override_pattern`` letter ``E``), ``hash_then_moe``
            (DeepSeek-V4 ``mlp_layer_types`` / ``num_hash_layers``), ``start_end_interval``
            (ERNIE-4.5: ``moe_layer_start_index`` <= index <= ``moe_layer_end_index`` and
            ``(index + 1) % moe_layer_interval == 0``), ``period_offset`` (Jamba: ``index %
            expert_layer_period == expert_layer_offset``), ``moe_layers_enum`` (Step3: the
            comma-separated indices), ``mlp_layer_types`` (``sparse`` entries; without the list,
            ``first_k_dense_replace`` as the config class derives it), ``moe_layer_freq_list``
            (MiMo-V2: non-zero entries of a per-layer ``moe_layer_freq`` list), ``step3p5``
            (Step-3.5: ``mlp_layer_types`` ``sparse`` entries, else ``moe_layers_enum``, else layers
            3 and up), ``step5`` (Step5: ``moe_layers_enum`` or ``moe_layer_list``, else layers 1
            and up), ``all``.
            ``first_k_dense_replace`` as the config class derives it; AXK1: with ``moe_layer_freq`` too), ``moe_layer_freq_list``
            (MiMo-V2: non-zero entries of a per-layer ``moe_layer_freq`` list), ``all``.
        experts: experts module under a decoder layer (``mlp.experts``).
        shared: shared-expert module under a decoder layer, ``None`` if the family has none.
        proj: projection names of one expert (gate, up, down; non-gated: up, down) as the model
            class hands them to ``RoutedExperts`` (``ckpt_names`` / ``ckpt_*_proj_name``; a class
            that passes none gets ``gate_proj``/``up_proj``/``down_proj``); compressed-tensors
            matches ``<experts>.0.<proj>`` with them from vLLM 0.32.0.
        proj_on: ``proj`` of the platforms whose model class hands other names (by platform value).
        mtp: MTP layout: ``deepseek`` (layers ``N..N+k-1``), ``deepseek_v4`` (``mtp.{k}``),
            ``dspark`` (DeepSeek-V4.1 DSpark draft: ``n_mtp_layers`` or ``num_nextn_predict_layers``
            or 3 layers ``mtp.{k}``),
            ``qwen3_5`` (``mtp.layers.{k}``), ``nemotron_h`` (``mtp_hybrid_override_pattern``),
            ``minimax_m3`` (``num_mtp_modules``), ``dropped`` (vLLM drops the MTP weights),
            ``None`` (no MTP).
        scoring: router scoring the class uses whatever config.json says, else ``None``.
        renormalize: renormalization the class hard-codes, else ``None`` (read from config).
        bias: the class always builds ``e_score_correction_bias`` (``True``), never (``False``)
            or follows config.json (``None``).
        activation: activation the class's ``FusedMoE`` runs whatever config.json says: the one it
            passes, or ``silu`` where it passes none (``FusedMoE``'s default, vLLM 0.29.0-0.34.0
            P/layer.py); ``None``: the class passes config.json's (``hidden_act`` ...).
        limit_activation: activation the class passes instead in the layers whose per-layer
            ``swiglu_limits`` entry is set (not ``None`` or 0), as Step-3.5's ``swiglustep``;
            ``None``: ``swiglu_limits`` does not change the activation.
        routing: routing method the class fixes (custom routers), else ``None``.
        router_fp32: the class computes router logits in float32 (``GateLinear(out_dtype=float32)``).
        draft_router_fp32: the same for the draft (MTP) layers where it differs from the
            target's (``None``: as the target). ``False``: the float32 gate rests on a
            ``model_type`` test that the draft's config no longer passes, so the draft's router
            logits are float32 only where ``moe_router_dtype`` says so, else the model dtype.
        shared_always: every MoE layer has a shared expert whatever config.json says (Llama-4).
        hidden_acts: the ``hidden_act`` values the class accepts in every model with a MoE layer
            (others raise at build: the MoE block checks it), empty: no such check.
        mlp_hidden_acts: the ``hidden_act`` values the class's dense MLP accepts; it raises for
            another when it builds one: a dense layer, or a shared expert where config.json's
            ``mlp_shared_key`` (or the family default) is above 0. Empty: no such check.
        mlp_shared_key: see ``mlp_hidden_acts``; ``None``: no shared expert built by that MLP.
        grouped: the class passes ``use_grouped_topk=True`` whatever config.json says (GLM-4.5;
            ``DeepseekV2MoE``, which DeepSeek-V2/V3/V3.2, Kimi-K2 and GLM-5 build: ``topk_method``
            and ``use_grouped_topk`` are not read for the grouping, so ``topk_method: greedy``
            keeps ``n_group`` / ``topk_group``; vLLM's router factory then decides whether the
            grouping is degenerate).
        fixed_groups: the ``(num_expert_group, topk_group)`` the class passes whatever config.json
            says (LFM2-MoE, HY-V3, HY-V4: ``1, 1``); ``None``: config.json's ``n_group`` /
            ``topk_group`` (or the defaults).
        passes_routed_scale: the class hands config.json's ``routed_scaling_factor`` to its router
            (``False``: the router's default 1.0), which 0.29.0-0.30.0 ``get_routing_method_type``
            reads.
        passes_swiglu: the class hands config.json's ``swiglu_limit`` / ``swiglu_alpha`` /
            ``swiglu_beta`` to ``FusedMoE`` (``False``: it passes none, so vLLM's
            ``FusedMoEConfig`` holds ``None`` whatever config.json says, and selection reads
            ``None``).
        scale_to_output_on: platforms whose model class applies ``routed_scaling_factor`` to the
            MoE output (``apply_routed_scale_to_output=True``), so that its router gets 1.0 (which
            0.29.0-0.30.0 ``get_routing_method_type`` reads).
        draft_fields: MoE fields the draft (MTP / DSpark) layers read from other config keys
            (``num_experts`` -> ``dspark_n_routed_experts``); absent or 0: the target's value.
        defaults: field defaults of the transformers (or vLLM) config class.
        config_classes: for a ``model_type`` whose config class differs from the family's, that
            class (named as ``source``'s last part names one) and its defaults, which replace
            ``defaults`` (:meth:`for_model_type`). A default of ``None`` is a class attribute
            whose value is ``None``: the model class's ``getattr(config, key, fallback)`` finds it,
            so the fallback never applies.
        keys: MoE fields the model class reads from a nested config object rather than the
            generic keys (DBRX ``ffn_config.moe_num_experts``): generic key -> dotted path.
        expert_width_is_intermediate: the class sizes its experts by ``intermediate_size``
            (no ``moe_intermediate_size`` key exists for the family), so reading it is exact.
        renormalize_scorings: the class hands the router config.json's renormalization only with
            these scorings and ``renormalize=False`` with any other (AFMoE: ``route_norm`` only under
            sigmoid); empty: with every scoring.
        source: where these facts come from.
        notes: facts the plan repeats for every layer of the family.
    """

    name: str
    model_types: tuple[str, ...]
    layout: str
    experts: str = "mlp.experts"
    shared: str | None = None
    proj: tuple[str, ...] = ("gate_proj", "up_proj", "down_proj")
    proj_on: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    mtp: str | None = None
    scoring: str | None = None
    renormalize: bool | None = None
    bias: bool | None = None
    activation: str | None = None
    limit_activation: str | None = None
    routing: str | None = None
    router_fp32: bool = False
    draft_router_fp32: bool | None = None
    shared_always: bool = False
    passes_routed_scale: bool = True
    passes_swiglu: bool = True
    scale_to_output_on: tuple[str, ...] = ()
    grouped: bool = False
    fixed_groups: tuple[int, int] | None = None
    hidden_acts: tuple[str, ...] = ()
    mlp_hidden_acts: tuple[str, ...] = ()
    mlp_shared_key: str | None = None
    draft_fields: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    defaults: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    config_classes: Mapping[str, tuple[str, Mapping[str, Any]]] = field(default_factory=lambda: MappingProxyType({}))
    keys: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    expert_width_is_intermediate: bool = False
    renormalize_scorings: tuple[str, ...] = ()
    source: str = ""
    notes: tuple[str, ...] = ()

    def for_model_type(self, model_type: str | None) -> Family:
        """This family as a config.json of ``model_type`` reads it: where the type has its own
        config class (:attr:`config_classes`), that class's defaults and name; else ``self``."""
        if model_type not in self.config_classes:
            return self
        config_class, defaults = self.config_classes[model_type]
        return replace(self, defaults=defaults, source=f"{self.source}; {config_class}", config_classes=MappingProxyType({}))


def _d(**kw: Any) -> Mapping[str, Any]:
    return MappingProxyType(kw)


_GATE_UP_DOWN = ("gate_proj", "up_proj", "down_proj")
_V4_PROJ_ON = _d(rocm=_GATE_UP_DOWN, xpu=_GATE_UP_DOWN, cpu=_GATE_UP_DOWN)
"""DeepSeek-V4 (and V4.1, whose classes reuse its DeepseekV4MoE): only the CUDA class hands
RoutedExperts w1/w3/w2 (vLLM 0.32.0-0.34.0 vllm/models/deepseek_v4/nvidia/model.py
``ckpt_names=("w1", "w2", "w3")``); the amd, xpu and cpu classes pass none (FusedMoE's defaults)."""

# activation="silu" where the model class builds FusedMoE / SharedFusedMoE / FusedMoEFactory without an
# activation= argument (vLLM 0.29.0-0.34.0: deepseek_v2.py, qwen3_moe.py, qwen2_moe.py, qwen3_next.py,
# qwen3_5.py, mixtral.py, minimax_m2.py, llama4.py, phimoe.py, glm4_moe.py, glm4_moe_lite.py, mimo_v2.py,
# afmoe.py, hy_v3.py, AXK1.py, qwen3_vl_moe.py, qwen3_omni_moe_thinker.py, bailing_moe_linear.py, mellum.py,
# vllm/models/{deepseek_v32,deepseek_v41,hy_v4,beam,glm5next,qwen4_exp}; the MegaMoE activation= some
# pass is for the native mega-MoE module only): FusedMoE's default, P/layer.py activation="silu".
# config.json's hidden_act is then read only where the class refuses it (hidden_acts, mlp_hidden_acts).
# tests/differential/test_release_sources.py holds the files to it.
_DSV3 = _d(n_group=8, topk_group=4, norm_topk_prob=True, routed_scaling_factor=2.5, first_k_dense_replace=3, moe_layer_freq=1, scoring_func="softmax")
# deepseek_v2 reads transformers' DeepseekV2Config (vLLM 0.29.0-0.34.0 registers no config class of its
# own for it; deepseek_v32 and kimi_k2 are DeepseekV3Config in vLLM's _CONFIG_REGISTRY). Its n_group and
# topk_group default to None, which DeepseekV2MoE's getattr(config, "n_group", 1) finds; it has no
# moe_layer_freq or scoring_func attribute, so the model class's getattr fallbacks (1, "softmax") apply.
_DSV2 = _d(n_group=None, topk_group=None, norm_topk_prob=False, routed_scaling_factor=1.0, first_k_dense_replace=0, moe_layer_freq=1, scoring_func="softmax", topk_method="greedy")

FAMILIES: tuple[Family, ...] = (
    Family("deepseek_v3", ("deepseek_v3", "deepseek_v32", "kimi_k2", "deepseek_v2"), "first_k_dense", activation="silu", hidden_acts=("silu",), shared="mlp.shared_experts", mtp="deepseek", grouped=True,
           defaults=_DSV3, config_classes=_d(deepseek_v2=("transformers 5.20.2 DeepseekV2Config", _DSV2)), source="vLLM 0.33.0-0.34.0 deepseek_v2.py DeepseekV2DecoderLayer / DeepseekV2MoE (0.29.0-0.34.0: use_grouped_topk=True, num_expert_group=getattr(config, 'n_group', 1), "
                                  "topk_group=getattr(config, 'topk_group', 1) whatever topk_method or use_grouped_topk say); transformers 5.20.2 DeepseekV3Config"),
    Family("glm_moe_dsa", ("glm_moe_dsa",), "first_k_dense", activation="silu", hidden_acts=("silu",), shared="mlp.shared_experts", mtp="deepseek", router_fp32=True, draft_router_fp32=False, grouped=True,
           defaults=_d(n_group=1, topk_group=1, norm_topk_prob=True, routed_scaling_factor=2.5, first_k_dense_replace=3, moe_layer_freq=1, scoring_func="sigmoid"),
           source="vLLM 0.33.0-0.34.0 vllm/models/deepseek_v32 (GlmMoeDsaForCausalLM = DeepseekV32ForCausalLM); deepseek_v2.py _get_moe_router_dtype (float32 for model_type glm_moe_dsa, which "
                  "SpeculativeConfig.hf_config_override renames to deepseek_mtp for the MTP draft, 0.29.0-0.34.0 vllm/config/speculative.py); transformers 5.20.2 GlmMoeDsaConfig"),
    Family("deepseek_v41", ("deepseek_v41", "deepseek_v41_text"), "all", activation="silu", experts="ffn.experts", shared="ffn.shared_experts", proj=("w1", "w3", "w2"), proj_on=_V4_PROJ_ON, mtp="dspark", router_fp32=True,
           defaults=_d(scoring_func="sqrtsoftplus", norm_topk_prob=True, routed_scaling_factor=1.5, swiglu_limit=10.0),
           draft_fields=MappingProxyType({"num_experts": ("dspark_n_routed_experts",), "top_k": ("dspark_num_experts_per_tok",)}),
           source="vLLM 0.33.0-0.34.0 vllm/models/deepseek_v41/nvidia/model.py DeepseekV4MoE (num_hash_layers=0 on every layer; layers >= num_hidden_layers use dspark_n_routed_experts / dspark_num_experts_per_tok), nvidia/dspark.py (n_mtp_layers or num_nextn_predict_layers or 3 draft layers, loaded from mtp.<k>); vllm/transformers_utils/configs/deepseek_v41.py"),
    Family("deepseek_v4", ("deepseek_v4",), "hash_then_moe", experts="ffn.experts", shared="ffn.shared_experts", proj=("w1", "w3", "w2"), proj_on=_V4_PROJ_ON, mtp="deepseek_v4", router_fp32=True,
           scoring=None, defaults=_d(scoring_func="sqrtsoftplus", norm_topk_prob=True, routed_scaling_factor=1.5, swiglu_limit=10.0, num_hash_layers=3),
           source="vLLM 0.33.0-0.34.0 vllm/models/deepseek_v4/nvidia/{model,mtp}.py DeepseekV4MoE; transformers 5.20.2 DeepseekV4Config"),
    Family("kimi_k3", ("kimi_linear", "kimi_k3", "kimi_k31"), "first_k_dense", shared="mlp.shared_experts", mtp="deepseek", bias=True,
           defaults=_d(num_expert_group=1, topk_group=1, moe_renormalize=True, routed_scaling_factor=2.446, moe_layer_freq=1),
           source="vLLM 0.33.0-0.34.0 vllm/models/kimi_k3/nvidia/model.py KimiK3MoE (0.34.0 registry.py: KimiK31ForConditionalGeneration is the same KimiK3ForConditionalGeneration class, config.py _CONFIG_REGISTRY kimi_k31 -> KimiK3Config); transformers 5.20.2 KimiLinearConfig"),
    Family("qwen3_moe", ("qwen3_moe",), "sparse_step", activation="silu", mlp_hidden_acts=("silu",), mlp_shared_key="shared_expert_intermediate_size", defaults=_d(norm_topk_prob=False, decoder_sparse_step=1),
           source="vLLM 0.33.0-0.34.0 qwen3_moe.py Qwen3MoeDecoderLayer; transformers 5.20.2 Qwen3MoeConfig"),
    Family("qwen3_5_moe", ("qwen3_5_moe_text", "qwen3_5_moe", "qwen3_next", "qwen4_exp_text", "qwen4_exp"), "all", activation="silu", shared="mlp.shared_expert", mtp="qwen3_5",
           defaults=_d(norm_topk_prob=True), source="vLLM 0.33.0-0.34.0 qwen3_5.py (qwen3_5_moe_text: every layer Qwen3NextSparseMoeBlock), qwen3_next.py (renormalize defaults to True); "
                  "0.29.0-0.34.0 vllm/models/qwen4_exp/{nvidia,amd}/{model,mtp}.py (Qwen4ExpDecoderLayer: every layer Qwen4ExpSparseMoeBlock, a Qwen3NextSparseMoeBlock; "
                  "mtp_num_hidden_layers draft layers from checkpoint mtp.layers.<k>); transformers 5.20.2 Qwen4ExpTextConfig (norm_topk_prob True); "
                  "0.29.0-0.34.0 interns2_preview.py (InternS2PreviewForConditionalGeneration subclasses Qwen3_5MoeForConditionalGeneration, same weight names)"),
    Family("llama4", ("llama4_text", "llama4"), "interleave", activation="silu", experts="feed_forward.experts", shared="feed_forward.shared_expert", routing="llama4", shared_always=True,
           defaults=_d(interleave_moe_layer_step=1), source="vLLM 0.33.0-0.34.0 llama4.py Llama4DecoderLayer (MoE when (i + 1) % interleave_moe_layer_step == 0), Llama4MoE.custom_routing_function"),
    Family("mixtral", ("mixtral",), "all", activation="silu", experts="block_sparse_moe.experts", proj=("w1", "w3", "w2"), scoring="softmax", renormalize=True,
           source="vLLM 0.33.0-0.34.0 mixtral.py MixtralMoE (renormalize=True)"),
    Family("gpt_oss", ("gpt_oss",), "all", renormalize=True, scoring="softmax", activation="swigluoai", passes_swiglu=False,
           source="vLLM 0.29.0-0.34.0 gpt_oss.py MLPBlock (renormalize=True, activation swigluoai, no swiglu_* arguments: GptOssMxfp4MoEMethod puts alpha 1.702, beta 1.0, "
                  "limit 7.0 in its FusedMoEQuantConfig, and SwiGLU-OAI kernels given None use the same constants)"),
    Family("minimax_m2", ("minimax_m2",), "all", activation="silu", experts="block_sparse_moe.experts", proj=("w1", "w3", "w2"), mtp="dropped", renormalize=True, router_fp32=True, passes_routed_scale=False,
           source="vLLM 0.33.0-0.34.0 minimax_m2.py MiniMaxM2MoE (renormalize=True, no routed_scaling_factor passed; MTP layers dropped at load)"),
    Family("minimax_m3", ("minimax_m3", "minimax_m3_text", "minimax_m3_vl"), "first_k_dense", experts="block_sparse_moe.experts", shared="block_sparse_moe.shared_experts",
           mtp="minimax_m3", renormalize=True, router_fp32=True, activation="swigluoai_uninterleave", scale_to_output_on=("rocm",),
           defaults=_d(scoring_func="sigmoid", use_routing_bias=True, routed_scaling_factor=2.0, swiglu_alpha=1.702, swiglu_beta=1.0, swiglu_limit=7.0, num_mtp_modules=1, moe_layer_freq=[0] * 3 + [1] * 57),
           source="vLLM 0.33.0 vllm/models/minimax_m3/nvidia/{model,mtp}.py MiniMaxM3MoE (renormalize=True, swigluoai_uninterleave, fp32 router logits, experts sized by intermediate_size; no ckpt_names: RoutedExperts keeps gate_proj/up_proj/down_proj, though the checkpoint's experts are w1/w3/w2); "
                  "0.29.0-0.33.0 amd/model.py MiniMaxM3MoE (apply_routed_scale_to_output=not use_aiter_moe_fse: the router gets 1.0 unless AITER fused shared experts run on gfx950); vllm/transformers_utils/configs/minimax_m3.py defaults",
           notes=("MiniMax-M3 experts use intermediate_size; dense layers use dense_intermediate_size",)),
    Family("nemotron_h", ("nemotron_h",), "hybrid_pattern", experts="mixer.experts", shared="mixer.shared_experts", proj=("up_proj", "down_proj"), mtp="nemotron_h",
           scoring="sigmoid", bias=True, router_fp32=True, defaults=_d(norm_topk_prob=True, n_group=1, topk_group=1, routed_scaling_factor=1.0),
           source="vLLM 0.33.0-0.34.0 nemotron_h.py NemotronHMoE (sigmoid, e_score_correction_bias, non-gated experts, latent MoE), nemotron_h_mtp.py; transformers 5.20.2 NemotronHConfig"),
    Family("glm4_moe", ("glm4_moe",), "first_k", activation="silu", shared="mlp.shared_experts", mtp="deepseek", scoring="sigmoid", bias=True, router_fp32=True, grouped=True, hidden_acts=("silu",),
           defaults=_d(n_group=1, topk_group=1, norm_topk_prob=True, routed_scaling_factor=1.0, first_k_dense_replace=1, n_shared_experts=1, hidden_act="silu"),
           source="vLLM 0.33.0-0.34.0 glm4_moe.py Glm4MoE (scoring_func sigmoid, e_score_correction_bias always, use_grouped_topk=True with n_group/topk_group, fp32 router logits; MoE when layer_idx >= first_k_dense_replace), glm4_moe_mtp.py (MTP layers model.layers.<N+k>); transformers 5.20.2 Glm4MoeConfig"),
    Family("phimoe", ("phimoe",), "all", activation="silu", experts="block_sparse_moe.experts", proj=("w1", "w3", "w2"), renormalize=False, routing="custom",
           source="vLLM 0.33.0-0.34.0 phimoe.py PhiMoE (custom_routing_function=phimoe_routing_function, renormalize=False: CustomRoutingRouter answers RoutingMethodType.Custom); transformers 5.20.2 PhiMoEConfig",
           notes=("PhiMoE routes with its own sparsemixer function (phimoe_routing_function): only kernels that accept a custom router apply",)),
    Family("step3p5", ("step3p5",), "step3p5", experts="moe.experts", shared="share_expert", bias=True, router_fp32=True, activation="silu",
           limit_activation="swiglustep", shared_always=True, passes_swiglu=False,
           keys=_d(num_experts="moe_num_experts", num_experts_per_tok="moe_top_k", norm_topk_prob="norm_expert_weight", routed_scaling_factor="moe_router_scaling_factor"),
           defaults=_d(routed_scaling_factor=1.0, scoring_func="sigmoid"),
           source="vLLM 0.29.0-0.34.0 step3p5.py FusedMoEBlock (moe_num_experts, moe_top_k, renormalize=norm_expert_weight, scoring_func moe_router_activation "
                  "(default sigmoid), router_bias as e_score_correction_bias (use_moe_router_bias asserted), fp32 gate and router_logits_dtype float32, activation silu, "
                  "swiglustep where swiglu_limits[i] is set (7.0 only), no swiglu_* passed; share_expert always), Step3p5DecoderLayer (_is_moe_layer: mlp_layer_types, "
                  "else moe_layers_enum); transformers 5.20.2 Step3p7TextConfig (model_type step3p5: mlp_layer_types from moe_layers_enum, else layers 3..; no moe_router_activation); "
                  "before 0.33.0 vLLM's own Step3p5Config (fact step3p5_transformers_config: moe_layers_enum else layers 1.., moe_router_activation default softmax)"),
    Family("step5", ("step5",), "step5", experts="moe.experts", shared="share_expert", bias=True, router_fp32=True, activation="silu",
           limit_activation="swiglustep", shared_always=True, passes_swiglu=False,
           keys=_d(num_experts="moe_num_experts", num_experts_per_tok="moe_top_k", norm_topk_prob="norm_expert_weight", routed_scaling_factor="moe_router_scaling_factor"),
           defaults=_d(num_experts=16, num_experts_per_tok=4, moe_intermediate_size=10240, norm_topk_prob=True, scoring_func="sigmoid", routed_scaling_factor=1.0),
           source="vLLM 0.33.0-0.34.0 vllm/models/step5/nvidia/model.py Step5MoE (the FusedMoEFactory path; Step5MegaMoE only with --moe-backend deep_gemm_mega_moe: "
                  "moe_num_experts, moe_top_k, renormalize=norm_expert_weight, scoring_func moe_router_activation, router_bias as e_score_correction_bias "
                  "(use_moe_router_bias required), fp32 gate and router logits, silu, swiglustep where swiglu_limits[i] is set (7.0 only), share_expert always), "
                  "Step5DecoderLayer (_get_step5_moe_layer_indices); Step5ForConditionalGeneration (step5_vl) builds Step5ForCausalLM from text_config under the "
                  "model_executor/models/step3p7.py frontend, whose mapper puts the checkpoint's model.language_model.* there; vllm/transformers_utils/configs/step5.py Step5Config defaults"),
    Family("laguna", ("laguna",), "mlp_layer_types", shared="mlp.shared_expert", scoring="sigmoid", bias=True, activation="silu", scale_to_output_on=("cuda", "rocm", "xpu", "cpu", "tpu"),
           keys=_d(routed_scaling_factor="moe_routed_scaling_factor"), defaults=_d(first_k_dense_replace=1, norm_topk_prob=True, routed_scaling_factor=1.0),
           source="vLLM 0.29.0-0.34.0 laguna.py LagunaMoE (scoring_func sigmoid, use_grouped_topk=False, e_score_correction_bias always, apply_routed_scale_to_output=True "
                  "on every platform, shared_expert when shared_expert_intermediate_size > 0, no activation passed: silu; renormalize=norm_topk_prob in 0.29.0-0.30.0, True "
                  "from 0.31.0: fact laguna_renormalize_always), LagunaDecoderLayer (MoE where mlp_layer_types[i] == 'sparse'); transformers 5.20.2 LagunaConfig "
                  "(mlp_layer_types default: layer 0 dense, the rest sparse)"),
    Family("zaya", ("zaya",), "all", renormalize=False, routing="custom", router_fp32=True, activation="silu",
           source="vLLM 0.34.0 zaya.py ZayaSparseMoeBlock (every ZayaDecoderLayer: ZayaRouter computes the top-k itself and FusedMoEFactory gets "
                  "custom_routing_function=_precomputed_routing, renormalize=False, router_logits_dtype float32, no activation passed: silu); transformers 5.20.2 ZayaConfig",
           notes=("ZAYA routes with its own MLP router (ZayaRouter) and hands FusedMoE the precomputed top-k: only kernels that accept a custom router apply",)),
    Family("mellum", ("mellum",), "mlp_layer_types", activation="silu", scoring="softmax", defaults=_d(norm_topk_prob=True, first_k_dense_replace=0),
           source="vLLM 0.29.0-0.31.0 mellum.py MellumDecoderLayer (qwen3_moe.py Qwen3MoeSparseMoeBlock where mlp_layer_types[i] == 'sparse', else a dense MLP: softmax, "
                  "renormalize=norm_topk_prob); from 0.32.0 registry.py sends MellumForCausalLM to the Transformers backend; transformers 5.20.2 MellumConfig "
                  "(mlp_layer_types defaults to every layer sparse)"),
    Family("qwen2_moe", ("qwen2_moe",), "sparse_step", activation="silu", mlp_hidden_acts=("silu",), mlp_shared_key="shared_expert_intermediate_size", shared="mlp.shared_expert", scoring="softmax",
           defaults=_d(norm_topk_prob=False, decoder_sparse_step=1, shared_expert_intermediate_size=5632, hidden_act="silu"),
           source="vLLM 0.33.0-0.34.0 qwen2_moe.py Qwen2MoeSparseMoeBlock (softmax, renormalize=norm_topk_prob, gated shared_expert when shared_expert_intermediate_size > 0), Qwen2MoeDecoderLayer (mlp_only_layers, decoder_sparse_step); transformers 5.20.2 Qwen2MoeConfig"),
    Family("olmoe", ("olmoe",), "all", scoring="softmax", renormalize=False, activation="silu",
           source="vLLM 0.33.0-0.34.0 olmoe.py OlmoeMoE (renormalize=False whatever norm_topk_prob says, no activation passed: FusedMoE's silu, experts sized by intermediate_size; every layer MoE); transformers 5.20.2 OlmoeConfig"),
    Family("gemma4", ("gemma4_text", "gemma4"), "all", experts="experts", renormalize=True, activation="gelu_tanh", routing="custom",
           source="vLLM 0.33.0-0.34.0 gemma4.py Gemma4DecoderLayer (MoE block beside the dense MLP when num_experts is set; Gemma4Router custom routing, activation gelu_tanh)",
           notes=("each Gemma-4 MoE layer also runs a dense MLP in parallel",)),
    Family("qwen3_vl_moe", ("qwen3_vl_moe_text", "qwen3_vl_moe"), "sparse_step", activation="silu", mlp_hidden_acts=("silu",), mlp_shared_key="shared_expert_intermediate_size", defaults=_d(decoder_sparse_step=1),
           source="vLLM 0.33.0-0.34.0 qwen3_vl_moe.py Qwen3MoeLLMModel (the text model is qwen3_moe.py Qwen3MoeModel: Qwen3MoeDecoderLayer layout, Qwen3MoeSparseMoeBlock "
                  "renormalize=config.norm_topk_prob, softmax); transformers 5.20.2 Qwen3VLMoeTextConfig (no norm_topk_prob default: the published configs set it)"),
    Family("qwen3_omni_moe", ("qwen3_omni_moe_text",), "sparse_step", activation="silu", mlp_hidden_acts=("silu",), mlp_shared_key="shared_expert_intermediate_size", defaults=_d(decoder_sparse_step=1, norm_topk_prob=True),
           source="vLLM 0.33.0-0.34.0 qwen3_omni_moe_thinker.py Qwen3OmniMoeThinkerForConditionalGeneration (registered for Qwen3OmniMoeForConditionalGeneration: the thinker only, "
                  "its text model qwen3_moe.py Qwen3MoeModel: Qwen3MoeDecoderLayer layout, Qwen3MoeSparseMoeBlock renormalize=config.norm_topk_prob, softmax; "
                  "checkpoint weights thinker.model.layers.<i>); transformers 5.20.2 Qwen3OmniMoeTextConfig"),
    Family("dbrx", ("dbrx",), "all", experts="ffn.experts", scoring="softmax", renormalize=True, activation="silu", expert_width_is_intermediate=True,
           keys=_d(num_experts="ffn_config.moe_num_experts", num_experts_per_tok="ffn_config.moe_top_k", moe_intermediate_size="ffn_config.ffn_hidden_size",
                   hidden_size="d_model", num_hidden_layers="n_layers"),
           source="vLLM 0.33.0-0.34.0 dbrx.py DbrxMoE (FusedMoEFactory from ffn_config.moe_num_experts / moe_top_k / ffn_hidden_size and d_model, renormalize=True, "
                  "no activation passed: silu; every block DbrxMoE at transformer.blocks.<i>.ffn)"),
    Family("jamba", ("jamba",), "period_offset", experts="feed_forward.experts", scoring="softmax", renormalize=False, activation="silu", expert_width_is_intermediate=True,
           defaults=_d(expert_layer_period=2, expert_layer_offset=1),
           source="vLLM 0.33.0-0.34.0 jamba.py JambaMoE (renormalize=False, no activation passed: silu, experts sized by intermediate_size) in the layers where "
                  "config.layers_num_experts > 1; transformers 5.20.2 JambaConfig (layers_num_experts: index % expert_layer_period == expert_layer_offset)"),
    Family("granitemoe", ("granitemoe", "granitemoeshared", "granitemoehybrid", "granitemoe_swa"), "all", experts="block_sparse_moe.experts", shared="shared_mlp", proj=("w1", "w3", "w2"),
           scoring="softmax", renormalize=True, activation="silu", expert_width_is_intermediate=True,
           source="vLLM 0.33.0-0.34.0 granitemoe.py GraniteMoeMoE (renormalize=True, no activation passed: silu, experts sized by intermediate_size); granitemoeshared.py (also GraniteMoeSWAForCausalLM, "
                  "registry.py 0.29.0-0.34.0) / granitemoehybrid.py (GraniteMoeMoE in every layer, Mamba and attention alike, plus shared_mlp when shared_intermediate_size > 0)"),
    Family("ernie45_moe", ("ernie4_5_moe",), "start_end_interval", shared="mlp.shared_experts", mtp="deepseek", scoring="softmax", renormalize=True, bias=True, router_fp32=True,
           activation="silu", defaults=_d(moe_layer_start_index=1, moe_layer_interval=1),
           source="vLLM 0.33.0-0.34.0 ernie45_moe.py Ernie4_5_MoeMoE (renormalize=True, e_score_correction_bias always built, GateLinear out_dtype float32 and "
                  "router_logits_dtype float32, no activation passed), Ernie4_5_MoeDecoderLayer (MoE when start <= index <= end and (index + 1) % interval == 0), "
                  "ernie_mtp.py (MTP layers model.layers.<N+k>, built by the same decoder layer); transformers 5.20.2 Ernie4_5_MoeConfig (moe_layer_end_index -1 = the last layer)"),
    Family("glm4_moe_lite", ("glm4_moe_lite",), "first_k_dense", activation="silu", shared="mlp.shared_experts", mtp="deepseek", scoring="sigmoid", bias=True, router_fp32=True, grouped=True, hidden_acts=("silu",),
           defaults=_d(n_group=1, topk_group=1, norm_topk_prob=True, routed_scaling_factor=1.8, first_k_dense_replace=1, moe_layer_freq=1, n_shared_experts=1, hidden_act="silu"),
           source="vLLM 0.33.0-0.34.0 glm4_moe_lite.py Glm4MoeLite (= glm4_moe.py Glm4MoE: sigmoid, e_score_correction_bias, use_grouped_topk, fp32 router logits), "
                  "Glm4MoeLiteDecoderLayer (MoE when index >= first_k_dense_replace and index % moe_layer_freq == 0), glm4_moe_lite_mtp.py (model.layers.<N+k>); "
                  "transformers 5.20.2 Glm4MoeLiteConfig"),
    Family("lfm2_moe", ("lfm2_moe",), "first_k", experts="feed_forward.experts", proj=("w1", "w3", "w2"), scoring="sigmoid", grouped=True, fixed_groups=(1, 1), activation="silu",
           keys=_d(first_k_dense_replace="num_dense_layers", use_routing_bias="use_expert_bias"),
           defaults=_d(num_dense_layers=2, n_group=1, topk_group=1, norm_topk_prob=True, use_routing_bias=True, routed_scaling_factor=1.0),
           source="vLLM 0.33.0-0.34.0 lfm2_moe.py Lfm2MoeSparseMoeBlock (scoring_func sigmoid, use_grouped_topk with num_expert_group=1 / topk_group=1 whatever config.json says, "
                  "e_score_correction_bias when use_expert_bias, renormalize=norm_topk_prob, no activation passed: silu, ckpt_names w1/w2/w3), Lfm2MoeDecoderLayer / "
                  "Lfm2MoeShortConvDecoderLayer (dense feed_forward when index < num_dense_layers, else MoE, attention and conv layers alike); transformers 5.20.2 Lfm2MoeConfig"),
    Family("step3_text", ("step3_text",), "moe_layers_enum", experts="moe.experts", shared="share_expert", scoring="softmax", activation="silu", shared_always=True,
           keys=_d(num_experts_per_tok="moe_top_k", norm_topk_prob="norm_expert_weight"), defaults=_d(norm_topk_prob=False),
           source="vLLM 0.33.0-0.34.0 step3_text.py FusedMoEBlock (moe_num_experts, moe_top_k, renormalize=norm_expert_weight, no activation passed: silu), "
                  "Step3TextDecoderLayer (MoE plus share_expert in the layers listed by the comma-separated moe_layers_enum); vllm/transformers_utils/configs/step3_vl.py Step3TextConfig"),
    Family("longcat_flash", ("longcat_flash",), "all", scoring="softmax", renormalize=False, bias=True, router_fp32=True, activation="silu",
           keys=_d(num_hidden_layers="num_layers", moe_intermediate_size="expert_ffn_hidden_size"),
           source="vLLM 0.33.0-0.34.0 longcat_flash.py LongcatMoe (renormalize=False, e_score_correction_bias always, float32 router logits, zero_expert_type with zero_expert_num "
                  "zero experts beside n_routed_experts), FlashDecoderLayer (one MoE per layer at model.layers.<i>.mlp); transformers 5.20.2 LongcatFlashConfig (num_layers, "
                  "expert_ffn_hidden_size, moe_topk)",
           notes=("LongCat-Flash routes to zero_expert_num zero (identity) experts beside the routed ones; the plan describes the routed experts only",)),
    Family("exaone_moe", ("exaone_moe",), "mlp_layer_types", shared="mlp.shared_experts", scoring="sigmoid", bias=True, grouped=True, activation="silu",
           defaults=_d(first_k_dense_replace=1, n_group=1, topk_group=1, norm_topk_prob=True, routed_scaling_factor=2.5, num_shared_experts=1),
           source="vLLM 0.33.0-0.34.0 exaone_moe.py ExaoneMoe (scoring_func sigmoid, e_score_correction_bias always, use_grouped_topk with n_group / topk_group, activation silu, "
                  "renormalize=norm_topk_prob), ExaoneMoeDecoderLayer (MoE where mlp_layer_types[i] == 'sparse' and not an MTP layer: MTP layers are dense); "
                  "transformers 5.20.2 ExaoneMoeConfig (mlp_layer_types from first_k_dense_replace when absent)"),
    Family("mimo_v2_flash", ("mimo_v2_flash", "mimo_v2"), "moe_layer_freq_list", activation="silu", scoring="sigmoid", bias=True, grouped=True, router_fp32=True, hidden_acts=("silu",),
           defaults=_d(n_group=1, topk_group=1, norm_topk_prob=True),
           source="vLLM 0.33.0-0.34.0 mimo_v2.py MiMoV2MoE (scoring_func sigmoid, e_score_correction_bias always, use_grouped_topk with n_group / topk_group, "
                  "renormalize=norm_topk_prob, GateLinear out_dtype float32, silu only), MiMoV2DecoderLayer.is_moe_layer (MoE only where a per-layer moe_layer_freq list is "
                  "non-zero: an integer moe_layer_freq gives no MoE layer); MiMoV2ForCausalLM (model_type mimo_v2, 0.34.0 model_arch_config_convertor.py) subclasses MiMoV2FlashForCausalLM "
                  "and changes only packed_modules_mapping (0.29.0-0.34.0); transformers 5.20.2 MimoV2FlashConfig"),
    Family("cohere2_moe", ("cohere2_moe",), "mlp_layer_types", shared="mlp.shared_experts", activation="silu", expert_width_is_intermediate=True,
           keys=_d(scoring_func="expert_selection_fn"), defaults=_d(norm_topk_prob=True, first_k_dense_replace=0, scoring_func="softmax"),
           source="vLLM 0.33.0-0.34.0 cohere2_moe.py Cohere2MoeSparseMoeBlock (experts sized by intermediate_size, renormalize=norm_topk_prob, no activation passed: silu; "
                  "expert_selection_fn sigmoid: custom_routing_function token_choice_with_bias, which 0.29.0-0.34.0 router/custom_routing_router.py answers as "
                  "SigmoidRenorm / Sigmoid by renormalize, else softmax), Cohere2MoeDecoderLayer (dense where mlp_layer_types[i] == 'dense'); "
                  "transformers 5.20.2 Cohere2MoeConfig (mlp_layer_types from first_k_dense_replace when absent)"),
    Family("afmoe", ("afmoe",), "first_k", activation="silu", shared="mlp.shared_experts", bias=True, grouped=True, router_fp32=True, hidden_acts=("silu",), renormalize_scorings=("sigmoid",),
           keys=_d(first_k_dense_replace="num_dense_layers", scoring_func="score_func", norm_topk_prob="route_norm"),
           defaults=_d(num_dense_layers=1, first_k_dense_replace=1, scoring_func="sigmoid", norm_topk_prob=True, routed_scaling_factor=1.0, n_group=1, topk_group=1),
           source="vLLM 0.29.0-0.34.0 afmoe.py AfmoeMoE (score_func, renormalize=route_norm only when score_func is sigmoid else False, use_grouped_topk with n_group / topk_group, "
                  "e_score_correction_bias (expert_bias) always, float32 gate and router_logits_dtype, route_scale, silu only), AfmoeDecoderLayer (MoE when index >= num_dense_layers); "
                  "transformers 5.20.2 AfmoeConfig (no score_func / route_norm / n_group defaults: the published configs set them)"),
    Family("hy_v3", ("hy_v3",), "first_k", activation="silu", shared="mlp.shared_mlp", scoring="sigmoid", bias=True, grouped=True, fixed_groups=(1, 1),
           keys=_d(moe_intermediate_size="expert_hidden_dim", norm_topk_prob="route_norm"), defaults=_d(n_group=1, topk_group=1, router_scaling_factor=1.0),
           source="vLLM 0.29.0-0.34.0 hy_v3.py HYV3MoEFused (scoring_func sigmoid, expert_bias as e_score_correction_bias always, use_grouped_topk with num_expert_group=1 / "
                  "topk_group=1 whatever config.json says, renormalize=route_norm, experts sized by expert_hidden_dim, router_scaling_factor (default 1.0), no activation passed: silu, "
                  "shared experts at mlp.shared_mlp), HYV3DecoderLayer (dense when index < first_k_dense_replace, which it requires); transformers 5.20.2 HYV3Config "
                  "(it has moe_intermediate_size, not the expert_hidden_dim / route_norm / first_k_dense_replace the model class reads)"),
    Family("hy_v4", ("hy_v4",), "mlp_layer_types", activation="silu", shared="mlp.shared_experts", mtp="deepseek", scoring="sigmoid", bias=True, grouped=True, fixed_groups=(1, 1),
           defaults=_d(first_k_dense_replace=1, n_group=1, topk_group=1, norm_topk_prob=True, routed_scaling_factor=2.827, n_shared_experts=1),
           source="vLLM 0.29.0-0.34.0 vllm/models/hy_v4/nvidia/moe.py HYV4MoEFused (shared by amd/model.py: scoring_func sigmoid, expert_bias as e_score_correction_bias always, "
                  "use_grouped_topk with num_expert_group=1 / topk_group=1 whatever config.json says, renormalize=norm_topk_prob and the other DeepSeek keys through "
                  "_normalize_hyv4_config, swiglu_limit only when > 0, no activation passed: silu), nvidia/model.py HYV4DecoderLayer (dense where mlp_layer_types[i] == 'dense'), "
                  "nvidia/mtp.py (MTP layers model.layers.<N+k>, mlp_layer_types extended with 'sparse'); vllm/transformers_utils/configs/hy_v4.py HYV4Config (mlp_layer_types: "
                  "layer 0 dense, the rest sparse, when absent)"),
    Family("glm5_next", ("glm5_next_text", "glm5_next"), "mlp_layer_types", activation="silu", shared="mlp.shared_experts", mtp="deepseek", grouped=True, hidden_acts=("silu",),
           defaults=_d(n_group=1, topk_group=1, norm_topk_prob=True, routed_scaling_factor=2.5, n_shared_experts=1, swiglu_limit=10.0, hidden_act="silu"),
           source="vLLM 0.30.0-0.34.0 vllm/models/glm5next/common/model.py Glm5NextMoE (scoring_func, renormalize=norm_topk_prob, use_grouped_topk with n_group / topk_group, "
                  "e_score_correction_bias when topk_method is noaux_tc, router logits float32 only with moe_router_dtype float32 (deepseek_v2.py _get_moe_router_dtype), "
                  "swiglu_limit passed, silu only; a MegaMoE module instead of FusedMoE under a native mega-MoE --moe-backend, not modelled), Glm5NextDecoderLayer (MoE where "
                  "mlp_layer_types[i] == 'sparse'), common/mtp.py (MTP layers model.layers.<N+k>, typed like the last target layer); transformers 5.20.2 Glm5NextTextConfig "
                  "(mlp_layer_types: 3 dense layers then sparse, when absent; 0.30.0-0.31.0 read vLLM's own Glm5NextConfig: from first_k_dense_replace, default 0, fact glm5_next_transformers_config)"),
    Family("bailing_moe_v3", ("bailing_moe_v3_vl",), "first_k", shared="mlp.shared_experts", mtp="deepseek", scoring="sigmoid", renormalize=True, bias=True, grouped=True,
           router_fp32=True, defaults=_d(n_group=8, topk_group=4, first_k_dense_replace=1, routed_scaling_factor=1.0, num_shared_experts=1),
           source="vLLM 0.29.0-0.34.0 bailing_moe_v3.py BailingMoeV3MoE (scoring_func sigmoid, renormalize=True, expert_bias as e_score_correction_bias always, "
                  "use_grouped_topk with n_group / topk_group, float32 gate and router_logits_dtype; activation swiglustep where expert_swiglu_limit_list gives the layer a "
                  "limit, else silu), BailingMoeV3DecoderLayer (MoE when index >= first_k_dense_replace), bailing_moe_v3_mtp.py (MTP layers model.layers.<N+k>, each "
                  "BailingMoeV3MoE); bailing_moe_v3_vl.py (text model at text_config, checkpoint model.layers mapped to language_model.model.layers); "
                  "vllm/transformers_utils/configs/bailing_moe_v3_vl.py BailingMoeV3TextConfig (model_type bailing_hybrid, which BailingMoeV2_5ForCausalLM "
                  "checkpoints share: a text-only bailing_hybrid config is read by its architecture)"),
    Family("bailing_moe_v25", (), "first_k", activation="silu", shared="mlp.shared_experts", mtp="deepseek", router_fp32=True,
           keys=_d(scoring_func="score_function"), defaults=_d(norm_topk_prob=True, first_k_dense_replace=0, scoring_func="softmax", routed_scaling_factor=1.0),
           source="vLLM 0.29.0-0.34.0 bailing_moe_linear.py BailingMoeV25 (score_function, softmax when absent; renormalize=norm_topk_prob, True when absent; "
                  "e_score_correction_bias when moe_router_enable_expert_bias; use_grouped_topk when n_group and topk_group are set; gate and router_logits_dtype "
                  "float32 unless router_dtype names another, then bfloat16; no activation passed: silu), BailingMoeV25DecoderLayer (MoE when num_experts > 1 and "
                  "index >= first_k_dense_replace, default 0), bailing_moe_mtp.py (MTP layers model.layers.<N+k>, each BailingMoeV25); model_type bailing_hybrid "
                  "(shared with Bailing-MoE-V3: read by the architecture, BailingMoeV2_5ForCausalLM)"),
    Family("beam", ("beam",), "mlp_layer_types", activation="silu", scoring="sigmoid", bias=True, router_fp32=True,
           defaults=_d(first_k_dense_replace=0, norm_topk_prob=True, routed_scaling_factor=1.0),
           source="vLLM 0.33.0-0.34.0 vllm/models/beam/{nvidia,amd}/moe.py BeamSparseMoeBlock (scoring_func sigmoid, e_score_correction_bias always, "
                  "renormalize=norm_topk_prob, use_grouped_topk only when n_group and topk_group are both set, float32 gate and router_logits_dtype, no activation "
                  "passed: silu), nvidia/model.py BeamDecoderLayer (dense where mlp_layer_types[i] == 'dense'); vllm/transformers_utils/configs/beam.py BeamConfig "
                  "(mlp_layer_types: every layer sparse when absent)"),
    Family("axk1", ("axk1",), "mlp_layer_types", activation="silu", shared="mlp.shared_experts", grouped=True, hidden_acts=("silu",),
           defaults=_d(first_k_dense_replace=1, moe_layer_freq=1, n_group=8, topk_group=4, norm_topk_prob=True, routed_scaling_factor=2.5, scoring_func="sigmoid",
                       topk_method="noaux_tc", n_shared_experts=1),
           source="vLLM 0.29.0-0.34.0 AXK1.py AXK1MoE (scoring_func, sigmoid when absent; e_score_correction_bias when topk_method is noaux_tc, its default; "
                  "renormalize=norm_topk_prob, use_grouped_topk with n_group / topk_group, router logits in the model dtype, silu only; routed_scaling_factor applied "
                  "to the output except under ROCm AITER MoE), _get_mlp_layer_types (mlp_layer_types, else sparse where index >= first_k_dense_replace and "
                  "index % moe_layer_freq == 0); transformers 5.20.2 AXK1Config (mlp_layer_types derived the same way)"),
    Family("aria", ("aria_text", "aria"), "all", shared="mlp.shared_experts", shared_always=True, scoring="softmax", renormalize=True, activation="silu",
           expert_width_is_intermediate=True, keys=_d(num_experts="moe_num_experts", num_experts_per_tok="moe_topk"),
           source="vLLM 0.29.0-0.33.0 aria.py AriaTextMoELayer (FusedMoEFactory with moe_num_experts / moe_topk, experts sized by intermediate_size, no scoring, "
                  "renormalize or activation passed: FusedMoE's softmax, True, silu; LlamaMLP shared_experts always), AriaTextDecoderLayer (every layer); "
                  "checkpoint text layers model.language_model.layers (the hf_to_vllm_mapper's post-4.52 names); transformers 5.20.2 AriaTextConfig"),
    Family("inkling", ("inkling_model", "inkling_mm_model"), "first_k", shared="mlp.shared_experts", renormalize=False, routing="custom", router_fp32=True, activation="silu",
           keys=_d(first_k_dense_replace="dense_mlp_idx"), defaults=_d(dense_mlp_idx=0, first_k_dense_replace=0),
           source="vLLM 0.29.0-0.34.0 vllm/models/inkling/nvidia/moe.py InklingMoE (custom_routing_function from InklingGate: sigmoid, renormalized after top-k, "
                  "shared sink experts outside FusedMoE; renormalize=False, router_logits_dtype float32, activation silu; experts sized by the MoE intermediate size), "
                  "nvidia/model.py InklingDecoderLayer (dense when index < dense_mlp_idx), nvidia/mtp.py (draft layers force_dense_mlp: dense); "
                  "vllm/models/inkling/configs.py InklingModelConfig (moe_intermediate_size becomes intermediate_size)",
           notes=("Inkling routes with its own InklingGate function (custom_routing_function): only kernels that accept a custom router apply; "
                  "vLLM pads its expert count to a multiple of the EP size (none for power-of-two counts), which the plan does not",)),
)

GENERIC = Family("generic", (), "generic", source="generic Hugging Face fields")



def _by_model_type(families: tuple[Family, ...]) -> Mapping[str, Family]:
    """Each ``model_type`` to its family; a family name or ``model_type`` listed twice raises.

    A second record would shadow the first silently (the later one wins here, the first where a
    family is looked up by name), so the two halves of a merged edit would each serve some inputs.

    >>> _by_model_type((Family("a", ("x",), "all"), Family("a", ("y",), "all")))
    Traceback (most recent call last):
    ...
    ValueError: family 'a' is defined twice (entries 1 and 2 of FAMILIES); merge them into one
    """
    by_name: dict[str, int] = {}
    by_type: dict[str, Family] = {}
    for index, fam in enumerate(families, 1):
        if fam.name in by_name:
            raise ValueError(f"family {fam.name!r} is defined twice (entries {by_name[fam.name]} and {index} of FAMILIES); merge them into one")
        by_name[fam.name] = index
        for mt in fam.model_types:
            if mt in by_type:
                raise ValueError(f"model_type {mt!r} is listed by two families, {by_type[mt].name!r} and {fam.name!r}; a model_type has one family")
            by_type[mt] = fam
    return MappingProxyType(by_type)


_BY_TYPE = _by_model_type(FAMILIES)

# Module path of the decoder layers in the checkpoint, by the top-level model_type of a
# multimodal wrapper (exclusion lists are written against these names).
_WRAPPER_PREFIX = {
    "kimi_k25": "language_model.model.layers",
    "kimi_k3": "language_model.model.layers",
    "kimi_k31": "language_model.model.layers",
    "glm5_next": "model.language_model.layers",
    "bailing_moe_v3_vl": "model.layers",
    "intern_s2_preview": "model.language_model.layers",
    "aria": "model.language_model.layers",
    "llama4": "language_model.model.layers",
    "qwen3_5_moe": "model.language_model.layers",
    "qwen3_5": "model.language_model.layers",
    "qwen4_exp": "model.language_model.layers",
    "step5_vl": "model.language_model.layers",
    "gemma4": "model.language_model.layers",
    "minimax_m3_vl": "language_model.model.layers",
    "qwen3_vl_moe": "model.language_model.layers",
    "qwen3_omni_moe": "thinker.model.layers",
    # Wrappers that build the language model their sub-config names (architectures.SUBCONFIG_WRAPPERS),
    # by the checkpoint names their WeightsMapper renames (vLLM 0.29.0-0.34.0): interns1.py maps
    # "model.language_model." (InternVL -HF), step3_vl.py "model."; internvl.py InternVLChatModel
    # keeps the names (its language_model is the checkpoint's).
    "internvl": "model.language_model.layers",
    "internvl_chat": "language_model.model.layers",
    "step3_vl": "model.layers",
}
_PREFIX_BY_FAMILY = {"deepseek_v4": "layers", "deepseek_v41": "layers", "nemotron_h": "backbone.layers", "dbrx": "transformer.blocks"}


def family_for(text_model_type: str | None, top_model_type: str | None) -> Family:
    """The family of a text model (``kimi_linear`` inside ``kimi_k3`` ...), else :data:`GENERIC`."""
    for mt in (text_model_type, top_model_type):
        if mt in _BY_TYPE:
            return _BY_TYPE[mt].for_model_type(mt)
    return GENERIC


def layer_prefix(family: Family, top_model_type: str | None, wrapped: bool) -> tuple[str, bool]:
    """Checkpoint path of the decoder layers, and whether it is inferred rather than known."""
    if family.name in _PREFIX_BY_FAMILY:
        return _PREFIX_BY_FAMILY[family.name], False
    if wrapped:
        if top_model_type in _WRAPPER_PREFIX:
            return _WRAPPER_PREFIX[top_model_type], False
        return "model.language_model.layers", True
    return "model.layers", family is GENERIC
