"""The vLLM release a checkpoint is read for, and the checkpoint facts that differ between releases.

The checkpoint reader answers for one modelled release: the release the answer is for
(:func:`moe_oracle.inputs.declared.answer_release`), or the modelled release standing in for an
unmodelled one. :class:`ReaderRelease` carries that release and the words that name it in
messages (``vLLM 0.31.0``; ``vLLM 0.29.0 (standing in for 0.28.0)``). :data:`FACTS` lists the
checkpoint facts that hold for some modelled releases only, each with its release range and the
source that decides it; tests/differential/test_release_sources.py reads every modelled
release's source tree and holds each range to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Mapping

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version


if TYPE_CHECKING:
    from ...core.versions import EngineRelease

__all__ = ["FACTS", "NEWEST", "Fact", "ReaderRelease"]


@dataclass(frozen=True)
class Fact:
    """One version-ranged checkpoint fact.

    Attributes:
        engine: the vLLM releases it holds for (PEP 440 specifier).
        what: what holds, in a few words.
        source: the vLLM source that decides it (Q/ = vllm/model_executor/layers/quantization/).
    """

    engine: str
    what: str
    source: str


FACTS: Mapping[str, Fact] = MappingProxyType({
    "ct_actorder_refused": Fact(">=0.30.0", "compressed-tensors group/dynamic activation ordering ('actorder') is refused at config load",
                                "Q/compressed_tensors/compressed_tensors.py CompressedTensorsConfig._quantization_scheme_map_from_config"),
    "gptq_desc_act_refused": Fact(">=0.30.0", "GPTQ desc_act=True with groups (also through a dynamic rule) is refused by AutoGPTQConfig and MoeWNA16Config",
                                  "Q/utils/gptq_utils.py normalize_and_validate_gptq_desc_act (Q/auto_gptq.py AutoGPTQConfig.__init__, Q/moe_wna16.py MoeWNA16Config.__init__)"),
    "ct_w4a8_mxfp4_method": Fact(">=0.32.0", "compressed-tensors MXFP4 weights with dynamic FP8 activations get CompressedTensorsW4A8Mxfp4MoEMethod (before: CompressedTensorsW4A4Mxfp4MoEMethod, no activation key)",
                                 "Q/compressed_tensors/compressed_tensors.py _is_mxfp4_w4a8_fp8; compressed_tensors_moe/compressed_tensors_moe.py get_moe_method"),
    "ct_checkpoint_proj_names": Fact(">=0.32.0", "compressed-tensors matches <experts>.0.<proj> with the model's checkpoint projection names (before: gate_proj, up_proj, down_proj for every model)",
                                     "Q/compressed_tensors/compressed_tensors_moe/compressed_tensors_moe.py get_moe_method (layer.ckpt_*_proj_name)"),
    "modelopt_flat_exclude_modules": Fact(">=0.33.0", "a config.json ModelOpt document's exclude_modules is read when it has no ignore list (before: ignore only)",
                                          "Q/modelopt.py ModelOptQuantConfigBase.from_config"),
    "modelopt_legacy_mixed_precision": Fact(">=0.33.0", "a legacy-layout ModelOpt document with quant_algo MIXED_PRECISION gets quant_method modelopt_mixed (before: 'Unknown ModelOpt quant algo')",
                                            "vllm/transformers_utils/model_arch_config_convertor.py ModelArchConfigConvertorBase._normalize_quantization_config"),
    "modelopt_mixed_block_fp8_moe": Fact(">=0.30.0", "MIXED_PRECISION experts with FP8_PB_WO / FP8_BLOCK_SCALES get Fp8MoEMethod with [group, group] blocks (before: no MoE method, unquantized)",
                                         "Q/modelopt.py ModelOptMixedPrecisionConfig.get_quant_method (_BLOCK_FP8_MOE_ALGOS)"),
    "modelopt_mixed_b12x_codecs": Fact(">=0.32.0", "MIXED_PRECISION experts with a B12X block codec (IQ2_XS, IQ2_XXS, Q8_0) get ModelOptBlockQuantMoEMethod (before: no MoE method, unquantized)",
                                       "Q/modelopt.py ModelOptMixedPrecisionConfig.get_quant_method (B12X_BLOCK_CODECS, vllm/utils/b12x.py)"),
    "quark_quant_key_dispatch": Fact(">=0.30.0", "Quark experts are dispatched on quant keys (get_quant_method_target); 0.29.0's QuarkMoEMethod.get_moe_method reads the scheme dictionaries itself",
                                     "Q/quark/quark.py QuarkConfig.get_quant_method_target, Q/quark/quark_moe.py QuarkMoEMethod.get_moe_method"),
    "quark_w4a16_int4_moe": Fact(">=0.31.0", "Quark W4A16 INT4 experts get QuarkW4A16Int4MoEMethod (before: 'Unsupported FusedMoe scheme')",
                                 "Q/quark/quark_moe.py QuarkMoEMethod.get_moe_method_target"),
    "quark_mxfp8_moe": Fact(">=0.33.0", "Quark OCP MXFP8 experts get QuarkW8A8Mxfp8MoEMethod (before: refused, MXFP8 experts are not supported through the MoE path)",
                            "Q/quark/quark_moe.py QuarkMoEMethod.get_moe_method_target, QuarkOCP_MX_MoEMethod.__init__"),
    "deepseek_v4_claims_quark_mxfp4": Fact("<0.31.0", "DeepSeek-V4's FP8 config claims a Quark checkpoint whose global weights are OCP MXFP4 and rewrites it to block FP8",
                                           "vllm/models/deepseek_v4/quant_config.py DeepseekV4FP8Config.override_quantization_method, from_config"),
    "deepseek_v41_model": Fact(">=0.30.0", "vLLM has the DeepSeek-V4.1 model (model_type deepseek_v41)",
                               "vllm/models/deepseek_v41; vllm/model_executor/models/registry.py"),
    "deepseek_v4_modelopt_ignore": Fact(">=0.32.0", "DeepSeek-V4 NVFP4 exports (moe_quant_algo NVFP4) keep the experts their 'ignore' list names (mtp.*) in native MXFP4; before, every FP4 expert layer is NVFP4",
                                        "vllm/models/deepseek_v41/quant_config.py DeepseekV4FP8Config.from_config / _is_nvfp4_expert_layer (the class Q/__init__.py get_quantization_config picks on CUDA/ROCm)"),
    "deepseek_v4_mxfp4_activation_key": Fact(">=0.33.0", "DeepSeek-V4 FP4 experts hand Mxfp4MoEMethod the activation key kMxfp8Dynamic (before: none)",
                                             "vllm/models/deepseek_v4/quant_config.py DeepseekV4FP8Config.get_quant_method"),
    "routing_minimax2_any_scale": Fact(">=0.31.0", "sigmoid + correction bias + renormalize without expert groups is MiniMax2 routing whatever routed_scaling_factor is (before: only at 1.0, else Unspecified)",
                                       "vllm/model_executor/layers/fused_moe/config.py get_routing_method_type"),
    "expert_substitution": Fact(">=0.33.0", "MoNE expert substitution (approximate_experts, compression_config.transform_config.expert_substitution) adjusts routes after routing, so the layer needs a decomposed backend (before: the fields are not read)",
                                "vllm/model_executor/layers/fused_moe/expert_substitution.py make_expert_substitution (P/layer.py)"),
    "w4afp8_method": Fact(">=0.34.0", "the w4afp8 checkpoint method: W4AFP8Config (an Fp8Config) hands the routed experts to CompressedTensorsW4A8Fp8MoEMethod (INT4 group weights, dynamic FP8 per-token activations)",
                          "Q/w4afp8.py W4AFP8Config.get_quant_method; Q/__init__.py QuantizationMethods"),
    "lut_b_method": Fact(">=0.34.0", "the online lut_b_moe method: --quantization lut_b_moe quantizes the routed experts to LUT-B at load (LutBOnlineMoEMethod: LUT-B weights, MXFP8 activations) and leaves the other layers unquantized",
                         "vllm/config/quantization.py _ONLINE_SHORTHANDS lut_b_moe; Q/online/base.py _ONLINE_MOE_METHODS (kLutBStatic: LutBOnlineMoEMethod)"),
    "step3p5_transformers_config": Fact(">=0.33.0", "Step-3.5 (model_type step3p5) configs are read by transformers' Step3p7TextConfig, whose mlp_layer_types step3p5.py _is_moe_layer reads "
                                        "(from moe_layers_enum, else layers 3..) and which has no moe_router_activation (getattr default sigmoid); before: vLLM's Step3p5Config "
                                        "(moe_layers_enum, else layers 1..; moe_router_activation default softmax)",
                                        "vllm/transformers_utils/config.py _CONFIG_REGISTRY step3p5; vllm/model_executor/models/step3p5.py"),
    "laguna_renormalize_always": Fact(">=0.31.0", "Laguna's LagunaMoE passes renormalize=True whatever config.json says (before: renormalize=config.norm_topk_prob)",
                                      "vllm/model_executor/models/laguna.py LagunaMoE.__init__"),
    "glm5_next_transformers_config": Fact(">=0.32.0", "GLM-5-Next configs are read by transformers' Glm5NextTextConfig, whose mlp_layer_types is 3 dense layers then sparse when absent (before: vLLM's own Glm5NextConfig, which derives it from first_k_dense_replace, default 0)",
                                          "0.30.0-0.31.0 vllm/transformers_utils/configs/glm5_next.py; 0.32.0 transformers_utils/config.py has no glm5_next entry"),
    "model_type_by_architecture": Fact(">=0.32.0", "a config.json without model_type whose architectures[0] vLLM maps to one (LongCat-Flash and its n-gram variant: longcat_flash) is read with that model_type's "
                                       "transformers config class; before, and for any other architecture, transformers' AutoConfig refuses a config.json without model_type "
                                       "('Unrecognized model ... Should have a `model_type` key', transformers 5.10.4 and 5.20.2 AutoConfig.from_pretrained) unless auto_map names a remote config class",
                                       "vllm/transformers_utils/config.py _ARCHITECTURE_TO_MODEL_TYPE, HFConfigParser.parse"),
    "beam_vllm_config": Fact(">=0.33.0", "Beam configs are read by vLLM's own BeamConfig and built by vllm/models/beam (every layer sparse when mlp_layer_types is absent, no expert groups unless "
                             "n_group and topk_group are set); 0.32.0 registers neither and builds transformers' Beam through the Transformers backend, whose BeamConfig defaults "
                             "mlp_layer_types to 3 dense layers then sparse, n_group 8, topk_group 4 and routed_scaling_factor 2.5 (grouped top-k when both group fields are set)",
                             "0.33.0 vllm/transformers_utils/configs/beam.py, vllm/models/beam; transformers 5.20.2 models/beam/configuration_beam.py; 0.32.0 vllm/model_executor/models/transformers/moe.py (use_grouped_topk)"),
    "zaya_native_model": Fact(">=0.34.0", "ZayaForCausalLM is built by vLLM's own zaya.py (ZayaSparseMoeBlock: router logits in float32); before, vLLM registers no ZAYA model and builds "
                              "transformers' through its Transformers backend, whose MoE fuser hands FusedMoE ZAYA's precomputed top-k as external routing and no router dtype (router logits in the model dtype)",
                              "0.34.0 vllm/model_executor/models/zaya.py and registry.py; 0.29.0-0.33.0 vllm/model_executor/models/transformers/moe.py (external routing kwargs: custom_routing_function, no router_logits_dtype)"),
    "gemma4_moe_by_num_experts": Fact(">=0.32.0", "a Gemma-4 decoder layer builds its MoE block when num_experts is set (before: when enable_moe_block or use_second_mlp_block is true)",
                                      "vllm/model_executor/models/gemma4.py Gemma4DecoderLayer.__init__ (enable_moe_block)"),
})
"""Checkpoint facts that hold for some modelled releases only (id -> :class:`Fact`)."""


@dataclass(frozen=True)
class ReaderRelease:
    """The modelled vLLM release a checkpoint is read for.

    Attributes:
        version: the modelled release whose facts hold (an unmodelled release's stand-in).
        words: how messages name it: ``vLLM 0.31.0``, ``vLLM 0.29.0 (standing in for 0.28.0)``.
    """

    version: str
    words: str

    @classmethod
    def of(cls, release: "EngineRelease | str | ReaderRelease | None") -> "ReaderRelease":
        """The release to read for: ``None`` is the newest modelled release (:data:`NEWEST`); a
        version string is read as itself; an :class:`~moe_oracle.core.versions.EngineRelease` by its
        stand-in, named as the refusals name it.

        >>> ReaderRelease.of("0.29.0").words
        'vLLM 0.29.0'

        Raises:
            ValueError: a string that is not a PEP 440 version.
        """
        if release is None:
            return NEWEST
        if isinstance(release, ReaderRelease):
            return release
        if isinstance(release, str):
            try:
                Version(release)
            except InvalidVersion:
                raise ValueError(f"not a vLLM release: {release!r}") from None
            return cls(release, f"vLLM {release}")
        return cls(release.stand_in, release.facts_named())

    def holds(self, fact: str) -> bool:
        """Whether :data:`FACTS` ``[fact]`` holds for this release.

        >>> ReaderRelease.of("0.29.0").holds("ct_actorder_refused"), ReaderRelease.of("0.30.0").holds("ct_actorder_refused")
        (False, True)
        """
        return SpecifierSet(FACTS[fact].engine).contains(Version(self.version), prereleases=True)


def _newest_modelled() -> str:
    """The newest release of ``rules/engine.yaml`` (serve.ENGINE_VERSION is the same fact kept by
    hand, to be derived from the engine table after the restructure). Read with a pattern, not YAML:
    the select fast path imports neither yaml nor packaging's heavier modules."""
    import re

    from ...core._resources import package_dir

    text = (package_dir() / "rules" / "engine.yaml").read_text(encoding="utf-8")
    versions = re.findall(r'^\s*-\s*version:\s*"?(\d+(?:\.\d+)*)"?\s*$', text, re.M)
    return max(versions, key=lambda v: tuple(int(x) for x in v.split(".")))


_NEWEST_VERSION = _newest_modelled()
NEWEST = ReaderRelease(_NEWEST_VERSION, f"vLLM {_NEWEST_VERSION}")
"""The newest modelled release: what the reader answers for when no release is given."""
