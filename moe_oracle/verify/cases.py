"""One deployment, described neutrally so that vLLM and our tables can both be asked about it.

A :class:`Deployment` holds only JSON values (strings, numbers, booleans, lists,
``None``), so a disagreement can be written to a file and replayed with
``moe-oracle verify --replay FILE``. Fields use our vocabulary (``moe_oracle.core.vocab``,
``moe_oracle.core.quant`` key names); each side translates them into its own objects.

Packages are the optional packages vLLM probes at selection time, by our short
names (:data:`PACKAGES`); any package not listed is absent. Tools are the host tools
found (:data:`moe_oracle.core.environment.HOST_TOOLS`: FlashInfer's JIT toolchain); any
tool not listed is not found. Environment variables are the raw strings vLLM would read.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping

from ..core.config import EXPERT_PLACEMENTS
from ..core.environment import HOST_TOOLS
from ..core.stages import STAGES as _STAGES
from .frontends import FRONT_ENDS as _REGISTRY

__all__ = ["Deployment", "PACKAGES", "FRONT_ENDS", "Answer", "STAGES", "PF_NONE", "PF_RAISES", "PF_UNASKED", "refusal_stage"]

STAGES = _STAGES
"""Where a refusal happens (:attr:`Answer.stage`), in the order vLLM gets there (:data:`moe_oracle.core.stages.STAGES`)."""

PF_NONE = "(none)"
""":attr:`Answer.prepare_finalize` where vLLM's ``maybe_make_prepare_finalize`` returns ``None``."""

PF_RAISES = "(raises) "
"""Prefix of :attr:`Answer.prepare_finalize` where building the P/F raises (the exception follows)."""

PF_UNASKED = "(not asked) "
"""Prefix of :attr:`Answer.prepare_finalize` where the harness could not ask: the method's
``get_fused_moe_quant_config`` fails on the meta-device layer (scales that only
``process_weights_after_loading`` creates, e.g. online MXFP8/NVFP4 quantization; the reason follows).
Not compared (:meth:`Answer.pf_compared`); counted in the report."""

MORI_STANDIN_VERSION = "1.2.4"
"""The MoRI version both sides see where a deployment has ``mori``: the first with EPv2 (vLLM 0.34.0
vllm/utils/import_utils.py MORI_EPV2_MIN_VERSION); the stand-in module has ``mori.cco`` and
``mori.ops.dispatch_combine_v2``. An older MoRI is not drawn."""

PACKAGES: tuple[str, ...] = (
    "flashinfer",  # flashinfer-python at the version the release pins
    "flashinfer_cubin",  # flashinfer-cubin (FlashInfer's precompiled kernels) at that version
    "deep_gemm",  # DeepGEMM (vLLM also vendors it as vllm.third_party.deep_gemm)
    "deep_ep",  # DeepEP (high-throughput / low-latency / v2 all2all)
    "triton_kernels",  # OpenAI triton_kernels (gpt-oss MXFP4)
    "aiter",  # ROCm AITER
    "mori",  # ROCm MoRI all2all
    "nixl_ep",  # NIXL EP all2all
    "moonep",  # MoonEP all2all
    "humming",  # Humming kernels
    "b12x",  # native b12x MoE (SM12x)
    "flydsl",  # ROCm FlyDSL
    "cutlass",  # NVIDIA CUTLASS DSL (cutedsl)
    "zentorch",  # AMD Zen CPU ops
    "quark",  # AMD Quark
    "hpc",  # Tencent hpc-ops (the FP8 HPCExperts; vLLM vllm/utils/hpc.py has_hpc)
)
"""Optional packages a deployment may declare present (short names)."""

FRONT_ENDS: tuple[str, ...] = tuple(_REGISTRY)
"""Quantization front ends the harness can drive (each release's own classes)."""


_LEFT_OUT_AT: dict[str, Any] = {"pcp_size": 1, "sequence_parallel_model": False, "expert_placement_strategy": "linear", "num_expert_group": None}
"""Fields added after deployments were first drawn, left out of :meth:`Deployment.to_dict` at these
defaults, so the keys (:meth:`Deployment.key`) of deployments that do not set them stay."""


@dataclass(frozen=True)
class Deployment:
    """One MoE layer on one machine under one deployment, as both sides are asked.

    Attributes:
        platform: ``cuda`` | ``rocm`` | ``cpu`` | ``xpu`` | ``tpu``.
        capability: CUDA compute capability, major*10+minor (``None`` off CUDA).
        arch: ROCm gfx target, CPU architecture (``x86_64``, ``aarch64``, ``ppc64le``), or ``None``.
        cpu_amx: x86 AMX support (``None`` off CPU).
        family: our quant family (``moe_oracle.core.quant.QuantFamily`` value).
        front_end: which vLLM front end selects (:data:`FRONT_ENDS`).
        weight_key, activation_key: our quant key names (``None``: model dtype).
        block: ``[block_n, block_k]`` of a block-quantized checkpoint, else ``None``.
        num_experts, top_k, hidden_size, intermediate_size: layer shape (elements, unsharded).
        in_dtype, router_logits_dtype: model dtype and router-logits dtype (``None``: in_dtype).
        has_bias: experts carry biases.
        activation, routing_method: our vocabulary values.
        swiglu_alpha, swiglu_beta, swiglu_limit, situ_beta, situ_linear_beta: activation parameters.
        tp_size, dp_size, use_ep, all2all_backend, enable_eplb, num_redundant_experts: parallelism.
        pcp_size: prefill-context-parallel size (``-pcp``); left out of :meth:`to_dict` at 1, so
            the keys of deployments without PCP are those they had before the field.
        sequence_parallel_model: the model class passes ``ParallelConfig.use_sequence_parallel_moe``
            to its MoE layer as ``is_sequence_parallel`` (vLLM deepseek_v2.py ``DeepseekV2MoE``,
            qwen3_moe.py ``Qwen3MoeSparseMoeBlock``: :mod:`moe_oracle.inputs.sequence_parallel`);
            ``False``: a class that passes nothing (the factory's default), or no model class. Each
            side then decides the deployment part: vLLM with its own ``use_sequence_parallel_moe``,
            ours with the release's list. Left out of :meth:`to_dict` when false.
        expert_placement_strategy: ``--expert-placement-strategy`` (``linear`` or ``round_robin``);
            vLLM's layer keeps it or falls back to ``linear`` (its own ``ExpertMapManager``).
            Left out of :meth:`to_dict` at ``linear``.
        num_expert_group: the model's expert groups (``n_group``; ``None``: none). The harness reads
            it only where placement does (round_robin needs several groups); routing is
            ``routing_method``. Left out of :meth:`to_dict` when ``None``.
        lora: LoRA enabled.
        moe_backend: requested backend (vLLM ``--moe-backend`` value) or ``auto``.
        env: environment variables (name -> raw string).
        packages: optional packages present (:data:`PACKAGES`), sorted.
        tools: host tools found (``nvcc`` on PATH, ``jit_nvcc``, ``ninja``), sorted; vLLM's
            lookups of them are answered from this (:class:`~moe_oracle.verify.sim_standins.ToolLookup`).
        model_type, architecture: Hugging Face identifiers (``None``: no model config).
        has_hash_routing, require_decomposed: routing features of the layer.
        weight_group_size: weight quantization group size of a GPTQ/AWQ/compressed-tensors
            checkpoint (``-1``: per channel; ``None``: not group-quantized).
        act_order: activation ordering of that checkpoint (compressed-tensors ``actorder``; GPTQ
            ``desc_act: true`` is ``group``); ``None``: none.
        zero_point: the checkpoint carries weight zero points (``None``: what the weight key says).
    """

    platform: str
    capability: int | None = None
    arch: str | None = None
    cpu_amx: bool | None = None
    family: str = "unquantized"
    front_end: str = "direct"
    weight_key: str | None = None
    activation_key: str | None = None
    block: tuple[int, int] | None = None
    num_experts: int = 128
    top_k: int = 8
    hidden_size: int = 2048
    intermediate_size: int = 768
    in_dtype: str = "bfloat16"
    router_logits_dtype: str | None = None
    has_bias: bool = False
    activation: str = "silu"
    routing_method: str = "renormalize"
    swiglu_alpha: float | None = None
    swiglu_beta: float | None = None
    swiglu_limit: float | None = None
    situ_beta: float | None = None
    situ_linear_beta: float | None = None
    tp_size: int = 1
    dp_size: int = 1
    use_ep: bool = False
    all2all_backend: str = "allgather_reducescatter"
    enable_eplb: bool = False
    num_redundant_experts: int = 0
    pcp_size: int = 1
    sequence_parallel_model: bool = False
    expert_placement_strategy: str = "linear"
    num_expert_group: int | None = None
    lora: bool = False
    moe_backend: str = "auto"
    env: tuple[tuple[str, str], ...] = ()
    packages: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    model_type: str | None = None
    architecture: str | None = None
    has_hash_routing: bool = False
    require_decomposed: bool = False
    weight_group_size: int | None = None
    act_order: str | None = None
    zero_point: bool | None = None

    def __post_init__(self) -> None:
        unknown = sorted(set(self.packages) - set(PACKAGES))
        if unknown:
            raise ValueError(f"packages: unknown {unknown}; allowed {list(PACKAGES)}")
        if self.front_end not in FRONT_ENDS:
            raise ValueError(f"front_end: {self.front_end!r}; allowed {list(FRONT_ENDS)}")
        object.__setattr__(self, "packages", tuple(sorted(set(self.packages))))
        bad_tools = sorted(set(self.tools) - set(HOST_TOOLS))
        if bad_tools:
            raise ValueError(f"tools: unknown {bad_tools}; allowed {list(HOST_TOOLS)}")
        object.__setattr__(self, "tools", tuple(sorted(set(self.tools))))
        if self.expert_placement_strategy not in EXPERT_PLACEMENTS:
            raise ValueError(f"expert_placement_strategy: {self.expert_placement_strategy!r}; allowed {list(EXPERT_PLACEMENTS)}")
        object.__setattr__(self, "env", tuple(sorted((str(k), str(v)) for k, v in dict(self.env).items())))
        if self.block is not None:
            object.__setattr__(self, "block", tuple(self.block))

    @property
    def env_map(self) -> dict[str, str]:
        return dict(self.env)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (tuples as lists, ``env`` as an object)."""
        out = asdict(self)
        for name, default in _LEFT_OUT_AT.items():
            if out[name] == default:
                del out[name]
        out["env"] = dict(self.env)
        out["packages"] = list(self.packages)
        out["tools"] = list(self.tools)
        out["block"] = list(self.block) if self.block is not None else None
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Deployment":
        """Inverse of :meth:`to_dict`.

        Raises:
            ValueError: an unknown key, package or front end.
        """
        names = {f.name for f in fields(cls)}
        extra = sorted(set(data) - names)
        if extra:
            raise ValueError(f"unknown deployment fields {extra}; allowed {sorted(names)}")
        kwargs = dict(data)
        if "env" in kwargs:
            kwargs["env"] = tuple(dict(kwargs["env"]).items())
        for name in ("packages", "tools"):
            if name in kwargs:
                kwargs[name] = tuple(kwargs[name])
        if kwargs.get("block") is not None:
            kwargs["block"] = tuple(kwargs["block"])
        return cls(**kwargs)

    def key(self) -> str:
        """Stable short id (sha256 of the canonical JSON)."""
        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:12]

    def state_key(self) -> tuple[Any, ...]:
        """What the vLLM side must re-simulate when it changes (platform, packages, tools, env)."""
        return (self.platform, self.capability, self.arch, self.cpu_amx, self.packages, self.tools, self.env)


@dataclass(frozen=True)
class Answer:
    """What one side selected for a deployment.

    Attributes:
        status: ``ok`` (a kernel), ``error`` (the engine refuses the deployment: vLLM raises,
            or we find nothing eligible / reject the input), or ``platform`` (the platform runs
            MoE itself: vLLM TPU / out-of-tree).
        experts: experts class name (vLLM ``__name__``; ours: the winner's ``upstream``).
        activation_format: ``standard`` | ``batched_experts`` (``None`` unless ok).
        backend: the vLLM backend enum member name (ours: translated from our selection by
            :func:`~moe_oracle.verify.backend_names.vllm_backend_name`); compared when both are ok.
        detail: error text, or our kernel id.
        stage: for a refusal (``error``), where it happened, one of :data:`STAGES`: ``config``
            (vLLM's ParallelConfig / KernelConfig / VllmConfig validation; ours: the input refused),
            ``layer`` (the layer factory's and the routed-experts EPLB checks; ours: a constraint
            binding every kernel), ``selection`` (the quantization method or the family's oracle
            raises; ours: nothing eligible), ``construction`` (the selected experts class, or
            ``create_weights``; ours: the engine selects a kernel, then refuses the layer). A
            case not driven (``unsupported``) because vLLM refuses it at start-up, in a part the
            harness does not build, has stage ``config``.
        prepare_finalize: for ``ok``, the prepare/finalize class the layer gets (vLLM: the class
            ``maybe_make_prepare_finalize`` builds for the deployment with the method's
            ``FusedMoEQuantConfig``; ours: the ``upstream`` of the selected P/F entry).
            :data:`PF_NONE` where vLLM builds none; ``PF_RAISES`` + the exception where building
            it raises; ``None`` or a :data:`PF_UNASKED` text: not asked (the ``direct`` front end
            constructs no quantization method, so it has no quant config to ask with; refusals).
            See :meth:`same_pf`.
        sizes: ``(hidden, intermediate per partition)`` the layer's weights are built with, after
            the all2all kernels' and the selected backend's padding (vLLM: its ``FusedMoEConfig``
            after the method's ``maybe_roundup_sizes``; ours: :func:`moe_oracle.core.padding.decision_layer_sizes`);
            ``None`` where the harness built no method (the ``direct`` front end). Compared when
            both are ok and both known.
        later: ours only: a refusal the harness's vLLM side cannot reach for this deployment (the
            LoRA wrapper of the MoE layer, which it never builds; the start-up profile run, which
            it never runs; construction under the ``direct`` front
            end, which builds no method), as ``"<stage>: <rule ids>"``; the answer (``ok``) is then
            the kernel the engine selects before that refusal, which is what the two sides compare.
    """

    status: str
    experts: str | None = None
    activation_format: str | None = None
    backend: str | None = None
    detail: str = ""
    stage: str | None = None
    prepare_finalize: str | None = None
    sizes: tuple[int, int] | None = None
    later: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["sizes"] = list(self.sizes) if self.sizes is not None else None
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Answer":
        values = dict(data)
        sizes = values.get("sizes")
        values["sizes"] = tuple(sizes) if sizes is not None else None
        return cls(**values)

    def _sizes_agree(self, other: "Answer") -> bool:
        return self.sizes is None or other.sizes is None or self.sizes == other.sizes

    def agrees(self, other: "Answer") -> bool:
        """Same outcome: both refuse, or both select the same experts class in the same format
        through the same backend member (the activation variant: MXFP4 TRT-LLM BF16 vs MXFP8 is
        one class, two members)."""
        if self.status != other.status:
            return False
        if self.status == "ok":
            return (self.experts, self.activation_format, self.backend) == (other.experts, other.activation_format, other.backend) and self._sizes_agree(other)
        return True

    def same_stage(self, other: "Answer") -> bool:
        """Both refuse at the same stage (``True`` unless both are refusals with known, different stages)."""
        if self.status != "error" or other.status != "error" or self.stage is None or other.stage is None:
            return True
        return self.stage == other.stage

    def pf_compared(self, other: "Answer") -> bool:
        """Whether the prepare/finalize is compared: both select (``ok``) and both name one
        (a class, :data:`PF_NONE` or a :data:`PF_RAISES` text; not a :data:`PF_UNASKED` one)."""
        known = [a.prepare_finalize for a in (self, other)]
        return self.status == other.status == "ok" and all(v is not None and not v.startswith(PF_UNASKED) for v in known)

    def same_pf(self, other: "Answer") -> bool:
        """Both build the same prepare/finalize class (``True`` where it is not compared,
        :meth:`pf_compared`). vLLM building none (:data:`PF_NONE`: no branch of
        ``maybe_make_prepare_finalize`` serves the deployment, and the release's
        ``make_*_moe_kernel`` asserts it is not ``None`` when the weights are processed) agrees
        only with ours selecting a kernel without any P/F, which the engine never does; so it is a
        disagreement. vLLM raising while building it agrees with ours warning that building it fails
        (:data:`PF_RAISES` on both sides, :meth:`.ours.OurSide.pf_answer`), and with nothing else."""
        if not self.pf_compared(other):
            return True
        if all(a.prepare_finalize.startswith(PF_RAISES) for a in (self, other)):  # type: ignore[union-attr]
            return True  # both fail to build it (the exception and our rule are not compared)
        return self.prepare_finalize == other.prepare_finalize

    def differs_in(self, other: "Answer") -> tuple[str, ...]:
        """Which parts of the answer differ: ``status``, ``experts``, ``activation_format``,
        ``backend``, ``prepare_finalize``, ``sizes``."""
        if self.status != other.status:
            return ("status",)
        if self.status != "ok":
            return ()
        out = tuple(k for k in ("experts", "activation_format", "backend") if getattr(self, k) != getattr(other, k))
        return out + (("prepare_finalize",) if not self.same_pf(other) else ()) + (() if self._sizes_agree(other) else ("sizes",))


DEFAULTS: Mapping[str, Any] = {f.name: f.default for f in fields(Deployment) if f.name != "platform"}


def refusal_stage(stage: str, exc: BaseException) -> str:
    """The stage of a refusal raised while the harness was in ``stage`` (:data:`.cases.STAGES`):
    inside the quantization front end, an exception raised from an experts class's own code
    (``P/experts/``, ``modular_kernel.py``) or from ``create_weights`` is ``construction``."""
    if stage != "selection":
        return stage
    tb = exc.__traceback__
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename.replace("\\", "/"), tb.tb_frame.f_code.co_name))
        tb = tb.tb_next
    for filename, func in reversed(frames):
        if "/vllm/" not in filename:
            continue
        if func == "create_weights" or "/fused_moe/experts/" in filename or filename.endswith("/modular_kernel.py"):
            return "construction"
        return "selection"
    return "selection"
