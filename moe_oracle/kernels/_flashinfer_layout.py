"""Weight-layout conversions FlashInfer's fused-MoE kernels require, in plain torch.

Pure index permutations and reshapes (dtype-agnostic), so they are tested on CPU
against written definitions of the target layouts (``tests/runtime/test_flashinfer_layout.py``).

Definitions (``E`` experts, ``M`` rows of one expert's weight, ``K`` its reduction dim):

* **w13 -> w31**: vLLM stores GEMM1 rows as ``[gate; up]``; FlashInfer's gated kernels
  (SwiGLU: ``silu(gate) * up`` with the halves in the other order) want ``[up; gate]``:
  rows ``[0, I)`` and ``[I, 2I)`` swap (also for block scales ``[E, 2I/128, K/128]``).
* **gated-activation row interleave**: row ``2j`` of the result is row ``j`` (first half)
  and row ``2j + 1`` is row ``M/2 + j`` (second half).
* **epilogue row shuffle** (``shuffle_matrix_a``): within each block of ``B`` rows
  (``B = 32`` when ``epilogue_tile_m % 128 == 0``, else 16), source row ``s`` moves to
  row ``8 * (s % (B // 8)) + s // (B // 8)``.
* **BlockMajorK**: ``[E, M, K]`` -> ``[E, K / block_k, M, block_k]`` with
  ``out[e, b, m, j] = w[e, m, b * block_k + j]``. FlashInfer's ``block_k`` is 128 *bytes*:
  64 bf16 elements, 128 fp8 elements.
* **intermediate padding**: gate and up halves are each zero-padded to ``I_pad`` rows
  (``[gate; 0; up; 0]``), ``w2`` gets ``I_pad - I`` zero columns; the MoE output is unchanged.
* **packed routing** (``*_routed_moe``): int32 ``(expert_id << 16) | bits(bf16(weight))``.

Composite layouts:

* TRT-LLM bf16 (``trtllm_bf16_moe``/``_routed_moe``): w13 -> w31 (gated), gated row
  interleave (gated), epilogue shuffle with ``epilogue_tile_m = 128``, BlockMajorK 64;
  w2: epilogue shuffle (128), BlockMajorK 64.
* TRT-LLM fp8 block-scale, DeepSeek 128x128 (``trtllm_fp8_block_scale_moe``/``_routed_moe``):
  w13 and its scales -> w31 (gated), epilogue shuffle with ``epilogue_tile_m = 64``,
  BlockMajorK 128; w2: shuffle (64), BlockMajorK 128; scales otherwise unchanged.
* CUTLASS (``cutlass_fused_moe``): w13 -> w31 (gated), no other change.

Source: vLLM ``vllm/utils/flashinfer.py`` (``swap_w13_to_w31``,
``convert_moe_weights_to_flashinfer_trtllm_block_layout``,
``_shuffle_deepseek_fp8_moe_weights``, ``prepare_fp8_moe_layer_for_fi``,
``align_moe_weights_for_fi``); FlashInfer ``flashinfer/fused_moe/core.py``
(``convert_to_block_layout``, ``get_reorder_rows_for_gated_act_gemm_row_indices``) and
``flashinfer/utils.py`` (``get_shuffle_matrix_a_row_indices``, ``srcToDstBlk32RowMap``);
FlashInfer docs of ``trtllm_bf16_routed_moe`` (packed ``topk_ids``). Read 2026-11; the
FlashInfer docs' shape text for BlockMajorK gemm1 (``[E, M // 128, hidden // 128, 128]``)
disagrees with the code; the code (``[E, K / block_k, M, block_k]``) is followed here.
"""

from __future__ import annotations

import torch

__all__ = [
    "TRTLLM_BF16_BLOCK_K",
    "TRTLLM_FP8_BLOCK_K",
    "block_major_k",
    "epilogue_shuffle_order",
    "from_block_major_k",
    "gated_interleave_order",
    "pack_topk",
    "pad_intermediate",
    "swap_w13_to_w31",
    "trtllm_bf16_layout",
    "trtllm_fp8_block_layout",
    "unpack_topk",
]

TRTLLM_BF16_BLOCK_K = 64
"""BlockMajorK block of bf16 weights, elements (128 bytes)."""
TRTLLM_FP8_BLOCK_K = 128
"""BlockMajorK block of fp8 weights, elements (128 bytes)."""
_BF16_EPILOGUE_TILE_M = 128
_FP8_BLOCK_EPILOGUE_TILE_M = 64


def swap_w13_to_w31(w: torch.Tensor) -> torch.Tensor:
    """Swap the two halves of dim -2: ``[E, 2I, K]`` ``[gate; up]`` -> ``[up; gate]``.

    Raises:
        ValueError: odd row count.

    >>> swap_w13_to_w31(torch.arange(4).view(1, 4, 1)).flatten().tolist()
    [2, 3, 0, 1]
    """
    rows = w.shape[-2]
    if rows % 2:
        raise ValueError(f"w13 has an odd number of rows ({rows}); it is not [gate; up]")
    half = rows // 2
    return torch.cat([w[..., half:, :], w[..., :half, :]], dim=-2).contiguous()


def gated_interleave_order(rows: int) -> torch.Tensor:
    """Source row of each result row for the gated-activation interleave (``[rows]`` int64).

    >>> gated_interleave_order(6).tolist()
    [0, 3, 1, 4, 2, 5]
    """
    if rows % 2:
        raise ValueError(f"gated interleave needs an even row count, got {rows}")
    return torch.arange(rows).view(2, rows // 2).t().reshape(-1)


def epilogue_shuffle_order(rows: int, epilogue_tile_m: int) -> torch.Tensor:
    """Source row of each result row for FlashInfer's ``shuffle_matrix_a`` (``[rows]`` int64).

    Raises:
        ValueError: ``rows`` is not a multiple of the shuffle block (16 or 32).
    """
    block = 32 if epilogue_tile_m % 128 == 0 else 16
    if rows % block:
        raise ValueError(f"the epilogue shuffle needs rows to be a multiple of {block}, got {rows}")
    q = block // 8
    in_block = torch.arange(block).view(8, q).t().reshape(-1)  # result row n <- source row q*(n%8) + n//8
    return (torch.arange(rows // block).unsqueeze(1) * block + in_block).reshape(-1)


def block_major_k(w: torch.Tensor, block_k: int) -> torch.Tensor:
    """``[E, M, K]`` -> ``[E, K / block_k, M, block_k]`` (FlashInfer ``WeightLayout.BlockMajorK``).

    Raises:
        ValueError: ``K`` is not a multiple of ``block_k``.
    """
    e, m, k = w.shape
    if k % block_k:
        raise ValueError(f"BlockMajorK needs K ({k}) to be a multiple of {block_k}")
    return w.reshape(e, m, k // block_k, block_k).permute(0, 2, 1, 3).contiguous()


def from_block_major_k(w: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`block_major_k`: ``[E, K/b, M, b]`` -> ``[E, M, K]``."""
    e, kb, m, b = w.shape
    return w.permute(0, 2, 1, 3).reshape(e, m, kb * b).contiguous()


def pad_intermediate(w13: torch.Tensor, w2: torch.Tensor, *, multiple: int, gated: bool) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Zero-pad the intermediate dimension to a multiple of ``multiple``.

    Args:
        w13: ``[E, 2I, H]`` (gated, ``[gate; up]``) or ``[E, I, H]``.
        w2: ``[E, H, I]``.

    Returns:
        ``(w13 [E, 2I_pad | I_pad, H], w2 [E, H, I_pad], I_pad)``; inputs returned as-is when aligned.
    """
    e, hidden, inter = w2.shape
    padded = -(-inter // multiple) * multiple
    if padded == inter:
        return w13, w2, inter
    rows = 2 * padded if gated else padded
    w13p = w13.new_zeros((e, rows, w13.shape[-1]))
    w13p[:, :inter] = w13[:, :inter]
    if gated:
        w13p[:, padded : padded + inter] = w13[:, inter:]
    w2p = w2.new_zeros((e, hidden, padded))
    w2p[:, :, :inter] = w2
    return w13p, w2p, padded


def _rows(w: torch.Tensor, order: torch.Tensor) -> torch.Tensor:
    return w.index_select(-2, order.to(w.device))


def trtllm_bf16_layout(w13: torch.Tensor, w2: torch.Tensor, *, gated: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """vLLM-layout bf16 experts -> FlashInfer TRT-LLM bf16 BlockMajorK (see module docstring).

    Args:
        w13: ``[E, 2I | I, H]`` ``[gate; up]``.
        w2: ``[E, H, I]``.

    Returns:
        ``(gemm1 [E, H/64, 2I | I, 64], gemm2 [E, I/64, H, 64])``, dtype unchanged.
    """
    g1 = w13
    if gated:
        g1 = _rows(swap_w13_to_w31(g1), gated_interleave_order(g1.shape[-2]))
    g1 = _rows(g1, epilogue_shuffle_order(g1.shape[-2], _BF16_EPILOGUE_TILE_M))
    g2 = _rows(w2, epilogue_shuffle_order(w2.shape[-2], _BF16_EPILOGUE_TILE_M))
    return block_major_k(g1, TRTLLM_BF16_BLOCK_K), block_major_k(g2, TRTLLM_BF16_BLOCK_K)


def trtllm_fp8_block_layout(
    w13: torch.Tensor, w13_scale: torch.Tensor, w2: torch.Tensor, w2_scale: torch.Tensor, *, gated: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """DeepSeek-style fp8 128x128 block experts -> FlashInfer TRT-LLM fp8 block-scale BlockMajorK.

    Args:
        w13: ``[E, 2I, H]`` float8_e4m3fn, ``[gate; up]``; ``w13_scale`` ``[E, 2I/128, H/128]``.
        w2: ``[E, H, I]`` float8_e4m3fn; ``w2_scale`` ``[E, H/128, I/128]``.

    Returns:
        ``(gemm1 [E, H/128, 2I, 128], gemm1_scale [E, 2I/128, H/128], gemm2 [E, I/128, H, 128],
        gemm2_scale [E, H/128, I/128])``.
    """
    g1, s1 = w13, w13_scale
    if gated:
        g1, s1 = swap_w13_to_w31(g1), swap_w13_to_w31(s1)
    as_bytes = g1.dtype == torch.float8_e4m3fn
    u1 = g1.view(torch.uint8) if as_bytes else g1
    u2 = w2.view(torch.uint8) if as_bytes else w2
    u1 = block_major_k(_rows(u1, epilogue_shuffle_order(u1.shape[-2], _FP8_BLOCK_EPILOGUE_TILE_M)), TRTLLM_FP8_BLOCK_K)
    u2 = block_major_k(_rows(u2, epilogue_shuffle_order(u2.shape[-2], _FP8_BLOCK_EPILOGUE_TILE_M)), TRTLLM_FP8_BLOCK_K)
    if as_bytes:
        u1, u2 = u1.view(torch.float8_e4m3fn), u2.view(torch.float8_e4m3fn)
    return u1, s1.contiguous(), u2, w2_scale.contiguous()


def pack_topk(topk_ids: torch.Tensor, topk_weights: torch.Tensor) -> torch.Tensor:
    """Packed routing of the ``*_routed_moe`` entry points: ``(id << 16) | bits(bf16(weight))``.

    Args:
        topk_ids: ``[T, K]`` global expert ids (< 32768).
        topk_weights: ``[T, K]`` weights (rounded to bf16).

    Returns:
        ``[T, K]`` int32.

    >>> unpack_topk(pack_topk(torch.tensor([[5, 2]]), torch.tensor([[0.75, -0.25]])))
    (tensor([[5, 2]]), tensor([[ 0.7500, -0.2500]]))
    """
    if topk_ids.numel() and (int(topk_ids.min()) < 0 or int(topk_ids.max()) >= 1 << 15):
        raise ValueError("packed routing holds expert ids in [0, 32768)")
    bits = topk_weights.to(torch.bfloat16).view(torch.int16).to(torch.int32) & 0xFFFF
    return (topk_ids.to(torch.int32) << 16) | bits


def unpack_topk(packed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Inverse of :func:`pack_topk`: ``(ids int64, weights float32)``."""
    ids = (packed >> 16).to(torch.int64)
    weights = (packed & 0xFFFF).to(torch.int16).view(torch.bfloat16).float()
    return ids, weights
