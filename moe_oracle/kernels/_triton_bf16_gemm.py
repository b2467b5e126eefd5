"""Our bf16 grouped GEMM over expert-sorted rows (the decode path of the bf16 experts), activation fused into GEMM1.

Serves :class:`~moe_oracle.kernels.torch_grouped_mm.TorchGroupedMMExperts` on the token counts its
path table (``runtime_tables/paths/bf16_grouped.yaml``) gives to ``triton``. GEMM1 reads the
tokens' rows through the sorted token index (no gathered copy) and applies the activation
(``[gate; up]`` halves or interleaved rows, bias) to its float32 accumulators before the one bf16
rounding. Triton 3.9's interpreter multiplies bf16 dot operands wrongly: under the interpreter
the operands are upcast to float32 before ``tl.dot``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from ..core.vocab import Activation
from ._triton_common import (
    _ACT_CODES, INTERPRET, _gated, _grouped_pid, _live_tiles, _pow2, _tile_map, _tile_rows, _to_bf16, _unary,
    activation_descriptor, check_tile, launch_grid, weight_descriptor,
)

__all__ = ["GemmTile", "bf16_grouped_gemm"]


@triton.jit
def _bf16_grouped_gemm_kernel(
    a_ptr, tok_ptr, b_ptr, bias_ptr, c_ptr, counts_ptr,
    num_local, n_out, n_w, k_dim, up_off, gate_step, max_tiles_m,
    stride_am, stride_be, stride_bn, stride_bias_e, stride_cm,
    alpha, limit,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_E: tl.constexpr, GROUP_M: tl.constexpr,
    SPLIT_M: tl.constexpr, INDIRECT: tl.constexpr, GATED: tl.constexpr, ACT: tl.constexpr, HAS_BIAS: tl.constexpr,
    EVEN_K: tl.constexpr, B_DESC: tl.constexpr, A_DESC: tl.constexpr, PERSIST: tl.constexpr, FLAT: tl.constexpr, WS: tl.constexpr, EMULATE: tl.constexpr,
):
    if PERSIST:  # a fixed grid; each program takes every num_programs-th live tile in the grouped order
        live = _live_tiles(counts_ptr, num_local, BLOCK_M, BLOCK_E)
        for t in tl.range(tl.program_id(0), live * tl.cdiv(n_out, BLOCK_N), tl.num_programs(0), flatten=FLAT):
            pid_m, pid_n = _grouped_pid(t, n_out, live, BLOCK_N, GROUP_M)
            _, e, first_row, n_rows = _tile_map(counts_ptr, num_local, pid_m, BLOCK_M, BLOCK_E)
            _bf16_split_tile(a_ptr, tok_ptr, b_ptr, bias_ptr, c_ptr, e, pid_n, first_row, n_rows, n_out, n_w, k_dim, up_off, gate_step,
                             stride_am, stride_be, stride_bn, stride_bias_e, stride_cm, alpha, limit,
                             BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_M, INDIRECT, GATED, ACT, HAS_BIAS, EVEN_K, B_DESC, A_DESC, WS, EMULATE)
    else:
        pid_m, pid_n = _grouped_pid(tl.program_id(0), n_out, max_tiles_m, BLOCK_N, GROUP_M)
        live, e, first_row, n_rows = _tile_map(counts_ptr, num_local, pid_m, BLOCK_M, BLOCK_E)
        if pid_m < live:
            _bf16_split_tile(a_ptr, tok_ptr, b_ptr, bias_ptr, c_ptr, e, pid_n, first_row, n_rows, n_out, n_w, k_dim, up_off, gate_step,
                             stride_am, stride_be, stride_bn, stride_bias_e, stride_cm, alpha, limit,
                             BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_M, INDIRECT, GATED, ACT, HAS_BIAS, EVEN_K, B_DESC, A_DESC, WS, EMULATE)


@triton.jit
def _bf16_split_tile(
    a_ptr, tok_ptr, b_ptr, bias_ptr, c_ptr, e, pid_n, first_row, n_rows, n_out, n_w, k_dim, up_off, gate_step,
    stride_am, stride_be, stride_bn, stride_bias_e, stride_cm, alpha, limit,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_M: tl.constexpr, INDIRECT: tl.constexpr,
    GATED: tl.constexpr, ACT: tl.constexpr, HAS_BIAS: tl.constexpr, EVEN_K: tl.constexpr, B_DESC: tl.constexpr,
    A_DESC: tl.constexpr, WS: tl.constexpr, EMULATE: tl.constexpr,
):
    # SPLIT_M: an expert's last tile with at most SPLIT_M rows takes the SPLIT_M-row code path (less padding;
    # its weight tiles were just read by the expert's other m-tiles, which run next to it in launch order).
    if SPLIT_M > 0:
        if n_rows <= SPLIT_M:
            _bf16_tile(a_ptr, tok_ptr, b_ptr, bias_ptr, c_ptr, e, pid_n, first_row, n_rows, n_out, n_w, k_dim, up_off, gate_step,
                       stride_am, stride_be, stride_bn, stride_bias_e, stride_cm, alpha, limit,
                       SPLIT_M, BLOCK_N, BLOCK_K, INDIRECT, GATED, ACT, HAS_BIAS, EVEN_K, B_DESC, A_DESC, WS, EMULATE)
        else:
            _bf16_tile(a_ptr, tok_ptr, b_ptr, bias_ptr, c_ptr, e, pid_n, first_row, n_rows, n_out, n_w, k_dim, up_off, gate_step,
                       stride_am, stride_be, stride_bn, stride_bias_e, stride_cm, alpha, limit,
                       BLOCK_M, BLOCK_N, BLOCK_K, INDIRECT, GATED, ACT, HAS_BIAS, EVEN_K, B_DESC, A_DESC, WS, EMULATE)
    else:
        _bf16_tile(a_ptr, tok_ptr, b_ptr, bias_ptr, c_ptr, e, pid_n, first_row, n_rows, n_out, n_w, k_dim, up_off, gate_step,
                   stride_am, stride_be, stride_bn, stride_bias_e, stride_cm, alpha, limit,
                   BLOCK_M, BLOCK_N, BLOCK_K, INDIRECT, GATED, ACT, HAS_BIAS, EVEN_K, B_DESC, A_DESC, WS, EMULATE)


@triton.jit
def _bf16_tile(
    a_ptr, tok_ptr, b_ptr, bias_ptr, c_ptr, e, pid_n, first_row, n_rows, n_out, n_w, k_dim, up_off, gate_step,
    stride_am, stride_be, stride_bn, stride_bias_e, stride_cm, alpha, limit,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, INDIRECT: tl.constexpr, GATED: tl.constexpr,
    ACT: tl.constexpr, HAS_BIAS: tl.constexpr, EVEN_K: tl.constexpr, B_DESC: tl.constexpr, A_DESC: tl.constexpr, WS: tl.constexpr,
    EMULATE: tl.constexpr,
):
    # One output tile: rows [first_row, first_row + n_rows) of expert e, columns of n-tile pid_n.
    # B_DESC: b_ptr is a tensor descriptor over the weights seen as [E * n_w, K] (TMA loads; gate_step 1).
    # A_DESC (rows in order, no SPLIT_M): a_ptr is a tensor descriptor over A [rows, K]; a box of BLOCK_M rows from
    # first_row may hold the next expert's rows (their outputs are not stored); boxes past the last row or K are zero-filled.
    rows, rmask, arow = _tile_rows(tok_ptr, first_row, n_rows, BLOCK_M, INDIRECT)
    rk = tl.arange(0, BLOCK_K)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    nmask = rn < n_out
    rn_safe = tl.where(nmask, rn, 0)
    e64 = e.to(tl.int64)
    if not A_DESC:
        a_ptrs = a_ptr + arow[:, None] * stride_am + rk[None, :]
    # Weight rows: gate row of output column n is n * gate_step, its up row that + up_off
    # ([gate; up] halves: step 1, up_off n_out; interleaved: step 2, up_off 1).
    g_rows = rn_safe.to(tl.int64) * gate_step
    if B_DESC:
        b_row = e * n_w + pid_n * BLOCK_N
    else:
        b_ptrs = b_ptr + e64 * stride_be + g_rows[None, :] * stride_bn + rk[:, None]
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    if GATED:
        if not B_DESC:
            bu_ptrs = b_ptrs + up_off * stride_bn
        acc_u = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in tl.range(0, k_dim, BLOCK_K, warp_specialize=WS):
        if not EVEN_K:
            kmask = (k0 + rk) < k_dim
        if A_DESC:
            a = a_ptr.load([first_row, k0])
        elif EVEN_K:
            a = tl.load(a_ptrs, mask=rmask[:, None], other=0.0)
        else:
            a = tl.load(a_ptrs, mask=rmask[:, None] & kmask[None, :], other=0.0)
        if B_DESC:  # a box past K is zero-filled
            b = b_ptr.load([b_row, k0]).T
        elif EVEN_K:
            b = tl.load(b_ptrs)
        else:
            b = tl.load(b_ptrs, mask=kmask[:, None], other=0.0)
        if EMULATE:  # Triton's interpreter multiplies bf16 dot operands wrongly (3.9); float32 products are exact
            a = a.to(tl.float32)
            b = b.to(tl.float32)
        acc = tl.dot(a, b, acc)
        if GATED:
            if B_DESC:
                bu = b_ptr.load([b_row + up_off, k0]).T
            else:
                if EVEN_K:
                    bu = tl.load(bu_ptrs)
                else:
                    bu = tl.load(bu_ptrs, mask=kmask[:, None], other=0.0)
                bu_ptrs += BLOCK_K
            if EMULATE:
                bu = bu.to(tl.float32)
            acc_u = tl.dot(a, bu, acc_u)
        if not A_DESC:
            a_ptrs += BLOCK_K
        if not B_DESC:
            b_ptrs += BLOCK_K
    if HAS_BIAS:
        brow = bias_ptr + e64 * stride_bias_e
        acc += tl.load(brow + g_rows, mask=nmask, other=0.0)[None, :]
        if GATED:
            acc_u += tl.load(brow + g_rows + up_off, mask=nmask, other=0.0)[None, :]
    if GATED:
        out = _gated(acc, acc_u, alpha, limit, ACT)
    elif ACT >= 0:
        out = _unary(acc, ACT)
    else:
        out = acc
    c_ptrs = c_ptr + rows.to(tl.int64)[:, None] * stride_cm + rn[None, :]
    tl.store(c_ptrs, _to_bf16(out, EMULATE), mask=rmask[:, None] & nmask[None, :])


@dataclass(frozen=True)
class GemmTile:
    """Tile shape of :func:`bf16_grouped_gemm`: ``BLOCK_M x BLOCK_N`` outputs per program (gated: ``BLOCK_N``
    columns of the activation, i.e. ``2 * BLOCK_N`` weight rows), ``BLOCK_K`` per step. ``tma``: load
    the weights through a tensor descriptor (TMA, SM 90+); pointers where
    :func:`~moe_oracle.kernels._triton_common.weight_descriptor` gives none or the gate/up rows are
    interleaved. ``split``: 0, or ``S`` < ``block_m``: an expert's last m-tile with at most ``S`` rows
    runs an ``S``-row code path of the same launch (at most ``S - 1`` padded rows instead of
    ``block_m - 1``). ``persistent``: 0, one program per tile; ``P`` in 1-8: ``P`` programs per SM,
    each looping over the live tiles in the same grouped order; ``flat`` (persistent, no ``split``):
    Triton flattens the tile and K loops into one software pipeline (the next tile's loads overlap
    this tile's last steps). ``ws``: Triton's warp-specialized K loop (``tl.range(warp_specialize=True)``).
    ``tma_a`` (GEMM2: rows in expert order; no ``split``): load the activation rows through a tensor
    descriptor too (boxes of ``block_m`` rows from each tile's first row).

    Raises:
        ValueError: a block size not a power of two of at least 16, or warps/stages/group/tma/split/tma_a out of range.
    """

    block_m: int
    block_n: int
    block_k: int
    num_warps: int = 4
    num_stages: int = 3
    group_m: int = 1
    tma: bool = False
    split: int = 0
    persistent: int = 0
    ws: bool = False
    flat: bool = False
    tma_a: bool = False

    def __post_init__(self) -> None:
        for field in ("block_m", "block_n", "block_k"):
            v = getattr(self, field)
            if not isinstance(v, int) or v < 16 or v & (v - 1):
                raise ValueError(f"GemmTile.{field}: {v!r} is not allowed; a power of two >= 16")
        check_tile(self)


def bf16_grouped_gemm(
    a: torch.Tensor,
    w: torch.Tensor,
    counts: torch.Tensor,
    rows: int,
    tile: GemmTile,
    *,
    sorted_tok: torch.Tensor | None = None,
    act: Activation | None = None,
    bias: torch.Tensor | None = None,
    swiglu_alpha: float = 1.702,
    swiglu_limit: float = 7.0,
) -> torch.Tensor:
    """Grouped GEMM over expert-sorted rows, bf16 in and out, float32 accumulation.

    Row ``r`` of group ``e`` (groups in expert order, ``counts[e]`` rows each, no padding between
    groups) is ``A[r] @ W[e].T`` (+ bias, then the activation when ``act`` is given).

    Args:
        a: ``[*, K]`` bf16, K contiguous; with ``sorted_tok`` row ``r`` reads ``a[sorted_tok[r]]``
            (GEMM1 reads the tokens' hidden rows in place: no gathered copy).
        w: ``[E, N_w, K]`` bf16 (vLLM layout, K contiguous).
        counts: ``[E]`` int32 rows per expert (:attr:`Layout.counts`).
        rows: static row count of the output (``>= sum(counts)``; rows past it are left unwritten).
        tile: the tile shape.
        act: ``None``: plain GEMM, ``[rows, N_w]``. A gated activation (``[gate; up]`` halves or
            interleaved rows): ``N_w = 2 * n``, output ``[rows, n]``, the activation applied to the
            float32 accumulators (no bf16 rounding before it). A ``*_no_mul`` one: ``[rows, N_w]``.
        bias: ``[E, N_w]`` float32 added to the accumulators before the activation, or ``None``.

    Returns:
        ``[rows, n_out]`` bf16.

    Raises:
        ValueError: dtypes other than bf16, ``a``'s width not ``w``'s K, or ``tile.tma_a`` with ``sorted_tok``.
    """
    if a.dtype != torch.bfloat16 or w.dtype != torch.bfloat16:
        raise ValueError(f"bf16_grouped_gemm takes bf16 a and w, got {a.dtype} and {w.dtype}")
    num_local, n_w, k_dim = w.shape
    if a.shape[-1] != k_dim or a.stride(-1) != 1 or w.stride(-1) != 1:
        raise ValueError(f"bf16_grouped_gemm: a [*, {a.shape[-1]}] must be [*, K={k_dim}] with K contiguous (and w's K contiguous)")
    gated, interleaved, code = False, False, -1
    if act is not None:
        code, gated, interleaved = _ACT_CODES[Activation(act)]
    n_out = n_w // 2 if gated else n_w
    out = torch.empty(rows, n_out, dtype=torch.bfloat16, device=w.device)
    if rows == 0 or num_local == 0:
        return out
    gate_step, up_off = (2, 1) if interleaved else (1, n_out)
    if bias is not None:
        bias = bias.float().contiguous()
    if tile.tma_a and sorted_tok is not None:
        raise ValueError("bf16_grouped_gemm: tile.tma_a True is not allowed with sorted_tok (rows read through the token index); it needs rows in order (GEMM2)")
    desc = weight_descriptor(w, tile.block_n, tile.block_k) if tile.tma and not interleaved else None
    a_desc = activation_descriptor(a, tile.block_m, tile.block_k) if tile.tma_a else None
    max_tiles_m = triton.cdiv(rows, tile.block_m) + num_local
    grid = (launch_grid(w.device, max_tiles_m * triton.cdiv(n_out, tile.block_n), tile.persistent),)
    _bf16_grouped_gemm_kernel[grid](
        a if a_desc is None else a_desc, sorted_tok if sorted_tok is not None else counts, w if desc is None else desc, bias if bias is not None else counts, out, counts,
        num_local, n_out, n_w, k_dim, up_off, gate_step if gated else 1, max_tiles_m,
        a.stride(0), w.stride(0), w.stride(1), 0 if bias is None else bias.stride(0), out.stride(0),
        float(swiglu_alpha), float(swiglu_limit),
        BLOCK_M=tile.block_m, BLOCK_N=tile.block_n, BLOCK_K=tile.block_k, BLOCK_E=_pow2(num_local), GROUP_M=tile.group_m,
        SPLIT_M=tile.split, INDIRECT=sorted_tok is not None, GATED=gated, ACT=code, HAS_BIAS=bias is not None,
        EVEN_K=k_dim % tile.block_k == 0, B_DESC=desc is not None, A_DESC=a_desc is not None, PERSIST=tile.persistent > 0, FLAT=tile.flat, WS=tile.ws,
        EMULATE=INTERPRET, num_warps=tile.num_warps, num_stages=tile.num_stages,
    )
    return out
