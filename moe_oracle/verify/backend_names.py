"""The backend a user sees: our selection translated into the name of vLLM's backend enum member.

vLLM logs and stores the member of the family's backend enum its oracle returned
(``UnquantizedMoeBackend``, ``Fp8MoeBackend`` -- also for MXFP8 --, ``NvFp4MoeBackend``,
``Mxfp4MoeBackend``, ``WNA16MoEBackend``, ``Int8MoeBackend``, ``W4A8MoeBackend``,
``W4A8Int8MoeBackend``; vLLM 0.33.0-0.34.0 P/oracle/*.py). One experts class can stand behind several
members (MXFP4 TRT-LLM with BF16 or MXFP8 activations are both ``TrtLlmMxfp4Experts*``), so
comparing the member name as well as the class catches a table that keeps the class but picks
the other activation variant.

The translation is written from the enums' source, not from what the harness observed, and
never reads vLLM's answer: a deployment our tables send to the wrong variant translates to a
different name and disagrees. What it cannot tell apart (a backend whose member name our
tables do not model) raises :class:`UnknownBackend`, which the harness reports as a
disagreement, never as agreement.
"""

from __future__ import annotations

from typing import Mapping

__all__ = ["NO_ENUM_FAMILIES", "NO_MEMBER", "UnknownBackend", "vllm_backend_name", "SHORTCUT_BACKENDS"]


class UnknownBackend(LookupError):
    """No vLLM backend member is known for this (family, kernel)."""


# Our backend id -> member name, where it is not the id upper-cased (every family).
_RENAMED: Mapping[str, str] = {
    "deep_gemm": "DEEPGEMM",  # Fp8MoeBackend.DEEPGEMM
    "batched_deep_gemm": "BATCHED_DEEPGEMM",  # Fp8MoeBackend.BATCHED_DEEPGEMM
}

# (family, our kernel id) -> member name: the families whose enum names the activation variant
# or the batched form (vLLM 0.33.0-0.34.0 P/oracle/mxfp4.py Mxfp4MoeBackend, nvfp4.py NvFp4MoeBackend,
# fp8.py Fp8MoeBackend TRITON_MXFP8 / AITER_MXFP8 / CPU_W8A8, int_wna16.py WNA16MoEBackend,
# w4a8.py W4A8MoeBackend, w4a8_int8.py W4A8Int8MoeBackend).
_BY_KERNEL: Mapping[tuple[str, str], str] = {
    ("mxfp4", "b12x_mxfp4"): "B12X_MXFP4_BF16",
    ("mxfp4", "b12x_mxfp4_mxfp8"): "B12X_MXFP4_MXFP8",
    ("mxfp4", "deep_gemm_fp4"): "DEEPGEMM_MXFP4",
    # --moe-backend flashinfer_moe_ep_mega_deep_gemm maps to Mxfp4MoeBackend.FLASHINFER_MOE_EP_DEEP_GEMM
    # (vLLM 0.32.0-0.34.0 P/oracle/mxfp4.py map_mxfp4_backend); first compared by the guided draws.
    ("mxfp4", "flashinfer_moe_ep_deep_gemm_mxfp4"): "FLASHINFER_MOE_EP_DEEP_GEMM",
    ("mxfp4", "vllm_cutlass_mxfp4"): "CUTLASS_MXFP4_MXFP4",
    ("mxfp4", "marlin_batched"): "BATCHED_MARLIN",
    ("wna16", "marlin_batched"): "BATCHED_MARLIN",
    ("nvfp4", "flashinfer_cutedsl_batched"): "FLASHINFER_CUTEDSL_BATCHED",
    ("mxfp8", "triton_mxfp8"): "TRITON_MXFP8",
    ("mxfp8", "aiter_mxfp8"): "AITER_MXFP8",
    ("fp8", "cpu_fp8_w8a8"): "CPU_W8A8",
    ("wna16", "cpu_zentorch_int4"): "ZEN_CPU",
    ("w4a8_fp8", "vllm_cutlass_w4a8"): "CUTLASS",
    ("w4a8_int8", "cpu_w4a8_int8"): "CPU_INT4",
}

# (family, our backend id) -> member name: MXFP4's FlashInfer backends carry the activation
# variant in our backend id (``*_afp8``: MXFP8 activations), vLLM in the member name.
_BY_BACKEND: Mapping[tuple[str, str], str] = {
    ("mxfp4", "flashinfer_trtllm"): "FLASHINFER_TRTLLM_MXFP4_BF16",
    ("mxfp4", "flashinfer_trtllm_afp8"): "FLASHINFER_TRTLLM_MXFP4_MXFP8",
    ("mxfp4", "flashinfer_cutlass"): "FLASHINFER_CUTLASS_MXFP4_BF16",
    ("mxfp4", "flashinfer_cutlass_afp8"): "FLASHINFER_CUTLASS_MXFP4_MXFP8",
    ("mxfp4", "aiter"): "AITER_MXFP4_BF16",  # Mxfp4MoeBackend.AITER is an alias of AITER_MXFP4_BF16
}

# (family, our kernel id) -> ((releases, member), ...): where a release's enum names the class's
# backend otherwise. vLLM 0.29.0 has no AITER_TRITON_MXFP4_BF16: AiterW4A16ExpertsMonolithic is the
# second class of AITER_MXFP4_BF16 (vLLM 0.29.0 P/oracle/mxfp4.py Mxfp4MoeBackend, backend_to_kernel_cls:
# AITER_MXFP4_BF16 -> [AiterExperts, AiterW4A16ExpertsMonolithic]; 0.30.0 adds the member), which our
# tables model as the aiter_triton_mxfp4_bf16 backend directly after aiter (kernels/aiter.yaml).
_BY_RELEASE: Mapping[tuple[str, str], tuple[tuple[frozenset[str], str], ...]] = {
    ("mxfp4", "aiter_w4a16_monolithic"): ((frozenset({"0.29.0"}), "AITER_MXFP4_BF16"),),
}

NO_MEMBER = "None"
"""The backend both sides report where the method keeps no backend enum (the harness's vLLM side
prints ``str(None)``)."""

NO_ENUM_FAMILIES = frozenset({"lut_b"})
"""Families whose quantization method picks its experts class with no backend enum (vLLM 0.34.0
Q/online/lut_b.py ``LutBOnlineMoEMethod`` keeps only ``experts_cls``): vLLM reports no member, and
the class (compared apart) is the whole answer."""

SHORTCUT_BACKENDS: Mapping[str, str] = {
    # CompressedTensorsW4A4Mxfp4MoEMethod.__init__ sets mxfp4_backend = MARLIN first and keeps it
    # when it picks CutlassExpertsMxfp4 or (from the device probe) MarlinExperts; only the b12x /
    # MoE-EP request path and XPU set another member (vLLM 0.32.0-0.33.0
    # Q/compressed_tensors/compressed_tensors_moe/compressed_tensors_moe_w4a4_mxfp4.py lines 56-78;
    # 0.29.0-0.31.0 the same, lines 50-71; 0.34.0 the same, lines 60-83, with a deep_gemm request
    # also sent to the selector: the .deep_gemm shortcuts).
    "shortcut.ct_mxfp4_cutlass": "MARLIN",
    "shortcut.ct_mxfp4_cutlass.old": "MARLIN",
    "shortcut.ct_mxfp4_cutlass.deep_gemm": "MARLIN",
    "shortcut.ct_mxfp4_marlin": "MARLIN",
    "shortcut.ct_mxfp4_marlin.old": "MARLIN",
    "shortcut.ct_mxfp4_marlin.deep_gemm": "MARLIN",
}
"""Shortcut id -> the member vLLM reports when that early return picks the class."""


def vllm_backend_name(family: str, backend: str, kernel: str, shortcut: str | None = None, release: str | None = None) -> str:
    """The vLLM backend member name for our selection of ``kernel`` (backend ``backend``) on a
    layer of quant ``family`` (``shortcut``: the shortcut that chose it, if any) in vLLM
    ``release`` (``None``: the newest naming).

    >>> vllm_backend_name("mxfp4", "aiter_triton_mxfp4_bf16", "aiter_w4a16_monolithic", release="0.29.0")
    'AITER_MXFP4_BF16'

    >>> vllm_backend_name("mxfp4", "flashinfer_trtllm_afp8", "flashinfer_trtllm_mxfp4_monolithic")
    'FLASHINFER_TRTLLM_MXFP4_MXFP8'
    >>> vllm_backend_name("fp8", "deep_gemm", "deep_gemm")
    'DEEPGEMM'

    Raises:
        UnknownBackend: ``backend`` is empty.
    """
    if not backend:
        raise UnknownBackend(f"no backend for kernel {kernel!r} ({family})")
    if family in NO_ENUM_FAMILIES:
        return NO_MEMBER
    if shortcut is not None and shortcut in SHORTCUT_BACKENDS:
        return SHORTCUT_BACKENDS[shortcut]
    for releases, member in _BY_RELEASE.get((family, kernel), ()):
        if release in releases:
            return member
    hit = _BY_KERNEL.get((family, kernel)) or _BY_BACKEND.get((family, backend))
    if hit is not None:
        return hit
    return _RENAMED.get(backend, backend.upper())
