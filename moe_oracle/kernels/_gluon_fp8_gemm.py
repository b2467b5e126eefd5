"""GEMM1 of the 128x128-block fp8 experts as a Gluon kernel with asynchronous wgmma (SM 90).

The Triton kernel of :mod:`moe_oracle.kernels._triton_fp8_gemm` computes each 128-wide K step as
``acc += dot(A, W) * a_scale * w_scale``; Triton issues each of GEMM1's two dots (gate and up) and
waits for it before the next (``wgmma.wait_group 0``), then runs the scale FMAs, and one CTA barrier
per step keeps both warpgroups in step, so the tensor cores idle through every FMA pass (PTX of
Triton 3.9 for SM 90). This kernel issues the wgmma groups itself (Gluon, Triton 3.5-3.6):

* two consumer warpgroups, each a warp-specialized partition of its own 64 rows of the 128-row
  tile, with no barrier in common: while one runs its scale FMAs the other's wgmma can run;
* per K step each warpgroup issues four groups of 64 output columns (gate's two halves, then
  up's) and runs each group's FMAs while the next group is in flight (one pending at each wait);
  an updated accumulator passes through the next wait, else LLVM sinks all FMAs below the last
  issue and the results live at once spill; the activation rows go into registers once per step
  (wgmma reads only the weights from shared memory: four 64-column groups reading the rows from
  shared memory would need 128 bytes per clock and SM, the whole shared-memory bandwidth);
* ``use_acc=False`` ignores the accumulator operand, so the accumulator itself is passed (LLVM
  copies it into the result registers) and no zero tile stays live across the loop;
* a last tile of at most 64 rows runs on warpgroup 0 alone (warpgroup 1 skips it; warpgroup 0
  releases the weight slots for both).

Memory: the weight tiles ``[128, 128]`` of gate and up come through TMA, issued by warpgroup 0
``stages - 1`` steps ahead into a ring of ``stages`` slots once both warpgroups released the slot
(an mbarrier pair per slot); each warpgroup gathers its own activation rows through the sorted token
index with ``cp.async`` into its half of the slot. The epilogue applies the gated activation and
stores fp8 with one scale per row and 128 columns, as
:func:`~moe_oracle.kernels._triton_fp8_gemm.fp8_block_gemm` does with ``quant_out``.

Source of the numerics: the block-scaled dot with per-K-block scale products follows vLLM main
00f7f258 ``P/fused_moe.py`` ``fused_moe_kernel`` (``block_shape [128, 128]``); the wgmma, mbarrier,
TMA and warp-specialization API is Gluon's (Triton 3.6 ``triton.experimental.gluon``).
"""

from __future__ import annotations

import torch
import triton

try:  # Triton >= 3.5 ships Gluon; the GPU image has Triton 3.6
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.ampere import async_copy
    from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma, warpgroup_mma_wait
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonTensorDescriptor
except ImportError:  # pragma: no cover - Triton without Gluon
    gluon = None

__all__ = ["GLUON", "fp8_gated_wgmma", "wgmma_device"]

GLUON = gluon is not None and hasattr(gl, "thread_barrier") and hasattr(async_copy, "async_copy_global_to_shared")
"""This Triton has the Gluon API the kernel is written against (Triton 3.5-3.6; later releases renamed
``thread_barrier`` and ``async_copy_global_to_shared``)."""

_BM = 128
_BN = 128
_BK = 128


def wgmma_device(device: torch.device) -> bool:
    """The kernel runs on ``device``: CUDA with compute capability 9.x (wgmma is SM 90a only) and Gluon."""
    return GLUON and device.type == "cuda" and torch.cuda.get_device_capability(device)[0] == 9


if GLUON:

    @gluon.jit
    def _add(a, b):
        return a + b

    @gluon.jit
    def _grouped_pid_g(pid, n_out, max_tiles_m, BLOCK_N: gl.constexpr, GROUP_M: gl.constexpr):
        # The grouped launch order of _triton_common._grouped_pid: GROUP_M m-tiles share each n-tile.
        num_pid_n = gl.cdiv(n_out, BLOCK_N)
        in_group = GROUP_M * num_pid_n
        first_m = (pid // in_group) * GROUP_M
        group_size = gl.minimum(max_tiles_m - first_m, GROUP_M)
        return first_m + (pid % in_group) % group_size, (pid % in_group) // group_size

    @gluon.jit
    def _tile_map_g(counts_ptr, num_local, pid_m, BLOCK_M: gl.constexpr, BLOCK_E: gl.constexpr, num_warps: gl.constexpr):
        # _triton_common._tile_map: m-tile pid_m -> (m-tiles in all, expert, first row, rows in the tile).
        lay: gl.constexpr = gl.BlockedLayout([1], [32], [num_warps], [0])
        er = gl.arange(0, BLOCK_E, layout=lay)
        cnt = gl.load(counts_ptr + er, mask=er < num_local, other=0)
        tiles = (cnt + BLOCK_M - 1) // BLOCK_M
        tile_end = gl.associative_scan(tiles, 0, _add)
        row_end = gl.associative_scan(cnt, 0, _add)
        e = gl.sum((tile_end <= pid_m).to(gl.int32), axis=0)
        sel = er == e
        j = pid_m - gl.sum(gl.where(sel, tile_end - tiles, 0), axis=0)
        first_row = gl.sum(gl.where(sel, row_end - cnt, 0), axis=0) + j * BLOCK_M
        n_rows = gl.minimum(gl.sum(gl.where(sel, cnt, 0), axis=0) - j * BLOCK_M, BLOCK_M)
        return gl.sum(tiles, axis=0), e, first_row, n_rows

    @gluon.jit
    def _unary_g(x, act):
        # _triton_common._unary: 0 silu, 1 gelu (erf), 2 gelu (tanh), 3 relu2.
        if act == 0:
            y = x / (1.0 + gl.exp(-x))
        elif act == 1:
            y = 0.5 * x * (1.0 + gl.erf(x * 0.7071067811865476))
        elif act == 2:
            z = 0.7978845608028654 * (x + 0.044715 * x * x * x)
            y = 0.5 * x * (2.0 / (1.0 + gl.exp(-2.0 * z)))
        else:
            r = gl.maximum(x, 0.0)
            y = r * r
        return y

    @gluon.jit
    def _gated_g(g, u, alpha, limit, act):
        # _triton_common._gated: 4 is swigluoai on [gate; up] halves.
        if act == 4:
            g = gl.minimum(g, limit)
            u = gl.minimum(gl.maximum(u, -limit), limit)
            y = (u + 1.0) * (g / (1.0 + gl.exp(-alpha * g)))
        else:
            y = _unary_g(g, act) * u
        return y

    @gluon.jit
    def _to_fp8_g(x):
        return gl.minimum(gl.maximum(x, -448.0), 448.0).to(gl.float8e4nv)

    @gluon.jit
    def _load_b(b_desc, bg_ring, bu_ring, ready, empty, b_row, up_off, j, nk):
        # The gate and up weight tiles of K step j through TMA into ring slot j % STAGES, once both
        # consumer warpgroups released the slot's previous step (nothing past the last step).
        STAGES: gl.constexpr = bg_ring.shape[0]
        BLOCK_K: gl.constexpr = bg_ring.shape[2]
        s = j % STAGES
        live = j < nk
        mbarrier.wait(empty.index(s), ((j // STAGES) - 1) & 1, pred=live & (j >= STAGES))
        bar = ready.index(s)
        mbarrier.expect(bar, 2 * b_desc.block_type.nbytes, pred=live)
        tma.async_copy_global_to_shared(b_desc, [b_row, j * BLOCK_K], bar, bg_ring.index(s), pred=live)
        tma.async_copy_global_to_shared(b_desc, [b_row + up_off, j * BLOCK_K], bar, bu_ring.index(s), pred=live)

    @gluon.jit
    def _consumer(a_ptr, as_ptr, tok_ptr, b_desc, bs_ptr, c_ptr, cs_ptr, a_ring, bg_ring, bu_ring, ready, empty,
                  e, pid_n, first_row, n_rows, nk, up_off, b_row, stride_am, stride_asm, stride_bse, stride_bsn, stride_cm, stride_csm,
                  alpha, limit, act, WG: gl.constexpr):
        # One warpgroup: rows [64 * WG, 64 * WG + 64) of the tile. It copies its own activation rows
        # (cp.async, STAGES - 1 steps ahead), waits for the step's weight tiles, issues gate and up,
        # releases the weight slot once both completed, then runs the scale FMAs, which can overlap
        # the other warpgroup's wgmma (no CTA-wide barrier couples the two).
        HALF_M: gl.constexpr = 64
        LO: gl.constexpr = WG * HALF_M
        STAGES: gl.constexpr = a_ring.shape[0]
        BLOCK_K: gl.constexpr = a_ring.shape[2]
        BLOCK_N: gl.constexpr = bg_ring.shape[1]
        if n_rows > LO:
            HALF_N: gl.constexpr = BLOCK_N // 2
            mma: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, HALF_N, 32])
            a_dot: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=mma, k_width=4)
            blk: gl.constexpr = gl.BlockedLayout([1, 16], [4, 8], [4, 1], [1, 0])
            rows_m: gl.constexpr = gl.SliceLayout(1, mma)
            rb = LO + gl.arange(0, HALF_M, layout=gl.SliceLayout(1, blk))
            rmask_b = rb < n_rows
            tok_b = gl.load(tok_ptr + first_row + rb, mask=rmask_b, other=0).to(gl.int64)
            kk = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(0, blk))
            a_ptrs = a_ptr + tok_b[:, None] * stride_am + kk[None, :]
            rm = LO + gl.arange(0, HALF_M, layout=rows_m)
            rmask_m = rm < n_rows
            tok_m = gl.load(tok_ptr + first_row + rm, mask=rmask_m, other=0).to(gl.int64)
            as_ptrs = as_ptr + tok_m * stride_asm
            e64 = e.to(gl.int64)
            bsg_ptr = bs_ptr + e64 * stride_bse + ((pid_n * BLOCK_N) // 128) * stride_bsn
            bsu_ptr = bs_ptr + e64 * stride_bse + ((up_off + pid_n * BLOCK_N) // 128) * stride_bsn

            for i in gl.static_range(STAGES - 1):
                async_copy.async_copy_global_to_shared(a_ring.index(i).slice(LO, HALF_M), a_ptrs + i * BLOCK_K, mask=rmask_b[:, None] & (i < nk))
                async_copy.commit_group()
            acc_g0 = gl.zeros([HALF_M, HALF_N], gl.float32, layout=mma)
            acc_g1 = gl.zeros([HALF_M, HALF_N], gl.float32, layout=mma)
            acc_u0 = gl.zeros([HALF_M, HALF_N], gl.float32, layout=mma)
            acc_u1 = gl.zeros([HALF_M, HALF_N], gl.float32, layout=mma)
            for kb in range(nk):
                s = kb % STAGES
                async_copy.wait_group(STAGES - 2)
                gl.thread_barrier()  # this warpgroup's row copies of step kb landed; it left step kb - 1
                j = kb + STAGES - 1
                async_copy.async_copy_global_to_shared(a_ring.index(j % STAGES).slice(LO, HALF_M), a_ptrs + j * BLOCK_K,
                                                       mask=rmask_b[:, None] & (j < nk))
                async_copy.commit_group()
                if WG == 0:  # warpgroup 0 also loads the weights, once both warpgroups left the slot's previous step
                    _load_b(b_desc, bg_ring, bu_ring, ready, empty, b_row, up_off, j, nk)
                a_s = gl.load(as_ptrs + kb, mask=rmask_m, other=0.0)
                sg = (a_s * gl.load(bsg_ptr + kb))[:, None]
                su = (a_s * gl.load(bsu_ptr + kb))[:, None]
                a_r = a_ring.index(s).slice(LO, HALF_M).load(a_dot)  # the rows once into registers (wgmma reads only B from shared memory)
                bg = bg_ring.index(s)
                bu = bu_ring.index(s)
                mbarrier.wait(ready.index(s), (kb // STAGES) & 1)
                # Four wgmma groups of 64 columns, each one's FMAs while the next is in flight. An updated
                # accumulator passes through the next wait so that the compiler cannot sink its FMAs below
                # later issues. use_acc=False ignores the accumulator operand: the accumulator itself
                # serves (copied into the result registers), so no zero tile stays live across the loop.
                t0 = warpgroup_mma(a_r, bg.slice(0, HALF_N).permute((1, 0)), acc_g0, use_acc=False, is_async=True)
                t1 = warpgroup_mma(a_r, bg.slice(HALF_N, HALF_N).permute((1, 0)), acc_g1, use_acc=False, is_async=True)
                t0 = warpgroup_mma_wait(num_outstanding=1, deps=(t0,))
                acc_g0 += t0 * sg
                t2 = warpgroup_mma(a_r, bu.slice(0, HALF_N).permute((1, 0)), acc_u0, use_acc=False, is_async=True)
                t1, acc_g0 = warpgroup_mma_wait(num_outstanding=1, deps=(t1, acc_g0))
                acc_g1 += t1 * sg
                t3 = warpgroup_mma(a_r, bu.slice(HALF_N, HALF_N).permute((1, 0)), acc_u1, use_acc=False, is_async=True)
                t2, acc_g1 = warpgroup_mma_wait(num_outstanding=1, deps=(t2, acc_g1))
                acc_u0 += t2 * su
                t3, acc_u0 = warpgroup_mma_wait(num_outstanding=0, deps=(t3, acc_u0))
                mbarrier.arrive(empty.index(s))
                mbarrier.arrive(empty.index(s), pred=(WG == 0) & (n_rows <= HALF_M))  # for warpgroup 1, which has no rows
                acc_u1 += t3 * su
            async_copy.wait_group(0)

            out0 = _gated_g(acc_g0, acc_u0, alpha, limit, act)
            out1 = _gated_g(acc_g1, acc_u1, alpha, limit, act)
            scale = gl.maximum(gl.maximum(gl.max(gl.abs(out0), axis=1), gl.max(gl.abs(out1), axis=1)) / 448.0, 1e-12)
            inv = (1.0 / scale)[:, None]
            half_blk: gl.constexpr = gl.BlockedLayout([1, 16], [8, 4], [4, 1], [1, 0])
            rh = LO + gl.arange(0, HALF_M, layout=gl.SliceLayout(1, half_blk))
            ch = gl.arange(0, HALF_N, layout=gl.SliceLayout(0, half_blk))
            c_ptrs = c_ptr + (first_row + rh).to(gl.int64)[:, None] * stride_cm + (pid_n * BLOCK_N + ch)[None, :]
            cmask = (rh < n_rows)[:, None]
            gl.store(c_ptrs, gl.convert_layout(_to_fp8_g(out0 * inv), half_blk), mask=cmask)
            gl.store(c_ptrs + HALF_N, gl.convert_layout(_to_fp8_g(out1 * inv), half_blk), mask=cmask)
            gl.store(cs_ptr + (first_row + rm).to(gl.int64) * stride_csm + pid_n, scale, mask=rmask_m)

    @gluon.jit
    def _consumer_0(a_ptr, as_ptr, tok_ptr, b_desc, bs_ptr, c_ptr, cs_ptr, a_ring, bg_ring, bu_ring, ready, empty,
                    e, pid_n, first_row, n_rows, nk, up_off, b_row, stride_am, stride_asm, stride_bse, stride_bsn, stride_cm, stride_csm,
                    alpha, limit, act):
        _consumer(a_ptr, as_ptr, tok_ptr, b_desc, bs_ptr, c_ptr, cs_ptr, a_ring, bg_ring, bu_ring, ready, empty,
                  e, pid_n, first_row, n_rows, nk, up_off, b_row, stride_am, stride_asm, stride_bse, stride_bsn, stride_cm, stride_csm,
                  alpha, limit, act, 0)

    @gluon.jit
    def _consumer_1(a_ptr, as_ptr, tok_ptr, b_desc, bs_ptr, c_ptr, cs_ptr, a_ring, bg_ring, bu_ring, ready, empty,
                    e, pid_n, first_row, n_rows, nk, up_off, b_row, stride_am, stride_asm, stride_bse, stride_bsn, stride_cm, stride_csm,
                    alpha, limit, act):
        _consumer(a_ptr, as_ptr, tok_ptr, b_desc, bs_ptr, c_ptr, cs_ptr, a_ring, bg_ring, bu_ring, ready, empty,
                  e, pid_n, first_row, n_rows, nk, up_off, b_row, stride_am, stride_asm, stride_bse, stride_bsn, stride_cm, stride_csm,
                  alpha, limit, act, 1)

    @gluon.jit
    def _fp8_gated_wgmma_kernel(
        a_ptr, as_ptr, tok_ptr, b_desc, bs_ptr, c_ptr, cs_ptr, counts_ptr,
        num_local, n_out, n_w, k_dim, up_off, max_tiles_m,
        stride_am, stride_asm, stride_bse, stride_bsn, stride_cm, stride_csm, alpha, limit, act,
        BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, BLOCK_K: gl.constexpr, BLOCK_E: gl.constexpr, GROUP_M: gl.constexpr,
        STAGES: gl.constexpr, CONSUMER_REGS: gl.constexpr, num_warps: gl.constexpr,
    ):
        # num_warps 4: the default partition is consumer warpgroup 0; workers: consumer warpgroup 1
        # (4 warps) and the weight loader (1 warp).
        pid_m, pid_n = _grouped_pid_g(gl.program_id(0), n_out, max_tiles_m, BLOCK_N, GROUP_M)
        live_m, e, first_row, n_rows = _tile_map_g(counts_ptr, num_local, pid_m, BLOCK_M, BLOCK_E, num_warps)
        if pid_m < live_m:
            a_lay: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2)
            a_ring = gl.allocate_shared_memory(gl.float8e4nv, [STAGES, BLOCK_M, BLOCK_K], a_lay)
            bg_ring = gl.allocate_shared_memory(gl.float8e4nv, [STAGES, BLOCK_N, BLOCK_K], b_desc.layout)
            bu_ring = gl.allocate_shared_memory(gl.float8e4nv, [STAGES, BLOCK_N, BLOCK_K], b_desc.layout)
            ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
            empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
            for i in gl.static_range(STAGES):
                mbarrier.init(ready.index(i), count=1)
                mbarrier.init(empty.index(i), count=2)  # one arrival per consumer warpgroup
            nk = gl.cdiv(k_dim, BLOCK_K)
            b_row = e * n_w + pid_n * BLOCK_N
            for i in gl.static_range(STAGES - 1):
                _load_b(b_desc, bg_ring, bu_ring, ready, empty, b_row, up_off, i, nk)
            args = (a_ptr, as_ptr, tok_ptr, b_desc, bs_ptr, c_ptr, cs_ptr, a_ring, bg_ring, bu_ring, ready, empty,
                    e, pid_n, first_row, n_rows, nk, up_off, b_row, stride_am, stride_asm, stride_bse, stride_bsn, stride_cm, stride_csm,
                    alpha, limit, act)
            gl.warp_specialize([
                (_consumer_0, args),
                (_consumer_1, args),
            ], [4], [CONSUMER_REGS])


def fp8_gated_wgmma(
    a: torch.Tensor,
    a_scale: torch.Tensor,
    w: torch.Tensor,
    w_scale: torch.Tensor,
    counts: torch.Tensor,
    sorted_tok: torch.Tensor,
    out: torch.Tensor,
    scale: torch.Tensor,
    act_code: int,
    swiglu_alpha: float,
    swiglu_limit: float,
    *,
    num_stages: int = 3,
    group_m: int = 8,
    consumer_regs: int = 232,
) -> None:
    """GEMM1 with ``[gate; up]`` weight halves, the gated activation and fp8 output (module docstring).

    Row ``r`` of ``out`` is expert ``e``'s ``act(gate) * up`` for input row ``a[sorted_tok[r]]``
    (rows in expert order, ``counts[e]`` each), each dot being ``sum_kb (A[., kb] . W[e, n, kb]) *
    a_scale[., kb] * w_scale[e, n // 128, kb]`` in float32; stored as fp8 with one scale per row and
    128 columns.

    Args:
        a: ``[T, K]`` float8_e4m3fn, rows 16-byte aligned.
        a_scale: ``[T, K // 128]`` float32.
        w: ``[E, 2 * N, K]`` float8_e4m3fn, contiguous (gate rows, then up rows).
        w_scale: ``[E, 2 * N // 128, K // 128]`` float32.
        counts: ``[E]`` int32 rows per expert; sorted_tok: ``[rows]`` int32 token of each row.
        out: ``[rows, N]`` float8_e4m3fn, written; scale: ``[rows, N // 128]`` float32, written.
        act_code: the activation code of :data:`moe_oracle.kernels._triton_common._ACT_CODES` (0-4).
        num_stages: ring buffers (2-4; 48 KiB of shared memory each); group_m: m-tiles that share an
            n-tile in launch order.

    Raises:
        RuntimeError: Triton without the Gluon API this kernel is written against.
        ValueError: ``K`` or ``N`` not a multiple of 128, ``num_stages`` out of range.
    """
    if not GLUON:
        raise RuntimeError("fp8_gated_wgmma needs Triton with the Gluon API of Triton 3.5-3.6 (triton.experimental.gluon)")
    num_local, n_w, k_dim = w.shape
    n_out = n_w // 2
    if k_dim % _BK or n_out % _BN:
        raise ValueError(f"fp8_gated_wgmma needs K and N multiples of 128, got K={k_dim}, N={n_out}")
    if num_stages not in (2, 3, 4):
        raise ValueError(f"fp8_gated_wgmma: num_stages {num_stages!r} is not allowed; 2, 3 or 4")
    rows = out.shape[0]
    if rows == 0 or num_local == 0:
        return
    layout = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=8, rank=2)
    w2d = w.view(-1, k_dim)
    desc = GluonTensorDescriptor(w2d, list(w2d.shape), list(w2d.stride()), [_BN, _BK], layout)
    max_tiles_m = triton.cdiv(rows, _BM) + num_local
    _fp8_gated_wgmma_kernel[(max_tiles_m * (n_out // _BN),)](
        a, a_scale, sorted_tok, desc, w_scale, out, scale, counts,
        num_local, n_out, n_w, k_dim, n_out, max_tiles_m,
        a.stride(0), a_scale.stride(0), w_scale.stride(0), w_scale.stride(1), out.stride(0), scale.stride(0),
        float(swiglu_alpha), float(swiglu_limit), int(act_code),
        BLOCK_M=_BM, BLOCK_N=_BN, BLOCK_K=_BK, BLOCK_E=triton.next_power_of_2(max(num_local, 1)), GROUP_M=group_m,
        STAGES=num_stages, CONSUMER_REGS=consumer_regs, num_warps=4,
    )
