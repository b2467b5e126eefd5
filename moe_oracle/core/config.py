"""The frozen input record: one MoE layer on one device under one deployment.

:class:`MoEConfig` holds every dimension selection depends on. Values are
validated and coerced in ``__post_init__`` (strings to enums), so a bad value
fails at construction with a :class:`~moe_oracle.core.errors.ConfigError` naming the
field, the value and what is allowed. Derived quantities (EP size, intermediate
size per partition, activation format) are computed by
:mod:`moe_oracle.core.normalize`, never stored twice.
"""

from __future__ import annotations

import enum
import operator
from dataclasses import dataclass, field, fields, replace
from typing import Any, Iterable

from .errors import ConfigError, InputIssue
from .names import ascii_lower
from .quant import UNQUANTIZED, QuantScheme
from .vocab import Activation, All2AllBackend, DType, Platform, RoutingMethod, Source

__all__ = ["ACT_ORDERS", "CPU_GROUPED_TOPK_SOURCE", "EXPERT_PLACEMENTS", "GROUPED_TOPK_SOURCE", "VALID_GROUPING_SOURCE", "Device", "MoEConfig", "ParallelConfig", "Provenance", "grouping_problems", "router_groups"]

ACT_ORDERS: tuple[str, ...] = ("none", "group", "weight", "static", "dynamic")
"""Activation orderings of a GPTQ-style checkpoint (compressed-tensors ``ActivationOrdering`` and ``none``)."""

EXPERT_PLACEMENTS: tuple[str, ...] = ("linear", "round_robin")
"""Expert placement strategies (vLLM 0.29.0-0.34.0 vllm/config/parallel.py ``ExpertPlacementStrategy``,
``--expert-placement-strategy``; ``linear`` is the default)."""


def _coerce_enum(owner: object, name: str, enum_cls: type[enum.Enum], *, optional: bool = False, path: str = "") -> None:
    value = getattr(owner, name)
    if value is None and optional:
        return
    if isinstance(value, enum_cls):
        return
    allowed = [m.value for m in enum_cls]
    if isinstance(value, str):
        try:
            object.__setattr__(owner, name, enum_cls(value))
            return
        except ValueError:
            pass
    raise ConfigError([InputIssue(f"$.{path}{name}", f"not a valid {enum_cls.__name__}", value, allowed)])


def _integer(value: Any) -> int | None:
    """``value`` as a Python ``int`` when it is an integer (``int``, a numpy integer, a 0-d integer
    array or tensor: whatever ``operator.index`` takes), else ``None``. Booleans, floats and
    arrays of more than one element are not integers here."""
    if isinstance(value, bool) or "bool" in str(getattr(value, "dtype", "")):
        return None
    if isinstance(value, int):
        return int(value)  # an int subclass (IntEnum) stored as the int it is
    if tuple(getattr(value, "shape", ())) != ():  # operator.index takes a 1-element tensor too
        return None
    try:
        return operator.index(value)
    except TypeError:
        return None


def _check_int(owner: object, name: str, *, minimum: int, optional: bool = False, path: str = "") -> None:
    """Refuse a non-integer or out-of-range ``owner.name``; store an integer-like value as a Python ``int``
    (so equality, hashing and JSON are those of the int)."""
    value = getattr(owner, name)
    if value is None and optional:
        return
    number = _integer(value)
    if number is None:
        raise ConfigError([InputIssue(f"$.{path}{name}", "must be an integer", value, {"type": "integer", "minimum": minimum})])
    object.__setattr__(owner, name, number)
    if number < minimum:
        raise ConfigError([InputIssue(f"$.{path}{name}", f"must be >= {minimum}", number, {"minimum": minimum})])
    if number > 2**40:
        raise ConfigError([InputIssue(f"$.{path}{name}", "is implausibly large (> 2**40)", number, {"maximum": 2**40})])


def _check_bool(owner: object, name: str, path: str = "") -> None:
    value = getattr(owner, name)
    if not isinstance(value, bool):
        raise ConfigError([InputIssue(f"$.{path}{name}", "must be true or false", value, [True, False])])


def _check_float(owner: object, name: str, *, optional: bool = True) -> None:
    value = getattr(owner, name)
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value in (float("inf"), float("-inf")):
        raise ConfigError([InputIssue(f"$.{name}", "must be a finite number", value, {"type": "number"})])
    object.__setattr__(owner, name, float(value))


def _check_block(owner: object) -> None:
    value = getattr(owner, "weight_block_size")
    if value is None:
        return
    if isinstance(value, list):
        value = tuple(value)
    if isinstance(value, tuple):
        value = tuple(_integer(v) for v in value)
    ok = isinstance(value, tuple) and len(value) == 2 and all(v is not None and 1 <= v <= 2**20 for v in value)
    if not ok:
        raise ConfigError([InputIssue("$.weight_block_size", "must be [block_n, block_k], two positive integers", getattr(owner, "weight_block_size"), {"type": "array", "items": "integer >= 1", "length": 2})])
    object.__setattr__(owner, "weight_block_size", value)


GROUPED_TOPK_SOURCE = "vLLM 0.29.0-0.34.0 model_executor/layers/fused_moe/router/grouped_topk_router.py grouped_topk"
"""Where the grouped top-k rule comes from: ``scores.view(num_token, num_expert_group, -1)`` and
``torch.topk(group_scores, k=topk_group)`` over the groups; and vLLM's routing method is
DeepSeekV3 only with ``num_expert_group > 0`` (fused_moe/config.py ``get_routing_method_type``)."""

VALID_GROUPING_SOURCE = ("vLLM 0.29.0-0.34.0 model_executor/layers/fused_moe/router/grouped_topk_router.py "
                         "GroupedTopKRouter._compute_routing valid_grouping (0.29.0-0.30.0 lines 296-304, 0.31.0-0.33.0 298-306, 0.34.0 314-322)")
"""Where vLLM's router routes a grouping it cannot reshape ungrouped: ``valid_grouping()`` is
false unless ``num_experts > num_expert_group`` and ``num_experts % num_expert_group == 0``, and
then the router calls ``fused_topk`` (``fused_topk_bias`` with a correction bias) instead of the
grouped top-k, at every token, without a warning. The modular kernels route through it on CUDA,
ROCm (AITER's grouped top-k too) and XPU; CPU has its own grouped top-k (:data:`CPU_GROUPED_TOPK_SOURCE`),
and a monolithic kernel routes inside itself (FlashInfer TRT-LLM: ``constraint.trtllm_groups_divide``)."""

CPU_GROUPED_TOPK_SOURCE = "vLLM 0.29.0 model_executor/layers/fused_moe/experts/cpu_moe.py grouped_topk, 0.30.0-0.34.0 router/cpu_router.py _grouped_topk"
"""CPU's grouped top-k: no ``valid_grouping`` fallback; it reshapes the scores to
``(tokens, num_expert_group, -1)`` and takes ``topk(k=topk_group)`` over the groups."""

_DIVISORS_LISTED = 16384  # past this many experts the allowed divisors are not listed


def router_groups(num_experts: int, num_expert_group: int | None) -> bool:
    """Whether vLLM's router routes these groups grouped (``valid_grouping``, :data:`VALID_GROUPING_SOURCE`);
    else it routes every token ungrouped.

    >>> router_groups(256, 8), router_groups(60, 8), router_groups(8, 8), router_groups(64, None)
    (True, False, False, False)
    """
    return num_expert_group is not None and num_expert_group >= 1 and num_experts > num_expert_group and num_experts % num_expert_group == 0


def grouping_problems(num_experts: int | None, num_expert_group: int | None, topk_group: int | None, *,
                      names: tuple[str, str] = ("num_expert_group", "topk_group"), platform: str | None = None) -> list[tuple[str, str, Any, Any]]:
    """What vLLM's grouped top-k refuses in a layer's expert groups: ``(name, message, value,
    allowed)`` per problem; ``names`` are the two fields as the caller's input spells them
    (``n_group`` in a config.json). The one rule behind :class:`MoEConfig` and
    :func:`moe_oracle.inputs.bounds.model_config_issues`.

    ``num_expert_group`` must be >= 1. Where vLLM groups, ``topk_group`` must lie between 1 and
    ``num_expert_group`` (``torch.topk`` over the groups, :data:`GROUPED_TOPK_SOURCE`): on CUDA,
    ROCm and XPU only when the router groups (:func:`router_groups`; a grouping that does not
    divide the experts is routed ungrouped, :data:`VALID_GROUPING_SOURCE`, and ``topk_group`` is
    then never read); on CPU always, where the groups must also divide the experts
    (:data:`CPU_GROUPED_TOPK_SOURCE` reshapes the scores without a fallback). ``platform``:
    the layer's (``None``: unknown, only what fails on every platform). A monolithic kernel that
    routes inside itself is held to its own rule after selection (``constraint.trtllm_groups_divide``).

    >>> [p[0] for p in grouping_problems(128, 3, 2, platform="cpu")]
    ['num_expert_group']
    >>> grouping_problems(128, 3, 2, platform="cuda"), grouping_problems(60, 8, 9, platform="cuda")
    ([], [])
    >>> [p[0] for p in grouping_problems(256, 8, 9, platform="cuda")]
    ['topk_group']
    """
    group, topk = names
    out: list[tuple[str, str, Any, Any]] = []
    cpu = platform == "cpu"
    if num_expert_group == 0:
        # vLLM reads 0 groups as none only on some paths (moe_oracle.inputs.checkpoint.aliases
        # _zero_groups reads a config.json's n_group 0 so where it does); here None says it.
        out.append((group, f"must be >= 1: 0 is not a group count; a layer without expert groups leaves {group} unset (None; {topk} with it), as a config.json's n_group 0 is read where vLLM's router skips grouping (elsewhere {GROUPED_TOPK_SOURCE} fails on 0 groups)", num_expert_group, {"minimum": 1}))
        return out
    if num_expert_group is not None and num_expert_group < 1:
        out.append((group, f"must be >= 1: {GROUPED_TOPK_SOURCE} reshapes the router scores into {group} groups, and vLLM fails at start on {num_expert_group}", num_expert_group, {"minimum": 1}))
        return out
    if num_expert_group is None or num_experts is None or num_experts < 1:
        return out
    divides = num_experts % num_expert_group == 0
    if cpu and not divides:
        divisors = [d for d in range(1, num_experts + 1) if num_experts % d == 0] if num_experts <= _DIVISORS_LISTED else None
        out.append((group, f"must divide the {num_experts} experts on CPU: {CPU_GROUPED_TOPK_SOURCE} reshapes the scores to (tokens, {group}, experts // {group}) with no ungrouped fallback, and vLLM fails when it first routes (its start-up warm-up)", num_expert_group, divisors))
        return out
    if topk_group is not None and not 1 <= topk_group <= num_expert_group and (router_groups(num_experts, num_expert_group) or cpu):
        gpu = f"{GROUPED_TOPK_SOURCE} (the router groups: {num_expert_group} groups divide the {num_experts} experts, GroupedTopKRouter valid_grouping)"
        where = CPU_GROUPED_TOPK_SOURCE if cpu else gpu if platform is not None else f"{gpu}, as on CPU {CPU_GROUPED_TOPK_SOURCE},"
        out.append((topk, f"must be between 1 and {group} = {num_expert_group}: {where} takes topk(k={topk}) over the {group} groups: more than {num_expert_group} fails at start, 0 selects no group", topk_group, {"minimum": 1, "maximum": num_expert_group}))
    return out


@dataclass(frozen=True)
class Device:
    """The accelerator (or CPU) a layer runs on.

    Attributes:
        platform: execution platform.
        capability: CUDA compute capability as major*10+minor (90 = SM 9.0); ``None`` when
            unknown or not CUDA. Exact values, never families.
        arch: ROCm gfx target (``"gfx942"``), XPU generation (``"xe2"``) or CPU
            architecture (``"x86_64"``, ``"aarch64"``, ``"ppc64le"``); ``None`` when unknown.
        cpu_amx: x86 AMX tile support (CPU only); ``None`` when unknown.
        name: hardware catalog name (``"H200"``), informational.

    Integer-like values (numpy, 0-d tensors) are stored as ``int``. A capability off CUDA, an arch
    on CUDA (the capability decides there), an empty arch and ``cpu_amx`` off CPU are refused.

    Raises:
        ConfigError: a field of the wrong type or range, or one its platform does not read.
    """

    platform: Platform
    capability: int | None = None
    arch: str | None = None
    cpu_amx: bool | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        _coerce_enum(self, "platform", Platform, path="device.")
        cap = _integer(self.capability)
        if cap is not None and cap < 10:
            raise ConfigError([InputIssue("$.device.capability", f"must be >= 10 (got {cap}): a compute capability is written major*10+minor, e.g. 90 for SM 9.0, 100 for SM 10.0", cap, {"minimum": 10, "maximum": 200})])
        _check_int(self, "capability", minimum=10, optional=True, path="device.")
        if self.capability is not None and self.platform is not Platform.CUDA:
            raise ConfigError([InputIssue("$.device.capability", "a CUDA compute capability is only meaningful on platform cuda", self.capability, None)])
        if self.capability is not None and self.capability > 200:
            raise ConfigError([InputIssue("$.device.capability", "compute capability is major*10+minor, e.g. 90 for SM 9.0", self.capability, {"maximum": 200})])
        if self.arch is not None and not isinstance(self.arch, str):
            raise ConfigError([InputIssue("$.device.arch", "must be a string or None (unknown)", self.arch, None)])
        if self.arch is not None:
            object.__setattr__(self, "arch", ascii_lower(self.arch.strip()))  # gfx942, xe2, x86_64: one spelling (no lookalike folds onto one)
            if not self.arch:
                raise ConfigError([InputIssue("$.device.arch", "must not be empty: give the architecture (gfx942, xe2, x86_64) or None when unknown", self.arch, None)])
            if self.platform is Platform.CUDA:
                # no table reads an arch on CUDA (the capability decides); it would be dropped unsaid
                raise ConfigError([InputIssue("$.device.arch", "is read on rocm (gfx942), xpu (xe2) and cpu (x86_64), not on platform cuda: give the compute capability (Device.capability, 90 for SM 9.0)", self.arch, None)])
        if self.cpu_amx is not None and not isinstance(self.cpu_amx, bool):
            raise ConfigError([InputIssue("$.device.cpu_amx", "must be true, false or null", self.cpu_amx, [True, False, None])])
        if self.cpu_amx is not None and self.platform is not Platform.CPU:
            raise ConfigError([InputIssue("$.device.cpu_amx", "x86 AMX tile support is only meaningful on platform cpu", self.cpu_amx, None)])
        if self.name is not None and not isinstance(self.name, str):
            raise ConfigError([InputIssue("$.device.name", "must be a string (a hardware name, informational) or None", self.name, None)])


@dataclass(frozen=True)
class ParallelConfig:
    """Deployment parallelism of one MoE layer (vLLM ``FusedMoEParallelConfig`` inputs).

    Attributes:
        tp_size: tensor-parallel size.
        dp_size: data-parallel size.
        pcp_size: prefill-context-parallel size (``-pcp``; vLLM ``ParallelConfig.prefill_context_parallel_size``).
            The MoE layer treats it as it treats DP (vLLM 0.29.0-0.34.0 P/config.py
            ``FusedMoEParallelConfig.make``: "PCP serves the same function as DP here"): it joins the
            flattened TP group, the EP group and the EPLB rank count, and turns the all2all kernels on.
        use_ep: expert parallelism requested (``--enable-expert-parallel``).
        all2all_backend: dispatch/combine backend used when all2all kernels are active.
        enable_eplb: expert-parallel load balancer.
        num_redundant_experts: extra physical experts per EP group (EPLB; vLLM
            ``EPLBConfig.num_redundant_experts``, a total over the group, not per rank).
        ep_rank: the expert-parallel rank this layer instance runs on, when one rank is
            described (``moe-oracle plan`` evaluates every rank); ``None`` describes the largest
            rank. It changes ``num_local_experts`` (vLLM 0.33.0-0.34.0 P/expert_map_manager.py
            ``determine_expert_map``: the first ``(E + R) % ep`` ranks hold one more expert).
        sequence_parallel: the ``is_sequence_parallel`` the model class passes to its MoE layer
            (vLLM 0.29.0-0.34.0 P/layer.py ``make_parallel_config``: ``sp_size = tp_size`` when
            true). Classes that pass it pass ``ParallelConfig.use_sequence_parallel_moe`` (expert
            parallelism, TP > 1, DP > 1 and an all2all backend of the release's list; deepseek_v2.py
            ``DeepseekV2MoE``, qwen3_moe.py ``Qwen3MoeSparseMoeBlock``); others pass nothing
            (false). ``None``: not known (no model class read); the inputs door derives it from
            the architecture and release (:mod:`moe_oracle.inputs.sequence_parallel`). It counts
            only with ``use_ep``, ``tp_size > 1`` and ``dp_size > 1`` (:attr:`sequence_parallel_possible`;
            normalization reads false otherwise, so an edit of those fields needs no second edit
            here); a config file that sets it true without them is refused there.
        expert_placement_strategy: the placement requested (``--expert-placement-strategy``, vLLM
            0.29.0-0.34.0 vllm/config/parallel.py ``ParallelConfig.expert_placement_strategy``: one of
            :data:`EXPERT_PLACEMENTS`, default ``linear``). The layer may use another: vLLM falls back
            from ``round_robin`` to ``linear`` (P/expert_map_manager.py ``determine_expert_placement_strategy``);
            normalization derives the placement used (:func:`moe_oracle.core.placement.placement_strategy`).

    Derived (see :mod:`moe_oracle.core.normalize`): with EP, ``ep_size = tp_size * pcp_size *
    dp_size`` and the MoE TP size is 1; without EP the MoE TP size is ``tp_size * pcp_size *
    dp_size`` (:attr:`world`).
    """

    tp_size: int = 1
    dp_size: int = 1
    pcp_size: int = 1
    use_ep: bool = False
    all2all_backend: All2AllBackend = All2AllBackend.ALLGATHER_REDUCESCATTER
    enable_eplb: bool = False
    num_redundant_experts: int = 0
    ep_rank: int | None = None
    sequence_parallel: bool | None = None
    expert_placement_strategy: str = "linear"

    def __post_init__(self) -> None:
        _check_int(self, "tp_size", minimum=1, path="parallel.")
        _check_int(self, "dp_size", minimum=1, path="parallel.")
        _check_int(self, "pcp_size", minimum=1, path="parallel.")
        _check_bool(self, "use_ep", "parallel.")
        _coerce_enum(self, "all2all_backend", All2AllBackend, path="parallel.")
        _check_bool(self, "enable_eplb", "parallel.")
        _check_int(self, "num_redundant_experts", minimum=0, path="parallel.")
        _check_int(self, "ep_rank", minimum=0, optional=True, path="parallel.")
        if self.ep_rank is not None and self.ep_rank >= self.world:
            raise ConfigError([InputIssue("$.parallel.ep_rank", f"must be below tp_size * pcp_size * dp_size ({self.world})", self.ep_rank, {"maximum": self.world - 1})])
        if self.sequence_parallel is not None:
            _check_bool(self, "sequence_parallel", "parallel.")
        if not isinstance(self.expert_placement_strategy, str) or self.expert_placement_strategy not in EXPERT_PLACEMENTS:
            raise ConfigError([InputIssue("$.parallel.expert_placement_strategy", "not an expert placement strategy", self.expert_placement_strategy, list(EXPERT_PLACEMENTS))])

    @property
    def world(self) -> int:
        """The ranks one MoE layer spans: TP x PCP x DP (vLLM 0.29.0-0.34.0 P/config.py
        ``FusedMoEParallelConfig.flatten_tp_across_dp_and_pcp``; the EP group when EP is on).

        >>> ParallelConfig(tp_size=2, dp_size=2, pcp_size=2).world
        8
        """
        return self.tp_size * self.pcp_size * self.dp_size

    @property
    def sequence_parallel_possible(self) -> bool:
        """Whether a model class could pass ``is_sequence_parallel``: expert parallelism, TP > 1
        and DP > 1, the terms of vLLM 0.29.0-0.34.0 vllm/config/parallel.py
        ``use_sequence_parallel_moe`` other than its all2all list.

        >>> ParallelConfig(tp_size=2, dp_size=4, use_ep=True).sequence_parallel_possible
        True
        """
        return self.use_ep and self.tp_size > 1 and self.dp_size > 1


@dataclass(frozen=True)
class Provenance:
    """Where one input field's value came from, with the evidence for inferred values.

    Attributes:
        field: the input field, dotted for nested ones (``"parallel.tp_size"``).
        source: a :class:`~moe_oracle.core.vocab.Source`, or its value (``"user_flag"``), coerced.
        evidence: what shows it, one phrase.

    Raises:
        ConfigError: a field or evidence that is not a string, a source not in ``Source``.
    """

    field: str
    source: Source
    evidence: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.field, str):
            raise ConfigError([InputIssue("$.provenance.field", "must be a string naming an input field", self.field, None)])
        _coerce_enum(self, "source", Source, path="provenance.")
        if not isinstance(self.evidence, str):
            raise ConfigError([InputIssue("$.provenance.evidence", "must be a string", self.evidence, None)])

    def to_dict(self) -> dict[str, str]:
        return {"field": self.field, "source": self.source.value, "evidence": self.evidence}


@dataclass(frozen=True)
class MoEConfig:
    """Everything selection needs to know about one MoE layer and its deployment.

    Shapes are per layer, in elements: ``hidden_size`` is the model width,
    ``intermediate_size`` the full (unsharded) expert MLP width, so w13 is
    ``[num_experts, 2 * intermediate_size, hidden_size]`` for gated activations.

    Attributes:
        num_experts: global routed experts (logical, before redundancy).
        top_k: experts per token.
        hidden_size: model hidden size.
        intermediate_size: expert intermediate size before TP sharding.
        device: where it runs.
        activation: expert activation.
        routing_method: router algorithm.
        quant: (weight key, activation key).
        quant_method: checkpoint quantization format (``"fp8"``, ``"compressed-tensors"``,
            ``"modelopt"``, ``"mxfp4"`` ...); ``None`` when unquantized or unknown. vLLM's name
            for the method an override ends with (``"modelopt_fp4"``, ``"auto_gptq"``) is read
            as the format it overrides (:func:`moe_oracle.core.normalize.table_quant_method`). Not
            validated here (any string); a config file's value must be one of the release's
            methods moe-oracle models (:func:`moe_oracle.inputs.quant_checks.config_quant_method_issue`).
        in_dtype: model activation dtype.
        router_logits_dtype: dtype of router logits; ``None`` means ``in_dtype``.
        has_bias: experts carry biases (gpt-oss).
        swiglu_alpha, swiglu_limit, swiglu_beta: SwiGLU-OAI scale and clamp; ``swiglu_limit``
            set means kernels must apply the clamp.
        num_expert_group, topk_group, routed_scaling_factor, has_correction_bias:
            grouped top-k routing parameters (DeepSeek-V3 style); ``topk_group`` must lie
            between 1 and ``num_expert_group`` where vLLM groups, and on CPU the groups must
            divide the experts (:func:`grouping_problems`); off CPU vLLM's router routes groups
            that do not divide the experts ungrouped (:func:`router_groups`).
        situ_beta, situ_linear_beta: SiTU activation parameters (Kimi-K3: 4.0 and 25.0); some
            kernels accept SiTU only for specific values (vLLM 0.33.0-0.34.0 P/b12x.py).
        model_type: Hugging Face ``model_type`` of the text model (``"deepseek_v3"``); vLLM 0.33.0-0.34.0
            keys a few rules on it (P/oracle/fp8.py DeepGEMM auto-disable). ``None``: unknown.
        architecture: Hugging Face ``architectures[0]`` (``"DeepseekV4ForCausalLM"``); vLLM 0.33.0-0.34.0
            restricts the FlashInfer MoE-EP megakernels to some (vllm/config/kernel.py). ``None``: unknown.
        has_hash_routing: the layer routes by a token-hash table (DeepSeek-V4 first layers,
            ``num_hash_layers``); vLLM 0.31+ rejects monolithic kernels that do not implement it.
        require_decomposed: the layer's routes are adjusted after routing (expert substitution of
            MoNE-pruned checkpoints, routing simulator); vLLM 0.33.0-0.34.0 then rejects monolithic kernels.
        weight_block_size: ``[block_n, block_k]`` of a block-quantized checkpoint
            (``quantization_config.weight_block_size``); ``None`` when not block-quantized or unknown.
        weight_group_size: elements per weight scale along K of a group-quantized checkpoint
            (GPTQ/AWQ ``group_size``, compressed-tensors ``weights.group_size``; ``-1`` = one group per
            output channel); the Marlin and WNA16 kernels check it against the partition (vLLM 0.33.0-0.34.0
            Q/utils/marlin_utils.py check_moe_marlin_supports_config). ``None``: not group-quantized or unknown.
        act_order: activation ordering of a GPTQ-style checkpoint (compressed-tensors
            ``weights.actorder``: ``group``, ``weight``, ``static``, ``dynamic``; GPTQ ``desc_act: true``
            is ``group``); ``"none"`` when the checkpoint has none, ``None`` unknown. vLLM 0.29.0
            runs group ordering with a g_idx permutation; 0.30.0+ refuses it (Q/utils/gptq_utils.py
            normalize_and_validate_gptq_desc_act, Q/compressed_tensors/compressed_tensors.py).
        weight_zero_point: the weights carry zero points (asymmetric: GPTQ ``sym: false``, AWQ
            ``zero_point: true``, compressed-tensors ``symmetric: false``); ``None`` means what the weight
            key says (an asymmetric key has zero points). AWQ and MoeWNA16 build a symmetric key and
            pass the zero points separately (vLLM 0.33.0-0.34.0 Q/auto_awq.py, Q/moe_wna16.py).
        parallel: deployment parallelism.
        lora: LoRA adapters on the experts.
        batch_invariant: batch-invariant kernels requested (``VLLM_BATCH_INVARIANT``).
        moe_backend: requested backend name or ``"auto"``.
        max_num_tokens: largest number of tokens per call (``max_num_batched_tokens``), ``None`` unknown.
        provenance: source of each input field, with evidence for inferred ones.

    Raises:
        ConfigError: a field of the wrong type, out of range, or not in its vocabulary.
    """

    num_experts: int
    top_k: int
    hidden_size: int
    intermediate_size: int
    device: Device
    activation: Activation = Activation.SILU
    routing_method: RoutingMethod = RoutingMethod.RENORMALIZE_NAIVE
    quant: QuantScheme = UNQUANTIZED
    quant_method: str | None = None
    in_dtype: DType = DType.BFLOAT16
    router_logits_dtype: DType | None = None
    has_bias: bool = False
    swiglu_alpha: float | None = None
    swiglu_limit: float | None = None
    swiglu_beta: float | None = None
    num_expert_group: int | None = None
    topk_group: int | None = None
    routed_scaling_factor: float = 1.0
    has_correction_bias: bool = False
    situ_beta: float | None = None
    situ_linear_beta: float | None = None
    model_type: str | None = None
    architecture: str | None = None
    has_hash_routing: bool = False
    require_decomposed: bool = False
    weight_block_size: tuple[int, int] | None = None
    weight_group_size: int | None = None
    act_order: str | None = None
    weight_zero_point: bool | None = None
    parallel: ParallelConfig = field(default_factory=ParallelConfig)
    lora: bool = False
    batch_invariant: bool = False
    moe_backend: str = "auto"
    max_num_tokens: int | None = None
    provenance: tuple[Provenance, ...] = ()

    def __post_init__(self) -> None:
        for name in ("num_experts", "top_k", "hidden_size", "intermediate_size"):
            _check_int(self, name, minimum=1)
        if not isinstance(self.device, Device):
            raise ConfigError([InputIssue("$.device", "must be a Device", self.device, None)])
        _coerce_enum(self, "activation", Activation)
        _coerce_enum(self, "routing_method", RoutingMethod)
        _coerce_enum(self, "in_dtype", DType)
        _coerce_enum(self, "router_logits_dtype", DType, optional=True)
        if not isinstance(self.quant, QuantScheme):
            raise ConfigError([InputIssue("$.quant", "must be a QuantScheme", self.quant, None)])
        if self.quant_method is not None and not isinstance(self.quant_method, str):
            raise ConfigError([InputIssue("$.quant_method", "must be a string", self.quant_method, None)])
        if not isinstance(self.parallel, ParallelConfig):
            raise ConfigError([InputIssue("$.parallel", "must be a ParallelConfig", self.parallel, None)])
        for name in ("has_bias", "has_correction_bias", "lora", "batch_invariant", "has_hash_routing", "require_decomposed"):
            _check_bool(self, name)
        for name in ("swiglu_alpha", "swiglu_limit", "swiglu_beta", "situ_beta", "situ_linear_beta"):
            _check_float(self, name)
        for name in ("model_type", "architecture"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ConfigError([InputIssue(f"$.{name}", "must be a non-empty string or null", value, None)])
        _check_block(self)
        _check_int(self, "weight_group_size", minimum=-1, optional=True)
        if self.weight_group_size == 0:
            raise ConfigError([InputIssue("$.weight_group_size", "must be -1 (per channel) or a positive group size", 0, {"minimum": -1, "not": 0})])
        if self.act_order is not None and self.act_order not in ACT_ORDERS:
            raise ConfigError([InputIssue("$.act_order", "not a valid activation ordering", self.act_order, list(ACT_ORDERS))])
        if self.weight_zero_point is not None:
            _check_bool(self, "weight_zero_point")
        _check_float(self, "routed_scaling_factor", optional=False)
        _check_int(self, "num_expert_group", minimum=0, optional=True)
        _check_int(self, "topk_group", minimum=0, optional=True)
        problems = grouping_problems(self.num_experts, self.num_expert_group, self.topk_group, platform=self.device.platform.value)
        if problems:
            raise ConfigError([InputIssue(f"$.{name}", message, value, allowed) for name, message, value, allowed in problems])
        _check_int(self, "max_num_tokens", minimum=1, optional=True)
        if self.top_k > self.num_experts:
            raise ConfigError([InputIssue("$.top_k", f"top_k must not exceed num_experts ({self.num_experts})", self.top_k, {"maximum": self.num_experts})])
        if not isinstance(self.moe_backend, str) or not self.moe_backend:
            raise ConfigError([InputIssue("$.moe_backend", "must be a backend name or 'auto'", self.moe_backend, None)])
        # Case folded on ASCII letters only: a lookalike (the Kelvin sign U+212A) stays itself, and
        # the engine refuses it as a name the release does not accept (core/requests.check_request).
        object.__setattr__(self, "moe_backend", ascii_lower(self.moe_backend.strip()).replace("-", "_"))
        if not isinstance(self.provenance, tuple) or not all(isinstance(p, Provenance) for p in self.provenance):
            raise ConfigError([InputIssue("$.provenance", "must be a tuple of Provenance", self.provenance, None)])

    def __hash__(self) -> int:
        # Cached: the memo in Oracle.select hashes the config on every call.
        cached = self.__dict__.get("_hash")
        if cached is None:
            cached = hash(tuple(getattr(self, f.name) for f in fields(self)))
            object.__setattr__(self, "_hash", cached)
        return cached

    def __getstate__(self) -> dict[str, Any]:
        # str hashes differ between processes: never ship the cached hash.
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    def source_of(self, name: str) -> Provenance | None:
        """Provenance record of input field ``name`` (dotted for nested: ``"parallel.tp_size"``)."""
        for record in self.provenance:
            if record.field == name:
                return record
        return None

    def with_changes(self, **changes: Any) -> "MoEConfig":
        """Copy with top-level fields replaced; ``parallel__tp_size=2`` style keys reach nested records."""
        nested: dict[str, dict[str, Any]] = {}
        flat: dict[str, Any] = {}
        for key, value in changes.items():
            if "__" in key:
                outer, inner = key.split("__", 1)
                nested.setdefault(outer, {})[inner] = value
            else:
                flat[key] = value
        for outer, inner in nested.items():
            flat[outer] = replace(flat.get(outer, getattr(self, outer)), **inner)
        return replace(self, **flat)


def provenance_of(pairs: Iterable[tuple[str, Source, str]]) -> tuple[Provenance, ...]:
    """Build a provenance tuple, last record per field wins, sorted by field."""
    by_field: dict[str, Provenance] = {}
    for name, source, evidence in pairs:
        by_field[name] = Provenance(name, source, evidence)
    return tuple(by_field[k] for k in sorted(by_field))
