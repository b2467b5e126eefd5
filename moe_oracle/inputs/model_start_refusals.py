"""Parallel configurations a model class refuses while vLLM builds it (start-up refusals).

Some model classes raise ``NotImplementedError`` in their constructor for a parallel setting their
authors have not validated, and many MoE blocks raise ``ValueError`` when the tensor-parallel size
exceeds the expert count, so vLLM fails to start before any MoE layer selects a kernel. Each
:data:`MODEL_START_REFUSALS` entry is one such check, with vLLM's own message and its source;
``sequence_parallel_moe`` is vLLM's ``ParallelConfig.use_sequence_parallel_moe``, whose all2all
backends per release come from ``engine_facts/vllm-release-values.yaml``
(``tools/vllm_release_values.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from ..core.config import ParallelConfig
from ..core.errors import InputIssue
from ..core.refusals import FLAG, Origin, where_given
from .release_facts import release_values

__all__ = ["ModelStartRefusal", "MODEL_START_REFUSALS", "TP_EXCEEDS_EXPERTS", "WHEN", "blame_from", "model_start_refusal", "sequence_parallel_moe"]


WHEN = ("eplb", "sequence_parallel_moe", "tp_exceeds_experts")
"""The settings a check is about."""

TP_EXCEEDS_EXPERTS = "is greater than the number of experts"
"""The constant part of vLLM's ``tp_exceeds_experts`` message (how a refusal is recognised)."""


@dataclass(frozen=True)
class ModelStartRefusal:
    """One constructor check of a model class.

    Attributes:
        architectures: the ``architectures[0]`` names (vLLM registry keys) whose class checks it.
        releases: the vLLM releases whose class checks it (a PEP 440 specifier set).
        when: ``eplb`` (``--enable-eplb``), ``sequence_parallel_moe`` (:func:`sequence_parallel_moe`)
            or ``tp_exceeds_experts`` (the MoE block's ``tp_size > num_experts``; only where the
            model has MoE layers, whose block makes the check).
        message: vLLM's message (the exception's text; for ``tp_exceeds_experts`` a
            :meth:`str.format` template of ``tp_size`` and ``num_experts``).
        source: where the check is, with the releases read.
        platforms: the platforms (``cuda``, ``rocm``) whose model class checks it; empty: every one.
        files: the files under ``vllm/`` that hold the check (read by the differential source
            test); empty: the architecture's model package.
    """

    architectures: tuple[str, ...]
    releases: str
    when: str
    message: str
    source: str
    platforms: tuple[str, ...] = ()
    files: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.when not in WHEN:
            raise ValueError(f"ModelStartRefusal.when: {self.when!r}; allowed: {', '.join(WHEN)}")
        SpecifierSet(self.releases)


_QWEN4_EXP = ("Qwen4ExpForCausalLM", "Qwen4ExpForConditionalGeneration")
_QWEN4_EXP_MESSAGE = "Qwen4Exp HC does not support sequence-parallel MoE"
_QWEN4_EXP_SOURCE = ("vLLM 0.29.0-0.32.0 vllm/models/qwen4_exp/{nvidia,amd}/model.py Qwen4ExpSparseMoeBlock and "
                     "Qwen4ExpDecoderLayer __init__; 0.32.0 only in amd/ (the ROCm classes, qwen4_exp/__init__.py), "
                     "0.33.0 in neither")
_BEAM = "vLLM 0.33.0-0.34.0 vllm/models/beam/nvidia/model.py (0.34.0 also amd/model.py) BeamForCausalLM.__init__"

_TP_MESSAGE = "Tensor parallel size {tp_size} " + TP_EXCEEDS_EXPERTS + " {num_experts}."
_TP_ALL = ">=0.29.0"
_TP_EXPERTS: tuple[tuple[tuple[str, ...], str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    (("Qwen3MoeForCausalLM", "Qwen3VLMoeForConditionalGeneration", "Qwen3OmniMoeForConditionalGeneration"), _TP_ALL,
     "qwen3_moe.py Qwen3MoeSparseMoeBlock.__init__ (config.num_experts; qwen3_vl_moe.py and qwen3_omni_moe_thinker.py build qwen3_moe.py's Qwen3MoeModel)", (), ("model_executor/models/qwen3_moe.py",)),
    (("MellumForCausalLM",), ">=0.29.0,<0.32.0", "mellum.py MellumDecoderLayer builds qwen3_moe.py Qwen3MoeSparseMoeBlock (config.num_experts)", (), ("model_executor/models/qwen3_moe.py",)),
    (("Qwen3NextForCausalLM", "Qwen3NextMTP", "Qwen3_5MoeForCausalLM", "Qwen3_5MoeForConditionalGeneration", "Qwen3_5MoeMTP",
      "InternS2PreviewForConditionalGeneration", "Qwen4ExpForCausalLM", "Qwen4ExpForConditionalGeneration", "Qwen4ExpMTP"), _TP_ALL,
     "qwen3_next.py Qwen3NextSparseMoeBlock.__init__ (config.num_experts; built by qwen3_5.py, interns2_preview.py's Qwen3_5Moe subclass, "
     "and vllm/models/qwen4_exp/{nvidia,amd}/model.py Qwen4ExpSparseMoeBlock, a subclass)", (), ("model_executor/models/qwen3_next.py",)),
    (("Qwen2MoeForCausalLM",), _TP_ALL, "qwen2_moe.py Qwen2MoeSparseMoeBlock.__init__ (config.num_experts)", (), ("model_executor/models/qwen2_moe.py",)),
    (("MiniMaxM2ForCausalLM",), _TP_ALL, "minimax_m2.py MiniMaxM2MoE.__init__ (config.num_local_experts)", (), ("model_executor/models/minimax_m2.py",)),
    (("MiniMaxM3SparseForCausalLM", "MiniMaxM3SparseForConditionalGeneration", "MiniMaxM3MTP"), _TP_ALL,
     "vllm/models/minimax_m3/{nvidia,amd}/model.py MoE block __init__ (config.num_local_experts)", (), ("models/minimax_m3/nvidia/model.py", "models/minimax_m3/amd/model.py")),
    (("Cohere2MoeForCausalLM",), _TP_ALL, "cohere2_moe.py Cohere2MoeSparseMoeBlock.__init__ (config.num_experts)", (), ("model_executor/models/cohere2_moe.py",)),
    (("Ernie4_5_MoeForCausalLM",), _TP_ALL, "ernie45_moe.py Ernie4_5_MoeMoE.__init__ (config.moe_num_experts)", (), ("model_executor/models/ernie45_moe.py",)),
    (("ExaoneMoeForCausalLM", "ExaoneMoEForCausalLM"), _TP_ALL, "exaone_moe.py ExaoneMoe.__init__ (config.num_experts)", (), ("model_executor/models/exaone_moe.py",)),
    (("HYV3ForCausalLM",), _TP_ALL, "hy_v3.py HYV3MoEFused.__init__ (config.num_experts)", (), ("model_executor/models/hy_v3.py",)),
    (("HYV4ForCausalLM", "HYV4MTPModel"), _TP_ALL, "vllm/models/hy_v4/nvidia/moe.py HYV4MoEFused.__init__ (config.num_experts; amd/model.py builds it too)", (), ("models/hy_v4/nvidia/moe.py",)),
    (("LagunaForCausalLM",), _TP_ALL, "laguna.py LagunaMoE.__init__ (config.num_experts)", (), ("model_executor/models/laguna.py",)),
    (("Lfm2MoeForCausalLM",), _TP_ALL, "lfm2_moe.py Lfm2MoeSparseMoeBlock.__init__ (config.num_experts)", (), ("model_executor/models/lfm2_moe.py",)),
    (("MiMoV2FlashForCausalLM", "MiMoV2ForCausalLM", "MiMoV2OmniForCausalLM"), _TP_ALL,
     "mimo_v2.py MiMoV2MoE.__init__ (config.n_routed_experts; mimo_v2_omni.py builds MiMoV2FlashForCausalLM)", (), ("model_executor/models/mimo_v2.py",)),
    (("Step3TextForCausalLM",), _TP_ALL, "step3_text.py FusedMoEBlock.__init__ (config.moe_num_experts)", (), ("model_executor/models/step3_text.py",)),
    (("Step3p5ForCausalLM",), _TP_ALL, "step3p5.py FusedMoEBlock.__init__ (config.moe_num_experts)", (), ("model_executor/models/step3p5.py",)),
    (("Step5ForCausalLM", "Step5ForConditionalGeneration"), ">=0.33.0",
     "vllm/models/step5/nvidia/model.py Step5MoE.__init__ (config.moe_num_experts; the ROCm classes, amd/model.py, have no such check)", ("cuda", "xpu", "cpu", "tpu"), ("models/step5/nvidia/model.py",)),
)
"""Architectures whose MoE block raises ``ValueError(_TP_MESSAGE)`` when the tensor-parallel size
exceeds the expert count (vLLM 0.29.0-0.34.0 vllm/model_executor/models/<file>, the same check in
every release that registers the architecture), with the source, the platforms (empty: every one)
and the files that hold the check.
Not listed (no family record, so the expert count they compare is not read from their config keys):
alice_ai.py, ernie45_vl_moe.py (``max_moe_num_experts``), interns1_pro.py, interns2_mobius.py,
k2_horizon.py."""

MODEL_START_REFUSALS: tuple[ModelStartRefusal, ...] = (
    ModelStartRefusal(("BeamForCausalLM",), ">=0.33.0", "eplb", "Beam has not been validated with EPLB; run without --enable-eplb.", _BEAM),
    ModelStartRefusal(("BeamForCausalLM",), ">=0.33.0", "sequence_parallel_moe",
                      "Beam has not been validated with sequence-parallel MoE (data parallelism with expert parallelism).", _BEAM),
    ModelStartRefusal(_QWEN4_EXP, ">=0.29.0,<0.32.0", "sequence_parallel_moe", _QWEN4_EXP_MESSAGE, _QWEN4_EXP_SOURCE),
    ModelStartRefusal(_QWEN4_EXP, "==0.32.0", "sequence_parallel_moe", _QWEN4_EXP_MESSAGE, _QWEN4_EXP_SOURCE, ("rocm",)),
    *(ModelStartRefusal(archs, releases, "tp_exceeds_experts", _TP_MESSAGE, f"vLLM 0.29.0-0.34.0 {source}", platforms, files) for archs, releases, source, platforms, files in _TP_EXPERTS),
)
"""Known constructor refusals of the architectures we map to a family (those the
model-construction tier builds; it compares each with our plan's refusal)."""


def sequence_parallel_moe(parallel: ParallelConfig, release: str) -> bool:
    """vLLM ``release``'s ``ParallelConfig.use_sequence_parallel_moe`` for ``parallel``: expert
    parallelism, TP > 1, DP > 1 and an all2all backend of the release's list.

    Raises:
        LookupError: ``release`` is not a modelled release.
    """
    backends = release_values(release).get("sequence_parallel_moe_all2all", ())
    return parallel.use_ep and parallel.tp_size > 1 and parallel.dp_size > 1 and str(getattr(parallel.all2all_backend, "value", parallel.all2all_backend)) in backends


_BLAMED_FIELDS = (("eplb", "parallel.enable_eplb"), ("sequence_parallel_moe", "parallel.use_ep"), ("tp_exceeds_experts", "parallel.tp_size"))


def blame_from(origins: Mapping[str, Origin]) -> dict[str, tuple[str, str | None]]:
    """:func:`model_start_refusal`'s ``blame`` from the deployment fields' origins
    (:func:`moe_oracle.inputs.deployment.origins_of`; a field absent there counts as a flag)."""
    return {when: (where_given(f, origins.get(f, FLAG)), origins.get(f, FLAG).file) for when, f in _BLAMED_FIELDS}


def model_start_refusal(architecture: str | None, parallel: ParallelConfig, release: str, platform: str, blame: Mapping[str, tuple[str, str | None]],
                        num_experts: int | None = None) -> InputIssue | None:
    """The refusal of the first :data:`MODEL_START_REFUSALS` check ``architecture`` fails under
    ``parallel`` in vLLM ``release`` on ``platform`` (``cuda``, ``rocm`` ...), else ``None``. ``blame[when]``: (the input that turned the
    check's setting on, as :func:`moe_oracle.core.refusals.where_given` names it; its file), for
    each of :data:`WHEN`. ``num_experts``: the routed experts of the model's MoE layers as the
    model class reads them (``None``: no MoE layer, so no MoE block checks ``tp_exceeds_experts``).

    >>> model_start_refusal("Qwen3MoeForCausalLM", ParallelConfig(tp_size=256), "0.34.0", "cuda", blame_from({}), num_experts=128).path
    '--tp'
    """
    for check in MODEL_START_REFUSALS:
        if architecture not in check.architectures or Version(release) not in SpecifierSet(check.releases) or (check.platforms and platform not in check.platforms):
            continue
        message, value, allowed = check.message, True, None
        if check.when == "tp_exceeds_experts":
            hit = num_experts is not None and parallel.tp_size > num_experts
            message, value, allowed = message.format(tp_size=parallel.tp_size, num_experts=num_experts), parallel.tp_size, {"type": "integer", "maximum": num_experts}
        else:
            hit = parallel.enable_eplb if check.when == "eplb" else sequence_parallel_moe(parallel, release)
        if hit:
            where, file = blame[check.when]
            return InputIssue(where, f"vLLM {release} refuses this model at start: \"{message}\" ({check.source})", value, allowed, file, keyword="engine_refuses")
    return None
