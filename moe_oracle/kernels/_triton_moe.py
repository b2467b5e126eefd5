"""Triton kernels of our experts: routing layout, activation, fp8 quantization, combine, fp8 block GEMM.

This module is the namespace the adapters receive (``triton_ops``); the kernels live in one
module per job: ``_triton_common`` (interpreter switch, activation codes, jit math and casts, the GEMMs' tile map),
``_triton_layout`` (:func:`route_layout`, :func:`combine`), ``_triton_elementwise``
(:func:`activation`, :func:`quantize_rows`), ``_triton_fp8_gemm`` (:func:`fp8_block_gemm`) and
``_triton_bf16_gemm`` (:func:`bf16_grouped_gemm`).

Used by :mod:`moe_oracle.kernels.torch_grouped_mm` (the glue around ``torch._grouped_mm`` and
``torch._scaled_grouped_mm``) and :mod:`moe_oracle.kernels.triton_fp8_block` (our 128x128-block
fp8 grouped GEMM). Every launcher has a static grid and reads no device value on the host, so a
call can be captured in a CUDA graph.

Layout of one call (``T`` tokens, top-``K``, ``N = T*K`` (token, k) pairs, ``E`` local experts):

* :func:`route_layout`: one atomic pass counts the pairs of each local expert and gives each pair
  its slot inside its expert's group (``pos``); a second pass turns ``(expert, pos)`` into the pair's
  row of the expert-sorted buffer (``pair_row [N]``, ``-1`` for pairs of other ranks' experts),
  writes the group ends ``offs [E]`` (int32, what ``torch._grouped_mm`` takes), the token of each
  sorted row (``sorted_tok``) and, when asked, copies the token's hidden row (and its fp8 scales)
  into the sorted buffer. Rows inside a group come in atomic order: each row's GEMM result does
  not depend on its position, and the combine sums each token's ``K`` rows in ``k`` order, so the
  output does not depend on that order.
* :func:`activation`: GEMM1 output ``[rows, w13_rows]`` (+ bias) -> activation in float32 ->
  bf16, or fp8 with per-row (``token``) or per-128-column (``group128``) scales; rows past the
  last group end are not touched.
* :func:`combine`: ``out[t] = sum_k w[t,k] * (y[pair_row[t,k]] + b2[expert])`` in float32, one
  bf16 write per output element; only real rows are read.
* :func:`quantize_rows`: per-token or per-1x128-group dynamic fp8 (e4m3fn) quantization, scale
  ``max(amax / 448, 1e-12)`` as :mod:`moe_oracle.runtime.fp8` computes it.
* :func:`bf16_grouped_gemm`: grouped GEMM ``A [rows, K] bf16 x B [E, N, K] bf16`` over
  expert-ordered rows, the tile -> expert map (each expert padded to whole ``BLOCK_M`` tiles)
  computed in the kernel from the group counts; GEMM1 reads the tokens' rows through the sorted
  token index and applies the activation (``[gate; up]`` halves or interleaved rows, bias) to its
  float32 accumulators before the one bf16 rounding. Tiles per layer and token count:
  ``runtime_tables/paths/bf16_grouped.yaml``.
* :func:`fp8_block_gemm`: grouped GEMM ``A [rows, K] fp8 (1x128 scales) x B [E, N, K] fp8 (128x128
  scales)`` with the tile -> expert map computed in the kernel from the group counts; GEMM1 fuses
  the gated activation and the group-128 fp8 quantization of its output into the epilogue. Tiles:
  ``runtime_tables/paths/fp8_block.yaml``.

Both GEMMs can load the weights through a TMA tensor descriptor (tile option ``tma``, SM 90+,
:func:`~moe_oracle.kernels._triton_common.weight_descriptor`) instead of pointers, and give an
expert's last m-tile of at most ``S`` rows an ``S``-row code path (tile option ``split``); both
take their tile -> expert map from ``_triton_common`` (``_grouped_pid``, ``_tile_map``,
``_tile_rows``).

Numerics: float32 accumulation and activation math; bf16 and fp8 casts round to nearest even (fp8
saturates at +-448). Triton's CPU interpreter (``TRITON_INTERPRET=1``, used by the CPU tests)
truncates float32 -> bf16 and drops the carry of float32 -> e4m3 rounding across a power of two
(Triton 3.6), so there :func:`_to_bf16` and :func:`_to_fp8` round on the float32 bits first;
compiled kernels use the hardware conversions.

Sources: vLLM main 00f7f258 ``P/fused_moe.py`` (``fused_moe_kernel``: block-scaled fp8 dot with
per-K-block scale products, grouped tile ordering) and ``moe_align_block_size`` (per-expert tiles);
activation formulas of :mod:`moe_oracle.runtime.activations`.
"""

from ._triton_bf16_gemm import GemmTile, bf16_grouped_gemm
from ._triton_common import FP8_MAX, INTERPRET, SUPPORTED_ACTIVATIONS, available
from ._triton_elementwise import activation, quantize_rows
from ._triton_fp8_gemm import BLOCK_CONFIGS, BlockConfig, block_config, fp8_block_gemm
from ._triton_layout import Layout, combine, route_layout

__all__ = [
    "BLOCK_CONFIGS",
    "FP8_MAX",
    "SUPPORTED_ACTIVATIONS",
    "BlockConfig",
    "GemmTile",
    "bf16_grouped_gemm",
    "block_config",
    "INTERPRET",
    "Layout",
    "activation",
    "available",
    "combine",
    "fp8_block_gemm",
    "quantize_rows",
    "route_layout",
]
