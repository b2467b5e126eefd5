"""Which model classes hand sequence parallelism to their MoE layer, and the door's derivation.

vLLM builds a MoE layer's ``FusedMoEParallelConfig`` with ``sp_size = tp_size`` when the model
class passes ``is_sequence_parallel=True`` (0.29.0-0.34.0 P/layer.py ``make_parallel_config``);
``FusedMoEFactory`` defaults it to ``False``. The classes that pass it pass
``ParallelConfig.use_sequence_parallel_moe`` (vllm/config/parallel.py: expert parallelism, TP > 1,
DP > 1 and an all2all backend of the release's list, ``engine_facts/vllm-release-values.yaml``
``sequence_parallel_moe_all2all``). It is a fact about each architecture's model file, read here for
the architectures listed; an architecture not listed is not known (``None``: the answer abstains on
the kernels that read it and says so), never guessed.

Selection reads it in one place: ``TrtLlmFp8ExpertsBase._supports_parallel_config`` refuses it, and
``TrtLlmFp8ExpertsMonolithic`` inherits that check while ``TrtLlmFp8ExpertsModular`` overrides it
without it (0.29.0-0.34.0 P/experts/trtllm_fp8_moe.py; ``kernels/flashinfer_trtllm.yaml``). Outside
selection, the LoRA MoE wrapper asserts it is off under EP (vllm/lora/layers/fused_moe.py
``_ep_check``), expert substitution (0.33.0+) refuses it (it refuses EP already), and the MoE runner
skips its TP all-reduces under it (P/runner/moe_runner.py). The naive DP/EP
prepare/finalize and DeepEP v2 receive it as an argument (P/all2all_utils.py): the class is the same.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from ..core.config import MoEConfig, ParallelConfig
from .model_start_refusals import sequence_parallel_moe

__all__ = ["SEQUENCE_PARALLEL_CLASSES", "SequenceParallelClass", "model_passes_sequence_parallel", "model_sequence_parallel", "parallel_with_sequence_parallel", "with_sequence_parallel"]


@dataclass(frozen=True)
class SequenceParallelClass:
    """What one model file's MoE block passes as ``is_sequence_parallel``.

    Attributes:
        architectures: the registered architectures whose MoE layers that block builds.
        releases: PEP 440 specifier over the vLLM releases this holds for.
        passes: ``True``: it passes ``use_sequence_parallel_moe``; ``False``: it passes nothing
            (the factory's default ``False``).
        unless_lora: it passes ``False`` when LoRA is configured (gpt_oss.py:
            ``use_sequence_parallel_moe and lora_config is None``).
        source: the vLLM file and class it was read from.
        platforms: the platforms whose model file was read (vllm/models/<model>/<platform>/ holds
            one per platform); empty: one file for every platform.
    """

    architectures: tuple[str, ...]
    releases: str
    passes: bool
    source: str
    unless_lora: bool = False
    platforms: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        SpecifierSet(self.releases)  # a malformed specifier fails at import, naming itself
        if self.unless_lora and not self.passes:
            raise ValueError(f"SequenceParallelClass {self.architectures}: unless_lora needs passes=True")


_ALL = ">=0.29.0,<0.35.0"

SEQUENCE_PARALLEL_CLASSES: tuple[SequenceParallelClass, ...] = (
    SequenceParallelClass(("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "MistralLarge3ForCausalLM", "DeepSeekMTPModel"), _ALL, True,
                          "vLLM 0.29.0-0.34.0 vllm/model_executor/models/deepseek_v2.py DeepseekV2MoE (is_sequence_parallel=parallel_config.use_sequence_parallel_moe; "
                          "MistralLarge3ForCausalLM subclasses DeepseekV3ForCausalLM, deepseek_mtp.py builds DeepseekV2DecoderLayer)"),
    SequenceParallelClass(("Qwen3MoeForCausalLM",), _ALL, True, "vLLM 0.29.0-0.34.0 vllm/model_executor/models/qwen3_moe.py Qwen3MoeSparseMoeBlock"),
    SequenceParallelClass(("Qwen3NextForCausalLM",), _ALL, True, "vLLM 0.29.0-0.34.0 vllm/model_executor/models/qwen3_next.py Qwen3NextSparseMoeBlock"),
    SequenceParallelClass(("Llama4ForCausalLM",), _ALL, True, "vLLM 0.29.0-0.34.0 vllm/model_executor/models/llama4.py Llama4MoE"),
    SequenceParallelClass(("GptOssForCausalLM",), _ALL, True, "vLLM 0.29.0-0.34.0 vllm/model_executor/models/gpt_oss.py MLPBlock (use_sequence_parallel_moe and lora_config is None)", unless_lora=True),
    SequenceParallelClass(("AXK1ForCausalLM",), _ALL, True, "vLLM 0.29.0-0.34.0 vllm/model_executor/models/AXK1.py AXK1MoE"),
    SequenceParallelClass(("InternS1ProForConditionalGeneration",), _ALL, True, "vLLM 0.29.0-0.34.0 vllm/model_executor/models/interns1_pro.py InternS1ProMoeSparseMoeBlock"),
    SequenceParallelClass(("K2HorizonForCausalLM",), ">=0.30.0,<0.35.0", True, "vLLM 0.30.0-0.34.0 vllm/model_executor/models/k2_horizon.py K2HorizonSparseMoeBlock"),
    SequenceParallelClass(("MiMoV2FlashForCausalLM", "MiMoV2ForCausalLM"), _ALL, True, "vLLM 0.29.0-0.34.0 vllm/model_executor/models/mimo_v2.py MiMoV2MoE"),
    SequenceParallelClass(("NemotronHForCausalLM", "NemotronHPuzzleForCausalLM"), _ALL, True, "vLLM 0.29.0-0.34.0 vllm/model_executor/models/nemotron_h.py NemotronHMoE"),
    SequenceParallelClass(("PanguProMoEV2ForCausalLM", "PanguUltraMoEForCausalLM"), _ALL, True, "vLLM 0.29.0-0.34.0 vllm/model_executor/models/openpangu.py OpenPanguMoE"),
    SequenceParallelClass(("DeepseekV32ForCausalLM",), _ALL, True, "vLLM 0.29.0-0.34.0 vllm/models/deepseek_v32/nvidia/model.py DeepseekV32DecoderLayer builds deepseek_v2.py DeepseekV2MoE", platforms=("cuda",)),
    SequenceParallelClass(("MixtralForCausalLM",), _ALL, False, "vLLM 0.29.0-0.34.0 vllm/model_executor/models/mixtral.py MixtralMoE (FusedMoEFactory without is_sequence_parallel)"),
    SequenceParallelClass(("Glm4MoeForCausalLM",), _ALL, False, "vLLM 0.29.0-0.34.0 vllm/model_executor/models/glm4_moe.py Glm4MoE (FusedMoEFactory without is_sequence_parallel)"),
)
"""The architectures read so far. Checked against every release's model files by
tests/differential/test_release_sources.py."""


def model_passes_sequence_parallel(architecture: str | None, release: str, lora: bool = False, platform: str | None = None) -> bool | None:
    """Whether ``architecture``'s model class in vLLM ``release`` on ``platform`` (``cuda`` ...)
    passes ``use_sequence_parallel_moe`` as its MoE layer's ``is_sequence_parallel`` (``None``: not
    read, no architecture, or a per-platform file read for other platforms).

    >>> model_passes_sequence_parallel("DeepseekV3ForCausalLM", "0.34.0"), model_passes_sequence_parallel("MixtralForCausalLM", "0.34.0")
    (True, False)
    >>> model_passes_sequence_parallel("GptOssForCausalLM", "0.34.0", lora=True), model_passes_sequence_parallel("Unread", "0.34.0")
    (False, None)
    """
    if architecture is None:
        return None
    for entry in SEQUENCE_PARALLEL_CLASSES:
        if architecture in entry.architectures and Version(release) in SpecifierSet(entry.releases):
            if entry.platforms and platform not in entry.platforms:
                return None
            return entry.passes and not (entry.unless_lora and lora)
    return None


def model_sequence_parallel(architecture: str | None, parallel: ParallelConfig, release: str, lora: bool = False, platform: str | None = None) -> bool | None:
    """The ``is_sequence_parallel`` vLLM ``release``'s model class for ``architecture`` passes to its
    MoE layers under ``parallel``: false where ``use_sequence_parallel_moe`` does not hold (whatever
    the class), else what the class passes (``None``: a class not read).

    Raises:
        LookupError: ``release`` is not a modelled release.
    """
    if not sequence_parallel_moe(parallel, release):
        return False
    return model_passes_sequence_parallel(architecture, release, lora, platform)


def parallel_with_sequence_parallel(parallel: ParallelConfig, architecture: str | None, release: str, lora: bool = False, platform: str | None = None) -> tuple[ParallelConfig, str | None]:
    """``parallel`` with ``sequence_parallel`` derived (:func:`model_sequence_parallel`) where it is
    ``None``, and a note when it stays unknown though vLLM's ``use_sequence_parallel_moe`` holds (an
    architecture not read, or none given). A value already set is kept.

    Raises:
        LookupError: ``release`` is not a modelled release.
    """
    if parallel.sequence_parallel is not None:
        return parallel, None
    value = model_sequence_parallel(architecture, parallel, release, lora, platform)
    if value is None:
        who = f"the model class of {architecture}" if architecture else "the model class (no architecture given)"
        return parallel, (f"sequence-parallel MoE: vLLM {release}'s use_sequence_parallel_moe holds (EP, TP > 1, DP > 1, all2all {parallel.all2all_backend.value}), "
                          f"but whether {who} passes it to its MoE layers has not been read; kernels that refuse it (TrtLlmFp8ExpertsMonolithic) are answered with an assumption")
    return replace(parallel, sequence_parallel=value), None


def with_sequence_parallel(config: MoEConfig, architecture: str | None, release: str) -> tuple[MoEConfig, str | None]:
    """``config`` with ``parallel.sequence_parallel`` derived as :func:`parallel_with_sequence_parallel`
    derives it (``config.lora`` decides the classes that drop it under LoRA)."""
    parallel, note = parallel_with_sequence_parallel(config.parallel, architecture, release, config.lora, config.device.platform.value)
    return (config if parallel is config.parallel else replace(config, parallel=parallel)), note
