"""The space of deployments the harness samples: the discrete vocabulary and real shapes.

Two samplers, both deterministic for a seed:

* :func:`random_deployments` draws each axis independently over the whole vocabulary
  (weighted towards what deployments use, never excluding the rest);
* :func:`exhaustive_deployments` takes the product of the discrete axes for a few
  real shapes (optionally filtered by family or platform).

Nothing here imports vLLM: the same cases are put to both sides.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import replace
from typing import Iterable, Iterator, Sequence

from ..core.vocab import Activation, RoutingMethod
from .cases import PACKAGES, Deployment
from .families import FAMILY_RELEASES, FAMILY_SCHEMES, FRONT_END_SCHEMES, FRONT_ENDS_BY_FAMILY, FRONT_ENDS_BY_SCHEME, ONLINE_FRONT_ENDS, families_for, front_ends_for

__all__ = [
    "DEVICES",
    "FAMILY_RELEASES",
    "FAMILY_SCHEMES",
    "FRONT_END_SCHEMES",
    "FRONT_ENDS_BY_FAMILY",
    "FRONT_ENDS_BY_SCHEME",
    "SHAPES",
    "exhaustive_deployments",
    "families_for",
    "front_ends_for",
    "random_deployments",
]

DEVICES: tuple[tuple[str, int | None, str | None, bool | None], ...] = (
    ("cuda", 75, None, None),
    ("cuda", 80, None, None),
    ("cuda", 86, None, None),
    ("cuda", 89, None, None),
    ("cuda", 90, None, None),
    ("cuda", 100, None, None),
    ("cuda", 103, None, None),
    ("cuda", 110, None, None),
    ("cuda", 120, None, None),
    ("cuda", 121, None, None),
    ("rocm", None, "gfx90a", None),
    ("rocm", None, "gfx942", None),
    ("rocm", None, "gfx950", None),
    ("rocm", None, "gfx1100", None),
    ("rocm", None, "gfx1201", None),
    ("rocm", None, "gfx1250", None),
    ("cpu", None, "x86_64", False),
    ("cpu", None, "x86_64", True),
    ("cpu", None, "aarch64", False),
    ("cpu", None, "ppc64le", False),
    ("xpu", None, None, None),
    ("tpu", None, None, None),
)
"""(platform, CUDA capability, arch, AMX): every device of our hardware catalog's kinds, SM 7.5-12.1."""

_DEVICE_WEIGHTS = (1, 3, 1, 2, 6, 6, 3, 1, 3, 2, 1, 4, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1)

SHAPES: tuple[tuple[int, int, int, int], ...] = (
    (256, 8, 7168, 2048),  # DeepSeek-V3/R1
    (128, 8, 2048, 768),  # Qwen3-30B-A3B
    (128, 8, 4096, 1536),  # Qwen3-235B-A22B
    (8, 2, 4096, 14336),  # Mixtral-8x7B
    (128, 4, 2880, 2880),  # gpt-oss-120b
    (32, 4, 2880, 2880),  # gpt-oss-20b
    (384, 8, 7168, 2048),  # Kimi-K2
    (16, 1, 5120, 8192),  # Llama-4-Scout
    (256, 8, 3072, 1536),  # MiniMax-M2
    (128, 6, 2688, 1856),  # Nemotron-3-Nano
    (512, 10, 4096, 160),  # Qwen3.8-style fine experts
    (60, 4, 2048, 1408),  # Qwen1.5-MoE style
    (64, 6, 2048, 1408),  # DeepSeek-V2-Lite
    (128, 8, 2048, 512),  # Qwen3.5-style small experts
    (256, 8, 4096, 1024),  # GLM / DeepSeek-V4-Flash style
    (40, 8, 1536, 512),  # odd
    (8, 2, 1000, 3000),  # unaligned hidden
    (2048, 8, 1024, 256),  # many experts
    (4096, 8, 512, 128),  # too many experts for some kernels
)
"""(experts, top-k, hidden, intermediate): real models first, then edge shapes."""

_SHAPE_WEIGHTS = (5, 5, 3, 3, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 2, 1, 1, 1, 1)

_FAMILY_WEIGHTS = {"unquantized": 5, "fp8": 5, "mxfp8": 2, "nvfp4": 3, "mxfp4": 3, "int8": 2, "wna16": 2, "w4a8_fp8": 1, "w4a8_int8": 1}


ALL2ALL = (
    "allgather_reducescatter",
    "deepep_high_throughput",
    "deepep_low_latency",
    "deepep_v2",
    "mori_high_throughput",
    "mori_low_latency",
    "nixl_ep",
    "flashinfer_nvlink_two_sided",
    "flashinfer_nvlink_one_sided",
    "moonep",
)
"""all2all backends of the common draw; vLLM 0.34.0's ``mori`` is drawn apart (:func:`_mori_axes`)."""

MOE_BACKENDS = (
    "triton",
    "batched_triton",
    "deep_gemm",
    "cutlass",
    "flashinfer_trtllm",
    "flashinfer_cutlass",
    "flashinfer_cutedsl",
    "flashinfer_trtllm_afp8",
    "flashinfer_cutlass_afp8",
    "marlin",
    "humming",
    "aiter",
    "xpu",
    "cpu",
    "hpc",
    "emulation",
    "b12x",
    "flashinfer_b12x",
    "triton_unfused",
    "aiter_mxfp4_bf16",
    "aiter_mxfp4_fp8",
)
"""vLLM ``--moe-backend`` names the sampler requests (valid or not for a family)."""

FAMILY_MOE_BACKENDS: dict[str, tuple[str, ...]] = {"wna16": ("rdna3",)}
"""Extra ``--moe-backend`` names only one family's oracle maps (sampled for that family too)."""

ENV_VARS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("VLLM_USE_DEEP_GEMM", ("0", "1")),
    ("VLLM_MOE_USE_DEEP_GEMM", ("0", "1")),
    ("VLLM_ROCM_USE_AITER", ("0", "1")),
    ("VLLM_ROCM_USE_AITER_MOE", ("0", "1")),
    ("VLLM_BATCH_INVARIANT", ("1",)),
)

FAMILY_AXES: dict[str, dict[str, tuple[float, tuple[str, ...]]]] = {
    "nvfp4": {
        "moe_backend": (0.08, ("flashinfer_moe_ep_cutedsl", "flashinfer_moe_ep_mega_cutedsl", "flashinfer_moe_ep_mega_deep_gemm")),
        "all2all_backend": (0.03, ("passthrough",)),
        "architecture": (0.1, ("DeepseekV4ForCausalLM", "DeepseekV41ForCausalLM", "Qwen3MoeForCausalLM")),
        "env.VLLM_B12X_MOE_FP4_FORCE_A16": (0.1, ("0", "1")),
        "env.VLLM_HUMMING_MOE_GEMM_TYPE": (0.05, ("indexed", "grouped", "grouped_contiguous", "auto")),
    },
    "mxfp4": {
        # quant_method mxfp4 resolves by model type (GptOssMxfp4Config claims gpt_oss only): an MXFP4
        # checkpoint always has one.
        "model_type": (1.0, ("gpt_oss", "gpt_oss", "deepseek_v4", "deepseek_v4", "kimi_k3", "qwen3_moe")),
        "moe_backend": (0.08, ("flashinfer_moe_ep_cutedsl", "flashinfer_moe_ep_mega_deep_gemm", "aiter_triton_mxfp4_bf16", "aiter_triton_mxfp4_mxfp4", "aiter_mxfp4_mxfp4", "b12x", "deep_gemm", "triton_unfused")),
        # A checkpoint always has an architecture (vLLM reads it for the FlashInfer MoE-EP DeepGEMM
        # backend); the harness's "none" would be an empty list, which no real model has.
        "architecture": (1.0, ("DeepseekV4ForCausalLM", "GptOssForCausalLM", "Qwen3MoeForCausalLM")),
        "env.VLLM_B12X_MOE_FP4_FORCE_A16": (0.1, ("0", "1")),
        "env.VLLM_HUMMING_MOE_GEMM_TYPE": (0.05, ("indexed", "grouped", "grouped_contiguous", "auto")),
    },
    "mxfp8": {
        "moe_backend": (0.04, ("flashinfer_moe_ep_cutedsl", "flashinfer_moe_ep_mega_deep_gemm")),
        "all2all_backend": (0.03, ("passthrough",)),
        "env.VLLM_HUMMING_MOE_GEMM_TYPE": (0.05, ("indexed", "grouped", "grouped_contiguous", "auto")),
    },
}
"""Family-specific axes: field -> (probability of overriding the common draw, values).

Drawn from a generator seeded by the deployment's own common draws (``_family_axes``), so
adding a family's axes leaves every other family's sequence unchanged."""

_EXHAUSTIVE_MODEL_TYPES: dict[str, tuple[str, ...]] = {"mxfp4": ("gpt_oss", "deepseek_v4")}
"""Model types the exhaustive product takes for a front end that resolves by model type (one per entry point)."""


FAMILY_ENV_VARS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "wna16": (("VLLM_USE_FLASHINFER_MOE_INT4", ("0", "1")), ("VLLM_CPU_INT4_W4A8", ("0", "1")), ("VLLM_HUMMING_MOE_GEMM_TYPE", ("indexed", "grouped", "auto"))),
    "int8": (("VLLM_HUMMING_MOE_GEMM_TYPE", ("indexed", "grouped", "auto")),),
    "w4a8_fp8": (("VLLM_HUMMING_MOE_GEMM_TYPE", ("indexed", "grouped", "auto")),),
}
"""Environment variables only one family's selection reads (drawn for that family only)."""

_PACKAGE_WEIGHTS = {"flashinfer": 0.7, "deep_gemm": 0.6, "deep_ep": 0.4, "triton_kernels": 0.5, "aiter": 0.6, "humming": 0.3}

_FLASHINFER_APART = ("flashinfer_cubin", "hpc")
"""Packages not in the common draw: flashinfer-cubin is drawn with FlashInfer's availability
(:func:`_flashinfer_availability`), hpc-ops by :func:`_hpc_axis` (drawn apart, so adding it left
every other draw's sequence as it was)."""

TOOLCHAINS: tuple[tuple[tuple[str, ...], float], ...] = (
    (("jit_nvcc", "ninja", "nvcc"), 0.4),  # a CUDA toolkit on PATH and vLLM's ninja
    ((), 0.2),  # neither (a runtime-only image)
    (("jit_nvcc", "nvcc"), 0.15),  # nvcc, no ninja on PATH (0.29-0.31 need only nvcc)
    (("jit_nvcc", "ninja"), 0.1),  # the toolkit under /usr/local/cuda, not on PATH (found from 0.32)
    (("ninja",), 0.1),
    (("ninja", "nvcc"), 0.05),  # nvcc on PATH while CUDA_HOME points elsewhere (0.32+ does not find it)
)
"""Host tools found (with weights): FlashInfer's JIT toolchain as installs have it."""


def _flashinfer_availability(dep: Deployment) -> Deployment:
    """``dep`` with what decides whether vLLM counts FlashInfer as available (has_flashinfer):
    flashinfer-cubin, ``VLLM_HAS_FLASHINFER_CUBIN`` and the host tools, drawn from a generator
    seeded by the deployment's own draws (so every other axis keeps its sequence)."""
    sub = random.Random("flashinfer-availability:" + dep.key())
    packages = set(dep.packages)
    if sub.random() < (0.45 if "flashinfer" in packages else 0.1):
        packages.add("flashinfer_cubin")
    env = dict(dep.env)
    roll = sub.random()
    if roll < 0.08:
        env["VLLM_HAS_FLASHINFER_CUBIN"] = "1"
    elif roll < 0.12:
        env["VLLM_HAS_FLASHINFER_CUBIN"] = "0"
    tools = _pick(sub, [t for t, _ in TOOLCHAINS], [w for _, w in TOOLCHAINS])
    return replace(dep, packages=tuple(sorted(packages)), env=tuple(env.items()), tools=tools)

def _hpc_axis(dep: Deployment) -> Deployment:
    """``dep`` with Tencent hpc-ops present now and then: on a tenth of the FP8 draws (its only
    family), seeded by the deployment's own draws."""
    if dep.family != "fp8" or random.Random("hpc:" + dep.key()).random() >= 0.1:
        return dep
    return replace(dep, packages=tuple(sorted({*dep.packages, "hpc"})))


_MOE_EP_ARCHITECTURES = ("DeepseekV4ForCausalLM", "DeepseekV41ForCausalLM", "DeepseekV3ForCausalLM", "Qwen3MoeForCausalLM")


def _moe_ep_architecture(dep: Deployment) -> Deployment:
    """``dep`` with an architecture where it requests a FlashInfer MoE-EP backend and drew none.

    vLLM reads the model's architectures for those backends at start
    (``validate_flashinfer_moe_ep_model``); the harness's "no model config" is an empty list there,
    which no real checkpoint has, while our side reads a missing architecture as unknown. Drawn
    from a generator seeded by the deployment's own draws (every other axis keeps its sequence)."""
    if dep.architecture is not None or not dep.moe_backend.startswith("flashinfer_moe_ep"):
        return dep
    return replace(dep, architecture=_pick(random.Random("architecture:" + dep.key()), _MOE_EP_ARCHITECTURES))


_GROUP_COUNTS = (8, 4, 3, 1, None)


def _placement_axes(dep: Deployment) -> Deployment:
    """``dep`` with ``--expert-placement-strategy round_robin`` on a quarter of the EP draws (a few
    of the others), with the model's expert groups that decide whether vLLM keeps it (more than
    one group, no redundant experts or EPLB, the all2all backend). On a CPU only groups that divide
    the experts are drawn (the CPU router reshapes by them; the harness routes by ``routing_method``).
    Drawn from a generator seeded by the deployment's own draws (every other axis keeps its sequence)."""
    rng = random.Random("placement:" + dep.key())
    if rng.random() >= (0.25 if dep.use_ep else 0.03):
        return dep
    groups = [g for g in _GROUP_COUNTS if dep.platform != "cpu" or g is None or dep.num_experts % g == 0]
    return replace(dep, expert_placement_strategy="round_robin", num_expert_group=_pick(rng, groups))


def _fp8_requant_axes(dep: Deployment) -> Deployment:
    """``dep`` with vLLM 0.34.0's ROCm FP8 re-quantization drawn for block-FP8 ``fp8`` checkpoints
    (``VLLM_FP8_MOE_REQUANT``, in the case vLLM compares and others, and
    ``VLLM_FP8_MOE_REQUANT_ACT``): often on ROCm, where it applies, rarely elsewhere (read and
    ignored). Drawn from a generator seeded by the deployment's own draws (every other axis keeps
    its sequence)."""
    if dep.front_end != "fp8" or dep.weight_key != "fp8_static_block128":
        return dep
    sub = random.Random("fp8-requant:" + dep.key())
    if sub.random() >= (0.5 if dep.platform == "rocm" else 0.05):
        return dep
    env = dict(dep.env)
    env["VLLM_FP8_MOE_REQUANT"] = _pick(sub, ("mxfp4", "mxfp4", "mxfp4", "none", "MXFP4"))
    if sub.random() < 0.6:
        env["VLLM_FP8_MOE_REQUANT_ACT"] = _pick(sub, ("a8w4", "a4w4", "a16w4", "a16w4", "A16W4"))
    packages = set(dep.packages)
    if dep.platform == "rocm" and sub.random() < 0.4:
        packages.add("aiter")
        env["VLLM_ROCM_USE_AITER"] = "1"
    return replace(dep, env=tuple(sorted(env.items())), packages=tuple(p for p in PACKAGES if p in packages))


def _env_spelling(dep: Deployment) -> Deployment:
    """``dep`` with its word-valued environment variables now and then re-spelled in upper, title
    or mixed case (``INDEXED``, ``Grouped``, ``gRoUpEd``).

    Whether the engine folds case is vLLM's business, not ours: vLLM lowercases
    ``VLLM_HUMMING_MOE_GEMM_TYPE`` (0.29.0-0.34.0 P/experts/fused_humming_moe.py
    get_humming_moe_gemm_type) and compares ``VLLM_FP8_MOE_REQUANT`` as written (0.34.0 Q/fp8.py), so
    every word-valued variable is re-spelled, whatever ``rules/environment.yaml`` declares, and the
    differential tier judges the declared ``parse``. Digit values (``0``/``1``) have no case. Drawn
    from a generator seeded by the deployment's own draws (every other axis keeps its sequence).
    """
    words = [(name, raw) for name, raw in dep.env if any(c.isalpha() for c in raw)]
    if not words:
        return dep
    sub = random.Random("env-spelling:" + dep.key())
    env = dict(dep.env)
    for name, raw in words:
        if sub.random() < 0.3:
            env[name] = _pick(sub, (raw.upper(), raw.title(), "".join(c.upper() if i % 2 else c for i, c in enumerate(raw))))
    return replace(dep, env=tuple(env.items())) if env != dict(dep.env) else dep


_MORI_DEPRECATED = ("mori_high_throughput", "mori_low_latency")


def _mori_axes(dep: Deployment) -> Deployment:
    """``dep`` with vLLM 0.34.0's ``mori`` all2all backend drawn: half of the deprecated MoRI
    backends' draws, some other ROCm all2all draws and a few elsewhere (refused there: EPv1
    needs AITER; before 0.34.0 every release refuses the name), then what decides EPv1 / EPv2
    (``VLLM_MORI_EP_V2``, ``MORI_ENABLE_SDMA``, ``--moe-backend aiter_mega_moe``, MoRI present),
    and on ROCm often AITER (EPv1 asserts AITER fused MoE).
    Drawn from a generator seeded by the deployment's own draws (every other axis keeps its sequence)."""
    sub = random.Random("mori:" + dep.key())
    kernels = dep.use_ep and dep.dp_size > 1
    if dep.all2all_backend in _MORI_DEPRECATED:
        p = 0.5
    elif kernels:
        p = 0.35 if dep.platform == "rocm" else 0.02
    else:
        p = 0.01
    if sub.random() >= p:
        return dep
    env = dict(dep.env)
    ep_v2 = _pick(sub, (None, None, None, "0", "1"))
    if ep_v2 is not None:
        env["VLLM_MORI_EP_V2"] = ep_v2
    if sub.random() < 0.15:
        env["MORI_ENABLE_SDMA"] = "1"
    packages = set(dep.packages)
    if sub.random() < 0.8:
        packages.add("mori")
    if dep.platform == "rocm" and sub.random() < 0.6:
        # EPv1 runs only with AITER fused MoE (FusedMoEConfig asserts it): make that path common.
        packages.add("aiter")
        env["VLLM_ROCM_USE_AITER"] = "1"
    backend = "aiter_mega_moe" if sub.random() < 0.05 else dep.moe_backend
    changes: dict[str, object] = {}
    if dep.platform == "rocm" and not kernels and sub.random() < 0.7:
        # Most draws have no all2all kernels (one DP rank or no EP): give ROCm ones the MoRI kernels.
        # (1, 6): six EP ranks, which most expert counts do not divide (the EPv2 even-split refusal).
        tp, dp = _pick(sub, ((1, 8), (2, 4), (1, 4), (4, 2), (1, 2), (1, 6)))
        changes.update(tp_size=tp, dp_size=dp, use_ep=True)
    return replace(dep, all2all_backend="mori", env=tuple(env.items()), packages=tuple(sorted(packages)), moe_backend=backend, **changes)


_TP_DP = ((1, 1), (2, 1), (4, 1), (8, 1), (1, 2), (1, 4), (1, 8), (2, 4), (4, 2), (16, 1))


def _pick(rng: random.Random, values: Sequence, weights: Sequence[float] | None = None):  # noqa: ANN202
    return rng.choices(values, weights=weights, k=1)[0]


def _family_axes(dep: Deployment) -> Deployment:
    """``dep`` with its family's own axes (:data:`FAMILY_AXES`) drawn."""
    axes = FAMILY_AXES.get(dep.family)
    if not axes:
        return dep
    sub = random.Random(dep.key())
    changes: dict[str, object] = {}
    env = dict(dep.env)
    for name, (p, values) in axes.items():
        if sub.random() >= p:
            continue
        value = _pick(sub, values)
        if name.startswith("env."):
            env[name[4:]] = value
        else:
            changes[name] = value
    return replace(dep, env=tuple(env.items()), **changes) if changes or env != dict(dep.env) else dep


# Keys of a weight-only int checkpoint, by (bits, group size 32, zero points): what
# compressed-tensors builds (CompressedTensorsWNA16MoEMethod); GPTQ/AWQ/MoeWNA16 derive theirs.
_WNA16_KEY = {
    (4, False, False): "int4_static", (4, True, False): "int4_static_g32",
    (4, False, True): "int4_static_asym", (4, True, True): "int4_static_g32_asym",
    (8, False, False): "int8_static", (8, True, False): "int8_static",
    (8, False, True): "int8_static_asym", (8, True, True): "int8_static_asym",
}
_GROUPS = (128, 64, 32, -1, 256, 48)
_ACT_ORDERS = (None, "weight", "group", "static", "dynamic")
_W4A8_INT8_GROUP = {"int4_w4a8_static_channel": -1, "int4_w4a8_static_group128": 128, "int4_w4a8_static_group64": 64, "int4_w4a8_static_group32": 32}


def _checkpoint(rng: random.Random, family: str, front: str, weight: str | None) -> dict:
    """Checkpoint fields of a quantization front end that reads a checkpoint config (else none).

    Every field is drawn over what the format can express, including values vLLM refuses
    (AWQ 8-bit, GPTQ zero points, group act-order on 0.30+, W4A8 group sizes other than 128).
    """
    if family == "wna16" and front != "direct":
        bits = _pick(rng, (4, 8), (4, 1) if front != "awq" else (20, 1))
        group = _pick(rng, _GROUPS, (8, 2, 3, 2, 1, 1))
        zero_point = rng.random() < (0.5 if front == "awq" else 0.08 if front in ("gptq", "moe_wna16") else 0.3)
        act_order = None if front == "awq" else _pick(rng, _ACT_ORDERS, (14, 2, 3, 1, 1) if front == "ct_wna16" else (14, 0, 4, 0, 0))
        return {"weight_key": _WNA16_KEY[(bits, group == 32, zero_point)], "weight_group_size": group, "act_order": act_order, "zero_point": zero_point}
    if family == "w4a8_fp8" and front == "ct_w4a8_fp8":
        return {"weight_group_size": _pick(rng, (128, 64, 32, -1), (12, 1, 1, 1)), "act_order": _pick(rng, (None, "weight", "group"), (12, 1, 1)), "zero_point": rng.random() < 0.05}
    if family == "w4a8_int8" and front == "ct_w4a8_int8":
        return {"weight_group_size": _W4A8_INT8_GROUP[weight or ""], "zero_point": rng.random() < 0.05}
    return {}


def random_deployment(rng: random.Random, families: Sequence[str] | None = None) -> Deployment:
    """One deployment, every axis drawn independently (weighted, never exclusive)."""
    fams = list(families or _FAMILY_WEIGHTS)
    family = _pick(rng, fams, [_FAMILY_WEIGHTS.get(f, 1) for f in fams])
    weight, act = _pick(rng, FAMILY_SCHEMES[family])
    # the checkpoint front ends as drawn before the online ones were added (_as_online draws those)
    front = _pick(rng, tuple(dict.fromkeys(f for f in front_ends_for(family, weight, act) if f not in ONLINE_FRONT_ENDS)))
    if front in FRONT_END_SCHEMES:
        weight, act = _pick(rng, FRONT_END_SCHEMES[front])
    checkpoint = _checkpoint(rng, family, front, weight)
    weight = checkpoint.pop("weight_key", weight)
    platform, cap, arch, amx = _pick(rng, DEVICES, _DEVICE_WEIGHTS)
    e, k, h, i = _pick(rng, SHAPES, _SHAPE_WEIGHTS)
    tp, dp = _pick(rng, _TP_DP, (4, 3, 3, 6, 1, 2, 3, 2, 1, 1))
    use_ep = rng.random() < 0.45
    a2a = _pick(rng, ALL2ALL, (6, 3, 3, 2, 1, 1, 1, 1, 1, 1)) if use_ep and dp > 1 else _pick(rng, ALL2ALL, (20, 1, 1, 1, 1, 1, 1, 1, 1, 1))
    eplb = use_ep and rng.random() < 0.15
    block = None
    if weight in ("fp8_static_block128", "fp8_static_block128_e8m0"):
        block = _pick(rng, ((128, 128), (128, 128), (128, 128), (64, 64), (32, 32)))
    activation = _pick(rng, [a.value for a in Activation], [8, 1, 2, 1, 3, 1, 1, 1, 1, 1, 1, 2])
    routing = _pick(rng, [r.value for r in RoutingMethod], [2, 6, 4, 1, 3, 1, 1, 2, 1, 1, 1, 1, 1])
    swiglu_limit = 7.0 if activation in ("swigluoai", "swigluoai_uninterleave") and rng.random() < 0.8 else (7.0 if rng.random() < 0.05 else None)
    swiglu_alpha = 1.702 if swiglu_limit is not None and rng.random() < 0.8 else None
    swiglu_beta = 1.0 if swiglu_alpha is not None else None
    situ = (4.0, 25.0) if activation == "situ" and rng.random() < 0.8 else (None, None)
    env: dict[str, str] = {}
    for name, values in ENV_VARS:
        if rng.random() < 0.08:
            env[name] = _pick(rng, values)
    for name, values in FAMILY_ENV_VARS.get(family, ()):
        if rng.random() < 0.2:
            env[name] = _pick(rng, values)
    packages = tuple(p for p in PACKAGES if p not in _FLASHINFER_APART and rng.random() < _PACKAGE_WEIGHTS.get(p, 0.15))
    backend = "auto" if rng.random() < 0.75 else _pick(rng, MOE_BACKENDS + FAMILY_MOE_BACKENDS.get(family, ()))
    dtype = "bfloat16" if rng.random() < 0.85 else "float16"
    return _placement_axes(_env_spelling(_fp8_requant_axes(_hpc_axis(_mori_axes(_moe_ep_architecture(_flashinfer_availability(_family_axes(Deployment(
        platform=platform,
        capability=cap,
        arch=arch,
        cpu_amx=amx,
        family=family,
        front_end=front,
        weight_key=weight,
        activation_key=act,
        block=block,
        num_experts=e,
        top_k=k,
        hidden_size=h,
        intermediate_size=i,
        in_dtype=dtype,
        router_logits_dtype=_pick(rng, (None, None, None, "float32", "bfloat16")),
        has_bias=rng.random() < 0.1,
        activation=activation,
        routing_method=routing,
        swiglu_alpha=swiglu_alpha,
        swiglu_beta=swiglu_beta,
        swiglu_limit=swiglu_limit,
        situ_beta=situ[0],
        situ_linear_beta=situ[1],
        tp_size=tp,
        dp_size=dp,
        use_ep=use_ep,
        all2all_backend=a2a,
        enable_eplb=eplb,
        num_redundant_experts=_pick(rng, (0, 0, 0, 8, 32)) if eplb else 0,
        lora=rng.random() < 0.08,
        moe_backend=backend,
        env=tuple(env.items()),
        packages=packages,
        model_type=_pick(rng, (None, None, None, "deepseek_v3", "qwen3_moe", "qwen3_5_moe_text", "kolibri1", "gpt_oss", "deepseek_v4")),
        has_hash_routing=rng.random() < 0.04,
        require_decomposed=rng.random() < 0.04,
        **checkpoint,
    )))))))))


def random_deployments(n: int, seed: int, families: Sequence[str] | None = None, front_ends: Sequence[str] | None = None) -> list[Deployment]:
    """``n`` deployments from ``seed`` (the same list on every machine and run).

    ``front_ends``: keep only deployments driven through these front ends (the draws of the
    families that have one, ``families`` or every family of the harness, filtered: the same
    distribution restricted to them).

    Raises:
        ValueError: none of ``families`` is ever driven through ``front_ends``.
    """
    rng = random.Random(seed)
    online = random.Random(f"{seed}:online")  # a stream of its own: the checkpoint draws stay as they were
    if not front_ends:
        return [_as_online(random_deployment(rng, families), online) for _ in range(n)]
    wanted = set(front_ends)
    fams = [f for f in (families or FAMILY_SCHEMES) if any(wanted & set(front_ends_for(f, *wa)) for wa in FAMILY_SCHEMES[f])]
    if not fams:
        raise ValueError(f"no family of {list(families or FAMILY_SCHEMES)} is driven through {sorted(wanted)}")
    out: list[Deployment] = []
    while len(out) < n:
        dep = _as_online(random_deployment(rng, fams), online)
        if dep.front_end in wanted:
            out.append(dep)
    return out


_ONLINE_SHARE = 3 / 7
"""Of the fp8 draws, the share turned into an online FP8 method's (one of three, equally)."""


def _as_online(dep: Deployment, rng: random.Random) -> Deployment:
    """``dep``, or, for an fp8 draw with probability :data:`_ONLINE_SHARE` of ``rng``, the same
    deployment through one of the online FP8 front ends (its one scheme, no checkpoint block).
    Drawn after the deployment from a stream of its own, so that adding the online front ends
    left every other draw of a seed as it was."""
    if dep.family != "fp8" or rng.random() >= _ONLINE_SHARE:
        return dep
    front = _pick(rng, sorted(ONLINE_FRONT_ENDS))
    weight, act = FRONT_END_SCHEMES[front][0]
    return replace(dep, front_end=front, weight_key=weight, activation_key=act, block=None)


# The WNA16 keys each front end can produce (GPTQ and MoeWNA16 carry zero points only off-key).
_WNA16_FRONT_KEYS = {
    "int4_static": ("ct_wna16", "gptq", "awq", "moe_wna16"),
    "int4_static_g32": ("ct_wna16", "gptq", "moe_wna16"),
    "int4_static_asym": ("ct_wna16", "awq"),
    "int4_static_g32_asym": ("ct_wna16",),
    "int8_static": ("ct_wna16", "gptq", "moe_wna16"),
    "int8_static_asym": ("ct_wna16",),
}


def _exhaustive_checkpoint(family: str, front: str, weight: str | None) -> dict:
    """The plain checkpoint of a front end: group 128 (32 for the group-32 keys), no act-order."""
    if family == "wna16":
        return {"weight_group_size": 32 if weight and "g32" in weight else 128, "act_order": None, "zero_point": bool(weight and weight.endswith("_asym"))}
    if family == "w4a8_fp8" and front == "ct_w4a8_fp8":
        return {"weight_group_size": 128, "zero_point": False}
    if family == "w4a8_int8" and front == "ct_w4a8_int8":
        return {"weight_group_size": _W4A8_INT8_GROUP[weight or ""], "zero_point": False}
    return {}


def exhaustive_deployments(
    shapes: Iterable[tuple[int, int, int, int]] = SHAPES[:3],
    families: Sequence[str] | None = None,
    platforms: Sequence[str] | None = None,
    front_ends: Sequence[str] | None = None,
) -> Iterator[Deployment]:
    """The product of the discrete axes (device x scheme x front end x activation x routing x
    parallel shape x all2all x LoRA x request) for each shape, with FlashInfer (and its
    precompiled kernels, flashinfer-cubin), DeepGEMM, triton_kernels and AITER present
    (``front_ends``: only those front ends)."""
    fams = list(families or FAMILY_SCHEMES)
    parallel = ((1, 1, False, "allgather_reducescatter"), (8, 1, False, "allgather_reducescatter"), (8, 1, True, "allgather_reducescatter"),
                (1, 8, True, "deepep_low_latency"), (1, 8, True, "deepep_high_throughput"), (2, 4, True, "flashinfer_nvlink_one_sided"))
    for shape in shapes:
        e, k, h, i = shape
        for (platform, cap, arch, amx), family in itertools.product(DEVICES, fams):
            if platforms and platform not in platforms:
                continue
            pairs = [(wa, front) for wa in FAMILY_SCHEMES[family] for front in front_ends_for(family, *wa)]
            pairs = [(scheme, front) for (wa, front) in pairs for scheme in (dict.fromkeys(FRONT_END_SCHEMES[front]) if front in FRONT_END_SCHEMES else (wa,))]
            for (weight, act), front in dict.fromkeys(pairs):
                if front_ends and front not in front_ends:
                    continue
                block = (128, 128) if weight and "block" in weight and front not in ONLINE_FRONT_ENDS else None
                if family == "wna16" and front not in _WNA16_FRONT_KEYS.get(weight or "", ()):
                    continue
                if front in FRONT_END_SCHEMES and (weight, act) not in FRONT_END_SCHEMES[front]:
                    continue
                for model_type in _EXHAUSTIVE_MODEL_TYPES.get(front, (None,)):
                    base = Deployment(platform=platform, capability=cap, arch=arch, cpu_amx=amx, family=family, front_end=front, weight_key=weight, activation_key=act,
                                      block=block, num_experts=e, top_k=k, hidden_size=h, intermediate_size=i, model_type=model_type,
                                      packages=("aiter", "deep_gemm", "flashinfer", "flashinfer_cubin", "triton_kernels"), **_exhaustive_checkpoint(family, front, weight))
                    for activation, routing in itertools.product(("silu", "swigluoai", "relu2_no_mul"), ("renormalize", "deepseek_v3", "default")):
                        for tp, dp, ep, a2a in parallel:
                            for lora, backend in ((False, "auto"), (True, "auto"), (False, "triton")):
                                yield replace(base, activation=activation, routing_method=routing, tp_size=tp, dp_size=dp, use_ep=ep, all2all_backend=a2a, lora=lora, moe_backend=backend)
