"""Parallel configurations a model class refuses while vLLM builds it (start-up refusals).

Some model classes raise ``NotImplementedError`` in their constructor for a parallel setting their
authors have not validated, so vLLM fails to start before any MoE layer selects a kernel. Each
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

__all__ = ["ModelStartRefusal", "MODEL_START_REFUSALS", "blame_from", "model_start_refusal", "sequence_parallel_moe"]


@dataclass(frozen=True)
class ModelStartRefusal:
    """One constructor check of a model class.

    Attributes:
        architectures: the ``architectures[0]`` names (vLLM registry keys) whose class checks it.
        releases: the vLLM releases whose class checks it (a PEP 440 specifier set).
        when: ``eplb`` (``--enable-eplb``) or ``sequence_parallel_moe`` (:func:`sequence_parallel_moe`).
        message: vLLM's message (the ``NotImplementedError`` text).
        source: where the check is, with the releases read.
        platforms: the platforms (``cuda``, ``rocm``) whose model class checks it; empty: every one.
    """

    architectures: tuple[str, ...]
    releases: str
    when: str
    message: str
    source: str
    platforms: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.when not in ("eplb", "sequence_parallel_moe"):
            raise ValueError(f"ModelStartRefusal.when: {self.when!r}; allowed: eplb, sequence_parallel_moe")
        SpecifierSet(self.releases)


_QWEN4_EXP = ("Qwen4ExpForCausalLM", "Qwen4ExpForConditionalGeneration")
_QWEN4_EXP_MESSAGE = "Qwen4Exp HC does not support sequence-parallel MoE"
_QWEN4_EXP_SOURCE = ("vLLM 0.29.0-0.32.0 vllm/models/qwen4_exp/{nvidia,amd}/model.py Qwen4ExpSparseMoeBlock and "
                     "Qwen4ExpDecoderLayer __init__; 0.32.0 only in amd/ (the ROCm classes, qwen4_exp/__init__.py), "
                     "0.33.0 in neither")
_BEAM = "vLLM 0.33.0-0.34.0 vllm/models/beam/nvidia/model.py (0.34.0 also amd/model.py) BeamForCausalLM.__init__"

MODEL_START_REFUSALS: tuple[ModelStartRefusal, ...] = (
    ModelStartRefusal(("BeamForCausalLM",), ">=0.33.0", "eplb", "Beam has not been validated with EPLB; run without --enable-eplb.", _BEAM),
    ModelStartRefusal(("BeamForCausalLM",), ">=0.33.0", "sequence_parallel_moe",
                      "Beam has not been validated with sequence-parallel MoE (data parallelism with expert parallelism).", _BEAM),
    ModelStartRefusal(_QWEN4_EXP, ">=0.29.0,<0.32.0", "sequence_parallel_moe", _QWEN4_EXP_MESSAGE, _QWEN4_EXP_SOURCE),
    ModelStartRefusal(_QWEN4_EXP, "==0.32.0", "sequence_parallel_moe", _QWEN4_EXP_MESSAGE, _QWEN4_EXP_SOURCE, ("rocm",)),
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


_BLAMED_FIELDS = (("eplb", "parallel.enable_eplb"), ("sequence_parallel_moe", "parallel.use_ep"))


def blame_from(origins: Mapping[str, Origin]) -> dict[str, tuple[str, str | None]]:
    """:func:`model_start_refusal`'s ``blame`` from the deployment fields' origins
    (:func:`moe_oracle.inputs.deployment.origins_of`; a field absent there counts as a flag)."""
    return {when: (where_given(f, origins.get(f, FLAG)), origins.get(f, FLAG).file) for when, f in _BLAMED_FIELDS}


def model_start_refusal(architecture: str | None, parallel: ParallelConfig, release: str, platform: str, blame: Mapping[str, tuple[str, str | None]]) -> InputIssue | None:
    """The refusal of the first :data:`MODEL_START_REFUSALS` check ``architecture`` fails under
    ``parallel`` in vLLM ``release`` on ``platform`` (``cuda``, ``rocm`` ...), else ``None``. ``blame[when]``: (the input that turned the
    check's setting on, as :func:`moe_oracle.core.refusals.where_given` names it; its file), for
    ``eplb`` and ``sequence_parallel_moe``."""
    for check in MODEL_START_REFUSALS:
        if architecture not in check.architectures or Version(release) not in SpecifierSet(check.releases) or (check.platforms and platform not in check.platforms):
            continue
        hit = parallel.enable_eplb if check.when == "eplb" else sequence_parallel_moe(parallel, release)
        if hit:
            where, file = blame[check.when]
            return InputIssue(where, f"vLLM {release} refuses this model at start: \"{check.message}\" ({check.source})", True, None, file, keyword="engine_refuses")
    return None
