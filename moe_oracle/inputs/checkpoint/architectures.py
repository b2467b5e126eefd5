"""The MoE architectures each modelled vLLM release registers, and the family we read each with.

Listed by :mod:`moe_oracle.tools.vllm_moe_archs` from vLLM 0.29.0-0.34.0 ``vllm/model_executor/
models/registry.py`` (text-generation, multimodal and speculative-decoding tables) and the model
files: an architecture is MoE when its model file builds ``FusedMoE`` / ``SharedFusedMoE`` /
``FusedMoEFactory`` or imports a MoE block from a file that does, or when its class subclasses or
builds as its language model a MoE class (``MistralLarge3ForCausalLM(DeepseekV3ForCausalLM)``,
``init_vllm_registered_model(architectures=["DeepseekV2ForCausalLM"])``, a configuration whose
text config is a MoE architecture's), followed to a fixed point. The scan over-includes
architectures whose file also holds a dense sibling (``Qwen3_5ForCausalLM`` beside
``Qwen3_5MoeForCausalLM``) and dense models built on a MoE-capable class (Cosmos3-Edge); those
stay unmapped and are answered, when asked, with the note below.

An architecture with ``family=None`` has no family record (:mod:`.families`): its layer layout,
routing, scoring, activation, shared experts and MTP layers are read from generic Hugging Face
fields, and :func:`architecture_notes` says so wherever the answer is given (``select``,
``explain`` and ``plan``), never silently; where we know why it stays unmapped (a dense sibling,
a model vLLM cannot build on this CPU machine without the checkpoint's remote code), ``Arch.unmapped``
says so and the note repeats it.

**Wrappers that choose their language model at run time** (:data:`SUBCONFIG_WRAPPERS`) are not in
:data:`VLLM_MOE_ARCHITECTURES`: InternVL, LLaVA, Mistral-3, Step-3 VL, Ovis, Nemotron-VL and the
other classes listed there build ``init_vllm_registered_model(hf_config=config.text_config)``, so
their language model is the class the sub-config's ``architectures`` names (else transformers'
causal-LM class of its ``model_type``: vLLM 0.29.0-0.34.0 ``config/vllm.py``
``VllmConfig.with_hf_config``), MoE for some checkpoints (InternVL3.5-30B-A3B: Qwen3-MoE) and dense
for others (InternVL3.5-8B). The registry scan cannot call them MoE from the source; it lists them
(``registry_scan --wrappers``), and the checkpoint reader reads such a checkpoint by its language
model: the sub-config (``text_config``, or ``llm_config``, which vLLM renames to ``text_config``)
and that sub-config's architecture, whose family and notes then apply as for the bare model.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping

from .families import GENERIC, Family
from .releases import ReaderRelease

__all__ = ["SUBCONFIG_WRAPPERS", "VLLM_MOE_ARCHITECTURES", "Arch", "LmWrapper", "architecture_notes", "unmodelled_architectures"]

UNMODELLED_REASON = ("no family record: its layer layout, routing (scoring, correction bias, groups, custom router), activation, "
                     "shared experts and MTP layers have not been read from its model file yet, so they come from generic config fields")


@dataclass(frozen=True)
class Arch:
    """One registered MoE architecture.

    Attributes:
        module: the registry's module (``glm4_moe``; ``vllm.models.deepseek_v4`` for the new layout).
        engine: the modelled releases that register it (PEP 440 specifier over vLLM versions).
        family: our family name (:data:`.families.FAMILIES`), ``None`` when unmodelled.
        unmapped: why an architecture stays without a family, where the reason is known (a dense
            sibling the file scan over-includes; a config class this offline environment lacks, so
            vLLM cannot build it on CPU and the model-construction tier cannot check a family);
            ``None``: not read yet (:data:`UNMODELLED_REASON`). Only with ``family=None``.
    """

    module: str
    engine: str
    family: str | None
    unmapped: str | None = None

    def __post_init__(self) -> None:
        if self.unmapped is not None and self.family is not None:
            raise ValueError(f"Arch({self.module!r}): a reason for staying unmapped with family {self.family!r}")

    def registered(self, release: str) -> bool:
        from packaging.specifiers import SpecifierSet  # imported where read (select imports what answering needs)

        return SpecifierSet(self.engine).contains(release)


_NO_CONFIG_CLASS = ("model_type {mt!r} has no transformers 5.20.2 or vLLM config class: the published checkpoint ships its configuration file for "
                    "trust_remote_code, so vLLM cannot build it on this offline CPU machine and the model-construction tier cannot check a family for it")

_DENSE_DRAFT = ("a dense draft the file scan over-includes: {why}, so no layer of it is MoE")
_NOT_BUILT = "vLLM cannot build it on this CPU machine ({why}), so the model-construction tier cannot check a family for it"
_REMOTE_CONFIG = "{file}: its checkpoints' model_type has no config class in transformers 5.20.2 or vllm/transformers_utils/configs (the published checkpoints ship one for trust_remote_code), so the model-construction tier, offline and without remote code, cannot build it to check a family record"
_QWEN3_5_DENSE = "dense sibling, over-included by the file test: vLLM 0.29.0-0.33.0 qwen3_5.py, 0.34.0 vllm/models/qwen3_5/nvidia/model.py builds Qwen3NextSparseMoeBlock only where the text model_type is qwen3_5_moe_text (Qwen3_5DecoderLayer); this class's qwen3_5_text layers are dense MLPs, so it has no MoE layer"

_DRAFT_OF = "a speculative draft over {target} ({src}): its draft layers are {layer}, MoE as the draft config says; no family record describes a draft of this target, so the model-construction tier has nothing to check"
_DEEPSEEK_VL2 = ("its language model is the checkpoint's language_config (DeepseekVLV2TextConfig, a transformers DeepseekV2Config: vLLM 0.29.0-0.34.0 "
                 "transformers_utils/configs/deepseek_vl2.py), built by init_vllm_registered_model from its architectures (the DeepSeek-V2 MoE, "
                 "DeepseekV2ForCausalLM in the published checkpoints); the checkpoint reader reads language_config as the text model "
                 "(model.py _text_config), but the wrapper (vision tower, tokenizer image token) is not in the model-construction corpus, "
                 "so no family record is checked for it: its layers are read from the generic fields of language_config")

# Generated by python -m moe_oracle.tools.vllm_moe_archs over the vLLM 0.29.0-0.34.0 source trees,
# then each architecture mapped by hand to the family whose model class it is (families.py).
VLLM_MOE_ARCHITECTURES: Mapping[str, Arch] = MappingProxyType({
    "AXK1ForCausalLM": Arch("AXK1", ">=0.29.0", 'axk1'),
    "AfmoeForCausalLM": Arch("afmoe", ">=0.29.0", 'afmoe'),
    "AliceAIForCausalLM": Arch("alice_ai", ">=0.33.0", None, "neither transformers 5.20.2 nor vLLM registers a config class for it (vllm/transformers_utils/config.py has no entry; the checkpoint needs remote code), so vLLM cannot build it on this offline CPU machine; its MoE block (alice_ai.py) was not read into a family"),
    "AriaForConditionalGeneration": Arch("aria", ">=0.29.0,<0.34.0", 'aria'),
    "BailingMoeForCausalLM": Arch("bailing_moe", ">=0.29.0", None, _NO_CONFIG_CLASS.format(mt="bailing_moe")),
    "BailingMoeV25MTPModel": Arch("bailing_moe_mtp", ">=0.29.0", 'bailing_moe_v25'),
    "BailingMoeV2ForCausalLM": Arch("bailing_moe", ">=0.29.0", None, _NO_CONFIG_CLASS.format(mt="bailing_moe_v2")),
    "BailingMoeV2_5ForCausalLM": Arch("bailing_moe_linear", ">=0.29.0", 'bailing_moe_v25'),
    "BailingMoeV3ForCausalLM": Arch("bailing_moe_v3", ">=0.29.0", 'bailing_moe_v3'),
    "BailingMoeV3MTPModel": Arch("bailing_moe_v3_mtp", ">=0.29.0", 'bailing_moe_v3'),
    "BailingMoeV3VLForConditionalGeneration": Arch("bailing_moe_v3_vl", ">=0.30.0", 'bailing_moe_v3'),
    "BeamForCausalLM": Arch("vllm.models.beam", ">=0.33.0", 'beam'),
    "Cohere2MoeForCausalLM": Arch("cohere2_moe", ">=0.29.0", 'cohere2_moe'),
    "DFlash2BeamDraftModel": Arch("vllm.models.beam", ">=0.33.0", None, _DENSE_DRAFT.format(why="0.33.0-0.34.0 vllm/models/beam/nvidia/dflash2.py DFlash2BeamDecoderLayer has a dense DFlash2BeamMLP; the package also holds the Beam MoE")),
    "DSparkDraftModel": Arch("vllm.models.deepseek_v4", ">=0.29.0", 'deepseek_v4'),
    "DSparkV41DraftModel": Arch("vllm.models.deepseek_v41", ">=0.30.0", 'deepseek_v41'),
    "DbrxForCausalLM": Arch("dbrx", ">=0.29.0", 'dbrx'),
    "DeepSeekMTPModel": Arch("deepseek_mtp", ">=0.29.0", 'deepseek_v3'),
    "DeepSeekV4MTPModel": Arch("vllm.models.deepseek_v4", ">=0.29.0", 'deepseek_v4'),
    "DeepseekForCausalLM": Arch("deepseek_v2", ">=0.29.0", None, _NO_CONFIG_CLASS.format(mt="deepseek")),
    "DeepseekV2ForCausalLM": Arch("deepseek_v2", ">=0.29.0", 'deepseek_v3'),
    "DeepseekV32ForCausalLM": Arch("vllm.models.deepseek_v32", ">=0.29.0", 'deepseek_v3'),
    "DeepseekV32MTPModel": Arch("vllm.models.deepseek_v32", ">=0.29.0", 'deepseek_v3'),
    "DeepseekV3ForCausalLM": Arch("deepseek_v2", ">=0.29.0", 'deepseek_v3'),
    "DeepseekV41ForCausalLM": Arch("vllm.models.deepseek_v41", ">=0.30.0", 'deepseek_v41'),
    "DeepseekV4ForCausalLM": Arch("vllm.models.deepseek_v4", ">=0.29.0", 'deepseek_v4'),
    "DeepseekV4ForConditionalGeneration": Arch("vllm.models.deepseek_v4", ">=0.30.0", 'deepseek_v4'),
    "Dots3NoteForCausalLM": Arch("vllm.models.dots3_note", ">=0.29.0", None, _NOT_BUILT.format(why="0.29.0-0.34.0 vllm/models/dots3_note/nvidia/attention.py imports vllm.vllm_flash_attn.flash_attn_interface when the registry inspects the class; its MoE is deepseek_v2.py DeepseekV2MoE with a padded shared expert")),
    "Dots3NoteMTPModel": Arch("vllm.models.dots3_note", ">=0.29.0", None, _NOT_BUILT.format(why="the Dots3NoteForCausalLM package: vllm.vllm_flash_attn.flash_attn_interface at inspection")),
    "EagleMistralLarge3ForCausalLM": Arch("mistral_large_3_eagle", ">=0.29.0", None,
        unmapped="the EAGLE draft of MistralLarge3ForCausalLM (0.29.0-0.34.0 mistral_large_3_eagle.py EagleMistralLarge3Model: DeepseekV2DecoderLayer / DeepseekV2MoE layers numbered after the target's, first_k_dense_replace shifted by the target's layer count, so the draft's own first_k_dense_replace and moe_layer_freq decide which are MoE); its weights load through MistralLarge3ForCausalLM's Mistral-format mapper (eagle_linear.qscale_act ...): the checkpoints ship params.json, which 0.34.0 transformers_utils/configs/mistral.py adapt_config_dict turns into a deepseek_v3 config, and no config.json, so the model-construction tier (config.json only, and a draft needs its target's speculative config) cannot build it to check a family record"),
    "Ernie4_5_MoeForCausalLM": Arch("ernie45_moe", ">=0.29.0", 'ernie45_moe'),
    "Ernie4_5_VLMoeForConditionalGeneration": Arch("ernie45_vl", ">=0.29.0", None, "each MoE layer holds two routed-expert sets, text_experts and vision_experts, sized by list-valued moe_num_experts / moe_intermediate_size / moe_layer_start_index (0.29.0-0.34.0 ernie45_vl_moe.py Ernie4_5_VLMoeMoE); a family record describes one experts module per layer"),
    "Exaone4_5_MTP": Arch("exaone4_5_mtp", ">=0.29.0", None, _DENSE_DRAFT.format(why="0.29.0-0.34.0 exaone4_5_mtp.py builds exaone4.py Exaone4DecoderLayer and imports exaone_moe_mtp for its predictor shell")),
    "ExaoneMoEForCausalLM": Arch("exaone_moe", ">=0.32.0", 'exaone_moe'),
    "ExaoneMoeForCausalLM": Arch("exaone_moe", ">=0.29.0", 'exaone_moe'),
    "ExaoneMoeMTP": Arch("exaone_moe_mtp", ">=0.29.0", 'exaone_moe'),
    "FlintForCausalLM": Arch("vllm.models.flint", ">=0.33.0", None, _NOT_BUILT.format(why="0.33.0-0.34.0 vllm/models/flint imports triton when the registry inspects the class on CUDA, and asserts FlashInfer attention on ROCm; read from its model file: sigmoid or router_score_function, renormalize=norm_topk_prob, no correction bias, shared_expert always, mlp_only_layers dense")),
    "Gemma4ForCausalLM": Arch("gemma4", ">=0.29.0", 'gemma4'),
    "Glm4MoeForCausalLM": Arch("glm4_moe", ">=0.29.0", 'glm4_moe'),
    "Glm4MoeLiteForCausalLM": Arch("glm4_moe_lite", ">=0.29.0", 'glm4_moe_lite'),
    "Glm4MoeLiteMTPModel": Arch("glm4_moe_lite_mtp", ">=0.29.0", 'glm4_moe_lite'),
    "Glm4MoeMTPModel": Arch("glm4_moe_mtp", ">=0.29.0", 'glm4_moe'),
    "Glm5NextForCausalLM": Arch("vllm.models.glm5next", ">=0.30.0", 'glm5_next'),
    "Glm5NextForConditionalGeneration": Arch("vllm.models.glm5next", ">=0.30.0", 'glm5_next'),
    "Glm5NextMTPModel": Arch("vllm.models.glm5next", ">=0.30.0", 'glm5_next'),
    "GlmMoeDsaForCausalLM": Arch("vllm.models.deepseek_v32", ">=0.29.0", 'glm_moe_dsa'),
    "GlmOcrMTPModel": Arch("glm_ocr_mtp", ">=0.29.0", None, _DENSE_DRAFT.format(why="0.29.0-0.34.0 glm_ocr_mtp.py builds glm4.py Glm4DecoderLayer and imports glm4_moe_lite_mtp helpers")),
    "GptOssForCausalLM": Arch("gpt_oss", ">=0.29.0", 'gpt_oss'),
    "GraniteMoeForCausalLM": Arch("granitemoe", ">=0.29.0", 'granitemoe'),
    "GraniteMoeHybridForCausalLM": Arch("granitemoehybrid", ">=0.29.0", 'granitemoe'),
    "GraniteMoeSWAForCausalLM": Arch("granitemoeshared", ">=0.29.0", 'granitemoe'),
    "GraniteMoeSharedForCausalLM": Arch("granitemoeshared", ">=0.29.0", 'granitemoe'),
    "HYV3ForCausalLM": Arch("hy_v3", ">=0.29.0", 'hy_v3'),
    "HYV4ForCausalLM": Arch("vllm.models.hy_v4", ">=0.29.0", 'hy_v4'),
    "HYV4MTPModel": Arch("vllm.models.hy_v4", ">=0.29.0", 'hy_v4'),
    "HfMoondream": Arch("moondream3", ">=0.29.0", None, "no FusedMoE layer: 0.29.0-0.34.0 moondream3.py Moondream3TextMoE (the Moondream3ForCausalLM class) routes with torch.topk + softmax and calls the Triton fused_experts function directly, so vLLM selects no MoE kernel for it"),
    "InklingForCausalLM": Arch("vllm.models.inkling", ">=0.29.0", 'inkling'),
    "InklingForConditionalGeneration": Arch("vllm.models.inkling", ">=0.29.0", 'inkling'),
    "InklingMTPModel": Arch("vllm.models.inkling", ">=0.29.0", 'inkling'),
    "InternS1ProForConditionalGeneration": Arch("interns1_pro", ">=0.29.0", None, "its checkpoint's config class is neither in transformers 5.20.2 nor in vLLM (remote code): vLLM cannot build it on this offline CPU machine; its text model is a Qwen3-MoE variant (0.29.0-0.34.0 interns1_pro.py InternS1ProMoeSparseMoeBlock)"),
    "InternS2MobiusForConditionalGeneration": Arch("interns2_mobius", ">=0.29.0", None, "its routed experts are one MoE bank (InternS2MobiusMetaMoeBlock) that several decoder layers share, and its config class is neither in transformers 5.20.2 nor in vLLM (remote code; 0.29.0-0.34.0 interns2_mobius.py): a family record describes one experts module per decoder layer, and vLLM cannot build it here"),
    "InternS2MobiusMTP": Arch("interns2_mobius", ">=0.29.0", None, "its routed experts are one MoE bank (InternS2MobiusMetaMoeBlock) that several decoder layers share, and its config class is neither in transformers 5.20.2 nor in vLLM (remote code; 0.29.0-0.34.0 interns2_mobius.py): a family record describes one experts module per decoder layer, and vLLM cannot build it here"),
    "InternS2PreviewForConditionalGeneration": Arch("interns2_preview", ">=0.29.0", 'qwen3_5_moe'),
    "JambaForCausalLM": Arch("jamba", ">=0.29.0", 'jamba'),
    "K2HorizonForCausalLM": Arch("k2_horizon", ">=0.30.0", None, "neither transformers 5.20.2 nor vLLM registers a config class for it (vllm/transformers_utils/config.py has no entry; the checkpoint needs remote code), so vLLM cannot build it on this offline CPU machine; its MoE block (k2_horizon.py) was not read into a family"),
    "KimiK31ForConditionalGeneration": Arch("vllm.models.kimi_k3", ">=0.34.0", 'kimi_k3'),
    "KimiK3ForConditionalGeneration": Arch("vllm.models.kimi_k3", ">=0.29.0", 'kimi_k3'),
    "KimiK3MTPModel": Arch("vllm.models.kimi_k3", ">=0.29.0", 'kimi_k3'),
    "KimiLinearForCausalLM": Arch("vllm.models.kimi_k3", ">=0.29.0", 'kimi_k3'),
    "LagunaForCausalLM": Arch("laguna", ">=0.29.0", 'laguna'),
    "Lfm2MoeForCausalLM": Arch("lfm2_moe", ">=0.29.0", 'lfm2_moe'),
    "Llama4ForCausalLM": Arch("llama4", ">=0.29.0", 'llama4'),
    "Llama4ForConditionalGeneration": Arch("mllama4", ">=0.29.0", 'llama4'),
    "LongcatFlashForCausalLM": Arch("longcat_flash", ">=0.29.0", 'longcat_flash'),
    "MellumForCausalLM": Arch("mellum", ">=0.29.0,<=0.31.0", 'mellum'),
    "MiMoV2FlashForCausalLM": Arch("mimo_v2", ">=0.29.0", 'mimo_v2_flash'),
    "MiMoV2ForCausalLM": Arch("mimo_v2", ">=0.29.0", 'mimo_v2_flash'),
    "MingV3ASRForConditionalGeneration": Arch("ming_v3_asr", ">=0.34.0", None,
        unmapped='its language model is bailing_moe_v3.py BailingMoeV3ForCausalLM (0.34.0 ming_v3_asr.py), which has no family record yet; it will read as that family once BailingMoeV3 has one'),
    "MiniMaxM2ForCausalLM": Arch("minimax_m2", ">=0.29.0", 'minimax_m2'),
    "MiniMaxM3MTP": Arch("vllm.models.minimax_m3", ">=0.29.0", 'minimax_m3'),
    "MiniMaxM3SparseForCausalLM": Arch("vllm.models.minimax_m3", ">=0.29.0", 'minimax_m3'),
    "MiniMaxM3SparseForConditionalGeneration": Arch("vllm.models.minimax_m3", ">=0.29.0", 'minimax_m3'),
    "MistralLarge4DSparkModel": Arch("vllm.models.mistral.mistral_large4", ">=0.34.0", None,
        unmapped='the DSpark draft of MistralLarge4ForCausalLM (vllm/models/mistral/mistral_large4/nvidia/dspark.py); Mistral Large 4 ships in Mistral format (params.json): vLLM 0.34.0 transformers_utils/configs/mistral.py adapt_config_dict makes model_type mistral_large_4 from its dsa/moe sections, and no config class reads a Hugging Face config.json for it, so the model-construction tier (config.json only) cannot build it; its layout (vllm/models/mistral/common/layer_spec.py: MoE where n_routed_experts and index >= first_k_dense_replace and index % moe_layer_freq == 0) and router (nvidia/moe.py MistralMoE: softmax, renormalize=norm_topk_prob, fp32 router logits, shared experts) are read from the generic fields'),
    "MistralLarge4ForCausalLM": Arch("vllm.models.mistral.mistral_large4", ">=0.34.0", None,
        unmapped='Mistral Large 4 ships in Mistral format (params.json): vLLM 0.34.0 transformers_utils/configs/mistral.py adapt_config_dict makes model_type mistral_large_4 from its dsa/moe sections, and no config class reads a Hugging Face config.json for it, so the model-construction tier (config.json only) cannot build it; its layout (vllm/models/mistral/common/layer_spec.py: MoE where n_routed_experts and index >= first_k_dense_replace and index % moe_layer_freq == 0) and router (nvidia/moe.py MistralMoE: softmax, renormalize=norm_topk_prob, fp32 router logits, shared experts) are read from the generic fields'),
    "MixtralForCausalLM": Arch("mixtral", ">=0.29.0", 'mixtral'),
    "Moondream3ForCausalLM": Arch("moondream3", ">=0.29.0", None,
        unmapped='moondream3.py (0.29.0-0.34.0) Moondream3TextMoE builds no FusedMoE layer: on CUDA it calls the Triton fused_experts function itself (else, or after an error, a per-expert Python loop), so vLLM runs no kernel selection for it and there is no FusedMoE layer to compare'),
    "MuseSparkForConditionalGeneration": Arch("vllm.models.muse_spark", ">=0.33.0", None,
        unmapped="its MoE layers choose their own kernels, which a family record (checkpoint facts; the kernel left to the release's oracle) cannot describe: 0.33.0-0.34.0 vllm/models/muse_spark/nvidia/muse_moe_runner.py MuseSparkRoutedExperts._get_quant_method gives ModelOpt NVFP4 layers MuseSparkModelOptNvFp4FusedMoE (its own FlashInfer TRT-LLM experts MuseSparkTrtLlmNvFp4Experts[Modular], Marlin on SM 9.x, NotImplementedError for any other backend) and every other layer MuseSparkUnquantizedFusedMoE, which bypasses the oracle (TRT-LLM BF16, Triton on SM 9.x); on ROCm amd/muse_moe_runner.py has its own Quark and unquantized methods"),
    "NemotronHForCausalLM": Arch("nemotron_h", ">=0.29.0", 'nemotron_h'),
    "NemotronHMTPModel": Arch("nemotron_h_mtp", ">=0.29.0", 'nemotron_h'),
    "NemotronHPuzzleForCausalLM": Arch("nemotron_h", ">=0.29.0", None,
        unmapped="registered as nemotron_h.py NemotronHForCausalLM, but model_type nemotron_h_puzzle has per-layer block configs that its remote config class hands each layer (get_nemotron_h_config_for_layer; 0.34.0 nemotron_h.py, nemotron_h_mtp.py mtp_n_routed_experts); its checkpoints' model_type has no config class in transformers 5.20.2 or vllm/transformers_utils/configs (the published checkpoints ship one for trust_remote_code), so the model-construction tier, offline and without remote code, cannot build it to check a family record"),
    "OlmoeForCausalLM": Arch("olmoe", ">=0.29.0,<0.34.0", 'olmoe'),
    "PanguEmbeddedForCausalLM": Arch("openpangu", ">=0.29.0", None,
        unmapped=_REMOTE_CONFIG.format(file='openpangu.py')),
    "PanguProMoEV2ForCausalLM": Arch("openpangu", ">=0.29.0", None,
        unmapped=_REMOTE_CONFIG.format(file='openpangu.py')),
    "PanguUltraMoEForCausalLM": Arch("openpangu", ">=0.29.0", None,
        unmapped=_REMOTE_CONFIG.format(file='openpangu.py')),
    "Param2MoEForCausalLM": Arch("param2moe", ">=0.29.0", None,
        unmapped=_REMOTE_CONFIG.format(file='param2moe.py')),
    "PhiMoEForCausalLM": Arch("phimoe", ">=0.29.0", 'phimoe'),
    "Qwen2MoeForCausalLM": Arch("qwen2_moe", ">=0.29.0", 'qwen2_moe'),
    "Qwen3ASRForConditionalGeneration": Arch("qwen3_asr", ">=0.29.0", None,
        unmapped='over-included by the file test: qwen3_asr.py (0.29.0-0.34.0) imports only the audio encoder from qwen3_omni_moe_thinker.py; its language model is qwen3.py Qwen3ForCausalLM, dense, so it has no MoE layer'),
    "Qwen3MoeForCausalLM": Arch("qwen3_moe", ">=0.29.0", 'qwen3_moe'),
    "Qwen3NextForCausalLM": Arch("qwen3_next", ">=0.29.0", 'qwen3_5_moe'),
    "Qwen3NextMTP": Arch("qwen3_next_mtp", ">=0.29.0", 'qwen3_5_moe'),
    "Qwen3OmniMoeForConditionalGeneration": Arch("qwen3_omni_moe_thinker", ">=0.29.0", 'qwen3_omni_moe'),
    "Qwen3VLMoeForConditionalGeneration": Arch("qwen3_vl_moe", ">=0.29.0", 'qwen3_vl_moe'),
    "Qwen3_5ForCausalLM": Arch("qwen3_5", ">=0.29.0", None,
        unmapped=_QWEN3_5_DENSE),
    "Qwen3_5ForConditionalGeneration": Arch("qwen3_5", ">=0.29.0", None,
        unmapped=_QWEN3_5_DENSE),
    "Qwen3_5MTP": Arch("qwen3_5_mtp", ">=0.29.0", None,
        unmapped="dense sibling, over-included by the file test: its draft layer is the target's Qwen3_5DecoderLayer (0.29.0-0.33.0 qwen3_5_mtp.py, 0.34.0 vllm/models/qwen3_5/nvidia/mtp.py), MoE only for qwen3_5_moe_text, which Qwen3_5MoeMTP (family qwen3_5_moe) serves"),
    "Qwen3_5MoeForCausalLM": Arch("qwen3_5", ">=0.29.0", 'qwen3_5_moe'),
    "Qwen3_5MoeForConditionalGeneration": Arch("qwen3_5", ">=0.29.0", 'qwen3_5_moe'),
    "Qwen3_5MoeMTP": Arch("qwen3_5_mtp", ">=0.29.0", 'qwen3_5_moe'),
    "Qwen4ExpForCausalLM": Arch("vllm.models.qwen4_exp", ">=0.29.0", 'qwen3_5_moe'),
    "Qwen4ExpForConditionalGeneration": Arch("vllm.models.qwen4_exp", ">=0.29.0", 'qwen3_5_moe'),
    "Qwen4ExpMTP": Arch("vllm.models.qwen4_exp", ">=0.29.0", 'qwen3_5_moe'),
    "SarvamMLAForCausalLM": Arch("sarvam", ">=0.29.0", None,
        unmapped=_REMOTE_CONFIG.format(file='sarvam.py (model_type sarvam_mla among others, 0.34.0 transformers_utils/config.py _PATCH_HF_VALIDATE_ROPE)')),
    "SarvamMoEForCausalLM": Arch("sarvam", ">=0.29.0", None,
        unmapped=_REMOTE_CONFIG.format(file='sarvam.py (model_type sarvam_mla among others, 0.34.0 transformers_utils/config.py _PATCH_HF_VALIDATE_ROPE)')),
    "Step3TextForCausalLM": Arch("step3_text", ">=0.29.0", 'step3_text'),
    "Step3p5ForCausalLM": Arch("step3p5", ">=0.29.0", 'step3p5'),
    "Step5ForCausalLM": Arch("vllm.models.step5", ">=0.33.0", 'step5'),
    "Step5ForConditionalGeneration": Arch("vllm.models.step5", ">=0.33.0", 'step5'),
    "Step5MTP": Arch("vllm.models.step5", ">=0.33.0", None,
        unmapped="the Step5 draft (vllm/models/step5 Step5MTP): its MoE layers are numbered after the target's and chosen by the same moe_layers_enum / moe_layer_list, but the step5 family has no MTP layout yet and 0.33.0-0.34.0 cannot be built here on CUDA (pinned host buffers) to check one"),
    "UnlimitedOCR2TextForCausalLM": Arch("unlimited_ocr", ">=0.34.0", None,
        unmapped="not a checkpoint's own architecture: 0.34.0 model_executor/models/config.py UnlimitedOCRForCausalLMConfig._configure_v2 sets it on the language_config of an Unlimited-OCR-2 checkpoint (UnlimitedOCRForCausalLM with unlimited_ocr2); its decoder (unlimited_ocr.py UnlimitedOCR2DecoderLayer: DASH attention, DeepseekV2MoE where index >= first_k_dense_replace and index % moe_layer_freq == 0) is read with UnlimitedOCRForCausalLM, which see"),
    "UnlimitedOCRForCausalLM": Arch("unlimited_ocr", ">=0.29.0", None,
        unmapped="a DeepseekOCRForCausalLM subclass (0.29.0-0.34.0 unlimited_ocr.py) whose language model is a DeepSeek-V2 MoE (DeepseekV2MoE: 64 routed + 2 shared experts, first_k_dense_replace 1, plain MHA) configured under language_config (transformers_utils/configs/unlimited_ocr.py UnlimitedOCRConfig, a DeepseekVLV2Config, model_type unlimited-ocr); the checkpoint reader reads language_config as the text model (model.py _text_config), but no config of it is in the model-construction corpus, so no family record is checked for it: its layers are read from the generic fields of language_config"),
    "ZayaForCausalLM": Arch("zaya", ">=0.34.0", 'zaya'),
    "Cosmos3EdgeForConditionalGeneration": Arch("cosmos3_edge", ">=0.29.0", None,
        unmapped="dense, over-included by the class scan: 0.29.0-0.34.0 cosmos3_edge.py Cosmos3EdgeTextModel subclasses nemotron_h.py NemotronHModel, but _to_nemotron_h_config gives it only full_attention and mlp layers, so it has no MoE layer"),
    "DFlashLagunaForCausalLM": Arch("laguna_dflash", ">=0.29.0", None,
        unmapped=_DRAFT_OF.format(target="LagunaForCausalLM", src="0.29.0-0.34.0 laguna_dflash.py", layer="laguna.py LagunaDecoderLayer")),
    "DeepseekOCR2ForCausalLM": Arch("deepseek_ocr2", ">=0.29.0", None,
        unmapped=_DEEPSEEK_VL2),
    "DeepseekOCRForCausalLM": Arch("deepseek_ocr", ">=0.29.0", None,
        unmapped=_DEEPSEEK_VL2),
    "DeepseekVLV2ForCausalLM": Arch("deepseek_vl2", ">=0.29.0", None,
        unmapped=_DEEPSEEK_VL2),
    "DiffusionGemmaForBlockDiffusion": Arch("diffusion_gemma", ">=0.29.0", None,
        unmapped="a block-diffusion model (0.29.0-0.34.0 diffusion_gemma.py DiffusionGemmaForConditionalGeneration) whose text model is gemma4.py Gemma4Model, MoE where its text config enables the MoE block; vLLM runs it with its own diffusion sampler and model state, which the model-construction tier does not build, so no family is checked for it"),
    "EagleDeepSeekMTPModel": Arch("deepseek_eagle", ">=0.29.0", None,
        unmapped=_DRAFT_OF.format(target="DeepseekV3ForCausalLM", src="0.29.0-0.34.0 deepseek_eagle.py EagleDeepseekV3ForCausalLM, its own DeepseekV2Model", layer="deepseek_v2.py DeepseekV2DecoderLayer")),
    "EagleLlama4ForCausalLM": Arch("llama4_eagle", ">=0.29.0", None,
        unmapped=_DRAFT_OF.format(target="Llama4ForCausalLM", src="0.29.0-0.34.0 llama4_eagle.py", layer="llama4.py Llama4DecoderLayer")),
    "Gemma4ForConditionalGeneration": Arch("gemma4_mm", ">=0.29.0", 'gemma4'),
    "Gemma4UnifiedForConditionalGeneration": Arch("gemma4_unified", ">=0.29.0", 'gemma4'),
    "KimiK25ForConditionalGeneration": Arch("kimi_k25", ">=0.29.0", 'deepseek_v3'),
    "KimiVLForConditionalGeneration": Arch("kimi_vl", ">=0.29.0", 'deepseek_v3'),
    "LongcatFlashNgramForCausalLM": Arch("longcat_flash_ngram", ">=0.29.0", 'longcat_flash'),
    "MiMoV2OmniForCausalLM": Arch("mimo_v2_omni", ">=0.29.0", 'mimo_v2_flash'),
    "MistralLarge3ForCausalLM": Arch("mistral_large_3", ">=0.29.0", None,
        unmapped="a deepseek_v2.py DeepseekV3ForCausalLM subclass with a Mistral-format weight mapper (0.29.0-0.34.0 mistral_large_3.py); its checkpoints ship params.json, which transformers_utils/configs/mistral.py adapt_config_dict turns into a deepseek_v3 config, and no config.json, so the model-construction tier (config.json only) cannot build it to check a family record"),
    "MuseSparkDSparkModel": Arch("vllm.models.muse_spark.common.dspark", ">=0.33.0", None,
        unmapped=_DRAFT_OF.format(target="MuseSparkForConditionalGeneration", src="0.33.0-0.34.0 vllm/models/muse_spark/common/dspark.py", layer="MuseSparkDSparkDecoderLayer, a MuseSparkDecoderLayer")),
    "Nemotron3_5TranscribeMTPModel": Arch("nemotron3_5_transcribe", ">=0.34.0", None,
        unmapped=_DRAFT_OF.format(target="Nemotron3_5TranscribeForConditionalGeneration", src="0.34.0 nemotron3_5_transcribe.py Nemotron3_5TranscribeMTP, a nemotron_h_mtp.py NemotronHMTP", layer="one attention-plus-MoE block")),
    "OpenPanguVLForConditionalGeneration": Arch("openpangu_vl", ">=0.29.0", None,
        unmapped="its language model is openpangu.py PanguEmbeddedForCausalLM (0.29.0-0.34.0 openpangu_vl.py, init_vllm_registered_model architectures=[\"PanguEmbeddedForCausalLM\"]), listed here for openpangu.py; " + _REMOTE_CONFIG.format(file="openpangu.py")),
    "Qwen3ASRRealtimeGeneration": Arch("qwen3_asr_realtime", ">=0.29.0", None,
        unmapped="over-included with its parent: 0.29.0-0.34.0 qwen3_asr_realtime.py Qwen3ASRRealtimeGeneration subclasses qwen3_asr.py Qwen3ASRForConditionalGeneration, whose language model is qwen3.py Qwen3ForCausalLM, dense, so it has no MoE layer"),
})


@dataclass(frozen=True)
class LmWrapper:
    """A registered class that builds, as its language model, the class its sub-config names.

    Attributes:
        module: the registry's module (``interns1``).
        engine: the modelled releases that register it so (PEP 440 specifier over vLLM versions).
        sub_config: the config attribute it hands ``init_vllm_registered_model`` as ``hf_config``
            (``config.text_config``; vLLM renames a checkpoint's ``llm_config`` to ``text_config``,
            0.29.0-0.34.0 transformers_utils/config.py ``_CONFIG_ATTRS_MAPPING``).
        offline: why the model-construction tier cannot build the published MoE checkpoints of
            it (their config class is remote code), ``None`` where it can or where no MoE
            checkpoint's config has been checked.
    """

    module: str
    engine: str
    sub_config: str = "config.text_config"
    offline: str | None = None

    def registered(self, release: str) -> bool:
        from packaging.specifiers import SpecifierSet  # imported where read, as Arch.registered

        return SpecifierSet(self.engine).contains(release)


# Listed by python -m moe_oracle.verify.model_build.registry_scan --wrappers over the vLLM
# 0.29.0-0.34.0 trees (each release that registers one builds it the same way); the classes that
# are already MoE architectures of their own (DeepSeek-VL2, DeepSeek-OCR 1/2) are in
# VLLM_MOE_ARCHITECTURES instead. tests/differential/test_release_sources.py holds the list to the scan.
SUBCONFIG_WRAPPERS: Mapping[str, LmWrapper] = MappingProxyType({
    "Blip2ForConditionalGeneration": LmWrapper("blip2", ">=0.29.0"),
    "Cohere2VisionForConditionalGeneration": LmWrapper("cohere2_vision", ">=0.29.0"),
    "Eagle2_5_VLForConditionalGeneration": LmWrapper("eagle2_5_vl", ">=0.29.0"),
    "GraniteSpeechForConditionalGeneration": LmWrapper("granite_speech", ">=0.29.0"),
    "HCXVisionV2ForCausalLM": LmWrapper("hyperclovax_vision_v2", ">=0.29.0", "text_config"),
    "InternS1ForConditionalGeneration": LmWrapper("interns1", ">=0.29.0"),
    "InternVLChatModel": LmWrapper("internvl", ">=0.29.0", offline=(
        "the published MoE checkpoints (vLLM's tests/models/registry.py names OpenGVLab/InternVL3_5-30B-A3B, a Qwen3-MoE language model, and "
        "InternVL3_5-GPT-OSS-20B-A4B-Preview, GPT-OSS, loaded with trust_remote_code=True) have model_type 'internvl_chat' (0.29.0-0.34.0 "
        "transformers_utils/config.py _AUTO_CONFIG_KWARGS_OVERRIDES), whose config class is remote code: no class in transformers 5.20.2 or "
        "vllm/transformers_utils/configs, so the model-construction tier, offline, cannot build them; the same language models under "
        "InternVLForConditionalGeneration (the -HF checkpoints, transformers' InternVLConfig) are built")),
    "InternVLForConditionalGeneration": LmWrapper("interns1", ">=0.29.0"),
    "Lfm2VlForConditionalGeneration": LmWrapper("lfm2_vl", ">=0.29.0"),
    "LightOnOCRForConditionalGeneration": LmWrapper("lightonocr", ">=0.29.0"),
    "Llama_Nemotron_Nano_VL": LmWrapper("nemotron_vl", ">=0.29.0", "config.get_text_config()"),
    "LlavaForConditionalGeneration": LmWrapper("llava", ">=0.29.0"),
    "LlavaNextForConditionalGeneration": LmWrapper("llava_next", ">=0.29.0"),
    "LlavaNextVideoForConditionalGeneration": LmWrapper("llava_next_video", ">=0.29.0"),
    "LlavaOnevisionForConditionalGeneration": LmWrapper("llava_onevision", ">=0.29.0"),
    "Mistral3ForConditionalGeneration": LmWrapper("mistral3", ">=0.29.0"),
    "Nemotron3_5TranscribeForConditionalGeneration": LmWrapper("nemotron3_5_transcribe", ">=0.34.0"),
    "NemotronH_Nano_Omni_Reasoning_V3": LmWrapper("nano_nemotron_vl", ">=0.29.0"),
    "NemotronH_Nano_VL_V2": LmWrapper("nano_nemotron_vl", ">=0.29.0"),
    "NemotronH_Omni_Reasoning_V3": LmWrapper("nano_nemotron_vl", ">=0.29.0"),
    "NemotronH_Super_Omni_Reasoning_V3": LmWrapper("nano_nemotron_vl", ">=0.29.0"),
    "OpenVLAForActionPrediction": LmWrapper("openvla", ">=0.29.0"),
    "Ovis": LmWrapper("ovis", ">=0.29.0", "config.get_text_config()"),
    "Ovis2_5": LmWrapper("ovis2_5", ">=0.29.0"),
    "Ovis2_6ForCausalLM": LmWrapper("ovis2_5", ">=0.29.0"),
    "Ovis2_6_MoeForCausalLM": LmWrapper("ovis2_5", ">=0.29.0"),
    "PaliGemmaForConditionalGeneration": LmWrapper("paligemma", ">=0.29.0"),
    "PixtralForConditionalGeneration": LmWrapper("pixtral", ">=0.29.0"),
    "SkyworkR1VChatModel": LmWrapper("skyworkr1v", ">=0.29.0"),
    "Step3VLForConditionalGeneration": LmWrapper("step3_vl", ">=0.29.0"),
    "Step3p7ForConditionalGeneration": LmWrapper("step3p7", ">=0.29.0"),
    "StepVLForConditionalGeneration": LmWrapper("step_vl", ">=0.29.0"),
    "UltravoxModel": LmWrapper("ultravox", ">=0.29.0", "config.wrapped_model_config"),
    "VoxtralForConditionalGeneration": LmWrapper("voxtral", ">=0.29.0"),
})
"""Registered classes whose language model is the class their sub-config's ``architectures`` names
(architecture -> :class:`LmWrapper`): vLLM 0.29.0-0.34.0 ``model_executor/models/<module>.py``
builds ``init_vllm_registered_model(vllm_config, hf_config=<sub_config>)`` (Cohere2-Vision and
LFM2-VL pass ``architectures=config.text_config.architectures``; Ovis, Ovis2.5
``vllm_config.with_hf_config(<sub_config>)``), and ``VllmConfig.with_hf_config`` keeps the
sub-config's ``architectures`` or, where it has none, takes transformers'
``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES[model_type]``."""


def unmodelled_architectures(release: str) -> tuple[str, ...]:
    """The MoE architectures ``release`` registers that no family record covers, sorted."""
    return tuple(a for a, d in sorted(VLLM_MOE_ARCHITECTURES.items()) if d.family is None and d.registered(release))


TRANSFORMERS_BACKEND_BUILT: Mapping[str, str] = MappingProxyType({
    "BeamForCausalLM": "BeamForCausalLM (transformers 5.20.2 models/beam)",
    "ZayaForCausalLM": "ZayaForCausalLM (transformers 5.20.2 models/zaya)",
})
"""Architectures a release before their registration builds through vLLM's Transformers backend
(transformers has the class), each read for those releases by a checkpoint fact
(``beam_vllm_config``, ``zaya_native_model``) that the model-construction tier checks."""


def architecture_notes(architecture: str | None, family: Family, release: ReaderRelease) -> tuple[str, ...]:
    """What the answer says about the architecture: unmodelled, or not registered by the release.

    >>> architecture_notes("DeepseekForCausalLM", GENERIC, ReaderRelease.of("0.33.0"))[0][:66]
    'vLLM 0.33.0 registers DeepseekForCausalLM (model file deepseek_v2)'
    """
    if architecture is None:
        return ()
    known = VLLM_MOE_ARCHITECTURES.get(architecture)
    version = release.version
    if known is None:
        if family is GENERIC:
            return (f"{architecture} is not among the MoE architectures {release.words} registers (registry.py and the model files): vLLM may refuse the model, or run it through the Transformers backend, which moe-oracle does not model",)
        # vLLM picks the model class by architectures, never by model_type (registry.py
        # inspect_model_cls): an unregistered name is refused (_raise_for_unsupported) unless its
        # Transformers backend finds the class (transformers, or auto_map with trust_remote_code).
        return (f"{architecture} is not among the MoE architectures {release.words} registers (registry.py and the model files): vLLM chooses the model class by architectures, not model_type, "
                f"so it refuses the model, or runs it through the Transformers backend, which moe-oracle does not model; the answer reads the layers as vLLM's {family.name} class (model_type {', '.join(family.model_types[:1])}) builds them",)
    if not known.registered(version):
        if architecture in TRANSFORMERS_BACKEND_BUILT:
            return (f"{release.words} does not register {architecture} (registered by vLLM {known.engine}): it builds transformers' {TRANSFORMERS_BACKEND_BUILT[architecture]} "
                    "through its Transformers backend (vllm/model_executor/models/transformers), read here as the model-construction tier checks it",)
        return (f"{release.words} does not register {architecture} (registered by vLLM {known.engine}): vLLM refuses the model",)
    if known.family is None and family is GENERIC:
        why = f"{known.unmapped}; so its layer layout, routing, activation, shared experts and MTP layers come from generic config fields" if known.unmapped else UNMODELLED_REASON
        return (f"{release.words} registers {architecture} (model file {known.module}) as a MoE architecture that moe-oracle does not model: {why}; compare with vLLM before trusting it",)
    return ()
