"""The quant families the harness draws and the vLLM front ends that produce each (weight,
activation) pair: which families a release has, which front ends a family or scheme is driven
through, and the pairs each front end reads. Imported by :mod:`.space` (the samplers) and the tests."""

from __future__ import annotations

__all__ = ["FAMILY_RELEASES", "FAMILY_SCHEMES", "FRONT_ENDS_BY_FAMILY", "FRONT_ENDS_BY_SCHEME", "FRONT_END_SCHEMES", "ONLINE_FRONT_ENDS", "families_for", "front_ends_for"]

ONLINE_FRONT_ENDS: frozenset[str] = frozenset({"online_fp8_per_tensor", "online_fp8_per_block", "online_fp8_per_channel"})
"""Front ends of online methods that quantize a checkpoint's BF16 weights at load: no checkpoint
weight block is drawn for them."""

FAMILY_SCHEMES: dict[str, tuple[tuple[str | None, str | None], ...]] = {
    "unquantized": ((None, None),),
    "fp8": (
        ("fp8_static_block128", "fp8_dynamic_group128"),
        ("fp8_static_tensor", "fp8_static_tensor"),
        ("fp8_static_tensor", "fp8_dynamic_tensor"),
        ("fp8_static_tensor", "fp8_dynamic_token"),
        ("fp8_static_channel", "fp8_dynamic_token"),
        ("fp8_static_channel", "fp8_static_token"),
    ),
    # MXFP8 MoE is W8A8 in every release: select_mxfp8_moe_backend takes no quant keys and asks
    # each class about (kMxfp8Static, kMxfp8Dynamic), and every MXFP8 method is W8A8.
    "mxfp8": (("mxfp8_static", "mxfp8_dynamic"),),
    "nvfp4": (("nvfp4_static", "nvfp4_dynamic"), ("nvfp4_static", None), ("nvfp4_static", "nvfp4_dynamic_token")),
    "mxfp4": (("mxfp4_static", None), ("mxfp4_static", "mxfp8_dynamic"), ("mxfp4_static", "mxfp4_dynamic"), ("mxfp4_static", "fp8_dynamic_group128"), ("mxfp4_static", "fp8_static_tensor")),
    "int8": (
        ("int8_static_channel", "int8_dynamic_token"),
        ("int8_static_tensor", "int8_dynamic_tensor"),
        ("int8_static_tensor", "int8_dynamic_token"),
        ("int8_static_channel", "int8_dynamic_token_asym"),
        ("int8_static_tensor", "int8_dynamic_tensor_asym"),
        ("int8_static_channel", "int8_dynamic_group32"),
    ),
    "wna16": (
        ("int4_static", None),
        ("int4_static_g32", None),
        ("int4_static_asym", None),
        ("int4_static_g32_asym", None),
        ("int8_static", None),
        ("int8_static_asym", None),
    ),
    "w4a8_fp8": (("int4_static", "fp8_dynamic_token"),),
    "w4a8_int8": (("int4_w4a8_static_channel", None), ("int4_w4a8_static_group128", None), ("int4_w4a8_static_group64", None), ("int4_w4a8_static_group32", None)),
    # vLLM 0.34.0's online lut_b_moe only; drawn by the guided sampler and --family lut_b, not by
    # the unrestricted random draws (_FAMILY_WEIGHTS), which every release answers.
    "lut_b": (("lut_b_static", "mxfp8_dynamic"),),
}
"""(weight key, activation key) pairs each family's front ends produce."""

FAMILY_RELEASES: dict[str, str] = {"lut_b": ">=0.34.0"}
"""Families only some releases have (a PEP 440 range of vLLM versions); every other family is in
every modelled release. LUT-B: vLLM 0.34.0 Q/online/lut_b.py."""


def families_for(release: str) -> tuple[str, ...]:
    """The families of :data:`FAMILY_SCHEMES` vLLM ``release`` has (:data:`FAMILY_RELEASES`)."""
    from packaging.specifiers import SpecifierSet

    return tuple(f for f in FAMILY_SCHEMES if f not in FAMILY_RELEASES or SpecifierSet(FAMILY_RELEASES[f]).contains(release))



FRONT_ENDS_BY_FAMILY: dict[str, tuple[str, ...]] = {
    "unquantized": ("unquantized", "direct"),
    # The checkpoint front ends twice: the three online methods (--quantization fp8_per_tensor,
    # fp8_per_block, fp8_per_channel; each one scheme) take 3 of 7 fp8 draws.
    "fp8": ("fp8", "compressed-tensors-fp8", "fp8", "compressed-tensors-fp8", "online_fp8_per_tensor", "online_fp8_per_block", "online_fp8_per_channel"),
    "int8": ("direct", "ct_w8a8_int8", "experts_int8"),
    "wna16": ("ct_wna16", "gptq", "awq", "moe_wna16"),
    "w4a8_fp8": ("direct", "ct_w4a8_fp8"),
    "w4a8_int8": ("direct", "ct_w4a8_int8"),
    "lut_b": ("lut_b",),
}
"""Front ends the harness drives per family; families not listed use ``direct``."""

FRONT_ENDS_BY_SCHEME: dict[tuple[str | None, str | None], tuple[str, ...]] = {
    # ModelOpt NVFP4 / W4A16_NVFP4, compressed-tensors NVFP4 / NVFP4A16; the online method is W4A4
    # in 0.29.0-0.30.0 and per-token from 0.31.0 (ModelOpt's per-token override is 0.32.0+).
    ("nvfp4_static", "nvfp4_dynamic"): ("modelopt_nvfp4", "ct_nvfp4", "online_nvfp4", "direct"),
    ("nvfp4_static", None): ("modelopt_nvfp4", "ct_nvfp4", "direct"),
    ("nvfp4_static", "nvfp4_dynamic_token"): ("modelopt_nvfp4", "online_nvfp4", "direct"),
    ("mxfp8_static", "mxfp8_dynamic"): ("modelopt_mxfp8", "ct_mxfp8", "online_mxfp8", "direct"),
    # quant_method mxfp4 (GPT-OSS: no activation quant; DeepSeek-V4: MXFP8 activations declared),
    # compressed-tensors W4A16 / W4A4 MXFP4, Quark OCP-MX W4A16 / W4A8 (static FP8) / W4A4; `direct`
    # asks select_mxfp4_moe_backend with every key, including ones no checkpoint declares.
    ("mxfp4_static", None): ("mxfp4", "compressed_tensors_mxfp4", "quark_mxfp4", "direct"),
    ("mxfp4_static", "mxfp8_dynamic"): ("mxfp4", "direct"),
    ("mxfp4_static", "mxfp4_dynamic"): ("compressed_tensors_mxfp4", "quark_mxfp4", "direct"),
    ("mxfp4_static", "fp8_static_tensor"): ("quark_mxfp4", "direct"),
    ("mxfp4_static", "fp8_dynamic_group128"): ("direct",),
}
"""Front ends per (weight, activation) pair, where they depend on it (before ``FRONT_ENDS_BY_FAMILY``)."""


def front_ends_for(family: str, weight: str | None, activation: str | None) -> tuple[str, ...]:
    """The front ends the harness drives for one family and scheme."""
    return FRONT_ENDS_BY_SCHEME.get((weight, activation)) or FRONT_ENDS_BY_FAMILY.get(family, ("direct",))


FRONT_END_SCHEMES: dict[str, tuple[tuple[str | None, str | None], ...]] = {
    # Fp8MoEMethod: per-tensor or block weights; static or dynamic activations (Q/fp8.py).
    "fp8": (
        ("fp8_static_block128", "fp8_dynamic_group128"),
        ("fp8_static_block128", "fp8_dynamic_group128"),
        ("fp8_static_tensor", "fp8_static_tensor"),
        ("fp8_static_tensor", "fp8_dynamic_tensor"),
    ),
    # CompressedTensorsW8A8Fp8MoEMethod: tensor / channel / block weights with tensor or token
    # inputs; the last two are schemes the method refuses (static per-token input, per-tensor
    # weight with per-token input).
    "compressed-tensors-fp8": (
        ("fp8_static_block128", "fp8_dynamic_group128"),
        ("fp8_static_tensor", "fp8_static_tensor"),
        ("fp8_static_tensor", "fp8_dynamic_tensor"),
        ("fp8_static_channel", "fp8_dynamic_token"),
        ("fp8_static_channel", "fp8_dynamic_token"),
        ("fp8_static_block128", "fp8_dynamic_group128"),
        ("fp8_static_tensor", "fp8_dynamic_token"),
        ("fp8_static_channel", "fp8_static_token"),
    ),
    # The online FP8 methods quantize the BF16 weights themselves, one scheme each (vLLM
    # 0.29.0-0.34.0 Q/online/fp8.py; the front end checks the weight key its method selects with).
    "online_fp8_per_tensor": (("fp8_static_tensor", "fp8_dynamic_tensor"),),
    "online_fp8_per_block": (("fp8_static_block128", "fp8_dynamic_group128"),),
    "online_fp8_per_channel": (("fp8_static_channel", "fp8_dynamic_token"),),
    # The online method quantizes weights itself: channel x token whatever the checkpoint holds.
    "experts_int8": (("int8_static_channel", "int8_dynamic_token"),),
    # compressed-tensors W8A8 int8 checkpoints: channel or tensor weights, token or tensor inputs
    # (vLLM routes only channel x token to its method and refuses the rest).
    "ct_w8a8_int8": (("int8_static_channel", "int8_dynamic_token"), ("int8_static_tensor", "int8_dynamic_token"), ("int8_static_tensor", "int8_dynamic_tensor")),
}
"""(weight key, activation key) pairs a front end's checkpoints have, where narrower than its family's."""
