"""Experts for 128x128-block fp8 checkpoints (DeepSeek-V3/R1, Qwen3 FP8) on our own Triton grouped GEMM.

Scheme ``fp8_block``: weights ``fp8_static_block128`` (e4m3, one float32 scale per 128x128 tile,
``w13_scale [E, w13_rows/128, hidden/128]``, ``w2_scale [E, hidden/128, intermediate/128]``),
activations ``fp8_dynamic_group128`` (one scale per token and 128 columns).

Per call (``T`` tokens, top-``K``): the input is quantized per 1x128 group (Triton); the routing
layout kernels of :mod:`moe_oracle.kernels._triton_moe` sort the (token, k) pairs by local expert
(indices only: GEMM1 reads each token's fp8 row through the sorted token index, so no gathered
copy is written); GEMM1 (:func:`~moe_oracle.kernels._triton_moe.fp8_block_gemm`) accumulates
``dot(A_kb, W_kb) * a_scale * w_scale`` per 128-wide K step in float32, applies the gated
activation to the ``[gate; up]`` tile pair in its epilogue and stores the result as fp8 with one
scale per row and 128 columns (the GEMM2 input quantization, fused); GEMM2 writes bf16; the
combine sums each token's rows with their routing weights in float32 and writes bf16. The two
GEMMs' tiles come, per call, from ``runtime_tables/paths/fp8_block.yaml`` by token count for the
layers tuned there (an H200 sweep, ``benchmarks/kernel_sweep.py``), else from the kernel's own
choice by mean rows per expert.

Numerics against the float32 reference (which dequantizes the weights and simulates the same
activation quantization): the fp8 inputs are the same values on both sides; GEMM1's output is
never rounded to bf16 before its quantization, so the two sides differ by float32 summation order,
the bf16 rounding of GEMM2's output and the final bf16 cast.

Limits (declared in ``kernels/triton_fp8_block.yaml``): bf16 model, no expert bias, activations
with ``[gate; up]`` halves or ``*_no_mul`` (not interleaved ``swigluoai``), hidden size and
intermediate size per partition multiples of 128 (a weight-scale tile must not straddle two
output tiles); CUDA, tested on SM 90.

Source: the block-scaled dot with per-K-block scale products follows vLLM main 00f7f258
``P/fused_moe.py`` ``fused_moe_kernel`` (``block_shape [128, 128]``); scale layouts of
:mod:`moe_oracle.runtime.fp8`.
"""

from __future__ import annotations

import torch

from ..core.quant import SCHEMES
from ..runtime.activations import GPT_OSS_SWIGLU_ALPHA, GPT_OSS_SWIGLU_LIMIT
from ..runtime.errors import UnsupportedConfigError
from ..runtime.interfaces import ModularExperts
from ..runtime.spec import LayerSpec
from ..runtime.weights import MoEWeights
from ..core.vocab import Activation, DType
from .torch_grouped_mm import triton_ops

__all__ = ["TritonFP8BlockExperts"]

FP8_BLOCK_SCHEME = SCHEMES["fp8_block"]


class TritonFP8BlockExperts(ModularExperts):
    """Modular standard-format experts for ``fp8_block`` layers (module docstring).

    ``apply(hidden [T, hidden] bf16, topk_weights [T, K] fp32, topk_ids [T, K] int64) -> [T, hidden] bf16``;
    quantizes its own input (``expects_unquantized_inputs``).

    Raises:
        UnsupportedConfigError: another scheme, a model dtype other than bf16, expert biases, an
            interleaved or unimplemented activation, sizes not multiples of 128, or weights on a
            device where the Triton kernels cannot run.
    """

    def __init__(self, spec: LayerSpec, weights: MoEWeights) -> None:
        super().__init__(spec, weights)
        name = type(self).__name__
        if spec.quant != FP8_BLOCK_SCHEME:
            raise UnsupportedConfigError(name, "quant", spec.quant.name, [FP8_BLOCK_SCHEME.name])
        if spec.dtype is not DType.BFLOAT16:
            raise UnsupportedConfigError(name, "in_dtype", spec.dtype.value, ["bfloat16"])
        if spec.has_bias or weights.w13_bias is not None or weights.w2_bias is not None:
            raise UnsupportedConfigError(name, "has_bias", True, [False])
        self._ops = triton_ops(weights.device)
        if self._ops is None:
            raise UnsupportedConfigError(name, "device", weights.device.type, ["cuda (with triton)"])
        allowed = sorted(a.value for a in self._ops.SUPPORTED_ACTIVATIONS if a is not Activation.SWIGLUOAI)
        if spec.activation.value not in allowed:
            raise UnsupportedConfigError(name, "activation", spec.activation.value, allowed)
        for field, size in (("hidden_size", spec.hidden_size), ("intermediate_size_per_partition", spec.intermediate_size)):
            if size % 128:
                raise UnsupportedConfigError(name, field, size, "a multiple of 128 (one weight-scale tile per output tile)")
        self._w13 = weights.w13.contiguous()
        self._w2 = weights.w2.contiguous()
        self._s13 = weights.w13_scale.float().contiguous()
        self._s2 = weights.w2_scale.float().contiguous()
        from .path_tables import fp8_table_path, load_paths

        self.paths = load_paths(str(fp8_table_path()))
        """The tile table ``runtime_tables/paths/fp8_block.yaml`` (:mod:`moe_oracle.kernels.path_tables`)."""
        self.configs: tuple[object, object] | None = None
        """``(GEMM1 config, GEMM2 config)`` that override the table (tuning only)."""

    def configs_for(self, tokens: int) -> tuple[object, object]:
        """The two GEMMs' tiles for a call of ``tokens`` tokens: :attr:`configs`, else the table's
        choice, else ``(None, None)`` (the kernel's own :func:`~moe_oracle.kernels._triton_moe.block_config`)."""
        if self.configs is not None:
            return self.configs
        spec = self.spec
        choice = self.paths.choose(spec.num_local_experts, spec.hidden_size, spec.intermediate_size, spec.top_k, tokens)
        return (None, None) if choice is None else (choice.gemm1, choice.gemm2)

    def apply(self, hidden_states, topk_weights, topk_ids, *, a1_scale=None, expert_num_tokens=None):  # noqa: ANN001, ANN201 - see ModularExperts.apply
        if a1_scale is not None:
            raise ValueError(f"{type(self).__name__} quantizes its own input: pass bf16 hidden states")
        ops, spec = self._ops, self.spec
        tokens = topk_ids.shape[0]
        if spec.num_local_experts == 0 or tokens == 0:
            return torch.zeros(tokens, spec.hidden_size, dtype=torch.bfloat16, device=hidden_states.device)
        alpha = GPT_OSS_SWIGLU_ALPHA if spec.swiglu_alpha is None else spec.swiglu_alpha
        limit = GPT_OSS_SWIGLU_LIMIT if spec.swiglu_limit is None else spec.swiglu_limit
        cfg1, cfg2 = self.configs_for(tokens)
        xq, xs = ops.quantize_rows(hidden_states.to(torch.bfloat16).contiguous(), 128)  # [T, H] fp8, [T, H/128]
        layout = ops.route_layout(topk_ids, spec.first_local_expert, spec.num_local_experts)
        a, a_scale = ops.fp8_block_gemm(
            xq, xs, self._w13, self._s13, layout.counts, layout.rows, sorted_tok=layout.sorted_tok,
            act=spec.activation, quant_out=True, swiglu_alpha=alpha, swiglu_limit=limit, config=cfg1,
        )
        y, _ = ops.fp8_block_gemm(a, a_scale, self._w2, self._s2, layout.counts, layout.rows, config=cfg2)
        return ops.combine(y, layout, topk_weights, topk_ids, spec.first_local_expert)
