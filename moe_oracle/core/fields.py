"""The closed namespace of normalized fields that table predicates may read.

Each :class:`FieldSpec` says the field's type, its finite domain when it has one
(used by the schema generator, the compiler's lookup index, lint and the
property-test strategies), which input fields it derives from, and the default
reason code for a ``supports`` predicate on it. Two open families exist:
``packages.<canonical-name>`` (installed version) and ``env.<VAR>`` (the closed
list of environment variables declared in ``rules/environment.yaml``).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

from .config import ACT_ORDERS, EXPERT_PLACEMENTS
from .environment import HOST_TOOLS
from .quant import QUANT_KEYS, SCHEMES, QuantFamily
from .vocab import Activation, ActivationFormat, All2AllBackend, DType, Platform, ReasonCode, RoutingMethod, enum_values

__all__ = ["CUDA_CAPABILITIES", "FIELDS", "FieldSpec", "IntDomain", "MORI_DISPATCH", "MXFP4_SELECTORS", "NONE", "field_spec", "is_known_field"]

NONE = "none"
"""Value of ``all2all``/``dispatch`` when no all2all kernel runs, and of a quant side that is unquantized."""


CUDA_CAPABILITIES: tuple[int, ...] = (70, 72, 75, 80, 86, 87, 89, 90, 100, 103, 107, 110, 120, 121)
"""Every CUDA compute capability (major*10+minor) a table may list and ``--sm`` takes: NVIDIA's CUDA
GPUs list (developer.nvidia.com/cuda-gpus) from Volta on (vLLM needs 7.0): V100 7.0, Xavier 7.2, T4
7.5, A100 8.0, A10 8.6, Orin 8.7, L4 8.9, H100 9.0, B200 10.0, B300 10.3, Thor 11.0, RTX 50 / RTX PRO
6000 12.0, GB10 12.1; and 10.7, which vLLM names (vLLM 0.34.0 vllm/models/minimax_m3/common/indexer.py
``is_device_capability(107)``, fused_moe/experts/lut_b_moe.py LutBSm107Experts). Every capability
of the hardware catalog (``inputs/hardware.py``) is one of them."""


@dataclass(frozen=True)
class IntDomain:
    """The values an ``int`` field can take: ``minimum`` <= v <= ``maximum`` (``None``: unbounded),
    never one of ``excluded``; ``listed``, when given, the only values a table may list in ``in`` /
    ``not_in`` (a listed value outside them is a typo).

    >>> IntDomain(1).contains(0), IntDomain(-1, excluded=(0,)).contains(-1)
    (False, True)
    """

    minimum: int | None = None
    maximum: int | None = None
    excluded: tuple[int, ...] = ()
    listed: tuple[int, ...] | None = None

    def contains(self, value: int) -> bool:
        """Whether ``value`` is in the domain (bounds and exclusions; ``listed`` is not consulted)."""
        return (self.minimum is None or value >= self.minimum) and (self.maximum is None or value <= self.maximum) and value not in self.excluded

    def describe(self) -> str:
        """``an integer >= 1``, ``an integer in [10, 200]`` ... (for messages)."""
        if self.minimum is not None and self.maximum is not None:
            text = f"an integer in [{self.minimum}, {self.maximum}]"
        elif self.minimum is not None:
            text = f"an integer >= {self.minimum}"
        elif self.maximum is not None:
            text = f"an integer <= {self.maximum}"
        else:
            text = "an integer"
        if self.excluded:
            text += ", not " + ", ".join(map(str, self.excluded))
        return text


@dataclass(frozen=True)
class FieldSpec:
    """One normalized field.

    Attributes:
        name: field name as tables write it.
        kind: ``enum`` (finite string domain), ``bool``, ``int``, ``float``, ``str`` (open), ``version``.
        domain: finite domain for ``enum``/``bool`` fields, else ``None``.
        category: ``checkpoint`` | ``deployment`` | ``hardware`` | ``environment`` | ``derived``.
        inputs: MoEConfig/Environment paths a derived field is computed from.
        code: default reason code of a ``supports`` predicate on this field.
        doc: one line for ``--help``, lint and the matrix.
        ints: for an ``int`` field, the values it can take (what :class:`~moe_oracle.core.config.MoEConfig`,
            ``ParallelConfig`` and ``Device`` accept, or a derived field's range); ``None``: unbounded.
    """

    name: str
    kind: str
    domain: tuple[Any, ...] | None
    category: str
    inputs: tuple[str, ...]
    code: ReasonCode
    doc: str
    ints: IntDomain | None = None


def _f(name: str, kind: str, domain: tuple[Any, ...] | None, category: str, code: ReasonCode, doc: str, inputs: tuple[str, ...] = (), ints: IntDomain | None = None) -> FieldSpec:
    return FieldSpec(name, kind, domain, category, inputs or (name,), code, doc, ints)


R = ReasonCode
_BOOL = (False, True)
MXFP4_SELECTORS = (NONE, "generic", "deepseek_v4", "compressed_tensors")
"""Domain of ``mxfp4_selector`` (see :func:`moe_oracle.core.normalize.mxfp4_selector`)."""
_QUANT_SIDES = (NONE, *QUANT_KEYS)
_A2A = (NONE, *enum_values(All2AllBackend))
_POSITIVE = IntDomain(1)
_NATURAL = IntDomain(0)
# Device refuses a capability below 10 or above 200 (core/config.py Device.__post_init__).
_CAPABILITY = IntDomain(10, 200, listed=CUDA_CAPABILITIES)
MORI_DISPATCH = ("mori_epv1", "mori_epv2")
"""The dispatch kinds of ``--all2all mori`` (vLLM 0.34.0+): the MoRI EP generation vLLM resolves at start (core/mori.py)."""

_FIELDS = (
    _f("platform", "enum", enum_values(Platform), "hardware", R.PLATFORM_UNSUPPORTED, "execution platform", ("device.platform",)),
    _f("device_capability", "int", None, "hardware", R.SM_UNSUPPORTED, "CUDA compute capability, major*10+minor (exact)", ("device.capability",), _CAPABILITY),
    _f("gpu_arch", "str", None, "hardware", R.SM_UNSUPPORTED, "ROCm gfx target or XPU generation", ("device.arch",)),
    _f("cpu_arch", "str", None, "hardware", R.SM_UNSUPPORTED, "CPU architecture (x86_64, aarch64, ppc64le)", ("device.arch",)),
    _f("cpu_amx", "bool", _BOOL, "hardware", R.SM_UNSUPPORTED, "x86 AMX tile support", ("device.cpu_amx",)),
    _f("zentorch_moe", "bool", _BOOL, "derived", R.SM_UNSUPPORTED, "vLLM's zentorch fused-MoE op is registered (has_zentorch_op: vLLM runs ZenCpuPlatform, an AMD Zen CPU, taken as an x86_64 CPU without AMX, with the zentorch package); unknown while the zentorch package or the CPU's AMX is", ("device.platform", "device.arch", "device.cpu_amx", "packages.zentorch")),
    _f("cpu_amx_fp8", "bool", _BOOL, "hardware", R.SM_UNSUPPORTED, "native AMX-FP8 MMA (vLLM's compiled cpu_has_amx_fp8 query); no CPU of the hardware catalog has it", ("device.platform", "device.arch", "device.cpu_amx")),
    _f("quant_scheme", "enum", tuple(SCHEMES), "checkpoint", R.QUANT_UNSUPPORTED, "named (weight, activation) quant pair", ("quant",)),
    _f("weight_quant", "enum", _QUANT_SIDES, "checkpoint", R.QUANT_UNSUPPORTED, "weight quant key ('none' = model dtype)", ("quant",)),
    _f("activation_quant", "enum", _QUANT_SIDES, "checkpoint", R.QUANT_UNSUPPORTED, "activation quant key ('none' = model dtype)", ("quant",)),
    _f("quant_family", "enum", enum_values(QuantFamily), "derived", R.QUANT_UNSUPPORTED, "vLLM oracle family of the quant scheme", ("quant",)),
    _f("quant_method", "str", None, "checkpoint", R.PATH_NOT_ENABLED, "checkpoint quantization format the tables read (fp8, compressed-tensors, modelopt, mxfp4 ...; vLLM's name for an override's method, modelopt_fp4, auto_gptq, deepseek_v4_fp8 ..., is read as the format it overrides)"),
    _f("mxfp4_selector", "enum", MXFP4_SELECTORS, "derived", R.PATH_NOT_ENABLED, "which vLLM MXFP4 entry point selects: generic (select_mxfp4_moe_backend), deepseek_v4 (Mxfp4MoEMethod), compressed_tensors (its fixed choice), none (not MXFP4)", ("quant", "quant_method", "model_type")),
    _f("selector_activation_quant", "enum", _QUANT_SIDES, "derived", R.QUANT_UNSUPPORTED, "activation quant key the family's selector is asked for ('none' where the quant method passes none)", ("quant", "quant_method", "model_type")),
    _f("weight_block_size", "str", None, "checkpoint", R.QUANT_UNSUPPORTED, "the checkpoint's FP8 weight block, 'NxK' ('none' without block weights or where an online method quantizes them at load, rules/frontends.yaml; '128x128' when a block key does not say)", ("weight_block_size", "quant")),
    _f("weight_block", "str", None, "derived", R.QUANT_UNSUPPORTED, "weight block the oracle selects with, 'NxK' ('none' without block weights): the checkpoint's, refined to the TP shard or fixed by the front end (rules/frontends.yaml)", ("weight_block_size", "quant", "quant_method", "parallel", "hidden_size", "intermediate_size", "moe_backend")),
    _f("weight_block_aligned", "bool", _BOOL, "derived", R.SHAPE_UNALIGNED, "the checkpoint's weight blocks divide the TP shard as create_weights requires (true when refined, or without block weights)", ("weight_block_size", "quant", "quant_method", "parallel", "intermediate_size", "moe_backend")),
    _f("weight_block_pad_refused", "bool", _BOOL, "derived", R.SHAPE_UNALIGNED, "the front end would pad the TP shard to whole weight blocks but the layer does not allow it (block-unaligned global dims, EP, LoRA or bias)", ("weight_block_size", "quant", "quant_method", "parallel", "hidden_size", "intermediate_size", "lora", "has_bias", "moe_backend")),
    _f("activation", "enum", enum_values(Activation), "checkpoint", R.ACTIVATION_UNSUPPORTED, "expert activation"),
    _f("is_gated", "bool", _BOOL, "derived", R.ACTIVATION_UNSUPPORTED, "gated activation (act(gate) * up)", ("activation",)),
    _f("swiglu_clamp", "bool", _BOOL, "derived", R.FEATURE_UNSUPPORTED, "model sets swiglu_limit: the kernel must apply the clamp", ("swiglu_limit",)),
    _f("swiglu_params", "bool", _BOOL, "derived", R.FEATURE_UNSUPPORTED, "model sets any SwiGLU parameter (swiglu_limit, swiglu_alpha or swiglu_beta)", ("swiglu_limit", "swiglu_alpha", "swiglu_beta")),
    _f("swiglu_alpha", "float", None, "checkpoint", R.FEATURE_UNSUPPORTED, "SwiGLU alpha the model sets ('none' when it sets none)"),
    _f("swiglu_beta", "float", None, "checkpoint", R.FEATURE_UNSUPPORTED, "SwiGLU beta the model sets ('none' when it sets none)"),
    _f("situ_beta", "float", None, "checkpoint", R.FEATURE_UNSUPPORTED, "SiTU beta the model sets ('none' when it sets none)"),
    _f("situ_linear_beta", "float", None, "checkpoint", R.FEATURE_UNSUPPORTED, "SiTU linear beta the model sets ('none' when it sets none)"),
    _f("routing_method", "enum", enum_values(RoutingMethod), "checkpoint", R.ROUTING_UNSUPPORTED, "router algorithm"),
    _f("router_logits_dtype", "enum", enum_values(DType), "checkpoint", R.ROUTER_DTYPE_UNSUPPORTED, "router logits dtype", ("router_logits_dtype", "in_dtype")),
    _f("in_dtype", "enum", enum_values(DType), "checkpoint", R.DTYPE_UNSUPPORTED, "model activation dtype"),
    _f("has_bias", "bool", _BOOL, "checkpoint", R.BIAS_UNSUPPORTED, "experts carry biases"),
    _f("num_experts", "int", None, "checkpoint", R.SHAPE_UNSUPPORTED, "global routed experts", ints=_POSITIVE),
    _f("num_local_experts", "int", None, "derived", R.SHAPE_UNSUPPORTED, "experts per EP rank, redundant included", ("num_experts", "parallel.tp_size", "parallel.dp_size", "parallel.pcp_size", "parallel.use_ep", "parallel.num_redundant_experts", "parallel.ep_rank"), _NATURAL),
    _f("top_k", "int", None, "checkpoint", R.SHAPE_UNSUPPORTED, "experts per token", ints=_POSITIVE),
    _f("hidden_size", "int", None, "checkpoint", R.SHAPE_UNSUPPORTED, "model hidden size", ints=_POSITIVE),
    _f("intermediate_size", "int", None, "checkpoint", R.SHAPE_UNSUPPORTED, "expert intermediate size before sharding", ints=_POSITIVE),
    _f("padded_hidden_size", "int", None, "derived", R.SHAPE_UNALIGNED, "hidden size the quant method's create_weights gets: hidden_size rounded up for the DeepEP HT/LL/v2 or NIXL-EP all2all kernels (vLLM maybe_roundup_layer_hidden_size; the selected backend's own padding follows, see plan's layer_sizes)", ("hidden_size", "in_dtype", "parallel.all2all_backend", "parallel.use_ep", "parallel.tp_size", "parallel.dp_size", "parallel.pcp_size"), _POSITIVE),
    _f("intermediate_size_per_partition", "int", None, "derived", R.SHAPE_UNALIGNED, "intermediate size / MoE TP size", ("intermediate_size", "parallel.tp_size", "parallel.dp_size", "parallel.pcp_size", "parallel.use_ep"), _NATURAL),
    _f("intermediate_divisible", "bool", _BOOL, "derived", R.SHAPE_UNALIGNED, "intermediate_size is a multiple of the MoE TP size (weights shard evenly)", ("intermediate_size", "parallel.tp_size", "parallel.dp_size", "parallel.pcp_size", "parallel.use_ep")),
    _f("tp_size", "int", None, "deployment", R.PARALLEL_UNSUPPORTED, "tensor-parallel size", ("parallel.tp_size",), _POSITIVE),
    _f("dp_size", "int", None, "deployment", R.PARALLEL_UNSUPPORTED, "data-parallel size", ("parallel.dp_size",), _POSITIVE),
    _f("pcp_size", "int", None, "deployment", R.PARALLEL_UNSUPPORTED, "prefill-context-parallel size (vLLM -pcp)", ("parallel.pcp_size",), _POSITIVE),
    _f("moe_tp_size", "int", None, "derived", R.PARALLEL_UNSUPPORTED, "TP size of the experts (tp*pcp*dp without EP, 1 with EP)", ("parallel.tp_size", "parallel.dp_size", "parallel.pcp_size", "parallel.use_ep"), _POSITIVE),
    _f("ep_size", "int", None, "derived", R.PARALLEL_UNSUPPORTED, "expert-parallel size (tp*pcp*dp with EP, else 1)", ("parallel.tp_size", "parallel.dp_size", "parallel.pcp_size", "parallel.use_ep"), _POSITIVE),
    _f("use_ep", "bool", _BOOL, "deployment", R.PARALLEL_UNSUPPORTED, "expert parallelism enabled", ("parallel.use_ep",)),
    _f("all2all_backend", "enum", enum_values(All2AllBackend), "deployment", R.PARALLEL_UNSUPPORTED, "configured all2all backend", ("parallel.all2all_backend",)),
    _f("all2all", "enum", _A2A, "derived", R.PARALLEL_UNSUPPORTED, "all2all kernels in use ('none' unless EP with dp>1 or pcp>1)", ("parallel.all2all_backend", "parallel.use_ep", "parallel.dp_size", "parallel.pcp_size")),
    _f("dispatch", "enum", (*_A2A, *MORI_DISPATCH), "derived", R.PARALLEL_UNSUPPORTED, "prepare/finalize kind: all2all (mori: mori_epv1 or mori_epv2, as vLLM resolves it), or allgather_reducescatter for DP without all2all, or none", ("parallel.all2all_backend", "parallel.use_ep", "parallel.dp_size", "parallel.pcp_size", "device.arch", "env.VLLM_MORI_EP_V2", "env.MORI_ENABLE_SDMA", "packages.mori", "moe_backend", "in_dtype", "quant")),
    _f("activation_format", "enum", enum_values(ActivationFormat), "derived", R.PAIRING_INCOMPATIBLE, "format the prepare/finalize produces", ("parallel.all2all_backend", "parallel.use_ep", "parallel.dp_size", "parallel.pcp_size")),
    _f("enable_eplb", "bool", _BOOL, "deployment", R.EPLB_UNSUPPORTED, "EPLB enabled", ("parallel.enable_eplb",)),
    _f("num_redundant_experts", "int", None, "deployment", R.EPLB_UNSUPPORTED, "redundant experts (EPLB)", ("parallel.num_redundant_experts",), _NATURAL),
    _f("experts_even_across_ep", "bool", _BOOL, "derived", R.EPLB_UNSUPPORTED, "the global experts (routed + redundant) divide evenly across the EP ranks (true without EP)", ("num_experts", "parallel.num_redundant_experts", "parallel.tp_size", "parallel.dp_size", "parallel.pcp_size", "parallel.use_ep")),
    _f("sequence_parallel", "bool", _BOOL, "derived", R.PARALLEL_UNSUPPORTED, "sequence-parallel MoE: the model class passes is_sequence_parallel (vLLM use_sequence_parallel_moe: EP, TP > 1, DP > 1, an all2all backend of the release's list), so sp_size = tp_size; 'none' where the model class is not known", ("parallel.sequence_parallel", "parallel.use_ep", "parallel.tp_size", "parallel.dp_size")),
    _f("expert_placement_strategy", "enum", EXPERT_PLACEMENTS, "deployment", R.PARALLEL_UNSUPPORTED, "expert placement requested (--expert-placement-strategy), before vLLM's fallbacks (expert_placement is the one kept)", ("parallel.expert_placement_strategy",)),
    _f("expert_placement", "enum", EXPERT_PLACEMENTS, "derived", R.PARALLEL_UNSUPPORTED, "expert placement the layer uses: the requested --expert-placement-strategy, or linear where vLLM falls back from round_robin (no EP over several ranks, at most one expert group, redundant experts or EPLB, or all2all kernels other than DeepEP low-latency / NIXL EP)", ("parallel.expert_placement_strategy", "parallel.use_ep", "parallel.tp_size", "parallel.dp_size", "parallel.pcp_size", "parallel.all2all_backend", "parallel.enable_eplb", "parallel.num_redundant_experts", "num_expert_group")),
    _f("lora", "bool", _BOOL, "deployment", R.LORA_UNSUPPORTED, "LoRA on experts"),
    _f("batch_invariant", "bool", _BOOL, "deployment", R.BATCH_INVARIANCE_UNSUPPORTED, "batch-invariant kernels requested"),
    _f("max_num_tokens", "int", None, "deployment", R.SHAPE_UNSUPPORTED, "largest tokens per call", ints=_POSITIVE),
    _f("moe_backend", "str", None, "deployment", R.NOT_REQUESTED, "requested backend ('auto' = priority order)"),
    _f("model_type", "str", None, "checkpoint", R.PATH_NOT_ENABLED, "Hugging Face model_type of the text model"),
    _f("architecture", "str", None, "checkpoint", R.PATH_NOT_ENABLED, "Hugging Face architectures[0]"),
    _f("expert_groups_divide", "bool", _BOOL, "derived", R.ROUTING_UNSUPPORTED, "the expert groups divide the experts (true without groups): a kernel that routes inside itself with the groups needs it (FlashInfer TRT-LLM, DeepSeekV3 routing); vLLM's router routes other groups ungrouped", ("num_experts", "num_expert_group")),
    _f("trtllm_grouped_routing_fits", "bool", _BOOL, "derived", R.ROUTING_UNSUPPORTED, "FlashInfer's grouped DeepSeekV3 routing kernel takes the groups (true with at most one group): n_group <= 8, experts per group <= 32, topk_group <= 4, top_k <= 22, num_experts % 4 == 0 and <= 512", ("num_experts", "top_k", "num_expert_group", "topk_group")),
    _f("trtllm_fp8_block_groups_fit", "bool", _BOOL, "derived", R.ROUTING_UNSUPPORTED, "FlashInfer's FP8 block-scale launcher takes the DeepSeekV3 groups (true without groups): topk_group given, top_k <= 8 (22 past 384 experts), topk_group <= 4 and <= n_group, top_k < topk_group * num_experts / n_group", ("num_experts", "top_k", "num_expert_group", "topk_group")),
    _f("expert_groups_at_most_one", "bool", _BOOL, "derived", R.ROUTING_UNSUPPORTED, "at most one expert group and one top group (true without groups), as FlashInfer's FP8 block-scale launcher needs for every routing but DeepSeekV3", ("num_expert_group", "topk_group")),
    _f("has_hash_routing", "bool", _BOOL, "checkpoint", R.FEATURE_UNSUPPORTED, "the layer routes by a token-hash table (DeepSeek-V4 first layers)"),
    _f("weight_group_size", "int", None, "checkpoint", R.QUANT_UNSUPPORTED, "weight quantization group size (-1 = per channel)", ints=IntDomain(-1, excluded=(0,))),
    _f("require_decomposed", "bool", _BOOL, "checkpoint", R.FEATURE_UNSUPPORTED, "routes adjusted after routing (expert substitution, routing simulator)"),
    _f("act_order", "enum", ACT_ORDERS, "checkpoint", R.QUANT_UNSUPPORTED, "activation ordering of a GPTQ-style checkpoint (none, group, weight, static, dynamic)"),
    _f("weight_zero_point", "bool", _BOOL, "checkpoint", R.QUANT_UNSUPPORTED, "the weights carry zero points (asymmetric)", ("weight_zero_point", "quant")),
    _f("marlin_moe_supported", "bool", _BOOL, "derived", R.SHAPE_UNALIGNED, "vLLM check_moe_marlin_supports_config holds (not ROCm, hidden % 128, group in -1/32/64/128, the partition holds whole groups; tile-aligned with act-order)", ("device.platform", "hidden_size", "intermediate_size", "parallel.tp_size", "parallel.dp_size", "parallel.pcp_size", "parallel.use_ep", "weight_group_size", "act_order")),
    _f("weight_groups_aligned", "bool", _BOOL, "derived", R.SHAPE_UNALIGNED, "the weight groups do not straddle the hidden size or the TP partition (group size divides both; per-channel: true)", ("hidden_size", "intermediate_size", "parallel.tp_size", "parallel.dp_size", "parallel.pcp_size", "parallel.use_ep", "weight_group_size")),
    _f("padded_weight_groups_aligned", "bool", _BOOL, "derived", R.SHAPE_UNALIGNED, "the weight groups divide padded_hidden_size and the TP partition, as create_weights checks them (per-channel: true)", ("hidden_size", "in_dtype", "intermediate_size", "parallel.all2all_backend", "parallel.tp_size", "parallel.dp_size", "parallel.pcp_size", "parallel.use_ep", "weight_group_size")),
    _f("moe_quant_method", "str", None, "derived", R.PATH_NOT_ENABLED, "quantization method that serves the MoE layer: quant_method, except GPTQ/AWQ layers Marlin cannot serve fall back to moe_wna16", ("quant_method", "device.platform", "hidden_size", "intermediate_size", "parallel.tp_size", "parallel.dp_size", "parallel.pcp_size", "parallel.use_ep", "weight_group_size", "act_order")),
)
del R

FIELDS: Mapping[str, FieldSpec] = MappingProxyType({f.name: f for f in _FIELDS})

_PACKAGE_SPEC = FieldSpec("packages.*", "version", None, "environment", ReasonCode.PACKAGE_MISSING, "installed package version", ())
_ENV_SPEC = FieldSpec("env.*", "str", None, "environment", ReasonCode.ENV_DISABLED, "environment variable", ())
_TOOL_SPEC = FieldSpec("tools.*", "bool", _BOOL, "environment", ReasonCode.PACKAGE_MISSING, "host tool found (nvcc, ninja: FlashInfer's JIT toolchain)", ())


def is_known_field(name: str) -> bool:
    """``True`` for a declared field, ``packages.<name>``, ``env.<VAR>`` or ``tools.<host tool>``."""
    return name in FIELDS or (name.startswith("packages.") and len(name) > 9) or (name.startswith("env.") and len(name) > 4) or (name.startswith("tools.") and name[6:] in HOST_TOOLS)


def field_spec(name: str) -> FieldSpec:
    """Spec of ``name``; package and env fields share one generic spec each.

    Raises:
        KeyError: not a known field.
    """
    if name in FIELDS:
        return FIELDS[name]
    if name.startswith("packages."):
        return _PACKAGE_SPEC
    if name.startswith("env."):
        return _ENV_SPEC
    if name.startswith("tools.") and name[6:] in HOST_TOOLS:
        return _TOOL_SPEC
    raise KeyError(name)
