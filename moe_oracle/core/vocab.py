"""The closed vocabulary of MoE kernel selection.

Every value a table, a config file or a command line may name is a member of one
of these ``str`` enums. Members are lower snake_case and follow vLLM ``fused_moe``
and FlashInfer names. Members are deprecated, never renamed: tests and golden
records assert on them.

``schemas/vocabulary.schema.json`` is generated from this module
(``python -m moe_oracle.tools.schemagen``); a unit test fails when the two drift.
"""

from __future__ import annotations

import enum

__all__ = [
    "Activation",
    "ActivationFormat",
    "All2AllBackend",
    "DType",
    "Interface",
    "Platform",
    "Policy",
    "ReasonCode",
    "RoutingMethod",
    "Source",
    "enum_values",
]


class Platform(str, enum.Enum):
    """Execution platform (vLLM ``current_platform``)."""

    CUDA = "cuda"
    ROCM = "rocm"
    CPU = "cpu"
    XPU = "xpu"
    TPU = "tpu"


class DType(str, enum.Enum):
    """Floating dtypes of activations and router logits (torch names)."""

    BFLOAT16 = "bfloat16"
    FLOAT16 = "float16"
    FLOAT32 = "float32"


class Activation(str, enum.Enum):
    """Expert MLP activation (vLLM ``MoEActivation``, ``P/activation.py``).

    Gated members compute ``act(gate) * up`` from a ``[..., 2 * I]`` w13 output;
    ``*_no_mul`` members are non-gated (``[..., I]``). ``swigluoai`` expects
    gate/up *interleaved* in w13 (gpt-oss); ``swigluoai_uninterleave`` the same
    math on the packed ``[gates; ups]`` layout.
    """

    SILU = "silu"
    GELU = "gelu"
    GELU_TANH = "gelu_tanh"
    RELU2 = "relu2"
    SWIGLUOAI = "swigluoai"
    SWIGLUOAI_UNINTERLEAVE = "swigluoai_uninterleave"
    SWIGLUSTEP = "swiglustep"
    SITU = "situ"
    SILU_NO_MUL = "silu_no_mul"
    GELU_NO_MUL = "gelu_no_mul"
    GELU_TANH_NO_MUL = "gelu_tanh_no_mul"
    RELU2_NO_MUL = "relu2_no_mul"

    @property
    def is_gated(self) -> bool:
        """``True`` unless the member ends in ``_no_mul`` (vLLM ``is_gated``).

        >>> Activation.RELU2_NO_MUL.is_gated
        False
        """
        return not self.value.endswith("_no_mul")


class RoutingMethod(str, enum.Enum):
    """Router algorithm (vLLM ``RoutingMethodType``, FlashInfer ``runner.h``).

    ``flashinfer_id`` gives the integer both projects use.
    """

    DEFAULT = "default"  # softmax -> top-k
    RENORMALIZE = "renormalize"  # top-k -> softmax
    DEEPSEEK_V3 = "deepseek_v3"  # sigmoid -> +bias -> top-2 per group -> top groups -> top-k
    LLAMA4 = "llama4"  # top-1 -> sigmoid
    RENORMALIZE_NAIVE = "renormalize_naive"  # softmax -> top-k -> renormalize
    TOPK = "topk"  # top-k, no softmax
    SIGMOID_RENORM = "sigmoid_renorm"  # sigmoid -> top-k -> renormalize
    MINIMAX2 = "minimax2"  # sigmoid + bias -> top-k -> scaled sum-normalize
    SIGMOID = "sigmoid"  # sigmoid -> top-k
    UNSPECIFIED = "unspecified"
    DEEPSEEK_V4 = "deepseek_v4"  # sqrtsoftplus + bias + normalize
    CUSTOM = "custom"
    SIMULATED = "simulated"

    @property
    def flashinfer_id(self) -> int:
        """Integer value of the member in vLLM/FlashInfer ``RoutingMethodType``."""
        return _ROUTING_IDS[self.value]


_ROUTING_IDS = {
    "default": 0,
    "renormalize": 1,
    "deepseek_v3": 2,
    "llama4": 3,
    "renormalize_naive": 4,
    "topk": 5,
    "sigmoid_renorm": 6,
    "minimax2": 7,
    "sigmoid": 8,
    "unspecified": 9,
    "deepseek_v4": 100,
    "custom": 101,
    "simulated": 102,
}


class All2AllBackend(str, enum.Enum):
    """Expert-parallel dispatch/combine backend (vLLM ``All2AllBackend``).

    Removed and renamed spellings (``naive``, ``pplx``, ``flashinfer_all2allv``)
    are aliases declared in ``rules/aliases.yaml``, not members.
    """

    ALLGATHER_REDUCESCATTER = "allgather_reducescatter"
    DEEPEP_HIGH_THROUGHPUT = "deepep_high_throughput"
    DEEPEP_LOW_LATENCY = "deepep_low_latency"
    DEEPEP_V2 = "deepep_v2"
    MORI_HIGH_THROUGHPUT = "mori_high_throughput"
    MORI_LOW_LATENCY = "mori_low_latency"
    MOONEP = "moonep"  # vLLM 0.31.0+ (config/parallel.py All2AllBackend)
    MORI = "mori"  # vLLM 0.34.0+: MoRI EPv1 or EPv2, resolved at start (core/mori.py)
    NIXL_EP = "nixl_ep"
    FLASHINFER_NVLINK_TWO_SIDED = "flashinfer_nvlink_two_sided"
    FLASHINFER_NVLINK_ONE_SIDED = "flashinfer_nvlink_one_sided"
    PASSTHROUGH = "passthrough"  # vLLM 0.32.0+: bound to MoE backends that dispatch and combine themselves


class ActivationFormat(str, enum.Enum):
    """Layout experts consume (vLLM ``FusedMoEActivationFormat``).

    ``standard``: hidden states ``[num_tokens, hidden]``;
    ``batched_experts``: ``[num_local_experts, max_tokens_per_expert, hidden]``;
    ``padded_standard`` (vLLM 0.34.0+): ``[rows, hidden]`` where ``rows`` is an upper bound on the
    tokens received and the padding rows carry ``topk_ids == -1`` (DeepEP v2 produces it).
    """

    STANDARD = "standard"
    BATCHED_EXPERTS = "batched_experts"
    PADDED_STANDARD = "padded_standard"

    def is_superset(self, produced: "ActivationFormat") -> bool:
        """Whether experts declaring this format consume what a prepare/finalize producing
        ``produced`` hands them. Directional: ``padded_standard`` experts take ``standard`` input
        (no padding is the zero-padding case), not the reverse; every other format only itself.

        Source: vLLM 0.34.0 P/modular_kernel.py ``FusedMoEActivationFormat.is_superset``.

        >>> ActivationFormat.PADDED_STANDARD.is_superset(ActivationFormat.STANDARD)
        True
        >>> ActivationFormat.STANDARD.is_superset(ActivationFormat.PADDED_STANDARD)
        False
        """
        return self is produced or (self is ActivationFormat.PADDED_STANDARD and produced is ActivationFormat.STANDARD)

    def consumed(self) -> tuple["ActivationFormat", ...]:
        """The produced formats experts of this format consume (this one first).

        >>> [f.value for f in ActivationFormat.PADDED_STANDARD.consumed()]
        ['padded_standard', 'standard']
        """
        return (self, *(f for f in ActivationFormat if f is not self and self.is_superset(f)))


class Interface(str, enum.Enum):
    """Experts interface (vLLM ``FusedMoEExpertsModular`` / ``...Monolithic``).

    ``monolithic`` kernels take router logits and route inside the kernel;
    ``modular`` kernels take ``topk_ids``/``topk_weights`` from a separate router.
    """

    MONOLITHIC = "monolithic"
    MODULAR = "modular"


class Source(str, enum.Enum):
    """Where a normalized config value came from; echoed on every failure."""

    CHECKPOINT = "checkpoint"  # read from the model's config.json
    INFERRED = "inferred"  # derived from checkpoint fields by a documented rule
    USER_FLAG = "user_flag"  # command-line flag or explicit constructor argument
    CONFIG_FILE = "config_file"  # a MoEConfig YAML/JSON file
    HARDWARE = "hardware"  # hardware catalog or probed device
    PACKAGE = "package"  # installed-package set (declared or probed)
    ENGINE_PIN = "engine_pin"  # not declared: the version the engine release pins (rules/engine.yaml)
    ENV_VAR = "env_var"  # one of the closed list of environment variables
    HOST_TOOL = "host_tool"  # a host tool of the closed list (nvcc, ninja), declared or probed
    DEFAULT = "default"  # the documented default
    DERIVED = "derived"  # computed from other fields during normalization


class ReasonCode(str, enum.Enum):
    """Closed set of reasons a candidate fails; snake_case ``<dimension>_<problem>``.

    Tests assert on members, never on message text. "Outranked" and "demoted"
    are not failures and have no code here.
    """

    # The device or platform cannot run the kernel at all.
    PLATFORM_UNSUPPORTED = "platform_unsupported"
    # Right platform, but the exact SM / GPU architecture / CPU ISA is not in the set.
    SM_UNSUPPORTED = "sm_unsupported"
    # A required Python package is not installed.
    PACKAGE_MISSING = "package_missing"
    # The package is installed but its version is outside the supported range.
    PACKAGE_VERSION_UNSUPPORTED = "package_version_unsupported"
    # An environment variable disables the kernel (e.g. VLLM_ROCM_USE_AITER=0).
    ENV_DISABLED = "env_disabled"
    # (weight key, activation key) pair not implemented.
    QUANT_UNSUPPORTED = "quant_unsupported"
    # Activation function not implemented (or gated/non-gated mismatch).
    ACTIVATION_UNSUPPORTED = "activation_unsupported"
    # Routing method not implemented (monolithic kernels route inside).
    ROUTING_UNSUPPORTED = "routing_unsupported"
    # Router-logits dtype not accepted (alone or coupled with the routing method).
    ROUTER_DTYPE_UNSUPPORTED = "router_dtype_unsupported"
    # Model activation dtype (in_dtype) not accepted.
    DTYPE_UNSUPPORTED = "dtype_unsupported"
    # TP/DP/EP sizes or the all2all backend rule the kernel out.
    PARALLEL_UNSUPPORTED = "parallel_unsupported"
    # Expert-parallel load balancing (EPLB) not supported.
    EPLB_UNSUPPORTED = "eplb_unsupported"
    # LoRA adapters on experts not supported.
    LORA_UNSUPPORTED = "lora_unsupported"
    # Not batch invariant while VLLM_BATCH_INVARIANT is requested.
    BATCH_INVARIANCE_UNSUPPORTED = "batch_invariance_unsupported"
    # Expert bias not supported.
    BIAS_UNSUPPORTED = "bias_unsupported"
    # A size is outside a limit (expert count, hidden size, top-k, tokens per call).
    SHAPE_UNSUPPORTED = "shape_unsupported"
    # A size is not a multiple of the kernel's alignment.
    SHAPE_UNALIGNED = "shape_unaligned"
    # A model feature (SwiGLU clamp, hash routing, ...) the kernel would silently ignore.
    FEATURE_UNSUPPORTED = "feature_unsupported"
    # Experts and prepare/finalize do not pair (interface or activation format).
    PAIRING_INCOMPATIBLE = "pairing_incompatible"
    # A known correctness bug or crash for this condition (rules/known_bad.yaml).
    KNOWN_BAD = "known_bad"
    # Capable, but we chose not to use it here (opt-in only, disabled by policy).
    PATH_NOT_ENABLED = "path_not_enabled"
    # The user requested a different backend.
    NOT_REQUESTED = "not_requested"


class Policy(str, enum.Enum):
    """What an answer is: what the engine does, or what is safe to run.

    ``faithful`` (default): the engine's own answer, known bugs and unchecked early returns
    included, each with a warning. ``safe``: known-bad rules reject (``known_bad``) and every
    check applies, also where the engine returns a kernel without checking it.
    """

    FAITHFUL = "faithful"
    SAFE = "safe"


def enum_values(enum_cls: type[enum.Enum]) -> tuple[str, ...]:
    """Member values of ``enum_cls`` in declaration order.

    >>> enum_values(Interface)
    ('monolithic', 'modular')
    """
    return tuple(member.value for member in enum_cls)
