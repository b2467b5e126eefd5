#!/usr/bin/env python
"""Registers, spills, shared memory and software pipelining of our fp8 GEMM's compiled variants (CUDA).

Runs GEMM1 and GEMM2 of Qwen3-30B-A3B-FP8 at ``--tokens`` once per tile given (the shipped tiles and
the candidates below), then prints, for every variant Triton compiled in this process: its tile
constants, ``n_regs``, ``n_spills``, shared memory, and in its TTGIR the asynchronous copies (a
software-pipelined K loop issues them; a loop that is not pipelined loads into registers first) and
the tensor-core waits. Usage: ``python benchmarks/kernel_resources.py`` on the GPU machine.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernel_sweep import FP8_S11, build_layers  # noqa: E402

from moe_oracle.kernels import _triton_moe as ops  # noqa: E402
from moe_oracle.kernels._triton_fp8_gemm import _fp8_block_gemm_kernel  # noqa: E402


def compiled_variants():  # noqa: ANN201 - (constants, CompiledKernel) pairs
    for cache in getattr(_fp8_block_gemm_kernel, "device_caches", {}).values():
        kernels = cache[0] if isinstance(cache, tuple) else cache
        for key, k in kernels.items():
            yield key, k


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=2048)
    args = parser.parse_args()
    import kernel_sweep

    kernel_sweep.DEVICE = "cuda"
    layer = next(x for x in build_layers(["qwen3-30b-a3b-fp8"], False))
    case = layer.case(args.tokens, seed=args.tokens)
    shipped = layer.experts.configs_for(args.tokens)
    for gemm, cfgs in (("gemm1", [shipped[0], *FP8_S11["gemm1"][-11:]]), ("gemm2", [shipped[1]])):
        for cfg in cfgs:
            try:
                getattr(case, gemm)(cfg)
            except Exception as exc:  # noqa: BLE001 - named and skipped
                print(f"{gemm} {cfg}: {type(exc).__name__}: {str(exc)[:100]}")
    torch.cuda.synchronize()
    for key, k in compiled_variants():
        ttgir = getattr(k, "asm", {}).get("ttgir", "")
        meta = getattr(k, "metadata", None)
        print(f"regs {getattr(k, 'n_regs', '?')} spills {getattr(k, 'n_spills', '?')} shared {getattr(meta, 'shared', '?')} "
              f"warps {getattr(meta, 'num_warps', '?')} stages {getattr(meta, 'num_stages', '?')} "
              f"async copies {ttgir.count('async_copy_global_to_local')} tma loads {ttgir.count('async_tma_copy_global_to_local')} "
              f"dot waits {ttgir.count('warp_group_dot_wait')} | {str(key)[:400]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
