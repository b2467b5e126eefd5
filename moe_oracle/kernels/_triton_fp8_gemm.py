"""Our 128x128-block fp8 grouped GEMM (1x128-group fp8 activations), with the gated activation and fp8 output fused.

Serves :class:`~moe_oracle.kernels.triton_fp8_block.TritonFP8BlockExperts`. The tile -> expert map
is computed in the kernel from the group counts (each expert padded to whole ``BLOCK_M`` tiles in
the map only); each 128-wide K step accumulates ``dot(A, W) * a_scale * w_scale`` in float32.

Source: the block-scaled dot with per-K-block scale products follows vLLM main 00f7f258
``P/fused_moe.py`` ``fused_moe_kernel`` (``block_shape [128, 128]``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from ..core.vocab import Activation
from ._triton_common import (
    _ACT_CODES, _GROUP, INTERPRET, _gated, _grouped_pid, _live_tiles, _pow2, _tile_map, _tile_rows, _to_bf16, _to_fp8, _unary,
    activation_descriptor, check_tile, launch_grid, weight_descriptor,
)

__all__ = ["BLOCK_CONFIGS", "BlockConfig", "block_config", "fp8_block_gemm"]


@triton.jit
def _fp8_block_gemm_kernel(
    a_ptr, as_ptr, tok_ptr, b_ptr, bs_ptr, c_ptr, cs_ptr, counts_ptr,
    num_local, n_out, n_w, k_dim, up_off, max_tiles_m,
    stride_am, stride_asm, stride_be, stride_bn, stride_bse, stride_bsn, stride_cm, stride_csm,
    alpha, limit,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_E: tl.constexpr, GROUP_M: tl.constexpr,
    SPLIT_M: tl.constexpr, INDIRECT: tl.constexpr, GATED: tl.constexpr, ACT: tl.constexpr, QUANT_OUT: tl.constexpr, B_DESC: tl.constexpr,
    A_DESC: tl.constexpr, PERSIST: tl.constexpr, FLAT: tl.constexpr, WS: tl.constexpr, EMULATE: tl.constexpr,
):
    if PERSIST:  # a fixed grid; each program takes every num_programs-th live tile in the grouped order
        live = _live_tiles(counts_ptr, num_local, BLOCK_M, BLOCK_E)
        for t in tl.range(tl.program_id(0), live * tl.cdiv(n_out, BLOCK_N), tl.num_programs(0), flatten=FLAT):
            pid_m, pid_n = _grouped_pid(t, n_out, live, BLOCK_N, GROUP_M)
            _, e, first_row, n_rows = _tile_map(counts_ptr, num_local, pid_m, BLOCK_M, BLOCK_E)
            _fp8_split_tile(a_ptr, as_ptr, tok_ptr, b_ptr, bs_ptr, c_ptr, cs_ptr, e, pid_n, first_row, n_rows, n_out, n_w, k_dim, up_off,
                            stride_am, stride_asm, stride_be, stride_bn, stride_bse, stride_bsn, stride_cm, stride_csm, alpha, limit,
                            BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_M, INDIRECT, GATED, ACT, QUANT_OUT, B_DESC, A_DESC, WS, EMULATE)
    else:
        pid_m, pid_n = _grouped_pid(tl.program_id(0), n_out, max_tiles_m, BLOCK_N, GROUP_M)
        live, e, first_row, n_rows = _tile_map(counts_ptr, num_local, pid_m, BLOCK_M, BLOCK_E)
        if pid_m < live:
            _fp8_split_tile(a_ptr, as_ptr, tok_ptr, b_ptr, bs_ptr, c_ptr, cs_ptr, e, pid_n, first_row, n_rows, n_out, n_w, k_dim, up_off,
                            stride_am, stride_asm, stride_be, stride_bn, stride_bse, stride_bsn, stride_cm, stride_csm, alpha, limit,
                            BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_M, INDIRECT, GATED, ACT, QUANT_OUT, B_DESC, A_DESC, WS, EMULATE)


@triton.jit
def _fp8_split_tile(
    a_ptr, as_ptr, tok_ptr, b_ptr, bs_ptr, c_ptr, cs_ptr, e, pid_n, first_row, n_rows, n_out, n_w, k_dim, up_off,
    stride_am, stride_asm, stride_be, stride_bn, stride_bse, stride_bsn, stride_cm, stride_csm, alpha, limit,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, SPLIT_M: tl.constexpr, INDIRECT: tl.constexpr,
    GATED: tl.constexpr, ACT: tl.constexpr, QUANT_OUT: tl.constexpr, B_DESC: tl.constexpr, A_DESC: tl.constexpr, WS: tl.constexpr,
    EMULATE: tl.constexpr,
):
    # SPLIT_M: an expert's last tile with at most SPLIT_M rows takes the SPLIT_M-row code path (see the bf16 kernel).
    if SPLIT_M > 0:
        if n_rows <= SPLIT_M:
            _fp8_tile(a_ptr, as_ptr, tok_ptr, b_ptr, bs_ptr, c_ptr, cs_ptr, e, pid_n, first_row, n_rows, n_out, n_w, k_dim, up_off,
                      stride_am, stride_asm, stride_be, stride_bn, stride_bse, stride_bsn, stride_cm, stride_csm, alpha, limit,
                      SPLIT_M, BLOCK_N, BLOCK_K, INDIRECT, GATED, ACT, QUANT_OUT, B_DESC, A_DESC, WS, EMULATE)
        else:
            _fp8_tile(a_ptr, as_ptr, tok_ptr, b_ptr, bs_ptr, c_ptr, cs_ptr, e, pid_n, first_row, n_rows, n_out, n_w, k_dim, up_off,
                      stride_am, stride_asm, stride_be, stride_bn, stride_bse, stride_bsn, stride_cm, stride_csm, alpha, limit,
                      BLOCK_M, BLOCK_N, BLOCK_K, INDIRECT, GATED, ACT, QUANT_OUT, B_DESC, A_DESC, WS, EMULATE)
    else:
        _fp8_tile(a_ptr, as_ptr, tok_ptr, b_ptr, bs_ptr, c_ptr, cs_ptr, e, pid_n, first_row, n_rows, n_out, n_w, k_dim, up_off,
                  stride_am, stride_asm, stride_be, stride_bn, stride_bse, stride_bsn, stride_cm, stride_csm, alpha, limit,
                  BLOCK_M, BLOCK_N, BLOCK_K, INDIRECT, GATED, ACT, QUANT_OUT, B_DESC, A_DESC, WS, EMULATE)


@triton.jit
def _fp8_tile(
    a_ptr, as_ptr, tok_ptr, b_ptr, bs_ptr, c_ptr, cs_ptr, e, pid_n, first_row, n_rows, n_out, n_w, k_dim, up_off,
    stride_am, stride_asm, stride_be, stride_bn, stride_bse, stride_bsn, stride_cm, stride_csm, alpha, limit,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, INDIRECT: tl.constexpr, GATED: tl.constexpr,
    ACT: tl.constexpr, QUANT_OUT: tl.constexpr, B_DESC: tl.constexpr, A_DESC: tl.constexpr, WS: tl.constexpr, EMULATE: tl.constexpr,
):
    # One output tile: rows [first_row, first_row + n_rows) of expert e, columns of n-tile pid_n.
    # B_DESC: b_ptr is a tensor descriptor over the weights seen as [E * n_w, K] (TMA loads).
    # BLOCK_N > 128 (plain GEMM only): one weight scale per 128 output columns, a vector per K step.
    # A_DESC (rows in order, no SPLIT_M): a_ptr is a tensor descriptor over A [rows, K]; a box of BLOCK_M rows
    # from first_row may hold the next expert's rows, whose scales load as 0 and whose outputs are not stored.
    rows, rmask, arow = _tile_rows(tok_ptr, first_row, n_rows, BLOCK_M, INDIRECT)
    rk = tl.arange(0, BLOCK_K)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    if not A_DESC:
        a_ptrs = a_ptr + arow[:, None] * stride_am + rk[None, :]
    as_ptrs = as_ptr + arow * stride_asm
    e64 = e.to(tl.int64)
    if B_DESC:
        b_row = e * n_w + pid_n * BLOCK_N
    else:
        b_ptrs = b_ptr + e64 * stride_be + rn.to(tl.int64)[None, :] * stride_bn + rk[:, None]
    if BLOCK_N > 128:
        bs_ptrs = bs_ptr + e64 * stride_bse + (rn // 128) * stride_bsn
    else:
        bs_ptrs = bs_ptr + e64 * stride_bse + ((pid_n * BLOCK_N) // 128) * stride_bsn
    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    if GATED:
        if not B_DESC:
            bu_ptrs = b_ptrs + up_off * stride_bn
        bus_ptrs = bs_ptr + e64 * stride_bse + ((up_off + pid_n * BLOCK_N) // 128) * stride_bsn
        acc_u = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for kb in tl.range(0, tl.cdiv(k_dim, BLOCK_K), warp_specialize=WS):
        if A_DESC:
            a = a_ptr.load([first_row, kb * BLOCK_K])
        else:
            a = tl.load(a_ptrs, mask=rmask[:, None], other=0.0)
            a_ptrs += BLOCK_K
        a_s = tl.load(as_ptrs + kb, mask=rmask, other=0.0)
        if B_DESC:
            b = b_ptr.load([b_row, kb * BLOCK_K]).T
        else:
            b = tl.load(b_ptrs)
            b_ptrs += BLOCK_K
        b_s = tl.load(bs_ptrs + kb)
        if BLOCK_N > 128:
            acc += tl.dot(a, b) * (a_s[:, None] * b_s[None, :])
        else:
            acc += tl.dot(a, b) * (a_s[:, None] * b_s)
        if GATED:
            if B_DESC:
                bu = b_ptr.load([b_row + up_off, kb * BLOCK_K]).T
            else:
                bu = tl.load(bu_ptrs)
                bu_ptrs += BLOCK_K
            bu_s = tl.load(bus_ptrs + kb)
            acc_u += tl.dot(a, bu) * (a_s[:, None] * bu_s)
    if GATED:
        out = _gated(acc, acc_u, alpha, limit, ACT)
    elif ACT >= 0:
        out = _unary(acc, ACT)
    else:
        out = acc
    c_ptrs = c_ptr + rows.to(tl.int64)[:, None] * stride_cm + rn[None, :]
    if QUANT_OUT:  # one scale per row and 128 columns: BLOCK_N == 128
        s = tl.maximum(tl.max(tl.abs(out), axis=1) / 448.0, 1e-12)
        tl.store(c_ptrs, _to_fp8(out / s[:, None], EMULATE), mask=rmask[:, None])
        tl.store(cs_ptr + rows.to(tl.int64) * stride_csm + pid_n, s, mask=rmask)
    else:
        tl.store(c_ptrs, _to_bf16(out, EMULATE), mask=rmask[:, None])


@dataclass(frozen=True)
class BlockConfig:
    """Tile shape of :func:`fp8_block_gemm`: ``BLOCK_M x block_n`` outputs per program, ``BLOCK_K = 128``
    (one weight scale per 128 x 128 tile step); ``block_n`` 256 only without ``quant_out``.
    ``tma``: load the weights through a tensor descriptor (TMA, SM 90+; pointers where
    :func:`~moe_oracle.kernels._triton_common.weight_descriptor` gives none). ``split``: 0, or ``S`` <
    ``block_m``: an expert's last m-tile with at most ``S`` rows runs an ``S``-row code path of the
    same launch (at most ``S - 1`` padded rows instead of ``block_m - 1``). ``persistent``: 0, one
    program per tile; ``P`` in 1-8: ``P`` programs per SM, each looping over the live tiles in the
    same grouped order; ``flat`` (persistent, no ``split``): Triton flattens the tile and K loops
    into one software pipeline (the next tile's loads overlap this tile's last steps). ``ws``:
    Triton's warp-specialized K loop (``tl.range(warp_specialize=True)``). ``tma_a`` (GEMM2: rows in
    expert order; no ``split``): load the activation rows through a tensor descriptor too (boxes of
    ``block_m`` rows from each tile's first row).

    Raises:
        ValueError: a field out of its range (the message names field, value and what is allowed).
    """

    block_m: int
    num_warps: int
    num_stages: int
    group_m: int = 8
    block_n: int = 128
    tma: bool = False
    split: int = 0
    persistent: int = 0
    ws: bool = False
    flat: bool = False
    tma_a: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.block_m, int) or self.block_m < 16 or self.block_m & (self.block_m - 1):
            raise ValueError(f"BlockConfig.block_m: {self.block_m!r} is not allowed; a power of two >= 16")
        if self.block_n not in (128, 256):
            raise ValueError(f"BlockConfig.block_n: {self.block_n!r} is not allowed; 128 or 256")
        check_tile(self)


BLOCK_CONFIGS = {
    "gated": ((16, BlockConfig(16, 4, 4)), (48, BlockConfig(64, 4, 4)), (None, BlockConfig(64, 8, 3))),
    "plain": ((16, BlockConfig(16, 4, 4)), (None, BlockConfig(64, 4, 4))),
}
"""GEMM1 with the fused gated activation (``gated``) and GEMM2 (``plain``): (largest mean rows per
expert, config) in order, ``None`` for any larger load. The fastest of six tile shapes on the H200
for a DeepSeek-V3 EP8 shard and Qwen3-30B-A3B-FP8 at 16 to 8,192 tokens
(benchmarks/results/h200_fp8_block_tuning.log; BLOCK_M 128 won GEMM1 for Qwen3 above 64 rows per
expert by 6-12 % and lost for DeepSeek by 12 %: one table for both keeps BLOCK_M 64). The kernel's
own choice when no config is given; the experts adapter takes tuned layers' tiles from
``runtime_tables/paths/fp8_block.yaml`` instead."""


def block_config(rows: int, num_local: int, gated: bool = False) -> BlockConfig:
    """The :data:`BLOCK_CONFIGS` entry for ``rows`` routed rows over ``num_local`` experts."""
    mean = rows / max(num_local, 1)
    for limit, cfg in BLOCK_CONFIGS["gated" if gated else "plain"]:
        if limit is None or mean <= limit:
            return cfg
    raise AssertionError("BLOCK_CONFIGS tables end with a catch-all")


def fp8_block_gemm(
    a: torch.Tensor,
    a_scale: torch.Tensor,
    w: torch.Tensor,
    w_scale: torch.Tensor,
    counts: torch.Tensor,
    rows: int,
    *,
    sorted_tok: torch.Tensor | None = None,
    act: Activation | None = None,
    quant_out: bool = False,
    swiglu_alpha: float = 1.702,
    swiglu_limit: float = 7.0,
    config: BlockConfig | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Grouped GEMM with 128x128-block fp8 weights and 1x128-group fp8 activations.

    Row ``r`` of group ``e`` (groups in expert order, ``counts[e]`` rows each, no padding) is
    ``sum_kb (A[r, kb] . W[e, :, kb]) * a_scale[r, kb] * w_scale[e, n // 128, kb]``.

    Args:
        a: ``[*, K]`` float8_e4m3fn; with ``sorted_tok`` row ``r`` reads ``a[sorted_tok[r]]``.
        a_scale: ``[*, K // 128]`` float32, rows as ``a``.
        w: ``[E, N_w, K]`` float8_e4m3fn (vLLM layout, K contiguous).
        w_scale: ``[E, N_w // 128, K // 128]`` float32.
        counts: ``[E]`` int32 rows per expert (:attr:`Layout.counts`).
        rows: static row count of the output buffer (``>= sum(counts)``).
        act: ``None``: plain GEMM, ``[rows, N_w]`` bf16. A gated activation: ``N_w = 2 * n``, the
            ``[gate; up]`` halves of each expert's rows, output ``[rows, n]``; a ``*_no_mul`` one:
            applied to ``[rows, N_w]``.
        quant_out: store the output as fp8 with one scale per row and 128 columns.
        config: tile shape (default :func:`block_config` for this load and GEMM).

    Returns:
        ``(out, scale)``: ``scale`` ``[rows, n // 128]`` when ``quant_out``, else ``None``.

    Raises:
        ValueError: ``K`` or the output width not a multiple of 128, an interleaved activation,
            ``tma_a`` with ``sorted_tok``, a ``block_n`` of 256 with ``quant_out`` or with an output width not a multiple of 256.
    """
    num_local, n_w, k_dim = w.shape
    gated = False
    code = -1
    if act is not None:
        code, gated, interleaved = _ACT_CODES[Activation(act)]
        if interleaved:
            raise ValueError("fp8_block_gemm fuses [gate; up] halves only, not interleaved gate/up rows")
    n_out = n_w // 2 if gated else n_w
    if k_dim % _GROUP or n_out % _GROUP:
        raise ValueError(f"fp8_block_gemm needs K and N multiples of 128, got K={k_dim}, N={n_out}")
    dev = w.device
    out = torch.empty(rows, n_out, dtype=torch.float8_e4m3fn if quant_out else torch.bfloat16, device=dev)
    scale = torch.empty(rows, n_out // _GROUP, dtype=torch.float32, device=dev) if quant_out else None
    if rows == 0 or num_local == 0:
        return out, scale
    cfg = config or block_config(rows, num_local, gated)
    if cfg.block_n != 128 and (quant_out or n_out % cfg.block_n):
        raise ValueError(f"fp8_block_gemm: block_n {cfg.block_n} needs a plain GEMM (no quant_out) with N a multiple of it, got N={n_out}")
    if cfg.tma_a and sorted_tok is not None:
        raise ValueError("fp8_block_gemm: config.tma_a True is not allowed with sorted_tok (rows read through the token index); it needs rows in order (GEMM2)")
    desc = weight_descriptor(w, cfg.block_n, 128) if cfg.tma else None
    a_desc = activation_descriptor(a, cfg.block_m, 128) if cfg.tma_a else None
    max_tiles_m = triton.cdiv(rows, cfg.block_m) + num_local
    _fp8_block_gemm_kernel[(launch_grid(dev, max_tiles_m * (n_out // cfg.block_n), cfg.persistent),)](
        a if a_desc is None else a_desc, a_scale, sorted_tok if sorted_tok is not None else counts, w if desc is None else desc, w_scale, out,
        scale if scale is not None else out, counts,
        num_local, n_out, n_w, k_dim, n_out, max_tiles_m,
        a.stride(0), a_scale.stride(0), w.stride(0), w.stride(1), w_scale.stride(0), w_scale.stride(1),
        out.stride(0), 0 if scale is None else scale.stride(0),
        float(swiglu_alpha), float(swiglu_limit),
        BLOCK_M=cfg.block_m, BLOCK_N=cfg.block_n, BLOCK_K=128, BLOCK_E=_pow2(num_local), GROUP_M=cfg.group_m,
        SPLIT_M=cfg.split, INDIRECT=sorted_tok is not None, GATED=gated, ACT=code, QUANT_OUT=quant_out,
        B_DESC=desc is not None, A_DESC=a_desc is not None, PERSIST=cfg.persistent > 0, FLAT=cfg.flat, WS=cfg.ws, EMULATE=INTERPRET, num_warps=cfg.num_warps, num_stages=cfg.num_stages,
    )
    return out, scale
