"""The sizes vLLM builds a MoE layer's weights with: the hidden size and the intermediate size per
partition after padding.

vLLM 0.29.0-0.34.0 (``P/routed_experts.py`` ``RoutedExperts.__init__``) selects the kernel with the
checkpoint's sizes, then calls the quantization method's ``maybe_roundup_sizes``, writes the padded
sizes into its ``FusedMoEConfig`` (``hidden_dim``, ``intermediate_size_per_partition``; the
checkpoint's stay in ``hidden_dim_unpadded`` / ``intermediate_size_per_partition_unpadded``) and
calls ``create_weights`` with them. Two steps, in this order:

1. **All2all** (``P/fused_moe_method_base.py`` ``maybe_roundup_sizes`` ->
   ``P/all2all_utils.py`` ``maybe_roundup_layer_hidden_size``): the hidden size only, and only
   when the all2all kernels run (EP with DP > 1). DeepEP high-throughput and DeepEP v2 round a
   token row up to whole 512-byte transfer atoms of the activation dtype
   (``DeepEPHTPrepareAndFinalize`` / ``DeepEPV2PrepareAndFinalize.maybe_roundup_layer_hidden_size``:
   2880 bf16 -> 3072, 2688 -> 2816); DeepEP low-latency and NIXL-EP take the smallest hidden size
   their kernels are compiled for (:data:`COMPILED_HIDDEN_SIZES`) and refuse a larger one. Every
   modelled method runs this step (ModelOpt's block-codec method, which skips it, is not modelled).
   Known before selection: the normalized field ``padded_hidden_size`` carries it, and the
   checks of ``create_weights`` read it.
2. **The method's own, by the selected backend** (:data:`MXFP4_RULES`, :data:`UNQUANTIZED_RULES`):
   the MXFP4 methods (``GptOssMxfp4MoEMethod``, ``Mxfp4MoEMethod``, Quark OCP-MX; ``Q/mxfp4.py``,
   ``Q/quark/quark_moe.py`` -> ``P/oracle/mxfp4.py``
   ``mxfp4_round_up_hidden_size_and_intermediate_size``) and, from 0.31.0, the unquantized method
   (``P/unquantized_fused_moe_method.py`` -> ``P/oracle/unquantized.py``
   ``unquantized_round_up_hidden_size_and_intermediate_size``), and the online block-FP8 method
   whatever the backend (:data:`FP8_PER_BLOCK_RULES`). Other methods (checkpoint FP8, NVFP4,
   compressed-tensors of every scheme, GPTQ/AWQ ...) add nothing. Known only after selection:
   :func:`layer_sizes` reports it for a selected kernel.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

from packaging.version import Version

from .fields import NONE
from .vocab import All2AllBackend

if TYPE_CHECKING:
    from .decision import Decision
    from .versions import EngineRelease

__all__ = [
    "COMPILED_HIDDEN_SIZES",
    "FP8_PER_BLOCK_RULES",
    "LayerSizes",
    "MXFP4_RULES",
    "PadRule",
    "PadStep",
    "UNQUANTIZED_RULES",
    "aiter_intermediate_alignment",
    "all2all_hidden_size",
    "decision_layer_sizes",
    "layer_sizes",
    "round_up",
    "rules_version",
]

COMPILED_HIDDEN_SIZES: tuple[int, ...] = (2048, 2560, 3072, 4096, 5120, 6144, 7168, 8192)
"""Hidden sizes DeepEP low-latency and NIXL-EP kernels are compiled for (vLLM 0.29.0-0.34.0
``P/prepare_finalize/deepep_ll.py`` and ``nixl_ep.py`` ``SUPPORTED_HIDDEN_SIZES``)."""

_XFER_ATOM_BYTES = 512  # 32 (warp) x 16 bytes (int4): DeepEP HT / v2 intranode copy unit
_ITEMSIZE = {"bfloat16": 2, "float16": 2, "float32": 4}
_BYTE_ROUNDED = frozenset({All2AllBackend.DEEPEP_HIGH_THROUGHPUT.value, All2AllBackend.DEEPEP_V2.value})
_LISTED = frozenset({All2AllBackend.DEEPEP_LOW_LATENCY.value, All2AllBackend.NIXL_EP.value})

_A2A_WHY = {
    All2AllBackend.DEEPEP_HIGH_THROUGHPUT.value: "DeepEP high-throughput copies token rows in whole 512-byte units",
    All2AllBackend.DEEPEP_V2.value: "DeepEP v2 copies token rows in whole 512-byte units",
    All2AllBackend.DEEPEP_LOW_LATENCY.value: "DeepEP low-latency kernels exist for hidden sizes " + ", ".join(map(str, COMPILED_HIDDEN_SIZES)),
    All2AllBackend.NIXL_EP.value: "NIXL-EP kernels exist for hidden sizes " + ", ".join(map(str, COMPILED_HIDDEN_SIZES)),
}

_A2A_REFERENCE = {
    All2AllBackend.DEEPEP_HIGH_THROUGHPUT.value: "vLLM 0.29.0-0.34.0 P/prepare_finalize/deepep_ht.py DeepEPHTPrepareAndFinalize.maybe_roundup_layer_hidden_size (via P/all2all_utils.py maybe_roundup_layer_hidden_size)",
    All2AllBackend.DEEPEP_V2.value: "vLLM 0.29.0-0.34.0 P/prepare_finalize/deepep_v2.py DeepEPV2PrepareAndFinalize.maybe_roundup_layer_hidden_size (via P/all2all_utils.py maybe_roundup_layer_hidden_size)",
    All2AllBackend.DEEPEP_LOW_LATENCY.value: "vLLM 0.29.0-0.34.0 P/prepare_finalize/deepep_ll.py DeepEPLLPrepareAndFinalize.maybe_roundup_layer_hidden_size (via P/all2all_utils.py maybe_roundup_layer_hidden_size)",
    All2AllBackend.NIXL_EP.value: "vLLM 0.29.0-0.34.0 P/prepare_finalize/nixl_ep.py NixlEPPrepareAndFinalize.maybe_roundup_layer_hidden_size (via P/all2all_utils.py maybe_roundup_layer_hidden_size)",
}


def round_up(value: int, multiple: int) -> int:
    """``value`` rounded up to a multiple of ``multiple`` (vLLM ``vllm.utils.math_utils.round_up``).

    >>> round_up(2880, 128), round_up(360, 128), round_up(2944, 256)
    (2944, 384, 3072)
    """
    return -(-value // multiple) * multiple


def all2all_hidden_size(hidden: int, dtype: str, all2all: str) -> int:
    """The hidden size after the all2all kernels' round-up (step 1 of the module docstring).

    Args:
        hidden: the checkpoint's hidden size (elements).
        dtype: the activation dtype (``bfloat16``, ``float16``, ``float32``).
        all2all: the all2all kernels in use (normalized field ``all2all``; ``none`` without them).

    Returns:
        The padded hidden size; ``hidden`` itself where nothing pads it, and for DeepEP
        low-latency / NIXL-EP above 8192, which vLLM refuses (the prepare/finalize tables do).

    >>> all2all_hidden_size(2880, "bfloat16", "deepep_high_throughput"), all2all_hidden_size(2688, "bfloat16", "deepep_v2")
    (3072, 2816)
    >>> all2all_hidden_size(2880, "bfloat16", "deepep_low_latency"), all2all_hidden_size(2880, "bfloat16", "none")
    (3072, 2880)
    """
    if all2all in _BYTE_ROUNDED:
        size = _ITEMSIZE[dtype]
        return round_up(hidden * size, _XFER_ATOM_BYTES) // size
    if all2all in _LISTED:
        return next((h for h in COMPILED_HIDDEN_SIZES if h >= hidden), hidden)
    return hidden


@dataclass(frozen=True)
class PadRule:
    """One branch of a vLLM round-up function: where it applies and what it rounds to.

    Attributes:
        id: rule id (``pad.mxfp4.trtllm``).
        backends: our backend ids the branch names (vLLM's enum members, see ``note``).
        hidden, intermediate: the multiples the hidden size and the intermediate size per
            partition are rounded up to (1: unchanged); ``intermediate`` may be a function of the
            size (AITER's unquantized alignment).
        since, until: the releases that have the branch (``until`` exclusive; ``None``: open).
        platform: only on this platform (``None``: any).
        not_gpu_arch: not on this ROCm arch.
        activations: only for these activations, and only where the method passes the layer's
            activation to the round-up (``Mxfp4MoEMethod``; the others pass none).
        note: vLLM's member names and why, for the explain view.
        reference: the upstream source.
    """

    id: str
    backends: frozenset[str] | None
    hidden: int
    intermediate: int | Callable[[int], int]
    note: str
    reference: str
    since: str | None = None
    until: str | None = None
    platform: str | None = None
    not_gpu_arch: str | None = None
    activations: frozenset[str] | None = None

    def applies(self, backend: str, platform: str, gpu_arch: str, activation: str | None, version: Version | None) -> bool:
        if self.backends is not None and backend not in self.backends:
            return False
        if self.platform is not None and platform != self.platform:
            return False
        if self.not_gpu_arch is not None and gpu_arch == self.not_gpu_arch:
            return False
        if self.activations is not None and activation not in self.activations:
            return False
        if version is not None and self.since is not None and version < Version(self.since):
            return False
        return not (version is not None and self.until is not None and version >= Version(self.until))


_M = "vLLM {} P/oracle/mxfp4.py mxfp4_round_up_hidden_size_and_intermediate_size"
_SITU_SILU = frozenset({"situ", "silu"})


def _rule(id: str, backends: tuple[str, ...] | None, hidden: int, intermediate: int | Callable[[int], int], note: str, releases: str, **kw: Any) -> PadRule:
    return PadRule(id, frozenset(backends) if backends is not None else None, hidden, intermediate, note, _M.format(releases), **kw)


MXFP4_RULES: tuple[PadRule, ...] = (
    _rule("pad.mxfp4.flashinfer_moe_ep", ("flashinfer_moe_ep_cutedsl", "flashinfer_moe_ep_mega_deep_gemm"), 1, 1, "FLASHINFER_MOE_EP_*: the megakernel takes the model's sizes", "0.32.0-0.34.0", since="0.32.0"),
    _rule("pad.mxfp4.b12x", ("b12x",), 1, 1, "B12X_MXFP4_*: b12x plans for the exact sizes", "0.29.0-0.34.0"),
    _rule("pad.mxfp4.emulation", ("emulation",), 32, 32, "EMULATION: whole OCP MX blocks (32)", "0.29.0-0.34.0"),
    _rule("pad.mxfp4.deep_gemm", ("deep_gemm",), 128, 128, "DEEPGEMM_MXFP4: DeepGEMM M/N/K alignment", "0.29.0-0.34.0"),
    _rule("pad.mxfp4.cutlass", ("vllm_cutlass",), 128, 128, "CUTLASS_MXFP4_MXFP4: 128x128 scale tiles", "0.32.0-0.34.0", since="0.32.0"),
    _rule("pad.mxfp4.marlin_xpu", ("marlin",), 128, 128, "MARLIN / BATCHED_MARLIN on XPU", "0.29.0-0.34.0", platform="xpu"),
    _rule("pad.mxfp4.marlin", ("marlin",), 256, 128, "MARLIN / BATCHED_MARLIN", "0.29.0-0.34.0"),
    _rule("pad.mxfp4.trtllm", ("flashinfer_trtllm", "flashinfer_trtllm_afp8"), 256, 128, "FLASHINFER_TRTLLM_MXFP4_BF16 / _MXFP8", "0.29.0-0.34.0"),
    _rule("pad.mxfp4.flashinfer_cutlass", ("flashinfer_cutlass", "flashinfer_cutlass_afp8"), 128, 128, "FLASHINFER_CUTLASS_MXFP4_BF16 / _MXFP8", "0.29.0-0.34.0"),
    _rule("pad.mxfp4.rocm_aiter_w4a4", ("aiter_mxfp4_mxfp4",), 256, 128, "ROCm AITER_MXFP4_MXFP4: stage 1 needs a 256-aligned hidden size", "0.32.0-0.34.0", platform="rocm", since="0.32.0"),
    _rule("pad.mxfp4.rocm_aiter_situ", ("aiter",), 128, 128, "ROCm AITER_MXFP4_BF16 with SiTU/SiLU (Kimi-K3's A16W4 kernel)", "0.29.0-0.34.0", platform="rocm", activations=_SITU_SILU),
    _rule("pad.mxfp4.rocm_triton_unfused_situ", ("triton_unfused",), 128, 128, "ROCm TRITON_UNFUSED with SiTU/SiLU before CDNA4 (matmul_ogs block_k 128)", "0.31.0-0.34.0",
          platform="rocm", not_gpu_arch="gfx950", activations=_SITU_SILU, since="0.31.0"),
    _rule("pad.mxfp4.rocm", None, 256, 256, "ROCm (AITER, Triton)", "0.29.0-0.34.0", platform="rocm"),
    _rule("pad.mxfp4.cpu", ("cpu",), 32, 32, "CPU: the AMX kernel's BLOCK_N 32", "0.29.0-0.34.0"),
    _rule("pad.mxfp4.other", None, 1, 64, "TRITON, TRITON_UNFUSED (CUDA), XPU, HUMMING", "0.29.0-0.34.0"),
)
"""``mxfp4_round_up_hidden_size_and_intermediate_size``'s branches in order (the first that
applies wins). Our backend ids name vLLM's ``Mxfp4MoeBackend`` members: ``flashinfer_trtllm`` /
``_afp8`` the TRT-LLM BF16 / MXFP8 variants, ``aiter`` AITER_MXFP4_BF16, ``vllm_cutlass``
CUTLASS_MXFP4_MXFP4, ``deep_gemm`` DEEPGEMM_MXFP4, ``marlin`` MARLIN and BATCHED_MARLIN. The
ROCm branches changed: 0.29.0-0.30.0 use 128 only for AITER_MXFP4_BF16 with SiTU/SiLU, 0.31.0 adds
TRITON_UNFUSED before CDNA4, 0.32.0 adds AITER_MXFP4_MXFP4 (hidden 256, intermediate 128);
CUTLASS_MXFP4_MXFP4 and the FlashInfer MoE-EP members exist from 0.32.0."""


def aiter_intermediate_alignment(intermediate: int) -> int:
    """AITER's CK two-stage MoE tile for the intermediate size (vLLM 0.32.0-0.34.0
    ``P/oracle/unquantized.py`` ``aiter_moe_intermediate_alignment``).

    >>> aiter_intermediate_alignment(192), aiter_intermediate_alignment(320)
    (64, 128)
    """
    return 64 if intermediate <= 192 else 128


_U = "vLLM {} P/oracle/unquantized.py unquantized_round_up_hidden_size_and_intermediate_size (P/unquantized_fused_moe_method.py maybe_roundup_sizes)"

UNQUANTIZED_RULES: tuple[PadRule, ...] = (
    PadRule("pad.unquantized.flashinfer_trtllm", frozenset({"flashinfer_trtllm"}), 1, 128, "FLASHINFER_TRTLLM", _U.format("0.31.0-0.34.0"), since="0.31.0"),
    PadRule("pad.unquantized.aiter", frozenset({"aiter"}), 1, aiter_intermediate_alignment, "AITER: CK tile 64 up to 192, else 128", _U.format("0.32.0-0.34.0"), since="0.32.0"),
)
"""The unquantized method's round-up (0.31.0+; 0.29.0-0.30.0 pad nothing beyond step 1)."""

FP8_PER_BLOCK_RULES: tuple[PadRule, ...] = (
    PadRule("pad.fp8_per_block", None, 128, 128, "Fp8PerBlockOnlineMoEMethod: whole 128x128 weight blocks",
            "vLLM 0.29.0-0.34.0 Q/online/fp8.py Fp8PerBlockOnlineMoEMethod.maybe_roundup_sizes (the all2all round-up, then both sizes to weight_block_size[0] = 128)"),
)
"""The online block-FP8 method's round-up (``--quantization fp8_per_block``), whatever the backend."""

_FP8_PER_BLOCK_METHOD = "fp8_per_block"
"""The ``quant_method`` of ``--quantization fp8_per_block`` (rules/frontends.yaml frontend.fp8_per_block.online)."""

# Quant methods whose MXFP4 layer is a method with its own round-up: GPT-OSS / generic MXFP4
# (mxfp4 -> GptOssMxfp4MoEMethod or Mxfp4MoEMethod), Quark OCP-MX, and the FP8 configs whose
# MXFP4 experts get Mxfp4MoEMethod (vLLM 0.29.0-0.34.0 Q/mxfp4.py, Q/quark/quark_moe.py), and
# ROCm's re-quantized FP8 experts (0.34.0 Q/online/mxfp4.py Mxfp4OnlineMoEMethod.maybe_roundup_sizes). A
# layer whose quant method is not known is taken as the generic one (as its selector is).
_MXFP4_PADDED_METHODS = frozenset({"mxfp4", "gpt_oss_mxfp4", "quark", "fp8", "deepseek_v4_fp8", "deepseek_v41_fp8", "fp8_requant_mxfp4", None})


@dataclass(frozen=True)
class PadStep:
    """One padding that changed a size.

    Attributes:
        rule: the rule id (``pad.all2all.deepep_high_throughput``, ``pad.mxfp4.trtllm`` ...).
        field: ``hidden_size`` or ``intermediate_size_per_partition``.
        before, after: the size before and after (elements).
        why: one line for the explain view.
        reference: the upstream source.
    """

    rule: str
    field: str
    before: int
    after: int
    why: str
    reference: str

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "field": self.field, "before": self.before, "after": self.after, "why": self.why, "reference": self.reference}


@dataclass(frozen=True)
class LayerSizes:
    """The checkpoint's sizes of one MoE layer and the ones vLLM builds its weights with.

    Attributes:
        hidden_size: the checkpoint's hidden size.
        padded_hidden_size: vLLM's ``moe_config.hidden_dim`` after ``maybe_roundup_sizes``.
        intermediate_size_per_partition: the checkpoint's intermediate size over the MoE TP size.
        padded_intermediate_size_per_partition: vLLM's after ``maybe_roundup_sizes``.
        steps: each padding that changed a size, in the order vLLM applies them.
    """

    hidden_size: int
    padded_hidden_size: int
    intermediate_size_per_partition: int
    padded_intermediate_size_per_partition: int
    steps: tuple[PadStep, ...] = ()

    @property
    def padded(self) -> bool:
        return bool(self.steps)

    def to_dict(self) -> dict[str, Any]:
        """The ``layer_sizes`` record of a plan group (``schemas/plan.schema.json``)."""
        return {
            "hidden_size": self.hidden_size,
            "padded_hidden_size": self.padded_hidden_size,
            "intermediate_size_per_partition": self.intermediate_size_per_partition,
            "padded_intermediate_size_per_partition": self.padded_intermediate_size_per_partition,
            "padding": [s.to_dict() for s in self.steps],
        }

    def text(self) -> str:
        """``hidden 2880 -> 3072 (...), intermediate per partition 360 -> 384 (...)``, or the sizes."""
        def part(name: str, field: str, before: int, after: int) -> str:
            why = "; ".join(s.why for s in self.steps if s.field == field)
            return f"{name} {before} -> {after} ({why})" if after != before else f"{name} {before}"

        return ", ".join((part("hidden", "hidden_size", self.hidden_size, self.padded_hidden_size),
                          part("intermediate per partition", "intermediate_size_per_partition", self.intermediate_size_per_partition, self.padded_intermediate_size_per_partition)))


def _method_rules(values: Mapping[str, Any]) -> tuple[tuple[PadRule, ...], bool] | None:
    """The round-up rules of the layer's method and whether it passes the activation, or ``None``
    for a method that adds nothing to step 1."""
    weight = values.get("weight_quant")
    if weight == NONE:
        return UNQUANTIZED_RULES, False
    if weight == "fp8_static_block128" and values.get("quant_method") == _FP8_PER_BLOCK_METHOD:
        return FP8_PER_BLOCK_RULES, False
    if weight == "mxfp4_static" and values.get("mxfp4_selector") in ("generic", "deepseek_v4") and values.get("quant_method") in _MXFP4_PADDED_METHODS:
        # Only Mxfp4MoEMethod (the DeepSeek-V4 selector's method) passes the layer's activation.
        return MXFP4_RULES, values.get("mxfp4_selector") == "deepseek_v4"
    return None


def layer_sizes(values: Mapping[str, Any], backend: str | None, version: Version | None) -> LayerSizes:
    """The sizes vLLM builds the layer's weights with, for the kernel of ``backend``.

    Args:
        values: the layer's normalized fields (``hidden_size``, ``padded_hidden_size``,
            ``intermediate_size_per_partition``, ``all2all``, ``weight_quant``, ``quant_method``,
            ``mxfp4_selector``, ``platform``, ``gpu_arch``, ``activation``).
        backend: our backend id of the selected kernel (``None``: none selected; only step 1).
        version: the engine release whose rules apply (``None``: every branch counts as present).
    """
    hidden = int(values["hidden_size"])
    partition = int(values["intermediate_size_per_partition"])
    steps: list[PadStep] = []
    padded_hidden = int(values.get("padded_hidden_size", hidden))
    all2all = values.get("all2all", NONE)
    if padded_hidden != hidden:
        steps.append(PadStep(f"pad.all2all.{all2all}", "hidden_size", hidden, padded_hidden, _A2A_WHY.get(all2all, f"{all2all} rounds the hidden size up"), _A2A_REFERENCE.get(all2all, "vLLM P/all2all_utils.py maybe_roundup_layer_hidden_size")))
    padded_partition = partition
    method = _method_rules(values) if backend is not None else None
    if method is not None:
        rules, passes_activation = method
        activation = values.get("activation") if passes_activation else None
        platform, arch = values.get("platform", NONE), values.get("gpu_arch", NONE)
        rule = next((r for r in rules if r.applies(backend, platform, arch, activation, version)), None)  # type: ignore[arg-type]
        if rule is not None:
            inter = rule.intermediate(partition) if callable(rule.intermediate) else rule.intermediate
            h, p = round_up(padded_hidden, rule.hidden), round_up(partition, inter)
            if h != padded_hidden:
                steps.append(PadStep(rule.id, "hidden_size", padded_hidden, h, f"{rule.note}: a multiple of {rule.hidden}", rule.reference))
            if p != partition:
                steps.append(PadStep(rule.id, "intermediate_size_per_partition", partition, p, f"{rule.note}: a multiple of {inter}", rule.reference))
            padded_hidden, padded_partition = h, p
    return LayerSizes(hidden, padded_hidden, partition, padded_partition, tuple(steps))


def rules_version(release: "EngineRelease | None") -> Version | None:
    """The release whose rules apply: the release itself, or for an unmodelled release at or after
    the oldest modelled one the release standing in for it (as
    :meth:`moe_oracle.core.catalog.Catalog.for_release` chooses the tables' view)."""
    if release is None:
        return None
    version = release.parsed
    if not release.modelled and Version(release.stand_in) <= version:
        version = Version(release.stand_in)
    return version


def decision_layer_sizes(decision: "Decision") -> LayerSizes | None:
    """The sizes vLLM builds the layer of ``decision`` with (``None``: no kernel selected, so
    vLLM builds nothing)."""
    if decision.winner is None:
        return None
    backend = decision.ranking.entry(decision.winner).backend
    return layer_sizes(decision.normalized.values, backend, rules_version(decision.release))
